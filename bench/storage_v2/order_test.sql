-- bench/storage_v2/order_test.sql - two-session concurrency test of a storage
-- v2 prototype (schema @S@), run by order_test.sh: this psql session is the
-- controller (pops and acks); other sessions are started with \! and held
-- inside their transactions by advisory locks the controller owns, so the
-- interleaving is fixed, not timed. Any failed expectation raises: psql
-- stops (ON_ERROR_STOP) and the script exits non-zero.
--
-- The invariant: within a partition, a message that commits later is never
-- delivered before one already delivered, and none is skipped, whatever
-- the order in which transactions take their ids, write and commit.
\set ON_ERROR_STOP 1
SET client_min_messages = notice;

CREATE FUNCTION pg_temp.wait_lock(k bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..400 LOOP
    IF EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = k AND NOT granted) THEN
      RETURN;
    END IF;
    PERFORM pg_sleep(0.025);
  END LOOP;
  RAISE EXCEPTION 'FAIL: no session waits on advisory lock %', k;
END $$;

-- a session blocked on another transaction (a dedup key being inserted)
CREATE FUNCTION pg_temp.wait_xact_lock(app text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..400 LOOP
    PERFORM pg_stat_clear_snapshot();     -- pg_stat_activity is cached per transaction
    IF EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = app AND wait_event_type = 'Lock') THEN
      RETURN;
    END IF;
    PERFORM pg_sleep(0.025);
  END LOOP;
  RAISE EXCEPTION 'FAIL: session % never waited on a lock', app;
END $$;

CREATE FUNCTION pg_temp.wait_gone(app text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..400 LOOP
    PERFORM pg_stat_clear_snapshot();
    IF NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = app) THEN
      RETURN;
    END IF;
    PERFORM pg_sleep(0.025);
  END LOOP;
  RAISE EXCEPTION 'FAIL: session % did not end', app;
END $$;

CREATE FUNCTION pg_temp.expect(got text, want text, what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF got IS DISTINCT FROM want THEN
    RAISE EXCEPTION 'FAIL %: got "%", want "%"', what, got, want;
  END IF;
  RAISE NOTICE 'ok   %: "%"', what, got;
END $$;

-- pop (batch 100) for group g of queue q under lease l; the payloads in
-- delivery order; acked (same lease) unless p_ack is false
CREATE FUNCTION pg_temp.take(q text, g text, l uuid, p_ack bool DEFAULT true) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r record; v_out text := ''; a_pid bigint[]; a_xid xid8[]; a_seq bigint[];
BEGIN
  FOR r IN SELECT p.partition_id, p.xid, p.seq, convert_from(p.payload, 'UTF8') AS t
             FROM @S@.pop(q, g, 100, 100, l) WITH ORDINALITY p ORDER BY p.ordinality LOOP
    v_out := v_out || CASE WHEN v_out = '' THEN '' ELSE ',' END || r.t;
    a_pid := a_pid || r.partition_id; a_xid := a_xid || r.xid; a_seq := a_seq || r.seq;
  END LOOP;
  IF p_ack AND a_pid IS NOT NULL THEN
    PERFORM pg_temp.expect(@S@.ack(array_fill(q, ARRAY[cardinality(a_pid)]), array_fill(g, ARRAY[cardinality(a_pid)]),
                                   a_pid, a_xid, a_seq, array_fill(l, ARRAY[cardinality(a_pid)]))::text,
                           cardinality(a_pid)::text, 'acks applied');
  END IF;
  RETURN v_out;
END $$;

CREATE FUNCTION pg_temp.push1(q text, part text, payload text, txn text DEFAULT NULL) RETURNS bool LANGUAGE sql AS $$
  SELECT duplicate FROM @S@.push(q, ARRAY[part], ARRAY[txn], ARRAY[convert_to(payload, 'UTF8')])
$$;

-- the queue and group exist before the sessions start
SELECT pg_temp.push1('ot', 'P', 'init');
SELECT pg_temp.expect(pg_temp.take('ot', 'g', gen_random_uuid()), 'init', 'setup');

-- 1. A takes its xid and writes first, B later; B commits while A is open:
--    B is held back (it would otherwise be delivered before A), then both
--    are delivered in xid order
SELECT pg_advisory_lock(1001);
\! PGAPPNAME=otA psql -X -q -c "BEGIN; SELECT @S@.push('ot', ARRAY['P'], NULL, ARRAY[convert_to('A1', 'UTF8')]); SELECT pg_advisory_lock(1001); COMMIT;" >/dev/null 2>&1 &
SELECT pg_temp.wait_lock(1001);
\! PGAPPNAME=otB psql -X -q -c "SELECT @S@.push('ot', ARRAY['P'], NULL, ARRAY[convert_to('B1', 'UTF8')])" >/dev/null
SELECT pg_temp.expect(pg_temp.take('ot', 'g', gen_random_uuid()), '', '1: B1 committed, A1 open: nothing delivered');
SELECT pg_advisory_unlock(1001);
SELECT pg_temp.wait_gone('otA');
SELECT pg_temp.expect(pg_temp.take('ot', 'g', gen_random_uuid()), 'A1,B1', '1: after A commits, A1 then B1');

-- 2. the same, A rolls back: B2 alone, nothing skipped
SELECT pg_advisory_lock(1002);
\! PGAPPNAME=otA psql -X -q -c "BEGIN; SELECT @S@.push('ot', ARRAY['P'], NULL, ARRAY[convert_to('A2', 'UTF8')]); SELECT pg_advisory_lock(1002); ROLLBACK;" >/dev/null 2>&1 &
SELECT pg_temp.wait_lock(1002);
\! PGAPPNAME=otB psql -X -q -c "SELECT @S@.push('ot', ARRAY['P'], NULL, ARRAY[convert_to('B2', 'UTF8')])" >/dev/null
SELECT pg_temp.expect(pg_temp.take('ot', 'g', gen_random_uuid()), '', '2: B2 committed, A open: nothing delivered');
SELECT pg_advisory_unlock(1002);
SELECT pg_temp.wait_gone('otA');
SELECT pg_temp.expect(pg_temp.take('ot', 'g', gen_random_uuid()), 'B2', '2: A rolled back: B2');

-- 3. B takes its xid first but writes and commits last; A (later xid)
--    writes and commits in between: A3 is not delivered while B is open
--    (B3 will sort before it), then B3, A3. The horizon is global: a message
--    of another queue is held as well.
SELECT pg_advisory_lock(1003);
\! PGAPPNAME=otB psql -X -q -c "BEGIN; SELECT pg_current_xact_id(); SELECT pg_advisory_lock(1003); SELECT @S@.push('ot', ARRAY['P'], NULL, ARRAY[convert_to('B3', 'UTF8')]); COMMIT;" >/dev/null 2>&1 &
SELECT pg_temp.wait_lock(1003);
\! PGAPPNAME=otA psql -X -q -c "SELECT @S@.push('ot', ARRAY['P'], NULL, ARRAY[convert_to('A3', 'UTF8')]); SELECT @S@.push('ot2', ARRAY['X'], NULL, ARRAY[convert_to('X3', 'UTF8')])" >/dev/null
SELECT pg_temp.expect(pg_temp.take('ot', 'g', gen_random_uuid()), '', '3: A3 committed, B (older xid) open: nothing delivered');
SELECT pg_temp.expect(pg_temp.take('ot2', 'g', gen_random_uuid()), '', '3: other queue held too (global horizon)');
SELECT pg_advisory_unlock(1003);
SELECT pg_temp.wait_gone('otB');
SELECT pg_temp.expect(pg_temp.take('ot', 'g', gen_random_uuid()), 'B3,A3', '3: after B commits, B3 then A3');
SELECT pg_temp.expect(pg_temp.take('ot2', 'g', gen_random_uuid()), 'X3', '3: other queue released');

-- 4. one consumer per (partition, group); a stale lease's ack is ignored
SELECT pg_temp.push1('ot', 'P', 'C1'), pg_temp.push1('ot', 'P', 'C2');
SELECT gen_random_uuid() AS l1, gen_random_uuid() AS l2 \gset
SELECT pg_temp.expect(pg_temp.take('ot', 'g', :'l1', false), 'C1,C2', '4: first consumer');
SELECT pg_temp.expect(pg_temp.take('ot', 'g', :'l2', false), '', '4: second consumer of the same group gets nothing');
SELECT pg_temp.expect(@S@.ack(ARRAY['ot'], ARRAY['g'], ARRAY[c.partition_id], ARRAY[m.xid], ARRAY[m.seq], ARRAY[:'l2'::uuid])::text,
                      '0', '4: ack under a lease that is not the live one')
  FROM @S@.messages m JOIN @S@.claims c ON c.partition_id = m.partition_id
 WHERE m.payload = convert_to('C2', 'UTF8') AND c.lease_id = :'l1';
SELECT pg_temp.expect(@S@.ack(ARRAY['ot','ot'], ARRAY['g','g'], array_agg(m.partition_id), array_agg(m.xid), array_agg(m.seq),
                              ARRAY[:'l1'::uuid, :'l1'::uuid])::text, '2', '4: ack under the live lease')
  FROM @S@.messages m WHERE m.payload IN (convert_to('C1', 'UTF8'), convert_to('C2', 'UTF8'));
SELECT pg_temp.expect(pg_temp.take('ot', 'g', gen_random_uuid()), '', '4: nothing left after the ack');

-- 5. lease expiry redelivers from the cursor
UPDATE @S@.queues SET lease_time = 1 WHERE name = 'ot';
SELECT pg_temp.push1('ot', 'P', 'D1');
SELECT pg_temp.expect(pg_temp.take('ot', 'g', gen_random_uuid(), false), 'D1', '5: leased, not acked');
SELECT pg_temp.expect(pg_temp.take('ot', 'g', gen_random_uuid(), false), '', '5: under the lease: nothing');
SELECT pg_sleep(1.2);
SELECT pg_temp.expect(pg_temp.take('ot', 'g', gen_random_uuid()), 'D1', '5: expired: redelivered');
SELECT pg_temp.expect((SELECT max(attempts)::text FROM @S@.claims WHERE lease_id IS NOT NULL OR attempts > 0), NULL,
                      '5: acked: lease released, attempts reset');

-- 6. dedup by transactionId: a second push of the same id waits for the
--    first and is a duplicate
SELECT pg_advisory_lock(1006);
\! PGAPPNAME=otA psql -X -q -c "BEGIN; SELECT @S@.push('ot', ARRAY['P'], ARRAY['t-1'], ARRAY[convert_to('E1', 'UTF8')]); SELECT pg_advisory_lock(1006); COMMIT;" >/dev/null 2>&1 &
SELECT pg_temp.wait_lock(1006);
\! PGAPPNAME=otB psql -X -q -c "SELECT @S@.push('ot', ARRAY['P'], ARRAY['t-1'], ARRAY[convert_to('E2', 'UTF8')])" >/dev/null 2>&1 &
SELECT pg_temp.wait_xact_lock('otB');
SELECT pg_advisory_unlock(1006);
SELECT pg_temp.wait_gone('otA');
SELECT pg_temp.wait_gone('otB');
SELECT pg_temp.expect(pg_temp.take('ot', 'g', gen_random_uuid()), 'E1', '6: the duplicate was not stored');
SELECT pg_temp.expect(pg_temp.push1('ot', 'P', 'E3', 't-1')::text, 'true', '6: a later push of the id: duplicate');

-- 7. a group created now has its own cursor: every committed message of P
--    from the start, in order
SELECT pg_temp.expect(pg_temp.take('ot', 'g2', gen_random_uuid()), 'init,A1,B1,B2,B3,A3,C1,C2,D1,E1', '7: new group replays P');
\echo order_test @S@: all expectations met
