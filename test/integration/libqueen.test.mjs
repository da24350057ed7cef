//  test/integration/libqueen.test.mjs - libqueen, the C client library,
//  against a real broker
//
//  Runs the cmocka programs of test/client (built by make into
//  build*/test-client/) with QUEEN_URL pointing at a broker this file starts
//  and QUEEN_DEAD_URL at a free port nobody listens on. The program linked
//  against the static library and the one linked against the shared library
//  run the same tests; each must exit 0 and report every test passed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, freePort, startBroker } from './lib.mjs';

const DIR = path.join(path.dirname(BIN), 'test-client');

function run (bin, env, timeoutMs) {
    return new Promise((resolve, reject) => {
        const proc = spawn(bin, [], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        proc.stdout.on('data', (d) => { out += d; });
        proc.stderr.on('data', (d) => { out += d; });
        const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
        proc.once('error', reject);
        proc.once('close', (code, signal) => {
            clearTimeout(timer);
            resolve({ code, signal, out });
        });
    });
}

for (const name of ['test_libqueen', 'test_libqueen_so']) {
    test(`${name}: every libqueen function against a real broker`, async () => {
        const bin = path.join(DIR, name);
        assert.ok(fs.existsSync(bin), `${bin} not built (make)`);
        const broker = await startBroker();
        try {
            const dead = await freePort();
            const r = await run(bin, { QUEEN_URL: broker.url, QUEEN_DEAD_URL: `http://127.0.0.1:${dead}` }, 120000);
            assert.equal(r.code, 0, r.out);
            assert.match(r.out, /\[  PASSED  \] 13 test\(s\)\./, r.out);
            assert.doesNotMatch(r.out, /FAILED/, r.out);
            //  The error values carry the broker's own texts
            assert.match(r.out, /push 400: items\[0\]\.queue must be at most 255 bytes/, r.out);
            assert.match(r.out, /broker down: .*(Connection refused|Couldn't connect|Failed to connect)/i, r.out);
        } finally {
            assert.equal(await broker.stop(), 0, 'broker exit status');
        }
    });
}
