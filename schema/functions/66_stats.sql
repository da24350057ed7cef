-- ---------------------------------------------------------------------------
-- The maintained statistics (issue 18; table in migrations/0007_stats.sql,
-- docs/storage.md "Statistics")
-- ---------------------------------------------------------------------------

-- Before retention drops a segment (DETACH + DROP fire no DELETE trigger):
-- subtract its rows from their partitions' counts. Called by
-- queen._drop_segments inside its lock-timeout block, so a drop that gives
-- up rolls this back too.
CREATE FUNCTION queen._stats_segment_dropped(p_relname text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format(
    'UPDATE queen.partition_stats s SET messages = s.messages - d.n, updated_at = now()
       FROM (SELECT partition_id, count(*) AS n FROM queen.%I GROUP BY partition_id) d
      WHERE s.partition_id = d.partition_id', p_relname);
END
$$;

-- Checks the maintained counts against the messages (tests, operators):
-- one row per partition whose count is wrong. Scans every message.
CREATE FUNCTION queen.stats_verify()
RETURNS TABLE(partition_id bigint, counted bigint, maintained bigint)
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(m.pid, s.partition_id), COALESCE(m.n, 0), COALESCE(s.messages, 0)
    FROM (SELECT mm.partition_id AS pid, count(*) AS n FROM queen.messages mm GROUP BY 1) m
    FULL JOIN queen.partition_stats s ON s.partition_id = m.pid
   WHERE COALESCE(m.n, 0) <> COALESCE(s.messages, 0)
$$;
