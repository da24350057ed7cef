-- 0005_sqs.sql: the SQS front door's own state (spec shared/spec/sqs.md;
-- functions in schema/functions/62_sqs.sql). An SQS queue IS a native queue
-- (queen.queues, same name, same rows); these tables hold only what SQS has
-- and the native model has not:
--   sqs_queues    SQS settings of a queue (FIFO-ness, the attributes as the
--                 client gave them, tags, timestamps). A native queue without
--                 a row is adopted with the defaults on first use.
--   sqs_meta      per-message metadata written in the send transaction,
--                 only for messages that have any: message attributes
--                 (name -> [DataType, base64 value]), system attributes, the
--                 FIFO group and deduplication ids.
--   sqs_receives  receive count and first-receive instant per message
--                 (ApproximateReceiveCount; redrive to a dead-letter queue).
--   sqs_dedup     FIFO deduplication window (5 minutes), scope queue or group.
--   sqs_secret    the HMAC key of receipt handles, generated once, shared by
--                 every broker of the database.
-- Rows of a deleted queue (sqs_queues, sqs_dedup) are removed by
-- queen.sqs_delete. Not yet swept: sqs_meta / sqs_receives rows of messages
-- that retention drops, and expired sqs_dedup rows (they are ignored once
-- expired); see docs/sqs.md.
CREATE TABLE queen.sqs_queues (
  queue_id     int PRIMARY KEY,
  fifo         bool NOT NULL DEFAULT false,
  attrs        jsonb NOT NULL DEFAULT '{}',
  tags         jsonb NOT NULL DEFAULT '{}',
  created_at   timestamptz NOT NULL DEFAULT now(),
  modified_at  timestamptz NOT NULL DEFAULT now(),
  purged_at    timestamptz
);

CREATE TABLE queen.sqs_meta (
  partition_id bigint NOT NULL,
  seq          bigint NOT NULL,
  attrs        jsonb,
  sys_attrs    jsonb,
  group_id     text COLLATE "C",
  dedup_id     text COLLATE "C",
  sender_id    text COLLATE "C",
  message_id   text COLLATE "C",   -- a redriven copy: the original MessageId
  sent_at      timestamptz,        -- a redriven copy: the original SentTimestamp
  PRIMARY KEY (partition_id, seq)
);

CREATE TABLE queen.sqs_receives (
  partition_id bigint NOT NULL,
  seq          bigint NOT NULL,
  count        int NOT NULL DEFAULT 0,
  first_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (partition_id, seq)
);

CREATE TABLE queen.sqs_dedup (
  queue_id     int NOT NULL,
  scope_key    text COLLATE "C" NOT NULL,
  dedup_id     text COLLATE "C" NOT NULL,
  seq          bigint NOT NULL,
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (queue_id, scope_key, dedup_id)
);

CREATE TABLE queen.sqs_secret (
  id     int PRIMARY KEY CHECK (id = 1),
  secret bytea NOT NULL
);
INSERT INTO queen.sqs_secret (id, secret) VALUES (1, uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));  -- 244 random bits
