-- autoAck: cursor moves past the delivered messages, no lease (spec 3.7 point 5)
\ir _lib.psql
SELECT pg_temp.pushn(pg_temp.qn('aa'), 'p', 5);
CREATE TEMP TABLE a1 AS SELECT * FROM queen.pop('', pg_temp.qn('aa'), NULL, NULL, NULL, NULL, 2, 1, NULL, true);
SELECT pg_temp.ok(count(*) = 2 AND bool_and(lease_expires_at IS NULL), 'auto-ack: 2, no lease') FROM a1;
SELECT pg_temp.ok_one(array_agg(r.acked_seq = (SELECT max(seq) FROM a1) AND r.lease_id IS NULL AND r.avail_at <= now()), 'auto-ack: cursor moved, free')
  FROM queen.ready r WHERE r.partition_id = (SELECT min(partition_id) FROM a1);
CREATE TEMP TABLE a2 AS SELECT * FROM queen.pop('', pg_temp.qn('aa'), NULL, NULL, NULL, NULL, 10, 1, NULL, true);
SELECT pg_temp.ok(count(*) = 3 AND min(seq) > (SELECT max(seq) FROM a1), 'auto-ack: next pop continues') FROM a2;
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'auto-ack: drained')
  FROM queen.pop('', pg_temp.qn('aa'), NULL, NULL, NULL, NULL, 10, 1, NULL, true);
SELECT pg_temp.ok_one(array_agg(c.acked_seq = (SELECT max(seq) FROM a2)), 'auto-ack: stale row cleaned into cursors')
  FROM queen.cursors c WHERE c.partition_id = (SELECT min(partition_id) FROM a1);
