//  test/integration/proxy_sso.test.mjs - SSO passthrough at queen-proxy:
//  an identity provider's JWT, verified with keys from its JWKS (served by
//  the test over HTTP, Ed25519, fetched by the proxy's jwks actor), names
//  the tenant (claim "tenant") and the role; the proxy forwards with its
//  own assertion. Covers: identity, role and producer identity of a token;
//  two tenants' tokens stay apart; refusals (unknown, disabled or missing
//  tenant, no role, expired, wrong audience, a key not in the JWKS, a
//  tampered token); roles enforced; API keys keep working beside tokens.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import nodeHttp from 'node:http';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT, PG_HOST, PG_PORT, http, startBroker, waitFor } from './lib.mjs';

const SECRET = 'proxy-sso-it-secret-0123456789abcdef-01234';
const PROXY_BIN = process.env.QN_PROXY_BIN || path.join(path.dirname(process.env.QN_BIN || path.join(ROOT, 'build', 'queen')), 'queen-proxy');
const AUD = 'queen-proxy-it';
const idp = crypto.generateKeyPairSync('ed25519');
const stranger = crypto.generateKeyPairSync('ed25519');
const now = () => Math.floor(Date.now() / 1000);
const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');

function token (claims, key = idp.privateKey, kid = 'idp-1') {
    const input = `${b64({ alg: 'EdDSA', typ: 'JWT', kid })}.${b64({ aud: AUD, iat: now() - 5, exp: now() + 600, ...claims })}`;
    return `${input}.${crypto.sign(null, Buffer.from(input), key).toString('base64url')}`;
}

let server, broker, proxy, url, op;
const admin = {};

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

before(async () => {
    const jwks = { keys: [{ ...idp.publicKey.export({ format: 'jwk' }), kid: 'idp-1', alg: 'EdDSA', use: 'sig' }] };
    server = nodeHttp.createServer((req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(jwks));
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    broker = await startBroker({ env: { TENANT_ASSERTION_SECRET: SECRET } });
    op = JSON.parse(cli(broker.db, 'create-operator-key').out).key;
    proxy = await startBroker({
        bin: PROXY_BIN, db: broker.db,
        env: {
            TENANT_ASSERTION_SECRET: SECRET, QUEEN_UPSTREAMS: broker.url, JWT_ENABLED: 'true',
            JWT_JWKS_URL: `http://127.0.0.1:${server.address().port}/jwks.json`, JWT_AUDIENCE: AUD,
        },
    });
    url = proxy.url;
    for (const t of ['sa', 'sb']) {
        const res = await call(op, 'POST', '/proxy/v1/admin/tenants', { name: t }, 201);
        admin[t] = res.body.key;
    }
    await waitFor(async () => (await call(token({ sub: 'w', tenant: 'sb', role: 'read-only' }), 'GET', '/proxy/v1/whoami')).status === 200, 10000);
});

after(async () => {
    for (const p of [proxy, broker])
        await p?.stop();
    server?.close();
});

test('an IdP token names tenant, role and producer identity', async () => {
    const ann = token({ sub: 'ann@example.com', tenant: 'sa', role: 'read-write' });
    let res = await call(ann, 'GET', '/proxy/v1/whoami', undefined, 200);
    assert.deepEqual(res.body, { tenant: 'sa', role: 'read-write', user: 'ann@example.com', via: 'sso' });
    await call(ann, 'POST', '/api/v1/push', { items: [{ queue: 'sso', payload: { n: 1 } }] }, 201);
    res = await call(ann, 'GET', '/api/v1/pop/queue/sso?wait=false', undefined, 200);
    assert.equal(res.body.messages[0].producerSub, 'sso:ann@example.com');
    //  Another tenant's token sees nothing of it.
    const ben = token({ sub: 'ben', tenant: 'sb', roles: ['admin'] });
    res = await call(ben, 'GET', '/api/v1/resources/queues', undefined, 200);
    assert.ok(!JSON.stringify(res.body).includes('"sso"'), JSON.stringify(res.body));
    res = await call(ben, 'GET', '/proxy/v1/whoami', undefined, 200);
    assert.equal(res.body.role, 'admin');
    //  Roles are enforced; operator and cluster routes stay closed.
    const reader = token({ sub: 'r', tenant: 'sa', role: 'read-only' });
    res = await call(reader, 'POST', '/api/v1/push', { items: [{ queue: 'sso', payload: 1 }] }, 403);
    assert.equal(res.body.error, 'Insufficient permissions');
    res = await call(ben, 'GET', '/proxy/v1/admin/tenants', undefined, 403);
    assert.equal(res.body.error, 'Operator key required');
    res = await call(ben, 'GET', '/api/v1/system/maintenance', undefined, 403);
    assert.equal(res.body.error, 'Not available to tenants');
    //  API keys work beside tokens.
    res = await call(admin.sa, 'GET', '/proxy/v1/whoami', undefined, 200);
    assert.equal(res.body.tenant, 'sa');
});

test('tokens refused: tenant, role, time, audience, key, signature', async () => {
    const cases = [
        [token({ sub: 'x', tenant: 'nope', role: 'admin' }), 'Token names an unknown or disabled tenant'],
        [token({ sub: 'x', role: 'admin' }), 'Token names no tenant'],
        [token({ sub: 'x', tenant: 'sa' }), 'Token grants no role'],
        [token({ sub: 'x', tenant: 'sa', role: 'admin', exp: now() - 600 }), 'Token has expired'],
        [token({ sub: 'x', tenant: 'sa', role: 'admin', aud: 'other' }), 'Invalid token audience'],
        [token({ sub: 'x', tenant: 'sa', role: 'admin' }, stranger.privateKey), 'Invalid token signature'],
        [token({ sub: 'x', tenant: 'sa', role: 'admin' }, stranger.privateKey, 'idp-9'), /no key for this token/],
        [token({ sub: 'x', tenant: 'sa', role: 'admin' }).replace(/\.[^.]+\./, `.${b64({ aud: AUD, exp: now() + 600, sub: 'x', tenant: 'sb', role: 'admin' })}.`),
         'Invalid token signature'],
        [token({ sub: 'x', tenant: 'bad name', role: 'admin' }), /invalid claim tenant/],
    ];
    for (const [t, why] of cases) {
        const res = await call(t, 'GET', '/api/v1/resources/queues', undefined, 401);
        if (why instanceof RegExp)
            assert.match(res.body.error, why);
        else
            assert.equal(res.body.error, why);
    }
    //  A disabled tenant's tokens are refused within the refresh, and come back.
    const t = token({ sub: 'x', tenant: 'sb', role: 'admin' });
    await call(op, 'PATCH', '/proxy/v1/admin/tenants/sb', { disabled: true }, 200);
    await waitFor(async () => (await call(t, 'GET', '/proxy/v1/whoami')).status === 401, 5000);
    const res = await call(t, 'GET', '/proxy/v1/whoami', undefined, 401);
    assert.equal(res.body.error, 'Token names an unknown or disabled tenant');
    await call(op, 'PATCH', '/proxy/v1/admin/tenants/sb', { disabled: false }, 200);
    await waitFor(async () => (await call(t, 'GET', '/proxy/v1/whoami')).status === 200, 5000);
});
