-- ---------------------------------------------------------------------------
-- consumer groups, subscriptions, backfill
-- ---------------------------------------------------------------------------

-- Insert ready rows of group p_gid for up to p_limit partitions after its
-- backfill position that have messages after the group's starting point.
-- p_fresh: the group was created by this transaction (no one else can see it,
-- so no partition lock is needed). Otherwise each partition that needs a row is
-- try-locked first (a drain by the group's own acks must not race with it) and
-- the insert runs with a fresh snapshot.
CREATE FUNCTION queen._backfill(p_gid int, p_fresh bool, p_limit int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  g       queen.consumer_groups;
  v_ids   bigint[];
  v_last  bigint;
  v_fail  bigint;
  v_done  bool;
  v_n     int;
BEGIN
  SELECT * INTO g FROM queen.consumer_groups
   WHERE id = p_gid AND backfill_pos IS NOT NULL FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  SELECT array_agg(id ORDER BY id) INTO v_ids FROM (
    SELECT id FROM queen.partitions WHERE queue_id = g.queue_id AND id > g.backfill_pos
     ORDER BY id LIMIT p_limit) s;
  IF v_ids IS NULL THEN
    UPDATE queen.consumer_groups SET backfill_pos = NULL WHERE id = p_gid;
    RETURN 0;
  END IF;
  v_done := array_length(v_ids, 1) < p_limit;
  v_last := v_ids[array_length(v_ids, 1)];
  IF NOT p_fresh THEN
    SELECT array_agg(x ORDER BY x) FILTER (WHERE l), min(x) FILTER (WHERE NOT l)
      INTO v_ids, v_fail
      FROM (SELECT x, queen.try_lock_partition(x) AS l
              FROM (SELECT x FROM unnest(v_ids) x
                     WHERE NOT EXISTS (SELECT 1 FROM queen.ready r WHERE r.partition_id = x AND r.group_id = p_gid)
                       AND NOT EXISTS (SELECT 1 FROM queen.cursors c WHERE c.partition_id = x AND c.group_id = p_gid)
                     ORDER BY x) o) s;
    IF v_fail IS NOT NULL THEN
      v_last := v_fail - 1;
      v_done := false;
      v_ids := ARRAY(SELECT x FROM unnest(v_ids) x WHERE x < v_fail);
    END IF;
  END IF;
  INSERT INTO queen.ready (partition_id, group_id, queue_id, avail_at, acked_seq)
  SELECT b.id, p_gid, g.queue_id, now(), b.cur
  FROM (SELECT x AS id,
               CASE WHEN g.sub_mode = 'timestamp' THEN
                 COALESCE((SELECT m.seq FROM queen.messages m
                            WHERE m.partition_id = x AND m.created_at < g.sub_from
                            ORDER BY m.seq DESC LIMIT 1), 0)
               ELSE 0 END AS cur
          FROM unnest(v_ids) x) b
  WHERE EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = b.id AND m.seq > b.cur)
    AND NOT EXISTS (SELECT 1 FROM queen.ready r WHERE r.partition_id = b.id AND r.group_id = p_gid)
    AND NOT EXISTS (SELECT 1 FROM queen.cursors c WHERE c.partition_id = b.id AND c.group_id = p_gid)
  ORDER BY b.id
  ON CONFLICT DO NOTHING;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  UPDATE queen.consumer_groups SET backfill_pos = CASE WHEN v_done THEN NULL ELSE v_last END
   WHERE id = p_gid;
  RETURN v_n;
END
$$;

-- Resolve (or lazily create) the consumer group a pop acts for. Creation takes
-- the queue lock exclusively (waits for in-flight pushes of that queue, I4) and
-- applies the subscription rules of spec 2.8. The queue mode group is created
-- the same way on its first pop: mode 'queue', from the beginning (start_seq
-- 0), with the bounded backfill of an 'all' group.
CREATE FUNCTION queen._group_get(p_queue_id int, p_group text, p_sub_mode text, p_sub_from text,
                                 p_partition text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  v_name  text := CASE WHEN p_group IS NULL OR p_group = '' THEN '__QUEUE_MODE__' ELSE p_group END;
  v_gid   int;
  v_bf    bigint;
  v_mode  text;
  v_from  timestamptz;
  v_start bigint := 0;
BEGIN
  SELECT id, backfill_pos INTO v_gid, v_bf FROM queen.consumer_groups
   WHERE queue_id = p_queue_id AND name = v_name AND NOT retired;
  IF FOUND THEN
    IF v_bf IS NOT NULL THEN
      PERFORM queen._backfill(v_gid, false, 1000);
    END IF;
    RETURN v_gid;
  END IF;

  PERFORM queen.lock_queue(p_queue_id);
  SELECT id INTO v_gid FROM queen.consumer_groups
   WHERE queue_id = p_queue_id AND name = v_name AND NOT retired;
  IF FOUND THEN
    RETURN v_gid;
  END IF;

  IF v_name = '__QUEUE_MODE__' THEN
    v_mode := 'queue';
  ELSE
    IF p_sub_from IS NOT NULL AND p_sub_from <> '' AND lower(p_sub_from) <> 'now' THEN
      BEGIN
        v_from := p_sub_from::timestamptz;
        v_mode := 'timestamp';
      EXCEPTION WHEN others THEN
        v_from := NULL;          -- unparsable: ignored (rule 4)
      END;
    END IF;
    IF v_mode IS NULL THEN
      IF lower(COALESCE(p_sub_from, '')) = 'now' OR lower(COALESCE(p_sub_mode, '')) = 'new' THEN
        v_mode := 'new';
        v_from := now();
      ELSE
        v_mode := 'all';
      END IF;
    END IF;
  END IF;
  IF v_mode IN ('new', 'timestamp') THEN
    -- every message of this queue with a higher seq is pushed after us (we hold
    -- the queue lock exclusively) and so is created after the subscription
    SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO v_start FROM queen.msg_seq;
  END IF;
  INSERT INTO queen.consumer_groups (queue_id, name, sub_mode, sub_from, start_seq, backfill_pos)
  VALUES (p_queue_id, v_name, v_mode, v_from, v_start,
          CASE WHEN v_mode = 'new' THEN NULL ELSE 0 END)
  RETURNING id INTO v_gid;
  IF v_mode <> 'queue' THEN
    INSERT INTO queen.subscriptions (group_id, partition_name, mode, from_ts)
    VALUES (v_gid, COALESCE(p_partition, ''), v_mode, v_from);
  END IF;
  IF v_mode <> 'new' THEN
    PERFORM queen._backfill(v_gid, true, 10000);
  END IF;
  RETURN v_gid;
END
$$;

-- ---------------------------------------------------------------------------
-- pop
-- ---------------------------------------------------------------------------

-- The row every pop answers (queen.pop, queen.pop_ns; the broker reads the
-- columns in this order, actors/pg/statements.c): one per delivered message,
-- or exactly one with seq NULL when nothing was delivered, whose next_due is
-- the instant the next message becomes claimable (NULL: none known) and
-- whose other columns are NULL.
CREATE TYPE queen.pop_row AS (queue_name text, partition_id bigint, partition_name text,
  seq bigint, created_at timestamptz, txn_id text, trace_id uuid, producer text, payload bytea,
  is_encrypted bool, lease_expires_at timestamptz, next_due timestamptz);

CREATE FUNCTION queen.pop(p_tenant text, p_queue text, p_partition text, p_group text,
  p_sub_mode text, p_sub_from text, p_batch int, p_max_partitions int, p_lease_id uuid,
  p_auto_ack bool)
RETURNS SETOF queen.pop_row
LANGUAGE plpgsql
-- Reads "the first N messages after the cursor" must walk the (partition_id,
-- seq) index of each segment in order and stop early. With a seq or bitmap
-- scan available for (near-)empty segments the planner prefers Sort over a
-- plain Append, which reads the partition's whole backlog (it estimates the
-- average rows per partition, not this one's). See docs/storage.md.
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_none    queen.pop_row;   -- the answer without a message: all NULL but next_due
  q         queen.queues;
  v_pid     bigint;
  v_gid     int;
  v_budget  int := GREATEST(COALESCE(p_batch, 1), 1);
  v_want    int := CASE WHEN p_partition IS NULL THEN GREATEST(COALESCE(p_max_partitions, 1), 1) ELSE 1 END;
  v_got     int := 0;
  v_auto    bool := COALESCE(p_auto_ack, false);
  v_lease   uuid;
  v_exp     timestamptz;
  v_delay   interval;
  v_cutoff  timestamptz;
  v_win     interval;
  v_excl    bigint[] := '{}';
  v_newest  timestamptz;
  v_due     timestamptz;
  v_top     bigint;
  v_floor   bigint;
  v_empty   int;
  v_take    int;
  v_round   int;
  v_budget0 int;
  v_step    int := 4;      -- wildcard: partitions the next round claims at most
  v_asked   int;
  v_claimed int;
  i         int;
  c_pid     bigint[];
  c_cur     bigint[];
  c_tid     tid[];       -- where each claimed ready row is (locked: it stays put)
  r_pid     bigint[];
  r_cur     bigint[];
  r_n       bigint[];
  r_hi      bigint[];
  r_seen    bigint[];
  r_ok      bigint[];
  r_blocked timestamptz[];
  l_pid     bigint[] := '{}';
  l_tid     tid[] := '{}';
  l_cur     bigint[] := '{}';
  l_hi      bigint[] := '{}';
  l_n       int[]    := '{}';
BEGIN
  SELECT * INTO q FROM queen.queues WHERE tenant = p_tenant AND name = p_queue;
  IF NOT FOUND THEN
    RETURN NEXT v_none;
    RETURN;
  END IF;
  IF p_partition IS NOT NULL THEN
    SELECT p.id INTO v_pid FROM queen.partitions p WHERE p.queue_id = q.id AND p.name = p_partition;
    IF NOT FOUND THEN
      RETURN NEXT v_none;
      RETURN;
    END IF;
  END IF;
  v_gid := queen._group_get(q.id, p_group, p_sub_mode, p_sub_from, p_partition);
  -- no message has a seq above the sequence's last value: bounding the reads
  -- by it lets the executor prune the empty segments ahead at startup instead
  -- of initialising their scans (see docs/storage.md)
  SELECT last_value INTO v_top FROM queen.msg_seq;

  v_delay := make_interval(secs => q.delayed_processing);
  v_cutoff := CASE WHEN q.delayed_processing > 0 THEN now() - v_delay ELSE 'infinity' END;
  v_win := make_interval(secs => q.window_buffer);
  IF NOT v_auto THEN
    v_lease := COALESCE(p_lease_id, gen_random_uuid());
    v_exp := now() + make_interval(secs => CASE WHEN q.lease_time > 0 THEN q.lease_time ELSE 60 END);
  END IF;

  -- The wildcard claims in steps (contract 3.7: partitions are taken until
  -- the batch is full): a first round of at most 4 partitions, then as many
  -- as the rest of the batch needs at the depth seen so far. Claiming all
  -- `partitions` up front read up to batch x partitions messages (100 x 100
  -- for deep partitions: 35 ms a pop) and held rows other consumers could
  -- have served. Rounds also go on while a round met stale or not-yet-due
  -- rows (each of which it cleans or re-times); 64 bounds the work of one
  -- call, where 8 could answer empty with messages waiting behind stale
  -- rows left by auto-acked pops (test/sql/19_stale_rows.sql).
  v_budget0 := v_budget;
  FOR v_round IN 1..64 LOOP
    -- claim (never waits: SKIP LOCKED; never scans idle partitions)
    v_asked := CASE WHEN v_pid IS NULL THEN LEAST(v_want - v_got, v_step) ELSE 1 END;
    IF v_pid IS NULL THEN
      SELECT array_agg(s.pid), array_agg(s.cur), array_agg(s.tid) INTO c_pid, c_cur, c_tid FROM (
        SELECT r.partition_id AS pid, r.acked_seq AS cur, r.ctid AS tid FROM queen.ready r
         WHERE r.queue_id = q.id AND r.group_id = v_gid AND r.avail_at <= now()
           AND r.partition_id <> ALL (v_excl)
         ORDER BY r.avail_at
         LIMIT v_asked
         FOR UPDATE SKIP LOCKED) s;
    ELSE
      SELECT array_agg(s.pid), array_agg(s.cur), array_agg(s.tid) INTO c_pid, c_cur, c_tid FROM (
        SELECT r.partition_id AS pid, r.acked_seq AS cur, r.ctid AS tid FROM queen.ready r
         WHERE r.partition_id = v_pid AND r.group_id + 0 = v_gid AND r.avail_at <= now()
           AND r.partition_id <> ALL (v_excl)
         FOR UPDATE SKIP LOCKED) s;
    END IF;
    EXIT WHEN c_pid IS NULL;
    v_claimed := array_length(c_pid, 1);
    v_excl := v_excl || c_pid;
    SELECT LEAST(v_floor, min(x)) INTO v_floor FROM unnest(c_cur) x;

    -- window buffer: not served while the newest message is younger than the window
    IF q.window_buffer > 0 THEN
      FOR i IN 1..array_length(c_pid, 1) LOOP
        SELECT m.created_at INTO v_newest FROM queen.messages m
         WHERE m.partition_id = c_pid[i] ORDER BY m.seq DESC LIMIT 1;
        IF v_newest > now() - v_win THEN
          UPDATE queen.ready r SET avail_at = v_newest + v_win, lease_id = NULL, leased_from = NULL,
                 leased_to = NULL, batch_size = 0, acked_count = 0
           WHERE r.partition_id = c_pid[i] AND r.group_id + 0 = v_gid;
          c_pid[i] := NULL;
        END IF;
      END LOOP;
      SELECT array_agg(u.p ORDER BY u.k), array_agg(u.c ORDER BY u.k), array_agg(u.t ORDER BY u.k)
        INTO c_pid, c_cur, c_tid
        FROM unnest(c_pid, c_cur, c_tid) WITH ORDINALITY u(p, c, t, k) WHERE u.p IS NOT NULL;
      CONTINUE WHEN c_pid IS NULL;
    END IF;

    -- plan the read: per claimed partition (claim order), how many messages fit
    -- the global budget (count rule), up to which seq, and why a partition is
    -- empty. A message is deliverable once delayedProcessing has passed since
    -- it was pushed and its own not_before (delayMs / deliverAt) is reached;
    -- the first one that is not blocks the rest of its partition (FIFO), and
    -- its due instant becomes the partition's avail_at.
    IF NOT q.conflate THEN
      -- one sort (the subquery's), not one per ordered aggregate
      SELECT array_agg(z.pid), array_agg(z.cur), array_agg(z.n),
             array_agg(z.hi), array_agg(z.seen), array_agg(z.okc),
             array_agg(z.blocked)
        INTO r_pid, r_cur, r_n, r_hi, r_seen, r_ok, r_blocked
        FROM (
          WITH c AS (SELECT * FROM unnest(c_pid, c_cur) WITH ORDINALITY AS c(pid, cur, k)),
          m AS (
            SELECT c.k, x.seq,
                   GREATEST(CASE WHEN q.delayed_processing > 0 THEN x.created_at + v_delay END,
                            x.not_before) AS due,
                   bool_and(x.created_at <= v_cutoff AND (x.not_before IS NULL OR x.not_before <= now()))
                     OVER (PARTITION BY c.k ORDER BY x.seq) AS ok
            FROM c CROSS JOIN LATERAL (
              SELECT mm.seq, mm.created_at, mm.not_before FROM queen.messages mm
               WHERE mm.partition_id = c.pid AND mm.seq > c.cur
                 AND mm.seq > v_floor AND mm.seq <= v_top        -- startup pruning
               ORDER BY mm.seq LIMIT v_budget) x),
          s AS (
            SELECT m.*, CASE WHEN m.ok THEN row_number() OVER (PARTITION BY m.ok ORDER BY m.k, m.seq) END AS rn
            FROM m)
          SELECT c.pid, c.cur, c.k,
                 count(s.seq) FILTER (WHERE s.rn <= v_budget) AS n,
                 max(s.seq) FILTER (WHERE s.rn <= v_budget) AS hi,
                 count(s.seq) AS seen,
                 count(s.seq) FILTER (WHERE s.ok) AS okc,
                 (array_agg(s.due ORDER BY s.seq) FILTER (WHERE NOT s.ok))[1] AS blocked
          FROM c LEFT JOIN s ON s.k = c.k
          GROUP BY c.pid, c.cur, c.k
          ORDER BY c.k) z;
    ELSE
      -- conflation (last value per partition): only the newest deliverable
      -- message is handed out, the older pending ones are superseded. The
      -- deliverable messages are the prefix before the first one whose
      -- not_before is still ahead (messages_pdelay: delayed messages only)
      -- and, with delayedProcessing, old enough (created_at grows with seq).
      -- The cursor moves to just below the chosen message (the superseded
      -- ones count as consumed); three index probes per partition, however
      -- long the backlog.
      SELECT array_agg(z.pid ORDER BY z.k), array_agg(z.cur ORDER BY z.k), array_agg(z.n ORDER BY z.k),
             array_agg(z.hi ORDER BY z.k), array_agg(z.seen ORDER BY z.k), array_agg(z.n ORDER BY z.k),
             array_agg(z.blocked ORDER BY z.k)
        INTO r_pid, r_cur, r_n, r_hi, r_seen, r_ok, r_blocked
        FROM (
          SELECT c.pid, c.k, COALESCE(cand.seq - 1, c.cur) AS cur,
                 (cand.seq IS NOT NULL)::int::bigint AS n, cand.seq AS hi,
                 (head.seq IS NOT NULL)::int::bigint AS seen,
                 GREATEST(CASE WHEN q.delayed_processing > 0 THEN head.created_at + v_delay END,
                          head.not_before) AS blocked
          FROM unnest(c_pid, c_cur) WITH ORDINALITY AS c(pid, cur, k)
          LEFT JOIN LATERAL (
            SELECT mm.seq FROM queen.messages mm
             WHERE mm.partition_id = c.pid AND mm.seq > c.cur
               AND mm.not_before IS NOT NULL AND mm.not_before > now()
               AND mm.seq > v_floor AND mm.seq <= v_top
             ORDER BY mm.seq LIMIT 1) blk ON true
          LEFT JOIN LATERAL (
            SELECT mm.seq FROM queen.messages mm
             WHERE mm.partition_id = c.pid AND mm.seq > c.cur AND mm.seq < COALESCE(blk.seq, v_top + 1)
               AND mm.created_at <= v_cutoff
               AND mm.seq > v_floor AND mm.seq <= v_top
             ORDER BY mm.seq DESC LIMIT 1) cand ON true
          LEFT JOIN LATERAL (
            SELECT mm.seq, mm.created_at, mm.not_before FROM queen.messages mm
             WHERE mm.partition_id = c.pid AND mm.seq > c.cur
               AND mm.seq > v_floor AND mm.seq <= v_top
             ORDER BY mm.seq LIMIT 1) head ON true) z;
      -- the batch budget: one message per partition, in claim order; the
      -- partitions past it are released untouched
      v_take := 0;
      FOR i IN 1..array_length(r_pid, 1) LOOP
        IF r_n[i] > 0 THEN
          v_take := v_take + 1;
          IF v_take > v_budget THEN
            r_n[i] := 0; r_ok[i] := 1; r_cur[i] := c_cur[i];
          END IF;
        END IF;
      END LOOP;
    END IF;

    v_empty := 0;
    FOR i IN 1..array_length(r_pid, 1) LOOP
      IF r_n[i] > 0 THEN
        l_pid := l_pid || r_pid[i];
        l_tid := l_tid || c_tid[i];
        l_cur := l_cur || r_cur[i];
        l_hi := l_hi || r_hi[i];
        l_n := l_n || r_n[i]::int;
        v_got := v_got + 1;
        v_budget := v_budget - r_n[i]::int;
      ELSIF r_seen[i] = 0 THEN
        -- stale: nothing after the cursor. Drop the row under the partition lock
        -- (try only: pop never waits); a push holding the lock will keep it.
        v_empty := v_empty + 1;
        IF queen.try_lock_partition(r_pid[i]) THEN
          IF NOT EXISTS (SELECT 1 FROM queen.messages m
                          WHERE m.partition_id = r_pid[i] AND m.seq > r_cur[i]) THEN
            WITH d AS (
              DELETE FROM queen.ready r WHERE r.partition_id = r_pid[i] AND r.group_id + 0 = v_gid
              RETURNING r.partition_id, r.group_id, r.acked_seq)
            INSERT INTO queen.cursors AS cu (partition_id, group_id, acked_seq)
            SELECT * FROM d
            ON CONFLICT (partition_id, group_id) DO UPDATE
              SET acked_seq = GREATEST(cu.acked_seq, EXCLUDED.acked_seq), updated_at = now();
          END IF;
        END IF;
      ELSIF r_ok[i] = 0 THEN
        -- head message not due yet (delayedProcessing, delayMs / deliverAt):
        -- come back when it is
        v_empty := v_empty + 1;
        UPDATE queen.ready r SET avail_at = r_blocked[i], lease_id = NULL,
               leased_from = NULL, leased_to = NULL, batch_size = 0, acked_count = 0
         WHERE r.partition_id = r_pid[i] AND r.group_id + 0 = v_gid;
      END IF;
      -- else: cut by the batch budget; released untouched
    END LOOP;
    EXIT WHEN v_got >= v_want OR v_budget <= 0;
    -- nothing more to claim: fewer rows than asked for, none stale or early
    EXIT WHEN v_empty = 0 AND v_claimed < v_asked;
    -- the next round: enough partitions for the rest of the batch at the
    -- average depth of the partitions served so far (sparse partitions: all
    -- the rest at once; deep ones: a few)
    v_step := CASE WHEN v_got > 0
                   THEN GREATEST(1, ceil(v_budget::numeric * v_got / (v_budget0 - v_budget))::int)
                   ELSE LEAST(v_step * 4, 1000000) END;
  END LOOP;

  IF v_got = 0 THEN
    IF v_pid IS NULL THEN
      SELECT min(r.avail_at) INTO v_due FROM queen.ready r
       WHERE r.queue_id = q.id AND r.group_id = v_gid AND r.avail_at > now();
    ELSE
      SELECT r.avail_at INTO v_due FROM queen.ready r
       WHERE r.partition_id = v_pid AND r.group_id + 0 = v_gid AND r.avail_at > now();
    END IF;
    v_none.next_due := v_due;
    RETURN NEXT v_none;
    RETURN;
  END IF;

  RETURN QUERY
  WITH per AS (SELECT * FROM unnest(l_pid, l_cur, l_hi, l_n, l_tid) AS t(pid, cur, hi, n, tid)),
  upd AS (
    UPDATE queen.ready r SET
      avail_at    = CASE WHEN v_auto THEN now() ELSE v_exp END,
      lease_id    = v_lease,
      leased_from = CASE WHEN v_auto THEN NULL ELSE per.cur END,
      leased_to   = CASE WHEN v_auto THEN NULL ELSE per.hi END,
      batch_size  = CASE WHEN v_auto THEN 0 ELSE per.n END,
      acked_count = 0,
      acked_seq   = CASE WHEN v_auto THEN per.hi ELSE GREATEST(r.acked_seq, per.cur) END,
      attempts    = CASE WHEN v_auto THEN 0 ELSE r.attempts END
    -- the claimed rows, by where they are (the claim locked them, so they
    -- stay put): a TID probe per row whatever the statistics. A join on the
    -- keys planned while ready was small read every ready row of the group
    -- through ready_claim (group_id alone), or all of ready through the
    -- primary key with the join as a filter, once ready was not small (3 s
    -- a pop at 100,000 rows); `partition_id = ANY (l_pid)` beside the join
    -- bounded that but cost 1,000 x 1,000 as the inner side of a 1,000
    -- partition pop (PostgreSQL 15 prepares the array again per probe).
    FROM per WHERE r.ctid = per.tid)
  SELECT q.name::text, per.pid, p.name::text, m.seq, m.created_at, m.txn_id::text, m.trace_id,
         m.producer, m.payload, m.is_encrypted, v_exp, NULL::timestamptz
  FROM per
  JOIN queen.partitions p ON p.id = per.pid
  CROSS JOIN LATERAL (
    SELECT mm.seq, mm.created_at, mm.txn_id, mm.trace_id, mm.producer, mm.payload, mm.is_encrypted
      FROM queen.messages mm
     WHERE mm.partition_id = per.pid AND mm.seq > per.cur AND mm.seq <= per.hi
       AND mm.seq > v_floor AND mm.seq <= v_top                -- startup pruning
     ORDER BY mm.seq) m
  ORDER BY per.pid, m.seq;
END
$$;

-- Namespace/task pop (spec 3.9): wildcard pop over the queues of a namespace
-- and/or task (NULL = any), higher priority first; the first queue that
-- yields answers.
CREATE FUNCTION queen.pop_ns(p_tenant text, p_namespace text, p_task text, p_group text,
  p_sub_mode text, p_sub_from text, p_batch int, p_max_partitions int, p_lease_id uuid,
  p_auto_ack bool)
RETURNS SETOF queen.pop_row
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_q   record;
  v_r   queen.pop_row;
  v_none queen.pop_row;
  v_due timestamptz;
  v_hit bool;
BEGIN
  FOR v_q IN
    SELECT q.name FROM queen.queues q
     WHERE q.tenant = p_tenant
       AND (p_namespace IS NULL OR q.namespace = p_namespace)
       AND (p_task IS NULL OR q.task = p_task)
     ORDER BY q.priority DESC, q.name
  LOOP
    v_hit := false;
    FOR v_r IN SELECT * FROM queen.pop(p_tenant, v_q.name, NULL, p_group, p_sub_mode, p_sub_from,
                                       p_batch, p_max_partitions, p_lease_id, p_auto_ack)
    LOOP
      IF v_r.seq IS NULL THEN
        v_due := LEAST(v_due, v_r.next_due);
      ELSE
        v_hit := true;
        v_r.next_due := NULL;
        RETURN NEXT v_r;
      END IF;
    END LOOP;
    IF v_hit THEN
      RETURN;
    END IF;
  END LOOP;
  v_none.next_due := v_due;
  RETURN NEXT v_none;
END
$$;
