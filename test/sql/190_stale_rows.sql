-- A pop is not answered empty while messages wait behind many stale ready
-- rows (rows whose partition has nothing after the cursor, left by
-- auto-acked pops): the claim keeps going while it only finds stale rows.
\ir _lib.psql
-- 20 partitions with one message each, drained by auto-ack pops that leave
-- their ready rows behind (auto-ack only tries the partition lock).
SELECT pg_temp.pushn(pg_temp.qn('st'), 'p' || g, 1) FROM generate_series (1, 20) g;
SELECT count(*) FROM generate_series (1, 20) g,
       LATERAL queen.pop('', pg_temp.qn('st'), NULL, NULL, NULL, NULL, 1, 1, NULL, true) x;
-- Make every ready row stale again for the test, whatever the pops cleaned.
INSERT INTO queen.ready (partition_id, group_id, queue_id, avail_at, acked_seq)
SELECT p.id, g.id, q.id, now() - interval '1 hour', (SELECT max(m.seq) FROM queen.messages m WHERE m.partition_id = p.id)
  FROM queen.queues q JOIN queen.partitions p ON p.queue_id = q.id
  JOIN queen.consumer_groups g ON g.queue_id = q.id AND g.name = '__QUEUE_MODE__'
 WHERE q.name = pg_temp.qn('st')
ON CONFLICT (partition_id, group_id) DO UPDATE SET avail_at = EXCLUDED.avail_at, acked_seq = EXCLUDED.acked_seq,
   lease_id = NULL;
-- Then 10 messages in a fresh partition: claimed last (newest avail_at).
SELECT pg_temp.pushn(pg_temp.qn('st'), 'fresh', 10);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(partition_name = 'fresh'),
                  'stale rows: the first pop (partitions=1) finds the waiting messages')
  FROM queen.pop('', pg_temp.qn('st'), NULL, NULL, NULL, NULL, 1, 1, NULL, false) WHERE seq IS NOT NULL;
