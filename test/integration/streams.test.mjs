//  test/integration/streams.test.mjs - the streaming SDK's state endpoints
//  (contract §3.22) over plain HTTP: registration (fresh, same hash,
//  mismatch 409, reset), cycles that commit state ops, sink pushes and the
//  source ack together or not at all (200 success:false with the
//  contract's error texts), state reads with their filters, bad input.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, http, psql, pushItems, popMessages } from './lib.mjs';

let broker;
let U;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

before(async () => {
    broker = await startBroker();
    U = broker.url;
});

after(async () => {
    if (broker)
        await broker.stop();
});

function post (path, body) {
    return http(`${U}${path}`, { method: 'POST', body });
}

async function register (body, status = 200) {
    const res = await post('/streams/v1/queries', body);
    assert.equal(res.status, status, res.raw);
    return res.body;
}

const push = (items) => pushItems(U, items);

const pop = (queue, params = {}) => popMessages(U, queue, { batch: 10, ...params });

async function cycle (body) {
    const res = await post('/streams/v1/cycle', body);
    assert.equal(res.status, 200, res.raw);
    return res.body;
}

async function state (body) {
    const res = await post('/streams/v1/state/get', body);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true, res.raw);
    return res.body.rows;
}

async function sql (text) {
    return psql(text, { db: broker.db });
}

//  A registered query and a source partition holding n leased messages.
async function setup (name, n, extra = {}) {
    const q = await register({ name, source_queue: `${name}.src`, sink_queue: `${name}.sink`, config_hash: 'h1' });
    await push(Array.from({ length: n }, (_, i) => ({ queue: `${name}.src`, partition: 'p', payload: { i } })));
    const msgs = await pop(`${name}.src`, extra);
    assert.equal(msgs.length, n);
    return { qid: q.query_id, pid: msgs[0].partitionId, msgs, last: msgs[n - 1] };
}

test('registration: fresh, same hash, mismatch 409, reset', async () => {
    const a = await register({ name: 'reg.q', source_queue: 'reg.src', config_hash: 'sha256:aa', sink_queue: '' });
    assert.deepEqual(Object.keys(a).sort(), ['config_hash', 'fresh', 'name', 'query_id', 'reset', 'success']);
    assert.equal(a.success, true);
    assert.match(a.query_id, UUID);
    assert.equal(a.name, 'reg.q');
    assert.equal(a.config_hash, 'sha256:aa');
    assert.equal(a.fresh, true);
    assert.equal(a.reset, false);
    assert.equal(await sql(`SELECT coalesce(sink_queue, 'NULL') FROM queen_streams.queries WHERE name = 'reg.q'`), 'NULL');

    const b = await register({ name: 'reg.q', source_queue: 'reg.src2', config_hash: 'sha256:aa', sink_queue: 'reg.sink' });
    assert.equal(b.query_id, a.query_id);
    assert.equal(b.fresh, false);
    assert.equal(b.reset, false);
    assert.equal(await sql(`SELECT source_queue || '/' || sink_queue FROM queen_streams.queries WHERE name = 'reg.q'`),
                 'reg.src2/reg.sink');

    //  State exists; a different hash without reset is refused and changes nothing.
    const pid = '00000002-0000-8000-8000-000000000999';
    const c1 = await cycle({ query_id: a.query_id, partition_id: pid,
                             state_ops: [{ type: 'upsert', key: 'k', value: 1 }] });
    assert.equal(c1.success, true, JSON.stringify(c1));
    const m = await register({ name: 'reg.q', source_queue: 'reg.src', config_hash: 'sha256:bb' }, 409);
    assert.equal(m.success, false);
    assert.equal(m.query_id, a.query_id);
    assert.equal(m.name, 'reg.q');
    assert.match(m.error, /config_hash mismatch/);
    assert.match(m.error, /reset:true/);
    assert.equal((await state({ query_id: a.query_id, partition_id: pid })).length, 1);

    //  reset: true with the new hash discards the state.
    const r = await register({ name: 'reg.q', source_queue: 'reg.src', config_hash: 'sha256:bb', reset: true });
    assert.equal(r.success, true);
    assert.equal(r.query_id, a.query_id);
    assert.equal(r.fresh, false);
    assert.equal(r.reset, true);
    assert.deepEqual(await state({ query_id: a.query_id, partition_id: pid }), []);
    assert.equal((await register({ name: 'reg.q', source_queue: 'reg.src', config_hash: 'sha256:bb' })).reset, false);

    //  The SDK's harness deletes queries directly: state goes with them, and
    //  the name registers fresh again.
    await cycle({ query_id: a.query_id, partition_id: pid, state_ops: [{ type: 'upsert', key: 'k', value: 2 }] });
    await sql(`DELETE FROM queen_streams.queries WHERE name = 'reg.q'`);
    assert.equal(await sql(`SELECT count(*) FROM queen_streams.state WHERE query_id = '${a.query_id}'`), '0');
    const f = await register({ name: 'reg.q', source_queue: 'reg.src', config_hash: 'sha256:bb' });
    assert.equal(f.fresh, true);
    assert.notEqual(f.query_id, a.query_id);
});

test('registration: bad input', async () => {
    const cases = [
        ['', 400, 'Empty request body'],
        ['[1,2]', 400, 'request body must be a JSON object'],
        ['"x"', 400, 'request body must be a JSON object'],
        [{ source_queue: 's', config_hash: 'h' }, 400, 'name is required'],
        [{ name: '', source_queue: 's', config_hash: 'h' }, 400, 'name is required'],
        [{ name: 'n', config_hash: 'h' }, 400, 'source_queue is required'],
        [{ name: 'n', source_queue: 7, config_hash: 'h' }, 400, 'source_queue is required'],
        [{ name: 'n', source_queue: 's' }, 400, 'config_hash is required'],
        [{ name: 'n', source_queue: 's', config_hash: 'h', reset: 'yes' }, 400, 'reset must be a boolean'],
        [{ name: 'n', source_queue: 's', config_hash: 'h', sink_queue: 5 }, 400, /sink_queue/],
        [{ name: 'x'.repeat(300), source_queue: 's', config_hash: 'h' }, 400, /name must be at most 255 bytes/],
    ];
    for (const [body, status, msg] of cases) {
        const res = await post('/streams/v1/queries', body);
        assert.equal(res.status, status, `${JSON.stringify(body)}: ${res.raw}`);
        if (msg instanceof RegExp)
            assert.match(res.body.error, msg);
        else if (msg.startsWith('Empty'))
            assert.equal(res.body.error, msg);
        else
            assert.equal(res.body.error, msg);
    }
    assert.equal(await sql(`SELECT count(*) FROM queen_streams.queries WHERE name = 'n'`), '0');
});

test('a cycle commits state ops, sink pushes and the source ack together', async () => {
    const { qid, pid, msgs, last } = await setup('cyc', 3);
    const res = await cycle({
        query_id: qid, partition_id: pid, consumer_group: '__QUEUE_MODE__',
        state_ops: [
            { type: 'upsert', key: 'win:1', value: { windowEnd: 1000, sum: 3 } },
            { type: 'upsert', key: 'tmp', value: null },
            { type: 'delete', key: 'tmp' },
            { type: 'upsert', key: 'win:2', value: { windowEnd: 2000 } },
        ],
        push_items: [
            { queue: 'cyc.sink', payload: { out: 1 }, transactionId: 'cyc-out-1' },
            { queue: 'cyc.sink', partition: 'p2', payload: { out: 2 }, traceId: '11111111-2222-4333-8444-555555555555' },
        ],
        ack: { transactionId: last.transactionId, leaseId: last.leaseId, status: 'completed', count: msgs.length },
    });
    assert.equal(res.success, true, JSON.stringify(res));
    assert.equal(res.query_id, qid);
    assert.equal(res.partition_id, pid);
    assert.equal(res.queueName, 'cyc.src');
    assert.equal(res.state_ops_applied, 4);
    assert.deepEqual(res.ack_result, { success: true, count: 3, lease_released: true, dlq: false });
    assert.equal(res.push_results.length, 2);
    const [r0, r1] = res.push_results;
    assert.equal(r0.index, 0);
    assert.equal(r0.transaction_id, 'cyc-out-1');
    assert.equal(r0.status, 'queued');
    assert.match(r0.message_id, UUID);
    assert.match(r0.partition_id, UUID);
    assert.equal(r0.trace_id, null);
    assert.equal(r0.queueName, 'cyc.sink');
    assert.equal(r1.index, 1);
    assert.equal(r1.transaction_id, r1.message_id);
    assert.equal(r1.trace_id, '11111111-2222-4333-8444-555555555555');

    //  All three effects are visible.
    const rows = await state({ query_id: qid, partition_id: pid });
    assert.deepEqual(rows.map((r) => r.key), ['win:1', 'win:2']);
    assert.deepEqual(rows[0].value, { windowEnd: 1000, sum: 3 });
    assert.match(rows[0].updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/);
    const sink = await pop('cyc.sink', { partitions: 5 });
    assert.deepEqual(sink.map((m) => m.data).sort((a, b) => a.out - b.out), [{ out: 1 }, { out: 2 }]);
    assert.deepEqual(await pop('cyc.src'), [], 'the source partition is consumed');

    //  A sink push repeated by a retried cycle deduplicates.
    const again = await cycle({ query_id: qid, partition_id: pid,
                                push_items: [{ queue: 'cyc.sink', payload: { out: 1 }, transactionId: 'cyc-out-1' }] });
    assert.equal(again.push_results[0].status, 'duplicate');
    assert.equal(again.push_results[0].message_id, r0.message_id);
    assert.equal(again.ack_result, null);
    assert.equal(again.state_ops_applied, 0);
});

test('a failing cycle rolls everything back and answers 200 success:false', async () => {
    const { qid, pid, last } = await setup('rb', 2);
    const before = await state({ query_id: qid, partition_id: pid });
    const sinkCount = async () => sql(`SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'rb.sink'`);
    const body = (ack) => ({
        query_id: qid, partition_id: pid,
        state_ops: [{ type: 'upsert', key: 'k', value: { v: 1 } }],
        push_items: [{ queue: 'rb.sink', payload: { out: 1 } }],
        ack,
    });
    const fails = [
        [{ transactionId: last.transactionId, leaseId: '00000000-0000-4000-8000-000000000000' }, 'Invalid or expired lease'],
        [{ transactionId: 'no-such-message' }, 'Message not found'],
        [{ leaseId: last.leaseId }, 'ack.transactionId is required'],
        [{ transactionId: last.transactionId, status: 'maybe' }, 'Unknown ack.status: maybe'],
    ];
    for (const [ack, error] of fails) {
        const res = await cycle(body(ack));
        assert.equal(res.success, false, JSON.stringify(res));
        assert.equal(res.error, error);
    }
    const unknown = await cycle({ query_id: qid, partition_id: pid,
                                  state_ops: [{ type: 'upsert', key: 'a', value: 1 }, { type: 'merge', key: 'b', value: 2 }],
                                  push_items: [{ queue: 'rb.sink', payload: 1 }] });
    assert.equal(unknown.success, false);
    assert.equal(unknown.error, 'Unknown state_op type: merge');
    //  A failure raised after the state ops and the sink push were written
    //  in the same transaction (the sink queue is full) undoes them too.
    const cfg = await post('/api/v1/configure', { queue: 'rb.full', options: { maxSize: 1 } });
    assert.equal(cfg.status, 200, cfg.raw);
    await push([{ queue: 'rb.full', payload: 0 }]);
    const full = await cycle({ query_id: qid, partition_id: pid,
                               state_ops: [{ type: 'upsert', key: 'k', value: { v: 2 } }],
                               push_items: [{ queue: 'rb.sink', payload: 1 }, { queue: 'rb.full', payload: 1 }],
                               ack: { transactionId: last.transactionId, leaseId: last.leaseId } });
    assert.equal(full.success, false);
    assert.match(full.error, /rb\.full is full/);

    assert.deepEqual(await state({ query_id: qid, partition_id: pid }), before);
    assert.equal(await sinkCount(), '0');
    //  The ack did not happen either: the lease is still held, and a good
    //  cycle with it succeeds now.
    const ok = await cycle(body({ transactionId: last.transactionId, leaseId: last.leaseId }));
    assert.equal(ok.success, true, JSON.stringify(ok));
    assert.equal(ok.ack_result.lease_released, true);
    assert.equal(await sinkCount(), '1');
});

test('release_lease false keeps the lease; failed dead-letters the message', async () => {
    const { qid, pid, msgs } = await setup('rel', 3);
    const keep = await cycle({ query_id: qid, partition_id: pid,
                               ack: { transactionId: msgs[0].transactionId, leaseId: msgs[0].leaseId }, release_lease: false });
    assert.equal(keep.success, true, JSON.stringify(keep));
    assert.equal(keep.ack_result.lease_released, false);
    assert.equal(keep.ack_result.count, 1);
    assert.deepEqual(await pop('rel.src'), [], 'still leased');
    const fail = await cycle({ query_id: qid, partition_id: pid,
                               ack: { transactionId: msgs[2].transactionId, leaseId: msgs[2].leaseId, status: 'failed',
                                      error: 'window exploded' } });
    assert.equal(fail.success, true, JSON.stringify(fail));
    assert.deepEqual(fail.ack_result, { success: true, count: 1, lease_released: true, dlq: true });
    const dlq = await sql(`SELECT d.error || '|' || d.consumer_group FROM queen.dead_letters d
        JOIN queen.queues q ON q.id = d.queue_id WHERE q.name = 'rel.src'`);
    assert.equal(dlq, 'window exploded|__QUEUE_MODE__');
    assert.deepEqual(await pop('rel.src'), [], 'cursor at the dead-lettered message');
    //  Default text.
    const { qid: q2, pid: p2, last } = await setup('rel2', 1);
    await cycle({ query_id: q2, partition_id: p2, ack: { transactionId: last.transactionId, status: 'dlq' } });
    assert.equal(await sql(`SELECT d.error FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id
        WHERE q.name = 'rel2.src'`), 'Streaming cycle reported failure');
});

test('a named consumer group acks its own cursor', async () => {
    const name = 'grp';
    const q = await register({ name, source_queue: `${name}.src`, config_hash: 'h' });
    await push([1, 2].map((i) => ({ queue: `${name}.src`, payload: { i } })));
    const msgs = await pop(`${name}.src`, { consumerGroup: 'agg' });
    assert.equal(msgs.length, 2);
    const res = await cycle({ query_id: q.query_id, partition_id: msgs[0].partitionId, consumer_group: 'agg',
                              ack: { transactionId: msgs[1].transactionId, leaseId: msgs[1].leaseId, count: 2 } });
    assert.equal(res.success, true, JSON.stringify(res));
    assert.deepEqual(await pop(`${name}.src`, { consumerGroup: 'agg' }), []);
    //  Queue mode has not consumed anything.
    assert.equal((await pop(`${name}.src`)).length, 2);
});

test('concurrent cycles on one (query, partition) all commit', async () => {
    const q = await register({ name: 'conc', source_queue: 'conc.src', config_hash: 'h' });
    const pid = '00000002-0000-8000-8000-000000000777';
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => cycle({
        query_id: q.query_id, partition_id: pid,
        state_ops: [{ type: 'upsert', key: `k${String(i).padStart(2, '0')}`, value: i }, { type: 'upsert', key: 'last', value: i }],
        push_items: [{ queue: 'conc.sink', payload: i, transactionId: `conc-${i}` }],
    })));
    assert.ok(results.every((r) => r.success), JSON.stringify(results.find((r) => !r.success)));
    const rows = await state({ query_id: q.query_id, partition_id: pid });
    assert.equal(rows.length, 13);
    assert.equal(await sql(`SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = 'conc.sink'`), '12');
});

test('state/get filters: keys, key_prefix, ripe_at_or_before, combined; sorted by key', async () => {
    const q = await register({ name: 'sg', source_queue: 'sg.src', config_hash: 'h' });
    const pid = '00000002-0000-8000-8000-000000000555';
    const other = '00000002-0000-8000-8000-000000000556';
    await cycle({ query_id: q.query_id, partition_id: pid, state_ops: [
        { type: 'upsert', key: 'win:c', value: { windowEnd: 3000 } },
        { type: 'upsert', key: 'win:a', value: { windowEnd: 1000, sum: 1 } },
        { type: 'upsert', key: 'win:b', value: { windowEnd: 2000 } },
        { type: 'upsert', key: 'win:s', value: { windowEnd: '500' } },
        { type: 'upsert', key: 'meta', value: [1, 2] },
    ] });
    await cycle({ query_id: q.query_id, partition_id: other, state_ops: [{ type: 'upsert', key: 'win:a', value: 9 }] });
    const keys = (rows) => rows.map((r) => r.key);
    const base = { query_id: q.query_id, partition_id: pid };
    assert.deepEqual(keys(await state(base)), ['meta', 'win:a', 'win:b', 'win:c', 'win:s']);
    assert.deepEqual(keys(await state({ ...base, keys: [] })), ['meta', 'win:a', 'win:b', 'win:c', 'win:s']);
    assert.deepEqual(keys(await state({ ...base, keys: ['win:b', 'nope', 'meta'] })), ['meta', 'win:b']);
    assert.deepEqual(keys(await state({ ...base, key_prefix: 'win:' })), ['win:a', 'win:b', 'win:c', 'win:s']);
    assert.deepEqual(keys(await state({ ...base, ripe_at_or_before: 2000 })), ['win:a', 'win:b']);
    assert.deepEqual(keys(await state({ ...base, ripe_at_or_before: 1999.5 })), ['win:a']);
    assert.deepEqual(keys(await state({ ...base, key_prefix: 'win:', ripe_at_or_before: 2500, keys: ['win:b', 'win:c'] })),
                     ['win:b']);
    const rows = await state({ ...base, keys: ['win:a', 'meta'] });
    assert.deepEqual(rows[0].value, [1, 2]);
    assert.deepEqual(rows[1].value, { windowEnd: 1000, sum: 1 });
    assert.deepEqual(keys(await state({ query_id: q.query_id, partition_id: other })), ['win:a']);
    //  Unknown query: no rows.
    assert.deepEqual(await state({ query_id: '6d0f2c4e-1111-4222-8333-444455556666', partition_id: pid }), []);
});

test('cycle and state/get: bad input', async () => {
    const q = await register({ name: 'bad', source_queue: 'bad.src', config_hash: 'h' });
    const pid = '00000002-0000-8000-8000-000000000444';
    const ok = { query_id: q.query_id, partition_id: pid };
    const cycles = [
        [{ partition_id: pid }, 'query_id is required'],
        [{ query_id: 5, partition_id: pid }, 'query_id is required'],
        [{ query_id: q.query_id }, 'partition_id is required'],
        [{ query_id: 'nope', partition_id: pid }, /query_id must be a UUID/],
        [{ ...ok, state_ops: {} }, /state_ops must be an array/],
        [{ ...ok, state_ops: [5] }, /state_ops\[0\] must be an object/],
        [{ ...ok, state_ops: [{ type: 'upsert', value: 1 }] }, /state_ops\[0\]\.key/],
        [{ ...ok, state_ops: [{ type: 'upsert', key: 'k' }] }, /state_ops\[0\]\.value is required/],
        [{ ...ok, state_ops: [{ type: 7, key: 'k' }] }, /state_ops\[0\]\.type/],
        [{ ...ok, push_items: {} }, /push_items must be an array/],
        [{ ...ok, push_items: [{ payload: 1 }] }, /Queue must be a string/],
        [{ ...ok, push_items: [{ queue: 'q', payload: 1, delayMs: -5 }] }, /push_items\[0\]\.delayMs/],
        [{ ...ok, ack: 'x' }, /ack must be an object/],
        [{ ...ok, ack: { transactionId: 't', count: -1 } }, /ack\.count/],
        [{ ...ok, ack: { transactionId: 't', leaseId: 'nope' } }, /ack\.leaseId/],
        [{ ...ok, release_lease: 'no' }, /release_lease must be a boolean/],
        ['[]', 'request body must be a JSON object'],
        ['', 'Empty request body'],
    ];
    for (const [body, msg] of cycles) {
        const res = await post('/streams/v1/cycle', body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.raw}`);
        if (msg instanceof RegExp)
            assert.match(res.body.error, msg, JSON.stringify(body));
        else
            assert.equal(res.body.error, msg);
    }
    assert.deepEqual(await state(ok), [], 'nothing was written');
    const gets = [
        [{ partition_id: pid }, 'query_id is required'],
        [{ query_id: q.query_id, partition_id: null }, 'partition_id is required'],
        [{ ...ok, keys: 'k' }, /keys must be an array/],
        [{ ...ok, keys: [1] }, /keys\[0\]/],
        [{ ...ok, key_prefix: 3 }, /key_prefix/],
        [{ ...ok, ripe_at_or_before: '100' }, /ripe_at_or_before must be a number/],
    ];
    for (const [body, msg] of gets) {
        const res = await post('/streams/v1/state/get', body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.raw}`);
        if (msg instanceof RegExp)
            assert.match(res.body.error, msg);
        else
            assert.equal(res.body.error, msg);
    }
    const notUuid = await post('/streams/v1/state/get', { query_id: 'x', partition_id: pid });
    assert.equal(notUuid.status, 400);
    assert.deepEqual(notUuid.body, { success: false, error: 'query_id must be a UUID', rows: [] });
    //  A cycle for a query that does not exist fails like any database error.
    const gone = await cycle({ query_id: '6d0f2c4e-1111-4222-8333-444455556666', partition_id: pid });
    assert.equal(gone.success, false);
    assert.match(gone.error, /Query not found/);
});
