-- 0003_streams.sql: the tables of the streaming SDK's state (contract 3.22;
-- functions in schema/functions/40_streams.sql; a migration, baseline of the
-- earlier schema/040_streams.sql). A streaming
-- query registers once (name, source queue, config hash), keeps keyed JSON
-- state per source partition, and commits each processing cycle -- state
-- upserts/deletes, sink pushes and the source ack -- in one transaction: one
-- call of queen_streams.cycle, which raises (rolling all of it back) on any
-- failure. See docs/storage.md "Streams".
--
-- The contract names the schema and its two tables (the SDK's test harness
-- deletes from queen_streams.queries directly, so state rows go with their
-- query: the one foreign key of the product, off the message hot path).
--
-- Lock order: the cycle lock (two-int advisory class 3, hash of query and
-- partition; only cycles take it) first, then the hot path's L0 queue locks,
-- L1 partition locks and L4/L5 ready/cursors rows (functions 11-15), then state
-- rows in key order.
--
-- SQLSTATEs (the broker answers 200 {"success": false, "error": <message>}):
--   QN404  Message not found / Query not found
--   QN409  Invalid or expired lease
--   QN400  Unknown state_op type: <t> / Unknown ack.status: <s>
--   and whatever the pushes raise (QN429 queue full, 40001 concurrent delete)

CREATE SCHEMA IF NOT EXISTS queen_streams;

CREATE TABLE queen_streams.queries (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant       text COLLATE "C" NOT NULL DEFAULT '',
  name         text COLLATE "C" NOT NULL,
  source_queue text COLLATE "C" NOT NULL,
  sink_queue   text COLLATE "C",             -- NULL: none
  config_hash  text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant, name)
);

-- One row per (query, source partition, key). partition_id is the wire
-- partitionId the SDK names (the state shard), kept as given.
CREATE TABLE queen_streams.state (
  query_id     uuid NOT NULL REFERENCES queen_streams.queries (id) ON DELETE CASCADE,
  partition_id uuid NOT NULL,
  key          text COLLATE "C" NOT NULL,
  value        jsonb NOT NULL,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (query_id, partition_id, key)
) WITH (fillfactor = 80);   -- value updates stay HOT
