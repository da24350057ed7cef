-- 63_sqs_push.sql: SQS sends as items of the push operation. SendMessage
-- and SendMessageBatch are QN_MSG_PUSH requests like an HTTP push (merged
-- with other pushes by pg_writer, spooled to disk during an outage and
-- replayed after); pg_writer calls queen.push_sqs instead of queen.push
-- for a batch that holds at least one SQS item.
--
-- queen.push_sqs takes queen.push's arrays plus p_sqs: NULL for an
-- ordinary item, else the SQS metadata of an SQS send (the codec builds
-- it, actors/sqs/send.c):
--   {"attrs": {name: [DataType, base64 value], ...},   message attributes
--    "sys": {...},                                      system attributes
--    "group": "...", "dedup": "...",                    MessageGroupId, deduplication id
--    "scope": "group",                                  DeduplicationScope=messageGroup
--    "sent": 1700000000000000}                          the send's instant (us)
-- every key optional. For the SQS items, in the push's transaction:
--   * FIFO deduplication (queen.sqs_dedup: 5 minutes, scope queue or
--     group): an item whose deduplication id is live, or repeats an
--     earlier item of the call, is not pushed: duplicate, with the seq of
--     the stored message;
--   * a queen.sqs_meta row (attributes, group and deduplication ids, the
--     sender: the item's producer). An SQS send carries no transaction id
--     of its own, so an SQS item that has one went through the spool,
--     which minted it and answered it to the sender as the MessageId: it
--     is stored as the message's MessageId, with the send's instant as
--     its SentTimestamp.
-- An SQS item without a transaction id naming a queue that does not exist
-- raises QN404 (the codec answers NonExistentQueue); a replayed one creates
-- it, as any replayed push does.
-- Rows: one per item, in order, as queen.push answers them (a duplicate of
-- the deduplication window has no partition_id).
-- Lock order: deduplication keys (sorted), then queen.push's queue and
-- partition locks.
CREATE FUNCTION queen.push_sqs(p_tenant text, p_queues text[], p_parts text[], p_txn_ids text[],
  p_payloads bytea[], p_trace_ids uuid[], p_producers text[], p_encrypted bool[], p_strict bool,
  p_not_before timestamptz[], p_sqs jsonb[])
RETURNS TABLE(ord int, seq bigint, partition_id bigint, queue_id int, duplicate bool)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  n       int := COALESCE(array_length(p_queues, 1), 0);
  v_sqs   int[];          -- the SQS items
  v_qid   int[];
  v_scope text[];
  v_dedup text[];
  v_seq   bigint[];
  v_pid   bigint[];
  v_rqid  int[];
  v_dup   bool[];
  v_same  int[];          -- an earlier item of the call with the same deduplication key
  k_idx   int[];          -- the items to push
  i       int;
  j       int;
  r       record;
  v_key   text;
BEGIN
  IF n = 0 THEN
    RETURN;
  END IF;
  v_sqs := ARRAY(SELECT x FROM generate_subscripts(p_queues, 1) x WHERE p_sqs[x] IS NOT NULL ORDER BY x);
  v_qid := array_fill(NULL::int, ARRAY[n]);
  v_scope := array_fill(NULL::text, ARRAY[n]);
  v_dedup := array_fill(NULL::text, ARRAY[n]);
  v_seq := array_fill(NULL::bigint, ARRAY[n]);
  v_pid := array_fill(NULL::bigint, ARRAY[n]);
  v_rqid := array_fill(NULL::int, ARRAY[n]);
  v_dup := array_fill(false, ARRAY[n]);
  v_same := array_fill(NULL::int, ARRAY[n]);
  FOREACH i IN ARRAY v_sqs LOOP
    v_qid[i] := (SELECT q.id FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queues[i]);
    IF v_qid[i] IS NULL THEN
      IF NULLIF(p_txn_ids[i], '') IS NULL THEN
        RAISE EXCEPTION 'queue % does not exist', p_queues[i] USING ERRCODE = 'QN404';
      END IF;
      PERFORM queen._ensure_queues(p_tenant, ARRAY[p_queues[i]]);
      v_qid[i] := (SELECT q.id FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queues[i]);
    END IF;
    v_dedup[i] := p_sqs[i]->>'dedup';
    IF v_dedup[i] IS NOT NULL THEN
      v_scope[i] := CASE WHEN p_sqs[i]->>'scope' = 'group' THEN COALESCE(p_sqs[i]->>'group', '') ELSE '' END;
    END IF;
  END LOOP;
  -- the deduplication keys, locked in sorted order before anything else
  FOR v_key IN SELECT DISTINCT v_qid[x] || '/' || v_scope[x] || '/' || v_dedup[x]
                 FROM unnest(v_sqs) x WHERE v_dedup[x] IS NOT NULL ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended('sqs_dedup:' || v_key, 0));
  END LOOP;
  FOREACH i IN ARRAY v_sqs LOOP
    CONTINUE WHEN v_dedup[i] IS NULL;
    v_seq[i] := (SELECT d.seq FROM queen.sqs_dedup d
                  WHERE d.queue_id = v_qid[i] AND d.scope_key = v_scope[i] AND d.dedup_id = v_dedup[i]
                    AND d.expires_at > now());
    IF v_seq[i] IS NOT NULL THEN
      v_dup[i] := true;
      CONTINUE;
    END IF;
    FOREACH j IN ARRAY v_sqs LOOP
      EXIT WHEN j >= i;
      IF v_qid[j] = v_qid[i] AND v_dedup[j] = v_dedup[i] AND v_scope[j] = v_scope[i] AND NOT v_dup[j] THEN
        v_same[i] := j;
        v_dup[i] := true;
        EXIT;
      END IF;
    END LOOP;
  END LOOP;
  k_idx := ARRAY(SELECT x FROM generate_subscripts(p_queues, 1) x WHERE NOT v_dup[x] ORDER BY x);
  IF cardinality(k_idx) > 0 THEN
    FOR r IN SELECT x.ord, x.seq, x.partition_id, x.queue_id, x.duplicate
               FROM queen.push(p_tenant,
                      ARRAY(SELECT p_queues[k] FROM unnest(k_idx) WITH ORDINALITY u(k, o) ORDER BY o),
                      ARRAY(SELECT p_parts[k] FROM unnest(k_idx) WITH ORDINALITY u(k, o) ORDER BY o),
                      ARRAY(SELECT p_txn_ids[k] FROM unnest(k_idx) WITH ORDINALITY u(k, o) ORDER BY o),
                      ARRAY(SELECT p_payloads[k] FROM unnest(k_idx) WITH ORDINALITY u(k, o) ORDER BY o),
                      ARRAY(SELECT p_trace_ids[k] FROM unnest(k_idx) WITH ORDINALITY u(k, o) ORDER BY o),
                      ARRAY(SELECT p_producers[k] FROM unnest(k_idx) WITH ORDINALITY u(k, o) ORDER BY o),
                      ARRAY(SELECT p_encrypted[k] FROM unnest(k_idx) WITH ORDINALITY u(k, o) ORDER BY o),
                      p_strict,
                      CASE WHEN p_not_before IS NOT NULL THEN
                        ARRAY(SELECT p_not_before[k] FROM unnest(k_idx) WITH ORDINALITY u(k, o) ORDER BY o) END) x LOOP
      i := k_idx[r.ord];
      v_seq[i] := r.seq;
      v_pid[i] := r.partition_id;
      v_rqid[i] := r.queue_id;
      v_dup[i] := r.duplicate;      -- a replay whose transaction id is stored already
    END LOOP;
    INSERT INTO queen.sqs_meta (partition_id, seq, attrs, sys_attrs, group_id, dedup_id, sender_id,
                                message_id, sent_at)
    SELECT v_pid[x], v_seq[x], p_sqs[x]->'attrs', p_sqs[x]->'sys', p_sqs[x]->>'group', v_dedup[x],
           p_producers[x], NULLIF(p_txn_ids[x], ''),
           CASE WHEN NULLIF(p_txn_ids[x], '') IS NOT NULL AND p_sqs[x] ? 'sent' THEN
             timestamptz 'epoch' + (p_sqs[x]->>'sent')::bigint * interval '1 microsecond' END
      FROM unnest(v_sqs) x WHERE NOT v_dup[x];
    INSERT INTO queen.sqs_dedup AS d (queue_id, scope_key, dedup_id, seq, expires_at)
    SELECT v_qid[x], v_scope[x], v_dedup[x], v_seq[x], now() + interval '5 minutes'
      FROM unnest(v_sqs) x WHERE v_dedup[x] IS NOT NULL AND NOT v_dup[x]
    ON CONFLICT (queue_id, scope_key, dedup_id)
    DO UPDATE SET seq = EXCLUDED.seq, expires_at = EXCLUDED.expires_at;
  END IF;
  FOR i IN 1..n LOOP
    IF v_same[i] IS NOT NULL THEN
      v_seq[i] := v_seq[v_same[i]];
    END IF;
    RETURN QUERY SELECT i, v_seq[i], v_pid[i], COALESCE(v_rqid[i], v_qid[i]), v_dup[i];
  END LOOP;
END
$$;
