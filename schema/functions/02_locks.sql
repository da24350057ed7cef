-- 02_locks.sql: the advisory lock key spaces, named (docs/storage.md,
-- "Locking order"). Every transaction-level advisory lock of the schema goes
-- through one of these; they are one-line SQL functions, which the planner
-- inlines, so they cost what the bare pg_advisory_* call costs.
--
--   one bigint key       partition id: the partition push lock (L1)
--                        7193553170000001: the schema lock, taken by
--                        kernel/schema.c before any function exists
--   (1, queue id)        the queue lock (L0)
--   (2, job)             singleton maintenance jobs: 2 segment creation,
--                        3 the retention round
--   (3, hash)            a streams cycle of (query, partition)

-- L1: push, txn and partition delete wait for it; ack takes it shared (its
-- drain); pop and retention only try.
CREATE FUNCTION queen.lock_partition(p_pid bigint) RETURNS void
LANGUAGE sql AS $$ SELECT pg_advisory_xact_lock(p_pid) $$;

CREATE FUNCTION queen.try_lock_partition(p_pid bigint) RETURNS bool
LANGUAGE sql AS $$ SELECT pg_try_advisory_xact_lock(p_pid) $$;

CREATE FUNCTION queen.try_lock_partition_shared(p_pid bigint) RETURNS bool
LANGUAGE sql AS $$ SELECT pg_try_advisory_xact_lock_shared(p_pid) $$;

-- L0: shared by push (a push sees a consistent set of groups), exclusive by
-- group creation and queue delete.
CREATE FUNCTION queen.lock_queue(p_qid int) RETURNS void
LANGUAGE sql AS $$ SELECT pg_advisory_xact_lock(1, p_qid) $$;

CREATE FUNCTION queen.lock_queue_shared(p_qid int) RETURNS void
LANGUAGE sql AS $$ SELECT pg_advisory_xact_lock_shared(1, p_qid) $$;

CREATE FUNCTION queen.try_lock_queue_shared(p_qid int) RETURNS bool
LANGUAGE sql AS $$ SELECT pg_try_advisory_xact_lock_shared(1, p_qid) $$;

-- One segment maintainer at a time (queen.ensure_segments).
CREATE FUNCTION queen.try_lock_segments() RETURNS bool
LANGUAGE sql AS $$ SELECT pg_try_advisory_xact_lock(2, 2) $$;

-- One retention round at a time (queen.retention_run).
CREATE FUNCTION queen.try_lock_retention() RETURNS bool
LANGUAGE sql AS $$ SELECT pg_try_advisory_xact_lock(2, 3) $$;

-- One cycle at a time per streams (query, source partition).
CREATE FUNCTION queen.lock_stream_cycle(p_query uuid, p_partition uuid) RETURNS void
LANGUAGE sql AS $$ SELECT pg_advisory_xact_lock(3, hashtext(p_query::text || '/' || p_partition::text)) $$;
