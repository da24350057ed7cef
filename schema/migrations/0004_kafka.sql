-- 0004_kafka.sql: the Kafka view of queues (spec kafka.md §6, docs/kafka.md).
-- A migration: applied once, recorded with its checksum, never edited after
-- a release.

-- Kafka partition count of a queue: >= 1 = the Kafka view is on with that
-- many partitions ("kparts"); 0 = off (no kafka_log rows, invisible to
-- Kafka); NULL = Kafka has never named the queue (native pushes do no
-- Kafka work for it). Queues created natively start NULL; the first Kafka
-- request naming one (Metadata allowing auto-creation, Produce) sets it to
-- the broker's KAFKA_DEFAULT_PARTITIONS and its Kafka log starts then;
-- Kafka creation sets N. Fixed once >= 1 (a change would move entities
-- between kparts). (queues.kafka_view of 0001 stays unused.)
ALTER TABLE queen.queues ADD COLUMN kafka_partitions int
  CHECK (kafka_partitions BETWEEN 0 AND 1024);

-- Per-kpart offset counter: the push transaction locks the rows it needs
-- (sorted, after the native partition locks), hands out next_offset.. to
-- its rows and bumps it; holding the row lock until commit makes offsets
-- visible in offset order (a reader never later finds a smaller offset).
CREATE TABLE queen.kafka_partition_state (
  queue_id         int    NOT NULL,
  kpart            int    NOT NULL,
  next_offset      bigint NOT NULL DEFAULT 0,   -- the high watermark
  log_start_offset bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (queue_id, kpart)
);

-- Append-only offset index: one row per message of a Kafka-enabled queue.
-- ts_ms is the record's Kafka timestamp (producer CreateTime, or the
-- message's created_at for native pushes) so ListOffsets by time reads
-- this table alone.
CREATE TABLE queen.kafka_log (
  queue_id     int    NOT NULL,
  kpart        int    NOT NULL,
  koffset      bigint NOT NULL,
  partition_id bigint NOT NULL,
  seq          bigint NOT NULL,
  ts_ms        bigint NOT NULL,
  PRIMARY KEY (queue_id, kpart, koffset)
);
CREATE INDEX kafka_log_msg ON queen.kafka_log (partition_id, seq);

-- What a Kafka record has and a native message row has not, written in the
-- push transaction for Kafka-produced messages only: the producer's
-- timestamp, the raw key when it is not the partition name, a null value
-- (tombstone), the record headers (wire/kafka_meta.h encoding).
CREATE TABLE IF NOT EXISTS queen.message_meta (
  partition_id bigint NOT NULL,
  seq          bigint NOT NULL,
  ts_ms        bigint,
  raw_key      bytea,
  value_null   bool   NOT NULL DEFAULT false,
  headers      bytea,
  PRIMARY KEY (partition_id, seq)
);

-- Kafka consumer groups' committed offsets (unrelated to native groups).
CREATE TABLE queen.kafka_group_offset (
  group_name       text   COLLATE "C" NOT NULL,
  queue_id         int    NOT NULL,
  kpart            int    NOT NULL,
  committed_offset bigint NOT NULL,
  metadata         text,
  commit_ts        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (group_name, queue_id, kpart)
);

-- Idempotent producers: ids unique across restarts and replicas, and the
-- per (producer, kpart) sequence state with the last 5 batches.
CREATE SEQUENCE queen.kafka_producer_id AS bigint MINVALUE 1 START 1000;
CREATE TABLE queen.kafka_producer_state (
  producer_id    bigint   NOT NULL,
  queue_id       int      NOT NULL,
  kpart          int      NOT NULL,
  producer_epoch smallint NOT NULL,
  last_sequence  int      NOT NULL,
  recent         bigint[] NOT NULL DEFAULT '{}',  -- (base_seq, last_seq, base_offset) triples
  updated_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (producer_id, queue_id, kpart)
);
