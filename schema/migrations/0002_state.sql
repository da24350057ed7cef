-- 0002_state.sql: the tables of state and time in the broker (issue 4): the
-- kv store and timers (storage 2.4, 4.8, 4.9); their functions are
-- schema/functions/30_kv.sql and 31_timers.sql. A migration (see
-- 0001_catalog.sql); baseline of the earlier schema/030_state.sql.
--
-- Differences from the storage proposal (docs/http-api.md, "State: kv and
-- timers", says why):
--   * both tables carry the tenant (storage 11: "tenants from day one");
--   * a timer names its queue and partition by name (a timer may target a
--     queue that does not exist yet: the firing push creates it, as any push);
--   * a fired timer is not deleted but marked (fired_at, seq, partition_id,
--     payload emptied): that small record answers a late cancel with
--     "fired", lets an idempotent re-create recognise it, and is swept after
--     a retention period by queen.timer_sweep. Pending timers are the rows
--     with fired_at IS NULL (partial indexes).
--
-- Lock order (storage 3): L0 queue locks, L1 partition locks, L2 kv rows,
-- L3 timer rows. Firing takes L0/L1 for its candidates before it claims the
-- timer rows with SKIP LOCKED; a cancel waits only on the timer row.

-- ---------------------------------------------------------------------------
-- kv
-- ---------------------------------------------------------------------------

-- Versions never repeat (no ABA). CACHE 1 (the default): every session draws
-- from one counter, so a later write gets a higher version.
CREATE SEQUENCE queen.kv_version_seq AS bigint MINVALUE 1 START 1;

CREATE TABLE queen.kv (
  tenant     text COLLATE "C" NOT NULL DEFAULT '',
  ns         text COLLATE "C" NOT NULL,      -- the bucket
  key        text COLLATE "C" NOT NULL,
  value      bytea NOT NULL,                 -- the JSON text as sent
  version    bigint NOT NULL,
  expires_at timestamptz,                    -- NULL: never; reads ignore expired rows
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, ns, key)
) WITH (fillfactor = 80);
CREATE INDEX kv_expiry ON queen.kv (expires_at) WHERE expires_at IS NOT NULL;

-- ---------------------------------------------------------------------------
-- timers
-- ---------------------------------------------------------------------------

CREATE TABLE queen.timers (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant       text COLLATE "C" NOT NULL DEFAULT '',
  timer_id     text COLLATE "C" NOT NULL,    -- the client's timerId, or one the broker generated
  due_at       timestamptz NOT NULL,
  queue        text COLLATE "C" NOT NULL,
  partition    text COLLATE "C" NOT NULL DEFAULT 'Default',
  txn_id       text COLLATE "C" NOT NULL,    -- the client's transactionId, or minted
  txn_given    bool NOT NULL,
  payload      bytea NOT NULL,               -- the JSON text as sent, or its envelope (is_encrypted); emptied once fired
  is_encrypted bool NOT NULL DEFAULT false,  -- payload sealed by the broker (its queue is encrypted, spec 2.10)
  fingerprint  bytea NOT NULL,               -- sha256 of the definition (idempotent re-create)
  created_at   timestamptz NOT NULL DEFAULT now(),
  fired_at     timestamptz,                  -- NULL while pending
  seq          bigint,                       -- the message it became
  partition_id bigint,
  UNIQUE (tenant, timer_id)
) WITH (autovacuum_vacuum_scale_factor = 0.02);
CREATE INDEX timers_due ON queen.timers (due_at) WHERE fired_at IS NULL;
CREATE INDEX timers_queue ON queen.timers (tenant, queue, due_at, id) WHERE fired_at IS NULL;
CREATE INDEX timers_fired ON queen.timers (fired_at) WHERE fired_at IS NOT NULL;
