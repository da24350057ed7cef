-- push: dedup (spec 2.3), order, created_at, partitions, strict mode
\ir _lib.psql

-- duplicates within one call: first wins, later ones return its seq
CREATE TEMP TABLE p1 AS
  SELECT * FROM queen.push('', ARRAY[pg_temp.qn('dd'), pg_temp.qn('dd'), pg_temp.qn('dd'), pg_temp.qn('dd'), pg_temp.qn('dd')],
                           ARRAY['a', 'a', 'b', 'a', NULL],
                           ARRAY['k1', 'k1', 'k1', 'k2', 'k1'],
                           ARRAY['1', '2', '3', '4', '5']::bytea[], ARRAY[NULL, NULL, NULL, NULL, NULL]::uuid[],
                           ARRAY[NULL, 'prod', NULL, NULL, NULL], ARRAY[false, true, false, false, false], false);
SELECT pg_temp.ok(array_agg(duplicate ORDER BY ord) = ARRAY[false, true, false, false, false], 'in-call dup flags') FROM p1;
SELECT pg_temp.ok((SELECT seq FROM p1 WHERE ord = 2) = (SELECT seq FROM p1 WHERE ord = 1), 'dup returns first seq');
SELECT pg_temp.ok((SELECT seq FROM p1 WHERE ord = 3) <> (SELECT seq FROM p1 WHERE ord = 1), 'other partition is not a dup');
SELECT pg_temp.ok((SELECT partition_id FROM p1 WHERE ord = 3) <> (SELECT partition_id FROM p1 WHERE ord = 1), 'partition auto-created');
SELECT pg_temp.ok_one(array_agg(p.name = 'Default'), 'NULL partition = Default') FROM p1 JOIN queen.partitions p ON p.id = p1.partition_id WHERE ord = 5;
SELECT pg_temp.ok(count(*) = 4, '4 messages stored')
  FROM queen.messages m WHERE m.partition_id IN (SELECT partition_id FROM p1);
SELECT pg_temp.ok(count(DISTINCT created_at) = 1, 'one created_at per call')
  FROM queen.messages m WHERE m.partition_id IN (SELECT partition_id FROM p1);
SELECT pg_temp.ok_one(array_agg(seq < (SELECT seq FROM p1 WHERE ord = 3) AND (SELECT seq FROM p1 WHERE ord = 3) < (SELECT seq FROM p1 WHERE ord = 4)), 'seq in input order')
  FROM p1 WHERE ord = 1;
SELECT pg_temp.ok_one(array_agg(m.payload = '1' AND m.producer IS NULL AND NOT m.is_encrypted AND m.txn_id = 'k1'), 'first item stored')
  FROM p1 JOIN queen.messages m ON m.seq = p1.seq WHERE ord = 1;
-- no consumer yet: no ready rows; the first queue mode pop creates the group
-- and backfills one ready row per partition with messages
SELECT pg_temp.ok(count(*) = 0, 'no ready rows without a group')
  FROM queen.ready r WHERE r.partition_id IN (SELECT partition_id FROM p1);
SELECT pg_temp.ok(count(*) = 1, 'first queue mode pop delivers')
  FROM pg_temp.pop(pg_temp.qn('dd'), NULL, NULL, 1, 1, NULL) WHERE seq IS NOT NULL;
SELECT pg_temp.ok(count(*) = 3, 'ready rows for 3 partitions')
  FROM queen.ready r WHERE r.partition_id IN (SELECT partition_id FROM p1)
   AND r.group_id = pg_temp.gid(pg_temp.qn('dd'), '__QUEUE_MODE__');

-- across calls
CREATE TEMP TABLE p2 AS SELECT * FROM pg_temp.push1(pg_temp.qn('dd'), 'a', 'k1', '"again"');
SELECT pg_temp.ok_one(array_agg(p2.duplicate AND p2.seq = p1.seq), 'cross-call dup') FROM p1, p2 WHERE p1.ord = 1;
-- no txn id: never a duplicate; empty string counts as none
CREATE TEMP TABLE p3 AS
  SELECT * FROM queen.push('', ARRAY[pg_temp.qn('dd'), pg_temp.qn('dd'), pg_temp.qn('dd')], ARRAY['a', 'a', 'a'],
                           ARRAY[NULL, NULL, ''], ARRAY['x', 'x', 'x']::bytea[], ARRAY[NULL, NULL, NULL]::uuid[],
                           ARRAY[NULL, NULL, NULL], ARRAY[false, false, false], false);
SELECT pg_temp.ok(bool_and(NOT duplicate) AND count(DISTINCT seq) = 3, 'NULL/empty txn never dedups') FROM p3;
SELECT pg_temp.ok_count(array_agg(m.txn_id IS NULL), 3, 'NULL stored') FROM p3 JOIN queen.messages m ON m.seq = p3.seq;
-- other queue same partition name and key: different message
SELECT pg_temp.ok_one(array_agg(NOT duplicate), 'other queue not a dup') FROM pg_temp.push1(pg_temp.qn('dd2'), 'a', 'k1', '1');

-- strict: a duplicate raises 23505 naming key and partition, DETAIL op=push:<ord>
DO $$
BEGIN
  PERFORM queen.push('', ARRAY[pg_temp.qn('dd'), pg_temp.qn('dd')], ARRAY['z', 'a'], ARRAY['new1', 'k1'],
                     ARRAY['1', '2']::bytea[], ARRAY[NULL, NULL]::uuid[], ARRAY[NULL, NULL],
                     ARRAY[false, false], true);
  RAISE EXCEPTION 'ASSERTION FAILED: strict duplicate accepted';
EXCEPTION WHEN unique_violation THEN
  DECLARE d text;
  BEGIN
    GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
    PERFORM pg_temp.ok(SQLERRM = 'duplicate transactionId k1 in partition a', 'strict message: ' || SQLERRM);
    PERFORM pg_temp.ok(d = 'op=push:2', 'strict detail: ' || d);
  END;
END $$;
SELECT pg_temp.ok(count(*) = 0, 'strict failure rolled back') FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = pg_temp.qn('dd') AND p.name = 'z';
DO $$
BEGIN
  PERFORM queen.push('', ARRAY[pg_temp.qn('dd'), pg_temp.qn('dd')], ARRAY['z', 'z'], ARRAY['s1', 's1'],
                     ARRAY['1', '2']::bytea[], ARRAY[NULL, NULL]::uuid[], ARRAY[NULL, NULL],
                     ARRAY[false, false], true);
  RAISE EXCEPTION 'ASSERTION FAILED: strict in-call duplicate accepted';
EXCEPTION WHEN unique_violation THEN
END $$;

-- FIFO: 1000 items in one call, then 10 calls of 100, strictly increasing seq in input order
CREATE TEMP TABLE f AS SELECT unnest(pg_temp.pushn(pg_temp.qn('fifo'), 'p', 1000)) AS seq;
SELECT pg_temp.ok(count(*) = 1000, '1000 pushed') FROM f;
SELECT pg_temp.ok(bool_and(m.payload = convert_to('{"i":' || k || '}', 'UTF8')), 'payload order = seq order')
  FROM (SELECT m.payload, row_number() OVER (ORDER BY m.seq) AS k
          FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
          JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = pg_temp.qn('fifo')) m;
SELECT pg_temp.pushn(pg_temp.qn('fifo'), 'p', 100 + 0 * i) FROM generate_series(1, 10) i;
CREATE TEMP TABLE fifo_pop AS SELECT * FROM pg_temp.pop(pg_temp.qn('fifo'), 'p', NULL, 5000, 1, gen_random_uuid());
SELECT pg_temp.ok(count(*) = 2000, 'pop returns all 2000') FROM fifo_pop;
SELECT pg_temp.ok(bool_and(prev IS NULL OR (seq > prev AND created_at >= prevc)), 'pop order = seq order, created_at nondecreasing')
  FROM (SELECT seq, created_at, lag(seq) OVER (ORDER BY seq) prev, lag(created_at) OVER (ORDER BY seq) prevc FROM fifo_pop) x;
SELECT pg_temp.ok(array_agg(convert_from(m.payload, 'UTF8') ORDER BY m.seq)
                  = ARRAY(SELECT '{"i":' || k || '}' FROM generate_series(1, 1000) k)
                    || ARRAY(SELECT '{"i":' || k || '}' FROM generate_series(1, 10), generate_series(1, 100) k),
                  'delivery order = push order')
  FROM fifo_pop JOIN queen.messages m ON m.seq = fifo_pop.seq;

-- trace id, producer, encrypted flag round-trip through pop
SELECT FROM queen.push('', ARRAY[pg_temp.qn('meta')], ARRAY['p'], ARRAY['t'], ARRAY['{"x":1}']::bytea[],
                       ARRAY['11111111-2222-4333-8444-555555555555']::uuid[], ARRAY['alice'], ARRAY[true], false);
SELECT pg_temp.ok_one(array_agg(trace_id = '11111111-2222-4333-8444-555555555555' AND producer = 'alice' AND is_encrypted
                  AND txn_id = 't' AND convert_from(payload, 'UTF8') = '{"x":1}'), 'metadata round-trip')
  FROM queen.pop('', pg_temp.qn('meta'), NULL, NULL, NULL, NULL, 1, 1, gen_random_uuid(), false);

-- empty call
SELECT pg_temp.ok(count(*) = 0, 'empty push') FROM queen.push('', '{}', '{}', '{}', '{}', '{}', '{}', '{}', false);
