-- maxSize: pending messages (queue mode) may not exceed it (SQLSTATE QN429)
\ir _lib.psql
CREATE FUNCTION pg_temp.push_err(q text, n int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text;
BEGIN
  PERFORM pg_temp.pushn(q, 'p', n);
  RETURN 'ok';
EXCEPTION WHEN others THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
  RETURN st || '|' || msg;
END $$;
SELECT queen.configure('', pg_temp.qn('ms'), NULL, NULL, '{"maxSize": 3}');
SELECT pg_temp.ok(pg_temp.push_err(pg_temp.qn('ms'), 3) = 'ok', 'up to maxSize');
SELECT pg_temp.ok_one(array_agg(e = 'QN429|queue ' || pg_temp.qn('ms') || ' is full (maxSize 3)'), 'full: ' || coalesce(string_agg(e, ' / '), 'no row'))
  FROM pg_temp.push_err(pg_temp.qn('ms'), 1) e;
CREATE TEMP TABLE m1 AS SELECT * FROM pg_temp.pop(pg_temp.qn('ms'), NULL, NULL, 1, 1, pg_temp.L(1));
SELECT pg_temp.ok(pg_temp.push_err(pg_temp.qn('ms'), 1) LIKE 'QN429|%', 'leased is still pending');
SELECT FROM pg_temp.ack1(NULL, (SELECT partition_id FROM m1), (SELECT seq FROM m1), 'completed', pg_temp.L(1), NULL);
SELECT pg_temp.ok(pg_temp.push_err(pg_temp.qn('ms'), 2) LIKE 'QN429|%', 'two would exceed');
SELECT pg_temp.ok(pg_temp.push_err(pg_temp.qn('ms'), 1) = 'ok', 'room for one after an ack');
SELECT pg_temp.ok(count(*) = 4, 'refused pushes stored nothing (4 = 3 + 1)') FROM pg_temp.pop(pg_temp.qn('ms'), NULL, 'other', 10, 1, pg_temp.L(2));
