-- per-message delay (push not_before: delayMs / deliverAt): a delayed message
-- is not delivered before its instant and blocks the rest of its partition
-- (FIFO); next_due names the instant; other partitions are not affected.
\ir _lib.psql
CREATE FUNCTION pg_temp.pushb(q text, part text, body text, nb timestamptz) RETURNS bigint LANGUAGE sql AS $$
  SELECT p.seq FROM queen.push('', ARRAY[q], ARRAY[part], ARRAY[NULL::text], ARRAY[convert_to(body, 'UTF8')],
                               ARRAY[NULL::uuid], ARRAY[NULL::text], ARRAY[false], false, ARRAY[nb]) p $$;

SELECT pg_temp.ok(queen.ts_of_us(ARRAY[0, NULL, 1500000]::bigint[])
                  = ARRAY['1970-01-01 00:00:00+00', NULL, '1970-01-01 00:00:01.5+00']::timestamptz[], 'ts_of_us');
SELECT pg_temp.ok(queen.ts_of_us(NULL) IS NULL, 'ts_of_us(NULL)');

-- a consumer exists before the push (so push writes the ready row)
SELECT queen.configure('', pg_temp.qn('dl'), NULL, NULL, NULL);
SELECT FROM pg_temp.pop(pg_temp.qn('dl'), NULL, NULL, 1, 1, NULL);
SELECT set_config('test.nb', (clock_timestamp() + interval '1 s')::text, false) \g /dev/null
SELECT pg_temp.pushb(pg_temp.qn('dl'), 'p', '"first"', current_setting('test.nb')::timestamptz);
SELECT pg_temp.pushb(pg_temp.qn('dl'), 'p', '"second"', NULL);
SELECT pg_temp.pushb(pg_temp.qn('dl'), 'q', '"other"', NULL);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(r.avail_at = current_setting('test.nb')::timestamptz), 'ready row waits for the head''s instant')
  FROM queen.ready r JOIN queen.partitions p ON p.id = r.partition_id
 WHERE p.name = 'p' AND r.queue_id = (SELECT id FROM queen.queues WHERE name = pg_temp.qn('dl'));
CREATE TEMP TABLE a AS SELECT * FROM pg_temp.pop(pg_temp.qn('dl'), NULL, NULL, 10, 10, pg_temp.L(1));
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '"other"', 'other partition not blocked') FROM a;
CREATE TEMP TABLE b AS SELECT * FROM pg_temp.pop(pg_temp.qn('dl'), NULL, NULL, 10, 10, pg_temp.L(2));
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL)
                  AND bool_and(next_due = current_setting('test.nb')::timestamptz), 'empty pop: next_due = the instant') FROM b;
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL)
                  AND bool_and(next_due = current_setting('test.nb')::timestamptz), 'partition route: same')
  FROM pg_temp.pop(pg_temp.qn('dl'), 'p', NULL, 10, 1, pg_temp.L(2));
SELECT pg_sleep(GREATEST(extract(epoch FROM current_setting('test.nb')::timestamptz - clock_timestamp()), 0) + 0.05);
SELECT pg_temp.ok(count(*) = 2 AND array_agg(body ORDER BY seq) = ARRAY['"first"', '"second"'], 'due: both, in order')
  FROM pg_temp.pop(pg_temp.qn('dl'), 'p', NULL, 10, 1, pg_temp.L(3));

-- a delayed message behind deliverable ones: those go first, it blocks the rest
SELECT pg_temp.pushb(pg_temp.qn('dl2'), 'p', '"m1"', NULL);
SELECT pg_temp.pushb(pg_temp.qn('dl2'), 'p', '"m2"', now() + interval '1 hour');
SELECT pg_temp.pushb(pg_temp.qn('dl2'), 'p', '"m3"', NULL);
CREATE TEMP TABLE c AS SELECT * FROM pg_temp.pop(pg_temp.qn('dl2'), NULL, NULL, 10, 1, pg_temp.L(4));
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '"m1"', 'only the message in front') FROM c;
SELECT pg_temp.ok_count(array_agg(success AND lease_released), 1, 'ack')
  FROM pg_temp.ack_all(NULL, ARRAY(SELECT partition_id FROM c), ARRAY(SELECT seq FROM c), 'completed', pg_temp.L(4));
CREATE TEMP TABLE d AS SELECT * FROM pg_temp.pop(pg_temp.qn('dl2'), NULL, NULL, 10, 1, pg_temp.L(5));
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'blocked behind m2') FROM d;
SELECT pg_temp.ok(count(*) = 1 AND bool_and(d.next_due = m.not_before), 'next_due = m2''s instant')
  FROM d, queen.messages m WHERE m.partition_id = (SELECT partition_id FROM c) AND m.not_before IS NOT NULL;

-- an instant already past is stored as NULL (no delay)
SELECT pg_temp.pushb(pg_temp.qn('dl3'), 'p', '"past"', now() - interval '1 minute');
SELECT pg_temp.ok(count(*) = 1 AND bool_and(m.not_before IS NULL), 'past instant: no delay')
  FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
 WHERE p.queue_id = (SELECT id FROM queen.queues WHERE name = pg_temp.qn('dl3'));
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '"past"', 'past instant: delivered')
  FROM pg_temp.pop(pg_temp.qn('dl3'), NULL, NULL, 10, 1, pg_temp.L(6));

-- combined with delayedProcessing: the later of the two
SELECT queen.configure('', pg_temp.qn('dl4'), NULL, NULL, '{"delayedProcessing": 3600}');
SELECT pg_temp.pushb(pg_temp.qn('dl4'), 'p', '"x"', now() + interval '1 minute');
SELECT pg_temp.ok(count(*) = 1 AND bool_and(next_due = m.created_at + interval '1 hour'), 'delayedProcessing later than not_before')
  FROM pg_temp.pop(pg_temp.qn('dl4'), NULL, NULL, 10, 1, pg_temp.L(7)) x,
       queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
 WHERE p.queue_id = (SELECT id FROM queen.queues WHERE name = pg_temp.qn('dl4'));

-- transactions carry not_before too
SELECT FROM queen.txn('', ARRAY[pg_temp.qn('dl5')], ARRAY['p'], ARRAY['t1'], ARRAY['"tx"'::bytea],
                      ARRAY[NULL::uuid], ARRAY[NULL::text], ARRAY[false], '{}', '{}', '{}', '{}', '{}', '{}', '{}',
                      NULL, ARRAY[now() + interval '1 hour']);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(m.not_before > now() + interval '59 minutes'), 'txn: not_before stored')
  FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
 WHERE p.queue_id = (SELECT id FROM queen.queues WHERE name = pg_temp.qn('dl5'));
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL) AND bool_and(next_due > now() + interval '59 minutes'),
                  'txn: delayed') FROM pg_temp.pop(pg_temp.qn('dl5'), NULL, NULL, 10, 1, pg_temp.L(8));
