-- Kafka view (schema/functions/60_kafka.sql, spec kafka.md §6): murmur2
-- vectors, kpart placement of native pushes, dense offsets in visibility
-- order, Kafka pushes with chosen kparts, timestamps, raw keys, null values
-- and headers, idempotent retries answering the original offset, fetch
-- windows and errors, ListOffsets, Metadata topics with auto-creation,
-- native queues Kafka never named (no Kafka work until the first naming),
-- CreateTopics / DeleteTopics, the same rows for native pops.
\ir _lib.psql

-- murmur2 (the spec's vectors; wire/kafka_prim.c has the same ones)
SELECT pg_temp.ok(queen.kafka_murmur2(convert_to('key0', 'UTF8')) = x'1afa3622'::bigint, 'murmur2 key0');
SELECT pg_temp.ok(queen.kafka_murmur2(convert_to('key1', 'UTF8')) = x'01b38bc4'::bigint, 'murmur2 key1');
SELECT pg_temp.ok(queen.kafka_murmur2(convert_to('key4', 'UTF8')) = x'c04208c9'::bigint, 'murmur2 key4');
SELECT pg_temp.ok(queen.kafka_murmur2(convert_to('order-42', 'UTF8')) = x'1ddefd00'::bigint, 'murmur2 order-42');
SELECT pg_temp.ok(queen.kafka_murmur2(''::bytea) = x'106e08d9'::bigint, 'murmur2 empty');
SELECT pg_temp.ok(array_agg(queen.kafka_kpart('key' || i, 3) ORDER BY i) = ARRAY[1, 2, 2, 1, 0, 1, 0, 0, 1],
                  'key0..key8 over 3 kparts') FROM generate_series(0, 8) i;
SELECT pg_temp.ok(queen.kafka_kpart('key1', 8) = 4 AND queen.kafka_kpart('key4', 8) = 1, '8 kparts');

-- topic names
SELECT pg_temp.ok(queen.kafka_legal_name('a.b_c-D9') AND NOT queen.kafka_legal_name('a/b')
                  AND NOT queen.kafka_legal_name('..') AND NOT queen.kafka_legal_name('')
                  AND NOT queen.kafka_legal_name(repeat('x', 250)), 'legal names');

-- CreateTopics: 3 kparts; again = 36; bad counts = 37; reserved / illegal = 17
SELECT pg_temp.ok(queen.kafka_create_topic('', pg_temp.qn('k3'), 3, 1024, false) = 0, 'create k3');
SELECT pg_temp.ok(queen.kafka_create_topic('', pg_temp.qn('k3'), 3, 1024, false) = 36, 'exists');
SELECT pg_temp.ok(queen.kafka_create_topic('', pg_temp.qn('kx'), 0, 1024, false) = 37, 'zero partitions');
SELECT pg_temp.ok(queen.kafka_create_topic('', pg_temp.qn('kx'), 1025, 1024, false) = 37, 'too many');
SELECT pg_temp.ok(queen.kafka_create_topic('', '__consumer_offsets', 1, 1024, false) = 17, 'reserved');
SELECT pg_temp.ok(queen.kafka_create_topic('', 'a b', 1, 1024, false) = 17, 'illegal');
SELECT pg_temp.ok(queen.kafka_create_topic('', pg_temp.qn('kv'), 2, 1024, true) = 0
                  AND NOT EXISTS (SELECT 1 FROM queen.queues WHERE name = pg_temp.qn('kv')), 'validate only');
SELECT pg_temp.ok_one(array_agg(kafka_partitions = 3), 'k3 has 3 kparts')
  FROM queen.queues WHERE tenant = '' AND name = pg_temp.qn('k3');

-- native pushes: partition order-42 lands in kpart 0 (murmur2), offsets in
-- push order; a push without partition (Default) has a null key
SELECT count(*) FROM pg_temp.pushn(pg_temp.qn('k3'), 'order-42', 3);
SELECT count(*) FROM pg_temp.push1(pg_temp.qn('k3'), NULL, NULL, '"nokey"');
CREATE TEMP TABLE f0 AS SELECT * FROM queen.kafka_fetch('', pg_temp.qn('k3'), 0, 0, 1048576, 100);
-- ('Default' is in kpart 0 of 3 too: murmur2 0x... & 0x7fffffff mod 3 = 0)
SELECT pg_temp.ok_count(array_agg(err = 0 AND hwm = 4 AND log_start = 0 AND key = 'order-42'::bytea),
                        3, 'order-42 in kpart 0') FROM f0 WHERE koffset < 3;
SELECT pg_temp.ok(array_agg(koffset ORDER BY koffset) = ARRAY[0, 1, 2]::bigint[]
                  AND array_agg(convert_from(value, 'UTF8') ORDER BY koffset) = ARRAY['{"i":1}', '{"i":2}', '{"i":3}'],
                  'push order = offset order') FROM f0 WHERE koffset < 3;
SELECT pg_temp.ok(queen.kafka_kpart('Default', 3) = 0, 'Default in kpart 0');
SELECT pg_temp.ok_one(array_agg(key IS NULL AND convert_from(value, 'UTF8') = '"nokey"'),
                      'Default = null key') FROM f0 WHERE koffset = 3;
-- the Kafka timestamp of a native message is its created_at
SELECT pg_temp.ok_one(array_agg(f.ts_ms = floor(extract(epoch FROM m.created_at) * 1000)::bigint), 'native ts')
  FROM f0 f JOIN queen.kafka_log l ON l.queue_id = (SELECT id FROM queen.queues WHERE name = pg_temp.qn('k3'))
   AND l.kpart = 0 AND l.koffset = f.koffset
  JOIN queen.messages m ON m.partition_id = l.partition_id AND m.seq = l.seq WHERE f.koffset = 0;

-- Kafka pushes: the producer's kpart wins over murmur2; timestamps, raw key,
-- null value and headers come back; offsets continue densely
CREATE TEMP TABLE kp AS SELECT * FROM queen.kafka_push('', ARRAY[pg_temp.qn('k3'), pg_temp.qn('k3'), pg_temp.qn('k3')],
  ARRAY['order-42', '_kb64:AP8', NULL], ARRAY['kafka:7:0:2:0', 'kafka:7:0:2:1', NULL],
  ARRAY['v1', '', 'v3']::bytea[], ARRAY[2, 2, 0], ARRAY[1700000000000, 1700000000001, 1700000000002]::bigint[],
  ARRAY[NULL, '\x00ff', NULL]::bytea[], ARRAY[false, true, false], ARRAY['\x01', NULL, NULL]::bytea[]);
SELECT pg_temp.ok(array_agg(kpart ORDER BY ord) = ARRAY[2, 2, 0] AND array_agg(koffset ORDER BY ord) = ARRAY[0, 1, 4]::bigint[]
                  AND bool_and(NOT duplicate AND err = 0 AND queue_name = pg_temp.qn('k3')), 'kafka push offsets') FROM kp;
-- Produce never creates topics: an unknown topic or a kpart outside the
-- topic gets err 3 and is not stored; the other items are
CREATE TEMP TABLE kp0 AS SELECT * FROM queen.kafka_push('', ARRAY[pg_temp.qn('nosuch'), pg_temp.qn('k3'), pg_temp.qn('k3')],
  ARRAY['a', 'b', 'c'], ARRAY[NULL, NULL, NULL], ARRAY['x', 'y', 'z']::bytea[], ARRAY[0, 3, 1],
  ARRAY[1, 2, 3]::bigint[], ARRAY[NULL, NULL, NULL]::bytea[], ARRAY[false, false, false], ARRAY[NULL, NULL, NULL]::bytea[]);
SELECT pg_temp.ok(array_agg(err ORDER BY ord) = ARRAY[3, 3, 0]::smallint[] AND array_agg(koffset ORDER BY ord) = ARRAY[NULL, NULL, 0]::bigint[],
                  'unknown topic / partition refused') FROM kp0;
SELECT pg_temp.ok(NOT EXISTS (SELECT 1 FROM queen.queues WHERE name = pg_temp.qn('nosuch')), 'produce creates no queue');
CREATE TEMP TABLE f2 AS SELECT * FROM queen.kafka_fetch('', pg_temp.qn('k3'), 2, 0, 1048576, 100);
SELECT pg_temp.ok_one(array_agg(key = 'order-42'::bytea AND value = 'v1'::bytea AND ts_ms = 1700000000000
                                AND headers = '\x01'::bytea), 'record 0') FROM f2 WHERE koffset = 0;
SELECT pg_temp.ok_one(array_agg(key = '\x00ff'::bytea AND value IS NULL AND ts_ms = 1700000000001),
                      'raw key, null value') FROM f2 WHERE koffset = 1;
-- a retried idempotent batch: duplicates answer the original offsets
CREATE TEMP TABLE kp2 AS SELECT * FROM queen.kafka_push('', ARRAY[pg_temp.qn('k3'), pg_temp.qn('k3')],
  ARRAY['order-42', '_kb64:AP8'], ARRAY['kafka:7:0:2:0', 'kafka:7:0:2:1'], ARRAY['v1', '']::bytea[],
  ARRAY[2, 2], ARRAY[1700000000000, 1700000000001]::bigint[], ARRAY[NULL, '\x00ff']::bytea[],
  ARRAY[false, true], ARRAY['\x01', NULL]::bytea[]);
SELECT pg_temp.ok(bool_and(duplicate) AND array_agg(koffset ORDER BY ord) = ARRAY[0, 1]::bigint[], 'dup offsets') FROM kp2;
SELECT pg_temp.ok(count(*) = 2, 'no new rows for duplicates') FROM queen.kafka_fetch('', pg_temp.qn('k3'), 2, 0, 1048576, 100);

-- fetch windows and errors
SELECT pg_temp.ok_one(array_agg(err = 0 AND koffset IS NULL AND hwm = 5), 'at hwm: nothing')
  FROM queen.kafka_fetch('', pg_temp.qn('k3'), 0, 5, 1048576, 100);
SELECT pg_temp.ok_one(array_agg(err = 1 AND koffset IS NULL), 'past hwm: out of range')
  FROM queen.kafka_fetch('', pg_temp.qn('k3'), 0, 6, 1048576, 100);
SELECT pg_temp.ok_one(array_agg(err = 1), 'negative: out of range')
  FROM queen.kafka_fetch('', pg_temp.qn('k3'), 0, -1, 1048576, 100);
SELECT pg_temp.ok_one(array_agg(err = 3), 'kpart 3 of 3') FROM queen.kafka_fetch('', pg_temp.qn('k3'), 3, 0, 1048576, 100);
SELECT pg_temp.ok_one(array_agg(err = 3), 'no topic') FROM queen.kafka_fetch('', pg_temp.qn('none'), 0, 0, 1048576, 100);
SELECT pg_temp.ok(array_agg(koffset ORDER BY koffset) = ARRAY[1, 2]::bigint[], 'from the middle, row limit')
  FROM queen.kafka_fetch('', pg_temp.qn('k3'), 0, 1, 1048576, 2);
SELECT pg_temp.ok_one(array_agg(koffset = 0), 'byte limit: the first record always')
  FROM queen.kafka_fetch('', pg_temp.qn('k3'), 0, 0, 1, 100);

-- ListOffsets
SELECT pg_temp.ok_one(array_agg(err = 0 AND koffset = 5 AND ts_ms = -1), 'latest') FROM queen.kafka_list_offset('', pg_temp.qn('k3'), 0, -1);
SELECT pg_temp.ok_one(array_agg(koffset = 0 AND ts_ms = -1), 'earliest') FROM queen.kafka_list_offset('', pg_temp.qn('k3'), 0, -2);
SELECT pg_temp.ok_one(array_agg(koffset = 1 AND ts_ms = 1700000000001), 'by time') FROM queen.kafka_list_offset('', pg_temp.qn('k3'), 2, 1700000000001);
SELECT pg_temp.ok_one(array_agg(koffset = 2 AND ts_ms = -1), 'after the last: hwm') FROM queen.kafka_list_offset('', pg_temp.qn('k3'), 2, 1800000000000);
SELECT pg_temp.ok_one(array_agg(err = 3), 'unknown') FROM queen.kafka_list_offset('', pg_temp.qn('none'), 0, -1);

-- Metadata: listing, auto-creation with the default count, a queue whose
-- Kafka view is off (named by Kafka, one message logged, then switched off)
SELECT count(*) FROM queen.kafka_topics('', ARRAY[pg_temp.qn('off')], true, 1);
SELECT count(*) FROM pg_temp.push1(pg_temp.qn('off'), NULL, NULL, '1');
UPDATE queen.queues SET kafka_partitions = 0 WHERE tenant = '' AND name = pg_temp.qn('off');
SELECT count(*) FROM pg_temp.push1(pg_temp.qn('off'), NULL, NULL, '2');
CREATE TEMP TABLE md AS SELECT t.* FROM queen.kafka_topics('', ARRAY[pg_temp.qn('k3'), pg_temp.qn('auto'), 'bad name',
  pg_temp.qn('off'), '__x'], true, 4) WITH ORDINALITY t(name, partitions, err, o);
SELECT pg_temp.ok(array_agg(err ORDER BY o) = ARRAY[0, 0, 17, 3, 17]::smallint[]
                  AND array_agg(partitions ORDER BY o) = ARRAY[3, 4, 0, 0, 0], 'metadata named') FROM md;
SELECT pg_temp.ok_one(array_agg(err = 3), 'no auto-create when not asked')
  FROM queen.kafka_topics('', ARRAY[pg_temp.qn('noauto')], false, 1);
SELECT pg_temp.ok(bool_and(err = 0) AND bool_and(partitions > 0)
                  AND array_agg(name ORDER BY name) @> ARRAY[pg_temp.qn('k3'), pg_temp.qn('auto')]
                  AND NOT array_agg(name) @> ARRAY[pg_temp.qn('off')], 'metadata all') FROM queen.kafka_topics('', NULL, false, 1);
-- the off queue has no log rows
SELECT pg_temp.ok(NOT EXISTS (SELECT 1 FROM queen.kafka_log l JOIN queen.queues q ON q.id = l.queue_id
                               WHERE q.name = pg_temp.qn('off') AND l.koffset > 0), 'view off: no new log rows');

-- a natively created queue: Kafka never named it (NULL), so pushes do no
-- Kafka work; consumer Metadata (no auto-creation), Fetch, ListOffsets,
-- CreateTopics (36) and DeleteTopics leave it so; Metadata allowing
-- auto-creation turns its view on with the default count, and its log
-- starts with the next push (dense from 0, the earlier message not in it)
SELECT count(*) FROM pg_temp.push1(pg_temp.qn('late'), 'a', NULL, 'before');
SELECT pg_temp.ok_one(array_agg(kafka_partitions IS NULL), 'native queue: never named')
  FROM queen.queues WHERE tenant = '' AND name = pg_temp.qn('late');
SELECT pg_temp.ok(NOT EXISTS (SELECT 1 FROM queen.kafka_log l JOIN queen.queues q ON q.id = l.queue_id
                               WHERE q.name = pg_temp.qn('late'))
                  AND NOT EXISTS (SELECT 1 FROM queen.kafka_partition_state s JOIN queen.queues q ON q.id = s.queue_id
                                   WHERE q.name = pg_temp.qn('late')), 'never named: no Kafka rows');
SELECT pg_temp.ok(NOT array_agg(name) @> ARRAY[pg_temp.qn('late')], 'never named: not listed')
  FROM queen.kafka_topics('', NULL, false, 1);
SELECT pg_temp.ok_one(array_agg(err = 3 AND partitions = 0), 'never named, no auto-create: unknown')
  FROM queen.kafka_topics('', ARRAY[pg_temp.qn('late')], false, 2);
SELECT pg_temp.ok_one(array_agg(err = 3), 'never named: fetch unknown')
  FROM queen.kafka_fetch('', pg_temp.qn('late'), 0, 0, 1048576, 100);
SELECT pg_temp.ok_one(array_agg(err = 3), 'never named: list offsets unknown')
  FROM queen.kafka_list_offset('', pg_temp.qn('late'), 0, -1);
SELECT pg_temp.ok(queen.kafka_create_topic('', pg_temp.qn('late'), 3, 1024, false) = 36, 'never named: exists');
SELECT pg_temp.ok(queen.kafka_delete_topic('', pg_temp.qn('late')) = 3, 'never named: delete unknown');
SELECT pg_temp.ok_one(array_agg(kafka_partitions IS NULL), 'still never named')
  FROM queen.queues WHERE tenant = '' AND name = pg_temp.qn('late');
SELECT pg_temp.ok_one(array_agg(err = 0 AND partitions = 2), 'first naming: default count')
  FROM queen.kafka_topics('', ARRAY[pg_temp.qn('late')], true, 2);
SELECT pg_temp.ok_one(array_agg(err = 0 AND partitions = 2), 'named again: unchanged')
  FROM queen.kafka_topics('', ARRAY[pg_temp.qn('late')], true, 5);
SELECT count(*) FROM pg_temp.push1(pg_temp.qn('late'), 'a', NULL, 'after1');
SELECT count(*) FROM pg_temp.push1(pg_temp.qn('late'), 'a', NULL, 'after2');
SELECT pg_temp.ok(array_agg(koffset ORDER BY koffset) = ARRAY[0, 1]::bigint[]
                  AND array_agg(convert_from(value, 'UTF8') ORDER BY koffset) = ARRAY['after1', 'after2'],
                  'log starts at the first naming')
  FROM queen.kafka_fetch('', pg_temp.qn('late'), queen.kafka_kpart('a', 2), 0, 1048576, 100) WHERE koffset IS NOT NULL;
SELECT pg_temp.ok(count(*) = 2, 'only the later messages logged') FROM queen.kafka_log l JOIN queen.queues q ON q.id = l.queue_id
 WHERE q.name = pg_temp.qn('late');
-- Produce names a never-named queue too: the default count, offsets from 0
SELECT count(*) FROM pg_temp.push1(pg_temp.qn('late2'), 'a', NULL, 'before');
CREATE TEMP TABLE kp3 AS SELECT * FROM queen.kafka_push('', ARRAY[pg_temp.qn('late2')], ARRAY['a'], ARRAY[NULL],
  ARRAY['v']::bytea[], ARRAY[0], ARRAY[1]::bigint[], ARRAY[NULL]::bytea[], ARRAY[false], ARRAY[NULL]::bytea[], 3);
SELECT pg_temp.ok_one(array_agg(err = 0 AND kpart = 0 AND koffset = 0), 'produce names the queue') FROM kp3;
SELECT pg_temp.ok_one(array_agg(kafka_partitions = 3), 'produce: default count')
  FROM queen.queues WHERE tenant = '' AND name = pg_temp.qn('late2');
-- a queue with its view off stays off when Kafka names it
SELECT pg_temp.ok_one(array_agg(err = 3), 'view off: produce refused')
  FROM queen.kafka_push('', ARRAY[pg_temp.qn('off')], ARRAY['a'], ARRAY[NULL], ARRAY['v']::bytea[], ARRAY[0],
                        ARRAY[1]::bigint[], ARRAY[NULL]::bytea[], ARRAY[false], ARRAY[NULL]::bytea[], 3);
SELECT pg_temp.ok_one(array_agg(kafka_partitions = 0), 'view off: unchanged')
  FROM queen.queues WHERE tenant = '' AND name = pg_temp.qn('off');

-- dense offsets across native partitions of one kpart, interleaved calls
-- (Kafka names the queue first: Metadata with auto-creation)
SELECT count(*) FROM queen.kafka_topics('', ARRAY[pg_temp.qn('one')], true, 1);
SELECT count(*) FROM pg_temp.push1(pg_temp.qn('one'), 'a', NULL, '1');
SELECT count(*) FROM pg_temp.push1(pg_temp.qn('one'), 'b', NULL, '2');
SELECT count(*) FROM queen.push('', ARRAY[pg_temp.qn('one'), pg_temp.qn('one'), pg_temp.qn('one')], ARRAY['c', 'a', 'c'],
                                ARRAY[NULL, NULL, NULL], ARRAY['3', '4', '5']::bytea[], ARRAY[NULL, NULL, NULL]::uuid[],
                                ARRAY[NULL, NULL, NULL], ARRAY[false, false, false], false);
SELECT pg_temp.ok(array_agg(koffset ORDER BY koffset) = ARRAY[0, 1, 2, 3, 4]::bigint[]
                  AND array_agg(convert_from(value, 'UTF8') ORDER BY koffset) = ARRAY['1', '2', '3', '4', '5']
                  AND array_agg(convert_from(key, 'UTF8') ORDER BY koffset) = ARRAY['a', 'b', 'c', 'a', 'c'],
                  'dense offsets in one kpart') FROM queen.kafka_fetch('', pg_temp.qn('one'), 0, 0, 1048576, 100);

-- the same rows for a native pop: Kafka-produced messages pop with their bytes
SELECT pg_temp.ok(array_agg(body ORDER BY seq) = ARRAY['v1'], 'native pop sees the Kafka message')
  FROM pg_temp.pop(pg_temp.qn('k3'), 'order-42', NULL, 10, 1, NULL) WHERE body LIKE 'v%';

-- DeleteTopics: the queue and its Kafka state go; unknown = 3
SELECT pg_temp.ok(queen.kafka_delete_topic('', pg_temp.qn('k3')) = 0, 'delete');
SELECT pg_temp.ok(queen.kafka_delete_topic('', pg_temp.qn('k3')) = 3, 'delete again');
SELECT pg_temp.ok_one(array_agg(err = 3), 'deleted topic unknown') FROM queen.kafka_fetch('', pg_temp.qn('k3'), 0, 0, 1048576, 100);
