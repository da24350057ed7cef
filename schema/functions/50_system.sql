-- 50_system.sql: the broker's flags and settings reads that C files once
-- spelled as SQL text (actors/http/system.c, actors/spool/spool.c,
-- actors/http/seal.c): the tables stay behind functions, like every other
-- call the broker makes.

-- ---------------------------------------------------------------------------
-- Maintenance flags (contract 3.20): queen.system_state rows
-- 'maintenance_mode' (pushes go to the spool) and 'pop_maintenance_mode'
-- (pops answer empty), value {"enabled": bool}.
-- ---------------------------------------------------------------------------

-- Writes one flag; returns the value written.
CREATE FUNCTION queen.maintenance_set(p_key text, p_enabled bool) RETURNS bool
LANGUAGE plpgsql AS $$
BEGIN
  IF p_key IS NULL OR p_key NOT IN ('maintenance_mode', 'pop_maintenance_mode') THEN
    RAISE EXCEPTION 'unknown maintenance flag %', p_key USING ERRCODE = '22023';
  END IF;
  INSERT INTO queen.system_state (key, value) VALUES (p_key, jsonb_build_object('enabled', p_enabled))
  ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
  RETURN p_enabled;
END
$$;

-- The flags that were ever written: (key, value as JSON text).
CREATE FUNCTION queen.maintenance_flags() RETURNS TABLE(key text, value text)
LANGUAGE sql STABLE AS $$
  SELECT s.key, s.value::text FROM queen.system_state s
   WHERE s.key IN ('maintenance_mode', 'pop_maintenance_mode')
$$;

-- ---------------------------------------------------------------------------
-- Queue settings the codec caches
-- ---------------------------------------------------------------------------

-- encryptionEnabled of the named queues (p_names: a JSON array of names) of
-- one tenant; queues that do not exist have no row.
CREATE FUNCTION queen.queue_encryption(p_tenant text, p_names jsonb)
RETURNS TABLE(name text, encryption_enabled bool)
LANGUAGE sql STABLE AS $$
  SELECT q.name, q.encryption_enabled FROM queen.queues q
   WHERE q.tenant = p_tenant AND q.name IN (SELECT jsonb_array_elements_text(p_names))
$$;
