-- A pop leases its claimed partitions by primary-key probes: it does not
-- read the other ready rows of the group. Timing-free: the tuples queen.ready
-- hands to index scans in this transaction (pg_stat_xact_user_tables) are
-- counted around one pop of one partition, in a group with 3,000 ready rows.
-- Before the fix, the generic plan of the lease update, made while ready was
-- small, read every row of the group through ready_claim (group_id alone).
\ir _lib.psql
CREATE FUNCTION pg_temp.fetched() RETURNS bigint LANGUAGE sql AS $$
  SELECT COALESCE(s.idx_tup_fetch, 0) + COALESCE(s.seq_tup_read, 0) FROM pg_stat_xact_user_tables s
   WHERE s.schemaname = 'queen' AND s.relname = 'ready' $$;
-- first, a pop in this session while the group has a single ready row: the
-- generic plans of queen.pop are made now, on the table as it is
SELECT pg_temp.pushn(pg_temp.qn('lp0'), 'p', 1);
SELECT count(*) FROM queen.pop('', pg_temp.qn('lp0'), NULL, 'g', NULL, NULL, 1, 1, gen_random_uuid(), false);
BEGIN;
SELECT count(*) FROM queen.push('', array_fill(pg_temp.qn('lp'), ARRAY[3000]),
  (SELECT array_agg('p' || i ORDER BY i) FROM generate_series(1, 3000) i),
  array_fill(NULL::text, ARRAY[3000]), array_fill(convert_to('{"n":1}', 'UTF8'), ARRAY[3000]),
  array_fill(NULL::uuid, ARRAY[3000]), array_fill(NULL::text, ARRAY[3000]), array_fill(false, ARRAY[3000]), false);
-- the group and its 3,000 ready rows (backfill of a new group)
SELECT count(*) FROM queen.pop('', pg_temp.qn('lp'), 'p1', 'g', NULL, NULL, 1, 1, gen_random_uuid(), false);
SELECT pg_temp.ok(count(*) = 3000, 'fixture: 3,000 ready rows in the group')
  FROM queen.ready WHERE group_id = pg_temp.gid(pg_temp.qn('lp'), 'g');
SELECT set_config('test.f0', pg_temp.fetched()::text, true) \g /dev/null
SELECT pg_temp.ok(count(*) = 1, 'one message of one partition')
  FROM queen.pop('', pg_temp.qn('lp'), 'p2', 'g', NULL, NULL, 1, 1, gen_random_uuid(), false) WHERE seq IS NOT NULL;
SELECT pg_temp.ok(pg_temp.fetched() - current_setting('test.f0')::bigint < 100,
                  format('a pop of one partition reads few ready rows, not the group''s (%s)',
                         pg_temp.fetched() - current_setting('test.f0')::bigint));
COMMIT;
