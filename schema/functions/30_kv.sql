-- 30_kv.sql: the kv store (storage 2.4, 4.9; table in migrations/0002_state.sql,
-- whose header gives the lock order). One call = one round trip = one transaction.

-- Write a value. p_if_version: NULL = unconditional, 0 = only if absent (an
-- expired row counts as absent), v > 0 = only if the live row has version v.
-- p_ttl_s > 0 sets an expiry, NULL or 0 none (every write sets it afresh).
-- status 'ok' (version, expires_at) or 'conflict' (current_version: the live
-- row's version, 0 when absent). The version is drawn after the row lock is
-- held (UPDATE and ON CONFLICT DO UPDATE evaluate SET on the locked row), so
-- it also increases along one key's history.
CREATE FUNCTION queen.kv_put(p_tenant text, p_ns text, p_key text, p_value bytea,
                             p_if_version bigint, p_ttl_s int)
RETURNS TABLE(status text, version bigint, expires_at timestamptz, current_version bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_exp timestamptz := CASE WHEN COALESCE(p_ttl_s, 0) > 0 THEN now() + make_interval(secs => p_ttl_s) END;
  v_ver bigint;
BEGIN
  IF p_if_version IS NULL THEN
    INSERT INTO queen.kv AS k (tenant, ns, key, value, version, expires_at)
    VALUES (p_tenant, p_ns, p_key, p_value, nextval('queen.kv_version_seq'), v_exp)
    ON CONFLICT (tenant, ns, key) DO UPDATE
      SET value = EXCLUDED.value, version = nextval('queen.kv_version_seq'),
          expires_at = EXCLUDED.expires_at, updated_at = now()
    RETURNING k.version INTO v_ver;
  ELSIF p_if_version = 0 THEN
    INSERT INTO queen.kv AS k (tenant, ns, key, value, version, expires_at)
    VALUES (p_tenant, p_ns, p_key, p_value, nextval('queen.kv_version_seq'), v_exp)
    ON CONFLICT (tenant, ns, key) DO UPDATE
      SET value = EXCLUDED.value, version = nextval('queen.kv_version_seq'),
          expires_at = EXCLUDED.expires_at, updated_at = now()
      WHERE k.expires_at IS NOT NULL AND k.expires_at <= now()
    RETURNING k.version INTO v_ver;
  ELSE
    UPDATE queen.kv k
       SET value = p_value, version = nextval('queen.kv_version_seq'), expires_at = v_exp,
           updated_at = now()
     WHERE k.tenant = p_tenant AND k.ns = p_ns AND k.key = p_key AND k.version = p_if_version
       AND (k.expires_at IS NULL OR k.expires_at > now())
    RETURNING k.version INTO v_ver;
  END IF;
  IF v_ver IS NOT NULL THEN
    RETURN QUERY SELECT 'ok'::text, v_ver, v_exp, v_ver;
    RETURN;
  END IF;
  -- conflict: a fresh snapshot sees the write that beat us
  SELECT k.version INTO v_ver FROM queen.kv k
   WHERE k.tenant = p_tenant AND k.ns = p_ns AND k.key = p_key
     AND (k.expires_at IS NULL OR k.expires_at > now());
  RETURN QUERY SELECT 'conflict'::text, NULL::bigint, NULL::timestamptz, COALESCE(v_ver, 0);
END
$$;

-- The live row, or no row.
CREATE FUNCTION queen.kv_get(p_tenant text, p_ns text, p_key text)
RETURNS TABLE(value bytea, version bigint, expires_at timestamptz, updated_at timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT k.value, k.version, k.expires_at, k.updated_at FROM queen.kv k
   WHERE k.tenant = p_tenant AND k.ns = p_ns AND k.key = p_key
     AND (k.expires_at IS NULL OR k.expires_at > now())
$$;

-- Delete. status 'deleted' (version: the deleted one), 'not_found' (absent
-- or expired), 'conflict' (version: the live row's; p_if_version did not match).
CREATE FUNCTION queen.kv_delete(p_tenant text, p_ns text, p_key text, p_if_version bigint)
RETURNS TABLE(status text, version bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_ver bigint;
  v_exp timestamptz;
BEGIN
  DELETE FROM queen.kv k
   WHERE k.tenant = p_tenant AND k.ns = p_ns AND k.key = p_key
     AND (p_if_version IS NULL OR k.version = p_if_version)
  RETURNING k.version, k.expires_at INTO v_ver, v_exp;
  IF FOUND THEN
    IF v_exp IS NULL OR v_exp > now() THEN
      RETURN QUERY SELECT 'deleted'::text, v_ver;
    ELSE
      RETURN QUERY SELECT 'not_found'::text, 0::bigint;     -- it had expired already
    END IF;
    RETURN;
  END IF;
  SELECT k.version INTO v_ver FROM queen.kv k
   WHERE k.tenant = p_tenant AND k.ns = p_ns AND k.key = p_key
     AND (k.expires_at IS NULL OR k.expires_at > now());
  IF FOUND THEN
    RETURN QUERY SELECT 'conflict'::text, v_ver;
  ELSE
    RETURN QUERY SELECT 'not_found'::text, 0::bigint;
  END IF;
END
$$;

-- The smallest string above every string that starts with p (byte order,
-- which is code point order in UTF-8), or NULL when there is none.
CREATE FUNCTION queen._prefix_end(p text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  s text := p;
  c int;
BEGIN
  WHILE length(s) > 0 LOOP
    c := ascii(right(s, 1));
    s := left(s, -1);
    IF c < 1114111 THEN
      c := c + 1;
      IF c BETWEEN 55296 AND 57343 THEN   -- surrogates are not characters
        c := 57344;
      END IF;
      RETURN s || chr(c);
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;

-- Live keys of a bucket in byte order: those starting with p_prefix and
-- after p_after, at most p_limit (the caller asks one more than it shows to
-- know whether there is a next page). An index range scan either way.
CREATE FUNCTION queen.kv_list(p_tenant text, p_ns text, p_prefix text, p_after text, p_limit int)
RETURNS TABLE(key text, version bigint, expires_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_lo  text := COALESCE(p_prefix, '');
  v_hi  text := queen._prefix_end(COALESCE(p_prefix, ''));
  v_aft text := COALESCE(p_after, '');
BEGIN
  IF v_hi IS NULL THEN
    RETURN QUERY
    SELECT k.key::text, k.version, k.expires_at, k.updated_at FROM queen.kv k
     WHERE k.tenant = p_tenant AND k.ns = p_ns AND k.key >= v_lo AND k.key > v_aft
       AND (k.expires_at IS NULL OR k.expires_at > now())
     ORDER BY k.key LIMIT p_limit;
  ELSE
    RETURN QUERY
    SELECT k.key::text, k.version, k.expires_at, k.updated_at FROM queen.kv k
     WHERE k.tenant = p_tenant AND k.ns = p_ns AND k.key >= v_lo AND k.key > v_aft
       AND k.key < v_hi
       AND (k.expires_at IS NULL OR k.expires_at > now())
     ORDER BY k.key LIMIT p_limit;
  END IF;
END
$$;

-- Expired rows, at most p_max per call (readers ignore them already, so the
-- sweep's lag is invisible). Re-checked on the locked row: a concurrent write
-- that gave the key a new life keeps it.
CREATE FUNCTION queen.kv_sweep(p_max int) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_n bigint;
BEGIN
  DELETE FROM queen.kv k
   USING (SELECT s.tenant, s.ns, s.key FROM queen.kv s
           WHERE s.expires_at <= now()
           ORDER BY s.expires_at LIMIT GREATEST(p_max, 1)
           FOR UPDATE SKIP LOCKED) x
   WHERE k.tenant = x.tenant AND k.ns = x.ns AND k.key = x.key AND k.expires_at <= now();
  GET DIAGNOSTICS v_n = ROW_COUNT;
  RETURN v_n;
END
$$;
