-- kv store and timers (schema/functions/30_kv.sql, 31_timers.sql)
\ir _lib.psql

-- ---------------------------------------------------------------- kv
CREATE FUNCTION pg_temp.put(k text, v text, ifv bigint, ttl int)
RETURNS TABLE(status text, version bigint, expires_at timestamptz, current_version bigint) LANGUAGE sql AS $$
  SELECT * FROM queen.kv_put('', pg_temp.qn('b'), k, convert_to(v, 'UTF8'), ifv, ttl) $$;

CREATE TEMP TABLE p1 AS SELECT * FROM pg_temp.put('a', '1', NULL, NULL);
SELECT pg_temp.ok_one(array_agg(status = 'ok' AND version > 0 AND expires_at IS NULL), 'unconditional create') FROM p1;
SELECT pg_temp.ok_one(array_agg(status = 'conflict' AND current_version = (SELECT version FROM p1)), 'create-only on a live key conflicts')
  FROM pg_temp.put('a', '2', 0, NULL);
SELECT pg_temp.ok_one(array_agg(status = 'conflict' AND current_version = (SELECT version FROM p1)), 'stale version conflicts')
  FROM pg_temp.put('a', '2', (SELECT version FROM p1) + 1000, NULL);
CREATE TEMP TABLE p2 AS SELECT * FROM pg_temp.put('a', '2', (SELECT version FROM p1), 60);
SELECT pg_temp.ok_one(array_agg(status = 'ok' AND version > (SELECT version FROM p1) AND expires_at > now()), 'CAS with ttl') FROM p2;
SELECT pg_temp.ok_one(array_agg(convert_from(value, 'UTF8') = '2' AND version = (SELECT version FROM p2)), 'get')
  FROM queen.kv_get('', pg_temp.qn('b'), 'a');
SELECT pg_temp.ok_one(array_agg(status = 'conflict' AND current_version = 0), 'CAS on a missing key: current version 0')
  FROM pg_temp.put('missing', 'x', 5, NULL);

-- expired rows read as absent at once, and create-only may replace them
UPDATE queen.kv SET expires_at = now() - interval '1 second' WHERE ns = pg_temp.qn('b') AND key = 'a';
SELECT pg_temp.ok(count(*) = 0, 'expired key reads as absent') FROM queen.kv_get('', pg_temp.qn('b'), 'a');
SELECT pg_temp.ok_one(array_agg(status = 'conflict' AND current_version = 0), 'CAS on an expired key conflicts with 0')
  FROM pg_temp.put('a', '3', (SELECT version FROM p2), NULL);
CREATE TEMP TABLE p3 AS SELECT * FROM pg_temp.put('a', '3', 0, NULL);
SELECT pg_temp.ok_one(array_agg(status = 'ok' AND version > (SELECT version FROM p2)), 'create-only replaces an expired row') FROM p3;

-- delete: conflict, deleted, not found; ABA: a re-created key gets a higher version
SELECT pg_temp.ok_one(array_agg(status = 'conflict' AND version = (SELECT version FROM p3)), 'delete with a stale version')
  FROM queen.kv_delete('', pg_temp.qn('b'), 'a', 1);
SELECT pg_temp.ok_one(array_agg(status = 'deleted' AND version = (SELECT version FROM p3)), 'delete')
  FROM queen.kv_delete('', pg_temp.qn('b'), 'a', (SELECT version FROM p3));
SELECT pg_temp.ok_one(array_agg(status = 'not_found'), 'delete again') FROM queen.kv_delete('', pg_temp.qn('b'), 'a', NULL);
SELECT pg_temp.ok_one(array_agg(version > (SELECT version FROM p3)), 'no ABA') FROM pg_temp.put('a', '4', 0, NULL);

-- list: prefix, after, order, expired rows hidden
SELECT FROM unnest(ARRAY['x/1', 'x/2', 'x/3', 'xa', 'w', 'x/', 'x']) k, LATERAL pg_temp.put(k, '0', NULL, NULL) p;
UPDATE queen.kv SET expires_at = now() - interval '1 second' WHERE ns = pg_temp.qn('b') AND key = 'x/2';
SELECT pg_temp.ok(string_agg(key, ',' ORDER BY key) = 'x/,x/1,x/3', 'prefix x/: ' || coalesce(string_agg(key, ',' ORDER BY key), 'no row'))
  FROM queen.kv_list('', pg_temp.qn('b'), 'x/', NULL, 100);
SELECT pg_temp.ok(string_agg(key, ',' ORDER BY key) = 'x/3,xa', 'after x/1, limit 2')
  FROM queen.kv_list('', pg_temp.qn('b'), 'x', 'x/1', 2);
SELECT pg_temp.ok(count(*) = 7, 'whole bucket: a, w, x, x/, x/1, x/3, xa') FROM queen.kv_list('', pg_temp.qn('b'), NULL, NULL, 100);
SELECT pg_temp.ok(queen._prefix_end('ab') = 'ac' AND queen._prefix_end('') IS NULL
                  AND queen._prefix_end('a' || chr(1114111)) = 'b'
                  AND queen._prefix_end(chr(55295)) = chr(57344), '_prefix_end');
-- tenants do not see each other
SELECT pg_temp.ok(count(*) = 0, 'other tenant') FROM queen.kv_get('t2', pg_temp.qn('b'), 'w');

-- sweep
SELECT pg_temp.ok(queen.kv_sweep(1000) >= 1, 'sweep removes expired rows');
SELECT pg_temp.ok(count(*) = 0, 'swept') FROM queen.kv WHERE ns = pg_temp.qn('b') AND key = 'x/2';

-- ---------------------------------------------------------------- timers
CREATE FUNCTION pg_temp.tc(tid text, q text, body text, at_us bigint, in_ms bigint)
RETURNS TABLE(status text, id bigint, due_at timestamptz, fired_at timestamptz) LANGUAGE sql AS $$
  SELECT * FROM queen.timer_create('', tid, q, NULL, convert_to(body, 'UTF8'), 'tx-' || tid, false, at_us, in_ms) $$;

CREATE TEMP TABLE t1 AS SELECT * FROM pg_temp.tc(pg_temp.qn('t1'), pg_temp.qn('tq'), '{"n":1}', NULL, 60000);
SELECT pg_temp.ok_one(array_agg(status = 'created' AND due_at > now() + interval '59 seconds'), 'create with delayMs') FROM t1;
SELECT pg_temp.ok_one(array_agg(status = 'exists' AND due_at = (SELECT due_at FROM t1)), 'same definition: same timer')
  FROM pg_temp.tc(pg_temp.qn('t1'), pg_temp.qn('tq'), '{"n":1}', NULL, 60000);
SELECT pg_temp.ok_one(array_agg(status = 'conflict'), 'different payload: conflict')
  FROM pg_temp.tc(pg_temp.qn('t1'), pg_temp.qn('tq'), '{"n":2}', NULL, 60000);
SELECT pg_temp.ok_one(array_agg(status = 'conflict'), 'different timing: conflict')
  FROM pg_temp.tc(pg_temp.qn('t1'), pg_temp.qn('tq'), '{"n":1}', NULL, 1000);

-- a due timer and an early one: fire both ids
CREATE TEMP TABLE t2 AS SELECT * FROM pg_temp.tc(pg_temp.qn('t2'), pg_temp.qn('tq'), '{"n":2}',
  (extract(epoch FROM now() - interval '1 minute') * 1000000)::bigint, NULL);
SELECT pg_temp.ok(count(*) = 1, 'due list has the past timer')
  FROM queen.timer_due(0, 1000) d WHERE d.id = (SELECT id FROM t2);
CREATE TEMP TABLE f1 AS SELECT * FROM queen.timer_fire(ARRAY[(SELECT id FROM t1), (SELECT id FROM t2), -1]);
SELECT pg_temp.ok(string_agg(status, ',' ORDER BY status) = 'early,fired,gone', 'fire statuses: ' || coalesce(string_agg(status, ','), 'no row'))
  FROM f1;
SELECT pg_temp.ok_one(array_agg(queue = pg_temp.qn('tq')), 'fired row names its queue') FROM f1 WHERE status = 'fired';
SELECT pg_temp.ok(count(*) = 1 AND min(m.txn_id) = 'tx-' || pg_temp.qn('t2')
                  AND min(convert_from(m.payload, 'UTF8')) = '{"n":2}', 'message pushed with the timer txn id')
  FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = pg_temp.qn('tq') AND p.name = 'Default';
SELECT pg_temp.ok_one(array_agg(status = 'gone'), 'second fire: gone') FROM queen.timer_fire(ARRAY[(SELECT id FROM t2)]);
SELECT pg_temp.ok_one(array_agg(status = 'fired'), 'same definition after firing: fired')
  FROM pg_temp.tc(pg_temp.qn('t2'), pg_temp.qn('tq'), '{"n":2}',
                  (SELECT (extract(epoch FROM due_at) * 1000000)::bigint FROM t2), NULL);
SELECT pg_temp.ok_one(array_agg(fired_at IS NOT NULL AND seq IS NOT NULL AND octet_length(payload) = 0), 'fired record kept small')
  FROM queen.timer_get('', pg_temp.qn('t2'));

-- sealed payloads (the broker's envelope and keyed digest): the digest, not
-- the envelope, makes the fingerprint; the row and the message are
-- is_encrypted
CREATE FUNCTION pg_temp.tce(tid text, q text, env text, digest bytea, in_ms bigint)
RETURNS TABLE(status text, id bigint, due_at timestamptz, fired_at timestamptz) LANGUAGE sql AS $$
  SELECT * FROM queen.timer_create('', tid, q, NULL, convert_to(env, 'UTF8'), 'tx-' || tid, false,
                                   NULL, in_ms, digest) $$;
CREATE TEMP TABLE te AS SELECT * FROM pg_temp.tce(pg_temp.qn('te'), pg_temp.qn('tqe'), '{"encrypted":"AA=="}',
                                                   sha256('d1'), 0);
SELECT pg_temp.ok_one(array_agg(status = 'created'), 'sealed timer created') FROM te;
SELECT pg_temp.ok_one(array_agg(is_encrypted AND convert_from(payload, 'UTF8') = '{"encrypted":"AA=="}'), 'sealed row is_encrypted')
  FROM queen.timer_get('', pg_temp.qn('te'));
SELECT pg_temp.ok_one(array_agg(is_encrypted), 'sealed timer listed is_encrypted')
  FROM queen.timer_list('', pg_temp.qn('tqe'), NULL, NULL, 100);
SELECT pg_temp.ok_one(array_agg(status = 'exists'), 'same digest, another envelope: same timer')
  FROM pg_temp.tce(pg_temp.qn('te'), pg_temp.qn('tqe'), '{"encrypted":"BB=="}', sha256('d1'), 0);
SELECT pg_temp.ok_one(array_agg(status = 'conflict'), 'another digest: conflict')
  FROM pg_temp.tce(pg_temp.qn('te'), pg_temp.qn('tqe'), '{"encrypted":"AA=="}', sha256('d2'), 0);
SELECT pg_temp.ok_one(array_agg(status = 'conflict'), 'same bytes in plaintext: conflict')
  FROM pg_temp.tc(pg_temp.qn('te'), pg_temp.qn('tqe'), '{"encrypted":"AA=="}', NULL, 0);
SELECT pg_temp.ok_one(array_agg(NOT is_encrypted), 'plaintext timer is not is_encrypted')
  FROM queen.timer_get('', pg_temp.qn('t1'));
SELECT pg_temp.ok_one(array_agg(status = 'fired'), 'sealed timer fires')
  FROM queen.timer_fire(ARRAY[(SELECT id FROM te)]);
SELECT pg_temp.ok(count(*) = 1 AND bool_and(m.is_encrypted)
                  AND min(convert_from(m.payload, 'UTF8')) = '{"encrypted":"AA=="}', 'fired message is_encrypted')
  FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = pg_temp.qn('tqe');
SELECT pg_temp.ok_count(array_agg(NOT m.is_encrypted), 1, 'plaintext timer message is not is_encrypted')
  FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = pg_temp.qn('tq');
SELECT pg_temp.ok_one(array_agg(status = 'fired'), 'same digest after firing: fired')
  FROM pg_temp.tce(pg_temp.qn('te'), pg_temp.qn('tqe'), '{"encrypted":"CC=="}', sha256('d1'), 0);
SELECT pg_temp.ok_one(array_agg(octet_length(payload) = 0), 'fired sealed record emptied')
  FROM queen.timer_get('', pg_temp.qn('te'));

-- cancel
SELECT pg_temp.ok_one(array_agg(status = 'fired'), 'cancel after fire') FROM queen.timer_cancel('', pg_temp.qn('t2'));
SELECT pg_temp.ok(count(*) = 1, 'pending list') FROM queen.timer_list('', pg_temp.qn('tq'), NULL, NULL, 100);
SELECT pg_temp.ok_one(array_agg(status = 'cancelled'), 'cancel pending') FROM queen.timer_cancel('', pg_temp.qn('t1'));
SELECT pg_temp.ok_one(array_agg(status = 'not_found'), 'cancel again') FROM queen.timer_cancel('', pg_temp.qn('t1'));
SELECT pg_temp.ok(count(*) = 0, 'pending list empty') FROM queen.timer_list('', pg_temp.qn('tq'), NULL, NULL, 100);

-- sweep of fired records
SELECT pg_temp.ok(queen.timer_sweep(1000, 3600) = 0, 'young fired record kept');
SELECT pg_temp.ok(queen.timer_sweep(1000, 0) >= 1, 'old fired record swept');
SELECT pg_temp.ok(count(*) = 0, 'swept record gone') FROM queen.timer_get('', pg_temp.qn('t2'));
