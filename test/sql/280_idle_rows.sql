-- Invariant I3 (docs/storage.md): a drained (partition, group) keeps its
-- ready row, idle at avail_at = infinity; a push wakes it (no insert), the
-- drain idles it (no delete, nothing written to queen.cursors), nothing
-- counts an idle row as pending, and a pair drained before the upgrade
-- (its cursor in queen.cursors, no ready row) resumes at that cursor.
\ir _lib.psql

CREATE FUNCTION pg_temp.row_of(q text, part text, grp text) RETURNS queen.ready LANGUAGE sql AS $$
  SELECT r.* FROM queen.ready r JOIN queen.partitions p ON p.id = r.partition_id
    JOIN queen.queues qq ON qq.id = p.queue_id
   WHERE qq.name = q AND p.name = part AND r.group_id = pg_temp.gid(q, grp) $$;

-- 1. push, pop, ack: the row drains to idle, in place
SELECT pg_temp.pushn(pg_temp.qn('id'), 'p', 3);
CREATE TEMP TABLE i1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('id'), NULL, NULL, 10, 1, pg_temp.L(1));
SELECT pg_temp.ok(count(*) = 3, '1: three delivered') FROM i1;
SELECT pg_temp.ok(bool_and(success) AND bool_or(lease_released), '1: acked')
  FROM pg_temp.ack_all(NULL, ARRAY(SELECT partition_id FROM i1), ARRAY(SELECT seq FROM i1), 'completed', pg_temp.L(1));
SELECT pg_temp.ok_one(array_agg(r.avail_at = 'infinity' AND r.acked_seq = (SELECT max(seq) FROM i1)
                                AND r.lease_id IS NULL AND r.leased_to IS NULL AND r.batch_size = 0
                                AND r.attempts = 0 AND r.drained_at IS NOT NULL), '1: one idle row at the last message')
  FROM queen.ready r WHERE r.partition_id = (SELECT min(partition_id) FROM i1);
SELECT pg_temp.ok(NOT EXISTS (SELECT 1 FROM queen.cursors c WHERE c.partition_id = (SELECT min(partition_id) FROM i1)),
                  '1: nothing in cursors');

-- 2. an empty pop over idle rows: no message, and next_due is NULL (an
-- idle row is never due), on the wildcard and the partition route
SELECT pg_temp.ok_one(array_agg(seq IS NULL AND next_due IS NULL), '2: wildcard: empty, next_due NULL')
  FROM pg_temp.pop(pg_temp.qn('id'), NULL, NULL, 10, 1, pg_temp.L(2));
SELECT pg_temp.ok_one(array_agg(seq IS NULL AND next_due IS NULL), '2: partition route: empty, next_due NULL')
  FROM pg_temp.pop(pg_temp.qn('id'), 'p', NULL, 10, 1, pg_temp.L(2));

-- 3. a push wakes the same row (cursor kept), and only the new message is delivered
SELECT pg_temp.pushn(pg_temp.qn('id'), 'p', 1);
SELECT pg_temp.ok_one(array_agg(r.avail_at <= now() AND r.acked_seq = (SELECT max(seq) FROM i1)),
                      '3: woken at the kept cursor')
  FROM queen.ready r WHERE r.partition_id = (SELECT min(partition_id) FROM i1);
CREATE TEMP TABLE i3 AS SELECT * FROM pg_temp.pop(pg_temp.qn('id'), NULL, NULL, 10, 1, pg_temp.L(3));
SELECT pg_temp.ok(count(*) = 1 AND min(seq) > (SELECT max(seq) FROM i1) AND min(body) = '{"i":1}',
                  '3: the new message only') FROM i3;

-- 4. next_due with idle rows beside a backoff: the backoff's instant, not infinity
SELECT queen.configure('', pg_temp.qn('bo'), NULL, NULL, '{"retryLimit": 5, "retryDelay": 60000}');
SELECT pg_temp.pushn(pg_temp.qn('bo'), 'a', 1);
SELECT pg_temp.pushn(pg_temp.qn('bo'), 'b', 1);
CREATE TEMP TABLE i4 AS SELECT * FROM pg_temp.pop(pg_temp.qn('bo'), NULL, NULL, 10, 2, pg_temp.L(4));
SELECT pg_temp.ok(count(*) = 2, '4: two delivered') FROM i4;
SELECT FROM pg_temp.ack1(NULL, (SELECT partition_id FROM i4 WHERE partition_name = 'a'),
                         (SELECT seq FROM i4 WHERE partition_name = 'a'), 'completed', pg_temp.L(4), NULL);
SELECT FROM pg_temp.ack1(NULL, (SELECT partition_id FROM i4 WHERE partition_name = 'b'),
                         (SELECT seq FROM i4 WHERE partition_name = 'b'), 'failed', pg_temp.L(4), 'x');
SELECT pg_temp.ok((pg_temp.row_of(pg_temp.qn('bo'), 'a', '__QUEUE_MODE__')).avail_at = 'infinity', '4: a idle');
SELECT pg_temp.ok_one(array_agg(seq IS NULL AND next_due > now() + interval '50 s'
                                AND next_due < now() + interval '61 s'), '4: next_due = the backoff')
  FROM pg_temp.pop(pg_temp.qn('bo'), NULL, NULL, 10, 2, pg_temp.L(5));

-- 5. two groups: one drained (idle), one holding a lease; a push wakes the
-- idle one and leaves the leased one as it is
SELECT pg_temp.pushn(pg_temp.qn('g2'), 'p', 2);
CREATE TEMP TABLE i5a AS SELECT * FROM pg_temp.pop(pg_temp.qn('g2'), NULL, 'A', 10, 1, pg_temp.L(6));
CREATE TEMP TABLE i5b AS SELECT * FROM pg_temp.pop(pg_temp.qn('g2'), NULL, 'B', 10, 1, pg_temp.L(7));
SELECT FROM pg_temp.ack_all('A', ARRAY(SELECT partition_id FROM i5a), ARRAY(SELECT seq FROM i5a), 'completed', pg_temp.L(6));
SELECT pg_temp.ok((pg_temp.row_of(pg_temp.qn('g2'), 'p', 'A')).avail_at = 'infinity', '5: A idle');
CREATE TEMP TABLE b_before AS SELECT * FROM pg_temp.row_of(pg_temp.qn('g2'), 'p', 'B');
SELECT pg_temp.pushn(pg_temp.qn('g2'), 'p', 1);
SELECT pg_temp.ok((pg_temp.row_of(pg_temp.qn('g2'), 'p', 'A')).avail_at <= now(), '5: A woken');
SELECT pg_temp.ok_one(array_agg(b.lease_id = pg_temp.L(7) AND b.avail_at = o.avail_at AND b.leased_to = o.leased_to),
                      '5: B keeps its lease and expiry')
  FROM pg_temp.row_of(pg_temp.qn('g2'), 'p', 'B') b, b_before o;
SELECT pg_temp.ok(count(*) = 1, '5: A gets the new message') FROM pg_temp.pop(pg_temp.qn('g2'), NULL, 'A', 10, 1, pg_temp.L(8));

-- 6. a late ack of an already consumed message leaves the idle row as it is
SELECT pg_temp.ok_one(array_agg(success), '6: late ack answered')
  FROM pg_temp.ack1(NULL, (SELECT min(partition_id) FROM i1), (SELECT min(seq) FROM i1), 'completed', NULL, NULL);
SELECT pg_temp.ok_one(array_agg(success), '6: late retry answered')
  FROM pg_temp.ack1(NULL, (SELECT min(partition_id) FROM i1), (SELECT min(seq) FROM i1), 'retry', NULL, NULL);
CREATE TEMP TABLE i6 AS SELECT * FROM pg_temp.pop(pg_temp.qn('id'), NULL, NULL, 10, 1, NULL);
SELECT pg_temp.ok((pg_temp.row_of(pg_temp.qn('id'), 'p', '__QUEUE_MODE__')).avail_at > now() + interval '1 s', '6: leased');
SELECT FROM pg_temp.ack_all(NULL, ARRAY(SELECT partition_id FROM i3), ARRAY(SELECT seq FROM i3), 'completed', NULL);
SELECT pg_temp.ok((pg_temp.row_of(pg_temp.qn('id'), 'p', '__QUEUE_MODE__')).avail_at = 'infinity', '6: drained again');
SELECT FROM pg_temp.ack1(NULL, (SELECT min(partition_id) FROM i1), (SELECT min(seq) FROM i1), 'failed', NULL, 'late');
SELECT pg_temp.ok_one(array_agg(r.avail_at = 'infinity' AND r.attempts = 0 AND r.acked_seq = (SELECT max(seq) FROM i3)),
                      '6: a late failed ack does not wake or count')
  FROM pg_temp.row_of(pg_temp.qn('id'), 'p', '__QUEUE_MODE__') r;

-- 7. the read side: an idle row is no backlog and no pending work
SELECT pg_temp.ok_one(array_agg(c.pending = 0 AND c.processing = 0 AND c.completed = 4), '7: queue counts')
  FROM queen.queues q CROSS JOIN LATERAL queen._queue_counts(q.id) c WHERE q.name = pg_temp.qn('id');
SELECT pg_temp.ok_one(array_agg(NOT gp.has_ready AND gp.cur = (SELECT max(seq) FROM i3)), '7: group parts: drained pair')
  FROM queen._admin_group_parts('', '__QUEUE_MODE__', pg_temp.qn('id')) gp;

-- 8. maxSize counts pending messages behind woken rows, not idle ones
SELECT queen.configure('', pg_temp.qn('ms'), NULL, NULL, '{"maxSize": 2}');
SELECT pg_temp.pushn(pg_temp.qn('ms'), 'p', 2);
CREATE TEMP TABLE i8 AS SELECT * FROM pg_temp.pop(pg_temp.qn('ms'), NULL, NULL, 10, 1, NULL);
SELECT FROM pg_temp.ack_all(NULL, ARRAY(SELECT partition_id FROM i8), ARRAY(SELECT seq FROM i8), 'completed', NULL);
SELECT pg_temp.ok((pg_temp.row_of(pg_temp.qn('ms'), 'p', '__QUEUE_MODE__')).avail_at = 'infinity', '8: idle');
SELECT pg_temp.pushn(pg_temp.qn('ms'), 'p', 2);
DO $$
BEGIN
  PERFORM pg_temp.pushn(pg_temp.qn('ms'), 'p', 1);
  RAISE EXCEPTION 'ASSERTION FAILED: 8: a third pending message is refused';
EXCEPTION WHEN sqlstate 'QN429' THEN
  NULL;
END $$;

-- 9. a pair drained before the upgrade (no ready row, its cursor in
-- queen.cursors): the next push creates its row at that cursor
SELECT pg_temp.pushn(pg_temp.qn('up'), 'p', 3);
CREATE TEMP TABLE i9 AS SELECT * FROM pg_temp.pop(pg_temp.qn('up'), NULL, NULL, 2, 1, NULL);
SELECT FROM pg_temp.ack_all(NULL, ARRAY(SELECT partition_id FROM i9), ARRAY(SELECT seq FROM i9), 'completed', NULL);
-- rewrite the state the way the previous release stored it: cursor after
-- the third message, in cursors, no ready row
INSERT INTO queen.cursors (partition_id, group_id, acked_seq)
SELECT r.partition_id, r.group_id, (SELECT max(m.seq) FROM queen.messages m WHERE m.partition_id = r.partition_id)
  FROM pg_temp.row_of(pg_temp.qn('up'), 'p', '__QUEUE_MODE__') r;
DELETE FROM queen.ready r USING pg_temp.row_of(pg_temp.qn('up'), 'p', '__QUEUE_MODE__') o
 WHERE r.partition_id = o.partition_id AND r.group_id = o.group_id;
SELECT pg_temp.ok_one(array_agg(seq IS NULL), '9: cold pair: nothing to pop')
  FROM pg_temp.pop(pg_temp.qn('up'), NULL, NULL, 10, 1, NULL);
SELECT pg_temp.pushn(pg_temp.qn('up'), 'p', 2);
SELECT pg_temp.ok_one(array_agg(r.acked_seq = (SELECT c.acked_seq FROM queen.cursors c
                                                WHERE c.partition_id = r.partition_id AND c.group_id = r.group_id)
                                AND r.avail_at <= now()), '9: row created at the cold cursor')
  FROM pg_temp.row_of(pg_temp.qn('up'), 'p', '__QUEUE_MODE__') r;
CREATE TEMP TABLE i9b AS SELECT * FROM pg_temp.pop(pg_temp.qn('up'), NULL, NULL, 10, 1, NULL);
SELECT pg_temp.ok(count(*) = 2 AND array_agg(body ORDER BY seq) = ARRAY['{"i":1}', '{"i":2}'], '9: resumes after the cold cursor')
  FROM i9b;
SELECT FROM pg_temp.ack_all(NULL, ARRAY(SELECT partition_id FROM i9b), ARRAY(SELECT seq FROM i9b), 'completed', NULL);
SELECT pg_temp.ok((pg_temp.row_of(pg_temp.qn('up'), 'p', '__QUEUE_MODE__')).avail_at = 'infinity', '9: drains to idle');
-- the effective cursor is the ready row's even with a stale cursors row beside it
SELECT pg_temp.ok_one(array_agg(gp.cur = (SELECT max(seq) FROM i9b)), '9: admin reads the ready row first')
  FROM queen._admin_group_parts('', '__QUEUE_MODE__', pg_temp.qn('up')) gp;
