-- ---------------------------------------------------------------------------
-- transaction (spec 3.12): all pushes and acks in one transaction
-- ---------------------------------------------------------------------------
-- The locks of a transaction (queen.txn, queen.bundle): groups named by acks
-- that do not exist yet are created (their queues locked exclusively, with
-- the push queues shared, in one ascending L0 pass), then L1 for the union
-- of push and ack partitions, ascending. Returns what _lock_partitions
-- returns for the push items (all NULL without pushes).
CREATE FUNCTION queen._txn_lock(p_tenant text, p_queues text[], p_parts text[], p_groups text[],
  p_pids bigint[], OUT pq text[], OUT pn text[], OUT ppid bigint[], OUT pqid int[])
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_npush int := COALESCE(array_length(p_queues, 1), 0);
  v_newg  record;
  v_excl  int[];
  lp      record;
BEGIN
  -- groups named by acks that do not exist yet are created (exclusive queue lock)
  SELECT array_agg(DISTINCT q.id ORDER BY q.id) INTO v_excl
    FROM unnest(p_groups, p_pids) AS t(grp, pid)
    JOIN queen.partitions p ON p.id = t.pid
    JOIN queen.queues q ON q.id = p.queue_id AND q.tenant = p_tenant
   WHERE NOT EXISTS (SELECT 1 FROM queen.consumer_groups g
                      WHERE g.queue_id = q.id AND NOT g.retired
                        AND g.name = COALESCE(NULLIF(t.grp, ''), '__QUEUE_MODE__'));

  -- L0: queue locks ascending (shared for pushes, exclusive for group creation)
  IF v_npush > 0 OR v_excl IS NOT NULL THEN
    PERFORM queen._lock_queues(p_tenant, COALESCE(p_queues, '{}'::text[]), COALESCE(v_excl, '{}'::int[]));
  END IF;
  IF v_excl IS NOT NULL THEN
    FOR v_newg IN
      SELECT DISTINCT q.id AS qid, COALESCE(NULLIF(t.grp, ''), '__QUEUE_MODE__') AS grp
        FROM unnest(p_groups, p_pids) AS t(grp, pid)
        JOIN queen.partitions p ON p.id = t.pid
        JOIN queen.queues q ON q.id = p.queue_id AND q.tenant = p_tenant
       WHERE q.id = ANY (v_excl)
       ORDER BY 1, 2
    LOOP
      PERFORM queen._group_get(v_newg.qid, v_newg.grp, NULL, NULL, NULL);
    END LOOP;
  END IF;

  -- L1: partition locks for the union of push and ack partitions, ascending
  IF v_npush > 0 THEN
    lp := queen._lock_partitions(p_tenant, p_queues, p_parts, p_pids);
    pq := lp.pq;
    pn := lp.pn;
    ppid := lp.ppid;
    pqid := lp.pqid;
  ELSE
    PERFORM queen.lock_partition(x)
       FROM (SELECT DISTINCT x FROM unnest(p_pids) x WHERE x IS NOT NULL ORDER BY x) s;
  END IF;
END
$$;

-- requiredLeases (spec 3.12): each must be held and unexpired now, else
-- QN409, DETAIL op=lease:<i> (1-based).
CREATE FUNCTION queen._txn_required(p_required_leases uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  i int;
BEGIN
  FOR i IN 1..COALESCE(array_length(p_required_leases, 1), 0) LOOP
    IF p_required_leases[i] IS NULL OR NOT EXISTS (
         SELECT 1 FROM queen.ready r
          WHERE r.lease_id = p_required_leases[i] AND r.avail_at > now()) THEN
      RAISE EXCEPTION 'Required lease % is invalid or expired', p_required_leases[i]
        USING ERRCODE = 'QN409', DETAIL = format('op=lease:%s', i);
    END IF;
  END LOOP;
END
$$;

CREATE FUNCTION queen.txn(p_tenant text, p_queues text[], p_parts text[], p_txn_ids text[],
  p_payloads bytea[], p_trace_ids uuid[], p_producers text[], p_encrypted bool[],
  p_groups text[], p_pids bigint[], p_ack_txn text[], p_ack_seqs bigint[], p_ack_statuses text[],
  p_ack_lease_ids uuid[], p_ack_errors text[], p_required_leases uuid[],
  p_not_before timestamptz[] DEFAULT NULL)
RETURNS TABLE(kind text, ord int, seq bigint, partition_id bigint, queue_id int, queue_name text,
  success bool, error text, dlq bool)
LANGUAGE plpgsql
-- generic plans: the statements are written to plan well without the parameter
-- values; custom plans would re-plan every call (~0.3 ms per statement that
-- touches the partitioned queen.messages). See docs/storage.md. No seq or
-- bitmap scans: a plan cached while the tables were nearly empty must not
-- walk every partition, ready or cursors row once they are large.
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_npush int := COALESCE(array_length(p_queues, 1), 0);
  v_nack  int := COALESCE(array_length(p_pids, 1), 0);
  lp      record;
  v_bad   int;
  v_code  text;
  k_ord   int[];
  k_seq   bigint[];
  k_qid   int[];
  k_qn    text[];
  k_dlq   bool[];
BEGIN
  -- L0 (and group creation), L1
  lp := queen._txn_lock(p_tenant, p_queues, p_parts, p_groups, p_pids);

  -- required leases: each must be held and unexpired now
  PERFORM queen._txn_required(p_required_leases);

  -- acks (transaction semantics), failing the whole transaction on any error
  IF v_nack > 0 THEN
    SELECT array_agg(a.ord ORDER BY a.ord), array_agg(a.msg_seq ORDER BY a.ord),
           array_agg(a.queue_id ORDER BY a.ord), array_agg(a.queue_name ORDER BY a.ord),
           array_agg(a.dlq ORDER BY a.ord), min(a.ord) FILTER (WHERE a.code IS NOT NULL),
           (array_agg(a.code ORDER BY a.ord) FILTER (WHERE a.code IS NOT NULL))[1]
      INTO k_ord, k_seq, k_qid, k_qn, k_dlq, v_bad, v_code
      FROM queen._ack_core(p_tenant, p_groups, p_pids, p_ack_txn, p_ack_seqs, p_ack_statuses,
                           p_ack_lease_ids, p_ack_errors, true) a;
    IF v_bad IS NOT NULL THEN
      IF v_code = 'QN404' THEN
        RAISE EXCEPTION 'ACK operation failed: Message not found'
          USING ERRCODE = 'QN404', DETAIL = format('op=ack:%s', v_bad);
      ELSIF v_code = 'QN409' THEN
        RAISE EXCEPTION 'ACK operation failed: Invalid or expired lease'
          USING ERRCODE = 'QN409', DETAIL = format('op=ack:%s', v_bad);
      ELSE
        RAISE EXCEPTION 'ACK operation failed: Invalid status %', COALESCE(p_ack_statuses[v_bad], 'null')
          USING ERRCODE = 'QN400', DETAIL = format('op=ack:%s', v_bad);
      END IF;
    END IF;
    RETURN QUERY
    SELECT 'ack'::text, u.o, u.sq, p_pids[u.o], u.qid, u.qn, true, NULL::text, u.dl
      FROM unnest(k_ord, k_seq, k_qid, k_qn, k_dlq) AS u(o, sq, qid, qn, dl);
  END IF;

  -- pushes, strict: a duplicate transactionId fails the transaction (23505,
  -- DETAIL op=push:<ord>, raised by _push_rows)
  IF v_npush > 0 THEN
    RETURN QUERY
    SELECT 'push'::text, r.ord, r.seq, r.partition_id, r.queue_id, p_queues[r.ord], true, NULL::text, false
      FROM queen._push_rows(p_tenant, p_queues, p_parts, p_txn_ids, p_payloads, p_trace_ids,
                            p_producers, p_encrypted, true, lp.pq, lp.pn, lp.ppid, lp.pqid,
                            p_not_before) r
     ORDER BY r.ord;
  END IF;
END
$$;
