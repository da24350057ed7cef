-- streams state (contract 3.22): registration, one-transaction cycles, state reads
\ir _lib.psql
CREATE FUNCTION pg_temp.err(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text;
BEGIN
  EXECUTE sql;
  RETURN 'ok';
EXCEPTION WHEN others THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
  RETURN st || '|' || msg;
END $$;
-- a cycle with the common shape: state ops, one sink push, an ack
CREATE FUNCTION pg_temp.cycle(qid uuid, part uuid, types text[], keys text[], vals text[],
  sink text, sink_txn text, ack_txn text, ack_seq bigint, lease uuid, status text, release bool)
RETURNS TABLE(kind text, ord int, seq bigint, partition_id bigint, duplicate bool, queue_name text,
  lease_released bool, dlq bool) LANGUAGE sql AS $$
  SELECT * FROM queen_streams.cycle('', qid, part, NULL, types, keys, vals,
    CASE WHEN sink IS NULL THEN '{}'::text[] ELSE ARRAY[sink] END,
    CASE WHEN sink IS NULL THEN '{}'::text[] ELSE ARRAY['Default'] END,
    CASE WHEN sink IS NULL THEN '{}'::text[] ELSE ARRAY[sink_txn] END,
    CASE WHEN sink IS NULL THEN '{}'::bytea[] ELSE ARRAY['{"out":1}'::bytea] END,
    CASE WHEN sink IS NULL THEN '{}'::uuid[] ELSE ARRAY[NULL::uuid] END,
    CASE WHEN sink IS NULL THEN '{}'::text[] ELSE ARRAY[NULL::text] END,
    CASE WHEN sink IS NULL THEN '{}'::bool[] ELSE ARRAY[false] END, NULL,
    COALESCE(ack_txn, queen.uuid_of(1, ack_seq)::text), ack_seq, lease, status, NULL, release) $$;

-- registration
CREATE TEMP TABLE r1 AS SELECT * FROM queen_streams.register('', pg_temp.qn('q'), pg_temp.qn('src'), '', 'h1', false);
SELECT pg_temp.ok_one(array_agg(status = 'ok' AND fresh AND NOT reset), 'fresh') FROM r1;
SELECT pg_temp.ok(count(*) = 1 AND bool_and(sink_queue IS NULL), 'empty sink stored as NULL') FROM queen_streams.queries WHERE id = (SELECT query_id FROM r1);
SELECT pg_temp.ok_one(array_agg(status = 'ok' AND NOT fresh AND NOT reset AND query_id = (SELECT query_id FROM r1)), 'same hash')
  FROM queen_streams.register('', pg_temp.qn('q'), pg_temp.qn('src'), pg_temp.qn('sink'), 'h1', false);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(sink_queue = pg_temp.qn('sink')), 'queue names updated') FROM queen_streams.queries WHERE id = (SELECT query_id FROM r1);
SELECT pg_temp.ok_one(array_agg(status = 'mismatch' AND old_hash = 'h1' AND query_id = (SELECT query_id FROM r1)), 'mismatch')
  FROM queen_streams.register('', pg_temp.qn('q'), pg_temp.qn('src'), NULL, 'h2', false);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(config_hash = 'h1'), 'mismatch changes nothing') FROM queen_streams.queries WHERE id = (SELECT query_id FROM r1);
SELECT set_config('test.qid', (SELECT query_id::text FROM r1), false) \g /dev/null

-- a source partition with 3 messages, leased to a pop
SELECT pg_temp.pushn(pg_temp.qn('src'), 'p', 3);
CREATE TEMP TABLE m AS SELECT * FROM pg_temp.pop(pg_temp.qn('src'), NULL, NULL, 10, 1, pg_temp.L(1));
SELECT set_config('test.part', (SELECT queen.uuid_of(2, min(partition_id))::text FROM m), false) \g /dev/null

-- a cycle: state, sink push and ack of the last message (count 3) commit together
CREATE TEMP TABLE c1 AS SELECT * FROM pg_temp.cycle(current_setting('test.qid')::uuid, current_setting('test.part')::uuid,
  ARRAY['upsert', 'upsert', 'upsert', 'delete'], ARRAY['win:1', 'win:2', 'tmp', 'tmp'],
  ARRAY['{"windowEnd": 1000, "sum": 3}', '{"windowEnd": 2000}', '{}', NULL],
  pg_temp.qn('sink'), 'out-1', NULL, (SELECT max(seq) FROM m), pg_temp.L(1), NULL, true);
SELECT pg_temp.ok((SELECT queue_name FROM c1 WHERE kind = 'source') = pg_temp.qn('src'), 'source queue named');
SELECT pg_temp.ok(count(*) = 1 AND min(value::text) = '{"sum": 3, "windowEnd": 1000}', 'upsert stored')
  FROM queen_streams.state WHERE query_id = current_setting('test.qid')::uuid AND key = 'win:1';
SELECT pg_temp.ok(count(*) = 1 AND bool_and(lease_released AND NOT dlq AND seq = (SELECT max(seq) FROM m)), 'ack released') FROM c1 WHERE kind = 'ack';
SELECT pg_temp.ok(count(*) = 1 AND NOT bool_or(duplicate), 'one sink push') FROM c1 WHERE kind = 'push';
SELECT pg_temp.ok(count(*) = 2, 'state: last op per key') FROM queen_streams.state WHERE query_id = current_setting('test.qid')::uuid;
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'all 3 consumed') FROM pg_temp.pop(pg_temp.qn('src'), NULL, NULL, 10, 1, pg_temp.L(2));
SELECT pg_temp.ok(count(*) = 1 AND min(body) = '{"out":1}', 'sink message visible') FROM pg_temp.pop(pg_temp.qn('sink'), NULL, NULL, 10, 1, pg_temp.L(3));

-- a failing cycle rolls back everything: the wrong lease fails the ack after
-- the state ops and the push were written in the same call
SELECT pg_temp.pushn(pg_temp.qn('src'), 'p', 2);
CREATE TEMP TABLE m2 AS SELECT * FROM pg_temp.pop(pg_temp.qn('src'), NULL, NULL, 10, 1, pg_temp.L(4));
SELECT pg_temp.ok_one(array_agg(e = 'QN409|Invalid or expired lease'), 'bad lease: ' || coalesce(string_agg(e, ' / '), 'no row'))
  FROM pg_temp.err(format($q$SELECT * FROM pg_temp.cycle(%L, %L, ARRAY['upsert'], ARRAY['win:1'], ARRAY['{"x":1}'],
       %L, 'out-2', NULL, %s, %L, NULL, true)$q$, current_setting('test.qid'), current_setting('test.part'),
       pg_temp.qn('sink'), (SELECT max(seq) FROM m2), pg_temp.L(99))) e;
SELECT pg_temp.ok(count(*) = 1 AND bool_and(value = '{"windowEnd": 1000, "sum": 3}'), 'state unchanged') FROM queen_streams.state
 WHERE query_id = current_setting('test.qid')::uuid AND key = 'win:1';
SELECT pg_temp.ok(count(*) = 0, 'no sink push') FROM queen.messages WHERE txn_id = 'out-2';
SELECT pg_temp.ok_one(array_agg(e = 'QN404|Message not found'), 'unknown message: ' || coalesce(string_agg(e, ' / '), 'no row'))
  FROM pg_temp.err(format($q$SELECT * FROM pg_temp.cycle(%L, %L, NULL, NULL, NULL, NULL, NULL, 'nosuch', NULL, NULL, NULL, true)$q$,
       current_setting('test.qid'), current_setting('test.part'))) e;
SELECT pg_temp.ok_one(array_agg(e = 'QN400|Unknown state_op type: merge'), 'unknown op: ' || coalesce(string_agg(e, ' / '), 'no row'))
  FROM pg_temp.err(format($q$SELECT * FROM pg_temp.cycle(%L, %L, ARRAY['merge'], ARRAY['k'], ARRAY['1'], NULL, NULL, NULL, NULL, NULL, NULL, true)$q$,
       current_setting('test.qid'), current_setting('test.part'))) e;
SELECT pg_temp.ok_one(array_agg(e = 'QN400|Unknown ack.status: maybe'), 'unknown status: ' || coalesce(string_agg(e, ' / '), 'no row'))
  FROM pg_temp.err(format($q$SELECT * FROM pg_temp.cycle(%L, %L, NULL, NULL, NULL, NULL, NULL, 'x', NULL, NULL, 'maybe', true)$q$,
       current_setting('test.qid'), current_setting('test.part'))) e;
SELECT pg_temp.ok_one(array_agg(e LIKE 'QN404|Query not found%'), 'unknown query: ' || coalesce(string_agg(e, ' / '), 'no row'))
  FROM pg_temp.err(format($q$SELECT * FROM pg_temp.cycle(%L, %L, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, true)$q$,
       gen_random_uuid(), current_setting('test.part'))) e;

-- release_lease false: cursor moves, lease kept
CREATE TEMP TABLE c2 AS SELECT * FROM pg_temp.cycle(current_setting('test.qid')::uuid, current_setting('test.part')::uuid,
  NULL, NULL, NULL, NULL, NULL, NULL, (SELECT min(seq) FROM m2), pg_temp.L(4), 'completed', false);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(NOT lease_released), 'lease kept') FROM c2 WHERE kind = 'ack';
SELECT pg_temp.ok(count(*) = 1 AND bool_and(r.lease_id = pg_temp.L(4) AND r.acked_seq = (SELECT min(seq) FROM m2)), 'cursor moved under the lease')
  FROM queen.ready r WHERE r.partition_id = (SELECT min(partition_id) FROM m2) AND r.group_id = pg_temp.gid(pg_temp.qn('src'), '__QUEUE_MODE__');
-- failed: dead-letters that message, cursor at it, lease released
CREATE TEMP TABLE c3 AS SELECT * FROM pg_temp.cycle(current_setting('test.qid')::uuid, current_setting('test.part')::uuid,
  NULL, NULL, NULL, NULL, NULL, NULL, (SELECT max(seq) FROM m2), pg_temp.L(4), 'failed', true);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(lease_released AND dlq), 'failed -> dlq, released') FROM c3 WHERE kind = 'ack';
SELECT pg_temp.ok(count(*) = 1 AND bool_and(error = 'Streaming cycle reported failure' AND consumer_group = '__QUEUE_MODE__'), 'dlq row')
  FROM queen.dead_letters WHERE seq = (SELECT max(seq) FROM m2);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(seq IS NULL), 'nothing left after the dead-lettered last message')
  FROM pg_temp.pop(pg_temp.qn('src'), NULL, NULL, 10, 1, pg_temp.L(5));

-- sink pushes deduplicate (reported, not an error)
SELECT pg_temp.ok(count(*) = 1 AND bool_and(duplicate), 'duplicate sink push reported')
  FROM pg_temp.cycle(current_setting('test.qid')::uuid, current_setting('test.part')::uuid,
                     NULL, NULL, NULL, pg_temp.qn('sink'), 'out-1', NULL, NULL, NULL, NULL, true) WHERE kind = 'push';

-- state reads: keys, prefix, ripe, combined; sorted by key
SELECT pg_temp.ok(array_agg(key ORDER BY key) = ARRAY['win:1', 'win:2'], 'all')
  FROM queen_streams.state_get('', current_setting('test.qid')::uuid, current_setting('test.part')::uuid, NULL, NULL, NULL);
SELECT pg_temp.ok(array_agg(key) = ARRAY['win:2'], 'keys')
  FROM queen_streams.state_get('', current_setting('test.qid')::uuid, current_setting('test.part')::uuid, ARRAY['win:2', 'nosuch'], NULL, NULL);
SELECT pg_temp.ok(count(*) = 0, 'prefix') FROM queen_streams.state_get('', current_setting('test.qid')::uuid, current_setting('test.part')::uuid, NULL, 'x', NULL);
SELECT pg_temp.ok(array_agg(key) = ARRAY['win:1'], 'ripe')
  FROM queen_streams.state_get('', current_setting('test.qid')::uuid, current_setting('test.part')::uuid, NULL, 'win:', 1500);
SELECT pg_temp.ok(count(*) = 0, 'other tenant sees nothing')
  FROM queen_streams.state_get('t2', current_setting('test.qid')::uuid, current_setting('test.part')::uuid, NULL, NULL, NULL);

-- reset with a new hash discards the state; deleting the query cascades
SELECT pg_temp.ok_one(array_agg(status = 'ok' AND reset AND NOT fresh), 'reset')
  FROM queen_streams.register('', pg_temp.qn('q'), pg_temp.qn('src'), NULL, 'h2', true);
SELECT pg_temp.ok(count(*) = 0, 'state discarded') FROM queen_streams.state WHERE query_id = current_setting('test.qid')::uuid;
SELECT FROM pg_temp.cycle(current_setting('test.qid')::uuid, current_setting('test.part')::uuid,
  ARRAY['upsert'], ARRAY['k'], ARRAY['1'], NULL, NULL, NULL, NULL, NULL, NULL, true);
DELETE FROM queen_streams.queries WHERE id = current_setting('test.qid')::uuid;
SELECT pg_temp.ok(count(*) = 0, 'cascade') FROM queen_streams.state WHERE query_id = current_setting('test.qid')::uuid;
