-- bench/storage_v2/v2.sql - storage v2 prototype (issue 24), standalone.
-- A template: run.sh substitutes @S@ (the schema: qv2a, qv2b, qv2c) and @K@
-- (head slots per partition) and applies it to a scratch database. Nothing
-- here is part of the broker's schema/.
--
--   order without a push lock: a message records its transaction id
--     (pg_current_xact_id(), xid8); readers deliver only rows whose xid is
--     below the oldest running transaction (pg_snapshot_xmin of the current
--     snapshot), ordered by (xid, seq). A transaction that commits later
--     has an xid at or above every reader's horizon until it ends, so it can
--     never sort before a message already delivered.
--   pending partitions without per-message churn: claims (group,
--     partition) rows exist for every pair from the moment either exists,
--     and are only ever updated (HOT: no indexed column changes). "Has
--     this partition something after the group's cursor?" is answered by
--       @K@ = 1  one head row per partition, (xid, seq) of its newest push,
--                updated once per push statement (pushes of one partition
--                queue on that row lock until commit: prototype qv2a);
--       @K@ > 1  K head slots per partition; a push updates the first slot
--                it can lock without waiting (SKIP LOCKED, falling back to
--                waiting in ascending order only when all K are taken):
--                pending = any slot above the cursor (qv2b);
--       @K@ = 0  no heads: the claim scan probes the messages index once per
--                claim row (push writes nothing but its messages: qv2c).
--   claim + read + lease in one statement; acks of many requests merged
--     in one statement (cumulative cursor per (group, partition)).
--   dedup by transactionId per partition: a dedup table with a primary key,
--     INSERT … ON CONFLICT DO NOTHING (a concurrent push of the same id waits
--     for the first one's outcome: no lock for items without an id).
--   lease expiry redelivers from the cursor.

SET client_min_messages = warning;
DROP SCHEMA IF EXISTS @S@ CASCADE;
CREATE SCHEMA @S@;

CREATE TABLE @S@.queues (
  id         int  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name       text COLLATE "C" NOT NULL UNIQUE,
  lease_time int  NOT NULL DEFAULT 60
);
CREATE TABLE @S@.partitions (
  id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue_id int    NOT NULL,
  name     text   COLLATE "C" NOT NULL,
  UNIQUE (queue_id, name)
);
CREATE TABLE @S@.groups (
  id       int  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue_id int  NOT NULL,
  name     text COLLATE "C" NOT NULL,
  UNIQUE (queue_id, name)
);
-- seq only breaks ties inside one transaction and names a message; its order
-- across transactions no longer matters, so it could be cached per backend
CREATE SEQUENCE @S@.seq AS bigint MINVALUE 1 CACHE 1;

-- one index per message (PGMQ has two), segments by seq as today
CREATE TABLE @S@.messages (
  partition_id bigint      NOT NULL,
  xid          xid8        NOT NULL,
  seq          bigint      NOT NULL,
  created_at   timestamptz NOT NULL,
  txn_id       text COLLATE "C",
  payload      bytea       NOT NULL
) PARTITION BY RANGE (seq);
CREATE INDEX ON @S@.messages (partition_id, xid, seq);
CREATE TABLE @S@.messages_0 PARTITION OF @S@.messages FOR VALUES FROM (1) TO (20000000);
CREATE TABLE @S@.messages_1 PARTITION OF @S@.messages FOR VALUES FROM (20000000) TO (40000000);
CREATE TABLE @S@.messages_2 PARTITION OF @S@.messages FOR VALUES FROM (40000000) TO (60000000);

-- items with a transactionId only; swept with the segments
CREATE TABLE @S@.dedup (
  partition_id bigint NOT NULL,
  txn_id       text   COLLATE "C" NOT NULL,
  seq          bigint NOT NULL,
  PRIMARY KEY (partition_id, txn_id)
);

CREATE TABLE @S@.heads (
  partition_id bigint   NOT NULL,
  slot         smallint NOT NULL,
  xid          xid8     NOT NULL DEFAULT '0',
  seq          bigint   NOT NULL DEFAULT 0,
  PRIMARY KEY (partition_id, slot)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01,
        autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);

-- one row per (group, partition), never deleted; cursor = last consumed
-- (xid, seq); lease_until = -infinity when released
CREATE TABLE @S@.claims (
  group_id     int         NOT NULL,
  partition_id bigint      NOT NULL,
  cxid         xid8        NOT NULL DEFAULT '0',
  cseq         bigint      NOT NULL DEFAULT 0,
  lease_until  timestamptz NOT NULL DEFAULT '-infinity',
  lease_id     uuid,
  lxid         xid8,                 -- last message handed out under the lease
  lseq         bigint,
  batch        int NOT NULL DEFAULT 0,
  acked        int NOT NULL DEFAULT 0,
  attempts     int NOT NULL DEFAULT 0,
  PRIMARY KEY (group_id, partition_id)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01,
        autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);

-- Queue by name, created when missing.
CREATE FUNCTION @S@._queue(p_name text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE v int;
BEGIN
  SELECT id INTO v FROM @S@.queues WHERE name = p_name;
  IF NOT FOUND THEN
    INSERT INTO @S@.queues (name) VALUES (p_name) ON CONFLICT DO NOTHING;
    SELECT id INTO v FROM @S@.queues WHERE name = p_name;
  END IF;
  RETURN v;
END
$$;

-- Group by name, created when missing: under the queue lock (exclusive; a
-- push that creates partitions holds it shared) it gets a claim row for
-- every partition, cursor at the start.
CREATE FUNCTION @S@._group(p_qid int, p_name text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE v int;
BEGIN
  SELECT id INTO v FROM @S@.groups WHERE queue_id = p_qid AND name = p_name;
  IF FOUND THEN
    RETURN v;
  END IF;
  PERFORM pg_advisory_xact_lock(7193, p_qid);
  INSERT INTO @S@.groups (queue_id, name) VALUES (p_qid, p_name) ON CONFLICT DO NOTHING;
  SELECT id INTO v FROM @S@.groups WHERE queue_id = p_qid AND name = p_name;
  INSERT INTO @S@.claims (group_id, partition_id)
  SELECT v, p.id FROM @S@.partitions p WHERE p.queue_id = p_qid ORDER BY p.id
  ON CONFLICT DO NOTHING;
  RETURN v;
END
$$;

-- push: no partition lock. Returns one row per item.
CREATE FUNCTION @S@.push(p_queue text, p_parts text[], p_txn_ids text[], p_payloads bytea[])
RETURNS TABLE(ord int, partition_id bigint, xid xid8, seq bigint, duplicate bool)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_qid  int := @S@._queue(p_queue);
  v_x    xid8 := pg_current_xact_id();
  v_now  timestamptz := now();
  d_name text[]; d_pid bigint[];
  r_ord int[]; r_pid bigint[]; r_seq bigint[]; r_new bool[];
  h_pid bigint[]; h_seq bigint[]; h_tid tid[];
  v_miss bigint[];
BEGIN
  SELECT array_agg(d.n), array_agg(p.id) INTO d_name, d_pid
    FROM (SELECT DISTINCT COALESCE(n, 'Default') AS n FROM unnest(p_parts) n) d
    LEFT JOIN LATERAL (SELECT p.id FROM @S@.partitions p
                        WHERE p.queue_id = v_qid AND p.name = d.n
                        ORDER BY p.queue_id, p.name LIMIT 1) p ON true;
  IF array_position(d_pid, NULL) IS NOT NULL THEN
    -- new partitions: shared queue lock against group creation, then the
    -- partition, its head slots and a claim row per group
    PERFORM pg_advisory_xact_lock_shared(7193, v_qid);
    WITH np AS (
      INSERT INTO @S@.partitions (queue_id, name)
      SELECT v_qid, u.n FROM unnest(d_name, d_pid) u(n, id) WHERE u.id IS NULL ORDER BY u.n
      ON CONFLICT DO NOTHING RETURNING id),
    hh AS (
      INSERT INTO @S@.heads (partition_id, slot)
      SELECT np.id, s FROM np, generate_series(0, @K@ - 1) s)
    INSERT INTO @S@.claims (group_id, partition_id)
    SELECT g.id, np.id FROM np JOIN @S@.groups g ON g.queue_id = v_qid ORDER BY 1, 2
    ON CONFLICT DO NOTHING;
    SELECT array_agg(d.n), array_agg(p.id) INTO d_name, d_pid
      FROM unnest(d_name) d(n)
      CROSS JOIN LATERAL (SELECT p.id FROM @S@.partitions p
                           WHERE p.queue_id = v_qid AND p.name = d.n
                           ORDER BY p.queue_id, p.name LIMIT 1) p;
  END IF;

  WITH items AS MATERIALIZED (
    SELECT t.o::int AS o, pr.pid, NULLIF(t.txn, '') AS txn, COALESCE(t.pl, '\x6e756c6c'::bytea) AS pl
      FROM unnest(p_parts, p_txn_ids, p_payloads) WITH ORDINALITY t(n, txn, pl, o)
      JOIN unnest(d_name, d_pid) pr(n, pid) ON pr.n = COALESCE(t.n, 'Default')),
  numbered AS MATERIALIZED (
    SELECT s.*, nextval('@S@.seq') AS sq FROM (SELECT * FROM items ORDER BY o) s),
  marked AS MATERIALIZED (
    SELECT nb.*, CASE WHEN nb.txn IS NULL THEN 1
                      ELSE row_number() OVER (PARTITION BY nb.pid, nb.txn ORDER BY nb.o) END AS rk
      FROM numbered nb),
  dd AS (
    INSERT INTO @S@.dedup (partition_id, txn_id, seq)
    SELECT m.pid, m.txn, m.sq FROM marked m WHERE m.txn IS NOT NULL AND m.rk = 1 ORDER BY 1, 2
    ON CONFLICT DO NOTHING RETURNING partition_id, txn_id),
  keep AS MATERIALIZED (
    SELECT m.* FROM marked m
     WHERE m.txn IS NULL
        OR m.rk = 1 AND EXISTS (SELECT 1 FROM dd WHERE dd.partition_id = m.pid AND dd.txn_id = m.txn)),
  ins AS (
    INSERT INTO @S@.messages (partition_id, xid, seq, created_at, txn_id, payload)
    SELECT k.pid, v_x, k.sq, v_now, k.txn, k.pl FROM keep k)
  SELECT array_agg(o.o), array_agg(o.pid), array_agg(o.sq), array_agg(o.new)
    INTO r_ord, r_pid, r_seq, r_new
    FROM (SELECT m.o, m.pid, m.sq, EXISTS (SELECT 1 FROM keep k WHERE k.o = m.o) AS new
            FROM marked m ORDER BY m.o) o;

  IF @K@ > 0 THEN
    -- heads: one slot per partition, the first this push can lock without
    -- waiting (slot order rotated by backend so pushers spread out)
    SELECT array_agg(l.pid), array_agg(l.sq), array_agg(l.tid) INTO h_pid, h_seq, h_tid
      FROM (SELECT u.pid, max(u.sq) AS sq FROM unnest(r_pid, r_seq, r_new) u(pid, sq, new)
             WHERE u.new GROUP BY u.pid ORDER BY u.pid) per
      LEFT JOIN LATERAL (SELECT h.ctid AS tid FROM @S@.heads h WHERE h.partition_id = per.pid
                          ORDER BY (h.slot + pg_backend_pid()) % @K@
                          LIMIT CASE WHEN @K@ = 1 THEN 0 ELSE 1 END   -- one head: always wait
                          FOR UPDATE SKIP LOCKED) t ON true
      CROSS JOIN LATERAL (SELECT per.pid, per.sq, t.tid) l;
    UPDATE @S@.heads h SET xid = v_x, seq = u.sq
      FROM unnest(h_tid, h_seq) u(tid, sq)
     WHERE h.ctid = u.tid AND (h.xid, h.seq) < (v_x, u.sq);
    -- every slot was taken (@K@ = 1: always): wait for slot 0, ascending
    -- partition order
    SELECT array_agg(u.pid ORDER BY u.pid) INTO v_miss FROM unnest(h_pid, h_tid) u(pid, tid) WHERE u.tid IS NULL;
    IF v_miss IS NOT NULL THEN
      PERFORM 1 FROM (SELECT h.ctid FROM @S@.heads h WHERE h.partition_id = ANY (v_miss) AND h.slot = 0
                       ORDER BY h.partition_id FOR UPDATE) s;
      UPDATE @S@.heads h SET xid = v_x, seq = u.sq
        FROM unnest(h_pid, h_seq, h_tid) u(pid, sq, tid)
       WHERE u.tid IS NULL AND h.partition_id = u.pid AND h.slot = 0 AND (h.xid, h.seq) < (v_x, u.sq);
    END IF;
  END IF;

  RETURN QUERY SELECT u.o, u.pid, v_x, u.sq, NOT u.new FROM unnest(r_ord, r_pid, r_seq, r_new) u(o, pid, sq, new);
END
$$;

-- pop (plain case: no delay, window or conflation): claim + read + lease in
-- one statement. Claims are taken lazily (the outer LIMIT stops pulling
-- claim rows, and so locking them, once the batch is full), starting at a
-- random partition and wrapping around.
CREATE FUNCTION @S@.pop(p_queue text, p_group text, p_batch int, p_maxp int, p_lease uuid)
RETURNS TABLE(partition_id bigint, xid xid8, seq bigint, created_at timestamptz, txn_id text,
              payload bytea, lease_until timestamptz)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_qid  int;
  v_lt   int;
  v_gid  int;
  v_h    xid8;
  v_exp  timestamptz;
  v_lo   bigint;
  v_hi   bigint;
  v_mid  bigint;
  v_left int := p_batch;
  v_parts int := p_maxp;
  v_n    int;
  v_pass int;
BEGIN
  SELECT id, lease_time INTO v_qid, v_lt FROM @S@.queues WHERE name = p_queue;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  v_gid := @S@._group(v_qid, p_group);
  -- every transaction below the horizon has ended: its rows are final
  v_h := pg_snapshot_xmin(pg_current_snapshot());
  v_exp := now() + make_interval(secs => v_lt);
  SELECT min(c.partition_id), max(c.partition_id) INTO v_lo, v_hi FROM @S@.claims c WHERE c.group_id = v_gid;
  IF v_lo IS NULL THEN
    RETURN;
  END IF;
  v_mid := v_lo + floor(random() * (v_hi - v_lo + 1))::bigint;
  FOR v_pass IN 1..2 LOOP
    RETURN QUERY
    WITH sel AS MATERIALIZED (
      SELECT c.tid, c.pid, x.xid, x.seq, x.created_at, x.txn_id, x.payload
        FROM (SELECT cl.ctid AS tid, cl.partition_id AS pid, cl.cxid, cl.cseq
                FROM @S@.claims cl
               WHERE cl.group_id = v_gid
                 AND cl.partition_id >= CASE WHEN v_pass = 1 THEN v_mid ELSE v_lo END
                 AND cl.partition_id < CASE WHEN v_pass = 1 THEN v_hi + 1 ELSE v_mid END
                 AND cl.lease_until < now()
                 AND CASE WHEN @K@ = 0 THEN
                       EXISTS (SELECT 1 FROM @S@.messages m
                                WHERE m.partition_id = cl.partition_id
                                  AND (m.xid, m.seq) > (cl.cxid, cl.cseq) AND m.xid < v_h)
                     ELSE
                       EXISTS (SELECT 1 FROM @S@.heads hd
                                WHERE hd.partition_id = cl.partition_id
                                  AND (hd.xid, hd.seq) > (cl.cxid, cl.cseq) AND hd.xid < v_h)
                     END
               ORDER BY cl.group_id, cl.partition_id
               LIMIT v_parts
               FOR UPDATE SKIP LOCKED) c
        CROSS JOIN LATERAL (
          SELECT m.xid, m.seq, m.created_at, m.txn_id, m.payload FROM @S@.messages m
           WHERE m.partition_id = c.pid AND (m.xid, m.seq) > (c.cxid, c.cseq) AND m.xid < v_h
           ORDER BY m.xid, m.seq LIMIT v_left) x
       LIMIT v_left),
    upd AS (
      UPDATE @S@.claims cl
         SET lease_until = v_exp, lease_id = p_lease, lxid = t.lx, lseq = t.ls, batch = t.n, acked = 0,
             attempts = CASE WHEN cl.lease_id IS NOT NULL THEN cl.attempts + 1 ELSE 0 END
        FROM (SELECT DISTINCT ON (s.tid) s.tid, s.xid AS lx, s.seq AS ls,
                     count(*) OVER (PARTITION BY s.tid) AS n
                FROM sel s ORDER BY s.tid, s.xid DESC, s.seq DESC) t
       WHERE cl.ctid = t.tid)
    SELECT s.pid, s.xid, s.seq, s.created_at, s.txn_id, s.payload, v_exp FROM sel s;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_left := v_left - v_n;
    EXIT WHEN v_left <= 0;
  END LOOP;
END
$$;

-- ack, merged: items of any number of requests (queue, group, partition,
-- message (xid, seq), lease). Per (group, partition, lease): the cursor
-- moves to the highest acked message, the lease is released when the whole
-- batch is acked. Claim rows are locked in (group, partition) order. An item
-- whose lease is not the live one is ignored. Returns the items applied.
CREATE FUNCTION @S@.ack(p_queues text[], p_groups text[], p_pids bigint[], p_xids xid8[], p_seqs bigint[],
                        p_leases uuid[])
RETURNS int
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_n int;
BEGIN
  WITH a AS MATERIALIZED (
    SELECT g.id AS gid, u.pid, u.lease, count(*)::int AS n,
           (array_agg(u.x ORDER BY u.x DESC, u.s DESC))[1] AS mx,
           (array_agg(u.s ORDER BY u.x DESC, u.s DESC))[1] AS ms
      FROM (SELECT DISTINCT * FROM unnest(p_queues, p_groups, p_pids, p_xids, p_seqs, p_leases)
                                   u(q, g, pid, x, s, lease)) u
      JOIN @S@.queues q ON q.name = u.q
      JOIN @S@.groups g ON g.queue_id = q.id AND g.name = u.g
     GROUP BY g.id, u.pid, u.lease
     ORDER BY g.id, u.pid),
  l AS MATERIALIZED (
    SELECT a.*, c.tid FROM a
    CROSS JOIN LATERAL (SELECT cl.ctid AS tid FROM @S@.claims cl
                         WHERE cl.group_id = a.gid AND cl.partition_id = a.pid
                           AND cl.lease_id = a.lease AND cl.lease_until > now()
                           AND (a.mx, a.ms) <= (cl.lxid, cl.lseq)
                         FOR UPDATE) c),
  u AS (
    UPDATE @S@.claims cl SET
      cxid = CASE WHEN (l.mx, l.ms) > (cl.cxid, cl.cseq) THEN l.mx ELSE cl.cxid END,
      cseq = CASE WHEN (l.mx, l.ms) > (cl.cxid, cl.cseq) THEN l.ms ELSE cl.cseq END,
      acked = cl.acked + l.n,
      lease_until = CASE WHEN cl.acked + l.n >= cl.batch THEN '-infinity' ELSE cl.lease_until END,
      lease_id = CASE WHEN cl.acked + l.n >= cl.batch THEN NULL ELSE cl.lease_id END,
      attempts = CASE WHEN cl.acked + l.n >= cl.batch THEN 0 ELSE cl.attempts END
    FROM l WHERE cl.ctid = l.tid
    RETURNING l.n)
  SELECT COALESCE(sum(u.n), 0) INTO v_n FROM u;
  RETURN v_n;
END
$$;

-- messages of queue p_queue at or below group p_group's cursor (bench count)
CREATE FUNCTION @S@.consumed(p_queue text, p_group text) RETURNS bigint
LANGUAGE sql AS $$
  SELECT COALESCE(sum(x.n), 0)::bigint
    FROM @S@.queues q JOIN @S@.groups g ON g.queue_id = q.id AND g.name = p_group
    JOIN @S@.claims c ON c.group_id = g.id
    CROSS JOIN LATERAL (SELECT count(*) AS n FROM @S@.messages m
                         WHERE m.partition_id = c.partition_id AND (m.xid, m.seq) <= (c.cxid, c.cseq)) x
   WHERE q.name = p_queue
$$;
