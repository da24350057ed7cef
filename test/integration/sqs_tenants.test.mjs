//  test/integration/sqs_tenants.test.mjs - SQS access keys per tenant
//  (docs/sqs.md "Access keys", migrations/0017_sqs_keys.sql): keys made by
//  the admin route /api/v1/system/sqs-keys, used by awscli 2.9 through two
//  profiles of a credentials file, each acting for its own tenant: each sees
//  only its queues (ListQueues, send/receive, the other's queue URL
//  refused), a new key works at once, a disabled one is refused, and the
//  route's own errors are JSON 4xx. A named tenant cannot reach the route.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSqsBroker, aws } from './sqs_lib.mjs';
import { request, http, waitFor, BIN } from './lib.mjs';

const CTL = path.join(path.dirname(BIN), 'queenctl');

const REFRESH_MS = 400;
let ctx;
let dir;
let keys = {};

//  `aws --profile P sqs ARGS...` with the credentials file of this test
//  (no key in the environment: the profile decides).
function awsp (profile, args) {
    return new Promise((resolve) => {
        execFile('/usr/bin/aws', ['--profile', profile, '--endpoint-url', ctx.endpoint, '--output', 'json',
                                  'sqs', ...args], {
            timeout: 60000,
            env: {
                PATH: process.env.PATH, HOME: dir, AWS_PAGER: '', AWS_MAX_ATTEMPTS: '1',
                AWS_CONFIG_FILE: path.join(dir, 'config'),
                AWS_SHARED_CREDENTIALS_FILE: path.join(dir, 'credentials'),
            },
        }, (err, stdout, stderr) => {
            let out = stdout;
            try { out = stdout.trim() ? JSON.parse(stdout) : null; } catch { /* text */ }
            resolve({ code: err ? (err.code ?? 1) : 0, out, stderr });
        });
    });
}

function writeProfiles () {
    const creds = Object.entries(keys).map(([p, k]) =>
        `[${p}]\naws_access_key_id = ${k.accessKeyId}\naws_secret_access_key = ${k.secretAccessKey}\n`).join('\n');
    fs.writeFileSync(path.join(dir, 'credentials'), creds);
    fs.writeFileSync(path.join(dir, 'config'), Object.keys(keys).map((p) =>
        `[profile ${p}]\nregion = us-east-1\n`).join('\n'));
}

function ok (r, what) {
    assert.equal(r.code, 0, `${what}: rc ${r.code} ${r.stderr}`);
    return r.out;
}

function fails (r, code, what) {
    assert.notEqual(r.code, 0, `${what} should fail`);
    assert.match(r.stderr, new RegExp(`\\(${code.replace(/\./g, '\\.')}\\)`), `${what}: ${r.stderr}`);
}

const names = (out) => (out?.QueueUrls ?? []).map((u) => u.split('/').pop()).sort();

before(async () => {
    dir = fs.mkdtempSync(path.join(process.env.QN_TMP || os.tmpdir(), 'qn-sqs-tenants-'));
    ctx = await startSqsBroker({ SQS_KEYS_REFRESH_MS: String(REFRESH_MS) });
});
after(async () => {
    await ctx?.broker.stop();
    if (dir)
        fs.rmSync(dir, { recursive: true, force: true });
});

test('admin route: keys created (generated or given), listed without secrets; JSON 4xx errors', async () => {
    const url = ctx.broker.url;
    const acme = (await request(url, '/api/v1/system/sqs-keys', { method: 'POST', body: { tenant: 'acme' }, expect: 201 })).body;
    assert.match(acme.accessKeyId, /^QNAK[A-Z2-7]{16}$/);
    assert.match(acme.secretAccessKey, /^[A-Za-z0-9_-]{40}$/);
    assert.equal(acme.tenant, 'acme');
    assert.equal(acme.enabled, true);
    assert.match(acme.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const globex = (await request(url, '/api/v1/system/sqs-keys', {
        method: 'POST', expect: 201,
        body: { tenant: 'globex', accessKeyId: 'GLOBEXKEY1', secretAccessKey: 'globex/Secret+1' },
    })).body;
    assert.deepEqual([globex.accessKeyId, globex.secretAccessKey, globex.tenant],
                     ['GLOBEXKEY1', 'globex/Secret+1', 'globex']);
    keys = { acme, globex };
    writeProfiles();

    const list = (await request(url, '/api/v1/system/sqs-keys')).body;
    assert.deepEqual(list.keys.map((k) => [k.accessKeyId, k.tenant, k.enabled, k.disabledAt]),
                     [[acme.accessKeyId, 'acme', true, null], ['GLOBEXKEY1', 'globex', true, null]]);
    assert.ok(list.keys.every((k) => !('secretAccessKey' in k)), 'no secret in a listing');
    assert.ok(!JSON.stringify(list).includes(acme.secretAccessKey));
    const one = (await request(url, '/api/v1/system/sqs-keys?tenant=globex')).body;
    assert.deepEqual(one.keys.map((k) => k.accessKeyId), ['GLOBEXKEY1']);

    const bad = async (body, status, re) => {
        const r = await http(`${url}/api/v1/system/sqs-keys`, { method: 'POST', body,
                                                                headers: { 'content-type': 'application/json' } });
        assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.raw}`);
        assert.match(JSON.parse(r.raw).error, re);
    };
    await bad(JSON.stringify({}), 400, /tenant \(string\) is required/);
    await bad(JSON.stringify({ tenant: 7 }), 400, /tenant \(string\) is required/);
    await bad(JSON.stringify({ tenant: 'a b' }), 400, /tenant must be/);
    await bad(JSON.stringify({ tenant: 'x'.repeat(65) }), 400, /tenant must be/);
    await bad(JSON.stringify({ tenant: 'a', accessKeyId: 'has/slash' }), 400, /accessKeyId must be/);
    await bad(JSON.stringify({ tenant: 'a', secretAccessKey: 'with:colon' }), 400, /secretAccessKey must be/);
    await bad(JSON.stringify([1]), 400, /JSON object/);
    await bad('{', 400, /Invalid JSON/);
    await bad(JSON.stringify({ tenant: 'other', accessKeyId: 'GLOBEXKEY1' }), 409, /already exists/);
    const missing = await http(`${url}/api/v1/system/sqs-keys/NOSUCHKEY/disable`, { method: 'POST' });
    assert.equal(missing.status, 404);
    assert.equal(JSON.parse(missing.raw).error, 'access key not found');
    const badq = await http(`${url}/api/v1/system/sqs-keys?tenant=a%20b`);
    assert.equal(badq.status, 400);
});

test('two tenants over awscli profiles: each sees only its own queues and messages', async () => {
    assert.ok(keys.acme && keys.globex, 'keys from the first test');
    //  The first request of each key is a cache miss: it works at once.
    const ao = ok(await awsp('acme', ['create-queue', '--queue-name', 'orders']), 'acme create orders').QueueUrl;
    const go = ok(await awsp('globex', ['create-queue', '--queue-name', 'orders']), 'globex create orders').QueueUrl;
    assert.equal(ao, go, 'same name, same URL form: the key decides the tenant');
    ok(await awsp('acme', ['create-queue', '--queue-name', 'acme-only']), 'acme create');
    const gOnly = ok(await awsp('globex', ['create-queue', '--queue-name', 'globex-only']), 'globex create').QueueUrl;

    assert.deepEqual(names(ok(await awsp('acme', ['list-queues']), 'acme list')), ['acme-only', 'orders']);
    assert.deepEqual(names(ok(await awsp('globex', ['list-queues']), 'globex list')), ['globex-only', 'orders']);
    //  SQS_CREDENTIALS keys act for the default tenant: none of these.
    assert.deepEqual(names(ok(await aws(ctx.endpoint, ['list-queues']), 'default list')), []);

    //  The other tenant's queue: by URL and by name, refused as missing.
    fails(await awsp('acme', ['send-message', '--queue-url', gOnly, '--message-body', 'x']),
          'AWS.SimpleQueueService.NonExistentQueue', 'acme sends to globex-only');
    fails(await awsp('acme', ['receive-message', '--queue-url', gOnly]),
          'AWS.SimpleQueueService.NonExistentQueue', 'acme receives from globex-only');
    fails(await awsp('acme', ['get-queue-url', '--queue-name', 'globex-only']),
          'AWS.SimpleQueueService.NonExistentQueue', 'acme gets globex-only');

    //  Same queue name, different queues: each receives its own message only.
    ok(await awsp('acme', ['send-message', '--queue-url', ao, '--message-body', 'from-acme']), 'acme send');
    ok(await awsp('globex', ['send-message', '--queue-url', go, '--message-body', 'from-globex']), 'globex send');
    const ar = ok(await awsp('acme', ['receive-message', '--queue-url', ao, '--max-number-of-messages', '10',
                                      '--wait-time-seconds', '1']), 'acme receive');
    const gr = ok(await awsp('globex', ['receive-message', '--queue-url', go, '--max-number-of-messages', '10',
                                        '--wait-time-seconds', '1']), 'globex receive');
    assert.deepEqual(ar.Messages.map((m) => m.Body), ['from-acme']);
    assert.deepEqual(gr.Messages.map((m) => m.Body), ['from-globex']);
    ok(await awsp('acme', ['delete-message', '--queue-url', ao, '--receipt-handle', ar.Messages[0].ReceiptHandle]),
       'acme delete');
    //  A globex receipt handle is not acme's to delete.
    fails(await awsp('acme', ['delete-message', '--queue-url', ao, '--receipt-handle', gr.Messages[0].ReceiptHandle]),
          'ReceiptHandleIsInvalid', 'acme deletes with a globex handle');
    //  Natively the rows are the tenants': the default tenant has no queue "orders".
    const res = (await request(ctx.broker.url, '/api/v1/resources/queues')).body;
    assert.ok(!JSON.stringify(res).includes('"orders"'), `default tenant sees: ${JSON.stringify(res)}`);
});

test('a wrong secret, an unknown key, a disabled key: the SQS auth errors', async () => {
    keys.wrong = { accessKeyId: keys.acme.accessKeyId, secretAccessKey: 'not-the-secret' };
    keys.nobody = { accessKeyId: 'QNAKNOSUCHKEY0000000', secretAccessKey: 'whatever' };
    writeProfiles();
    fails(await awsp('wrong', ['list-queues']), 'SignatureDoesNotMatch', 'wrong secret');
    fails(await awsp('nobody', ['list-queues']), 'InvalidClientTokenId', 'unknown key');

    const d = (await request(ctx.broker.url, `/api/v1/system/sqs-keys/${keys.globex.accessKeyId}/disable`,
                             { method: 'POST' })).body;
    assert.equal(d.enabled, false);
    assert.match(d.disabledAt, /Z$/);
    //  Refused within SQS_KEYS_REFRESH_MS (the cache reloads the table).
    const t0 = Date.now();
    let last;
    await waitFor(async () => {
        last = await awsp('globex', ['list-queues']);
        return last.code !== 0;
    }, 20000, 100);
    fails(last, 'InvalidClientTokenId', 'disabled key');
    assert.ok(Date.now() - t0 < 20000);
    const list = (await request(ctx.broker.url, '/api/v1/system/sqs-keys?tenant=globex')).body;
    assert.equal(list.keys[0].enabled, false);
    //  The other tenant's key still works.
    assert.deepEqual(names(ok(await awsp('acme', ['list-queues']), 'acme list')), ['acme-only', 'orders']);
});

function ctl (args) {
    return new Promise((resolve) => {
        execFile(CTL, ['--server', ctx.broker.url, ...args], {
            timeout: 60000, env: { PATH: process.env.PATH, HOME: dir, QUEEN_SERVER: '', QUEEN_TOKEN: '' },
        }, (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
    });
}

test('queenctl sqs-keys: create (secret once), list, disable; exit codes', async () => {
    const c = await ctl(['sqs-keys', 'create', '--tenant', 'initech', '--id', 'INITECHKEY']);
    assert.equal(c.code, 0, c.stderr);
    const secret = /secretAccessKey: (\S+)/.exec(c.stdout)?.[1];
    assert.match(secret ?? '', /^[A-Za-z0-9_-]{40}$/, c.stdout);
    assert.match(c.stdout, /tenant: initech/);
    keys.initech = { accessKeyId: 'INITECHKEY', secretAccessKey: secret };
    writeProfiles();
    ok(await awsp('initech', ['create-queue', '--queue-name', 'tps']), 'initech create');
    assert.deepEqual(names(ok(await awsp('initech', ['list-queues']), 'initech list')), ['tps']);

    const l = await ctl(['sqs-keys', 'list', '--tenant', 'initech']);
    assert.equal(l.code, 0, l.stderr);
    assert.match(l.stdout, /^ACCESS KEY ID\s+TENANT\s+ENABLED/m);
    assert.match(l.stdout, /^INITECHKEY\s+initech\s+true/m);
    assert.ok(!l.stdout.includes(secret), 'no secret in a listing');
    const lj = await ctl(['--output', 'json', 'sqs-keys']);
    assert.equal(lj.code, 0, lj.stderr);
    assert.ok(JSON.parse(lj.stdout).keys.some((k) => k.accessKeyId === 'INITECHKEY'));

    assert.equal((await ctl(['sqs-keys', 'create', '--tenant', 'x', '--id', 'INITECHKEY'])).code, 5, 'taken id');
    assert.equal((await ctl(['sqs-keys', 'disable', 'NOSUCHKEY'])).code, 4, 'unknown id');
    assert.equal((await ctl(['sqs-keys', 'create'])).code, 2, 'no tenant');
    const d = await ctl(['sqs-keys', 'disable', 'INITECHKEY']);
    assert.equal(d.code, 0, d.stderr);
    assert.match(d.stdout, /enabled: false/);
    let last;
    await waitFor(async () => {
        last = await awsp('initech', ['list-queues']);
        return last.code !== 0;
    }, 20000, 100);
    fails(last, 'InvalidClientTokenId', 'disabled by queenctl');
});

test('a named tenant cannot reach the key routes (cluster-wide)', async () => {
    const secret = 'jwt-secret-for-sqs-keys';
    const b = await (await import('./lib.mjs')).startBroker({ env: { JWT_ENABLED: 'true', JWT_SECRET: secret } });
    try {
        const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
        const token = (claims) => {
            const h = b64({ alg: 'HS256', typ: 'JWT' });
            const p = b64({ exp: Math.floor(Date.now() / 1000) + 600, ...claims });
            const s = crypto.createHmac('sha256', secret).update(`${h}.${p}`).digest('base64url');
            return `${h}.${p}.${s}`;
        };
        const get = (claims) => http(`${b.url}/api/v1/system/sqs-keys`,
                                     { headers: { authorization: `Bearer ${token(claims)}` } });
        const tenant = await get({ sub: 'u', role: 'admin', tenant: 'acme' });
        assert.equal(tenant.status, 403, tenant.raw);
        assert.equal(JSON.parse(tenant.raw).error, 'Not available to tenants');
        const rw = await get({ sub: 'u', role: 'read-write' });
        assert.equal(rw.status, 403, rw.raw);
        const admin = await get({ sub: 'u', role: 'admin' });
        assert.equal(admin.status, 200, admin.raw);
        assert.deepEqual(JSON.parse(admin.raw), { keys: [] });
    } finally {
        await b.stop();
    }
});
