-- 03_segments.sql: message segments (storage 2.2).

-- ---------------------------------------------------------------------------
-- Segments: keep >= 3 empty segments ahead of msg_seq (storage 2.2)
-- ---------------------------------------------------------------------------
-- Size of a new segment: system_state 'segment_rows' if set, else derived from
-- the fill rate of the last closed segment: clamp(rate * 20 min, 1M, 500M).
CREATE FUNCTION queen.ensure_segments() RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  v_last   bigint;
  v_top    bigint;
  v_ahead  int;
  v_size   bigint;
  v_rate   float8;
  v_room   bigint;
  v_made   int := 0;
  v_name   text;
  r        record;
BEGIN
  -- one maintainer at a time; others return at once
  IF NOT queen.try_lock_segments() THEN
    RETURN 0;
  END IF;
  SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END
    INTO v_last FROM queen.msg_seq;

  -- open / close bookkeeping (drives sizing and retention ages)
  UPDATE queen.segments SET opened_at = clock_timestamp()
   WHERE opened_at IS NULL AND lo <= v_last;
  UPDATE queen.segments SET closed_at = clock_timestamp()
   WHERE closed_at IS NULL AND hi - 1 <= v_last;

  SELECT count(*) FILTER (WHERE lo > v_last), max(hi) INTO v_ahead, v_top FROM queen.segments;
  v_top := COALESCE(v_top, 1);
  v_room := v_top - 1 - v_last;

  SELECT (value #>> '{}')::bigint INTO v_size FROM queen.system_state WHERE key = 'segment_rows';
  IF v_size IS NULL THEN
    SELECT (s.hi - s.lo) / GREATEST(extract(epoch FROM s.closed_at - s.opened_at), 1)
      INTO v_rate FROM queen.segments s
     WHERE s.closed_at IS NOT NULL AND s.opened_at IS NOT NULL
     ORDER BY s.lo DESC LIMIT 1;
    v_size := LEAST(GREATEST(COALESCE(v_rate, 0) * 1200, 1000000), 500000000)::bigint;
  END IF;

  -- >= 3 empty segments ahead, and at least one segment size of room
  WHILE v_ahead < 3 OR v_room < v_size LOOP
    v_name := 'messages_' || lpad(v_top::text, 19, '0');
    EXECUTE format('CREATE TABLE queen.%I (LIKE queen.messages INCLUDING DEFAULTS) '
                   'WITH (autovacuum_vacuum_insert_scale_factor = 0.05)', v_name);
    EXECUTE format('ALTER TABLE queen.messages ATTACH PARTITION queen.%I '
                   'FOR VALUES FROM (%s) TO (%s)', v_name, v_top, v_top + v_size);
    INSERT INTO queen.segments (lo, hi, relname) VALUES (v_top, v_top + v_size, v_name);
    v_top := v_top + v_size;
    v_room := v_room + v_size;
    v_ahead := v_ahead + 1;
    v_made := v_made + 1;
  END LOOP;
  RETURN v_made;
END
$$;
