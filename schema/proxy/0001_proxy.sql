-- schema/proxy/0001_proxy.sql: queen-proxy's own state (docs/tenancy.md),
-- in its own schema queen_proxy with its own version table
-- (queen_proxy.schema_migrations), applied at the proxy's boot like the
-- broker's migrations: append-only, each file once, checksummed.
CREATE TABLE queen_proxy.tenants (
  name        text COLLATE "C" PRIMARY KEY
              CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$'),
  created_at  timestamptz NOT NULL DEFAULT now(),
  disabled_at timestamptz
);

-- API keys: only the Argon2id hash of the secret is stored (wire/proxy_keys.h).
CREATE TABLE queen_proxy.api_keys (
  id          text COLLATE "C" PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
  tenant      text COLLATE "C" NOT NULL REFERENCES queen_proxy.tenants (name),
  role        text NOT NULL
              CHECK (role IN ('admin', 'read-write', 'read-only', 'producer', 'consumer')),
  hash        text NOT NULL CHECK (hash LIKE '$argon2id$%'),
  label       text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_keys_tenant ON queen_proxy.api_keys (tenant);

-- The keys a proxy may accept: active keys of enabled tenants.
CREATE FUNCTION queen_proxy.keys_active()
RETURNS TABLE(id text, tenant text, role text, hash text)
LANGUAGE sql STABLE AS $$
  SELECT k.id, k.tenant, k.role, k.hash
    FROM queen_proxy.api_keys k JOIN queen_proxy.tenants t ON t.name = k.tenant
   WHERE k.revoked_at IS NULL AND t.disabled_at IS NULL
   ORDER BY k.id
$$;

CREATE FUNCTION queen_proxy.tenant_create(p_name text) RETURNS bool
LANGUAGE sql AS $$
  WITH i AS (INSERT INTO queen_proxy.tenants (name) VALUES (p_name)
             ON CONFLICT (name) DO NOTHING RETURNING 1)
  SELECT EXISTS (SELECT 1 FROM i)
$$;

CREATE FUNCTION queen_proxy.key_create(p_id text, p_tenant text, p_role text, p_hash text,
  p_label text) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO queen_proxy.api_keys (id, tenant, role, hash, label)
  VALUES (p_id, p_tenant, p_role, p_hash, COALESCE(p_label, ''))
$$;

-- Revokes a key of the tenant; true when it was active.
CREATE FUNCTION queen_proxy.key_revoke(p_tenant text, p_id text) RETURNS bool
LANGUAGE sql AS $$
  WITH u AS (UPDATE queen_proxy.api_keys SET revoked_at = now()
              WHERE id = p_id AND tenant = p_tenant AND revoked_at IS NULL RETURNING 1)
  SELECT EXISTS (SELECT 1 FROM u)
$$;

CREATE FUNCTION queen_proxy.keys_list(p_tenant text)
RETURNS TABLE(id text, role text, label text, created_at timestamptz, revoked_at timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT k.id, k.role, k.label, k.created_at, k.revoked_at
    FROM queen_proxy.api_keys k WHERE k.tenant = p_tenant ORDER BY k.created_at, k.id
$$;
