-- ---------------------------------------------------------------------------
-- ack (spec 3.10 / 3.11) and the transaction-route acks (spec 3.12)
-- ---------------------------------------------------------------------------
-- Per item: the message is (partition id, seq) when p_seqs[i] is given (the
-- broker decoded a message-id-form transactionId; accepted when the stored
-- txn_id is NULL or equals p_txn_ids[i] / the id text), else (partition id,
-- txn_id). Lease validation uses the state at the start of the call. Items are
-- applied in (partition, group, seq) order with per-(partition, group) running
-- state held in arrays; the writes (DLQ copies, ready updates, drains into
-- cursors) are a handful of set-based statements at the end.
-- p_txn: the caller holds the partition locks (L1); otherwise none are held
-- and the drain try-locks.
CREATE FUNCTION queen._ack_core(p_tenant text, p_groups text[], p_pids bigint[], p_txn_ids text[],
  p_seqs bigint[], p_statuses text[], p_lease_ids uuid[], p_errors text[], p_txn bool)
RETURNS TABLE(ord int, success bool, error text, queue_name text, partition_name text,
  lease_released bool, dlq bool, msg_seq bigint, queue_id int, code text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  n        int := COALESCE(array_length(p_pids, 1), 0);
  ns       int;
  v_now    timestamptz := now();
  -- items, sorted by (partition, group, seq)
  a_ord int[]; a_pid bigint[]; a_gid int[]; a_grp text[]; a_qid int[]; a_qn text[]; a_pn text[];
  a_seq bigint[]; a_st text[]; a_lease uuid[]; a_err text[]; a_rlim int[]; a_rdel int[]; a_sidx int[];
  -- (partition, group) states: start copy (…0) and running copy
  s_pid bigint[]; s_gid int[]; s_qid int[]; s_ex0 bool[]; s_lease0 uuid[]; s_avail0 timestamptz[];
  s_ex bool[]; s_cur bigint[]; s_lease uuid[]; s_avail timestamptz[]; s_from bigint[]; s_to bigint[];
  s_bs int[]; s_ac int[]; s_att int[]; s_cold bigint[]; s_chg bool[]; s_ff text[];
  s_tid tid[];     -- where each existing ready row is (locked by L4: it stays put)
  -- results by ord
  o_ok bool[]; o_err text[]; o_qn text[]; o_pn text[]; o_rel bool[]; o_dlq bool[];
  o_seq bigint[]; o_qid int[]; o_code text[];
  -- DLQ copies
  d_qid int[] := '{}'; d_pid bigint[] := '{}'; d_grp text[] := '{}'; d_seq bigint[] := '{}';
  d_rc int[] := '{}'; d_err text[] := '{}';
  i int; j int; o int;
  v_st text; v_dl bool; v_use bool; v_reset bool; v_dec text;
  v_lk bigint[];   -- partitions whose drain is exact (lock held)
  v_dk int[];      -- the states drained (indexes into s_*)
BEGIN
  IF n = 0 THEN
    RETURN;
  END IF;

  SELECT array_agg(x.ord), array_agg(x.pid), array_agg(x.gid),
         array_agg(x.grp), array_agg(x.qid), array_agg(x.qname),
         array_agg(x.pname), array_agg(x.mseq), array_agg(x.st),
         array_agg(x.lease), array_agg(x.err), array_agg(x.rlim),
         array_agg(x.rdel), array_agg(x.sidx)
    INTO a_ord, a_pid, a_gid, a_grp, a_qid, a_qn, a_pn, a_seq, a_st, a_lease, a_err, a_rlim, a_rdel, a_sidx
    FROM (
      SELECT y.*,
             row_number() OVER (ORDER BY y.pid NULLS LAST, y.gid NULLS LAST, y.grp, y.mseq, y.ord) AS k,
             CASE WHEN y.pid IS NOT NULL AND y.gid IS NOT NULL THEN
               dense_rank() OVER (PARTITION BY (y.pid IS NOT NULL AND y.gid IS NOT NULL)
                                  ORDER BY y.pid, y.gid) END AS sidx
      FROM (
        SELECT t.ord::int AS ord, q.id AS qid, CASE WHEN q.id IS NOT NULL THEN p.id END AS pid,
               t.grp, g.id AS gid, q.name::text AS qname, CASE WHEN q.id IS NOT NULL THEN p.name END::text AS pname,
               mm.seq AS mseq, COALESCE(t.st, 'completed') AS st, t.lease, t.err,
               q.retry_limit AS rlim, q.retry_delay AS rdel
        FROM (SELECT u.ord, COALESCE(NULLIF(u.grp, ''), '__QUEUE_MODE__') AS grp, u.pid, u.txn,
                     u.sq, u.st, u.lease, u.err
                FROM unnest(p_groups, p_pids, p_txn_ids, p_seqs, p_statuses, p_lease_ids, p_errors)
                     WITH ORDINALITY AS u(grp, pid, txn, sq, st, lease, err, ord)) t
        LEFT JOIN queen.partitions p ON p.id = t.pid
        LEFT JOIN queen.queues q ON q.id = p.queue_id AND q.tenant = p_tenant
        LEFT JOIN queen.consumer_groups g ON g.queue_id = q.id AND g.name = t.grp AND NOT g.retired
        LEFT JOIN LATERAL (
          SELECT COALESCE(
            (SELECT m.seq FROM queen.messages m
              WHERE t.sq IS NOT NULL AND m.partition_id = t.pid AND m.seq = t.sq
                AND (m.txn_id IS NULL OR m.txn_id = COALESCE(t.txn, queen.uuid_of(1, t.sq)::text))),
            (SELECT m.seq FROM queen.messages m
              WHERE m.partition_id = t.pid
                AND m.txn_id = COALESCE(t.txn, queen.uuid_of(1, t.sq)::text)
              ORDER BY m.seq LIMIT 1)) AS seq
          ) mm ON q.id IS NOT NULL
      ) y
      ORDER BY k          -- one sort; array_agg keeps the input order
    ) x;

  -- L4: lock the existing ready rows in (partition, group) order: one
  -- probe of the primary key per pair, whatever the statistics (a semi-join
  -- planned while ready was small read the whole table per call once it was
  -- not: 30 s for 1,000 acks on 100,000 ready rows). The lateral subquery is
  -- parameterised by the pair, and `group_id + 0` leaves the primary key
  -- the only index to probe: with the group usable, a plan made on a small
  -- table probed ready_claim by the group alone (past its leading queue_id)
  -- and filtered the partition, every ready row of the group per pair.
  PERFORM 1
    FROM (SELECT DISTINCT u.p, u.g FROM unnest(a_pid, a_gid) u(p, g)
           WHERE u.p IS NOT NULL AND u.g IS NOT NULL ORDER BY 1, 2) k
    CROSS JOIN LATERAL (SELECT 1 FROM queen.ready r
                         WHERE r.partition_id = k.p AND r.group_id + 0 = k.g FOR UPDATE) l;

  SELECT array_agg(z.p), array_agg(z.g), array_agg(z.q), array_agg(z.ex), array_agg(z.lease_id),
         array_agg(z.avail_at), array_agg(z.acked_seq), array_agg(z.leased_from), array_agg(z.leased_to),
         array_agg(z.bs), array_agg(z.ac), array_agg(z.att), array_agg(z.cold), array_agg(z.tid)
    INTO s_pid, s_gid, s_qid, s_ex0, s_lease0, s_avail0, s_cur, s_from, s_to, s_bs, s_ac, s_att, s_cold, s_tid
    FROM (
      SELECT k.p, k.g, k.q, r.partition_id IS NOT NULL AS ex, r.tid, r.lease_id, r.avail_at, r.acked_seq,
             r.leased_from, r.leased_to, COALESCE(r.batch_size, 0) AS bs, COALESCE(r.acked_count, 0) AS ac,
             COALESCE(r.attempts, 0) AS att,
             COALESCE((SELECT c.acked_seq FROM queen.cursors c
                        WHERE c.partition_id = k.p AND c.group_id = k.g), g.start_seq, 0) AS cold
        FROM (SELECT DISTINCT u.p, u.g, u.q FROM unnest(a_pid, a_gid, a_qid) u(p, g, q)
               WHERE u.p IS NOT NULL AND u.g IS NOT NULL) k
        -- point lookups whatever the statistics (see _push_rows): LIMIT
        -- keeps the lateral subquery from being flattened into a join;
        -- `group_id + 0` as in L4
        LEFT JOIN LATERAL (SELECT r0.ctid AS tid, r0.* FROM queen.ready r0
                            WHERE r0.partition_id = k.p AND r0.group_id + 0 = k.g LIMIT 1) r ON true
        LEFT JOIN queen.consumer_groups g ON g.id = k.g
       ORDER BY k.p, k.g) z;   -- one sort; array_agg keeps the input order
  ns := COALESCE(array_length(s_pid, 1), 0);
  s_ex := s_ex0;
  s_lease := s_lease0;
  s_avail := s_avail0;
  IF ns > 0 THEN
    s_chg := array_fill(false, ARRAY[ns]);
    s_ff := array_fill(NULL::text, ARRAY[ns]);
  END IF;

  o_ok := array_fill(NULL::bool, ARRAY[n]);
  o_err := array_fill(NULL::text, ARRAY[n]);
  o_qn := array_fill(NULL::text, ARRAY[n]);
  o_pn := array_fill(NULL::text, ARRAY[n]);
  o_rel := array_fill(NULL::bool, ARRAY[n]);
  o_dlq := array_fill(false, ARRAY[n]);
  o_seq := array_fill(NULL::bigint, ARRAY[n]);
  o_qid := array_fill(NULL::int, ARRAY[n]);
  o_code := array_fill(NULL::text, ARRAY[n]);

  FOR i IN 1..n LOOP
    o := a_ord[i];
    j := a_sidx[i];
    o_qn[o] := a_qn[i];
    o_pn[o] := a_pn[i];
    o_seq[o] := a_seq[i];
    o_qid[o] := a_qid[i];
    IF a_pid[i] IS NULL OR a_seq[i] IS NULL THEN
      o_ok[o] := false;
      o_err[o] := 'Message not found';
      o_code[o] := 'QN404';
      o_rel[o] := CASE WHEN j IS NULL THEN NULL ELSE s_lease[j] IS NULL END;
      CONTINUE;
    END IF;
    IF a_lease[i] IS NOT NULL
       AND NOT COALESCE(s_ex0[j] AND s_lease0[j] = a_lease[i] AND s_avail0[j] > v_now, false) THEN
      o_ok[o] := false;
      o_err[o] := 'Invalid or expired lease';
      o_code[o] := 'QN409';
      o_rel[o] := CASE WHEN j IS NULL THEN true ELSE s_lease[j] IS NULL END;
      CONTINUE;
    END IF;

    v_st := a_st[i];
    v_dl := false;       -- dead-letter this message
    v_use := false;      -- the message counts as consumed (cursor, auto-release)
    v_reset := false;    -- a completed ack: releasing the batch resets the retry counter
    o_ok[o] := true;
    IF v_st IN ('completed', 'success') THEN
      v_use := true;
      v_reset := true;
    ELSIF p_txn AND v_st IN ('failed', 'dlq') THEN
      v_dl := true;
      v_use := true;
    ELSIF p_txn THEN
      o_ok[o] := false;
      o_code[o] := 'QN400';
    ELSIF v_st = 'failed' THEN
      IF j IS NOT NULL AND s_ff[j] IS NOT NULL THEN
        v_dec := s_ff[j];          -- later failed items follow the first one (spec 3.11)
      ELSE
        v_dec := CASE WHEN COALESCE(s_att[j], 0) < a_rlim[i] THEN 'retry' ELSE 'dlq' END;
        IF j IS NOT NULL THEN
          s_ff[j] := v_dec;
          IF v_dec = 'retry' AND s_ex[j] THEN
            s_att[j] := s_att[j] + 1;
            s_lease[j] := NULL; s_from[j] := NULL; s_to[j] := NULL; s_bs[j] := 0; s_ac[j] := 0;
            s_avail[j] := v_now + make_interval(secs => a_rdel[i] / 1000.0);
            s_chg[j] := true;
          END IF;
        END IF;
      END IF;
      IF v_dec = 'dlq' THEN
        v_dl := true;
        v_use := true;
      END IF;
    ELSIF v_st = 'dlq' THEN
      v_dl := true;
      v_use := true;
    ELSIF v_st = 'retry' THEN
      IF j IS NOT NULL AND s_ex[j] AND s_lease[j] IS NOT NULL THEN
        s_lease[j] := NULL; s_from[j] := NULL; s_to[j] := NULL; s_bs[j] := 0; s_ac[j] := 0;
        s_avail[j] := v_now;
        s_chg[j] := true;
      END IF;
    ELSE
      o_ok[o] := false;         -- unknown status: no effect, error NULL
    END IF;

    IF v_dl THEN
      d_qid := d_qid || a_qid[i];
      d_pid := d_pid || a_pid[i];
      d_grp := d_grp || a_grp[i];
      d_seq := d_seq || a_seq[i];
      d_rc := d_rc || CASE WHEN p_txn OR j IS NULL THEN 0 ELSE s_att[j] END;
      d_err := d_err || COALESCE(NULLIF(a_err[i], ''),
                                 CASE WHEN p_txn THEN 'Unknown error' ELSE 'Retries exhausted' END);
      o_dlq[o] := true;
    END IF;

    IF v_use AND j IS NOT NULL THEN
      IF NOT s_ex[j] AND p_txn THEN
        -- transaction semantics: create the state with the cursor at the acked message
        s_ex[j] := true;
        s_cur[j] := GREATEST(s_cold[j], a_seq[i]);
        s_chg[j] := true;
      ELSIF s_ex[j] THEN
        IF a_seq[i] > s_cur[j] THEN
          s_cur[j] := a_seq[i];
          s_chg[j] := true;
        END IF;
        IF s_lease[j] IS NOT NULL AND a_seq[i] > s_from[j] AND a_seq[i] <= s_to[j] THEN
          s_ac[j] := s_ac[j] + 1;
          s_chg[j] := true;
          IF s_ac[j] >= s_bs[j] THEN           -- auto-release (spec 2.6)
            s_lease[j] := NULL; s_from[j] := NULL; s_to[j] := NULL; s_bs[j] := 0; s_ac[j] := 0;
            s_avail[j] := v_now;
            IF v_reset THEN
              s_att[j] := 0;
            END IF;
          END IF;
        END IF;
      END IF;
    END IF;
    o_rel[o] := j IS NULL OR NOT s_ex[j] OR s_lease[j] IS NULL;
  END LOOP;

  -- DLQ copies (payload copied: the DLQ outlives message deletion)
  IF array_length(d_pid, 1) > 0 THEN
    INSERT INTO queen.dead_letters (queue_id, partition_id, consumer_group, seq, txn_id, trace_id,
                                    producer, is_encrypted, created_at, retry_count, error, payload)
    SELECT d.qid, m.partition_id, d.grp, m.seq, m.txn_id, m.trace_id, m.producer, m.is_encrypted,
           m.created_at, d.rc, d.err, m.payload
      FROM unnest(d_qid, d_pid, d_grp, d_seq, d_rc, d_err) WITH ORDINALITY AS d(qid, pid, grp, seq, rc, err, k)
      JOIN queen.messages m ON m.partition_id = d.pid AND m.seq = d.seq
     ORDER BY d.k;
  END IF;

  IF ns > 0 AND true = ANY (s_chg) THEN
    -- drain: a released row with nothing after its cursor goes to cursors.
    -- Exact only while no push is in flight on the partition (I3). The
    -- transaction route holds the partition locks; a plain ack does not wait
    -- for pushes: it try-locks (shared, so acks of other groups do not
    -- exclude each other) the partitions of its drain candidates in a
    -- statement of its own, so the next statement's snapshot sees every
    -- push that held the lock before. A partition whose lock a push holds
    -- keeps its row: that push puts a message after the cursor (or, rolled
    -- back, leaves a stale row for a claim to clean, as pop does).
    IF p_txn THEN
      v_lk := s_pid;
    ELSE
      SELECT array_agg(c.p) INTO v_lk
        FROM (SELECT DISTINCT u.p
                FROM unnest(s_pid, s_chg, s_ex0, s_lease, s_avail) AS u(p, chg, ex0, lease, avail)
               WHERE u.chg AND u.ex0 AND u.lease IS NULL AND u.avail <= v_now) c
       WHERE queen.try_lock_partition_shared(c.p);
    END IF;
    -- the states to drain (by index); they are deleted, not updated first
    -- (most acks of sparse partitions drain: one row version less each)
    SELECT array_agg(u.k::int) INTO v_dk
      FROM unnest(s_pid, s_chg, s_ex0, s_lease, s_avail, s_cur)
           WITH ORDINALITY AS u(p, chg, ex0, lease, avail, cur, k)
     WHERE u.chg AND u.ex0 AND u.lease IS NULL AND u.avail <= v_now AND u.p = ANY (v_lk)
       AND NOT EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = u.p AND m.seq > u.cur);

    -- the rows L4 locked, by where they are (s_tid): a TID probe per row
    -- whatever the statistics (a join on the keys, planned while ready was
    -- small, scanned all of ready per call once it was not)
    UPDATE queen.ready r SET
      acked_seq = u.cur, lease_id = u.lease, avail_at = u.avail, leased_from = u.lf,
      leased_to = u.lt, batch_size = u.bs, acked_count = u.ac, attempts = u.att
    FROM unnest(s_tid, s_cur, s_lease, s_avail, s_from, s_to, s_bs, s_ac, s_att, s_chg, s_ex0)
         WITH ORDINALITY AS u(tid, cur, lease, avail, lf, lt, bs, ac, att, chg, ex0, k)
    WHERE u.chg AND u.ex0 AND NOT (u.k::int = ANY (COALESCE(v_dk, '{}')))
      AND r.ctid = u.tid;

    IF v_dk IS NOT NULL THEN
      WITH d AS (
        DELETE FROM queen.ready r
         USING (SELECT s_tid[k] AS tid, s_cur[k] AS cur FROM unnest(v_dk) k) u
         WHERE r.ctid = u.tid
        RETURNING r.partition_id, r.group_id, u.cur)
      INSERT INTO queen.cursors AS cu (partition_id, group_id, acked_seq)
      SELECT * FROM d ORDER BY 1, 2
      ON CONFLICT (partition_id, group_id) DO UPDATE
        SET acked_seq = GREATEST(cu.acked_seq, EXCLUDED.acked_seq), updated_at = now();
    END IF;

    IF p_txn THEN
      -- state created by the transaction route: a ready row when messages
      -- follow the cursor (I3), else a cold cursor
      INSERT INTO queen.ready (partition_id, group_id, queue_id, avail_at, acked_seq)
      SELECT u.p, u.g, u.q, v_now, u.cur
        FROM unnest(s_pid, s_gid, s_qid, s_cur, s_ex, s_ex0) AS u(p, g, q, cur, ex, ex0)
       WHERE u.ex AND NOT u.ex0
         AND EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = u.p AND m.seq > u.cur)
       ORDER BY 1, 2
      ON CONFLICT DO NOTHING;
      INSERT INTO queen.cursors AS cu (partition_id, group_id, acked_seq)
      SELECT u.p, u.g, u.cur
        FROM unnest(s_pid, s_gid, s_cur, s_ex, s_ex0) AS u(p, g, cur, ex, ex0)
       WHERE u.ex AND NOT u.ex0
         AND NOT EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = u.p AND m.seq > u.cur)
       ORDER BY 1, 2
      ON CONFLICT (partition_id, group_id) DO UPDATE
        SET acked_seq = GREATEST(cu.acked_seq, EXCLUDED.acked_seq), updated_at = now();
    END IF;
  END IF;

  RETURN QUERY
  SELECT u.k::int, u.ok, u.err, u.qn, u.pn, u.rel, u.dl, u.sq, u.qid, u.code
    FROM unnest(o_ok, o_err, o_qn, o_pn, o_rel, o_dlq, o_seq, o_qid, o_code)
         WITH ORDINALITY AS u(ok, err, qn, pn, rel, dl, sq, qid, code, k)
   ORDER BY u.k;
END
$$;

CREATE FUNCTION queen.ack(p_tenant text, p_groups text[], p_pids bigint[], p_txn_ids text[],
  p_seqs bigint[], p_statuses text[], p_lease_ids uuid[], p_errors text[])
RETURNS TABLE(ord int, success bool, error text, queue_name text, partition_name text,
  lease_released bool, dlq bool)
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
BEGIN
  -- No partition locks: the ready row locks (L4) order acks of one
  -- (partition, group); the drain try-locks (see _ack_core), so an ack never
  -- waits for a push.
  RETURN QUERY
  SELECT a.ord, a.success, a.error, a.queue_name, a.partition_name, a.lease_released, a.dlq
    FROM queen._ack_core(p_tenant, p_groups, p_pids, p_txn_ids, p_seqs, p_statuses, p_lease_ids,
                         p_errors, false) a;
END
$$;
