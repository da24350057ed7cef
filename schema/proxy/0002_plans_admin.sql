-- schema/proxy/0002_plans_admin.sql: plans, the new limits (queues,
-- partitions, long-polls), operator keys and the functions behind the
-- proxy's admin routes (docs/tenancy.md, "Administration"). The admin
-- functions take and return jsonb, validate what they are given and raise
-- SQLSTATE QN4xx (the HTTP status) with a message for the client.

-- A plan is a named set of limits; a tenant follows one plan (or none) and
-- may override any limit with its own column (tenant first, then plan;
-- NULL in both: unlimited).
CREATE TABLE queen_proxy.plans (
  name            text COLLATE "C" PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$'),
  created_at      timestamptz NOT NULL DEFAULT now(),
  requests_per_s  int CHECK (requests_per_s > 0),
  messages_per_s  int CHECK (messages_per_s > 0),
  max_body_bytes  int CHECK (max_body_bytes > 0),
  max_batch       int CHECK (max_batch > 0),
  max_queues      int CHECK (max_queues > 0),
  max_partitions  int CHECK (max_partitions > 0),
  max_long_polls  int CHECK (max_long_polls > 0)
);

ALTER TABLE queen_proxy.tenants
  ADD COLUMN plan           text COLLATE "C" REFERENCES queen_proxy.plans (name),
  ADD COLUMN max_queues     int CHECK (max_queues > 0),
  ADD COLUMN max_partitions int CHECK (max_partitions > 0),
  ADD COLUMN max_long_polls int CHECK (max_long_polls > 0);

-- Operator keys: no tenant, role admin. They manage tenants, plans and
-- keys through /proxy/v1/admin/* and reach no broker route.
ALTER TABLE queen_proxy.api_keys ALTER COLUMN tenant DROP NOT NULL;
ALTER TABLE queen_proxy.api_keys
  ADD CONSTRAINT api_keys_operator_admin CHECK (tenant IS NOT NULL OR role = 'admin');

-- The limit names of the JSON shapes, in one place.
CREATE FUNCTION queen_proxy._limit_names() RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
  SELECT ARRAY['requestsPerSecond', 'messagesPerSecond', 'maxBodyBytes', 'maxBatch', 'maxQueues',
               'maxPartitions', 'maxLongPolls']
$$;

-- Checks a "limits" object: known names only, each null or an integer in
-- 1..2000000000. Raises QN400.
CREATE FUNCTION queen_proxy._limits_check(p jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  r record;
BEGIN
  IF p IS NULL THEN
    RETURN;
  END IF;
  IF jsonb_typeof(p) <> 'object' THEN
    RAISE EXCEPTION 'limits must be an object' USING ERRCODE = 'QN400';
  END IF;
  FOR r IN SELECT key, value FROM jsonb_each(p) LOOP
    IF NOT r.key = ANY (queen_proxy._limit_names()) THEN
      RAISE EXCEPTION 'unknown limit %; the limits are %', r.key,
        array_to_string(queen_proxy._limit_names(), ', ') USING ERRCODE = 'QN400';
    END IF;
    IF jsonb_typeof(r.value) <> 'null' AND (jsonb_typeof(r.value) <> 'number'
       OR r.value::numeric <> trunc(r.value::numeric) OR r.value::numeric < 1
       OR r.value::numeric > 2000000000) THEN
      RAISE EXCEPTION 'limit % must be null (unlimited) or an integer from 1 to 2000000000', r.key
        USING ERRCODE = 'QN400';
    END IF;
  END LOOP;
END
$$;

-- One limit of a "limits" object: the new value when present, else the old.
CREATE FUNCTION queen_proxy._limit(p jsonb, p_name text, p_old int) RETURNS int
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p IS NULL OR NOT p ? p_name THEN p_old
              WHEN jsonb_typeof(p -> p_name) = 'null' THEN NULL
              ELSE (p ->> p_name)::int END
$$;

CREATE FUNCTION queen_proxy._limits_json(p_rps int, p_mps int, p_body int, p_batch int, p_queues int,
  p_parts int, p_polls int) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('requestsPerSecond', p_rps, 'messagesPerSecond', p_mps,
    'maxBodyBytes', p_body, 'maxBatch', p_batch, 'maxQueues', p_queues, 'maxPartitions', p_parts,
    'maxLongPolls', p_polls)
$$;

CREATE FUNCTION queen_proxy._name_check(p_what text, p_name text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9._-]{1,64}$' THEN
    RAISE EXCEPTION '% name must be 1 to 64 characters of A-Z a-z 0-9 . _ -', p_what
      USING ERRCODE = 'QN400';
  END IF;
END
$$;

-- Only known members in a request object. Raises QN400.
CREATE FUNCTION queen_proxy._members_check(p jsonb, p_allowed text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  k text;
BEGIN
  IF p IS NULL OR jsonb_typeof(p) <> 'object' THEN
    RAISE EXCEPTION 'Request body must be a JSON object' USING ERRCODE = 'QN400';
  END IF;
  FOR k IN SELECT jsonb_object_keys(p) LOOP
    IF NOT k = ANY (p_allowed) THEN
      RAISE EXCEPTION 'unknown member %; allowed: %', k, array_to_string(p_allowed, ', ')
        USING ERRCODE = 'QN400';
    END IF;
  END LOOP;
END
$$;

CREATE FUNCTION queen_proxy._raise_not_found(p_message text) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%', p_message USING ERRCODE = 'QN404';
END
$$;

-- ------------------------------------------------------------------ plans
CREATE FUNCTION queen_proxy._plan_json(p queen_proxy.plans) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('name', p.name, 'createdAt', p.created_at,
    'limits', queen_proxy._limits_json(p.requests_per_s, p.messages_per_s, p.max_body_bytes,
                                       p.max_batch, p.max_queues, p.max_partitions, p.max_long_polls),
    'tenants', (SELECT count(*) FROM queen_proxy.tenants t WHERE t.plan = p.name))
$$;

CREATE FUNCTION queen_proxy.admin_plans() RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('plans', COALESCE(jsonb_agg(queen_proxy._plan_json(p) ORDER BY p.name), '[]'))
    FROM queen_proxy.plans p
$$;

CREATE FUNCTION queen_proxy.admin_plan(p_name text) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
  v queen_proxy.plans;
BEGIN
  SELECT * INTO v FROM queen_proxy.plans WHERE name = p_name;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Plan not found' USING ERRCODE = 'QN404';
  END IF;
  RETURN queen_proxy._plan_json(v);
END
$$;

-- Creates (p_name NULL: the body's "name") or replaces the limits of a plan:
-- {"name", "limits": {...}}. A PUT replaces every limit (absent: unlimited).
CREATE FUNCTION queen_proxy.admin_plan_put(p_name text, p_body jsonb, p_create bool) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_name text;
  v_l    jsonb;
  v      queen_proxy.plans;
BEGIN
  PERFORM queen_proxy._members_check(p_body, ARRAY['name', 'limits']);
  v_name := COALESCE(p_name, p_body ->> 'name');
  IF p_name IS NOT NULL AND p_body ? 'name' AND p_body ->> 'name' IS DISTINCT FROM p_name THEN
    RAISE EXCEPTION 'name in the body differs from the path' USING ERRCODE = 'QN400';
  END IF;
  IF p_body ? 'name' AND jsonb_typeof(p_body -> 'name') <> 'string' THEN
    RAISE EXCEPTION 'plan name must be a string' USING ERRCODE = 'QN400';
  END IF;
  PERFORM queen_proxy._name_check('plan', v_name);
  v_l := COALESCE(p_body -> 'limits', '{}');
  PERFORM queen_proxy._limits_check(v_l);
  IF p_create THEN
    INSERT INTO queen_proxy.plans (name) VALUES (v_name) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'Plan exists already' USING ERRCODE = 'QN409';
    END IF;
  END IF;
  UPDATE queen_proxy.plans SET
    requests_per_s = queen_proxy._limit(v_l, 'requestsPerSecond', NULL),
    messages_per_s = queen_proxy._limit(v_l, 'messagesPerSecond', NULL),
    max_body_bytes = queen_proxy._limit(v_l, 'maxBodyBytes', NULL),
    max_batch      = queen_proxy._limit(v_l, 'maxBatch', NULL),
    max_queues     = queen_proxy._limit(v_l, 'maxQueues', NULL),
    max_partitions = queen_proxy._limit(v_l, 'maxPartitions', NULL),
    max_long_polls = queen_proxy._limit(v_l, 'maxLongPolls', NULL)
   WHERE name = v_name RETURNING * INTO v;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Plan not found' USING ERRCODE = 'QN404';
  END IF;
  RETURN queen_proxy._plan_json(v);
END
$$;

CREATE FUNCTION queen_proxy.admin_plan_delete(p_name text) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM queen_proxy.tenants WHERE plan = p_name) THEN
    RAISE EXCEPTION 'Plan is in use by a tenant' USING ERRCODE = 'QN409';
  END IF;
  DELETE FROM queen_proxy.plans WHERE name = p_name;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Plan not found' USING ERRCODE = 'QN404';
  END IF;
  RETURN jsonb_build_object('deleted', true);
END
$$;

-- ------------------------------------------------------------------ tenants
CREATE FUNCTION queen_proxy._tenant_json(t queen_proxy.tenants) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('name', t.name, 'createdAt', t.created_at,
    'disabled', t.disabled_at IS NOT NULL, 'plan', t.plan,
    'limits', queen_proxy._limits_json(t.requests_per_s, t.messages_per_s, t.max_body_bytes,
                                       t.max_batch, t.max_queues, t.max_partitions, t.max_long_polls),
    'effective', queen_proxy._limits_json(
       COALESCE(t.requests_per_s, p.requests_per_s), COALESCE(t.messages_per_s, p.messages_per_s),
       COALESCE(t.max_body_bytes, p.max_body_bytes), COALESCE(t.max_batch, p.max_batch),
       COALESCE(t.max_queues, p.max_queues), COALESCE(t.max_partitions, p.max_partitions),
       COALESCE(t.max_long_polls, p.max_long_polls)),
    'keys', (SELECT count(*) FROM queen_proxy.api_keys k
              WHERE k.tenant = t.name AND k.revoked_at IS NULL))
    FROM (SELECT 1) one LEFT JOIN queen_proxy.plans p ON p.name = t.plan
$$;

CREATE FUNCTION queen_proxy.admin_tenants() RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('tenants',
           COALESCE(jsonb_agg(queen_proxy._tenant_json(t) ORDER BY t.name), '[]'))
    FROM queen_proxy.tenants t
$$;

CREATE FUNCTION queen_proxy.admin_tenant(p_name text) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
  v queen_proxy.tenants;
BEGIN
  SELECT * INTO v FROM queen_proxy.tenants WHERE name = p_name;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Tenant not found' USING ERRCODE = 'QN404';
  END IF;
  RETURN queen_proxy._tenant_json(v);
END
$$;

-- Updates a tenant from {"plan", "limits", "disabled"}: members absent stay
-- as they are; "plan": null leaves the plan; a limit null is unlimited
-- (then the plan's, if any).
CREATE FUNCTION queen_proxy.admin_tenant_update(p_name text, p_body jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v   queen_proxy.tenants;
  v_l jsonb;
BEGIN
  PERFORM queen_proxy._members_check(p_body, ARRAY['name', 'plan', 'limits', 'disabled']);
  IF p_body ? 'name' AND p_body ->> 'name' IS DISTINCT FROM p_name THEN
    RAISE EXCEPTION 'a tenant cannot be renamed' USING ERRCODE = 'QN400';
  END IF;
  IF p_body ? 'plan' AND jsonb_typeof(p_body -> 'plan') NOT IN ('string', 'null') THEN
    RAISE EXCEPTION 'plan must be a plan name or null' USING ERRCODE = 'QN400';
  END IF;
  IF p_body ? 'plan' AND jsonb_typeof(p_body -> 'plan') = 'string'
     AND NOT EXISTS (SELECT 1 FROM queen_proxy.plans WHERE name = p_body ->> 'plan') THEN
    RAISE EXCEPTION 'No plan %', p_body ->> 'plan' USING ERRCODE = 'QN400';
  END IF;
  IF p_body ? 'disabled' AND jsonb_typeof(p_body -> 'disabled') <> 'boolean' THEN
    RAISE EXCEPTION 'disabled must be true or false' USING ERRCODE = 'QN400';
  END IF;
  v_l := p_body -> 'limits';
  PERFORM queen_proxy._limits_check(v_l);
  SELECT * INTO v FROM queen_proxy.tenants WHERE name = p_name FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Tenant not found' USING ERRCODE = 'QN404';
  END IF;
  UPDATE queen_proxy.tenants SET
    plan = CASE WHEN p_body ? 'plan' THEN p_body ->> 'plan' ELSE v.plan END,
    disabled_at = CASE WHEN NOT p_body ? 'disabled' THEN v.disabled_at
                       WHEN (p_body -> 'disabled')::bool THEN COALESCE(v.disabled_at, now())
                       ELSE NULL END,
    requests_per_s = queen_proxy._limit(v_l, 'requestsPerSecond', v.requests_per_s),
    messages_per_s = queen_proxy._limit(v_l, 'messagesPerSecond', v.messages_per_s),
    max_body_bytes = queen_proxy._limit(v_l, 'maxBodyBytes', v.max_body_bytes),
    max_batch      = queen_proxy._limit(v_l, 'maxBatch', v.max_batch),
    max_queues     = queen_proxy._limit(v_l, 'maxQueues', v.max_queues),
    max_partitions = queen_proxy._limit(v_l, 'maxPartitions', v.max_partitions),
    max_long_polls = queen_proxy._limit(v_l, 'maxLongPolls', v.max_long_polls)
   WHERE name = p_name RETURNING * INTO v;
  RETURN queen_proxy._tenant_json(v);
END
$$;

-- Creates a tenant from {"name", "plan", "limits"} with its first admin key
-- (made by the proxy: only the id and hash come here).
CREATE FUNCTION queen_proxy.admin_tenant_create(p_body jsonb, p_key_id text, p_key_hash text)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_name text;
BEGIN
  PERFORM queen_proxy._members_check(p_body, ARRAY['name', 'plan', 'limits']);
  IF jsonb_typeof(p_body -> 'name') IS DISTINCT FROM 'string' THEN
    RAISE EXCEPTION 'tenant name must be a string' USING ERRCODE = 'QN400';
  END IF;
  v_name := p_body ->> 'name';
  PERFORM queen_proxy._name_check('tenant', v_name);
  INSERT INTO queen_proxy.tenants (name) VALUES (v_name) ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Tenant exists already' USING ERRCODE = 'QN409';
  END IF;
  INSERT INTO queen_proxy.api_keys (id, tenant, role, hash, label)
  VALUES (p_key_id, v_name, 'admin', p_key_hash, 'first admin key');
  RETURN jsonb_build_object('tenant', queen_proxy.admin_tenant_update(v_name, p_body - 'name'),
                            'id', p_key_id, 'role', 'admin');
END
$$;

-- Deletes a tenant and all the proxy holds for it (keys, usage; with 0003
-- users and sessions). Its queues stay in the brokers' tables: see
-- docs/tenancy.md.
CREATE FUNCTION queen_proxy.admin_tenant_delete(p_name text) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM queen_proxy.tenants WHERE name = p_name FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Tenant not found' USING ERRCODE = 'QN404';
  END IF;
  DELETE FROM queen_proxy.api_keys WHERE tenant = p_name;
  DELETE FROM queen_proxy.usage WHERE tenant = p_name;
  DELETE FROM queen_proxy.tenants WHERE name = p_name;
  RETURN jsonb_build_object('deleted', true);
END
$$;

-- ------------------------------------------------------------------ keys of a tenant
CREATE FUNCTION queen_proxy.admin_keys(p_tenant text) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM queen_proxy.tenants WHERE name = p_tenant) THEN
    RAISE EXCEPTION 'Tenant not found' USING ERRCODE = 'QN404';
  END IF;
  RETURN (SELECT jsonb_build_object('keys', COALESCE(jsonb_agg(jsonb_build_object(
            'id', k.id, 'role', k.role, 'label', k.label, 'createdAt', k.created_at,
            'revoked', k.revoked_at IS NOT NULL) ORDER BY k.created_at, k.id), '[]'))
            FROM queen_proxy.api_keys k WHERE k.tenant = p_tenant);
END
$$;

CREATE FUNCTION queen_proxy.admin_key_create(p_tenant text, p_id text, p_role text, p_hash text,
  p_label text) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM queen_proxy.tenants WHERE name = p_tenant) THEN
    RAISE EXCEPTION 'Tenant not found' USING ERRCODE = 'QN404';
  END IF;
  INSERT INTO queen_proxy.api_keys (id, tenant, role, hash, label)
  VALUES (p_id, p_tenant, p_role, p_hash, COALESCE(p_label, ''));
  RETURN jsonb_build_object('id', p_id, 'tenant', p_tenant, 'role', p_role);
END
$$;

-- ------------------------------------------------------------------ what a proxy loads
-- Active keys of enabled tenants with the tenant's effective limits, and
-- active operator keys (tenant ''). queen_proxy.keys_active stays for
-- proxies of the previous build during a rolling upgrade.
CREATE FUNCTION queen_proxy.keys_active2()
RETURNS TABLE(id text, tenant text, role text, hash text, requests_per_s int, messages_per_s int,
              max_body_bytes int, max_batch int, max_long_polls int)
LANGUAGE sql STABLE AS $$
  SELECT k.id, k.tenant, k.role, k.hash, COALESCE(t.requests_per_s, p.requests_per_s),
         COALESCE(t.messages_per_s, p.messages_per_s), COALESCE(t.max_body_bytes, p.max_body_bytes),
         COALESCE(t.max_batch, p.max_batch), COALESCE(t.max_long_polls, p.max_long_polls)
    FROM queen_proxy.api_keys k JOIN queen_proxy.tenants t ON t.name = k.tenant
    LEFT JOIN queen_proxy.plans p ON p.name = t.plan
   WHERE k.revoked_at IS NULL AND t.disabled_at IS NULL
  UNION ALL
  SELECT k.id, '', k.role, k.hash, NULL, NULL, NULL, NULL, NULL
    FROM queen_proxy.api_keys k WHERE k.tenant IS NULL AND k.revoked_at IS NULL
   ORDER BY 1
$$;

-- The counts the brokers enforce (schema/functions/68_tenancy.sql calls
-- this when a tenant's queue or partition is created, if the proxy's
-- schema is in the brokers' database): the effective limits, NULL for
-- unlimited, nothing for an unknown tenant.
CREATE FUNCTION queen_proxy.tenant_quota(p_tenant text, OUT max_queues int, OUT max_partitions int)
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(t.max_queues, p.max_queues), COALESCE(t.max_partitions, p.max_partitions)
    FROM queen_proxy.tenants t LEFT JOIN queen_proxy.plans p ON p.name = t.plan
   WHERE t.name = p_tenant
$$;

CREATE FUNCTION queen_proxy.operator_key_create(p_id text, p_hash text, p_label text) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO queen_proxy.api_keys (id, tenant, role, hash, label)
  VALUES (p_id, NULL, 'admin', p_hash, COALESCE(p_label, ''))
$$;
