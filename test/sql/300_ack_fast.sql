-- ack: the set-based path for all-completed acks (queen._ack_core, p_slow
-- false) against the per-item loop (p_slow true). 300 random ack calls over
-- leased batches, each run twice inside one transaction (the same now()):
-- the fast path, then, after a rollback to a savepoint, the loop. The rows
-- each returns and the ready / cursors rows they leave must be identical.
-- The calls mix: valid and wrong lease ids, expired leases, unknown
-- messages and partitions, a group without state, duplicates, items
-- outside the delivered range, partial and whole batches (auto-release in
-- the middle of a call), several partitions and two groups per call.
\ir _lib.psql

SELECT setseed(0.3);
SELECT queen.configure('', pg_temp.qn('af'), NULL, NULL, '{"leaseTime": 60}');
SELECT pg_temp.pushn(pg_temp.qn('af'), 'p' || g, 6) FROM generate_series(1, 8) g;
SELECT pg_temp.pushn(pg_temp.qn('af'), 'e' || g, 3) FROM generate_series(1, 2) g;

CREATE TEMP TABLE cmp (k int, fast text, slow text, fast_state text, slow_state text);

DO $$
DECLARE
  q      text := pg_temp.qn('af');
  c      int;
  lease  uuid;
  lease2 uuid;
  d      record;
  g_p    bigint[]; g_s bigint[]; g_l uuid[]; g_g text[];
  n      int;
  i      int;
  r      float8;
  v_fast text; v_slow text; s_fast text; s_slow text;
  pids   bigint[];
BEGIN
  SELECT array_agg(p.id ORDER BY p.id) INTO pids
    FROM queen.partitions p JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = q;
  -- two groups with state on every partition: queue mode and 'g2'
  FOR c IN 1..300 LOOP
    lease := gen_random_uuid();
    lease2 := gen_random_uuid();
    -- some pops: queue mode and g2, partial batches
    CREATE TEMP TABLE IF NOT EXISTS d1 (partition_id bigint, seq bigint, grp text, lease uuid);
    TRUNCATE d1;
    INSERT INTO d1 SELECT p.partition_id, p.seq, '__QUEUE_MODE__', lease
      FROM queen.pop('', q, NULL, NULL, NULL, NULL, 1 + (random() * 12)::int, 1 + (random() * 4)::int,
                     lease, false) p WHERE p.seq IS NOT NULL;
    INSERT INTO d1 SELECT p.partition_id, p.seq, 'g2', lease2
      FROM queen.pop('', q, NULL, 'g2', NULL, NULL, 1 + (random() * 12)::int, 1 + (random() * 4)::int,
                     lease2, false) p WHERE p.seq IS NOT NULL;
    -- expire some leases now and then
    IF random() < 0.1 THEN
      UPDATE queen.ready r SET avail_at = now() - interval '1 s'
       WHERE r.lease_id IN (lease, lease2) AND random() < 0.5;
    END IF;
    -- the ack call: items from the delivered set and distractors
    g_p := '{}'; g_s := '{}'; g_l := '{}'; g_g := '{}';
    FOR d IN SELECT * FROM d1 ORDER BY random() LOOP
      r := random();
      CONTINUE WHEN r < 0.25;                            -- left unacked (partial batch)
      g_p := g_p || d.partition_id;
      g_s := g_s || d.seq;
      g_g := g_g || CASE WHEN d.grp = '__QUEUE_MODE__' AND random() < 0.3 THEN NULL ELSE d.grp END;
      g_l := g_l || CASE WHEN r < 0.32 THEN gen_random_uuid()      -- wrong lease
                         WHEN r < 0.45 THEN NULL                   -- no lease
                         ELSE d.lease END;
      IF random() < 0.1 THEN                                -- duplicate item
        g_p := g_p || d.partition_id; g_s := g_s || d.seq; g_g := g_g || d.grp; g_l := g_l || d.lease;
      END IF;
    END LOOP;
    n := 1 + (random() * 3)::int;
    FOR i IN 1..n LOOP
      r := random();
      IF r < 0.25 THEN                                      -- unknown message
        g_p := g_p || pids[1 + (random() * 9)::int]; g_s := g_s || 999999999::bigint;
        g_g := g_g || NULL::text; g_l := g_l || NULL::uuid;
      ELSIF r < 0.4 THEN                                    -- unknown partition
        g_p := g_p || (-1)::bigint; g_s := g_s || 1::bigint; g_g := g_g || NULL::text; g_l := g_l || lease;
      ELSIF r < 0.55 THEN                                   -- a group that does not exist
        SELECT m.partition_id, m.seq INTO d FROM queen.messages m WHERE m.partition_id = ANY (pids)
         ORDER BY random() LIMIT 1;
        g_p := g_p || d.partition_id; g_s := g_s || d.seq; g_g := g_g || 'nogroup'::text;
        g_l := g_l || CASE WHEN random() < 0.5 THEN lease END;
      ELSE                                                  -- any message, outside a lease or old
        SELECT m.partition_id, m.seq INTO d FROM queen.messages m WHERE m.partition_id = ANY (pids)
         ORDER BY random() LIMIT 1;
        g_p := g_p || d.partition_id; g_s := g_s || d.seq;
        g_g := g_g || CASE WHEN random() < 0.5 THEN 'g2' END;
        g_l := g_l || CASE WHEN random() < 0.3 THEN lease WHEN random() < 0.3 THEN lease2 END;
      END IF;
    END LOOP;
    IF cardinality(g_p) = 0 THEN
      CONTINUE;
    END IF;

    -- the fast path, then the loop, from the same state
    BEGIN
      SELECT string_agg(format('%s|%s|%s|%s|%s|%s|%s|%s|%s|%s', a.ord, a.success, a.error, a.queue_name,
                               a.partition_name, a.lease_released, a.dlq, a.msg_seq, a.queue_id, a.code),
                        ';' ORDER BY a.ord)
        INTO v_fast
        FROM queen._ack_core('', g_g, g_p, array_fill(NULL::text, ARRAY[cardinality(g_p)]), g_s,
                             array_fill(CASE WHEN c % 2 = 0 THEN 'completed' ELSE 'success' END,
                                        ARRAY[cardinality(g_p)]),
                             g_l, array_fill(NULL::text, ARRAY[cardinality(g_p)]), false, false) a;
      SELECT string_agg(format('%s', r.*), ';' ORDER BY r.partition_id, r.group_id) INTO s_fast
        FROM queen.ready r WHERE r.partition_id = ANY (pids);
      SELECT s_fast || ' // ' || COALESCE(string_agg(format('%s/%s/%s', cu.partition_id, cu.group_id, cu.acked_seq),
                                                  ';' ORDER BY cu.partition_id, cu.group_id), '')
        INTO s_fast FROM queen.cursors cu WHERE cu.partition_id = ANY (pids);
      RAISE EXCEPTION 'undo' USING ERRCODE = 'QNUND';
    EXCEPTION WHEN SQLSTATE 'QNUND' THEN
      NULL;
    END;
    SELECT string_agg(format('%s|%s|%s|%s|%s|%s|%s|%s|%s|%s', a.ord, a.success, a.error, a.queue_name,
                             a.partition_name, a.lease_released, a.dlq, a.msg_seq, a.queue_id, a.code),
                      ';' ORDER BY a.ord)
      INTO v_slow
      FROM queen._ack_core('', g_g, g_p, array_fill(NULL::text, ARRAY[cardinality(g_p)]), g_s,
                           array_fill(CASE WHEN c % 2 = 0 THEN 'completed' ELSE 'success' END,
                                      ARRAY[cardinality(g_p)]),
                           g_l, array_fill(NULL::text, ARRAY[cardinality(g_p)]), false, true) a;
    SELECT string_agg(format('%s', r.*), ';' ORDER BY r.partition_id, r.group_id) INTO s_slow
      FROM queen.ready r WHERE r.partition_id = ANY (pids);
    SELECT s_slow || ' // ' || COALESCE(string_agg(format('%s/%s/%s', cu.partition_id, cu.group_id, cu.acked_seq),
                                                ';' ORDER BY cu.partition_id, cu.group_id), '')
      INTO s_slow FROM queen.cursors cu WHERE cu.partition_id = ANY (pids);
    INSERT INTO cmp VALUES (c, v_fast, v_slow, s_fast, s_slow);
    -- keep the queue fed
    IF c % 10 = 0 THEN
      PERFORM pg_temp.pushn(q, 'p' || (1 + (random() * 7)::int), 5);
    END IF;
  END LOOP;
END $$;

SELECT pg_temp.ok(count(*) >= 250, 'F: at least 250 ack calls compared, got ' || count(*)) FROM cmp;
SELECT pg_temp.ok(count(*) FILTER (WHERE fast IS DISTINCT FROM slow) = 0,
                  'F: same rows from both paths; first difference: ' ||
                  COALESCE(min(k) FILTER (WHERE fast IS DISTINCT FROM slow)::text, '-') || E'\n fast ' ||
                  COALESCE((SELECT fast FROM cmp c2 WHERE c2.fast IS DISTINCT FROM c2.slow ORDER BY k LIMIT 1), '') ||
                  E'\n slow ' ||
                  COALESCE((SELECT slow FROM cmp c2 WHERE c2.fast IS DISTINCT FROM c2.slow ORDER BY k LIMIT 1), ''))
  FROM cmp;
SELECT pg_temp.ok(count(*) FILTER (WHERE fast_state IS DISTINCT FROM slow_state) = 0,
                  'F: same ready and cursors rows after both paths; first difference at call ' ||
                  COALESCE(min(k) FILTER (WHERE fast_state IS DISTINCT FROM slow_state)::text, '-') || E'\n fast ' ||
                  COALESCE((SELECT fast_state FROM cmp c2 WHERE c2.fast_state IS DISTINCT FROM c2.slow_state
                             ORDER BY k LIMIT 1), '') || E'\n slow ' ||
                  COALESCE((SELECT slow_state FROM cmp c2 WHERE c2.fast_state IS DISTINCT FROM c2.slow_state
                             ORDER BY k LIMIT 1), ''))
  FROM cmp;
-- the cases the comparison is about did occur
SELECT pg_temp.ok(count(*) FILTER (WHERE fast ~ 'Invalid or expired lease') >= 20, 'F: wrong or expired leases')
  FROM cmp;
SELECT pg_temp.ok(count(*) FILTER (WHERE fast ~ 'Message not found') >= 20, 'F: unknown messages') FROM cmp;
SELECT pg_temp.ok(count(*) FILTER (WHERE fast ~ '\|t\|f\|') >= 20 AND count(*) FILTER (WHERE fast ~ '\|f\|f\|') >= 20,
                  'F: calls releasing and keeping leases') FROM cmp;
