-- configure: create / full replacement / option types and validation
\ir _lib.psql
CREATE TEMP TABLE c1 AS
  SELECT * FROM queen.configure('', pg_temp.qn('cfg'), 'ns', 'tk',
    '{"leaseTime": 10, "retryLimit": 5, "retryDelay": 250, "priority": 7, "delayedProcessing": 1,
      "windowBuffer": 2, "maxSize": 100, "ttl": 60, "retentionEnabled": true, "retentionSeconds": 30,
      "completedRetentionSeconds": 20, "maxWaitTimeSeconds": 40, "encryptionEnabled": true,
      "deadLetterQueue": true, "dlqAfterMaxRetries": true, "unknownKey": 1}');
SELECT pg_temp.ok_one(array_agg(options::jsonb = '{"leaseTime": 10, "retryLimit": 5, "retryDelay": 250, "priority": 7,
  "delayedProcessing": 1, "windowBuffer": 2, "maxSize": 100, "ttl": 60, "retentionEnabled": true,
  "retentionSeconds": 30, "completedRetentionSeconds": 20, "maxWaitTimeSeconds": 40,
  "encryptionEnabled": true, "deadLetterQueue": true, "dlqAfterMaxRetries": true, "conflate": false}'::jsonb),
  'options echoed with JSON types') FROM c1;
SELECT pg_temp.ok_one(array_agg((SELECT count(*) FROM json_object_keys(options)) = 16), '15 keys + conflate') FROM c1;
SELECT pg_temp.ok_one(array_agg(p.name = 'Default' AND p.queue_id = c1.queue_id), 'Default partition returned')
  FROM c1 JOIN queen.partitions p ON p.id = c1.partition_id;
SELECT pg_temp.ok_one(array_agg(q.namespace = 'ns' AND q.task = 'tk'), 'namespace/task stored')
  FROM queen.queues q WHERE q.name = pg_temp.qn('cfg');
-- no group yet: the queue mode group is created by the first queue mode pop
SELECT pg_temp.ok(count(*) = 0, 'no group created with the queue')
  FROM queen.consumer_groups g JOIN c1 ON g.queue_id = c1.queue_id;
SELECT FROM pg_temp.pop(pg_temp.qn('cfg'), NULL, NULL, 1, 1, NULL);
SELECT pg_temp.ok(count(*) = 1, 'queue mode group created by its first pop')
  FROM queen.consumer_groups g JOIN c1 ON g.queue_id = c1.queue_id
 WHERE g.name = '__QUEUE_MODE__' AND g.start_seq = 0 AND g.sub_mode = 'queue';

-- full replacement: missing keys reset to defaults, same ids, namespace reset
CREATE TEMP TABLE c2 AS SELECT * FROM queen.configure('', pg_temp.qn('cfg'), NULL, NULL, '{"retryLimit": "2"}');
SELECT pg_temp.ok_one(array_agg(c2.queue_id = c1.queue_id AND c2.partition_id = c1.partition_id), 'same ids') FROM c1, c2;
SELECT pg_temp.ok_one(array_agg(options::jsonb = '{"leaseTime": 300, "retryLimit": 2, "retryDelay": 1000, "priority": 0,
  "delayedProcessing": 0, "windowBuffer": 0, "maxSize": 0, "ttl": 3600, "retentionEnabled": false,
  "retentionSeconds": 0, "completedRetentionSeconds": 0, "maxWaitTimeSeconds": 0,
  "encryptionEnabled": false, "deadLetterQueue": false, "dlqAfterMaxRetries": false, "conflate": false}'::jsonb),
  'defaults restored') FROM c2;
SELECT pg_temp.ok_one(array_agg(q.namespace = '' AND q.task = ''), 'namespace reset') FROM queen.queues q WHERE q.name = pg_temp.qn('cfg');
SELECT pg_temp.ok(count(*) = 1, 'one Default partition') FROM queen.partitions p JOIN c1 ON p.queue_id = c1.queue_id;

-- non-object options = all defaults; the empty queue name is valid
SELECT pg_temp.ok_one(array_agg((options ->> 'leaseTime') = '300'), 'null options') FROM queen.configure('', pg_temp.qn('cfgnull'), NULL, NULL, NULL);
SELECT pg_temp.ok_one(array_agg((options ->> 'retryLimit') = '3'), 'array options') FROM queen.configure('', pg_temp.qn('cfgarr'), NULL, NULL, '[1]');
SELECT pg_temp.ok_one(array_agg((options ->> 'retentionEnabled') = 'true'), 'string bool') FROM queen.configure('', pg_temp.qn('cfgsb'), NULL, NULL, '{"retentionEnabled": "true"}');
SELECT pg_temp.ok_one(array_agg((options ->> 'leaseTime') = '5'), 'integral float') FROM queen.configure('', pg_temp.qn('cfgf'), NULL, NULL, '{"leaseTime": 5.0}');

-- invalid values raise 22023 naming the option
DO $$
DECLARE
  bad jsonb;
  opt text;
BEGIN
  FOR bad, opt IN VALUES ('{"leaseTime": "abc"}'::jsonb, 'leaseTime'), ('{"retryLimit": -1}', 'retryLimit'),
                     ('{"maxSize": 3000000000}', 'maxSize'), ('{"priority": 1.5}', 'priority'),
                     ('{"ttl": true}', 'ttl'), ('{"retryDelay": {}}', 'retryDelay'),
                     ('{"encryptionEnabled": "maybe"}', 'encryptionEnabled'),
                     ('{"retentionEnabled": 7}', 'retentionEnabled'),
                     ('{"windowBuffer": "NaN"}', 'windowBuffer')
  LOOP
    BEGIN
      PERFORM queen.configure('', pg_temp.qn('cfgbad'), NULL, NULL, bad);
      RAISE EXCEPTION 'ASSERTION FAILED: % accepted', bad;
    EXCEPTION WHEN SQLSTATE '22023' THEN
      IF position(opt IN SQLERRM) = 0 THEN
        RAISE EXCEPTION 'ASSERTION FAILED: message "%" does not name %', SQLERRM, opt;
      END IF;
    END;
  END LOOP;
END $$;
SELECT pg_temp.ok(count(*) = 0, 'failed configure created nothing') FROM queen.queues WHERE name = pg_temp.qn('cfgbad');

-- push auto-creates with defaults and the derived namespace/task (spec 2.1)
SELECT FROM pg_temp.push1(pg_temp.qn('billing') || '.invoice.v2', NULL, NULL, '{}');
SELECT FROM pg_temp.push1(pg_temp.qn('orders'), NULL, NULL, '{}');
SELECT pg_temp.ok_one(array_agg(namespace = pg_temp.qn('billing') AND task = 'invoice' AND lease_time = 300), 'derived a.b.c')
  FROM queen.queues WHERE name = pg_temp.qn('billing') || '.invoice.v2';
SELECT pg_temp.ok_one(array_agg(namespace = pg_temp.qn('orders') AND task = ''), 'derived plain')
  FROM queen.queues WHERE name = pg_temp.qn('orders');
SELECT pg_temp.ok(count(*) = 0, 'auto-created queue has no group yet')
  FROM queen.consumer_groups g JOIN queen.queues q ON q.id = g.queue_id
 WHERE q.name = pg_temp.qn('orders');
