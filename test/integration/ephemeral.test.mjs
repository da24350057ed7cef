//  test/integration/ephemeral.test.mjs - ephemeral queues (docs/ephemeral.md)
//  on two brokers joined by the mesh (one PostgreSQL database, mesh ports
//  from freePort()): work hand-off to exactly one waiting consumer on
//  either broker, request/reply across brokers and its clean timeout,
//  presence topics (cell-wide subscriber list, expiry, fan-out both ways,
//  cache invalidation keys), bounds and overflow policies, memory under
//  its cap under a flood, batched receives and replies across brokers,
//  names per tenant through queen-proxy (a second cell of two brokers
//  behind a proxy, two tenants using the same names), and all of it with
//  PostgreSQL stopped while the durable queues answer 503 (pops) and
//  spool (pushes).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import {
    startBroker, createDatabase, freePort, http, request, waitFor, sleep, pgStop, pgStart,
    configureQueue, pushItems, ROOT, PG_HOST, PG_PORT,
} from './lib.mjs';

const SECRET = 'ephemeral-test-cell-secret-0123';
const CAP = 256 * 1024;         //  EPHEMERAL_MAX_BYTES of broker A
let A, B;

async function start (env = {}) {
    const meshPort = await freePort();
    const b = await startBroker({
        db: startBroker.db,
        env: {
            MESH_PORT: String(meshPort), MESH_SECRET: SECRET, MESH_HEARTBEAT_MS: '500', ...env,
        },
    });
    b.meshId = `127.0.0.1:${meshPort}`;
    return b;
}

const E = '/api/v1/ephemeral';

function post (b, path, body, expect = [200, 201, 202]) {
    return request(b.url, `${E}${path}`, { method: 'POST', body, expect });
}

function get (b, path, expect = [200, 204]) {
    return request(b.url, `${E}${path}`, { expect, timeoutMs: 60000 });
}

before(async () => {
    startBroker.db = await createDatabase('ephemeral');
    A = await start({ EPHEMERAL_MAX_BYTES: String(CAP) });
    B = await start();
    for (const [x, y] of [[A, B], [B, A]]) {
        await waitFor(async () => {
            const h = await http(`${x.url}/health`);
            return h.body.mesh?.peers?.some((p) => p.address === y.meshId && p.state === 'up');
        }, 15000, 100);
    }
});

after(async () => {
    await pgStart().catch(() => {});
    await A?.kill();
    await B?.kill();
});

//  Starts a receive long-poll and resolves (to { rx }: the pending
//  answer) once the broker holds it and, a mesh hop later, the peer knows.
//  (Configuring the queue with {} reads its state; it sets the defaults.)
async function receiving (b, peer, queue, timeout = 10000) {
    const rx = get(b, `/queues/${queue}/receive?timeout=${timeout}`);
    await waitFor(async () => (await post(peer, `/queues/${queue}`, {})).body.waitingElsewhere[b.meshId] === 1,
                  5000, 20);
    return { rx };
}

test('work hand-off: a message sent on A reaches the one consumer waiting on B', async () => {
    const { rx } = await receiving(B, A, 'jobs');
    const sent = await post(A, '/queues/jobs/send', { payload: { job: 1 } });
    assert.equal(sent.status, 201, sent.raw);
    assert.equal(sent.body.status, 'forwarded');
    const got = await rx;
    assert.equal(got.status, 200, got.raw);
    assert.deepEqual(got.body.payload, { job: 1 });
});

test('work hand-off: two consumers waiting (one per broker), one message: exactly one gets it', async () => {
    const r1 = get(A, '/queues/once/receive?timeout=2500');
    const r2 = get(B, '/queues/once/receive?timeout=2500');
    await sleep(300);
    await post(A, '/queues/once/send', { payload: 'only-one' });
    const got = await Promise.all([r1, r2]);
    const statuses = got.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 204], got.map((r) => r.raw).join(' | '));
    assert.equal(got.find((r) => r.status === 200).body.payload, 'only-one');
});

test('work hand-off: a consumer that hung up is forgotten at once; the message waits for the next one', async () => {
    const sock = net.connect(Number(new URL(A.url).port), '127.0.0.1');
    await new Promise((resolve) => sock.once('connect', resolve));
    sock.write('GET /api/v1/ephemeral/queues/gone/receive?timeout=20000 HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor(async () => (await post(A, '/queues/gone', {})).body.waiting === 1, 5000, 20);
    sock.destroy();
    //  The broker sees the client leave and stops counting it as waiting
    //  (it used to hand it the message, then put the message back).
    await waitFor(async () => (await post(A, '/queues/gone', {})).body.waiting === 0, 5000, 20);
    const sent = await post(A, '/queues/gone/send', { payload: 'not lost' });
    assert.equal(sent.body.status, 'queued');
    const got = await waitFor(async () => {
        const r = await get(A, '/queues/gone/receive?timeout=0');
        return r.status === 200 ? r : null;
    }, 5000, 50);
    assert.equal(got.body.payload, 'not lost');
});

test('request/reply: the reply from a replier on B reaches the requester waiting on A', async () => {
    const { rx } = await receiving(B, A, 'rpc');
    const req = post(A, '/queues/rpc/request', { payload: { q: 'ping' }, timeout: 5000 });
    const work = await rx;
    assert.equal(work.status, 200, work.raw);
    assert.match(work.body.replyTo, new RegExp(`^\\d+@${A.meshId.replace(/\./g, '\\.')}$`));
    assert.ok(work.body.correlationId);
    const answered = await post(B, '/reply', {
        replyTo: work.body.replyTo, correlationId: work.body.correlationId, payload: { a: 'pong' },
    });
    assert.equal(answered.body.status, 'forwarded');
    const res = await req;
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.payload, { a: 'pong' });
    assert.equal(res.body.correlationId, work.body.correlationId);
});

test('request/reply: a requester nobody answers times out cleanly', async () => {
    const started = Date.now();
    const res = await request(A.url, `${E}/queues/nobody-home/request`, {
        method: 'POST', body: { payload: 1, timeout: 800 }, expect: 504,
    });
    const took = Date.now() - started;
    assert.ok(took >= 800, `answered after ${took} ms`);
    assert.match(res.body.error, /no reply/);
    //  A late reply finds nobody: 404, not a crash.
    const late = await request(A.url, `${E}/reply`, {
        method: 'POST', body: { replyTo: `999999@${A.meshId}`, correlationId: 'x', payload: 1 }, expect: 404,
    });
    assert.ok(late.body.error);
});

test('presence: subscribers on both brokers are listed, expire, and every one gets every message', async () => {
    await post(A, '/topics/prices/subscribe', { subscriber: 'sa', ttl: 20000 });
    await post(B, '/topics/prices/subscribe', { subscriber: 'sb', ttl: 20000 });
    await post(B, '/topics/prices/subscribe', { subscriber: 'short', ttl: 700 });
    await waitFor(async () => {
        const l = await get(A, '/topics/prices/subscribers');
        return l.body.subscribers.map((s) => s.subscriber).sort().join() === 'sa,sb,short';
    }, 5000, 50);
    //  'short' never renews: it leaves the list after its ttl, on both brokers.
    await waitFor(async () => {
        const l = await get(A, '/topics/prices/subscribers');
        return l.body.subscribers.map((s) => s.subscriber).sort().join() === 'sa,sb';
    }, 5000, 50);
    const pa = get(A, '/topics/prices/poll?subscriber=sa&timeout=5000');
    const pb = get(B, '/topics/prices/poll?subscriber=sb&timeout=5000');
    await sleep(100);
    const pub = await post(A, '/topics/prices/publish', { payload: { sku: 1, price: 9 } });
    assert.equal(pub.body.subscribers, 2, pub.raw);
    const [ra, rb] = await Promise.all([pa, pb]);
    assert.equal(ra.status, 200, ra.raw);
    assert.equal(rb.status, 200, rb.raw);
    assert.deepEqual(ra.body.messages.map((m) => m.payload), [{ sku: 1, price: 9 }]);
    assert.deepEqual(rb.body.messages.map((m) => m.payload), [{ sku: 1, price: 9 }]);
});

test('cache invalidation: a key published on B reaches the subscriber on A', async () => {
    await post(A, '/topics/cache/subscribe', { subscriber: 'cache-a' });
    await waitFor(async () => (await get(B, '/topics/cache/subscribers')).body.subscribers.length === 1, 5000, 50);
    await post(B, '/topics/cache/publish', { payload: { key: 'user:42' } });
    const got = await get(A, '/topics/cache/poll?subscriber=cache-a&timeout=3000');
    assert.equal(got.status, 200, got.raw);
    assert.deepEqual(got.body.messages.map((m) => m.payload), [{ key: 'user:42' }]);
});

test('bounds: overflow "reject" answers 429, "drop-oldest" keeps the newest', async () => {
    const conf = await post(A, '/queues/small', { maxMessages: 3, overflow: 'reject' });
    assert.equal(conf.body.maxMessages, 3);
    for (let i = 0; i < 3; i++)
        assert.equal((await post(A, '/queues/small/send', { payload: i })).body.status, 'queued');
    const full = await request(A.url, `${E}/queues/small/send`, { method: 'POST', body: { payload: 3 }, expect: 429 });
    assert.match(full.body.error, /full/);
    await post(A, '/queues/rolling', { maxMessages: 3, overflow: 'drop-oldest' });
    for (let i = 0; i < 5; i++)
        await post(A, '/queues/rolling/send', { payload: i });
    const got = [];
    for (let i = 0; i < 3; i++)
        got.push((await get(A, '/queues/rolling/receive?timeout=0')).body.payload);
    assert.deepEqual(got, [2, 3, 4]);
    const empty = await get(A, '/queues/rolling/receive?timeout=0');
    assert.equal(empty.status, 204);
    const bad = await request(A.url, `${E}/queues/x`, { method: 'POST', body: { overflow: 'maybe' }, expect: 400 });
    assert.ok(bad.body.error);
});

//  queen_http_client_gone_total of broker b: the codec saw a client leave
//  (the series appears with the first one).
async function clientsGone (b) {
    const res = await http(`${b.url}/metrics/prometheus`);
    assert.equal(res.status, 200, res.raw);
    const m = /^queen_http_client_gone_total (\d+)$/m.exec(res.raw);
    return m ? Number(m[1]) : 0;
}

test('many concurrent request/replies across brokers: each requester gets its own answer', async () => {
    //  200 requests in flight on A; on B two batched repliers and two
    //  one-by-one repliers answer each with its own payload until all are in.
    //  (Before the flood test: A's memory cap is small and it fills it.)
    const N = 200;
    const queue = 'rpc-many';
    let answered = 0;
    let stop = false;
    async function replier (max) {
        while (!stop) {
            const q = max ? `?timeout=500&max=${max}` : '?timeout=500';
            const work = await get(B, `/queues/${queue}/receive${q}`);
            if (work.status === 204)
                continue;
            const msgs = max ? work.body.messages : [work.body];
            const replies = msgs.map((m) => ({ replyTo: m.replyTo, correlationId: m.correlationId, payload: { echo: m.payload.i } }));
            const res = max
                ? await post(B, '/reply', { replies })
                : await post(B, '/reply', replies [0]);
            assert.equal(res.status, 202, res.raw);
            if (max)
                assert.equal(res.body.forwarded, msgs.length, res.raw);
            answered += msgs.length;
        }
    }
    const repliers = [replier(16), replier(16), replier(0), replier(0)];
    await waitFor(async () => ((await post(A, `/queues/${queue}`, {})).body.waitingElsewhere[B.meshId] || 0) >= 34,
                  5000, 20);
    const reqs = [];
    for (let i = 0; i < N; i++)
        reqs.push(post(A, `/queues/${queue}/request`, { payload: { i }, correlationId: `k-${i}`, timeout: 20000 }));
    const res = await Promise.all(reqs);
    stop = true;
    await Promise.all(repliers);
    assert.equal(res.length, N);
    res.forEach((r, i) => {
        assert.equal(r.status, 200, r.raw);
        assert.equal(r.body.correlationId, `k-${i}`, r.raw);
        assert.deepEqual(r.body.payload, { echo: i }, r.raw);
    });
    assert.equal(answered, N);
});

test('request/reply: a requester that hung up closes its inbox; the reply is not delivered to anyone', async () => {
    const queue = 'rpc-gone';
    const sock = net.connect(Number(new URL(B.url).port), '127.0.0.1');
    await new Promise((resolve) => sock.once('connect', resolve));
    const body = JSON.stringify({ payload: 'lonely', timeout: 20000 });
    sock.write(`POST /api/v1/ephemeral/queues/${queue}/request HTTP/1.1\r\nHost: x\r\n`
        + `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    const work = await waitFor(async () => {
        const r = await get(B, `/queues/${queue}/receive?timeout=0`);
        return r.status === 200 ? r : null;
    }, 5000, 20);
    const gone = await clientsGone(B);
    sock.destroy();
    await waitFor(async () => (await clientsGone(B)) > gone, 5000, 20);
    //  Answered on B (the inbox's broker) itself: nobody waits any more.
    const late = await request(B.url, `${E}/reply`, {
        method: 'POST', body: { replyTo: work.body.replyTo, correlationId: work.body.correlationId, payload: 1 },
        expect: 404,
    });
    assert.match(late.body.error, /no requester/);
});

test('memory stays under EPHEMERAL_MAX_BYTES under a flood', async () => {
    const big = 'x'.repeat(4000);
    await post(A, '/queues/flood', { maxMessages: 1000000, overflow: 'reject' });
    let refused = 0;
    for (let i = 0; i < 120; i++) {
        const res = await request(A.url, `${E}/queues/flood/send`, { method: 'POST', body: { payload: big }, expect: [201, 503] });
        if (res.status === 503)
            refused++;
        const st = await get(A, '/stats');
        assert.ok(st.body.bytes <= CAP, `holding ${st.body.bytes} bytes, cap ${CAP}`);
    }
    assert.ok(refused > 0, 'the flood never reached the cap');
    await post(A, '/queues/flood2', { maxMessages: 1000000, overflow: 'drop-oldest' });
    for (let i = 0; i < 120; i++)
        await request(A.url, `${E}/queues/flood2/send`, { method: 'POST', body: { payload: big }, expect: [201, 503] });
    const st = await get(A, '/stats');
    assert.ok(st.body.bytes <= CAP, `holding ${st.body.bytes} bytes, cap ${CAP}`);
});

test('batches: a replier on B takes several requests in one receive and answers them in one reply', async () => {
    const rx = get(B, '/queues/rpc-batch/receive?timeout=10000&max=10');
    await waitFor(async () => (await post(A, '/queues/rpc-batch', {})).body.waitingElsewhere[B.meshId] === 10,
                  5000, 20);
    //  Three requests from A in one go: they reach B's one receive.
    const reqs = [1, 2, 3].map((n) => post(A, '/queues/rpc-batch/request', { payload: { n }, timeout: 5000 }));
    let work = await rx;
    assert.equal(work.status, 200, work.raw);
    const got = [...work.body.messages];
    while (got.length < 3) {               //  The rest, had they come in a later pass
        work = await get(B, '/queues/rpc-batch/receive?timeout=5000&max=10');
        assert.equal(work.status, 200, work.raw);
        got.push(...work.body.messages);
    }
    assert.deepEqual(got.map((m) => m.payload.n).sort(), [1, 2, 3]);
    const answered = await post(B, '/reply', {
        replies: got.map((m) => ({ replyTo: m.replyTo, correlationId: m.correlationId, payload: { n: m.payload.n * 10 } })),
    });
    assert.equal(answered.status, 202, answered.raw);
    assert.deepEqual(answered.body, { delivered: 0, forwarded: 3, missing: 0, invalid: 0 });
    const res = await Promise.all(reqs);
    assert.deepEqual(res.map((r) => r.body.payload.n), [10, 20, 30]);
});

test('names are per tenant: two tenants through queen-proxy share no queue, inbox or topic', async () => {
    const TSECRET = 'eph-tenancy-assertion-secret-0123456789abcdef';
    const PROXY_BIN = process.env.QN_PROXY_BIN
        || path.join(path.dirname(process.env.QN_BIN || path.join(ROOT, 'build', 'queen')), 'queen-proxy');
    const db = await createDatabase('eph_tenants');
    const cell = [];
    let proxy;
    try {
        for (let i = 0; i < 2; i++) {
            const meshPort = await freePort();
            const b = await startBroker({
                db, env: {
                    MESH_PORT: String(meshPort), MESH_SECRET: `${SECRET}-tenants`, MESH_HEARTBEAT_MS: '500',
                    TENANT_ASSERTION_SECRET: TSECRET,
                },
            });
            b.meshId = `127.0.0.1:${meshPort}`;
            cell.push(b);
        }
        await waitFor(async () => (await http(`${cell[0].url}/health`)).body.mesh?.peersUp === 1
                               && (await http(`${cell[1].url}/health`)).body.mesh?.peersUp === 1, 15000, 100);
        const keys = {};
        for (const t of ['ta', 'tb']) {
            const r = spawnSync(PROXY_BIN, ['create-tenant', t], {
                env: { ...process.env, PG_HOST, PG_PORT: String(PG_PORT), PG_USER: 'postgres', PG_PASSWORD: 'postgres', PG_DB: db },
                encoding: 'utf8', timeout: 30000,
            });
            assert.equal(r.status, 0, r.stderr);
            keys[t] = JSON.parse(r.stdout).key;
        }
        proxy = await startBroker({
            bin: PROXY_BIN, db,
            env: { TENANT_ASSERTION_SECRET: TSECRET, QUEEN_UPSTREAMS: `${cell[0].url},${cell[1].url}` },
        });
        const as = (t) => ({ Authorization: `Bearer ${keys[t]}` });
        await waitFor(async () => (await http(`${proxy.url}/proxy/v1/whoami`, { headers: as('ta') })).status === 200, 5000);
        const call = (t, method, p, body, expect) =>
            request(proxy.url, `${E}${p}`, { method, body, headers: as(t), expect, timeoutMs: 60000 });
        //  What waits for queue q of tenant t, cell-wide, as one broker sees it.
        const waiting = async (t, q) => {
            const st = (await call(t, 'POST', `/queues/${q}`, {}, 200)).body;
            assert.equal(st.queue, q);
            return st.waiting + Object.values(st.waitingElsewhere).reduce((x, y) => x + y, 0);
        };

        //  Hand-off: ta waits on "jobs"; tb's message to its own "jobs" is
        //  not handed to ta's consumer, ta's is.
        const rx = call('ta', 'GET', '/queues/jobs/receive?timeout=10000', undefined, [200, 204]);
        await waitFor(async () => (await waiting('ta', 'jobs')) === 1, 5000, 20);
        assert.equal(await waiting('tb', 'jobs'), 0);
        const tbSent = await call('tb', 'POST', '/queues/jobs/send', { payload: 'for tb' }, 201);
        assert.equal(tbSent.body.status, 'queued', tbSent.raw);
        const taSent = await call('ta', 'POST', '/queues/jobs/send', { payload: 'for ta' }, 201);
        assert.notEqual(taSent.body.status, 'queued', taSent.raw);
        const got = await rx;
        assert.equal(got.status, 200, got.raw);
        assert.equal(got.body.payload, 'for ta');
        //  tb's message waits for tb (on whichever broker tb asks).
        const tbGot = await call('tb', 'GET', '/queues/jobs/receive?timeout=5000', undefined, 200);
        assert.equal(tbGot.body.payload, 'for tb');

        //  Request/reply: tb sees none of ta's requests, and a reply from tb
        //  to ta's inbox never reaches ta's requester.
        const req = call('ta', 'POST', '/queues/rpc/request', { payload: 'ta asks', timeout: 8000 }, 200);
        const none = await call('tb', 'GET', '/queues/rpc/receive?timeout=300', undefined, 204);
        assert.equal(none.status, 204);
        const work = await call('ta', 'GET', '/queues/rpc/receive?timeout=5000', undefined, 200);
        assert.equal(work.body.payload, 'ta asks');
        const forged = await call('tb', 'POST', '/reply',
                                  { replyTo: work.body.replyTo, correlationId: work.body.correlationId, payload: 'from tb' },
                                  [202, 404]);
        assert.notEqual(forged.body.status, 'delivered', forged.raw);
        await call('ta', 'POST', '/reply',
                   { replyTo: work.body.replyTo, correlationId: work.body.correlationId, payload: 'from ta' }, [202]);
        const answer = await req;
        assert.equal(answer.body.payload, 'from ta');

        //  Topics: each tenant sees only its own subscribers.
        await call('ta', 'POST', '/topics/prices/subscribe', { subscriber: 'ta-1', ttl: 30000 }, 200);
        await call('tb', 'POST', '/topics/prices/subscribe', { subscriber: 'tb-1', ttl: 30000 }, 200);
        for (const [t, who] of [['ta', 'ta-1'], ['tb', 'tb-1']]) {
            await waitFor(async () => {
                const l = await call(t, 'GET', '/topics/prices/subscribers', undefined, 200);
                assert.equal(l.body.topic, 'prices');
                return l.body.subscribers.length === 1 && l.body.subscribers[0].subscriber === who;
            }, 5000, 50);
        }
        //  The broker's memory figures stay the operator's.
        await call('ta', 'GET', '/stats', undefined, 403);
    } finally {
        await proxy?.stop();
        for (const b of cell)
            await b.kill();
    }
});

test('PostgreSQL stopped: ephemeral queues keep working across brokers, durable ones spool or 503', async () => {
    await configureQueue(A.url, 'durable');
    await pgStop();
    try {
        //  Durable: pushes are buffered on disk, pops answer 503.
        await waitFor(async () => (await http(`${A.url}/health`)).status === 503, 10000, 100);
        const pushed = await pushItems(A.url, [{ queue: 'durable', payload: 1 }]);
        assert.equal(pushed[0].status, 'buffered');
        const popped = await http(`${A.url}/api/v1/pop/queue/durable?wait=false`);
        assert.equal(popped.status, 503, popped.raw);
        //  Ephemeral: request/reply across the two brokers, no database.
        const { rx } = await receiving(B, A, 'rpc-outage');
        const req = post(A, '/queues/rpc-outage/request', { payload: 'still?', timeout: 5000 });
        const work = await rx;
        assert.equal(work.status, 200, work.raw);
        await post(B, '/reply', { replyTo: work.body.replyTo, correlationId: work.body.correlationId, payload: 'yes' });
        const res = await req;
        assert.equal(res.status, 200, res.raw);
        assert.equal(res.body.payload, 'yes');
    } finally {
        await pgStart();
    }
});

test('SIGTERM stops a broker holding ephemeral state cleanly', async () => {
    await post(B, '/queues/left-behind/send', { payload: 'in memory only' });
    await post(B, '/topics/t-end/subscribe', { subscriber: 'x' });
    assert.equal(await B.stop(), 0, B.logs().slice(-2000));
    B = null;
});
