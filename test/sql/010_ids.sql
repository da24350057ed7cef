-- id encoding shared with the C broker
\ir _lib.psql
SELECT pg_temp.ok(queen.uuid_of(1, 5)::text = '00000001-0000-8000-8000-000000000005', 'message seq 5');
SELECT pg_temp.ok(queen.uuid_of(2, 1)::text = '00000002-0000-8000-8000-000000000001', 'partition 1');
SELECT pg_temp.ok(queen.uuid_of(3, 4660)::text = '00000003-0000-8000-8000-000000001234', 'queue 0x1234');
SELECT pg_temp.ok(queen.uuid_of(5, 4611686018427387903)::text = '00000005-0000-8000-bfff-ffffffffffff', 'max id');
SELECT pg_temp.ok(queen.uuid_of(4, 1311768467463790320)::text = '00000004-0000-8000-9234-56789abcdef0', 'group id bits');
SELECT pg_temp.ok(queen.id_of(1, queen.uuid_of(1, 5)) = 5, 'round trip');
SELECT pg_temp.ok(queen.id_of(1, queen.uuid_of(1, 4611686018427387903)) = 4611686018427387903, 'round trip max');
SELECT pg_temp.ok(queen.id_of(2, queen.uuid_of(1, 5)) IS NULL, 'wrong kind -> NULL');
SELECT pg_temp.ok(queen.id_of(1, '00000001-0000-8000-0000-000000000005') IS NULL, 'top bit clear -> NULL');
SELECT pg_temp.ok(queen.id_of(1, '0190f3c2-1111-7000-8000-000000000001') IS NULL, 'uuidv7 -> NULL');
-- ids sort in seq order as strings
SELECT pg_temp.ok(queen.uuid_of(1, 9)::text < queen.uuid_of(1, 10)::text
                  AND queen.uuid_of(1, 255)::text < queen.uuid_of(1, 256)::text, 'string order');
