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
    PERFORM CASE WHEN x = ANY (p_exclusive) THEN queen.lock_queue(x)
                 ELSE queen.lock_queue_shared(x) END
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
    -- (queue, name) lookups are lateral probes naming both keys (LIMIT keeps
    -- them from being flattened into joins): planned while partitions was
    -- small, the joins probed (queue_id, name) by name alone, a walk of the
    -- whole index per item once it was not (15 s for 5,000 new partitions
    -- at 100,000). The ORDER BY of the unique key's columns makes its index
    -- the cheapest path however small the table looked: without it, a probe
    -- of partitions_queue_id by the queue alone, filtering the name, cost
    -- the same on a small table and read every partition of the queue per
    -- item once it was not.
    LEFT JOIN LATERAL (SELECT 1 AS hit FROM queen.partitions p
                        WHERE p.queue_id = d.qid AND p.name = d.n
                        ORDER BY p.queue_id, p.name LIMIT 1) x ON true
    WHERE x.hit IS NULL
    ORDER BY d.qid, d.n
    ON CONFLICT DO NOTHING;

    SELECT array_agg(d.q), array_agg(d.n), array_agg(p.id), array_agg(p.queue_id)
      INTO pq, pn, ppid, pqid
    FROM (SELECT DISTINCT t.q, COALESCE(t.n, 'Default') AS n FROM unnest(p_queues, p_parts) t(q, n)) d
    JOIN queen.queues q ON q.tenant = p_tenant AND q.name = d.q
    CROSS JOIN LATERAL (SELECT p.id, p.queue_id FROM queen.partitions p
                         WHERE p.queue_id = q.id AND p.name = d.n
                         ORDER BY p.queue_id, p.name LIMIT 1) p;

    PERFORM queen.lock_partition(x)
      FROM (SELECT DISTINCT x FROM (SELECT unnest(ppid) UNION ALL SELECT unnest(p_extra)) u(x)
             WHERE x IS NOT NULL ORDER BY x) s;

    -- count(name), not count(*): an index-only walk of partitions_queue_id
    -- (it holds id) filtering the ids looked as cheap as the primary key on
    -- a small table, and read every partition once it was not
    SELECT count(p.name) INTO v_n FROM queen.partitions p WHERE p.id = ANY (ppid);
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
  pq text[], pn text[], ppid bigint[], pqid int[], p_not_before timestamptz[],
  p_kparts int[] DEFAULT NULL, p_kts bigint[] DEFAULT NULL)
RETURNS TABLE(ord int, seq bigint, partition_id bigint, queue_id int, duplicate bool)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now  timestamptz := clock_timestamp();   -- read after the locks (I1')
  v_dup  record;
  v_full record;
  r_ord  int[];
  r_seq  bigint[];
  r_pid  bigint[];
  r_qid  int[];
  r_dup  bool[];
  v_window bool;
  v_kafka  bool;
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

  -- the rows are kept for the Kafka offset index (schema/functions/60_kafka.sql)
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
    ON CONFLICT (partition_id, group_id) DO NOTHING),
  -- the maintained count of stored messages (migrations/0007_stats.sql),
  -- in partition order under the partition locks held
  st AS (
    INSERT INTO queen.partition_stats AS s (partition_id, messages, updated_at)
    SELECT nb.pid, count(*), v_now FROM numbered nb WHERE nb.new_seq IS NOT NULL
     GROUP BY nb.pid ORDER BY nb.pid
    ON CONFLICT (partition_id) DO UPDATE
      SET messages = s.messages + EXCLUDED.messages, updated_at = EXCLUDED.updated_at)
  -- no self-joins of the CTEs here: plans stay linear even as generic plans
  -- (whose row estimates for unnest() of parameters are tiny)
  -- one sort, not one per aggregate: array_agg keeps the input order (an
  -- ordered aggregate sorts on its own: five sorts of the batch)
  SELECT array_agg(o.ord), array_agg(o.seq), array_agg(o.pid), array_agg(o.qid), array_agg(o.dup)
    INTO r_ord, r_seq, r_pid, r_qid, r_dup
  FROM (SELECT nb.ord,
               COALESCE(nb.old_seq, nb.new_seq, max(nb.new_seq) OVER (PARTITION BY nb.pid, nb.txn)) AS seq,
               nb.pid, nb.qid, nb.new_seq IS NULL AS dup
          FROM numbered nb
         ORDER BY nb.ord) o;

  -- one look at the pushed queues' rows (index on id; once per queue, not per
  -- message): window buffer, and whether any has its Kafka view on. Read now,
  -- after the partition locks, in this statement's fresh snapshot: a push
  -- that starts after a queue's first Kafka naming commits is in its log
  -- (queen._kafka_view_on). NULL (never named by Kafka) / 0: no Kafka work.
  SELECT COALESCE(bool_or(q.window_buffer > 0), false), COALESCE(bool_or(q.kafka_partitions > 0), false)
    INTO v_window, v_kafka
    FROM queen.queues q WHERE q.id = ANY (pqid);

  -- Kafka view: offsets for the new rows, under the kpart row locks
  IF v_kafka THEN
    PERFORM queen._kafka_append(r_seq, r_pid, r_qid, r_dup, pn, ppid, p_kparts, p_kts, v_now);
  END IF;
  RETURN QUERY SELECT * FROM unnest(r_ord, r_seq, r_pid, r_qid, r_dup);

  -- window buffer: hold back partitions that just received messages (rows not
  -- under a live lease; pop re-checks the newest message for leased ones)
  IF v_window THEN
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
-- element or array: none). p_kparts / p_kts (optional, Kafka Produce): the
-- Kafka partition each item goes to and its Kafka timestamp in ms (NULL:
-- murmur2 of the partition name, created_at). The broker binds microseconds since the Unix
-- epoch and converts them with queen.ts_of_us.
CREATE FUNCTION queen.push(p_tenant text, p_queues text[], p_parts text[], p_txn_ids text[],
  p_payloads bytea[], p_trace_ids uuid[], p_producers text[], p_encrypted bool[], p_strict bool,
  p_not_before timestamptz[] DEFAULT NULL, p_kparts int[] DEFAULT NULL, p_kts bigint[] DEFAULT NULL)
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
    p_not_before, p_kparts, p_kts);
END
$$;
