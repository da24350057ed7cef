//  test/integration/push.test.mjs - POST /api/v1/configure and POST /api/v1/push
//  (contract §3.5, §3.6, §2.3) against a real PostgreSQL: options echo,
//  routing to queues/partitions, byte-for-byte payloads, deduplication,
//  ordering, limits, every bad input, and the spool path when PostgreSQL
//  is down.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import net from 'node:net';
import {
    http, psql, startBroker, createDatabase, pgStop, pgStart, waitFor, warmUp, pop as popRoute, setMaintenance,
} from './lib.mjs';

const MAX_BODY = 4 << 20;
let b;                          //  The broker of this file

before(async () => {
    b = await startBroker({ env: { MAX_BODY_BYTES: String(MAX_BODY) } });
    await warmUp(b.url);
});

after(async () => {
    if (b)
        await b.stop();
});

const lit = (s) => `'${String(s).replace(/'/g, "''")}'`;
const sql = (text) => psql(text, { db: b.db });
const post = (p, body, opts = {}) => http(`${b.url}${p}`, { method: 'POST', body, ...opts });
const push = (items, opts = {}) => post('/api/v1/push', { items }, opts);
const counts = async () => sql('SELECT (SELECT count(*) FROM queen.messages) || \'/\' || (SELECT count(*) FROM queen.queues) || \'/\' || (SELECT count(*) FROM queen.partitions)');

//  Pops through GET /api/v1/pop/queue/:q[/partition/:p] (200 or 204).
//  Resolves to { raw, messages }.
async function pop (queue, { batch = 1, group, partition } = {}) {
    const res = await popRoute(b.url, queue, { batch, consumerGroup: group, partition });
    return { raw: res.raw, messages: res.messages };
}

//  Sends raw bytes over a socket and collects the answer (for 413).
function rawRequest (port, head, waitMs = 3000) {
    return new Promise((resolve) => {
        const sock = net.connect({ port, host: '127.0.0.1' });
        let out = '';
        const done = () => { sock.destroy(); resolve(out); };
        sock.on('data', (d) => { out += d.toString(); });
        sock.on('error', done);
        sock.on('close', done);
        sock.setTimeout(waitMs, done);
        sock.write(head);
    });
}

const ALL_OPTIONS = {
    leaseTime: 123, retryLimit: 7, retryDelay: 2500, priority: 4, delayedProcessing: 0,
    windowBuffer: 0, maxSize: 0, ttl: 7200, retentionEnabled: true, retentionSeconds: 600,
    completedRetentionSeconds: 300, maxWaitTimeSeconds: 0, encryptionEnabled: false,
    deadLetterQueue: true, dlqAfterMaxRetries: true,
};
const DEFAULTS = {
    leaseTime: 300, retryLimit: 3, retryDelay: 1000, priority: 0, delayedProcessing: 0,
    windowBuffer: 0, maxSize: 0, ttl: 3600, retentionEnabled: false, retentionSeconds: 0,
    completedRetentionSeconds: 0, maxWaitTimeSeconds: 0, encryptionEnabled: false,
    deadLetterQueue: false, dlqAfterMaxRetries: false,
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

test('configure echoes all 15 options with exact JSON types, and is a full replacement', async () => {
    const res = await post('/api/v1/configure', { queue: 'cfg-all', namespace: 'billing', task: 'invoice', options: ALL_OPTIONS });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.configured, true);
    assert.match(res.body.queueId, UUID);
    assert.match(res.body.partitionId, UUID);
    assert.equal(res.body.queue, 'cfg-all');
    assert.equal(res.body.namespace, 'billing');
    assert.equal(res.body.task, 'invoice');
    for (const [k, v] of Object.entries(ALL_OPTIONS))
        assert.ok(res.body.options[k] === v, `option ${k}: ${JSON.stringify(res.body.options[k])} !== ${v}`);
    //  The partition id is the queue's Default partition.
    assert.equal(await sql(`SELECT name FROM queen.partitions WHERE queen.uuid_of(2, id) = '${res.body.partitionId}'`), 'Default');

    //  Again without options (and null namespace/task, as the client sends): defaults, "".
    const again = await post('/api/v1/configure', { queue: 'cfg-all', namespace: null, task: 7 });
    assert.equal(again.status, 200, again.raw);
    assert.equal(again.body.queueId, res.body.queueId);
    assert.equal(again.body.partitionId, res.body.partitionId);
    assert.equal(again.body.namespace, '');
    assert.equal(again.body.task, '');
    for (const [k, v] of Object.entries(DEFAULTS))
        assert.ok(again.body.options[k] === v, `default ${k}: ${JSON.stringify(again.body.options[k])} !== ${v}`);
});

test('configure accepts the empty queue name and rejects bad input with 400', async () => {
    const empty = await post('/api/v1/configure', { queue: '', options: { leaseTime: 5 } });
    assert.equal(empty.status, 200, empty.raw);
    assert.equal(empty.body.configured, true);
    assert.equal(empty.body.queue, '');
    assert.equal(empty.body.options.leaseTime, 5);

    const before = await counts();
    const bad = [
        [{ options: {} }, /queue is required/],
        [{ queue: 42 }, /queue is required/],
        [{ queue: null }, /queue is required/],
        [{ queue: 'cfg-bad', options: { leaseTime: 'abc' } }, /leaseTime/],
        [{ queue: 'cfg-bad', options: { retryLimit: 1.5 } }, /retryLimit/],
        [{ queue: 'cfg-bad', options: { retentionEnabled: 'maybe' } }, /retentionEnabled/],
        [{ queue: 'cfg-bad', options: { maxSize: -1 } }, /maxSize/],
        [{ queue: 'x'.repeat(256) }, /queue .*255/],
        [{ queue: 'a\u0000b' }, /queue .*NUL/],
        [{ queue: 'cfg-bad', namespace: 'n'.repeat(256) }, /namespace/],
    ];
    for (const [body, re] of bad) {
        const res = await post('/api/v1/configure', body);
        assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)} -> ${res.status} ${res.raw}`);
        assert.match(res.body.error, re);
    }
    for (const [body, status] of [['', 400], ['{"queue":', 400], ['[]', 400]]) {
        const res = await post('/api/v1/configure', body, { headers: { 'Content-Type': 'application/json' } });
        assert.equal(res.status, status, res.raw);
        assert.equal(typeof res.body.error, 'string');
    }
    assert.equal(await counts(), before, 'nothing written by rejected configures');
});

test('push: single item, result shape, message id as transaction id when none is given', async () => {
    const res = await push([{ queue: 'p-single', payload: { hello: 'world' } }]);
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body.length, 1);
    const r = res.body[0];
    assert.equal(r.index, 0);
    assert.equal(r.status, 'queued');
    assert.match(r.message_id, UUID);
    assert.match(r.partition_id, UUID);
    assert.equal(r.transaction_id, r.message_id);
    assert.equal(r.trace_id, null);
    assert.equal(r.queueName, 'p-single');
    //  Auto-created queue with the derived namespace and the Default partition.
    assert.equal(await sql(`SELECT q.namespace || '|' || q.task || '|' || p.name FROM queen.queues q
                            JOIN queen.partitions p ON p.queue_id = q.id WHERE q.name = 'p-single'`), 'p-single||Default');
    const got = await pop('p-single');
    assert.equal(got.messages.length, 1);
    assert.deepEqual(got.messages[0].data, { hello: 'world' });
    assert.equal(got.messages[0].transactionId, r.transaction_id);
    assert.equal(got.messages[0].partitionId, r.partition_id);

    const traced = await push([{ queue: 'p-single', transactionId: 'tr-1', traceId: 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11' }]);
    assert.equal(traced.status, 201, traced.raw);
    assert.equal(traced.body[0].trace_id, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
    assert.equal(traced.body[0].transaction_id, 'tr-1');
    assert.equal(await sql(`SELECT trace_id FROM queen.messages WHERE txn_id = 'tr-1'`), 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');

    const empty = await push([]);
    assert.equal(empty.status, 201);
    assert.deepEqual(empty.body, []);
});

test('push: batch across queues and partitions, auto-created partitions, Default', async () => {
    const items = [
        { queue: 'p-multi-a', partition: 'east', payload: 1 },
        { queue: 'p-multi-b', payload: 2 },
        { queue: 'p-multi-a', partition: 'west', payload: 3 },
        { queue: 'p-multi-a', partition: 'east', payload: 4 },
        { queue: 'p-multi-a.task.v2', partition: 'Default', payload: 5 },
    ];
    const res = await push(items);
    assert.equal(res.status, 201, res.raw);
    assert.deepEqual(res.body.map((r) => [r.index, r.status, r.queueName]),
        items.map((it, i) => [i, 'queued', it.queue]));
    assert.equal(res.body[0].partition_id, res.body[3].partition_id);
    assert.notEqual(res.body[0].partition_id, res.body[2].partition_id);
    assert.equal(await sql(`SELECT string_agg(q.name || '/' || p.name, ',' ORDER BY q.name, p.name)
                            FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                            WHERE q.name LIKE 'p-multi-%'`),
        'p-multi-a/east,p-multi-a/west,p-multi-a.task.v2/Default,p-multi-b/Default');
    assert.equal(await sql(`SELECT namespace || '|' || task FROM queen.queues WHERE name = 'p-multi-a.task.v2'`), 'p-multi-a|task');
    const east = await pop('p-multi-a', { partition: 'east', batch: 10 });
    assert.deepEqual(east.messages.map((m) => m.data), [1, 4]);
    const def = await pop('p-multi-b', { batch: 10 });
    assert.deepEqual(def.messages.map((m) => m.data), [2]);
});

test('push: payloads of every JSON type are stored and returned byte-for-byte', async () => {
    const payloads = [
        'null', '{}', '[]', '"s"', '1.5e3', 'true', 'false', '-0', '12345678901234567890',
        '{ "nested" : { "a" : [1, 2, {"b": null}] , "c":"d" } }',
        '"unicode: \\u00e9t\\u00e9 \u00e9t\u00e9 \ud83d\ude00 \\ud83d\\ude00 \\n\\t\\"\\\\"',
        '"\\u0000 nul escape"',
        '{"sql":"\'; DROP TABLE x; --"}',
    ];
    const body = `{"items":[${payloads.map((p, i) => `{"queue":"p-types","transactionId":"ty-${i}","payload":${p}}`).join(',')},`
        + '{"queue":"p-types","transactionId":"ty-absent"}]}';
    const res = await post('/api/v1/push', body, { headers: { 'Content-Type': 'application/json' } });
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body.length, payloads.length + 1);
    for (let i = 0; i < payloads.length; i++)
        assert.equal(await sql(`SELECT convert_from(payload, 'UTF8') FROM queen.messages WHERE txn_id = 'ty-${i}'`),
            payloads[i], `payload ${i} stored verbatim`);
    assert.equal(await sql(`SELECT convert_from(payload, 'UTF8') FROM queen.messages WHERE txn_id = 'ty-absent'`), 'null');
    const got = await pop('p-types', { batch: 100 });
    assert.equal(got.messages.length, payloads.length + 1);
    for (let i = 0; i < payloads.length; i++) {
        assert.deepEqual(got.messages[i].data, JSON.parse(payloads[i]), `payload ${i} pops as the same value`);
        assert.ok(got.raw.includes(`"data":${payloads[i]}`), `payload ${i} byte-for-byte in the pop response`);
    }
    assert.equal(got.messages[payloads.length].data, null);
});

test('push: a ~2 MB object round-trips byte-for-byte', async () => {
    const big = { rows: [] };
    for (let i = 0; big.rows.length < 20000; i++)
        big.rows.push({ i, name: `row-${i}`, text: 'x'.repeat(80), u: 'é😀' });
    const text = JSON.stringify(big);
    assert.ok(text.length > 2_000_000);
    const body = `{"items":[{"queue":"p-big","transactionId":"big-1","payload":${text}}]}`;
    const res = await post('/api/v1/push', body, { headers: { 'Content-Type': 'application/json' } });
    assert.equal(res.status, 201, res.raw.slice(0, 200));
    const md5 = crypto.createHash('md5').update(Buffer.from(text, 'utf8')).digest('hex');
    assert.equal(await sql(`SELECT md5(payload) || ' ' || length(payload) FROM queen.messages WHERE txn_id = 'big-1'`),
        `${md5} ${Buffer.byteLength(text)}`);
    const got = await pop('p-big');
    assert.equal(got.messages.length, 1);
    assert.ok(got.raw.includes(`"data":${text}`), 'the 2 MB payload pops verbatim');
});

test('push: deduplication within a request, across requests, scoped per partition', async () => {
    const first = await push([
        { queue: 'p-dedup', partition: 'a', transactionId: 'd-1', payload: 'first' },
        { queue: 'p-dedup', partition: 'a', transactionId: 'd-1', payload: 'second' },
        { queue: 'p-dedup', partition: 'b', transactionId: 'd-1', payload: 'other partition' },
        { queue: 'p-dedup-2', partition: 'a', transactionId: 'd-1', payload: 'other queue' },
        { queue: 'p-dedup', partition: 'a', transactionId: '', payload: 'empty id is generated' },
    ]);
    assert.equal(first.status, 201, first.raw);
    assert.deepEqual(first.body.map((r) => r.status), ['queued', 'duplicate', 'queued', 'queued', 'queued']);
    assert.equal(first.body[1].message_id, first.body[0].message_id);
    assert.equal(first.body[1].transaction_id, 'd-1');
    assert.equal(first.body[1].queueName, 'p-dedup');
    assert.equal(first.body[1].partition_id, undefined);
    assert.notEqual(first.body[2].message_id, first.body[0].message_id);
    assert.equal(first.body[4].transaction_id, first.body[4].message_id);

    const second = await push([{ queue: 'p-dedup', partition: 'a', transactionId: 'd-1', payload: 'again' }]);
    assert.equal(second.status, 201);
    assert.equal(second.body[0].status, 'duplicate');
    assert.equal(second.body[0].message_id, first.body[0].message_id);
    assert.equal(await sql(`SELECT string_agg(convert_from(payload, 'UTF8'), ',' ORDER BY seq) FROM queen.messages
                            WHERE txn_id = 'd-1'`), '"first","other partition","other queue"');
});

test('push: 8 concurrent racers on one key: exactly one queued, all carry its message id', async () => {
    for (let round = 0; round < 3; round++) {
        const key = `race-${round}`;
        const results = await Promise.all(Array.from({ length: 8 }, (_, i) =>
            push([{ queue: 'p-race', transactionId: key, payload: { racer: i } }])));
        for (const r of results)
            assert.equal(r.status, 201, r.raw);
        const items = results.map((r) => r.body[0]);
        const queued = items.filter((r) => r.status === 'queued');
        assert.equal(queued.length, 1, JSON.stringify(items));
        for (const r of items)
            assert.equal(r.message_id, queued[0].message_id);
        assert.equal(await sql(`SELECT count(*) FROM queen.messages WHERE txn_id = '${key}'`), '1');
    }
});

test('push: 10,000 items in one request; 10,001 is refused and nothing is written', async () => {
    const items = Array.from({ length: 10000 }, (_, i) => ({ queue: 'p-10k', partition: `p${i % 7}`, payload: { i } }));
    const res = await push(items, { timeoutMs: 120000 });
    assert.equal(res.status, 201, res.raw.slice(0, 300));
    assert.equal(res.body.length, 10000);
    assert.ok(res.body.every((r, i) => r.index === i && r.status === 'queued'));
    assert.equal(new Set(res.body.map((r) => r.message_id)).size, 10000);
    assert.equal(await sql(`SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
                            JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'p-10k'`), '10000');

    const before = await counts();
    const over = await push(Array.from({ length: 10001 }, (_, i) => ({ queue: 'p-10k-over', payload: i })));
    assert.equal(over.status, 400, over.raw.slice(0, 200));
    assert.match(over.body.error, /items/);
    assert.equal(await counts(), before);
});

test('push: 1000 messages in 10 sequential requests pop in FIFO order', async () => {
    for (let r = 0; r < 10; r++) {
        const res = await push(Array.from({ length: 100 }, (_, i) => ({ queue: 'p-fifo', payload: { n: r * 100 + i } })));
        assert.equal(res.status, 201);
    }
    assert.equal(await sql(`SELECT bool_and(n = rn - 1) FROM (
        SELECT (convert_from(payload, 'UTF8')::json ->> 'n')::int AS n, row_number() OVER (ORDER BY m.created_at, m.seq) AS rn
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
        WHERE q.name = 'p-fifo') s`), 't');
    const got = await pop('p-fifo', { batch: 1000 });
    assert.equal(got.messages.length, 1000);
    assert.deepEqual(got.messages.map((m) => m.data.n), Array.from({ length: 1000 }, (_, i) => i));
});

//  pg_writer's second push lane starts only on partitions the batch in
//  flight does not hold; overlapping requests wait and merge. Every request
//  is answered, nothing is lost, and each request's items keep their order
//  inside every partition.
test('push: 24 concurrent requests over shared partitions: all stored once, in request order per partition', async () => {
    const parts = 6, per = 60, reqs = 24;
    const results = await Promise.all(Array.from({ length: reqs }, (_, r) =>
        push(Array.from({ length: per }, (_, i) => ({
            queue: 'p-lanes', partition: `p${(r + i) % parts}`, payload: { r, i },
        })))));
    for (const res of results) {
        assert.equal(res.status, 201, res.raw);
        assert.equal(res.body.length, per);
        assert.ok(res.body.every((x, i) => x.index === i && x.status === 'queued'), res.raw);
    }
    assert.equal(await sql(`SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
                            JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'p-lanes'`), String(reqs * per));
    //  Within a partition, one request's items have ascending seq in item order.
    assert.equal(await sql(`SELECT count(*) FROM (
        SELECT (convert_from(payload, 'UTF8')::json ->> 'i')::int AS i,
               lag((convert_from(payload, 'UTF8')::json ->> 'i')::int) OVER (
                   PARTITION BY m.partition_id, convert_from(payload, 'UTF8')::json ->> 'r' ORDER BY m.seq) AS prev
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'p-lanes') s WHERE prev >= i`), '0');
    const got = await pop('p-lanes', { batch: 1000, partition: 'p0' });
    assert.equal(got.messages.length, reqs * per / parts);
});

test('push: queue, partition and payload text with SQL metacharacters is stored verbatim', async () => {
    const name = "'; DROP TABLE x; --";
    const res = await push([{ queue: name, partition: `${name}"\\`, transactionId: name, payload: { s: name } }]);
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body[0].queueName, name);
    assert.equal(res.body[0].transaction_id, name);
    assert.equal(await sql(`SELECT p.name FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                            WHERE q.name = ${lit(name)}`), `${name}"\\`);
    assert.equal(await sql(`SELECT convert_from(payload, 'UTF8') FROM queen.messages WHERE txn_id = ${lit(name)}`),
        JSON.stringify({ s: name }));
});

test('push: every bad input gets a 4xx JSON error naming the field, and nothing is written', async () => {
    await push([{ queue: 'p-bad-existing', payload: 1 }]);
    const before = await counts();
    const long = 'q'.repeat(256);
    const ok = { queue: 'p-bad', payload: 1 };
    const cases = [
        //  [body (object or raw string), status, error regexp]
        ['', 400, /^Empty request body$/],
        ['{"items":[', 400, /^Invalid JSON/],
        ['{"items":[{"queue":"p-bad",}]}', 400, /^Invalid JSON/],
        ['nul\u0000l', 400, /^Invalid JSON/],
        [{}, 400, /^items array is required$/],
        [{ items: {} }, 400, /^items array is required$/],
        [{ items: 'x' }, 400, /^items array is required$/],
        [[{ queue: 'p-bad' }], 400, /^items array is required$/],
        [{ items: [ok, 5] }, 400, /^Queue must be a string$/],
        [{ items: [ok, {}] }, 400, /^Queue must be a string$/],
        [{ items: [ok, { queue: 5 }] }, 400, /^Queue must be a string$/],
        [{ items: [ok, { queue: null }] }, 400, /^Queue must be a string$/],
        [{ items: [ok, { queue: 'p-bad', partition: 5 }] }, 400, /^Partition must be a string$/],
        [{ items: [ok, { queue: 5, partition: 5 }] }, 400, /^Partition must be a string$/],
        [{ items: [ok, { queue: 'p-bad', transactionId: 5 }] }, 400, /^TransactionId must be a string$/],
        [{ items: [ok, { queue: 'p-bad', transactionId: {} }] }, 400, /^TransactionId must be a string$/],
        [{ items: [ok, { queue: 'p-bad', traceId: 5 }] }, 400, /^TraceId must be a string$/],
        [{ items: [ok, { queue: 'p-bad', traceId: 'not-a-uuid' }] }, 400, /^TraceId must be a UUID/],
        [{ items: [ok, { queue: 'p-bad', traceId: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1' }] }, 400, /^TraceId must be a UUID/],
        [{ items: [ok, { queue: long }] }, 400, /items\[1\]\.queue must be at most 255 bytes/],
        [{ items: [ok, { queue: 'p-bad', partition: long }] }, 400, /items\[1\]\.partition must be at most 255 bytes/],
        [{ items: [ok, { queue: 'p-bad', transactionId: 't'.repeat(256) }] }, 400, /items\[1\]\.transactionId must be at most 255 bytes/],
        [{ items: [ok, { queue: 'é'.repeat(128) }] }, 400, /items\[1\]\.queue must be at most 255 bytes/],
        [{ items: [ok, { queue: 'a\u0000b' }] }, 400, /items\[1\]\.queue must not contain NUL/],
        [{ items: [ok, { queue: 'p-bad', partition: '\u0000' }] }, 400, /items\[1\]\.partition must not contain NUL/],
        [{ items: [ok, { queue: 'p-bad', transactionId: 'x\u0000' }] }, 400, /items\[1\]\.transactionId must not contain NUL/],
        ['{"items":[{"queue":"\\ud800"}]}', 400, /^Invalid JSON/],
    ];
    for (const [body, status, re] of cases) {
        const res = await post('/api/v1/push', body, { headers: { 'Content-Type': 'application/json' } });
        const what = typeof body === 'string' ? body : JSON.stringify(body).slice(0, 80);
        assert.equal(res.status, status, `${what} -> ${res.status} ${res.raw}`);
        assert.match(res.headers['content-type'], /application\/json/);
        assert.match(res.body.error, re, what);
    }
    //  Invalid UTF-8 sent as raw bytes, in a name and in a payload.
    for (const bytes of [
        Buffer.concat([Buffer.from('{"items":[{"queue":"p-bad-'), Buffer.from([0xc3, 0x28]), Buffer.from('"}]}')]),
        Buffer.concat([Buffer.from('{"items":[{"queue":"p-bad","payload":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}')]),
        Buffer.concat([Buffer.from('{"items":[{"queue":"p-bad","partition":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}]}')]),
    ]) {
        const res = await post('/api/v1/push', bytes, { headers: { 'Content-Type': 'application/json' } });
        assert.equal(res.status, 400, res.raw);
        assert.match(res.body.error, /^Invalid JSON: .*(UTF-8|utf-8)/i);
    }
    //  A body over MAX_BODY_BYTES: 413 before the body is read.
    const big = await rawRequest(b.port, `POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${MAX_BODY + 1}\r\n\r\n{"items":[`);
    assert.match(big, /^HTTP\/1\.1 413/);
    assert.match(big, /\{"error":/);
    assert.equal(await counts(), before, 'no message, queue or partition written');
});

test('push in maintenance mode is buffered, then replayed in order when it ends', async () => {
    await setMaintenance(b.url, true);
    try {
        //  The flag reaches the codec as an event: wait until pushes buffer.
        const first = await waitFor(async () => {
            const r = await push([{ queue: 'p-maint', payload: 0, transactionId: 'mt-0' }]);
            assert.equal(r.status, 201, r.raw);
            return r.body[0].status === 'buffered' ? r : null;
        }, 10000, 100);
        assert.deepEqual(first.body, [{ index: 0, status: 'buffered', queue: 'p-maint', partition: 'Default', transactionId: 'mt-0' }]);
        const more = await push([{ queue: 'p-maint', payload: 1 }, { queue: 'p-maint', partition: 'x', payload: 2, transactionId: 'mt-2' }]);
        assert.equal(more.status, 201, more.raw);
        assert.deepEqual(more.body.map((r) => [r.index, r.status, r.partition]), [[0, 'buffered', 'Default'], [1, 'buffered', 'x']]);
        assert.match(more.body[0].transactionId, UUID);
        assert.equal(more.body[1].transactionId, 'mt-2');
    } finally {
        await setMaintenance(b.url, false);
    }
    await waitFor(async () => await sql(`SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'p-maint'`) === '3', 30000, 200);
    const got = await pop('p-maint', { batch: 10 });
    assert.deepEqual(got.messages.map((m) => m.data), [0, 1], 'the Default partition in push order');
});

test('push while PostgreSQL is down goes to the spool, never lost', async () => {
    const db = await createDatabase('push_spool');
    const s = await startBroker({ db, env: { DB_STATEMENT_TIMEOUT: '3000' } });
    try {
        await warmUp(s.url);
        await pgStop();
        let res;
        try {
            await waitFor(async () => (await http(`${s.url}/health`)).status === 503, 30000, 200);
            res = await http(`${s.url}/api/v1/push`, {
                method: 'POST',
                body: { items: [{ queue: 'sp', payload: 1, transactionId: 'sp-1' }, { queue: 'sp', partition: 'p2', payload: 2 }] },
            });
        } finally {
            await pgStart();
        }
        assert.equal(res.status, 201, res.raw);
        assert.deepEqual(res.body.map((r) => [r.index, r.status, r.queue, r.partition]),
            [[0, 'buffered', 'sp', 'Default'], [1, 'buffered', 'sp', 'p2']]);
        assert.equal(res.body[0].transactionId, 'sp-1');
        assert.match(res.body[1].transactionId, UUID, 'a minted transaction id so replay deduplicates');
        //  Replayed once PostgreSQL is back, with the same transaction ids.
        await waitFor(async () => await psql(`SELECT count(*) FROM queen.messages WHERE txn_id IN ('sp-1', '${res.body[1].transactionId}')`, { db }) === '2', 60000, 250);
    } finally {
        await s.stop();
    }
});
