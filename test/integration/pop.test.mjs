//  test/integration/pop.test.mjs - pops over plain HTTP (contract §3.7-§3.9,
//  §2.4-§2.9, §3.21): response shape, FIFO and exclusivity under
//  concurrent consumers, batch and partition count rules, consumer groups,
//  subscription modes, autoAck, lease expiry, delayed processing, window
//  buffer, parameter validation, maintenance and a database outage.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import {
    startBroker, http, psql, sleep, waitFor, pgStop, pgStart, warmUp, configureQueue, pushItems, pop as popRoute,
    ack as ackRoute, ackBatch, setMaintenance,
} from './lib.mjs';

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

async function configure (queue, options = {}, extra = {}) {
    const body = await configureQueue(U, queue, options, extra);
    assert.equal(body.configured, true);
    return body;
}

//  items: [{queue, partition?, payload?, transactionId?}]
const push = (items) => pushItems(U, items, { queued: true });

//  A pop with exactly the query parameters given (no wait unless params
//  say so); expects 200 or 204 (params.expect overrides). Resolves to the
//  response.
const pop = (queue, params = {}, partition) => popRoute(U, queue, { wait: undefined, ...params, partition });

async function ack (msg, status = 'completed') {
    const body = { transactionId: msg.transactionId, partitionId: msg.partitionId,
                   status, consumerGroup: msg.consumerGroup };
    if (msg.leaseId)
        body.leaseId = msg.leaseId;
    await ackRoute(U, body, { success: true });
}

async function ackAll (messages) {
    assert.ok(messages.length > 0);
    await ackBatch(U, messages.map((m) => ({
        transactionId: m.transactionId, partitionId: m.partitionId,
        status: 'completed', leaseId: m.leaseId,
    })), { consumerGroup: messages[0].consumerGroup, success: true });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TS_US = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

test('a pop returns the §3.7 shape with every message field; empty is 204', async () => {
    await configure('shape');
    await push([
        { queue: 'shape', payload: { orderId: 42, s: 'é' }, transactionId: 'tx-1' },
        { queue: 'shape', payload: null },
        { queue: 'shape', payload: {} },
        { queue: 'shape', payload: [1, 'two', { three: 3 }] },
    ]);
    const res = await pop('shape', { batch: 10 });
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'], /application\/json/);
    const b = res.body;
    assert.equal(b.success, true);
    assert.equal(b.queue, 'shape');
    assert.equal(b.partition, 'Default');
    assert.match(b.partitionId, UUID);
    assert.match(b.leaseId, UUID);
    assert.equal(b.consumerGroup, '__QUEUE_MODE__');
    assert.equal(b.partitionsClaimed, 1);
    assert.equal(b.messages.length, 4);
    const keys = ['id', 'transactionId', 'traceId', 'data', 'producerSub', 'createdAt',
                  'partitionId', 'partition', 'leaseId', 'consumerGroup'];
    for (const m of b.messages) {
        for (const k of keys)
            assert.ok(k in m, `message field ${k} missing`);
        assert.match(m.id, UUID);
        assert.match(m.createdAt, TS_US);
        assert.equal(m.partitionId, b.partitionId);
        assert.equal(m.partition, 'Default');
        assert.equal(m.leaseId, b.leaseId);
        assert.equal(m.consumerGroup, '__QUEUE_MODE__');
        assert.equal(m.traceId, null);
        assert.equal(m.producerSub, null);
    }
    assert.deepEqual(b.messages.map((m) => m.data), [{ orderId: 42, s: 'é' }, null, {}, [1, 'two', { three: 3 }]]);
    assert.equal(b.messages[0].transactionId, 'tx-1');
    //  No client transaction id: the message id stands in for it.
    assert.equal(b.messages[1].transactionId, b.messages[1].id);
    //  Ids increase in push order.
    const ids = b.messages.map((m) => m.id);
    assert.deepEqual([...ids].sort(), ids);
    //  Everything is leased now: the next pop is empty, with no body.
    const empty = await pop('shape', { batch: 10 });
    assert.equal(empty.status, 204);
    assert.equal(empty.raw, '');
});

test('a pop of a queue that does not exist is 204, and does not create it', async () => {
    const res = await pop('no-such-queue-xyz');
    assert.equal(res.status, 204);
    const part = await pop('no-such-queue-xyz', {}, 'p1');
    assert.equal(part.status, 204);
    const n = await psql("SELECT count(*) FROM queen.queues WHERE name = 'no-such-queue-xyz'",
                         { db: broker.db });
    assert.equal(n, '0');
});

test('4 concurrent consumers: each message once, FIFO per partition, one consumer per partition', async () => {
    const Q = 'fifo4';
    const P = 4;
    const N = 40;
    await configure(Q, { leaseTime: 60 });
    for (let p = 0; p < P; p++) {
        const items = [];
        for (let i = 0; i < N; i++)
            items.push({ queue: Q, partition: `p${p}`, payload: { p, i }, transactionId: `p${p}-${i}` });
        await push(items);
    }
    const deliveries = [];          //  In response order
    const holders = new Map();      //  partitionId -> consumer holding it now
    let overlap = null;
    let seen = 0;
    async function consumer (name) {
        let idle = 0;
        while (seen < P * N && idle < 50) {
            const res = await pop(Q, { batch: 3 });
            if (res.status === 204) {
                idle++;
                await sleep(10);
                continue;
            }
            idle = 0;
            const msgs = res.body.messages;
            const pid = msgs[0].partitionId;
            if (holders.has(pid))
                overlap = `${name} got ${pid} while ${holders.get(pid)} held it`;
            holders.set(pid, name);
            for (const m of msgs)
                deliveries.push({ consumer: name, ...m.data });
            seen += msgs.length;
            await sleep(Math.floor(Math.random() * 5));
            holders.delete(pid);
            await ackAll(msgs);
        }
    }
    await Promise.all(['c1', 'c2', 'c3', 'c4'].map(consumer));
    assert.equal(overlap, null);
    assert.equal(deliveries.length, P * N);
    for (let p = 0; p < P; p++) {
        const order = deliveries.filter((d) => d.p === p).map((d) => d.i);
        assert.deepEqual(order, [...Array(N).keys()], `partition p${p} out of order or duplicated`);
    }
    //  Work was shared.
    assert.ok(new Set(deliveries.map((d) => d.consumer)).size > 1);
});

test('a leased partition is not served to a second consumer of the same group', async () => {
    const Q = 'exclusive';
    await configure(Q, { leaseTime: 30 });
    await push([1, 2, 3, 4].map((i) => ({ queue: Q, payload: i })));
    const a = await pop(Q, { batch: 2 });
    assert.equal(a.status, 200);
    assert.deepEqual(a.body.messages.map((m) => m.data), [1, 2]);
    //  Same group, lease held: nothing for B (partition-specific too).
    assert.equal((await pop(Q, { batch: 2 })).status, 204);
    assert.equal((await pop(Q, { batch: 2 }, 'Default')).status, 204);
    //  Another group is not affected.
    const other = await pop(Q, { batch: 10, consumerGroup: 'other' });
    assert.equal(other.status, 200);
    assert.equal(other.body.messages.length, 4);
    //  A acks its whole batch: the lease is released and B gets the rest.
    await ack(a.body.messages[0]);
    assert.equal((await pop(Q, { batch: 2 })).status, 204);
    await ack(a.body.messages[1]);
    const b = await pop(Q, { batch: 2 });
    assert.equal(b.status, 200);
    assert.deepEqual(b.body.messages.map((m) => m.data), [3, 4]);
});

test('batch counts: one partition per call unless partitions > 1; batch is a global cap', async () => {
    const Q = 'counts';
    await configure(Q);
    const items = [];
    for (let p = 0; p < 4; p++)
        for (let i = 0; i < 5; i++)
            items.push({ queue: Q, partition: `part-${p}`, payload: { p, i } });
    await push(items);
    const one = await pop(Q, { batch: 100, consumerGroup: 'g-one' });
    assert.equal(one.status, 200);
    assert.equal(one.body.messages.length, 5);
    assert.equal(new Set(one.body.messages.map((m) => m.partitionId)).size, 1);
    assert.equal(one.body.partitionsClaimed, 1);
    const all = await pop(Q, { batch: 100, partitions: 4, consumerGroup: 'g-all' });
    assert.equal(all.body.messages.length, 20);
    assert.equal(new Set(all.body.messages.map((m) => m.partitionId)).size, 4);
    assert.equal(all.body.partitionsClaimed, 4);
    //  Each partition's messages in order.
    for (let p = 0; p < 4; p++)
        assert.deepEqual(all.body.messages.filter((m) => m.data.p === p).map((m) => m.data.i), [0, 1, 2, 3, 4]);
    const seven = await pop(Q, { batch: 7, partitions: 4, consumerGroup: 'g-seven' });
    assert.equal(seven.body.messages.length, 7);
    //  maxPartitions is accepted as a synonym.
    const syn = await pop(Q, { batch: 100, maxPartitions: 2, consumerGroup: 'g-syn' });
    assert.equal(syn.body.messages.length, 10);
    //  batch below 1 is 1; an unparsable batch is the default (1).
    assert.equal((await pop(Q, { batch: 0, consumerGroup: 'g-zero' })).body.messages.length, 1);
    assert.equal((await pop(Q, { batch: 'abc', consumerGroup: 'g-abc' })).body.messages.length, 1);
    assert.equal((await pop(Q, { consumerGroup: 'g-default' })).body.messages.length, 1);
});

test('a partition-specific pop serves only that partition', async () => {
    const Q = 'specific';
    await configure(Q);
    await push([
        { queue: Q, partition: 'a', payload: 'a1' },
        { queue: Q, partition: 'b', payload: 'b1' },
        { queue: Q, partition: 'b', payload: 'b2' },
    ]);
    const res = await pop(Q, { batch: 10, partitions: 5 }, 'b');
    assert.equal(res.status, 200);
    assert.equal(res.body.partition, 'b');
    assert.equal(res.body.partitionsClaimed, 1);
    assert.deepEqual(res.body.messages.map((m) => m.data), ['b1', 'b2']);
    assert.ok(res.body.messages.every((m) => m.partition === 'b'));
    assert.equal((await pop(Q, { batch: 10 }, 'b')).status, 204);
    assert.equal((await pop(Q, { batch: 10 }, 'no-such-partition')).status, 204);
    const a = await pop(Q, { batch: 10 });
    assert.deepEqual(a.body.messages.map((m) => m.data), ['a1']);
});

test('consumer groups each receive every message; queue mode is its own consumer', async () => {
    const Q = 'fanout';
    await configure(Q);
    await push([1, 2, 3].map((i) => ({ queue: Q, payload: i })));
    for (const group of ['g1', 'g2', undefined]) {
        const params = { batch: 10, ...(group ? { consumerGroup: group } : {}) };
        const res = await pop(Q, params);
        assert.equal(res.status, 200, `group ${group}`);
        assert.deepEqual(res.body.messages.map((m) => m.data), [1, 2, 3]);
        assert.equal(res.body.consumerGroup, group ?? '__QUEUE_MODE__');
        assert.ok(res.body.messages.every((m) => m.consumerGroup === (group ?? '__QUEUE_MODE__')));
        await ackAll(res.body.messages);
        assert.equal((await pop(Q, params)).status, 204);
    }
});

test('subscription modes: all, new, from a timestamp', async () => {
    const Q = 'subs';
    await configure(Q);
    await push([{ queue: Q, payload: 'old-1' }, { queue: Q, payload: 'old-2' }]);
    await sleep(50);
    const cut = new Date().toISOString();
    await sleep(50);
    await push([{ queue: Q, payload: 'mid' }]);
    //  all (default and explicit)
    const all = await pop(Q, { batch: 10, consumerGroup: 's-all', subscriptionMode: 'all' });
    assert.deepEqual(all.body.messages.map((m) => m.data), ['old-1', 'old-2', 'mid']);
    //  new: the first pop finds nothing but fixes the start
    assert.equal((await pop(Q, { batch: 10, consumerGroup: 's-new', subscriptionMode: 'new' })).status, 204);
    await push([{ queue: Q, payload: 'after' }]);
    const fresh = await pop(Q, { batch: 10, consumerGroup: 's-new' });
    assert.equal(fresh.status, 200);
    assert.deepEqual(fresh.body.messages.map((m) => m.data), ['after']);
    //  from a timestamp
    const ts = await pop(Q, { batch: 10, consumerGroup: 's-ts', subscriptionFrom: cut });
    assert.deepEqual(ts.body.messages.map((m) => m.data), ['mid', 'after']);
    //  subscriptionFrom=now behaves like new
    assert.equal((await pop(Q, { batch: 10, consumerGroup: 's-now', subscriptionFrom: 'now' })).status, 204);
    //  queue mode ignores subscription options
    const qm = await pop(Q, { batch: 10, subscriptionMode: 'new' });
    assert.equal(qm.body.messages.length, 4);
});

test('autoAck delivers once with an empty leaseId', async () => {
    const Q = 'autoack';
    await configure(Q);
    await push([1, 2, 3].map((i) => ({ queue: Q, payload: i })));
    const first = await pop(Q, { batch: 2, autoAck: true });
    assert.equal(first.status, 200);
    assert.equal(first.body.leaseId, '');
    assert.ok(first.body.messages.every((m) => m.leaseId === ''));
    assert.deepEqual(first.body.messages.map((m) => m.data), [1, 2]);
    //  No ack needed, no redelivery.
    const second = await pop(Q, { batch: 10, autoAck: true });
    assert.deepEqual(second.body.messages.map((m) => m.data), [3]);
    assert.equal((await pop(Q, { batch: 10 })).status, 204);
});

test('an expired lease redelivers the unacked rest in order', async () => {
    const Q = 'expiry';
    await configure(Q, { leaseTime: 1 });
    await push([1, 2, 3].map((i) => ({ queue: Q, payload: i })));
    const first = await pop(Q, { batch: 3 });
    assert.deepEqual(first.body.messages.map((m) => m.data), [1, 2, 3]);
    await ack(first.body.messages[0]);
    assert.equal((await pop(Q, { batch: 3 })).status, 204);
    const again = await waitFor(async () => {
        const res = await pop(Q, { batch: 3 });
        return res.status === 200 ? res : null;
    }, 15000, 200);
    assert.deepEqual(again.body.messages.map((m) => m.data), [2, 3]);
    assert.notEqual(again.body.leaseId, first.body.leaseId);
});

test('delayedProcessing hides a message until it is due', async () => {
    const Q = 'delayed';
    await configure(Q, { delayedProcessing: 2 });
    const pushed = Date.now();
    await push([{ queue: Q, payload: 'later' }]);
    assert.equal((await pop(Q)).status, 204);
    const res = await waitFor(async () => {
        const r = await pop(Q);
        return r.status === 200 ? r : null;
    }, 15000, 100);
    assert.ok(Date.now() - pushed >= 1500, 'visible too early');
    assert.deepEqual(res.body.messages.map((m) => m.data), ['later']);
});

test('windowBuffer holds a partition until it has been quiet, then serves everything', async () => {
    const Q = 'window';
    await configure(Q, { windowBuffer: 2 });
    for (const i of [1, 2, 3])
        await push([{ queue: Q, payload: i }]);
    const pushed = Date.now();
    assert.equal((await pop(Q, { batch: 10 })).status, 204);
    const res = await waitFor(async () => {
        const r = await pop(Q, { batch: 10 });
        return r.status === 200 ? r : null;
    }, 15000, 100);
    assert.ok(Date.now() - pushed >= 1500, 'served inside the window');
    assert.deepEqual(res.body.messages.map((m) => m.data), [1, 2, 3]);
});

test('namespace/task pop serves the matching queues', async () => {
    await configure('nsq.one', {}, { namespace: 'nspace', task: 'alpha' });
    await configure('nsq.two', {}, { namespace: 'nspace', task: 'beta' });
    await push([{ queue: 'nsq.two', payload: 'from-two' }]);
    const res = await http(`${U}/api/v1/pop?namespace=nspace&batch=5`);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.queue, 'nsq.two');
    assert.deepEqual(res.body.messages.map((m) => m.data), ['from-two']);
    await push([{ queue: 'nsq.one', payload: 'from-one' }, { queue: 'nsq.two', payload: 'two-b' }]);
    const byTask = await http(`${U}/api/v1/pop?namespace=nspace&task=alpha&batch=5`);
    assert.equal(byTask.status, 200, byTask.raw);
    assert.deepEqual(byTask.body.messages.map((m) => m.data), ['from-one']);
    assert.equal((await http(`${U}/api/v1/pop?namespace=no-such-ns`)).status, 204);
    const bad = await http(`${U}/api/v1/pop?batch=5`);
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /namespace/);
});

test('bad query parameters and names are 400s naming the parameter', async () => {
    const cases = [
        [`/api/v1/pop/queue/q?batch=10001`, /batch/],
        [`/api/v1/pop/queue/q?batch=99999999999`, /batch/],
        [`/api/v1/pop/queue/q?wait=true&timeout=-1`, /timeout/],
        [`/api/v1/pop/queue/q?consumerGroup=${'g'.repeat(256)}`, /consumerGroup/],
        [`/api/v1/pop/queue/q?subscriptionMode=${'m'.repeat(300)}`, /subscriptionMode/],
        [`/api/v1/pop/queue/q?consumerGroup=%FF%FE`, /consumerGroup/],
        [`/api/v1/pop/queue/${'q'.repeat(256)}`, /queue/],
        [`/api/v1/pop/queue/%C3%28`, /queue/],
        [`/api/v1/pop/queue/q/partition/${'p'.repeat(256)}`, /partition/],
        [`/api/v1/pop?namespace=${'n'.repeat(256)}`, /namespace/],
    ];
    for (const [path, re] of cases) {
        const res = await http(`${U}${path}`);
        assert.equal(res.status, 400, `${path}: ${res.status} ${res.raw}`);
        assert.match(res.headers['content-type'], /application\/json/);
        assert.match(res.body.error, re, path);
    }
    //  Limits that are clamped, not refused.
    await configure('clamp');
    await push([{ queue: 'clamp', payload: 1 }]);
    const ok = await pop('clamp', { batch: 10000, partitions: 5000, timeout: 999999999 });
    assert.equal(ok.status, 200);
    //  A 255-byte group name is fine.
    assert.equal((await pop('clamp', { consumerGroup: 'g'.repeat(255) })).status, 200);
});

test('POST /internal/api/notify', async () => {
    const ok = await http(`${U}/internal/api/notify`, { method: 'POST', body: { queue: 'x', partition: 'p' } });
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body, { status: 'ok' });
    const q = await http(`${U}/internal/api/notify`, { method: 'POST', body: { queue: 'x' } });
    assert.deepEqual(q.body, { status: 'ok' });
    const missing = await http(`${U}/internal/api/notify`, { method: 'POST', body: { partition: 'p' } });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error, 'queue is required');
    const notString = await http(`${U}/internal/api/notify`, { method: 'POST', body: { queue: 5 } });
    assert.equal(notString.status, 400);
    const empty = await http(`${U}/internal/api/notify`, { method: 'POST', body: '' });
    assert.equal(empty.status, 400);
});

test('pop maintenance answers 204 at once', async () => {
    await configure('maint');
    await push([{ queue: 'maint', payload: 1 }]);
    await setMaintenance(U, true, { pop: true });
    try {
        //  The flag reaches the codec through the bus: wait until a
        //  long-poll on an empty queue is answered at once.
        await waitFor(async () => {
            const started = Date.now();
            const r = await pop('maint-probe', { wait: true, timeout: 1500 });
            return r.status === 204 && Date.now() - started < 1000;
        }, 20000, 50);
        //  Messages are there, yet the pop is empty, and does not wait.
        const started = Date.now();
        assert.equal((await pop('maint', { wait: true, timeout: 10000 })).status, 204);
        assert.ok(Date.now() - started < 1000, 'a long-poll in pop maintenance must not wait');
    } finally {
        await setMaintenance(U, false, { pop: true });
    }
    const res = await waitFor(async () => {
        const r = await pop('maint');
        return r.status === 200 ? r : null;
    }, 10000, 100);
    assert.deepEqual(res.body.messages.map((m) => m.data), [1]);
});

test('encrypted payloads are decrypted on pop when the server has the key', async () => {
    const key = crypto.randomBytes(32);
    const b = await startBroker({ env: { QUEEN_ENCRYPTION_KEY: key.toString('hex') } });
    try {
        const seal = (value, tamper = false) => {
            const iv = crypto.randomBytes(16);
            const c = crypto.createCipheriv('aes-256-gcm', key, iv);
            const ct = Buffer.concat([c.update(JSON.stringify(value), 'utf8'), c.final()]);
            const tag = c.getAuthTag();
            if (tamper)
                tag[0] ^= 1;
            return JSON.stringify({ encrypted: ct.toString('base64'), iv: iv.toString('base64'),
                                    authTag: tag.toString('base64') });
        };
        const good = seal({ secret: 'é', n: [1, 2] });
        const bad = seal({ secret: 'x' }, true);
        //  Stored the way an encrypting push stores it (is_encrypted = true).
        await psql(`SELECT count(*) FROM queen.push('', ARRAY['enc', 'enc'], ARRAY['Default', 'Default'],
                    ARRAY[NULL, NULL]::text[], ARRAY[convert_to('${good}', 'UTF8'), convert_to('${bad}', 'UTF8')],
                    ARRAY[NULL, NULL]::uuid[], ARRAY[NULL, NULL]::text[], ARRAY[true, true], false)`,
                   { db: b.db });
        let res = await http(`${b.url}/api/v1/pop/queue/enc?batch=1&autoAck=true`);
        assert.equal(res.status, 200, res.raw);
        assert.deepEqual(res.body.messages[0].data, { secret: 'é', n: [1, 2] });
        //  A payload that does not authenticate is never sent as stored: the
        //  pop answers 500 naming the message (docs/security.md).
        res = await http(`${b.url}/api/v1/pop/queue/enc?batch=1`);
        assert.equal(res.status, 500, res.raw);
        assert.match(res.body.error, /^Payload decryption failed for message .*authentication failed/);
        assert.equal(typeof res.body.messageId, 'string');
        assert.ok(!res.raw.includes('authTag'), res.raw);
    } finally {
        await b.stop();
    }
});

test('pops fail fast with 503 while the database is down', async () => {
    await configure('outage');
    await pgStop();
    try {
        await waitFor(async () => (await http(`${U}/health`)).status === 503, 20000, 200);
        const started = Date.now();
        const res = await pop('outage', { wait: true, timeout: 20000, expect: 503 });
        assert.equal(res.status, 503);
        assert.match(res.headers['content-type'], /application\/json/);
        assert.ok(typeof res.body.error === 'string');
        assert.ok(Date.now() - started < 2000, 'the pop must not wait for the database');
    } finally {
        await pgStart();
    }
    await waitFor(async () => (await http(`${U}/health`)).status === 200, 30000, 200);
    //  Until the spool has reported after the outage, pushes are buffered.
    await warmUp(U);
    await push([{ queue: 'outage', payload: 'back' }]);
    const res = await waitFor(async () => {
        const r = await pop('outage');
        return r.status === 200 ? r : null;
    }, 10000, 200);
    assert.deepEqual(res.body.messages.map((m) => m.data), ['back']);
});
