-- 0020_idle_ready.sql: a drained (partition, group) keeps its ready row,
-- idle at avail_at = 'infinity' (issue 16; docs/storage.md, invariant I3).
-- The steady-state cycle then updates one row per (partition, group): push
-- wakes the idle row instead of inserting one, the drain idles it instead
-- of deleting it and upserting queen.cursors.
--
-- No data moves here: queen.cursors stays as the cold store of the pairs
-- drained before this release (the readers take a ready row's cursor
-- first, then the cursors row, then the group's start_seq, as before), and
-- a pair leaves it for good the first time a push wakes it (a ready row is
-- inserted with the cold cursor). Folding every cursors row into ready at
-- boot would hold the boot transaction for O(pairs) on large databases.
--
-- The migration number is what orders builds (docs/storage.md, Upgrades,
-- rule 3): an older broker, whose function set deletes drained rows and
-- pushes with ON CONFLICT DO NOTHING, would leave a message behind an idle
-- row for ever; it refuses this database instead of re-installing its
-- functions.

-- When the pair last drained (the cursors row's updated_at before): the
-- dashboard's partition lastActivity. Nullable, no default: a catalogue-only
-- change.
ALTER TABLE queen.ready ADD COLUMN drained_at timestamptz;

-- The claim index holds live rows only: an idle row is never claimed, and
-- keeping it out means a drain (live -> idle) adds no ready_claim entry and
-- the idle rows do not pile up as duplicates of (queue, group, infinity).
-- Readers of live rows say `avail_at < 'infinity'` so that the planner can
-- use it. Built here, in the boot transaction: before this release `ready`
-- held only live rows (drained ones were deleted), so it is small.
CREATE INDEX ready_claim_live ON queen.ready (queue_id, group_id, avail_at) WHERE avail_at < 'infinity';
DROP INDEX queen.ready_claim;
