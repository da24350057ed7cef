-- admin read functions (schema/020_admin.sql): one row each, status and
-- stats derivation in queue, bus and hybrid mode, tenant isolation
\ir _lib.psql

-- a tenant of our own: overview counts are exact
CREATE FUNCTION pg_temp.t() RETURNS text LANGUAGE sql AS $$ SELECT 'adm_' || current_setting('test.run') $$;
CREATE FUNCTION pg_temp.tpush(q text, part text, txn text, body text) RETURNS bigint LANGUAGE sql AS $$
  SELECT p.seq FROM queen.push(pg_temp.t(), ARRAY[q], ARRAY[part], ARRAY[txn], ARRAY[convert_to(body, 'UTF8')],
                               ARRAY[NULL::uuid], ARRAY[NULL::text], ARRAY[false], false) p $$;
CREATE FUNCTION pg_temp.tpop(q text, part text, grp text, batch int, lease uuid)
RETURNS TABLE(partition_id bigint, seq bigint, txn text) LANGUAGE sql AS $$
  SELECT p.partition_id, p.seq, p.txn_id FROM queen.pop(pg_temp.t(), q, part, grp, NULL, NULL, batch, 1, lease, false) p
   WHERE p.seq IS NOT NULL $$;
CREATE FUNCTION pg_temp.tack(grp text, pid bigint, txn text, status text, lease uuid) RETURNS bool
LANGUAGE sql AS $$
  SELECT a.success FROM queen.ack(pg_temp.t(), ARRAY[grp], ARRAY[pid], ARRAY[txn], ARRAY[NULL::bigint],
                                  ARRAY[status], ARRAY[lease], ARRAY['e']) a $$;

-- empty tenant: every read answers one row, 200, well-formed
SELECT pg_temp.ok(count(*) = 1 AND min(status) = 200 AND (min(body::text)::jsonb -> 'messages' ->> 'total') = '0',
                  'overview of an empty tenant') FROM queen.api_overview(pg_temp.t());
SELECT pg_temp.ok_one(array_agg(body::text::jsonb = '{"queues": []}'), 'no queues') FROM queen.api_queues(pg_temp.t());
SELECT pg_temp.ok_one(array_agg(status = 404), 'unknown queue') FROM queen.api_queue(pg_temp.t(), 'x');
SELECT pg_temp.ok_one(array_agg(body::text::jsonb = '[]'), 'no groups') FROM queen.api_groups(pg_temp.t());
SELECT pg_temp.ok_one(array_agg(body::text::jsonb = '{}'), 'unknown group') FROM queen.api_group(pg_temp.t(), 'g');
SELECT pg_temp.ok_one(array_agg((body::text::jsonb ->> 'total') = '0'), 'empty dlq')
  FROM queen.api_dlq(pg_temp.t(), NULL, NULL, NULL, NULL, NULL, 100, 0);
SELECT pg_temp.ok_one(array_agg(jsonb_array_length(body::text::jsonb -> 'messages') = 0), 'no messages')
  FROM queen.api_messages(pg_temp.t(), NULL, NULL, NULL, NULL, NULL, NULL, NULL, 200, 0);
SELECT pg_temp.ok_one(array_agg(status = 200), 'status') FROM queen.api_status(pg_temp.t(), NULL, NULL, NULL, NULL, NULL);
SELECT pg_temp.ok_one(array_agg(status = 200), 'postgres stats') FROM queen.api_analytics_postgres_stats(pg_temp.t());

-- queue mode: pending / processing / completed / dead_letter
SELECT pg_temp.tpush('qm', 'p', 'm' || k, '{"k":' || k || '}') FROM generate_series(1, 4) k;
CREATE TEMP TABLE p1 AS SELECT * FROM pg_temp.tpop('qm', 'p', NULL, 3, pg_temp.L(1));
SELECT pg_temp.ok(count(*) = 3, 'popped 3') FROM p1;
SELECT pg_temp.ok_one(array_agg(pg_temp.tack(NULL, partition_id, txn, 'completed', pg_temp.L(1))), 'ack 1')
  FROM p1 WHERE txn = 'm1';
SELECT pg_temp.ok_one(array_agg(pg_temp.tack(NULL, partition_id, txn, 'dlq', pg_temp.L(1))), 'dlq 2')
  FROM p1 WHERE txn = 'm2';
CREATE TEMP TABLE st AS
  SELECT m ->> 'transactionId' AS txn, m ->> 'status' AS status, m ->> 'queueStatus' AS qstatus
    FROM queen.api_messages(pg_temp.t(), 'qm', NULL, NULL, NULL, NULL, NULL, NULL, 200, 0) a,
         jsonb_array_elements(a.body::text::jsonb -> 'messages') m;
SELECT pg_temp.ok(string_agg(txn || '=' || status, ',' ORDER BY txn)
                  = 'm1=completed,m2=dead_letter,m3=processing,m4=pending', 'queue mode statuses') FROM st;
SELECT pg_temp.ok_count(array_agg(status = qstatus), 4, 'queueStatus = status in queue mode') FROM st;
SELECT pg_temp.ok_one(array_agg(body::text::jsonb -> 'totals'
                  = '{"total": 4, "pending": 1, "processing": 1, "completed": 1, "failed": 1, "deadLetter": 1}'),
                  'queue totals') FROM queen.api_queue(pg_temp.t(), 'qm');
SELECT pg_temp.ok_one(array_agg(body::text::jsonb -> 'messages'
                  = '{"total": 4, "pending": 1, "processing": 1, "completed": 1, "failed": 1, "deadLetter": 1}'),
                  'overview totals') FROM queen.api_overview(pg_temp.t());
SELECT pg_temp.ok_one(array_agg((body::text::jsonb -> 'leases' ->> 'active') = '1'), 'one live lease')
  FROM queen.api_status(pg_temp.t(), NULL, NULL, NULL, NULL, NULL);

-- bus mode: completed only once every named group passed it
SELECT pg_temp.tpush('bus', 'p', 'b' || k, '1') FROM generate_series(1, 3) k;
SELECT pg_temp.tack('ga', partition_id, txn, 'completed', pg_temp.L(2))
  FROM pg_temp.tpop('bus', 'p', 'ga', 3, pg_temp.L(2));
SELECT pg_temp.tack('gb', partition_id, txn, 'completed', pg_temp.L(3))
  FROM pg_temp.tpop('bus', 'p', 'gb', 1, pg_temp.L(3));
CREATE TEMP TABLE bs AS
  SELECT m ->> 'transactionId' AS txn, m ->> 'status' AS status, m -> 'busStatus' AS bus, a.body::text::jsonb -> 'mode' AS mode
    FROM queen.api_messages(pg_temp.t(), 'bus', NULL, NULL, NULL, NULL, NULL, NULL, 200, 0) a,
         jsonb_array_elements(a.body::text::jsonb -> 'messages') m;
SELECT pg_temp.ok(string_agg(txn || '=' || status || bus::text, ',' ORDER BY txn)
                  = 'b1=completed{"consumedBy": 2, "totalGroups": 2},'
                    'b2=pending{"consumedBy": 1, "totalGroups": 2},b3=pending{"consumedBy": 1, "totalGroups": 2}',
                  'bus statuses') FROM bs;
SELECT pg_temp.ok(min(mode::text) = '{"type": "bus", "hasQueueMode": false, "busGroupsCount": 2}', 'bus mode') FROM bs;
-- hybrid: the queue mode group consumes too; status follows queue mode
SELECT pg_temp.tack(NULL, partition_id, txn, 'completed', pg_temp.L(4))
  FROM pg_temp.tpop('bus', 'p', NULL, 3, pg_temp.L(4));
SELECT pg_temp.ok_one(array_agg((a.body::text::jsonb -> 'mode' ->> 'type') = 'hybrid'
                  AND (SELECT bool_and(m ->> 'status' = 'completed')
                         FROM jsonb_array_elements(a.body::text::jsonb -> 'messages') m)), 'hybrid')
  FROM queen.api_messages(pg_temp.t(), 'bus', NULL, NULL, NULL, NULL, NULL, NULL, 200, 0) a;

-- groups: list and lag
SELECT pg_temp.ok(string_agg(g ->> 'name' || ':' || (g ->> 'members') || ':' || (g ->> 'offsetLag'), ','
                             ORDER BY g ->> 'queueName' COLLATE "C", g ->> 'name' COLLATE "C")
                  = '__QUEUE_MODE__:1:0,ga:1:0,gb:1:2,__QUEUE_MODE__:1:2', 'group list')
  FROM queen.api_groups(pg_temp.t()) a, jsonb_array_elements(a.body::text::jsonb) g;
SELECT pg_temp.ok(count(*) = 2, 'lagging with minLag 0: gb on bus, queue mode on qm')
  FROM queen.api_groups_lagging(pg_temp.t(), 0) a, jsonb_array_elements(a.body::text::jsonb) x;

-- message by id form, and the tenant boundary
SELECT pg_temp.ok_one(array_agg(status = 200 AND (body::text::jsonb ->> 'transactionId') = 'm4'), 'by txn')
  FROM queen.api_message(pg_temp.t(), (SELECT partition_id FROM p1 LIMIT 1), 'm4', NULL);
SELECT pg_temp.ok_one(array_agg(status = 404), 'other tenant cannot read it')
  FROM queen.api_message('', (SELECT partition_id FROM p1 LIMIT 1), 'm4', NULL);
SELECT pg_temp.ok_one(array_agg(status = 200 AND (body::text::jsonb ->> 'transactionId') = 'm3'), 'found by its message id too')
  FROM queen.api_message(pg_temp.t(), (SELECT partition_id FROM p1 LIMIT 1),
                         queen.uuid_of(1, (SELECT max(seq) FROM p1))::text, (SELECT max(seq) FROM p1));
