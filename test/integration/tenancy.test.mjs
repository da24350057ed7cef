//  test/integration/tenancy.test.mjs - the broker half of multi-tenancy
//  (docs/tenancy.md), straight against brokers with signed assertions made
//  here (node's crypto, the format of wire/tenant_assert.h): two tenants
//  with the same queue, partition, group, kv and timer names never see each
//  other's messages, names or counts (pop, ack, lease, message, list,
//  count, status, DLQ, groups, kv, timers routes); forged, stale and
//  unsigned assertions and a raw tenant header are refused with 401; a
//  named tenant gets 403 on cluster-wide routes; read-only assertions
//  cannot write; a broker without tenancy behaves as before and refuses an
//  assertion it cannot verify; a JWT's tenant claim scopes like an
//  assertion where no proxy is deployed, and a JWT without one (an
//  operator) reaches cluster-wide routes of a broker behind a proxy.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { http, request, startBroker, warmUp, configureQueue, pushItems, pop, ack, ackFor } from './lib.mjs';

const SECRET = 'tenancy-it-secret-0123456789abcdef-xyz';
const JWT_SECRET = 'tenancy-it-jwt-secret-0123456789abcdef';
const now = () => Math.floor(Date.now() / 1000);

//  The proxy's assertion: v1.<b64url(tenant LF role LF ts LF subject)>.<b64url(tag)>
export function assertion (tenant, role = 'admin', { sub = '', ts = now(), secret = SECRET } = {}) {
    const key = crypto.createHmac('sha256', secret).update('queen-tenant-assertion-v1').digest();
    const signed = `v1.${Buffer.from(`${tenant}\n${role}\n${ts}\n${sub}`).toString('base64url')}`;
    return `${signed}.${crypto.createHmac('sha256', key).update(signed).digest('base64url')}`;
}
const as = (tenant, role, opts) => ({ 'X-Queen-Assertion': assertion(tenant, role, opts) });

function jwt (claims) {
    const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ iat: now() - 5, exp: now() + 600, ...claims })}`;
    return `${input}.${crypto.createHmac('sha256', JWT_SECRET).update(input).digest('base64url')}`;
}

let broker, plain, jwtBroker;
const TENANTS = ['alpha', 'beta'];
const COUNTS = { alpha: 5, beta: 3 };       //  messages pushed per tenant (2 partitions)

before(async () => {
    broker = await startBroker({ env: { TENANT_ASSERTION_SECRET: SECRET } });
    await warmUp(broker.url, as('ops', 'admin'));
    plain = await startBroker();
    jwtBroker = await startBroker({ db: broker.db, env: { JWT_ENABLED: 'true', JWT_SECRET, TENANT_ASSERTION_SECRET: SECRET } });
});

after(async () => {
    for (const b of [jwtBroker, plain, broker])
        await b?.stop();
});

test('two tenants with the same names: messages, lists, counts, DLQ, groups, kv and timers stay apart', async () => {
    const url = broker.url;
    //  Same queue, partitions and options in both tenants.
    for (const t of TENANTS)
        await configureQueue(url, 'orders', { retryLimit: 0, retryDelay: 0 }, {}, { headers: as(t) });
    for (const t of TENANTS) {
        const items = [];
        for (let i = 0; i < COUNTS[t]; i++)
            items.push({ queue: 'orders', partition: i % 2 ? 'p2' : 'p1', payload: { t, i },
                         transactionId: `tx-${i}` });     //  same transaction ids in both
        const res = await pushItems(url, items, { queued: true, headers: as(t) });
        assert.equal(res.filter((r) => r.status === 'queued').length, COUNTS[t]);
    }
    //  Lists and counts: each sees its own queue 'orders' with its own count.
    const parts = {};
    for (const t of TENANTS) {
        const h = { headers: as(t, 'read-only') };
        let r = await request(url, '/api/v1/resources/queues', h);
        assert.deepEqual(r.body.queues.map((q) => q.name), ['orders'], `${t}: ${r.raw}`);
        assert.equal(r.body.queues[0].messages.total, COUNTS[t], r.raw);
        assert.equal(r.body.queues[0].partitions, 3, r.raw);     //  Default (configure), p1, p2
        r = await request(url, '/api/v1/resources/queues/orders', h);
        assert.equal(r.body.totals.total, COUNTS[t], r.raw);
        r = await request(url, '/api/v1/resources/overview', h);
        assert.equal(r.body.queues, 1, r.raw);
        assert.equal(r.body.partitions, 3, r.raw);
        assert.equal(r.body.messages.total, COUNTS[t], r.raw);
        r = await request(url, '/api/v1/status/queues', h);
        assert.deepEqual(r.body.queues.map((q) => q.name), ['orders'], r.raw);
        r = await request(url, '/api/v1/messages?queue=orders', h);
        assert.equal(r.body.messages.length, COUNTS[t], r.raw);
        parts[t] = new Set(r.body.messages.map((m) => m.partitionId));
        assert.equal(parts[t].size, 2, r.raw);
    }
    assert.ok(![...parts.alpha].some((p) => parts.beta.has(p)), 'the tenants share no partition');
    //  The ops tenant (warm-up) sees only its own probe queue.
    let r = await request(url, '/api/v1/resources/queues', { headers: as('ops', 'read-only') });
    assert.ok(!r.body.queues.some((q) => q.name === 'orders'), r.raw);

    //  Consume with the same group name in both: only own messages.
    const got = {};
    for (const t of TENANTS) {
        got[t] = [];
        for (const p of ['p1', 'p2']) {
            const res = await pop(url, 'orders', { partition: p, batch: 10, consumerGroup: 'billing', headers: as(t) });
            got[t].push(...res.messages);
        }
        assert.equal(got[t].length, COUNTS[t]);
        for (const m of got[t])
            assert.equal(m.data.t, t, JSON.stringify(m));
    }
    //  Beta cannot ack, extend, read or delete alpha's messages by id.
    const am = got.alpha[0];
    const cross = await ack(url, ackFor(am, { status: 'completed', consumerGroup: 'billing' }), { headers: as('beta') });
    assert.equal(cross.success, false, JSON.stringify(cross));
    r = await request(url, `/api/v1/lease/${am.leaseId}/extend`, { method: 'POST', body: { seconds: 30 }, headers: as('beta') });
    assert.equal(r.body[0].success, false, r.raw);
    assert.equal(r.body[0].error, 'Lease not found', r.raw);
    r = await request(url, `/api/v1/lease/${am.leaseId}/extend`, { method: 'POST', body: { seconds: 30 }, headers: as('alpha') });
    assert.equal(r.body[0].success, true, r.raw);
    r = await request(url, `/api/v1/messages/${am.partitionId}/${am.transactionId}`, { headers: as('beta'), expect: 404 });
    r = await request(url, `/api/v1/messages/${am.partitionId}/${am.transactionId}`, { headers: as('alpha') });
    r = await request(url, `/api/v1/messages/${am.partitionId}/${am.transactionId}`,
                      { method: 'DELETE', headers: as('beta'), expect: 404 });

    //  Alpha fails one message into its DLQ (retryLimit 0); ack the rest.
    const dead = await ack(url, ackFor(am, { status: 'failed', error: 'boom', consumerGroup: 'billing' }), { headers: as('alpha') });
    assert.equal(dead.success, true, JSON.stringify(dead));
    assert.equal(dead.dlq, true, JSON.stringify(dead));
    for (const t of TENANTS)
        for (const m of got[t].slice(t === 'alpha' ? 1 : 0)) {
            const a = await ack(url, ackFor(m, { status: 'completed', consumerGroup: 'billing' }), { headers: as(t) });
            assert.equal(a.success, true, `${t}: ${JSON.stringify(a)}`);
        }
    r = await request(url, '/api/v1/dlq?queue=orders', { headers: as('alpha', 'read-only') });
    assert.equal(r.body.total, 1, r.raw);
    assert.equal(r.body.messages.length, 1, r.raw);
    r = await request(url, '/api/v1/dlq?queue=orders', { headers: as('beta', 'read-only') });
    assert.equal(r.body.total, 0, r.raw);
    r = await request(url, '/api/v1/dlq', { headers: as('beta', 'read-only') });
    assert.equal(r.body.total, 0, r.raw);
    r = await request(url, '/api/v1/dlq?queue=orders', { method: 'DELETE', headers: as('beta') });
    r = await request(url, '/api/v1/dlq?queue=orders', { headers: as('alpha', 'read-only') });
    assert.equal(r.body.total, 1, `beta's DLQ delete left alpha's DLQ alone: ${r.raw}`);

    //  Groups: same name, own counts.
    for (const t of TENANTS) {
        r = await request(url, '/api/v1/consumer-groups', { headers: as(t, 'read-only') });
        const groups = r.body;
        assert.ok(Array.isArray(groups), r.raw);
        assert.deepEqual(groups.map((g) => g.name).filter((n) => n === 'billing'), ['billing'], r.raw);
        r = await request(url, '/api/v1/resources/overview', { headers: as(t, 'read-only') });
        assert.equal(r.body.messages.deadLetter, t === 'alpha' ? 1 : 0, r.raw);
    }
    //  A queue delete by beta leaves alpha's queue.
    await request(url, '/api/v1/resources/queues/orders', { method: 'DELETE', headers: as('beta') });
    r = await request(url, '/api/v1/resources/queues', { headers: as('beta', 'read-only') });
    assert.deepEqual(r.body.queues.map((q) => q.name), [], r.raw);
    r = await request(url, '/api/v1/resources/queues', { headers: as('alpha', 'read-only') });
    assert.deepEqual(r.body.queues.map((q) => q.name), ['orders'], r.raw);

    //  kv: same bucket and key.
    for (const t of TENANTS)
        await request(url, '/api/v1/kv/cfg/k', { method: 'PUT', body: { value: { t } }, headers: as(t) });
    for (const t of TENANTS) {
        r = await request(url, '/api/v1/kv/cfg/k', { headers: as(t, 'read-only') });
        assert.equal(JSON.stringify(r.body).includes(`"t":"${t}"`), true, r.raw);
        r = await request(url, '/api/v1/kv/cfg', { headers: as(t, 'read-only') });
        assert.equal((r.raw.match(/"t":"/g) || []).length <= 1 && !r.raw.includes(t === 'alpha' ? 'beta' : 'alpha'), true, r.raw);
    }
    await request(url, '/api/v1/kv/cfg/k', { method: 'DELETE', headers: as('beta') });
    r = await request(url, '/api/v1/kv/cfg/k', { headers: as('alpha', 'read-only') });
    assert.ok(r.raw.includes('"t":"alpha"'), r.raw);

    //  Timers: the same timerId in both tenants, each its own.
    const due = new Date(Date.now() + 3600_000).toISOString();
    for (const t of TENANTS) {
        r = await request(url, '/api/v1/timers', { method: 'POST', expect: [200, 201],
            body: { timerId: 'daily', queue: 'orders', fireAt: due, payload: { t } }, headers: as(t) });
        assert.equal(r.body.created, true, `${t}: ${r.raw}`);
    }
    for (const t of TENANTS) {
        r = await request(url, '/api/v1/timers/daily', { headers: as(t, 'read-only') });
        assert.ok(r.raw.includes(`"t":"${t}"`), r.raw);
        r = await request(url, '/api/v1/timers', { headers: as(t, 'read-only') });
        assert.ok(!r.raw.includes(`"t":"${t === 'alpha' ? 'beta' : 'alpha'}"`), r.raw);
    }
    await request(url, '/api/v1/timers/daily', { method: 'DELETE', headers: as('beta') });
    r = await request(url, '/api/v1/timers/daily', { headers: as('alpha', 'read-only') });
    assert.ok(r.raw.includes('"t":"alpha"'), r.raw);
});

test('forged, stale, unsigned and raw tenant identities are refused with 401', async () => {
    const url = `${broker.url}/api/v1/resources/queues`;
    const good = assertion('alpha', 'admin');
    const cases = [
        [{}, 'Tenant assertion required'],
        [{ 'X-Queen-Assertion': assertion('alpha', 'admin', { secret: `${SECRET}-other` }) }, 'Invalid tenant assertion signature'],
        [{ 'X-Queen-Assertion': good.slice(0, -2) + (good.endsWith('AA') ? 'AB' : 'AA') }, null],
        [{ 'X-Queen-Assertion': assertion('alpha', 'admin', { ts: now() - 3600 }) }, 'Tenant assertion expired'],
        [{ 'X-Queen-Assertion': assertion('alpha', 'admin', { ts: now() + 3600 }) }, 'Tenant assertion expired'],
        [{ 'X-Queen-Assertion': assertion('al pha', 'admin') }, 'Invalid tenant assertion (content)'],
        [{ 'X-Queen-Assertion': assertion('alpha', 'root') }, 'Invalid tenant assertion (content)'],
        [{ 'X-Queen-Assertion': 'garbage' }, 'Invalid tenant assertion (malformed)'],
        [{ 'X-Queen-Tenant': 'alpha' }, 'Unverifiable tenant'],
        [{ 'X-Queen-Tenant': 'alpha', 'X-Queen-Assertion': good }, 'Unverifiable tenant'],
        [{ Authorization: `Bearer ${jwt({ tenant: 'alpha', role: 'admin' })}` }, 'Tenant assertion required'],
    ];
    //  A payload swapped under another tenant's tag.
    const [v, , tag] = good.split('.');
    const other = assertion('beta', 'admin').split('.')[1];
    cases.push([{ 'X-Queen-Assertion': `${v}.${other}.${tag}` }, 'Invalid tenant assertion signature']);
    assert.equal(cases.length, 12);
    for (const [headers, reason] of cases) {
        const res = await http(url, { headers });
        assert.equal(res.status, 401, `${JSON.stringify(headers)}: ${res.raw}`);
        assert.equal(typeof res.body.error, 'string', res.raw);
        if (reason)
            assert.equal(res.body.error, reason, res.raw);
    }
    //  Public routes stay open; a valid assertion still works afterwards.
    assert.equal((await http(`${broker.url}/health`)).status, 200);
    assert.equal((await http(url, { headers: { 'X-Queen-Assertion': good } })).status, 200);
});

test('roles reach the broker levels; a named tenant is refused cluster-wide routes', async () => {
    const url = broker.url;
    let res = await http(`${url}/api/v1/push`, { method: 'POST', headers: as('gamma', 'read-only'),
                                                  body: { items: [{ queue: 'q', payload: 1 }] } });
    assert.equal(res.status, 403, res.raw);
    for (const role of ['producer', 'consumer', 'read-write']) {
        res = await http(`${url}/api/v1/push`, { method: 'POST', headers: as('gamma', role),
                                                 body: { items: [{ queue: 'q', payload: 1 }] } });
        assert.equal(res.status, 201, `${role}: ${res.raw}`);
        res = await http(`${url}/api/v1/resources/queues/q`, { method: 'DELETE', headers: as('gamma', role) });
        assert.equal(res.status, 403, `${role}: ${res.raw}`);
    }
    for (const path of ['/api/v1/system/maintenance', '/api/v1/status/buffers', '/api/v1/analytics/postgres-stats']) {
        res = await http(`${url}${path}`, { headers: as('gamma', 'admin') });
        assert.equal(res.status, 403, `${path}: ${res.raw}`);
        assert.equal(res.body.error, 'Not available to tenants');
    }
    res = await http(`${url}/api/v1/system/maintenance`, { method: 'POST', body: { enabled: true }, headers: as('gamma', 'admin') });
    assert.equal(res.status, 403, res.raw);
    res = await http(`${url}/api/v1/system/maintenance`, { headers: as('gamma', 'admin') });
    assert.equal(res.status, 403, res.raw);
});

test('without tenancy configured: today\'s behaviour; assertions and tenant headers are unverifiable', async () => {
    const url = plain.url;
    await pushItems(url, [{ queue: 'plainq', payload: 1 }]);
    let res = await http(`${url}/api/v1/resources/queues`);
    assert.equal(res.status, 200);
    assert.ok(res.body.queues.some((q) => q.name === 'plainq'), res.raw);
    res = await http(`${url}/api/v1/resources/queues`, { headers: as('alpha') });
    assert.equal(res.status, 401, res.raw);
    assert.equal(res.body.error, 'Unverifiable tenant');
    res = await http(`${url}/api/v1/resources/queues`, { headers: { 'X-Queen-Tenant': 'alpha' } });
    assert.equal(res.status, 401, res.raw);
    assert.equal(res.body.error, 'Unverifiable tenant');
    res = await http(`${url}/api/v1/system/maintenance`);
    assert.equal(res.status, 200, res.raw);
});

test('the JWT tenant claim scopes the request (same database as the proxied broker); operators with a JWT', async () => {
    const url = jwtBroker.url;
    const bearer = (claims) => ({ Authorization: `Bearer ${jwt(claims)}` });
    let res = await http(`${url}/api/v1/resources/queues`, { headers: bearer({ tenant: 'alpha', role: 'read-only' }) });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.queues.map((q) => q.name), ['orders'], res.raw);
    res = await http(`${url}/api/v1/resources/queues`, { headers: bearer({ tenant: 'beta', role: 'read-only' }) });
    assert.deepEqual(res.body.queues.map((q) => q.name), [], res.raw);
    res = await http(`${url}/api/v1/dlq?queue=orders`, { headers: bearer({ tenant: 'alpha', role: 'read-only' }) });
    assert.equal(res.body.total, 1, res.raw);
    //  No tenant claim: the default tenant, which owns none of these.
    res = await http(`${url}/api/v1/resources/queues`, { headers: bearer({ role: 'read-only' }) });
    assert.ok(!res.body.queues.some((q) => q.name === 'orders'), res.raw);
    for (const tenant of ['a b', '', 7, ['alpha']]) {
        res = await http(`${url}/api/v1/resources/queues`, { headers: bearer({ tenant, role: 'admin' }) });
        assert.equal(res.status, 401, `${JSON.stringify(tenant)}: ${res.raw}`);
        assert.equal(res.body.error, 'Token verification failed: invalid claim tenant');
    }
    //  With the assertion secret too: assertions work, and a JWT without
    //  tenant claim (an operator) reaches the cluster-wide routes.
    res = await http(`${url}/api/v1/resources/queues`, { headers: as('alpha', 'read-only') });
    assert.deepEqual(res.body.queues.map((q) => q.name), ['orders'], res.raw);
    res = await http(`${url}/api/v1/resources/queues`);
    assert.equal(res.status, 401, res.raw);
    assert.equal(res.body.error, 'Authentication required');
    res = await http(`${url}/api/v1/system/maintenance`, { headers: bearer({ role: 'admin' }) });
    assert.equal(res.status, 200, res.raw);
    res = await http(`${url}/api/v1/system/maintenance`, { headers: bearer({ tenant: 'alpha', role: 'admin' }) });
    assert.equal(res.status, 403, res.raw);
});

test('the brokers exit cleanly', async () => {
    for (const b of [jwtBroker, plain, broker])
        assert.equal(await b.stop(), 0, b.logs().slice(-3000));
});
