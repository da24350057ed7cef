-- ---------------------------------------------------------------------------
-- The maintained statistics (issue 18; table in migrations/0007_stats.sql,
-- docs/storage.md "Statistics")
-- ---------------------------------------------------------------------------

-- Before retention drops a segment (DETACH + DROP fire no DELETE trigger):
-- subtract its rows from their partitions' counts. Called by
-- queen._drop_segments inside its lock-timeout block, so a drop that gives
-- up rolls this back too.
CREATE FUNCTION queen._stats_segment_dropped(p_relname text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format(
    'UPDATE queen.partition_stats s
        SET messages = s.messages - d.n, removed = s.removed + d.n, updated_at = now()
       FROM (SELECT partition_id, count(*) AS n FROM queen.%I GROUP BY partition_id) d
      WHERE s.partition_id = d.partition_id', p_relname);
END
$$;

-- Checks the maintained counts against the messages (tests, operators):
-- one row per partition whose count is wrong. Scans every message.
CREATE FUNCTION queen.stats_verify()
RETURNS TABLE(partition_id bigint, counted bigint, maintained bigint)
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(m.pid, s.partition_id), COALESCE(m.n, 0), COALESCE(s.messages, 0)
    FROM (SELECT mm.partition_id AS pid, count(*) AS n FROM queen.messages mm GROUP BY 1) m
    FULL JOIN queen.partition_stats s ON s.partition_id = m.pid
   WHERE COALESCE(m.n, 0) <> COALESCE(s.messages, 0)
$$;

-- ---------------------------------------------------------------------------
-- Reads for the dashboard that scale with partitions, not messages
-- (docs/http-api.md "Dashboard reads")
-- ---------------------------------------------------------------------------

-- Every queue of the tenant with its settings, partition count, stored
-- messages (the maintained counts), dead letters and groups. O(partitions):
-- one pass over partitions_queue_id and partition_stats, no message scan.
CREATE FUNCTION queen.api_queue_summaries(p_tenant text) RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  SELECT 200, json_build_object('queues', COALESCE(json_agg(x.j ORDER BY x.name), '[]'::json))
    FROM (
      SELECT q.name, json_build_object(
               'name', q.name, 'namespace', q.namespace, 'task', q.task,
               'createdAt', queen._ts_ms(q.created_at),
               'partitions', s.parts, 'messages', s.msgs,
               'deadLetters', (SELECT count(*) FROM queen.dead_letters d WHERE d.queue_id = q.id),
               'groups', (SELECT count(*) FROM queen.consumer_groups g
                           WHERE g.queue_id = q.id AND NOT g.retired AND g.name <> '__QUEUE_MODE__'),
               'config', json_build_object(
                 'leaseTime', q.lease_time, 'retryLimit', q.retry_limit, 'retryDelay', q.retry_delay,
                 'priority', q.priority, 'delayedProcessing', q.delayed_processing,
                 'windowBuffer', q.window_buffer, 'maxSize', q.max_size, 'ttl', q.ttl,
                 'retentionEnabled', q.retention_enabled, 'retentionSeconds', q.retention_seconds,
                 'completedRetentionSeconds', q.completed_retention_seconds,
                 'maxWaitTimeSeconds', q.max_wait_time_seconds,
                 'encryptionEnabled', q.encryption_enabled)) AS j
        FROM queen.queues q
        CROSS JOIN LATERAL (
          SELECT count(*) AS parts, COALESCE(sum(ps.messages), 0)::bigint AS msgs
            FROM queen.partitions p
            LEFT JOIN queen.partition_stats ps ON ps.partition_id = p.id
           WHERE p.queue_id = q.id) s
       WHERE q.tenant = p_tenant) x
$$;

-- One page of a queue's partitions in name order, after `p_after` (keyset:
-- the `next` of the previous page), optionally those whose name starts
-- with `p_search`: an index range on partitions (queue_id, name), so a page
-- costs the same on a queue of a million partitions. Each partition's
-- stats as in the queue detail (its total from the maintained counts, the
-- unconsumed tail counted). `next` is null on the last page.
CREATE FUNCTION queen.api_queue_partitions(p_tenant text, p_queue text, p_search text, p_after text,
  p_limit int)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_qid int;
  v_hi  text := CASE WHEN p_search IS NOT NULL AND p_search <> '' THEN p_search || U&'\+10FFFF' END;
BEGIN
  SELECT id INTO v_qid FROM queen.queues WHERE tenant = p_tenant AND name = p_queue;
  IF NOT FOUND THEN
    RETURN QUERY SELECT * FROM queen._err(404, 'Queue not found');
    RETURN;
  END IF;
  RETURN QUERY
  WITH page AS MATERIALIZED (
    SELECT p.id, p.name::text AS name, p.created_at
      FROM queen.partitions p
     WHERE p.queue_id = v_qid
       AND (p_after IS NULL OR p.name > p_after)
       AND (v_hi IS NULL OR (p.name >= p_search AND p.name < v_hi))
     ORDER BY p.name
     LIMIT p_limit + 1),
  shown AS (SELECT * FROM page ORDER BY name LIMIT p_limit)
  SELECT 200, json_build_object(
    'queue', p_queue,
    'partitions', COALESCE((
      SELECT json_agg(json_build_object(
               'id', queen.uuid_of(2, sh.id), 'name', sh.name, 'createdAt', queen._ts_ms(sh.created_at),
               'stats', queen._stats_json(s.total, s.pending, s.processing, s.completed, s.failed, s.dead),
               'oldestMessage', queen._ts_ms(s.oldest), 'newestMessage', queen._ts_ms(s.newest))
             ORDER BY sh.name)
        FROM shown sh CROSS JOIN LATERAL queen._admin_pstats(sh.id, v_qid) s), '[]'::json),
    'next', CASE WHEN (SELECT count(*) FROM page) > p_limit
                 THEN (SELECT max(sh.name) FROM shown sh) END);
END
$$;

-- The kv buckets of the tenant by name, a page at a time after `p_after`
-- (keyset: the `next` of the previous page): a skip scan of the kv primary
-- key, one probe per bucket, never a scan of the keys. `next` is null on
-- the last page.
CREATE FUNCTION queen.api_kv_buckets(p_tenant text, p_after text, p_limit int)
RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  WITH RECURSIVE b AS (
    SELECT (SELECT min(k.ns) FROM queen.kv k WHERE k.tenant = p_tenant AND k.ns > COALESCE(p_after, ''))
             AS ns, 1 AS n
    UNION ALL
    SELECT (SELECT min(k.ns) FROM queen.kv k WHERE k.tenant = p_tenant AND k.ns > b.ns), b.n + 1
      FROM b WHERE b.ns IS NOT NULL AND b.n <= p_limit),
  page AS (SELECT b.ns, b.n FROM b WHERE b.ns IS NOT NULL)
  SELECT 200, json_build_object(
    'buckets', COALESCE((SELECT json_agg(json_build_object('name', x.ns) ORDER BY x.ns)
                           FROM page x WHERE x.n <= p_limit), '[]'::json),
    'next', CASE WHEN (SELECT count(*) FROM page) > p_limit
                 THEN (SELECT x.ns FROM page x WHERE x.n = p_limit) END)
$$;

-- Seq ceiling for time-range scans: a segment opened after p_to (a minute
-- of slack, as _seq_floor) holds only newer messages. NULL: no bound.
CREATE FUNCTION queen._seq_ceil(p_to timestamptz) RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT min(lo) FROM queen.segments WHERE p_to IS NOT NULL AND opened_at > p_to + interval '1 minute'
$$;

-- The message browser: one page of a queue's messages (optionally one
-- partition, optionally created in [p_from, p_to)), partition by partition
-- in name order and newest first within a partition, after `p_cursor`
-- (keyset: the `next` of the previous page, '<seq>:<partition name>').
-- Every step is an index range: partitions (queue_id, name), then
-- messages (partition_id, seq) backwards from the cursor; no OFFSET, no
-- count. A page visits at most 1000 partitions: when they hold fewer
-- messages than the page asks for, `next` resumes after the last one
-- visited (so a page may be short, even empty, with a `next`). `next` is
-- null when nothing is left. Each message's status as in
-- /api/v1/messages (its partition's cursors, dead letters).
CREATE FUNCTION queen.api_queue_messages(p_tenant text, p_queue text, p_partition text,
  p_from timestamptz, p_to timestamptz, p_cursor text, p_limit int)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_qid   int;
  v_cs    bigint;
  v_cp    text;
  v_floor bigint := CASE WHEN p_from IS NULL THEN 0 ELSE queen._seq_floor(p_from) END;
  v_ceil  bigint := queen._seq_ceil(p_to);
  pt      record;
  v_pids  bigint[] := '{}';
  v_seqs  bigint[] := '{}';
  v_visited int := 0;
  v_last  text;
  v_n     int := 0;
  v_next  text;
BEGIN
  SELECT id INTO v_qid FROM queen.queues WHERE tenant = p_tenant AND name = p_queue;
  IF NOT FOUND THEN
    RETURN QUERY SELECT * FROM queen._err(404, 'Queue not found');
    RETURN;
  END IF;
  IF p_cursor IS NOT NULL THEN
    IF p_cursor !~ '^[0-9]{1,18}:' THEN
      RETURN QUERY SELECT * FROM queen._err(400, 'Invalid cursor: must be the next of a previous page');
      RETURN;
    END IF;
    v_cs := split_part(p_cursor, ':', 1)::bigint;
    v_cp := substr(p_cursor, strpos(p_cursor, ':') + 1);
  END IF;
  FOR pt IN
    SELECT p.id, p.name::text AS name FROM queen.partitions p
     WHERE p.queue_id = v_qid
       AND (p_partition IS NULL OR p.name = p_partition)
       AND (v_cp IS NULL OR p.name >= v_cp)
     ORDER BY p.name LIMIT 1000
  LOOP
    v_visited := v_visited + 1;
    v_last := pt.name;
    SELECT v_pids || COALESCE(array_agg(pt.id), '{}'), v_seqs || COALESCE(array_agg(x.seq ORDER BY x.seq DESC), '{}'),
           v_n + count(*)::int
      INTO v_pids, v_seqs, v_n
      FROM (SELECT m.seq FROM queen.messages m
             WHERE m.partition_id = pt.id
               AND (v_cp IS NULL OR pt.name > v_cp OR m.seq < v_cs)
               AND m.seq >= v_floor AND (v_ceil IS NULL OR m.seq < v_ceil)
               AND (p_from IS NULL OR m.created_at >= p_from) AND (p_to IS NULL OR m.created_at < p_to)
             ORDER BY m.seq DESC LIMIT p_limit + 1 - v_n) x;
    EXIT WHEN v_n > p_limit;
  END LOOP;
  v_n := COALESCE(cardinality(v_seqs), 0);
  IF v_n > p_limit THEN
    v_next := v_seqs[p_limit] || ':' || (SELECT p.name FROM queen.partitions p WHERE p.id = v_pids[p_limit]);
  ELSIF v_visited = 1000 THEN
    v_next := '0:' || v_last;
  END IF;
  RETURN QUERY
  WITH page AS MATERIALIZED (
    SELECT u.pid, u.seq, u.o FROM unnest(v_pids, v_seqs) WITH ORDINALITY AS u(pid, seq, o)
     WHERE u.o <= p_limit),
  pv AS MATERIALIZED (
    SELECT x.pid, v.* FROM (SELECT DISTINCT page.pid FROM page) x
    CROSS JOIN LATERAL queen._admin_pview(x.pid, v_qid) v)
  SELECT 200, json_build_object(
    'queue', p_queue,
    'messages', COALESCE((SELECT json_agg(json_build_object(
        'id', queen.uuid_of(1, m.seq),
        'transactionId', COALESCE(m.txn_id::text, queen.uuid_of(1, m.seq)::text),
        'partitionId', queen.uuid_of(2, m.partition_id),
        'queue', p_queue, 'partition', p.name,
        'status', queen._msg_status(m.seq, EXISTS (SELECT 1 FROM queen.dead_letters d
                                                    WHERE d.partition_id = m.partition_id AND d.seq = m.seq),
                                    pv.cur, pv.lease_to),
        'traceId', m.trace_id, 'createdAt', queen._ts_ms(m.created_at),
        'isEncrypted', m.is_encrypted) ORDER BY pg.o)
      FROM page pg
      JOIN queen.messages m ON m.partition_id = pg.pid AND m.seq = pg.seq
      JOIN queen.partitions p ON p.id = pg.pid
      JOIN pv ON pv.pid = pg.pid), '[]'::json),
    'next', v_next);
END
$$;

-- The streaming queries of the tenant (contract 3.22) with the size and
-- last update of their state.
CREATE FUNCTION queen.api_streams(p_tenant text) RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  SELECT 200, json_build_object('queries', COALESCE(json_agg(json_build_object(
      'id', q.id, 'name', q.name, 'sourceQueue', q.source_queue, 'sinkQueue', q.sink_queue,
      'createdAt', queen._ts_ms(q.created_at), 'updatedAt', queen._ts_ms(q.updated_at),
      'stateKeys', s.n, 'stateUpdatedAt', queen._ts_ms(s.at)) ORDER BY q.name), '[]'::json))
    FROM queen_streams.queries q
    CROSS JOIN LATERAL (SELECT count(*) AS n, max(st.updated_at) AS at
                          FROM queen_streams.state st WHERE st.query_id = q.id) s
   WHERE q.tenant = p_tenant
$$;

-- ---------------------------------------------------------------------------
-- Dead letters a page at a time (docs/http-api.md "Dashboard reads")
-- ---------------------------------------------------------------------------

-- One page of the tenant's dead letters, newest first by (failed_at, id),
-- after `p_cursor` (keyset: the `next` of the previous page,
-- '<failed_at in epoch microseconds>:<id>'), optionally of one queue, one
-- consumer group, one partition name, failed in [p_from, p_to]. Each queue
-- of the scope gives its newest p_limit + 1 entries past the cursor from one
-- index range (migrations/0019_ops.sql: (queue_id, failed_at, id), with a
-- group (queue_id, consumer_group, failed_at, id), with a partition
-- (partition_id, failed_at, id)) and the page is the newest of those: no
-- OFFSET, no count. `next` is null on the last page.
CREATE FUNCTION queen.api_dead_letters(p_tenant text, p_queue text, p_group text, p_partition text,
  p_from timestamptz, p_to timestamptz, p_cursor text, p_limit int)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  -- no cursor, no range: bounds that hold for every row, so that every
  -- condition stays an index condition in a generic plan too
  v_cf   timestamptz := 'infinity';
  v_cid  bigint := 9223372036854775807;
  v_lo   timestamptz := COALESCE(p_from, '-infinity');
  v_hi   timestamptz := COALESCE(p_to, 'infinity');
  v_ids  bigint[];
  v_next text;
BEGIN
  IF p_cursor IS NOT NULL THEN
    IF p_cursor !~ '^[0-9]{1,18}:[0-9]{1,18}$' THEN
      RETURN QUERY SELECT * FROM queen._err(400, 'Invalid cursor: must be the next of a previous page');
      RETURN;
    END IF;
    v_cf := timestamptz 'epoch' + split_part(p_cursor, ':', 1)::bigint * interval '1 microsecond';
    v_cid := split_part(p_cursor, ':', 2)::bigint;
  END IF;
  WITH src AS MATERIALIZED (
    SELECT q.id AS qid, p.id AS pid
      FROM queen.queues q
      LEFT JOIN queen.partitions p ON p_partition IS NOT NULL AND p.queue_id = q.id AND p.name = p_partition
     WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue)
       AND (p_partition IS NULL OR p.id IS NOT NULL)),
  cand AS (
    SELECT x.id, x.failed_at FROM src CROSS JOIN LATERAL (
      (SELECT d.id, d.failed_at FROM queen.dead_letters d
        WHERE src.pid IS NOT NULL AND d.partition_id = src.pid
          AND (p_group IS NULL OR d.consumer_group = p_group)
          AND (d.failed_at, d.id) < (v_cf, v_cid) AND d.failed_at >= v_lo AND d.failed_at <= v_hi
        ORDER BY d.failed_at DESC, d.id DESC LIMIT p_limit + 1)
      UNION ALL
      (SELECT d.id, d.failed_at FROM queen.dead_letters d
        WHERE src.pid IS NULL AND p_group IS NOT NULL AND d.queue_id = src.qid AND d.consumer_group = p_group
          AND (d.failed_at, d.id) < (v_cf, v_cid) AND d.failed_at >= v_lo AND d.failed_at <= v_hi
        ORDER BY d.failed_at DESC, d.id DESC LIMIT p_limit + 1)
      UNION ALL
      (SELECT d.id, d.failed_at FROM queen.dead_letters d
        WHERE src.pid IS NULL AND p_group IS NULL AND d.queue_id = src.qid
          AND (d.failed_at, d.id) < (v_cf, v_cid) AND d.failed_at >= v_lo AND d.failed_at <= v_hi
        ORDER BY d.failed_at DESC, d.id DESC LIMIT p_limit + 1)) x
     ORDER BY x.failed_at DESC, x.id DESC LIMIT p_limit + 1)
  SELECT array_agg(cand.id ORDER BY cand.failed_at DESC, cand.id DESC) INTO v_ids FROM cand;
  IF cardinality(v_ids) > p_limit THEN
    SELECT (extract(epoch FROM d.failed_at) * 1000000)::bigint || ':' || d.id INTO v_next
      FROM queen.dead_letters d WHERE d.id = v_ids[p_limit];
  END IF;
  RETURN QUERY
  SELECT 200, json_build_object(
    'messages', COALESCE((SELECT json_agg(json_build_object(
        'id', queen.uuid_of(1, d.seq), 'dlqId', queen.uuid_of(5, d.id),
        'transactionId', COALESCE(d.txn_id::text, queen.uuid_of(1, d.seq)::text),
        'partitionId', queen.uuid_of(2, d.partition_id), 'queue', q.name, 'partition', p.name,
        'consumerGroup', d.consumer_group, 'errorMessage', d.error, 'retryCount', d.retry_count,
        'data', queen._payload_json(d.payload), 'producerSub', d.producer,
        'createdAt', queen._ts_ms(d.created_at), 'failedAt', queen._ts_ms(d.failed_at))
      ORDER BY u.o)
      FROM unnest(v_ids[1:p_limit]) WITH ORDINALITY AS u(id, o)
      -- one primary-key probe per entry, whatever the estimates
      CROSS JOIN LATERAL (SELECT * FROM queen.dead_letters x WHERE x.id = u.id LIMIT 1) d
      JOIN queen.queues q ON q.id = d.queue_id
      JOIN queen.partitions p ON p.id = d.partition_id), '[]'::json),
    'next', v_next);
END
$$;

-- ---------------------------------------------------------------------------
-- The ingest rollup: throughput without reading messages
-- ---------------------------------------------------------------------------

-- Folds the growth of each partition's pushed count (partition_stats
-- messages + removed) past its mark (ingest_marks) into the per-queue,
-- per-minute counts (ingest_minutes), in the minute of the partition's last
-- push, and moves the marks. Reads only the partitions written to since a
-- minute before the last run (a push that committed later than that is
-- counted at the partition's next push: late, never lost). One runner at a
-- time (others return 0). Prunes minutes older than seven days. Called by
-- the retention actor's segment tick, every 10 s on each broker (never from
-- the push path). Returns the messages rolled up.
CREATE FUNCTION queen._ingest_rollup() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_at  timestamptz;
  v_n   bigint;
BEGIN
  SELECT (value #>> '{}')::timestamptz INTO v_at FROM queen.system_state
   WHERE key = 'ingest_rolled_at' FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  WITH d AS MATERIALIZED (
    SELECT s.partition_id AS pid, s.messages + s.removed AS pushed,
           s.messages + s.removed - COALESCE(m.pushed, 0) AS n, date_trunc('minute', s.updated_at) AS minute
      FROM queen.partition_stats s
      LEFT JOIN queen.ingest_marks m ON m.partition_id = s.partition_id
     WHERE s.updated_at >= v_at - interval '1 minute'
       AND s.messages + s.removed > COALESCE(m.pushed, 0)),
  mk AS (
    INSERT INTO queen.ingest_marks AS m (partition_id, pushed)
    SELECT d.pid, d.pushed FROM d ORDER BY d.pid
    ON CONFLICT (partition_id) DO UPDATE SET pushed = EXCLUDED.pushed),
  mn AS (
    INSERT INTO queen.ingest_minutes AS i (queue_id, minute, ingested)
    SELECT p.queue_id, d.minute, sum(d.n) FROM d JOIN queen.partitions p ON p.id = d.pid
     GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (queue_id, minute) DO UPDATE SET ingested = i.ingested + EXCLUDED.ingested)
  SELECT COALESCE(sum(d.n), 0) INTO v_n FROM d;
  UPDATE queen.system_state SET value = to_jsonb(clock_timestamp()) WHERE key = 'ingest_rolled_at';
  DELETE FROM queen.ingest_minutes WHERE minute < now() - interval '7 days';
  RETURN v_n;
END
$$;

-- Messages pushed per minute into the tenant's queues (optionally one
-- queue, namespace, task) in the minutes [p_from, p_to]: the rolled-up
-- minutes plus each partition's growth past its mark (in the minute of its
-- last push). Reads ingest_minutes, and the partition_stats of the scope
-- written since a minute before the last rollup; never a message.
CREATE FUNCTION queen._ingest_counts(p_tenant text, p_queue text, p_ns text, p_task text,
  p_from timestamptz, p_to timestamptz)
RETURNS TABLE(minute timestamptz, n bigint)
LANGUAGE sql STABLE AS $$
  WITH qs AS MATERIALIZED (
    SELECT q.id FROM queen.queues q
     WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue)
       AND (p_ns IS NULL OR q.namespace = p_ns) AND (p_task IS NULL OR q.task = p_task)),
  at AS (SELECT COALESCE((SELECT (value #>> '{}')::timestamptz FROM queen.system_state
                           WHERE key = 'ingest_rolled_at'), '-infinity') AS t)
  SELECT x.minute, sum(x.n)::bigint FROM (
    SELECT i.minute, i.ingested AS n FROM qs JOIN queen.ingest_minutes i ON i.queue_id = qs.id
     WHERE i.minute >= date_trunc('minute', p_from) AND i.minute <= p_to
    UNION ALL
    SELECT date_trunc('minute', s.updated_at), s.messages + s.removed - COALESCE(m.pushed, 0)
      FROM qs JOIN queen.partitions p ON p.queue_id = qs.id
      JOIN queen.partition_stats s ON s.partition_id = p.id
      LEFT JOIN queen.ingest_marks m ON m.partition_id = p.id
     WHERE s.updated_at >= (SELECT t FROM at) - interval '1 minute'
       AND s.messages + s.removed > COALESCE(m.pushed, 0)
       AND s.updated_at >= date_trunc('minute', p_from) AND s.updated_at <= p_to) x
   GROUP BY x.minute
$$;
