-- 10_configure.sql: queue configuration. Files 10-17 are the messaging hot
-- path (configure, push, pop, ack, lease renewal, transaction) plus deletes and
-- retention, one file per verb. One call = one round trip = one
-- transaction. Lock order (docs/storage.md, "Locking"): L0 queue advisory locks
-- ascending, L1 partition advisory locks ascending, L4 ready rows ascending.
--
-- Custom SQLSTATEs (mapped to HTTP by the broker):
--   22023  invalid configure option value           -> 400
--   23505  duplicate transactionId (strict push)     -> 409 / txn failure
--   QN404  ACK operation failed: Message not found   -> txn failure (404 class)
--   QN409  ACK operation failed: Invalid or expired lease / required lease -> 409 class
--   QN400  ACK operation failed: invalid status in a transaction -> 400 class
--   QN429  queue <name> is full (maxSize N)          -> 429
--   40001  concurrent delete of a queue/partition being written by a transaction: retry

-- ---------------------------------------------------------------------------
-- configure
-- ---------------------------------------------------------------------------

CREATE FUNCTION queen._opt_int(o jsonb, k text, def int) RETURNS int
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v jsonb := o -> k;
  n numeric;
BEGIN
  IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
    RETURN def;
  END IF;
  IF jsonb_typeof(v) = 'number' THEN
    n := (v #>> '{}')::numeric;
  ELSIF jsonb_typeof(v) = 'string' THEN
    BEGIN
      n := btrim(v #>> '{}')::numeric;
    EXCEPTION WHEN others THEN
      n := NULL;
    END;
  END IF;
  IF n IS NULL OR n = 'NaN'::numeric OR n <> trunc(n) OR n < 0 OR n > 2147483647 THEN
    RAISE EXCEPTION 'invalid value for option %: % (expected an integer between 0 and 2147483647)', k, left(v::text, 64)
      USING ERRCODE = '22023';
  END IF;
  RETURN n::int;
END
$$;

CREATE FUNCTION queen._opt_bool(o jsonb, k text, def bool) RETURNS bool
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v jsonb := o -> k;
  b bool;
BEGIN
  IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
    RETURN def;
  END IF;
  IF jsonb_typeof(v) = 'boolean' THEN
    RETURN (v #>> '{}')::bool;
  ELSIF jsonb_typeof(v) = 'string' THEN
    BEGIN
      b := btrim(v #>> '{}')::bool;
    EXCEPTION WHEN others THEN
      b := NULL;
    END;
  ELSIF jsonb_typeof(v) = 'number' AND (v #>> '{}') IN ('0', '1') THEN
    b := (v #>> '{}') = '1';
  END IF;
  IF b IS NULL THEN
    RAISE EXCEPTION 'invalid value for option %: % (expected a boolean)', k, left(v::text, 64)
      USING ERRCODE = '22023';
  END IF;
  RETURN b;
END
$$;

-- The options object echoed by configure (15 keys of spec 3.5 + conflate,
-- + kafkaPartitions once the queue's Kafka view is set, docs/kafka.md).
CREATE FUNCTION queen.queue_options(q queen.queues) RETURNS json
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN q.kafka_partitions IS NULL THEN o
              ELSE (o::jsonb || jsonb_build_object('kafkaPartitions', q.kafka_partitions))::json END
    FROM (SELECT json_build_object(
    'leaseTime', q.lease_time, 'retryLimit', q.retry_limit, 'retryDelay', q.retry_delay,
    'priority', q.priority, 'delayedProcessing', q.delayed_processing,
    'windowBuffer', q.window_buffer, 'maxSize', q.max_size, 'ttl', q.ttl,
    'retentionEnabled', q.retention_enabled, 'retentionSeconds', q.retention_seconds,
    'completedRetentionSeconds', q.completed_retention_seconds,
    'maxWaitTimeSeconds', q.max_wait_time_seconds, 'encryptionEnabled', q.encryption_enabled,
    'deadLetterQueue', q.dead_letter_queue, 'dlqAfterMaxRetries', q.dlq_after_max_retries,
    'conflate', q.conflate) AS o) x
$$;

-- Create missing queues (sorted, no identity burn for existing ones) with the
-- derived namespace/task of spec 2.1. No group is created here: the queue
-- mode group, like a named one, is created by its first pop (_group_get).
-- plpgsql, not sql: every push calls it, and a SQL function is planned on
-- every call (0.6 ms of a 10 ms push of 130 messages); plpgsql caches it.
CREATE FUNCTION queen._ensure_queues(p_tenant text, p_names text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queen.queues (tenant, name, namespace, task)
  SELECT p_tenant, d.n, split_part(d.n, '.', 1), split_part(d.n, '.', 2)
  FROM (SELECT DISTINCT n FROM unnest(p_names) n WHERE n IS NOT NULL) d
  WHERE NOT EXISTS (SELECT 1 FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = d.n)
  ORDER BY d.n
  ON CONFLICT (tenant, name) DO NOTHING;
END
$$;

CREATE FUNCTION queen.configure(p_tenant text, p_queue text, p_namespace text, p_task text,
                                p_options jsonb)
RETURNS TABLE(queue_id int, partition_id bigint, options json)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  o      jsonb := CASE WHEN jsonb_typeof(p_options) = 'object' THEN p_options ELSE '{}'::jsonb END;
  v_lease int  := queen._opt_int(o, 'leaseTime', 300);
  v_rlim  int  := queen._opt_int(o, 'retryLimit', 3);
  v_rdel  int  := queen._opt_int(o, 'retryDelay', 1000);
  v_prio  int  := queen._opt_int(o, 'priority', 0);
  v_delay int  := queen._opt_int(o, 'delayedProcessing', 0);
  v_win   int  := queen._opt_int(o, 'windowBuffer', 0);
  v_max   int  := queen._opt_int(o, 'maxSize', 0);
  v_ttl   int  := queen._opt_int(o, 'ttl', 3600);
  v_ren   bool := queen._opt_bool(o, 'retentionEnabled', false);
  v_rs    int  := queen._opt_int(o, 'retentionSeconds', 0);
  v_crs   int  := queen._opt_int(o, 'completedRetentionSeconds', 0);
  v_mw    int  := queen._opt_int(o, 'maxWaitTimeSeconds', 0);
  v_enc   bool := queen._opt_bool(o, 'encryptionEnabled', false);
  v_dlq   bool := queen._opt_bool(o, 'deadLetterQueue', false);
  v_dlqm  bool := queen._opt_bool(o, 'dlqAfterMaxRetries', false);
  v_conf  bool := queen._opt_bool(o, 'conflate', false);
  v_qid   int;
  v_pid   bigint;
  q       queen.queues;
BEGIN
  IF p_queue IS NULL THEN
    RAISE EXCEPTION 'queue is required' USING ERRCODE = '22023';
  END IF;
  PERFORM queen._ensure_queues(p_tenant, ARRAY[p_queue]);
  PERFORM queen._kafka_configure(p_tenant, p_queue, o);     -- kafkaPartitions (60_kafka.sql)
  UPDATE queen.queues SET
    namespace = COALESCE(p_namespace, ''), task = COALESCE(p_task, ''),
    lease_time = v_lease, retry_limit = v_rlim, retry_delay = v_rdel, priority = v_prio,
    delayed_processing = v_delay, window_buffer = v_win, max_size = v_max, ttl = v_ttl,
    retention_enabled = v_ren, retention_seconds = v_rs, completed_retention_seconds = v_crs,
    max_wait_time_seconds = v_mw, encryption_enabled = v_enc, dead_letter_queue = v_dlq,
    dlq_after_max_retries = v_dlqm, conflate = v_conf, updated_at = now()
  WHERE tenant = p_tenant AND name = p_queue
  RETURNING * INTO q;
  v_qid := q.id;
  INSERT INTO queen.partitions (queue_id, name)
  SELECT v_qid, 'Default'
  WHERE NOT EXISTS (SELECT 1 FROM queen.partitions p WHERE p.queue_id = v_qid AND p.name = 'Default')
  ON CONFLICT DO NOTHING;
  SELECT id INTO v_pid FROM queen.partitions p WHERE p.queue_id = v_qid AND p.name = 'Default';
  RETURN QUERY SELECT v_qid, v_pid, queen.queue_options(q);
END
$$;
