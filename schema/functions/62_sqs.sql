-- 62_sqs.sql: the SQS front door's statements (spec shared/spec/sqs.md;
-- tables in migrations/0005_sqs.sql). An SQS queue is a native queue; SQS
-- receivers are the queue-mode group '__QUEUE_MODE__'. Every function takes
-- (tenant, queue name) and answers a status instead of raising for the
-- conditions SQS names (no queue, conflict, stale handle...), so the codec
-- maps them to SQS error codes. Attribute values are validated by the codec
-- (wire/sqs_validate.c) before they get here.
--
-- Lock order follows the hot path: queen.push / queen.pop / queen.ack take
-- their own locks; the visibility change takes only ready rows (as
-- queen.renew); purge locks partitions in id order, then ready rows.

-- The attributes a queue has when nobody set them (§6.1).
CREATE FUNCTION queen._sqs_defaults(p_fifo bool) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('VisibilityTimeout', '30', 'DelaySeconds', '0',
           'MaximumMessageSize', '1048576', 'MessageRetentionPeriod', '345600',
           'ReceiveMessageWaitTimeSeconds', '0', 'SqsManagedSseEnabled', 'true')
      || CASE WHEN p_fifo THEN jsonb_build_object('FifoQueue', 'true',
           'ContentBasedDeduplication', 'false', 'DeduplicationScope', 'queue',
           'FifoThroughputLimit', 'perQueue') ELSE '{}'::jsonb END
$$;

-- Native options mapped from effective SQS attributes (§7.1).
CREATE FUNCTION queen._sqs_native(a jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object(
           'leaseTime', GREATEST((a->>'VisibilityTimeout')::int, 1),
           'delayedProcessing', (a->>'DelaySeconds')::int,
           'retentionEnabled', true,
           'retentionSeconds', (a->>'MessageRetentionPeriod')::int)
$$;

CREATE FUNCTION queen._sqs_qm(p_qid int) RETURNS int
LANGUAGE sql STABLE AS $$
  SELECT g.id FROM queen.consumer_groups g
   WHERE g.queue_id = p_qid AND g.name = '__QUEUE_MODE__' AND NOT g.retired
$$;

-- The RedrivePolicy of p_attrs checked against the queues (§8.4): NULL when
-- absent, removed ("") or fine; else no_dlq (the target ARN names no queue
-- of this tenant and account), dlq_type (FIFO and standard mixed) or
-- bad_redrive (not JSON, no target, maxReceiveCount outside 1-1000).
CREATE FUNCTION queen._sqs_redrive_check(p_tenant text, p_attrs jsonb, p_fifo bool, p_account text)
RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_pol  jsonb;
  v_arn  text;
  v_max  numeric;
  v_name text;
  v_fifo bool;
BEGIN
  IF p_attrs IS NULL OR NOT p_attrs ? 'RedrivePolicy' OR p_attrs->>'RedrivePolicy' = '' THEN
    RETURN NULL;
  END IF;
  BEGIN
    v_pol := (p_attrs->>'RedrivePolicy')::jsonb;
    v_arn := v_pol->>'deadLetterTargetArn';
    v_max := (v_pol->>'maxReceiveCount')::numeric;
  EXCEPTION WHEN others THEN
    RETURN 'bad_redrive';
  END;
  IF jsonb_typeof(v_pol) <> 'object' OR v_arn IS NULL OR v_max IS NULL
     OR v_max <> trunc(v_max) OR v_max < 1 OR v_max > 1000 THEN
    RETURN 'bad_redrive';
  END IF;
  IF v_arn !~ '^arn:aws:sqs:[^:]*:[0-9]+:[^:]+$' OR split_part(v_arn, ':', 5) <> p_account THEN
    RETURN 'no_dlq';
  END IF;
  v_name := split_part(v_arn, ':', 6);
  SELECT COALESCE(s.fifo, q.name LIKE '%.fifo') INTO v_fifo
    FROM queen.queues q LEFT JOIN queen.sqs_queues s ON s.queue_id = q.id
   WHERE q.tenant = p_tenant AND q.name = v_name;
  IF NOT FOUND THEN
    RETURN 'no_dlq';
  END IF;
  IF v_fifo <> p_fifo THEN
    RETURN 'dlq_type';
  END IF;
  RETURN NULL;
END
$$;

-- Creates the queue, adopts a native one, or checks an existing one:
-- status created | adopted | exists | conflict (different FIFO-ness or a
-- given attribute that differs from the effective one), or the refusal of
-- queen._sqs_redrive_check (nothing created).
CREATE FUNCTION queen.sqs_create(p_tenant text, p_name text, p_fifo bool, p_attrs jsonb,
  p_tags jsonb)
RETURNS TABLE(status text, queue_id int)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_qid int;
  v_s   queen.sqs_queues;
  v_eff jsonb;
  k     text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('sqs_create:' || p_tenant || '/' || p_name, 0));
  k := queen._sqs_redrive_check(p_tenant, p_attrs, p_fifo, '000000000000');
  IF k IS NOT NULL THEN
    RETURN QUERY SELECT k, NULL::int;
    RETURN;
  END IF;
  SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_name;
  IF FOUND THEN
    SELECT * INTO v_s FROM queen.sqs_queues s WHERE s.queue_id = v_qid;
    IF FOUND THEN
      v_eff := queen._sqs_defaults(v_s.fifo) || v_s.attrs;
      IF v_s.fifo <> p_fifo THEN
        RETURN QUERY SELECT 'conflict'::text, v_qid;
        RETURN;
      END IF;
      FOR k IN SELECT jsonb_object_keys(p_attrs) LOOP
        IF (v_eff->>k) IS DISTINCT FROM (p_attrs->>k) THEN
          RETURN QUERY SELECT 'conflict'::text, v_qid;
          RETURN;
        END IF;
      END LOOP;
      RETURN QUERY SELECT 'exists'::text, v_qid;
      RETURN;
    END IF;
    INSERT INTO queen.sqs_queues (queue_id, fifo, attrs, tags) VALUES (v_qid, p_fifo, p_attrs, p_tags);
    IF p_attrs <> '{}'::jsonb THEN
      PERFORM queen.configure(p_tenant, p_name, NULL, NULL,
                              queen._sqs_native(queen._sqs_defaults(p_fifo) || p_attrs));
    END IF;
    RETURN QUERY SELECT 'adopted'::text, v_qid;
    RETURN;
  END IF;
  SELECT c.queue_id INTO v_qid
    FROM queen.configure(p_tenant, p_name, NULL, NULL,
                         queen._sqs_native(queen._sqs_defaults(p_fifo) || p_attrs)) c;
  INSERT INTO queen.sqs_queues (queue_id, fifo, attrs, tags) VALUES (v_qid, p_fifo, p_attrs, p_tags);
  RETURN QUERY SELECT 'created'::text, v_qid;
END
$$;

-- One queue as SQS sees it (a native queue without SQS settings reads with
-- the defaults; FIFO when its name ends in .fifo; encrypted: the native
-- encryptionEnabled, whose payloads the codec seals and opens). With p_counts, the
-- ApproximateNumberOfMessages* counters of the queue-mode group (§7.5).
-- No row: the queue does not exist.
CREATE FUNCTION queen.sqs_queue(p_tenant text, p_name text, p_counts bool)
RETURNS TABLE(queue_id int, fifo bool, attrs jsonb, tags jsonb, created_at timestamptz,
  modified_at timestamptz, visible bigint, inflight bigint, delayed bigint, secret bytea,
  encrypted bool)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  q     queen.queues;
  v_s   queen.sqs_queues;
  v_fifo bool;
  v_gid int;
  v_vis bigint := 0;
  v_inf bigint := 0;
  v_del bigint := 0;
BEGIN
  SELECT * INTO q FROM queen.queues x WHERE x.tenant = p_tenant AND x.name = p_name;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT * INTO v_s FROM queen.sqs_queues s WHERE s.queue_id = q.id;
  v_fifo := COALESCE(v_s.fifo, p_name LIKE '%.fifo');
  IF p_counts THEN
    v_gid := queen._sqs_qm(q.id);
    SELECT COALESCE(sum(x.pending), 0), COALESCE(sum(x.leased), 0), COALESCE(sum(x.later), 0)
      INTO v_vis, v_inf, v_del
      FROM (
        SELECT p.id,
               (SELECT count(*) FROM queen.messages m
                 WHERE m.partition_id = p.id AND m.seq > c.cur
                   AND (c.leased_to IS NULL OR m.seq > c.leased_to)
                   AND (m.not_before IS NULL OR m.not_before <= now())
                   AND m.created_at <= now() - make_interval(secs => q.delayed_processing)) AS pending,
               (SELECT count(*) FROM queen.messages m
                 WHERE m.partition_id = p.id AND m.seq > c.cur AND m.seq <= c.leased_to) AS leased,
               (SELECT count(*) FROM queen.messages m
                 WHERE m.partition_id = p.id AND m.seq > c.cur
                   AND (c.leased_to IS NULL OR m.seq > c.leased_to)
                   AND ((m.not_before IS NOT NULL AND m.not_before > now())
                        OR m.created_at > now() - make_interval(secs => q.delayed_processing))) AS later
          FROM queen.partitions p
          CROSS JOIN LATERAL (
            SELECT COALESCE(r.acked_seq, cu.acked_seq, g.start_seq, 0) AS cur,
                   CASE WHEN r.lease_id IS NOT NULL AND r.avail_at > now() THEN r.leased_to END AS leased_to
              FROM (SELECT 1) one
              LEFT JOIN queen.consumer_groups g ON g.id = v_gid
              LEFT JOIN queen.ready r ON r.partition_id = p.id AND r.group_id = v_gid
              LEFT JOIN queen.cursors cu ON cu.partition_id = p.id AND cu.group_id = v_gid) c
         WHERE p.queue_id = q.id) x;
  END IF;
  RETURN QUERY
    SELECT q.id, v_fifo, queen._sqs_defaults(v_fifo) || COALESCE(v_s.attrs, '{}'::jsonb),
           COALESCE(v_s.tags, '{}'::jsonb), COALESCE(v_s.created_at, q.created_at),
           COALESCE(v_s.modified_at, q.created_at), v_vis, v_inf, v_del,
           (SELECT k.secret FROM queen.sqs_secret k WHERE k.id = 1), q.encryption_enabled;
END
$$;

-- Queue names legal in SQS, sorted, after p_after, at most p_limit.
CREATE FUNCTION queen.sqs_list(p_tenant text, p_prefix text, p_after text, p_limit int)
RETURNS TABLE(name text)
LANGUAGE sql STABLE AS $$
  SELECT q.name::text FROM queen.queues q
   WHERE q.tenant = p_tenant
     AND (p_prefix IS NULL OR starts_with(q.name, p_prefix))
     AND (p_after IS NULL OR q.name > p_after)
     AND q.name ~ '^[A-Za-z0-9_-]{1,80}$|^[A-Za-z0-9_-]{1,75}\.fifo$'
   ORDER BY q.name
   LIMIT p_limit
$$;

-- SetQueueAttributes: merges p_attrs (a "" value removes RedrivePolicy,
-- RedriveAllowPolicy, Policy, KmsMasterKeyId) and applies the native options.
-- status ok | no_queue | a refusal of queen._sqs_redrive_check.
CREATE FUNCTION queen.sqs_set(p_tenant text, p_name text, p_attrs jsonb)
RETURNS TABLE(status text)
LANGUAGE plpgsql AS $$
DECLARE
  v_qid  int;
  v_fifo bool;
  v_a    jsonb;
  v_bad  text;
BEGIN
  SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_name;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'no_queue'::text;
    RETURN;
  END IF;
  INSERT INTO queen.sqs_queues (queue_id, fifo) VALUES (v_qid, p_name LIKE '%.fifo')
  ON CONFLICT (queue_id) DO NOTHING;
  SELECT s.fifo INTO v_fifo FROM queen.sqs_queues s WHERE s.queue_id = v_qid;
  v_bad := queen._sqs_redrive_check(p_tenant, p_attrs, v_fifo, '000000000000');
  IF v_bad IS NOT NULL THEN
    RETURN QUERY SELECT v_bad;
    RETURN;
  END IF;
  UPDATE queen.sqs_queues s
     SET attrs = (SELECT COALESCE(jsonb_object_agg(e.key, e.value), '{}'::jsonb)
                    FROM jsonb_each(s.attrs || p_attrs) e WHERE e.value <> '""'::jsonb),
         modified_at = now()
   WHERE s.queue_id = v_qid
   RETURNING s.fifo, s.attrs INTO v_fifo, v_a;
  PERFORM queen.configure(p_tenant, p_name, NULL, NULL,
                          queen._sqs_native(queen._sqs_defaults(v_fifo) || v_a));
  RETURN QUERY SELECT 'ok'::text;
END
$$;

-- TagQueue / UntagQueue / ListQueueTags: adds p_add, removes p_remove,
-- answers the tags.
CREATE FUNCTION queen.sqs_tags(p_tenant text, p_name text, p_add jsonb, p_remove text[])
RETURNS TABLE(status text, tags jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_qid int;
  v_t   jsonb;
BEGIN
  SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_name;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'no_queue'::text, NULL::jsonb;
    RETURN;
  END IF;
  INSERT INTO queen.sqs_queues (queue_id, fifo) VALUES (v_qid, p_name LIKE '%.fifo')
  ON CONFLICT (queue_id) DO NOTHING;
  UPDATE queen.sqs_queues s
     SET tags = (s.tags || COALESCE(p_add, '{}'::jsonb)) - COALESCE(p_remove, '{}'::text[])
   WHERE s.queue_id = v_qid
   RETURNING s.tags INTO v_t;
  IF jsonb_typeof(v_t) = 'object' AND (SELECT count(*) FROM jsonb_object_keys(v_t)) > 50 THEN
    RAISE EXCEPTION 'too many tags' USING ERRCODE = '22023';
  END IF;
  RETURN QUERY SELECT 'ok'::text, v_t;
END
$$;

-- DeleteQueue: the native queue for every protocol (D-S3), and the SQS rows.
CREATE FUNCTION queen.sqs_delete(p_tenant text, p_name text)
RETURNS TABLE(existed bool)
LANGUAGE plpgsql AS $$
DECLARE
  v_qid int;
BEGIN
  SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_name;
  IF FOUND THEN
    DELETE FROM queen.sqs_queues WHERE queue_id = v_qid;
    DELETE FROM queen.sqs_dedup WHERE queue_id = v_qid;
  END IF;
  RETURN QUERY SELECT d.existed FROM queen.queue_delete(p_tenant, p_name) d;
END
$$;

-- PurgeQueue: every queue-mode cursor moves to the newest message of its
-- partition and its lease is dropped; rows stay for named groups (D-S3).
-- status ok | no_queue | in_progress (a purge within the last 60 s).
CREATE FUNCTION queen.sqs_purge(p_tenant text, p_name text)
RETURNS TABLE(status text)
LANGUAGE plpgsql AS $$
DECLARE
  v_qid int;
  v_gid int;
  v_pid bigint;
  v_top bigint;
BEGIN
  SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_name;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'no_queue'::text;
    RETURN;
  END IF;
  INSERT INTO queen.sqs_queues (queue_id, fifo) VALUES (v_qid, p_name LIKE '%.fifo')
  ON CONFLICT (queue_id) DO NOTHING;
  UPDATE queen.sqs_queues s SET purged_at = now()
   WHERE s.queue_id = v_qid AND (s.purged_at IS NULL OR s.purged_at <= now() - interval '60 seconds');
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'in_progress'::text;
    RETURN;
  END IF;
  v_gid := queen._group_get(v_qid, '__QUEUE_MODE__', NULL, NULL, NULL);
  FOR v_pid IN SELECT p.id FROM queen.partitions p WHERE p.queue_id = v_qid ORDER BY p.id LOOP
    PERFORM queen.lock_partition(v_pid);
    SELECT max(m.seq) INTO v_top FROM queen.messages m WHERE m.partition_id = v_pid;
    CONTINUE WHEN v_top IS NULL;
    UPDATE queen.ready r
       SET acked_seq = GREATEST(r.acked_seq, v_top), lease_id = NULL, leased_from = NULL,
           leased_to = NULL, batch_size = 0, acked_count = 0, attempts = 0, avail_at = now()
     WHERE r.partition_id = v_pid AND r.group_id = v_gid;
    INSERT INTO queen.cursors AS c (partition_id, group_id, acked_seq) VALUES (v_pid, v_gid, v_top)
    ON CONFLICT (partition_id, group_id)
    DO UPDATE SET acked_seq = GREATEST(c.acked_seq, EXCLUDED.acked_seq), updated_at = now();
  END LOOP;
  RETURN QUERY SELECT 'ok'::text;
END
$$;

-- SendMessage(Batch) of the previous release's brokers (its statement
-- catalogue calls this; the broker now sends SQS items through the push
-- operation, queen.push_sqs in 63_sqs_push.sql): the items of one queue as
-- one queen.push_sqs call. Rows (ord, seq, partition_id, duplicate,
-- queue_name); queue_name names the queue for "committed" (NULL for
-- duplicates; one row with ord 0 when the queue does not exist).
-- Kept one release for rolling upgrades (docs/storage.md); then removed.
CREATE FUNCTION queen.sqs_send(p_tenant text, p_queue text, p_parts text[], p_payloads bytea[],
  p_not_before bigint[], p_attrs jsonb[], p_sys jsonb[], p_groups text[], p_dedup text[],
  p_sender text, p_scope_group bool, p_encrypted bool)
RETURNS TABLE(ord int, seq bigint, partition_id bigint, duplicate bool, queue_name text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  n int := COALESCE(array_length(p_parts, 1), 0);
BEGIN
  IF NOT EXISTS (SELECT 1 FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue) THEN
    RETURN QUERY SELECT 0, NULL::bigint, NULL::bigint, false, NULL::text;
    RETURN;
  END IF;
  IF n = 0 THEN
    RETURN;
  END IF;
  RETURN QUERY
    SELECT x.ord, x.seq, x.partition_id, x.duplicate, CASE WHEN x.duplicate THEN NULL ELSE p_queue END
      FROM queen.push_sqs(p_tenant, array_fill(p_queue, ARRAY[n]), p_parts, array_fill(NULL::text, ARRAY[n]),
             p_payloads, array_fill(NULL::uuid, ARRAY[n]), array_fill(p_sender, ARRAY[n]),
             array_fill(COALESCE(p_encrypted, false), ARRAY[n]), false, queen.ts_of_us(p_not_before),
             ARRAY(SELECT jsonb_strip_nulls(jsonb_build_object('attrs', p_attrs[i], 'sys', p_sys[i],
                            'group', p_groups[i], 'dedup', p_dedup[i],
                            'scope', CASE WHEN p_scope_group THEN 'group' END))
                     FROM generate_subscripts(p_parts, 1) i ORDER BY i)) x;
END
$$;

-- ReceiveMessage: up to p_max messages of the queue-mode group under lease
-- p_lease, visible again p_vis seconds from now; receive counts go up.
-- Standard queues: one native pop of one message per partition (stripe).
-- FIFO queues: one native pop per message group (partition) of up to the
-- rest of p_max messages, in order, all under the group's one lease: no
-- other message of a group is handed out while one of it is in flight
-- (spec §7.2). With a redrive policy (p_dlq, p_max_receives), a message
-- already received p_max_receives times is copied into the dead-letter
-- queue p_dlq (same body, metadata) and acked with status 'dlq' instead of
-- being returned; in a FIFO group after a message already returned, the
-- group's lease is cut just before it instead (it moves at the group's next
-- receive, so order holds). kheaders: the Kafka record headers of a
-- message produced through Kafka (queen.message_meta), which the codec
-- presents as message attributes. No message: one row with only next_due
-- (when something becomes claimable).
CREATE FUNCTION queen.sqs_receive(p_tenant text, p_queue text, p_max int, p_vis int,
  p_lease uuid, p_dlq text, p_max_receives int)
RETURNS TABLE(partition_id bigint, partition_name text, seq bigint, created_at timestamptz,
  payload bytea, receive_count int, first_at timestamptz, attrs jsonb, sys_attrs jsonb,
  group_id text, dedup_id text, sender_id text, next_due timestamptz, moved int,
  message_id text, sent_at timestamptz, is_encrypted bool, kheaders bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  r       queen.pop_row;
  v_max   int := GREATEST(p_max, 1);
  v_fifo  bool;
  i       int := 0;
  v_got   int := 0;
  v_moved int := 0;
  v_due   timestamptz;
  v_cnt   int;
  v_first timestamptz;
  v_pids  bigint[] := '{}';
  v_cseq  bigint;
  v_cpid  bigint;
  v_n     int;
  v_kept  int;
  v_last  bigint;
  v_cut   bool;
  v_empty bool := false;
  m       queen.sqs_meta;
BEGIN
  SELECT COALESCE(s.fifo, p_queue LIKE '%.fifo') INTO v_fifo
    FROM queen.queues q LEFT JOIN queen.sqs_queues s ON s.queue_id = q.id
   WHERE q.tenant = p_tenant AND q.name = p_queue;
  WHILE v_got < v_max AND i < v_max + 20 AND NOT v_empty LOOP
    i := i + 1;
    v_n := 0;
    v_kept := 0;
    v_cut := false;
    FOR r IN SELECT * FROM queen.pop(p_tenant, p_queue, NULL, '__QUEUE_MODE__', NULL, NULL,
                                     CASE WHEN v_fifo THEN v_max - v_got ELSE 1 END, 1,
                                     p_lease, false) x ORDER BY x.seq LOOP
      IF r.seq IS NULL THEN
        v_due := r.next_due;
        v_empty := true;
        EXIT;
      END IF;
      v_n := v_n + 1;
      IF v_n = 1 THEN
        -- Leased until the end of this call's loop at least: a visibility of
        -- 0 must not hand the same message out twice in one receive.
        UPDATE queen.ready rr SET avail_at = now() + make_interval(secs => GREATEST(p_vis, 1))
         WHERE rr.partition_id = r.partition_id AND rr.lease_id = p_lease;
        v_pids := v_pids || r.partition_id;
      END IF;
      CONTINUE WHEN v_cut;
      SELECT * INTO m FROM queen.sqs_meta x WHERE x.partition_id = r.partition_id AND x.seq = r.seq;
      SELECT s.count, s.first_at INTO v_cnt, v_first FROM queen.sqs_receives s
       WHERE s.partition_id = r.partition_id AND s.seq = r.seq;
      IF p_dlq IS NOT NULL AND COALESCE(v_cnt, 0) >= p_max_receives THEN
        IF v_kept > 0 THEN
          -- FIFO: an earlier message of the group goes out in this receive;
          -- the lease ends before this one, which stays first in its group
          UPDATE queen.ready rr
             SET leased_to = v_last,
                 batch_size = (SELECT count(*) FROM queen.messages mm
                                WHERE mm.partition_id = r.partition_id
                                  AND mm.seq > rr.leased_from AND mm.seq <= v_last)
           WHERE rr.partition_id = r.partition_id AND rr.lease_id = p_lease;
          v_cut := true;
          CONTINUE;
        END IF;
        SELECT x.seq, x.partition_id INTO v_cseq, v_cpid
          FROM queen.push(p_tenant, ARRAY[p_dlq], ARRAY[COALESCE(m.group_id, r.partition_name)],
                          ARRAY[NULL::text], ARRAY[r.payload], ARRAY[r.trace_id],
                          ARRAY[COALESCE(m.sender_id, r.producer)], ARRAY[COALESCE(r.is_encrypted, false)],
                          false, NULL) x;
        INSERT INTO queen.sqs_meta (partition_id, seq, attrs, sys_attrs, group_id, dedup_id, sender_id,
                                    message_id, sent_at)
        VALUES (v_cpid, v_cseq, m.attrs, m.sys_attrs, m.group_id, m.dedup_id, m.sender_id,
                COALESCE(m.message_id, queen.uuid_of(1, r.seq)::text), COALESCE(m.sent_at, r.created_at))
        ON CONFLICT DO NOTHING;
        PERFORM queen.ack(p_tenant, ARRAY['__QUEUE_MODE__'], ARRAY[r.partition_id], ARRAY[r.txn_id],
                          ARRAY[r.seq], ARRAY['dlq'], ARRAY[p_lease], ARRAY['maxReceiveCount exceeded']);
        DELETE FROM queen.sqs_receives s WHERE s.partition_id = r.partition_id AND s.seq = r.seq;
        v_moved := v_moved + 1;
        CONTINUE;
      END IF;
      INSERT INTO queen.sqs_receives AS s (partition_id, seq, count) VALUES (r.partition_id, r.seq, 1)
      ON CONFLICT (partition_id, seq) DO UPDATE SET count = s.count + 1
      RETURNING s.count, s.first_at INTO v_cnt, v_first;
      v_got := v_got + 1;
      v_kept := v_kept + 1;
      v_last := r.seq;
      RETURN QUERY SELECT r.partition_id, r.partition_name, r.seq, r.created_at, r.payload, v_cnt,
                          v_first, m.attrs, m.sys_attrs, m.group_id, m.dedup_id, m.sender_id,
                          NULL::timestamptz, v_moved, m.message_id, m.sent_at,
                          COALESCE(r.is_encrypted, false),
                          (SELECT mm.headers FROM queen.message_meta mm
                            WHERE mm.partition_id = r.partition_id AND mm.seq = r.seq);
    END LOOP;
  END LOOP;
  IF p_vis = 0 AND cardinality(v_pids) > 0 THEN
    UPDATE queen.ready rr SET avail_at = now(), lease_id = NULL, leased_from = NULL, leased_to = NULL,
           batch_size = 0, acked_count = 0
     WHERE rr.partition_id = ANY (v_pids) AND rr.lease_id = p_lease;
  END IF;
  IF v_got = 0 THEN
    RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::bigint, NULL::timestamptz, NULL::bytea,
                        NULL::int, NULL::timestamptz, NULL::jsonb, NULL::jsonb, NULL::text,
                        NULL::text, NULL::text, v_due, v_moved, NULL::text, NULL::timestamptz,
                        NULL::bool, NULL::bytea;
  END IF;
END
$$;

-- DeleteMessage(Batch): per item (partition, seq, lease of the handle):
-- gone (already acked or deleted: success), deleted (acked now), stale (the
-- message was received again since; the codec decides by queue type).
-- The items still leased by their handle go to ONE queen.ack (which locks
-- partitions in ascending order). ok marks the rows whose ack released a
-- lease ("committed" wakes pops).
CREATE FUNCTION queen.sqs_ack(p_tenant text, p_queue text, p_pids bigint[], p_seqs bigint[],
  p_leases uuid[])
RETURNS TABLE(ord int, status text, queue_name text, ok bool)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  n       int := COALESCE(array_length(p_pids, 1), 0);
  v_qid   int;
  v_gid   int;
  i       int;
  v_cur   bigint;
  v_lease uuid;
  v_st    text[];
  k_idx   int[] := '{}';
  r       record;
BEGIN
  IF n = 0 THEN
    RETURN;
  END IF;
  SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
  v_gid := queen._sqs_qm(v_qid);
  v_st := array_fill('stale'::text, ARRAY[n]);
  FOR i IN 1..n LOOP
    SELECT COALESCE(r.acked_seq, c.acked_seq, g.start_seq, 0), r.lease_id INTO v_cur, v_lease
      FROM (SELECT 1) one
      LEFT JOIN queen.consumer_groups g ON g.id = v_gid
      LEFT JOIN queen.ready r ON r.partition_id = p_pids[i] AND r.group_id = v_gid
      LEFT JOIN queen.cursors c ON c.partition_id = p_pids[i] AND c.group_id = v_gid;
    IF v_gid IS NULL OR v_cur >= p_seqs[i]
       OR NOT EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = p_pids[i] AND m.seq = p_seqs[i]) THEN
      v_st[i] := 'gone';
    ELSIF v_lease = p_leases[i] THEN
      k_idx := k_idx || i;
    END IF;
  END LOOP;
  IF cardinality(k_idx) > 0 THEN
    FOR r IN SELECT a.ord, a.success
               FROM queen.ack(p_tenant, array_fill('__QUEUE_MODE__'::text, ARRAY[cardinality(k_idx)]),
                              ARRAY(SELECT p_pids[x] FROM unnest(k_idx) WITH ORDINALITY u(x, o) ORDER BY o),
                              -- the stored transaction ids: queen.ack by seq
                              -- takes a message with one only when it is given
                              ARRAY(SELECT (SELECT m.txn_id FROM queen.messages m
                                             WHERE m.partition_id = p_pids[x] AND m.seq = p_seqs[x])
                                      FROM unnest(k_idx) WITH ORDINALITY u(x, o) ORDER BY o),
                              ARRAY(SELECT p_seqs[x] FROM unnest(k_idx) WITH ORDINALITY u(x, o) ORDER BY o),
                              array_fill('completed'::text, ARRAY[cardinality(k_idx)]),
                              ARRAY(SELECT p_leases[x] FROM unnest(k_idx) WITH ORDINALITY u(x, o) ORDER BY o),
                              array_fill(NULL::text, ARRAY[cardinality(k_idx)])) a LOOP
      IF r.success THEN
        v_st[k_idx[r.ord]] := 'deleted';
      END IF;
    END LOOP;
    DELETE FROM queen.sqs_receives s
     USING unnest(k_idx) x
     WHERE v_st[x] = 'deleted' AND s.partition_id = p_pids[x] AND s.seq = p_seqs[x];
  END IF;
  FOR i IN 1..n LOOP
    RETURN QUERY SELECT i, v_st[i], CASE WHEN v_st[i] = 'deleted' THEN p_queue END, v_st[i] = 'deleted';
  END LOOP;
END
$$;

-- ChangeMessageVisibility(Batch): the handle's lease must be current and
-- live: then its expiry becomes now + secs, or with 0 the lease is released
-- (receivable at once, no retry penalty). Else not_inflight.
CREATE FUNCTION queen.sqs_visibility(p_tenant text, p_queue text, p_pids bigint[], p_seqs bigint[],
  p_leases uuid[], p_secs int[])
RETURNS TABLE(ord int, status text, queue_name text, wake bool)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_qid int;
  v_gid int;
  i     int;
BEGIN
  SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
  v_gid := queen._sqs_qm(v_qid);
  -- Ready rows in (partition, group) order, like queen.ack and queen.renew.
  PERFORM 1 FROM queen.ready r
   WHERE r.group_id = v_gid AND r.partition_id = ANY (p_pids)
   ORDER BY r.partition_id FOR UPDATE;
  FOR i IN 1..COALESCE(array_length(p_pids, 1), 0) LOOP
    UPDATE queen.ready r
       SET avail_at = now() + make_interval(secs => p_secs[i]),
           lease_id = CASE WHEN p_secs[i] = 0 THEN NULL ELSE r.lease_id END,
           leased_from = CASE WHEN p_secs[i] = 0 THEN NULL ELSE r.leased_from END,
           leased_to = CASE WHEN p_secs[i] = 0 THEN NULL ELSE r.leased_to END,
           batch_size = CASE WHEN p_secs[i] = 0 THEN 0 ELSE r.batch_size END,
           acked_count = CASE WHEN p_secs[i] = 0 THEN 0 ELSE r.acked_count END
     WHERE r.partition_id = p_pids[i] AND r.group_id = v_gid AND r.lease_id = p_leases[i]
       AND r.avail_at > now() AND r.acked_seq < p_seqs[i];
    IF FOUND THEN
      RETURN QUERY SELECT i, 'ok'::text, p_queue, p_secs[i] = 0;
    ELSE
      RETURN QUERY SELECT i, 'not_inflight'::text, NULL::text, false;
    END IF;
  END LOOP;
END
$$;

-- Queues whose RedrivePolicy names p_dlq as target.
CREATE FUNCTION queen.sqs_dlq_sources(p_tenant text, p_dlq_arn text)
RETURNS TABLE(name text)
LANGUAGE sql STABLE AS $$
  SELECT q.name::text FROM queen.sqs_queues s JOIN queen.queues q ON q.id = s.queue_id
   WHERE q.tenant = p_tenant AND (s.attrs->>'RedrivePolicy')::jsonb->>'deadLetterTargetArn' = p_dlq_arn
   ORDER BY q.name
$$;

-- Upkeep, called by the retention actor every tick (p_max rows per job;
-- tables and indexes in migrations/0011_sqs_sweep.sql): expired dedup
-- entries; metadata of messages that no longer exist (retention, queue or
-- partition deletion); receive counts of messages that no longer exist or
-- that the queue-mode cursor has passed. The two walks go in seq order from
-- sqs_sweep_pos and wrap when a batch comes back short; one broker at a
-- time walks (SKIP LOCKED). Rows of one push are committed with it, so a
-- message and its metadata are seen together.
CREATE FUNCTION queen.sqs_sweep(p_max int) RETURNS TABLE(job text, affected bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_max  int := GREATEST(COALESCE(p_max, 1000), 1);
  v_n    bigint;
  v_seen bigint;
  v_last bigint;
  v_pos  queen.sqs_sweep_pos;
BEGIN
  WITH d AS (
    DELETE FROM queen.sqs_dedup x
     WHERE (x.queue_id, x.scope_key, x.dedup_id) IN (
       SELECT y.queue_id, y.scope_key, y.dedup_id FROM queen.sqs_dedup y
        WHERE y.expires_at <= now() ORDER BY y.expires_at LIMIT v_max FOR UPDATE SKIP LOCKED)
       AND x.expires_at <= now()
    RETURNING 1)
  SELECT count(*) INTO v_n FROM d;
  RETURN QUERY SELECT 'sqs_dedup'::text, v_n;

  SELECT * INTO v_pos FROM queen.sqs_sweep_pos p WHERE p.id = 1 FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    RETURN;
  END IF;

  WITH w AS (
    SELECT s.partition_id, s.seq FROM queen.sqs_meta s
     WHERE s.seq > v_pos.meta_seq ORDER BY s.seq LIMIT v_max),
  dead AS (
    SELECT w.partition_id, w.seq FROM w
     WHERE NOT EXISTS (SELECT 1 FROM queen.messages m
                        WHERE m.partition_id = w.partition_id AND m.seq = w.seq)),
  del AS (
    DELETE FROM queen.sqs_meta s USING dead
     WHERE s.partition_id = dead.partition_id AND s.seq = dead.seq
    RETURNING 1)
  SELECT (SELECT count(*) FROM w), (SELECT max(w.seq) FROM w), (SELECT count(*) FROM del)
    INTO v_seen, v_last, v_n;
  UPDATE queen.sqs_sweep_pos p SET meta_seq = CASE WHEN v_seen < v_max THEN 0 ELSE v_last END
   WHERE p.id = 1;
  RETURN QUERY SELECT 'sqs_meta'::text, v_n;

  WITH w AS (
    SELECT s.partition_id, s.seq FROM queen.sqs_receives s
     WHERE s.seq > v_pos.recv_seq ORDER BY s.seq LIMIT v_max),
  dead AS (
    SELECT w.partition_id, w.seq FROM w
     WHERE NOT EXISTS (SELECT 1 FROM queen.messages m
                        WHERE m.partition_id = w.partition_id AND m.seq = w.seq)
        OR EXISTS (SELECT 1 FROM queen.partitions p
                     JOIN queen.consumer_groups g
                       ON g.queue_id = p.queue_id AND g.name = '__QUEUE_MODE__' AND NOT g.retired
                     LEFT JOIN queen.ready r ON r.partition_id = p.id AND r.group_id = g.id
                     LEFT JOIN queen.cursors c ON c.partition_id = p.id AND c.group_id = g.id
                    WHERE p.id = w.partition_id
                      AND COALESCE(r.acked_seq, c.acked_seq, g.start_seq, 0) >= w.seq)),
  del AS (
    DELETE FROM queen.sqs_receives s USING dead
     WHERE s.partition_id = dead.partition_id AND s.seq = dead.seq
    RETURNING 1)
  SELECT (SELECT count(*) FROM w), (SELECT max(w.seq) FROM w), (SELECT count(*) FROM del)
    INTO v_seen, v_last, v_n;
  UPDATE queen.sqs_sweep_pos p SET recv_seq = CASE WHEN v_seen < v_max THEN 0 ELSE v_last END
   WHERE p.id = 1;
  RETURN QUERY SELECT 'sqs_receives'::text, v_n;
END
$$;

-- ------------------------------------------------------------------ access keys
-- SQS access keys per tenant (migrations/0017_sqs_keys.sql). The codec
-- looks a key up on a cache miss (sqs_key_get) and reloads every enabled
-- key periodically (sqs_keys_enabled); the admin routes
-- /api/v1/system/sqs-keys create, list and disable them.

-- A new key. Status 'created', or 'exists' when the id is taken.
CREATE FUNCTION queen.sqs_key_create(p_access_key text, p_secret text, p_tenant text)
RETURNS TABLE (status text, access_key_id text, tenant text, created_at timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  INSERT INTO queen.sqs_keys AS k (access_key_id, secret, tenant)
  VALUES (p_access_key, p_secret, p_tenant)
  ON CONFLICT ON CONSTRAINT sqs_keys_pkey DO NOTHING
  RETURNING 'created'::text, k.access_key_id, k.tenant, k.created_at;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'exists'::text, p_access_key, NULL::text, NULL::timestamptz;
  END IF;
END
$$;

-- One key, for the codec's lookup on a miss: no row when unknown.
CREATE FUNCTION queen.sqs_key_get(p_access_key text)
RETURNS TABLE (secret text, tenant text, enabled boolean)
LANGUAGE sql STABLE AS $$
  SELECT k.secret, k.tenant, k.enabled FROM queen.sqs_keys k
   WHERE k.access_key_id = p_access_key
$$;

-- Every enabled key, for the codec's periodic reload.
CREATE FUNCTION queen.sqs_keys_enabled()
RETURNS TABLE (access_key_id text, secret text, tenant text)
LANGUAGE sql STABLE AS $$
  SELECT k.access_key_id, k.secret, k.tenant FROM queen.sqs_keys k
   WHERE k.enabled ORDER BY k.access_key_id
$$;

-- The keys (never their secrets), of one tenant or (NULL) of all.
CREATE FUNCTION queen.sqs_key_list(p_tenant text)
RETURNS TABLE (access_key_id text, tenant text, enabled boolean, created_at timestamptz,
               disabled_at timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT k.access_key_id, k.tenant, k.enabled, k.created_at, k.disabled_at
    FROM queen.sqs_keys k
   WHERE p_tenant IS NULL OR k.tenant = p_tenant
   ORDER BY k.tenant, k.created_at, k.access_key_id
$$;

-- Disables a key (for good: a disabled key is not enabled again). No row
-- when the key does not exist.
CREATE FUNCTION queen.sqs_key_disable(p_access_key text)
RETURNS TABLE (access_key_id text, tenant text, disabled_at timestamptz)
LANGUAGE sql AS $$
  UPDATE queen.sqs_keys k
     SET enabled = false, disabled_at = COALESCE(k.disabled_at, now())
   WHERE k.access_key_id = p_access_key
  RETURNING k.access_key_id, k.tenant, k.disabled_at
$$;
