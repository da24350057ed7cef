-- mesh membership (schema/functions/64_mesh.sql, migrations/0006_mesh.sql):
-- a beat registers or refreshes the caller and lists the other members
-- beaten within the expiry; an expired member is not listed, one silent for
-- ten expiries is forgotten; a restart (new epoch) is recorded.
\ir _lib.psql

DELETE FROM queen.mesh_members;
SELECT pg_temp.ok(count(*) = 0, 'first member: nobody else') FROM queen.mesh_beat('10.0.0.1:6634', 1, 5000);
SELECT pg_temp.ok_one(array_agg(address = '10.0.0.1:6634' AND epoch = 1), 'the first member is listed to the second')
  FROM queen.mesh_beat('10.0.0.2:6634', 7, 5000);
SELECT pg_temp.ok_one(array_agg(address = '10.0.0.2:6634' AND epoch = 7 AND age_ms >= 0), 'and the second to the first')
  FROM queen.mesh_beat('10.0.0.1:6634', 1, 5000);

-- The second goes silent past the expiry: not listed any more, still known.
UPDATE queen.mesh_members SET heartbeat_at = now() - interval '6 seconds' WHERE address = '10.0.0.2:6634';
SELECT pg_temp.ok(count(*) = 0, 'a member silent past its expiry is not listed')
  FROM queen.mesh_beat('10.0.0.1:6634', 1, 5000);
SELECT pg_temp.ok(count(*) = 1, 'it is still known') FROM queen.mesh_members WHERE address = '10.0.0.2:6634';

-- It comes back after a restart: listed again with its new epoch.
SELECT pg_temp.ok(count(*) = 1, 'a beat after a restart') FROM queen.mesh_beat('10.0.0.2:6634', 8, 5000);
SELECT pg_temp.ok_one(array_agg(address = '10.0.0.2:6634' AND epoch = 8), 'listed again with its new epoch')
  FROM queen.mesh_beat('10.0.0.1:6634', 1, 5000);

-- Silent for ten expiries: forgotten.
UPDATE queen.mesh_members SET heartbeat_at = now() - interval '51 seconds' WHERE address = '10.0.0.2:6634';
SELECT pg_temp.ok(count(*) = 0, 'a long-dead member is not listed') FROM queen.mesh_beat('10.0.0.1:6634', 1, 5000);
SELECT pg_temp.ok(count(*) = 0, 'and forgotten') FROM queen.mesh_members WHERE address = '10.0.0.2:6634';
DELETE FROM queen.mesh_members;
