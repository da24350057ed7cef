-- leases (spec 2.5, 2.6, 3.13): exclusivity, expiry, auto-release, renew
\ir _lib.psql
SELECT queen.configure('', pg_temp.qn('ls'), NULL, NULL, '{"leaseTime": 1}');
SELECT pg_temp.pushn(pg_temp.qn('ls'), 'p', 5);

-- exclusivity: a second pop of the same group gets nothing, with next_due = lease expiry
CREATE TEMP TABLE a AS SELECT * FROM pg_temp.pop(pg_temp.qn('ls'), NULL, NULL, 3, 1, pg_temp.L(1));
SELECT pg_temp.ok(count(*) = 3 AND array_agg(body ORDER BY seq) = ARRAY['{"i":1}', '{"i":2}', '{"i":3}'], 'first 3') FROM a;
CREATE TEMP TABLE a2 AS SELECT * FROM pg_temp.pop(pg_temp.qn('ls'), NULL, NULL, 3, 1, gen_random_uuid());
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'same group: nothing while leased') FROM a2;
SELECT pg_temp.ok_one(array_agg(a2.next_due = (SELECT max(lease_expires_at) FROM a)), 'next_due = lease expiry') FROM a2;
CREATE TEMP TABLE a3 AS SELECT * FROM pg_temp.pop(pg_temp.qn('ls'), 'p', NULL, 3, 1, gen_random_uuid());
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL) AND bool_and(next_due IS NOT NULL), 'partition route: nothing while leased') FROM a3;
-- other group gets everything
SELECT pg_temp.ok(count(*) = 5, 'other group unaffected')
  FROM pg_temp.pop(pg_temp.qn('ls'), NULL, 'other', 10, 1, gen_random_uuid());

-- ack the first, let the lease expire: the rest comes back in order (expiry is not a retry)
SELECT pg_temp.ok_one(array_agg(success AND NOT lease_released), 'partial ack keeps the lease')
  FROM pg_temp.ack1(NULL, (SELECT min(partition_id) FROM a), (SELECT min(seq) FROM a), 'completed',
                    pg_temp.L(1), NULL);
SELECT pg_sleep(1.1);
CREATE TEMP TABLE b AS SELECT * FROM pg_temp.pop(pg_temp.qn('ls'), NULL, NULL, 10, 1, pg_temp.L(2));
SELECT pg_temp.ok(array_agg(body ORDER BY seq) = ARRAY['{"i":2}', '{"i":3}', '{"i":4}', '{"i":5}'], 'redelivered from the cursor in order') FROM b;
SELECT pg_temp.ok_one(array_agg(r.attempts = 0 AND r.batch_size = 4 AND r.lease_id = pg_temp.L(2)), 'expiry not counted as retry')
  FROM queen.ready r WHERE r.partition_id = (SELECT min(partition_id) FROM b) AND r.group_id = pg_temp.gid(pg_temp.qn('ls'), '__QUEUE_MODE__');
-- the stale lease is refused per item; the current one is accepted
CREATE TEMP TABLE k AS
  SELECT * FROM queen.ack('', ARRAY[NULL, NULL], ARRAY[(SELECT min(partition_id) FROM b), (SELECT min(partition_id) FROM b)],
                          ARRAY[NULL, NULL]::text[], ARRAY[(SELECT min(seq) FROM b), (SELECT min(seq) FROM b) + 1],
                          ARRAY['completed', 'completed'],
                          ARRAY[pg_temp.L(1), pg_temp.L(2)],
                          ARRAY[NULL, NULL]);
SELECT pg_temp.ok_one(array_agg(NOT success AND error = 'Invalid or expired lease'), 'old lease refused') FROM k WHERE ord = 1;
SELECT pg_temp.ok_one(array_agg(success AND error IS NULL AND queue_name = pg_temp.qn('ls') AND partition_name = 'p'), 'current lease accepted') FROM k WHERE ord = 2;

-- acked_count auto-release: acking the remaining delivered messages releases the lease
CREATE TEMP TABLE k2 AS
  SELECT * FROM pg_temp.ack_all(NULL, ARRAY(SELECT partition_id FROM b WHERE seq > (SELECT min(seq) FROM b) + 1 ORDER BY seq),
                                ARRAY(SELECT seq FROM b WHERE seq > (SELECT min(seq) FROM b) + 1 ORDER BY seq),
                                'completed', pg_temp.L(2));
SELECT pg_temp.ok(bool_and(success) AND count(*) = 2, 'acks ok') FROM k2;
SELECT pg_temp.ok(NOT bool_or(lease_released), 'not released at 3 of 4') FROM k2;
SELECT pg_temp.ok_one(array_agg(success AND lease_released), 'released when acked_count reaches batch_size')
  FROM pg_temp.ack1(NULL, (SELECT min(partition_id) FROM b), (SELECT min(seq) FROM b), 'success',
                    pg_temp.L(2), NULL);
-- drained: ready row gone, cursor kept in cursors, counter reset
SELECT pg_temp.ok(NOT EXISTS (SELECT 1 FROM queen.ready r WHERE r.partition_id = (SELECT min(partition_id) FROM b)
                              AND r.group_id = pg_temp.gid(pg_temp.qn('ls'), '__QUEUE_MODE__')), 'drained row deleted');
SELECT pg_temp.ok_one(array_agg(c.acked_seq = (SELECT max(seq) FROM b)), 'cursor at the last message')
  FROM queen.cursors c WHERE c.partition_id = (SELECT min(partition_id) FROM b)
   AND c.group_id = pg_temp.gid(pg_temp.qn('ls'), '__QUEUE_MODE__');
-- a consumer that acked everything pops the next batch at once
SELECT pg_temp.pushn(pg_temp.qn('ls'), 'p', 2);
SELECT pg_temp.ok(count(*) = 2, 'next batch immediately')
  FROM pg_temp.pop(pg_temp.qn('ls'), NULL, NULL, 10, 1, pg_temp.L(3));

-- renew (spec 3.13)
CREATE TEMP TABLE r1 AS SELECT * FROM queen.renew(pg_temp.L(3), 60);
SELECT pg_temp.ok_one(array_agg(status = 'ok' AND expires_at > now() + interval '55 s'), 'renew ok') FROM r1;
-- tenancy (issue 12): the lease of another tenant's partition is not found
-- (and not extended: the next check still sees r1's expiry)
SELECT pg_temp.ok_one(array_agg(status = 'Lease not found' AND expires_at IS NULL), 'another tenant: lease not found')
  FROM queen.renew(pg_temp.L(3), 3600, 'other-tenant');
SELECT pg_temp.ok_one(array_agg(r.avail_at = r1.expires_at), 'expiry moved') FROM queen.ready r, r1
 WHERE r.lease_id = pg_temp.L(3);
SELECT pg_temp.ok_one(array_agg(status = 'ok' AND expires_at = (SELECT expires_at FROM r1)), 'renew never shortens')
  FROM queen.renew(pg_temp.L(3), 1);
SELECT pg_temp.ok_one(array_agg(status = 'ok'), 'renew default 60 s') FROM queen.renew(pg_temp.L(3), NULL);
SELECT pg_temp.ok_one(array_agg(status = 'Lease not found' AND expires_at IS NULL), 'unknown lease') FROM queen.renew(gen_random_uuid(), 60);
-- multi-partition lease: one call extends all, returns the earliest
SELECT pg_temp.pushn(pg_temp.qn('ls2'), 'p' || k, 1) FROM generate_series(1, 3) k;
SELECT pg_temp.ok(count(DISTINCT partition_id) = 3, 'shared lease over 3 partitions')
  FROM pg_temp.pop(pg_temp.qn('ls2'), NULL, NULL, 10, 3, pg_temp.L(4));
UPDATE queen.ready SET avail_at = now() + interval '500 s' WHERE lease_id = pg_temp.L(4)
   AND partition_id = (SELECT max(partition_id) FROM queen.ready WHERE lease_id = pg_temp.L(4));
CREATE TEMP TABLE r2 AS SELECT * FROM queen.renew(pg_temp.L(4), 400);
SELECT pg_temp.ok_one(array_agg(status = 'ok' AND expires_at < now() + interval '401 s' AND expires_at > now() + interval '399 s'), 'earliest expiry') FROM r2;
SELECT pg_temp.ok(count(*) = 3 AND min(avail_at) >= (SELECT expires_at FROM r2), 'all three extended')
  FROM queen.ready WHERE lease_id = pg_temp.L(4);
-- expired lease
SELECT pg_temp.pushn(pg_temp.qn('ls'), 'q', 1);
SELECT FROM pg_temp.pop(pg_temp.qn('ls'), 'q', NULL, 10, 1, pg_temp.L(5));
SELECT pg_sleep(1.1);
SELECT pg_temp.ok_one(array_agg(status = 'Lease already expired' AND expires_at IS NULL), 'expired lease')
  FROM queen.renew(pg_temp.L(5), 60);
