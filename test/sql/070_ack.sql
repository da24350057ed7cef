-- ack: retries, DLQ, statuses, validation (spec 2.7, 3.10, 3.11)
\ir _lib.psql

-- A. retryLimit 1, one request failing a batch of 3: one retry, then all 3 dead-lettered
SELECT queen.configure('', pg_temp.qn('r1'), NULL, NULL, '{"retryLimit": 1, "retryDelay": 0}');
SELECT pg_temp.pushn(pg_temp.qn('r1'), 'p', 3);
CREATE TEMP TABLE a1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('r1'), NULL, NULL, 10, 1, pg_temp.L(1));
SELECT pg_temp.ok(count(*) = 3, 'A: 3 delivered') FROM a1;
CREATE TEMP TABLE k1 AS SELECT * FROM pg_temp.ack_all(NULL, ARRAY(SELECT partition_id FROM a1 ORDER BY seq DESC),
  ARRAY(SELECT seq FROM a1 ORDER BY seq DESC), 'failed', pg_temp.L(1));
SELECT pg_temp.ok_count(array_agg(success AND lease_released AND NOT dlq), 3, 'A: first failure = one retry, all ok') FROM k1;
SELECT pg_temp.ok(count(*) = 0, 'A: no DLQ yet') FROM queen.dead_letters d WHERE d.partition_id = (SELECT min(partition_id) FROM a1);
SELECT pg_temp.ok_one(array_agg(r.attempts = 1 AND r.lease_id IS NULL AND r.acked_seq = 0), 'A: counter 1, cursor unchanged')
  FROM queen.ready r WHERE r.partition_id = (SELECT min(partition_id) FROM a1);
CREATE TEMP TABLE a2 AS SELECT * FROM pg_temp.pop(pg_temp.qn('r1'), NULL, NULL, 10, 1, pg_temp.L(2));
SELECT pg_temp.ok(array_agg(seq ORDER BY seq) = (SELECT array_agg(seq ORDER BY seq) FROM a1), 'A: whole batch redelivered') FROM a2;
CREATE TEMP TABLE k2 AS
  SELECT * FROM queen.ack('', ARRAY[NULL, NULL, NULL], ARRAY(SELECT partition_id FROM a2 ORDER BY seq),
                          ARRAY[NULL, NULL, NULL]::text[], ARRAY(SELECT seq FROM a2 ORDER BY seq),
                          ARRAY['failed', 'failed', 'failed'], ARRAY[pg_temp.L(2), pg_temp.L(2), pg_temp.L(2)],
                          ARRAY['boom', NULL, '']);
SELECT pg_temp.ok_count(array_agg(success AND dlq), 3, 'A: second failure dead-letters every item') FROM k2;
SELECT pg_temp.ok(bool_and(lease_released) FILTER (WHERE ord = 3) AND NOT bool_or(lease_released) FILTER (WHERE ord < 3),
                  'A: DLQ moves count toward auto-release') FROM k2;
SELECT pg_temp.ok(count(*) = 3 AND array_agg(d.error ORDER BY seq) = ARRAY['boom', 'Retries exhausted', 'Retries exhausted']
                  AND bool_and(d.retry_count = 1) AND bool_and(d.consumer_group = '__QUEUE_MODE__')
                  AND array_agg(convert_from(d.payload, 'UTF8') ORDER BY seq) = ARRAY['{"i":1}', '{"i":2}', '{"i":3}']
                  AND bool_and(d.txn_id IS NULL) AND bool_and(d.created_at = m.created_at),
                  'A: DLQ rows')
  FROM queen.dead_letters d JOIN queen.messages m USING (partition_id, seq)
 WHERE d.partition_id = (SELECT min(partition_id) FROM a1);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'A: nothing left') FROM pg_temp.pop(pg_temp.qn('r1'), NULL, NULL, 10, 1, pg_temp.L(3));
SELECT pg_temp.ok_one(array_agg(c.acked_seq = (SELECT max(seq) FROM a1)), 'A: drained, cursor past the DLQ messages')
  FROM queen.cursors c WHERE c.partition_id = (SELECT min(partition_id) FROM a1);

-- B. retryLimit 3, batch of 100: two failed attempts, the third attempt gets all 100;
--    3 failures in total, the 4th dead-letters all 100
SELECT queen.configure('', pg_temp.qn('r3'), NULL, NULL, '{"retryLimit": 3, "retryDelay": 0}');
SELECT pg_temp.pushn(pg_temp.qn('r3'), 'p', 100);
DO $$
DECLARE
  att int;
  n int;
  res record;
BEGIN
  FOR att IN 1..4 LOOP
    CREATE TEMP TABLE bt AS SELECT * FROM pg_temp.pop(pg_temp.qn('r3'), NULL, NULL, 100, 1, pg_temp.L(100 + att));
    SELECT count(*) INTO n FROM bt;
    PERFORM pg_temp.ok(n = 100, format('B: attempt %s got %s', att, n));
    SELECT bool_and(success) AS ok, bool_or(dlq) AS anydlq, count(*) FILTER (WHERE dlq) AS ndlq INTO res
      FROM pg_temp.ack_all(NULL, ARRAY(SELECT partition_id FROM bt ORDER BY seq), ARRAY(SELECT seq FROM bt ORDER BY seq),
                           'failed', pg_temp.L(100 + att));
    PERFORM pg_temp.ok(res.ok, 'B: acks accepted (lease validated against the request start)');
    PERFORM pg_temp.ok(CASE WHEN att < 4 THEN NOT res.anydlq ELSE res.ndlq = 100 END, format('B: attempt %s dlq=%s', att, res.ndlq));
    DROP TABLE bt;
  END LOOP;
END $$;
SELECT pg_temp.ok(count(*) = 100 AND bool_and(retry_count = 3), 'B: 100 DLQ rows with retryCount 3')
  FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id WHERE q.name = pg_temp.qn('r3');

-- C. dlq and retry statuses
SELECT queen.configure('', pg_temp.qn('st'), NULL, NULL, '{"retryLimit": 5, "retryDelay": 0}');
SELECT pg_temp.pushn(pg_temp.qn('st'), 'p', 3);
CREATE TEMP TABLE c1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('st'), NULL, NULL, 10, 1, pg_temp.L(4));
SELECT pg_temp.ok_one(array_agg(success AND NOT lease_released), 'C: dlq status, lease kept (1 of 3)')
  FROM pg_temp.ack1(NULL, (SELECT min(partition_id) FROM c1), (SELECT min(seq) FROM c1), 'dlq', pg_temp.L(4), 'bad');
SELECT pg_temp.ok(count(*) = 1 AND min(error) = 'bad' AND min(retry_count) = 0, 'C: dlq status dead-letters at once')
  FROM queen.dead_letters d WHERE d.partition_id = (SELECT min(partition_id) FROM c1);
SELECT pg_temp.ok_one(array_agg(success AND lease_released AND NOT dlq), 'C: retry status releases the lease')
  FROM pg_temp.ack1(NULL, (SELECT min(partition_id) FROM c1), (SELECT max(seq) FROM c1), 'retry', pg_temp.L(4), NULL);
SELECT pg_temp.ok_one(array_agg(r.attempts = 0 AND r.lease_id IS NULL AND r.acked_seq = (SELECT min(seq) FROM c1)), 'C: retry keeps counter and cursor')
  FROM queen.ready r WHERE r.partition_id = (SELECT min(partition_id) FROM c1);
SELECT pg_temp.ok(array_agg(body ORDER BY seq) = ARRAY['{"i":2}', '{"i":3}'], 'C: remainder redelivered')
  FROM pg_temp.pop(pg_temp.qn('st'), NULL, NULL, 10, 1, pg_temp.L(5));

-- D. validation
CREATE TEMP TABLE d1 AS
  SELECT * FROM queen.ack('', ARRAY['g', 'g', 'g', 'g', 'g'],
    ARRAY[(SELECT min(partition_id) FROM c1), (SELECT min(partition_id) FROM c1), 999999999, (SELECT min(partition_id) FROM c1),
          (SELECT min(partition_id) FROM c1)],
    ARRAY[NULL, 'nosuch', NULL, NULL, NULL], ARRAY[999999999, NULL, 1, (SELECT max(seq) FROM c1), (SELECT max(seq) FROM c1)]::bigint[],
    ARRAY['completed', 'completed', 'completed', 'bogus', 'completed'], ARRAY[NULL, NULL, NULL, NULL, NULL]::uuid[],
    ARRAY[NULL, NULL, NULL, NULL, NULL]);
SELECT pg_temp.ok_one(array_agg(NOT success AND error = 'Message not found' AND queue_name = pg_temp.qn('st')), 'D: bad seq') FROM d1 WHERE ord = 1;
SELECT pg_temp.ok_one(array_agg(NOT success AND error = 'Message not found'), 'D: bad txn') FROM d1 WHERE ord = 2;
SELECT pg_temp.ok_one(array_agg(NOT success AND error = 'Message not found' AND queue_name IS NULL AND partition_name IS NULL), 'D: unknown partition') FROM d1 WHERE ord = 3;
SELECT pg_temp.ok_one(array_agg(NOT success AND error IS NULL), 'D: unknown status = success false, error null') FROM d1 WHERE ord = 4;
SELECT pg_temp.ok_one(array_agg(success AND error IS NULL), 'D: completed for a group without state') FROM d1 WHERE ord = 5;
SELECT pg_temp.ok(pg_temp.gid(pg_temp.qn('st'), 'g') IS NULL, 'D: no group created by ack');

-- E. transactionId form, and the message-id form of a message without a client txn id
SELECT FROM pg_temp.push1(pg_temp.qn('tx'), 'p', 'client-key', '1');
SELECT FROM pg_temp.push1(pg_temp.qn('tx'), 'p', NULL, '2');
CREATE TEMP TABLE e1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('tx'), NULL, NULL, 10, 1, pg_temp.L(6));
CREATE TEMP TABLE e2 AS
  SELECT * FROM queen.ack('', ARRAY[NULL, NULL, NULL], ARRAY(SELECT partition_id FROM e1 UNION ALL SELECT min(partition_id) FROM e1 UNION ALL SELECT min(partition_id) FROM e1),
    ARRAY['client-key', NULL, NULL], ARRAY[NULL, (SELECT max(seq) FROM e1), (SELECT min(seq) FROM e1)]::bigint[],
    ARRAY['completed', 'completed', 'completed'], ARRAY[pg_temp.L(6), pg_temp.L(6), pg_temp.L(6)], ARRAY[NULL, NULL, NULL]);
SELECT pg_temp.ok_one(array_agg(success), 'E: by transactionId') FROM e2 WHERE ord = 1;
SELECT pg_temp.ok_one(array_agg(success AND lease_released), 'E: by message id (no client txn)') FROM e2 WHERE ord = 2;
SELECT pg_temp.ok_one(array_agg(NOT success AND error = 'Message not found'), 'E: message id of a message that has a client txn id') FROM e2 WHERE ord = 3;

-- F. retryLimit 0: the first failed item dead-letters, and so does every following one
SELECT queen.configure('', pg_temp.qn('r0'), NULL, NULL, '{"retryLimit": 0}');
SELECT pg_temp.pushn(pg_temp.qn('r0'), 'p', 4);
CREATE TEMP TABLE f1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('r0'), NULL, NULL, 10, 1, pg_temp.L(7));
SELECT pg_temp.ok(count(*) = 3 AND bool_and(dlq) AND NOT bool_or(lease_released), 'F: 3 of 4 dead-lettered, lease kept')
  FROM pg_temp.ack_all(NULL, ARRAY(SELECT partition_id FROM f1 ORDER BY seq LIMIT 3), ARRAY(SELECT seq FROM f1 ORDER BY seq LIMIT 3), 'failed', pg_temp.L(7));

-- G. retry backoff = retryDelay via avail_at, reported as next_due
SELECT queen.configure('', pg_temp.qn('bo'), NULL, NULL, '{"retryDelay": 1500}');
SELECT pg_temp.pushn(pg_temp.qn('bo'), 'p', 1);
CREATE TEMP TABLE g1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('bo'), NULL, NULL, 10, 1, pg_temp.L(8));
SELECT FROM pg_temp.ack1(NULL, (SELECT partition_id FROM g1), (SELECT seq FROM g1), 'failed', pg_temp.L(8), NULL);
CREATE TEMP TABLE g2 AS SELECT * FROM pg_temp.pop(pg_temp.qn('bo'), NULL, NULL, 10, 1, pg_temp.L(9));
SELECT pg_temp.ok_one(array_agg(seq IS NULL AND next_due > now() + interval '1 s' AND next_due < now() + interval '1.6 s'), 'G: backoff next_due') FROM g2;
SELECT pg_sleep(1.6);
SELECT pg_temp.ok(count(*) = 1 AND min(seq) = (SELECT seq FROM g1), 'G: redelivered after the backoff')
  FROM pg_temp.pop(pg_temp.qn('bo'), NULL, NULL, 10, 1, pg_temp.L(10));

-- H. a completed ack resets the counter when it completes the batch
SELECT queen.configure('', pg_temp.qn('rs'), NULL, NULL, '{"retryDelay": 0}');
SELECT pg_temp.pushn(pg_temp.qn('rs'), 'p', 2);
CREATE TEMP TABLE h1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('rs'), NULL, NULL, 10, 1, pg_temp.L(11));
SELECT FROM pg_temp.ack1(NULL, (SELECT min(partition_id) FROM h1), (SELECT min(seq) FROM h1), 'failed', pg_temp.L(11), NULL);
CREATE TEMP TABLE h2 AS SELECT * FROM pg_temp.pop(pg_temp.qn('rs'), NULL, NULL, 10, 1, pg_temp.L(12));
SELECT pg_temp.ok(count(*) = 2, 'H: redelivered') FROM h2;
SELECT pg_temp.ok_one(array_agg(r.attempts = 1), 'H: counter 1 before') FROM queen.ready r WHERE r.lease_id = pg_temp.L(12);
SELECT pg_temp.pushn(pg_temp.qn('rs'), 'p', 1);
SELECT pg_temp.ok(bool_and(success) AND bool_or(lease_released), 'H: completed batch')
  FROM pg_temp.ack_all(NULL, ARRAY(SELECT partition_id FROM h2), ARRAY(SELECT seq FROM h2), 'completed', pg_temp.L(12));
SELECT pg_temp.ok_one(array_agg(r.attempts = 0 AND r.lease_id IS NULL), 'H: counter reset on completion')
  FROM queen.ready r WHERE r.partition_id = (SELECT min(partition_id) FROM h1);
