-- 31_timers.sql: timers (storage 4.8; table in migrations/0002_state.sql, whose
-- header gives the lock order and why a fired timer is kept as a record).

-- What makes two timer requests "the same": queue, partition, the client's
-- transactionId (or none), the timing as given ('at:<us>' or 'in:<ms>') and
-- the payload: its bytes, or for a sealed payload (p_digest set) the
-- broker's keyed digest of its plaintext, since the envelope differs at
-- every create (random IV). The digest is keyed (HMAC under a key derived
-- from QUEEN_ENCRYPTION_KEY, docs/security.md): the database never holds an
-- unkeyed hash that would confirm a guessed payload. Length-prefixed, and a
-- digest is marked by a leading zero byte no JSON text starts with, so no
-- two definitions collide.
CREATE FUNCTION queen._timer_fp(p_queue text, p_partition text, p_txn text, p_spec text, p_payload bytea,
                                p_digest bytea DEFAULT NULL)
RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
  SELECT sha256(convert_to(format('%s:%s|%s:%s|%s|%s|', octet_length(p_queue), p_queue,
                                  octet_length(COALESCE(p_partition, 'Default')), COALESCE(p_partition, 'Default'),
                                  CASE WHEN p_txn IS NULL THEN '-' ELSE octet_length(p_txn) || ':' || p_txn END,
                                  p_spec), 'UTF8')
                || CASE WHEN p_digest IS NULL THEN p_payload ELSE '\x00'::bytea || p_digest END)
$$;

-- Schedule a message. Exactly one of p_fire_at_us (microseconds since the
-- Unix epoch) and p_delay_ms (from now, on the database clock) is set.
-- p_txn_id is always set (the broker mints one when the client gave none,
-- p_txn_given false): the firing push carries it, so a repeated fire would
-- be deduplicated. p_digest NULL: p_payload is the JSON text; set: p_payload
-- is the envelope the broker sealed (the queue is encrypted; the row and the
-- message it becomes are is_encrypted) and p_digest the broker's keyed
-- digest of the plaintext (queen._timer_fp). A timerId is idempotent:
--   status 'created'  new timer (id for the broker's timer wheel)
--          'exists'   same definition, still pending
--          'fired'    same definition, already fired (fired_at set)
--          'conflict' the timerId is taken by a different definition
CREATE FUNCTION queen.timer_create(p_tenant text, p_timer_id text, p_queue text, p_partition text,
  p_payload bytea, p_txn_id text, p_txn_given bool, p_fire_at_us bigint, p_delay_ms bigint,
  p_digest bytea DEFAULT NULL)
RETURNS TABLE(status text, id bigint, due_at timestamptz, fired_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_spec text := CASE WHEN p_delay_ms IS NOT NULL THEN 'in:' || p_delay_ms ELSE 'at:' || p_fire_at_us END;
  v_fp   bytea := queen._timer_fp(p_queue, p_partition, CASE WHEN p_txn_given THEN p_txn_id END,
                                  v_spec, p_payload, p_digest);
  v_due  timestamptz := CASE WHEN p_delay_ms IS NOT NULL
                             THEN clock_timestamp() + p_delay_ms * interval '1 millisecond'
                             ELSE 'epoch'::timestamptz + p_fire_at_us * interval '1 microsecond' END;
  v_id   bigint;
  t      record;
  v_try  int;
BEGIN
  IF p_delay_ms IS NULL AND p_fire_at_us IS NULL THEN
    RAISE EXCEPTION 'fireAt or delayMs is required' USING ERRCODE = '22023';
  END IF;
  FOR v_try IN 1..3 LOOP
    INSERT INTO queen.timers AS x (tenant, timer_id, due_at, queue, partition, txn_id, txn_given,
                                   payload, is_encrypted, fingerprint)
    VALUES (p_tenant, p_timer_id, v_due, p_queue, COALESCE(p_partition, 'Default'), p_txn_id,
            COALESCE(p_txn_given, false), p_payload, p_digest IS NOT NULL, v_fp)
    ON CONFLICT (tenant, timer_id) DO NOTHING
    RETURNING x.id INTO v_id;
    IF v_id IS NOT NULL THEN
      RETURN QUERY SELECT 'created'::text, v_id, v_due, NULL::timestamptz;
      RETURN;
    END IF;
    SELECT x.id, x.fingerprint, x.due_at, x.fired_at INTO t FROM queen.timers x
     WHERE x.tenant = p_tenant AND x.timer_id = p_timer_id;
    IF FOUND THEN
      IF t.fingerprint <> v_fp THEN
        RETURN QUERY SELECT 'conflict'::text, t.id, t.due_at, t.fired_at;
      ELSIF t.fired_at IS NOT NULL THEN
        RETURN QUERY SELECT 'fired'::text, t.id, t.due_at, t.fired_at;
      ELSE
        RETURN QUERY SELECT 'exists'::text, t.id, t.due_at, NULL::timestamptz;
      END IF;
      RETURN;
    END IF;
    -- cancelled or swept between the insert and the read: try again
  END LOOP;
  RAISE EXCEPTION 'timer % changed concurrently, retry', p_timer_id USING ERRCODE = '40001';
END
$$;

-- Cancel a pending timer. status 'cancelled', 'fired' (fired_at set) or
-- 'not_found'. Firing claims the row FOR UPDATE and marks it in the same
-- transaction as its push, so exactly one of cancel and fire wins: a cancel
-- that waited on a firer re-checks the row and sees it fired.
CREATE FUNCTION queen.timer_cancel(p_tenant text, p_timer_id text)
RETURNS TABLE(status text, fired_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_id    bigint;
  v_fired timestamptz;
BEGIN
  DELETE FROM queen.timers x
   WHERE x.tenant = p_tenant AND x.timer_id = p_timer_id AND x.fired_at IS NULL
  RETURNING x.id INTO v_id;
  IF FOUND THEN
    RETURN QUERY SELECT 'cancelled'::text, NULL::timestamptz;
    RETURN;
  END IF;
  SELECT x.fired_at INTO v_fired FROM queen.timers x
   WHERE x.tenant = p_tenant AND x.timer_id = p_timer_id AND x.fired_at IS NOT NULL;
  IF FOUND THEN
    RETURN QUERY SELECT 'fired'::text, v_fired;
  ELSE
    RETURN QUERY SELECT 'not_found'::text, NULL::timestamptz;
  END IF;
END
$$;

-- One timer (pending or fired and not yet swept), or no row. The payload as
-- stored: the broker decrypts it when is_encrypted.
CREATE FUNCTION queen.timer_get(p_tenant text, p_timer_id text)
RETURNS TABLE(queue text, partition text, txn_id text, payload bytea, due_at timestamptz,
              created_at timestamptz, fired_at timestamptz, seq bigint, partition_id bigint,
              is_encrypted bool)
LANGUAGE sql STABLE AS $$
  SELECT x.queue::text, x.partition::text, x.txn_id::text, x.payload, x.due_at, x.created_at,
         x.fired_at, x.seq, x.partition_id, x.is_encrypted
    FROM queen.timers x WHERE x.tenant = p_tenant AND x.timer_id = p_timer_id
$$;

-- Pending timers (of one queue, or all), by due time then id, after the
-- cursor (p_after_due_us, p_after_id), at most p_limit.
CREATE FUNCTION queen.timer_list(p_tenant text, p_queue text, p_after_due_us bigint, p_after_id bigint,
                                 p_limit int)
RETURNS TABLE(timer_id text, queue text, partition text, txn_id text, payload bytea,
              due_at timestamptz, created_at timestamptz, id bigint, is_encrypted bool)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_due timestamptz := CASE WHEN p_after_due_us IS NULL THEN '-infinity'::timestamptz
                            ELSE 'epoch'::timestamptz + p_after_due_us * interval '1 microsecond' END;
  v_id  bigint := COALESCE(p_after_id, 0);
BEGIN
  IF p_queue IS NULL THEN
    RETURN QUERY
    SELECT x.timer_id::text, x.queue::text, x.partition::text, x.txn_id::text, x.payload, x.due_at,
           x.created_at, x.id, x.is_encrypted
      FROM queen.timers x
     WHERE x.fired_at IS NULL AND x.tenant = p_tenant AND (x.due_at, x.id) > (v_due, v_id)
     ORDER BY x.due_at, x.id LIMIT p_limit;
  ELSE
    RETURN QUERY
    SELECT x.timer_id::text, x.queue::text, x.partition::text, x.txn_id::text, x.payload, x.due_at,
           x.created_at, x.id, x.is_encrypted
      FROM queen.timers x
     WHERE x.fired_at IS NULL AND x.tenant = p_tenant AND x.queue = p_queue
       AND (x.due_at, x.id) > (v_due, v_id)
     ORDER BY x.due_at, x.id LIMIT p_limit;
  END IF;
END
$$;

-- Pending timers due within p_horizon_ms, earliest first, at most p_limit,
-- with the database clock (the broker arms its timer wheel on it).
CREATE FUNCTION queen.timer_due(p_horizon_ms int, p_limit int)
RETURNS TABLE(id bigint, due_at timestamptz, db_now timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT x.id, x.due_at, clock_timestamp() FROM queen.timers x
   WHERE x.fired_at IS NULL AND x.due_at <= clock_timestamp() + p_horizon_ms * interval '1 millisecond'
   ORDER BY x.due_at LIMIT p_limit
$$;

-- Push the claimed timers a_id (all of one tenant, in firing order) and
-- mark them fired. A sealed payload is pushed as it is, is_encrypted: pop
-- decrypts it like any other message. Raises what queen.push raises. Every statement reaches
-- the timers through their primary key (joins on unnest of the ids), never
-- through a scan whose cost grows with the backlog.
CREATE FUNCTION queen._timer_push(p_tenant text, a_id bigint[]) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  n     int := cardinality(a_id);
  a_q   text[];
  a_p   text[];
  a_txn text[];
  a_pay bytea[];
  a_enc bool[];
  r_id  bigint[];
  r_seq bigint[];
  r_pid bigint[];
BEGIN
  SELECT array_agg(x.queue::text ORDER BY o.k), array_agg(x.partition::text ORDER BY o.k),
         array_agg(x.txn_id::text ORDER BY o.k), array_agg(x.payload ORDER BY o.k),
         array_agg(x.is_encrypted ORDER BY o.k)
    INTO a_q, a_p, a_txn, a_pay, a_enc
    FROM unnest(a_id) WITH ORDINALITY o(id, k) JOIN queen.timers x ON x.id = o.id;
  SELECT array_agg(a_id[p.ord]), array_agg(p.seq), array_agg(p.partition_id) INTO r_id, r_seq, r_pid
    FROM queen.push(p_tenant, a_q, a_p, a_txn, a_pay, array_fill(NULL::uuid, ARRAY[n]),
                    array_fill(NULL::text, ARRAY[n]), a_enc, false) p;
  UPDATE queen.timers x
     SET fired_at = clock_timestamp(), payload = '\x'::bytea, seq = r.seq, partition_id = r.pid
    FROM unnest(r_id, r_seq, r_pid) r(id, seq, pid)
   WHERE x.id = r.id;
  RETURN n;
END
$$;

-- Fire the timers p_ids that are due: each becomes a real message in its
-- queue/partition through queen.push, in the same transaction that marks it
-- fired, so a timer fires exactly once with several brokers firing
-- (FOR UPDATE SKIP LOCKED) and races with cancels have one winner.
-- Per requested id: status 'fired' (tenant, queue: wake parked pops),
-- 'early' (pending, due_at later than the database clock), 'error' (its
-- push failed, e.g. the queue is full: it stays pending; error says why) or
-- 'gone' (cancelled, fired already, or being fired by another broker).
-- Timers of one partition are pushed in (due_at, id) order.
CREATE FUNCTION queen.timer_fire(p_ids bigint[])
RETURNS TABLE(id bigint, status text, due_at timestamptz, tenant text, queue text, error text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now    timestamptz := clock_timestamp();
  v_tenant text;
  v_t      text[];
  v_q      text[];
  v_p      text[];
  v_ids    bigint[];
  a_id     bigint[];
  f_ids    bigint[] := '{}';
  e_ids    bigint[] := '{}';
  e_msg    text[] := '{}';
  i        int;
BEGIN
  -- the due candidates (no row locks yet)
  SELECT array_agg(x.tenant::text), array_agg(x.queue::text), array_agg(x.partition::text)
    INTO v_t, v_q, v_p
    FROM unnest(p_ids) u(id) JOIN queen.timers x ON x.id = u.id
   WHERE x.fired_at IS NULL AND x.due_at <= v_now;
  IF v_t IS NULL THEN
    v_t := '{}';
  END IF;

  -- L0 then L1 for them, per tenant (storage 3: before the timer rows)
  FOR v_tenant IN SELECT DISTINCT t FROM unnest(v_t) t ORDER BY 1 LOOP
    PERFORM queen._lock_queues(v_tenant,
      ARRAY(SELECT c.q FROM unnest(v_t, v_q) c(t, q) WHERE c.t = v_tenant), '{}'::int[]);
  END LOOP;
  FOR v_tenant IN SELECT DISTINCT t FROM unnest(v_t) t ORDER BY 1 LOOP
    PERFORM queen._lock_partitions(v_tenant,
      ARRAY(SELECT c.q FROM unnest(v_t, v_q, v_p) c(t, q, p) WHERE c.t = v_tenant),
      ARRAY(SELECT c.p FROM unnest(v_t, v_q, v_p) c(t, q, p) WHERE c.t = v_tenant), NULL);
  END LOOP;

  -- L3: claim the rows; a row another firer or a cancel holds is skipped
  SELECT array_agg(c.id) INTO v_ids FROM (
    SELECT x.id FROM unnest(p_ids) u(id) JOIN queen.timers x ON x.id = u.id
     WHERE x.fired_at IS NULL AND x.due_at <= v_now
     ORDER BY x.id FOR UPDATE OF x SKIP LOCKED) c;

  FOR v_tenant IN SELECT DISTINCT x.tenant FROM unnest(v_ids) u(id) JOIN queen.timers x ON x.id = u.id
                   ORDER BY 1 LOOP
    SELECT array_agg(x.id ORDER BY x.due_at, x.id) INTO a_id
      FROM unnest(v_ids) u(id) JOIN queen.timers x ON x.id = u.id
     WHERE x.tenant = v_tenant;
    BEGIN
      PERFORM queen._timer_push(v_tenant, a_id);
      f_ids := f_ids || a_id;
    EXCEPTION WHEN others THEN
      -- one at a time, so one bad timer (a full queue) does not hold back the rest
      FOR i IN 1..cardinality(a_id) LOOP
        BEGIN
          PERFORM queen._timer_push(v_tenant, ARRAY[a_id[i]]);
          f_ids := f_ids || a_id[i];
        EXCEPTION WHEN others THEN
          e_ids := e_ids || a_id[i];
          e_msg := e_msg || SQLERRM;
        END;
      END LOOP;
    END;
  END LOOP;

  RETURN QUERY
  SELECT r.id,
         CASE WHEN r.id = ANY (f_ids) THEN 'fired'
              WHEN e.msg IS NOT NULL THEN 'error'
              WHEN x.id IS NOT NULL AND x.fired_at IS NULL AND x.due_at > v_now THEN 'early'
              ELSE 'gone' END,
         x.due_at, x.tenant::text, x.queue::text, e.msg
    FROM unnest(p_ids) r(id)
    LEFT JOIN queen.timers x ON x.id = r.id
    LEFT JOIN unnest(e_ids, e_msg) e(id, msg) ON e.id = r.id;
END
$$;

-- Fired-timer records older than p_retention_s, at most p_max per call.
CREATE FUNCTION queen.timer_sweep(p_max int, p_retention_s int) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_n bigint;
BEGIN
  DELETE FROM queen.timers x
   WHERE x.id IN (SELECT s.id FROM queen.timers s
                   WHERE s.fired_at IS NOT NULL
                     AND s.fired_at < now() - make_interval(secs => GREATEST(p_retention_s, 0))
                   ORDER BY s.fired_at LIMIT GREATEST(p_max, 1)
                   FOR UPDATE SKIP LOCKED);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  RETURN v_n;
END
$$;
