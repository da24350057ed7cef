-- 20_admin.sql: the admin and read API (spec 3.14-3.19): resources,
-- messages, dead letters, consumer groups, status and analytics.
-- Not the hot path. Every route is one function
--   queen.api_<name>(p_tenant text, ...) RETURNS TABLE(status int, body json)
-- returning exactly one row: the HTTP status and the exact JSON body of the
-- contract. The broker validates the inputs (names, ids, integers,
-- timestamps) before calling, binds them as text parameters and sends the
-- answer on unchanged. Reads run on the pg_reader pool, writes on pg_writer.
--
-- Ids on the wire: queen.uuid_of(kind, id), kinds 1 message (seq),
-- 2 partition, 3 queue, 4 group, 5 dead letter.
--
-- Writes follow the lock order of docs/storage.md: L0 queue advisory locks
-- (class 1) ascending, L1 partition advisory locks ascending, then ready
-- rows, then cursors rows.
--
-- Derived state (docs/storage.md "Admin functions"):
--   effective cursor of (partition, group) = ready.acked_seq, else
--     cursors.acked_seq, else consumer_groups.start_seq;
--   a partition is in queue mode when its __QUEUE_MODE__ group has consumed
--     there (cursor > 0 or a live lease) or no named group exists; else in
--     bus mode (named groups only);
--   message status: dead_letter (a DLQ entry exists), completed (the
--     cursor of the partition's mode passed it: queue mode cursor, or the
--     lowest named-group cursor in bus mode), processing (queue mode, inside
--     a live lease), pending.

-- ---------------------------------------------------------------------------
-- Formatting helpers
-- ---------------------------------------------------------------------------

CREATE FUNCTION queen._ts_ms(t timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

CREATE FUNCTION queen._ts_us(t timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

CREATE FUNCTION queen._ts_s(t timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
$$;

-- A stored payload as JSON. Payloads are the JSON text the client sent;
-- anything else (never expected) comes back as a JSON string.
CREATE FUNCTION queen._payload_json(p bytea) RETURNS json
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN convert_from(p, 'UTF8')::json;
EXCEPTION WHEN others THEN
  RETURN to_json(encode(p, 'escape'));
END
$$;

CREATE FUNCTION queen._err(p_status int, p_msg text) RETURNS TABLE(status int, body json)
LANGUAGE sql IMMUTABLE AS $$
  SELECT p_status, json_build_object('error', p_msg)
$$;

-- Seq floor for time-range scans: segments that closed before p_from hold
-- only older messages, so runtime pruning skips them.
CREATE FUNCTION queen._seq_floor(p_from timestamptz) RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(min(lo), 0) FROM queen.segments
   WHERE closed_at IS NULL OR closed_at >= p_from - interval '1 minute'
$$;

CREATE FUNCTION queen._stats_json(p_total numeric, p_pending numeric, p_processing numeric,
  p_completed numeric, p_failed numeric, p_dead numeric) RETURNS json
LANGUAGE sql IMMUTABLE AS $$
  SELECT json_build_object('total', COALESCE(p_total, 0)::bigint,
    'pending', COALESCE(p_pending, 0)::bigint, 'processing', COALESCE(p_processing, 0)::bigint,
    'completed', COALESCE(p_completed, 0)::bigint, 'failed', COALESCE(p_failed, 0)::bigint,
    'deadLetter', COALESCE(p_dead, 0)::bigint)
$$;

-- ---------------------------------------------------------------------------
-- Derived per-partition state
-- ---------------------------------------------------------------------------

-- How a partition is consumed: the cursor that decides "completed", the
-- live lease range of queue mode, and every named group's cursor.
CREATE FUNCTION queen._admin_pview(p_pid bigint, p_qid int,
  OUT cur bigint, OUT lease_to bigint, OUT lease_exp timestamptz, OUT has_qm bool,
  OUT named_curs bigint[], OUT qm_cur bigint, OUT qm_lease_to bigint)
LANGUAGE sql STABLE AS $$
  WITH g AS (
    SELECT g.name = '__QUEUE_MODE__' AS qm,
           COALESCE(r.acked_seq, c.acked_seq, g.start_seq) AS cur,
           CASE WHEN r.lease_id IS NOT NULL AND r.avail_at > now() THEN r.leased_to END AS lt,
           CASE WHEN r.lease_id IS NOT NULL AND r.avail_at > now() THEN r.avail_at END AS lexp
      FROM queen.consumer_groups g
      LEFT JOIN queen.ready r ON r.partition_id = p_pid AND r.group_id = g.id
      LEFT JOIN queen.cursors c ON c.partition_id = p_pid AND c.group_id = g.id
     WHERE g.queue_id = p_qid AND NOT g.retired),
  a AS (
    SELECT COALESCE(bool_or(g.qm AND (g.cur > 0 OR g.lt IS NOT NULL)), false) AS has_qm,
           COALESCE(array_agg(g.cur) FILTER (WHERE NOT g.qm), '{}'::bigint[]) AS named,
           COALESCE(max(g.cur) FILTER (WHERE g.qm), 0) AS qcur,
           max(g.lt) FILTER (WHERE g.qm) AS qlt,
           max(g.lexp) FILTER (WHERE g.qm) AS qexp
      FROM g)
  SELECT CASE WHEN cardinality(a.named) > 0 AND NOT a.has_qm
              THEN (SELECT min(x) FROM unnest(a.named) x) ELSE a.qcur END,
         CASE WHEN cardinality(a.named) > 0 AND NOT a.has_qm THEN NULL ELSE a.qlt END,
         CASE WHEN cardinality(a.named) > 0 AND NOT a.has_qm THEN NULL ELSE a.qexp END,
         a.has_qm, a.named, a.qcur, a.qlt
    FROM a
$$;

CREATE FUNCTION queen._msg_status(p_seq bigint, p_dead bool, p_cur bigint, p_lease_to bigint)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_dead THEN 'dead_letter'
              WHEN p_seq <= p_cur THEN 'completed'
              WHEN p_seq <= p_lease_to THEN 'processing'
              ELSE 'pending' END
$$;

CREATE FUNCTION queen._mode_json(p_has_qm bool, p_named int) RETURNS json
LANGUAGE sql IMMUTABLE AS $$
  SELECT json_build_object('hasQueueMode', p_has_qm, 'busGroupsCount', p_named,
    'type', CASE WHEN p_has_qm AND p_named > 0 THEN 'hybrid' WHEN p_has_qm THEN 'queue'
                 WHEN p_named > 0 THEN 'bus' ELSE 'none' END)
$$;

-- Message counts of one partition by status (spec 3.14 "stats"). failed
-- counts DLQ entries (one per failing group); deadLetter counts distinct
-- dead-lettered messages still stored.
CREATE FUNCTION queen._admin_pstats(p_pid bigint, p_qid int,
  OUT total bigint, OUT pending bigint, OUT processing bigint, OUT completed bigint,
  OUT failed bigint, OUT dead bigint, OUT oldest timestamptz, OUT newest timestamptz)
LANGUAGE sql STABLE AS $$
  -- total from the maintained count (66_stats.sql); only the unconsumed
  -- tail (seq > cursor) is counted here
  WITH v AS (SELECT * FROM queen._admin_pview(p_pid, p_qid)),
  t AS (
    SELECT count(*) AS tail,
           count(*) FILTER (WHERE mm.seq <= v.lease_to) AS proc
      FROM v CROSS JOIN queen.messages mm
     WHERE mm.partition_id = p_pid AND mm.seq > v.cur),
  m AS (
    SELECT st.n AS total, st.n - t.tail AS done, t.proc
      FROM t, (SELECT COALESCE((SELECT s.messages FROM queen.partition_stats s
                                 WHERE s.partition_id = p_pid), 0) AS n) st),
  d AS (
    SELECT count(DISTINCT dl.seq) AS dead,
           count(DISTINCT dl.seq) FILTER (WHERE dl.seq <= v.cur) AS dead_done,
           count(DISTINCT dl.seq) FILTER (WHERE dl.seq > v.cur AND dl.seq <= v.lease_to) AS dead_proc
      FROM v CROSS JOIN queen.dead_letters dl
     WHERE dl.partition_id = p_pid
       AND EXISTS (SELECT 1 FROM queen.messages x WHERE x.partition_id = p_pid AND x.seq = dl.seq))
  SELECT m.total, m.total - m.done - m.proc - (d.dead - d.dead_done - d.dead_proc),
         m.proc - d.dead_proc, m.done - d.dead_done,
         (SELECT count(*) FROM queen.dead_letters f WHERE f.partition_id = p_pid), d.dead,
         (SELECT x.created_at FROM queen.messages x WHERE x.partition_id = p_pid ORDER BY x.seq LIMIT 1),
         (SELECT x.created_at FROM queen.messages x WHERE x.partition_id = p_pid ORDER BY x.seq DESC LIMIT 1)
    FROM m, d
$$;

-- Every partition of the tenant's queues (optionally one queue, namespace,
-- task) with its stats.
CREATE FUNCTION queen._admin_parts(p_tenant text, p_queue text, p_ns text, p_task text)
RETURNS TABLE(qid int, qname text, namespace text, task text, q_created timestamptz,
  pid bigint, pname text, p_created timestamptz, total bigint, pending bigint, processing bigint,
  completed bigint, failed bigint, dead bigint, oldest timestamptz, newest timestamptz)
-- A queue no group consumes (no consumer group row) has nothing consumed
-- or leased: its partitions' stats are set-based (the maintained total,
-- dead letters grouped once), with no per-partition cursor work, so a
-- queue of a million unconsumed partitions costs two index probes each
-- (oldest, newest) instead of _admin_pstats.
LANGUAGE sql STABLE AS $$
  WITH q AS MATERIALIZED (
    SELECT q.id, q.name, q.namespace, q.task, q.created_at,
           EXISTS (SELECT 1 FROM queen.consumer_groups g WHERE g.queue_id = q.id AND NOT g.retired) AS grouped
      FROM queen.queues q
     WHERE q.tenant = p_tenant
       AND (p_queue IS NULL OR q.name = p_queue)
       AND (p_ns IS NULL OR q.namespace = p_ns)
       AND (p_task IS NULL OR q.task = p_task)),
  dl AS MATERIALIZED (
    SELECT d.partition_id, count(*) AS failed,
           count(DISTINCT d.seq) FILTER (WHERE EXISTS (SELECT 1 FROM queen.messages x
                                                        WHERE x.partition_id = d.partition_id
                                                          AND x.seq = d.seq)) AS dead
      FROM queen.dead_letters d
     WHERE d.queue_id IN (SELECT q.id FROM q WHERE NOT q.grouped)
     GROUP BY d.partition_id)
  SELECT q.id, q.name::text, q.namespace::text, q.task::text, q.created_at,
         p.id, p.name::text, p.created_at, s.total, s.pending, s.processing, s.completed,
         s.failed, s.dead, s.oldest, s.newest
    FROM q
    JOIN queen.partitions p ON p.queue_id = q.id
    CROSS JOIN LATERAL queen._admin_pstats(p.id, q.id) s
   WHERE q.grouped
  UNION ALL
  SELECT q.id, q.name::text, q.namespace::text, q.task::text, q.created_at,
         p.id, p.name::text, p.created_at, COALESCE(ps.messages, 0),
         COALESCE(ps.messages, 0) - COALESCE(dl.dead, 0), 0, 0,
         COALESCE(dl.failed, 0), COALESCE(dl.dead, 0),
         (SELECT x.created_at FROM queen.messages x WHERE x.partition_id = p.id ORDER BY x.seq LIMIT 1),
         (SELECT x.created_at FROM queen.messages x WHERE x.partition_id = p.id ORDER BY x.seq DESC LIMIT 1)
    FROM q
    JOIN queen.partitions p ON p.queue_id = q.id
    LEFT JOIN queen.partition_stats ps ON ps.partition_id = p.id
    LEFT JOIN dl ON dl.partition_id = p.id
   WHERE NOT q.grouped
$$;

-- One row per (group, partition) where the group has state (a ready or a
-- cursors row), with its lag. `active`: the group consumed somewhere on
-- that queue (a queue mode group that never popped is not listed as a
-- consumer; push still gives it ready rows).
CREATE FUNCTION queen._admin_group_parts(p_tenant text, p_group text, p_queue text)
RETURNS TABLE(gid int, gname text, qid int, qname text, start_seq bigint, pid bigint, pname text,
  cur bigint, has_ready bool, lease_active bool, lease_exp timestamptz, offset_lag bigint,
  oldest timestamptz, last_at timestamptz, consumed bigint, active bool)
LANGUAGE sql STABLE AS $$
  WITH g AS (
    SELECT g.id, g.name::text AS name, q.id AS qid, q.name::text AS qname, g.start_seq
      FROM queen.consumer_groups g
      JOIN queen.queues q ON q.id = g.queue_id
     WHERE q.tenant = p_tenant AND NOT g.retired
       AND (p_group IS NULL OR g.name = p_group)
       AND (p_queue IS NULL OR q.name = p_queue)),
  s AS (
    SELECT g.*, r.partition_id AS pid, r.acked_seq AS cur, true AS has_ready,
           (r.lease_id IS NOT NULL AND r.avail_at > now()) AS la,
           CASE WHEN r.lease_id IS NOT NULL AND r.avail_at > now() THEN r.avail_at END AS lexp
      FROM g JOIN queen.ready r ON r.group_id = g.id
    UNION ALL
    SELECT g.*, c.partition_id, c.acked_seq, false, false, NULL::timestamptz
      FROM g JOIN queen.cursors c ON c.group_id = g.id
     WHERE NOT EXISTS (SELECT 1 FROM queen.ready r
                        WHERE r.partition_id = c.partition_id AND r.group_id = c.group_id))
  -- consumed = the maintained count (66_stats.sql) minus the tail after
  -- the cursor: only the tail is scanned
  SELECT s.id, s.name, s.qid, s.qname, s.start_seq, s.pid, p.name::text, s.cur, s.has_ready, s.la, s.lexp,
         CASE WHEN s.has_ready THEN t.tail ELSE 0 END,
         (SELECT m.created_at FROM queen.messages m WHERE m.partition_id = s.pid AND m.seq > s.cur
           ORDER BY m.seq LIMIT 1),
         (SELECT m.created_at FROM queen.messages m WHERE m.partition_id = s.pid AND m.seq <= s.cur
           ORDER BY m.seq DESC LIMIT 1),
         COALESCE((SELECT ps.messages FROM queen.partition_stats ps WHERE ps.partition_id = s.pid), 0)
           - t.tail,
         bool_or(s.cur > 0 OR s.la OR NOT s.has_ready) OVER (PARTITION BY s.id)
    FROM s JOIN queen.partitions p ON p.id = s.pid
    CROSS JOIN LATERAL (SELECT count(*) AS tail FROM queen.messages m
                         WHERE m.partition_id = s.pid AND m.seq > s.cur) t
$$;

-- Message counts of one queue by status, without work per partition where
-- none is needed (issue 18): the partition count and the stored total are
-- sums over the queue's maintained statistics (partition_stats, 66_stats.sql);
-- only partitions that may have work for a group (a ready row, invariant
-- I3) get their unconsumed tail counted (_admin_pstats), so a consumed
-- queue of a million partitions counts the few with a backlog. A queue no
-- group consumes reads no message at all (pending = total - dead). While a
-- group's backfill is pending (its ready rows are not all made yet) every
-- partition of the queue is counted as before.
CREATE FUNCTION queen._queue_counts(p_qid int,
  OUT partitions bigint, OUT total bigint, OUT pending bigint, OUT processing bigint,
  OUT completed bigint, OUT failed bigint, OUT dead bigint)
LANGUAGE sql STABLE AS $$
  WITH g AS (
    SELECT EXISTS (SELECT 1 FROM queen.consumer_groups g WHERE g.queue_id = p_qid AND NOT g.retired) AS grouped,
           EXISTS (SELECT 1 FROM queen.consumer_groups g WHERE g.queue_id = p_qid AND NOT g.retired
                     AND g.backfill_pos IS NOT NULL) AS backfilling),
  base AS (
    SELECT count(*) AS parts, COALESCE(sum(ps.messages), 0)::bigint AS total
      FROM queen.partitions p LEFT JOIN queen.partition_stats ps ON ps.partition_id = p.id
     WHERE p.queue_id = p_qid),
  dl AS (
    SELECT count(*) AS failed,
           count(DISTINCT (d.partition_id, d.seq))
             FILTER (WHERE EXISTS (SELECT 1 FROM queen.messages x
                                    WHERE x.partition_id = d.partition_id AND x.seq = d.seq)) AS dead
      FROM queen.dead_letters d WHERE d.queue_id = p_qid),
  w AS (
    SELECT DISTINCT r.partition_id AS pid FROM g, queen.ready r
     WHERE g.grouped AND NOT g.backfilling AND r.queue_id = p_qid
    UNION
    SELECT p.id FROM g, queen.partitions p WHERE g.backfilling AND p.queue_id = p_qid),
  work AS (
    SELECT COALESCE(sum(s.pending), 0)::bigint AS pending, COALESCE(sum(s.processing), 0)::bigint AS processing
      FROM w CROSS JOIN LATERAL queen._admin_pstats(w.pid, p_qid) s)
  SELECT base.parts, base.total,
         CASE WHEN g.grouped THEN work.pending ELSE base.total - dl.dead END,
         CASE WHEN g.grouped THEN work.processing ELSE 0 END,
         CASE WHEN g.grouped THEN base.total - work.pending - work.processing - dl.dead ELSE 0 END,
         dl.failed, dl.dead
    FROM g, base, dl, work
$$;

-- The (group, partition) pairs with a backlog, for the overview's lag: a
-- group's ready rows only (a pair without one has no work, invariant I3),
-- of the groups that consumed somewhere (as _admin_group_parts' `active`).
CREATE FUNCTION queen._admin_lag_pairs(p_tenant text)
RETURNS TABLE(t double precision, o bigint)
LANGUAGE sql STABLE AS $$
  WITH g AS (
    SELECT g.id, g.queue_id FROM queen.consumer_groups g JOIN queen.queues q ON q.id = g.queue_id
     WHERE q.tenant = p_tenant AND NOT g.retired
       AND (EXISTS (SELECT 1 FROM queen.ready r WHERE r.queue_id = g.queue_id AND r.group_id = g.id
                     AND (r.acked_seq > 0 OR (r.lease_id IS NOT NULL AND r.avail_at > now())))
         OR EXISTS (SELECT 1 FROM queen.cursors c WHERE c.group_id = g.id
                     AND NOT EXISTS (SELECT 1 FROM queen.ready r
                                      WHERE r.partition_id = c.partition_id AND r.group_id = c.group_id))))
  SELECT extract(epoch FROM now() - x.oldest)::float8, x.tail
    FROM g JOIN queen.ready r ON r.queue_id = g.queue_id AND r.group_id = g.id
    CROSS JOIN LATERAL (
      SELECT count(*) AS tail,
             (SELECT m.created_at FROM queen.messages m WHERE m.partition_id = r.partition_id
                AND m.seq > r.acked_seq ORDER BY m.seq LIMIT 1) AS oldest
        FROM queen.messages m WHERE m.partition_id = r.partition_id AND m.seq > r.acked_seq) x
   WHERE x.tail > 0
$$;

-- ---------------------------------------------------------------------------
-- Resources (spec 3.14)
-- ---------------------------------------------------------------------------

CREATE FUNCTION queen.api_overview(p_tenant text) RETURNS TABLE(status int, body json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_counts record;
  v_msgs   json;
  v_lag    record;
  v_in     numeric;
BEGIN
  SELECT count(*) AS queues,
         (SELECT count(*) FROM queen.partitions p JOIN queen.queues q2 ON q2.id = p.queue_id
           WHERE q2.tenant = p_tenant) AS partitions,
         count(DISTINCT q.namespace) FILTER (WHERE q.namespace <> '') AS namespaces,
         count(DISTINCT q.task) FILTER (WHERE q.task <> '') AS tasks
    INTO v_counts
    FROM queen.queues q WHERE q.tenant = p_tenant;

  -- per queue from the maintained statistics (_queue_counts)
  SELECT queen._stats_json(sum(c.total), sum(c.pending), sum(c.processing), sum(c.completed),
                           sum(c.failed), sum(c.dead))
    INTO v_msgs FROM queen.queues q CROSS JOIN LATERAL queen._queue_counts(q.id) c
   WHERE q.tenant = p_tenant;

  -- lag over the (group, partition) pairs with pending messages
  SELECT COALESCE(avg(t), 0) AS t_avg, COALESCE(percentile_cont(0.5) WITHIN GROUP (ORDER BY t), 0) AS t_med,
         COALESCE(min(t), 0) AS t_min, COALESCE(max(t), 0) AS t_max,
         COALESCE(avg(o), 0) AS o_avg, COALESCE(percentile_cont(0.5) WITHIN GROUP (ORDER BY o), 0) AS o_med,
         COALESCE(min(o), 0) AS o_min, COALESCE(max(o), 0) AS o_max
    INTO v_lag
    FROM queen._admin_lag_pairs(p_tenant) x;

  -- pushed in the current and the previous minute, from the ingest rollup
  -- (66_stats.sql _ingest_counts: no message read), per second of that span
  SELECT COALESCE(sum(c.n), 0) / GREATEST(extract(epoch FROM now() - (date_trunc('minute', now()) - interval '1 minute')), 1)
    INTO v_in
    FROM queen._ingest_counts(p_tenant, NULL, NULL, NULL, date_trunc('minute', now()) - interval '1 minute', now()) c;

  RETURN QUERY SELECT 200, json_build_object(
    'queues', v_counts.queues, 'partitions', v_counts.partitions,
    'namespaces', v_counts.namespaces, 'tasks', v_counts.tasks,
    'messages', v_msgs,
    'lag', json_build_object(
      'time', json_build_object('avg', round(v_lag.t_avg)::bigint, 'median', round(v_lag.t_med::numeric)::bigint,
                                'min', round(v_lag.t_min)::bigint, 'max', round(v_lag.t_max)::bigint),
      'offset', json_build_object('avg', round(v_lag.o_avg)::bigint, 'median', round(v_lag.o_med::numeric)::bigint,
                                  'min', v_lag.o_min::bigint, 'max', v_lag.o_max::bigint)),
    'throughput', json_build_object('ingestedPerSecond', round(v_in, 3), 'processedPerSecond', 0),
    'timestamp', queen._ts_ms(now()),
    'statsAge', 0);
END
$$;

-- Queue summaries, newest first (also the status/queues list).
CREATE FUNCTION queen._admin_queue_items(p_tenant text, p_ns text, p_task text, p_limit int, p_offset int)
RETURNS json
-- counts per queue from the maintained statistics (_queue_counts)
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(json_agg(x.j ORDER BY x.created_at DESC, x.id DESC), '[]'::json)
    FROM (
      SELECT q.id, q.created_at, json_build_object(
               'id', queen.uuid_of(3, q.id), 'name', q.name, 'namespace', q.namespace, 'task', q.task,
               'createdAt', queen._ts_ms(q.created_at),
               'partitions', c.partitions,
               'messages', json_build_object('total', c.total, 'pending', c.pending,
                                             'processing', c.processing)) AS j
        FROM (SELECT * FROM queen.queues q
               WHERE q.tenant = p_tenant AND (p_ns IS NULL OR q.namespace = p_ns)
                 AND (p_task IS NULL OR q.task = p_task)
               ORDER BY q.created_at DESC, q.id DESC
               LIMIT p_limit OFFSET p_offset) q
        CROSS JOIN LATERAL queen._queue_counts(q.id) c) x
$$;

CREATE FUNCTION queen.api_queues(p_tenant text) RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  SELECT 200, json_build_object('queues', queen._admin_queue_items(p_tenant, NULL, NULL, NULL, 0))
$$;

CREATE FUNCTION queen.api_queue(p_tenant text, p_queue text) RETURNS TABLE(status int, body json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  q queen.queues;
BEGIN
  SELECT * INTO q FROM queen.queues WHERE tenant = p_tenant AND name = p_queue;
  IF NOT FOUND THEN
    RETURN QUERY SELECT * FROM queen._err(404, 'Queue not found');
    RETURN;
  END IF;
  RETURN QUERY
  SELECT 200, json_build_object(
    'id', queen.uuid_of(3, q.id), 'name', q.name, 'namespace', q.namespace, 'task', q.task,
    'createdAt', queen._ts_ms(q.created_at),
    'partitions', COALESCE(json_agg(json_build_object(
        'id', queen.uuid_of(2, a.pid), 'name', a.pname, 'createdAt', queen._ts_ms(a.p_created),
        'stats', queen._stats_json(a.total, a.pending, a.processing, a.completed, a.failed, a.dead),
        'oldestMessage', queen._ts_ms(a.oldest), 'newestMessage', queen._ts_ms(a.newest))
      ORDER BY a.pname) FILTER (WHERE a.pid IS NOT NULL), '[]'::json),
    'totals', queen._stats_json(sum(a.total), sum(a.pending), sum(a.processing), sum(a.completed),
                                sum(a.failed), sum(a.dead)))
  FROM queen._admin_parts(p_tenant, p_queue, NULL, NULL) a;
END
$$;

-- Deletes are queen.queue_delete / queen.partition_delete (16_delete.sql):
-- catalog rows at once, the rest swept by retention in small batches.
CREATE FUNCTION queen.api_queue_delete(p_tenant text, p_queue text) RETURNS TABLE(status int, body json)
LANGUAGE sql AS $$
  SELECT 200, json_build_object('deleted', true, 'queue', p_queue, 'existed', COALESCE(d.existed, false))
    FROM queen.queue_delete(p_tenant, p_queue) d
$$;

CREATE FUNCTION queen.api_partition_delete(p_tenant text, p_queue text, p_partition text)
RETURNS TABLE(status int, body json)
LANGUAGE sql AS $$
  SELECT 200, json_build_object('deleted', true, 'queue', p_queue, 'partition', p_partition,
                                'existed', COALESCE(d.existed, false))
    FROM queen.partition_delete(p_tenant, p_queue, p_partition) d
$$;

CREATE FUNCTION queen._admin_group_by(p_tenant text, p_kind text) RETURNS json
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(json_agg(json_build_object(
           p_kind, x.k, 'queues', x.queues, 'partitions', x.partitions,
           'messages', json_build_object('total', x.total, 'pending', x.pending))
         ORDER BY x.k), '[]'::json)
    FROM (
      SELECT CASE WHEN p_kind = 'namespace' THEN q.namespace ELSE q.task END::text AS k,
             count(DISTINCT q.id) AS queues, count(a.pid) AS partitions,
             COALESCE(sum(a.total), 0)::bigint AS total, COALESCE(sum(a.pending), 0)::bigint AS pending
        FROM queen.queues q
        LEFT JOIN queen._admin_parts(p_tenant, NULL, NULL, NULL) a ON a.qid = q.id
       WHERE q.tenant = p_tenant
         AND (CASE WHEN p_kind = 'namespace' THEN q.namespace ELSE q.task END) <> ''
       GROUP BY 1) x
$$;

CREATE FUNCTION queen.api_namespaces(p_tenant text) RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  SELECT 200, json_build_object('namespaces', queen._admin_group_by(p_tenant, 'namespace'))
$$;

CREATE FUNCTION queen.api_tasks(p_tenant text) RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  SELECT 200, json_build_object('tasks', queen._admin_group_by(p_tenant, 'task'))
$$;

-- ---------------------------------------------------------------------------
-- Messages (spec 3.15)
-- ---------------------------------------------------------------------------

-- Newest first. `to` is inclusive to the end of its minute.
CREATE FUNCTION queen.api_messages(p_tenant text, p_queue text, p_partition text, p_ns text,
  p_task text, p_status text, p_from timestamptz, p_to timestamptz, p_limit int, p_offset int)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_from  timestamptz := COALESCE(p_from, now() - interval '1 hour');
  v_to    timestamptz := date_trunc('minute', COALESCE(p_to, now())) + interval '1 minute';
  v_floor bigint := queen._seq_floor(v_from);
BEGIN
  RETURN QUERY
  WITH parts AS MATERIALIZED (
    SELECT p.id AS pid, p.name::text AS pname, q.id AS qid, q.name::text AS qname,
           q.namespace::text AS ns, q.task::text AS task, q.priority
      FROM queen.queues q JOIN queen.partitions p ON p.queue_id = q.id
     WHERE q.tenant = p_tenant
       AND (p_queue IS NULL OR q.name = p_queue)
       AND (p_partition IS NULL OR p.name = p_partition)
       AND (p_ns IS NULL OR q.namespace = p_ns)
       AND (p_task IS NULL OR q.task = p_task)),
  msgs AS MATERIALIZED (
    SELECT m.seq, m.partition_id AS pid, m.created_at, m.txn_id, m.trace_id, m.producer
      FROM parts JOIN queen.messages m ON m.partition_id = parts.pid
     WHERE m.seq >= v_floor AND m.created_at >= v_from AND m.created_at < v_to),
  pv AS MATERIALIZED (              -- one row per partition with messages, with its names
    SELECT parts.*, v.* FROM (SELECT DISTINCT pid FROM msgs) x
    JOIN parts ON parts.pid = x.pid
    CROSS JOIN LATERAL queen._admin_pview(x.pid, parts.qid) v),
  st AS (                           -- a single hash join: no per-row rescans of a CTE
    SELECT m.*, pv.pname, pv.qid, pv.qname, pv.ns, pv.task, pv.priority, pv.cur,
           pv.lease_exp, pv.named_curs, pv.has_qm,
           queen._msg_status(m.seq, dl.dead, pv.cur, pv.lease_to) AS st,
           queen._msg_status(m.seq, dl.dead, pv.qm_cur, pv.qm_lease_to) AS qst
      FROM msgs m
      JOIN pv ON pv.pid = m.pid
      CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM queen.dead_letters d
                                          WHERE d.partition_id = m.pid AND d.seq = m.seq) AS dead) dl),
  page AS (
    SELECT * FROM st WHERE p_status IS NULL OR st.st = p_status
     ORDER BY st.created_at DESC, st.seq DESC
     LIMIT p_limit OFFSET p_offset)
  SELECT 200, json_build_object(
    'messages', COALESCE((SELECT json_agg(json_build_object(
        'id', queen.uuid_of(1, g.seq),
        'transactionId', COALESCE(g.txn_id::text, queen.uuid_of(1, g.seq)::text),
        'partitionId', queen.uuid_of(2, g.pid),
        'queuePath', g.qname || '/' || g.pname, 'queue', g.qname, 'partition', g.pname,
        'namespace', g.ns, 'task', g.task, 'status', g.st, 'queueStatus', g.qst,
        'busStatus', json_build_object(
          'consumedBy', (SELECT count(*) FROM unnest(g.named_curs) c WHERE c >= g.seq),
          'totalGroups', cardinality(g.named_curs)),
        'traceId', g.trace_id, 'producerSub', g.producer, 'queuePriority', g.priority,
        'createdAt', queen._ts_ms(g.created_at),
        'leaseExpiresAt', CASE WHEN g.st = 'processing' THEN queen._ts_ms(g.lease_exp) END)
      ORDER BY g.created_at DESC, g.seq DESC) FROM page g), '[]'::json),
    'mode', (SELECT queen._mode_json(COALESCE(bool_or(pv.has_qm), false),
                                     COALESCE(max(cardinality(pv.named_curs)), 0)) FROM pv));
END
$$;

-- The message (partition id, transactionId): a stored client transactionId
-- first, else the message-id form (p_seq, decoded by the broker).
CREATE FUNCTION queen._admin_find_msg(p_tenant text, p_pid bigint, p_txn text, p_seq bigint,
  OUT seq bigint, OUT qid int)
LANGUAGE sql STABLE AS $$
  SELECT m.seq, q.id
    FROM queen.partitions p
    JOIN queen.queues q ON q.id = p.queue_id AND q.tenant = p_tenant
    CROSS JOIN LATERAL (
      SELECT COALESCE(
        (SELECT x.seq FROM queen.messages x WHERE x.partition_id = p.id AND x.txn_id = p_txn
          ORDER BY x.seq LIMIT 1),
        (SELECT x.seq FROM queen.messages x WHERE p_seq IS NOT NULL AND x.partition_id = p.id
            AND x.seq = p_seq)) AS seq) m
   WHERE p.id = p_pid AND m.seq IS NOT NULL
$$;

CREATE FUNCTION queen.api_message(p_tenant text, p_pid bigint, p_txn text, p_seq bigint)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  f record;
BEGIN
  SELECT * INTO f FROM queen._admin_find_msg(p_tenant, p_pid, p_txn, p_seq);
  IF f.seq IS NULL THEN
    RETURN QUERY SELECT * FROM queen._err(404, 'Message not found');
    RETURN;
  END IF;
  RETURN QUERY
  WITH v AS (SELECT * FROM queen._admin_pview(p_pid, f.qid)),
  d AS (SELECT dl.error, dl.retry_count FROM queen.dead_letters dl
         WHERE dl.partition_id = p_pid AND dl.seq = f.seq ORDER BY dl.failed_at DESC, dl.id DESC LIMIT 1),
  grp AS (
    SELECT g.name::text AS name, COALESCE(r.acked_seq, c.acked_seq, g.start_seq) >= f.seq AS consumed,
           CASE WHEN r.lease_id IS NOT NULL AND r.avail_at > now()
                     AND f.seq > r.acked_seq AND f.seq <= r.leased_to THEN r.avail_at END AS lexp,
           (g.name = '__QUEUE_MODE__') AS qm, r.partition_id IS NOT NULL OR c.partition_id IS NOT NULL AS has_state
      FROM queen.consumer_groups g
      LEFT JOIN queen.ready r ON r.partition_id = p_pid AND r.group_id = g.id
      LEFT JOIN queen.cursors c ON c.partition_id = p_pid AND c.group_id = g.id
     WHERE g.queue_id = f.qid AND NOT g.retired)
  SELECT 200, json_build_object(
    'id', queen.uuid_of(1, m.seq),
    'transactionId', COALESCE(m.txn_id::text, queen.uuid_of(1, m.seq)::text),
    'partitionId', queen.uuid_of(2, p.id),
    'queuePath', q.name || '/' || p.name, 'queue', q.name, 'partition', p.name,
    'namespace', q.namespace, 'task', q.task,
    'status', queen._msg_status(m.seq, d.error IS NOT NULL OR d.retry_count IS NOT NULL, v.cur, v.lease_to),
    'payload', queen._payload_json(m.payload), 'isEncrypted', m.is_encrypted,
    'traceId', m.trace_id, 'producerSub', m.producer, 'createdAt', queen._ts_ms(m.created_at),
    'errorMessage', d.error, 'retryCount', d.retry_count,
    'leaseExpiresAt', (SELECT queen._ts_ms(min(grp.lexp)) FROM grp),
    'queueConfig', json_build_object('leaseTime', q.lease_time, 'retryLimit', q.retry_limit,
                                     'retryDelay', q.retry_delay, 'ttl', q.ttl, 'priority', q.priority),
    'mode', (SELECT json_build_object(
               'hasQueueMode', v.has_qm, 'busGroupsCount', cardinality(v.named_curs),
               'consumedByGroups', (SELECT count(*) FROM grp WHERE NOT grp.qm AND grp.consumed),
               'type', queen._mode_json(v.has_qm, cardinality(v.named_curs)) ->> 'type')),
    'consumerGroups', COALESCE((SELECT json_agg(json_build_object(
                                  'name', grp.name, 'consumed', grp.consumed,
                                  'leaseExpiresAt', queen._ts_ms(grp.lexp)) ORDER BY grp.name)
                                FROM grp WHERE grp.qm = false OR v.has_qm OR cardinality(v.named_curs) = 0),
                               '[]'::json))
  FROM queen.messages m
  JOIN queen.partitions p ON p.id = m.partition_id
  JOIN queen.queues q ON q.id = p.queue_id
  CROSS JOIN v
  LEFT JOIN d ON true
  WHERE m.partition_id = p_pid AND m.seq = f.seq;
END
$$;

-- Deletes one message under its partition lock (L1). A live lease that
-- delivered it no longer waits for its ack.
CREATE FUNCTION queen.api_message_delete(p_tenant text, p_pid bigint, p_txn text, p_seq bigint)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_seq bigint;                  -- NULL: not found (or another tenant's partition)
  v_txn text := COALESCE(p_txn, queen.uuid_of(1, p_seq)::text);
BEGIN
  IF EXISTS (SELECT 1 FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
              WHERE p.id = p_pid AND q.tenant = p_tenant) THEN
    PERFORM queen.lock_partition(p_pid);
    SELECT f.seq INTO v_seq FROM queen._admin_find_msg(p_tenant, p_pid, p_txn, p_seq) f;
  END IF;
  IF v_seq IS NULL THEN
    RETURN QUERY SELECT 404, json_build_object('success', false, 'partitionId', queen.uuid_of(2, p_pid),
      'transactionId', v_txn, 'message', 'Message not found', 'error', 'Message not found');
    RETURN;
  END IF;
  DELETE FROM queen.messages m WHERE m.partition_id = p_pid AND m.seq = v_seq;
  PERFORM 1 FROM queen.ready r WHERE r.partition_id = p_pid ORDER BY r.group_id FOR UPDATE;
  UPDATE queen.ready r SET
    batch_size  = CASE WHEN x.rel THEN 0 ELSE r.batch_size - 1 END,
    acked_count = CASE WHEN x.rel THEN 0 ELSE r.acked_count END,
    lease_id    = CASE WHEN x.rel THEN NULL ELSE r.lease_id END,
    leased_from = CASE WHEN x.rel THEN NULL ELSE r.leased_from END,
    leased_to   = CASE WHEN x.rel THEN NULL ELSE r.leased_to END,
    avail_at    = CASE WHEN x.rel THEN now() ELSE r.avail_at END
  FROM (SELECT r2.group_id, r2.acked_count >= r2.batch_size - 1 AS rel FROM queen.ready r2
         WHERE r2.partition_id = p_pid AND r2.lease_id IS NOT NULL AND r2.avail_at > now()
           AND v_seq > r2.acked_seq AND v_seq > r2.leased_from AND v_seq <= r2.leased_to) x
   WHERE r.partition_id = p_pid AND r.group_id = x.group_id;
  RETURN QUERY SELECT 200, json_build_object('success', true, 'partitionId', queen.uuid_of(2, p_pid),
    'transactionId', v_txn, 'message', 'Message deleted successfully');
END
$$;

-- ---------------------------------------------------------------------------
-- Dead letters (spec 3.16 and the requeue / delete extension)
-- ---------------------------------------------------------------------------

-- DLQ rows matching the filters. p_seqs / p_ids (message seqs / DLQ row
-- ids): both NULL = no id filter; else a row matches either list.
CREATE FUNCTION queen._admin_dlq_rows(p_tenant text, p_queue text, p_group text, p_partition text,
  p_from timestamptz, p_to timestamptz, p_seqs bigint[], p_ids bigint[])
RETURNS SETOF queen.dead_letters
LANGUAGE sql STABLE AS $$
  SELECT d.*
    FROM queen.dead_letters d
    JOIN queen.queues q ON q.id = d.queue_id
    JOIN queen.partitions p ON p.id = d.partition_id
   WHERE q.tenant = p_tenant
     AND (p_queue IS NULL OR q.name = p_queue)
     AND (p_group IS NULL OR d.consumer_group = p_group)
     AND (p_partition IS NULL OR p.name = p_partition)
     AND (p_from IS NULL OR d.failed_at >= p_from)
     AND (p_to IS NULL OR d.failed_at <= p_to)
     AND ((p_seqs IS NULL AND p_ids IS NULL) OR d.seq = ANY (p_seqs) OR d.id = ANY (p_ids))
$$;

CREATE FUNCTION queen.api_dlq(p_tenant text, p_queue text, p_group text, p_partition text,
  p_from timestamptz, p_to timestamptz, p_limit int, p_offset int)
RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  WITH r AS (SELECT * FROM queen._admin_dlq_rows(p_tenant, p_queue, p_group, p_partition,
                                                 p_from, p_to, NULL, NULL)),
  page AS (SELECT * FROM r ORDER BY r.failed_at DESC, r.id DESC LIMIT p_limit OFFSET p_offset)
  SELECT 200, json_build_object(
    'messages', COALESCE((SELECT json_agg(json_build_object(
        'id', queen.uuid_of(1, d.seq), 'dlqId', queen.uuid_of(5, d.id),
        'transactionId', COALESCE(d.txn_id::text, queen.uuid_of(1, d.seq)::text),
        'partitionId', queen.uuid_of(2, d.partition_id), 'queue', q.name, 'partition', p.name,
        'consumerGroup', d.consumer_group, 'errorMessage', d.error, 'retryCount', d.retry_count,
        'data', queen._payload_json(d.payload), 'producerSub', d.producer,
        'createdAt', queen._ts_ms(d.created_at), 'failedAt', queen._ts_ms(d.failed_at))
      ORDER BY d.failed_at DESC, d.id DESC)
      FROM page d JOIN queen.queues q ON q.id = d.queue_id JOIN queen.partitions p ON p.id = d.partition_id),
      '[]'::json),
    'pagination', json_build_object('limit', p_limit, 'offset', p_offset),
    'total', (SELECT count(*) FROM r))
$$;

-- Replays dead letters of one queue: each selected entry is pushed again
-- into its partition as a new message (same payload, trace id, producer
-- and encryption flag; transactionId "<original>:requeue:<dlq row id>", so
-- dedup never swallows it) and the entries are deleted, all in one
-- transaction. Lock order: L0 shared queue lock, DLQ rows (ascending id),
-- then queen.push (L0 again, L1).
CREATE FUNCTION queen.api_dlq_requeue(p_tenant text, p_queue text, p_group text, p_partition text,
  p_seqs bigint[], p_ids bigint[])
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_qid  int;
  v_ids  bigint[];
  v_pn   text[];
  v_txn  text[];
  v_pay  bytea[];
  v_tr   uuid[];
  v_pr   text[];
  v_enc  bool[];
  v_res  json;
BEGIN
  SELECT id INTO v_qid FROM queen.queues WHERE tenant = p_tenant AND name = p_queue;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 200, json_build_object('requeued', 0, 'messages', '[]'::json);
    RETURN;
  END IF;
  PERFORM queen.lock_queue_shared(v_qid);
  -- lock the entries (a concurrent replay of the same entries waits, then
  -- finds them gone)
  SELECT array_agg(d.id ORDER BY d.id) INTO v_ids FROM (
    SELECT d.id FROM queen.dead_letters d
     WHERE d.id IN (SELECT r.id FROM queen._admin_dlq_rows(p_tenant, p_queue, p_group, p_partition,
                                                           NULL, NULL, p_seqs, p_ids) r)
     ORDER BY d.id FOR UPDATE OF d) d;
  SELECT array_agg(x.id ORDER BY x.k), array_agg(x.pname ORDER BY x.k), array_agg(x.txn ORDER BY x.k),
         array_agg(x.payload ORDER BY x.k), array_agg(x.trace_id ORDER BY x.k),
         array_agg(x.producer ORDER BY x.k), array_agg(x.is_encrypted ORDER BY x.k)
    INTO v_ids, v_pn, v_txn, v_pay, v_tr, v_pr, v_enc
    FROM (
      SELECT d.id, p.name::text AS pname,
             left(COALESCE(d.txn_id::text, queen.uuid_of(1, d.seq)::text), 200) || ':requeue:' || d.id AS txn,
             d.payload, d.trace_id, d.producer, d.is_encrypted,
             row_number() OVER (ORDER BY d.partition_id, d.seq, d.id) AS k
        FROM queen.dead_letters d
        JOIN queen.partitions p ON p.id = d.partition_id
       WHERE d.id = ANY (v_ids)) x;
  IF v_ids IS NULL THEN
    RETURN QUERY SELECT 200, json_build_object('requeued', 0, 'messages', '[]'::json);
    RETURN;
  END IF;
  SELECT json_agg(json_build_object(
           'dlqId', queen.uuid_of(5, v_ids[r.ord]), 'id', queen.uuid_of(1, r.seq),
           'transactionId', v_txn[r.ord], 'partitionId', queen.uuid_of(2, r.partition_id),
           'partition', v_pn[r.ord], 'duplicate', r.duplicate) ORDER BY r.ord)
    INTO v_res
    FROM queen.push(p_tenant, array_fill(p_queue, ARRAY[cardinality(v_ids)]), v_pn, v_txn, v_pay,
                    v_tr, v_pr, v_enc, false) r;
  DELETE FROM queen.dead_letters WHERE id = ANY (v_ids);
  RETURN QUERY SELECT 200, json_build_object('requeued', cardinality(v_ids), 'messages', v_res);
END
$$;

CREATE FUNCTION queen.api_dlq_delete(p_tenant text, p_queue text, p_group text, p_partition text,
  p_seqs bigint[], p_ids bigint[])
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_n bigint;
BEGIN
  WITH d AS (
    DELETE FROM queen.dead_letters
     WHERE id IN (SELECT r.id FROM queen._admin_dlq_rows(p_tenant, p_queue, p_group, p_partition,
                                                         NULL, NULL, p_seqs, p_ids) r)
    RETURNING 1)
  SELECT count(*) INTO v_n FROM d;
  RETURN QUERY SELECT 200, json_build_object('deleted', v_n);
END
$$;

-- ---------------------------------------------------------------------------
-- Consumer groups (spec 3.19)
-- ---------------------------------------------------------------------------

CREATE FUNCTION queen.api_groups(p_tenant text) RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  WITH gp AS (SELECT * FROM queen._admin_group_parts(p_tenant, NULL, NULL)),
  agg AS (
    SELECT gp.gid, count(*) AS members, count(*) FILTER (WHERE gp.offset_lag > 0) AS lagging,
           COALESCE(sum(gp.offset_lag), 0) AS offset_lag,
           COALESCE(max(extract(epoch FROM now() - gp.oldest)) FILTER (WHERE gp.offset_lag > 0), 0) AS max_lag,
           bool_or(gp.consumed > 0) AS consumed, bool_or(gp.active) AS active
      FROM gp GROUP BY gp.gid)
  SELECT 200, COALESCE(json_agg(json_build_object(
      'name', g.name, 'topics', json_build_array(q.name), 'queueName', q.name,
      'members', COALESCE(a.members, 0), 'partitionsWithLag', COALESCE(a.lagging, 0),
      'totalLag', NULL, 'offsetLag', COALESCE(a.offset_lag, 0)::bigint,
      'maxTimeLag', floor(COALESCE(a.max_lag, 0))::bigint,
      'state', CASE WHEN a.max_lag > 300 THEN 'Lagging' WHEN a.consumed THEN 'Stable' ELSE 'Dead' END,
      'subscriptionMode', s.mode, 'subscriptionTimestamp', queen._ts_ms(s.from_ts),
      'subscriptionCreatedAt', queen._ts_ms(s.created_at))
    ORDER BY q.name, g.name), '[]'::json)
  FROM queen.consumer_groups g
  JOIN queen.queues q ON q.id = g.queue_id
  LEFT JOIN agg a ON a.gid = g.id
  LEFT JOIN LATERAL (SELECT * FROM queen.subscriptions s WHERE s.group_id = g.id
                      ORDER BY s.partition_name = '' DESC, s.partition_name LIMIT 1) s ON true
  WHERE q.tenant = p_tenant AND NOT g.retired
    AND (g.name <> '__QUEUE_MODE__' OR COALESCE(a.active, false))
$$;

CREATE FUNCTION queen.api_groups_lagging(p_tenant text, p_min_lag int) RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  SELECT 200, COALESCE(json_agg(json_build_object(
      'consumer_group', x.gname, 'queue_name', x.qname, 'partition_name', x.pname,
      'partition_id', queen.uuid_of(2, x.pid), 'worker_id', NULL, 'offset_lag', x.offset_lag,
      'time_lag_seconds', floor(x.lag)::bigint, 'lag_hours', round((x.lag / 3600)::numeric, 2),
      'oldest_unconsumed_at', queen._ts_ms(x.oldest), 'last_consumed_at', queen._ts_ms(x.last_at))
    ORDER BY x.lag DESC, x.qname, x.gname, x.pname), '[]'::json)
  FROM (SELECT gp.*, extract(epoch FROM now() - gp.oldest) AS lag
          FROM queen._admin_group_parts(p_tenant, NULL, NULL) gp
         WHERE gp.active AND gp.oldest IS NOT NULL
           AND gp.oldest < now() - make_interval(secs => COALESCE(p_min_lag, 3600))) x
$$;

CREATE FUNCTION queen.api_group(p_tenant text, p_group text) RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  WITH gp AS (SELECT * FROM queen._admin_group_parts(p_tenant, p_group, NULL))
  SELECT 200, COALESCE(json_object_agg(x.qname, json_build_object('partitions', x.parts) ORDER BY x.qname),
                       '{}'::json)
  FROM (
    SELECT q.name::text AS qname, COALESCE((SELECT json_agg(json_build_object(
               'partition', gp.pname, 'workerId', NULL, 'lastConsumedAt', queen._ts_ms(gp.last_at),
               'totalConsumed', gp.consumed, 'offsetLag', gp.offset_lag,
               'timeLagSeconds', floor(COALESCE(extract(epoch FROM now() - gp.oldest), 0))::bigint,
               'leaseActive', gp.lease_active, 'leaseExpiresAt', queen._ts_ms(gp.lease_exp))
             ORDER BY gp.pname) FROM gp WHERE gp.gid = g.id), '[]'::json) AS parts
      FROM queen.consumer_groups g JOIN queen.queues q ON q.id = g.queue_id
     WHERE q.tenant = p_tenant AND g.name = p_group AND NOT g.retired) x
$$;

-- Replaces group p_gid by a new group row with the same name and
-- subscription whose state is rebuilt from scratch: every partition of the
-- queue with a message after its starting cursor gets a ready row, and
-- start_seq is the current end of the sequence (caller holds the queue lock
-- L0 exclusively, so no push of this queue is in flight and later ones see
-- the new group). Starting cursor per partition:
--   'seq'     p_seq (0 = from the beginning)
--   'ts_incl' newest message created at or before p_ts (seek by time)
--   'ts_excl' newest message created before p_ts (timestamp subscription)
-- The old group's rows are deleted (ready rows locked in ascending order
-- first); a lease granted under it is gone. Returns the new group id.
CREATE FUNCTION queen._admin_replace_group(p_gid int, p_mode text, p_seq bigint, p_ts timestamptz)
RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  g     queen.consumer_groups;
  v_end bigint;
  v_new int;
BEGIN
  SELECT * INTO g FROM queen.consumer_groups WHERE id = p_gid;
  SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO v_end FROM queen.msg_seq;
  PERFORM 1 FROM queen.ready r WHERE r.group_id = p_gid ORDER BY r.partition_id FOR UPDATE;
  DELETE FROM queen.ready WHERE group_id = p_gid;
  DELETE FROM queen.cursors WHERE group_id = p_gid;
  DELETE FROM queen.consumer_groups WHERE id = p_gid;
  INSERT INTO queen.consumer_groups (queue_id, name, sub_mode, sub_from, start_seq, backfill_pos)
  VALUES (g.queue_id, g.name, g.sub_mode, g.sub_from, v_end, NULL)
  RETURNING id INTO v_new;
  UPDATE queen.subscriptions SET group_id = v_new WHERE group_id = p_gid;
  INSERT INTO queen.ready (partition_id, group_id, queue_id, avail_at, acked_seq)
  SELECT b.id, v_new, g.queue_id, now(), b.cur
    FROM (SELECT p.id,
                 CASE p_mode
                   WHEN 'ts_incl' THEN COALESCE((SELECT m.seq FROM queen.messages m
                                                  WHERE m.partition_id = p.id AND m.created_at <= p_ts
                                                  ORDER BY m.seq DESC LIMIT 1), 0)
                   WHEN 'ts_excl' THEN COALESCE((SELECT m.seq FROM queen.messages m
                                                  WHERE m.partition_id = p.id AND m.created_at < p_ts
                                                  ORDER BY m.seq DESC LIMIT 1), 0)
                   ELSE COALESCE(p_seq, 0) END AS cur
            FROM queen.partitions p WHERE p.queue_id = g.queue_id) b
   WHERE EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = b.id AND m.seq > b.cur)
   ORDER BY b.id;
  RETURN v_new;
END
$$;

-- Partitions where the group has state.
CREATE FUNCTION queen._admin_group_state_count(p_gid int) RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT count(*) FROM (SELECT partition_id FROM queen.ready WHERE group_id = p_gid
                        UNION SELECT partition_id FROM queen.cursors WHERE group_id = p_gid) s
$$;

-- Deletes the state of the groups called p_group (on one queue, or on all
-- the tenant's queues). deleteMetadata: the group rows and subscriptions go
-- too, and the next pop resolves the subscription afresh; otherwise the
-- group is kept and starts over from its subscription.
CREATE FUNCTION queen._admin_group_delete(p_tenant text, p_group text, p_queue text, p_meta bool)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  g    record;
  v_n  bigint := 0;
BEGIN
  FOR g IN
    SELECT cg.id, cg.queue_id, cg.sub_mode, cg.sub_from
      FROM queen.consumer_groups cg JOIN queen.queues q ON q.id = cg.queue_id
     WHERE q.tenant = p_tenant AND cg.name = p_group AND NOT cg.retired
       AND (p_queue IS NULL OR q.name = p_queue)
     ORDER BY cg.queue_id
  LOOP
    PERFORM queen.lock_queue(g.queue_id);            -- L0, ascending
    v_n := v_n + queen._admin_group_state_count(g.id);
    IF COALESCE(p_meta, true) THEN
      PERFORM 1 FROM queen.ready r WHERE r.group_id = g.id ORDER BY r.partition_id FOR UPDATE;
      DELETE FROM queen.ready WHERE group_id = g.id;
      DELETE FROM queen.cursors WHERE group_id = g.id;
      DELETE FROM queen.subscriptions WHERE group_id = g.id;
      DELETE FROM queen.consumer_groups WHERE id = g.id;
    ELSIF g.sub_mode = 'timestamp' THEN
      PERFORM queen._admin_replace_group(g.id, 'ts_excl', NULL, g.sub_from);
    ELSIF g.sub_mode = 'new' THEN
      PERFORM queen._admin_replace_group(g.id, 'seq',
        (SELECT start_seq FROM queen.consumer_groups WHERE id = g.id), NULL);
    ELSE
      PERFORM queen._admin_replace_group(g.id, 'seq', 0, NULL);
    END IF;
  END LOOP;
  RETURN v_n;
END
$$;

CREATE FUNCTION queen.api_group_delete(p_tenant text, p_group text, p_meta bool)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_n bigint := queen._admin_group_delete(p_tenant, p_group, NULL, p_meta);
BEGIN
  RETURN QUERY SELECT 200, json_build_object('success', true, 'consumerGroup', p_group,
    'deletedPartitions', v_n, 'metadataDeleted', COALESCE(p_meta, true));
END
$$;

CREATE FUNCTION queen.api_group_queue_delete(p_tenant text, p_group text, p_queue text, p_meta bool)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_n bigint := queen._admin_group_delete(p_tenant, p_group, p_queue, p_meta);
BEGIN
  RETURN QUERY SELECT 200, json_build_object('success', true, 'consumerGroup', p_group,
    'queueName', p_queue, 'deletedPartitions', v_n, 'metadataDeleted', COALESCE(p_meta, true));
END
$$;

-- Sets the subscription instant of every subscription row of the group
-- (all queues). Partitions where the group already has state keep it; the
-- others start at the new instant (queen._backfill from 12_pop.sql,
-- run here for up to 100k partitions per queue, the rest on later pops).
CREATE FUNCTION queen.api_group_subscription(p_tenant text, p_group text, p_sent text, p_ts timestamptz)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  g     record;
  v_n   bigint := 0;
  v_k   bigint;
  v_end bigint;
  i     int;
BEGIN
  FOR g IN
    SELECT cg.id, cg.queue_id
      FROM queen.consumer_groups cg JOIN queen.queues q ON q.id = cg.queue_id
     WHERE q.tenant = p_tenant AND cg.name = p_group AND NOT cg.retired
       AND EXISTS (SELECT 1 FROM queen.subscriptions s WHERE s.group_id = cg.id)
     ORDER BY cg.queue_id
  LOOP
    PERFORM queen.lock_queue(g.queue_id);            -- L0, ascending
    UPDATE queen.subscriptions SET mode = 'timestamp', from_ts = p_ts WHERE group_id = g.id;
    GET DIAGNOSTICS v_k = ROW_COUNT;
    v_n := v_n + v_k;
    SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO v_end FROM queen.msg_seq;
    UPDATE queen.consumer_groups SET sub_mode = 'timestamp', sub_from = p_ts,
           start_seq = v_end, backfill_pos = 0
     WHERE id = g.id;
    FOR i IN 1..10 LOOP
      PERFORM queen._backfill(g.id, false, 10000);
      EXIT WHEN (SELECT backfill_pos IS NULL FROM queen.consumer_groups WHERE id = g.id);
    END LOOP;
  END LOOP;
  RETURN QUERY SELECT 200, json_build_object('success', true, 'consumerGroup', p_group,
    'newTimestamp', p_sent, 'rowsUpdated', v_n);
END
$$;

-- Whole-queue seek (storage 4.7): the group is re-created at the target.
CREATE FUNCTION queen.api_group_seek(p_tenant text, p_group text, p_queue text, p_to_end bool,
  p_ts timestamptz)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_qid int;
  v_gid int;
  v_n   bigint := 0;
  v_end bool := COALESCE(p_to_end, false);
BEGIN
  IF NOT v_end AND p_ts IS NULL THEN
    RETURN QUERY SELECT * FROM queen._err(400, 'Must specify either ''toEnd'': true or ''timestamp''');
    RETURN;
  END IF;
  SELECT id INTO v_qid FROM queen.queues WHERE tenant = p_tenant AND name = p_queue;
  IF NOT FOUND THEN
    RETURN QUERY SELECT * FROM queen._err(404, 'Queue not found');
    RETURN;
  END IF;
  PERFORM queen.lock_queue(v_qid);                   -- L0
  SELECT id INTO v_gid FROM queen.consumer_groups
   WHERE queue_id = v_qid AND name = p_group AND NOT retired;
  IF FOUND THEN
    v_n := queen._admin_group_state_count(v_gid);
    IF v_end THEN
      PERFORM queen._admin_replace_group(v_gid, 'seq',
        (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM queen.msg_seq), NULL);
    ELSE
      PERFORM queen._admin_replace_group(v_gid, 'ts_incl', NULL, p_ts);
    END IF;
  END IF;
  RETURN QUERY SELECT 200, json_build_object('success', true, 'consumerGroup', p_group,
    'queueName', p_queue, 'seekToEnd', v_end,
    'targetTimestamp', CASE WHEN v_end THEN NULL ELSE queen._ts_ms(p_ts) END,
    'partitionsUpdated', v_n);
END
$$;

-- One-partition seek (storage 4.6) under the partition lock. Target cursor:
-- p_offset given: the message at that offset (seq) is the next delivered;
-- p_ts given: newest message created at or before p_ts; neither: the
-- newest message. Any lease of the group on the partition is released.
CREATE FUNCTION queen.api_group_partition_seek(p_tenant text, p_group text, p_queue text,
  p_partition text, p_offset bigint, p_ts timestamptz)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_qid int;
  v_pid bigint;
  v_gid int;
  v_cur bigint;
  v_at  timestamptz;
BEGIN
  SELECT q.id, p.id INTO v_qid, v_pid
    FROM queen.queues q JOIN queen.partitions p ON p.queue_id = q.id
   WHERE q.tenant = p_tenant AND q.name = p_queue AND p.name = p_partition;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 404, json_build_object('success', false, 'error', 'Partition not found');
    RETURN;
  END IF;
  SELECT id INTO v_gid FROM queen.consumer_groups
   WHERE queue_id = v_qid AND name = p_group AND NOT retired;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 200, json_build_object('success', true, 'consumerGroup', p_group,
      'queueName', p_queue, 'partitionName', p_partition, 'updated', false, 'cursorMovedTo', NULL);
    RETURN;
  END IF;
  PERFORM queen.lock_partition(v_pid);                      -- L1
  IF p_offset IS NOT NULL THEN
    -- an offset past the end means "after everything so far" (no push to
    -- this partition is in flight: we hold its lock)
    v_cur := LEAST(GREATEST(p_offset - 1, 0),
                   (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM queen.msg_seq));
  ELSIF p_ts IS NOT NULL THEN
    v_cur := COALESCE((SELECT m.seq FROM queen.messages m WHERE m.partition_id = v_pid
                        AND m.created_at <= p_ts ORDER BY m.seq DESC LIMIT 1), 0);
  ELSE
    v_cur := (SELECT m.seq FROM queen.messages m WHERE m.partition_id = v_pid ORDER BY m.seq DESC LIMIT 1);
    IF v_cur IS NULL THEN
      v_cur := COALESCE((SELECT r.acked_seq FROM queen.ready r WHERE r.partition_id = v_pid AND r.group_id = v_gid),
                        (SELECT c.acked_seq FROM queen.cursors c WHERE c.partition_id = v_pid AND c.group_id = v_gid),
                        (SELECT start_seq FROM queen.consumer_groups WHERE id = v_gid));
    END IF;
  END IF;
  PERFORM 1 FROM queen.ready r WHERE r.partition_id = v_pid AND r.group_id = v_gid FOR UPDATE;   -- L4
  DELETE FROM queen.cursors WHERE partition_id = v_pid AND group_id = v_gid;                    -- L5
  IF EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = v_pid AND m.seq > v_cur) THEN
    INSERT INTO queen.ready AS r (partition_id, group_id, queue_id, avail_at, acked_seq)
    VALUES (v_pid, v_gid, v_qid, now(), v_cur)
    ON CONFLICT (partition_id, group_id) DO UPDATE SET
      acked_seq = EXCLUDED.acked_seq, avail_at = now(), lease_id = NULL, leased_from = NULL,
      leased_to = NULL, batch_size = 0, acked_count = 0, attempts = 0;
  ELSE
    DELETE FROM queen.ready WHERE partition_id = v_pid AND group_id = v_gid;
    INSERT INTO queen.cursors (partition_id, group_id, acked_seq) VALUES (v_pid, v_gid, v_cur);
  END IF;
  SELECT m.created_at INTO v_at FROM queen.messages m
   WHERE m.partition_id = v_pid AND m.seq <= v_cur ORDER BY m.seq DESC LIMIT 1;
  RETURN QUERY SELECT 200, json_build_object('success', true, 'consumerGroup', p_group,
    'queueName', p_queue, 'partitionName', p_partition, 'updated', true,
    'cursorMovedTo', queen._ts_ms(v_at), 'cursor', v_cur);
END
$$;

-- ---------------------------------------------------------------------------
-- Statistics refresh (spec 3.19). The read routes compute their counts live
-- (statsAge 0); refresh records the instant, advances pending group
-- backfills of the tenant and reports the catalogue sizes.
-- ---------------------------------------------------------------------------

CREATE FUNCTION queen.api_stats_refresh(p_tenant text) RETURNS TABLE(status int, body json)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  g      record;
  v_bf   bigint := 0;
  v_k    record;
BEGIN
  FOR g IN
    SELECT cg.id FROM queen.consumer_groups cg JOIN queen.queues q ON q.id = cg.queue_id
     WHERE q.tenant = p_tenant AND cg.backfill_pos IS NOT NULL AND NOT cg.retired
     ORDER BY cg.id
  LOOP
    v_bf := v_bf + queen._backfill(g.id, false, 10000);
  END LOOP;
  INSERT INTO queen.system_state (key, value) VALUES ('stats_refreshed_at', to_jsonb(queen._ts_us(now())))
  ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
  SELECT count(*) AS queues,
         (SELECT count(*) FROM queen.partitions p JOIN queen.queues q2 ON q2.id = p.queue_id
           WHERE q2.tenant = p_tenant) AS partitions,
         count(DISTINCT q.namespace) FILTER (WHERE q.namespace <> '') AS namespaces,
         count(DISTINCT q.task) FILTER (WHERE q.task <> '') AS tasks
    INTO v_k FROM queen.queues q WHERE q.tenant = p_tenant;
  RETURN QUERY SELECT 200, json_build_object(
    'partition', json_build_object('count', v_k.partitions),
    'queue', json_build_object('count', v_k.queues),
    'namespace', json_build_object('count', v_k.namespaces),
    'task', json_build_object('count', v_k.tasks),
    'system', json_build_object('refreshedAt', queen._ts_ms(now()), 'statsAge', 0),
    'cleanup', json_build_object('backfilledPartitions', v_bf));
END
$$;

-- ---------------------------------------------------------------------------
-- Status and analytics (spec 3.18; dashboard)
-- ---------------------------------------------------------------------------

CREATE FUNCTION queen.api_status(p_tenant text, p_from timestamptz, p_to timestamptz, p_queue text,
  p_ns text, p_task text)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_from   timestamptz := COALESCE(p_from, now() - interval '1 hour');
  v_to     timestamptz := COALESCE(p_to, now());
  v_start  timestamptz;
  v_mins   int;
  v_points int;
  v_tp     json;
  v_queues json;
  v_msgs   json;
  v_leases json;
  v_dlq    json;
  v_dlq_n  bigint;
BEGIN
  IF v_to < v_from THEN
    RETURN QUERY SELECT * FROM queen._err(400, 'Invalid time range: to is before from');
    RETURN;
  END IF;
  v_start := date_trunc('minute', v_from);
  v_mins := GREATEST(ceil(extract(epoch FROM v_to - v_start) / 60 / 60), 1)::int;
  v_points := GREATEST(ceil(extract(epoch FROM v_to - v_start) / 60 / v_mins), 1)::int;

  -- per minute from the ingest rollup (66_stats.sql _ingest_counts): no
  -- message read
  WITH c AS (
    SELECT floor(extract(epoch FROM x.minute - v_start) / (v_mins * 60))::int AS b, sum(x.n) AS n
      FROM queen._ingest_counts(p_tenant, p_queue, p_ns, p_task, v_start, v_to) x
     GROUP BY 1)
  SELECT json_agg(json_build_object(
           'timestamp', queen._ts_ms(v_start + make_interval(mins => i * v_mins)),
           'ingested', COALESCE(c.n, 0), 'processed', 0, 'popMessages', 0,
           'ingestedPerSecond', round(COALESCE(c.n, 0) / (v_mins * 60.0), 3),
           'processedPerSecond', 0, 'popPerSecond', 0, 'avgLagMs', 0, 'maxLagMs', 0)
         ORDER BY i)
    INTO v_tp
    FROM generate_series(0, v_points - 1) i LEFT JOIN c ON c.b = i;

  SELECT COALESCE(json_agg(json_build_object('id', queen.uuid_of(3, x.qid), 'name', x.qname,
           'namespace', x.namespace, 'task', x.task, 'partitions', x.parts,
           'totalConsumed', x.consumed) ORDER BY x.qname), '[]'::json),
         json_build_object('total', COALESCE(sum(x.total), 0)::bigint,
           'pending', COALESCE(sum(x.pending), 0)::bigint, 'processing', COALESCE(sum(x.processing), 0)::bigint,
           'completed', COALESCE(sum(x.completed), 0)::bigint, 'failed', COALESCE(sum(x.failed), 0)::bigint,
           'deadLetter', COALESCE(sum(x.dead), 0)::bigint,
           'requests', json_build_object('push', 0, 'pop', 0, 'ack', 0),
           'batchEfficiency', json_build_object('push', 0, 'pop', 0, 'ack', 0))
    INTO v_queues, v_msgs
    FROM (SELECT q.id AS qid, q.name::text AS qname, q.namespace::text AS namespace, q.task::text AS task,
                 c.partitions AS parts, c.completed AS consumed, c.total, c.pending, c.processing,
                 c.completed, c.failed, c.dead
            FROM queen.queues q CROSS JOIN LATERAL queen._queue_counts(q.id) c
           WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue)
             AND (p_ns IS NULL OR q.namespace = p_ns) AND (p_task IS NULL OR q.task = p_task)
             AND c.partitions > 0) x;

  SELECT json_build_object('active', count(*), 'partitionsWithLeases', count(DISTINCT r.partition_id),
           'totalBatchSize', COALESCE(sum(r.batch_size), 0), 'totalAcked', COALESCE(sum(r.acked_count), 0))
    INTO v_leases
    FROM queen.ready r JOIN queen.queues q ON q.id = r.queue_id
   WHERE q.tenant = p_tenant AND r.lease_id IS NOT NULL AND r.avail_at > now()
     AND (p_queue IS NULL OR q.name = p_queue) AND (p_ns IS NULL OR q.namespace = p_ns)
     AND (p_task IS NULL OR q.task = p_task);

  SELECT json_build_object('totalMessages', count(*), 'affectedPartitions', count(DISTINCT d.partition_id),
           'topErrors', COALESCE((SELECT json_agg(json_build_object('error', e.error, 'count', e.n)
                                                  ORDER BY e.n DESC, e.error)
                                    FROM (SELECT d2.error, count(*) AS n FROM queen.dead_letters d2
                                           JOIN queen.queues q2 ON q2.id = d2.queue_id
                                          WHERE q2.tenant = p_tenant AND (p_queue IS NULL OR q2.name = p_queue)
                                          GROUP BY d2.error ORDER BY count(*) DESC LIMIT 5) e), '[]'::json)),
         count(*) FILTER (WHERE d.failed_at >= v_from AND d.failed_at <= v_to)
    INTO v_dlq, v_dlq_n
    FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id
   WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue)
     AND (p_ns IS NULL OR q.namespace = p_ns) AND (p_task IS NULL OR q.task = p_task);

  RETURN QUERY SELECT 200, json_build_object(
    'timeRange', json_build_object('from', queen._ts_ms(v_from), 'to', queen._ts_ms(v_to)),
    'bucketMinutes', v_mins, 'pointCount', v_points, 'throughput', COALESCE(v_tp, '[]'::json),
    'queues', v_queues, 'messages', v_msgs, 'leases', v_leases, 'deadLetterQueue', v_dlq,
    'workers', '[]'::json,
    'errors', json_build_object('dbErrors', 0, 'ackFailed', 0, 'dlqMessages', v_dlq_n),
    'statsAge', 0);
END
$$;

CREATE FUNCTION queen.api_status_queues(p_tenant text, p_ns text, p_task text, p_limit int, p_offset int)
RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  SELECT 200, json_build_object('queues', queen._admin_queue_items(p_tenant, p_ns, p_task, p_limit, p_offset),
                                'pagination', json_build_object('limit', p_limit, 'offset', p_offset))
$$;

CREATE FUNCTION queen.api_status_queue(p_tenant text, p_queue text) RETURNS TABLE(status int, body json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  q queen.queues;
BEGIN
  SELECT * INTO q FROM queen.queues WHERE tenant = p_tenant AND name = p_queue;
  IF NOT FOUND THEN
    RETURN QUERY SELECT * FROM queen._err(404, 'Queue not found');
    RETURN;
  END IF;
  RETURN QUERY
  SELECT 200, json_build_object(
    'queue', json_build_object('id', queen.uuid_of(3, q.id), 'name', q.name, 'namespace', q.namespace,
       'task', q.task, 'priority', q.priority, 'createdAt', queen._ts_ms(q.created_at),
       'config', json_build_object('leaseTime', q.lease_time, 'retryLimit', q.retry_limit,
         'retryDelay', q.retry_delay, 'ttl', q.ttl, 'maxQueueSize', q.max_size,
         'deadLetterQueue', q.dead_letter_queue)),
    'partitions', COALESCE(json_agg(json_build_object(
        'id', queen.uuid_of(2, a.pid), 'name', a.pname, 'createdAt', queen._ts_ms(a.p_created),
        'messages', json_build_object('total', a.total, 'pending', a.pending, 'processing', a.processing),
        'stats', queen._stats_json(a.total, a.pending, a.processing, a.completed, a.failed, a.dead),
        'cursor', json_build_object('totalConsumed', a.completed + a.dead, 'batchesConsumed', 0),
        'lastActivity', queen._ts_ms(GREATEST(a.newest,
           (SELECT max(c.updated_at) FROM queen.cursors c WHERE c.partition_id = a.pid))),
        'oldestMessage', queen._ts_ms(a.oldest), 'newestMessage', queen._ts_ms(a.newest))
      ORDER BY a.pname) FILTER (WHERE a.pid IS NOT NULL), '[]'::json),
    'totals', json_build_object(
       'messages', json_build_object('total', COALESCE(sum(a.total), 0)::bigint,
         'pending', COALESCE(sum(a.pending), 0)::bigint, 'processing', COALESCE(sum(a.processing), 0)::bigint),
       'total', COALESCE(sum(a.total), 0)::bigint, 'pending', COALESCE(sum(a.pending), 0)::bigint,
       'processing', COALESCE(sum(a.processing), 0)::bigint, 'completed', COALESCE(sum(a.completed), 0)::bigint,
       'failed', COALESCE(sum(a.failed), 0)::bigint, 'deadLetter', COALESCE(sum(a.dead), 0)::bigint))
  FROM queen._admin_parts(p_tenant, p_queue, NULL, NULL) a;
END
$$;

-- Newest first over the queue's partitions (each partition contributes at
-- most offset + limit rows, read backwards on its (partition_id, seq) index).
CREATE FUNCTION queen.api_status_queue_messages(p_tenant text, p_queue text, p_limit int, p_offset int)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_qid int;
BEGIN
  SELECT id INTO v_qid FROM queen.queues WHERE tenant = p_tenant AND name = p_queue;
  IF NOT FOUND THEN
    RETURN QUERY SELECT * FROM queen._err(404, 'Queue not found');
    RETURN;
  END IF;
  RETURN QUERY
  WITH m AS (
    SELECT p.id AS pid, p.name::text AS pname, x.seq, x.created_at, x.txn_id
      FROM queen.partitions p
      CROSS JOIN LATERAL (SELECT mm.seq, mm.created_at, mm.txn_id FROM queen.messages mm
                           WHERE mm.partition_id = p.id ORDER BY mm.seq DESC
                           LIMIT p_limit + p_offset) x
     WHERE p.queue_id = v_qid
     ORDER BY x.created_at DESC, x.seq DESC
     LIMIT p_limit OFFSET p_offset),
  pv AS (SELECT x.pid, v.* FROM (SELECT DISTINCT pid FROM m) x
         CROSS JOIN LATERAL queen._admin_pview(x.pid, v_qid) v)
  SELECT 200, COALESCE(json_agg(json_build_object(
      'id', queen.uuid_of(1, m.seq), 'transactionId', COALESCE(m.txn_id::text, queen.uuid_of(1, m.seq)::text),
      'partitionId', queen.uuid_of(2, m.pid), 'queuePath', p_queue || '/' || m.pname,
      'queue', p_queue, 'partition', m.pname,
      'status', queen._msg_status(m.seq, EXISTS (SELECT 1 FROM queen.dead_letters d
                                                  WHERE d.partition_id = m.pid AND d.seq = m.seq),
                                  pv.cur, pv.lease_to),
      'createdAt', queen._ts_ms(m.created_at))
    ORDER BY m.created_at DESC, m.seq DESC), '[]'::json)
  FROM m JOIN pv ON pv.pid = m.pid;
END
$$;

CREATE FUNCTION queen.api_status_analytics(p_tenant text, p_interval text, p_from timestamptz,
  p_to timestamptz, p_queue text, p_ns text, p_task text)
RETURNS TABLE(status int, body json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_iv   text := COALESCE(p_interval, 'hour');
  v_from timestamptz := COALESCE(p_from, now() - interval '24 hours');
  v_to   timestamptz := COALESCE(p_to, now());
  v_pts  json;
BEGIN
  IF v_to < v_from THEN
    RETURN QUERY SELECT * FROM queen._err(400, 'Invalid time range: to is before from');
    RETURN;
  END IF;
  IF extract(epoch FROM v_to - v_from) / extract(epoch FROM ('1 ' || v_iv)::interval) > 10000 THEN
    RETURN QUERY SELECT * FROM queen._err(400, 'Invalid time range: more than 10000 intervals');
    RETURN;
  END IF;
  WITH parts AS (
    SELECT p.id FROM queen.queues q JOIN queen.partitions p ON p.queue_id = q.id
     WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue)
       AND (p_ns IS NULL OR q.namespace = p_ns) AND (p_task IS NULL OR q.task = p_task)),
  c AS (
    SELECT date_trunc(v_iv, m.created_at) AS b, count(*) AS n
      FROM parts JOIN queen.messages m ON m.partition_id = parts.id
     WHERE m.seq >= queen._seq_floor(v_from) AND m.created_at >= v_from AND m.created_at <= v_to
     GROUP BY 1)
  SELECT json_agg(json_build_object('timestamp', queen._ts_ms(t), 'messages', COALESCE(c.n, 0)) ORDER BY t)
    INTO v_pts
    FROM generate_series(date_trunc(v_iv, v_from), v_to, ('1 ' || v_iv)::interval) t
    LEFT JOIN c ON c.b = t;
  RETURN QUERY SELECT 200, json_build_object('dataPoints', COALESCE(v_pts, '[]'::json), 'interval', v_iv,
    'from', queen._ts_ms(v_from), 'to', queen._ts_ms(v_to));
END
$$;

-- Current lag per queue (one bucket, now): no per-pop history is stored.
CREATE FUNCTION queen.api_analytics_queue_lag(p_tenant text, p_from timestamptz, p_to timestamptz,
  p_queue text)
RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  SELECT 200, COALESCE(json_agg(json_build_object('queueName', x.qname, 'popCount', 0,
           'avgLagMs', round(x.avg_ms)::bigint, 'maxLagMs', round(x.max_ms)::bigint,
           'bucketTime', queen._ts_s(date_trunc('minute', now()))) ORDER BY x.qname), '[]'::json)
    FROM (SELECT gp.qname, avg(extract(epoch FROM now() - gp.oldest) * 1000) AS avg_ms,
                 max(extract(epoch FROM now() - gp.oldest) * 1000) AS max_ms
            FROM queen._admin_group_parts(p_tenant, NULL, p_queue) gp
           WHERE gp.active AND gp.oldest IS NOT NULL
           GROUP BY gp.qname) x
$$;

CREATE FUNCTION queen.api_analytics_postgres_stats(p_tenant text) RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  WITH t AS (
    SELECT s.relid, s.relname::text AS tbl, s.n_live_tup, s.n_dead_tup, s.n_tup_upd, s.n_tup_hot_upd,
           s.last_vacuum, s.last_autovacuum, s.last_analyze, s.last_autoanalyze, s.vacuum_count,
           s.autovacuum_count, io.heap_blks_hit, io.heap_blks_read, io.idx_blks_hit, io.idx_blks_read
      FROM pg_stat_user_tables s
      LEFT JOIN pg_statio_user_tables io ON io.relid = s.relid
     WHERE s.schemaname = 'queen'),
  db AS (SELECT * FROM pg_stat_database WHERE datname = current_database())
  SELECT 200, json_build_object(
    'timestamp', queen._ts_ms(now()),
    'database', json_build_object('name', current_database(), 'sizeBytes', pg_database_size(current_database()),
       'size', pg_size_pretty(pg_database_size(current_database())),
       'connections', (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()),
       'version', current_setting('server_version')),
    'databaseCache', (SELECT json_build_object('hits', db.blks_hit, 'reads', db.blks_read,
       'hitRatio', round(db.blks_hit * 100.0 / NULLIF(db.blks_hit + db.blks_read, 0), 2)) FROM db),
    'tableCache', COALESCE((SELECT json_agg(json_build_object('table', t.tbl, 'hits', t.heap_blks_hit,
       'reads', t.heap_blks_read, 'hitRatio',
       round(t.heap_blks_hit * 100.0 / NULLIF(t.heap_blks_hit + t.heap_blks_read, 0), 2)) ORDER BY t.tbl)
       FROM t), '[]'::json),
    'indexCache', COALESCE((SELECT json_agg(json_build_object('table', t.tbl, 'hits', t.idx_blks_hit,
       'reads', t.idx_blks_read, 'hitRatio',
       round(t.idx_blks_hit * 100.0 / NULLIF(t.idx_blks_hit + t.idx_blks_read, 0), 2)) ORDER BY t.tbl)
       FROM t), '[]'::json),
    'cacheSummary', (SELECT json_build_object(
       'heapHitRatio', round(sum(t.heap_blks_hit) * 100.0 / NULLIF(sum(t.heap_blks_hit) + sum(t.heap_blks_read), 0), 2),
       'indexHitRatio', round(sum(t.idx_blks_hit) * 100.0 / NULLIF(sum(t.idx_blks_hit) + sum(t.idx_blks_read), 0), 2))
       FROM t),
    'deadTuples', COALESCE((SELECT json_agg(json_build_object('table', t.tbl, 'live', t.n_live_tup,
       'dead', t.n_dead_tup, 'deadRatio', round(t.n_dead_tup * 100.0 / NULLIF(t.n_live_tup + t.n_dead_tup, 0), 2))
       ORDER BY t.n_dead_tup DESC, t.tbl) FROM t), '[]'::json),
    'hotUpdates', COALESCE((SELECT json_agg(json_build_object('table', t.tbl, 'updates', t.n_tup_upd,
       'hotUpdates', t.n_tup_hot_upd, 'hotRatio', round(t.n_tup_hot_upd * 100.0 / NULLIF(t.n_tup_upd, 0), 2))
       ORDER BY t.n_tup_upd DESC, t.tbl) FROM t WHERE t.n_tup_upd > 0), '[]'::json),
    'activeQueries', COALESCE((SELECT json_agg(json_build_object('pid', a.pid, 'state', a.state,
       'durationMs', round(extract(epoch FROM now() - a.query_start) * 1000)::bigint,
       'waitEvent', a.wait_event, 'query', left(a.query, 200)) ORDER BY a.query_start)
       FROM pg_stat_activity a
      WHERE a.datname = current_database() AND a.state <> 'idle' AND a.pid <> pg_backend_pid()), '[]'::json),
    'autovacuumStatus', COALESCE((SELECT json_agg(json_build_object('table', t.tbl,
       'lastVacuum', queen._ts_ms(t.last_vacuum), 'lastAutovacuum', queen._ts_ms(t.last_autovacuum),
       'lastAnalyze', queen._ts_ms(t.last_analyze), 'lastAutoanalyze', queen._ts_ms(t.last_autoanalyze),
       'vacuumCount', t.vacuum_count, 'autovacuumCount', t.autovacuum_count) ORDER BY t.tbl) FROM t), '[]'::json),
    'bufferConfig', json_build_object('sharedBuffers', current_setting('shared_buffers'),
       'effectiveCacheSize', current_setting('effective_cache_size'), 'workMem', current_setting('work_mem'),
       'maintenanceWorkMem', current_setting('maintenance_work_mem')),
    'bufferUsage', (SELECT to_json(b) FROM pg_stat_bgwriter b),
    'tableSizes', COALESCE((SELECT json_agg(json_build_object('table', t.tbl,
       'totalBytes', pg_total_relation_size(t.relid), 'tableBytes', pg_relation_size(t.relid),
       'indexBytes', pg_indexes_size(t.relid), 'total', pg_size_pretty(pg_total_relation_size(t.relid)))
       ORDER BY pg_total_relation_size(t.relid) DESC, t.tbl) FROM t), '[]'::json))
$$;

-- Dashboard series the broker does not record (yet): well-formed, empty.
CREATE FUNCTION queen.api_analytics_empty(p_tenant text, p_kind text, p_from timestamptz, p_to timestamptz)
RETURNS TABLE(status int, body json)
LANGUAGE sql STABLE AS $$
  WITH r AS (SELECT json_build_object(
               'from', queen._ts_ms(COALESCE(p_from, now() - interval '1 hour')),
               'to', queen._ts_ms(COALESCE(p_to, now()))) AS tr)
  SELECT 200, CASE p_kind
    WHEN 'system-metrics' THEN json_build_object('timeRange', r.tr, 'replicas', '[]'::json,
      'replicaCount', 0, 'bucketMinutes', 1, 'pointCount', 0)
    WHEN 'worker-metrics' THEN json_build_object('timeRange', r.tr, 'bucketMinutes', 1, 'pointCount', 0,
      'timeSeries', '[]'::json, 'workers', '[]'::json, 'queues', '[]'::json, 'summary', '{}'::json)
    WHEN 'queue-ops' THEN json_build_object('timeRange', r.tr, 'bucketMinutes', 1, 'series', '[]'::json,
      'queues', '[]'::json)
    WHEN 'queue-parked-replicas' THEN json_build_object('timeRange', r.tr, 'bucketMinutes', 1,
      'series', '[]'::json, 'replicas', '[]'::json)
    ELSE json_build_object('timeRange', r.tr, 'bucketMinutes', 1, 'series', '[]'::json,
      'totals', '{}'::json) END
  FROM r
$$;
