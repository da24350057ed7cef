//  test/integration/conflate.test.mjs - last-value delivery (queue option
//  conflate) over plain HTTP, and two hot-path follow-ups on how groups
//  count: a queue consumed only by a named group reaches completed
//  retention (no idle queue mode group pins it), and a namespace pop by
//  task alone.
//
//  Conflation: a pop hands out only the newest pending message of each
//  partition; the older pending ones are superseded (consumed for that
//  group, never delivered); each consumer group on its own.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
    startBroker, http, psql, waitFor, configureQueue, pushItems, popMessages, ackBatch, ackFor,
} from './lib.mjs';

let broker;
let U;

before(async () => {
    broker = await startBroker({ env: { RETENTION_INTERVAL: '500', EVICTION_INTERVAL: '500' } });
    U = broker.url;
});

after(async () => {
    if (broker)
        await broker.stop();
});

const configure = (queue, options = {}, extra = {}) => configureQueue(U, queue, options, extra);

const push = (items) => pushItems(U, items, { queued: true });

//  Pops without waiting; resolves to the messages (empty on 204).
const pop = (queue, params = {}, partition) => popMessages(U, queue, { ...params, partition });

async function ack (messages, group) {
    assert.ok(messages.length > 0, 'nothing to ack');
    await ackBatch(U, messages.map((m) => ackFor(m, { status: 'completed' })),
        { ...(group ? { consumerGroup: group } : {}), success: true });
}

function values (messages) {
    return messages.map((m) => `${m.partition}=${m.data.v}`).sort();
}

test('configure echoes conflate', async () => {
    const res = await configure('cf.echo', { conflate: true });
    assert.equal(res.options.conflate, true);
    assert.equal((await configure('cf.echo', {})).options.conflate, false);
});

test('each group gets only the newest pending message per partition; superseded ones never come', async () => {
    const Q = 'cf.groups';
    await configure(Q, { conflate: true });
    const items = [];
    for (let v = 1; v <= 5; v++)
        items.push({ queue: Q, partition: 'a', payload: { v } });
    for (let v = 1; v <= 3; v++)
        items.push({ queue: Q, partition: 'b', payload: { v } });
    await push(items);

    //  Three consumers: two named groups and queue mode.
    const g1 = await pop(Q, { batch: 10, partitions: 10, consumerGroup: 'g1' });
    assert.deepEqual(values(g1), ['a=5', 'b=3']);
    const g2a = await pop(Q, { batch: 10, consumerGroup: 'g2' }, 'a');
    assert.deepEqual(values(g2a), ['a=5']);
    const qm = await pop(Q, { batch: 10, partitions: 10 });
    assert.deepEqual(values(qm), ['a=5', 'b=3']);

    //  g1 acks; it never sees a superseded message, not even after its
    //  lease is gone.
    await ack(g1, 'g1');
    assert.deepEqual(await pop(Q, { batch: 10, partitions: 10, consumerGroup: 'g1' }), []);

    //  A message pushed after the pop is delivered next (to every group).
    await push([{ queue: Q, partition: 'a', payload: { v: 6 } }, { queue: Q, partition: 'a', payload: { v: 7 } }]);
    assert.deepEqual(values(await pop(Q, { batch: 10, partitions: 10, consumerGroup: 'g1' })), ['a=7']);
    //  g2 still holds its lease on a; its other partition has its newest.
    assert.deepEqual(values(await pop(Q, { batch: 10, partitions: 10, consumerGroup: 'g2' })), ['b=3']);
    await ack(g2a, 'g2');
    assert.deepEqual(values(await pop(Q, { batch: 10, partitions: 10, consumerGroup: 'g2' })), ['a=7']);

    //  The superseded messages count as consumed: the admin view of the
    //  group shows no lag on b for g1 once the delivered one is acked.
    const lag = await psql(`SELECT r.acked_seq FROM queen.ready r
        JOIN queen.consumer_groups g ON g.id = r.group_id JOIN queen.queues q ON q.id = g.queue_id
        JOIN queen.partitions p ON p.id = r.partition_id
        WHERE q.name = '${Q}' AND g.name = 'g1' AND p.name = 'b'`, { db: broker.db });
    assert.equal(lag, '', 'g1 drained b (no ready row left)');
});

test('batch stays a global cap; a newer message supersedes a retried one', async () => {
    const Q = 'cf.batch';
    await configure(Q, { conflate: true, retryDelay: 0 });
    await push(['x', 'y', 'z'].flatMap((p) => [1, 2].map((v) => ({ queue: Q, partition: p, payload: { v } }))));
    const one = await pop(Q, { batch: 1, partitions: 3 });
    assert.equal(one.length, 1);
    assert.equal(one[0].data.v, 2);
    //  A failed delivery is retried with whatever is newest by then.
    await push([{ queue: Q, partition: one[0].partition, payload: { v: 3 } }]);
    const res = await http(`${U}/api/v1/ack`, {
        method: 'POST',
        body: { transactionId: one[0].transactionId, partitionId: one[0].partitionId, leaseId: one[0].leaseId, status: 'failed' },
    });
    assert.equal(res.status, 200, res.raw);
    const again = await pop(Q, { batch: 10 }, one[0].partition);
    assert.deepEqual(again.map((m) => m.data.v), [3]);
});

test('autoAck consumes the newest and everything before it', async () => {
    const Q = 'cf.auto';
    await configure(Q, { conflate: true });
    await push([1, 2, 3].map((v) => ({ queue: Q, payload: { v } })));
    const got = await pop(Q, { batch: 10, autoAck: 'true' });
    assert.deepEqual(got.map((m) => m.data.v), [3]);
    assert.deepEqual(await pop(Q, { batch: 10, autoAck: 'true' }), []);
    await push([{ queue: Q, payload: { v: 4 } }]);
    assert.deepEqual((await pop(Q, { batch: 10, autoAck: 'true' })).map((m) => m.data.v), [4]);
});

test('a queue without conflate delivers everything', async () => {
    const Q = 'cf.plain';
    await push([1, 2, 3].map((v) => ({ queue: Q, payload: { v } })));
    assert.deepEqual((await pop(Q, { batch: 10 })).map((m) => m.data.v), [1, 2, 3]);
});

test('follow-up: a queue consumed only by a named group reaches completed retention', async () => {
    const Q = 'cf.bus-retention';
    await configure(Q, { retentionEnabled: true, completedRetentionSeconds: 1 });
    await push([1, 2, 3, 4].map((v) => ({ queue: Q, payload: { v } })));
    const got = await pop(Q, { batch: 3, consumerGroup: 'only' });
    assert.equal(got.length, 3);
    await ack(got, 'only');
    const count = async () => Number(await psql(`SELECT count(*) FROM queen.messages m
        JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
        WHERE q.name = '${Q}'`, { db: broker.db }));
    //  The three consumed ones go; the unconsumed one stays.
    await waitFor(async () => (await count()) === 1, 20000, 200);
    const groups = await psql(`SELECT string_agg(g.name, ',') FROM queen.consumer_groups g
        JOIN queen.queues q ON q.id = g.queue_id WHERE q.name = '${Q}'`, { db: broker.db });
    assert.equal(groups, 'only', 'no queue mode group was created');
    assert.deepEqual((await pop(Q, { batch: 10, consumerGroup: 'only' })).map((m) => m.data.v), [4]);
});

test('follow-up: a namespace pop by task alone', async () => {
    await configure('cf.ns-a', {}, { namespace: 'cfns1', task: 'cftask' });
    await configure('cf.ns-b', {}, { namespace: 'cfns2', task: 'cftask' });
    await push([{ queue: 'cf.ns-a', payload: { v: 1 } }, { queue: 'cf.ns-b', payload: { v: 2 } }]);
    const seen = [];
    for (let i = 0; i < 2; i++) {
        const res = await http(`${U}/api/v1/pop?task=cftask&wait=false&autoAck=true`);
        assert.equal(res.status, 200, res.raw);
        seen.push(...res.body.messages.map((m) => m.data.v));
    }
    assert.deepEqual(seen.sort(), [1, 2]);
    const none = await http(`${U}/api/v1/pop?task=cftask&wait=false`);
    assert.equal(none.status, 204);
    const bad = await http(`${U}/api/v1/pop?wait=false`);
    assert.equal(bad.status, 400);
});
