//  test/integration/retention.test.mjs - the retention actor (contract §5)
//
//  With RETENTION_INTERVAL / EVICTION_INTERVAL of 500 ms: retentionSeconds
//  deletes every old message, completedRetentionSeconds only the consumed
//  ones, maxWaitTimeSeconds moves unconsumed ones to the dead-letter queue
//  (regardless of retentionEnabled) and leaves consumed ones, and queues
//  without a policy keep everything.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
    startBroker, http, psql, waitFor, sleep, configureQueue, pushItems, popMessages, dlqList,
} from './lib.mjs';

let broker;

before(async () => {
    broker = await startBroker({ env: { RETENTION_INTERVAL: '500', EVICTION_INTERVAL: '500' } });
});

after(async () => {
    if (broker)
        await broker.stop();
});

const configure = (queue, options) => configureQueue(broker.url, queue, options);

async function push (queue, n, partition = 'Default') {
    const items = Array.from({ length: n }, (_, i) => ({ queue, partition, payload: { i } }));
    await pushItems(broker.url, items, { queued: true });
}

async function count (queue) {
    return Number(await psql(`SELECT count(*) FROM queen.messages m
        JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '${queue}'`, { db: broker.db }));
}

async function payloads (queue) {
    const out = await psql(`SELECT convert_from(m.payload, 'UTF8') FROM queen.messages m
        JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '${queue}' ORDER BY m.seq`,
    { db: broker.db });
    return out ? out.split('\n').map((line) => JSON.parse(line).i) : [];
}

//  Consumes (autoAck) n messages in queue mode through the pop route.
async function consume (queue, n) {
    const msgs = await popMessages(broker.url, queue, { batch: n, autoAck: true });
    assert.equal(msgs.length, n);
}

test('retentionSeconds deletes every message older than it', async () => {
    await configure('ret-age', { retentionEnabled: true, retentionSeconds: 1 });
    await configure('ret-none', {});
    await push('ret-age', 20);
    await push('ret-age', 5, 'other');
    await push('ret-none', 10);
    assert.equal(await count('ret-age'), 25);
    await waitFor(async () => await count('ret-age') === 0, 15000, 200);
    //  A queue without a policy keeps its messages.
    assert.equal(await count('ret-none'), 10);
    //  The counter shows what the actor did.
    const res = await http(`${broker.url}/metrics/prometheus`);
    assert.match(res.raw, /queen_retention_deleted_total \d+/);
    const deleted = Number(/queen_retention_deleted_total (\d+)/.exec(res.raw)[1]);
    assert.ok(deleted >= 25, `retention_deleted=${deleted}`);
});

test('retentionSeconds needs retentionEnabled', async () => {
    await configure('ret-off', { retentionEnabled: false, retentionSeconds: 1, completedRetentionSeconds: 1 });
    await push('ret-off', 5);
    await configure('ret-probe', { retentionEnabled: true, retentionSeconds: 1 });
    await push('ret-probe', 1);
    //  Once a later probe is gone, several passes have run.
    await waitFor(async () => await count('ret-probe') === 0, 15000, 200);
    await sleep(1500);
    assert.equal(await count('ret-off'), 5);
});

test('completedRetentionSeconds deletes only consumed messages', async () => {
    await configure('ret-done', { retentionEnabled: true, completedRetentionSeconds: 1 });
    await push('ret-done', 10);
    await consume('ret-done', 4);
    await waitFor(async () => await count('ret-done') === 6, 15000, 200);
    //  Several more passes later the unconsumed ones are all still there.
    await sleep(2500);
    assert.deepEqual(await payloads('ret-done'), [4, 5, 6, 7, 8, 9]);
});

test('maxWaitTimeSeconds moves unconsumed messages to the dead-letter queue', async () => {
    await configure('ret-wait', { maxWaitTimeSeconds: 2 });
    await push('ret-wait', 8);
    await consume('ret-wait', 3);
    //  The unconsumed ones leave; the consumed ones are not this policy's.
    await waitFor(async () => await count('ret-wait') === 3, 20000, 200);
    assert.deepEqual(await payloads('ret-wait'), [0, 1, 2]);
    const out = await psql(`SELECT d.seq, d.error, d.consumer_group, convert_from(d.payload, 'UTF8')
        FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id
        WHERE q.name = 'ret-wait' ORDER BY d.seq`, { db: broker.db });
    const rows = out.split('\n').map((line) => line.split('|'));
    assert.equal(rows.length, 5, out);
    assert.deepEqual(rows.map((r) => JSON.parse(r[3]).i), [3, 4, 5, 6, 7]);
    for (const r of rows) {
        assert.match(r[1], /maxWaitTimeSeconds/);
        assert.equal(r[2], '__QUEUE_MODE__');
    }
    //  The DLQ route shows them too.
    assert.equal((await dlqList(broker.url, 'queue=ret-wait')).messages.length, 5);
});
