-- delayedProcessing and windowBuffer via avail_at and next_due (spec 2.9)
\ir _lib.psql
SELECT queen.configure('', pg_temp.qn('dl'), NULL, NULL, '{"delayedProcessing": 1}');
SELECT pg_temp.pushn(pg_temp.qn('dl'), 'p', 2);
CREATE TEMP TABLE d1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('dl'), NULL, NULL, 10, 1, pg_temp.L(1));
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'delay: invisible at once') FROM d1;
SELECT pg_temp.ok_one(array_agg(d1.next_due = x.created_at + interval '1 s'), 'delay: next_due = created_at + delay')
  FROM d1, (SELECT m.created_at FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
              JOIN queen.queues q ON q.id = p.queue_id
             WHERE q.name = pg_temp.qn('dl') ORDER BY m.seq LIMIT 1) x;
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'delay: still invisible on the partition route')
  FROM pg_temp.pop(pg_temp.qn('dl'), 'p', NULL, 10, 1, pg_temp.L(1));
SELECT pg_sleep(1.05);
SELECT pg_temp.ok(count(*) = 2, 'delay: visible after the delay') FROM pg_temp.pop(pg_temp.qn('dl'), NULL, NULL, 10, 1, pg_temp.L(2));

-- window buffer 1 s: 3 messages invisible while the partition keeps receiving, then all together
SELECT queen.configure('', pg_temp.qn('wb'), NULL, NULL, '{"windowBuffer": 1}');
SELECT pg_temp.pushn(pg_temp.qn('wb'), 'p', 2);
CREATE TEMP TABLE w1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('wb'), NULL, NULL, 10, 1, pg_temp.L(3));
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL) AND bool_and(next_due > now()), 'window: held') FROM w1;
SELECT pg_sleep(0.5);
SELECT pg_temp.pushn(pg_temp.qn('wb'), 'p', 1);
SELECT pg_sleep(0.6);
CREATE TEMP TABLE w2 AS SELECT * FROM pg_temp.pop(pg_temp.qn('wb'), NULL, NULL, 10, 1, pg_temp.L(4));
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'window: a new push restarts the window') FROM w2;
SELECT pg_temp.ok_one(array_agg(w2.next_due > now() AND w2.next_due <= now() + interval '1 s'), 'window: next_due') FROM w2;
SELECT pg_sleep(0.5);
SELECT pg_temp.ok(count(*) = 3, 'window: all 3 together once quiet') FROM pg_temp.pop(pg_temp.qn('wb'), NULL, NULL, 10, 1, pg_temp.L(5));

-- window checked at claim time too (a partition whose ready row was not bumped)
SELECT pg_temp.pushn(pg_temp.qn('wb'), 'q', 1);
UPDATE queen.ready r SET avail_at = now() - interval '1 s'
  FROM queen.partitions p WHERE p.id = r.partition_id AND p.name = 'q'
   AND p.queue_id = (SELECT id FROM queen.queues WHERE name = pg_temp.qn('wb'));
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL) AND bool_and(next_due > now()), 'window: claim-time check')
  FROM pg_temp.pop(pg_temp.qn('wb'), 'q', NULL, 10, 1, pg_temp.L(6));
