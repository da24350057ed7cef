-- subscription modes of named groups (spec 2.8) and group backfill
\ir _lib.psql
SELECT FROM pg_temp.push1(pg_temp.qn('sub'), 'a', NULL, '"m1"');
SELECT FROM pg_temp.push1(pg_temp.qn('sub'), 'b', NULL, '"m2"');

-- all (default): existing messages of every partition
SELECT pg_temp.ok(array_agg(body ORDER BY seq) = ARRAY['"m1"', '"m2"'], 'all: both old messages')
  FROM queen.pop('', pg_temp.qn('sub'), NULL, 'gall', NULL, NULL, 10, 10, pg_temp.L(1), true)
       p(queue_name, partition_id, partition_name, seq, created_at, txn_id, trace_id, producer, payload, is_encrypted, lease_expires_at, next_due),
       LATERAL (SELECT convert_from(p.payload, 'UTF8') AS body) b;
-- new: nothing old; a first pop that finds nothing still fixes the start
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL) AND bool_and(next_due IS NULL), 'new: nothing old')
  FROM queen.pop('', pg_temp.qn('sub'), NULL, 'gnew', 'new', NULL, 10, 10, pg_temp.L(2), true);
SELECT pg_temp.ok(count(*) = 0, 'now: nothing old')
  FROM queen.pop('', pg_temp.qn('sub'), NULL, 'gnow', NULL, 'now', 10, 10, pg_temp.L(3), true) WHERE seq IS NOT NULL;
SELECT pg_temp.ok_one(array_agg(s.mode = 'new' AND s.partition_name = '' AND s.from_ts IS NOT NULL), 'new: subscription row (any partition)')
  FROM queen.subscriptions s WHERE s.group_id = pg_temp.gid(pg_temp.qn('sub'), 'gnew');
-- queue mode ignores subscription options
SELECT pg_temp.ok(count(*) = 2, 'queue mode ignores mode=new')
  FROM queen.pop('', pg_temp.qn('sub'), NULL, NULL, 'new', 'now', 10, 10, pg_temp.L(4), true) WHERE seq IS NOT NULL;

SELECT pg_sleep(0.01);
SELECT set_config('test.ts', clock_timestamp()::text, false) \g /dev/null
SELECT pg_sleep(0.01);
SELECT FROM pg_temp.push1(pg_temp.qn('sub'), 'a', NULL, '"m3"');
SELECT FROM pg_temp.push1(pg_temp.qn('sub'), 'c', NULL, '"m4"');

-- new groups see only later messages; later modes are ignored
SELECT pg_temp.ok(array_agg(convert_from(payload, 'UTF8') ORDER BY seq) = ARRAY['"m3"', '"m4"'], 'new: later messages only')
  FROM queen.pop('', pg_temp.qn('sub'), NULL, 'gnew', 'all', NULL, 10, 10, pg_temp.L(5), true) WHERE seq IS NOT NULL;
SELECT pg_temp.ok(count(*) = 2, 'now: later messages only')
  FROM queen.pop('', pg_temp.qn('sub'), NULL, 'gnow', NULL, NULL, 10, 10, pg_temp.L(6), true) WHERE seq IS NOT NULL;
-- timestamp: messages created at or after it, across partitions (old partitions a, b; new c)
SELECT pg_temp.ok(array_agg(convert_from(payload, 'UTF8') ORDER BY seq) = ARRAY['"m3"', '"m4"'], 'timestamp: from the instant')
  FROM queen.pop('', pg_temp.qn('sub'), NULL, 'gts', NULL, current_setting('test.ts'), 10, 10, pg_temp.L(7), true) WHERE seq IS NOT NULL;
SELECT pg_temp.ok_one(array_agg(s.mode = 'timestamp' AND s.from_ts = current_setting('test.ts')::timestamptz), 'timestamp: subscription row')
  FROM queen.subscriptions s WHERE s.group_id = pg_temp.gid(pg_temp.qn('sub'), 'gts');
-- a timestamp before everything = all; unparsable = all
SELECT pg_temp.ok(count(*) = 4, 'old timestamp: all')
  FROM queen.pop('', pg_temp.qn('sub'), NULL, 'gold', NULL, '2000-01-01T00:00:00Z', 10, 10, pg_temp.L(8), true) WHERE seq IS NOT NULL;
SELECT pg_temp.ok(count(*) = 4, 'unparsable timestamp: all')
  FROM queen.pop('', pg_temp.qn('sub'), NULL, 'gbad', NULL, 'not a time', 10, 10, pg_temp.L(9), true) WHERE seq IS NOT NULL;
SELECT pg_temp.ok(count(*) = 4, 'unknown mode: all')
  FROM queen.pop('', pg_temp.qn('sub'), NULL, 'gunk', 'from_beginning', NULL, 10, 10, pg_temp.L(10), true) WHERE seq IS NOT NULL;
-- partition route stores a partition-specific row
SELECT FROM queen.pop('', pg_temp.qn('sub'), 'a', 'gpart', 'new', NULL, 10, 1, pg_temp.L(11), true);
SELECT pg_temp.ok_one(array_agg(s.partition_name = 'a' AND s.mode = 'new'), 'partition route: row for that partition')
  FROM queen.subscriptions s WHERE s.group_id = pg_temp.gid(pg_temp.qn('sub'), 'gpart');

-- backfill continuation: a group whose backfill stopped half-way picks up the rest on its next pops
SELECT pg_temp.pushn(pg_temp.qn('bf'), 'p' || k, 2) FROM generate_series(1, 3) k;
SELECT FROM queen.pop('', pg_temp.qn('bf'), NULL, 'gb', NULL, NULL, 1, 1, pg_temp.L(12), false);
-- pretend the creating pop only got through the first partition
DELETE FROM queen.ready r WHERE r.group_id = pg_temp.gid(pg_temp.qn('bf'), 'gb') AND r.lease_id IS NULL;
UPDATE queen.consumer_groups SET backfill_pos = (SELECT min(r.partition_id) FROM queen.ready r WHERE r.group_id = id)
 WHERE id = pg_temp.gid(pg_temp.qn('bf'), 'gb');
SELECT pg_temp.ok(count(*) = 4 AND count(DISTINCT partition_id) = 2, 'backfill continued on the next pop')
  FROM queen.pop('', pg_temp.qn('bf'), NULL, 'gb', NULL, NULL, 10, 10, pg_temp.L(13), false) WHERE seq IS NOT NULL;
SELECT pg_temp.ok_one(array_agg(backfill_pos IS NULL), 'backfill done') FROM queen.consumer_groups WHERE id = pg_temp.gid(pg_temp.qn('bf'), 'gb');
