-- schema/proxy/0003_users.sql: human users of a tenant with password
-- logins, and their sessions (docs/tenancy.md "Users and sessions").
-- Passwords: Argon2id at the interactive cost, hashed and verified on the
-- proxy's hasher thread. Sessions: "qs_<id>_<secret>", only SHA-256 of the
-- 256-bit random secret is stored (a slow hash buys nothing for it).

CREATE TABLE queen_proxy.users (
  tenant      text COLLATE "C" NOT NULL REFERENCES queen_proxy.tenants (name),
  name        text COLLATE "C" NOT NULL CHECK (name ~ '^[A-Za-z0-9._@+-]{1,128}$'),
  role        text NOT NULL
              CHECK (role IN ('admin', 'read-write', 'read-only', 'producer', 'consumer')),
  hash        text NOT NULL CHECK (hash LIKE '$argon2id$%'),
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, name)
);

CREATE TABLE queen_proxy.sessions (
  id          text COLLATE "C" PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
  tenant      text COLLATE "C" NOT NULL,
  user_name   text COLLATE "C" NOT NULL,
  hash        text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  revoked_at  timestamptz,
  FOREIGN KEY (tenant, user_name) REFERENCES queen_proxy.users (tenant, name) ON DELETE CASCADE
);
CREATE INDEX sessions_user ON queen_proxy.sessions (tenant, user_name);

-- The stored hash of a user of an enabled tenant, for a login; nothing for
-- an unknown user or tenant (the proxy then verifies against a dummy).
CREATE FUNCTION queen_proxy.user_login(p_tenant text, p_name text)
RETURNS TABLE(role text, hash text)
LANGUAGE sql STABLE AS $$
  SELECT u.role, u.hash FROM queen_proxy.users u JOIN queen_proxy.tenants t ON t.name = u.tenant
   WHERE u.tenant = p_tenant AND u.name = p_name AND t.disabled_at IS NULL
$$;

CREATE FUNCTION queen_proxy.session_create(p_id text, p_tenant text, p_name text, p_hash text,
  p_ttl_ms bigint) RETURNS bigint
LANGUAGE sql AS $$
  INSERT INTO queen_proxy.sessions (id, tenant, user_name, hash, expires_at)
  VALUES (p_id, p_tenant, p_name, p_hash, now() + p_ttl_ms * interval '1 millisecond')
  RETURNING (extract(epoch FROM expires_at) * 1000)::bigint
$$;

CREATE FUNCTION queen_proxy.session_revoke(p_id text) RETURNS bool
LANGUAGE sql AS $$
  WITH u AS (UPDATE queen_proxy.sessions SET revoked_at = now()
              WHERE id = p_id AND revoked_at IS NULL RETURNING 1)
  SELECT EXISTS (SELECT 1 FROM u)
$$;

-- What a proxy loads with its key table: sessions not revoked, of users
-- of enabled tenants, with the user's current role; expiry in Unix ms.
-- Sessions expired within the last day come too, so that their bearers
-- are told "Session expired" rather than "Invalid session".
CREATE FUNCTION queen_proxy.sessions_active()
RETURNS TABLE(id text, tenant text, user_name text, role text, hash text, expires_ms bigint)
LANGUAGE sql STABLE AS $$
  SELECT s.id, s.tenant, s.user_name, u.role, s.hash,
         (extract(epoch FROM s.expires_at) * 1000)::bigint
    FROM queen_proxy.sessions s
    JOIN queen_proxy.users u ON u.tenant = s.tenant AND u.name = s.user_name
    JOIN queen_proxy.tenants t ON t.name = s.tenant
   WHERE s.revoked_at IS NULL AND s.expires_at > now() - interval '1 day' AND t.disabled_at IS NULL
   ORDER BY s.id
$$;

-- Users of a tenant (never a hash).
CREATE FUNCTION queen_proxy.admin_users(p_tenant text) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM queen_proxy.tenants WHERE name = p_tenant) THEN
    RAISE EXCEPTION 'Tenant not found' USING ERRCODE = 'QN404';
  END IF;
  RETURN (SELECT jsonb_build_object('users', COALESCE(jsonb_agg(jsonb_build_object(
            'name', u.name, 'role', u.role, 'createdAt', u.created_at,
            'sessions', (SELECT count(*) FROM queen_proxy.sessions s
                          WHERE s.tenant = u.tenant AND s.user_name = u.name
                            AND s.revoked_at IS NULL AND s.expires_at > now()))
            ORDER BY u.name), '[]'))
            FROM queen_proxy.users u WHERE u.tenant = p_tenant);
END
$$;

-- Creates a user, or with p_replace sets the role and password of an
-- existing one (its sessions end: a changed password logs out everywhere).
CREATE FUNCTION queen_proxy.admin_user_put(p_tenant text, p_name text, p_role text, p_hash text,
  p_replace bool) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM queen_proxy.tenants WHERE name = p_tenant) THEN
    RAISE EXCEPTION 'Tenant not found' USING ERRCODE = 'QN404';
  END IF;
  IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9._@+-]{1,128}$' THEN
    RAISE EXCEPTION 'user name must be 1 to 128 characters of A-Z a-z 0-9 . _ @ + -'
      USING ERRCODE = 'QN400';
  END IF;
  IF p_replace THEN
    UPDATE queen_proxy.users SET role = p_role, hash = p_hash WHERE tenant = p_tenant AND name = p_name;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'User not found' USING ERRCODE = 'QN404';
    END IF;
    UPDATE queen_proxy.sessions SET revoked_at = now()
     WHERE tenant = p_tenant AND user_name = p_name AND revoked_at IS NULL;
  ELSE
    INSERT INTO queen_proxy.users (tenant, name, role, hash) VALUES (p_tenant, p_name, p_role, p_hash)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'User exists already' USING ERRCODE = 'QN409';
    END IF;
  END IF;
  RETURN jsonb_build_object('tenant', p_tenant, 'name', p_name, 'role', p_role);
END
$$;

CREATE FUNCTION queen_proxy.admin_user_delete(p_tenant text, p_name text) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM queen_proxy.users WHERE tenant = p_tenant AND name = p_name;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'User not found' USING ERRCODE = 'QN404';
  END IF;
  RETURN jsonb_build_object('deleted', true);
END
$$;

-- A deleted tenant takes its users and sessions along (0002's function
-- knew neither).
CREATE OR REPLACE FUNCTION queen_proxy.admin_tenant_delete(p_name text) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM queen_proxy.tenants WHERE name = p_name FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Tenant not found' USING ERRCODE = 'QN404';
  END IF;
  DELETE FROM queen_proxy.sessions WHERE tenant = p_name;
  DELETE FROM queen_proxy.users WHERE tenant = p_name;
  DELETE FROM queen_proxy.api_keys WHERE tenant = p_name;
  DELETE FROM queen_proxy.usage WHERE tenant = p_name;
  DELETE FROM queen_proxy.tenants WHERE name = p_name;
  RETURN jsonb_build_object('deleted', true);
END
$$;

-- Enabled tenants and their effective limits, whether or not they have
-- keys (users and SSO identities are held to the same plan).
CREATE FUNCTION queen_proxy.tenants_active()
RETURNS TABLE(tenant text, requests_per_s int, messages_per_s int, max_body_bytes int, max_batch int,
              max_long_polls int)
LANGUAGE sql STABLE AS $$
  SELECT t.name, COALESCE(t.requests_per_s, p.requests_per_s),
         COALESCE(t.messages_per_s, p.messages_per_s), COALESCE(t.max_body_bytes, p.max_body_bytes),
         COALESCE(t.max_batch, p.max_batch), COALESCE(t.max_long_polls, p.max_long_polls)
    FROM queen_proxy.tenants t LEFT JOIN queen_proxy.plans p ON p.name = t.plan
   WHERE t.disabled_at IS NULL
   ORDER BY t.name
$$;
