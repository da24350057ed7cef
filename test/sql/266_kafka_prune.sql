-- Kafka log retention (queen.kafka_prune, called by queen.retention_run;
-- spec kafka.md §6.3, §6.6): messages removed by the queue's retention take
-- their kafka_log rows with them from the head of the log, ListOffsets
-- earliest moves, a fetch below it answers 1 OFFSET_OUT_OF_RANGE, the high
-- watermark and later offsets are unchanged; a deleted message in the middle
-- stays a gap until it reaches the head; old producer state expires.
\ir _lib.psql

SELECT pg_temp.ok(queen.kafka_create_topic('', pg_temp.qn('kr'), 1, 1024, false) = 0, 'create kr');
SELECT queen.configure('', pg_temp.qn('kr'), NULL, NULL, '{"retentionEnabled": true, "retentionSeconds": 1}');

CREATE FUNCTION pg_temp.klog(q text) RETURNS bigint[] LANGUAGE sql AS $$
  SELECT array_agg(l.koffset ORDER BY l.koffset) FROM queen.kafka_log l JOIN queen.queues qq ON qq.id = l.queue_id
   WHERE qq.name = q $$;

SELECT count(*) FROM pg_temp.pushn(pg_temp.qn('kr'), 'e', 3);          -- offsets 0..2, will age out
SELECT pg_sleep(1.1);
SELECT count(*) FROM pg_temp.pushn(pg_temp.qn('kr'), 'e', 3);          -- offsets 3..5, young
SELECT pg_temp.ok(pg_temp.klog(pg_temp.qn('kr')) = ARRAY[0, 1, 2, 3, 4, 5]::bigint[], 'six log rows');
SELECT pg_temp.ok_one(array_agg(koffset = 0), 'earliest is 0 before retention')
  FROM queen.kafka_list_offset('', pg_temp.qn('kr'), 0, -2);

-- a young message in the middle deleted natively: a gap, kept while not at the head
DELETE FROM queen.messages m USING queen.kafka_log l, queen.queues qq
 WHERE qq.name = pg_temp.qn('kr') AND l.queue_id = qq.id AND l.koffset = 4
   AND m.partition_id = l.partition_id AND m.seq = l.seq;

SELECT count(*) FROM queen.retention_run(100000);
SELECT pg_temp.ok(pg_temp.klog(pg_temp.qn('kr')) = ARRAY[3, 4, 5]::bigint[],
                  'aged-out head pruned, the middle gap kept: ' || pg_temp.klog(pg_temp.qn('kr'))::text);
SELECT pg_temp.ok_one(array_agg(err = 0 AND koffset = 3), 'ListOffsets earliest moved to 3')
  FROM queen.kafka_list_offset('', pg_temp.qn('kr'), 0, -2);
SELECT pg_temp.ok_one(array_agg(err = 0 AND koffset = 6), 'latest unchanged')
  FROM queen.kafka_list_offset('', pg_temp.qn('kr'), 0, -1);
SELECT pg_temp.ok_one(array_agg(err = 1 AND hwm = 6 AND log_start = 3 AND koffset IS NULL),
                      'fetch below the log start: offset out of range')
  FROM queen.kafka_fetch('', pg_temp.qn('kr'), 0, 2, 1048576, 100);
SELECT pg_temp.ok_count(array_agg(err = 0 AND log_start = 3), 2, 'fetch from 3: the gap skipped')
  FROM queen.kafka_fetch('', pg_temp.qn('kr'), 0, 3, 1048576, 100);
SELECT pg_temp.ok(
  (SELECT array_agg(koffset ORDER BY koffset) FROM queen.kafka_fetch('', pg_temp.qn('kr'), 0, 3, 1048576, 100))
  = ARRAY[3, 5]::bigint[], 'records 3 and 5');

-- the head message goes: the gap at 4 is at the head now and goes with it
DELETE FROM queen.messages m USING queen.kafka_log l, queen.queues qq
 WHERE qq.name = pg_temp.qn('kr') AND l.queue_id = qq.id AND l.koffset = 3
   AND m.partition_id = l.partition_id AND m.seq = l.seq;
SELECT pg_temp.ok(queen.kafka_prune(1000) >= 2, 'prune reports the rows');
SELECT pg_temp.ok(pg_temp.klog(pg_temp.qn('kr')) = ARRAY[5]::bigint[], 'head and gap pruned');
SELECT pg_temp.ok_one(array_agg(koffset = 5), 'earliest 5')
  FROM queen.kafka_list_offset('', pg_temp.qn('kr'), 0, -2);

-- the budget bounds one run: 3 aged rows, budget 2, then the rest
SELECT pg_temp.ok(queen.kafka_create_topic('', pg_temp.qn('kb'), 1, 1024, false) = 0, 'create kb');
SELECT count(*) FROM pg_temp.pushn(pg_temp.qn('kb'), 'e', 3);
DELETE FROM queen.messages m USING queen.partitions p, queen.queues qq
 WHERE qq.name = pg_temp.qn('kb') AND p.queue_id = qq.id AND m.partition_id = p.id;
SELECT queen.kafka_prune(2);
SELECT pg_temp.ok(cardinality(pg_temp.klog(pg_temp.qn('kb'))) >= 1, 'budget: not all at once');
SELECT queen.kafka_prune(1000);
SELECT pg_temp.ok(pg_temp.klog(pg_temp.qn('kb')) IS NULL, 'then the rest');
SELECT pg_temp.ok_one(array_agg(koffset = 3), 'an empty log starts at the high watermark')
  FROM queen.kafka_list_offset('', pg_temp.qn('kb'), 0, -2);

-- producer state untouched for longer than the TTL expires; fresh state stays
INSERT INTO queen.kafka_producer_state (producer_id, queue_id, kpart, producer_epoch, last_sequence, updated_at)
SELECT 990000001, id, 0, 0, 5, now() - interval '8 days' FROM queen.queues WHERE name = pg_temp.qn('kr');
INSERT INTO queen.kafka_producer_state (producer_id, queue_id, kpart, producer_epoch, last_sequence)
SELECT 990000002, id, 0, 0, 5 FROM queen.queues WHERE name = pg_temp.qn('kr');
SELECT queen.kafka_prune(1000);
SELECT pg_temp.ok(array_agg(producer_id ORDER BY producer_id) = ARRAY[990000002]::bigint[], 'old producer state expired')
  FROM queen.kafka_producer_state WHERE producer_id IN (990000001, 990000002)
   AND queue_id = (SELECT id FROM queen.queues WHERE name = pg_temp.qn('kr'));
