-- pop_ns (spec 3.9): by namespace, by task, or both
\ir _lib.psql
SELECT queen.configure('', pg_temp.qn('nsa'), pg_temp.qn('ns1'), pg_temp.qn('t1'), NULL);
SELECT queen.configure('', pg_temp.qn('nsb'), pg_temp.qn('ns2'), pg_temp.qn('t1'), '{"priority": 5}');
SELECT queen.configure('', pg_temp.qn('nsc'), pg_temp.qn('ns1'), pg_temp.qn('t2'), NULL);
SELECT pg_temp.pushn(pg_temp.qn('nsa'), 'p', 1);
SELECT pg_temp.pushn(pg_temp.qn('nsb'), 'p', 1);
SELECT pg_temp.pushn(pg_temp.qn('nsc'), 'p', 1);
CREATE FUNCTION pg_temp.popns(ns text, task text) RETURNS TABLE(queue_name text, seq bigint) LANGUAGE sql AS $$
  SELECT p.queue_name, p.seq FROM queen.pop_ns('', ns, task, 'g', NULL, NULL, 10, 1, NULL, true) p $$;
-- task only: both t1 queues, higher priority first
SELECT pg_temp.ok(min(queue_name) = pg_temp.qn('nsb'), 'task only: priority first') FROM pg_temp.popns(NULL, pg_temp.qn('t1'));
SELECT pg_temp.ok(min(queue_name) = pg_temp.qn('nsa'), 'task only: then the other') FROM pg_temp.popns(NULL, pg_temp.qn('t1'));
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'task only: drained') FROM pg_temp.popns(NULL, pg_temp.qn('t1'));
-- namespace only, and both
SELECT pg_temp.ok(min(queue_name) = pg_temp.qn('nsc'), 'namespace only') FROM pg_temp.popns(pg_temp.qn('ns1'), NULL);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'namespace + task: nothing left')
  FROM pg_temp.popns(pg_temp.qn('ns1'), pg_temp.qn('t2'));
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'unknown task') FROM pg_temp.popns(NULL, pg_temp.qn('nosuch'));
