-- the message counts of the overview, queue list and status reads of a
-- queue of 100,000 partitions (functions/20_admin.sql _queue_counts,
-- _admin_lag_pairs): they take the stored totals from the maintained
-- statistics and count the unconsumed tail only of the partitions with
-- work, so they do not read a message per partition. Timing-free: the index and sequential scans the
-- reads start on the message segments, in this transaction
-- (pg_stat_xact_user_tables), are counted.
\ir _lib.psql

CREATE FUNCTION pg_temp.t() RETURNS text LANGUAGE sql AS $$ SELECT 'qc_' || current_setting('test.run') $$;
-- scans started so far in this transaction on queen.messages and its segments
CREATE FUNCTION pg_temp.msg_scans() RETURNS bigint LANGUAGE sql AS $$
  SELECT COALESCE(sum(COALESCE(s.seq_scan, 0) + COALESCE(s.idx_scan, 0)), 0)::bigint
    FROM pg_stat_xact_user_tables s
   WHERE s.schemaname = 'queen'
     AND (s.relname = 'messages' OR s.relname IN (SELECT g.relname FROM queen.segments g)) $$;
CREATE FUNCTION pg_temp.body(j json, path text[]) RETURNS text LANGUAGE sql AS $$
  SELECT j::jsonb #>> path $$;

-- the fixture: 100,000 partitions of one message each, in ten pushes of
-- 10,000, each its own transaction (a push takes a lock per partition)
SELECT format($f$SELECT count(*) FROM queen.push(%L, array_fill('big'::text, ARRAY[10000]),
  (SELECT array_agg('p' || lpad(i::text, 6, '0') ORDER BY i) FROM generate_series(%s, %s) i),
  array_fill(NULL::text, ARRAY[10000]), array_fill(convert_to('{"n":1}', 'UTF8'), ARRAY[10000]),
  array_fill(NULL::uuid, ARRAY[10000]), array_fill(NULL::text, ARRAY[10000]),
  array_fill(false, ARRAY[10000]), false)$f$, pg_temp.t(), k * 10000, k * 10000 + 9999)
  FROM generate_series(0, 9) k \gexec
SELECT pg_temp.ok((SELECT count(*) FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                    WHERE q.tenant = pg_temp.t()) = 100000, 'fixture: 100,000 partitions');

-- no consumer group: the queue list, and the counts and lag the overview
-- and status take (_queue_counts, _admin_lag_pairs), read no message at all
BEGIN;
CREATE TEMP TABLE before_scans AS SELECT pg_temp.msg_scans() AS n;
SELECT pg_temp.ok_one(array_agg(status = 200
         AND pg_temp.body(body, '{queues,0,partitions}') = '100000'
         AND pg_temp.body(body, '{queues,0,messages}')::jsonb = '{"total":100000,"pending":100000,"processing":0}'),
       'queue list: 100,000 partitions, 100,000 pending')
  FROM queen.api_queues(pg_temp.t());
SELECT pg_temp.ok_one(array_agg(c.partitions = 100000 AND c.total = 100000 AND c.pending = 100000
                                AND c.completed = 0 AND c.dead = 0), 'the counts of the overview')
  FROM queen.queues q CROSS JOIN LATERAL queen._queue_counts(q.id) c WHERE q.tenant = pg_temp.t();
SELECT pg_temp.ok((SELECT count(*) FROM queen._admin_lag_pairs(pg_temp.t())) = 0, 'no lag without a group');
SELECT pg_temp.ok((SELECT pg_temp.msg_scans() - n FROM before_scans) = 0,
                  'the counts of an unconsumed queue scan no message: '
                  || (SELECT pg_temp.msg_scans() - n FROM before_scans));
COMMIT;
-- a consumer group subscribed to new messages only (no backlog), then three
-- new messages in three partitions: only those three partitions are counted
SELECT pg_temp.ok(queen._group_get(q.id, 'g1', 'new', NULL, NULL) > 0, 'group g1 (new)')
  FROM queen.queues q WHERE q.tenant = pg_temp.t() AND q.name = 'big';
SELECT count(*) FROM queen.push(pg_temp.t(), ARRAY['big', 'big', 'big'], ARRAY['p000001', 'p050000', 'p099999'],
  ARRAY[NULL::text, NULL, NULL], ARRAY[convert_to('1', 'UTF8'), convert_to('2', 'UTF8'), convert_to('3', 'UTF8')],
  ARRAY[NULL::uuid, NULL, NULL], ARRAY[NULL::text, NULL, NULL], ARRAY[false, false, false], false);

BEGIN;
CREATE TEMP TABLE before_scans2 AS SELECT pg_temp.msg_scans() AS n;
SELECT pg_temp.ok_one(array_agg(status = 200
         AND pg_temp.body(body, '{queues,0,messages}')::jsonb = '{"total":100003,"pending":3,"processing":0}'),
       'queue list with a group: 3 pending of 100,003')
  FROM queen.api_queues(pg_temp.t());
SELECT pg_temp.ok_one(array_agg(c.total = 100003 AND c.pending = 3 AND c.processing = 0
                                AND c.completed = 100000), 'the counts of the overview with a group')
  FROM queen.queues q CROSS JOIN LATERAL queen._queue_counts(q.id) c WHERE q.tenant = pg_temp.t();
SELECT pg_temp.ok_count(array_agg(l.o = 1 AND l.t >= 0), 3, 'lag: three partitions one message behind')
  FROM queen._admin_lag_pairs(pg_temp.t()) l;
-- (a scan of a partition's messages starts one scan per segment; counting
-- one partition in four probes over the segments of this database starts a
-- few dozen, counting every partition would start millions)
SELECT pg_temp.ok((SELECT pg_temp.msg_scans() - n FROM before_scans2) < 1000,
                  'the counts of the consumed queue look at three partitions, not 100,000: '
                  || (SELECT pg_temp.msg_scans() - n FROM before_scans2));
COMMIT;
-- the route answers these counts (its throughput figure comes from the
-- ingest rollup: 670_dlq_pages_ingest.sql)
SELECT pg_temp.ok_one(array_agg(status = 200
         AND pg_temp.body(body, '{messages}')::jsonb = '{"total":100003,"pending":3,"processing":0,"completed":100000,"failed":0,"deadLetter":0}'
         AND pg_temp.body(body, '{lag,offset,max}') = '1'),
       'overview with a group: 100,000 completed, 3 pending, offset lag 1')
  FROM queen.api_overview(pg_temp.t());
