-- 0001_catalog.sql: Queen storage catalog (tables, sequences, indexes).
-- See docs/storage.md for the reason behind each object.
-- A migration: applied once, recorded with its checksum, never edited after a
-- release (a change is a new migration). Releases before migrations created
-- these tables with schema/001_catalog.sql: a database whose
-- queen.schema_version names that file is recognised as being at this
-- migration (kernel/schema.c, "baseline") and is not re-created.
-- The functions (schema/functions/) are applied after the migrations.

CREATE SCHEMA IF NOT EXISTS queen;

-- ---------------------------------------------------------------------------
-- Catalog
-- ---------------------------------------------------------------------------

CREATE TABLE queen.queues (
  id                          int  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant                      text COLLATE "C" NOT NULL DEFAULT '',
  name                        text COLLATE "C" NOT NULL,
  namespace                   text COLLATE "C" NOT NULL DEFAULT '',
  task                        text COLLATE "C" NOT NULL DEFAULT '',
  -- the 15 configure options of spec 3.5 (units as on the wire)
  lease_time                  int  NOT NULL DEFAULT 300,    -- s, 0 = 60 s
  retry_limit                 int  NOT NULL DEFAULT 3,
  retry_delay                 int  NOT NULL DEFAULT 1000,   -- ms, backoff of a failed-ack retry
  priority                    int  NOT NULL DEFAULT 0,      -- pop_ns order
  delayed_processing          int  NOT NULL DEFAULT 0,      -- s
  window_buffer               int  NOT NULL DEFAULT 0,      -- s
  max_size                    int  NOT NULL DEFAULT 0,      -- pending messages, 0 = unlimited
  ttl                         int  NOT NULL DEFAULT 3600,   -- s, stored only
  retention_enabled           bool NOT NULL DEFAULT false,
  retention_seconds           int  NOT NULL DEFAULT 0,
  completed_retention_seconds int  NOT NULL DEFAULT 0,
  max_wait_time_seconds       int  NOT NULL DEFAULT 0,
  encryption_enabled          bool NOT NULL DEFAULT false,
  dead_letter_queue           bool NOT NULL DEFAULT false,  -- stored only
  dlq_after_max_retries       bool NOT NULL DEFAULT false,  -- stored only
  -- room for later
  conflate                    bool NOT NULL DEFAULT false,
  kafka_view                  bool NOT NULL DEFAULT false,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant, name)
);
CREATE INDEX queues_ns ON queen.queues (tenant, namespace, task);

-- No foreign keys anywhere: an RI check is a trigger plus a FOR KEY SHARE row
-- lock on the parent per inserted row (push creates partitions). Deletes are
-- explicit (queen.queue_delete, queen.partition_delete, the graveyard sweep).
CREATE TABLE queen.partitions (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue_id   int    NOT NULL,
  name       text   COLLATE "C" NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (queue_id, name)
);
-- walk a queue's partitions in id order (group backfill, retention, sweeps)
CREATE INDEX partitions_queue_id ON queen.partitions (queue_id, id);

-- One row per (queue, group). The contract's queue mode group is the row named
-- '__QUEUE_MODE__' (sub_mode 'queue', start_seq 0). Every group, the queue
-- mode one included, is created by its first pop (or a transaction ack naming
-- it), so a queue only consumed by named groups has no queue mode group: push
-- writes ready rows only for groups that exist, and retention waits only for
-- them.
CREATE TABLE queen.consumer_groups (
  id           int  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue_id     int  NOT NULL,
  name         text COLLATE "C" NOT NULL,
  sub_mode     text COLLATE "C" NOT NULL DEFAULT 'all',  -- queue | all | new | timestamp
  sub_from     timestamptz,                 -- subscription instant (new / timestamp)
  start_seq    bigint NOT NULL DEFAULT 0,   -- cursor of partitions this group has no state on
  backfill_pos bigint,                      -- NULL = no backfill pending; else last partition id done
  retired      bool NOT NULL DEFAULT false, -- replaced by a whole-queue seek (storage 4.7)
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX consumer_groups_name ON queen.consumer_groups (queue_id, name) WHERE NOT retired;
CREATE INDEX consumer_groups_backfill ON queen.consumer_groups (queue_id) WHERE backfill_pos IS NOT NULL;

-- Subscription rows of spec 2.8 (named groups only): partition_name '' = any
-- partition of the queue. Written once when a group is created; never changed
-- by later pops.
CREATE TABLE queen.subscriptions (
  group_id       int  NOT NULL,
  partition_name text COLLATE "C" NOT NULL DEFAULT '',
  mode           text COLLATE "C" NOT NULL,        -- all | new | timestamp
  from_ts        timestamptz,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (group_id, partition_name)
);

-- ---------------------------------------------------------------------------
-- Messages: append-only, RANGE-partitioned by seq into segments
-- ---------------------------------------------------------------------------

-- CACHE must stay 1: per-session caches would break seq order = commit order
-- within a partition (invariant I1).
CREATE SEQUENCE queen.msg_seq AS bigint MINVALUE 1 START 1 CACHE 1;

CREATE TABLE queen.messages (
  seq          bigint      NOT NULL,
  partition_id bigint      NOT NULL,
  created_at   timestamptz NOT NULL,   -- clock_timestamp() read after the partition locks (I1')
  not_before   timestamptz,            -- per-message delay (delayMs / deliverAt): not delivered
                                       -- before; NULL when none or already past at push
  trace_id     uuid,
  is_encrypted bool        NOT NULL DEFAULT false,
  txn_id       text COLLATE "C",       -- client transactionId; NULL when the broker minted it
  producer     text,                   -- server-stamped producer identity
  payload      bytea       NOT NULL    -- opaque bytes (JSON text as sent)
) PARTITION BY RANGE (seq);
CREATE INDEX messages_pseq ON queen.messages (partition_id, seq);
CREATE INDEX messages_ptxn ON queen.messages (partition_id, txn_id) WHERE txn_id IS NOT NULL;
-- delayed messages only: a conflating pop finds the first one still pending
-- after the cursor without reading the backlog (messages without a delay pay
-- nothing)
CREATE INDEX messages_pdelay ON queen.messages (partition_id, seq) WHERE not_before IS NOT NULL;

-- Segment catalogue: one row per child table of queen.messages covering [lo, hi).
CREATE TABLE queen.segments (
  lo         bigint PRIMARY KEY,
  hi         bigint NOT NULL,
  relname    text   COLLATE "C" NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  opened_at  timestamptz,      -- first seen with msg_seq inside [lo, hi)
  closed_at  timestamptz,      -- first seen with msg_seq >= hi - 1: no message in it is newer
  queue_ids  int[]             -- census of the queues present, computed once closed
);

-- ---------------------------------------------------------------------------
-- Scheduling state (hot, small)
-- ---------------------------------------------------------------------------

-- One row per (partition, group) that may have work (invariant I3).
CREATE TABLE queen.ready (
  partition_id bigint NOT NULL,
  group_id     int    NOT NULL,
  queue_id     int    NOT NULL,
  avail_at     timestamptz NOT NULL,   -- claimable when <= now(); lease expiry while leased
  acked_seq    bigint NOT NULL,        -- live cursor while the row exists
  lease_id     uuid,                   -- NULL = not leased; the pop's leaseId
  leased_from  bigint,                 -- cursor when the lease was granted
  leased_to    bigint,                 -- highest seq handed out under the lease
  batch_size   int    NOT NULL DEFAULT 0,  -- messages delivered under the lease (spec 2.6)
  acked_count  int    NOT NULL DEFAULT 0,  -- acks counted against batch_size
  attempts     int    NOT NULL DEFAULT 0,  -- batch retry counter (spec 2.7)
  PRIMARY KEY (partition_id, group_id)
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01,
        autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
CREATE INDEX ready_claim ON queen.ready (queue_id, group_id, avail_at);
CREATE INDEX ready_lease ON queen.ready (lease_id) WHERE lease_id IS NOT NULL;

-- Cold cursor of (partition, group) pairs with no ready row.
CREATE TABLE queen.cursors (
  partition_id bigint NOT NULL,
  group_id     int    NOT NULL,
  acked_seq    bigint NOT NULL,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (partition_id, group_id)
) WITH (fillfactor = 80);
-- (group_id, partition_id), not (group_id) alone: a generic plan that picks
-- this index for a (partition, group) lookup must still probe one row, not
-- walk every cursor of the group.
CREATE INDEX cursors_group ON queen.cursors (group_id, partition_id);

-- ---------------------------------------------------------------------------
-- Failure, system state, deferred deletes
-- ---------------------------------------------------------------------------

CREATE TABLE queen.dead_letters (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue_id       int    NOT NULL,
  partition_id   bigint NOT NULL,
  consumer_group text   COLLATE "C" NOT NULL,
  seq            bigint NOT NULL,
  txn_id         text   COLLATE "C",      -- NULL: the message id is its transaction id
  trace_id       uuid,
  producer       text,
  is_encrypted   bool   NOT NULL DEFAULT false,
  created_at     timestamptz NOT NULL,    -- the message's created_at
  failed_at      timestamptz NOT NULL DEFAULT now(),
  retry_count    int    NOT NULL DEFAULT 0,
  error          text,
  payload        bytea  NOT NULL          -- copied: the DLQ outlives message deletion
);
CREATE INDEX dead_letters_queue ON queen.dead_letters (queue_id, failed_at);
CREATE INDEX dead_letters_partition ON queen.dead_letters (partition_id, seq);

CREATE TABLE queen.system_state (
  key   text COLLATE "C" PRIMARY KEY,
  value jsonb
);

-- Queues and partitions deleted but whose rows (messages, ready, cursors,
-- partitions) are still being swept in small batches by queen.retention_run.
CREATE TABLE queen.graveyard (
  kind       "char" NOT NULL,          -- 'q' queue (sweep its partitions), 'p' one partition
  id         bigint NOT NULL,          -- queue id or partition id
  deleted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (kind, id)
);
