//  test/integration/proxy_admin.test.mjs - queen-proxy's administration
//  and the plan limits that need the brokers (real PostgreSQL, one broker,
//  one proxy, one database). An operator key comes from
//  `queen-proxy create-operator-key`; everything else is made through the
//  HTTP admin routes: plans (create, list, read, replace, delete; bad
//  bodies 400, duplicates and plans in use 409, unknown 404), tenants
//  (create with a plan and overrides, answering the first admin key, list,
//  update, disable, delete), keys of a tenant (create per role, list,
//  revoke at once). Who may call them: no key 401, a tenant's admin 403,
//  an operator key on a broker route 403. Limits: queue and partition
//  counts per tenant (429 from the broker's SQL, nothing created, another
//  tenant and existing queues unaffected, also through configure), and
//  long-poll concurrency (429 with Retry-After: 1 while the slots are held).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT, PG_HOST, PG_PORT, http, startBroker, waitFor, sleep } from './lib.mjs';

const SECRET = 'proxy-admin-it-secret-0123456789abcdef-0123';
const PROXY_BIN = process.env.QN_PROXY_BIN || path.join(path.dirname(process.env.QN_BIN || path.join(ROOT, 'build', 'queen')), 'queen-proxy');

let broker, proxy, url, op;

function cli (db, ...args) {
    const r = spawnSync(PROXY_BIN, args, {
        env: { ...process.env, PG_HOST, PG_PORT: String(PG_PORT), PG_USER: 'postgres', PG_PASSWORD: 'postgres', PG_DB: db },
        encoding: 'utf8', timeout: 30000,
    });
    return { status: r.status, out: r.stdout, err: r.stderr };
}

async function call (k, method, p, body, expect) {
    const res = await http(`${url}${p}`, { method, body, headers: k ? { Authorization: `Bearer ${k}` } : {} });
    if (expect !== undefined)
        assert.equal(res.status, expect, `${method} ${p}: ${res.raw.slice(0, 500)}`);
    return res;
}

//  A refusal: the status and a JSON body {"error": ...} matching `re`.
async function refused (k, method, p, body, status, re) {
    const res = await call(k, method, p, body, status);
    assert.match(res.headers['content-type'], /application\/json/);
    assert.equal(typeof res.body.error, 'string', res.raw);
    assert.match(res.body.error, re);
    return res;
}

const push = (k, items) => call(k, 'POST', '/api/v1/push', { items });

before(async () => {
    broker = await startBroker({ env: { TENANT_ASSERTION_SECRET: SECRET } });
    const r = cli(broker.db, 'create-operator-key', 'it operator');
    assert.equal(r.status, 0, r.err);
    const j = JSON.parse(r.out);
    assert.equal(j.operator, true);
    assert.match(j.key, /^qk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    op = j.key;
    assert.equal(cli(broker.db, 'create-operator-key', 'a', 'b').status, 2);
    proxy = await startBroker({
        bin: PROXY_BIN, db: broker.db,
        env: { TENANT_ASSERTION_SECRET: SECRET, QUEEN_UPSTREAMS: broker.url },
    });
    url = proxy.url;
    await waitFor(async () => (await http(`${url}/proxy/v1/whoami`, { headers: { Authorization: `Bearer ${op}` } })).status === 200, 5000);
});

after(async () => {
    for (const p of [proxy, broker])
        await p?.stop();
});

test('plans: create, list, read, replace, delete, and bad bodies', async () => {
    let res = await call(op, 'POST', '/proxy/v1/admin/plans', { name: 'gold', limits: { requestsPerSecond: 100, maxQueues: 10 } }, 201);
    assert.equal(res.body.name, 'gold');
    assert.equal(res.body.limits.requestsPerSecond, 100);
    assert.equal(res.body.limits.maxQueues, 10);
    assert.equal(res.body.limits.maxPartitions, null);
    assert.equal(res.body.tenants, 0);
    await refused(op, 'POST', '/proxy/v1/admin/plans', { name: 'gold' }, 409, /exists already/);
    await refused(op, 'POST', '/proxy/v1/admin/plans', { name: 'x', limits: { maxQueues: 1.5 } }, 400, /maxQueues must be null/);
    await refused(op, 'POST', '/proxy/v1/admin/plans', { name: 'x', limits: { maxQueues: 0 } }, 400, /maxQueues/);
    await refused(op, 'POST', '/proxy/v1/admin/plans', { name: 'x', limits: { maxQueues: '3' } }, 400, /maxQueues/);
    await refused(op, 'POST', '/proxy/v1/admin/plans', { name: 'x', limits: { nope: 1 } }, 400, /unknown limit nope/);
    await refused(op, 'POST', '/proxy/v1/admin/plans', { name: 'x', limits: [] }, 400, /limits must be an object/);
    await refused(op, 'POST', '/proxy/v1/admin/plans', { name: 'bad name' }, 400, /plan name/);
    await refused(op, 'POST', '/proxy/v1/admin/plans', { limits: {} }, 400, /plan name/);
    await refused(op, 'POST', '/proxy/v1/admin/plans', { name: 'x', extra: 1 }, 400, /unknown member extra/);
    await refused(op, 'POST', '/proxy/v1/admin/plans', '{"name": ', 400, /JSON object/);
    await refused(op, 'POST', '/proxy/v1/admin/plans', '[1]', 400, /JSON object/);
    await refused(op, 'POST', '/proxy/v1/admin/plans', '{"name": "a\\u0000b"}', 400, /./);
    res = await call(op, 'GET', '/proxy/v1/admin/plans', undefined, 200);
    assert.deepEqual(res.body.plans.map((p) => p.name), ['gold']);
    res = await call(op, 'PUT', '/proxy/v1/admin/plans/gold', { limits: { maxPartitions: 50 } }, 200);
    assert.equal(res.body.limits.maxPartitions, 50);
    assert.equal(res.body.limits.requestsPerSecond, null, 'a PUT replaces every limit');
    await refused(op, 'PUT', '/proxy/v1/admin/plans/gold', { name: 'silver' }, 400, /differs from the path/);
    res = await call(op, 'GET', '/proxy/v1/admin/plans/gold', undefined, 200);
    assert.equal(res.body.limits.maxPartitions, 50);
    await refused(op, 'GET', '/proxy/v1/admin/plans/none', undefined, 404, /Plan not found/);
    await refused(op, 'PUT', '/proxy/v1/admin/plans/none', { limits: {} }, 404, /Plan not found/);
    await refused(op, 'DELETE', '/proxy/v1/admin/plans/none', undefined, 404, /Plan not found/);
    await call(op, 'POST', '/proxy/v1/admin/plans', { name: 'spare' }, 201);
    await call(op, 'DELETE', '/proxy/v1/admin/plans/spare', undefined, 200);
    res = await call(op, 'GET', '/proxy/v1/admin/plans', undefined, 200);
    assert.deepEqual(res.body.plans.map((p) => p.name), ['gold']);
});

test('who may administer: operator keys only, and they reach nothing else', async () => {
    await refused(null, 'GET', '/proxy/v1/admin/tenants', undefined, 401, /Authentication required/);
    await refused('qk_nope', 'GET', '/proxy/v1/admin/tenants', undefined, 401, /Invalid API key/);
    let res = await call(op, 'POST', '/proxy/v1/admin/tenants', { name: 'adm1' }, 201);
    const tenantAdmin = res.body.key;
    await waitFor(async () => (await call(tenantAdmin, 'GET', '/proxy/v1/whoami')).status === 200, 5000);
    for (const [m, p] of [['GET', '/proxy/v1/admin/tenants'], ['POST', '/proxy/v1/admin/plans'],
                          ['DELETE', '/proxy/v1/admin/tenants/adm1'], ['GET', '/proxy/v1/admin/tenants/adm1/keys']])
        await refused(tenantAdmin, m, p, m === 'POST' ? { name: 'p' } : undefined, 403, /Operator key required/);
    for (const [m, p] of [['GET', '/api/v1/resources/queues'], ['POST', '/api/v1/push'], ['GET', '/proxy/v1/keys'],
                          ['GET', '/proxy/v1/usage']])
        await refused(op, m, p, m === 'POST' ? { items: [] } : undefined, 403, /Operator keys reach only/);
    res = await call(op, 'GET', '/proxy/v1/whoami', undefined, 200);
    assert.equal(res.body.tenant, '');
    assert.equal(res.body.role, 'admin');
    await refused(op, 'PATCH', '/proxy/v1/admin/plans/gold', {}, 405, /Method not allowed/);
    await call(op, 'DELETE', '/proxy/v1/admin/tenants/adm1', undefined, 200);
});

test('tenants and their keys: create, list, update, disable, revoke, delete', async () => {
    await refused(op, 'POST', '/proxy/v1/admin/tenants', { name: 'acme', plan: 'nope' }, 400, /No plan nope/);
    let res = await call(op, 'GET', '/proxy/v1/admin/tenants/acme');
    assert.equal(res.status, 404, 'a refused create leaves no tenant');
    res = await call(op, 'POST', '/proxy/v1/admin/tenants', { name: 'acme', plan: 'gold', limits: { maxBatch: 5 } }, 201);
    assert.equal(res.body.tenant.name, 'acme');
    assert.equal(res.body.tenant.plan, 'gold');
    assert.equal(res.body.tenant.limits.maxBatch, 5);
    assert.equal(res.body.tenant.limits.maxPartitions, null);
    assert.equal(res.body.tenant.effective.maxPartitions, 50, 'the plan fills what the tenant leaves');
    assert.equal(res.body.tenant.effective.maxBatch, 5);
    assert.equal(res.body.role, 'admin');
    const acmeAdmin = res.body.key;
    assert.match(acmeAdmin, /^qk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    assert.equal(acmeAdmin.slice(3, 19), res.body.id);
    await refused(op, 'POST', '/proxy/v1/admin/tenants', { name: 'acme' }, 409, /exists already/);
    await refused(op, 'POST', '/proxy/v1/admin/tenants', { name: 'a/b' }, 400, /tenant name/);
    await refused(op, 'POST', '/proxy/v1/admin/tenants', { name: 7 }, 400, /tenant name must be a string/);
    await refused(op, 'POST', '/proxy/v1/admin/tenants', 'nope', 400, /JSON object/);
    await waitFor(async () => (await call(acmeAdmin, 'GET', '/proxy/v1/whoami')).status === 200, 5000);
    res = await call(acmeAdmin, 'GET', '/proxy/v1/whoami', undefined, 200);
    assert.equal(res.body.tenant, 'acme');
    //  The tenant's plan applies at once: a batch over the override is 413.
    const six = Array.from({ length: 6 }, (_, i) => ({ queue: 'batchy', payload: { i } }));
    await refused(acmeAdmin, 'POST', '/api/v1/push', { items: six }, 413, /Batch exceeds/);
    await call(acmeAdmin, 'POST', '/api/v1/push', { items: six.slice(0, 5) }, 201);

    res = await call(op, 'GET', '/proxy/v1/admin/tenants', undefined, 200);
    const acme = res.body.tenants.find((t) => t.name === 'acme');
    assert.equal(acme.keys, 1);
    assert.equal(acme.disabled, false);
    res = await call(op, 'PATCH', '/proxy/v1/admin/tenants/acme', { limits: { maxBatch: null, maxQueues: 3 } }, 200);
    assert.equal(res.body.limits.maxBatch, null);
    assert.equal(res.body.effective.maxQueues, 3, 'the override beats the plan');
    assert.equal(res.body.plan, 'gold', 'members left out stay');
    await refused(op, 'PATCH', '/proxy/v1/admin/tenants/acme', { plan: 5 }, 400, /plan must be/);
    await refused(op, 'PATCH', '/proxy/v1/admin/tenants/acme', { disabled: 'yes' }, 400, /disabled must be/);
    await refused(op, 'PATCH', '/proxy/v1/admin/tenants/acme', { name: 'other' }, 400, /cannot be renamed/);
    await refused(op, 'PATCH', '/proxy/v1/admin/tenants/nobody', {}, 404, /Tenant not found/);
    await refused(op, 'DELETE', '/proxy/v1/admin/plans/gold', undefined, 409, /in use/);

    //  Keys of a tenant, per role.
    res = await call(op, 'POST', '/proxy/v1/admin/tenants/acme/keys', { role: 'producer', label: 'ingest' }, 201);
    assert.equal(res.body.tenant, 'acme');
    assert.equal(res.body.role, 'producer');
    const producer = res.body.key;
    const producerId = res.body.id;
    await refused(op, 'POST', '/proxy/v1/admin/tenants/acme/keys', { role: 'root' }, 400, /role must be/);
    await refused(op, 'POST', '/proxy/v1/admin/tenants/acme/keys', { role: 'admin', label: 3 }, 400, /label/);
    await refused(op, 'POST', '/proxy/v1/admin/tenants/nobody/keys', { role: 'admin' }, 404, /Tenant not found/);
    await refused(op, 'GET', '/proxy/v1/admin/tenants/nobody/keys', undefined, 404, /Tenant not found/);
    await waitFor(async () => (await call(producer, 'GET', '/proxy/v1/whoami')).status === 200, 5000);
    await call(producer, 'POST', '/api/v1/push', { items: [{ queue: 'batchy', payload: { p: 1 } }] }, 201);
    await refused(producer, 'GET', '/api/v1/resources/queues', undefined, 403, /Insufficient permissions/);
    res = await call(op, 'GET', '/proxy/v1/admin/tenants/acme/keys', undefined, 200);
    assert.equal(res.body.keys.length, 2);
    const listed = res.body.keys.find((k) => k.id === producerId);
    assert.equal(listed.role, 'producer');
    assert.equal(listed.label, 'ingest');
    assert.equal(listed.revoked, false);
    assert.ok(!res.raw.includes('argon2') && !res.raw.includes(producer.slice(20)), 'no hash or secret listed');
    //  Revocation takes effect at once on this proxy.
    await call(op, 'DELETE', `/proxy/v1/admin/tenants/acme/keys/${producerId}`, undefined, 200);
    await refused(producer, 'POST', '/api/v1/push', { items: [{ queue: 'batchy', payload: {} }] }, 401, /Invalid API key/);
    await refused(op, 'DELETE', `/proxy/v1/admin/tenants/acme/keys/${producerId}`, undefined, 404, /Key not found/);
    await refused(op, 'DELETE', `/proxy/v1/admin/tenants/adm1/keys/${acmeAdmin.slice(3, 19)}`, undefined, 404, /Key not found/);

    //  Disabled: every key of the tenant is refused within the refresh; enabled again: back.
    res = await call(op, 'PATCH', '/proxy/v1/admin/tenants/acme', { disabled: true }, 200);
    assert.equal(res.body.disabled, true);
    await waitFor(async () => (await call(acmeAdmin, 'GET', '/proxy/v1/whoami')).status === 401, 5000);
    await call(op, 'PATCH', '/proxy/v1/admin/tenants/acme', { disabled: false }, 200);
    await waitFor(async () => (await call(acmeAdmin, 'GET', '/proxy/v1/whoami')).status === 200, 5000);

    //  Deleted: its keys are gone, and so is the tenant.
    await call(op, 'POST', '/proxy/v1/admin/tenants', { name: 'gone' }, 201).then(async (r) => {
        const k = r.body.key;
        await waitFor(async () => (await call(k, 'GET', '/proxy/v1/whoami')).status === 200, 5000);
        await call(op, 'DELETE', '/proxy/v1/admin/tenants/gone', undefined, 200);
        await waitFor(async () => (await call(k, 'GET', '/proxy/v1/whoami')).status === 401, 5000);
    });
    await refused(op, 'GET', '/proxy/v1/admin/tenants/gone', undefined, 404, /Tenant not found/);
    await refused(op, 'DELETE', '/proxy/v1/admin/tenants/gone', undefined, 404, /Tenant not found/);
    //  The sub-commands work on tenants made over HTTP.
    const r = cli(broker.db, 'create-key', 'acme', 'read-only');
    assert.equal(r.status, 0, r.err);
    assert.equal(JSON.parse(r.out).role, 'read-only');
});

test('queue and partition counts per tenant: 429 from the brokers, nothing created', async () => {
    let res = await call(op, 'POST', '/proxy/v1/admin/tenants', { name: 'q1', limits: { maxQueues: 2, maxPartitions: 4 } }, 201);
    const k1 = res.body.key;
    res = await call(op, 'POST', '/proxy/v1/admin/tenants', { name: 'q2' }, 201);
    const k2 = res.body.key;
    await waitFor(async () => (await call(k1, 'GET', '/proxy/v1/whoami')).status === 200
                           && (await call(k2, 'GET', '/proxy/v1/whoami')).status === 200, 5000);
    assert.equal((await push(k1, [{ queue: 'a', payload: 1 }])).status, 201);
    assert.equal((await push(k1, [{ queue: 'b', payload: 1 }])).status, 201);
    res = await push(k1, [{ queue: 'c', payload: 1 }]);
    assert.equal(res.status, 429, res.raw);
    assert.equal(res.body.error, 'Queue limit reached: the plan allows 2 queues for this tenant');
    //  A push naming an existing queue and a new one is refused whole.
    res = await push(k1, [{ queue: 'a', payload: 2 }, { queue: 'd', payload: 2 }]);
    assert.equal(res.status, 429, res.raw);
    res = await call(k1, 'POST', '/api/v1/configure', { queue: 'e' });
    assert.equal(res.status, 429, res.raw);
    assert.match(res.body.error, /Queue limit reached/);
    res = await call(k1, 'GET', '/api/v1/resources/queues', undefined, 200);
    const names = JSON.stringify(res.body);
    for (const q of ['"c"', '"d"', '"e"'])
        assert.ok(!names.includes(q), `queue ${q} was not created: ${names}`);
    //  Existing queues still take pushes; the other tenant has no limit.
    assert.equal((await push(k1, [{ queue: 'a', payload: 3 }])).status, 201);
    for (const q of ['a', 'b', 'c', 'd'])
        assert.equal((await push(k2, [{ queue: q, payload: 1 }])).status, 201);
    //  Partitions: a and b have Default; two more fit, a fifth does not.
    assert.equal((await push(k1, [{ queue: 'a', partition: 'p1', payload: 1 }, { queue: 'a', partition: 'p2', payload: 1 }])).status, 201);
    res = await push(k1, [{ queue: 'b', partition: 'p3', payload: 1 }]);
    assert.equal(res.status, 429, res.raw);
    assert.equal(res.body.error, 'Partition limit reached: the plan allows 4 partitions for this tenant');
    res = await call(k1, 'GET', '/api/v1/resources/queues/b', undefined, 200);
    assert.ok(!JSON.stringify(res.body).includes('p3'), 'partition p3 was not created');
    assert.equal((await push(k1, [{ queue: 'a', partition: 'p1', payload: 2 }])).status, 201);
    //  Raising the limit over HTTP takes effect for the next push.
    await call(op, 'PATCH', '/proxy/v1/admin/tenants/q1', { limits: { maxPartitions: 5 } }, 200);
    assert.equal((await push(k1, [{ queue: 'b', partition: 'p3', payload: 1 }])).status, 201);
    assert.equal((await push(k1, [{ queue: 'b', partition: 'p4', payload: 1 }])).status, 429);
    //  Concurrent creators never get past the limit together.
    res = await call(op, 'POST', '/proxy/v1/admin/tenants', { name: 'q3', limits: { maxQueues: 3 } }, 201);
    const k3 = res.body.key;
    await waitFor(async () => (await call(k3, 'GET', '/proxy/v1/whoami')).status === 200, 5000);
    const all = await Promise.all(Array.from({ length: 8 }, (_, i) => push(k3, [{ queue: `c${i}`, payload: i }])));
    assert.deepEqual(all.map((r) => r.status).sort(), [201, 201, 201, 429, 429, 429, 429, 429]);
    res = await call(k3, 'GET', '/api/v1/resources/overview', undefined, 200);
    assert.equal(res.body.queues, 3, JSON.stringify(res.body));
});

test('long-poll concurrency per tenant: 429 with Retry-After while the slots are held', async () => {
    let res = await call(op, 'POST', '/proxy/v1/admin/plans', { name: 'polls', limits: { maxLongPolls: 2 } }, 201);
    res = await call(op, 'POST', '/proxy/v1/admin/tenants', { name: 'lp', plan: 'polls' }, 201);
    const k = res.body.key;
    res = await call(op, 'POST', '/proxy/v1/admin/tenants', { name: 'lp2', plan: 'polls' }, 201);
    const other = res.body.key;
    await waitFor(async () => (await call(k, 'GET', '/proxy/v1/whoami')).status === 200
                           && (await call(other, 'GET', '/proxy/v1/whoami')).status === 200, 5000);
    const wait = '/api/v1/pop/queue/lpq?wait=true&timeout=4000';
    const held = [call(k, 'GET', wait), call(k, 'GET', wait)];
    await sleep(500);
    res = await refused(k, 'GET', wait, undefined, 429, /^Long-poll limit exceeded$/);
    assert.equal(res.headers['retry-after'], '1');
    //  Another tenant of the same plan has its own slots.
    const theirs = call(other, 'GET', '/api/v1/pop/queue/lpq?wait=true&timeout=500');
    //  A push wakes one holder; its slot is free again for the next pop.
    await call(k, 'POST', '/api/v1/push', { items: [{ queue: 'lpq', payload: { n: 1 } }] }, 201);
    const first = await Promise.race(held);
    assert.equal(first.status, 200, first.raw);
    res = await call(k, 'GET', '/api/v1/pop/queue/lpq?wait=false');
    assert.equal(res.status, 204, res.raw);
    const statuses = (await Promise.all(held)).map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 204]);
    assert.equal((await theirs).status, 204);
    //  Refusals are metered.
    res = await call(k, 'GET', '/proxy/v1/usage', undefined, 200);
    assert.ok(res.body.refused >= 1, JSON.stringify(res.body));
});
