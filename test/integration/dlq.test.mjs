//  test/integration/dlq.test.mjs - the dead-letter routes: listing with
//  filters, paging and total (spec 3.16), and the replay extension
//  (POST /api/v1/dlq/requeue, DELETE /api/v1/dlq), over plain HTTP.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
    startBroker, http, sleep, settle, configureQueue, pushItems, popPath, ack as ackRoute, ackFor, dlqList,
} from './lib.mjs';

let broker;
let url;

const TS_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function get (path) {
    return http(`${url}${path}`);
}

async function configure (queue, options = {}) {
    await configureQueue(url, queue, options);
}

const push = (items) => pushItems(url, items);
const pop = (path, query = '') => popPath(url, path, query);

const ack = (msg, status, extra = {}) =>
    ackRoute(url, ackFor(msg, { status, consumerGroup: msg.consumerGroup, ...extra }), { success: true });

//  Pops one message and fails it until it is dead-lettered (retryLimit
//  failures are redelivered first). Returns the attempts made.
async function failUntilDead (path, query, error) {
    for (let attempt = 1; attempt <= 10; attempt++) {
        const got = await pop(path, query);
        assert.equal(got.length, 1, `attempt ${attempt}`);
        const r = await ack(got[0], 'failed', { error });
        if (r.dlq)
            return attempt;
    }
    throw new Error('never dead-lettered');
}

const dlq = (query) => dlqList(url, query);

before(async () => {
    broker = await startBroker();
    url = broker.url;
    await settle(url);
});

after(async () => {
    await broker?.stop();
});

test('failed acks with retryLimit dead-letter; the DLQ lists them with filters, paging and total', async () => {
    await configure('dq.a', { retryLimit: 1, retryDelay: 0 });
    await configure('dq.b', { retryLimit: 0, retryDelay: 0 });
    await push([
        { queue: 'dq.a', partition: 'p1', payload: { k: 'a1' }, transactionId: 'a1' },
        { queue: 'dq.a', partition: 'p2', payload: { k: 'a2' }, transactionId: 'a2' },
        { queue: 'dq.a', partition: 'p3', payload: { k: 'a3' }, transactionId: 'a3' },
        { queue: 'dq.b', payload: { k: 'b1' }, transactionId: 'b1' },
    ]);
    //  retryLimit 1: fail, redeliver, fail -> DLQ (retryCount 1)
    assert.equal(await failUntilDead('dq.a/partition/p1', '', 'boom p1'), 2);
    const mid = new Date();
    await sleep(20);
    assert.equal(await failUntilDead('dq.a/partition/p2', '', 'boom p2'), 2);
    //  A named group dead-letters p3 at once with status "dlq"
    const g = await pop('dq.a/partition/p3', '&consumerGroup=g1');
    assert.equal((await ack(g[0], 'dlq', { error: 'explicit' })).dlq, true);
    //  retryLimit 0: the first failure dead-letters
    assert.equal(await failUntilDead('dq.b', '', 'boom b'), 1);

    let body = await dlq('queue=dq.a');
    assert.equal(body.total, 3);
    assert.deepEqual(body.pagination, { limit: 100, offset: 0 });
    //  Newest failure first
    assert.deepEqual(body.messages.map((m) => m.transactionId), ['a3', 'a2', 'a1']);
    const e = body.messages.find((m) => m.transactionId === 'a1');
    assert.deepEqual(Object.keys(e), ['id', 'dlqId', 'transactionId', 'partitionId', 'queue', 'partition',
        'consumerGroup', 'errorMessage', 'retryCount', 'data', 'producerSub', 'createdAt', 'failedAt']);
    assert.equal(e.queue, 'dq.a');
    assert.equal(e.partition, 'p1');
    assert.equal(e.consumerGroup, '__QUEUE_MODE__');
    assert.equal(e.errorMessage, 'boom p1');
    assert.equal(e.retryCount, 1);
    assert.deepEqual(e.data, { k: 'a1' });
    assert.equal(e.producerSub, null);
    assert.match(e.createdAt, TS_MS);
    assert.match(e.failedAt, TS_MS);
    assert.equal(body.messages.find((m) => m.transactionId === 'a3').consumerGroup, 'g1');

    //  The message read route sees the DLQ entry
    const msg = await get(`/api/v1/messages/${e.partitionId}/a1`);
    assert.equal(msg.body.status, 'dead_letter');
    assert.equal(msg.body.errorMessage, 'boom p1');
    assert.equal(msg.body.retryCount, 1);

    //  Filters
    assert.deepEqual((await dlq('queue=dq.a&consumerGroup=g1')).messages.map((m) => m.transactionId), ['a3']);
    assert.deepEqual((await dlq('queue=dq.a&consumerGroup=__QUEUE_MODE__')).messages.map((m) => m.transactionId),
                     ['a2', 'a1']);
    assert.deepEqual((await dlq('queue=dq.a&partition=p2')).messages.map((m) => m.transactionId), ['a2']);
    assert.deepEqual((await dlq(`queue=dq.a&to=${encodeURIComponent(mid.toISOString())}`)).messages
                     .map((m) => m.transactionId), ['a1']);
    assert.deepEqual((await dlq(`queue=dq.a&from=${encodeURIComponent(mid.toISOString())}`)).messages
                     .map((m) => m.transactionId), ['a3', 'a2']);
    assert.equal((await dlq('queue=dq.b')).total, 1);
    assert.equal((await dlq('')).total, 4);                    //  all queues
    assert.equal((await dlq('queue=nope')).total, 0);

    //  Paging: limit caps the list, total counts all matches
    body = await dlq('queue=dq.a&limit=2');
    assert.deepEqual(body.messages.map((m) => m.transactionId), ['a3', 'a2']);
    assert.equal(body.total, 3);
    body = await dlq('queue=dq.a&limit=2&offset=2');
    assert.deepEqual(body.messages.map((m) => m.transactionId), ['a1']);
    assert.deepEqual(body.pagination, { limit: 2, offset: 2 });
    assert.equal(body.total, 3);

    //  Stats count them
    const q = await get('/api/v1/resources/queues/dq.a');
    assert.equal(q.body.totals.deadLetter, 3);
    assert.equal(q.body.totals.failed, 3);
});

test('requeue replays dead letters as new messages and removes the entries', async () => {
    await configure('rq.q', { retryLimit: 0, retryDelay: 0 });
    await push([
        { queue: 'rq.q', payload: { n: 1 }, transactionId: 'r1' },
        { queue: 'rq.q', payload: { n: 2 }, transactionId: 'r2' },
        { queue: 'rq.q', payload: { n: 3 } },
    ]);
    const got = await pop('rq.q', '&batch=3');
    assert.equal(got.length, 3);
    for (const m of got)
        await ack(m, 'failed', { error: 'bad' });
    let body = await dlq('queue=rq.q');
    assert.equal(body.total, 3);
    //  The queue is drained: nothing left to consume
    assert.deepEqual(await pop('rq.q'), []);

    //  Requeue one by its message id
    const r1 = body.messages.find((m) => m.transactionId === 'r1');
    let res = await http(`${url}/api/v1/dlq/requeue`, { method: 'POST', body: { queue: 'rq.q', ids: [r1.id] } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.requeued, 1);
    assert.equal(res.body.messages[0].transactionId, `r1:requeue:${parseInt(r1.dlqId.slice(-12), 16)}`);
    body = await dlq('queue=rq.q');
    assert.equal(body.total, 2);
    assert.ok(!body.messages.some((m) => m.transactionId === 'r1'));
    //  Consumable again, same payload, a new id and transactionId
    let again = await pop('rq.q');
    assert.equal(again.length, 1);
    assert.deepEqual(again[0].data, { n: 1 });
    assert.notEqual(again[0].id, r1.id);
    assert.ok(again[0].transactionId.startsWith('r1:requeue:'));
    await ack(again[0], 'completed');

    //  Requeue the rest by dead-letter id and by omission (all of the queue)
    const r2 = body.messages.find((m) => m.transactionId === 'r2');
    res = await http(`${url}/api/v1/dlq/requeue`, { method: 'POST', body: { queue: 'rq.q', ids: [r2.dlqId] } });
    assert.equal(res.body.requeued, 1);
    res = await http(`${url}/api/v1/dlq/requeue`, { method: 'POST', body: { queue: 'rq.q' } });
    assert.equal(res.body.requeued, 1);
    assert.equal((await dlq('queue=rq.q')).total, 0);
    again = await pop('rq.q', '&batch=10');
    assert.deepEqual(again.map((m) => m.data), [{ n: 2 }, { n: 3 }]);
    //  Dead-letter a replayed message again: it can be replayed again
    await ack(again[0], 'failed', { error: 'still bad' });
    await ack(again[1], 'completed');
    body = await dlq('queue=rq.q');
    assert.equal(body.total, 1);
    res = await http(`${url}/api/v1/dlq/requeue`, { method: 'POST', body: { queue: 'rq.q' } });
    assert.equal(res.body.requeued, 1);
    again = await pop('rq.q');
    assert.deepEqual(again[0].data, { n: 2 });

    //  Nothing to do: 0
    res = await http(`${url}/api/v1/dlq/requeue`, { method: 'POST', body: { queue: 'rq.q' } });
    assert.equal(res.status, 200);
    assert.equal(res.body.requeued, 0);
    res = await http(`${url}/api/v1/dlq/requeue`, { method: 'POST', body: { queue: 'never-existed' } });
    assert.equal(res.body.requeued, 0);
});

test('requeue filters by group and partition and wakes a waiting consumer', async () => {
    await configure('rw.q', { retryLimit: 0, retryDelay: 0 });
    await push([
        { queue: 'rw.q', partition: 'a', payload: 'a', transactionId: 'wa' },
        { queue: 'rw.q', partition: 'b', payload: 'b', transactionId: 'wb' },
    ]);
    for (const p of ['a', 'b']) {
        const got = await pop(`rw.q/partition/${p}`, '&consumerGroup=gx');
        await ack(got[0], 'dlq', { error: 'x' });
    }
    //  The partition filter selects one entry
    let res = await http(`${url}/api/v1/dlq/requeue`, {
        method: 'POST', body: { queue: 'rw.q', consumerGroup: 'other', partition: 'a' },
    });
    assert.equal(res.body.requeued, 0);

    //  A long-poll of group gx, already past both messages, is woken by the replay
    const started = Date.now();
    const waiting = http(`${url}/api/v1/pop/queue/rw.q/partition/a?wait=true&timeout=15000&consumerGroup=gx`,
                         { timeoutMs: 20000 });
    await sleep(300);
    res = await http(`${url}/api/v1/dlq/requeue`, {
        method: 'POST', body: { queue: 'rw.q', consumerGroup: 'gx', partition: 'a' },
    });
    assert.equal(res.body.requeued, 1);
    const woke = await waiting;
    assert.equal(woke.status, 200, woke.raw);
    assert.equal(woke.body.messages[0].data, 'a');
    assert.ok(Date.now() - started < 12000, 'woken before the long-poll deadline');
    const rest = await dlq('queue=rw.q');
    assert.deepEqual(rest.messages.map((m) => m.partition), ['b']);
});

test('DELETE /api/v1/dlq removes entries by filter, ids in the query or a body', async () => {
    await configure('dd.q', { retryLimit: 0, retryDelay: 0 });
    await push([1, 2, 3, 4].map((n) => ({ queue: 'dd.q', payload: n, transactionId: `d${n}` })));
    const got = await pop('dd.q', '&batch=4');
    assert.equal(got.length, 4);
    for (const m of got)
        await ack(m, 'failed', { error: 'e' });
    let body = await dlq('queue=dd.q');
    assert.equal(body.total, 4);
    const byTxn = Object.fromEntries(body.messages.map((m) => [m.transactionId, m]));

    let res = await http(`${url}/api/v1/dlq?queue=dd.q&ids=${byTxn.d1.id},${byTxn.d2.dlqId}`, { method: 'DELETE' });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body, { deleted: 2 });
    res = await http(`${url}/api/v1/dlq`, { method: 'DELETE', body: { queue: 'dd.q', ids: [byTxn.d3.id] } });
    assert.deepEqual(res.body, { deleted: 1 });
    assert.deepEqual((await dlq('queue=dd.q')).messages.map((m) => m.transactionId), ['d4']);
    //  Other group: nothing
    res = await http(`${url}/api/v1/dlq?queue=dd.q&consumerGroup=zz`, { method: 'DELETE' });
    assert.deepEqual(res.body, { deleted: 0 });
    res = await http(`${url}/api/v1/dlq?queue=dd.q`, { method: 'DELETE' });
    assert.deepEqual(res.body, { deleted: 1 });
    assert.equal((await dlq('queue=dd.q')).total, 0);
    //  The messages themselves stay
    const m = await get(`/api/v1/messages/${byTxn.d4.partitionId}/d4`);
    assert.equal(m.status, 200);
    assert.equal(m.body.status, 'completed');
});

test('DLQ bad inputs get a 400 naming the field', async () => {
    const cases = [
        [{ path: '/api/v1/dlq?limit=0' }, 'limit'],
        [{ path: '/api/v1/dlq?offset=-3' }, 'offset'],
        [{ path: '/api/v1/dlq?from=soon' }, 'from'],
        [{ path: `/api/v1/dlq?queue=${'x'.repeat(256)}` }, 'queue'],
        [{ path: '/api/v1/dlq/requeue', method: 'POST', body: '' }, 'Empty request body'],
        [{ path: '/api/v1/dlq/requeue', method: 'POST', body: '{nope' }, 'Invalid JSON'],
        [{ path: '/api/v1/dlq/requeue', method: 'POST', body: [] }, 'JSON object'],
        [{ path: '/api/v1/dlq/requeue', method: 'POST', body: {} }, 'queue'],
        [{ path: '/api/v1/dlq/requeue', method: 'POST', body: { queue: 7 } }, 'queue'],
        [{ path: '/api/v1/dlq/requeue', method: 'POST', body: { queue: 'q', ids: 'abc' } }, 'ids'],
        [{ path: '/api/v1/dlq/requeue', method: 'POST', body: { queue: 'q', ids: ['not-an-id'] } }, 'ids'],
        [{ path: '/api/v1/dlq/requeue', method: 'POST',
           body: { queue: 'q', ids: ['00000002-0000-8000-8000-000000000001'] } }, 'ids'],
        [{ path: '/api/v1/dlq/requeue', method: 'POST', body: { queue: 'q', consumerGroup: ['g'] } }, 'consumerGroup'],
        [{ path: '/api/v1/dlq', method: 'DELETE' }, 'queue'],
        [{ path: '/api/v1/dlq?queue=q&ids=1,2', method: 'DELETE' }, 'ids'],
    ];
    for (const [req, field] of cases) {
        const headers = typeof req.body === 'string' ? { 'Content-Type': 'application/json' } : {};
        const res = await http(`${url}${req.path}`, { method: req.method || 'GET', body: req.body, headers });
        assert.equal(res.status, 400, `${req.path} ${JSON.stringify(req.body)}: ${res.raw}`);
        assert.ok(res.body.error.includes(field), `"${res.body.error}" should name ${field}`);
    }
});
