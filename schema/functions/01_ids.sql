-- 01_ids.sql: wire ids <-> internal ids.

-- ---------------------------------------------------------------------------
-- Id encoding on the wire (the C broker renders the same strings)
-- ---------------------------------------------------------------------------
-- kind 1 message (id = seq), 2 partition, 3 queue, 4 consumer group, 5 DLQ row.
CREATE FUNCTION queen.uuid_of(kind int, id bigint) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT (lpad(to_hex(kind), 8, '0') || '-0000-8000-'
          || substr(h, 1, 4) || '-' || substr(h, 5, 12))::uuid
  FROM (SELECT lpad(to_hex(x'8000000000000000'::bigint | id), 16, '0') AS h) s
$$;

CREATE FUNCTION queen.id_of(kind int, u uuid) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN left(t, 19) = lpad(to_hex(kind), 8, '0') || '-0000-8000-'
               AND substr(t, 20, 1) IN ('8', '9', 'a', 'b')
              THEN ('x' || substr(t, 20, 4) || substr(t, 25, 12))::bit(64)::bigint
                   & x'3fffffffffffffff'::bigint
         END
  FROM (SELECT u::text AS t) s
$$;
