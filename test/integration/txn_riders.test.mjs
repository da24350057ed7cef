//  test/integration/txn_riders.test.mjs - transaction riders (issue 4;
//  docs/transactions.md): kv.set, kv.delete, timer.schedule and
//  timer.cancel inside POST /api/v1/transaction, committed with the pushes
//  and acks or not at all, against a real PostgreSQL. Result shapes; every
//  rollback cause with its status and failedIndex; bad input; 16 clients
//  doing compare-and-set through bundles that also push; an expired ack
//  lease rolling back pushes and kv writes; timer cancels racing the
//  firing; a fan-in stage (acks from 3 queues, partitions and groups + a
//  push + a kv write); a broker killed after the commit and before the
//  reply, then a retry with the same ids (nothing duplicated).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
    http, psql, startBroker, sleep, waitFor, PG_HOST, PG_PORT, warmUp, configureQueue, pushItems, popMessages,
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
const post = (p, body, url = b.url) => http(`${url}${p}`, { method: 'POST', body });
const txn = (operations, extra = {}, url = b.url) => post('/api/v1/transaction', { operations, ...extra }, url);
const kvGet = (bucket, key) => http(`${b.url}/api/v1/kv/${encodeURIComponent(bucket)}/${encodeURIComponent(key)}`);
const TS_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function configure (queue, options) {
    await configureQueue(b.url, queue, options);
}

const push = (queue, items) => pushItems(b.url, items.map((it) => ({ queue, ...it })));

const pop = (queue, { batch = 1, group, partition } = {}) =>
    popMessages(b.url, queue, { batch, consumerGroup: group, partition });

//  Messages of a queue: [{partition, txn, payload}] in seq order.
async function messages (queue) {
    const out = await sql(`SELECT json_build_object('partition', p.name, 'txn', m.txn_id,
            'payload', convert_from(m.payload, 'UTF8'))::text
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = ${lit(queue)} ORDER BY m.seq`);
    return out ? out.split('\n').map((l) => JSON.parse(l)) : [];
}

const kvRow = (bucket, key) => sql(`SELECT coalesce((SELECT convert_from(value, 'UTF8') || '@' || version
    FROM queen.kv WHERE ns = ${lit(bucket)} AND key = ${lit(key)}), '')`);
const ackOp = (m, extra = {}) => ({ type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, ...extra });

test('riders: kv and timer operations commit with pushes; results in operation order', async () => {
    const old = await http(`${b.url}/api/v1/kv/r-ok/gone`, { method: 'PUT', body: '"bye"' });
    assert.equal(old.status, 200, old.raw);
    const pending = await post('/api/v1/timers', { timerId: 'r-ok-old', queue: 'r-ok-t', payload: 0, delayMs: 600000 });
    assert.equal(pending.status, 201, pending.raw);

    const res = await txn([
        { type: 'push', items: [{ queue: 'r-ok', payload: { n: 1 }, transactionId: 'r-ok-1' }] },
        { type: 'kv.set', bucket: 'r-ok', key: 'k1', value: { a: [1, 2], s: 'é' }, ttl: 3600 },
        { type: 'kv.set', bucket: 'r-ok', key: 'k2', value: 7, ifVersion: 0 },
        { type: 'kv.delete', bucket: 'r-ok', key: 'gone', ifVersion: old.body.version },
        { type: 'kv.delete', bucket: 'r-ok', key: 'never-there' },
        { type: 'timer.schedule', timerId: 'r-ok-new', queue: 'r-ok-t', partition: 'p1', payload: { at: 'soon' },
          transactionId: 'r-ok-fire', delayMs: 300 },
        { type: 'timer.cancel', timerId: 'r-ok-old' },
    ]);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true, res.raw);
    const r = res.body.results;
    assert.deepEqual(r.map((x) => [x.index, x.type, x.success]), [[0, 'push', true], [1, 'kv.set', true],
        [2, 'kv.set', true], [3, 'kv.delete', true], [4, 'kv.delete', true], [5, 'timer.schedule', true],
        [6, 'timer.cancel', true]]);
    assert.equal(r[0].transactionId, 'r-ok-1');
    assert.deepEqual(Object.keys(r[1]), ['index', 'type', 'success', 'bucket', 'key', 'version', 'expiresAt']);
    assert.deepEqual([r[1].bucket, r[1].key], ['r-ok', 'k1']);
    assert.ok(Number.isInteger(r[1].version) && r[1].version > old.body.version, res.raw);
    assert.match(r[1].expiresAt, TS_MS);
    assert.ok(Math.abs(Date.parse(r[1].expiresAt) - Date.now() - 3600e3) < 60e3, r[1].expiresAt);
    assert.equal(r[2].expiresAt, null);
    assert.ok(r[2].version > 0 && r[2].version !== r[1].version);
    assert.deepEqual([r[3].deleted, r[3].version], [true, old.body.version]);
    assert.deepEqual([r[4].deleted, r[4].version], [false, null], 'an unconditional delete of an absent key succeeds');
    assert.deepEqual(Object.keys(r[5]), ['index', 'type', 'success', 'timerId', 'fireAt', 'created', 'fired']);
    assert.deepEqual([r[5].timerId, r[5].created, r[5].fired], ['r-ok-new', true, false]);
    assert.match(r[5].fireAt, TS_MS);
    assert.deepEqual([r[6].timerId, r[6].cancelled, r[6].fired], ['r-ok-old', true, false]);

    //  Everything is visible at once; values are stored byte-for-byte.
    assert.equal(await kvRow('r-ok', 'k1'), `{"a":[1,2],"s":"é"}@${r[1].version}`);
    assert.equal((await kvGet('r-ok', 'k2')).body.value, 7);
    assert.equal((await kvGet('r-ok', 'gone')).status, 404);
    assert.equal((await http(`${b.url}/api/v1/timers/r-ok-old`)).status, 404, 'cancelled');
    assert.deepEqual(await messages('r-ok'), [{ partition: 'Default', txn: 'r-ok-1', payload: '{"n":1}' }]);
    //  The scheduled timer fires on time (armed in this broker's wheel).
    await waitFor(async () => (await messages('r-ok-t')).length === 1, 10000, 25);
    assert.deepEqual(await messages('r-ok-t'), [{ partition: 'p1', txn: 'r-ok-fire', payload: '{"at":"soon"}' }]);
    const lag = Number(await sql(`SELECT extract(epoch FROM m.created_at - t.due_at) * 1000
        FROM queen.timers t JOIN queen.messages m ON m.seq = t.seq WHERE t.timer_id = 'r-ok-new'`));
    assert.ok(lag >= 0 && lag < 1000, `fired ${lag} ms after fireAt`);

    //  The same timer.schedule again is idempotent; a different one with that id conflicts.
    const again = await txn([{ type: 'timer.schedule', timerId: 'r-ok-new', queue: 'r-ok-t', partition: 'p1',
        payload: { at: 'soon' }, transactionId: 'r-ok-fire', delayMs: 300 }]);
    assert.equal(again.status, 200, again.raw);
    assert.deepEqual([again.body.results[0].created, again.body.results[0].fired], [false, true]);
});

test('riders: a failing operation rolls everything back and is named (409, 404, 200 for the contract)', async () => {
    const base = await http(`${b.url}/api/v1/kv/r-rb/k`, { method: 'PUT', body: '1' });
    const v = base.body.version;
    await post('/api/v1/timers', { timerId: 'r-rb-fired', queue: 'r-rb-t', payload: 1, delayMs: 0 });
    await waitFor(async () => (await http(`${b.url}/api/v1/timers/r-rb-fired`)).body.status === 'fired', 10000, 25);
    await post('/api/v1/timers', { timerId: 'r-rb-taken', queue: 'r-rb-t', payload: 1, delayMs: 600000 });

    const effects = [
        { type: 'push', items: [{ queue: 'r-rb', payload: 1 }] },
        { type: 'kv.set', bucket: 'r-rb', key: 'side', value: 'x' },
        { type: 'timer.schedule', timerId: 'r-rb-side', queue: 'r-rb-t', payload: 1, delayMs: 0 },
        { type: 'kv.delete', bucket: 'r-rb', key: 'other' },
    ];
    const cases = [
        [{ type: 'kv.set', bucket: 'r-rb', key: 'k', value: 2, ifVersion: v + 1000 }, 409, 'version conflict',
            (e) => assert.equal(e.currentVersion, v)],
        [{ type: 'kv.set', bucket: 'r-rb', key: 'k', value: 2, ifVersion: 0 }, 409, 'version conflict',
            (e) => assert.equal(e.currentVersion, v)],
        [{ type: 'kv.delete', bucket: 'r-rb', key: 'absent', ifVersion: 5 }, 404, 'key not found',
            (e) => assert.equal(e.currentVersion, 0)],
        [{ type: 'timer.cancel', timerId: 'r-rb-unknown' }, 404, 'timer not found',
            (e) => assert.deepEqual([e.cancelled, e.fired], [false, false])],
        [{ type: 'timer.cancel', timerId: 'r-rb-fired' }, 409, 'timer already fired',
            (e) => { assert.deepEqual([e.cancelled, e.fired], [false, true]); assert.match(e.firedAt, TS_MS); }],
        [{ type: 'timer.schedule', timerId: 'r-rb-taken', queue: 'r-rb-t', payload: 2, delayMs: 600000 }, 409,
            'timerId r-rb-taken is taken by a different timer', (e) => assert.equal(e.timerId, 'r-rb-taken')],
    ];
    for (const [op, status, error, check] of cases) {
        const res = await txn([...effects, op]);
        assert.equal(res.status, status, `${op.type}: ${res.raw}`);
        assert.deepEqual([res.body.success, res.body.error, res.body.failedIndex, res.body.failedType],
            [false, error, 4, op.type], res.raw);
        const r = res.body.results;
        assert.deepEqual(r.map((x) => [x.index, x.type, x.success]), [[0, 'push', true], [1, 'kv.set', true],
            [2, 'timer.schedule', true], [3, 'kv.delete', true], [4, op.type, false]]);
        assert.deepEqual([r[0].messageId, r[1].version, r[2].fireAt, r[3].deleted], [null, null, null, null],
            'entries before the failure carry no ids: rolled back');
        assert.equal(r[4].error, error);
        check(r[4]);
    }
    //  Nothing of any attempt was applied.
    assert.equal(await sql(`SELECT count(*) FROM queen.queues WHERE name = 'r-rb'`), '0');
    assert.equal(await kvRow('r-rb', 'side'), '');
    assert.equal(await kvRow('r-rb', 'k'), `1@${v}`);
    assert.equal(await sql(`SELECT count(*) FROM queen.timers WHERE timer_id = 'r-rb-side'`), '0');

    //  Several failures: the lowest index is reported, with its own status.
    const missingAck = { type: 'ack', transactionId: 'nope', partitionId: '00000002-0000-8000-8000-000000000001' };
    const conflict = cases[0][0];
    const riderFirst = await txn([conflict, missingAck]);
    assert.deepEqual([riderFirst.status, riderFirst.body.failedIndex, riderFirst.body.failedType], [409, 0, 'kv.set']);
    const ackFirst = await txn([missingAck, conflict]);
    assert.deepEqual([ackFirst.status, ackFirst.body.success, ackFirst.body.failedIndex, ackFirst.body.failedType,
        ackFirst.body.error], [200, false, 0, 'ack', 'ACK operation failed: Message not found'], ackFirst.raw);
    assert.deepEqual(ackFirst.body.results.map((x) => [x.index, x.type, x.success, x.error]),
        [[0, 'ack', false, 'Message not found']]);
    //  A duplicate push keeps the contract's 200; it leaves no entry of its own.
    await push('r-rb-dup', [{ payload: 1, transactionId: 'd-1' }]);
    const dup = await txn([{ type: 'kv.set', bucket: 'r-rb', key: 'side', value: 1 },
        { type: 'push', items: [{ queue: 'r-rb-dup', transactionId: 'd-1', payload: 2 }] }]);
    assert.deepEqual([dup.status, dup.body.success, dup.body.failedIndex, dup.body.failedType], [200, false, 1, 'push'], dup.raw);
    assert.match(dup.body.error, /^duplicate transactionId d-1 in partition Default$/);
    assert.deepEqual(dup.body.results.map((x) => x.type), ['kv.set']);
    //  An expired/unknown required lease is not an operation: failedIndex null.
    const req = await txn([{ type: 'kv.set', bucket: 'r-rb', key: 'side', value: 1 }],
        { requiredLeases: ['5b1c0e4e-2f0e-4a8e-9a55-0d7a4f2b9c11'] });
    assert.deepEqual([req.status, req.body.success, req.body.failedIndex, req.body.failedType], [200, false, null, null], req.raw);
    assert.match(req.body.error, /^Required lease 5b1c0e4e-2f0e-4a8e-9a55-0d7a4f2b9c11 is invalid or expired$/);
    assert.deepEqual(req.body.results, []);
    assert.equal(await kvRow('r-rb', 'side'), '');
});

test('riders: bad input gets a 4xx naming the field; nothing written', async () => {
    const kv = (extra) => ({ type: 'kv.set', bucket: 'r-bad', key: 'k', value: 1, ...extra });
    const tm = (extra) => ({ type: 'timer.schedule', queue: 'r-bad-t', payload: 1, delayMs: 10, ...extra });
    const big = 'x'.repeat(1024 * 1024);          //  1 MiB of text: 2 bytes over with the quotes
    const cases = [
        [kv({ bucket: undefined }), 400, /^operations\[1\]\.bucket is required$/],
        [kv({ bucket: '' }), 400, /^operations\[1\]\.bucket must not be empty$/],
        [kv({ bucket: 5 }), 400, /^operations\[1\]\.bucket must be a string$/],
        [kv({ bucket: 'b'.repeat(256) }), 400, /^operations\[1\]\.bucket must be at most 255 bytes$/],
        [kv({ key: 'k\u0000' }), 400, /^operations\[1\]\.key must not contain NUL characters$/],
        [kv({ key: undefined }), 400, /^operations\[1\]\.key is required$/],
        [kv({ value: undefined }), 400, /^operations\[1\]\.value is required$/],
        [kv({ value: big }), 413, /^operations\[1\]\.value must be at most 1048576 bytes$/],
        [kv({ ttl: -1 }), 400, /^operations\[1\]\.ttl must be an integer between 0 and 315360000$/],
        [kv({ ttl: 1.5 }), 400, /^operations\[1\]\.ttl must be an integer/],
        [kv({ ttl: '60' }), 400, /^operations\[1\]\.ttl must be an integer/],
        [kv({ ifVersion: -1 }), 400, /^operations\[1\]\.ifVersion must be an integer between 0 and/],
        [{ type: 'kv.delete', bucket: 'r-bad' }, 400, /^operations\[1\]\.key is required$/],
        [{ type: 'kv.delete', bucket: 'r-bad', key: 'k', ifVersion: 'x' }, 400, /^operations\[1\]\.ifVersion must be an integer/],
        [tm({ queue: undefined }), 400, /^operations\[1\]\.queue is required$/],
        [tm({ payload: undefined }), 400, /^operations\[1\]\.payload is required$/],
        [tm({ partition: '' }), 400, /^operations\[1\]\.partition must not be empty$/],
        [tm({ timerId: 'x'.repeat(256) }), 400, /^operations\[1\]\.timerId must be at most 255 bytes$/],
        [tm({ fireAt: Date.now() + 1000 }), 400, /^operations\[1\]: give either fireAt or delayMs, not both$/],
        [tm({ delayMs: undefined }), 400, /^operations\[1\]: fireAt or delayMs is required$/],
        [tm({ delayMs: -5 }), 400, /^operations\[1\]\.delayMs must be an integer between 0 and/],
        [tm({ delayMs: undefined, fireAt: 'yesterday' }), 400, /^operations\[1\]\.fireAt must be an ISO-8601 timestamp/],
        [tm({ delayMs: undefined, fireAt: Date.now() + 11 * 365 * 86400e3 }), 400, /^operations\[1\]\.fireAt must be after 1970 and at most 10 years ahead$/],
        [{ type: 'timer.cancel' }, 400, /^operations\[1\]\.timerId is required$/],
        [{ type: 'timer.cancel', timerId: 7 }, 400, /^operations\[1\]\.timerId must be a string$/],
    ];
    for (const [op, status, re] of cases) {
        const res = await txn([{ type: 'push', items: [{ queue: 'r-bad', payload: 1 }] }, op]);
        const what = JSON.stringify(op).slice(0, 100);
        assert.equal(res.status, status, `${what} -> ${res.status} ${res.raw.slice(0, 200)}`);
        assert.match(res.body.error, re, what);
    }
    //  An unknown type keeps the contract's answer: 200, success false, named.
    const unknown = await txn([kv({}), { type: 'kv.sett', bucket: 'r-bad', key: 'k', value: 1 }]);
    assert.equal(unknown.status, 200, unknown.raw);
    assert.deepEqual([unknown.body.success, unknown.body.error, unknown.body.failedIndex, unknown.body.failedType],
        [false, 'Unknown operation type: kv.sett', 1, 'kv.sett']);
    assert.deepEqual(unknown.body.results.map((x) => [x.index, x.type, x.success]), [[0, 'kv.set', true], [1, 'kv.sett', false]]);
    assert.equal(await sql(`SELECT count(*) FROM queen.queues WHERE name IN ('r-bad', 'r-bad-t')`), '0');
    assert.equal(await sql(`SELECT count(*) FROM queen.kv WHERE ns = 'r-bad'`), '0');
    assert.equal(await sql(`SELECT count(*) FROM queen.timers WHERE queue = 'r-bad-t'`), '0');

    //  A fireAt in the past is not an error: the timer fires at once.
    const past = await txn([tm({ timerId: 'r-bad-past', delayMs: undefined, fireAt: new Date(Date.now() - 3600e3).toISOString() })]);
    assert.equal(past.status, 200, past.raw);
    assert.equal(past.body.results[0].created, true);
    await waitFor(async () => (await messages('r-bad-t')).length === 1, 10000, 25);
});

test('riders: 16 clients compare-and-set one key through bundles that also push: no lost update', async () => {
    const CLIENTS = 16, EACH = 15;
    assert.equal((await http(`${b.url}/api/v1/kv/r-cas/counter`, { method: 'PUT', body: '0' })).status, 200);
    let conflicts = 0;
    async function client (c) {
        for (let i = 0; i < EACH; i++) {
            let cur = await kvGet('r-cas', 'counter');
            for (;;) {
                assert.equal(cur.status, 200, cur.raw);
                const next = cur.body.value + 1;
                //  Each client pushes to its own partition: the bundles meet on the kv row.
                const res = await txn([
                    { type: 'push', items: [{ queue: 'r-cas', partition: `c${c}`, payload: next }] },
                    { type: 'kv.set', bucket: 'r-cas', key: 'counter', value: next, ifVersion: cur.body.version },
                ]);
                if (res.status === 200 && res.body.success)
                    break;
                assert.equal(res.status, 409, res.raw);
                assert.deepEqual([res.body.failedIndex, res.body.failedType], [1, 'kv.set']);
                assert.ok(res.body.results[1].currentVersion > cur.body.version, res.raw);
                conflicts++;
                cur = await kvGet('r-cas', 'counter');
            }
        }
    }
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
    const total = CLIENTS * EACH;
    assert.equal((await kvGet('r-cas', 'counter')).body.value, total, `final value = successes (conflicts ${conflicts})`);
    const pushed = (await messages('r-cas')).map((m) => Number(m.payload)).sort((x, y) => x - y);
    assert.deepEqual(pushed, Array.from({ length: total }, (_, i) => i + 1), 'one message per success, each value once');
    assert.ok(conflicts > 0, 'the writers did collide');
});

test('riders: an ack whose lease expired rolls back the pushes and kv writes', async () => {
    await configure('r-lease', { leaseTime: 1 });
    await configure('r-lease-ok', { leaseTime: 60 });
    await push('r-lease-ok', [{ payload: 1, transactionId: 'rl-1' }]);
    await push('r-lease', [{ payload: 2, transactionId: 'rl-2' }]);
    const bundle = (m, n) => [
        { type: 'push', items: [{ queue: 'r-lease-out', payload: n, transactionId: `rl-out-${n}` }] },
        { type: 'kv.set', bucket: 'r-lease', key: 'progress', value: n },
        ackOp(m, { leaseId: m.leaseId }),
    ];
    //  Control: within its lease the bundle commits.
    const [m1] = await pop('r-lease-ok');
    const ok = await txn(bundle(m1, 1));
    assert.equal(ok.body.success, true, ok.raw);
    const [m2] = await pop('r-lease');
    assert.equal(m2.transactionId, 'rl-2');
    await waitFor(async () => await sql(`SELECT count(*) FROM queen.ready
        WHERE lease_id = ${lit(m2.leaseId)} AND avail_at <= now()`) === '1', 10000, 50);
    const res = await txn(bundle(m2, 2));
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual([res.body.success, res.body.error, res.body.failedIndex, res.body.failedType],
        [false, 'ACK operation failed: Invalid or expired lease', 2, 'ack'], res.raw);
    assert.deepEqual((await messages('r-lease-out')).map((m) => m.txn), ['rl-out-1'], 'the push rolled back');
    assert.equal((await kvGet('r-lease', 'progress')).body.value, 1, 'the kv write rolled back');
    //  The message is delivered again.
    const again = await waitFor(async () => (await pop('r-lease'))[0], 10000, 100);
    assert.equal(again.transactionId, 'rl-2');
});

test('riders: timer.cancel in a bundle racing the firing: exactly one of cancelled / fired', async (t) => {
    const N = 60;
    const due = Date.now() + 1500;
    const ids = Array.from({ length: N }, (_, i) => `r-race-${i}`);
    await Promise.all(ids.map((timerId, i) => post('/api/v1/timers',
        { timerId, queue: 'r-race', payload: i, transactionId: `fire-${i}`, fireAt: due })
        .then((r) => assert.equal(r.status, 201, r.raw))));
    const wait = due - Date.now() - 60;
    if (wait > 0)
        await sleep(wait);
    //  Each bundle pushes a side message and cancels its timer, spread over +-60 ms.
    const outcomes = await Promise.all(ids.map(async (timerId, i) => {
        await sleep(i * 2);
        const res = await txn([{ type: 'push', items: [{ queue: 'r-race-side', transactionId: `side-${i}`, payload: i }] },
            { type: 'timer.cancel', timerId }]);
        if (res.status === 200) {
            assert.equal(res.body.results[1].cancelled, true, res.raw);
            return 'cancelled';
        }
        assert.equal(res.status, 409, res.raw);
        assert.deepEqual([res.body.failedIndex, res.body.results[1].fired], [1, true], res.raw);
        return 'fired';
    }));
    await waitFor(async () => await sql(`SELECT count(*) FROM queen.timers WHERE queue = 'r-race' AND fired_at IS NULL`) === '0',
        10000, 50);
    const fired = new Set((await messages('r-race')).map((m) => m.txn));
    const side = new Set((await messages('r-race-side')).map((m) => m.txn));
    outcomes.forEach((o, i) => {
        assert.equal(fired.has(`fire-${i}`), o === 'fired', `timer ${i}: ${o}`);
        assert.equal(side.has(`side-${i}`), o === 'cancelled', `side message ${i}: ${o}`);
    });
    t.diagnostic(`fired ${fired.size}, cancelled ${side.size}`);
});

test('riders: fan-in: acks from 3 queues, partitions and groups + a push + a kv write in one bundle', async () => {
    await push('r-fa', [{ partition: 'a1', payload: 'a', transactionId: 'fa-1' }]);
    await push('r-fb', [{ partition: 'b1', payload: 'b', transactionId: 'fb-1' }]);
    await push('r-fc', [{ partition: 'c1', payload: 'c', transactionId: 'fc-1' }]);
    const [ma] = await pop('r-fa', { group: 'join-a' });
    const [mb] = await pop('r-fb');
    const [mc] = await pop('r-fc', { group: 'join-c', partition: 'c1' });
    assert.ok(ma && mb && mc);
    //  A consumer parked on the output wakes when the bundle commits.
    const parked = http(`${b.url}/api/v1/pop/queue/r-fout?wait=true&timeout=10000`);
    await sleep(200);
    const res = await txn([
        ackOp(ma, { consumerGroup: 'join-a', leaseId: ma.leaseId }),
        ackOp(mb, { leaseId: mb.leaseId }),
        ackOp(mc, { consumerGroup: 'join-c', leaseId: mc.leaseId }),
        { type: 'push', items: [{ queue: 'r-fout', partition: 'joined', payload: 'abc', transactionId: 'join-1' }] },
        { type: 'kv.set', bucket: 'r-fan', key: 'join-1', value: { parts: 3 }, ifVersion: 0 },
    ], { requiredLeases: [ma.leaseId, mb.leaseId, mc.leaseId] });
    const committedAt = Date.now();
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true, res.raw);
    assert.deepEqual(res.body.results.map((x) => x.type), ['ack', 'ack', 'ack', 'push', 'kv.set']);
    const woke = await parked;
    assert.equal(woke.status, 200, woke.raw);
    assert.equal(woke.body.messages[0].transactionId, 'join-1');
    assert.ok(Date.now() - committedAt < 1500, 'woken by the commit, not by the 3 s recheck');
    assert.deepEqual(await pop('r-fa', { group: 'join-a' }), []);
    assert.deepEqual(await pop('r-fb'), []);
    assert.deepEqual(await pop('r-fc', { group: 'join-c' }), []);
    assert.deepEqual((await kvGet('r-fan', 'join-1')).body.value, { parts: 3 });
});

//  A psql session that holds advisory lock `key` until release() (a gate
//  the broker's statement waits on).
async function holdLock (db, key) {
    const proc = spawn('psql', ['-X', '-q', '-At', '-h', PG_HOST, '-p', String(PG_PORT), '-U', 'postgres', '-d', db],
        { stdio: ['pipe', 'ignore', 'inherit'] });
    proc.stdin.write(`SELECT pg_advisory_lock(${key});\n`);
    await waitFor(async () => await sql(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
        AND classid = 0 AND objid = ${key} AND objsubid = 1 AND granted`) === '1', 10000, 25);
    return {
        release () {
            proc.stdin.end(`SELECT pg_advisory_unlock(${key});\n`);
            return new Promise((resolve) => proc.once('close', resolve));
        },
    };
}

test('riders: broker killed after commit, before reply; the retry with the same ids duplicates nothing', async () => {
    const crash = await startBroker({ db: b.db });
    await configure('r-crash', { leaseTime: 60 });
    await push('r-crash', [{ payload: 'in', transactionId: 'crash-in' }]);
    const [m] = await pop('r-crash');
    const pid = Number(await sql(`SELECT queen.id_of(2, ${lit(m.partitionId)}::uuid)`));
    //  The effect marker first: a retry of an applied bundle fails there.
    const ops = [
        { type: 'kv.set', bucket: 'r-crash', key: 'effect-1', value: { done: true }, ifVersion: 0 },
        { type: 'push', items: [{ queue: 'r-crash-out', payload: 'out', transactionId: 'crash-out-1' }] },
        ackOp(m, { leaseId: m.leaseId }),
    ];
    //  Gate: the bundle waits on the source partition's lock; freeze the
    //  broker there, open the gate, let PostgreSQL commit, then kill it.
    const gate = await holdLock(b.db, pid);
    const lost = txn(ops, {}, crash.url).then((r) => r, (err) => err);
    await waitFor(async () => await sql(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
        AND classid = 0 AND objid = ${pid} AND NOT granted`) === '1', 10000, 25);
    crash.proc.kill('SIGSTOP');
    await gate.release();
    await waitFor(async () => (await kvRow('r-crash', 'effect-1')) !== '', 10000, 25);
    await crash.kill();
    const answer = await lost;
    assert.ok(answer instanceof Error, `no answer reached the client: ${answer.raw || answer}`);
    const committed = await kvRow('r-crash', 'effect-1');
    assert.deepEqual((await messages('r-crash-out')).map((x) => x.txn), ['crash-out-1'], 'committed once');

    //  The client retries the same bundle (same ids) on another broker.
    const retry = await txn(ops);
    assert.equal(retry.status, 409, retry.raw);
    assert.deepEqual([retry.body.failedIndex, retry.body.failedType, retry.body.results[0].currentVersion > 0],
        [0, 'kv.set', true], 'the marker says: applied already');
    assert.deepEqual((await messages('r-crash-out')).map((x) => x.txn), ['crash-out-1'], 'nothing pushed twice');
    assert.equal(await kvRow('r-crash', 'effect-1'), committed);
    assert.deepEqual(await pop('r-crash'), [], 'the source stays acked');
    //  Without the marker the same ids still protect the push (duplicate).
    const noMarker = await txn(ops.slice(1));
    assert.equal(noMarker.body.success, false, noMarker.raw);
    assert.deepEqual((await messages('r-crash-out')).map((x) => x.txn), ['crash-out-1']);
    //  Where exactly-once stops: a blind retry without transaction ids pushes again.
    const blind = [{ type: 'push', items: [{ queue: 'r-crash-blind', payload: 'x' }] }];
    assert.equal((await txn(blind)).body.success, true);
    assert.equal((await txn(blind)).body.success, true);
    assert.equal((await messages('r-crash-blind')).length, 2);
});
