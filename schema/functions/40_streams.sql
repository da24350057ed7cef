-- 40_streams.sql: the streaming SDK's register, cycle and state reads
-- (contract 3.22; tables, lock order and SQLSTATEs in migrations/0003_streams.sql).

-- Register (idempotently). status 'ok' (fresh: created; reset: the hash
-- changed and the state was discarded) or 'mismatch' (known name, other
-- hash, no reset: nothing changed; old_hash is the stored one).
CREATE FUNCTION queen_streams.register(p_tenant text, p_name text, p_source text, p_sink text,
  p_hash text, p_reset bool)
RETURNS TABLE(status text, query_id uuid, fresh bool, reset bool, old_hash text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v  queen_streams.queries;
  i  int;
BEGIN
  FOR i IN 1..3 LOOP
    INSERT INTO queen_streams.queries (tenant, name, source_queue, sink_queue, config_hash)
    VALUES (p_tenant, p_name, p_source, NULLIF(p_sink, ''), p_hash)
    ON CONFLICT (tenant, name) DO NOTHING
    RETURNING * INTO v;
    IF v.id IS NOT NULL THEN
      RETURN QUERY SELECT 'ok'::text, v.id, true, false, NULL::text;
      RETURN;
    END IF;
    -- known: lock it (a concurrent registration of the same name waits here)
    SELECT * INTO v FROM queen_streams.queries q
     WHERE q.tenant = p_tenant AND q.name = p_name FOR UPDATE;
    EXIT WHEN v.id IS NOT NULL;          -- else deleted meanwhile: insert again
  END LOOP;
  IF v.config_hash = p_hash THEN
    UPDATE queen_streams.queries q SET source_queue = p_source, sink_queue = NULLIF(p_sink, ''),
           updated_at = now()
     WHERE q.id = v.id;
    RETURN QUERY SELECT 'ok'::text, v.id, false, false, v.config_hash;
  ELSIF COALESCE(p_reset, false) THEN
    DELETE FROM queen_streams.state s WHERE s.query_id = v.id;
    UPDATE queen_streams.queries q SET config_hash = p_hash, source_queue = p_source,
           sink_queue = NULLIF(p_sink, ''), updated_at = now()
     WHERE q.id = v.id;
    RETURN QUERY SELECT 'ok'::text, v.id, false, true, v.config_hash;
  ELSE
    RETURN QUERY SELECT 'mismatch'::text, v.id, false, false, v.config_hash;
  END IF;
END
$$;

-- One processing cycle of one source partition, all or nothing.
--   p_partition       the source partition's wire id (state shard); the ack
--                     acts on it when it is one of ours (queen.id_of(2, ..))
--   p_group           NULL/'' = __QUEUE_MODE__
--   p_op_*            state ops in order: 'upsert' (key, value JSON text) or
--                     'delete' (key); the last op on a key decides
--   push arrays       as queen.push; dedup applies (a duplicate is reported,
--                     not an error); messages in array order
--   p_ack_txn NULL    no ack; else the acked message by transactionId, or
--                     by seq when p_ack_seq is set (message-id form)
--   p_ack_status      completed/success (NULL) or failed/dlq
--   p_release         completed: release the lease and reset the batch
--                     counters (NULL = true); failed/dlq always release
-- Ack semantics: cursor := the acked message (never backwards: covering
-- every message before it, the SDK's `count`); failed/dlq dead-letter that
-- message first (error text, else 'Streaming cycle reported failure').
-- Rows: 'source' (queue_name of the source partition or the query's source
-- queue), 'ack' (lease_released, dlq) when acked, 'push' rows by ord.
CREATE FUNCTION queen_streams.cycle(p_tenant text, p_query_id uuid, p_partition uuid, p_group text,
  p_op_types text[], p_op_keys text[], p_op_values text[],
  p_queues text[], p_parts text[], p_txn_ids text[], p_payloads bytea[], p_trace_ids uuid[],
  p_producers text[], p_encrypted bool[], p_not_before timestamptz[],
  p_ack_txn text, p_ack_seq bigint, p_ack_lease uuid, p_ack_status text, p_ack_error text,
  p_release bool)
RETURNS TABLE(kind text, ord int, seq bigint, partition_id bigint, duplicate bool, queue_name text,
  lease_released bool, dlq bool)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
  v_npush  int := COALESCE(array_length(p_queues, 1), 0);
  v_ack    bool := p_ack_txn IS NOT NULL;
  v_st     text := COALESCE(NULLIF(p_ack_status, ''), 'completed');
  v_grp    text := COALESCE(NULLIF(p_group, ''), '__QUEUE_MODE__');
  v_dl     bool := false;
  v_rel    bool;
  v_src    text;
  v_pid    bigint;
  v_qid    int;
  v_qname  text;
  v_gid    int;
  v_seq    bigint;
  v_cold   bigint;
  v_bad    text;
  r        queen.ready;
  lp       record;
BEGIN
  SELECT q.source_queue INTO v_src FROM queen_streams.queries q
   WHERE q.id = p_query_id AND q.tenant = p_tenant;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'Query not found: %', p_query_id USING ERRCODE = 'QN404';
  END IF;
  SELECT t INTO v_bad FROM unnest(p_op_types) t WHERE t IS NULL OR t NOT IN ('upsert', 'delete') LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'Unknown state_op type: %', COALESCE(v_bad, 'null') USING ERRCODE = 'QN400';
  END IF;
  IF v_ack AND v_st NOT IN ('completed', 'success', 'failed', 'dlq') THEN
    RAISE EXCEPTION 'Unknown ack.status: %', v_st USING ERRCODE = 'QN400';
  END IF;
  v_dl := v_st IN ('failed', 'dlq');

  -- cycles of one (query, partition) run one at a time
  PERFORM queen.lock_stream_cycle(p_query_id, p_partition);

  -- the source partition (ours, this tenant's) and the ack's group
  SELECT p.id, q.id, q.name INTO v_pid, v_qid, v_qname
    FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id AND q.tenant = p_tenant
   WHERE p.id = queen.id_of(2, p_partition);
  IF v_ack AND v_pid IS NOT NULL THEN
    SELECT g.id INTO v_gid FROM queen.consumer_groups g
     WHERE g.queue_id = v_qid AND g.name = v_grp AND NOT g.retired;
  END IF;

  -- L0 (push queues shared; the source queue exclusive to create the group),
  -- L1 (push partitions and the source partition)
  IF v_npush > 0 OR (v_ack AND v_pid IS NOT NULL AND v_gid IS NULL) THEN
    PERFORM queen._lock_queues(p_tenant, COALESCE(p_queues, '{}'::text[]),
      CASE WHEN v_ack AND v_pid IS NOT NULL AND v_gid IS NULL THEN ARRAY[v_qid] ELSE '{}'::int[] END);
  END IF;
  IF v_ack AND v_pid IS NOT NULL AND v_gid IS NULL THEN
    v_gid := queen._group_get(v_qid, v_grp, NULL, NULL, NULL);
  END IF;
  IF v_npush > 0 THEN
    lp := queen._lock_partitions(p_tenant, p_queues, p_parts,
                                 CASE WHEN v_ack THEN ARRAY[v_pid] END);
  ELSIF v_ack AND v_pid IS NOT NULL THEN
    PERFORM queen.lock_partition(v_pid);
  END IF;

  RETURN QUERY SELECT 'source'::text, NULL::int, NULL::bigint, v_pid, NULL::bool,
    COALESCE(v_qname, v_src), NULL::bool, NULL::bool;

  IF v_ack THEN
    IF v_pid IS NOT NULL THEN
      SELECT COALESCE(
        (SELECT m.seq FROM queen.messages m
          WHERE p_ack_seq IS NOT NULL AND m.partition_id = v_pid AND m.seq = p_ack_seq
            AND (m.txn_id IS NULL OR m.txn_id = p_ack_txn)),
        (SELECT m.seq FROM queen.messages m
          WHERE m.partition_id = v_pid AND m.txn_id = p_ack_txn ORDER BY m.seq LIMIT 1))
        INTO v_seq;
    END IF;
    IF v_seq IS NULL THEN
      RAISE EXCEPTION 'Message not found' USING ERRCODE = 'QN404';
    END IF;
    SELECT * INTO r FROM queen.ready rr
     WHERE rr.partition_id = v_pid AND rr.group_id = v_gid FOR UPDATE;
    IF p_ack_lease IS NOT NULL
       AND NOT COALESCE(r.lease_id = p_ack_lease AND r.avail_at > now(), false) THEN
      RAISE EXCEPTION 'Invalid or expired lease' USING ERRCODE = 'QN409';
    END IF;
    IF v_dl THEN
      INSERT INTO queen.dead_letters (queue_id, partition_id, consumer_group, seq, txn_id, trace_id,
                                      producer, is_encrypted, created_at, retry_count, error, payload)
      SELECT v_qid, m.partition_id, v_grp, m.seq, m.txn_id, m.trace_id, m.producer, m.is_encrypted,
             m.created_at, COALESCE(r.attempts, 0),
             COALESCE(NULLIF(p_ack_error, ''), 'Streaming cycle reported failure'), m.payload
        FROM queen.messages m WHERE m.partition_id = v_pid AND m.seq = v_seq;
    END IF;
    v_rel := v_dl OR COALESCE(p_release, true);
    IF r.partition_id IS NOT NULL THEN
      UPDATE queen.ready rr SET
        acked_seq   = GREATEST(rr.acked_seq, v_seq),
        lease_id    = CASE WHEN v_rel THEN NULL ELSE rr.lease_id END,
        leased_from = CASE WHEN v_rel THEN NULL ELSE rr.leased_from END,
        leased_to   = CASE WHEN v_rel THEN NULL ELSE rr.leased_to END,
        batch_size  = CASE WHEN v_rel THEN 0 ELSE rr.batch_size END,
        acked_count = CASE WHEN v_rel THEN 0 ELSE rr.acked_count END,
        attempts    = CASE WHEN v_rel THEN 0 ELSE rr.attempts END,
        avail_at    = CASE WHEN v_rel AND rr.lease_id IS NOT NULL THEN LEAST(rr.avail_at, now())
                           ELSE rr.avail_at END
       WHERE rr.partition_id = v_pid AND rr.group_id = v_gid
      RETURNING * INTO r;
      -- drain (exact: the partition lock is held, I3)
      IF r.lease_id IS NULL AND r.avail_at <= now()
         AND NOT EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = v_pid AND m.seq > r.acked_seq) THEN
        DELETE FROM queen.ready rr WHERE rr.partition_id = v_pid AND rr.group_id = v_gid;
        INSERT INTO queen.cursors AS cu (partition_id, group_id, acked_seq)
        VALUES (v_pid, v_gid, r.acked_seq)
        ON CONFLICT (partition_id, group_id) DO UPDATE
          SET acked_seq = GREATEST(cu.acked_seq, EXCLUDED.acked_seq), updated_at = now();
      END IF;
      RETURN QUERY SELECT 'ack'::text, 1, v_seq, v_pid, NULL::bool, v_qname, r.lease_id IS NULL, v_dl;
    ELSE
      -- no state for the group here yet: create it with the cursor at the
      -- acked message (a ready row when messages follow, else a cold cursor)
      SELECT GREATEST(COALESCE(c.acked_seq, g.start_seq), v_seq) INTO v_cold
        FROM queen.consumer_groups g
        LEFT JOIN queen.cursors c ON c.partition_id = v_pid AND c.group_id = g.id
       WHERE g.id = v_gid;
      IF EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = v_pid AND m.seq > v_cold) THEN
        INSERT INTO queen.ready (partition_id, group_id, queue_id, avail_at, acked_seq)
        VALUES (v_pid, v_gid, v_qid, now(), v_cold);
      ELSE
        INSERT INTO queen.cursors AS cu (partition_id, group_id, acked_seq)
        VALUES (v_pid, v_gid, v_cold)
        ON CONFLICT (partition_id, group_id) DO UPDATE
          SET acked_seq = GREATEST(cu.acked_seq, EXCLUDED.acked_seq), updated_at = now();
      END IF;
      RETURN QUERY SELECT 'ack'::text, 1, v_seq, v_pid, NULL::bool, v_qname, true, v_dl;
    END IF;
  END IF;

  -- state: the last op per key decides (keys in order: row locks sorted)
  IF COALESCE(array_length(p_op_types, 1), 0) > 0 THEN
    DELETE FROM queen_streams.state s
     USING (SELECT DISTINCT ON (u.k) u.k, u.t FROM unnest(p_op_types, p_op_keys) WITH ORDINALITY u(t, k, n)
             ORDER BY u.k, u.n DESC) o
     WHERE o.t = 'delete' AND s.query_id = p_query_id AND s.partition_id = p_partition AND s.key = o.k;
    INSERT INTO queen_streams.state AS s (query_id, partition_id, key, value, updated_at)
    SELECT p_query_id, p_partition, o.k, o.v::jsonb, now()
      FROM (SELECT DISTINCT ON (u.k) u.k, u.t, u.v
              FROM unnest(p_op_types, p_op_keys, p_op_values) WITH ORDINALITY u(t, k, v, n)
             ORDER BY u.k, u.n DESC) o
     WHERE o.t = 'upsert'
     ORDER BY o.k
    ON CONFLICT (query_id, partition_id, key) DO UPDATE
      SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at;
  END IF;

  -- sink pushes (not strict: a duplicate transactionId is reported as such)
  IF v_npush > 0 THEN
    RETURN QUERY
    SELECT 'push'::text, x.ord, x.seq, x.partition_id, x.duplicate, p_queues[x.ord], NULL::bool, NULL::bool
      FROM queen._push_rows(p_tenant, p_queues, p_parts, p_txn_ids, p_payloads, p_trace_ids,
                            p_producers, p_encrypted, false, lp.pq, lp.pn, lp.ppid, lp.pqid,
                            p_not_before) x
     ORDER BY x.ord;
  END IF;
END
$$;

-- Rows of one (query, partition), sorted by key: only p_keys when non-empty,
-- only keys starting with p_prefix, only values whose windowEnd is a number
-- <= p_ripe (epoch ms). Filters combine with AND. An unknown query has none.
CREATE FUNCTION queen_streams.state_get(p_tenant text, p_query_id uuid, p_partition uuid,
  p_keys text[], p_prefix text, p_ripe numeric)
RETURNS TABLE(key text, value text, updated_at timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT s.key::text, s.value::text, s.updated_at
    FROM queen_streams.state s
    JOIN queen_streams.queries q ON q.id = s.query_id AND q.tenant = p_tenant
   WHERE s.query_id = p_query_id AND s.partition_id = p_partition
     AND (COALESCE(cardinality(p_keys), 0) = 0 OR s.key = ANY (p_keys))
     AND (COALESCE(p_prefix, '') = '' OR (s.key >= p_prefix AND left(s.key, length(p_prefix)) = p_prefix))
     AND (p_ripe IS NULL OR (jsonb_typeof(s.value -> 'windowEnd') = 'number'
                             AND (s.value ->> 'windowEnd')::numeric <= p_ripe))
   ORDER BY s.key
$$;
