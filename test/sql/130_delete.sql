-- queue and partition delete (spec 2.1, 3.14)
\ir _lib.psql
CREATE FUNCTION pg_temp.leftovers(qid int, pids bigint[]) RETURNS bigint LANGUAGE sql AS $$
  SELECT (SELECT count(*) FROM queen.messages WHERE partition_id = ANY (pids))
       + (SELECT count(*) FROM queen.ready WHERE partition_id = ANY (pids))
       + (SELECT count(*) FROM queen.cursors WHERE partition_id = ANY (pids))
       + (SELECT count(*) FROM queen.partitions WHERE id = ANY (pids) OR queue_id = qid)
       + (SELECT count(*) FROM queen.dead_letters WHERE queue_id = qid OR partition_id = ANY (pids))
       + (SELECT count(*) FROM queen.consumer_groups WHERE queue_id = qid) $$;

SELECT pg_temp.pushn(pg_temp.qn('del'), 'a', 3);
SELECT pg_temp.pushn(pg_temp.qn('del'), 'b', 2);
CREATE TEMP TABLE d1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('del'), 'a', 'grp', 1, 1, pg_temp.L(1));
SELECT FROM pg_temp.ack1('grp', (SELECT partition_id FROM d1), (SELECT seq FROM d1), 'dlq', pg_temp.L(1), 'x');
SELECT FROM queen.pop('', pg_temp.qn('del'), 'b', 'grp', NULL, NULL, 10, 1, NULL, true);
SELECT FROM queen.pop('', pg_temp.qn('del'), 'b', 'grp', NULL, NULL, 10, 1, NULL, true);   -- drains b into cursors
SELECT set_config('test.qid', (SELECT id::text FROM queen.queues WHERE name = pg_temp.qn('del')), false) \g /dev/null
SELECT set_config('test.pids', (SELECT array_agg(p.id)::text FROM queen.partitions p WHERE p.queue_id = current_setting('test.qid')::int), false) \g /dev/null
SELECT pg_temp.ok(pg_temp.leftovers(current_setting('test.qid')::int, current_setting('test.pids')::bigint[]) > 10, 'state exists');

SELECT pg_temp.ok_one(array_agg(existed), 'delete existing') FROM queen.queue_delete('', pg_temp.qn('del'));
SELECT pg_temp.ok(pg_temp.leftovers(current_setting('test.qid')::int, current_setting('test.pids')::bigint[]) = 0, 'everything gone');
SELECT pg_temp.ok(count(*) = 0, 'graveyard empty') FROM queen.graveyard WHERE kind = 'q' AND id = current_setting('test.qid')::int;
SELECT pg_temp.ok_one(array_agg(NOT existed), 'delete again: existed false') FROM queen.queue_delete('', pg_temp.qn('del'));
-- re-created by a push with new ids; only the new message is delivered
SELECT FROM pg_temp.push1(pg_temp.qn('del'), 'a', NULL, '"new"');
SELECT pg_temp.ok_one(array_agg(id <> current_setting('test.qid')::int), 'new queue id') FROM queen.queues WHERE name = pg_temp.qn('del');
SELECT pg_temp.ok(array_agg(body) = ARRAY['"new"'], 'only the new message')
  FROM pg_temp.pop(pg_temp.qn('del'), NULL, 'grp', 10, 5, pg_temp.L(2));

-- partition delete
SELECT pg_temp.pushn(pg_temp.qn('pdel'), 'a', 3);
SELECT pg_temp.pushn(pg_temp.qn('pdel'), 'b', 2);
SELECT set_config('test.pa', (SELECT p.id::text FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                               WHERE q.name = pg_temp.qn('pdel') AND p.name = 'a'), false) \g /dev/null
SELECT pg_temp.ok_one(array_agg(existed), 'partition delete') FROM queen.partition_delete('', pg_temp.qn('pdel'), 'a');
SELECT pg_temp.ok_one(array_agg(NOT existed), 'partition delete again') FROM queen.partition_delete('', pg_temp.qn('pdel'), 'a');
SELECT pg_temp.ok(pg_temp.leftovers(-1, ARRAY[current_setting('test.pa')::bigint]) = 0, 'partition state gone');
SELECT pg_temp.ok(count(*) = 2 AND min(partition_name) = 'b', 'other partition intact')
  FROM pg_temp.pop(pg_temp.qn('pdel'), NULL, NULL, 10, 5, pg_temp.L(3));

-- a big queue: the delete returns at once, the rest is swept by retention_run
SELECT pg_temp.pushn(pg_temp.qn('big'), 'p', 6000);
SELECT pg_temp.pushn(pg_temp.qn('big'), 'q', 6000);
SELECT set_config('test.qid', (SELECT id::text FROM queen.queues WHERE name = pg_temp.qn('big')), false) \g /dev/null
SELECT set_config('test.pids', (SELECT array_agg(p.id)::text FROM queen.partitions p WHERE p.queue_id = current_setting('test.qid')::int), false) \g /dev/null
SELECT pg_temp.ok_one(array_agg(existed), 'big delete') FROM queen.queue_delete('', pg_temp.qn('big'));
SELECT pg_temp.ok(count(*) = 0, 'queue invisible at once') FROM queen.queues WHERE name = pg_temp.qn('big');
SELECT pg_temp.ok(count(*) = 1, 'graveyard entry left') FROM queen.graveyard WHERE kind = 'q' AND id = current_setting('test.qid')::int;
SELECT FROM queen.retention_run(100000);
SELECT pg_temp.ok(pg_temp.leftovers(current_setting('test.qid')::int, current_setting('test.pids')::bigint[]) = 0, 'swept');
SELECT pg_temp.ok(count(*) = 0, 'graveyard done') FROM queen.graveyard WHERE kind = 'q' AND id = current_setting('test.qid')::int;
