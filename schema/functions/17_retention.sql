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
    CONTINUE WHEN NOT queen.try_lock_partition(c.pid);
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
    CONTINUE WHEN NOT queen.try_lock_queue_shared(qq.id);
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
      PERFORM queen._stats_segment_dropped(v_drop[i]);   -- 66_stats.sql
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
  IF NOT queen.try_lock_retention() THEN
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
  -- the Kafka log's head rows of messages now gone (60_kafka.sql; kprod)
  PERFORM queen.kafka_prune(v_budget);
END
$$;
