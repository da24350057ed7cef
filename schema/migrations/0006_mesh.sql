-- 0006_mesh.sql: the cell's mesh membership (issue 13; docs/mesh.md).
-- Every broker with a mesh port registers its address (the id peers dial,
-- MESH_ADVERTISED_HOST:MESH_PORT) and beats every second
-- (queen.mesh_beat in schema/functions/64_mesh.sql); the others connect to
-- the rows beaten within the expiry and drop the rest. A row is only a
-- latency hint: nothing reads it on a message path.
CREATE TABLE queen.mesh_members (
  address      text        PRIMARY KEY,
  epoch        bigint      NOT NULL,       -- the broker's boot instant (wall us): a new one = a restart
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  started_at   timestamptz NOT NULL DEFAULT now()
);
