-- push: one row per item in input order (ord 1..n as the rows come), seqs
-- drawn in input order, whatever the partitions' order (the result arrays
-- are aggregated from a subquery sorted by ord: 11_push.sql)
\ir _lib.psql

CREATE TEMP TABLE po AS
SELECT row_number() OVER () AS pos, r.*
  FROM queen.push('', array_fill(pg_temp.qn('po')::text, ARRAY[60]),
                  ARRAY(SELECT 'p' || ((g * 7) % 10) FROM generate_series(1, 60) g),
                  ARRAY(SELECT CASE WHEN g % 4 = 0 THEN 't' || (g % 8) END FROM generate_series(1, 60) g),
                  ARRAY(SELECT convert_to('{"i":' || g || '}', 'UTF8') FROM generate_series(1, 60) g),
                  array_fill(NULL::uuid, ARRAY[60]), array_fill(NULL::text, ARRAY[60]),
                  array_fill(false, ARRAY[60]), false) r;
SELECT pg_temp.ok(count(*) = 60, 'P: 60 rows') FROM po;
SELECT pg_temp.ok(bool_and(pos = ord), 'P: rows in input order') FROM po;
SELECT pg_temp.ok(array_agg(seq ORDER BY ord) FILTER (WHERE NOT duplicate)
                  = array_agg(seq ORDER BY seq) FILTER (WHERE NOT duplicate),
                  'P: seqs drawn in input order') FROM po;
-- items 4k share transaction ids t0..t7 per partition: (p8, t4) at ord 4 and 44... duplicates answer the first seq
SELECT pg_temp.ok(count(*) FILTER (WHERE duplicate) > 0, 'P: in-call duplicates present') FROM po;
SELECT pg_temp.ok_count(array_agg(d.seq = f.seq), (SELECT count(*)::int FROM po WHERE duplicate),
                        'P: a duplicate answers the first item''s seq')
  FROM po d
  JOIN LATERAL (SELECT f.seq FROM po f WHERE f.partition_id = d.partition_id AND NOT f.duplicate
                  AND f.ord < d.ord
                  AND (SELECT 't' || (f.ord % 8)) = 't' || (d.ord % 8) AND f.ord % 4 = 0
                ORDER BY f.ord LIMIT 1) f ON true
 WHERE d.duplicate;
