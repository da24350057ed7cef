//  test/integration/broker.test.mjs - the foundation: boot, health, HTTP
//  framing and limits, database outages, graceful shutdown, two brokers
//  booting on one empty database. Plain HTTP, the way curl talks.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import {
    BIN, PG_PORT, createDatabase, psql, pgStop, pgStart, pgFreeze, pgThaw,
    http, sleep, waitFor, startBroker, freePort,
} from './lib.mjs';

//  Sends raw bytes on one connection and collects everything until the
//  server closes or `untilBytes`/`untilCount` responses arrived.
function raw (port, chunks, { waitMs = 3000, gapMs = 0, untilCount = 0 } = {}) {
    return new Promise((resolve, reject) => {
        const sock = net.connect(port, '127.0.0.1');
        let data = '';
        const done = () => { sock.destroy(); resolve(data); };
        const timer = setTimeout(done, waitMs);
        sock.on('data', (d) => {
            data += d.toString('latin1');
            if (untilCount && (data.match(/HTTP\/1\.1 \d{3}/g) || []).length >= untilCount) {
                clearTimeout(timer);
                done();
            }
        });
        sock.on('close', () => { clearTimeout(timer); resolve(data); });
        sock.on('error', (e) => { clearTimeout(timer); e.code === 'ECONNRESET' ? resolve(data) : reject(e); });
        sock.on('connect', async () => {
            for (const c of chunks) {
                sock.write(Buffer.isBuffer(c) ? c : Buffer.from(c, 'latin1'));
                if (gapMs)
                    await sleep(gapMs);
            }
        });
    });
}

function statuses (text) {
    return (text.match(/HTTP\/1\.1 (\d{3})/g) || []).map((s) => Number(s.slice(9)));
}

function rssKb (pid) {
    const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
    return Number(m[1]);
}

test('health, metrics, CORS preflight and unknown routes', async () => {
    const b = await startBroker();
    try {
        const h = await http(`${b.url}/health`);
        assert.equal(h.status, 200);
        assert.equal(h.body.status, 'healthy');
        assert.equal(h.body.database, 'connected');
        assert.match(h.headers['content-type'], /application\/json/);
        assert.equal(h.headers['access-control-allow-origin'], '*');
        const o = await http(`${b.url}/api/v1/push`, { method: 'OPTIONS' });
        assert.equal(o.status, 204);
        assert.match(o.headers['access-control-allow-methods'], /POST/);
        const n = await http(`${b.url}/api/v1/nothing-here`);
        assert.equal(n.status, 404);
        assert.deepEqual(n.body, { error: 'Not found' });
        const wrongMethod = await http(`${b.url}/health`, { method: 'DELETE' });
        assert.equal(wrongMethod.status, 405);
        assert.ok(wrongMethod.body.error);
        const m = await http(`${b.url}/metrics`);
        assert.equal(m.status, 200);
        assert.ok(m.body.memory.rss > 0);
        assert.ok(m.body.requests.total >= 3);
        const p = await http(`${b.url}/metrics/prometheus`);
        assert.equal(p.status, 200);
        assert.match(p.headers['content-type'], /text\/plain/);
        assert.match(p.body, /queen_uptime_seconds/);
        //  A GET with a JSON content type and no body (what the official
        //  client sends) is fine.
        const g = await http(`${b.url}/health`, { headers: { 'Content-Type': 'application/json' } });
        assert.equal(g.status, 200);
    } finally {
        assert.equal(await b.stop(), 0);
    }
});

test('HTTP framing: pipelining in order, chunked, 100-continue, limits', async () => {
    const b = await startBroker({ env: { MAX_BODY_BYTES: '2048', MAX_HEADER_BYTES: '2048',
                                         REQUEST_TIMEOUT_MS: '700', IDLE_TIMEOUT_MS: '1500' } });
    try {
        //  Three pipelined requests in one write, answered in order.
        const three = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n'
            + 'GET /nope HTTP/1.1\r\nHost: x\r\n\r\n'
            + 'OPTIONS /health HTTP/1.1\r\nHost: x\r\n\r\n';
        assert.deepEqual(statuses(await raw(b.port, [three], { untilCount: 3 })), [200, 404, 204]);
        //  The same split at every byte is framed identically.
        const bytes = [...three].map((c) => c);
        assert.deepEqual(statuses(await raw(b.port, bytes, { untilCount: 3 })), [200, 404, 204]);
        //  A chunked body on an unknown route still frames (404, not 400).
        const chunked = 'POST /nope HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n'
            + '3\r\nabc\r\n0\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n';
        assert.deepEqual(statuses(await raw(b.port, [chunked], { untilCount: 2 })), [404, 200]);
        //  Expect: 100-continue gets the interim response first.
        const cont = await raw(b.port, ['POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n', '{}'],
                               { gapMs: 100, untilCount: 2 });
        assert.deepEqual(statuses(cont), [100, 404]);
        //  Oversized body: 413 with a JSON error, then close.
        const big = await raw(b.port, [`POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n`]);
        assert.deepEqual(statuses(big), [413]);
        assert.match(big, /\{"error":/);
        //  Oversized head: 431.
        const head = await raw(b.port, [`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(4000)}\r\n\r\n`]);
        assert.deepEqual(statuses(head), [431]);
        //  Conflicting Content-Length and Transfer-Encoding: 400.
        const smuggle = await raw(b.port, ['POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n']);
        assert.deepEqual(statuses(smuggle), [400]);
        //  A request that never completes: 408 after REQUEST_TIMEOUT_MS.
        const t0 = Date.now();
        const slow = await raw(b.port, ['GET /health HTTP/1.1\r\nHost: x\r\n'], { waitMs: 5000 });
        assert.deepEqual(statuses(slow), [408]);
        assert.ok(Date.now() - t0 >= 600, 'not before the timeout');
        //  An idle keep-alive connection is closed after IDLE_TIMEOUT_MS.
        const t1 = Date.now();
        const idle = await raw(b.port, ['GET /health HTTP/1.1\r\nHost: x\r\n\r\n'], { waitMs: 8000 });
        assert.deepEqual(statuses(idle), [200]);
        assert.ok(Date.now() - t1 >= 1400 && Date.now() - t1 < 7000);
        //  Connection: close is honoured.
        const close = await raw(b.port, ['GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'], { waitMs: 5000 });
        assert.match(close, /Connection: close/i);
    } finally {
        assert.equal(await b.stop(), 0);
    }
});

test('thousands of idle keep-alive connections cost little memory', async () => {
    const b = await startBroker();
    const socks = [];
    try {
        const before = rssKb(b.proc.pid);
        const N = 2000;
        for (let i = 0; i < N; i++) {
            const s = net.connect(b.port, '127.0.0.1');
            s.on('error', () => {});
            socks.push(s);
            if (i % 200 === 199)
                await sleep(20);
        }
        await waitFor(async () => (await http(`${b.url}/metrics/prometheus`)).body.match(/queen_http_connections (\d+)/)?.[1] >= N, 20000);
        const after = rssKb(b.proc.pid);
        const perConn = ((after - before) * 1024) / N;
        assert.ok(perConn < 16384, `idle connection costs ${perConn.toFixed(0)} bytes`);
        //  Still serving.
        assert.equal((await http(`${b.url}/health`)).status, 200);
    } finally {
        socks.forEach((s) => s.destroy());
        assert.equal(await b.stop(), 0);
    }
});

test('PostgreSQL stopped: health 503 within seconds, broker stays up, recovers', async () => {
    const b = await startBroker();
    try {
        await pgStop();
        const down = await waitFor(async () => {
            const h = await http(`${b.url}/health`, { timeoutMs: 2000 });
            return h.status === 503 ? h : null;
        }, 8000, 200);
        assert.deepEqual([down.body.status, down.body.database], ['unhealthy', 'disconnected']);
        //  Never blocks longer than a second while the database is gone.
        const t0 = Date.now();
        await http(`${b.url}/health`);
        assert.ok(Date.now() - t0 < 1000);
        await pgStart();
        await waitFor(async () => (await http(`${b.url}/health`)).status === 200, 15000, 200);
        assert.ok(!b.exited());
    } finally {
        await pgStart().catch(() => {});
        assert.equal(await b.stop(), 0);
    }
});

test('PostgreSQL frozen: health 503 fast, recovers when thawed', async () => {
    const b = await startBroker();
    try {
        await pgFreeze();
        await waitFor(async () => {
            const t0 = Date.now();
            const h = await http(`${b.url}/health`, { timeoutMs: 3000 });
            assert.ok(Date.now() - t0 < 1000, 'health answers within a second');
            return h.status === 503;
        }, 10000, 250);
        await pgThaw();
        await waitFor(async () => (await http(`${b.url}/health`)).status === 200, 15000, 200);
    } finally {
        await pgThaw().catch(() => {});
        assert.equal(await b.stop(), 0);
    }
});

test('SIGTERM with requests in flight: they complete, exit 0', async () => {
    const b = await startBroker();
    const q = `term${Date.now()}`;
    const pushes = [];
    for (let i = 0; i < 40; i++) {
        pushes.push(http(`${b.url}/api/v1/push`, {
            method: 'POST',
            body: { items: Array.from({ length: 50 }, (_, j) => ({ queue: q, partition: `p${i % 5}`, transactionId: `t-${i}-${j}`, payload: { i, j } })) },
        }).catch((e) => ({ status: 0, error: e })));
    }
    //  Signal as soon as the first push is answered: the rest are being
    //  read, parsed or written to PostgreSQL at that moment.
    await Promise.race(pushes);
    const code = b.stop('SIGTERM');
    const results = await Promise.all(pushes);
    assert.equal(await code, 0);
    //  Every push either completed (201) or was never accepted (refused
    //  connection); none was cut off half-way and none got a 5xx.
    const ok = results.filter((r) => r.status === 201);
    assert.ok(ok.length > 0, 'some pushes were in flight');
    for (const r of results)
        assert.ok(r.status === 201 || r.status === 0 || r.status === 503, `status ${r.status}`);
    const stored = Number(await psql(`SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = '${q}'`, { db: b.db }));
    assert.equal(stored, ok.length * 50);
});

test('two brokers booting on one empty database: schema applied once, both serve', async () => {
    const db = await createDatabase('twoboot');
    const [a, b] = await Promise.all([startBroker({ db }), startBroker({ db })]);
    try {
        assert.equal((await http(`${a.url}/health`)).status, 200);
        assert.equal((await http(`${b.url}/health`)).status, 200);
        const rows = await psql('SELECT version, count(*) FROM queen.schema_migrations GROUP BY version HAVING count(*) > 1', { db });
        assert.equal(rows, '');
        const files = Number(await psql('SELECT count(*) FROM queen.schema_migrations', { db }));
        assert.ok(files >= 1);
        const applied = (a.logs() + b.logs()).match(/schema applied: file=/g) || [];
        assert.equal(applied.length, files, 'each migration applied by exactly one broker');
        const installed = (a.logs() + b.logs()).match(/schema functions installed: /g) || [];
        assert.equal(installed.length, 1, 'the function set installed by one broker');
        //  A restart applies nothing.
        assert.equal(await a.stop(), 0);
        const c = await startBroker({ db });
        assert.match(c.logs(), /files_applied=0/);
        assert.equal(await c.stop(), 0);
    } finally {
        await a.stop().catch(() => {});
        await b.stop().catch(() => {});
    }
});

test('healthy means serving: requests sent the moment /health says 200 never get 503', async () => {
    //  The health connection may be up before the pool's connections are
    //  open; requests arriving then wait for them (actors/pg/writer.c).
    const db = await createDatabase('healthy');
    for (let round = 0; round < 4; round++) {
        const b = await startBroker({ db, expectHealthy: false });
        try {
            //  As soon as the port accepts and /health says 200: no pause.
            for (let t0 = Date.now(); ; ) {
                const h = await http(`${b.url}/health`).catch(() => ({ status: 0 }));
                if (h.status === 200)
                    break;
                assert.ok(Date.now() - t0 < 20000, 'broker healthy within 20 s');
            }
            const answers = await Promise.all([
                http(`${b.url}/api/v1/configure`, { method: 'POST', body: { queue: `hs-${round}` } }),
                ...Array.from({ length: 8 }, (_, i) => http(`${b.url}/api/v1/push`, {
                    method: 'POST', body: { items: [{ queue: `hs-${round}`, partition: `p${i}`, payload: { i } }] },
                })),
                http(`${b.url}/api/v1/pop/queue/hs-${round}?wait=false`),
            ]);
            for (const a of answers)
                assert.ok(a.status < 500, `round ${round}: ${a.status} ${JSON.stringify(a.body)}`);
        } finally {
            assert.equal(await b.stop(), 0);
        }
    }
});

function run (env, timeoutMs = 20000) {
    return new Promise((resolve) => {
        const p = spawn(BIN, [], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        p.stdout.on('data', (d) => { out += d; });
        p.stderr.on('data', (d) => { out += d; });
        const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
        p.on('close', (code) => { clearTimeout(timer); resolve({ code, out }); });
    });
}

test('unreachable PostgreSQL: bounded retry, one clear line, non-zero exit', async () => {
    const port = await freePort();
    const t0 = Date.now();
    const r = await run({ PG_HOST: '127.0.0.1', PG_PORT: String(port), PORT: String(await freePort()),
                          DB_CONNECTION_TIMEOUT: '1500' });
    assert.notEqual(r.code, 0);
    assert.ok(Date.now() - t0 >= 1000 && Date.now() - t0 < 15000);
    assert.match(r.out, new RegExp(`cannot connect to PostgreSQL: host=127\\.0\\.0\\.1 port=${port} .*error=`));
});

test('bad configuration: clear error, exit 2; --help lists every setting', async () => {
    const r = await run({ PORT: 'abc', PG_HOST: '127.0.0.1', PG_PORT: String(PG_PORT) });
    assert.equal(r.code, 2);
    assert.match(r.out, /PORT: expected an integer, got 'abc'/);
    const h = await new Promise((resolve) => {
        const p = spawn(BIN, ['--help']);
        let out = '';
        p.stdout.on('data', (d) => { out += d; });
        p.on('close', (code) => resolve({ code, out }));
    });
    assert.equal(h.code, 0);
    for (const name of ['PORT', 'HOST', 'PG_HOST', 'PG_PORT', 'PG_USER', 'PG_PASSWORD', 'PG_DB',
                        'DB_POOL_SIZE', 'DB_STATEMENT_TIMEOUT', 'LOG_LEVEL', 'MAX_BODY_BYTES'])
        assert.match(h.out, new RegExp(`\\b${name}\\b`));
});

test('README configuration table matches the settings table', async () => {
    const out = await new Promise((resolve) => {
        const p = spawn(BIN, ['--config-markdown']);
        let text = '';
        p.stdout.on('data', (d) => { text += d; });
        p.on('close', () => resolve(text));
    });
    const readme = fs.readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    assert.ok(readme.includes(out.trim()), 'run scripts/readme-config.sh build');
});
