-- 002_hot.sql: the messaging hot path (configure, push, pop, ack, transaction,
-- lease renewal) plus retention and deletes. One call = one round trip = one
-- transaction. Lock order (docs/storage.md, "Locking"): L0 queue advisory locks
-- ascending, L1 partition advisory locks ascending, L4 ready rows ascending.
--
-- Custom SQLSTATEs (mapped to HTTP by the broker):
--   22023  invalid configure option value           -> 400
--   23505  duplicate transactionId (strict push)     -> 409 / txn failure
--   QN404  ACK operation failed: Message not found   -> txn failure (404 class)
--   QN409  ACK operation failed: Invalid or expired lease / required lease -> 409 class
--   QN400  ACK operation failed: invalid status in a transaction -> 400 class
--   QN429  queue <name> is full (maxSize N)          -> 429
--   40001  concurrent delete of a queue/partition being written by a transaction: retry

-- ---------------------------------------------------------------------------
-- configure
-- ---------------------------------------------------------------------------

CREATE FUNCTION queen._opt_int(o jsonb, k text, def int) RETURNS int
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v jsonb := o -> k;
  n numeric;
BEGIN
  IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
    RETURN def;
  END IF;
  IF jsonb_typeof(v) = 'number' THEN
    n := (v #>> '{}')::numeric;
  ELSIF jsonb_typeof(v) = 'string' THEN
    BEGIN
      n := btrim(v #>> '{}')::numeric;
    EXCEPTION WHEN others THEN
      n := NULL;
    END;
  END IF;
  IF n IS NULL OR n = 'NaN'::numeric OR n <> trunc(n) OR n < 0 OR n > 2147483647 THEN
    RAISE EXCEPTION 'invalid value for option %: % (expected an integer between 0 and 2147483647)', k, left(v::text, 64)
      USING ERRCODE = '22023';
  END IF;
  RETURN n::int;
END
$$;

CREATE FUNCTION queen._opt_bool(o jsonb, k text, def bool) RETURNS bool
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v jsonb := o -> k;
  b bool;
BEGIN
  IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
    RETURN def;
  END IF;
  IF jsonb_typeof(v) = 'boolean' THEN
    RETURN (v #>> '{}')::bool;
  ELSIF jsonb_typeof(v) = 'string' THEN
    BEGIN
      b := btrim(v #>> '{}')::bool;
    EXCEPTION WHEN others THEN
      b := NULL;
    END;
  ELSIF jsonb_typeof(v) = 'number' AND (v #>> '{}') IN ('0', '1') THEN
    b := (v #>> '{}') = '1';
  END IF;
  IF b IS NULL THEN
    RAISE EXCEPTION 'invalid value for option %: % (expected a boolean)', k, left(v::text, 64)
      USING ERRCODE = '22023';
  END IF;
  RETURN b;
END
$$;

-- The options object echoed by configure (15 keys of spec 3.5 + conflate).
CREATE FUNCTION queen.queue_options(q queen.queues) RETURNS json
LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    'leaseTime', q.lease_time, 'retryLimit', q.retry_limit, 'retryDelay', q.retry_delay,
    'priority', q.priority, 'delayedProcessing', q.delayed_processing,
    'windowBuffer', q.window_buffer, 'maxSize', q.max_size, 'ttl', q.ttl,
    'retentionEnabled', q.retention_enabled, 'retentionSeconds', q.retention_seconds,
    'completedRetentionSeconds', q.completed_retention_seconds,
    'maxWaitTimeSeconds', q.max_wait_time_seconds, 'encryptionEnabled', q.encryption_enabled,
    'deadLetterQueue', q.dead_letter_queue, 'dlqAfterMaxRetries', q.dlq_after_max_retries,
    'conflate', q.conflate)
$$;

-- Create missing queues (sorted, no identity burn for existing ones) with the
-- derived namespace/task of spec 2.1. No group is created here: the queue
-- mode group, like a named one, is created by its first pop (_group_get).
-- plpgsql, not sql: every push calls it, and a SQL function is planned on
-- every call (0.6 ms of a 10 ms push of 130 messages); plpgsql caches it.
CREATE FUNCTION queen._ensure_queues(p_tenant text, p_names text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queen.queues (tenant, name, namespace, task)
  SELECT p_tenant, d.n, split_part(d.n, '.', 1), split_part(d.n, '.', 2)
  FROM (SELECT DISTINCT n FROM unnest(p_names) n WHERE n IS NOT NULL) d
  WHERE NOT EXISTS (SELECT 1 FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = d.n)
  ORDER BY d.n
  ON CONFLICT (tenant, name) DO NOTHING;
END
$$;

CREATE FUNCTION queen.configure(p_tenant text, p_queue text, p_namespace text, p_task text,
                                p_options jsonb)
RETURNS TABLE(queue_id int, partition_id bigint, options json)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  o      jsonb := CASE WHEN jsonb_typeof(p_options) = 'object' THEN p_options ELSE '{}'::jsonb END;
  v_lease int  := queen._opt_int(o, 'leaseTime', 300);
  v_rlim  int  := queen._opt_int(o, 'retryLimit', 3);
  v_rdel  int  := queen._opt_int(o, 'retryDelay', 1000);
  v_prio  int  := queen._opt_int(o, 'priority', 0);
  v_delay int  := queen._opt_int(o, 'delayedProcessing', 0);
  v_win   int  := queen._opt_int(o, 'windowBuffer', 0);
  v_max   int  := queen._opt_int(o, 'maxSize', 0);
  v_ttl   int  := queen._opt_int(o, 'ttl', 3600);
  v_ren   bool := queen._opt_bool(o, 'retentionEnabled', false);
  v_rs    int  := queen._opt_int(o, 'retentionSeconds', 0);
  v_crs   int  := queen._opt_int(o, 'completedRetentionSeconds', 0);
  v_mw    int  := queen._opt_int(o, 'maxWaitTimeSeconds', 0);
  v_enc   bool := queen._opt_bool(o, 'encryptionEnabled', false);
  v_dlq   bool := queen._opt_bool(o, 'deadLetterQueue', false);
  v_dlqm  bool := queen._opt_bool(o, 'dlqAfterMaxRetries', false);
  v_conf  bool := queen._opt_bool(o, 'conflate', false);
  v_qid   int;
  v_pid   bigint;
  q       queen.queues;
BEGIN
  IF p_queue IS NULL THEN
    RAISE EXCEPTION 'queue is required' USING ERRCODE = '22023';
  END IF;
  PERFORM queen._ensure_queues(p_tenant, ARRAY[p_queue]);
  UPDATE queen.queues SET
    namespace = COALESCE(p_namespace, ''), task = COALESCE(p_task, ''),
    lease_time = v_lease, retry_limit = v_rlim, retry_delay = v_rdel, priority = v_prio,
    delayed_processing = v_delay, window_buffer = v_win, max_size = v_max, ttl = v_ttl,
    retention_enabled = v_ren, retention_seconds = v_rs, completed_retention_seconds = v_crs,
    max_wait_time_seconds = v_mw, encryption_enabled = v_enc, dead_letter_queue = v_dlq,
    dlq_after_max_retries = v_dlqm, conflate = v_conf, updated_at = now()
  WHERE tenant = p_tenant AND name = p_queue
  RETURNING * INTO q;
  v_qid := q.id;
  INSERT INTO queen.partitions (queue_id, name)
  SELECT v_qid, 'Default'
  WHERE NOT EXISTS (SELECT 1 FROM queen.partitions p WHERE p.queue_id = v_qid AND p.name = 'Default')
  ON CONFLICT DO NOTHING;
  SELECT id INTO v_pid FROM queen.partitions p WHERE p.queue_id = v_qid AND p.name = 'Default';
  RETURN QUERY SELECT v_qid, v_pid, queen.queue_options(q);
END
$$;

-- ---------------------------------------------------------------------------
-- push
-- ---------------------------------------------------------------------------

-- Microseconds since the Unix epoch (the broker's binary int8[] parameters)
-- as timestamps; NULL elements stay NULL, a NULL array gives NULL.
CREATE FUNCTION queen.ts_of_us(p bigint[]) RETURNS timestamptz[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN p IS NOT NULL THEN
    ARRAY(SELECT timestamptz 'epoch' + x * interval '1 microsecond'
            FROM unnest(p) WITH ORDINALITY u(x, o) ORDER BY o) END
$$;

-- L0: create missing queues, take the queue locks (shared, or exclusive for the
-- ids in p_exclusive) in ascending id order, and make sure no queue was
-- deleted between resolving and locking. Returns the locked ids.
CREATE FUNCTION queen._lock_queues(p_tenant text, p_names text[], p_exclusive int[])
RETURNS int[]
LANGUAGE plpgsql AS $$
DECLARE
  v_ids   int[];
  v_again int[];
  v_try   int;
BEGIN
  FOR v_try IN 1..5 LOOP
    PERFORM queen._ensure_queues(p_tenant, p_names);
    SELECT array_agg(DISTINCT x ORDER BY x) INTO v_ids FROM (
      SELECT q.id AS x FROM queen.queues q
       WHERE q.tenant = p_tenant AND q.name = ANY (p_names)
      UNION ALL
      SELECT unnest(p_exclusive)) s;
    PERFORM CASE WHEN x = ANY (p_exclusive) THEN pg_advisory_xact_lock(1, x)
                 ELSE pg_advisory_xact_lock_shared(1, x) END
      FROM (SELECT x FROM unnest(v_ids) x ORDER BY x) s;
    -- fresh snapshot: the set of queues must still be the one we locked
    SELECT array_agg(DISTINCT x ORDER BY x) INTO v_again FROM (
      SELECT q.id AS x FROM queen.queues q
       WHERE q.tenant = p_tenant AND q.name = ANY (p_names)
      UNION ALL
      SELECT unnest(p_exclusive)) s;
    IF v_again IS NOT DISTINCT FROM v_ids
       AND (SELECT count(*) FROM queen.queues WHERE id = ANY (v_ids)) = COALESCE(array_length(v_ids, 1), 0) THEN
      RETURN v_ids;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'queue deleted concurrently, retry' USING ERRCODE = '40001';
END
$$;

-- L1: with the queue locks held, create missing partitions (sorted), resolve
-- the distinct (queue, partition) pairs, lock every partition of the pairs plus
-- p_extra (ack partitions of a transaction) in ascending id order, and check
-- that none was deleted meanwhile (a re-created partition gets a higher id, so
-- the order stays ascending).
CREATE FUNCTION queen._lock_partitions(p_tenant text, p_queues text[], p_parts text[], p_extra bigint[],
  OUT pq text[], OUT pn text[], OUT ppid bigint[], OUT pqid int[])
LANGUAGE plpgsql AS $$
DECLARE
  v_try int;
  v_n   int;
BEGIN
  FOR v_try IN 1..5 LOOP
    INSERT INTO queen.partitions (queue_id, name)
    SELECT d.qid, d.n
    FROM (SELECT DISTINCT q.id AS qid, COALESCE(t.n, 'Default') AS n
            FROM unnest(p_queues, p_parts) t(q, n)
            JOIN queen.queues q ON q.tenant = p_tenant AND q.name = t.q) d
    WHERE NOT EXISTS (SELECT 1 FROM queen.partitions p WHERE p.queue_id = d.qid AND p.name = d.n)
    ORDER BY d.qid, d.n
    ON CONFLICT DO NOTHING;

    SELECT array_agg(d.q), array_agg(d.n), array_agg(p.id), array_agg(p.queue_id)
      INTO pq, pn, ppid, pqid
    FROM (SELECT DISTINCT t.q, COALESCE(t.n, 'Default') AS n FROM unnest(p_queues, p_parts) t(q, n)) d
    JOIN queen.queues q ON q.tenant = p_tenant AND q.name = d.q
    JOIN queen.partitions p ON p.queue_id = q.id AND p.name = d.n;

    PERFORM pg_advisory_xact_lock(x)
      FROM (SELECT DISTINCT x FROM (SELECT unnest(ppid) UNION ALL SELECT unnest(p_extra)) u(x)
             WHERE x IS NOT NULL ORDER BY x) s;

    SELECT count(*) INTO v_n FROM queen.partitions WHERE id = ANY (ppid);
    IF v_n = COALESCE(array_length(ppid, 1), 0) THEN
      RETURN;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'partition deleted concurrently, retry' USING ERRCODE = '40001';
END
$$;

-- The strict-push check (transactions): the first item, by ord, whose
-- transactionId is already stored in its partition or repeats an earlier
-- item of the call for the same partition; all NULL when there is none.
-- Partition locks held (pq/pn/ppid as _lock_partitions returns them).
CREATE FUNCTION queen._push_dup(p_queues text[], p_parts text[], p_txn_ids text[],
  pq text[], pn text[], ppid bigint[], OUT txn text, OUT part text, OUT ord int)
-- plpgsql, not sql: its plan is cached (a SQL function is planned on every
-- call, and planning a statement on the partitioned queen.messages is costly)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  SELECT t.txn, pr.n, t.ord::int INTO txn, part, ord
    FROM unnest(p_queues, p_parts, p_txn_ids) WITH ORDINALITY AS t(q, n, txn, ord)
    JOIN unnest(pq, pn, ppid) AS pr(q, n, pid) ON pr.q = t.q AND pr.n = COALESCE(t.n, 'Default')
   WHERE NULLIF(t.txn, '') IS NOT NULL
     AND (EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = pr.pid AND m.txn_id = t.txn)
          OR EXISTS (SELECT 1 FROM unnest(p_queues, p_parts, p_txn_ids) WITH ORDINALITY AS t2(q, n, txn, ord)
                      WHERE t2.ord < t.ord AND t2.q = t.q AND COALESCE(t2.n, 'Default') = pr.n
                        AND t2.txn = t.txn))
   ORDER BY t.ord LIMIT 1;
END
$$;

-- Dedup + insert + ready rows (+ window bump, maxSize check), locks held.
-- p_not_before[i] (NULL or a NULL array: none): message i is not delivered
-- before that instant; an instant already past is stored as NULL.
CREATE FUNCTION queen._push_rows(p_tenant text, p_queues text[], p_parts text[], p_txn_ids text[],
  p_payloads bytea[], p_trace_ids uuid[], p_producers text[], p_encrypted bool[], p_strict bool,
  pq text[], pn text[], ppid bigint[], pqid int[], p_not_before timestamptz[])
RETURNS TABLE(ord int, seq bigint, partition_id bigint, queue_id int, duplicate bool)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now  timestamptz := clock_timestamp();   -- read after the locks (I1')
  v_dup  record;
  v_full record;
BEGIN
  IF p_strict THEN
    v_dup := queen._push_dup(p_queues, p_parts, p_txn_ids, pq, pn, ppid);
    IF v_dup.ord IS NOT NULL THEN
      RAISE EXCEPTION 'duplicate transactionId % in partition %', v_dup.txn, v_dup.part
        USING ERRCODE = '23505', DETAIL = format('op=push:%s', v_dup.ord);
    END IF;
  END IF;

  -- safety net: the maintenance job keeps segments ahead of the sequence; if
  -- it fell behind, extend them here rather than fail the insert
  IF (SELECT last_value FROM queen.msg_seq) + cardinality(p_queues) + 1
     >= (SELECT max(hi) FROM queen.segments) THEN
    PERFORM queen.ensure_segments();
  END IF;

  RETURN QUERY
  WITH pairs AS (
    SELECT * FROM unnest(pq, pn, ppid, pqid) AS x(q, n, pid, qid)),
  items AS MATERIALIZED (
    SELECT t.ord::int AS ord, pr.pid, pr.qid, NULLIF(t.txn, '') AS txn, t.payload, t.trace,
           t.producer, COALESCE(t.enc, false) AS enc,
           CASE WHEN p_not_before[t.ord] > v_now THEN p_not_before[t.ord] END AS nb
    FROM unnest(p_queues, p_parts, p_txn_ids, p_payloads, p_trace_ids, p_producers, p_encrypted)
           WITH ORDINALITY AS t(q, n, txn, payload, trace, producer, enc, ord)
    JOIN pairs pr ON pr.q = t.q AND pr.n = COALESCE(t.n, 'Default')),
  marked AS MATERIALIZED (
    SELECT i.*,
      CASE WHEN i.txn IS NULL THEN NULL ELSE
        (SELECT m.seq FROM queen.messages m             -- unique per (partition, txn) by construction
          WHERE m.partition_id = i.pid AND m.txn_id = i.txn LIMIT 1) END AS old_seq,
      CASE WHEN i.txn IS NULL THEN 1 ELSE
        row_number() OVER (PARTITION BY i.pid, i.txn ORDER BY i.ord) END AS rk
    FROM items i),
  numbered AS MATERIALIZED (               -- nextval in input order, new messages only
    SELECT s.*, CASE WHEN s.old_seq IS NULL AND s.rk = 1 THEN nextval('queen.msg_seq') END AS new_seq
    FROM (SELECT * FROM marked ORDER BY ord) s),
  ins AS (
    INSERT INTO queen.messages (seq, partition_id, created_at, not_before, trace_id, is_encrypted, txn_id,
                                producer, payload)
    SELECT nb.new_seq, nb.pid, v_now, nb.nb, nb.trace, nb.enc, nb.txn, nb.producer,
           COALESCE(nb.payload, '\x6e756c6c'::bytea)
    FROM numbered nb WHERE nb.new_seq IS NOT NULL),
  -- a ready row created here has no older pending message in front of it
  -- (I3) unless its group is still backfilling: then the first new message is
  -- the partition's head, and a delay of that message is its avail_at
  rdy AS (
    INSERT INTO queen.ready (partition_id, group_id, queue_id, avail_at, acked_seq)
    SELECT x.pid, g.id, x.qid,
           GREATEST(v_now + make_interval(secs => GREATEST(qq.delayed_processing, qq.window_buffer)),
                    CASE WHEN g.backfill_pos IS NULL THEN x.head_nb END),
           -- a scalar subquery, not a join: both keys are then parameters of
           -- one point lookup; as a join, a plan made on small tables probed
           -- by group only and filtered every cursor of the group
           COALESCE((SELECT c.acked_seq FROM queen.cursors c
                      WHERE c.partition_id = x.pid AND c.group_id = g.id), g.start_seq)
    FROM (SELECT nb.pid, nb.qid, (array_agg(nb.nb ORDER BY nb.new_seq))[1] AS head_nb
            FROM numbered nb WHERE nb.new_seq IS NOT NULL GROUP BY nb.pid, nb.qid) x
    JOIN queen.consumer_groups g ON g.queue_id = x.qid AND NOT g.retired
    JOIN queen.queues qq ON qq.id = x.qid
    -- No NOT EXISTS pre-check: as a generic plan it became an anti-join that
    -- read every ready row of the queue (55k rows for a 200-partition push).
    -- ON CONFLICT checks the primary key first and inserts nothing when the
    -- row exists, without locking it.
    ORDER BY x.pid, g.id
    ON CONFLICT (partition_id, group_id) DO NOTHING)
  -- no self-joins of the CTEs here: plans stay linear even as generic plans
  -- (whose row estimates for unnest() of parameters are tiny)
  SELECT o.ord, o.seq, o.pid, o.qid, o.dup
  FROM (SELECT nb.ord,
               COALESCE(nb.old_seq, nb.new_seq, max(nb.new_seq) OVER (PARTITION BY nb.pid, nb.txn)) AS seq,
               nb.pid, nb.qid, nb.new_seq IS NULL AS dup
          FROM numbered nb) o
  ORDER BY o.ord;

  -- window buffer: hold back partitions that just received messages (rows not
  -- under a live lease; pop re-checks the newest message for leased ones)
  IF EXISTS (SELECT 1 FROM queen.queues q WHERE q.id = ANY (pqid) AND q.window_buffer > 0) THEN
    UPDATE queen.ready r
       SET avail_at = GREATEST(r.avail_at, v_now + make_interval(secs => q.window_buffer)),
           lease_id = NULL, leased_from = NULL, leased_to = NULL, batch_size = 0, acked_count = 0
      FROM queen.queues q
     WHERE q.id = r.queue_id AND q.window_buffer > 0
       AND r.partition_id = ANY (ppid) AND r.queue_id = ANY (pqid)
       AND (r.lease_id IS NULL OR r.avail_at <= v_now);
  END IF;

  -- maxSize: pending = messages after the queue mode cursors (every message
  -- of the queue while no queue mode consumer exists yet), counted up to
  -- maxSize + 1 (bounded work); includes the messages just inserted
  FOR v_full IN
    SELECT q.id, q.name, q.max_size, g.id AS gid
      FROM queen.queues q
      LEFT JOIN queen.consumer_groups g ON g.queue_id = q.id AND g.name = '__QUEUE_MODE__' AND NOT g.retired
     WHERE q.id = ANY (pqid) AND q.max_size > 0
  LOOP
    IF v_full.gid IS NULL AND (SELECT count(*) FROM (
          SELECT 1 FROM queen.partitions p
          CROSS JOIN LATERAL (SELECT 1 FROM queen.messages m WHERE m.partition_id = p.id
                               LIMIT v_full.max_size + 1) x
          WHERE p.queue_id = v_full.id
          LIMIT v_full.max_size + 1) c) > v_full.max_size
    OR v_full.gid IS NOT NULL AND (SELECT count(*) FROM (
          SELECT 1 FROM queen.ready r
          CROSS JOIN LATERAL (SELECT 1 FROM queen.messages m
                               WHERE m.partition_id = r.partition_id AND m.seq > r.acked_seq
                               LIMIT v_full.max_size + 1) x
          WHERE r.queue_id = v_full.id AND r.group_id = v_full.gid
          LIMIT v_full.max_size + 1) c) > v_full.max_size THEN
      RAISE EXCEPTION 'queue % is full (maxSize %)', v_full.name, v_full.max_size
        USING ERRCODE = 'QN429';
    END IF;
  END LOOP;
END
$$;

-- p_not_before (optional): per-item "not delivered before" instants (NULL
-- element or array: none). The broker binds microseconds since the Unix
-- epoch and converts them with queen.ts_of_us.
CREATE FUNCTION queen.push(p_tenant text, p_queues text[], p_parts text[], p_txn_ids text[],
  p_payloads bytea[], p_trace_ids uuid[], p_producers text[], p_encrypted bool[], p_strict bool,
  p_not_before timestamptz[] DEFAULT NULL)
RETURNS TABLE(ord int, seq bigint, partition_id bigint, queue_id int, duplicate bool)
LANGUAGE plpgsql
-- generic plans: the statements are written to plan well without the parameter
-- values; custom plans would re-plan every call (~0.3 ms per statement that
-- touches the partitioned queen.messages). See docs/storage.md. No seq or
-- bitmap scans: a plan cached while the tables were nearly empty must not
-- walk every partition, ready or cursors row once they are large.
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  lp record;
BEGIN
  IF COALESCE(array_length(p_queues, 1), 0) = 0 THEN
    RETURN;
  END IF;
  PERFORM queen._lock_queues(p_tenant, p_queues, '{}'::int[]);
  lp := queen._lock_partitions(p_tenant, p_queues, p_parts, NULL);
  RETURN QUERY SELECT * FROM queen._push_rows(p_tenant, p_queues, p_parts, p_txn_ids, p_payloads,
    p_trace_ids, p_producers, p_encrypted, COALESCE(p_strict, false), lp.pq, lp.pn, lp.ppid, lp.pqid,
    p_not_before);
END
$$;

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
      FROM (SELECT x, pg_try_advisory_xact_lock(x) AS l
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

  PERFORM pg_advisory_xact_lock(1, p_queue_id);
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

CREATE FUNCTION queen.pop(p_tenant text, p_queue text, p_partition text, p_group text,
  p_sub_mode text, p_sub_from text, p_batch int, p_max_partitions int, p_lease_id uuid,
  p_auto_ack bool)
RETURNS TABLE(queue_name text, partition_id bigint, partition_name text, seq bigint,
  created_at timestamptz, txn_id text, trace_id uuid, producer text, payload bytea,
  is_encrypted bool, lease_expires_at timestamptz, next_due timestamptz)
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
  r_pid     bigint[];
  r_cur     bigint[];
  r_n       bigint[];
  r_hi      bigint[];
  r_seen    bigint[];
  r_ok      bigint[];
  r_blocked timestamptz[];
  l_pid     bigint[] := '{}';
  l_cur     bigint[] := '{}';
  l_hi      bigint[] := '{}';
  l_n       int[]    := '{}';
BEGIN
  SELECT * INTO q FROM queen.queues WHERE tenant = p_tenant AND name = p_queue;
  IF NOT FOUND THEN
    RETURN QUERY SELECT NULL::text, NULL::bigint, NULL::text, NULL::bigint, NULL::timestamptz,
      NULL::text, NULL::uuid, NULL::text, NULL::bytea, NULL::bool, NULL::timestamptz, NULL::timestamptz;
    RETURN;
  END IF;
  IF p_partition IS NOT NULL THEN
    SELECT p.id INTO v_pid FROM queen.partitions p WHERE p.queue_id = q.id AND p.name = p_partition;
    IF NOT FOUND THEN
      RETURN QUERY SELECT NULL::text, NULL::bigint, NULL::text, NULL::bigint, NULL::timestamptz,
        NULL::text, NULL::uuid, NULL::text, NULL::bytea, NULL::bool, NULL::timestamptz, NULL::timestamptz;
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
      SELECT array_agg(s.pid), array_agg(s.cur) INTO c_pid, c_cur FROM (
        SELECT r.partition_id AS pid, r.acked_seq AS cur FROM queen.ready r
         WHERE r.queue_id = q.id AND r.group_id = v_gid AND r.avail_at <= now()
           AND r.partition_id <> ALL (v_excl)
         ORDER BY r.avail_at
         LIMIT v_asked
         FOR UPDATE SKIP LOCKED) s;
    ELSE
      SELECT array_agg(s.pid), array_agg(s.cur) INTO c_pid, c_cur FROM (
        SELECT r.partition_id AS pid, r.acked_seq AS cur FROM queen.ready r
         WHERE r.partition_id = v_pid AND r.group_id = v_gid AND r.avail_at <= now()
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
           WHERE r.partition_id = c_pid[i] AND r.group_id = v_gid;
          c_pid[i] := NULL;
        END IF;
      END LOOP;
      SELECT array_agg(u.p ORDER BY u.k), array_agg(u.c ORDER BY u.k) INTO c_pid, c_cur
        FROM unnest(c_pid, c_cur) WITH ORDINALITY u(p, c, k) WHERE u.p IS NOT NULL;
      CONTINUE WHEN c_pid IS NULL;
    END IF;

    -- plan the read: per claimed partition (claim order), how many messages fit
    -- the global budget (count rule), up to which seq, and why a partition is
    -- empty. A message is deliverable once delayedProcessing has passed since
    -- it was pushed and its own not_before (delayMs / deliverAt) is reached;
    -- the first one that is not blocks the rest of its partition (FIFO), and
    -- its due instant becomes the partition's avail_at.
    IF NOT q.conflate THEN
      SELECT array_agg(z.pid ORDER BY z.k), array_agg(z.cur ORDER BY z.k), array_agg(z.n ORDER BY z.k),
             array_agg(z.hi ORDER BY z.k), array_agg(z.seen ORDER BY z.k), array_agg(z.okc ORDER BY z.k),
             array_agg(z.blocked ORDER BY z.k)
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
          GROUP BY c.pid, c.cur, c.k) z;
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
        l_cur := l_cur || r_cur[i];
        l_hi := l_hi || r_hi[i];
        l_n := l_n || r_n[i]::int;
        v_got := v_got + 1;
        v_budget := v_budget - r_n[i]::int;
      ELSIF r_seen[i] = 0 THEN
        -- stale: nothing after the cursor. Drop the row under the partition lock
        -- (try only: pop never waits); a push holding the lock will keep it.
        v_empty := v_empty + 1;
        IF pg_try_advisory_xact_lock(r_pid[i]) THEN
          IF NOT EXISTS (SELECT 1 FROM queen.messages m
                          WHERE m.partition_id = r_pid[i] AND m.seq > r_cur[i]) THEN
            WITH d AS (
              DELETE FROM queen.ready r WHERE r.partition_id = r_pid[i] AND r.group_id = v_gid
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
         WHERE r.partition_id = r_pid[i] AND r.group_id = v_gid;
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
       WHERE r.partition_id = v_pid AND r.group_id = v_gid AND r.avail_at > now();
    END IF;
    RETURN QUERY SELECT NULL::text, NULL::bigint, NULL::text, NULL::bigint, NULL::timestamptz,
      NULL::text, NULL::uuid, NULL::text, NULL::bytea, NULL::bool, NULL::timestamptz, v_due;
    RETURN;
  END IF;

  RETURN QUERY
  WITH per AS (SELECT * FROM unnest(l_pid, l_cur, l_hi, l_n) AS t(pid, cur, hi, n)),
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
    FROM per WHERE r.partition_id = per.pid AND r.group_id = v_gid)
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
RETURNS TABLE(queue_name text, partition_id bigint, partition_name text, seq bigint,
  created_at timestamptz, txn_id text, trace_id uuid, producer text, payload bytea,
  is_encrypted bool, lease_expires_at timestamptz, next_due timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_q   record;
  v_r   record;
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
        queue_name := v_r.queue_name; partition_id := v_r.partition_id;
        partition_name := v_r.partition_name; seq := v_r.seq; created_at := v_r.created_at;
        txn_id := v_r.txn_id; trace_id := v_r.trace_id; producer := v_r.producer;
        payload := v_r.payload; is_encrypted := v_r.is_encrypted;
        lease_expires_at := v_r.lease_expires_at; next_due := NULL;
        RETURN NEXT;
      END IF;
    END LOOP;
    IF v_hit THEN
      RETURN;
    END IF;
  END LOOP;
  RETURN QUERY SELECT NULL::text, NULL::bigint, NULL::text, NULL::bigint, NULL::timestamptz,
    NULL::text, NULL::uuid, NULL::text, NULL::bytea, NULL::bool, NULL::timestamptz, v_due;
END
$$;

-- ---------------------------------------------------------------------------
-- ack (spec 3.10 / 3.11) and the transaction-route acks (spec 3.12)
-- ---------------------------------------------------------------------------
-- Per item: the message is (partition id, seq) when p_seqs[i] is given (the
-- broker decoded a message-id-form transactionId; accepted when the stored
-- txn_id is NULL or equals p_txn_ids[i] / the id text), else (partition id,
-- txn_id). Lease validation uses the state at the start of the call. Items are
-- applied in (partition, group, seq) order with per-(partition, group) running
-- state held in arrays; the writes (DLQ copies, ready updates, drains into
-- cursors) are a handful of set-based statements at the end.
-- p_txn: the caller holds the partition locks (L1); otherwise none are held
-- and the drain try-locks.
CREATE FUNCTION queen._ack_core(p_tenant text, p_groups text[], p_pids bigint[], p_txn_ids text[],
  p_seqs bigint[], p_statuses text[], p_lease_ids uuid[], p_errors text[], p_txn bool)
RETURNS TABLE(ord int, success bool, error text, queue_name text, partition_name text,
  lease_released bool, dlq bool, msg_seq bigint, queue_id int, code text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  n        int := COALESCE(array_length(p_pids, 1), 0);
  ns       int;
  v_now    timestamptz := now();
  -- items, sorted by (partition, group, seq)
  a_ord int[]; a_pid bigint[]; a_gid int[]; a_grp text[]; a_qid int[]; a_qn text[]; a_pn text[];
  a_seq bigint[]; a_st text[]; a_lease uuid[]; a_err text[]; a_rlim int[]; a_rdel int[]; a_sidx int[];
  -- (partition, group) states: start copy (…0) and running copy
  s_pid bigint[]; s_gid int[]; s_qid int[]; s_ex0 bool[]; s_lease0 uuid[]; s_avail0 timestamptz[];
  s_ex bool[]; s_cur bigint[]; s_lease uuid[]; s_avail timestamptz[]; s_from bigint[]; s_to bigint[];
  s_bs int[]; s_ac int[]; s_att int[]; s_cold bigint[]; s_chg bool[]; s_ff text[];
  -- results by ord
  o_ok bool[]; o_err text[]; o_qn text[]; o_pn text[]; o_rel bool[]; o_dlq bool[];
  o_seq bigint[]; o_qid int[]; o_code text[];
  -- DLQ copies
  d_qid int[] := '{}'; d_pid bigint[] := '{}'; d_grp text[] := '{}'; d_seq bigint[] := '{}';
  d_rc int[] := '{}'; d_err text[] := '{}';
  i int; j int; o int;
  v_st text; v_dl bool; v_use bool; v_reset bool; v_dec text;
  v_lk bigint[];   -- partitions whose drain is exact (lock held)
  v_dk int[];      -- the states drained (indexes into s_*)
BEGIN
  IF n = 0 THEN
    RETURN;
  END IF;

  SELECT array_agg(x.ord), array_agg(x.pid), array_agg(x.gid),
         array_agg(x.grp), array_agg(x.qid), array_agg(x.qname),
         array_agg(x.pname), array_agg(x.mseq), array_agg(x.st),
         array_agg(x.lease), array_agg(x.err), array_agg(x.rlim),
         array_agg(x.rdel), array_agg(x.sidx)
    INTO a_ord, a_pid, a_gid, a_grp, a_qid, a_qn, a_pn, a_seq, a_st, a_lease, a_err, a_rlim, a_rdel, a_sidx
    FROM (
      SELECT y.*,
             row_number() OVER (ORDER BY y.pid NULLS LAST, y.gid NULLS LAST, y.grp, y.mseq, y.ord) AS k,
             CASE WHEN y.pid IS NOT NULL AND y.gid IS NOT NULL THEN
               dense_rank() OVER (PARTITION BY (y.pid IS NOT NULL AND y.gid IS NOT NULL)
                                  ORDER BY y.pid, y.gid) END AS sidx
      FROM (
        SELECT t.ord::int AS ord, q.id AS qid, CASE WHEN q.id IS NOT NULL THEN p.id END AS pid,
               t.grp, g.id AS gid, q.name::text AS qname, CASE WHEN q.id IS NOT NULL THEN p.name END::text AS pname,
               mm.seq AS mseq, COALESCE(t.st, 'completed') AS st, t.lease, t.err,
               q.retry_limit AS rlim, q.retry_delay AS rdel
        FROM (SELECT u.ord, COALESCE(NULLIF(u.grp, ''), '__QUEUE_MODE__') AS grp, u.pid, u.txn,
                     u.sq, u.st, u.lease, u.err
                FROM unnest(p_groups, p_pids, p_txn_ids, p_seqs, p_statuses, p_lease_ids, p_errors)
                     WITH ORDINALITY AS u(grp, pid, txn, sq, st, lease, err, ord)) t
        LEFT JOIN queen.partitions p ON p.id = t.pid
        LEFT JOIN queen.queues q ON q.id = p.queue_id AND q.tenant = p_tenant
        LEFT JOIN queen.consumer_groups g ON g.queue_id = q.id AND g.name = t.grp AND NOT g.retired
        LEFT JOIN LATERAL (
          SELECT COALESCE(
            (SELECT m.seq FROM queen.messages m
              WHERE t.sq IS NOT NULL AND m.partition_id = t.pid AND m.seq = t.sq
                AND (m.txn_id IS NULL OR m.txn_id = COALESCE(t.txn, queen.uuid_of(1, t.sq)::text))),
            (SELECT m.seq FROM queen.messages m
              WHERE m.partition_id = t.pid
                AND m.txn_id = COALESCE(t.txn, queen.uuid_of(1, t.sq)::text)
              ORDER BY m.seq LIMIT 1)) AS seq
          ) mm ON q.id IS NOT NULL
      ) y
      ORDER BY k          -- one sort; array_agg keeps the input order
    ) x;

  -- L4: lock the existing ready rows in (partition, group) order
  PERFORM 1 FROM queen.ready r
   WHERE (r.partition_id, r.group_id) IN (SELECT u.p, u.g FROM unnest(a_pid, a_gid) u(p, g))
   ORDER BY r.partition_id, r.group_id
   FOR UPDATE;

  SELECT array_agg(z.p), array_agg(z.g), array_agg(z.q), array_agg(z.ex), array_agg(z.lease_id),
         array_agg(z.avail_at), array_agg(z.acked_seq), array_agg(z.leased_from), array_agg(z.leased_to),
         array_agg(z.bs), array_agg(z.ac), array_agg(z.att), array_agg(z.cold)
    INTO s_pid, s_gid, s_qid, s_ex0, s_lease0, s_avail0, s_cur, s_from, s_to, s_bs, s_ac, s_att, s_cold
    FROM (
      SELECT k.p, k.g, k.q, r.partition_id IS NOT NULL AS ex, r.lease_id, r.avail_at, r.acked_seq,
             r.leased_from, r.leased_to, COALESCE(r.batch_size, 0) AS bs, COALESCE(r.acked_count, 0) AS ac,
             COALESCE(r.attempts, 0) AS att,
             COALESCE((SELECT c.acked_seq FROM queen.cursors c
                        WHERE c.partition_id = k.p AND c.group_id = k.g), g.start_seq, 0) AS cold
        FROM (SELECT DISTINCT u.p, u.g, u.q FROM unnest(a_pid, a_gid, a_qid) u(p, g, q)
               WHERE u.p IS NOT NULL AND u.g IS NOT NULL) k
        -- point lookups whatever the statistics (see _push_rows): LIMIT
        -- keeps the lateral subquery from being flattened into a join
        LEFT JOIN LATERAL (SELECT * FROM queen.ready r0
                            WHERE r0.partition_id = k.p AND r0.group_id = k.g LIMIT 1) r ON true
        LEFT JOIN queen.consumer_groups g ON g.id = k.g
       ORDER BY k.p, k.g) z;   -- one sort; array_agg keeps the input order
  ns := COALESCE(array_length(s_pid, 1), 0);
  s_ex := s_ex0;
  s_lease := s_lease0;
  s_avail := s_avail0;
  IF ns > 0 THEN
    s_chg := array_fill(false, ARRAY[ns]);
    s_ff := array_fill(NULL::text, ARRAY[ns]);
  END IF;

  o_ok := array_fill(NULL::bool, ARRAY[n]);
  o_err := array_fill(NULL::text, ARRAY[n]);
  o_qn := array_fill(NULL::text, ARRAY[n]);
  o_pn := array_fill(NULL::text, ARRAY[n]);
  o_rel := array_fill(NULL::bool, ARRAY[n]);
  o_dlq := array_fill(false, ARRAY[n]);
  o_seq := array_fill(NULL::bigint, ARRAY[n]);
  o_qid := array_fill(NULL::int, ARRAY[n]);
  o_code := array_fill(NULL::text, ARRAY[n]);

  FOR i IN 1..n LOOP
    o := a_ord[i];
    j := a_sidx[i];
    o_qn[o] := a_qn[i];
    o_pn[o] := a_pn[i];
    o_seq[o] := a_seq[i];
    o_qid[o] := a_qid[i];
    IF a_pid[i] IS NULL OR a_seq[i] IS NULL THEN
      o_ok[o] := false;
      o_err[o] := 'Message not found';
      o_code[o] := 'QN404';
      o_rel[o] := CASE WHEN j IS NULL THEN NULL ELSE s_lease[j] IS NULL END;
      CONTINUE;
    END IF;
    IF a_lease[i] IS NOT NULL
       AND NOT COALESCE(s_ex0[j] AND s_lease0[j] = a_lease[i] AND s_avail0[j] > v_now, false) THEN
      o_ok[o] := false;
      o_err[o] := 'Invalid or expired lease';
      o_code[o] := 'QN409';
      o_rel[o] := CASE WHEN j IS NULL THEN true ELSE s_lease[j] IS NULL END;
      CONTINUE;
    END IF;

    v_st := a_st[i];
    v_dl := false;       -- dead-letter this message
    v_use := false;      -- the message counts as consumed (cursor, auto-release)
    v_reset := false;    -- a completed ack: releasing the batch resets the retry counter
    o_ok[o] := true;
    IF v_st IN ('completed', 'success') THEN
      v_use := true;
      v_reset := true;
    ELSIF p_txn AND v_st IN ('failed', 'dlq') THEN
      v_dl := true;
      v_use := true;
    ELSIF p_txn THEN
      o_ok[o] := false;
      o_code[o] := 'QN400';
    ELSIF v_st = 'failed' THEN
      IF j IS NOT NULL AND s_ff[j] IS NOT NULL THEN
        v_dec := s_ff[j];          -- later failed items follow the first one (spec 3.11)
      ELSE
        v_dec := CASE WHEN COALESCE(s_att[j], 0) < a_rlim[i] THEN 'retry' ELSE 'dlq' END;
        IF j IS NOT NULL THEN
          s_ff[j] := v_dec;
          IF v_dec = 'retry' AND s_ex[j] THEN
            s_att[j] := s_att[j] + 1;
            s_lease[j] := NULL; s_from[j] := NULL; s_to[j] := NULL; s_bs[j] := 0; s_ac[j] := 0;
            s_avail[j] := v_now + make_interval(secs => a_rdel[i] / 1000.0);
            s_chg[j] := true;
          END IF;
        END IF;
      END IF;
      IF v_dec = 'dlq' THEN
        v_dl := true;
        v_use := true;
      END IF;
    ELSIF v_st = 'dlq' THEN
      v_dl := true;
      v_use := true;
    ELSIF v_st = 'retry' THEN
      IF j IS NOT NULL AND s_ex[j] AND s_lease[j] IS NOT NULL THEN
        s_lease[j] := NULL; s_from[j] := NULL; s_to[j] := NULL; s_bs[j] := 0; s_ac[j] := 0;
        s_avail[j] := v_now;
        s_chg[j] := true;
      END IF;
    ELSE
      o_ok[o] := false;         -- unknown status: no effect, error NULL
    END IF;

    IF v_dl THEN
      d_qid := d_qid || a_qid[i];
      d_pid := d_pid || a_pid[i];
      d_grp := d_grp || a_grp[i];
      d_seq := d_seq || a_seq[i];
      d_rc := d_rc || CASE WHEN p_txn OR j IS NULL THEN 0 ELSE s_att[j] END;
      d_err := d_err || COALESCE(NULLIF(a_err[i], ''),
                                 CASE WHEN p_txn THEN 'Unknown error' ELSE 'Retries exhausted' END);
      o_dlq[o] := true;
    END IF;

    IF v_use AND j IS NOT NULL THEN
      IF NOT s_ex[j] AND p_txn THEN
        -- transaction semantics: create the state with the cursor at the acked message
        s_ex[j] := true;
        s_cur[j] := GREATEST(s_cold[j], a_seq[i]);
        s_chg[j] := true;
      ELSIF s_ex[j] THEN
        IF a_seq[i] > s_cur[j] THEN
          s_cur[j] := a_seq[i];
          s_chg[j] := true;
        END IF;
        IF s_lease[j] IS NOT NULL AND a_seq[i] > s_from[j] AND a_seq[i] <= s_to[j] THEN
          s_ac[j] := s_ac[j] + 1;
          s_chg[j] := true;
          IF s_ac[j] >= s_bs[j] THEN           -- auto-release (spec 2.6)
            s_lease[j] := NULL; s_from[j] := NULL; s_to[j] := NULL; s_bs[j] := 0; s_ac[j] := 0;
            s_avail[j] := v_now;
            IF v_reset THEN
              s_att[j] := 0;
            END IF;
          END IF;
        END IF;
      END IF;
    END IF;
    o_rel[o] := j IS NULL OR NOT s_ex[j] OR s_lease[j] IS NULL;
  END LOOP;

  -- DLQ copies (payload copied: the DLQ outlives message deletion)
  IF array_length(d_pid, 1) > 0 THEN
    INSERT INTO queen.dead_letters (queue_id, partition_id, consumer_group, seq, txn_id, trace_id,
                                    producer, is_encrypted, created_at, retry_count, error, payload)
    SELECT d.qid, m.partition_id, d.grp, m.seq, m.txn_id, m.trace_id, m.producer, m.is_encrypted,
           m.created_at, d.rc, d.err, m.payload
      FROM unnest(d_qid, d_pid, d_grp, d_seq, d_rc, d_err) WITH ORDINALITY AS d(qid, pid, grp, seq, rc, err, k)
      JOIN queen.messages m ON m.partition_id = d.pid AND m.seq = d.seq
     ORDER BY d.k;
  END IF;

  IF ns > 0 AND true = ANY (s_chg) THEN
    -- drain: a released row with nothing after its cursor goes to cursors.
    -- Exact only while no push is in flight on the partition (I3). The
    -- transaction route holds the partition locks; a plain ack does not wait
    -- for pushes: it try-locks (shared, so acks of other groups do not
    -- exclude each other) the partitions of its drain candidates in a
    -- statement of its own, so the next statement's snapshot sees every
    -- push that held the lock before. A partition whose lock a push holds
    -- keeps its row: that push puts a message after the cursor (or, rolled
    -- back, leaves a stale row for a claim to clean, as pop does).
    IF p_txn THEN
      v_lk := s_pid;
    ELSE
      SELECT array_agg(c.p) INTO v_lk
        FROM (SELECT DISTINCT u.p
                FROM unnest(s_pid, s_chg, s_ex0, s_lease, s_avail) AS u(p, chg, ex0, lease, avail)
               WHERE u.chg AND u.ex0 AND u.lease IS NULL AND u.avail <= v_now) c
       WHERE pg_try_advisory_xact_lock_shared(c.p);
    END IF;
    -- the states to drain (by index); they are deleted, not updated first
    -- (most acks of sparse partitions drain: one row version less each)
    SELECT array_agg(u.k::int) INTO v_dk
      FROM unnest(s_pid, s_chg, s_ex0, s_lease, s_avail, s_cur)
           WITH ORDINALITY AS u(p, chg, ex0, lease, avail, cur, k)
     WHERE u.chg AND u.ex0 AND u.lease IS NULL AND u.avail <= v_now AND u.p = ANY (v_lk)
       AND NOT EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = u.p AND m.seq > u.cur);

    UPDATE queen.ready r SET
      acked_seq = u.cur, lease_id = u.lease, avail_at = u.avail, leased_from = u.lf,
      leased_to = u.lt, batch_size = u.bs, acked_count = u.ac, attempts = u.att
    FROM unnest(s_pid, s_gid, s_cur, s_lease, s_avail, s_from, s_to, s_bs, s_ac, s_att, s_chg, s_ex0)
         WITH ORDINALITY AS u(p, g, cur, lease, avail, lf, lt, bs, ac, att, chg, ex0, k)
    WHERE u.chg AND u.ex0 AND NOT (u.k::int = ANY (COALESCE(v_dk, '{}')))
      AND r.partition_id = u.p AND r.group_id = u.g;

    IF v_dk IS NOT NULL THEN
      WITH d AS (
        DELETE FROM queen.ready r
         USING (SELECT s_pid[k] AS p, s_gid[k] AS g, s_cur[k] AS cur FROM unnest(v_dk) k) u
         WHERE r.partition_id = u.p AND r.group_id = u.g
        RETURNING r.partition_id, r.group_id, u.cur)
      INSERT INTO queen.cursors AS cu (partition_id, group_id, acked_seq)
      SELECT * FROM d ORDER BY 1, 2
      ON CONFLICT (partition_id, group_id) DO UPDATE
        SET acked_seq = GREATEST(cu.acked_seq, EXCLUDED.acked_seq), updated_at = now();
    END IF;

    IF p_txn THEN
      -- state created by the transaction route: a ready row when messages
      -- follow the cursor (I3), else a cold cursor
      INSERT INTO queen.ready (partition_id, group_id, queue_id, avail_at, acked_seq)
      SELECT u.p, u.g, u.q, v_now, u.cur
        FROM unnest(s_pid, s_gid, s_qid, s_cur, s_ex, s_ex0) AS u(p, g, q, cur, ex, ex0)
       WHERE u.ex AND NOT u.ex0
         AND EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = u.p AND m.seq > u.cur)
       ORDER BY 1, 2
      ON CONFLICT DO NOTHING;
      INSERT INTO queen.cursors AS cu (partition_id, group_id, acked_seq)
      SELECT u.p, u.g, u.cur
        FROM unnest(s_pid, s_gid, s_cur, s_ex, s_ex0) AS u(p, g, cur, ex, ex0)
       WHERE u.ex AND NOT u.ex0
         AND NOT EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = u.p AND m.seq > u.cur)
       ORDER BY 1, 2
      ON CONFLICT (partition_id, group_id) DO UPDATE
        SET acked_seq = GREATEST(cu.acked_seq, EXCLUDED.acked_seq), updated_at = now();
    END IF;
  END IF;

  RETURN QUERY
  SELECT u.k::int, u.ok, u.err, u.qn, u.pn, u.rel, u.dl, u.sq, u.qid, u.code
    FROM unnest(o_ok, o_err, o_qn, o_pn, o_rel, o_dlq, o_seq, o_qid, o_code)
         WITH ORDINALITY AS u(ok, err, qn, pn, rel, dl, sq, qid, code, k)
   ORDER BY u.k;
END
$$;

CREATE FUNCTION queen.ack(p_tenant text, p_groups text[], p_pids bigint[], p_txn_ids text[],
  p_seqs bigint[], p_statuses text[], p_lease_ids uuid[], p_errors text[])
RETURNS TABLE(ord int, success bool, error text, queue_name text, partition_name text,
  lease_released bool, dlq bool)
LANGUAGE plpgsql
-- generic plans: the statements are written to plan well without the parameter
-- values; custom plans would re-plan every call (~0.3 ms per statement that
-- touches the partitioned queen.messages). See docs/storage.md. No seq or
-- bitmap scans: a plan cached while the tables were nearly empty must not
-- walk every partition, ready or cursors row once they are large.
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
BEGIN
  -- No partition locks: the ready row locks (L4) order acks of one
  -- (partition, group); the drain try-locks (see _ack_core), so an ack never
  -- waits for a push.
  RETURN QUERY
  SELECT a.ord, a.success, a.error, a.queue_name, a.partition_name, a.lease_released, a.dlq
    FROM queen._ack_core(p_tenant, p_groups, p_pids, p_txn_ids, p_seqs, p_statuses, p_lease_ids,
                         p_errors, false) a;
END
$$;

-- ---------------------------------------------------------------------------
-- transaction (spec 3.12): all pushes and acks in one transaction
-- ---------------------------------------------------------------------------
-- The locks of a transaction (queen.txn, queen.bundle): groups named by acks
-- that do not exist yet are created (their queues locked exclusively, with
-- the push queues shared, in one ascending L0 pass), then L1 for the union
-- of push and ack partitions, ascending. Returns what _lock_partitions
-- returns for the push items (all NULL without pushes).
CREATE FUNCTION queen._txn_lock(p_tenant text, p_queues text[], p_parts text[], p_groups text[],
  p_pids bigint[], OUT pq text[], OUT pn text[], OUT ppid bigint[], OUT pqid int[])
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_npush int := COALESCE(array_length(p_queues, 1), 0);
  v_newg  record;
  v_excl  int[];
  lp      record;
BEGIN
  -- groups named by acks that do not exist yet are created (exclusive queue lock)
  SELECT array_agg(DISTINCT q.id ORDER BY q.id) INTO v_excl
    FROM unnest(p_groups, p_pids) AS t(grp, pid)
    JOIN queen.partitions p ON p.id = t.pid
    JOIN queen.queues q ON q.id = p.queue_id AND q.tenant = p_tenant
   WHERE NOT EXISTS (SELECT 1 FROM queen.consumer_groups g
                      WHERE g.queue_id = q.id AND NOT g.retired
                        AND g.name = COALESCE(NULLIF(t.grp, ''), '__QUEUE_MODE__'));

  -- L0: queue locks ascending (shared for pushes, exclusive for group creation)
  IF v_npush > 0 OR v_excl IS NOT NULL THEN
    PERFORM queen._lock_queues(p_tenant, COALESCE(p_queues, '{}'::text[]), COALESCE(v_excl, '{}'::int[]));
  END IF;
  IF v_excl IS NOT NULL THEN
    FOR v_newg IN
      SELECT DISTINCT q.id AS qid, COALESCE(NULLIF(t.grp, ''), '__QUEUE_MODE__') AS grp
        FROM unnest(p_groups, p_pids) AS t(grp, pid)
        JOIN queen.partitions p ON p.id = t.pid
        JOIN queen.queues q ON q.id = p.queue_id AND q.tenant = p_tenant
       WHERE q.id = ANY (v_excl)
       ORDER BY 1, 2
    LOOP
      PERFORM queen._group_get(v_newg.qid, v_newg.grp, NULL, NULL, NULL);
    END LOOP;
  END IF;

  -- L1: partition locks for the union of push and ack partitions, ascending
  IF v_npush > 0 THEN
    lp := queen._lock_partitions(p_tenant, p_queues, p_parts, p_pids);
    pq := lp.pq;
    pn := lp.pn;
    ppid := lp.ppid;
    pqid := lp.pqid;
  ELSE
    PERFORM pg_advisory_xact_lock(x)
       FROM (SELECT DISTINCT x FROM unnest(p_pids) x WHERE x IS NOT NULL ORDER BY x) s;
  END IF;
END
$$;

-- requiredLeases (spec 3.12): each must be held and unexpired now, else
-- QN409, DETAIL op=lease:<i> (1-based).
CREATE FUNCTION queen._txn_required(p_required_leases uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  i int;
BEGIN
  FOR i IN 1..COALESCE(array_length(p_required_leases, 1), 0) LOOP
    IF p_required_leases[i] IS NULL OR NOT EXISTS (
         SELECT 1 FROM queen.ready r
          WHERE r.lease_id = p_required_leases[i] AND r.avail_at > now()) THEN
      RAISE EXCEPTION 'Required lease % is invalid or expired', p_required_leases[i]
        USING ERRCODE = 'QN409', DETAIL = format('op=lease:%s', i);
    END IF;
  END LOOP;
END
$$;

CREATE FUNCTION queen.txn(p_tenant text, p_queues text[], p_parts text[], p_txn_ids text[],
  p_payloads bytea[], p_trace_ids uuid[], p_producers text[], p_encrypted bool[],
  p_groups text[], p_pids bigint[], p_ack_txn text[], p_ack_seqs bigint[], p_ack_statuses text[],
  p_ack_lease_ids uuid[], p_ack_errors text[], p_required_leases uuid[],
  p_not_before timestamptz[] DEFAULT NULL)
RETURNS TABLE(kind text, ord int, seq bigint, partition_id bigint, queue_id int, queue_name text,
  success bool, error text, dlq bool)
LANGUAGE plpgsql
-- generic plans: the statements are written to plan well without the parameter
-- values; custom plans would re-plan every call (~0.3 ms per statement that
-- touches the partitioned queen.messages). See docs/storage.md. No seq or
-- bitmap scans: a plan cached while the tables were nearly empty must not
-- walk every partition, ready or cursors row once they are large.
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_npush int := COALESCE(array_length(p_queues, 1), 0);
  v_nack  int := COALESCE(array_length(p_pids, 1), 0);
  lp      record;
  v_bad   int;
  v_code  text;
  k_ord   int[];
  k_seq   bigint[];
  k_qid   int[];
  k_qn    text[];
  k_dlq   bool[];
BEGIN
  -- L0 (and group creation), L1
  lp := queen._txn_lock(p_tenant, p_queues, p_parts, p_groups, p_pids);

  -- required leases: each must be held and unexpired now
  PERFORM queen._txn_required(p_required_leases);

  -- acks (transaction semantics), failing the whole transaction on any error
  IF v_nack > 0 THEN
    SELECT array_agg(a.ord ORDER BY a.ord), array_agg(a.msg_seq ORDER BY a.ord),
           array_agg(a.queue_id ORDER BY a.ord), array_agg(a.queue_name ORDER BY a.ord),
           array_agg(a.dlq ORDER BY a.ord), min(a.ord) FILTER (WHERE a.code IS NOT NULL),
           (array_agg(a.code ORDER BY a.ord) FILTER (WHERE a.code IS NOT NULL))[1]
      INTO k_ord, k_seq, k_qid, k_qn, k_dlq, v_bad, v_code
      FROM queen._ack_core(p_tenant, p_groups, p_pids, p_ack_txn, p_ack_seqs, p_ack_statuses,
                           p_ack_lease_ids, p_ack_errors, true) a;
    IF v_bad IS NOT NULL THEN
      IF v_code = 'QN404' THEN
        RAISE EXCEPTION 'ACK operation failed: Message not found'
          USING ERRCODE = 'QN404', DETAIL = format('op=ack:%s', v_bad);
      ELSIF v_code = 'QN409' THEN
        RAISE EXCEPTION 'ACK operation failed: Invalid or expired lease'
          USING ERRCODE = 'QN409', DETAIL = format('op=ack:%s', v_bad);
      ELSE
        RAISE EXCEPTION 'ACK operation failed: Invalid status %', COALESCE(p_ack_statuses[v_bad], 'null')
          USING ERRCODE = 'QN400', DETAIL = format('op=ack:%s', v_bad);
      END IF;
    END IF;
    RETURN QUERY
    SELECT 'ack'::text, u.o, u.sq, p_pids[u.o], u.qid, u.qn, true, NULL::text, u.dl
      FROM unnest(k_ord, k_seq, k_qid, k_qn, k_dlq) AS u(o, sq, qid, qn, dl);
  END IF;

  -- pushes, strict: a duplicate transactionId fails the transaction (23505,
  -- DETAIL op=push:<ord>, raised by _push_rows)
  IF v_npush > 0 THEN
    RETURN QUERY
    SELECT 'push'::text, r.ord, r.seq, r.partition_id, r.queue_id, p_queues[r.ord], true, NULL::text, false
      FROM queen._push_rows(p_tenant, p_queues, p_parts, p_txn_ids, p_payloads, p_trace_ids,
                            p_producers, p_encrypted, true, lp.pq, lp.pn, lp.ppid, lp.pqid,
                            p_not_before) r
     ORDER BY r.ord;
  END IF;
END
$$;

-- ---------------------------------------------------------------------------
-- lease extension (spec 3.13)
-- ---------------------------------------------------------------------------
CREATE FUNCTION queen.renew(p_lease_id uuid, p_seconds int)
RETURNS TABLE(status text, expires_at timestamptz)
LANGUAGE plpgsql
-- generic plans: the statements are written to plan well without the parameter
-- values; custom plans would re-plan every call (~0.3 ms per statement that
-- touches the partitioned queen.messages). See docs/storage.md. No seq or
-- bitmap scans: a plan cached while the tables were nearly empty must not
-- walk every partition, ready or cursors row once they are large.
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_n   int;
  v_min timestamptz;
BEGIN
  -- L4 order (partition, group), like ack
  PERFORM 1 FROM queen.ready r WHERE r.lease_id = p_lease_id
   ORDER BY r.partition_id, r.group_id FOR UPDATE;
  WITH u AS (
    UPDATE queen.ready r
       SET avail_at = GREATEST(r.avail_at, now() + make_interval(secs => COALESCE(p_seconds, 60)))
     WHERE r.lease_id = p_lease_id AND r.avail_at > now()
    RETURNING r.avail_at)
  SELECT count(*), min(u.avail_at) INTO v_n, v_min FROM u;
  IF v_n > 0 THEN
    RETURN QUERY SELECT 'ok'::text, v_min;
  ELSIF EXISTS (SELECT 1 FROM queen.ready r WHERE r.lease_id = p_lease_id) THEN
    RETURN QUERY SELECT 'Lease already expired'::text, NULL::timestamptz;
  ELSE
    RETURN QUERY SELECT 'Lease not found'::text, NULL::timestamptz;
  END IF;
END
$$;
-- ---------------------------------------------------------------------------
-- deletes (spec 2.1) and the graveyard sweep
-- ---------------------------------------------------------------------------

-- Delete up to p_budget messages of the given partitions; for every partition
-- left with no message, delete its ready/cursors rows (and its partitions row
-- when p_drop_rows). Returns the number of messages deleted.
CREATE FUNCTION queen._sweep_partitions(p_pids bigint[], p_budget int, p_drop_rows bool) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_n    bigint;
  v_done bigint[];
BEGIN
  DELETE FROM queen.messages m
   USING (SELECT x.partition_id, x.seq
            FROM unnest(p_pids) b(id)
            CROSS JOIN LATERAL (SELECT mm.partition_id, mm.seq FROM queen.messages mm
                                 WHERE mm.partition_id = b.id ORDER BY mm.seq LIMIT p_budget) x
           LIMIT p_budget) v
   WHERE m.partition_id = v.partition_id AND m.seq = v.seq;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  SELECT array_agg(b.id) INTO v_done FROM unnest(p_pids) b(id)
   WHERE NOT EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = b.id);
  IF v_done IS NOT NULL THEN
    DELETE FROM queen.ready WHERE partition_id = ANY (v_done);
    DELETE FROM queen.cursors WHERE partition_id = ANY (v_done);
    IF p_drop_rows THEN
      DELETE FROM queen.partitions WHERE id = ANY (v_done);
    END IF;
  END IF;
  RETURN v_n;
END
$$;

-- One step of the sweep of a deleted queue ('q') or partition ('p'). Returns
-- the rows deleted; removes the graveyard entry once nothing is left.
CREATE FUNCTION queen._sweep_graveyard(p_kind "char", p_id bigint, p_budget int) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_pids bigint[];
  v_n    bigint := 0;
  v_d    bigint;
BEGIN
  IF p_kind = 'q' THEN
    SELECT array_agg(id) INTO v_pids FROM (
      SELECT id FROM queen.partitions WHERE queue_id = p_id ORDER BY id LIMIT 500) s;
    IF v_pids IS NOT NULL THEN
      v_n := queen._sweep_partitions(v_pids, p_budget, true);
    END IF;
    DELETE FROM queen.dead_letters WHERE id IN (
      SELECT id FROM queen.dead_letters WHERE queue_id = p_id LIMIT GREATEST(p_budget - v_n, 0));
    GET DIAGNOSTICS v_d = ROW_COUNT;
    v_n := v_n + v_d;
    IF NOT EXISTS (SELECT 1 FROM queen.partitions WHERE queue_id = p_id)
       AND NOT EXISTS (SELECT 1 FROM queen.dead_letters WHERE queue_id = p_id) THEN
      DELETE FROM queen.graveyard WHERE kind = 'q' AND id = p_id;
    END IF;
  ELSE
    v_n := queen._sweep_partitions(ARRAY[p_id], p_budget, false);
    DELETE FROM queen.dead_letters WHERE id IN (
      SELECT id FROM queen.dead_letters WHERE partition_id = p_id LIMIT GREATEST(p_budget - v_n, 0));
    GET DIAGNOSTICS v_d = ROW_COUNT;
    v_n := v_n + v_d;
    IF NOT EXISTS (SELECT 1 FROM queen.messages WHERE partition_id = p_id)
       AND NOT EXISTS (SELECT 1 FROM queen.dead_letters WHERE partition_id = p_id) THEN
      DELETE FROM queen.graveyard WHERE kind = 'p' AND id = p_id;
    END IF;
  END IF;
  RETURN v_n;
END
$$;

-- Delete a queue and everything under it. The catalog rows go at once (the
-- queue is invisible from here on: every lookup joins queen.queues); messages,
-- ready/cursors rows, partitions and DLQ rows are removed inline up to 10k
-- rows, the rest by queen.retention_run in small batches.
CREATE FUNCTION queen.queue_delete(p_tenant text, p_queue text) RETURNS TABLE(existed bool)
LANGUAGE plpgsql AS $$
DECLARE
  v_qid int;
BEGIN
  SELECT id INTO v_qid FROM queen.queues WHERE tenant = p_tenant AND name = p_queue;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false;
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock(1, v_qid);       -- waits for in-flight pushes (L0 exclusive)
  DELETE FROM queen.queues WHERE id = v_qid;
  IF NOT FOUND THEN                              -- deleted concurrently
    RETURN QUERY SELECT false;
    RETURN;
  END IF;
  DELETE FROM queen.subscriptions
   WHERE group_id IN (SELECT id FROM queen.consumer_groups WHERE queue_id = v_qid);
  DELETE FROM queen.consumer_groups WHERE queue_id = v_qid;
  INSERT INTO queen.graveyard (kind, id) VALUES ('q', v_qid);
  PERFORM queen._sweep_graveyard('q', v_qid, 10000);
  RETURN QUERY SELECT true;
END
$$;

CREATE FUNCTION queen.partition_delete(p_tenant text, p_queue text, p_partition text)
RETURNS TABLE(existed bool)
LANGUAGE plpgsql AS $$
DECLARE
  v_qid int;
  v_pid bigint;
BEGIN
  SELECT q.id, p.id INTO v_qid, v_pid
    FROM queen.queues q JOIN queen.partitions p ON p.queue_id = q.id
   WHERE q.tenant = p_tenant AND q.name = p_queue AND p.name = p_partition;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false;
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(1, v_qid);   -- L0
  PERFORM pg_advisory_xact_lock(v_pid);             -- L1: no push/ack in flight on it
  DELETE FROM queen.partitions WHERE id = v_pid;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false;
    RETURN;
  END IF;
  DELETE FROM queen.ready WHERE partition_id = v_pid;
  DELETE FROM queen.cursors WHERE partition_id = v_pid;
  DELETE FROM queen.subscriptions
   WHERE partition_name = p_partition
     AND group_id IN (SELECT id FROM queen.consumer_groups WHERE queue_id = v_qid);
  INSERT INTO queen.graveyard (kind, id) VALUES ('p', v_pid);
  PERFORM queen._sweep_graveyard('p', v_pid, 10000);
  RETURN QUERY SELECT true;
END
$$;

-- ---------------------------------------------------------------------------
-- retention and eviction (spec 5, storage 4.11)
-- ---------------------------------------------------------------------------

-- Row-level deletion for one queue policy, walking the queue's partitions in
-- id order from a position kept in system_state ('retention:<kind>:<queue>'),
-- at most 1000 partitions and p_budget messages per call.
--   kind 'age'       : messages created before p_cutoff (retentionSeconds)
--   kind 'completed' : same, and at or below the cursor of every group that
--                      exists (a queue without any group keeps everything)
--   kind 'evict'     : as 'age', each victim copied to the DLQ first
--                      (maxWaitTimeSeconds of a queue no group consumes yet;
--                      the caller holds its queue lock shared)
-- created_at is nondecreasing along seq in a partition (I1'), so the victims
-- are a prefix: only partitions whose oldest candidate is old are read.
CREATE FUNCTION queen._retention_queue(p_qid int, p_kind text, p_cutoff timestamptz, p_budget int)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_key   text := 'retention:' || p_kind || ':' || p_qid;
  v_pos   bigint;
  v_pids  bigint[];
  v_last  bigint;
  v_n     bigint;
BEGIN
  SELECT (value #>> '{}')::bigint INTO v_pos FROM queen.system_state WHERE key = v_key;
  v_pos := COALESCE(v_pos, 0);
  SELECT array_agg(id ORDER BY id) INTO v_pids FROM (
    SELECT id FROM queen.partitions WHERE queue_id = p_qid AND id > v_pos ORDER BY id LIMIT 1000) s;
  IF v_pids IS NULL THEN
    DELETE FROM queen.system_state WHERE key = v_key;
    RETURN 0;
  END IF;
  v_last := v_pids[array_length(v_pids, 1)];

  WITH lim AS (
    SELECT b.id,
           CASE WHEN p_kind = 'completed' THEN
             (SELECT min(COALESCE(
                       (SELECT r.acked_seq FROM queen.ready r WHERE r.partition_id = b.id AND r.group_id = g.id),
                       (SELECT c.acked_seq FROM queen.cursors c WHERE c.partition_id = b.id AND c.group_id = g.id),
                       g.start_seq))
                FROM queen.consumer_groups g
               WHERE g.queue_id = p_qid AND NOT g.retired)
           ELSE 9223372036854775807 END AS upto
      FROM unnest(v_pids) b(id)),
  heads AS (
    SELECT l.* FROM lim l
     WHERE l.upto IS NOT NULL
       AND (SELECT m.created_at FROM queen.messages m
             WHERE m.partition_id = l.id ORDER BY m.seq LIMIT 1) < p_cutoff),
  victims AS MATERIALIZED (
    SELECT x.partition_id, x.seq
      FROM heads h
      CROSS JOIN LATERAL (SELECT m.partition_id, m.seq, m.created_at FROM queen.messages m
                           WHERE m.partition_id = h.id AND m.seq <= h.upto
                           ORDER BY m.seq LIMIT p_budget) x
     WHERE x.created_at < p_cutoff
     LIMIT p_budget),
  dlq AS (
    INSERT INTO queen.dead_letters (queue_id, partition_id, consumer_group, seq, txn_id, trace_id,
                                    producer, is_encrypted, created_at, retry_count, error, payload)
    SELECT p_qid, m.partition_id, '__QUEUE_MODE__', m.seq, m.txn_id, m.trace_id, m.producer,
           m.is_encrypted, m.created_at, 0, 'Message expired (maxWaitTimeSeconds)', m.payload
      FROM victims v JOIN queen.messages m ON m.partition_id = v.partition_id AND m.seq = v.seq
     WHERE p_kind = 'evict'
     ORDER BY v.partition_id, v.seq)
  DELETE FROM queen.messages m USING victims v
   WHERE m.partition_id = v.partition_id AND m.seq = v.seq;
  GET DIAGNOSTICS v_n = ROW_COUNT;

  IF v_n < p_budget THEN
    -- this slice is done: move on (wrap around after the last partition)
    INSERT INTO queen.system_state (key, value)
    VALUES (v_key, to_jsonb(CASE WHEN array_length(v_pids, 1) < 1000 THEN 0 ELSE v_last END))
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
  END IF;
  RETURN v_n;
END
$$;

-- maxWaitTimeSeconds: messages not consumed within N seconds are dead-lettered
-- for every group that had not consumed them, the cursors skip them (under the
-- partition lock, try-lock only) and they are deleted. Partitions under a live
-- lease are left for a later run. A queue that no group consumes yet (no
-- ready rows to start from) has every message unconsumed: its old messages go
-- to the DLQ under the queue mode group's name, while its queue lock is held
-- shared so that no group can be created meanwhile.
CREATE FUNCTION queen._evict(p_budget int) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  c       record;
  qq      record;
  v_n     bigint := 0;
  v_d     bigint;
  v_min   bigint;
  v_b     bigint;
  v_cut   timestamptz;
BEGIN
  FOR c IN
    SELECT DISTINCT r.partition_id AS pid, q.id AS qid, q.max_wait_time_seconds AS mw
      FROM queen.queues q
      JOIN queen.ready r ON r.queue_id = q.id
     WHERE q.max_wait_time_seconds > 0
       AND (r.lease_id IS NULL OR r.avail_at <= now())
       AND (SELECT m.created_at FROM queen.messages m
             WHERE m.partition_id = r.partition_id AND m.seq > r.acked_seq
             ORDER BY m.seq LIMIT 1) < now() - make_interval(secs => q.max_wait_time_seconds)
     LIMIT 100
  LOOP
    EXIT WHEN v_n >= p_budget;
    CONTINUE WHEN NOT pg_try_advisory_xact_lock(c.pid);
    CONTINUE WHEN EXISTS (SELECT 1 FROM queen.ready r
                           WHERE r.partition_id = c.pid AND r.lease_id IS NOT NULL AND r.avail_at > now());
    v_cut := now() - make_interval(secs => c.mw);
    SELECT min(r.acked_seq) INTO v_min FROM queen.ready r WHERE r.partition_id = c.pid;
    SELECT max(x.seq) INTO v_b FROM (
      SELECT m.seq, m.created_at FROM queen.messages m
       WHERE m.partition_id = c.pid AND m.seq > v_min
       ORDER BY m.seq LIMIT GREATEST(p_budget - v_n, 1)) x
     WHERE x.created_at < v_cut;
    CONTINUE WHEN v_b IS NULL;

    INSERT INTO queen.dead_letters (queue_id, partition_id, consumer_group, seq, txn_id, trace_id,
                                    producer, is_encrypted, created_at, retry_count, error, payload)
    SELECT c.qid, m.partition_id, g.name, m.seq, m.txn_id, m.trace_id, m.producer, m.is_encrypted,
           m.created_at, r.attempts, 'Message expired (maxWaitTimeSeconds)', m.payload
      FROM queen.ready r
      JOIN queen.consumer_groups g ON g.id = r.group_id
      JOIN queen.messages m ON m.partition_id = r.partition_id AND m.seq > r.acked_seq AND m.seq <= v_b
     WHERE r.partition_id = c.pid AND r.acked_seq < v_b
     ORDER BY g.id, m.seq;

    UPDATE queen.ready r SET acked_seq = v_b, lease_id = NULL, leased_from = NULL, leased_to = NULL,
           batch_size = 0, acked_count = 0, attempts = 0, avail_at = LEAST(r.avail_at, now())
     WHERE r.partition_id = c.pid AND r.acked_seq < v_b;

    WITH d AS (
      DELETE FROM queen.ready r
       WHERE r.partition_id = c.pid AND r.lease_id IS NULL
         AND NOT EXISTS (SELECT 1 FROM queen.messages m
                          WHERE m.partition_id = r.partition_id AND m.seq > r.acked_seq AND m.seq > v_b)
      RETURNING r.partition_id, r.group_id, r.acked_seq)
    INSERT INTO queen.cursors AS cu (partition_id, group_id, acked_seq)
    SELECT * FROM d ORDER BY 1, 2
    ON CONFLICT (partition_id, group_id) DO UPDATE
      SET acked_seq = GREATEST(cu.acked_seq, EXCLUDED.acked_seq), updated_at = now();

    DELETE FROM queen.messages m WHERE m.partition_id = c.pid AND m.seq > v_min AND m.seq <= v_b;
    GET DIAGNOSTICS v_d = ROW_COUNT;
    v_n := v_n + v_d;
  END LOOP;

  FOR qq IN
    SELECT q.id, q.max_wait_time_seconds AS mw FROM queen.queues q
     WHERE q.max_wait_time_seconds > 0
       AND NOT EXISTS (SELECT 1 FROM queen.consumer_groups g WHERE g.queue_id = q.id AND NOT g.retired)
     ORDER BY q.id
  LOOP
    EXIT WHEN v_n >= p_budget;
    CONTINUE WHEN NOT pg_try_advisory_xact_lock_shared(1, qq.id);
    CONTINUE WHEN EXISTS (SELECT 1 FROM queen.consumer_groups g WHERE g.queue_id = qq.id AND NOT g.retired);
    v_n := v_n + queen._retention_queue(qq.id, 'evict', now() - make_interval(secs => qq.mw),
                                        (p_budget - v_n)::int);
  END LOOP;
  RETURN v_n;
END
$$;

-- Census of a closed segment: the queues present (loose index scan over
-- partition_id, O(distinct partitions x log n)).
CREATE FUNCTION queen._segment_census(p_relname text) RETURNS int[]
LANGUAGE plpgsql AS $$
DECLARE
  v int[];
BEGIN
  EXECUTE format($q$
    WITH RECURSIVE t(p) AS (
      SELECT min(partition_id) FROM queen.%1$I
      UNION ALL
      SELECT (SELECT min(partition_id) FROM queen.%1$I WHERE partition_id > t.p) FROM t WHERE t.p IS NOT NULL)
    SELECT COALESCE(array_agg(DISTINCT pp.queue_id), '{}') FROM t JOIN queen.partitions pp ON pp.id = t.p
  $q$, p_relname) INTO v;
  RETURN v;
END
$$;

-- Drop closed segments whose messages may all go: empty, or every queue of
-- the census is gone or has retention enabled with retentionSeconds elapsed
-- since the segment closed (no message in it is newer than closed_at).
-- DETACH + DROP take an ACCESS EXCLUSIVE lock on queen.messages until commit,
-- so this runs last in retention_run, drops every eligible segment (at most 16)
-- under that one lock, and gives up at once (lock_timeout 50 ms) when busy.
CREATE FUNCTION queen._drop_segments() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  s        queen.segments;
  v_census int[];
  v_ok     bool;
  v_empty  bool;
  v_drop   text[] := '{}';
  v_lo     bigint[] := '{}';
  v_old    text := current_setting('lock_timeout');
  i        int;
BEGIN
  FOR s IN SELECT * FROM queen.segments
            WHERE closed_at IS NOT NULL AND closed_at < now() - interval '1 minute'
            ORDER BY lo
  LOOP
    v_census := s.queue_ids;
    IF v_census IS NULL THEN
      v_census := queen._segment_census(s.relname);
      UPDATE queen.segments SET queue_ids = v_census WHERE lo = s.lo;
    END IF;
    SELECT bool_and(q.id IS NULL OR (q.retention_enabled AND q.retention_seconds > 0
                    AND s.closed_at < now() - make_interval(secs => q.retention_seconds)))
      INTO v_ok
      FROM unnest(v_census) c(id) LEFT JOIN queen.queues q ON q.id = c.id;
    v_ok := COALESCE(v_ok, true);
    IF NOT v_ok THEN
      EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM queen.%I)', s.relname) INTO v_empty;
      v_ok := v_empty;
    END IF;
    IF v_ok THEN
      v_drop := v_drop || s.relname::text;
      v_lo := v_lo || s.lo;
      EXIT WHEN cardinality(v_drop) >= 16;
    END IF;
  END LOOP;
  IF cardinality(v_drop) = 0 THEN
    RETURN 0;
  END IF;
  BEGIN
    PERFORM set_config('lock_timeout', '50ms', true);
    FOR i IN 1..cardinality(v_drop) LOOP
      EXECUTE format('ALTER TABLE queen.messages DETACH PARTITION queen.%I', v_drop[i]);
      EXECUTE format('DROP TABLE queen.%I', v_drop[i]);
    END LOOP;
    DELETE FROM queen.segments WHERE lo = ANY (v_lo);
    PERFORM set_config('lock_timeout', v_old, true);
    RETURN cardinality(v_drop);
  EXCEPTION WHEN lock_not_available THEN
    RETURN 0;
  END;
END
$$;

CREATE FUNCTION queen.retention_run(p_max_rows int) RETURNS TABLE(job text, affected bigint)
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off   -- ordered, early-stopping probes (see pop)
AS $$
#variable_conflict use_column
DECLARE
  v_budget int := GREATEST(COALESCE(p_max_rows, 1000), 1);
  v_n      bigint;
  q        record;
  gy       record;
BEGIN
  -- one run at a time across brokers: two concurrent runs would walk the
  -- same partitions and wait on each other's row locks (or deadlock); the
  -- loser returns no rows at once and tries again at its next tick
  IF NOT pg_try_advisory_xact_lock(2, 3) THEN
    RETURN;
  END IF;
  -- retentionSeconds (retentionEnabled): any message older than N
  v_n := 0;
  FOR q IN SELECT id, retention_seconds AS s FROM queen.queues
            WHERE retention_enabled AND retention_seconds > 0 ORDER BY id
  LOOP
    EXIT WHEN v_n >= v_budget;
    v_n := v_n + queen._retention_queue(q.id, 'age', now() - make_interval(secs => q.s), v_budget - v_n::int);
  END LOOP;
  RETURN QUERY SELECT 'retention'::text, v_n;

  -- completedRetentionSeconds (retentionEnabled): consumed by every group and older than N
  v_n := 0;
  FOR q IN SELECT id, completed_retention_seconds AS s FROM queen.queues
            WHERE retention_enabled AND completed_retention_seconds > 0 ORDER BY id
  LOOP
    EXIT WHEN v_n >= v_budget;
    v_n := v_n + queen._retention_queue(q.id, 'completed', now() - make_interval(secs => q.s), v_budget - v_n::int);
  END LOOP;
  RETURN QUERY SELECT 'completed_retention'::text, v_n;

  -- maxWaitTimeSeconds: eviction to the DLQ
  RETURN QUERY SELECT 'max_wait'::text, queen._evict(v_budget);

  -- deleted queues and partitions
  v_n := 0;
  FOR gy IN SELECT kind, id FROM queen.graveyard ORDER BY deleted_at, id LIMIT 16 LOOP
    EXIT WHEN v_n >= v_budget;
    v_n := v_n + queen._sweep_graveyard(gy.kind, gy.id, v_budget - v_n::int);
  END LOOP;
  RETURN QUERY SELECT 'deleted'::text, v_n;

  RETURN QUERY SELECT 'ensure_segments'::text, queen.ensure_segments()::bigint;
  RETURN QUERY SELECT 'drop_segments'::text, queen._drop_segments();
END
$$;
