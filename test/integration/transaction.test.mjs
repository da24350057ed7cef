//  test/integration/transaction.test.mjs - POST /api/v1/transaction (contract
//  §3.12) against a real PostgreSQL: pushes and acks commit together or not
//  at all, duplicate pushes and expired required leases fail the whole
//  transaction, unknown operation types, validation, result shapes.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
    http, psql, startBroker, sleep, waitFor, warmUp, configureQueue, pushItems, popMessages, request,
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

const lit = (s) => `'${String(s).replace(/'/g, "''")}'`;
const sql = (text) => psql(text, { db: b.db });
const post = (p, body, opts = {}) => http(`${b.url}${p}`, { method: 'POST', body, ...opts });
//  POST /api/v1/transaction; expects 200. Resolves to the response.
const txn = (operations, extra = {}) => request(b.url, '/api/v1/transaction', {
    method: 'POST', body: { operations, ...extra },
});
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function configure (queue, options) {
    await configureQueue(b.url, queue, options);
}

const push = (queue, items) => pushItems(b.url, items.map((it) => ({ queue, ...it })));

//  Messages stored in a queue: "partition:payload" in delivery order.
const stored = (queue) => sql(`SELECT coalesce(string_agg(p.name || ':' || convert_from(m.payload, 'UTF8'), ',' ORDER BY m.seq), '')
    FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
    WHERE q.name = ${lit(queue)}`);

//  Pops through GET /api/v1/pop/queue/:q; resolves to the messages.
const pop = (queue, { batch = 1, group } = {}) => popMessages(b.url, queue, { batch, consumerGroup: group });

const ackOp = (m, extra = {}) => ({ type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, ...extra });

test('transaction: push and ack commit together; results in operation order', async () => {
    await configure('t-src', { leaseTime: 30 });
    await push('t-src', [{ payload: { n: 1 }, transactionId: 'src-1' }, { payload: { n: 2 }, transactionId: 'src-2' }]);
    const msgs = await pop('t-src', { batch: 2 });
    assert.equal(msgs.length, 2);
    const res = await txn([
        { type: 'push', items: [{ queue: 't-dst', partition: 'p1', payload: { out: 1 } }, { queue: 't-dst', payload: { out: 2 }, transactionId: 'dst-2' }] },
        ackOp(msgs[0], { status: 'completed' }),
        { type: 'push', items: [{ queue: 't-dst2' }] },
        ackOp(msgs[1]),
    ], { requiredLeases: [msgs[0].leaseId] });
    assert.equal(res.status, 200, res.raw);
    assert.match(res.body.transactionId, UUID);
    assert.equal(res.body.success, true);
    const r = res.body.results;
    assert.deepEqual(r.map((x) => [x.index, x.type, x.success]),
        [[0, 'push', true], [1, 'push', true], [2, 'ack', true], [3, 'push', true], [4, 'ack', true]]);
    assert.match(r[0].messageId, UUID);
    assert.equal(r[0].transactionId, r[0].messageId, 'no transactionId given: the message id');
    assert.match(r[0].partitionId, UUID);
    assert.equal(r[0].queueName, 't-dst');
    assert.equal(r[1].transactionId, 'dst-2');
    assert.notEqual(r[1].partitionId, r[0].partitionId);
    assert.deepEqual([r[2].transactionId, r[2].error, r[2].dlq], ['src-1', null, false]);
    assert.equal(r[3].queueName, 't-dst2');
    assert.equal(r[4].transactionId, 'src-2');
    assert.notEqual(res.body.transactionId, r[0].messageId);
    //  Everything is visible at once (read-your-writes) and the source is consumed.
    assert.equal(await stored('t-dst'), 'p1:{"out":1},Default:{"out":2}');
    assert.equal(await stored('t-dst2'), 'Default:{}', 'a push without payload stores {}');
    const first = await pop('t-dst', { batch: 10 });
    const second = await pop('t-dst', { batch: 10 });
    assert.deepEqual([first.length, second.length], [1, 1], 'one message in each of two partitions');
    assert.deepEqual(await pop('t-src', { batch: 2 }), [], 'both source messages acked');
});

test('transaction: a missing message rolls everything back; the source stays deliverable', async () => {
    await configure('t-rb-src', { leaseTime: 1 });
    await push('t-rb-src', [{ payload: 'keep', transactionId: 'rb-1' }]);
    const [m] = await pop('t-rb-src');
    const res = await txn([
        { type: 'push', items: [{ queue: 't-rb-dst', payload: 'never' }] },
        ackOp(m),
        ackOp(m, { transactionId: 'does-not-exist' }),
    ]);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, false);
    assert.match(res.body.transactionId, UUID);
    assert.equal(res.body.error, 'ACK operation failed: Message not found');
    assert.deepEqual(res.body.results.map((x) => [x.index, x.type, x.success]),
        [[0, 'push', true], [1, 'ack', true], [2, 'ack', false]]);
    assert.equal(res.body.results[2].error, 'Message not found');
    assert.equal(res.body.results[2].transactionId, 'does-not-exist');
    assert.equal(await stored('t-rb-dst'), '', 'nothing pushed');
    //  The source message comes back once its 1 s lease has run out.
    const again = await waitFor(async () => {
        const got = await pop('t-rb-src');
        return got.length ? got : null;
    }, 10000, 200);
    assert.equal(again[0].transactionId, 'rb-1');
});

test('transaction: a duplicate push fails the transaction, nothing else applies', async () => {
    await push('t-dup', [{ payload: 'original', transactionId: 'dup-1' }]);
    const res = await txn([
        { type: 'push', items: [{ queue: 't-dup', payload: 'fresh', transactionId: 'fresh-1' }] },
        { type: 'push', items: [{ queue: 't-dup', payload: 'copy', transactionId: 'dup-1' }] },
    ]);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, false);
    assert.match(res.body.error, /duplicate/i);
    assert.deepEqual(res.body.results.map((x) => [x.index, x.type]), [[0, 'push']], 'entries before the failing push');
    assert.equal(await stored('t-dup'), 'Default:"original"');
    //  A repeated key inside one transaction fails it too.
    const twice = await txn([{ type: 'push', items: [{ queue: 't-dup', transactionId: 'tw', payload: 1 }, { queue: 't-dup', transactionId: 'tw', payload: 2 }] }]);
    assert.equal(twice.body.success, false, twice.raw);
    assert.equal(await stored('t-dup'), 'Default:"original"');
});

test('transaction: an expired required lease fails it; failed/dlq acks dead-letter at once', async () => {
    await configure('t-lease', { leaseTime: 1 });
    await push('t-lease', [{ payload: 1, transactionId: 'tl-1' }]);
    const [m] = await pop('t-lease');
    await sleep(1500);
    const res = await txn([{ type: 'push', items: [{ queue: 't-lease-out', payload: 1 }] }, ackOp(m)],
        { requiredLeases: [m.leaseId] });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, false);
    assert.match(res.body.error, /lease/i);
    assert.deepEqual(res.body.results, []);
    assert.equal(await stored('t-lease-out'), '');

    await configure('t-fail', { retryLimit: 5 });
    await push('t-fail', [{ payload: 1, transactionId: 'tf-1' }]);
    const [f] = await pop('t-fail');
    const failed = await txn([ackOp(f, { status: 'failed', error: 'bad input' })], { requiredLeases: [f.leaseId, ''] });
    assert.equal(failed.body.success, true, failed.raw);
    assert.deepEqual([failed.body.results[0].type, failed.body.results[0].dlq], ['ack', true]);
    assert.equal(await sql(`SELECT error FROM queen.dead_letters WHERE txn_id = 'tf-1'`), 'bad input');
    assert.deepEqual(await pop('t-fail'), []);

    //  An unknown ack status fails the transaction.
    await push('t-fail', [{ payload: 2, transactionId: 'tf-2' }]);
    const [g] = await pop('t-fail');
    const bogus = await txn([ackOp(g, { status: 'bogus' })]);
    assert.equal(bogus.body.success, false, bogus.raw);
    assert.equal(bogus.body.results[0].success, false);
});

test('transaction: an ack creates the consumer group state it names', async () => {
    await push('t-group', [{ payload: 1, transactionId: 'tg-1' }, { payload: 2, transactionId: 'tg-2' }]);
    const part = await sql(`SELECT queen.uuid_of(2, p.id) FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 't-group'`);
    const res = await txn([{ type: 'ack', transactionId: 'tg-1', partitionId: part, consumerGroup: 'fresh' }]);
    assert.equal(res.body.success, true, res.raw);
    const got = await pop('t-group', { group: 'fresh', batch: 10 });
    assert.deepEqual(got.map((x) => x.transactionId), ['tg-2'], 'the new group starts after the acked message');
});

test('transaction: unknown operation type fails without touching the database', async () => {
    const res = await txn([
        { type: 'push', items: [{ queue: 't-unknown', payload: 1 }] },
        { type: 'frobnicate', foo: 1 },
    ]);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, false);
    assert.equal(res.body.error, 'Unknown operation type: frobnicate');
    assert.match(res.body.transactionId, UUID);
    assert.deepEqual(res.body.results.map((x) => [x.index, x.type, x.success]), [[0, 'push', true], [1, 'frobnicate', false]]);
    assert.equal(await sql(`SELECT count(*) FROM queen.queues WHERE name = 't-unknown'`), '0');
});

test('transaction: bad input gets a 400 naming the field, nothing written', async () => {
    const part = '00000002-0000-8000-8000-000000000001';
    const cases = [
        ['', /^Empty request body$/],
        ['{"operations":', /^Invalid JSON/],
        [{}, /^operations array required$/],
        [{ operations: {} }, /^operations array required$/],
        [{ operations: [] }, /^operations array cannot be empty$/],
        [{ operations: [{ items: [] }] }, /^operations\[0\]\.type must be a string$/],
        [{ operations: [{ type: 5 }] }, /^operations\[0\]\.type must be a string$/],
        [{ operations: [{ type: 'push' }] }, /^operations\[0\]\.items array is required$/],
        [{ operations: [{ type: 'push', items: [{ payload: 1 }] }] }, /^Queue must be a string$/],
        [{ operations: [{ type: 'push', items: [{ queue: 'q', partition: 1 }] }] }, /^Partition must be a string$/],
        [{ operations: [{ type: 'push', items: [{ queue: 'q', traceId: 'nope' }] }] }, /^TraceId must be a UUID/],
        [{ operations: [{ type: 'push', items: [{ queue: 'q'.repeat(256) }] }] }, /queue must be at most 255 bytes/],
        [{ operations: [{ type: 'ack', partitionId: part }] }, /transactionId is required/],
        [{ operations: [{ type: 'ack', transactionId: 't' }] }, /partitionId is required to ensure message uniqueness/],
        [{ operations: [{ type: 'ack', transactionId: 't', partitionId: 'x' }] }, /partitionId must be a valid UUID/],
        [{ operations: [{ type: 'ack', transactionId: 't', partitionId: part, leaseId: 'x' }] }, /leaseId must be a valid UUID/],
        [{ operations: [{ type: 'push', items: [{ queue: 'q' }] }], requiredLeases: 'x' }, /^requiredLeases must be an array/],
        [{ operations: [{ type: 'push', items: [{ queue: 'q' }] }], requiredLeases: ['x'] }, /^requiredLeases\[0\] must be a valid UUID$/],
        [{ operations: [{ type: 'push', items: Array.from({ length: 10000 }, () => ({ queue: 'q' })) }, { type: 'ack', transactionId: 't', partitionId: part }] },
            /at most 10000/],
    ];
    const before = await sql('SELECT count(*) FROM queen.queues');
    for (const [body, re] of cases) {
        const res = await post('/api/v1/transaction', body, { headers: { 'Content-Type': 'application/json' } });
        const what = typeof body === 'string' ? body : JSON.stringify(body).slice(0, 100);
        assert.equal(res.status, 400, `${what} -> ${res.status} ${res.raw}`);
        assert.match(res.body.error, re, what);
    }
    assert.equal(await sql('SELECT count(*) FROM queen.queues'), before);
});
