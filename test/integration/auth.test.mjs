//  test/integration/auth.test.mjs - access control (contract §1.8) with real
//  signed tokens: HS256 (createHmac), RS256 and EdDSA (generateKeyPairSync
//  + sign), keys from JWT_SECRET, JWT_PUBLIC_KEY and a JWKS served by a
//  tiny HTTP server in this process (with key rotation). Covers the 401
//  and 403 bodies, role levels per route, skip paths, the producer identity
//  stamped from `sub` (a spoofed `producerSub` is ignored), startup refusal
//  of broken settings, and that no token or secret reaches the logs.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import nodeHttp from 'node:http';
import { http, startBroker, waitFor, warmUp } from './lib.mjs';

const SECRET = 'it-secret-0123456789abcdef-0123456789';
const ISS = 'queen-it';
const AUD = 'queen-api';
const now = () => Math.floor(Date.now() / 1000);

const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const ed1 = crypto.generateKeyPairSync('ed25519');
const ed2 = crypto.generateKeyPairSync('ed25519');
const RSA_PEM = rsa.publicKey.export({ type: 'spki', format: 'pem' });

const b64 = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

//  A compact JWS. key: the HMAC secret (HS256) or a private KeyObject.
function sign (alg, claims, key, header = {}) {
    const input = `${b64({ alg, typ: 'JWT', ...header })}.${b64(claims)}`;
    let sig = Buffer.alloc(0);
    if (alg === 'HS256')
        sig = crypto.createHmac('sha256', key).update(input).digest();
    else
    if (alg === 'RS256')
        sig = crypto.sign('sha256', Buffer.from(input), key);
    else
    if (alg === 'EdDSA')
        sig = crypto.sign(null, Buffer.from(input), key);
    return `${input}.${sig.toString('base64url')}`;
}

function claims (extra = {}) {
    return { iss: ISS, aud: AUD, iat: now() - 5, exp: now() + 3600, ...extra };
}

const hs = (extra, secret = SECRET) => sign('HS256', claims(extra), secret);
const bearer = (token) => ({ Authorization: `Bearer ${token}` });

function jwk (publicKey, kid, alg) {
    return { ...publicKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

function push (url, items, headers = {}) {
    return http(`${url}/api/v1/push`, { method: 'POST', headers, body: { items } });
}

function pop (url, queue, headers = {}) {
    return http(`${url}/api/v1/pop/queue/${queue}?wait=false&batch=10`, { headers });
}

function assertRefused (res, status, error) {
    assert.equal(res.status, status, `${res.status} ${res.raw}`);
    assert.match(res.headers['content-type'], /application\/json/);
    if (error instanceof RegExp)
        assert.match(res.body.error, error);
    else
        assert.deepEqual(res.body, { error });
}

// ------------------------------------------------------------------ auth off
describe('JWT_ENABLED=false', () => {
    let b;
    before(async () => {
        b = await startBroker();
        await warmUp(b.url);
    });
    after(async () => b && b.stop());

    test('every route is open, tokens are ignored, producerSub is never taken from the body', async () => {
        let res = await push(b.url, [{ queue: 'open', payload: 1, producerSub: 'mallory' }]);
        assert.equal(res.status, 201);
        res = await push(b.url, [{ queue: 'open', payload: 2 }], { Authorization: 'Bearer not.a.token' });
        assert.equal(res.status, 201);
        res = await pop(b.url, 'open');
        assert.equal(res.status, 200);
        assert.equal(res.body.messages.length, 2);
        for (const m of res.body.messages)
            assert.equal(m.producerSub, null);
        res = await http(`${b.url}/api/v1/resources/queues`);
        assert.equal(res.status, 200);
        res = await http(`${b.url}/api/v1/resources/queues/open`, { method: 'DELETE' });
        assert.equal(res.status, 200);
    });
});

// ------------------------------------------------------------------ HS256
describe('HS256 with issuer and audience', () => {
    let b;
    before(async () => {
        b = await startBroker({
            env: {
                JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET,
                JWT_ISSUER: ISS, JWT_AUDIENCE: AUD, LOG_LEVEL: 'debug',
            },
        });
        await warmUp(b.url, bearer(hs({ sub: 'warm', role: 'read-write' })));
    });
    after(async () => b && b.stop());

    test('public routes and skip paths need no token', async () => {
        for (const p of ['/health', '/metrics', '/metrics/prometheus']) {
            const res = await http(`${b.url}${p}`);
            assert.equal(res.status, 200, p);
        }
        const res = await http(`${b.url}/api/v1/push`, { method: 'OPTIONS' });
        assert.equal(res.status, 204);
    });

    test('missing token: 401 Authentication required', async () => {
        assertRefused(await push(b.url, [{ queue: 'q', payload: 1 }]), 401, 'Authentication required');
        assertRefused(await http(`${b.url}/api/v1/resources/queues`), 401, 'Authentication required');
        assertRefused(await http(`${b.url}/api/v1/status`, { headers: { Authorization: 'Bearer ' } }),
                      401, 'Authentication required');
        assertRefused(await http(`${b.url}/api/v1/status`, { headers: { Authorization: 'bearer' } }),
                      401, 'Authentication required');
    });

    test('invalid tokens: 401 with the reason', async () => {
        const url = `${b.url}/api/v1/resources/queues`;
        const get = (token) => http(url, { headers: bearer(token) });
        assertRefused(await get(hs({ role: 'admin', exp: now() - 3600 })), 401, 'Token has expired');
        assertRefused(await get(hs({ role: 'admin', nbf: now() + 3600 })), 401, 'Token is not yet valid');
        assertRefused(await get(hs({ role: 'admin' }, 'some other secret')), 401, 'Invalid token signature');
        assertRefused(await get(hs({ role: 'admin', aud: 'someone-else' })), 401, 'Invalid token audience');
        assertRefused(await get(hs({ role: 'admin', iss: 'evil' })), 401, 'Invalid token issuer');
        assertRefused(await get(sign('none', claims({ role: 'admin' }))), 401,
                      /^Token verification failed: .*none/);
        assertRefused(await get(sign('RS256', claims({ role: 'admin' }), rsa.privateKey)), 401,
                      /^Token verification failed/);
        assertRefused(await get('abc'), 401, /^Token verification failed/);
        assertRefused(await get('a.b.c'), 401, /^Token verification failed/);
        //  Payload edited after signing
        const good = hs({ role: 'read-only' });
        const [h, , s] = good.split('.');
        assertRefused(await get(`${h}.${b64(claims({ role: 'admin' }))}.${s}`), 401, 'Invalid token signature');
        //  Huge header: refused, the broker keeps serving
        const huge = `${b64('x'.repeat(12000))}.e30.AAAA`;
        const res = await get(huge);
        assert.ok(res.status === 401 || res.status === 431, `${res.status}`);
        assert.equal((await http(`${b.url}/health`)).status, 200);
    });

    test('the Bearer prefix is optional and case-insensitive', async () => {
        const t = hs({ role: 'read-only' });
        const url = `${b.url}/api/v1/resources/queues`;
        for (const header of [`Bearer ${t}`, `bearer ${t}`, `BEARER ${t}`, t, `Bearer   ${t}  `]) {
            const res = await http(url, { headers: { Authorization: header } });
            assert.equal(res.status, 200, header.slice(0, 10));
        }
    });

    test('read-only: reads allowed, push and pop refused with 403', async () => {
        const h = bearer(hs({ sub: 'reader', role: 'read-only' }));
        for (const p of ['/api/v1/resources/queues', '/api/v1/status', '/api/v1/resources/overview'])
            assert.equal((await http(`${b.url}${p}`, { headers: h })).status, 200, p);
        assertRefused(await push(b.url, [{ queue: 'ro', payload: 1 }], h), 403, 'Insufficient permissions');
        assertRefused(await pop(b.url, 'ro', h), 403, 'Insufficient permissions');
        assertRefused(await http(`${b.url}/api/v1/resources/queues/ro`, { method: 'DELETE', headers: h }),
                      403, 'Insufficient permissions');
    });

    test('read-write: push and pop allowed, admin routes refused', async () => {
        const h = bearer(hs({ sub: 'writer', role: 'read-write' }));
        assert.equal((await push(b.url, [{ queue: 'rw', payload: 1 }], h)).status, 201);
        assert.equal((await pop(b.url, 'rw', h)).status, 200);
        assert.equal((await http(`${b.url}/api/v1/resources/queues`, { headers: h })).status, 200);
        assertRefused(await http(`${b.url}/api/v1/resources/queues/rw`, { method: 'DELETE', headers: h }),
                      403, 'Insufficient permissions');
        assertRefused(await http(`${b.url}/api/v1/system/maintenance`, { headers: h }),
                      403, 'Insufficient permissions');
    });

    test('admin: allowed everywhere; roles may come as an array', async () => {
        for (const extra of [{ role: 'admin' }, { roles: ['read-only', 'admin'] }]) {
            const h = bearer(hs({ sub: 'root', ...extra }));
            assert.equal((await push(b.url, [{ queue: 'adm', payload: 1 }], h)).status, 201);
            assert.equal((await pop(b.url, 'adm', h)).status, 200);
            assert.equal((await http(`${b.url}/api/v1/system/maintenance`, { headers: h })).status, 200);
            const del = await http(`${b.url}/api/v1/resources/queues/adm`, { method: 'DELETE', headers: h });
            assert.equal(del.status, 200, del.raw);
        }
    });

    test('no role, or an unknown one: 403 even on read-only routes', async () => {
        for (const extra of [{}, { role: 'superuser' }, { roles: ['guest'] }, { role: ['admin'] }]) {
            const res = await http(`${b.url}/api/v1/resources/queues`, { headers: bearer(hs(extra)) });
            assertRefused(res, 403, 'Insufficient permissions');
        }
    });

    test('producerSub is stamped from sub; a spoofed one in the body is ignored', async () => {
        const alice = bearer(hs({ sub: 'alice', role: 'read-write' }));
        let res = await push(b.url, [
            { queue: 'stamp', payload: 1, producerSub: 'mallory' },
            { queue: 'stamp', payload: 2 },
        ], alice);
        assert.equal(res.status, 201);
        //  A token without sub: the producer stays null
        res = await push(b.url, [{ queue: 'stamp', payload: 3, producerSub: 'mallory' }],
                         bearer(hs({ role: 'read-write' })));
        assert.equal(res.status, 201);
        res = await pop(b.url, 'stamp', alice);
        assert.equal(res.status, 200);
        assert.deepEqual(res.body.messages.map((m) => [m.data, m.producerSub]),
                         [[1, 'alice'], [2, 'alice'], [3, null]]);
    });

    test('no token, secret or Authorization header in the logs (debug level)', async () => {
        //  Make sure refusals were logged at all, then look for secrets
        await http(`${b.url}/api/v1/status`, { headers: bearer(hs({ role: 'admin' }, 'wrong')) });
        const logs = b.logs();
        assert.match(logs, /auth refused/);
        assert.ok(!logs.includes(SECRET), 'secret in logs');
        assert.ok(!/eyJ[A-Za-z0-9_-]{10,}/.test(logs), 'token in logs');
        assert.ok(!/bearer/i.test(logs), 'Authorization header in logs');
    });
});

// ------------------------------------------------------------------ RS256 from a PEM, skip paths
describe('RS256 from JWT_PUBLIC_KEY, custom skip paths', () => {
    let b;
    before(async () => {
        b = await startBroker({
            env: {
                JWT_ENABLED: 'true', JWT_PUBLIC_KEY: RSA_PEM,
                JWT_SKIP_PATHS: '/health, /api/v1/resources/',
            },
        });
        await warmUp(b.url, bearer(sign('RS256', claims({ role: 'read-write' }), rsa.privateKey)));
    });
    after(async () => b && b.stop());

    test('RS256 tokens verify; the public key used as an HS256 secret does not', async () => {
        const ok = sign('RS256', claims({ sub: 'svc', role: 'admin' }), rsa.privateKey);
        assert.equal((await http(`${b.url}/api/v1/status`, { headers: bearer(ok) })).status, 200);
        //  Algorithm confusion: HMAC keyed with the (public) PEM text
        const forged = sign('HS256', claims({ role: 'admin' }), RSA_PEM);
        assertRefused(await http(`${b.url}/api/v1/status`, { headers: bearer(forged) }), 401,
                      /^Token verification failed/);
        const eddsa = sign('EdDSA', claims({ role: 'admin' }), ed1.privateKey);
        assertRefused(await http(`${b.url}/api/v1/status`, { headers: bearer(eddsa) }), 401,
                      /^Token verification failed/);
        const other = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
        const wrong = sign('RS256', claims({ role: 'admin' }), other.privateKey);
        assertRefused(await http(`${b.url}/api/v1/status`, { headers: bearer(wrong) }), 401,
                      'Invalid token signature');
    });

    test('skip paths: a prefix entry opens what is below it, nothing else', async () => {
        assert.equal((await http(`${b.url}/api/v1/resources/queues`)).status, 200);
        assert.equal((await http(`${b.url}/api/v1/resources/overview`)).status, 200);
        assert.equal((await http(`${b.url}/health`)).status, 200);
        //  Public routes stay public even when not listed
        assert.equal((await http(`${b.url}/metrics`)).status, 200);
        assertRefused(await http(`${b.url}/api/v1/status`), 401, 'Authentication required');
        assertRefused(await push(b.url, [{ queue: 'q', payload: 1 }]), 401, 'Authentication required');
        assertRefused(await http(`${b.url}/api/v1/resources-other`), 404, 'Not found');
    });
});

// ------------------------------------------------------------------ JWKS
describe('JWKS from a URL, refreshed in the background', () => {
    let b;
    let server;
    let served = { keys: [jwk(ed1.publicKey, 'ed-1', 'EdDSA'), jwk(rsa.publicKey, 'rsa-1', 'RS256')] };
    let failing = false;
    let fetches = 0;

    before(async () => {
        server = nodeHttp.createServer((req, res) => {
            fetches++;
            if (failing) {
                res.writeHead(500, { 'Content-Type': 'text/plain' });
                res.end('down');
                return;
            }
            res.writeHead(200, { 'Content-Type': 'application/json' });
            res.end(JSON.stringify(served));
        });
        await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
        b = await startBroker({
            env: {
                JWT_ENABLED: 'true', JWT_JWKS_URL: `http://127.0.0.1:${server.address().port}/jwks.json`,
                JWT_JWKS_REFRESH_MS: '500', JWT_AUDIENCE: AUD,
            },
        });
    });
    after(async () => {
        if (b)
            await b.stop();
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
    });

    const status = async (token) => (await http(`${b.url}/api/v1/status`, { headers: bearer(token) })).status;

    test('EdDSA and RS256 keys from the JWKS verify tokens', async () => {
        const ed = sign('EdDSA', claims({ role: 'read-only' }), ed1.privateKey, { kid: 'ed-1' });
        await waitFor(async () => await status(ed) === 200, 15000, 100);
        const rs = sign('RS256', claims({ role: 'read-only' }), rsa.privateKey, { kid: 'rsa-1' });
        assert.equal(await status(rs), 200);
        //  A JWKS key never verifies an HS256 token
        const confused = sign('HS256', claims({ role: 'read-only' }), JSON.stringify(served.keys[0]),
                              { kid: 'ed-1' });
        assertRefused(await http(`${b.url}/api/v1/status`, { headers: bearer(confused) }), 401,
                      /^Token verification failed/);
        //  Wrong kid, wrong key: no key / bad signature
        const wrong = sign('EdDSA', claims({ role: 'read-only' }), ed2.privateKey, { kid: 'ed-1' });
        assertRefused(await http(`${b.url}/api/v1/status`, { headers: bearer(wrong) }), 401,
                      'Invalid token signature');
    });

    test('key rotation: a new key is accepted after a refresh, a removed one refused', async () => {
        const oldToken = sign('EdDSA', claims({ role: 'read-only' }), ed1.privateKey, { kid: 'ed-1' });
        const newToken = sign('EdDSA', claims({ role: 'read-only' }), ed2.privateKey, { kid: 'ed-2' });
        await waitFor(async () => await status(oldToken) === 200, 15000, 100);
        assert.equal(await status(newToken), 401);
        served = { keys: [jwk(ed2.publicKey, 'ed-2', 'EdDSA'), jwk(rsa.publicKey, 'rsa-1', 'RS256')] };
        await waitFor(async () => await status(newToken) === 200, 15000, 100);
        await waitFor(async () => await status(oldToken) === 401, 15000, 100);
    });

    test('a failing key server keeps the last good keys', async () => {
        const token = sign('EdDSA', claims({ role: 'read-only' }), ed2.privateKey, { kid: 'ed-2' });
        await waitFor(async () => await status(token) === 200, 15000, 100);
        failing = true;
        const before = fetches;
        await waitFor(() => fetches >= before + 2, 15000, 50);
        assert.equal(await status(token), 200);
        failing = false;
        assert.match(b.logs(), /jwks fetch failed/);
    });
});

// ------------------------------------------------------------------ broken settings
describe('broken JWT settings stop the start', () => {
    const cases = [
        [{ JWT_ENABLED: 'true' }, /JWT_ENABLED: JWT_ALGORITHM=auto needs/],
        [{ JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_PUBLIC_KEY: RSA_PEM }, /needs JWT_SECRET/],
        [{ JWT_ENABLED: 'true', JWT_ALGORITHM: 'none', JWT_SECRET: SECRET }, /JWT_ALGORITHM: expected/],
        [{ JWT_ENABLED: 'true', JWT_PUBLIC_KEY: 'not a key' }, /JWT_PUBLIC_KEY: /],
        [{ JWT_ENABLED: 'true', JWT_JWKS_URL: 'file:///etc/passwd' }, /JWT_JWKS_URL: /],
    ];
    for (const [env, why] of cases) {
        test(`refused: ${Object.keys(env).join(' ')} ${env.JWT_ALGORITHM || ''}`, async () => {
            await assert.rejects(startBroker({ env, timeoutMs: 10000 }), (err) => {
                assert.match(err.message, /exited with status 2/);
                assert.match(err.message, why);
                assert.ok(!err.message.includes(SECRET), 'secret printed');
                return true;
            });
        });
    }
});
