-- ---------------------------------------------------------------------------
-- deletes (spec 2.1) and the graveyard sweep
-- ---------------------------------------------------------------------------

-- Delete up to p_budget messages of the given partitions; for every partition
-- left with no message, delete its ready/cursors rows (and its partitions row
-- when p_drop_rows). Returns the number of messages deleted.
CREATE FUNCTION queen._sweep_partitions(p_pids bigint[], p_budget int, p_drop_rows bool) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_n    bigint;
  v_done bigint[];
BEGIN
  DELETE FROM queen.messages m
   USING (SELECT x.partition_id, x.seq
            FROM unnest(p_pids) b(id)
            CROSS JOIN LATERAL (SELECT mm.partition_id, mm.seq FROM queen.messages mm
                                 WHERE mm.partition_id = b.id ORDER BY mm.seq LIMIT p_budget) x
           LIMIT p_budget) v
   WHERE m.partition_id = v.partition_id AND m.seq = v.seq;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  SELECT array_agg(b.id) INTO v_done FROM unnest(p_pids) b(id)
   WHERE NOT EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = b.id);
  IF v_done IS NOT NULL THEN
    DELETE FROM queen.ready WHERE partition_id = ANY (v_done);
    DELETE FROM queen.cursors WHERE partition_id = ANY (v_done);
    DELETE FROM queen.partition_stats WHERE partition_id = ANY (v_done) AND messages = 0;
    IF p_drop_rows THEN
      DELETE FROM queen.partitions WHERE id = ANY (v_done);
    END IF;
  END IF;
  RETURN v_n;
END
$$;

-- One step of the sweep of a deleted queue ('q') or partition ('p'). Returns
-- the rows deleted; removes the graveyard entry once nothing is left.
CREATE FUNCTION queen._sweep_graveyard(p_kind "char", p_id bigint, p_budget int) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_pids bigint[];
  v_n    bigint := 0;
  v_d    bigint;
BEGIN
  IF p_kind = 'q' THEN
    SELECT array_agg(id) INTO v_pids FROM (
      SELECT id FROM queen.partitions WHERE queue_id = p_id ORDER BY id LIMIT 500) s;
    IF v_pids IS NOT NULL THEN
      v_n := queen._sweep_partitions(v_pids, p_budget, true);
    END IF;
    DELETE FROM queen.dead_letters WHERE id IN (
      SELECT id FROM queen.dead_letters WHERE queue_id = p_id LIMIT GREATEST(p_budget - v_n, 0));
    GET DIAGNOSTICS v_d = ROW_COUNT;
    v_n := v_n + v_d;
    IF NOT EXISTS (SELECT 1 FROM queen.partitions WHERE queue_id = p_id)
       AND NOT EXISTS (SELECT 1 FROM queen.dead_letters WHERE queue_id = p_id) THEN
      DELETE FROM queen.graveyard WHERE kind = 'q' AND id = p_id;
    END IF;
  ELSE
    v_n := queen._sweep_partitions(ARRAY[p_id], p_budget, false);
    DELETE FROM queen.dead_letters WHERE id IN (
      SELECT id FROM queen.dead_letters WHERE partition_id = p_id LIMIT GREATEST(p_budget - v_n, 0));
    GET DIAGNOSTICS v_d = ROW_COUNT;
    v_n := v_n + v_d;
    IF NOT EXISTS (SELECT 1 FROM queen.messages WHERE partition_id = p_id)
       AND NOT EXISTS (SELECT 1 FROM queen.dead_letters WHERE partition_id = p_id) THEN
      DELETE FROM queen.graveyard WHERE kind = 'p' AND id = p_id;
    END IF;
  END IF;
  RETURN v_n;
END
$$;

-- Delete a queue and everything under it. The catalog rows go at once (the
-- queue is invisible from here on: every lookup joins queen.queues); messages,
-- ready/cursors rows, partitions and DLQ rows are removed inline up to 10k
-- rows, the rest by queen.retention_run in small batches.
CREATE FUNCTION queen.queue_delete(p_tenant text, p_queue text) RETURNS TABLE(existed bool)
LANGUAGE plpgsql AS $$
DECLARE
  v_qid int;
BEGIN
  SELECT id INTO v_qid FROM queen.queues WHERE tenant = p_tenant AND name = p_queue;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false;
    RETURN;
  END IF;
  PERFORM queen.lock_queue(v_qid);       -- waits for in-flight pushes (L0 exclusive)
  DELETE FROM queen.queues WHERE id = v_qid;
  IF NOT FOUND THEN                              -- deleted concurrently
    RETURN QUERY SELECT false;
    RETURN;
  END IF;
  DELETE FROM queen.subscriptions
   WHERE group_id IN (SELECT id FROM queen.consumer_groups WHERE queue_id = v_qid);
  DELETE FROM queen.consumer_groups WHERE queue_id = v_qid;
  INSERT INTO queen.graveyard (kind, id) VALUES ('q', v_qid);
  PERFORM queen._sweep_graveyard('q', v_qid, 10000);
  RETURN QUERY SELECT true;
END
$$;

CREATE FUNCTION queen.partition_delete(p_tenant text, p_queue text, p_partition text)
RETURNS TABLE(existed bool)
LANGUAGE plpgsql AS $$
DECLARE
  v_qid int;
  v_pid bigint;
BEGIN
  SELECT q.id, p.id INTO v_qid, v_pid
    FROM queen.queues q JOIN queen.partitions p ON p.queue_id = q.id
   WHERE q.tenant = p_tenant AND q.name = p_queue AND p.name = p_partition;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false;
    RETURN;
  END IF;
  PERFORM queen.lock_queue_shared(v_qid);   -- L0
  PERFORM queen.lock_partition(v_pid);             -- L1: no push/ack in flight on it
  DELETE FROM queen.partitions WHERE id = v_pid;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false;
    RETURN;
  END IF;
  DELETE FROM queen.ready WHERE partition_id = v_pid;
  DELETE FROM queen.cursors WHERE partition_id = v_pid;
  DELETE FROM queen.subscriptions
   WHERE partition_name = p_partition
     AND group_id IN (SELECT id FROM queen.consumer_groups WHERE queue_id = v_qid);
  INSERT INTO queen.graveyard (kind, id) VALUES ('p', v_pid);
  PERFORM queen._sweep_graveyard('p', v_pid, 10000);
  RETURN QUERY SELECT true;
END
$$;
