//  test/integration/timers.test.mjs - timers (POST/GET/DELETE
//  /api/v1/timers; docs/http-api.md "State: kv and timers") against a real
//  PostgreSQL: a timer becomes a real message in its queue at its fireAt
//  (lag measured in the database), idempotent timerIds, fireAt in the past,
//  cancel before and after firing, cancels racing the firing (exactly one
//  of cancelled / fired), a parked long-poll woken by a fire, timers across
//  a broker restart and two brokers firing one set of timers (each exactly
//  once), bad input.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createDatabase, http, psql, startBroker, sleep, waitFor } from './lib.mjs';

let b;                          //  The broker of this file

//  Until the spool's first report a fresh broker buffers pushes; the pops
//  below read what timers pushed, which go straight to PostgreSQL anyway.
before(async () => {
    b = await startBroker();
});

after(async () => {
    if (b)
        await b.stop();
});

const lit = (s) => `'${String(s).replace(/'/g, "''")}'`;
const sql = (text, db = b.db) => psql(text, { db });
const create = (body, url = b.url) => http(`${url}/api/v1/timers`, { method: 'POST', body });
const cancel = (id, url = b.url) => http(`${url}/api/v1/timers/${encodeURIComponent(id)}`, { method: 'DELETE' });
const getTimer = (id) => http(`${b.url}/api/v1/timers/${encodeURIComponent(id)}`);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TS_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

//  Messages of a queue: [{partition, txn, payload}] in seq order.
async function messages (queue, db = b.db) {
    const out = await sql(`SELECT json_build_object('partition', p.name, 'txn', m.txn_id,
            'payload', convert_from(m.payload, 'UTF8'))::text
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = ${lit(queue)} ORDER BY m.seq`, db);
    return out ? out.split('\n').map((l) => JSON.parse(l)) : [];
}

//  Firing lag of a fired timer: message created_at - fireAt, in ms.
async function lagMs (timerId) {
    return Number(await sql(`SELECT extract(epoch FROM m.created_at - t.due_at) * 1000
        FROM queen.timers t JOIN queen.messages m ON m.seq = t.seq WHERE t.timer_id = ${lit(timerId)}`));
}

test('timers: a timer becomes a message in its queue at fireAt', async () => {
    const res = await create({ timerId: 'tm-1', queue: 'tm-q', partition: 'p1', payload: { n: 1, s: 'é' },
        transactionId: 'tm-txn-1', delayMs: 1000 });
    assert.equal(res.status, 201, res.raw);
    assert.deepEqual(Object.keys(res.body), ['timerId', 'fireAt', 'created', 'fired']);
    assert.equal(res.body.timerId, 'tm-1');
    assert.match(res.body.fireAt, TS_MS);
    assert.deepEqual([res.body.created, res.body.fired], [true, false]);
    const fireAt = Date.parse(res.body.fireAt);
    assert.ok(Math.abs(fireAt - (Date.now() + 1000)) < 1500, res.body.fireAt);

    const pending = await getTimer('tm-1');
    assert.equal(pending.status, 200, pending.raw);
    assert.equal(pending.body.status, 'pending');
    assert.deepEqual([pending.body.queue, pending.body.partition, pending.body.transactionId],
        ['tm-q', 'p1', 'tm-txn-1']);
    assert.deepEqual(pending.body.payload, { n: 1, s: 'é' });
    assert.equal(pending.body.messageId, null);
    const early = (await messages('tm-q')).length;
    assert.ok(early === 0 || Date.now() >= fireAt, `fired ${fireAt - Date.now()} ms before fireAt`);

    await waitFor(async () => (await messages('tm-q')).length === 1, 10000, 25);
    const [m] = await messages('tm-q');
    assert.deepEqual(m, { partition: 'p1', txn: 'tm-txn-1', payload: '{"n":1,"s":"é"}' });
    const lag = await lagMs('tm-1');
    assert.ok(lag >= 0 && lag < 1000, `fired ${lag} ms after fireAt (never before it)`);

    //  A consumer gets it through the normal pop route.
    const pop = await http(`${b.url}/api/v1/pop/queue/tm-q?wait=false&batch=10`);
    assert.equal(pop.status, 200, pop.raw);
    assert.equal(pop.body.messages[0].transactionId, 'tm-txn-1');
    assert.deepEqual(pop.body.messages[0].data, { n: 1, s: 'é' });

    const fired = await getTimer('tm-1');
    assert.equal(fired.body.status, 'fired');
    assert.match(fired.body.firedAt, TS_MS);
    assert.equal(fired.body.messageId, pop.body.messages[0].id);
    assert.equal(fired.body.partitionId, pop.body.messages[0].partitionId);
    assert.equal((await http(`${b.url}/api/v1/timers?queue=tm-q`)).body.timers.length, 0, 'no longer pending');
});

test('timers: idempotent timerId, generated ids, fireAt in the past and as epoch ms', async () => {
    const body = { timerId: 'tm-idem', queue: 'tm-idem-q', payload: [1, 2], delayMs: 60000 };
    const first = await create(body);
    assert.equal(first.status, 201, first.raw);
    const again = await create(body);
    assert.equal(again.status, 200, again.raw);
    assert.deepEqual(again.body, { ...first.body, created: false }, 'same body: the same timer');
    for (const change of [{ payload: [1, 3] }, { delayMs: 60001 }, { queue: 'other' }, { partition: 'p' },
        { transactionId: 'x' }, { delayMs: undefined, fireAt: first.body.fireAt }]) {
        const res = await create({ ...body, ...change });
        assert.equal(res.status, 409, `${JSON.stringify(change)}: ${res.raw}`);
        assert.equal(res.body.error, 'timerId tm-idem is taken by a different timer');
    }
    assert.equal((await cancel('tm-idem')).status, 200);

    //  Without timerId: a generated UUID; without transactionId: a minted one.
    const gen = await create({ queue: 'tm-past', payload: 'past', fireAt: '2001-02-03T04:05:06.789Z' });
    assert.equal(gen.status, 201, gen.raw);
    assert.match(gen.body.timerId, UUID);
    assert.equal(gen.body.fireAt, '2001-02-03T04:05:06.789Z');
    const ms = await create({ queue: 'tm-past', payload: 'ms', fireAt: Date.now() - 5000 });
    assert.equal(ms.status, 201, ms.raw);
    //  In the past: fired at once.
    await waitFor(async () => (await messages('tm-past')).length === 2, 5000, 25);
    const got = await messages('tm-past');
    assert.deepEqual(got.map((m) => m.payload).sort(), ['"ms"', '"past"']);
    for (const m of got)
        assert.match(m.txn, UUID, 'minted transaction id');
    const firedAgain = await create({ queue: 'tm-past', payload: 'ms', fireAt: Date.parse(ms.body.fireAt), timerId: ms.body.timerId });
    assert.equal(firedAgain.status, 200, firedAgain.raw);
    assert.deepEqual([firedAgain.body.created, firedAgain.body.fired], [false, true]);
    assert.equal((await messages('tm-past')).length, 2, 'not fired twice');
});

test('timers: cancel while pending, 409 once fired, 404 when unknown', async () => {
    const a = await create({ timerId: 'tm-c1', queue: 'tm-cancel', payload: 1, delayMs: 700 });
    assert.equal(a.status, 201, a.raw);
    const c = await cancel('tm-c1');
    assert.equal(c.status, 200, c.raw);
    assert.deepEqual(c.body, { timerId: 'tm-c1', cancelled: true, fired: false });
    assert.equal((await getTimer('tm-c1')).status, 404);
    assert.equal((await cancel('tm-c1')).status, 404);
    assert.equal((await cancel('never-existed')).body.error, 'timer not found');

    const f = await create({ timerId: 'tm-c2', queue: 'tm-cancel', payload: 2, delayMs: 0 });
    assert.equal(f.status, 201);
    await waitFor(async () => (await getTimer('tm-c2')).body.status === 'fired', 5000, 25);
    const late = await cancel('tm-c2');
    assert.equal(late.status, 409, late.raw);
    assert.equal(late.body.cancelled, false);
    assert.equal(late.body.fired, true);
    assert.match(late.body.firedAt, TS_MS);
    assert.equal(late.body.error, 'timer already fired');

    await sleep(1000);            //  well past tm-c1's fireAt
    assert.deepEqual((await messages('tm-cancel')).map((m) => m.payload), ['2'], 'the cancelled timer never fired');
    //  A cancelled timerId may be used again.
    assert.equal((await create({ timerId: 'tm-c1', queue: 'tm-cancel', payload: 3, delayMs: 60000 })).status, 201);
});

test('timers: listing pending timers by queue, paginated', async () => {
    for (let i = 0; i < 5; i++)
        assert.equal((await create({ timerId: `tm-l${i}`, queue: 'tm-list', payload: i, delayMs: 600000 + i * 1000 })).status, 201);
    assert.equal((await create({ timerId: 'tm-l-other', queue: 'tm-list-other', payload: 0, delayMs: 600000 })).status, 201);
    const all = await http(`${b.url}/api/v1/timers?queue=tm-list`);
    assert.equal(all.status, 200, all.raw);
    assert.deepEqual(all.body.timers.map((t) => t.timerId), ['tm-l0', 'tm-l1', 'tm-l2', 'tm-l3', 'tm-l4']);
    assert.deepEqual(Object.keys(all.body.timers[0]),
        ['timerId', 'queue', 'partition', 'transactionId', 'payload', 'fireAt', 'createdAt']);
    assert.equal(all.body.next, null);
    const seen = [];
    let after = '';
    for (let i = 0; i < 5; i++) {
        const page = await http(`${b.url}/api/v1/timers?queue=tm-list&limit=2${after ? `&after=${after}` : ''}`);
        assert.equal(page.status, 200, page.raw);
        seen.push(...page.body.timers.map((t) => t.payload));
        if (!page.body.next)
            break;
        after = page.body.next;
    }
    assert.deepEqual(seen, [0, 1, 2, 3, 4]);
    const every = await http(`${b.url}/api/v1/timers?limit=1000`);
    assert.ok(every.body.timers.some((t) => t.timerId === 'tm-l-other'));
    for (const id of ['tm-l0', 'tm-l1', 'tm-l2', 'tm-l3', 'tm-l4', 'tm-l-other'])
        assert.equal((await cancel(id)).status, 200);
});

test('timers: bad input gets a 4xx naming the field', async () => {
    const ok = { queue: 'tm-bad', payload: 1, delayMs: 1000 };
    const cases = [
        [{ ...ok, queue: undefined }, /queue is required/],
        [{ ...ok, queue: 5 }, /queue must be a string/],
        [{ ...ok, queue: '' }, /queue must not be empty/],
        [{ ...ok, queue: 'q'.repeat(256) }, /queue must be at most 255 bytes/],
        [{ ...ok, partition: 'p'.repeat(256) }, /partition must be at most 255 bytes/],
        [{ ...ok, partition: 'a\u0000b' }, /partition must not contain NUL/],
        [{ ...ok, payload: undefined }, /payload is required/],
        [{ ...ok, timerId: 't'.repeat(256) }, /timerId must be at most 255 bytes/],
        [{ ...ok, timerId: 7 }, /timerId must be a string/],
        [{ ...ok, timerId: '' }, /timerId must not be empty/],
        [{ ...ok, transactionId: 'x'.repeat(256) }, /transactionId must be at most 255 bytes/],
        [{ ...ok, delayMs: undefined }, /fireAt or delayMs is required/],
        [{ ...ok, fireAt: '2030-01-01T00:00:00Z' }, /either fireAt or delayMs, not both/],
        [{ ...ok, delayMs: -1 }, /delayMs must be an integer between 0 and/],
        [{ ...ok, delayMs: 1.5 }, /delayMs must be an integer/],
        [{ ...ok, delayMs: '100' }, /delayMs must be an integer/],
        [{ ...ok, delayMs: 315360000001 }, /delayMs must be an integer between 0 and 315360000000/],
        [{ ...ok, delayMs: undefined, fireAt: 'tomorrow' }, /fireAt must be an ISO-8601 timestamp/],
        [{ ...ok, delayMs: undefined, fireAt: true }, /fireAt must be an ISO-8601 timestamp/],
        [{ ...ok, delayMs: undefined, fireAt: -5 }, /fireAt must be an ISO-8601 timestamp/],
        [{ ...ok, delayMs: undefined, fireAt: '2999-01-01T00:00:00Z' }, /fireAt must be .* at most 10 years ahead/],
    ];
    for (const [body, re] of cases) {
        const res = await create(body);
        assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${res.raw.slice(0, 200)}`);
        assert.match(res.body.error, re);
    }
    for (const [raw, re] of [['', /Empty request body/], ['{"queue":', /Invalid JSON/], ['[1]', /must be a JSON object/]]) {
        const res = await http(`${b.url}/api/v1/timers`, { method: 'POST', body: raw });
        assert.equal(res.status, 400, res.raw);
        assert.match(res.body.error, re);
    }
    const list = [
        [await http(`${b.url}/api/v1/timers?limit=0`), /limit must be an integer between 1 and 1000/],
        [await http(`${b.url}/api/v1/timers?after=zzz`), /after must be a cursor/],
        [await http(`${b.url}/api/v1/timers?queue=${'q'.repeat(256)}`), /queue must be at most 255 bytes/],
        [await http(`${b.url}/api/v1/timers/%FF`), /timerId must be valid UTF-8/],
    ];
    for (const [res, re] of list) {
        assert.equal(res.status, 400, res.raw);
        assert.match(res.body.error, re);
    }
    assert.equal((await http(`${b.url}/api/v1/timers/x`, { method: 'PUT', body: '{}' })).status, 405);
    assert.equal(await sql(`SELECT count(*) FROM queen.timers WHERE queue = 'tm-bad'`), '0', 'nothing created');
});

test('timers: a fired timer wakes a parked long-poll pop', async () => {
    const started = Date.now();
    const popping = http(`${b.url}/api/v1/pop/queue/tm-wake?wait=true&timeout=10000`, { timeoutMs: 20000 });
    await sleep(300);             //  let the pop park
    assert.equal((await create({ queue: 'tm-wake', payload: 'ring', delayMs: 500 })).status, 201);
    const res = await popping;
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.messages[0].data, 'ring');
    const took = Date.now() - started;
    assert.ok(took < 5000, `woken after ${took} ms, not at the 10 s timeout`);
});

test('timers: cancels racing the firing: exactly one of cancelled / fired', async (t) => {
    const N = 200;
    const due = Date.now() + 1500;
    const ids = Array.from({ length: N }, (_, i) => `tm-race-${i}`);
    //  Created with one fireAt, in parallel batches.
    for (let i = 0; i < N; i += 50)
        await Promise.all(ids.slice(i, i + 50).map((timerId, k) =>
            create({ timerId, queue: 'tm-race', payload: i + k, transactionId: `race-${i + k}`, fireAt: due })
                .then((r) => assert.equal(r.status, 201, r.raw))));
    //  Cancel all of them around fireAt, spread over +-100 ms.
    const wait = due - Date.now() - 100;
    if (wait > 0)
        await sleep(wait);
    const outcomes = await Promise.all(ids.map(async (id, i) => {
        await sleep(i % 200);
        const r = await cancel(id);
        assert.ok(r.status === 200 || r.status === 409, r.raw);
        assert.equal(r.body.cancelled, r.status === 200);
        assert.equal(r.body.fired, r.status === 409);
        return r.status === 200 ? 'cancelled' : 'fired';
    }));
    await waitFor(async () => await sql(`SELECT count(*) FROM queen.timers WHERE queue = 'tm-race' AND fired_at IS NULL`) === '0',
        10000, 50);
    const msgs = await messages('tm-race');
    const fired = new Set(msgs.map((m) => m.txn));
    assert.equal(fired.size, msgs.length, 'no timer fired twice');
    const cancelled = outcomes.filter((o) => o === 'cancelled').length;
    assert.equal(msgs.length + cancelled, N, `delivered ${msgs.length} + cancelled ${cancelled} = ${N}`);
    outcomes.forEach((o, i) => assert.equal(fired.has(`race-${i}`), o === 'fired', `timer ${i}: ${o}`));
    t.diagnostic(`fired ${msgs.length}, cancelled ${cancelled}`);
});

test('timers: pending timers survive a broker restart and each fires once', async () => {
    const db = await createDatabase('timers_restart');
    const one = await startBroker({ db });
    const N = 50;
    const due = Date.now() + 4000;
    for (let i = 0; i < N; i += 25)
        await Promise.all(Array.from({ length: 25 }, (_, k) =>
            create({ queue: 'tm-restart', payload: i + k, fireAt: due + (i + k) * 10 }, one.url)
                .then((r) => assert.equal(r.status, 201, r.raw))));
    await one.stop();
    assert.ok(Date.now() < due, 'stopped before the first was due');
    await sleep(Math.max(0, due + N * 10 - Date.now() + 200));
    assert.equal((await messages('tm-restart', db)).length, 0, 'nothing fires while no broker runs');
    const two = await startBroker({ db });
    try {
        await waitFor(async () => (await messages('tm-restart', db)).length >= N, 15000, 50);
        await sleep(500);
        const msgs = await messages('tm-restart', db);
        assert.equal(msgs.length, N);
        assert.equal(new Set(msgs.map((m) => m.txn)).size, N);
        assert.deepEqual(msgs.map((m) => Number(m.payload)).sort((x, y) => x - y), Array.from({ length: N }, (_, i) => i));
    } finally {
        await two.stop();
    }
});

test('timers: two brokers on one database fire 500 timers, each exactly once', async (t) => {
    const db = await createDatabase('timers_two');
    const one = await startBroker({ db });
    const two = await startBroker({ db });
    try {
        const N = 500;
        const due = Date.now() + 3000;
        for (let i = 0; i < N; i += 50)
            await Promise.all(Array.from({ length: 50 }, (_, k) => {
                const n = i + k;
                //  Half created on each broker; due over one second.
                return create({ queue: 'tm-two', partition: `p${n % 7}`, payload: n, fireAt: due + (n % 100) * 10 },
                    n % 2 ? one.url : two.url).then((r) => assert.equal(r.status, 201, r.raw));
            }));
        await waitFor(async () => await sql(`SELECT count(*) FROM queen.timers WHERE fired_at IS NULL`, db) === '0',
            30000, 100);
        await sleep(500);
        const msgs = await messages('tm-two', db);
        assert.equal(msgs.length, N, 'no timer lost, none fired twice');
        assert.equal(new Set(msgs.map((m) => m.txn)).size, N, 'distinct transaction ids');
        assert.equal(await sql(`SELECT count(*) FROM queen.timers WHERE fired_at IS NOT NULL`, db), String(N));
        const lag = await sql(`SELECT round(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM m.created_at - t.due_at) * 1000))
            FROM queen.timers t JOIN queen.messages m ON m.seq = t.seq`, db);
        assert.ok(Number(lag) < 5000, `p99 lag ${lag} ms`);
        t.diagnostic(`p99 firing lag ${lag} ms`);
    } finally {
        await one.stop();
        await two.stop();
    }
});
