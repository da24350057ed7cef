-- conflation (queue option conflate): a pop hands out only the newest
-- deliverable message of a partition; the older pending ones are superseded
-- (count as consumed for that group, never delivered). Per consumer group.
\ir _lib.psql
CREATE FUNCTION pg_temp.pushb(q text, part text, body text, nb timestamptz) RETURNS bigint LANGUAGE sql AS $$
  SELECT p.seq FROM queen.push('', ARRAY[q], ARRAY[part], ARRAY[NULL::text], ARRAY[convert_to(body, 'UTF8')],
                               ARRAY[NULL::uuid], ARRAY[NULL::text], ARRAY[false], false, ARRAY[nb]) p $$;
SELECT queen.configure('', pg_temp.qn('cf'), NULL, NULL, '{"conflate": true, "retryDelay": 0}');
SELECT pg_temp.ok_one(array_agg((options ->> 'conflate') = 'true'), 'conflate echoed')
  FROM queen.configure('', pg_temp.qn('cf'), NULL, NULL, '{"conflate": true, "retryDelay": 0}');
SELECT pg_temp.pushn(pg_temp.qn('cf'), 'p1', 5);
SELECT pg_temp.pushn(pg_temp.qn('cf'), 'p2', 3);

-- group A, wildcard over every partition: one message per partition, the newest
CREATE TEMP TABLE a1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('cf'), NULL, 'A', 10, 10, pg_temp.L(1));
SELECT pg_temp.ok(count(*) = 2 AND array_agg(partition_name || '=' || body ORDER BY partition_name)
                  = ARRAY['p1={"i":5}', 'p2={"i":3}'], 'A: newest of each partition') FROM a1;
-- the superseded ones count as consumed: the cursor sits just below the delivered one
SELECT pg_temp.ok(count(*) = 2 AND bool_and(r.acked_seq = a1.seq - 1 AND r.leased_from = a1.seq - 1 AND r.leased_to = a1.seq
                  AND r.batch_size = 1), 'A: cursor below the delivered message')
  FROM a1 JOIN queen.ready r ON r.partition_id = a1.partition_id AND r.group_id = pg_temp.gid(pg_temp.qn('cf'), 'A');

-- group B on one partition, and the queue mode group: each gets the newest as well
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '{"i":5}', 'B: newest of p1')
  FROM pg_temp.pop(pg_temp.qn('cf'), 'p1', 'B', 10, 1, pg_temp.L(2));
SELECT pg_temp.ok(count(*) = 1 AND min(body) IN ('{"i":5}', '{"i":3}'), 'queue mode: newest of one partition')
  FROM pg_temp.pop(pg_temp.qn('cf'), NULL, NULL, 10, 1, pg_temp.L(3));

-- A acks: releases (batch of one); nothing else is ever delivered to A
SELECT pg_temp.ok(count(*) = 2 AND bool_and(success AND lease_released), 'A: ack releases')
  FROM pg_temp.ack_all('A', ARRAY(SELECT partition_id FROM a1), ARRAY(SELECT seq FROM a1), 'completed', pg_temp.L(1));
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL) AND bool_and(next_due IS NULL), 'A: superseded never delivered')
  FROM pg_temp.pop(pg_temp.qn('cf'), NULL, 'A', 10, 10, pg_temp.L(4));
-- a message pushed after the pop is delivered next
SELECT pg_temp.pushb(pg_temp.qn('cf'), 'p1', '"later"', NULL);
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '"later"', 'A: the later message next')
  FROM pg_temp.pop(pg_temp.qn('cf'), NULL, 'A', 10, 10, pg_temp.L(5));

-- a retried (failed) delivery is superseded by a newer message
SELECT pg_temp.pushn(pg_temp.qn('cf'), 'p3', 2);
CREATE TEMP TABLE r1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('cf'), 'p3', 'R', 10, 1, pg_temp.L(6));
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '{"i":2}', 'R: newest') FROM r1;
SELECT pg_temp.pushb(pg_temp.qn('cf'), 'p3', '"newer"', NULL);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(success), 'R: failed ack -> retry')
  FROM pg_temp.ack_all('R', ARRAY(SELECT partition_id FROM r1), ARRAY(SELECT seq FROM r1), 'failed', pg_temp.L(6));
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '"newer"', 'R: the retry delivers the newer message')
  FROM pg_temp.pop(pg_temp.qn('cf'), 'p3', 'R', 10, 1, pg_temp.L(7));

-- batch is still a global cap: batch 1 over 2 partitions -> one message
SELECT pg_temp.ok(count(*) = 1, 'batch 1 -> one partition') FROM pg_temp.pop(pg_temp.qn('cf'), NULL, 'C', 1, 10, pg_temp.L(8));
-- auto-ack moves the cursor to the delivered message
SELECT pg_temp.ok(count(*) = 3, 'auto-ack: newest of each (p1, p2, p3)')
  FROM queen.pop('', pg_temp.qn('cf'), NULL, 'D', NULL, NULL, 10, 10, NULL, true) WHERE seq IS NOT NULL;
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'auto-ack: nothing left')
  FROM queen.pop('', pg_temp.qn('cf'), NULL, 'D', NULL, NULL, 10, 10, NULL, true);

-- per-message delay: a pending delayed message blocks what follows it; the
-- newest message in front of it is delivered, and next_due is its due instant
SELECT pg_temp.pushb(pg_temp.qn('cf'), 'd', '"before"', NULL);
SELECT pg_temp.pushb(pg_temp.qn('cf'), 'd', '"delayed"', now() + interval '1 hour');
SELECT pg_temp.pushb(pg_temp.qn('cf'), 'd', '"after"', NULL);
CREATE TEMP TABLE d1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('cf'), 'd', 'E', 10, 1, pg_temp.L(9));
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '"before"', 'delay: newest in front of the delayed one') FROM d1;
SELECT FROM pg_temp.ack_all('E', ARRAY(SELECT partition_id FROM d1), ARRAY(SELECT seq FROM d1), 'completed', pg_temp.L(9));
CREATE TEMP TABLE d2 AS SELECT * FROM pg_temp.pop(pg_temp.qn('cf'), 'd', 'E', 10, 1, pg_temp.L(10));
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'delay: blocked') FROM d2;
SELECT pg_temp.ok(count(*) = 1 AND bool_and(d2.next_due = m.not_before), 'delay: next_due = not_before')
  FROM d2, queen.messages m WHERE m.not_before IS NOT NULL
   AND m.partition_id = (SELECT partition_id FROM d1);
-- once due (simulated), the newest of all is delivered and the delayed one superseded
UPDATE queen.messages SET not_before = now() - interval '1 s'
 WHERE partition_id = (SELECT partition_id FROM d1) AND not_before IS NOT NULL;
UPDATE queen.ready SET avail_at = now() - interval '1 s'
 WHERE partition_id = (SELECT partition_id FROM d1) AND group_id = pg_temp.gid(pg_temp.qn('cf'), 'E');
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '"after"', 'delay: due -> newest')
  FROM pg_temp.pop(pg_temp.qn('cf'), 'd', 'E', 10, 1, pg_temp.L(11));

-- delayedProcessing: the newest message old enough
SELECT queen.configure('', pg_temp.qn('cfd'), NULL, NULL, '{"conflate": true, "delayedProcessing": 1}');
SELECT pg_temp.pushn(pg_temp.qn('cfd'), 'p', 2);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL) AND bool_and(next_due > now()), 'delayedProcessing: held')
  FROM pg_temp.pop(pg_temp.qn('cfd'), NULL, NULL, 10, 1, pg_temp.L(12));
SELECT pg_sleep(1.05);
SELECT pg_temp.pushb(pg_temp.qn('cfd'), 'p', '"young"', NULL);
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '{"i":2}', 'delayedProcessing: newest old enough')
  FROM pg_temp.pop(pg_temp.qn('cfd'), NULL, NULL, 10, 1, pg_temp.L(13));

-- a queue without conflate is unchanged
SELECT pg_temp.pushn(pg_temp.qn('plain'), 'p', 3);
SELECT pg_temp.ok(count(*) = 3, 'no conflate: all delivered') FROM pg_temp.pop(pg_temp.qn('plain'), NULL, NULL, 10, 1, pg_temp.L(14));
