//  test/integration/admin.test.mjs - resources, messages, status and
//  analytics routes (spec 3.14, 3.15, 3.18, stats refresh of 3.19), driven
//  over plain HTTP against one broker and its own database.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import {
    startBroker, http, sleep, psql, settle, configureQueue, pushItems, popPath, ack as ackRoute, ackFor, waitFor,
} from './lib.mjs';

let broker;
let url;

const TS_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function get (path) {
    return http(`${url}${path}`);
}

const configure = (queue, options = {}, extra = {}) => configureQueue(url, queue, options, extra);
const push = (items) => pushItems(url, items, { queued: true });
//  queue may be "queue/partition/<name>" for a partition pop.
const pop = (queue, query = '') => popPath(url, queue, query);

const ack = (msg, status = 'completed', extra = {}) => ackRoute(url, ackFor(msg, { status, ...extra }), { success: true });

function assertError (res, status, field) {
    assert.equal(res.status, status, `${res.status} ${res.raw}`);
    assert.match(res.headers['content-type'], /application\/json/);
    assert.equal(typeof res.body.error, 'string', res.raw);
    if (field)
        assert.ok(res.body.error.includes(field), `error "${res.body.error}" should name ${field}`);
}

before(async () => {
    broker = await startBroker();
    url = broker.url;
    await settle(url);
});

after(async () => {
    await broker?.stop();
});

test('overview counts follow pushes, pops and acks', async () => {
    await configure('ov.orders.v1');
    await push([
        { queue: 'ov.orders.v1', payload: { n: 1 } },
        { queue: 'ov.orders.v1', payload: { n: 2 } },
        { queue: 'ov.orders.v1', payload: { n: 3 } },
        { queue: 'ov.orders.v1', partition: 'p2', payload: { n: 4 } },
        { queue: 'ov.billing', payload: { n: 5 } },
    ]);
    let res = await get('/api/v1/resources/overview');
    assert.equal(res.status, 200);
    const o = res.body;
    assert.equal(o.queues, 2);
    assert.equal(o.partitions, 3);
    assert.equal(o.namespaces, 1);          //  "ov" (configure gave ov.orders.v1 namespace "")
    assert.deepEqual(o.messages, { total: 5, pending: 5, processing: 0, completed: 0, failed: 0, deadLetter: 0 });
    assert.deepEqual(Object.keys(o.lag), ['time', 'offset']);
    assert.deepEqual(Object.keys(o.lag.time), ['avg', 'median', 'min', 'max']);
    assert.equal(typeof o.throughput.ingestedPerSecond, 'number');
    assert.equal(typeof o.throughput.processedPerSecond, 'number');
    assert.match(o.timestamp, TS_MS);
    assert.equal(o.statsAge, 0);

    const msgs = await pop('ov.orders.v1/partition/Default', '&batch=2');
    assert.equal(msgs.length, 2);
    await ack(msgs[0]);
    res = await get('/api/v1/resources/overview');
    assert.deepEqual(res.body.messages, { total: 5, pending: 3, processing: 1, completed: 1, failed: 0, deadLetter: 0 });

    await ack(msgs[1]);
    res = await get('/api/v1/resources/overview');
    assert.deepEqual(res.body.messages, { total: 5, pending: 3, processing: 0, completed: 2, failed: 0, deadLetter: 0 });
});

test('queue list, detail and 404', async () => {
    await push([
        { queue: 'ql.a', payload: 1 },
        { queue: 'ql.a', partition: 'x', payload: 2 },
    ]);
    await sleep(5);
    await push([{ queue: 'ql.b', payload: 3 }]);
    let res = await get('/api/v1/resources/queues?limit=1');      //  params are ignored
    assert.equal(res.status, 200);
    const names = res.body.queues.map((q) => q.name);
    assert.ok(names.indexOf('ql.b') < names.indexOf('ql.a'), 'newest first');
    const a = res.body.queues.find((q) => q.name === 'ql.a');
    assert.match(a.id, UUID);
    assert.equal(a.namespace, 'ql');
    assert.equal(a.task, 'a');
    assert.match(a.createdAt, TS_MS);
    assert.equal(a.partitions, 2);
    assert.deepEqual(a.messages, { total: 2, pending: 2, processing: 0 });

    res = await get('/api/v1/resources/queues/ql.a');
    assert.equal(res.status, 200);
    assert.equal(res.body.id, a.id);
    assert.equal(res.body.name, 'ql.a');
    assert.deepEqual(res.body.partitions.map((p) => p.name), ['Default', 'x']);
    const p = res.body.partitions[0];
    assert.match(p.id, UUID);
    assert.match(p.createdAt, TS_MS);
    assert.deepEqual(p.stats, { total: 1, pending: 1, processing: 0, completed: 0, failed: 0, deadLetter: 0 });
    assert.match(p.oldestMessage, TS_MS);
    assert.match(p.newestMessage, TS_MS);
    assert.deepEqual(res.body.totals, { total: 2, pending: 2, processing: 0, completed: 0, failed: 0, deadLetter: 0 });

    res = await get('/api/v1/resources/queues/no-such-queue');
    assert.equal(res.status, 404);
    assert.deepEqual(res.body, { error: 'Queue not found' });

    //  Percent-encoded names reach the function decoded
    await push([{ queue: 'q with space', payload: 1 }]);
    res = await get('/api/v1/resources/queues/q%20with%20space');
    assert.equal(res.status, 200);
    assert.equal(res.body.name, 'q with space');
});

test('namespaces and tasks', async () => {
    await push([
        { queue: 'nsx.invoice.v1', payload: 1 },
        { queue: 'nsx.invoice.v2', payload: 1 },
        { queue: 'nsx.refund', payload: 1 },
    ]);
    let res = await get('/api/v1/resources/namespaces');
    assert.equal(res.status, 200);
    const ns = res.body.namespaces.find((n) => n.namespace === 'nsx');
    assert.deepEqual(ns, { namespace: 'nsx', queues: 3, partitions: 3, messages: { total: 3, pending: 3 } });
    const sorted = res.body.namespaces.map((n) => n.namespace);
    assert.deepEqual(sorted, [...sorted].sort());

    res = await get('/api/v1/resources/tasks');
    assert.equal(res.status, 200);
    const t = res.body.tasks.find((x) => x.task === 'invoice');
    assert.deepEqual(t, { task: 'invoice', queues: 2, partitions: 2, messages: { total: 2, pending: 2 } });
});

test('queue delete answers existed, then existed:false; partition delete', async () => {
    await push([
        { queue: 'del.q', payload: 1 },
        { queue: 'del.q', partition: 'keep', payload: 2 },
        { queue: 'del.q', partition: 'drop', payload: 3 },
    ]);
    let res = await http(`${url}/api/v1/resources/queues/del.q/partitions/drop`, { method: 'DELETE' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { deleted: true, queue: 'del.q', partition: 'drop', existed: true });
    res = await http(`${url}/api/v1/resources/queues/del.q/partitions/drop`, { method: 'DELETE' });
    assert.deepEqual(res.body, { deleted: true, queue: 'del.q', partition: 'drop', existed: false });
    res = await get('/api/v1/resources/queues/del.q');
    assert.deepEqual(res.body.partitions.map((p) => p.name), ['Default', 'keep']);
    assert.equal(res.body.totals.total, 2);

    res = await http(`${url}/api/v1/resources/queues/del.q`, { method: 'DELETE' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { deleted: true, queue: 'del.q', existed: true });
    res = await get('/api/v1/resources/queues/del.q');
    assert.equal(res.status, 404);
    res = await get('/api/v1/messages?queue=del.q');
    assert.deepEqual(res.body.messages, []);
    res = await http(`${url}/api/v1/resources/queues/del.q`, { method: 'DELETE' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { deleted: true, queue: 'del.q', existed: false });

    //  A pop after the delete finds nothing; a push re-creates the queue empty but for itself
    assert.deepEqual(await pop('del.q'), []);
    await push([{ queue: 'del.q', payload: 9 }]);
    res = await get('/api/v1/resources/queues/del.q');
    assert.equal(res.body.totals.total, 1);
});

test('messages list: shape, filters, status values, paging, newest first', async () => {
    await configure('ml.q', { retryLimit: 0 }, { namespace: 'mlns', task: 'mltask' });
    const pushed = await push([
        { queue: 'ml.q', payload: { i: 0 }, transactionId: 'ml-0' },
        { queue: 'ml.q', payload: { i: 1 }, transactionId: 'ml-1' },
        { queue: 'ml.q', payload: { i: 2 } },
        { queue: 'ml.q', partition: 'other', payload: { i: 3 }, transactionId: 'ml-3' },
    ]);
    let res = await get('/api/v1/messages?queue=ml.q');
    assert.equal(res.status, 200);
    assert.equal(res.body.messages.length, 4);
    assert.deepEqual(res.body.mode, { hasQueueMode: false, busGroupsCount: 0, type: 'none' });
    const m = res.body.messages.find((x) => x.transactionId === 'ml-0');
    assert.deepEqual(Object.keys(m), ['id', 'transactionId', 'partitionId', 'queuePath', 'queue', 'partition',
        'namespace', 'task', 'status', 'queueStatus', 'busStatus', 'traceId', 'producerSub', 'queuePriority',
        'createdAt', 'leaseExpiresAt']);
    assert.equal(m.id, pushed[0].message_id);
    assert.equal(m.partitionId, pushed[0].partition_id);
    assert.equal(m.queuePath, 'ml.q/Default');
    assert.equal(m.status, 'pending');
    assert.deepEqual(m.busStatus, { consumedBy: 0, totalGroups: 0 });
    assert.match(m.createdAt, TS_MS);
    //  Newest first: seq order breaks created_at ties
    const ids = res.body.messages.map((x) => x.id);
    assert.deepEqual(ids, [...ids].sort().reverse());
    //  A generated transactionId is the message id
    assert.equal(res.body.messages.find((x) => x.id === pushed[2].message_id).transactionId, pushed[2].message_id);

    //  pop 2 from Default (processing), ack one (completed), dead-letter one in "other"
    const got = await pop('ml.q/partition/Default', '&batch=2');
    assert.deepEqual(got.map((x) => x.transactionId), ['ml-0', 'ml-1']);
    await ack(got[0]);
    const other = await pop('ml.q/partition/other');
    assert.equal(other.length, 1);
    const byStatus = async (s) => (await get(`/api/v1/messages?queue=ml.q&status=${s}`)).body.messages;
    res = await get('/api/v1/messages?queue=ml.q');
    const statuses = Object.fromEntries(res.body.messages.map((x) => [x.transactionId, x.status]));
    assert.equal(statuses[got[0].transactionId], 'completed');
    assert.equal(statuses[got[1].transactionId], 'processing');
    assert.ok(res.body.messages.find((x) => x.status === 'processing').leaseExpiresAt.match(TS_MS));
    assert.deepEqual(res.body.mode, { hasQueueMode: true, busGroupsCount: 0, type: 'queue' });

    await ack(got[1], 'failed', { error: 'boom' });            //  retryLimit 0: dead-lettered
    assert.deepEqual((await byStatus('dead_letter')).map((x) => x.transactionId), [got[1].transactionId]);
    assert.deepEqual((await byStatus('completed')).map((x) => x.transactionId), [got[0].transactionId]);
    assert.deepEqual((await byStatus('processing')).map((x) => x.transactionId), ['ml-3']);
    assert.deepEqual((await byStatus('pending')).map((x) => x.id), [pushed[2].message_id]);

    //  filters
    res = await get('/api/v1/messages?queue=ml.q&partition=other');
    assert.deepEqual(res.body.messages.map((x) => x.transactionId), ['ml-3']);
    res = await get('/api/v1/messages?ns=mlns&task=mltask');
    assert.equal(res.body.messages.length, 4);
    res = await get('/api/v1/messages?ns=nope');
    assert.deepEqual(res.body.messages, []);
    res = await get('/api/v1/messages?queue=ml.q&to=2000-01-01T00:00:00Z');
    assert.deepEqual(res.body.messages, []);
    res = await get('/api/v1/messages?queue=ml.q&from=2000-01-01T00:00:00Z&to=' + encodeURIComponent(new Date().toISOString()));
    assert.equal(res.body.messages.length, 4);
    //  paging
    const all = (await get('/api/v1/messages?queue=ml.q')).body.messages.map((x) => x.id);
    const p1 = (await get('/api/v1/messages?queue=ml.q&limit=3')).body.messages.map((x) => x.id);
    const p2 = (await get('/api/v1/messages?queue=ml.q&limit=3&offset=3')).body.messages.map((x) => x.id);
    assert.deepEqual([...p1, ...p2], all);
});

test('messages of named groups: bus status', async () => {
    await push([
        { queue: 'bus.q', payload: 1, transactionId: 'b1' },
        { queue: 'bus.q', payload: 2, transactionId: 'b2' },
    ]);
    const a = await pop('bus.q', '&consumerGroup=ga&batch=2');
    assert.equal(a.length, 2);
    for (const m of a)
        await ack(m, 'completed', { consumerGroup: 'ga' });
    const b = await pop('bus.q', '&consumerGroup=gb&batch=1');
    assert.equal(b.length, 1);
    await ack(b[0], 'completed', { consumerGroup: 'gb' });
    const res = await get('/api/v1/messages?queue=bus.q');
    assert.deepEqual(res.body.mode, { hasQueueMode: false, busGroupsCount: 2, type: 'bus' });
    const st = Object.fromEntries(res.body.messages.map((x) => [x.transactionId, [x.status, x.busStatus]]));
    assert.deepEqual(st.b1, ['completed', { consumedBy: 2, totalGroups: 2 }]);
    assert.deepEqual(st.b2, ['pending', { consumedBy: 1, totalGroups: 2 }]);
});

test('get and delete one message', async () => {
    const [r1, r2] = await push([
        { queue: 'one.q', payload: { hello: ['w', 1, null] }, transactionId: 'one-1' },
        { queue: 'one.q', payload: 'plain' },
    ]);
    let res = await get(`/api/v1/messages/${r1.partition_id}/one-1`);
    assert.equal(res.status, 200, res.raw);
    const m = res.body;
    assert.equal(m.id, r1.message_id);
    assert.equal(m.transactionId, 'one-1');
    assert.deepEqual(m.payload, { hello: ['w', 1, null] });
    assert.equal(m.isEncrypted, false);
    assert.equal(m.status, 'pending');
    assert.equal(m.errorMessage, null);
    assert.equal(m.retryCount, null);
    assert.deepEqual(m.queueConfig, { leaseTime: 300, retryLimit: 3, retryDelay: 1000, ttl: 3600, priority: 0 });
    assert.deepEqual(Object.keys(m.mode), ['hasQueueMode', 'busGroupsCount', 'consumedByGroups', 'type']);
    assert.ok(Array.isArray(m.consumerGroups));
    //  Raw payload bytes come back as sent
    assert.ok(res.raw.includes('{"hello":["w",1,null]}'));

    //  message-id form of a generated transactionId
    res = await get(`/api/v1/messages/${r2.partition_id}/${r2.message_id}`);
    assert.equal(res.status, 200);
    assert.equal(res.body.payload, 'plain');
    assert.equal(res.body.transactionId, r2.message_id);

    res = await get(`/api/v1/messages/${r1.partition_id}/nope`);
    assert.equal(res.status, 404);
    assert.deepEqual(res.body, { error: 'Message not found' });
    //  A UUID that is not one of our partition ids
    res = await get('/api/v1/messages/123e4567-e89b-12d3-a456-426614174000/one-1');
    assert.equal(res.status, 404);
    res = await get('/api/v1/messages/not-a-uuid/one-1');
    assertError(res, 400, 'partitionId');

    res = await http(`${url}/api/v1/messages/${r1.partition_id}/one-1`, { method: 'DELETE' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { success: true, partitionId: r1.partition_id, transactionId: 'one-1',
                                 message: 'Message deleted successfully' });
    res = await get(`/api/v1/messages/${r1.partition_id}/one-1`);
    assert.equal(res.status, 404);
    res = await http(`${url}/api/v1/messages/${r1.partition_id}/one-1`, { method: 'DELETE' });
    assert.equal(res.status, 404);
    assert.equal(res.body.success, false);
    assert.equal(res.body.message, 'Message not found');
    //  Dedup lasts as long as the row: the key is free again
    const again = await push([{ queue: 'one.q', payload: 1, transactionId: 'one-1' }]);
    assert.equal(again[0].status, 'queued');
    //  The remaining message is still consumable
    const got = await pop('one.q', '&batch=10');
    assert.deepEqual(got.map((x) => x.transactionId), [r2.message_id, 'one-1']);
});

test('deleting a leased message releases a lease that waits only for it', async () => {
    const [r1] = await push([{ queue: 'dl.lease', payload: 1, transactionId: 'x1' }]);
    const got = await pop('dl.lease');
    assert.equal(got.length, 1);
    const res = await http(`${url}/api/v1/messages/${r1.partition_id}/x1`, { method: 'DELETE' });
    assert.equal(res.status, 200);
    await push([{ queue: 'dl.lease', payload: 2, transactionId: 'x2' }]);
    const next = await pop('dl.lease');
    assert.deepEqual(next.map((x) => x.transactionId), ['x2']);
});

test('the message read route decrypts an encrypted payload with the server key', async () => {
    const key = crypto.randomBytes(32);
    const b = await startBroker({ env: { QUEEN_ENCRYPTION_KEY: key.toString('hex') } });
    try {
        const iv = crypto.randomBytes(16);
        const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
        const plain = JSON.stringify({ secret: 'läuft', n: [1, 2] });
        const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
        const stored = JSON.stringify({ encrypted: ct.toString('base64'), iv: iv.toString('base64'),
                                        authTag: cipher.getAuthTag().toString('base64') });
        const sql = `SELECT queen.uuid_of(2, partition_id) FROM queen.push('', ARRAY['enc.q'], ARRAY['Default'],
                     ARRAY['e1'], ARRAY[convert_to($q$${stored}$q$, 'UTF8')], ARRAY[NULL::uuid],
                     ARRAY[NULL::text], ARRAY[true], false)`;
        const pid = await psql(sql, { db: b.db });
        const res = await http(`${b.url}/api/v1/messages/${pid}/e1`);
        assert.equal(res.status, 200, res.raw);
        assert.equal(res.body.isEncrypted, true);
        assert.deepEqual(res.body.payload, { secret: 'läuft', n: [1, 2] });
        //  The DLQ and list routes never carry the plaintext
        const list = await http(`${b.url}/api/v1/messages?queue=enc.q`);
        assert.ok(!list.raw.includes('secret'));
    } finally {
        await b.stop();
    }
});

test('the throughput figures come from the ingest rollup the retention actor keeps', async () => {
    await push(Array.from({ length: 7 }, (_, i) => ({ queue: 'ingest.q', partition: `p${i % 3}`, payload: i })));
    //  before the rollup the reads count the partitions' growth past their marks
    const sum = (r) => r.body.throughput.reduce((s, p) => s + p.ingested, 0);
    assert.equal(sum(await get('/api/v1/status?queue=ingest.q')), 7);
    //  the segment tick (every 10 s) folds them into the queue's minutes
    const rolled = async () => Number(await psql(`SELECT COALESCE(sum(i.ingested), 0) FROM queen.ingest_minutes i
        JOIN queen.queues q ON q.id = i.queue_id WHERE q.name = 'ingest.q'`, { db: broker.db }));
    await waitFor(async () => await rolled() === 7, 30000, 500);
    assert.equal(sum(await get('/api/v1/status?queue=ingest.q')), 7);
    assert.ok((await get('/api/v1/resources/overview')).body.throughput.ingestedPerSecond > 0);
});

test('status and analytics routes are well formed', async () => {
    await push([{ queue: 'st.q', payload: 1 }, { queue: 'st.q', partition: 'b', payload: 2 }]);
    let res = await get('/api/v1/status');
    assert.equal(res.status, 200);
    for (const k of ['timeRange', 'bucketMinutes', 'pointCount', 'throughput', 'queues', 'messages', 'leases',
                     'deadLetterQueue', 'workers', 'errors', 'statsAge'])
        assert.ok(k in res.body, k);
    assert.equal(res.body.throughput.length, res.body.pointCount);
    const ingested = res.body.throughput.reduce((s, p) => s + p.ingested, 0);
    assert.ok(ingested >= 2);
    for (const k of ['timestamp', 'ingested', 'processed', 'popMessages', 'ingestedPerSecond',
                     'processedPerSecond', 'popPerSecond', 'avgLagMs', 'maxLagMs'])
        assert.ok(k in res.body.throughput[0], k);
    assert.deepEqual(Object.keys(res.body.messages), ['total', 'pending', 'processing', 'completed', 'failed',
                                                      'deadLetter', 'requests', 'batchEfficiency']);
    assert.deepEqual(Object.keys(res.body.leases), ['active', 'partitionsWithLeases', 'totalBatchSize', 'totalAcked']);
    res = await get('/api/v1/status?queue=st.q');
    assert.deepEqual(res.body.queues.map((q) => q.name), ['st.q']);
    assert.equal(res.body.messages.total, 2);

    res = await get('/api/v1/status/queues?limit=500&offset=0');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.pagination, { limit: 500, offset: 0 });
    assert.ok(res.body.queues.some((q) => q.name === 'st.q'));

    res = await get('/api/v1/status/queues/st.q');
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body), ['queue', 'partitions', 'totals']);
    assert.deepEqual(Object.keys(res.body.queue.config), ['leaseTime', 'retryLimit', 'retryDelay', 'ttl',
                                                          'maxQueueSize', 'deadLetterQueue']);
    assert.equal(res.body.partitions.length, 2);
    for (const k of ['id', 'name', 'createdAt', 'messages', 'stats', 'cursor', 'lastActivity', 'oldestMessage',
                     'newestMessage'])
        assert.ok(k in res.body.partitions[0], k);
    assert.equal(res.body.totals.total, 2);
    assert.deepEqual(res.body.totals.messages, { total: 2, pending: 2, processing: 0 });
    res = await get('/api/v1/status/queues/nope');
    assert.equal(res.status, 404);

    res = await get('/api/v1/status/queues/st.q/messages?limit=1');
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.body));
    assert.equal(res.body.length, 1);
    assert.deepEqual(Object.keys(res.body[0]), ['id', 'transactionId', 'partitionId', 'queuePath', 'queue',
                                                'partition', 'status', 'createdAt']);
    res = await get('/api/v1/status/queues/st.q/messages?limit=1&offset=1');
    assert.equal(res.body.length, 1);

    res = await get('/api/v1/status/analytics?interval=minute&from=' + encodeURIComponent(new Date(Date.now() - 600000).toISOString()));
    assert.equal(res.status, 200);
    assert.equal(res.body.interval, 'minute');
    assert.ok(res.body.dataPoints.length >= 10);
    assert.ok(res.body.dataPoints.reduce((s, p) => s + p.messages, 0) >= 2);
    res = await get('/api/v1/status/analytics');
    assert.equal(res.body.interval, 'hour');

    res = await get('/api/v1/analytics/queue-lag');
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.body));
    res = await get('/api/v1/analytics/postgres-stats');
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body), ['timestamp', 'database', 'databaseCache', 'tableCache', 'indexCache',
        'cacheSummary', 'deadTuples', 'hotUpdates', 'activeQueries', 'autovacuumStatus', 'bufferConfig',
        'bufferUsage', 'tableSizes']);
    const shapes = {
        'system-metrics': ['timeRange', 'replicas', 'replicaCount', 'bucketMinutes', 'pointCount'],
        'worker-metrics': ['timeRange', 'bucketMinutes', 'pointCount', 'timeSeries', 'workers', 'queues', 'summary'],
        'queue-ops': ['timeRange', 'bucketMinutes', 'series', 'queues'],
        'queue-parked-replicas': ['timeRange', 'bucketMinutes', 'series', 'replicas'],
        retention: ['timeRange', 'bucketMinutes', 'series', 'totals'],
    };
    for (const [route, keys] of Object.entries(shapes)) {
        res = await get(`/api/v1/analytics/${route}`);
        assert.equal(res.status, 200, route);
        assert.deepEqual(Object.keys(res.body), keys, route);
    }

    res = await http(`${url}/api/v1/stats/refresh`, { method: 'POST', body: {} });
    assert.equal(res.status, 200);
    for (const k of ['partition', 'queue', 'namespace', 'task', 'system', 'cleanup'])
        assert.ok(k in res.body, k);
    //  Body ignored, even none
    res = await http(`${url}/api/v1/stats/refresh`, { method: 'POST' });
    assert.equal(res.status, 200);
});

test('bad inputs get a 400 naming the field, never a 5xx', async () => {
    const long = 'q'.repeat(300);
    const cases = [
        ['/api/v1/messages?limit=0', 'limit'],
        ['/api/v1/messages?limit=10001', 'limit'],
        ['/api/v1/messages?offset=-1', 'offset'],
        ['/api/v1/messages?status=bogus', 'status'],
        ['/api/v1/messages?from=yesterday', 'from'],
        ['/api/v1/messages?to=2020-13-45', 'to'],
        [`/api/v1/messages?queue=${long}`, 'queue'],
        ['/api/v1/messages?queue=%FF%FE', 'queue'],
        [`/api/v1/resources/queues/${long}`, 'queue'],
        ['/api/v1/resources/queues/%C3%28', 'queue'],
        ['/api/v1/messages/zzz/t', 'partitionId'],
        [`/api/v1/messages/00000002-0000-8000-8000-000000000001/${'t'.repeat(256)}`, 'transactionId'],
        ['/api/v1/status?from=nope', 'from'],
        ['/api/v1/status/queues?limit=-5', 'limit'],
        ['/api/v1/status/queues/x/messages?offset=-1', 'offset'],
        ['/api/v1/status/analytics?interval=week', 'interval'],
        ['/api/v1/analytics/queue-lag?to=x', 'to'],
    ];
    for (const [path, field] of cases)
        assertError(await get(path), 400, field);
    //  An unparsable integer means "use the default" (spec 1.5)
    let res = await get('/api/v1/messages?limit=abc');
    assert.equal(res.status, 200);
    //  Unknown parameters are ignored
    res = await get('/api/v1/resources/overview?whatever=1');
    assert.equal(res.status, 200);
    //  A GET with a JSON content type and no body is fine
    res = await http(`${url}/api/v1/resources/queues`, { headers: { 'Content-Type': 'application/json' } });
    assert.equal(res.status, 200);
    //  Time range upside down
    res = await get('/api/v1/status?from=2030-01-01T00:00:00Z&to=2020-01-01T00:00:00Z');
    assertError(res, 400, 'time range');
    //  The broker is still healthy
    res = await get('/health');
    assert.equal(res.status, 200);
});

//  One JSON writer (issue 10): a body built by PostgreSQL (json_build_object
//  spells "leaseTime" : 30) goes out in the broker's compact spelling, so a
//  client cannot tell which layer answered; a stored payload still goes
//  out byte-for-byte as pushed.
test('admin and status bodies are compact JSON; payloads as pushed', async () => {
    await configure('compact.q', { leaseTime: 30, retryLimit: 2 });
    //  The configure answer echoes the options PostgreSQL returns.
    const conf = await http(`${url}/api/v1/configure`, {
        method: 'POST', body: { queue: 'compact.q', options: { leaseTime: 30, retryLimit: 2 } },
    });
    assert.equal(conf.status, 200, conf.raw);
    assert.ok(conf.raw.includes('"leaseTime":30'), conf.raw);
    assert.ok(!/\s/.test(conf.raw.replace(/"(?:[^"\\]|\\.)*"/g, '""')), `configure is not compact: ${conf.raw}`);
    const spaced = '{ "n" : 1,  "s" : [1 , 2] }';
    const pushed = await http(`${url}/api/v1/push`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: `{"items":[{"queue":"compact.q","partition":"p1","payload":${spaced}}]}`,
    });
    assert.equal(pushed.status, 201, pushed.raw);
    const routes = [
        '/api/v1/resources/overview', '/api/v1/resources/queues',
        '/api/v1/resources/queues/compact.q', '/api/v1/resources/namespaces',
        '/api/v1/resources/tasks', '/api/v1/messages?queue=compact.q', '/api/v1/dlq',
        '/api/v1/consumer-groups', '/api/v1/status', '/api/v1/status/queues',
        '/api/v1/status/queues/compact.q', '/api/v1/status/queues/compact.q/messages',
        '/api/v1/status/analytics', '/api/v1/analytics/queue-lag',
        '/api/v1/analytics/postgres-stats', '/api/v1/analytics/system-metrics',
    ];
    for (const path of routes) {
        const res = await get(path);
        assert.equal(res.status, 200, `${path}: ${res.raw}`);
        assert.ok(res.raw.length > 2, `${path}: ${res.raw}`);
        assert.ok(!res.raw.includes('" : '), `${path} is spelt by PostgreSQL: ${res.raw.slice(0, 200)}`);
        //  No whitespace at all outside strings.
        const outside = res.raw.replace(/"(?:[^"\\]|\\.)*"/g, '""');
        assert.ok(!/\s/.test(outside), `${path} is not compact: ${res.raw.slice(0, 200)}`);
    }
    //  The message read route keeps the payload's own spelling.
    const list = await get('/api/v1/messages?queue=compact.q');
    const m = (list.body.messages ?? list.body)[0];
    assert.ok(m, list.raw);
    const one = await get(`/api/v1/messages/${m.partitionId}/${m.transactionId}`);
    assert.equal(one.status, 200, one.raw);
    assert.ok(one.raw.includes(`"payload":${spaced}`), one.raw);
    //  Its queue configuration (json_build_object) in the compact spelling.
    assert.ok(one.raw.includes('"leaseTime":30'), one.raw);
    assert.ok(!one.raw.replace(spaced, '').includes('" : '), one.raw);
});
