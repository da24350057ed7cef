-- retention, completed retention, maxWaitTime eviction, segments (spec 5)
\ir _lib.psql
SELECT queen.configure('', pg_temp.qn('ret'), NULL, NULL, '{"retentionEnabled": true, "retentionSeconds": 1}');
SELECT queen.configure('', pg_temp.qn('cret'), NULL, NULL, '{"retentionEnabled": true, "completedRetentionSeconds": 1}');
SELECT queen.configure('', pg_temp.qn('cretlag'), NULL, NULL, '{"retentionEnabled": true, "completedRetentionSeconds": 1}');
SELECT queen.configure('', pg_temp.qn('mw'), NULL, NULL, '{"retentionEnabled": true, "maxWaitTimeSeconds": 1}');
SELECT queen.configure('', pg_temp.qn('keep'), NULL, NULL, '{"retentionSeconds": 1}');   -- not enabled

CREATE FUNCTION pg_temp.nmsg(q text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
    JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = q $$;

SELECT pg_temp.pushn(pg_temp.qn('ret'), 'p', 3);
SELECT pg_temp.pushn(pg_temp.qn('keep'), 'p', 3);
SELECT pg_temp.pushn(pg_temp.qn('cret'), 'p', 3);
-- a named group that never consumes pins the messages of cretlag
SELECT FROM queen.pop('', pg_temp.qn('cretlag'), NULL, 'lazy', NULL, NULL, 1, 1, NULL, false);
SELECT pg_temp.pushn(pg_temp.qn('cretlag'), 'p', 3);
-- mw: a second group created before the push consumes one message
SELECT FROM queen.pop('', pg_temp.qn('mw'), NULL, 'g2', NULL, NULL, 1, 1, NULL, false);
SELECT pg_temp.pushn(pg_temp.qn('mw'), 'p', 3);
SELECT queen.configure('', pg_temp.qn('mw0'), NULL, NULL, '{"maxWaitTimeSeconds": 1}');
SELECT pg_temp.pushn(pg_temp.qn('mw0'), 'p', 3);
-- cbus: one named group consumes 2 of 3
SELECT queen.configure('', pg_temp.qn('cbus'), NULL, NULL, '{"retentionEnabled": true, "completedRetentionSeconds": 1}');
SELECT pg_temp.pushn(pg_temp.qn('cbus'), 'p', 3);
SELECT pg_temp.ok(count(*) = 2, 'bus group consumed two')
  FROM queen.pop('', pg_temp.qn('cbus'), NULL, 'bus', NULL, NULL, 2, 1, NULL, true) WHERE seq IS NOT NULL;
SELECT pg_temp.ok(count(*) = 1, 'g2 consumed one') FROM queen.pop('', pg_temp.qn('mw'), NULL, 'g2', NULL, NULL, 1, 1, NULL, true) WHERE seq IS NOT NULL;
-- cret: queue mode consumes 2 of 3
CREATE TEMP TABLE c1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('cret'), NULL, NULL, 2, 1, pg_temp.L(1));
SELECT FROM pg_temp.ack_all(NULL, ARRAY(SELECT partition_id FROM c1), ARRAY(SELECT seq FROM c1), 'completed', pg_temp.L(1));

SELECT pg_sleep(1.1);
SELECT pg_temp.pushn(pg_temp.qn('ret'), 'p', 1);     -- young: survives
CREATE TEMP TABLE rr AS SELECT * FROM queen.retention_run(100000);
SELECT pg_temp.ok(count(*) = 6 AND array_agg(job ORDER BY job) = ARRAY['completed_retention', 'deleted', 'drop_segments',
                  'ensure_segments', 'max_wait', 'retention'], 'jobs reported') FROM rr;
SELECT pg_temp.ok(pg_temp.nmsg(pg_temp.qn('ret')) = 1, 'retentionSeconds: old messages deleted, young kept');
SELECT pg_temp.ok(pg_temp.nmsg(pg_temp.qn('keep')) = 3, 'retention disabled: kept');
SELECT pg_temp.ok(pg_temp.nmsg(pg_temp.qn('cret')) = 1, 'completedRetention: consumed deleted, pending kept');
SELECT pg_temp.ok(pg_temp.nmsg(pg_temp.qn('cretlag')) = 3, 'completedRetention: a lagging group pins messages');
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '{"i":3}', 'completedRetention: the pending one is still delivered')
  FROM pg_temp.pop(pg_temp.qn('cret'), NULL, NULL, 10, 1, pg_temp.L(2));
-- maxWait: moved to the DLQ of each group that had not consumed them, then
-- deleted; only groups that exist count (g2 consumed one: it stays)
SELECT pg_temp.ok(pg_temp.nmsg(pg_temp.qn('mw')) = 1, 'maxWait: the 2 unconsumed evicted');
SELECT pg_temp.ok(count(*) = 2 AND count(*) FILTER (WHERE d.consumer_group = 'g2') = 2
                  AND bool_and(d.error = 'Message expired (maxWaitTimeSeconds)'), 'maxWait: DLQ per group')
  FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id WHERE q.name = pg_temp.qn('mw');
-- a queue no group consumes yet: every old message is unconsumed
SELECT pg_temp.ok(pg_temp.nmsg(pg_temp.qn('mw0')) = 0, 'maxWait without groups: evicted');
SELECT pg_temp.ok(count(*) = 3 AND bool_and(d.consumer_group = '__QUEUE_MODE__')
                  AND array_agg(convert_from(d.payload, 'UTF8') ORDER BY d.seq) = ARRAY['{"i":1}', '{"i":2}', '{"i":3}'],
                  'maxWait without groups: DLQ under the queue mode name')
  FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id WHERE q.name = pg_temp.qn('mw0');
-- completed retention of a queue consumed only by a named group (no queue
-- mode group ever created: nothing else pins its messages)
SELECT pg_temp.ok(pg_temp.nmsg(pg_temp.qn('cbus')) = 1, 'completedRetention, bus only: consumed deleted');
SELECT pg_temp.ok(pg_temp.gid(pg_temp.qn('cbus'), '__QUEUE_MODE__') IS NULL, 'no queue mode group on a bus queue');
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL) AND bool_and(next_due IS NULL), 'maxWait: nothing left to pop')
  FROM pg_temp.pop(pg_temp.qn('mw'), NULL, 'g2', 10, 1, pg_temp.L(3));
SELECT pg_temp.ok(count(*) = 0, 'maxWait: ready rows drained')
  FROM queen.ready r JOIN queen.queues q ON q.id = r.queue_id WHERE q.name = pg_temp.qn('mw');

-- segments: always >= 3 empty segments ahead of the sequence
SELECT pg_temp.ok(count(*) >= 3, 'segments ahead')
  FROM queen.segments WHERE lo > (SELECT last_value FROM queen.msg_seq);

-- a closed segment holding only messages of a queue whose retention has elapsed is dropped
INSERT INTO queen.system_state (key, value) VALUES ('segment_rows', '1000')
  ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
SELECT setval('queen.msg_seq', (SELECT max(hi) FROM queen.segments) - 1);
SELECT queen.ensure_segments();
SELECT pg_temp.pushn(pg_temp.qn('ret'), 'seg', 5);
SELECT set_config('test.seg', (SELECT relname FROM queen.segments WHERE lo <= (SELECT last_value FROM queen.msg_seq)
                                 AND hi > (SELECT last_value FROM queen.msg_seq)), false) \g /dev/null
SELECT setval('queen.msg_seq', (SELECT hi FROM queen.segments WHERE relname = current_setting('test.seg')));
SELECT queen.ensure_segments();
DELETE FROM queen.system_state WHERE key = 'segment_rows';
SELECT pg_temp.ok_one(array_agg(closed_at IS NOT NULL), 'segment closed') FROM queen.segments WHERE relname = current_setting('test.seg');
UPDATE queen.segments SET closed_at = now() - interval '2 minutes' WHERE relname = current_setting('test.seg');
SELECT FROM queen.retention_run(10);
SELECT pg_temp.ok(count(*) = 0, 'segment dropped') FROM queen.segments WHERE relname = current_setting('test.seg');
SELECT pg_temp.ok(to_regclass('queen.' || current_setting('test.seg')) IS NULL, 'segment table gone');
SELECT pg_temp.ok(pg_temp.nmsg(pg_temp.qn('keep')) = 3, 'other queues untouched');
SELECT pg_temp.ok(count(*) >= 3, 'segments still ahead') FROM queen.segments WHERE lo > (SELECT last_value FROM queen.msg_seq);
