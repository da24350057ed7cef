-- Kafka idempotent producer (schema/functions/60_kafka.sql queen.kafka_push,
-- spec kafka.md §6.5): producer ids from the sequence, a first batch with any
-- base sequence accepted, a retried batch (one of the 5 recent) answered with
-- error 0 and its original offsets and not stored twice, a gap answered 45
-- and not stored, an older epoch 47, a newer epoch accepted, wrap-around at
-- 2^31 - 1, the state per (producer, queue, kpart), and non-idempotent
-- records never deduplicated.
\ir _lib.psql

-- one idempotent batch of n records (values v<base+i>) to kpart k of queue q;
-- answers the first record's row (err, duplicate, koffset)
CREATE FUNCTION pg_temp.kb(q text, k int, pid bigint, ep int, base int, n int)
RETURNS TABLE(err smallint, duplicate bool, koffset bigint) LANGUAGE sql AS $$
  SELECT r.err, r.duplicate, r.koffset
    FROM queen.kafka_push('', array_fill(q, ARRAY[n]), array_fill('e'::text, ARRAY[n]),
           ARRAY(SELECT 'kafka:' || pid || ':' || ep || ':' || k || ':' || ((base::bigint + i) % 2147483648)
                   FROM generate_series(0, n - 1) i),
           ARRAY(SELECT convert_to('v' || ((base::bigint + i) % 2147483648), 'UTF8') FROM generate_series(0, n - 1) i),
           array_fill(k, ARRAY[n]), array_fill(NULL::bigint, ARRAY[n]), array_fill(NULL::bytea, ARRAY[n]),
           array_fill(false, ARRAY[n]), array_fill(NULL::bytea, ARRAY[n]), 1,
           array_fill(pid, ARRAY[n]), array_fill(ep, ARRAY[n]), array_fill(base, ARRAY[n]),
           array_fill(((base::bigint + n - 1) % 2147483648)::int, ARRAY[n])) r
   ORDER BY r.ord LIMIT 1 $$;

-- the high watermark of kpart k of q
CREATE FUNCTION pg_temp.hwm(q text, k int) RETURNS bigint LANGUAGE sql AS $$
  SELECT s.next_offset FROM queen.kafka_partition_state s JOIN queen.queues qq ON qq.id = s.queue_id
   WHERE qq.name = q AND s.kpart = k $$;

SELECT pg_temp.ok(queen.kafka_create_topic('', pg_temp.qn('ki'), 2, 1024, false) = 0, 'create ki');
SELECT pg_temp.ok(queen.kafka_init_producer() >= 1000, 'producer ids start at 1000');
SELECT set_config('test.pid', queen.kafka_init_producer()::text, false);
SELECT pg_temp.ok(queen.kafka_init_producer() > current_setting('test.pid')::bigint, 'producer ids increase');

-- first batch: any base sequence (here 5), 3 records at offsets 0..2
SELECT pg_temp.ok_one(array_agg(err = 0 AND NOT duplicate AND koffset = 0), 'first batch accepted')
  FROM pg_temp.kb(pg_temp.qn('ki'), 0, current_setting('test.pid')::bigint, 0, 5, 3);
-- next batch 8..9
SELECT pg_temp.ok_one(array_agg(err = 0 AND NOT duplicate AND koffset = 3), 'next batch accepted')
  FROM pg_temp.kb(pg_temp.qn('ki'), 0, current_setting('test.pid')::bigint, 0, 8, 2);
SELECT pg_temp.ok(pg_temp.hwm(pg_temp.qn('ki'), 0) = 5, 'five records stored');

-- a retry of the first batch: error 0, its original offset, nothing stored
SELECT pg_temp.ok_one(array_agg(err = 0 AND duplicate AND koffset = 0), 'retried batch: original offset')
  FROM pg_temp.kb(pg_temp.qn('ki'), 0, current_setting('test.pid')::bigint, 0, 5, 3);
SELECT pg_temp.ok_one(array_agg(err = 0 AND duplicate AND koffset = 3), 'retried last batch: original offset')
  FROM pg_temp.kb(pg_temp.qn('ki'), 0, current_setting('test.pid')::bigint, 0, 8, 2);
SELECT pg_temp.ok(pg_temp.hwm(pg_temp.qn('ki'), 0) = 5, 'retries not stored');
SELECT pg_temp.ok_count(array_agg(true), 5, 'five messages in the native partition')
  FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
  JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = pg_temp.qn('ki');

-- a gap (expected 10, got 12): 45, nothing stored; a partial overlap (9..10): 45
SELECT pg_temp.ok_one(array_agg(err = 45 AND koffset IS NULL), 'gap: out of order')
  FROM pg_temp.kb(pg_temp.qn('ki'), 0, current_setting('test.pid')::bigint, 0, 12, 1);
SELECT pg_temp.ok_one(array_agg(err = 45), 'overlap: out of order')
  FROM pg_temp.kb(pg_temp.qn('ki'), 0, current_setting('test.pid')::bigint, 0, 9, 2);
SELECT pg_temp.ok(pg_temp.hwm(pg_temp.qn('ki'), 0) = 5, 'rejected batches not stored');
-- the expected one still goes in
SELECT pg_temp.ok_one(array_agg(err = 0 AND NOT duplicate AND koffset = 5), 'in-order batch after a gap')
  FROM pg_temp.kb(pg_temp.qn('ki'), 0, current_setting('test.pid')::bigint, 0, 10, 1);

-- the state is per kpart: kpart 1 starts fresh with any sequence
SELECT pg_temp.ok_one(array_agg(err = 0 AND koffset = 0), 'other kpart: own sequence')
  FROM pg_temp.kb(pg_temp.qn('ki'), 1, current_setting('test.pid')::bigint, 0, 0, 1);

-- the recent list keeps 5 batches: after 5 more, the batch at base 10 is forgotten (45)
SELECT count(*) FROM generate_series(11, 15) b,
  LATERAL pg_temp.kb(pg_temp.qn('ki'), 0, current_setting('test.pid')::bigint, 0, b, 1) r WHERE r.err = 0;
SELECT pg_temp.ok_one(array_agg(array_length(recent, 1) = 15 AND last_sequence = 15), 'five recent batches kept')
  FROM queen.kafka_producer_state WHERE producer_id = current_setting('test.pid')::bigint AND kpart = 0;
SELECT pg_temp.ok_one(array_agg(err = 0 AND duplicate AND koffset = 10), 'fifth-last batch still a retry')
  FROM pg_temp.kb(pg_temp.qn('ki'), 0, current_setting('test.pid')::bigint, 0, 15, 1);
SELECT pg_temp.ok_one(array_agg(err = 45), 'sixth-last batch forgotten')
  FROM pg_temp.kb(pg_temp.qn('ki'), 0, current_setting('test.pid')::bigint, 0, 10, 1);

-- epochs: an older one 47; a newer one accepted with any sequence
SELECT pg_temp.ok_one(array_agg(err = 0 AND koffset = 11), 'newer epoch accepted')
  FROM pg_temp.kb(pg_temp.qn('ki'), 0, current_setting('test.pid')::bigint, 1, 0, 1);
SELECT pg_temp.ok_one(array_agg(err = 47), 'older epoch refused')
  FROM pg_temp.kb(pg_temp.qn('ki'), 0, current_setting('test.pid')::bigint, 0, 16, 1);
SELECT pg_temp.ok(pg_temp.hwm(pg_temp.qn('ki'), 0) = 12, 'offsets dense: 12 records');

-- wrap-around: 2^31 - 2 .. 2^31 - 1, then 0
SELECT set_config('test.pid2', queen.kafka_init_producer()::text, false);
SELECT pg_temp.ok_one(array_agg(err = 0), 'batch ending at 2^31 - 1')
  FROM pg_temp.kb(pg_temp.qn('ki'), 1, current_setting('test.pid2')::bigint, 0, 2147483646, 2);
SELECT pg_temp.ok_one(array_agg(err = 0 AND NOT duplicate), 'sequence wraps to 0')
  FROM pg_temp.kb(pg_temp.qn('ki'), 1, current_setting('test.pid2')::bigint, 0, 0, 1);
SELECT pg_temp.ok_one(array_agg(err = 45), 'after the wrap, 2^31 - 1 is no successor')
  FROM pg_temp.kb(pg_temp.qn('ki'), 1, current_setting('test.pid2')::bigint, 0, 2147483647, 1);

-- non-idempotent records (producer -1) are never deduplicated
SELECT pg_temp.ok(
  (SELECT count(*) FROM queen.kafka_push('', ARRAY[pg_temp.qn('ki'), pg_temp.qn('ki')], ARRAY['e', 'e'],
     ARRAY[NULL, NULL]::text[], ARRAY['x'::bytea, 'x'::bytea], ARRAY[1, 1], ARRAY[NULL, NULL]::bigint[],
     ARRAY[NULL, NULL]::bytea[], ARRAY[false, false], ARRAY[NULL, NULL]::bytea[], 1,
     ARRAY[-1, -1]::bigint[], ARRAY[-1, -1], ARRAY[-1, -1], ARRAY[-1, -1]) r
    WHERE r.err = 0 AND NOT r.duplicate) = 2, 'non-idempotent records both stored');

-- a request with a retried and a new batch on two kparts: each answered on its own
SELECT pg_temp.ok(
  (SELECT array_agg(r.err || ':' || r.duplicate || ':' || r.koffset ORDER BY r.ord)
     FROM queen.kafka_push('', ARRAY[pg_temp.qn('ki'), pg_temp.qn('ki')], ARRAY['e', 'e'],
       ARRAY['kafka:' || current_setting('test.pid') || ':1:0:0', 'x:new']::text[],
       ARRAY['v0'::bytea, 'n'::bytea], ARRAY[0, 1], ARRAY[NULL, NULL]::bigint[],
       ARRAY[NULL, NULL]::bytea[], ARRAY[false, false], ARRAY[NULL, NULL]::bytea[], 1,
       ARRAY[current_setting('test.pid')::bigint, current_setting('test.pid2')::bigint], ARRAY[1, 0],
       ARRAY[0, 1], ARRAY[0, 1]) r)
  = ARRAY['0:true:11', '0:false:6'], 'mixed request');
