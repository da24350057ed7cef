-- pop: count rule (spec 3.7 point 3), partitions, unknown names, ordering
\ir _lib.psql

-- 4 partitions x 5 messages
SELECT pg_temp.pushn(pg_temp.qn('cnt'), 'p' || k, 5) FROM generate_series(1, 4) k;

-- batch 100, partitions 1 -> exactly 5, one partition
CREATE TEMP TABLE a AS SELECT * FROM pg_temp.pop(pg_temp.qn('cnt'), NULL, NULL, 100, 1, gen_random_uuid());
SELECT pg_temp.ok(count(*) = 5 AND count(DISTINCT partition_id) = 1, 'max_partitions 1 -> 5 from one partition') FROM a;
SELECT pg_temp.ok(bool_and(lease_expires_at > now() + interval '290 s') AND bool_and(next_due IS NULL)
                  AND bool_and(queue_name = pg_temp.qn('cnt')), 'lease = leaseTime 300 s') FROM a;

-- a named group with partitions 4 -> all 20, rows ordered by (partition, seq)
CREATE TEMP TABLE b AS SELECT * FROM pg_temp.pop(pg_temp.qn('cnt'), NULL, 'g4', 100, 4, gen_random_uuid());
SELECT pg_temp.ok(count(*) = 20 AND count(DISTINCT partition_id) = 4, 'max_partitions 4 -> 20') FROM b;
SELECT pg_temp.ok(array_agg(seq) = array_agg(seq ORDER BY partition_id, seq), 'ordered by (partition, seq)') FROM b;

-- global batch cap across partitions: batch 7, partitions 4 -> exactly 7 (5 + 2)
CREATE TEMP TABLE c AS SELECT * FROM pg_temp.pop(pg_temp.qn('cnt'), NULL, 'g7', 7, 4, gen_random_uuid());
SELECT pg_temp.ok(count(*) = 7, 'batch is a global cap: 7') FROM c;
SELECT pg_temp.ok(count(DISTINCT partition_id) = 2, 'only partitions with delivered messages are leased') FROM c;
SELECT pg_temp.ok(count(*) = 2, 'two leases for g7')
  FROM queen.ready r WHERE r.group_id = pg_temp.gid(pg_temp.qn('cnt'), 'g7') AND r.lease_id IS NOT NULL;
-- the partially read partition continues where the lease left off after release
SELECT pg_temp.ok(min(x.n) = 2 AND max(x.n) = 5, 'per-partition batch sizes 5 and 2')
  FROM (SELECT partition_id, count(*) n FROM c GROUP BY 1) x;
SELECT pg_temp.ok(sum(r.batch_size) = 7 AND bool_and(r.acked_count = 0), 'batch_size recorded per partition')
  FROM queen.ready r WHERE r.group_id = pg_temp.gid(pg_temp.qn('cnt'), 'g7') AND r.lease_id IS NOT NULL;

-- batch 1 default-like; batch < 1 treated as 1
SELECT pg_temp.ok(count(*) = 1, 'batch 0 -> 1') FROM pg_temp.pop(pg_temp.qn('cnt'), NULL, 'g1', 0, 0, gen_random_uuid());

-- partition-specific pop: min(batch, deliverable)
SELECT pg_temp.pushn(pg_temp.qn('one'), 'only', 100);
SELECT pg_temp.ok(count(*) = 100, 'specific partition 100/100')
  FROM pg_temp.pop(pg_temp.qn('one'), 'only', NULL, 100, 5, gen_random_uuid());
SELECT pg_temp.pushn(pg_temp.qn('one'), 'other', 3);
SELECT pg_temp.ok(count(*) = 3 AND min(partition_name) = 'other', 'specific partition ignores others')
  FROM pg_temp.pop(pg_temp.qn('one'), 'other', 'gx', 100, 5, gen_random_uuid());

-- unknown queue / unknown partition: exactly one empty row, next_due NULL, nothing created
CREATE TEMP TABLE u1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('nosuch'), NULL, 'g', 10, 1, gen_random_uuid());
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL AND partition_id IS NULL AND next_due IS NULL), 'unknown queue') FROM u1;
CREATE TEMP TABLE u2 AS SELECT * FROM pg_temp.pop(pg_temp.qn('one'), 'nosuch', 'gnew', 10, 1, gen_random_uuid());
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL AND next_due IS NULL), 'unknown partition') FROM u2;
SELECT pg_temp.ok(count(*) = 0, 'pop created no queue') FROM queen.queues WHERE name = pg_temp.qn('nosuch');
SELECT pg_temp.ok(count(*) = 0, 'pop created no partition') FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = pg_temp.qn('one') AND p.name = 'nosuch';
SELECT pg_temp.ok(pg_temp.gid(pg_temp.qn('one'), 'gnew') IS NULL, 'no group for an unknown partition');

-- empty queue with nothing pending: one row, next_due NULL
SELECT queen.configure('', pg_temp.qn('empty'), NULL, NULL, NULL);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL AND next_due IS NULL), 'empty queue')
  FROM pg_temp.pop(pg_temp.qn('empty'), NULL, NULL, 10, 1, gen_random_uuid());

-- stale ready rows are cleaned (moved to cursors) by a claim that finds nothing
SELECT pg_temp.pushn(pg_temp.qn('stale'), 'p', 2);
CREATE TEMP TABLE s1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('stale'), NULL, NULL, 10, 1, gen_random_uuid());
-- simulate a stale row: acks moved the cursor while the row kept no lease
UPDATE queen.ready r SET acked_seq = (SELECT max(seq) FROM s1), lease_id = NULL, avail_at = now() - interval '1 s'
 WHERE r.partition_id = (SELECT min(partition_id) FROM s1);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'stale claim -> empty')
  FROM pg_temp.pop(pg_temp.qn('stale'), NULL, NULL, 10, 1, gen_random_uuid());
SELECT pg_temp.ok(NOT EXISTS (SELECT 1 FROM queen.ready WHERE partition_id = (SELECT min(partition_id) FROM s1)), 'stale row deleted');
SELECT pg_temp.ok_one(array_agg(c.acked_seq = (SELECT max(seq) FROM s1)), 'cursor kept in cursors')
  FROM queen.cursors c WHERE c.partition_id = (SELECT min(partition_id) FROM s1);
-- and the next push re-creates the ready row from that cursor
SELECT pg_temp.pushn(pg_temp.qn('stale'), 'p', 1);
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '{"i":1}' AND min(seq) > (SELECT max(seq) FROM s1), 'resumes after the cursor')
  FROM pg_temp.pop(pg_temp.qn('stale'), NULL, NULL, 10, 1, gen_random_uuid());

-- max_partitions 1 skips a claimed partition without deliverable messages
SELECT pg_temp.pushn(pg_temp.qn('skip'), 'a', 1);
SELECT pg_temp.pushn(pg_temp.qn('skip'), 'b', 3);
CREATE TEMP TABLE s2 AS SELECT * FROM pg_temp.pop(pg_temp.qn('skip'), 'a', NULL, 10, 1, gen_random_uuid());
UPDATE queen.ready r SET acked_seq = (SELECT max(seq) FROM s2), lease_id = NULL, avail_at = now() - interval '1 h'
 WHERE r.partition_id = (SELECT min(partition_id) FROM s2);
SELECT pg_temp.ok(count(*) = 3 AND min(partition_name) = 'b', 'first claimed partition empty -> next one served')
  FROM pg_temp.pop(pg_temp.qn('skip'), NULL, NULL, 10, 1, gen_random_uuid());
