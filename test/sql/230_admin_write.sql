-- admin write functions (schema/020_admin.sql): seeks re-create the group
-- with its subscription, partition seeks write exactly one state row,
-- deletes, DLQ replay
\ir _lib.psql

CREATE FUNCTION pg_temp.state(q text, grp text) RETURNS text LANGUAGE sql AS $$
  SELECT COALESCE(string_agg(p.name || ':' || s.kind || s.cur, ',' ORDER BY p.name, s.kind), '')
    FROM (SELECT r.partition_id, 'r' AS kind, r.acked_seq AS cur FROM queen.ready r
           WHERE r.group_id = pg_temp.gid(q, grp)
          UNION ALL
          SELECT c.partition_id, 'c', c.acked_seq FROM queen.cursors c WHERE c.group_id = pg_temp.gid(q, grp)) s
    JOIN queen.partitions p ON p.id = s.partition_id $$;
CREATE FUNCTION pg_temp.drain(q text, grp text) RETURNS text LANGUAGE sql AS $$
  SELECT COALESCE(string_agg(p.body, ',' ORDER BY p.partition_name, p.seq), '')
    FROM (SELECT x.partition_name, x.seq, convert_from(x.payload, 'UTF8') AS body
            FROM queen.pop('', q, NULL, grp, NULL, NULL, 1000, 100, NULL, true) x WHERE x.seq IS NOT NULL) p $$;

-- whole-queue seek: group re-created, subscription kept, old rows gone
SELECT pg_temp.pushn(pg_temp.qn('sk'), 'a', 3);
SELECT pg_temp.pushn(pg_temp.qn('sk'), 'b', 2);
SELECT FROM queen.pop('', pg_temp.qn('sk'), NULL, 'g', 'new', NULL, 10, 10, NULL, true);   -- creates "new" group
SELECT set_config('test.gid', pg_temp.gid(pg_temp.qn('sk'), 'g')::text, false) \g /dev/null
SELECT pg_temp.ok(pg_temp.drain(pg_temp.qn('sk'), 'g') = '', 'new group: nothing');
SELECT pg_temp.ok_one(array_agg(body::text::jsonb ->> 'partitionsUpdated' = '0'), 'no state yet')
  FROM queen.api_group_seek('', 'g', pg_temp.qn('sk'), NULL, '2000-01-01');
SELECT pg_temp.ok(pg_temp.gid(pg_temp.qn('sk'), 'g') <> current_setting('test.gid')::int, 'new group id');
SELECT pg_temp.ok(count(*) = 0, 'old group rows gone')
  FROM (SELECT 1 FROM queen.ready WHERE group_id = current_setting('test.gid')::int
        UNION ALL SELECT 1 FROM queen.cursors WHERE group_id = current_setting('test.gid')::int
        UNION ALL SELECT 1 FROM queen.subscriptions WHERE group_id = current_setting('test.gid')::int) x;
SELECT pg_temp.ok_one(array_agg(mode = 'new'), 'subscription moved to the new group')
  FROM queen.subscriptions WHERE group_id = pg_temp.gid(pg_temp.qn('sk'), 'g');
SELECT pg_temp.ok(pg_temp.state(pg_temp.qn('sk'), 'g') = 'a:r0,b:r0', 'ready rows at the start');
SELECT pg_temp.ok(pg_temp.drain(pg_temp.qn('sk'), 'g') = '{"i":1},{"i":2},{"i":3},{"i":1},{"i":2}', 'replayed');
SELECT pg_temp.ok_one(array_agg(body::text::jsonb ->> 'partitionsUpdated' = '2'), 'state on 2 partitions')
  FROM queen.api_group_seek('', 'g', pg_temp.qn('sk'), true, NULL);
SELECT pg_temp.ok(pg_temp.state(pg_temp.qn('sk'), 'g') = '', 'to the end: no state needed');
SELECT pg_temp.ok_one(array_agg(start_seq >= (SELECT max(m.seq) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
                                 WHERE p.queue_id = g.queue_id)), 'start at the end')
  FROM queen.consumer_groups g WHERE g.id = pg_temp.gid(pg_temp.qn('sk'), 'g');
SELECT pg_temp.pushn(pg_temp.qn('sk'), 'b', 1);
SELECT pg_temp.ok(pg_temp.drain(pg_temp.qn('sk'), 'g') = '{"i":1}', 'later push delivered');
SELECT pg_temp.ok_one(array_agg(status = 400), 'neither toEnd nor timestamp')
  FROM queen.api_group_seek('', 'g', pg_temp.qn('sk'), false, NULL);

-- partition seek: exactly one state row; offsets past the end are clamped
SELECT set_config('test.s', array_to_string(pg_temp.pushn(pg_temp.qn('ps'), 'a', 4), ','), false) \g /dev/null
SELECT pg_temp.drain(pg_temp.qn('ps'), 'g');
SELECT pg_temp.ok_one(array_agg(status = 200), 'seek by offset')
  FROM queen.api_group_partition_seek('', 'g', pg_temp.qn('ps'), 'a', split_part(current_setting('test.s'), ',', 3)::bigint, NULL);
SELECT pg_temp.ok(pg_temp.state(pg_temp.qn('ps'), 'g') = 'a:r' || (split_part(current_setting('test.s'), ',', 3)::bigint - 1),
                  'ready row at offset - 1');
SELECT pg_temp.ok(pg_temp.drain(pg_temp.qn('ps'), 'g') = '{"i":3},{"i":4}', 'from the offset');
SELECT pg_temp.ok_one(array_agg((body::text::jsonb ->> 'cursor')::bigint <= (SELECT last_value FROM queen.msg_seq)), 'clamped')
  FROM queen.api_group_partition_seek('', 'g', pg_temp.qn('ps'), 'a', 9000000000000, NULL);
SELECT pg_temp.ok(pg_temp.state(pg_temp.qn('ps'), 'g') LIKE 'a:c%', 'cold cursor only');
SELECT pg_temp.pushn(pg_temp.qn('ps'), 'a', 1);
SELECT pg_temp.ok(pg_temp.drain(pg_temp.qn('ps'), 'g') = '{"i":1}', 'a later message is not skipped');
SELECT pg_temp.ok_one(array_agg((body::text::jsonb ->> 'updated') = 'false'), 'unknown group: not updated')
  FROM queen.api_group_partition_seek('', 'nobody', pg_temp.qn('ps'), 'a', NULL, NULL);
SELECT pg_temp.ok(count(*) = 0, 'and not created') FROM queen.consumer_groups g
  JOIN queen.queues q ON q.id = g.queue_id WHERE q.name = pg_temp.qn('ps') AND g.name = 'nobody';

-- group delete keeping metadata: a timestamp group starts over at its instant
SELECT pg_temp.pushn(pg_temp.qn('gd'), 'a', 2);
SELECT pg_sleep(0.02);
SELECT set_config('test.t', clock_timestamp()::text, false) \g /dev/null
SELECT pg_sleep(0.02);
SELECT pg_temp.pushn(pg_temp.qn('gd'), 'a', 2);
SELECT FROM queen.pop('', pg_temp.qn('gd'), NULL, 'tg', NULL, current_setting('test.t'), 10, 10, NULL, true);
SELECT pg_temp.ok(pg_temp.drain(pg_temp.qn('gd'), 'tg') = '', 'consumed');
SELECT pg_temp.ok_one(array_agg((body::text::jsonb ->> 'deletedPartitions') = '1'), 'one partition')
  FROM queen.api_group_delete('', 'tg', false);
SELECT pg_temp.ok(pg_temp.drain(pg_temp.qn('gd'), 'tg') = '{"i":1},{"i":2}', 'only messages after the instant');
SELECT pg_temp.ok(count(*) = 1, 'subscription kept') FROM queen.subscriptions
 WHERE group_id = pg_temp.gid(pg_temp.qn('gd'), 'tg');
SELECT FROM queen.api_group_delete('', 'tg', true);
SELECT pg_temp.ok(pg_temp.gid(pg_temp.qn('gd'), 'tg') IS NULL, 'group gone with its metadata');

-- message delete inside a live lease: the batch no longer waits for it
SELECT pg_temp.pushn(pg_temp.qn('md'), 'a', 2);
CREATE TEMP TABLE md AS SELECT * FROM pg_temp.pop(pg_temp.qn('md'), 'a', NULL, 2, 1, pg_temp.L(1));
SELECT pg_temp.ok_one(array_agg(success), 'ack first') FROM pg_temp.ack1(NULL, (SELECT partition_id FROM md LIMIT 1),
                                                          (SELECT min(seq) FROM md), 'completed', pg_temp.L(1), NULL);
SELECT pg_temp.ok_one(array_agg(status = 200), 'delete second')
  FROM queen.api_message_delete('', (SELECT partition_id FROM md LIMIT 1),
                                queen.uuid_of(1, (SELECT max(seq) FROM md))::text, (SELECT max(seq) FROM md));
SELECT pg_temp.ok_one(array_agg(lease_id IS NULL), 'lease released') FROM queen.ready
 WHERE partition_id = (SELECT partition_id FROM md LIMIT 1) AND group_id = pg_temp.gid(pg_temp.qn('md'), '__QUEUE_MODE__');

-- DLQ replay: new messages with suffixed transaction ids, entries removed
SELECT pg_temp.push1(pg_temp.qn('rq'), 'a', 'orig', '{"v":1}');
CREATE TEMP TABLE rq AS SELECT * FROM pg_temp.pop(pg_temp.qn('rq'), 'a', 'g1', 1, 1, pg_temp.L(2));
SELECT FROM queen.ack('', ARRAY['g1'], ARRAY[(SELECT partition_id FROM rq)], ARRAY['orig'], ARRAY[NULL::bigint],
                       ARRAY['dlq'], ARRAY[pg_temp.L(2)], ARRAY['x']);
SELECT set_config('test.dlq', (SELECT id::text FROM queen.dead_letters WHERE partition_id = (SELECT partition_id FROM rq)), false) \g /dev/null
SELECT pg_temp.ok_one(array_agg((body::text::jsonb ->> 'requeued') = '1'), 'requeued')
  FROM queen.api_dlq_requeue('', pg_temp.qn('rq'), 'g1', NULL, NULL, NULL);
SELECT pg_temp.ok(count(*) = 0, 'entry gone') FROM queen.dead_letters WHERE partition_id = (SELECT partition_id FROM rq);
SELECT pg_temp.ok(array_agg(txn_id ORDER BY seq) = ARRAY['orig', 'orig:requeue:' || current_setting('test.dlq')],
                  'new message, suffixed id') FROM queen.messages WHERE partition_id = (SELECT partition_id FROM rq);
SELECT pg_temp.ok(pg_temp.drain(pg_temp.qn('rq'), 'g1') = '{"v":1}', 'g1 gets it again');
SELECT pg_temp.ok_one(array_agg((body::text::jsonb ->> 'requeued') = '0'), 'nothing left')
  FROM queen.api_dlq_requeue('', pg_temp.qn('rq'), NULL, NULL, NULL, NULL);
