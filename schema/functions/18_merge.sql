-- ---------------------------------------------------------------------------
-- broker-side upkeep of the cycle (issue 16): what the retention actor's
-- maintenance connection reads to decide when to vacuum queen.ready
-- ---------------------------------------------------------------------------
-- Every pop's lease and every ack's drain updates or deletes a queen.ready
-- row, so the table's dead row versions pile up at the cycle's pace, and the
-- claim scan (ready_claim) walks their index entries until a vacuum removes
-- them (docs/benchmarks.md, finding 5); autovacuum's scale factor waits for
-- 20 % of a small table plus its nap time. The broker vacuums the table
-- itself (actors/retention/retention.c, READY_VACUUM_DEAD_ROWS) when
--   dead  : its dead row versions (the statistics' estimate), and
--   churn : its updates + deletes since the statistics began (the broker
--           takes the difference since its last vacuum, so a vacuum that
--           could not remove rows an old snapshot still sees is not repeated
--           until new churn arrives)
-- both reach the threshold. One row; zeros before the statistics know the
-- table.
CREATE FUNCTION queen.ready_churn()
RETURNS TABLE(dead bigint, churn bigint)
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(max(s.n_dead_tup), 0)::bigint, COALESCE(max(s.n_tup_upd + s.n_tup_del), 0)::bigint
    FROM pg_stat_user_tables s
   WHERE s.relid = 'queen.ready'::regclass
$$;
