//  test/integration/ack.test.mjs - POST /api/v1/ack, /api/v1/ack/batch and
//  /api/v1/lease/:leaseId/extend (contract §3.10, §3.11, §3.13, §2.5-§2.7)
//  against a real PostgreSQL: result shape, auto-release, retries and the
//  dead-letter queue, per-item lease checks, validation, lease extension.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import {
    http, psql, startBroker, sleep, waitFor, warmUp, configureQueue, pushItems, popMessages,
    ackFor, request, ackBatch as ackBatchRoute, dlqList, extendLease,
} from './lib.mjs';

let b;                          //  The broker of this file

before(async () => {
    b = await startBroker();
    await warmUp(b.url);
});

after(async () => {
    if (b)
        await b.stop();
});

const sql = (text) => psql(text, { db: b.db });
const post = (p, body, opts = {}) => http(`${b.url}${p}`, { method: 'POST', body, ...opts });
const TS_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function configure (queue, options) {
    await configureQueue(b.url, queue, options);
}

const push = (queue, items) => pushItems(b.url, items.map((it) => ({ queue, ...it })));

//  Pops through GET /api/v1/pop/queue/:q[/partition/:p]; resolves to the
//  messages (each with its leaseId).
const pop = (queue, { batch = 1, group, partition, partitions } = {}) =>
    popMessages(b.url, queue, { batch, consumerGroup: group, partition, partitions });

//  Pops until something comes (a failed ack may delay redelivery by the
//  queue's retryDelay).
const popSome = (queue, opts) => waitFor(async () => {
    const msgs = await pop(queue, opts);
    return msgs.length ? msgs : null;
}, 10000, 100);

const ackOf = (m, extra = {}) => ackFor(m, extra);
//  POST /api/v1/ack (expects 200 and one result); resolves to the response.
const ack = async (m, extra = {}) => {
    const res = await request(b.url, '/api/v1/ack', {
        method: 'POST', body: { consumerGroup: null, error: null, ...ackOf(m, extra) },
    });
    assert.equal(res.body.length, 1, res.raw);
    return res;
};
//  POST /api/v1/ack/batch (expects 200 and one result per message).
const ackBatch = async (msgs, extra = {}, group = null) => {
    const body = await ackBatchRoute(b.url, msgs.map((m) => ackOf(m, extra)), { consumerGroup: group });
    return { status: 200, body, raw: JSON.stringify(body) };
};

test('ack completed: result shape, and the released lease lets the next pop in', async () => {
    await configure('a-basic', { leaseTime: 30 });
    await push('a-basic', [{ payload: 1, transactionId: 'ab-1' }, { payload: 2 }]);
    const [m1] = await pop('a-basic');
    assert.equal(m1.data, 1);
    assert.deepEqual(await pop('a-basic'), [], 'the lease holds the partition');
    const res = await ack(m1, { status: 'completed' });
    assert.equal(res.status, 200, res.raw);
    assert.match(res.headers['content-type'], /application\/json/);
    assert.deepEqual(res.body, [{
        index: 0, transactionId: 'ab-1', success: true, error: null, queueName: 'a-basic',
        partitionName: 'Default', leaseReleased: true, dlq: false,
    }]);
    const [m2] = await pop('a-basic');
    assert.equal(m2.data, 2);
    //  A broker-minted transaction id (the message id) acks too; "success" is "completed".
    const res2 = await ack(m2, { status: 'success' });
    assert.equal(res2.body[0].success, true, res2.raw);
    assert.equal(res2.body[0].transactionId, m2.transactionId);
    assert.deepEqual(await pop('a-basic'), []);
});

test('ack and ack/batch reject bad input with the contract messages, nothing applied', async () => {
    await configure('a-bad', {});
    await push('a-bad', [{ payload: 1, transactionId: 'bad-1' }]);
    const [m] = await pop('a-bad');
    const ok = ackOf(m);
    const single = [
        [{}, 'transactionId is required'],
        [{ ...ok, transactionId: null }, 'transactionId is required'],
        [{ ...ok, transactionId: 5 }, 'transactionId is required'],
        [{ transactionId: 'bad-1' }, 'partitionId is required to ensure message uniqueness'],
        [{ ...ok, partitionId: null }, 'partitionId is required to ensure message uniqueness'],
        [{ ...ok, partitionId: 12 }, 'partitionId is required to ensure message uniqueness'],
        [{ ...ok, partitionId: 'abc' }, 'partitionId must be a valid UUID'],
        [{ ...ok, partitionId: crypto.randomUUID() }, 'partitionId must be a valid UUID'],
        [{ ...ok, leaseId: 'zzz' }, 'leaseId must be a valid UUID'],
        [{ ...ok, leaseId: 7 }, 'leaseId must be a string'],
        [{ ...ok, status: 5 }, 'status must be a string'],
        [{ ...ok, consumerGroup: 5 }, 'consumerGroup must be a string'],
        [{ ...ok, consumerGroup: 'g'.repeat(256) }, 'consumerGroup must be at most 255 bytes'],
        [{ ...ok, transactionId: 'a\u0000' }, 'transactionId must not contain NUL characters'],
        [[ok], 'transactionId is required'],
    ];
    for (const [body, error] of single) {
        const res = await post('/api/v1/ack', body);
        assert.equal(res.status, 400, `${JSON.stringify(body)} -> ${res.raw}`);
        assert.deepEqual(res.body, { error });
    }
    for (const [raw, re] of [['', /^Empty request body$/], ['{"transactionId":', /^Invalid JSON/]]) {
        for (const route of ['/api/v1/ack', '/api/v1/ack/batch']) {
            const res = await post(route, raw, { headers: { 'Content-Type': 'application/json' } });
            assert.equal(res.status, 400);
            assert.match(res.body.error, re);
        }
    }
    const batch = [
        [{}, 'acknowledgments array is required'],
        [{ acknowledgments: {} }, 'acknowledgments array is required'],
        [{ acknowledgments: [ok, { partitionId: ok.partitionId }] }, 'Each acknowledgment must have a valid transactionId string'],
        [{ acknowledgments: [ok, { transactionId: 'x' }] }, 'Each acknowledgment must have a valid partitionId string to ensure message uniqueness'],
        [{ acknowledgments: [ok, { transactionId: 'x', partitionId: 'bad' }] }, 'acknowledgments[1].partitionId must be a valid UUID'],
        [{ acknowledgments: [ok, { ...ok, leaseId: 'bad' }] }, 'acknowledgments[1].leaseId must be a valid UUID'],
        [{ consumerGroup: 7, acknowledgments: [ok] }, 'consumerGroup must be a string'],
    ];
    for (const [body, error] of batch) {
        const res = await post('/api/v1/ack/batch', body);
        assert.equal(res.status, 400, `${JSON.stringify(body)} -> ${res.raw}`);
        assert.deepEqual(res.body, { error });
    }
    const empty = await post('/api/v1/ack/batch', { acknowledgments: [] });
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.body, []);
    //  Nothing was applied: the lease still holds, then the real ack works.
    assert.deepEqual(await pop('a-bad'), []);
    const res = await ack(m);
    assert.equal(res.body[0].success, true, res.raw);
});

test('ack: Message not found, unknown partition, unknown status, empty leaseId', async () => {
    await configure('a-nf', {});
    await push('a-nf', [{ payload: 1, transactionId: 'nf-1' }]);
    const [m] = await pop('a-nf');
    const missing = await post('/api/v1/ack', { transactionId: 'nope', partitionId: m.partitionId });
    assert.equal(missing.status, 200);
    assert.deepEqual([missing.body[0].success, missing.body[0].error, missing.body[0].queueName],
        [false, 'Message not found', 'a-nf']);
    const nowhere = await post('/api/v1/ack', { transactionId: 'nf-1', partitionId: '00000002-0000-8000-8000-00000fffffff' });
    assert.deepEqual([nowhere.body[0].success, nowhere.body[0].error, nowhere.body[0].queueName, nowhere.body[0].partitionName],
        [false, 'Message not found', null, null]);
    const bogus = await ack(m, { status: 'bogus' });
    assert.deepEqual([bogus.body[0].success, bogus.body[0].error, bogus.body[0].dlq], [false, null, false]);
    assert.deepEqual(await pop('a-nf'), [], 'an unknown status changes nothing');
    const res = await post('/api/v1/ack', { transactionId: 'nf-1', partitionId: m.partitionId, leaseId: '', status: 'completed' });
    assert.equal(res.body[0].success, true, res.raw);
    assert.equal(res.body[0].leaseReleased, true);
});

test('ack failed: retried up to retryLimit, then dead-lettered; dlq and retry statuses', async () => {
    await configure('a-retry', { retryLimit: 1 });
    await push('a-retry', [{ payload: 'm1', transactionId: 'rt-1' }]);
    let [m] = await pop('a-retry');
    let res = await ack(m, { status: 'failed', error: 'boom-1' });
    assert.deepEqual([res.body[0].success, res.body[0].dlq, res.body[0].leaseReleased], [true, false, true], res.raw);
    [m] = await popSome('a-retry');
    assert.equal(m.transactionId, 'rt-1', 'redelivered after a failed ack');
    res = await ack(m, { status: 'failed', error: 'boom-2' });
    assert.deepEqual([res.body[0].success, res.body[0].dlq], [true, true], res.raw);
    assert.deepEqual(await pop('a-retry'), [], 'the cursor moved past the dead letter');
    assert.equal(await sql(`SELECT d.txn_id || '|' || d.error || '|' || d.consumer_group FROM queen.dead_letters d
                            JOIN queen.queues q ON q.id = d.queue_id WHERE q.name = 'a-retry'`), 'rt-1|boom-2|__QUEUE_MODE__');
    const dlqRoute = await dlqList(b.url, 'queue=a-retry');
    assert.equal(dlqRoute.messages.length, 1, JSON.stringify(dlqRoute));
    assert.match(String(dlqRoute.messages[0].errorMessage), /boom-2/);

    //  dlq: dead-lettered at once (no error text: "Retries exhausted").
    await configure('a-dlq', { retryLimit: 5 });
    await push('a-dlq', [{ payload: 'd1', transactionId: 'dl-1' }]);
    [m] = await pop('a-dlq');
    res = await ack(m, { status: 'dlq' });
    assert.deepEqual([res.body[0].success, res.body[0].dlq], [true, true], res.raw);
    assert.deepEqual(await pop('a-dlq'), []);
    assert.equal(await sql(`SELECT error FROM queen.dead_letters WHERE txn_id = 'dl-1'`), 'Retries exhausted');

    //  retry: the lease is released, nothing counted.
    await configure('a-rt', { retryLimit: 1 });
    await push('a-rt', [{ payload: 'r1', transactionId: 'rr-1' }]);
    [m] = await pop('a-rt');
    res = await ack(m, { status: 'retry' });
    assert.deepEqual([res.body[0].success, res.body[0].dlq, res.body[0].leaseReleased], [true, false, true], res.raw);
    [m] = await popSome('a-rt');
    assert.equal(m.transactionId, 'rr-1');
    res = await ack(m, { status: 'failed' });
    assert.equal(res.body[0].dlq, false, 'retry did not use up the retry budget');
});

test('ack/batch: a stale or foreign lease is refused per item while the others apply', async () => {
    await configure('a-stale', { leaseTime: 30 });
    await push('a-stale', [{ partition: 'pa', payload: 'a', transactionId: 'st-a' }, { partition: 'pb', payload: 'b', transactionId: 'st-b' }]);
    const [ma] = await pop('a-stale', { partition: 'pa' });
    const [mb] = await pop('a-stale', { partition: 'pb' });
    assert.ok(ma && mb);
    const res = await post('/api/v1/ack/batch', { consumerGroup: null, acknowledgments: [
        ackOf(ma), ackOf(mb, { leaseId: crypto.randomUUID() }),
    ] });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.map((r) => [r.index, r.transactionId, r.success, r.error]),
        [[0, 'st-a', true, null], [1, 'st-b', false, 'Invalid or expired lease']]);
    assert.deepEqual(await pop('a-stale', { partition: 'pb' }), [], 'pb is still leased');
    const fix = await ack(mb);
    assert.equal(fix.body[0].success, true, fix.raw);

    //  An expired lease is refused.
    await configure('a-expired', { leaseTime: 1 });
    await push('a-expired', [{ payload: 'e', transactionId: 'ex-1' }]);
    const [me] = await pop('a-expired');
    await sleep(1500);
    const late = await ack(me);
    assert.deepEqual([late.body[0].success, late.body[0].error], [false, 'Invalid or expired lease'], late.raw);
    const [again] = await pop('a-expired');
    assert.equal(again.transactionId, 'ex-1', 'the message is delivered again');
});

test('ack/batch: 100 failed acks of one batch count as one retry', async () => {
    await configure('a-100', { retryLimit: 3, leaseTime: 60 });
    await push('a-100', Array.from({ length: 100 }, (_, i) => ({ payload: i, transactionId: `h-${i}` })));
    for (let attempt = 1; attempt <= 3; attempt++) {
        const msgs = await popSome('a-100', { batch: 100 });
        assert.equal(msgs.length, 100, `attempt ${attempt} receives the whole batch`);
        assert.deepEqual(msgs.map((m) => m.data), Array.from({ length: 100 }, (_, i) => i));
        if (attempt === 3) {
            const done = await ackBatch(msgs, { status: 'completed' });
            assert.equal(done.body.length, 100);
            assert.ok(done.body.every((r) => r.success && !r.dlq), done.raw.slice(0, 300));
            assert.equal(done.body[99].leaseReleased, true);
            break;
        }
        const res = await ackBatch(msgs, { status: 'failed', error: `attempt ${attempt}` });
        assert.equal(res.status, 200);
        assert.equal(res.body.length, 100);
        assert.ok(res.body.every((r, i) => r.index === i && r.transactionId === `h-${i}` && r.success && !r.dlq),
            res.raw.slice(0, 300));
    }
    assert.equal(await sql(`SELECT count(*) FROM queen.dead_letters WHERE txn_id LIKE 'h-%'`), '0');
    assert.deepEqual(await pop('a-100', { batch: 100 }), []);
});

test('ack/batch: the request consumerGroup applies to every item', async () => {
    await configure('a-group', {});
    await push('a-group', [{ payload: 1, transactionId: 'g-1' }, { payload: 2, transactionId: 'g-2' }]);
    const msgs = await pop('a-group', { batch: 2, group: 'workers' });
    assert.equal(msgs.length, 2);
    const wrong = await ackBatch(msgs, {}, 'others');
    assert.deepEqual(wrong.body.map((r) => [r.success, r.error]),
        [[false, 'Invalid or expired lease'], [false, 'Invalid or expired lease']], wrong.raw);
    assert.deepEqual(await pop('a-group', { group: 'workers' }), [], 'the workers lease is untouched');
    const res = await ackBatch(msgs, {}, 'workers');
    assert.equal(res.body.length, 2);
    assert.ok(res.body.every((r) => r.success), res.raw);
    assert.equal(res.body[1].leaseReleased, true);
    //  Queue mode is a different group: it still gets both messages.
    assert.equal((await pop('a-group', { batch: 2 })).length, 2);
});

test('lease extend: default 60 s, explicit seconds, one lease over several partitions', async () => {
    await configure('a-lease', { leaseTime: 5 });
    await push('a-lease', [{ payload: 1 }]);
    const [m] = await pop('a-lease');
    const t0 = Date.now();
    const res = await post(`/api/v1/lease/${m.leaseId}/extend`, {});
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.length, 1);
    const r = res.body[0];
    assert.deepEqual([r.index, r.leaseId, r.success, r.error], [0, m.leaseId, true, null]);
    assert.match(r.expiresAt, TS_MS);
    const ahead = Date.parse(r.expiresAt) - t0;
    assert.ok(ahead > 50000 && ahead < 70000, `expires in ${ahead} ms, about 60 s`);
    const longer = await post(`/api/v1/lease/${m.leaseId.toUpperCase()}/extend`, { seconds: 120 });
    assert.equal(longer.body[0].success, true, longer.raw);
    assert.equal(longer.body[0].leaseId, m.leaseId);
    const ahead2 = Date.parse(longer.body[0].expiresAt) - t0;
    assert.ok(ahead2 > 110000 && ahead2 < 130000, `expires in ${ahead2} ms, about 120 s`);

    await configure('a-lease-multi', { leaseTime: 5 });
    await push('a-lease-multi', ['x', 'y', 'z'].map((p) => ({ partition: p, payload: p })));
    const msgs = await pop('a-lease-multi', { batch: 3, partitions: 3 });
    assert.equal(msgs.length, 3);
    assert.equal(new Set(msgs.map((x) => x.partitionId)).size, 3);
    assert.equal(new Set(msgs.map((x) => x.leaseId)).size, 1);
    const multi = await post(`/api/v1/lease/${msgs[0].leaseId}/extend`, {});
    assert.equal(multi.body[0].success, true, multi.raw);
    assert.equal(await sql(`SELECT count(*) FROM queen.ready WHERE lease_id = '${msgs[0].leaseId}'
                            AND avail_at > now() + interval '50 seconds'`), '3');
    //  Still held after the queue's 5 s lease time would have run out.
    assert.deepEqual(await pop('a-lease-multi', { batch: 3, partitions: 3 }), []);
});

test('lease extend: unknown and expired leases, bad input', async () => {
    const unknown = crypto.randomUUID();
    const res = await post(`/api/v1/lease/${unknown}/extend`, {});
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, [{ index: 0, leaseId: unknown, success: false, error: 'Lease not found', expiresAt: null }]);

    await configure('a-lease-exp', { leaseTime: 1 });
    await push('a-lease-exp', [{ payload: 1 }]);
    const [m] = await pop('a-lease-exp');
    await sleep(1500);
    const late = await post(`/api/v1/lease/${m.leaseId}/extend`, {});
    assert.deepEqual([late.body[0].success, late.body[0].expiresAt], [false, null], late.raw);
    assert.match(late.body[0].error, /^Lease (already expired|not found)$/);

    const lease = crypto.randomUUID();
    const cases = [
        ['/api/v1/lease/not-a-uuid/extend', {}, /^leaseId must be a valid UUID$/],
        [`/api/v1/lease/${lease}/extend`, '', /^Empty request body$/],
        [`/api/v1/lease/${lease}/extend`, '{', /^Invalid JSON/],
        [`/api/v1/lease/${lease}/extend`, '[]', /^Request body must be a JSON object$/],
        [`/api/v1/lease/${lease}/extend`, { seconds: 'abc' }, /^seconds must be an integer/],
        [`/api/v1/lease/${lease}/extend`, { seconds: 1.5 }, /^seconds must be an integer/],
        [`/api/v1/lease/${lease}/extend`, { seconds: 0 }, /^seconds must be an integer/],
        [`/api/v1/lease/${lease}/extend`, { seconds: 86401 }, /^seconds must be an integer/],
    ];
    for (const [p, body, re] of cases) {
        const r = await post(p, body, { headers: { 'Content-Type': 'application/json' } });
        assert.equal(r.status, 400, `${p} ${JSON.stringify(body)} -> ${r.raw}`);
        assert.match(r.body.error, re);
    }
    //  The lease of a released (fully acked) batch is gone.
    await configure('a-lease-done', {});
    await push('a-lease-done', [{ payload: 1 }]);
    const [d] = await pop('a-lease-done');
    assert.equal((await ack(d)).body[0].success, true);
    await waitFor(async () => (await extendLease(b.url, d.leaseId)).success === false, 5000);
});
