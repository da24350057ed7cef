//  test/integration/longpoll.test.mjs - wait=true pops over plain HTTP
//  (contract §3.7 long-poll): woken by a push, by a notify, by a due
//  instant; timing out no earlier than the timeout; waiting for queues
//  that do not exist yet; no herd; a client hanging up frees its slot
//  (queen_parked_pops); SIGTERM answers parked pops at once.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startBroker, http, psql, sleep, waitFor, configureQueue, pushItems, ack, ackFor } from './lib.mjs';

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

const configure = (url, queue, options = {}) => configureQueue(url, queue, options);

const push = (url, items) => pushItems(url, items);

function popUrl (url, queue, params = {}, partition) {
    const qs = new URLSearchParams(Object.fromEntries(
        Object.entries(params).map(([k, v]) => [k, String(v)]))).toString();
    const path = partition === undefined
        ? `/api/v1/pop/queue/${encodeURIComponent(queue)}`
        : `/api/v1/pop/queue/${encodeURIComponent(queue)}/partition/${encodeURIComponent(partition)}`;
    return `${url}${path}${qs ? `?${qs}` : ''}`;
}

//  Starts a long-poll; resolves to { status, body, at } (at = Date.now()
//  when the answer arrived).
function longPoll (url, queue, params = {}, partition) {
    return http(popUrl(url, queue, { wait: true, ...params }, partition), { timeoutMs: 120000 })
        .then((res) => ({ ...res, at: Date.now() }));
}

async function parked (url) {
    const res = await http(`${url}/metrics/prometheus`);
    const m = /^queen_parked_pops (\d+)$/m.exec(res.raw);
    assert.ok(m, `no queen_parked_pops in /metrics/prometheus (${res.status})`);
    return Number(m[1]);
}

async function waitParked (url, n) {
    await waitFor(async () => (await parked(url)) === n, 10000, 20);
}

function percentile (values, p) {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

test('a parked pop is answered promptly after a push', async (t) => {
    const Q = 'lp-wake';
    await configure(U, Q);
    const latencies = [];
    for (let i = 0; i < 10; i++) {
        const lp = longPoll(U, Q, { timeout: 20000 });
        await waitParked(U, 1);
        const sent = Date.now();
        await push(U, [{ queue: Q, payload: { i } }]);
        const pushed = Date.now();
        const res = await lp;
        assert.equal(res.status, 200, res.raw);
        assert.deepEqual(res.body.messages.map((m) => m.data), [{ i }]);
        latencies.push(res.at - pushed);
        assert.ok(res.at - sent < 500, `woken ${res.at - sent} ms after the push was sent`);
        await ack(U, ackFor(res.body.messages[0], { leaseId: res.body.leaseId }), { success: true });
    }
    t.diagnostic(`push response -> pop response: p50 ${percentile(latencies, 0.5)} ms, ` +
                 `max ${Math.max(...latencies)} ms (includes the HTTP client)`);
    assert.ok(percentile(latencies, 0.5) < 500);
});

//  pg_writer publishes "committed" for the queues of successful acks (issue
//  10: whoever commits announces it): a parked consumer waiting behind a
//  leased partition is woken by the ack that releases it, well before the
//  lease would expire (60 s) or the park table's safety net (3 s) fires.
test('an ack that releases a leased partition wakes a parked pop', async () => {
    const Q = 'lp-ack';
    await configure(U, Q, { leaseTime: 60 });
    await push(U, [{ queue: Q, partition: 'p', payload: 1 }, { queue: Q, partition: 'p', payload: 2 }]);
    const first = await http(popUrl(U, Q, { batch: 1, wait: false }));
    assert.equal(first.status, 200, first.raw);
    assert.deepEqual(first.body.messages.map((m) => m.data), [1]);
    const lp = longPoll(U, Q, { timeout: 20000 });
    await waitParked(U, 1);
    const acked = Date.now();
    await ack(U, ackFor(first.body.messages[0], { leaseId: first.body.leaseId }), { success: true });
    const res = await lp;
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.messages.map((m) => m.data), [2]);
    assert.ok(res.at - acked < 1500, `woken ${res.at - acked} ms after the ack`);
    await ack(U, ackFor(res.body.messages[0], { leaseId: res.body.leaseId }), { success: true });
});

test('a long-poll times out after its timeout, not before', async () => {
    const Q = 'lp-timeout';
    await configure(U, Q);
    const started = Date.now();
    const res = await longPoll(U, Q, { timeout: 1500 });
    const took = res.at - started;
    assert.equal(res.status, 204);
    assert.equal(res.raw, '');
    assert.ok(took >= 1500, `answered after ${took} ms`);
    assert.ok(took < 4500, `answered after ${took} ms`);
    //  timeout=0 with wait=true does not wait.
    const zero = Date.now();
    assert.equal((await longPoll(U, Q, { timeout: 0 })).status, 204);
    assert.ok(Date.now() - zero < 1000);
});

test('a long-poll on a queue that does not exist yet is answered by the push that creates it', async () => {
    const Q = `lp-later-${Date.now()}`;
    const lp = longPoll(U, Q, { timeout: 20000, batch: 5 });
    await waitParked(U, 1);
    await sleep(300);
    await push(U, [{ queue: Q, payload: 'first' }, { queue: Q, payload: 'second' }]);
    const res = await lp;
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.messages.map((m) => m.data), ['first', 'second']);
    //  Same for a partition that does not exist yet, on the partition route.
    const lpp = longPoll(U, Q, { timeout: 20000 }, 'p-new');
    await waitParked(U, 1);
    await push(U, [{ queue: Q, partition: 'p-new', payload: 'in-p-new' }]);
    const resp = await lpp;
    assert.equal(resp.status, 200);
    assert.equal(resp.body.partition, 'p-new');
    assert.deepEqual(resp.body.messages.map((m) => m.data), ['in-p-new']);
});

test('a long-poll is woken when a delayed message becomes due', async () => {
    const Q = 'lp-delayed';
    await configure(U, Q, { delayedProcessing: 1 });
    await push(U, [{ queue: Q, payload: 'due' }]);
    const started = Date.now();
    const res = await longPoll(U, Q, { timeout: 20000 });
    assert.equal(res.status, 200);
    const took = res.at - started;
    //  Due after ~1 s; well before the safety-net recheck would find it.
    assert.ok(took >= 700, `delivered after ${took} ms`);
    assert.ok(took < 2800, `delivered after ${took} ms`);
});

test('POST /internal/api/notify wakes a parked pop', async () => {
    const Q = 'lp-notify';
    await configure(U, Q);
    const started = Date.now();
    const lp = longPoll(U, Q, { timeout: 20000 });
    await waitParked(U, 1);
    //  Inserted behind the broker's back (no "committed" event): only the
    //  notify can wake the pop before the safety-net recheck (~3 s).
    await psql(`SELECT count(*) FROM queen.push('', ARRAY['${Q}'], ARRAY['Default'],
                ARRAY[NULL]::text[], ARRAY[convert_to('"x"', 'UTF8')], ARRAY[NULL]::uuid[],
                ARRAY[NULL]::text[], ARRAY[false], false)`, { db: broker.db });
    const n = await http(`${U}/internal/api/notify`, { method: 'POST', body: { queue: Q } });
    assert.equal(n.status, 200);
    const res = await lp;
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.messages.map((m) => m.data), ['x']);
    assert.ok(res.at - started < 2000, `answered after ${res.at - started} ms`);
});

test('one push wakes one of many parked consumers; the others keep waiting', async () => {
    const Q = 'lp-herd';
    await configure(U, Q, { leaseTime: 60 });
    const started = Date.now();
    const polls = [];
    for (let i = 0; i < 5; i++)
        polls.push(longPoll(U, Q, { timeout: 3000 }));
    await waitParked(U, 5);
    await push(U, [{ queue: Q, payload: 'only' }]);
    const winner = await Promise.race(polls);
    assert.equal(winner.status, 200);
    assert.ok(winner.at - started < 2900, 'the message must not wait for a deadline');
    //  Everyone else goes back to sleep and times out at its deadline.
    const all = await Promise.all(polls);
    assert.equal(all.filter((r) => r.status === 200).length, 1);
    for (const r of all.filter((x) => x.status !== 200)) {
        assert.equal(r.status, 204);
        assert.ok(r.at - started >= 3000);
    }
});

test('messages for several partitions reach several parked consumers (wake-up chain)', async () => {
    const Q = 'lp-chain';
    await configure(U, Q, { leaseTime: 60 });
    const polls = [];
    for (let i = 0; i < 3; i++)
        polls.push(longPoll(U, Q, { timeout: 15000 }));
    await waitParked(U, 3);
    const pushed = Date.now();
    await push(U, ['a', 'b', 'c'].map((p) => ({ queue: Q, partition: p, payload: p })));
    const all = await Promise.all(polls);
    assert.deepEqual(all.map((r) => r.status), [200, 200, 200]);
    assert.deepEqual(all.map((r) => r.body.messages[0].data).sort(), ['a', 'b', 'c']);
    for (const r of all)
        assert.ok(r.at - pushed < 1500, `answered ${r.at - pushed} ms after the push`);
});

//  Sends a raw long-poll request; resolves once the socket is connected.
function rawLongPoll (url, path) {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
        const sock = net.connect({ host: hostname, port: Number(port) }, () => {
            sock.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
            resolve(sock);
        });
        sock.on('error', reject);
    });
}

test('a client that resets its connection while parked frees its slot at once', async () => {
    const Q = 'lp-reset';
    await configure(U, Q);
    const before = await parked(U);
    const sock = await rawLongPoll(U, `/api/v1/pop/queue/${Q}?wait=true&timeout=30000`);
    await waitParked(U, before + 1);
    sock.resetAndDestroy();
    await waitParked(U, before);
    //  The broker still serves long-polls normally afterwards.
    const again = longPoll(U, Q, { timeout: 20000 });
    await waitParked(U, before + 1);
    await push(U, [{ queue: Q, payload: 'after-reset' }]);
    const res = await again;
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.messages.map((m) => m.data), ['after-reset']);
});

//  An aborted fetch closes the socket (FIN): the client is gone and its
//  parked pop is dropped at once.
test('a client that aborts its request while parked frees its slot at once', async () => {
    const Q = 'lp-hangup';
    await configure(U, Q);
    const before = await parked(U);
    const ctl = new AbortController();
    const lp = fetch(popUrl(U, Q, { wait: true, timeout: 8000 }), { signal: ctl.signal })
        .catch((err) => err);
    await waitParked(U, before + 1);
    ctl.abort();
    assert.equal((await lp).name, 'AbortError');
    await waitFor(async () => (await parked(U)) === before, 3000, 20);
});

test('bad long-poll parameters are refused before waiting', async () => {
    const res = await http(popUrl(U, 'lp-bad', { wait: true, timeout: -5 }));
    assert.equal(res.status, 400);
    assert.match(res.body.error, /timeout/);
});

test('SIGTERM answers parked long-polls with 204 at once and exits 0', async () => {
    const b = await startBroker();
    await configure(b.url, 'lp-term');
    const polls = [longPoll(b.url, 'lp-term', { timeout: 60000 }),
                   longPoll(b.url, 'lp-term-missing', { timeout: 60000 }, 'p')];
    await waitParked(b.url, 2);
    const started = Date.now();
    const code = await b.stop('SIGTERM', 15000);
    const answers = await Promise.all(polls);
    assert.equal(code, 0);
    for (const a of answers) {
        assert.equal(a.status, 204);
        assert.ok(a.at - started < 3000, `answered ${a.at - started} ms after SIGTERM`);
    }
    assert.ok(Date.now() - started < 5000);
});
