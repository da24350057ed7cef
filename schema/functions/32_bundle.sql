-- 32_bundle.sql: transaction riders (issue 4). queen.bundle is what
-- POST /api/v1/transaction calls: pushes and acks as queen.txn (spec 3.12)
-- plus kv writes (kv.set, kv.delete) and timer operations (timer.schedule,
-- timer.cancel), all committed together or not at all, in one round trip.
-- docs/transactions.md describes the bundle for clients; docs/storage.md
-- ("queen.bundle") the locks.
--
-- Lock order (storage 3; the same for every bundle, so bundles cannot
-- deadlock with each other or with the other writers):
--   L0  queue advisory locks, ascending (shared for pushes, exclusive for
--       consumer groups the acks create)                     _txn_lock
--   L1  partition advisory locks of pushes and acks, ascending  _txn_lock
--   L2  kv rows, in (bucket, key) byte order                 kv_put / kv_delete
--   L3  timer rows, in timerId byte order                    timer_create / timer_cancel
--   L4  ready rows of the acked partitions, (partition, group)   _ack_core
-- timer_fire takes L0/L1 for its timers' targets and then claims the timer
-- rows with SKIP LOCKED: it never waits on a timer row a bundle holds, and a
-- bundle never waits on a timer row a firer holds while holding anything
-- the firer still needs (the firer already has its L0/L1 then). So the
-- bundle does not lock the partitions its timers target: a cancel racing a
-- fire has one winner either way (the cancel waits for the firer's commit
-- and then sees the row fired, or the firer skips the row the bundle holds
-- and, if the bundle commits, never sees it again).
--
-- Failures: every operation is evaluated, and the one with the lowest
-- operation index fails the bundle (requiredLeases first: they are a
-- precondition). RAISE with DETAIL 'index=<i>' (0-based flattened operation
-- index, as results[].index), plus ' currentVersion=<v>' for kv conflicts
-- and ' firedAt=<us>' for a cancel of a fired timer:
--   QN409  version conflict (kv.set, kv.delete with ifVersion)
--   QN404  key not found (kv.delete with ifVersion, the key is absent)
--   QN409  timerId <id> is taken by a different timer (timer.schedule)
--   QN404  timer not found / QN409 timer already fired (timer.cancel)
--   QN404 / QN409 / QN400  ACK operation failed: ... (as queen.txn)
--   23505  duplicate transactionId <t> in partition <p> (strict pushes)
--   QN409  Required lease <id> is invalid or expired, DETAIL op=lease:<i>
-- and whatever queen.push raises (QN429 queue full, 40001 retry).

-- p_kinds: the flattened operations in order: 'push' (one per push item),
-- 'ack', 'kv.set', 'kv.delete', 'timer.schedule', 'timer.cancel'. The
-- arrays of each family hold its operations in that order:
--   push   p_queues .. p_encrypted, p_not_before (NULL or per item)
--   ack    p_groups .. p_ack_errors
--   kv     p_kv_ns, p_kv_keys, p_kv_values (NULL for kv.delete), p_kv_if
--          (NULL: unconditional), p_kv_ttl (seconds, NULL/0: none)
--   timer  p_tm_ids, and for timer.schedule (NULL for timer.cancel) the
--          arguments of queen.timer_create: queue, partition, payload,
--          txn id, txn given, fire-at us | delay ms, digest (p_tm_digests:
--          NULL for a plaintext payload; for one the broker sealed, the
--          keyed digest of its plaintext; the array may be NULL: none)
-- Rows, one per operation (any order; idx is the flattened index):
--   push            seq, partition_id, queue_name
--   ack             seq (the acked message), partition_id, queue_name, dlq
--   kv.set          version, at = expires_at, status 'ok'
--   kv.delete       version (the deleted one; NULL when absent), status
--                   'deleted' | 'absent' (unconditional delete of an absent key)
--   timer.schedule  at = due_at, status 'created' | 'exists' | 'fired',
--                   timer_row (queen.timers.id), queue_name (the target)
--   timer.cancel    status 'cancelled'
CREATE FUNCTION queen.bundle(p_tenant text, p_kinds text[],
  p_queues text[], p_parts text[], p_txn_ids text[], p_payloads bytea[], p_trace_ids uuid[],
  p_producers text[], p_encrypted bool[], p_not_before timestamptz[],
  p_groups text[], p_pids bigint[], p_ack_txn text[], p_ack_seqs bigint[], p_ack_statuses text[],
  p_ack_lease_ids uuid[], p_ack_errors text[], p_required_leases uuid[],
  p_kv_ns text[], p_kv_keys text[], p_kv_values bytea[], p_kv_if bigint[], p_kv_ttl int[],
  p_tm_ids text[], p_tm_queues text[], p_tm_parts text[], p_tm_payloads bytea[], p_tm_txn text[],
  p_tm_txn_given bool[], p_tm_at_us bigint[], p_tm_delay_ms bigint[], p_tm_digests bytea[] DEFAULT NULL)
RETURNS TABLE(idx int, kind text, seq bigint, partition_id bigint, queue_name text, dlq bool,
  version bigint, at timestamptz, status text, timer_row bigint)
LANGUAGE plpgsql
-- generic plans without seq/bitmap scans, as queen.txn (docs/storage.md §5)
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_npush int := COALESCE(array_length(p_queues, 1), 0);
  v_nack  int := COALESCE(array_length(p_pids, 1), 0);
  -- 0-based operation index of each operation of a family, by its ord
  x_push  int[];
  x_ack   int[];
  x_kv    int[];
  x_tm    int[];
  lp      record;
  r       record;
  kv      record;
  tm      record;
  dup     record;
  i       int;
  -- the failure with the lowest operation index so far
  f_idx   int;
  f_code  text;
  f_msg   text;
  f_extra text := '';
  -- rider results
  o_idx   int[] := '{}';
  o_kind  text[] := '{}';
  o_ver   bigint[] := '{}';
  o_at    timestamptz[] := '{}';
  o_st    text[] := '{}';
  o_row   bigint[] := '{}';
  o_q     text[] := '{}';
  -- ack results
  k_ord   int[];
  k_seq   bigint[];
  k_qn    text[];
  k_dlq   bool[];
  k_bad   int;
  k_code  text;
BEGIN
  SELECT COALESCE(array_agg(u.i - 1 ORDER BY u.i) FILTER (WHERE u.t = 'push'), '{}'),
         COALESCE(array_agg(u.i - 1 ORDER BY u.i) FILTER (WHERE u.t = 'ack'), '{}'),
         COALESCE(array_agg(u.i - 1 ORDER BY u.i) FILTER (WHERE u.t IN ('kv.set', 'kv.delete')), '{}'),
         COALESCE(array_agg(u.i - 1 ORDER BY u.i) FILTER (WHERE u.t IN ('timer.schedule', 'timer.cancel')), '{}')
    INTO x_push, x_ack, x_kv, x_tm
    FROM unnest(p_kinds) WITH ORDINALITY AS u(t, i);
  IF cardinality(x_push) <> v_npush OR cardinality(x_ack) <> v_nack
     OR cardinality(x_kv) <> COALESCE(array_length(p_kv_keys, 1), 0)
     OR cardinality(x_tm) <> COALESCE(array_length(p_tm_ids, 1), 0)
     OR cardinality(x_push) + cardinality(x_ack) + cardinality(x_kv) + cardinality(x_tm)
        <> COALESCE(array_length(p_kinds, 1), 0) THEN
    RAISE EXCEPTION 'bundle: operation kinds and arrays disagree' USING ERRCODE = '22023';
  END IF;

  -- L0 (and group creation), L1; then the precondition
  lp := queen._txn_lock(p_tenant, p_queues, p_parts, p_groups, p_pids);
  PERFORM queen._txn_required(p_required_leases);

  -- L2: kv rows in (bucket, key) order; one key's operations in their order
  IF cardinality(x_kv) > 0 THEN
    FOR r IN
      SELECT u.k::int AS k, u.ns, u.key, u.val, u.ifv, u.ttl
        FROM unnest(p_kv_ns, p_kv_keys, p_kv_values, p_kv_if, p_kv_ttl)
             WITH ORDINALITY AS u(ns, key, val, ifv, ttl, k)
       ORDER BY u.ns COLLATE "C", u.key COLLATE "C", u.k
    LOOP
      i := x_kv[r.k];
      IF p_kinds[i + 1] = 'kv.set' THEN
        SELECT * INTO kv FROM queen.kv_put(p_tenant, r.ns, r.key, r.val, r.ifv, r.ttl);
        IF kv.status = 'ok' THEN
          o_idx := o_idx || i; o_kind := o_kind || 'kv.set'::text; o_ver := o_ver || kv.version;
          o_at := o_at || kv.expires_at; o_st := o_st || 'ok'::text;
          o_row := o_row || NULL::bigint; o_q := o_q || NULL::text;
        ELSIF f_idx IS NULL OR i < f_idx THEN
          f_idx := i; f_code := 'QN409'; f_msg := 'version conflict';
          f_extra := ' currentVersion=' || kv.current_version;
        END IF;
      ELSE
        SELECT * INTO kv FROM queen.kv_delete(p_tenant, r.ns, r.key, r.ifv);
        IF kv.status = 'deleted' OR (kv.status = 'not_found' AND r.ifv IS NULL) THEN
          o_idx := o_idx || i; o_kind := o_kind || 'kv.delete'::text;
          o_ver := o_ver || CASE WHEN kv.status = 'deleted' THEN kv.version END;
          o_at := o_at || NULL::timestamptz;
          o_st := o_st || CASE WHEN kv.status = 'deleted' THEN 'deleted' ELSE 'absent' END;
          o_row := o_row || NULL::bigint; o_q := o_q || NULL::text;
        ELSIF f_idx IS NULL OR i < f_idx THEN
          f_idx := i;
          IF kv.status = 'not_found' THEN
            f_code := 'QN404'; f_msg := 'key not found'; f_extra := ' currentVersion=0';
          ELSE
            f_code := 'QN409'; f_msg := 'version conflict'; f_extra := ' currentVersion=' || kv.version;
          END IF;
        END IF;
      END IF;
    END LOOP;
  END IF;

  -- L3: timer rows in timerId order; one timer's operations in their order
  IF cardinality(x_tm) > 0 THEN
    FOR r IN
      SELECT u.k::int AS k, u.id, u.q, u.p, u.pay, u.txn, u.given, u.at, u.delay, u.dg
        FROM unnest(p_tm_ids, p_tm_queues, p_tm_parts, p_tm_payloads, p_tm_txn, p_tm_txn_given,
                    p_tm_at_us, p_tm_delay_ms, p_tm_digests)
             WITH ORDINALITY AS u(id, q, p, pay, txn, given, at, delay, dg, k)
       ORDER BY u.id COLLATE "C", u.k
    LOOP
      i := x_tm[r.k];
      IF p_kinds[i + 1] = 'timer.schedule' THEN
        SELECT * INTO tm FROM queen.timer_create(p_tenant, r.id, r.q, r.p, r.pay, r.txn, r.given, r.at, r.delay,
                                                r.dg);
        IF tm.status <> 'conflict' THEN
          o_idx := o_idx || i; o_kind := o_kind || 'timer.schedule'::text; o_ver := o_ver || NULL::bigint;
          o_at := o_at || tm.due_at; o_st := o_st || tm.status;
          o_row := o_row || tm.id; o_q := o_q || r.q;
        ELSIF f_idx IS NULL OR i < f_idx THEN
          f_idx := i; f_code := 'QN409'; f_extra := '';
          f_msg := format('timerId %s is taken by a different timer', r.id);
        END IF;
      ELSE
        SELECT * INTO tm FROM queen.timer_cancel(p_tenant, r.id);
        IF tm.status = 'cancelled' THEN
          o_idx := o_idx || i; o_kind := o_kind || 'timer.cancel'::text; o_ver := o_ver || NULL::bigint;
          o_at := o_at || NULL::timestamptz; o_st := o_st || 'cancelled'::text;
          o_row := o_row || NULL::bigint; o_q := o_q || NULL::text;
        ELSIF f_idx IS NULL OR i < f_idx THEN
          f_idx := i;
          IF tm.status = 'fired' THEN
            f_code := 'QN409'; f_msg := 'timer already fired';
            f_extra := ' firedAt=' || (extract(epoch FROM tm.fired_at) * 1000000)::bigint;
          ELSE
            f_code := 'QN404'; f_msg := 'timer not found'; f_extra := '';
          END IF;
        END IF;
      END IF;
    END LOOP;
  END IF;

  -- L4: acks (transaction semantics, as queen.txn)
  IF v_nack > 0 THEN
    SELECT array_agg(a.ord ORDER BY a.ord), array_agg(a.msg_seq ORDER BY a.ord),
           array_agg(a.queue_name ORDER BY a.ord), array_agg(a.dlq ORDER BY a.ord),
           min(a.ord) FILTER (WHERE a.code IS NOT NULL),
           (array_agg(a.code ORDER BY a.ord) FILTER (WHERE a.code IS NOT NULL))[1]
      INTO k_ord, k_seq, k_qn, k_dlq, k_bad, k_code
      FROM queen._ack_core(p_tenant, p_groups, p_pids, p_ack_txn, p_ack_seqs, p_ack_statuses,
                           p_ack_lease_ids, p_ack_errors, true) a;
    IF k_bad IS NOT NULL AND (f_idx IS NULL OR x_ack[k_bad] < f_idx) THEN
      f_idx := x_ack[k_bad]; f_code := k_code; f_extra := '';
      f_msg := CASE k_code WHEN 'QN404' THEN 'ACK operation failed: Message not found'
                           WHEN 'QN409' THEN 'ACK operation failed: Invalid or expired lease'
                           ELSE 'ACK operation failed: Invalid status '
                                || COALESCE(p_ack_statuses[k_bad], 'null') END;
      IF k_code NOT IN ('QN404', 'QN409') THEN
        f_code := 'QN400';
      END IF;
    END IF;
  END IF;

  -- pushes, strict: a transactionId already in its partition (or twice in
  -- the bundle) fails it
  IF v_npush > 0 THEN
    dup := queen._push_dup(p_queues, p_parts, p_txn_ids, lp.pq, lp.pn, lp.ppid);
    IF dup.ord IS NOT NULL AND (f_idx IS NULL OR x_push[dup.ord] < f_idx) THEN
      f_idx := x_push[dup.ord]; f_code := '23505'; f_extra := '';
      f_msg := format('duplicate transactionId %s in partition %s', dup.txn, dup.part);
    END IF;
  END IF;

  IF f_idx IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = f_code, MESSAGE = f_msg,
      DETAIL = format('index=%s', f_idx) || f_extra;
  END IF;

  IF cardinality(o_idx) > 0 THEN
    RETURN QUERY
    SELECT u.i, u.t, NULL::bigint, NULL::bigint, u.q, NULL::bool, u.v, u.a, u.s, u.rw
      FROM unnest(o_idx, o_kind, o_ver, o_at, o_st, o_row, o_q) AS u(i, t, v, a, s, rw, q);
  END IF;
  IF v_nack > 0 THEN
    RETURN QUERY
    SELECT x_ack[u.o], 'ack'::text, u.sq, p_pids[u.o], u.qn, u.dl, NULL::bigint, NULL::timestamptz,
           NULL::text, NULL::bigint
      FROM unnest(k_ord, k_seq, k_qn, k_dlq) AS u(o, sq, qn, dl);
  END IF;
  IF v_npush > 0 THEN
    RETURN QUERY
    SELECT x_push[p.ord], 'push'::text, p.seq, p.partition_id, p_queues[p.ord], false, NULL::bigint,
           NULL::timestamptz, NULL::text, NULL::bigint
      FROM queen._push_rows(p_tenant, p_queues, p_parts, p_txn_ids, p_payloads, p_trace_ids,
                            p_producers, p_encrypted, false, lp.pq, lp.pn, lp.ppid, lp.pqid,
                            p_not_before) p;
  END IF;
END
$$;
