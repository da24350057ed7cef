-- the maintained statistics (migrations/0007_stats.sql, functions/66_stats.sql):
-- queen.partition_stats counts every partition's stored messages exactly
-- through pushes, duplicates, message deletes, retention, partition and
-- queue deletes and segment drops; the overview reads it
\ir _lib.psql

CREATE FUNCTION pg_temp.t() RETURNS text LANGUAGE sql AS $$ SELECT 'st_' || current_setting('test.run') $$;
CREATE FUNCTION pg_temp.tpush(q text, part text, txn text) RETURNS bigint LANGUAGE sql AS $$
  SELECT p.seq FROM queen.push(pg_temp.t(), ARRAY[q], ARRAY[part], ARRAY[txn], ARRAY[convert_to('{}', 'UTF8')],
                               ARRAY[NULL::uuid], ARRAY[NULL::text], ARRAY[false], false) p $$;
CREATE FUNCTION pg_temp.n(q text, part text) RETURNS bigint LANGUAGE sql AS $$
  SELECT COALESCE(sum(s.messages), 0)::bigint FROM queen.partition_stats s
    JOIN queen.partitions p ON p.id = s.partition_id
    JOIN queen.queues qq ON qq.id = p.queue_id
   WHERE qq.tenant = pg_temp.t() AND qq.name = q AND (part IS NULL OR p.name = part) $$;
CREATE FUNCTION pg_temp.pid(q text, part text) RETURNS bigint LANGUAGE sql AS $$
  SELECT p.id FROM queen.partitions p JOIN queen.queues qq ON qq.id = p.queue_id
   WHERE qq.tenant = pg_temp.t() AND qq.name = q AND p.name = part $$;

-- pushes count, duplicates do not; one push statement over two partitions
SELECT pg_temp.tpush('sa', 'p1', 'a' || k) FROM generate_series(1, 5) k;
SELECT pg_temp.tpush('sa', 'p1', 'a1');
SELECT FROM queen.push(pg_temp.t(), ARRAY['sa', 'sa', 'sa'], ARRAY['p1', 'p2', 'p2'], ARRAY[NULL, NULL, 'b1'],
                       ARRAY[convert_to('1', 'UTF8'), convert_to('2', 'UTF8'), convert_to('3', 'UTF8')],
                       ARRAY[NULL::uuid, NULL, NULL], ARRAY[NULL::text, NULL, NULL], ARRAY[false, false, false], false);
SELECT pg_temp.ok(pg_temp.n('sa', 'p1') = 6, 'p1: 5 + 1 (the duplicate not counted)');
SELECT pg_temp.ok(pg_temp.n('sa', 'p2') = 2, 'p2: 2');
SELECT pg_temp.ok_one(array_agg((body::text::jsonb #>> '{messages,total}') = '8'), 'overview total from the stats')
  FROM queen.api_overview(pg_temp.t());

-- a message delete subtracts (the statement trigger)
SELECT pg_temp.ok_one(array_agg(status = 200), 'delete one message')
  FROM queen.api_message_delete(pg_temp.t(), pg_temp.pid('sa', 'p1'), 'a3', NULL);
SELECT pg_temp.ok(pg_temp.n('sa', 'p1') = 5, 'p1: 5 after the delete');
SELECT pg_temp.ok_one(array_agg((body::text::jsonb #>> '{totals,total}') = '7'), 'status/queue total')
  FROM queen.api_status_queue(pg_temp.t(), 'sa');

-- a segment drop subtracts the segment's rows (rolled back: only the
-- arithmetic is checked; retention's drop calls it under its lock)
BEGIN;
SELECT queen._stats_segment_dropped(s.relname)
  FROM queen.segments s
 WHERE (SELECT min(m.seq) FROM queen.messages m WHERE m.partition_id = pg_temp.pid('sa', 'p2')) >= s.lo
   AND (SELECT min(m.seq) FROM queen.messages m WHERE m.partition_id = pg_temp.pid('sa', 'p2')) < s.hi;
SELECT pg_temp.ok(pg_temp.n('sa', 'p2') < 2, 'segment drop subtracted p2''s rows in it');
ROLLBACK;
SELECT pg_temp.ok(pg_temp.n('sa', 'p2') = 2, 'rolled back');

-- a partition delete, then a queue delete (swept at once when small)
SELECT pg_temp.ok_one(array_agg(existed), 'partition delete') FROM queen.partition_delete(pg_temp.t(), 'sa', 'p2');
SELECT pg_temp.ok(pg_temp.n('sa', 'p2') = 0, 'p2 gone');
SELECT pg_temp.tpush('sb', 'x', 'c' || k) FROM generate_series(1, 3) k;
SELECT pg_temp.ok(pg_temp.n('sb', NULL) = 3, 'sb: 3');
SELECT pg_temp.ok_one(array_agg(existed), 'queue delete') FROM queen.queue_delete(pg_temp.t(), 'sb');
SELECT pg_temp.ok_one(array_agg((body::text::jsonb #>> '{messages,total}') = '5'), 'overview after the deletes')
  FROM queen.api_overview(pg_temp.t());

-- every partition of the database (all earlier SQL tests included) is exact
SELECT pg_temp.ok(count(*) = 0, 'stats_verify: ' || COALESCE(string_agg(partition_id || ':' || counted || '/' || maintained, ' '), ''))
  FROM queen.stats_verify();
