-- 64_mesh.sql: mesh membership (table in migrations/0006_mesh.sql;
-- actors/mesh/mesh.c calls it through the catalogue statement mesh_beat).

-- Registers or refreshes p_address, forgets members silent for ten
-- expiries, and returns the other members beaten within p_expiry_ms (age
-- by the database clock, so broker clocks do not matter).
CREATE FUNCTION queen.mesh_beat(p_address text, p_epoch bigint, p_expiry_ms int)
RETURNS TABLE (address text, epoch bigint, age_ms bigint)
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queen.mesh_members AS m (address, epoch, heartbeat_at, started_at)
  VALUES (p_address, p_epoch, now(), now())
  ON CONFLICT ON CONSTRAINT mesh_members_pkey DO UPDATE
     SET heartbeat_at = now(),
         epoch = EXCLUDED.epoch,
         started_at = CASE WHEN m.epoch = EXCLUDED.epoch THEN m.started_at ELSE now() END;
  DELETE FROM queen.mesh_members m
   WHERE m.heartbeat_at < now() - make_interval(secs => p_expiry_ms * 10 / 1000.0);
  RETURN QUERY
    SELECT m.address, m.epoch,
           (extract(epoch FROM now() - m.heartbeat_at) * 1000)::bigint
      FROM queen.mesh_members m
     WHERE m.address <> p_address
       AND m.heartbeat_at >= now() - make_interval(secs => p_expiry_ms / 1000.0)
     ORDER BY m.address;
END;
$$;

-- The LISTEN/NOTIFY fallback (docs/mesh.md): one authenticated hints frame
-- as text on channel queen_mesh, to every broker of the cell that listens.
CREATE FUNCTION queen.mesh_notify(p_payload text) RETURNS void
LANGUAGE sql AS $$
  SELECT pg_notify('queen_mesh', p_payload);
$$;
