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
    'UPDATE queen.partition_stats s SET messages = s.messages - d.n, updated_at = now()
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

-- The kv buckets of the tenant (at most 1000, by name): a skip scan of the
-- kv primary key, one probe per bucket, never a scan of the keys.
CREATE FUNCTION queen.api_kv_buckets(p_tenant text) RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  WITH RECURSIVE b AS (
    SELECT (SELECT min(k.ns) FROM queen.kv k WHERE k.tenant = p_tenant) AS ns
    UNION ALL
    SELECT (SELECT min(k.ns) FROM queen.kv k WHERE k.tenant = p_tenant AND k.ns > b.ns)
      FROM b WHERE b.ns IS NOT NULL)
  SELECT 200, json_build_object('buckets', COALESCE(json_agg(json_build_object('name', x.ns) ORDER BY x.ns),
                                                    '[]'::json))
    FROM (SELECT b.ns FROM b WHERE b.ns IS NOT NULL LIMIT 1000) x
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
