//  test/integration/delay.test.mjs - per-message delayed delivery over
//  plain HTTP: push items (and transaction push operations) accept
//  delayMs or deliverAt; the message keeps its place in its partition's
//  order (later messages wait behind it), is not delivered before its
//  instant, and a parked long-poll wakes at that instant.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, http, psql, sleep, waitFor, request, popMessages, ackBatch, ackFor } from './lib.mjs';

let broker;
let U;

before(async () => {
    broker = await startBroker();
    U = broker.url;
});

after(async () => {
    if (broker)
        await broker.stop();
});

//  POST /api/v1/push; expects `status`. Resolves to the body.
async function push (items, status = 201) {
    return (await request(U, '/api/v1/push', { method: 'POST', body: { items }, expect: status })).body;
}

const pop = (queue, params = {}, partition) => popMessages(U, queue, { batch: 10, ...params, partition });

async function ackAll (messages) {
    assert.ok(messages.length > 0, 'nothing to ack');
    await ackBatch(U, messages.map((m) => ackFor(m)));
}

test('delayMs: not delivered before, then in order with the messages behind it', async () => {
    const Q = 'dl.ms';
    const t0 = Date.now();
    await push([
        { queue: Q, payload: { v: 1 }, delayMs: 1500 },
        { queue: Q, payload: { v: 2 } },
    ]);
    //  The delayed head blocks its partition: nothing yet, not even v 2.
    assert.deepEqual(await pop(Q), []);
    //  Another partition is not affected.
    await push([{ queue: Q, partition: 'other', payload: { v: 9 } }]);
    assert.deepEqual((await pop(Q)).map((m) => m.data.v), [9]);
    let got = [];
    while (got.length === 0 && Date.now() - t0 < 15000) {
        got = await pop(Q, {}, 'Default');
        if (got.length === 0)
            await sleep(100);
    }
    assert.ok(Date.now() - t0 >= 1450, `delivered after ${Date.now() - t0} ms`);
    assert.deepEqual(got.map((m) => m.data.v), [1, 2]);
});

test('deliverAt: an absolute instant; one in the past means now', async () => {
    const Q = 'dl.at';
    const at = new Date(Date.now() + 1200);
    await push([{ queue: Q, payload: { v: 1 }, deliverAt: at.toISOString() }]);
    assert.deepEqual(await pop(Q), []);
    const stored = await psql(`SELECT (extract(epoch FROM m.not_before) * 1000)::bigint FROM queen.messages m
        JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
        WHERE q.name = '${Q}'`, { db: broker.db });
    assert.ok(Math.abs(Number(stored) - at.getTime()) <= 1, `stored ${stored}, asked ${at.getTime()}`);
    await push([{ queue: 'dl.past', payload: { v: 2 }, deliverAt: '2001-01-01T00:00:00Z' }]);
    assert.deepEqual((await pop('dl.past')).map((m) => m.data.v), [2]);
    //  Other ISO forms: an offset, no zone (UTC).
    await push([{ queue: 'dl.past2', payload: { v: 3 }, deliverAt: '2001-01-01T01:00:00+01:00' },
                { queue: 'dl.past2', payload: { v: 4 }, deliverAt: '2001-01-01T00:00:00' }]);
    assert.deepEqual((await pop('dl.past2')).map((m) => m.data.v), [3, 4]);
});

test('order is kept behind a delayed message in the middle', async () => {
    const Q = 'dl.mid';
    await push([
        { queue: Q, payload: { v: 1 } },
        { queue: Q, payload: { v: 2 }, delayMs: 1000 },
        { queue: Q, payload: { v: 3 } },
    ]);
    const first = await pop(Q);
    assert.deepEqual(first.map((m) => m.data.v), [1]);
    await ackAll(first);
    assert.deepEqual(await pop(Q), []);
    await sleep(1100);
    assert.deepEqual((await pop(Q)).map((m) => m.data.v), [2, 3]);
});

test('a parked long-poll wakes at the due instant', async () => {
    const Q = 'dl.poll';
    //  The queue and its consumer exist first: the push writes the ready
    //  row with the message's instant, and the pop reads it as next_due.
    const cfg = await http(`${U}/api/v1/configure`, { method: 'POST', body: { queue: Q } });
    assert.equal(cfg.status, 200, cfg.raw);
    assert.deepEqual(await pop(Q), []);
    const t0 = Date.now();
    await push([{ queue: Q, payload: { v: 1 }, delayMs: 2000 }]);
    const res = await http(`${U}/api/v1/pop/queue/${Q}?wait=true&timeout=20000`, { timeoutMs: 60000 });
    const took = Date.now() - t0;
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.messages.map((m) => m.data.v), [1]);
    //  Not before the instant; well before the long-poll's own timeout
    //  (the due timer, not the 2-5 s safety net or the deadline, woke it).
    assert.ok(took >= 1950, `woke after ${took} ms`);
    assert.ok(took < 4500, `woke after ${took} ms`);
});

test('a transaction push accepts delayMs / deliverAt', async () => {
    const Q = 'dl.txn';
    const res = await http(`${U}/api/v1/transaction`, {
        method: 'POST',
        body: { operations: [{ type: 'push', items: [{ queue: Q, payload: { v: 1 }, delayMs: 800 },
                                                     { queue: Q, partition: 'p2', payload: { v: 2 } }] }] },
    });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true, res.raw);
    assert.deepEqual((await pop(Q, { partitions: 5 })).map((m) => m.data.v), [2]);
    await sleep(900);
    assert.deepEqual((await pop(Q, { partitions: 5 })).map((m) => m.data.v), [1]);
    const bad = await http(`${U}/api/v1/transaction`, {
        method: 'POST',
        body: { operations: [{ type: 'push', items: [{ queue: Q, payload: 1, delayMs: 'soon' }] }] },
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /delayMs/);
});

test('bad values are 400s naming the field; nothing is stored', async () => {
    const Q = 'dl.bad';
    const cases = [
        [{ delayMs: -1 }, /items\[0\]\.delayMs/],
        [{ delayMs: 1.5 }, /items\[0\]\.delayMs/],
        [{ delayMs: '100' }, /items\[0\]\.delayMs/],
        [{ delayMs: 31536000001 }, /items\[0\]\.delayMs/],
        [{ deliverAt: 'tomorrow' }, /items\[0\]\.deliverAt/],
        [{ deliverAt: 12345 }, /items\[0\]\.deliverAt/],
        [{ deliverAt: new Date(Date.now() + 400 * 86400000).toISOString() }, /items\[0\]\.deliverAt/],
        [{ delayMs: 10, deliverAt: new Date().toISOString() }, /delayMs and deliverAt/],
    ];
    for (const [extra, re] of cases) {
        const body = await push([{ queue: Q, payload: 1, ...extra }], 400);
        assert.match(body.error, re, JSON.stringify(extra));
    }
    //  null means absent; 0 means no delay.
    await push([{ queue: Q, payload: 1, delayMs: null, deliverAt: null }, { queue: Q, payload: 2, delayMs: 0 }]);
    assert.deepEqual((await pop(Q)).map((m) => m.data), [1, 2]);
});

test('a delayed push that goes through the spool keeps its delay when replayed', async () => {
    const Q = 'dl.spool';
    const maint = (enabled) => request(U, '/api/v1/system/maintenance', { method: 'POST', body: { enabled } });
    assert.equal((await maint(true)).status, 200);
    //  The flag reaches the write path as an event: wait until pushes buffer.
    await waitFor(async () => (await push([{ queue: `${Q}-probe`, payload: 0 }]))[0].status === 'buffered', 10000, 50);
    const t0 = Date.now();
    const res = await push([{ queue: Q, payload: { v: 1 }, delayMs: 2500, transactionId: 'dl-spool-1' }]);
    assert.equal(res[0].status, 'buffered');
    assert.equal((await maint(false)).status, 200);
    //  Replayed into PostgreSQL, still not deliverable before its instant.
    let stored = '0';
    for (let i = 0; i < 100 && stored === '0'; i++) {
        stored = await psql(`SELECT count(*) FROM queen.messages WHERE txn_id = 'dl-spool-1'`, { db: broker.db });
        if (stored === '0')
            await sleep(50);
    }
    assert.equal(stored, '1');
    const early = await pop(Q);
    const elapsed = Date.now() - t0;
    assert.ok(early.length === 0 || elapsed >= 2500, `delivered ${elapsed} ms after the push, before its delayMs of 2500`);
    await sleep(Math.max(0, 2700 - (Date.now() - t0)));
    const got = early.length ? early : await pop(Q);
    assert.deepEqual(got.map((m) => m.data.v), [1]);
});
