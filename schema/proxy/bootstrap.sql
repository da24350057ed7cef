-- schema/proxy/bootstrap.sql: run first at every queen-proxy boot (and by
-- every sub-command), in the schema transaction (kernel/schema.c, the
-- broker's runner): the proxy's schema lock, then the table that records
-- the migrations of schema/proxy/ (docs/tenancy.md, "Its own schema").
-- Never changes in a way an older build could not read.

-- The proxy's schema lock: proxies booting together take turns. Not the
-- broker's key (schema/bootstrap.sql): a proxy may share its database.
SELECT pg_advisory_xact_lock(7193553170000012);

CREATE SCHEMA IF NOT EXISTS queen_proxy;

-- One row per applied migration (schema/proxy/NNNN_name.sql).
CREATE TABLE IF NOT EXISTS queen_proxy.schema_migrations (
  version    int PRIMARY KEY,
  name       text NOT NULL,
  checksum   text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);
