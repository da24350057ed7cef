-- queen.push_sqs (schema/functions/63_sqs_push.sql): SQS sends as push items,
-- merged with ordinary ones in one call. Metadata rows for SQS items only;
-- FIFO deduplication within the call and across calls (scope queue or
-- group); a missing queue refused (QN404) unless the item went through the
-- spool (a transaction id), which also makes that id the MessageId and the
-- send's instant the SentTimestamp; a replay already stored is a duplicate.
\ir _lib.psql

-- one call: items (queue, partition, txn, body, sqs metadata as text)
CREATE FUNCTION pg_temp.psqs(q text[], parts text[], txns text[], bodies text[], meta text[])
RETURNS TABLE(ord int, seq bigint, partition_id bigint, duplicate bool) LANGUAGE sql AS $$
  SELECT x.ord, x.seq, x.partition_id, x.duplicate
    FROM queen.push_sqs('', q, parts, txns, ARRAY(SELECT convert_to(b, 'UTF8') FROM unnest(bodies) b),
                        array_fill(NULL::uuid, ARRAY[cardinality(q)]),
                        array_fill('000000000000'::text, ARRAY[cardinality(q)]),
                        array_fill(false, ARRAY[cardinality(q)]), false, NULL,
                        meta::jsonb[]) x ORDER BY x.ord $$;
CREATE FUNCTION pg_temp.meta(pid bigint, s bigint) RETURNS queen.sqs_meta LANGUAGE sql AS $$
  SELECT * FROM queen.sqs_meta m WHERE m.partition_id = pid AND m.seq = s $$;

SELECT queen.sqs_create('', pg_temp.qn('std'), false, '{}', '{}');
SELECT queen.sqs_create('', pg_temp.qn('f') || '.fifo', true, '{}', '{}');
SELECT queen.sqs_create('', pg_temp.qn('g') || '.fifo', true, '{"DeduplicationScope":"messageGroup"}', '{}');

-- a native item and two SQS items in one call: one row each, in order;
-- metadata rows for the SQS items only, the sender from the producer
CREATE TEMP TABLE r1 AS
  SELECT * FROM pg_temp.psqs(ARRAY[pg_temp.qn('native'), pg_temp.qn('std'), pg_temp.qn('std')],
                             ARRAY['Default', '_sqs-1', '_sqs-2'], ARRAY[NULL, NULL, NULL]::text[],
                             ARRAY['{"n":1}', 'a', 'b'],
                             ARRAY[NULL, '{"attrs":{"k":["String","dg=="]},"sent":1}', '{}']);
SELECT pg_temp.ok_count(array_agg(NOT duplicate AND seq IS NOT NULL AND partition_id IS NOT NULL), 3,
                        'three items stored') FROM r1;
SELECT pg_temp.ok(array_agg(ord ORDER BY ord) = ARRAY[1, 2, 3], 'rows in item order') FROM r1;
SELECT pg_temp.ok_one(array_agg(pg_temp.meta(partition_id, seq) IS NULL), 'no metadata for the native item')
  FROM r1 WHERE ord = 1;
SELECT pg_temp.ok_count(array_agg((pg_temp.meta(partition_id, seq)).sender_id = '000000000000'
                                  AND (pg_temp.meta(partition_id, seq)).message_id IS NULL
                                  AND (pg_temp.meta(partition_id, seq)).sent_at IS NULL), 2,
                        'metadata of the SQS items; no MessageId of their own (not spooled)')
  FROM r1 WHERE ord > 1;
SELECT pg_temp.ok_one(array_agg((pg_temp.meta(partition_id, seq)).attrs = '{"k":["String","dg=="]}'),
                      'message attributes stored') FROM r1 WHERE ord = 2;

-- FIFO deduplication: a repeat in the call and one of an earlier call are
-- duplicates with the stored seq; not pushed
CREATE TEMP TABLE r2 AS
  SELECT * FROM pg_temp.psqs(array_fill(pg_temp.qn('f') || '.fifo', ARRAY[3]), ARRAY['g1', 'g1', 'g2'],
                             ARRAY[NULL, NULL, NULL]::text[], ARRAY['x', 'x-again', 'y'],
                             ARRAY['{"group":"g1","dedup":"d1"}', '{"group":"g1","dedup":"d1"}',
                                   '{"group":"g2","dedup":"d2"}']);
SELECT pg_temp.ok_one(array_agg(NOT duplicate), 'the first of a deduplication id is stored') FROM r2 WHERE ord = 1;
SELECT pg_temp.ok_one(array_agg(r.duplicate AND r.seq = f.seq AND r.partition_id IS NULL),
                      'a repeat in the same call is a duplicate of the first')
  FROM r2 r JOIN r2 f ON f.ord = 1 WHERE r.ord = 2;
SELECT pg_temp.ok_one(array_agg((pg_temp.meta(partition_id, seq)).dedup_id = 'd2'
                                AND (pg_temp.meta(partition_id, seq)).group_id = 'g2'),
                      'group and deduplication ids stored') FROM r2 WHERE ord = 3;
SELECT pg_temp.ok_one(array_agg(count = 2), 'two messages in the FIFO queue')
  FROM (SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
          JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = pg_temp.qn('f') || '.fifo') c;
CREATE TEMP TABLE r3 AS
  SELECT * FROM pg_temp.psqs(ARRAY[pg_temp.qn('f') || '.fifo'], ARRAY['g9'], ARRAY[NULL]::text[],
                             ARRAY['x-later'], ARRAY['{"group":"g9","dedup":"d1"}']);
SELECT pg_temp.ok_one(array_agg(r.duplicate AND r.seq = f.seq), 'scope queue: a later call with the id is a duplicate')
  FROM r3 r, r2 f WHERE f.ord = 1;
-- scope group: the same id in another group is a new message
CREATE TEMP TABLE r4 AS
  SELECT * FROM pg_temp.psqs(array_fill(pg_temp.qn('g') || '.fifo', ARRAY[2]), ARRAY['g1', 'g2'],
                             ARRAY[NULL, NULL]::text[], ARRAY['p', 'q'],
                             ARRAY['{"group":"g1","dedup":"d","scope":"group"}',
                                   '{"group":"g2","dedup":"d","scope":"group"}']);
SELECT pg_temp.ok_count(array_agg(NOT duplicate), 2, 'scope group: one id in two groups, two messages') FROM r4;

-- a missing queue: refused without a transaction id (nothing written) ...
DO $$
BEGIN
  PERFORM * FROM pg_temp.psqs(ARRAY[pg_temp.qn('std'), pg_temp.qn('gone')], ARRAY['_sqs-1', '_sqs-1'],
                              ARRAY[NULL, NULL]::text[], ARRAY['m', 'n'], ARRAY['{}', '{}']);
  RAISE EXCEPTION 'ASSERTION FAILED: a send to a missing queue was taken';
EXCEPTION WHEN SQLSTATE 'QN404' THEN
  NULL;
END $$;
SELECT pg_temp.ok(NOT EXISTS (SELECT 1 FROM queen.queues WHERE name = pg_temp.qn('gone')), 'no queue created');

-- ... and a spooled item (its transaction id minted by the spool) is stored
-- with that id as its MessageId, the send's instant as its SentTimestamp;
-- its replay again is a duplicate, with no second metadata row
CREATE TEMP TABLE r5 AS
  SELECT * FROM pg_temp.psqs(ARRAY[pg_temp.qn('gone')], ARRAY['_sqs-3'],
                             ARRAY['01900000-0000-7000-8000-00000000abcd'], ARRAY['spooled'],
                             ARRAY['{"sent":1700000000123456}']);
SELECT pg_temp.ok_one(array_agg(NOT duplicate
                                AND (pg_temp.meta(partition_id, seq)).message_id = '01900000-0000-7000-8000-00000000abcd'
                                AND (pg_temp.meta(partition_id, seq)).sent_at
                                    = timestamptz 'epoch' + 1700000000123456 * interval '1 microsecond'),
                      'a spooled send: its MessageId and SentTimestamp') FROM r5;
CREATE TEMP TABLE r6 AS
  SELECT * FROM pg_temp.psqs(ARRAY[pg_temp.qn('gone')], ARRAY['_sqs-3'],
                             ARRAY['01900000-0000-7000-8000-00000000abcd'], ARRAY['spooled'],
                             ARRAY['{"sent":1700000000123456}']);
SELECT pg_temp.ok_one(array_agg(r.duplicate AND r.seq = f.seq), 'a replay already stored is a duplicate')
  FROM r6 r, r5 f;
SELECT pg_temp.ok_one(array_agg(count = 1), 'one metadata row')
  FROM (SELECT count(*) FROM queen.sqs_meta m JOIN r5 ON m.partition_id = r5.partition_id AND m.seq = r5.seq) c;

-- the previous release's statement (queen.sqs_send) still works, through push_sqs
SELECT pg_temp.ok_one(array_agg(ord = 0), 'sqs_send: no queue')
  FROM queen.sqs_send('', pg_temp.qn('nope'), ARRAY['_sqs-1'], ARRAY['\x61'::bytea], ARRAY[NULL::bigint],
                      ARRAY[NULL::jsonb], ARRAY[NULL::jsonb], ARRAY[NULL::text], ARRAY[NULL::text],
                      's', false, false);
SELECT pg_temp.ok_one(array_agg(ord = 1 AND NOT duplicate AND queue_name = pg_temp.qn('std')), 'sqs_send: stored')
  FROM queen.sqs_send('', pg_temp.qn('std'), ARRAY['_sqs-1'], ARRAY['\x61'::bytea], ARRAY[NULL::bigint],
                      ARRAY[NULL::jsonb], ARRAY[NULL::jsonb], ARRAY[NULL::text], ARRAY[NULL::text],
                      's', false, false);

-- a message with a transaction id (the spooled send above) is deleted by
-- its receipt handle: queen.sqs_ack gives queen.ack the stored id
CREATE TEMP TABLE rcv AS
  SELECT * FROM queen.sqs_receive('', pg_temp.qn('gone'), 10, 30, '00000000-0000-4000-8000-0000000000c1', NULL, 0);
SELECT pg_temp.ok_one(array_agg(r.seq = f.seq), 'the spooled message is received') FROM rcv r, r5 f;
SELECT pg_temp.ok_one(array_agg(a.status = 'deleted'), 'and deleted')
  FROM rcv r, queen.sqs_ack('', pg_temp.qn('gone'), ARRAY[r.partition_id], ARRAY[r.seq],
                            ARRAY['00000000-0000-4000-8000-0000000000c1'::uuid]) a;
