-- ---------------------------------------------------------------------------
-- Kafka view of queues (spec kafka.md §6; docs/kafka.md)
-- ---------------------------------------------------------------------------
-- Topic = queue; each queue with kafka_partitions = N >= 1 has N Kafka
-- partitions ("kparts") with dense offsets in queen.kafka_log, handed out by
-- every push (native, Kafka, any front door) inside its transaction
-- (queen._kafka_append, called by queen._push_rows only when one of the
-- pushed queues has N >= 1). A queue created natively has NULL ("Kafka never
-- named it": no Kafka work on push) until the first Kafka request naming it
-- turns its view on (queen._kafka_view_on); 0 = view switched off. A native partition E
-- belongs to kpart (murmur2(utf8(E)) & 0x7fffffff) mod N, as the Java client
-- and kafkajs partition a record with key E; a Kafka-produced record goes to
-- the kpart its producer chose.

-- a * b mod 2^32 for a, b in [0, 2^32) without overflowing bigint
CREATE FUNCTION queen._mul32(a bigint, b bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT (((a & 65535) * b) + ((((a >> 16) * b) & 65535) << 16)) & 4294967295
$$;

-- Kafka's murmur2 (seed 0x9747b28c) as an unsigned 32-bit value; the same
-- function as wire/kafka_prim.c (test/sql/260_kafka.sql checks the spec's
-- vectors against both).
CREATE FUNCTION queen.kafka_murmur2(p bytea) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  m    constant bigint := 1540483477;    -- 0x5bd1e995
  len  int := length(p);
  h    bigint := (2538058380 # len) & 4294967295;
  k    bigint;
  i    int := 0;
BEGIN
  WHILE i + 4 <= len LOOP
    k := get_byte(p, i)::bigint | (get_byte(p, i + 1)::bigint << 8)
       | (get_byte(p, i + 2)::bigint << 16) | (get_byte(p, i + 3)::bigint << 24);
    k := queen._mul32(k, m);
    k := k # (k >> 24);
    k := queen._mul32(k, m);
    h := queen._mul32(h, m) # k;
    i := i + 4;
  END LOOP;
  IF len - i = 3 THEN h := h # (get_byte(p, i + 2)::bigint << 16); END IF;
  IF len - i >= 2 THEN h := h # (get_byte(p, i + 1)::bigint << 8); END IF;
  IF len - i >= 1 THEN h := queen._mul32(h # get_byte(p, i)::bigint, m); END IF;
  h := h # (h >> 13);
  h := queen._mul32(h, m);
  RETURN h # (h >> 15);
END
$$;

-- The kpart of native partition p_name in a queue with p_n kparts.
CREATE FUNCTION queen.kafka_kpart(p_name text, p_n int) RETURNS int
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT ((queen.kafka_murmur2(convert_to(p_name, 'UTF8')) & 2147483647) % p_n)::int
$$;

-- Legal Kafka topic name: 1..249 of [A-Za-z0-9._-], not "." or "..".
CREATE FUNCTION queen.kafka_legal_name(p_name text) RETURNS bool
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT p_name IS NOT NULL AND p_name ~ '^[A-Za-z0-9._-]{1,249}$' AND p_name NOT IN ('.', '..')
$$;

-- The first Kafka naming of existing queues: those of p_names whose view
-- was never set (NULL) get p_parts kparts, their Kafka log starting with
-- the next push. Lock order as everywhere (L0 queue locks first, shared,
-- ascending: a concurrent queue_delete holds it exclusive before its row),
-- then the rows in id order; a concurrent first naming waits and then
-- finds the value set. Pushes read kafka_partitions after their native
-- partition locks in a fresh snapshot (queen._push_rows), so every push
-- whose statement starts after this commits is in the log, and the log of
-- each native partition is a suffix of its messages. Reserved ("__") and
-- illegal names are left alone (Kafka could not have created them).
CREATE FUNCTION queen._kafka_view_on(p_tenant text, p_names text[], p_parts int)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM queen.lock_queue_shared(s.id)
     FROM (SELECT x.id FROM queen.queues x
            WHERE x.tenant = p_tenant AND x.name = ANY (p_names) AND x.kafka_partitions IS NULL
            ORDER BY x.id) s;
  UPDATE queen.queues q SET kafka_partitions = p_parts
   WHERE q.id IN (SELECT x.id FROM queen.queues x
                   WHERE x.tenant = p_tenant AND x.name = ANY (p_names) AND x.kafka_partitions IS NULL
                     AND queen.kafka_legal_name(x.name) AND x.name NOT LIKE '\_\_%'
                   ORDER BY x.id FOR NO KEY UPDATE)
     AND q.kafka_partitions IS NULL;
END
$$;

-- The configure option kafkaPartitions (HTTP POST /api/v1/configure, any
-- door's configure; called by queen.configure before it updates the row):
-- absent or null = unchanged (a configure never switches a Kafka view off
-- by leaving the option out); 0 = the Kafka view off (pushes do no Kafka
-- work, the queue leaves Metadata; its log stays); N in 1..1024 = on with N
-- Kafka partitions. N is fixed once set: another N >= 1 is refused (22023:
-- entities would move between Kafka partitions), and a view switched off
-- can come back only with a count that covers the partitions it already
-- has offsets for. A queue Kafka never named gets N as Kafka's first naming
-- would (queen._kafka_view_on, same locks and race rules).
CREATE FUNCTION queen._kafka_configure(p_tenant text, p_queue text, o jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_n   int;
  v_cur int;
  v_qid int;
  v_top int;
BEGIN
  IF o IS NULL OR jsonb_typeof(o -> 'kafkaPartitions') IS NULL OR jsonb_typeof(o -> 'kafkaPartitions') = 'null' THEN
    RETURN;
  END IF;
  v_n := queen._opt_int(o, 'kafkaPartitions', NULL);
  IF v_n > 1024 THEN
    RAISE EXCEPTION 'invalid value for option kafkaPartitions: % (expected an integer between 0 and 1024)', v_n
      USING ERRCODE = '22023';
  END IF;
  SELECT q.id, q.kafka_partitions INTO v_qid, v_cur FROM queen.queues q
   WHERE q.tenant = p_tenant AND q.name = p_queue;
  IF v_qid IS NULL OR v_cur IS NOT DISTINCT FROM v_n THEN
    RETURN;
  END IF;
  IF v_n >= 1 AND v_cur >= 1 THEN
    RAISE EXCEPTION 'invalid value for option kafkaPartitions: % (the queue has % Kafka partitions; the count cannot change)',
      v_n, v_cur USING ERRCODE = '22023';
  END IF;
  IF v_n >= 1 AND (NOT queen.kafka_legal_name(p_queue) OR p_queue LIKE '\_\_%') THEN
    RAISE EXCEPTION 'invalid value for option kafkaPartitions: % (% is not a legal Kafka topic name)', v_n, p_queue
      USING ERRCODE = '22023';
  END IF;
  IF v_n >= 1 THEN
    SELECT max(s.kpart) + 1 INTO v_top FROM queen.kafka_partition_state s WHERE s.queue_id = v_qid;
    IF v_top > v_n THEN
      RAISE EXCEPTION 'invalid value for option kafkaPartitions: % (the queue had % Kafka partitions before)',
        v_n, v_top USING ERRCODE = '22023';
    END IF;
  END IF;
  IF v_cur IS NULL THEN
    PERFORM queen._kafka_view_on(p_tenant, ARRAY[p_queue], v_n);
  END IF;
  UPDATE queen.queues q SET kafka_partitions = v_n WHERE q.id = v_qid;
END
$$;

-- Called by queen._push_rows with the rows of one push, native partition
-- locks held: for the new (not duplicate) rows of Kafka-enabled queues,
-- lock the kpart counters in (queue_id, kpart) order, hand out offsets in
-- item order, append the kafka_log rows, bump the counters. The row locks
-- are held until commit, so offsets become visible in offset order.
-- p_kparts[i] (when in range) is the kpart a Kafka producer chose; p_kts[i]
-- the record's Kafka timestamp (ms); else murmur2 and created_at.
CREATE FUNCTION queen._kafka_append(a_seq bigint[], a_pid bigint[], a_qid int[], a_dup bool[],
  pn text[], ppid bigint[], p_kparts int[], p_kts bigint[], p_now timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_now_ms bigint := floor(extract(epoch FROM p_now) * 1000)::bigint;
  k_qid    int[];
  k_kpart  int[];
  k_pid    bigint[];
  k_seq    bigint[];
  k_ts     bigint[];
BEGIN
  SELECT array_agg(i.qid ORDER BY i.o), array_agg(
           CASE WHEN p_kparts[i.o] >= 0 AND p_kparts[i.o] < q.kafka_partitions THEN p_kparts[i.o]
                ELSE queen.kafka_kpart(nm.n, q.kafka_partitions) END ORDER BY i.o),
         array_agg(i.pid ORDER BY i.o), array_agg(i.seq ORDER BY i.o),
         array_agg(COALESCE(p_kts[i.o], v_now_ms) ORDER BY i.o)
    INTO k_qid, k_kpart, k_pid, k_seq, k_ts
    FROM unnest(a_seq, a_pid, a_qid, a_dup) WITH ORDINALITY AS i(seq, pid, qid, dup, o)
    JOIN queen.queues q ON q.id = i.qid AND q.kafka_partitions > 0
    JOIN (SELECT DISTINCT x.n, x.pid FROM unnest(pn, ppid) AS x(n, pid)) nm ON nm.pid = i.pid
   WHERE NOT i.dup;
  IF k_qid IS NULL THEN
    RETURN;
  END IF;

  INSERT INTO queen.kafka_partition_state (queue_id, kpart)
  SELECT DISTINCT q, k FROM unnest(k_qid, k_kpart) AS u(q, k) ORDER BY q, k
  ON CONFLICT DO NOTHING;
  PERFORM 1 FROM queen.kafka_partition_state s
    WHERE (s.queue_id, s.kpart) IN (SELECT DISTINCT q, k FROM unnest(k_qid, k_kpart) AS u(q, k))
    ORDER BY s.queue_id, s.kpart
    FOR UPDATE;

  WITH items AS (
    SELECT u.q, u.k, u.pid, u.seq, u.ts,
           row_number() OVER (PARTITION BY u.q, u.k ORDER BY u.o) - 1 AS rn
      FROM unnest(k_qid, k_kpart, k_pid, k_seq, k_ts) WITH ORDINALITY AS u(q, k, pid, seq, ts, o)),
  ins AS (
    INSERT INTO queen.kafka_log (queue_id, kpart, koffset, partition_id, seq, ts_ms)
    SELECT i.q, i.k, s.next_offset + i.rn, i.pid, i.seq, i.ts
      FROM items i JOIN queen.kafka_partition_state s ON s.queue_id = i.q AND s.kpart = i.k)
  UPDATE queen.kafka_partition_state s
     SET next_offset = s.next_offset + c.n
    FROM (SELECT i.q, i.k, count(*) AS n FROM items i GROUP BY i.q, i.k) c
   WHERE s.queue_id = c.q AND s.kpart = c.k;
END
$$;

-- Kafka Produce: queen.push of the items whose topic is a Kafka-visible
-- queue of the tenant and whose kpart is inside it (others: err 3, not
-- pushed; Produce never creates queues; an existing queue Kafka never
-- named gets p_default_parts kparts first, queen._kafka_view_on), with the kparts and timestamps the
-- producer chose, then the message_meta rows (timestamp, raw key, null
-- value, headers) of the new messages. Answers each item's kpart and
-- offset (a duplicate answers its original row's) and its queue name (for
-- the "committed" wake-up, statements.c).
-- Idempotent batches (spec §6.5): items with p_pids[i] >= 0 belong to the
-- batch (producer, epoch, base sequence p_seqs[i], last sequence
-- p_seq_last[i]) of their (queue, kpart). Each batch is checked against
-- queen.kafka_producer_state, whose row is taken FOR UPDATE before the
-- push (only the same producer ever waits on it; its native partition and
-- kpart locks come after, as for every push): no row = accept (lenient);
-- an older epoch = 47; the same base and last sequence as one of the 5
-- recent batches = a retry: not pushed, answered with error 0 and the
-- offsets that batch got; base = last + 1 (wrapping at 2^31 - 1) or a
-- newer epoch = accept; else 45. Accepted batches update the row (last
-- sequence, the recent list). Idempotent items carry the transactionId
-- kafka:<producer>:<epoch>:<kpart>:<sequence> (set by the codec), so the
-- native dedup also catches a retry whose state row expired.
CREATE FUNCTION queen.kafka_push(p_tenant text, p_queues text[], p_parts text[], p_txn_ids text[],
  p_payloads bytea[], p_kparts int[], p_kts bigint[], p_raw_keys bytea[], p_value_null bool[],
  p_headers bytea[], p_default_parts int DEFAULT 1, p_pids bigint[] DEFAULT NULL,
  p_epochs int[] DEFAULT NULL, p_seqs int[] DEFAULT NULL, p_seq_last int[] DEFAULT NULL,
  p_encrypted bool[] DEFAULT NULL)
RETURNS TABLE(ord int, err smallint, queue_name text, duplicate bool, kpart int, koffset bigint)
LANGUAGE plpgsql
-- index probes whatever the statistics were when the plan was cached (a
-- plan made on small tables scanned every message per record: docs/kafka.md)
SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_ok  int[];
  n     int;
  r_ord int[]; r_seq bigint[]; r_pid bigint[]; r_dup bool[];
  -- idempotence: per item, the error of its batch, or the offset a retried batch got
  x_err  smallint[];
  x_off  bigint[];
  g      record;
  c_key  text := NULL;
  c_new  bool;
  c_ep   int;
  c_last int;
  c_rec  bigint[];
  v_st   int;
  v_off  bigint;
  a_qid  int[] := '{}'; a_k int[] := '{}'; a_pid bigint[] := '{}'; a_ep int[] := '{}';
  a_base int[] := '{}'; a_last int[] := '{}'; a_first int[] := '{}';
BEGIN
  IF EXISTS (SELECT 1 FROM queen.queues qq
              WHERE qq.tenant = p_tenant AND qq.name = ANY (p_queues) AND qq.kafka_partitions IS NULL) THEN
    PERFORM queen._kafka_view_on(p_tenant, p_queues, p_default_parts);
  END IF;
  SELECT array_agg(t.o ORDER BY t.o) INTO v_ok
    FROM unnest(p_queues, p_kparts) WITH ORDINALITY AS t(q, k, o)
    JOIN queen.queues qq ON qq.tenant = p_tenant AND qq.name = t.q
   WHERE t.k >= 0 AND t.k < qq.kafka_partitions;

  IF p_pids IS NOT NULL AND v_ok IS NOT NULL THEN
    FOR g IN
      SELECT qq.id AS qid, p_kparts[o] AS k, p_pids[o] AS pid, p_epochs[o] AS ep, p_seqs[o] AS base,
             p_seq_last[o] AS last, min(o) AS first_o, max(o) AS last_o
        FROM unnest(v_ok) AS o
        JOIN queen.queues qq ON qq.tenant = p_tenant AND qq.name = p_queues[o]
       WHERE p_pids[o] >= 0
       GROUP BY 1, 2, 3, 4, 5, 6
       ORDER BY pid, qid, k, first_o
    LOOP
      IF c_key IS DISTINCT FROM g.pid || ':' || g.qid || ':' || g.k THEN
        c_key := g.pid || ':' || g.qid || ':' || g.k;
        INSERT INTO queen.kafka_producer_state (producer_id, queue_id, kpart, producer_epoch, last_sequence)
        VALUES (g.pid, g.qid, g.k, g.ep, g.base)
        ON CONFLICT DO NOTHING;
        c_new := FOUND;
        SELECT s.producer_epoch, s.last_sequence, s.recent INTO c_ep, c_last, c_rec
          FROM queen.kafka_producer_state s
         WHERE s.producer_id = g.pid AND s.queue_id = g.qid AND s.kpart = g.k
           FOR UPDATE;
      END IF;
      v_st := 0;
      v_off := NULL;
      IF NOT c_new THEN
        IF g.ep < c_ep THEN
          v_st := 47;
        ELSIF g.ep = c_ep THEN
          FOR i IN 1 .. COALESCE(array_length(c_rec, 1), 0) / 3 LOOP
            IF c_rec[3 * i - 2] = g.base AND c_rec[3 * i - 1] = g.last THEN
              v_st := -1;
              v_off := c_rec[3 * i];
            END IF;
          END LOOP;
          IF v_st = 0 AND g.base <> (CASE WHEN c_last = 2147483647 THEN 0 ELSE c_last + 1 END) THEN
            v_st := 45;
          END IF;
        END IF;
      END IF;
      IF v_st = 0 THEN
        -- accepted: the next batch of this request follows it
        c_new := false;
        c_ep := g.ep;
        c_last := g.last;
        a_qid := a_qid || g.qid; a_k := a_k || g.k; a_pid := a_pid || g.pid; a_ep := a_ep || g.ep;
        a_base := a_base || g.base; a_last := a_last || g.last; a_first := a_first || g.first_o;
      ELSE
        FOR o IN g.first_o .. g.last_o LOOP
          IF p_pids[o] = g.pid AND p_seqs[o] = g.base AND p_kparts[o] = g.k AND p_queues[o] = p_queues[g.first_o] THEN
            x_err[o] := CASE WHEN v_st < 0 THEN 0 ELSE v_st END;
            x_off[o] := v_off + (o - g.first_o);
          END IF;
        END LOOP;
      END IF;
    END LOOP;
    IF x_err IS NOT NULL THEN
      SELECT array_agg(o ORDER BY o) INTO v_ok FROM unnest(v_ok) AS o WHERE x_err[o] IS NULL;
    END IF;
  END IF;

  n := COALESCE(array_length(v_ok, 1), 0);
  IF n > 0 THEN
    SELECT array_agg(v_ok[x.ord] ORDER BY x.ord), array_agg(x.seq ORDER BY x.ord),
           array_agg(x.partition_id ORDER BY x.ord), array_agg(x.duplicate ORDER BY x.ord)
      INTO r_ord, r_seq, r_pid, r_dup
      FROM queen.push(p_tenant, ARRAY(SELECT p_queues[o] FROM unnest(v_ok) o),
                      ARRAY(SELECT p_parts[o] FROM unnest(v_ok) o),
                      ARRAY(SELECT p_txn_ids[o] FROM unnest(v_ok) o),
                      ARRAY(SELECT p_payloads[o] FROM unnest(v_ok) o),
                      array_fill(NULL::uuid, ARRAY[n]), array_fill(NULL::text, ARRAY[n]),
                      -- payloads the codec sealed (a queue with encryptionEnabled)
                      ARRAY(SELECT COALESCE(p_encrypted[o], false) FROM unnest(v_ok) o), false, NULL,
                      ARRAY(SELECT p_kparts[o] FROM unnest(v_ok) o),
                      ARRAY(SELECT p_kts[o] FROM unnest(v_ok) o)) x;
    INSERT INTO queen.message_meta (partition_id, seq, ts_ms, raw_key, value_null, headers)
    SELECT u.pid, u.seq, p_kts[u.o], p_raw_keys[u.o], COALESCE(p_value_null[u.o], false), p_headers[u.o]
      FROM unnest(r_ord, r_pid, r_seq, r_dup) AS u(o, pid, seq, dup)
     WHERE NOT u.dup
    ON CONFLICT DO NOTHING;
    -- the accepted idempotent batches: their first offset joins the recent list (last 5)
    IF array_length(a_qid, 1) > 0 THEN
      UPDATE queen.kafka_producer_state s
         SET producer_epoch = b.ep, last_sequence = b.last, updated_at = now(),
             recent = (CASE WHEN s.producer_epoch = b.ep THEN s.recent ELSE '{}' END
                       || ARRAY[b.base::bigint, b.last::bigint, b.off])[
                        greatest(1, array_length(CASE WHEN s.producer_epoch = b.ep THEN s.recent ELSE '{}' END, 1) + 3 - 14) :]
        FROM (SELECT DISTINCT ON (a.qid, a.k, a.pid) a.qid, a.k, a.pid, a.ep, a.base, a.last,
                     (SELECT l.koffset FROM unnest(r_ord, r_pid, r_seq) AS u(o, pid, seq)
                        JOIN queen.kafka_log l ON l.partition_id = u.pid AND l.seq = u.seq
                       WHERE u.o = a.first_o) AS off
                FROM unnest(a_qid, a_k, a_pid, a_ep, a_base, a_last, a_first)
                     WITH ORDINALITY AS a(qid, k, pid, ep, base, last, first_o, i)
               ORDER BY a.qid, a.k, a.pid, a.i DESC) b
       WHERE s.producer_id = b.pid AND s.queue_id = b.qid AND s.kpart = b.k;
    END IF;
  END IF;
  RETURN QUERY
  SELECT t.o::int, CASE WHEN x_err[t.o] IS NOT NULL THEN x_err[t.o]
                        WHEN u.o IS NULL THEN 3 ELSE 0 END::smallint, t.q,
         COALESCE(u.dup, x_err[t.o] = 0, false), COALESCE(l.kpart, CASE WHEN x_err[t.o] = 0 THEN p_kparts[t.o] END),
         COALESCE(l.koffset, CASE WHEN x_err[t.o] = 0 THEN x_off[t.o] END)
    FROM unnest(p_queues) WITH ORDINALITY AS t(q, o)
    LEFT JOIN unnest(r_ord, r_seq, r_pid, r_dup) AS u(o, seq, pid, dup) ON u.o = t.o
    LEFT JOIN queen.kafka_log l ON l.partition_id = u.pid AND l.seq = u.seq
   ORDER BY t.o;
END
$$;

-- InitProducerId without a transactional id: a new producer id, unique
-- across restarts and replicas (epoch 0).
CREATE FUNCTION queen.kafka_init_producer() RETURNS bigint
LANGUAGE sql AS $$
  SELECT nextval('queen.kafka_producer_id')
$$;

-- Retention for the Kafka log (called by queen.retention_run after the
-- native retention jobs, in its transaction): per kpart, the kafka_log
-- rows at the head of the log whose message is gone (retention, segment
-- drops, native deletes, a deleted queue) are deleted, up to the first row
-- whose message still exists, so the log start offset (the smallest
-- koffset left; ListOffsets earliest, Fetch's OFFSET_OUT_OF_RANGE bound)
-- moves with the queue's retention and the log does not grow forever. Rows
-- of deleted messages further on stay as gaps (Fetch skips them) until
-- they reach the head. Also expires idempotent producer state untouched
-- for p_producer_ttl (spec §6.5, kafka.producer_state_ttl). At most about
-- p_budget rows per run. Takes no lock a push waits on (kafka_log rows
-- are only ever inserted by pushes). Returns the rows deleted.
CREATE FUNCTION queen.kafka_prune(p_budget int, p_producer_ttl interval DEFAULT interval '7 days')
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_n bigint := 0;
  v_d bigint;
  s   record;
BEGIN
  FOR s IN SELECT st.queue_id, st.kpart FROM queen.kafka_partition_state st ORDER BY 1, 2 LOOP
    EXIT WHEN v_n >= p_budget;
    WITH head AS (
      SELECT l.koffset,
             EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = l.partition_id AND m.seq = l.seq) AS live
        FROM queen.kafka_log l
       WHERE l.queue_id = s.queue_id AND l.kpart = s.kpart
       ORDER BY l.koffset
       LIMIT GREATEST(p_budget - v_n, 1)),
    cut AS (
      SELECT COALESCE(min(h.koffset) FILTER (WHERE h.live), max(h.koffset) + 1) AS upto FROM head h)
    DELETE FROM queen.kafka_log l USING cut
     WHERE l.queue_id = s.queue_id AND l.kpart = s.kpart AND l.koffset < cut.upto;
    GET DIAGNOSTICS v_d = ROW_COUNT;
    v_n := v_n + v_d;
  END LOOP;
  DELETE FROM queen.kafka_producer_state ps
   WHERE (ps.producer_id, ps.queue_id, ps.kpart) IN (
         SELECT x.producer_id, x.queue_id, x.kpart FROM queen.kafka_producer_state x
          WHERE x.updated_at < now() - p_producer_ttl LIMIT GREATEST(p_budget, 1));
  RETURN v_n;
END
$$;

-- Metadata: p_names NULL = every Kafka-visible queue of the tenant, sorted;
-- else each name in request order: err 17 for an illegal name, 3 for a
-- queue that does not exist, has its Kafka view off (0) or was never named
-- by Kafka (NULL), unless p_create creates it with p_parts kparts, or turns
-- the view of an existing never-named queue on with p_parts kparts
-- (queen._kafka_view_on; never a reserved "__" name: 17).
CREATE FUNCTION queen.kafka_topics(p_tenant text, p_names text[], p_create bool, p_parts int)
RETURNS TABLE(name text, partitions int, err smallint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  IF p_names IS NULL THEN
    RETURN QUERY
    SELECT q.name::text, q.kafka_partitions, 0::smallint FROM queen.queues q
     WHERE q.tenant = p_tenant AND q.kafka_partitions > 0 AND queen.kafka_legal_name(q.name)
     ORDER BY q.name;
    RETURN;
  END IF;
  IF p_create THEN
    INSERT INTO queen.queues (tenant, name, namespace, task, kafka_partitions)
    SELECT p_tenant, d.n, split_part(d.n, '.', 1), split_part(d.n, '.', 2), p_parts
      FROM (SELECT DISTINCT n FROM unnest(p_names) n
             WHERE queen.kafka_legal_name(n) AND n NOT LIKE '\_\_%') d
     ORDER BY d.n
    ON CONFLICT (tenant, name) DO NOTHING;
    IF EXISTS (SELECT 1 FROM queen.queues q
                WHERE q.tenant = p_tenant AND q.name = ANY (p_names) AND q.kafka_partitions IS NULL) THEN
      PERFORM queen._kafka_view_on(p_tenant, p_names, p_parts);
    END IF;
  END IF;
  RETURN QUERY
  SELECT t.n, CASE WHEN q.kafka_partitions > 0 THEN q.kafka_partitions ELSE 0 END,
         CASE WHEN NOT queen.kafka_legal_name(t.n) THEN 17
              WHEN (q.id IS NULL OR q.kafka_partitions IS NULL) AND p_create AND t.n LIKE '\_\_%' THEN 17
              WHEN q.id IS NULL OR COALESCE(q.kafka_partitions, 0) = 0 THEN 3
              ELSE 0 END::smallint
    FROM unnest(p_names) WITH ORDINALITY AS t(n, o)
    LEFT JOIN queen.queues q ON q.tenant = p_tenant AND q.name = t.n
   ORDER BY t.o;
END
$$;

-- CreateTopics, one topic: 0 created (or would be, p_validate), 17 illegal
-- or reserved name, 36 exists, 37 partitions outside 1..p_max. An existing
-- queue answers 36 whatever its Kafka view and is left unchanged (a queue
-- Kafka never named stays so until Metadata or Produce names it).
CREATE FUNCTION queen.kafka_create_topic(p_tenant text, p_name text, p_parts int, p_max int,
  p_validate bool)
RETURNS smallint
LANGUAGE plpgsql AS $$
DECLARE
  v_id int;
BEGIN
  IF NOT queen.kafka_legal_name(p_name) OR p_name LIKE '\_\_%' THEN
    RETURN 17;
  END IF;
  IF p_parts IS NULL OR p_parts < 1 OR p_parts > p_max THEN
    RETURN 37;
  END IF;
  IF EXISTS (SELECT 1 FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_name) THEN
    RETURN 36;
  END IF;
  IF p_validate THEN
    RETURN 0;
  END IF;
  INSERT INTO queen.queues (tenant, name, namespace, task, kafka_partitions)
  VALUES (p_tenant, p_name, split_part(p_name, '.', 1), split_part(p_name, '.', 2), p_parts)
  ON CONFLICT (tenant, name) DO NOTHING
  RETURNING id INTO v_id;
  RETURN CASE WHEN v_id IS NULL THEN 36 ELSE 0 END;
END
$$;

-- DeleteTopics, one topic: the native queue goes (queen.queue_delete) with
-- its Kafka state. 0, or 3 when there is no such Kafka-visible queue.
CREATE FUNCTION queen.kafka_delete_topic(p_tenant text, p_name text) RETURNS smallint
LANGUAGE plpgsql AS $$
DECLARE
  v_id int;
BEGIN
  SELECT q.id INTO v_id FROM queen.queues q
   WHERE q.tenant = p_tenant AND q.name = p_name AND q.kafka_partitions > 0;
  IF v_id IS NULL THEN
    RETURN 3;
  END IF;
  PERFORM queen.queue_delete(p_tenant, p_name);
  DELETE FROM queen.kafka_partition_state WHERE queue_id = v_id;
  DELETE FROM queen.kafka_log WHERE queue_id = v_id;
  DELETE FROM queen.kafka_group_offset WHERE queue_id = v_id;
  RETURN 0;
END
$$;

-- Fetch of one kpart from p_offset: the high watermark, the log start and
-- the records in offset order, read in ONE statement (one snapshot), so no
-- record at or past the reported high watermark is returned. At most
-- p_max_rows records and about p_max_bytes of values (the first record
-- always). err 3: no such topic/kpart; 1: p_offset outside [log start,
-- high watermark]. Always at least one row: koffset NULL when no record.
-- The key is the raw key if stored, else the native partition name
-- ('Default' = null key).
CREATE FUNCTION queen.kafka_fetch(p_tenant text, p_queue text, p_kpart int, p_offset bigint,
  p_max_bytes int, p_max_rows int)
RETURNS TABLE(err smallint, hwm bigint, log_start bigint, koffset bigint, ts_ms bigint, key bytea,
              value bytea, headers bytea, encrypted bool)
LANGUAGE plpgsql
-- index probes whatever the statistics were when the plan was cached (a
-- plan made on small tables scanned every message per record: docs/kafka.md)
SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_qid int;
  v_n   int;
BEGIN
  SELECT q.id, q.kafka_partitions INTO v_qid, v_n FROM queen.queues q
   WHERE q.tenant = p_tenant AND q.name = p_queue;
  IF v_qid IS NULL OR COALESCE(v_n, 0) < 1 OR p_kpart < 0 OR p_kpart >= v_n THEN
    RETURN QUERY SELECT 3::smallint, -1::bigint, -1::bigint, NULL::bigint, NULL::bigint, NULL::bytea,
                        NULL::bytea, NULL::bytea, NULL::bool;
    RETURN;
  END IF;
  RETURN QUERY
  WITH st AS (
    SELECT COALESCE((SELECT s.next_offset FROM queen.kafka_partition_state s
                      WHERE s.queue_id = v_qid AND s.kpart = p_kpart), 0) AS hwm),
  ls AS (
    SELECT COALESCE((SELECT l.koffset FROM queen.kafka_log l     -- not min(): one probe in any plan
                      WHERE l.queue_id = v_qid AND l.kpart = p_kpart ORDER BY l.koffset LIMIT 1), st.hwm) AS lso
      FROM st),
  ok AS (
    SELECT p_offset >= ls.lso AND p_offset <= st.hwm AS in_range FROM st, ls),
  recs AS (
    SELECT l.koffset, l.ts_ms, l.partition_id, l.seq
      FROM queen.kafka_log l, st, ok
     WHERE ok.in_range AND l.queue_id = v_qid AND l.kpart = p_kpart
       AND l.koffset >= p_offset AND l.koffset < st.hwm
     ORDER BY l.koffset LIMIT p_max_rows),
  rows AS (
    SELECT r.koffset, COALESCE(mm.ts_ms, r.ts_ms) AS ts,
           CASE WHEN mm.raw_key IS NOT NULL THEN mm.raw_key
                WHEN p.name = 'Default' THEN NULL
                ELSE convert_to(p.name, 'UTF8') END AS k,
           CASE WHEN mm.value_null THEN NULL ELSE m.payload END AS v,
           mm.headers AS h, m.is_encrypted AS enc,
           octet_length(m.payload) + COALESCE(octet_length(mm.headers), 0) + octet_length(p.name) + 32 AS sz
      FROM recs r
      -- one index probe per record, whatever plan was cached on small tables
      CROSS JOIN LATERAL (SELECT m.payload, m.is_encrypted FROM queen.messages m
                           WHERE m.partition_id = r.partition_id AND m.seq = r.seq LIMIT 1) m
      CROSS JOIN LATERAL (SELECT p.name FROM queen.partitions p WHERE p.id = r.partition_id LIMIT 1) p
      LEFT JOIN LATERAL (SELECT mm.ts_ms, mm.raw_key, mm.value_null, mm.headers FROM queen.message_meta mm
                          WHERE mm.partition_id = r.partition_id AND mm.seq = r.seq LIMIT 1) mm ON true),
  sized AS (
    SELECT x.*, sum(x.sz) OVER (ORDER BY x.koffset) - x.sz AS before FROM rows x)
  SELECT CASE WHEN ok.in_range THEN 0 ELSE 1 END::smallint, st.hwm, ls.lso,
         z.koffset, z.ts, z.k, z.v, z.h, z.enc
    FROM st CROSS JOIN ls CROSS JOIN ok
    LEFT JOIN (SELECT * FROM sized WHERE sized.before = 0 OR sized.before + sized.sz <= p_max_bytes) z ON true
   ORDER BY z.koffset;
END
$$;

-- ListOffsets of one kpart: p_ts -1 = high watermark, -2 = log start (both
-- with timestamp -1); p_ts >= 0 = the first offset whose record timestamp
-- is >= p_ts with that timestamp, else the high watermark and -1.
-- err 3: no such topic/kpart.
CREATE FUNCTION queen.kafka_list_offset(p_tenant text, p_queue text, p_kpart int, p_ts bigint)
RETURNS TABLE(err smallint, koffset bigint, ts_ms bigint)
LANGUAGE plpgsql
-- index probes whatever the statistics were when the plan was cached (a
-- plan made on small tables scanned every message per record: docs/kafka.md)
SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_qid int;
  v_n   int;
BEGIN
  SELECT q.id, q.kafka_partitions INTO v_qid, v_n FROM queen.queues q
   WHERE q.tenant = p_tenant AND q.name = p_queue;
  IF v_qid IS NULL OR COALESCE(v_n, 0) < 1 OR p_kpart < 0 OR p_kpart >= v_n THEN
    RETURN QUERY SELECT 3::smallint, -1::bigint, -1::bigint;
    RETURN;
  END IF;
  RETURN QUERY
  WITH st AS (
    SELECT COALESCE((SELECT s.next_offset FROM queen.kafka_partition_state s
                      WHERE s.queue_id = v_qid AND s.kpart = p_kpart), 0) AS hwm),
  hit AS (
    SELECT l.koffset, l.ts_ms FROM queen.kafka_log l, st
     WHERE p_ts >= 0 AND l.queue_id = v_qid AND l.kpart = p_kpart AND l.ts_ms >= p_ts
       AND l.koffset < st.hwm
     ORDER BY l.koffset LIMIT 1)
  SELECT 0::smallint,
         CASE WHEN p_ts = -2 THEN COALESCE((SELECT l.koffset FROM queen.kafka_log l
                                             WHERE l.queue_id = v_qid AND l.kpart = p_kpart
                                             ORDER BY l.koffset LIMIT 1), st.hwm)
              WHEN p_ts >= 0 THEN COALESCE((SELECT hit.koffset FROM hit), st.hwm)
              ELSE st.hwm END,
         CASE WHEN p_ts >= 0 THEN COALESCE((SELECT hit.ts_ms FROM hit), -1) ELSE -1 END::bigint
    FROM st;
END
$$;
