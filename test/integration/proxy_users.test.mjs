//  test/integration/proxy_users.test.mjs - human users of queen-proxy
//  (real PostgreSQL, one broker, one proxy with PROXY_SESSION_TTL_MS=15000).
//  Users are made by `queen-proxy create-user` (password on stdin), by a
//  tenant's admin (/proxy/v1/users) and by the operator
//  (/proxy/v1/admin/tenants/:tenant/users). Covers: login answering a
//  session token and a Secure HttpOnly SameSite cookie, both accepted;
//  wrong password, unknown user and a user of tenant A on tenant B refused
//  alike; same user names in two tenants stay apart (their data too);
//  roles of a session; the proxy forwarding while passwords are hashed;
//  session expiry; logout; a password change or a deleted user ending the
//  sessions at once; bad bodies; no hash or password ever answered.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT, PG_HOST, PG_PORT, http, startBroker, waitFor, sleep } from './lib.mjs';

const SECRET = 'proxy-users-it-secret-0123456789abcdef-0123';
const PROXY_BIN = process.env.QN_PROXY_BIN || path.join(path.dirname(process.env.QN_BIN || path.join(ROOT, 'build', 'queen')), 'queen-proxy');
const TTL_MS = 15000;          //  Logins take seconds each on a loaded machine (Argon2id, one at a time)

let broker, proxy, url, op;
const admin = {};

function cli (db, args, input) {
    const r = spawnSync(PROXY_BIN, args, {
        env: { ...process.env, PG_HOST, PG_PORT: String(PG_PORT), PG_USER: 'postgres', PG_PASSWORD: 'postgres', PG_DB: db },
        encoding: 'utf8', timeout: 30000, input,
    });
    return { status: r.status, out: r.stdout, err: r.stderr };
}

const bearer = (k) => (k ? { Authorization: `Bearer ${k}` } : {});

async function call (k, method, p, body, expect, headers = {}) {
    const res = await http(`${url}${p}`, { method, body, headers: { ...bearer(k), ...headers } });
    if (expect !== undefined)
        assert.equal(res.status, expect, `${method} ${p}: ${res.raw.slice(0, 500)}`);
    return res;
}

async function refused (k, method, p, body, status, re, headers) {
    const res = await call(k, method, p, body, status, headers);
    assert.equal(typeof res.body.error, 'string', res.raw);
    assert.match(res.body.error, re);
    return res;
}

const login = (tenant, user, password) => call(null, 'POST', '/proxy/v1/login', { tenant, user, password });

before(async () => {
    broker = await startBroker({ env: { TENANT_ASSERTION_SECRET: SECRET } });
    op = JSON.parse(cli(broker.db, ['create-operator-key']).out).key;
    proxy = await startBroker({
        bin: PROXY_BIN, db: broker.db,
        env: { TENANT_ASSERTION_SECRET: SECRET, QUEEN_UPSTREAMS: broker.url, PROXY_SESSION_TTL_MS: String(TTL_MS) },
    });
    url = proxy.url;
    for (const t of ['ua', 'ub']) {
        const res = await http(`${url}/proxy/v1/admin/tenants`, { method: 'POST', body: { name: t }, headers: bearer(op) });
        assert.equal(res.status, 201, res.raw);
        admin[t] = res.body.key;
    }
    await waitFor(async () => (await call(admin.ub, 'GET', '/proxy/v1/whoami')).status === 200, 5000);
});

after(async () => {
    for (const p of [proxy, broker])
        await p?.stop();
});

test('users: made by the sub-command, the tenant admin and the operator; bad bodies', async () => {
    let r = cli(broker.db, ['create-user', 'ua', 'alice', 'read-write'], 'alice-pass-A\n');
    assert.equal(r.status, 0, r.err);
    assert.deepEqual(JSON.parse(r.out), { tenant: 'ua', name: 'alice', role: 'read-write' });
    assert.equal(cli(broker.db, ['create-user', 'ua', 'alice', 'read-write'], 'another-pass\n').status, 1, 'a user is created once');
    assert.equal(cli(broker.db, ['create-user', 'ua', 'x', 'read-write'], 'short\n').status, 2);
    assert.equal(cli(broker.db, ['create-user', 'ua', 'x', 'root'], 'long-enough\n').status, 2);
    let res = await call(admin.ua, 'POST', '/proxy/v1/users', { name: 'bob', role: 'consumer', password: 'bob-pass-123' }, 201);
    assert.deepEqual(res.body, { tenant: 'ua', name: 'bob', role: 'consumer' });
    await refused(admin.ua, 'POST', '/proxy/v1/users', { name: 'bob', role: 'consumer', password: 'bob-pass-123' }, 409, /exists already/);
    await refused(admin.ua, 'POST', '/proxy/v1/users', { name: 'c', role: 'consumer', password: 'short' }, 400, /password must be 8/);
    await refused(admin.ua, 'POST', '/proxy/v1/users', { name: 'c', role: 'boss', password: 'long-enough' }, 400, /role must be/);
    await refused(admin.ua, 'POST', '/proxy/v1/users', { name: 'a b', role: 'admin', password: 'long-enough' }, 400, /user name/);
    await refused(admin.ua, 'POST', '/proxy/v1/users', { role: 'admin', password: 'long-enough' }, 400, /name must be/);
    await refused(admin.ua, 'POST', '/proxy/v1/users', '{"name":', 400, /JSON object/);
    //  The same name in the other tenant, another password, made by the operator.
    res = await call(op, 'POST', '/proxy/v1/admin/tenants/ub/users', { name: 'alice', role: 'read-write', password: 'alice-pass-B' }, 201);
    assert.equal(res.body.tenant, 'ub');
    await refused(op, 'POST', '/proxy/v1/admin/tenants/nobody/users', { name: 'z', role: 'admin', password: 'long-enough' }, 404, /Tenant not found/);
    res = await call(op, 'GET', '/proxy/v1/admin/tenants/ua/users', undefined, 200);
    assert.deepEqual(res.body.users.map((u) => [u.name, u.role]), [['alice', 'read-write'], ['bob', 'consumer']]);
    res = await call(admin.ub, 'GET', '/proxy/v1/users', undefined, 200);
    assert.deepEqual(res.body.users.map((u) => u.name), ['alice']);
    assert.ok(!res.raw.includes('argon2') && !res.raw.includes('pass'), res.raw);
    //  Only admins manage users.
    const reader = (await call(admin.ua, 'POST', '/proxy/v1/keys', { role: 'read-only' }, 201)).body.key;
    await refused(reader, 'GET', '/proxy/v1/users', undefined, 403, /Insufficient permissions/);
    await refused(admin.ua, 'GET', '/proxy/v1/admin/tenants/ua/users', undefined, 403, /Operator key required/);
});

test('login: a token and a cookie; wrong passwords, unknown users and other tenants refused alike', async () => {
    let res = await login('ua', 'alice', 'alice-pass-A');
    assert.equal(res.status, 200, res.raw);
    assert.match(res.body.token, /^qs_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    assert.equal(res.body.tenant, 'ua');
    assert.equal(res.body.user, 'alice');
    assert.equal(res.body.role, 'read-write');
    assert.ok(Math.abs(res.body.expiresAt - (Date.now() + TTL_MS)) < 2000, JSON.stringify(res.body));
    const cookie = res.headers['set-cookie'];
    assert.match(cookie, new RegExp(`^queen_session=${res.body.token}; Path=/; Max-Age=15; HttpOnly; Secure; SameSite=Strict$`));
    const token = res.body.token;
    res = await call(token, 'GET', '/proxy/v1/whoami', undefined, 200);
    assert.deepEqual(res.body, { tenant: 'ua', role: 'read-write', user: 'alice', sessionId: token.slice(3, 19) });
    res = await call(null, 'GET', '/proxy/v1/whoami', undefined, 200, { Cookie: `theme=dark; queen_session=${token}; x=1` });
    assert.equal(res.body.user, 'alice');
    for (const [t, u, p] of [['ua', 'alice', 'alice-pass-B'], ['ua', 'alice', 'alice-pass-a'], ['ua', 'nobody', 'alice-pass-A'],
                             ['ub', 'alice', 'alice-pass-A'], ['ub', 'bob', 'bob-pass-123'], ['uc', 'alice', 'alice-pass-A']]) {
        res = await login(t, u, p);
        assert.equal(res.status, 401, `${t}/${u}: ${res.raw}`);
        assert.equal(res.body.error, 'Invalid credentials');
        assert.equal(res.headers['set-cookie'], undefined);
    }
    for (const body of [{ tenant: 'ua', user: 'alice' }, { tenant: 'u a', user: 'alice', password: 'x' },
                        { tenant: 'ua', password: 'x' }, { tenant: 'ua', user: 'alice', password: 5 }, 'nope'])
        await refused(null, 'POST', '/proxy/v1/login', body, 400, /must be/);
    //  Tampered and foreign tokens.
    const bad = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    await refused(bad, 'GET', '/proxy/v1/whoami', undefined, 401, /^Invalid session$/);
    await refused(`qs_0000000000000000_${token.slice(-43)}`, 'GET', '/proxy/v1/whoami', undefined, 401, /^Invalid session$/);
    await refused(`qk_${token.slice(3)}`, 'GET', '/proxy/v1/whoami', undefined, 401, /Invalid API key/);
});

test('a session acts for its own tenant and role only; same names stay apart', async () => {
    const a = (await login('ua', 'alice', 'alice-pass-A')).body.token;
    const b = (await login('ub', 'alice', 'alice-pass-B')).body.token;
    const bob = (await login('ua', 'bob', 'bob-pass-123')).body.token;
    assert.ok(a && b && bob);
    await call(a, 'POST', '/api/v1/push', { items: [{ queue: 'shared', payload: { from: 'ua' } }] }, 201);
    let res = await call(b, 'GET', '/api/v1/pop/queue/shared?wait=false');
    assert.equal(res.status, 204, 'alice of ub sees nothing of ua');
    res = await call(b, 'GET', '/api/v1/resources/queues', undefined, 200);
    assert.ok(!JSON.stringify(res.body).includes('shared'), JSON.stringify(res.body));
    res = await call(bob, 'GET', '/api/v1/pop/queue/shared?wait=false', undefined, 200);
    assert.deepEqual(res.body.messages.map((m) => m.data), [{ from: 'ua' }]);
    assert.equal(res.body.messages[0].producerSub, 'user:alice', 'the producer identity is the user');
    //  Roles: a consumer does not push, a read-write user does not delete or manage.
    await refused(bob, 'POST', '/api/v1/push', { items: [{ queue: 'shared', payload: 1 }] }, 403, /Insufficient permissions/);
    await refused(a, 'DELETE', '/api/v1/resources/queues/shared', undefined, 403, /Insufficient permissions/);
    await refused(a, 'GET', '/proxy/v1/users', undefined, 403, /Insufficient permissions/);
    await refused(a, 'GET', '/proxy/v1/admin/tenants', undefined, 403, /Operator key required/);
    //  The admin of ub cannot touch ua's users.
    await refused(admin.ub, 'DELETE', '/proxy/v1/users/bob', undefined, 404, /User not found/);
    await call(bob, 'GET', '/proxy/v1/whoami', undefined, 200);
});

test('the proxy keeps forwarding while passwords are checked', async () => {
    let done = 0;
    const logins = Array.from({ length: 4 }, () => login('ua', 'alice', 'alice-pass-A').then((r) => { done++; return r; }));
    const who = await call(admin.ua, 'GET', '/proxy/v1/whoami', undefined, 200);
    assert.equal(who.body.tenant, 'ua');
    assert.ok(done < 4, `whoami was answered after every login (${done})`);
    for (const r of await Promise.all(logins))
        assert.equal(r.status, 200, r.raw);
});

test('expiry, logout, password change and deletion end sessions', async () => {
    const first = (await login('ua', 'bob', 'bob-pass-123')).body;
    const s1 = first.token;
    await call(s1, 'GET', '/proxy/v1/whoami', undefined, 200);
    //  Logout: at once, and the cookie is cleared.
    const s2 = (await login('ua', 'alice', 'alice-pass-A')).body.token;
    let res = await call(null, 'POST', '/proxy/v1/logout', undefined, 200, { Cookie: `queen_session=${s2}` });
    assert.equal(res.body.loggedOut, true);
    assert.match(res.headers['set-cookie'], /^queen_session=; Path=\/; Max-Age=0;/);
    await refused(s2, 'GET', '/proxy/v1/whoami', undefined, 401, /^Invalid session$/);
    await refused(s2, 'POST', '/proxy/v1/logout', undefined, 401, /^Invalid session$/);
    await refused(admin.ua, 'POST', '/proxy/v1/logout', undefined, 400, /Not a session/);
    //  A password change ends the user's sessions here at once (and everywhere within the refresh).
    const s3 = (await login('ua', 'alice', 'alice-pass-A')).body.token;
    const other = (await login('ub', 'alice', 'alice-pass-B')).body.token;
    assert.ok(s3 && other);
    res = await call(admin.ua, 'PUT', '/proxy/v1/users/alice', { role: 'read-only', password: 'alice-new-pass' }, 200);
    assert.equal(res.body.role, 'read-only');
    await refused(s3, 'GET', '/proxy/v1/whoami', undefined, 401, /^Invalid session$/);
    await call(other, 'GET', '/proxy/v1/whoami', undefined, 200);
    assert.equal((await login('ua', 'alice', 'alice-pass-A')).status, 401);
    const s4 = (await login('ua', 'alice', 'alice-new-pass')).body.token;
    res = await call(s4, 'GET', '/proxy/v1/whoami', undefined, 200);
    assert.equal(res.body.role, 'read-only');
    await refused(admin.ua, 'PUT', '/proxy/v1/users/nobody', { role: 'admin', password: 'long-enough' }, 404, /User not found/);
    //  Deleted: its sessions end at once; it cannot log in.
    await call(admin.ua, 'DELETE', '/proxy/v1/users/alice', undefined, 200);
    await refused(s4, 'GET', '/proxy/v1/whoami', undefined, 401, /^Invalid session$/);
    assert.equal((await login('ua', 'alice', 'alice-new-pass')).status, 401);
    await refused(admin.ua, 'DELETE', '/proxy/v1/users/alice', undefined, 404, /User not found/);
    //  Expiry: bob's session, made first, ends on time.
    await call(s1, 'GET', '/proxy/v1/whoami', undefined, 200);
    await sleep(Math.max(0, first.expiresAt - Date.now()) + 500);
    await refused(s1, 'GET', '/proxy/v1/whoami', undefined, 401, /^Session expired$/);
    await refused(s1, 'GET', '/api/v1/resources/queues', undefined, 401, /^Session expired$/);
    //  Nothing secret in the proxy's log.
    assert.ok(!proxy.logs().includes('alice-pass') && !proxy.logs().includes(other.slice(20)));
});
