//  test/integration/proxy.test.mjs - queen-proxy in front of two brokers
//  (real PostgreSQL, one database shared by the brokers and the proxy's
//  own schema; all ports from freePort()). Tenants and their first admin
//  keys come from the `queen-proxy create-tenant` sub-command, other keys
//  from the proxy's own key route. Covers: every role allowed and refused
//  where it should be; missing, malformed and unknown keys; a forged tenant
//  header or assertion to the proxy and a forged assertion straight to a
//  broker; key revocation through the proxy (at once) and through the
//  sub-command (within the refresh); the isolation run (12 tenants, the
//  same queue, partitions and group, producing and consuming concurrently,
//  per-tenant ledgers: 0 cross-tenant, 0 lost, 0 duplicated; lists and
//  counts per tenant); pipelined clients of different tenants on raw
//  sockets each get only their own answers, in order; a broker whose
//  database is away (a stand-in answering /health 503) is used only when
//  no broker is healthy; a broker killed behind the proxy: requests and
//  parked long-polls go to the other.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import net from 'node:net';
import { createServer } from 'node:http';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT, PG_HOST, PG_PORT, http, startBroker, waitFor, sleep } from './lib.mjs';

const SECRET = 'proxy-it-secret-0123456789abcdef-0123456789';
const PROXY_BIN = process.env.QN_PROXY_BIN || path.join(path.dirname(process.env.QN_BIN || path.join(ROOT, 'build', 'queen')), 'queen-proxy');
const TENANTS = Array.from({ length: 12 }, (_, i) => `t${String(i + 1).padStart(2, '0')}`);

let a, b, proxy, url;
const admin = {};          //  tenant -> admin key (from create-tenant)

function cli (db, ...args) {
    const r = spawnSync(PROXY_BIN, args, {
        env: { ...process.env, PG_HOST, PG_PORT: String(PG_PORT), PG_USER: 'postgres', PG_PASSWORD: 'postgres', PG_DB: db },
        encoding: 'utf8', timeout: 30000,
    });
    return { status: r.status, out: r.stdout, err: r.stderr };
}

const key = (k) => ({ Authorization: `Bearer ${k}` });

async function call (k, method, p, body, expect) {
    const res = await http(`${url}${p}`, { method, body, headers: k ? key(k) : {} });
    if (expect !== undefined)
        assert.equal(res.status, expect, `${method} ${p}: ${res.raw.slice(0, 500)}`);
    return res;
}

async function newKey (tenant, role) {
    const res = await call(admin[tenant], 'POST', '/proxy/v1/keys', { role, label: `${role} key` }, 201);
    assert.equal(res.body.role, role);
    assert.equal(res.body.tenant, tenant);
    assert.match(res.body.key, /^qk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    return res.body;
}

before(async () => {
    a = await startBroker({ env: { TENANT_ASSERTION_SECRET: SECRET } });
    b = await startBroker({ db: a.db, env: { TENANT_ASSERTION_SECRET: SECRET } });
    for (const t of TENANTS) {
        const r = cli(a.db, 'create-tenant', t);
        assert.equal(r.status, 0, r.err);
        const j = JSON.parse(r.out);
        assert.equal(j.tenant, t);
        assert.equal(j.role, 'admin');
        admin[t] = j.key;
    }
    const again = cli(a.db, 'create-tenant', 't01');
    assert.equal(again.status, 1, 'a tenant is created once');
    assert.equal(cli(a.db, 'create-tenant', 'bad name').status, 2);
    proxy = await startBroker({
        bin: PROXY_BIN, db: a.db,
        env: { TENANT_ASSERTION_SECRET: SECRET, QUEEN_UPSTREAMS: `${a.url},${b.url}` },
    });
    url = proxy.url;
    //  The key table is loaded within a second of the start.
    await waitFor(async () => (await http(`${url}/proxy/v1/whoami`, { headers: key(admin.t01) })).status === 200, 5000);
});

after(async () => {
    for (const p of [proxy, b, a])
        await p?.stop();
});

test('whoami, missing and bad keys, forged identities', async () => {
    let res = await call(admin.t01, 'GET', '/proxy/v1/whoami', undefined, 200);
    assert.equal(res.body.tenant, 't01');
    assert.equal(res.body.role, 'admin');
    res = await http(`${url}/proxy/v1/whoami`, { headers: { 'X-API-Key': admin.t02 } });
    assert.equal(res.body.tenant, 't02');
    res = await call(null, 'GET', '/api/v1/resources/queues', undefined, 401);
    assert.equal(res.body.error, 'Authentication required');
    const k = admin.t01;
    for (const bad of ['qk_nope', `${k.slice(0, -1)}${k.endsWith('A') ? 'B' : 'A'}`,
                       `qk_0000000000000000_${k.slice(-43)}`, `${k}x`]) {
        res = await call(bad, 'GET', '/api/v1/resources/queues', undefined, 401);
        assert.equal(res.body.error, 'Invalid API key');
    }
    for (const forged of [{ 'X-Queen-Tenant': 't02' }, { 'X-Queen-Assertion': 'v1.AAAA.AAAA' }]) {
        res = await http(`${url}/api/v1/resources/queues`, { headers: { ...key(k), ...forged } });
        assert.equal(res.status, 401, res.raw);
        assert.equal(res.body.error, 'Unverifiable tenant');
    }
    //  Straight to a broker: an assertion signed with another secret.
    const other = crypto.createHmac('sha256', 'wrong-secret').update('queen-tenant-assertion-v1').digest();
    const signed = `v1.${Buffer.from(`t01\nadmin\n${Math.floor(Date.now() / 1000)}\n`).toString('base64url')}`;
    const forgedAssertion = `${signed}.${crypto.createHmac('sha256', other).update(signed).digest('base64url')}`;
    res = await http(`${a.url}/api/v1/resources/queues`, { headers: { 'X-Queen-Assertion': forgedAssertion } });
    assert.equal(res.status, 401);
    res = await http(`${a.url}/api/v1/resources/queues`, { headers: key(k) });
    assert.equal(res.status, 401, 'a proxy key means nothing to a broker');
    //  Unknown routes and cluster-wide routes.
    res = await call(k, 'GET', '/api/v1/nope', undefined, 404);
    res = await call(k, 'PATCH', '/api/v1/push', undefined, 405);
    for (const p of ['/api/v1/system/maintenance', '/api/v1/status/buffers', '/api/v1/analytics/postgres-stats', '/metrics']) {
        res = await call(k, 'GET', p, undefined, 403);
        assert.equal(res.body.error, 'Not available to tenants');
    }
    res = await http(`${url}/health`);
    assert.equal(res.status, 200);
    assert.equal(res.body.healthyUpstreams, 2);
});

test('each role is allowed and refused where it should be', async () => {
    const t = 't02';
    const k = {};
    for (const role of ['producer', 'consumer', 'read-only', 'read-write'])
        k[role] = (await newKey(t, role)).key;
    k.admin = admin[t];
    const push = (who, expect) => call(k[who], 'POST', '/api/v1/push', { items: [{ queue: 'roles', payload: { who } }] }, expect);
    const popq = (who, expect) => call(k[who], 'GET', '/api/v1/pop/queue/roles?wait=false&batch=10', undefined, expect);
    await push('producer', 201);
    await push('read-write', 201);
    await push('admin', 201);
    await push('consumer', 403);
    await push('read-only', 403);
    await popq('producer', 403);
    await popq('read-only', 403);
    const got = await popq('consumer', 200);
    assert.equal(got.body.messages.length, 3);
    const acks = got.body.messages.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' }));
    await call(k.producer, 'POST', '/api/v1/ack/batch', { acknowledgments: acks }, 403);
    const acked = await call(k.consumer, 'POST', '/api/v1/ack/batch', { acknowledgments: acks }, 200);
    assert.ok(acked.body.every((r) => r.success === true), acked.raw);
    for (const who of ['read-only', 'read-write', 'admin'])
        await call(k[who], 'GET', '/api/v1/resources/queues', undefined, 200);
    for (const who of ['producer', 'consumer'])
        await call(k[who], 'GET', '/api/v1/resources/queues', undefined, 403);
    await call(k['read-only'], 'POST', '/api/v1/configure', { queue: 'roles2' }, 403);
    await call(k['read-write'], 'POST', '/api/v1/configure', { queue: 'roles2' }, 200);
    for (const who of ['producer', 'consumer', 'read-only', 'read-write'])
        await call(k[who], 'DELETE', '/api/v1/resources/queues/roles2', undefined, 403);
    await call(k.admin, 'DELETE', '/api/v1/resources/queues/roles2', undefined, 200);
    for (const who of ['producer', 'consumer', 'read-only', 'read-write'])
        await call(k[who], 'POST', '/proxy/v1/keys', { role: 'admin' }, 403);
    await call(k.admin, 'POST', '/proxy/v1/keys', { role: 'root' }, 400);
    await call(k.admin, 'POST', '/proxy/v1/keys', 'not json', 400);
    const listed = await call(k.admin, 'GET', '/proxy/v1/keys', undefined, 200);
    assert.equal(listed.body.keys.length, 5, listed.raw);
    assert.ok(!listed.raw.includes('$argon2id$') && !listed.raw.includes(k.producer.slice(-43)), 'no hash or secret is listed');
});

test('bad input on the proxy\'s own routes and on forwarded requests: clear 4xx, the proxy carries on', async () => {
    const k = admin.t09;
    for (const body of [{ role: 5 }, { label: 'x' }, [], { role: 'admin', label: 7 }, { role: 'admin', label: 'x'.repeat(201) }]) {
        const res = await call(k, 'POST', '/proxy/v1/keys', body, 400);
        assert.equal(typeof res.body.error, 'string', res.raw);
    }
    let res = await http(`${url}/api/v1/push`, { method: 'POST', headers: { ...key(k), 'Content-Type': 'application/json' }, body: '{"items": [' });
    assert.equal(res.status, 400, res.raw);
    assert.match(res.body.error, /Invalid JSON/);
    res = await call(k, 'POST', '/api/v1/push', { items: [{ payload: 1 }] });
    assert.equal(res.status, 400, res.raw);
    res = await http(`${url}/api/v1/resources/queues`, { headers: { ...key(k), 'X-Big': 'x'.repeat(20000) } });
    assert.equal(res.status, 431, res.raw);
    res = await http(`${url}/api/v1/resources/queues/%ZZ`, { headers: key(k) });
    assert.equal(res.status, 400, res.raw);
    await call(k, 'GET', '/proxy/v1/whoami', undefined, 200);
});

test('revocation: through the proxy at once, through the sub-command within the refresh', async () => {
    const t = 't03';
    const one = await newKey(t, 'read-only');
    await call(one.key, 'GET', '/api/v1/resources/queues', undefined, 200);
    await call(admin[t], 'DELETE', `/proxy/v1/keys/${one.id}`, undefined, 200);
    const res = await call(one.key, 'GET', '/api/v1/resources/queues', undefined, 401);
    assert.equal(res.body.error, 'Invalid API key');
    await call(admin[t], 'DELETE', `/proxy/v1/keys/${one.id}`, undefined, 404);
    //  Another tenant's admin cannot revoke t03's keys.
    const two = await newKey(t, 'read-only');
    await call(admin.t04, 'DELETE', `/proxy/v1/keys/${two.id}`, undefined, 404);
    await call(two.key, 'GET', '/api/v1/resources/queues', undefined, 200);
    const r = cli(a.db, 'revoke-key', t, two.id);
    assert.equal(r.status, 0, r.err);
    await waitFor(async () => (await call(two.key, 'GET', '/api/v1/resources/queues')).status === 401, 3000, 100);
});

test('isolation run: 12 tenants, same queue, partitions and group, concurrently', async () => {
    const N = 24;
    const PARTS = ['p0', 'p1', 'p2'];
    const ledger = {};
    const produce = async (t) => {
        for (let i = 0; i < N; i += 6) {
            const items = [];
            for (let j = i; j < i + 6; j++)
                items.push({ queue: 'orders', partition: PARTS[j % 3], payload: { t, n: j }, transactionId: `m-${j}` });
            const res = await call(admin[t], 'POST', '/api/v1/push', { items }, 201);
            assert.equal(res.body.length, 6);
        }
    };
    const consume = async (t) => {
        ledger[t] = [];
        const deadline = Date.now() + 60000;
        while (ledger[t].length < N && Date.now() < deadline) {
            const res = await call(admin[t], 'GET', '/api/v1/pop/queue/orders?wait=true&timeout=500&batch=5&consumerGroup=billing', undefined);
            assert.ok([200, 204].includes(res.status), res.raw);
            if (res.status === 204)
                continue;
            const msgs = res.body.messages;
            for (const m of msgs)
                ledger[t].push(m.data);
            const acks = msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' }));
            const ack = await call(admin[t], 'POST', '/api/v1/ack/batch', { acknowledgments: acks, consumerGroup: 'billing' }, 200);
            assert.ok(ack.body.every((r) => r.success), ack.raw);
        }
    };
    await Promise.all(TENANTS.flatMap((t) => [produce(t), consume(t)]));
    let cross = 0, lost = 0, dup = 0;
    for (const t of TENANTS) {
        const seen = new Set();
        for (const d of ledger[t]) {
            if (d.t !== t)
                cross++;
            else if (seen.has(d.n))
                dup++;
            seen.add(d.n);
        }
        for (let n = 0; n < N; n++)
            if (!seen.has(n))
                lost++;
    }
    assert.deepEqual({ cross, lost, dup }, { cross: 0, lost: 0, dup: 0 });
    //  Lists and counts: each tenant sees one 'orders' with its own N.
    for (const t of TENANTS) {
        const res = await call(admin[t], 'GET', '/api/v1/resources/queues', undefined, 200);
        const orders = res.body.queues.filter((q) => q.name === 'orders');
        assert.equal(orders.length, 1, res.raw);
        assert.equal(orders[0].messages.total, N, res.raw);
        const dlq = await call(admin[t], 'GET', '/api/v1/dlq', undefined, 200);
        assert.equal(dlq.body.total, 0, dlq.raw);
        const groups = await call(admin[t], 'GET', '/api/v1/consumer-groups', undefined, 200);
        assert.equal(groups.body.filter((g) => g.name === 'billing').length, 1, groups.raw);
    }
});

//  Raw HTTP/1.1 pipelining: writes `count` requests at once, reads until
//  `count` responses are complete; resolves to their bodies, in order.
function pipeline (port, requests) {
    return new Promise((resolve, reject) => {
        const sock = net.connect({ port, host: '127.0.0.1' });
        let buf = Buffer.alloc(0);
        const bodies = [];
        sock.setTimeout(20000, () => { sock.destroy(); reject(new Error('pipeline timeout')); });
        sock.on('connect', () => sock.write(requests.join('')));
        sock.on('data', (chunk) => {
            buf = Buffer.concat([buf, chunk]);
            for (;;) {
                const end = buf.indexOf('\r\n\r\n');
                if (end < 0)
                    break;
                const head = buf.subarray(0, end).toString();
                const m = /content-length:\s*(\d+)/i.exec(head);
                const len = m ? Number(m[1]) : 0;
                if (buf.length < end + 4 + len)
                    break;
                bodies.push({ status: Number(head.split(' ')[1]), body: buf.subarray(end + 4, end + 4 + len).toString() });
                buf = buf.subarray(end + 4 + len);
            }
            if (bodies.length === requests.length) {
                sock.end();
                resolve(bodies);
            }
        });
        sock.on('error', reject);
    });
}

test('pipelined clients of different tenants get only their own responses, in order', async () => {
    const who = TENANTS.slice(0, 4);
    for (const t of who)
        await call(admin[t], 'PUT', '/api/v1/kv/who/me', { value: { t } }, 200);
    const COUNT = 25;
    const runs = who.map((t) => {
        const reqs = [];
        for (let i = 0; i < COUNT; i++) {
            const target = i % 2 ? '/api/v1/kv/who/me' : `/api/v1/resources/queues/orders?i=${i}`;
            reqs.push(`GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin[t]}\r\n\r\n`);
        }
        return pipeline(proxy.port, reqs).then((bodies) => ({ t, bodies }));
    });
    const results = await Promise.all(runs);
    for (const { t, bodies } of results) {
        assert.equal(bodies.length, COUNT);
        bodies.forEach((r, i) => {
            assert.equal(r.status, 200, r.body);
            if (i % 2)
                assert.ok(r.body.includes(`"t":"${t}"`), `${t} #${i}: ${r.body}`);
            else
                assert.ok(r.body.includes('"name":"orders"'), `${t} #${i}: ${r.body}`);
            for (const o of who)
                if (o !== t)
                    assert.ok(!r.body.includes(`"t":"${o}"`), `${t} got ${o}'s answer: ${r.body}`);
        });
    }
});

//  A tenant of its own for a test (its key is usable within the refresh).
async function freshTenant (name) {
    const r = cli(a.db, 'create-tenant', name);
    assert.equal(r.status, 0, r.err);
    const k = JSON.parse(r.out).key;
    await waitFor(async () => (await http(`${url}/proxy/v1/whoami`, { headers: key(k) })).status === 200, 5000);
    return k;
}

async function setLimits (t, ...limits) {
    const r = cli(a.db, 'set-limits', t, ...limits);
    assert.equal(r.status, 0, r.err);
    await sleep(1500);                  //  limits arrive with the key table, every second
}

test('plan limits: 429 with Retry-After, 413 for size and batch, every refusal metered', async () => {
    const t = 'limited';
    const k = await freshTenant(t);
    const pushN = (n) => call(k, 'POST', '/api/v1/push', { items: Array.from({ length: n }, (_, i) => ({ queue: 'lim', payload: i })) });
    //  Requests: 1 per second; six at once: one passes, five get 429 with
    //  the whole seconds until the next token.
    await setLimits(t, '1', '-', '-', '-');
    const all = await Promise.all(Array.from({ length: 6 }, () => call(k, 'GET', '/api/v1/resources/queues')));
    assert.equal(all.filter((r) => r.status === 200).length, 1, all.map((r) => r.status).join());
    const limited = all.filter((r) => r.status === 429);
    assert.equal(limited.length, 5);
    for (const res of limited) {
        assert.equal(res.headers.get('retry-after'), '1');
        assert.equal(res.body.error, 'Request rate limit exceeded');
    }
    //  Size and batch: 413; messages: 10 per second, then 429.
    await setLimits(t, '-', '10', '2000', '10');
    let res = await call(k, 'POST', '/api/v1/push', { items: [{ queue: 'lim', payload: 'x'.repeat(3000) }] }, 413);
    assert.equal(res.body.error, "Payload exceeds the plan's limit");
    res = await pushN(11);
    assert.equal(res.status, 413, res.raw);
    assert.equal(res.body.error, "Batch exceeds the plan's limit");
    assert.equal((await pushN(10)).status, 201);
    res = await pushN(10);
    assert.equal(res.status, 429, res.raw);
    assert.equal(res.body.error, 'Message rate limit exceeded');
    assert.equal(res.headers.get('retry-after'), '1');
    //  Another tenant is not limited by this plan.
    for (let i = 0; i < 8; i++)
        await call(admin.t07, 'GET', '/api/v1/resources/queues', undefined, 200);
    res = await call(k, 'GET', '/proxy/v1/usage', undefined, 200);
    assert.equal(res.body.tenant, t);
    assert.equal(res.body.messagesIn, 10);
    assert.equal(res.body.refused, 8);
    assert.ok(res.body.requests >= 12, res.raw);
});

test('metering survives a proxy restart (flushed at shutdown)', async () => {
    const k = await freshTenant('metered');
    for (let i = 0; i < 3; i++)
        await call(k, 'POST', '/api/v1/push', { items: [{ queue: 'meter', payload: i }, { queue: 'meter', payload: i }] }, 201);
    const popped = await call(k, 'GET', '/api/v1/pop/queue/meter?wait=false&batch=4', undefined, 200);
    assert.equal(popped.body.messages.length, 4);
    const before = (await call(k, 'GET', '/proxy/v1/usage', undefined, 200)).body;
    assert.equal(before.messagesIn, 6);
    assert.equal(before.messagesOut, 4);
    assert.ok(before.bytesIn > 0 && before.bytesOut > 0, JSON.stringify(before));
    //  A long-poll parked through the proxy does not hold its shutdown: it
    //  is answered empty, and the proxy exits 0 at once.
    const parked = call(k, 'GET', '/api/v1/pop/queue/drainq?wait=true&timeout=30000');
    await sleep(500);
    const t0 = Date.now();
    assert.equal(await proxy.stop(), 0, proxy.logs().slice(-2000));
    assert.ok(Date.now() - t0 < 5000, `stopped in ${Date.now() - t0} ms`);
    assert.equal((await parked).status, 204);
    proxy = await startBroker({
        bin: PROXY_BIN, db: a.db,
        env: { TENANT_ASSERTION_SECRET: SECRET, QUEEN_UPSTREAMS: `${a.url},${b.url}` },
    });
    url = proxy.url;
    await waitFor(async () => (await http(`${url}/proxy/v1/whoami`, { headers: key(k) })).status === 200, 5000);
    const afterRestart = (await call(k, 'GET', '/proxy/v1/usage', undefined, 200)).body;
    assert.equal(afterRestart.messagesIn, 6);
    assert.equal(afterRestart.messagesOut, 4);
    assert.equal(afterRestart.bytesIn, before.bytesIn);
    assert.ok(afterRestart.requests >= before.requests + 1, JSON.stringify({ before, afterRestart }));
});

//  A stand-in for a broker whose database is away: /health answers 503 as
//  a broker's does then, a push 201 "buffered" as its spool does. Counts
//  what reaches it.
async function degradedBroker () {
    const seen = { health: 0, pushes: 0 };
    const server = createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            const json = (status, body) => {
                res.writeHead(status, { 'Content-Type': 'application/json' });
                res.end(JSON.stringify(body));
            };
            if (req.url === '/health') {
                seen.health++;
                return json(503, { status: 'unhealthy', database: 'disconnected' });
            }
            if (req.method === 'POST' && req.url === '/api/v1/push') {
                seen.pushes++;
                return json(201, [{ status: 'buffered' }]);
            }
            json(404, { error: 'Not found' });
        });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    let open = true;
    const close = () => {
        if (open)
            server.close();
        server.closeAllConnections();
        open = false;
    };
    return { seen, url: `http://127.0.0.1:${server.address().port}`, close };
}

test('a broker whose database is away is degraded: used only when no broker is healthy', async () => {
    const k = admin.t06;
    const fake = await degradedBroker();
    const push = (at) => http(`${at}/api/v1/push`, { method: 'POST', body: { items: [{ queue: 'dg', payload: 1 }] }, headers: key(k) });
    const only = await startBroker({
        bin: PROXY_BIN, db: a.db, expectHealthy: false,
        env: { TENANT_ASSERTION_SECRET: SECRET, QUEEN_UPSTREAMS: fake.url },
    });
    const mixed = await startBroker({
        bin: PROXY_BIN, db: a.db, expectHealthy: false,
        env: { TENANT_ASSERTION_SECRET: SECRET, QUEEN_UPSTREAMS: `${fake.url},${b.url}` },
    });
    try {
        //  Alone, it is reachable but not healthy, and pushes still reach it
        //  (a broker spools them to disk) instead of a 503 from the proxy.
        await waitFor(async () => (await http(`${only.url}/health`)).body?.reachableUpstreams === 1
            && fake.seen.health > 0, 5000);
        let res = await http(`${only.url}/health`);
        assert.equal(res.status, 503);
        assert.deepEqual([res.body.status, res.body.healthyUpstreams, res.body.reachableUpstreams], ['degraded', 0, 1]);
        await waitFor(async () => (await http(`${only.url}/proxy/v1/whoami`, { headers: key(k) })).status === 200, 5000);
        res = await push(only.url);
        assert.equal(res.status, 201, res.raw);
        assert.equal(res.body[0].status, 'buffered');
        assert.equal(fake.seen.pushes, 1);
        //  Beside a healthy broker it gets nothing.
        await waitFor(async () => {
            const h = (await http(`${mixed.url}/health`)).body;
            return h?.healthyUpstreams === 1 && h?.reachableUpstreams === 2;
        }, 5000);
        await waitFor(async () => (await http(`${mixed.url}/proxy/v1/whoami`, { headers: key(k) })).status === 200, 5000);
        for (let i = 0; i < 6; i++) {
            res = await push(mixed.url);
            assert.equal(res.status, 201, res.raw);
            assert.equal(res.body[0].status, 'queued');
        }
        assert.equal(fake.seen.pushes, 1, 'no push went to the degraded broker');
        //  Gone altogether: down, and the proxy answers 503 itself.
        fake.close();
        await waitFor(async () => (await http(`${only.url}/health`)).body?.reachableUpstreams === 0, 5000);
        res = await push(only.url);
        assert.equal(res.status, 503, res.raw);
        assert.equal(res.body.error, 'No upstream available');
    } finally {
        fake.close();
        assert.equal(await only.stop(), 0, only.logs().slice(-3000));
        assert.equal(await mixed.stop(), 0, mixed.logs().slice(-3000));
    }
});

test('a broker killed behind the proxy: requests and parked long-polls go to the other', async () => {
    const k = admin.t05;
    //  Two long-polls back to back: round-robin parks one at each broker.
    const polls = ['lp1', 'lp2'].map((q) => call(k, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=20000&batch=1`));
    await sleep(500);
    await a.kill();
    await sleep(200);
    for (const q of ['lp1', 'lp2'])
        await call(k, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { q } }] }, 201);
    const got = await Promise.all(polls);
    for (const [i, res] of got.entries()) {
        assert.equal(res.status, 200, res.raw);
        assert.equal(res.body.messages[0].data.q, `lp${i + 1}`);
    }
    //  Plain requests keep working; the proxy reports one healthy upstream.
    for (let i = 0; i < 10; i++)
        await call(k, 'POST', '/api/v1/push', { items: [{ queue: 'after', payload: i }] }, 201);
    await waitFor(async () => (await http(`${url}/health`)).body.healthyUpstreams === 1, 5000);
});

test('the proxy and the surviving broker exit cleanly', async () => {
    assert.equal(await proxy.stop(), 0, proxy.logs().slice(-3000));
    assert.equal(await b.stop(), 0, b.logs().slice(-3000));
    assert.ok(!proxy.logs().includes(admin.t01), 'no key in the proxy log');
});
