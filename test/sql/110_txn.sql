-- transaction route (spec 3.12): all or nothing
\ir _lib.psql
CREATE FUNCTION pg_temp.txn(pq text[], pp text[], ptx text[], g text[], pids bigint[], atx text[], aseq bigint[],
                            ast text[], alease uuid[], aerr text[], req uuid[])
RETURNS SETOF record LANGUAGE sql AS $$
  SELECT * FROM queen.txn('', pq, pp, ptx, ARRAY(SELECT convert_to('{"n":' || k || '}', 'UTF8') FROM generate_subscripts(pq, 1) k),
                          array_fill(NULL::uuid, ARRAY[cardinality(pq)]), array_fill(NULL::text, ARRAY[cardinality(pq)]),
                          array_fill(false, ARRAY[cardinality(pq)]), g, pids, atx, aseq, ast, alease, aerr, req) $$;
-- expect a failure: returns 'SQLSTATE|message|detail'
CREATE FUNCTION pg_temp.txn_err(pq text[], pp text[], ptx text[], g text[], pids bigint[], atx text[], aseq bigint[],
                                ast text[], alease uuid[], aerr text[], req uuid[])
RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; det text;
BEGIN
  PERFORM * FROM queen.txn('', pq, pp, ptx, ARRAY(SELECT convert_to('{}', 'UTF8') FROM generate_subscripts(pq, 1) k),
                           array_fill(NULL::uuid, ARRAY[cardinality(pq)]), array_fill(NULL::text, ARRAY[cardinality(pq)]),
                           array_fill(false, ARRAY[cardinality(pq)]), g, pids, atx, aseq, ast, alease, aerr, req);
  RETURN 'no error';
EXCEPTION WHEN others THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN st || '|' || msg || '|' || det;
END $$;

SELECT FROM pg_temp.push1(pg_temp.qn('src'), 'p', 'src-1', '"in"');
CREATE TEMP TABLE s1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('src'), NULL, 'workers', 10, 1, pg_temp.L(1));
SELECT set_config('test.pid', (SELECT partition_id::text FROM s1), false) \g /dev/null

-- rollback on a missing message: nothing pushed, nothing acked
SELECT pg_temp.ok_one(array_agg(e = 'QN404|ACK operation failed: Message not found|op=ack:2'), 'missing message: ' || coalesce(string_agg(e, ' / '), 'no row'))
  FROM pg_temp.txn_err(ARRAY[pg_temp.qn('next')], ARRAY['p1'], ARRAY[NULL],
         ARRAY['workers', 'workers'], ARRAY[current_setting('test.pid')::bigint, current_setting('test.pid')::bigint],
         ARRAY['src-1', 'nope'], ARRAY[NULL, NULL]::bigint[], ARRAY['completed', 'completed'], ARRAY[NULL, NULL]::uuid[],
         ARRAY[NULL, NULL], NULL) e;
SELECT pg_temp.ok(count(*) = 0, 'nothing pushed (queue not even created)') FROM queen.queues WHERE name = pg_temp.qn('next');
SELECT pg_temp.ok_one(array_agg(r.lease_id = pg_temp.L(1) AND r.acked_seq = 0 AND r.acked_count = 0), 'source still leased, cursor unchanged')
  FROM queen.ready r WHERE r.partition_id = current_setting('test.pid')::bigint AND r.group_id = pg_temp.gid(pg_temp.qn('src'), 'workers');

-- invalid lease, bad status, duplicate push, required lease
SELECT pg_temp.ok_one(array_agg(e = 'QN409|ACK operation failed: Invalid or expired lease|op=ack:1'), 'bad lease: ' || coalesce(string_agg(e, ' / '), 'no row'))
  FROM pg_temp.txn_err(ARRAY[]::text[], ARRAY[]::text[], ARRAY[]::text[], ARRAY['workers'], ARRAY[current_setting('test.pid')::bigint],
         ARRAY['src-1'], ARRAY[NULL]::bigint[], ARRAY['completed'], ARRAY[gen_random_uuid()], ARRAY[NULL], NULL) e;
SELECT pg_temp.ok_one(array_agg(e LIKE 'QN400|ACK operation failed: Invalid status retry|op=ack:1'), 'bad status: ' || coalesce(string_agg(e, ' / '), 'no row'))
  FROM pg_temp.txn_err(ARRAY[]::text[], ARRAY[]::text[], ARRAY[]::text[], ARRAY['workers'], ARRAY[current_setting('test.pid')::bigint],
         ARRAY['src-1'], ARRAY[NULL]::bigint[], ARRAY['retry'], ARRAY[NULL]::uuid[], ARRAY[NULL], NULL) e;
SELECT pg_temp.ok_one(array_agg(e = '23505|duplicate transactionId src-1 in partition p|op=push:2'), 'duplicate push: ' || coalesce(string_agg(e, ' / '), 'no row'))
  FROM pg_temp.txn_err(ARRAY[pg_temp.qn('src'), pg_temp.qn('src')], ARRAY['x', 'p'], ARRAY['fresh', 'src-1'],
         ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::text[], ARRAY[]::uuid[], ARRAY[]::text[], NULL) e;
SELECT pg_temp.ok(count(*) = 0, 'duplicate: partition x rolled back') FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = pg_temp.qn('src') AND p.name = 'x';
SELECT pg_temp.ok_one(array_agg(e LIKE 'QN409|%|op=lease:1'), 'unknown required lease: ' || coalesce(string_agg(e, ' / '), 'no row'))
  FROM pg_temp.txn_err(ARRAY[pg_temp.qn('next')], ARRAY['p1'], ARRAY[NULL],
         ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::text[], ARRAY[]::uuid[], ARRAY[]::text[],
         ARRAY[gen_random_uuid()]) e;

-- success: ack + 2 pushes, the required lease is held
CREATE TEMP TABLE t1 AS
  SELECT * FROM pg_temp.txn(ARRAY[pg_temp.qn('next'), pg_temp.qn('next')], ARRAY['p1', NULL], ARRAY['out-1', NULL],
         ARRAY['workers'], ARRAY[current_setting('test.pid')::bigint], ARRAY['src-1'], ARRAY[NULL]::bigint[],
         ARRAY['completed'], ARRAY[pg_temp.L(1)], ARRAY[NULL], ARRAY[pg_temp.L(1)])
    AS t(kind text, ord int, seq bigint, partition_id bigint, queue_id int, queue_name text, success bool, error text, dlq bool);
SELECT pg_temp.ok(count(*) = 3, 'three result rows') FROM t1;
SELECT pg_temp.ok_one(array_agg(success AND seq = (SELECT seq FROM s1) AND queue_name = pg_temp.qn('src') AND NOT dlq), 'ack row') FROM t1 WHERE kind = 'ack';
SELECT pg_temp.ok(array_agg(ord ORDER BY ord) = ARRAY[1, 2] AND bool_and(success) AND count(DISTINCT partition_id) = 2
                  AND bool_and(queue_name = pg_temp.qn('next')), 'push rows') FROM t1 WHERE kind = 'push';
SELECT pg_temp.ok(count(*) = 2, 'pushes visible') FROM pg_temp.pop(pg_temp.qn('next'), NULL, NULL, 10, 5, pg_temp.L(2));
SELECT pg_temp.ok(NOT EXISTS (SELECT 1 FROM queen.ready r WHERE r.partition_id = current_setting('test.pid')::bigint
                               AND r.group_id = pg_temp.gid(pg_temp.qn('src'), 'workers')), 'source acked, released and drained');

-- ack of a group with no state: created with the cursor at the acked message; failed -> DLQ at once
SELECT FROM pg_temp.push1(pg_temp.qn('src'), 'p', 'src-2', '"two"');
SELECT FROM pg_temp.push1(pg_temp.qn('src'), 'p', 'src-3', '"three"');
CREATE TEMP TABLE t2 AS
  SELECT * FROM pg_temp.txn(ARRAY[]::text[], ARRAY[]::text[], ARRAY[]::text[],
         ARRAY['auditors', 'auditors'], ARRAY[current_setting('test.pid')::bigint, current_setting('test.pid')::bigint],
         ARRAY['src-1', 'src-2'], ARRAY[NULL, NULL]::bigint[], ARRAY['completed', 'failed'], ARRAY[NULL, NULL]::uuid[],
         ARRAY[NULL, NULL], NULL)
    AS t(kind text, ord int, seq bigint, partition_id bigint, queue_id int, queue_name text, success bool, error text, dlq bool);
SELECT pg_temp.ok(array_agg(dlq ORDER BY ord) = ARRAY[false, true], 'state created; failed dead-lettered') FROM t2;
SELECT pg_temp.ok_one(array_agg(d.error = 'Unknown error' AND d.retry_count = 0 AND d.consumer_group = 'auditors'), 'txn DLQ row')
  FROM queen.dead_letters d WHERE d.partition_id = current_setting('test.pid')::bigint AND d.consumer_group = 'auditors';
SELECT pg_temp.ok(array_agg(body) = ARRAY['"three"'], 'group continues after the acked messages')
  FROM pg_temp.pop(pg_temp.qn('src'), NULL, 'auditors', 10, 1, pg_temp.L(3));
