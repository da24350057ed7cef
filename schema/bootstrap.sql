-- bootstrap.sql: run first at every boot, in the schema transaction
-- (kernel/schema.c; test/sql/apply.sh): the schema lock, then the tables
-- that record what the migrations and the function set did. Never changes
-- in a way an older build could not read (docs/storage.md, "Upgrades").

-- The schema lock: brokers booting together take turns. The key is the same
-- in every release ("queen schema", in the one-bigint key space of the
-- partition locks, schema/functions/02_locks.sql, far above any partition id).
SELECT pg_advisory_xact_lock(7193553170000001);

CREATE SCHEMA IF NOT EXISTS queen;

-- One row per applied migration (schema/migrations/NNNN_name.sql).
CREATE TABLE IF NOT EXISTS queen.schema_migrations (
  version    int PRIMARY KEY,                -- the NNNN of the name
  name       text COLLATE "C" NOT NULL,
  checksum   text NOT NULL,                  -- sha256 of the file, hex
  applied_at timestamptz NOT NULL DEFAULT now(),
  baseline   text COLLATE "C"                -- recognised from this file of a release
                                             -- before migrations; NULL: applied
);

-- The function set installed (schema/functions/, one row).
CREATE TABLE IF NOT EXISTS queen.schema_functions (
  single       bool PRIMARY KEY DEFAULT true CHECK (single),
  version      int NOT NULL,                 -- newest migration of the build that installed it
  checksum     text NOT NULL,                -- sha256 of the files concatenated in name order
  files        int NOT NULL,
  installed_at timestamptz NOT NULL DEFAULT now()
);
