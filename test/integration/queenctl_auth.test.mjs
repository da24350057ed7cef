//  test/integration/queenctl_auth.test.mjs - queenctl (and so libqueen)
//  against a broker with JWT auth on: the bearer token from --token, from
//  QUEEN_TOKEN and from a config file context reaches the broker; no token
//  or too small a role is refused with the broker's 401/403 text.

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN, startBroker } from './lib.mjs';

const CTL = path.join(path.dirname(BIN), 'queenctl');
const TMP = process.env.QN_TMP || os.tmpdir();
const SECRET = 'queenctl-it-secret-0123456789abcdef';
const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
function token (role) {
    const now = Math.floor(Date.now() / 1000);
    const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub: 'ops', role, iat: now - 5, exp: now + 3600 })}`;
    return `${input}.${crypto.createHmac('sha256', SECRET).update(input).digest('base64url')}`;
}
let broker;

function ctl (args, env = {}) {
    return new Promise((resolve, reject) => {
        const proc = spawn(CTL, args, { env: { ...process.env, HOME: TMP, QUEEN_SERVER: '', QUEEN_TOKEN: '', ...env },
                                        stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        proc.stdout.on('data', (d) => { stdout += d; });
        proc.stderr.on('data', (d) => { stderr += d; });
        const timer = setTimeout(() => proc.kill('SIGKILL'), 30000);
        proc.once('error', reject);
        proc.once('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
    });
}
const show = (r) => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

before(async () => {
    assert.ok(fs.existsSync(CTL), `${CTL} not built (make)`);
    broker = await startBroker({ env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET } });
});

test('no token: 401 with the broker text, exit 1', async () => {
    const r = await ctl(['--server', broker.url, 'queues']);
    assert.equal(r.code, 1, show(r));
    assert.match(r.stderr, /\(HTTP 401, unauthorized\)/, show(r));
    assert.equal(r.stdout, '');
});

test('a token from --token, QUEEN_TOKEN or a config context is sent', async () => {
    let r = await ctl(['--server', broker.url, '--token', token('admin'), 'queues', '-o', 'json']);
    assert.equal(r.code, 0, show(r));
    assert.ok(Array.isArray(JSON.parse(r.stdout).queues), r.stdout);
    r = await ctl(['kv', 'set', 'auth', 'k', '1'], { QUEEN_SERVER: broker.url, QUEEN_TOKEN: token('read-write') });
    assert.equal(r.code, 0, show(r));
    const cfg = path.join(TMP, `queenctl-auth-${process.pid}`);
    fs.writeFileSync(cfg, `current-context = secure\n[context secure]\nserver = ${broker.url}\ntoken = ${token('admin')}\n`);
    r = await ctl(['--config', cfg, 'maintenance']);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^push maintenance: off$/m, show(r));
});

test('a read-only token on an admin route: 403, exit 1', async () => {
    const r = await ctl(['--server', broker.url, '--token', token('read-only'), 'maintenance', 'on']);
    assert.equal(r.code, 1, show(r));
    assert.match(r.stderr, /\(HTTP 403, unauthorized\)/, show(r));
});

test('the broker stops cleanly', async () => {
    assert.equal(await broker.stop(), 0);
});
