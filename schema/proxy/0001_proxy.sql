-- schema/proxy/0001_proxy.sql: queen-proxy's own state (docs/tenancy.md),
-- in its own schema queen_proxy with its own version table
-- (queen_proxy.schema_migrations), applied at the proxy's boot like the
-- broker's migrations: append-only, each file once, checksummed.
CREATE TABLE queen_proxy.tenants (
  name        text COLLATE "C" PRIMARY KEY
              CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$'),
  created_at  timestamptz NOT NULL DEFAULT now(),
  disabled_at timestamptz,
  -- Plan limits, enforced in each proxy (NULL: unlimited). Rates are per
  -- second with a burst of one second's worth (at least 1).
  requests_per_s  int CHECK (requests_per_s > 0),
  messages_per_s  int CHECK (messages_per_s > 0),
  max_body_bytes  int CHECK (max_body_bytes > 0),
  max_batch       int CHECK (max_batch > 0)
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

-- Usage per tenant and UTC day, added to by each proxy's flushes.
CREATE TABLE queen_proxy.usage (
  tenant       text COLLATE "C" NOT NULL REFERENCES queen_proxy.tenants (name),
  day          date NOT NULL,
  requests     bigint NOT NULL DEFAULT 0,
  messages_in  bigint NOT NULL DEFAULT 0,
  messages_out bigint NOT NULL DEFAULT 0,
  bytes_in     bigint NOT NULL DEFAULT 0,
  bytes_out    bigint NOT NULL DEFAULT 0,
  refused      bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant, day)
);

CREATE FUNCTION queen_proxy.usage_add(p_tenant text, p_requests bigint, p_in bigint, p_out bigint,
  p_bytes_in bigint, p_bytes_out bigint, p_refused bigint) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO queen_proxy.usage AS u (tenant, day, requests, messages_in, messages_out, bytes_in,
                                      bytes_out, refused)
  VALUES (p_tenant, (now() AT TIME ZONE 'UTC')::date, p_requests, p_in, p_out, p_bytes_in,
          p_bytes_out, p_refused)
  ON CONFLICT (tenant, day) DO UPDATE SET
    requests = u.requests + EXCLUDED.requests, messages_in = u.messages_in + EXCLUDED.messages_in,
    messages_out = u.messages_out + EXCLUDED.messages_out, bytes_in = u.bytes_in + EXCLUDED.bytes_in,
    bytes_out = u.bytes_out + EXCLUDED.bytes_out, refused = u.refused + EXCLUDED.refused
$$;

CREATE FUNCTION queen_proxy.usage_total(p_tenant text)
RETURNS TABLE(requests bigint, messages_in bigint, messages_out bigint, bytes_in bigint,
              bytes_out bigint, refused bigint)
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(sum(u.requests), 0)::bigint, COALESCE(sum(u.messages_in), 0)::bigint,
         COALESCE(sum(u.messages_out), 0)::bigint, COALESCE(sum(u.bytes_in), 0)::bigint,
         COALESCE(sum(u.bytes_out), 0)::bigint, COALESCE(sum(u.refused), 0)::bigint
    FROM queen_proxy.usage u WHERE u.tenant = p_tenant
$$;

CREATE FUNCTION queen_proxy.set_limits(p_tenant text, p_requests_per_s int, p_messages_per_s int,
  p_max_body_bytes int, p_max_batch int) RETURNS bool
LANGUAGE sql AS $$
  WITH u AS (UPDATE queen_proxy.tenants SET requests_per_s = p_requests_per_s,
                    messages_per_s = p_messages_per_s, max_body_bytes = p_max_body_bytes,
                    max_batch = p_max_batch
              WHERE name = p_tenant RETURNING 1)
  SELECT EXISTS (SELECT 1 FROM u)
$$;

-- The keys a proxy may accept: active keys of enabled tenants, with the
-- tenant's plan limits.
CREATE FUNCTION queen_proxy.keys_active()
RETURNS TABLE(id text, tenant text, role text, hash text, requests_per_s int, messages_per_s int,
              max_body_bytes int, max_batch int)
LANGUAGE sql STABLE AS $$
  SELECT k.id, k.tenant, k.role, k.hash, t.requests_per_s, t.messages_per_s, t.max_body_bytes,
         t.max_batch
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
