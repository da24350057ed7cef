-- the dashboard's dead-letter pages (functions/66_stats.sql
-- api_dead_letters) and the throughput of the overview and status reads
-- (_ingest_counts over the ingest rollup, migrations/0019_ops.sql) on a
-- queue of 100,000 partitions: the pages are index ranges of a few rows
-- each, whatever the size of the dead-letter queue, and each entry is seen
-- once; the throughput figures are right before and after the rollup and
-- after deletes, and read no message. Timing-free: the scans and index
-- tuples read in this transaction (pg_stat_xact_user_tables)
-- are counted.
\ir _lib.psql

CREATE FUNCTION pg_temp.t() RETURNS text LANGUAGE sql AS $$ SELECT 'dl_' || current_setting('test.run') $$;
CREATE FUNCTION pg_temp.msg_scans() RETURNS bigint LANGUAGE sql AS $$
  SELECT COALESCE(sum(COALESCE(s.seq_scan, 0) + COALESCE(s.idx_scan, 0)), 0)::bigint
    FROM pg_stat_xact_user_tables s
   WHERE s.schemaname = 'queen'
     AND (s.relname = 'messages' OR s.relname IN (SELECT g.relname FROM queen.segments g)) $$;
-- sequential scans of queen.dead_letters, and its rows fetched through indexes
-- (fresh rows: an index-only scan fetches them too)
CREATE FUNCTION pg_temp.dl_seq() RETURNS bigint LANGUAGE sql AS $$
  SELECT COALESCE(sum(s.seq_scan), 0)::bigint FROM pg_stat_xact_user_tables s
   WHERE s.schemaname = 'queen' AND s.relname = 'dead_letters' $$;
CREATE FUNCTION pg_temp.dl_read() RETURNS bigint LANGUAGE sql AS $$
  SELECT COALESCE(sum(s.idx_tup_fetch), 0)::bigint FROM pg_stat_xact_user_tables s
   WHERE s.schemaname = 'queen' AND s.relname = 'dead_letters' $$;
CREATE FUNCTION pg_temp.body(j json, path text[]) RETURNS text LANGUAGE sql AS $$
  SELECT j::jsonb #>> path $$;
-- the throughput of the status read: messages ingested over its points
CREATE FUNCTION pg_temp.status_ingested() RETURNS bigint LANGUAGE sql AS $$
  SELECT sum((e->>'ingested')::bigint)::bigint
    FROM queen.api_status(pg_temp.t(), NULL, NULL, NULL, NULL, NULL) s,
         json_array_elements(s.body->'throughput') e $$;

-- the fixture: 100,000 partitions of one message each, in ten pushes of 10,000
SELECT format($f$SELECT count(*) FROM queen.push(%L, array_fill('big'::text, ARRAY[10000]),
  (SELECT array_agg('p' || lpad(i::text, 6, '0') ORDER BY i) FROM generate_series(%s, %s) i),
  array_fill(NULL::text, ARRAY[10000]), array_fill(convert_to('{"n":1}', 'UTF8'), ARRAY[10000]),
  array_fill(NULL::uuid, ARRAY[10000]), array_fill(NULL::text, ARRAY[10000]),
  array_fill(false, ARRAY[10000]), false)$f$, pg_temp.t(), k * 10000, k * 10000 + 9999)
  FROM generate_series(0, 9) k \gexec

-- ---------------------------------------------------------------- throughput
-- before the rollup: from the partitions' growth past their marks
BEGIN;
CREATE TEMP TABLE s0 AS SELECT pg_temp.msg_scans() AS n;
SELECT pg_temp.ok(pg_temp.status_ingested() = 100000,
                  'status: 100,000 ingested before the rollup: ' || pg_temp.status_ingested());
SELECT pg_temp.ok_one(array_agg(status = 200 AND (pg_temp.body(body, '{throughput,ingestedPerSecond}'))::numeric > 0),
                      'overview: an ingest rate') FROM queen.api_overview(pg_temp.t());
SELECT pg_temp.ok((SELECT pg_temp.msg_scans() - n FROM s0) = 0,
                  'throughput before the rollup reads no message: ' || (SELECT pg_temp.msg_scans() - n FROM s0));
COMMIT;
-- the rollup folds them into the minutes, reading no message either
BEGIN;
CREATE TEMP TABLE s1 AS SELECT pg_temp.msg_scans() AS n;
SELECT pg_temp.ok(queen._ingest_rollup() >= 100000, 'the rollup takes the 100,000 pushes');
SELECT pg_temp.ok((SELECT pg_temp.msg_scans() - n FROM s1) = 0, 'the rollup reads no message');
COMMIT;
SELECT pg_temp.ok((SELECT sum(i.ingested) FROM queen.ingest_minutes i JOIN queen.queues q ON q.id = i.queue_id
                    WHERE q.tenant = pg_temp.t()) = 100000, 'the minutes hold 100,000');
BEGIN;
CREATE TEMP TABLE s2 AS SELECT pg_temp.msg_scans() AS n;
SELECT pg_temp.ok(pg_temp.status_ingested() = 100000,
                  'status: 100,000 ingested after the rollup: ' || pg_temp.status_ingested());
SELECT pg_temp.ok((SELECT count(*) FROM queen._ingest_counts(pg_temp.t(), 'big', NULL, NULL,
                     now() - interval '1 hour', now())) >= 1, 'per queue');
SELECT pg_temp.ok((SELECT COALESCE(sum(n), 0) FROM queen._ingest_counts(pg_temp.t(), 'none', NULL, NULL,
                     now() - interval '1 hour', now())) = 0, 'another queue: nothing');
SELECT pg_temp.ok_one(array_agg(status = 200 AND (pg_temp.body(body, '{throughput,ingestedPerSecond}'))::numeric > 0),
                      'overview: an ingest rate after the rollup') FROM queen.api_overview(pg_temp.t());
SELECT pg_temp.ok((SELECT pg_temp.msg_scans() - n FROM s2) = 0,
                  'throughput after the rollup reads no message: ' || (SELECT pg_temp.msg_scans() - n FROM s2));
COMMIT;
-- three more pushes, then deletes: the pushed counts only grow
SELECT count(*) FROM queen.push(pg_temp.t(), ARRAY['big', 'big', 'big'], ARRAY['p000001', 'p050000', 'p099999'],
  ARRAY[NULL::text, NULL, NULL], ARRAY[convert_to('1', 'UTF8'), convert_to('2', 'UTF8'), convert_to('3', 'UTF8')],
  ARRAY[NULL::uuid, NULL, NULL], ARRAY[NULL::text, NULL, NULL], ARRAY[false, false, false], false);
SELECT pg_temp.ok(pg_temp.status_ingested() = 100003, 'status: 100,003 with three more: ' || pg_temp.status_ingested());
DELETE FROM queen.messages m USING queen.partitions p, queen.queues q
 WHERE m.partition_id = p.id AND p.queue_id = q.id AND q.tenant = pg_temp.t()
   AND p.name IN ('p000001', 'p000002', 'p000003');
SELECT pg_temp.ok(pg_temp.status_ingested() = 100003, 'deletes take nothing off: ' || pg_temp.status_ingested());
SELECT pg_temp.ok(queen._ingest_rollup() >= 3, 'the rollup takes the three');
SELECT pg_temp.ok(pg_temp.status_ingested() = 100003, 'status after the second rollup: ' || pg_temp.status_ingested());

-- ---------------------------------------------------------------- dead letters
-- 20,000 entries over the 100,000 partitions: 19,750 of group g1, 250 of
-- g2; failed_at in steps of a second, ten entries per instant (ties broken
-- by id)
INSERT INTO queen.dead_letters (queue_id, partition_id, consumer_group, seq, created_at, failed_at, error, payload)
SELECT q.id, p.id, CASE WHEN i % 80 = 0 THEN 'g2' ELSE 'g1' END, i, now(),
       timestamptz '2026-01-01' + (i / 10) * interval '1 second', 'e' || i, convert_to('{}', 'UTF8')
  FROM queen.queues q, generate_series(1, 20000) i
  JOIN queen.partitions p ON p.name = 'p' || lpad(((i * 5) % 100000)::text, 6, '0')
 WHERE q.tenant = pg_temp.t() AND q.name = 'big' AND p.queue_id = q.id;
SELECT pg_temp.ok((SELECT count(*) FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id
                    WHERE q.tenant = pg_temp.t()) = 20000, 'fixture: 20,000 dead letters');

-- every page of group g2 (limit 100): 250 entries, each once, newest first
CREATE FUNCTION pg_temp.walk(p_queue text, p_group text, p_part text, p_limit int)
RETURNS TABLE(pages int, entries bigint, distinct_ids bigint, ordered bool, last_next text)
LANGUAGE plpgsql AS $$
DECLARE
  v_cur text;
  v_b json;
BEGIN
  CREATE TEMP TABLE IF NOT EXISTS seen (k int, dlq text, failed timestamptz);
  TRUNCATE seen;
  pages := 0;
  LOOP
    SELECT a.body INTO v_b FROM queen.api_dead_letters(pg_temp.t(), p_queue, p_group, p_part, NULL, NULL,
                                                       v_cur, p_limit) a;
    pages := pages + 1;
    INSERT INTO seen SELECT (SELECT COALESCE(max(k), 0) FROM seen) + o::int, e->>'dlqId', (e->>'failedAt')::timestamptz
      FROM json_array_elements(v_b->'messages') WITH ORDINALITY AS x(e, o);
    v_cur := v_b->>'next';
    EXIT WHEN v_cur IS NULL OR pages > 1000;
  END LOOP;
  last_next := v_cur;
  SELECT count(*), count(DISTINCT s.dlq) INTO entries, distinct_ids FROM seen s;
  SELECT COALESCE(bool_and(a.failed >= b.failed), false) INTO ordered
    FROM seen a JOIN seen b ON b.k = a.k + 1;
  RETURN NEXT;
END $$;
SELECT pg_temp.ok_one(array_agg(w.pages = 3 AND w.entries = 250 AND w.distinct_ids = 250 AND w.ordered
                                AND w.last_next IS NULL),
                      'group g2 in three pages of 100: 250 entries, each once, newest first')
  FROM pg_temp.walk('big', 'g2', NULL, 100) w;
-- the whole tenant, no queue named, pages of 1000: 20,000 entries, each once
SELECT pg_temp.ok_one(array_agg(w.pages = 20 AND w.entries = 20000 AND w.distinct_ids = 20000 AND w.ordered),
                      'the tenant in 20 pages of 1000: 20,000 entries, each once')
  FROM pg_temp.walk(NULL, NULL, NULL, 1000) w;
-- one partition (p000080 holds entry 16, group g1)
SELECT pg_temp.ok_one(array_agg(w.entries = 1 AND w.pages = 1),
                      'one partition: its one entry') FROM pg_temp.walk('big', NULL, 'p000080', 100) w;
SELECT pg_temp.ok_one(array_agg(status = 400), 'a cursor not from a page: 400')
  FROM queen.api_dead_letters(pg_temp.t(), NULL, NULL, NULL, NULL, NULL, 'x:1', 10);

-- a page fetches a page's worth of rows, not the 20,000: first
-- page, a page deep in the queue, a group's page, a partition's page; with
-- the generic plans a long-lived pool session ends up with, then with
-- custom plans
\set mode force_generic_plan
\ir _670_dlq_pages.psql
\set mode force_custom_plan
\ir _670_dlq_pages.psql
