-- 0007_stats.sql: the maintained statistics table (issue 18; functions in
-- schema/functions/66_stats.sql; docs/storage.md "Statistics").
-- One row per partition that ever held a message: how many messages it
-- stores now. queen.push adds what it inserts (its own statement, in
-- partition order, under the partition locks it already holds); every
-- DELETE of messages subtracts through the statement trigger below; the
-- retention job subtracts a segment's rows before it drops the segment
-- (queen._stats_segment_dropped). So the count is exact in every committed
-- state, and the status/overview reads count only the unconsumed tail of a
-- partition (seq > cursor, an index range) instead of all its messages.
-- Rows of deleted partitions are left behind at 0 and never read (every
-- read joins queen.partitions); the graveyard sweep removes them.
CREATE TABLE queen.partition_stats (
  partition_id bigint PRIMARY KEY,
  messages     bigint NOT NULL DEFAULT 0,
  updated_at   timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01);

-- An upgraded database starts from an exact count.
INSERT INTO queen.partition_stats (partition_id, messages)
SELECT partition_id, count(*) FROM queen.messages GROUP BY partition_id;

-- The trigger and its function belong with the table, not with the
-- re-installable function set (00_reset.sql drops every routine of the
-- schema queen, and a trigger's function cannot go while the trigger is
-- there): they live in their own schema, changed only by a migration.
CREATE SCHEMA IF NOT EXISTS queen_stats;

CREATE FUNCTION queen_stats.messages_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- rows locked in partition order, as queen.push does
  PERFORM 1 FROM queen.partition_stats s
   WHERE s.partition_id IN (SELECT DISTINCT g.partition_id FROM gone g)
   ORDER BY s.partition_id FOR UPDATE;
  UPDATE queen.partition_stats s SET messages = s.messages - d.n, updated_at = now()
    FROM (SELECT g.partition_id, count(*) AS n FROM gone g GROUP BY g.partition_id) d
   WHERE s.partition_id = d.partition_id;
  RETURN NULL;
END
$$;

CREATE TRIGGER messages_stats_deleted AFTER DELETE ON queen.messages
  REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION queen_stats.messages_deleted();
