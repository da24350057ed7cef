-- SQS door upkeep (queen.sqs_sweep, migrations/0011_sqs_sweep.sql) and the
-- FIFO receive (queen.sqs_receive): a group's messages go out together, in
-- order, and no other message of the group while one is in flight.
\ir _lib.psql

-- helpers: one SQS send of n bodies (with an attribute, so each has a
-- metadata row), optionally FIFO with a group and dedup ids
CREATE FUNCTION pg_temp.send(q text, parts text[], bodies text[], dedup text[])
RETURNS TABLE(ord int, seq bigint, partition_id bigint, duplicate bool) LANGUAGE sql AS $$
  SELECT s.ord, s.seq, s.partition_id, s.duplicate
    FROM queen.sqs_send('', q, parts, ARRAY(SELECT convert_to(b, 'UTF8') FROM unnest(bodies) b),
                        array_fill(NULL::bigint, ARRAY[cardinality(parts)]),
                        array_fill('{"a":["String","eA=="]}'::jsonb, ARRAY[cardinality(parts)]),
                        array_fill(NULL::jsonb, ARRAY[cardinality(parts)]),
                        CASE WHEN dedup IS NULL THEN array_fill(NULL::text, ARRAY[cardinality(parts)]) ELSE parts END,
                        COALESCE(dedup, array_fill(NULL::text, ARRAY[cardinality(parts)])), 'tester', false, false) s $$;
CREATE FUNCTION pg_temp.nmeta(q text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM queen.sqs_meta m JOIN queen.partitions p ON p.id = m.partition_id
    JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = q $$;
CREATE FUNCTION pg_temp.nrecv(q text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM queen.sqs_receives m JOIN queen.partitions p ON p.id = m.partition_id
    JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = q $$;
CREATE FUNCTION pg_temp.ndedup(q text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM queen.sqs_dedup d JOIN queen.queues qq ON qq.id = d.queue_id WHERE qq.name = q $$;
-- sweep until every job comes back with nothing (the walks wrap), p rows a call
CREATE FUNCTION pg_temp.sweep(p int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE total bigint := 0; n bigint; k int := 0;
BEGIN
  LOOP
    k := k + 1;
    SELECT sum(affected) INTO n FROM queen.sqs_sweep(p);
    total := total + COALESCE(n, 0);
    EXIT WHEN COALESCE(n, 0) = 0 AND (SELECT meta_seq = 0 AND recv_seq = 0 FROM queen.sqs_sweep_pos);
    IF k > 10000 THEN RAISE EXCEPTION 'sweep does not finish'; END IF;
  END LOOP;
  RETURN total;
END $$;

SELECT queen.sqs_create('', pg_temp.qn('old'), false, '{"MessageRetentionPeriod": "60"}', '{}');
SELECT queen.sqs_create('', pg_temp.qn('live'), false, '{}', '{}');
SELECT queen.sqs_create('', pg_temp.qn('f.fifo'), true, '{}', '{}');

-- old: three messages that retention will drop, received once each
SELECT pg_temp.ok(count(*) = 3, 'old: sent') FROM pg_temp.send(pg_temp.qn('old'), ARRAY['_sqs-1', '_sqs-2', '_sqs-3'],
                                                                  ARRAY['o1', 'o2', 'o3'], NULL);
SELECT pg_temp.ok(count(*) = 3, 'old: received')
  FROM queen.sqs_receive('', pg_temp.qn('old'), 10, 30, pg_temp.L(1), NULL, NULL) WHERE seq IS NOT NULL;
-- live: four messages; all received; one deleted over SQS (its receive row
-- goes at once), one acked natively (the cursor passes it: its receive row
-- is swept), two stay in flight
SELECT pg_temp.ok(count(*) = 4, 'live: sent') FROM pg_temp.send(pg_temp.qn('live'), ARRAY['_sqs-1', '_sqs-2', '_sqs-3', '_sqs-4'],
                                                                   ARRAY['l1', 'l2', 'l3', 'l4'], NULL);
CREATE TEMP TABLE lr AS SELECT * FROM queen.sqs_receive('', pg_temp.qn('live'), 10, 30, pg_temp.L(2), NULL, NULL);
SELECT pg_temp.ok(count(*) = 4, 'live: received') FROM lr WHERE seq IS NOT NULL;
SELECT pg_temp.ok(bool_and(status = 'deleted'), 'live: deleted over SQS')
  FROM queen.sqs_ack('', pg_temp.qn('live'), ARRAY(SELECT partition_id FROM lr WHERE convert_from(payload, 'UTF8') = 'l1'),
                     ARRAY(SELECT seq FROM lr WHERE convert_from(payload, 'UTF8') = 'l1'), ARRAY[pg_temp.L(2)]);
SELECT pg_temp.ok_one(array_agg(success), 'live: l2 acked natively')
  FROM lr, pg_temp.ack1('__QUEUE_MODE__', lr.partition_id, lr.seq, 'completed', pg_temp.L(2), NULL) a
 WHERE convert_from(lr.payload, 'UTF8') = 'l2';
SELECT pg_temp.ok(pg_temp.nrecv(pg_temp.qn('live')) = 3, 'live: receive rows before the sweep (l2, l3, l4)');
-- f.fifo: two dedup entries, one made expired
SELECT pg_temp.ok(count(*) = 2, 'fifo: sent') FROM pg_temp.send(pg_temp.qn('f.fifo'), ARRAY['g1', 'g1'], ARRAY['f1', 'f2'], ARRAY['d1', 'd2']);
UPDATE queen.sqs_dedup d SET expires_at = now() - interval '1 second'
  FROM queen.queues q WHERE q.id = d.queue_id AND q.name = pg_temp.qn('f.fifo') AND d.dedup_id = 'd1';

-- retention drops old's messages
UPDATE queen.queues SET retention_seconds = 1 WHERE name = pg_temp.qn('old');
SELECT pg_sleep(1.1);
SELECT FROM queen.retention_run(100000);
SELECT pg_temp.ok(NOT EXISTS (SELECT 1 FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
                               JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = pg_temp.qn('old')),
                  'old: retention dropped the messages');
SELECT pg_temp.ok(pg_temp.nmeta(pg_temp.qn('old')) = 3 AND pg_temp.nrecv(pg_temp.qn('old')) = 3,
                  'old: rows left behind before the sweep');

-- one row a call: the walks must advance and wrap
SELECT pg_temp.ok(pg_temp.sweep(1) >= 3 + 3 + 1 + 1, 'sweep removed rows');
SELECT pg_temp.ok(pg_temp.nmeta(pg_temp.qn('old')) = 0, 'old: metadata of dropped messages swept');
SELECT pg_temp.ok(pg_temp.nrecv(pg_temp.qn('old')) = 0, 'old: receive rows of dropped messages swept');
SELECT pg_temp.ok(pg_temp.nmeta(pg_temp.qn('live')) = 4, 'live: metadata of existing messages kept');
SELECT pg_temp.ok(pg_temp.nrecv(pg_temp.qn('live')) = 2, 'live: receive row of the natively acked message swept, in-flight kept');
SELECT pg_temp.ok_count(array_agg(convert_from(m.payload, 'UTF8') IN ('l3', 'l4')), 2, 'live: the kept receive rows are l3 and l4')
  FROM queen.sqs_receives s JOIN queen.messages m ON m.partition_id = s.partition_id AND m.seq = s.seq
  JOIN queen.partitions p ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = pg_temp.qn('live');
SELECT pg_temp.ok(pg_temp.ndedup(pg_temp.qn('f.fifo')) = 1, 'fifo: expired dedup entry swept, live one kept');
SELECT pg_temp.ok_one(array_agg(dedup_id = 'd2'), 'fifo: the live entry is d2')
  FROM queen.sqs_dedup d JOIN queen.queues q ON q.id = d.queue_id WHERE q.name = pg_temp.qn('f.fifo');
-- a big batch finds nothing more
SELECT pg_temp.ok(pg_temp.sweep(5000) = 0, 'second sweep: nothing');

-- FIFO receive: g1 has f1, f2; g2 gets h1; one receive returns f1, f2 (in
-- order) and h1; while they are in flight nothing of either group
SELECT pg_temp.ok(count(*) = 1, 'fifo: g2 sent') FROM pg_temp.send(pg_temp.qn('f.fifo'), ARRAY['g2'], ARRAY['h1'], ARRAY['e1']);
CREATE TEMP TABLE fr AS SELECT * FROM queen.sqs_receive('', pg_temp.qn('f.fifo'), 10, 30, pg_temp.L(3), NULL, NULL);
SELECT pg_temp.ok(array_agg(convert_from(payload, 'UTF8') ORDER BY seq) FILTER (WHERE partition_name = 'g1') = ARRAY['f1', 'f2']
                  AND array_agg(convert_from(payload, 'UTF8')) FILTER (WHERE partition_name = 'g2') = ARRAY['h1']
                  AND count(*) = 3, 'fifo: one receive returns both groups, g1 in order')
  FROM fr WHERE seq IS NOT NULL;
SELECT pg_temp.send(pg_temp.qn('f.fifo'), ARRAY['g1'], ARRAY['f3'], ARRAY['d3']);
SELECT pg_temp.ok(count(*) = 0, 'fifo: nothing while both groups are in flight')
  FROM queen.sqs_receive('', pg_temp.qn('f.fifo'), 10, 30, pg_temp.L(4), NULL, NULL) WHERE seq IS NOT NULL;
-- deleting f1 only keeps g1 in flight (f2 is)
SELECT FROM queen.sqs_ack('', pg_temp.qn('f.fifo'), ARRAY(SELECT partition_id FROM fr WHERE convert_from(payload, 'UTF8') = 'f1'),
                          ARRAY(SELECT seq FROM fr WHERE convert_from(payload, 'UTF8') = 'f1'), ARRAY[pg_temp.L(3)]);
SELECT pg_temp.ok(count(*) = 0, 'fifo: f2 in flight holds g1')
  FROM queen.sqs_receive('', pg_temp.qn('f.fifo'), 10, 30, pg_temp.L(5), NULL, NULL) WHERE seq IS NOT NULL;
SELECT FROM queen.sqs_ack('', pg_temp.qn('f.fifo'), ARRAY(SELECT partition_id FROM fr WHERE convert_from(payload, 'UTF8') = 'f2'),
                          ARRAY(SELECT seq FROM fr WHERE convert_from(payload, 'UTF8') = 'f2'), ARRAY[pg_temp.L(3)]);
SELECT pg_temp.ok_one(array_agg(convert_from(payload, 'UTF8') = 'f3'), 'fifo: g1 free again: f3')
  FROM queen.sqs_receive('', pg_temp.qn('f.fifo'), 10, 30, pg_temp.L(6), NULL, NULL) WHERE seq IS NOT NULL;

-- FIFO redrive inside a group: g3 has k1 (received twice already) and k2
-- behind it: k1 goes to the DLQ, k2 is returned. g4 has x1 and x2 (over
-- the limit): x1 is returned, the lease ends after it and x2 waits, first
-- in its group, until x1 is deleted.
SELECT queen.sqs_create('', pg_temp.qn('dl.fifo'), true, '{}', '{}');
SELECT pg_temp.send(pg_temp.qn('f.fifo'), ARRAY['g3', 'g3'], ARRAY['k1', 'k2'], ARRAY['k1', 'k2']);
INSERT INTO queen.sqs_receives (partition_id, seq, count)
SELECT m.partition_id, m.seq, 2 FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
  JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = pg_temp.qn('f.fifo') AND convert_from(m.payload, 'UTF8') = 'k1';
SELECT pg_temp.ok_one(array_agg(convert_from(payload, 'UTF8') = 'k2' AND receive_count = 1), 'fifo redrive: k1 moved, k2 returned')
  FROM queen.sqs_receive('', pg_temp.qn('f.fifo'), 10, 30, pg_temp.L(7), pg_temp.qn('dl.fifo'), 2) WHERE seq IS NOT NULL;
SELECT pg_temp.ok_one(array_agg(convert_from(m.payload, 'UTF8') = 'k1' AND p.name = 'g3'), 'fifo redrive: k1 in the DLQ, group g3')
  FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = pg_temp.qn('dl.fifo');
SELECT pg_temp.send(pg_temp.qn('f.fifo'), ARRAY['g4', 'g4'], ARRAY['x1', 'x2'], ARRAY['x1', 'x2']);
INSERT INTO queen.sqs_receives (partition_id, seq, count)
SELECT m.partition_id, m.seq, 2 FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
  JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = pg_temp.qn('f.fifo') AND convert_from(m.payload, 'UTF8') = 'x2';
CREATE TEMP TABLE xr AS SELECT * FROM queen.sqs_receive('', pg_temp.qn('f.fifo'), 10, 30, pg_temp.L(8), pg_temp.qn('dl.fifo'), 2);
SELECT pg_temp.ok_one(array_agg(convert_from(payload, 'UTF8') = 'x1'), 'fifo redrive: x1 returned, x2 held back') FROM xr WHERE seq IS NOT NULL;
SELECT pg_temp.ok(count(*) = 1, 'fifo redrive: x2 not moved yet')
  FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = pg_temp.qn('dl.fifo');
-- deleting x1 releases the group (the lease covers x1 alone); x2 then moves
SELECT pg_temp.ok_one(array_agg(status = 'deleted' AND ok), 'fifo redrive: x1 deleted, lease released')
  FROM queen.sqs_ack('', pg_temp.qn('f.fifo'), ARRAY(SELECT partition_id FROM xr WHERE seq IS NOT NULL),
                     ARRAY(SELECT seq FROM xr WHERE seq IS NOT NULL), ARRAY[pg_temp.L(8)]);
SELECT pg_temp.ok(count(*) = 0, 'fifo redrive: nothing to return')
  FROM queen.sqs_receive('', pg_temp.qn('f.fifo'), 10, 30, pg_temp.L(9), pg_temp.qn('dl.fifo'), 2) WHERE seq IS NOT NULL;
SELECT pg_temp.ok(count(*) = 2, 'fifo redrive: x2 in the DLQ')
  FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = pg_temp.qn('dl.fifo');
