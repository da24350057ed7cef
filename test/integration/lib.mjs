//  test/integration/lib.mjs - helpers for node:test integration tests.
//
//  The tests drive the real broker (QN_BIN) over plain HTTP, the way curl
//  would, against the throwaway PostgreSQL that test/integration/run.sh
//  started (QN_PG_DIR, QN_PG_PORT). Each test file should create its own
//  database (createDatabase) and start its own brokers (startBroker).
//
//  On exit, and on SIGINT/SIGTERM, every broker still running is killed, a
//  frozen PostgreSQL is thawed and a stopped one restarted, so one failing
//  file cannot break the files after it.
//
//  Shared client helpers (each takes the broker's url first and asserts
//  the status it expects, throwing with the response text otherwise: a
//  test never falls back to SQL or skips when a route answers 404):
//    warmUp(url, headers)      waits until a push goes straight to PostgreSQL
//                              (a fresh broker buffers pushes until the
//                              spool's first report)
//    settle(url)               the same, then waits for an empty spool and
//                              drops the probe queue, so counts start clean
//    expectStatus(res, expect) asserts a response's status
//    request(url, path, { method, body, headers, expect })   any route
//    configureQueue(url, queue, options, extra)   POST /api/v1/configure
//    pushItems(url, items, { queued })            POST /api/v1/push (201)
//    pop(url, queue, { partition, expect, ...params })  GET /api/v1/pop/...
//                              (200 or 204), the response plus `messages`
//    popMessages(...)          the same, the messages only
//    popPath(url, path, query) GET /api/v1/pop/queue/<path>?wait=false<query>
//    ackFor(message, extra)    the acknowledgment of a popped message
//    ack(url, body), ackBatch(url, acks, { consumerGroup })   POST /api/v1/ack[/batch]
//    transaction(url, operations, extra)          POST /api/v1/transaction
//    extendLease(url, leaseId, body)              POST /api/v1/lease/:id/extend
//    setMaintenance(url, enabled, { pop }), getMaintenance(url)
//    buffers(url)              GET /api/v1/status/buffers
//    dlqList(url, query)       GET /api/v1/dlq

import assert from 'node:assert/strict';
import { spawn, execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';

const execFileP = promisify(execFile);
const HERE = path.dirname(fileURLToPath(import.meta.url));

export const ROOT = process.env.QN_ROOT || path.resolve(HERE, '../..');
export const BIN = process.env.QN_BIN || path.join(ROOT, 'build', 'queen');
export const PG_DIR = process.env.QN_PG_DIR || '';
export const PG_PORT = Number(process.env.QN_PG_PORT || 0);
export const PG_HOST = '127.0.0.1';
const PG_SH = path.join(ROOT, 'scripts', 'pg.sh');
const TMP = process.env.QN_TMP || os.tmpdir();

const brokers = new Set();      //  Live child processes

//  A broker a failed test did not stop would keep the test file's process
//  alive: when the file's tests are done, kill what is left.
after(() => {
    for (const proc of brokers)
        proc.kill('SIGKILL');
});
const tmpDirs = new Set();      //  Directories we created, removed at exit
let pgFrozen = false;
let pgStopped = false;

export function sleep (ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
}

//  Polls fn (sync or async) every intervalMs until it returns a truthy value,
//  which is returned. Throws after timeoutMs, with fn's last error if any.
export async function waitFor (fn, timeoutMs = 10000, intervalMs = 100) {
    const deadline = Date.now() + timeoutMs;
    let lastError = null;
    for (;;) {
        try {
            const value = await fn();
            if (value)
                return value;
            lastError = null;
        } catch (err) {
            lastError = err;
        }
        if (Date.now() >= deadline) {
            const why = lastError ? `: ${lastError.message}` : '';
            throw new Error(`waitFor: condition not met after ${timeoutMs} ms${why}`);
        }
        await sleep(intervalMs);
    }
}

const handedOut = new Set();

//  A free TCP port on 127.0.0.1, chosen below Linux's ephemeral range
//  (32768+) so no outgoing connection grabs it before the caller binds it.
export async function freePort () {
    for (let i = 0; i < 200; i++) {
        const port = 20000 + Math.floor(Math.random() * 12000);
        if (handedOut.has(port) || port === PG_PORT)
            continue;
        if (await canListen(port)) {
            handedOut.add(port);
            return port;
        }
    }
    throw new Error('freePort: no free port found');
}

function canListen (port) {
    return new Promise((resolve) => {
        const srv = net.createServer();
        srv.once('error', () => resolve(false));
        srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
            srv.close(() => resolve(true));
        });
    });
}

function requirePg () {
    if (!PG_DIR || !PG_PORT)
        throw new Error('QN_PG_DIR / QN_PG_PORT not set: run via test/integration/run.sh');
}

//  Runs SQL through psql against the shared cluster; resolves to psql's
//  unaligned, tuples-only output (trimmed). Rejects on any SQL error.
export async function psql (sql, { db = 'postgres', timeoutMs = 30000 } = {}) {
    requirePg();
    const { stdout } = await execFileP('psql', [
        '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1',
        '-h', PG_HOST, '-p', String(PG_PORT), '-U', 'postgres', '-d', db,
        '-c', sql,
    ], { timeout: timeoutMs, env: { ...process.env, PGCONNECT_TIMEOUT: '5' } });
    return stdout.trim();
}

let dbCounter = 0;

//  Creates a fresh, uniquely named database and returns its name. The name
//  starts with `prefix` (lowercase letters, digits, _ only).
export async function createDatabase (prefix = 'it') {
    const base = String(prefix).toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 30);
    const name = `${base}_${process.pid}_${Date.now().toString(36)}_${++dbCounter}`;
    await psql(`CREATE DATABASE "${name}"`);
    return name;
}

async function pgCtl (...args) {
    requirePg();
    try {
        const { stdout } = await execFileP('sh', [PG_SH, ...args], { timeout: 60000 });
        return stdout.trim();
    } catch (err) {
        throw new Error(`pg.sh ${args[0]} failed: ${err.stderr || err.message}`);
    }
}

//  Stops the shared cluster (fast shutdown: clients are disconnected).
export async function pgStop () {
    await pgThaw();
    pgStopped = true;
    await pgCtl('stop', PG_DIR);
}

//  Starts the shared cluster again on the same port; resolves when ready.
export async function pgStart () {
    await pgCtl('start', PG_DIR, String(PG_PORT));
    pgStopped = false;
}

function postmasterPid () {
    const text = fs.readFileSync(path.join(PG_DIR, 'data', 'postmaster.pid'), 'utf8');
    return Number(text.split('\n')[0]);
}

//  Pids of the direct children of `ppid` (PostgreSQL's backends and workers).
function childrenOf (ppid) {
    const kids = [];
    for (const entry of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(entry))
            continue;
        try {
            const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
            //  Field 4 follows "(comm)", which may itself contain spaces
            const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
            if (Number(fields[1]) === ppid)
                kids.push(Number(entry));
        } catch {
            //  Process went away while we looked
        }
    }
    return kids;
}

function signalPg (signal) {
    const pid = postmasterPid();
    //  Stop the postmaster first so it forks no new backend meanwhile;
    //  continue the children first so none wakes to a frozen parent.
    if (signal === 'SIGSTOP')
        process.kill(pid, signal);
    for (const kid of childrenOf(pid)) {
        try {
            process.kill(kid, signal);
        } catch {
            //  Exited meanwhile
        }
    }
    if (signal === 'SIGCONT')
        process.kill(pid, signal);
}

//  Freezes PostgreSQL (SIGSTOP to the postmaster and its children): TCP
//  connects still complete but nothing answers, like a hung server.
export async function pgFreeze () {
    requirePg();
    signalPg('SIGSTOP');
    pgFrozen = true;
}

export async function pgThaw () {
    requirePg();
    if (!fs.existsSync(path.join(PG_DIR, 'data', 'postmaster.pid'))) {
        pgFrozen = false;
        return;
    }
    signalPg('SIGCONT');
    pgFrozen = false;
}

//  Plain HTTP request with the built-in fetch. A non-string body is sent as
//  JSON. Resolves to { status, headers (lowercase keys, and headers.get(name)
//  like fetch's Headers), body (parsed JSON
//  when the response says JSON, else text), raw (text) }. Never throws for
//  HTTP errors; throws on network errors and after timeoutMs.
export async function http (url, { method = 'GET', body, headers = {}, timeoutMs = 30000 } = {}) {
    const init = { method, headers: { ...headers }, signal: AbortSignal.timeout(timeoutMs) };
    if (body !== undefined) {
        if (typeof body === 'string' || body instanceof Uint8Array) {
            init.body = body;
        } else {
            init.body = JSON.stringify(body);
            const hasType = Object.keys(init.headers).some((k) => k.toLowerCase() === 'content-type');
            if (!hasType)
                init.headers['Content-Type'] = 'application/json';
        }
    }
    const res = await fetch(url, init);
    const raw = await res.text();
    const headerObj = {};
    res.headers.forEach((value, key) => { headerObj[key] = value; });
    //  Also readable like fetch's Headers: headers.get('Content-Type')
    Object.defineProperty(headerObj, 'get', {
        value: (name) => headerObj[String(name).toLowerCase()] ?? null,
        enumerable: false,
    });
    let parsed = raw;
    if ((headerObj['content-type'] || '').includes('json') && raw.length > 0) {
        try {
            parsed = JSON.parse(raw);
        } catch {
            parsed = raw;           //  Let the test see what came back
        }
    }
    return { status: res.status, headers: headerObj, body: parsed, raw };
}

function canConnect (port) {
    return new Promise((resolve) => {
        const sock = net.connect({ port, host: '127.0.0.1' });
        sock.setTimeout(1000, () => { sock.destroy(); resolve(false); });
        sock.once('connect', () => { sock.destroy(); resolve(true); });
        sock.once('error', () => resolve(false));
    });
}

const MAX_LOG_BYTES = 4 << 20;

//  Starts QN_BIN against the shared cluster. Options:
//    env            extra/overriding environment variables
//    db             database name (default: a fresh one from createDatabase)
//    port           HTTP port (default: freePort())
//    fileBufferDir  spool dir (default: a fresh temp dir; pass the previous
//                   broker's to replay its spool)
//    expectHealthy  wait for GET /health = 200 (default); false: wait only
//                   until the port accepts connections
//    timeoutMs      how long to wait (default 20000)
//    args           command-line arguments
//    bin            another binary of the same family (build/queen-proxy)
//  Resolves to { url, port, db, fileBufferDir, proc, logs(), stop(), kill() }.
//  Throws, with the broker's output, if it exits or is not ready in time.
export async function startBroker (opts = {}) {
    const {
        env = {}, args = [], expectHealthy = true, timeoutMs = 20000,
    } = opts;
    const bin = opts.bin ?? BIN;
    if (!fs.existsSync(bin))
        throw new Error(`broker binary ${bin} not found (make)`);
    const port = opts.port ?? await freePort();
    const db = opts.db ?? await createDatabase('broker');
    let fileBufferDir = opts.fileBufferDir;
    if (!fileBufferDir) {
        fileBufferDir = fs.mkdtempSync(path.join(TMP, 'qn-spool-'));
        tmpDirs.add(fileBufferDir);
    }
    const childEnv = {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        PG_HOST,
        PG_PORT: String(PG_PORT),
        PG_USER: 'postgres',
        PG_PASSWORD: 'postgres',
        PG_DB: db,
        FILE_BUFFER_DIR: fileBufferDir,
        LOG_LEVEL: process.env.QN_LOG_LEVEL || 'info',
        //  The other doors and the mesh are off unless a test asks for them
        //  (with a port from freePort()), so concurrent brokers never clash.
        KAFKA_PORT: '0',
        SQS_PORT: '0',
        MESH_PORT: '0',
        ...env,
    };
    const proc = spawn(bin, args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    brokers.add(proc);
    let output = '';
    const echo = process.env.QN_BROKER_LOG === '1';
    const collect = (chunk) => {
        output += chunk.toString();
        if (output.length > MAX_LOG_BYTES)
            output = output.slice(-MAX_LOG_BYTES / 2);
        if (echo)
            process.stderr.write(`[broker:${port}] ${chunk}`);
    };
    proc.stdout.on('data', collect);
    proc.stderr.on('data', collect);
    let exitCode = null;
    const exited = new Promise((resolve) => {
        proc.once('close', (code, signal) => {
            brokers.delete(proc);
            exitCode = code ?? 128 + (os.constants.signals[signal] || 0);
            resolve(exitCode);
        });
    });
    proc.once('error', (err) => { output += `\nspawn error: ${err.message}\n`; });

    const url = `http://127.0.0.1:${port}`;
    const broker = {
        url, port, db, fileBufferDir, proc,
        logs: () => output,
        exited: () => exitCode !== null,
        //  Sends `signal`, waits up to waitMs for the exit and resolves to
        //  the exit code (128 + signal number when killed by a signal). A
        //  broker that does not exit in time is SIGKILLed and this throws.
        async stop (signal = 'SIGTERM', waitMs = 20000) {
            if (exitCode !== null)
                return exitCode;
            proc.kill(signal);
            const timer = sleep(waitMs).then(() => 'timeout');
            if (await Promise.race([exited, timer]) === 'timeout') {
                proc.kill('SIGKILL');
                await exited;
                throw new Error(`broker on :${port} did not exit within ${waitMs} ms of ${signal}`);
            }
            return exitCode;
        },
        async kill () {
            if (exitCode === null)
                proc.kill('SIGKILL');
            return exited;
        },
    };

    const deadline = Date.now() + timeoutMs;
    for (;;) {
        if (exitCode !== null)
            throw new Error(`broker exited with status ${exitCode} before becoming ready:\n${output}`);
        let ready = false;
        if (expectHealthy) {
            try {
                const res = await http(`${url}/health`, { timeoutMs: 1000 });
                ready = res.status === 200;
            } catch {
                ready = false;
            }
        } else {
            ready = await canConnect(port);
        }
        if (ready)
            return broker;
        if (Date.now() >= deadline) {
            await broker.kill();
            const what = expectHealthy ? 'GET /health = 200' : 'port accepting';
            throw new Error(`broker on :${port} not ready (${what}) after ${timeoutMs} ms:\n${output}`);
        }
        await sleep(100);
    }
}

//  Last-resort cleanup; only synchronous work is possible in 'exit'. On a
//  signal the whole run is being torn down, so PostgreSQL stays stopped.
function cleanupSync (restartPg = true) {
    for (const proc of brokers) {
        try {
            proc.kill('SIGKILL');
        } catch {
            //  Already gone
        }
    }
    brokers.clear();
    if (PG_DIR && pgFrozen) {
        try {
            signalPg('SIGCONT');
        } catch {
            //  Not running
        }
        pgFrozen = false;
    }
    if (!restartPg)
        pgStopped = false;
    if (PG_DIR && pgStopped) {
        try {
            execFileSync('sh', [PG_SH, 'start', PG_DIR, String(PG_PORT)], { stdio: 'ignore' });
        } catch {
            //  The next file will report it
        }
        pgStopped = false;
    }
    for (const dir of tmpDirs)
        fs.rmSync(dir, { recursive: true, force: true });
    tmpDirs.clear();
}

process.on('exit', () => cleanupSync(true));
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]]) {
    process.on(signal, () => {
        cleanupSync(false);
        process.exit(code);
    });
}

//  Pushes one probe item to queue until it is committed directly ("queued"),
//  not buffered by the spool.
async function waitPushQueued (url, queue, headers) {
    await waitFor(async () => {
        const res = await http(`${url}/api/v1/push`, {
            method: 'POST', headers, body: { items: [{ queue, payload: 0 }] },
        });
        return res.status === 201 && res.body[0].status === 'queued';
    }, 20000, 100);
}

//  Until the spool's first report a fresh broker buffers pushes (so nothing
//  overtakes items spooled before a restart); waits until pushes go
//  straight to PostgreSQL. headers go with the probe push (auth).
export async function warmUp (url, headers = {}) {
    await waitPushQueued(url, 'warm-up', headers);
}

//  Right after start, pushes may go to the spool until it has reported
//  (they answer "buffered"). Waits until a push is committed directly and
//  the spool is empty, then drops the probe queue so counts start clean.
export async function settle (url) {
    await waitPushQueued(url, 'probe.settle', {});
    await waitFor(async () => (await http(`${url}/api/v1/status/buffers`)).body.pending === 0, 20000, 100);
    const r = await http(`${url}/api/v1/resources/queues/probe.settle`, { method: 'DELETE' });
    assert.equal(r.status, 200, r.raw);
}

//  ------------------------------------------------------------------
//  Request helpers. Each one sends one request with http(), asserts the
//  status it expects (a number or a list; `expect` overrides) and throws
//  with the method, path, status and response text otherwise - so a route
//  that is missing (404) or broken fails the test instead of being worked
//  around. They take the broker's url first; `headers` go with the request.

//  Asserts res.status is `expect` (a number or an array of numbers).
export function expectStatus (res, expect, what = 'request') {
    const want = Array.isArray(expect) ? expect : [expect];
    if (!want.includes(res.status)) {
        throw new assert.AssertionError({
            message: `${what}: expected HTTP ${want.join(' or ')}, got ${res.status}: ${String(res.raw).slice(0, 2000)}`,
            actual: res.status, expected: expect, operator: 'expectStatus',
        });
    }
    return res;
}

//  One request (method, path, body, headers, timeoutMs as http()), its
//  status asserted (expect, default 200). Resolves to the response.
export async function request (url, path, { method = 'GET', body, headers = {}, timeoutMs, expect = 200 } = {}) {
    const res = await http(`${url}${path}`, { method, body, headers, ...(timeoutMs ? { timeoutMs } : {}) });
    return expectStatus(res, expect, `${method} ${path.slice(0, 200)}`);
}

//  POST /api/v1/configure { queue, options, ...extra }; expects 200 and
//  configured: true. Resolves to the body.
export async function configureQueue (url, queue, options = {}, extra = {}, { headers } = {}) {
    const res = await request(url, '/api/v1/configure', {
        method: 'POST', body: { queue, options, ...extra }, headers,
    });
    assert.equal(res.body.configured, true, res.raw);
    return res.body;
}

//  POST /api/v1/push { items }; expects 201 and one result per item, and
//  with queued: true every item committed directly. Resolves to the body.
export async function pushItems (url, items, { queued = false, headers, timeoutMs } = {}) {
    const res = await request(url, '/api/v1/push', {
        method: 'POST', body: { items }, headers, timeoutMs, expect: 201,
    });
    assert.ok(Array.isArray(res.body), res.raw.slice(0, 2000));
    assert.equal(res.body.length, items.length, res.raw.slice(0, 2000));
    if (queued) {
        for (const r of res.body)
            assert.equal(r.status, 'queued', res.raw.slice(0, 2000));
    }
    return res.body;
}

//  The pop path of a queue, or of one of its partitions.
export function popRoute (queue, partition) {
    const q = `/api/v1/pop/queue/${encodeURIComponent(queue)}`;
    return partition === undefined || partition === null ? q : `${q}/partition/${encodeURIComponent(partition)}`;
}

//  GET /api/v1/pop/queue/<queue>[/partition/<partition>]?<params>; expects
//  200 or 204 (expect overrides). params are query parameters (wait defaults
//  to false). Resolves to the response with `messages` added ([] on 204).
export async function pop (url, queue, { partition, headers, timeoutMs = 60000, expect = [200, 204], ...params } = {}) {
    const qs = new URLSearchParams(Object.fromEntries(
        Object.entries({ wait: false, ...params }).filter(([, v]) => v !== undefined && v !== null)
            .map(([k, v]) => [k, String(v)]))).toString();
    const res = await request(url, `${popRoute(queue, partition)}?${qs}`, { headers, timeoutMs, expect });
    if (res.status === 200) {
        assert.ok(Array.isArray(res.body?.messages), res.raw.slice(0, 2000));
        assert.ok(res.body.messages.length > 0, `a 200 pop carries messages: ${res.raw}`);
        res.messages = res.body.messages;
    } else if (res.status === 204) {
        assert.equal(res.raw, '', 'a 204 pop has no body');
        res.messages = [];
    }
    return res;
}

//  The same, resolving to the messages only.
export async function popMessages (url, queue, opts = {}) {
    return (await pop(url, queue, opts)).messages;
}

//  GET /api/v1/pop/queue/<path>?wait=false<query> (path may be
//  "queue/partition/<name>", query starts with "&"); expects 200 or 204;
//  resolves to the messages ([] on 204).
export async function popPath (url, path, query = '') {
    const res = await request(url, `/api/v1/pop/queue/${path}?wait=false${query}`, { expect: [200, 204] });
    if (res.status === 204)
        return [];
    assert.ok(Array.isArray(res.body?.messages) && res.body.messages.length > 0, res.raw.slice(0, 2000));
    return res.body.messages;
}

//  The acknowledgment of a popped message (transactionId, partitionId,
//  leaseId), with extra fields (status, error, consumerGroup, ...).
export function ackFor (m, extra = {}) {
    return { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, ...extra };
}

//  POST /api/v1/ack with one acknowledgment (a body); expects 200 and one
//  result. Resolves to that result; with success: true asserts it succeeded.
export async function ack (url, body, { headers, success } = {}) {
    const res = await request(url, '/api/v1/ack', { method: 'POST', body, headers });
    assert.ok(Array.isArray(res.body) && res.body.length === 1, res.raw);
    if (success !== undefined)
        assert.equal(res.body[0].success, success, res.raw);
    return res.body[0];
}

//  POST /api/v1/ack/batch { consumerGroup, acknowledgments }; expects 200
//  and one result per acknowledgment (every one successful with
//  success: true). Resolves to the results.
export async function ackBatch (url, acknowledgments, { consumerGroup, headers, success } = {}) {
    const body = { acknowledgments };
    if (consumerGroup !== undefined)
        body.consumerGroup = consumerGroup;
    const res = await request(url, '/api/v1/ack/batch', { method: 'POST', body, headers });
    assert.ok(Array.isArray(res.body), res.raw.slice(0, 2000));
    assert.equal(res.body.length, acknowledgments.length, res.raw.slice(0, 2000));
    if (success !== undefined) {
        for (const r of res.body)
            assert.equal(r.success, success, res.raw.slice(0, 2000));
    }
    return res.body;
}

//  POST /api/v1/transaction { operations, ...extra (requiredLeases) };
//  expects 200. Resolves to the body ({ success, transactionId, results }).
export async function transaction (url, operations, extra = {}, { headers } = {}) {
    const res = await request(url, '/api/v1/transaction', { method: 'POST', body: { operations, ...extra }, headers });
    assert.equal(typeof res.body?.success, 'boolean', res.raw);
    return res.body;
}

//  POST /api/v1/lease/<leaseId>/extend (body, e.g. { seconds }); expects
//  200 and one result. Resolves to that result.
export async function extendLease (url, leaseId, body = {}) {
    const res = await request(url, `/api/v1/lease/${leaseId}/extend`, { method: 'POST', body });
    assert.ok(Array.isArray(res.body) && res.body.length === 1, res.raw);
    return res.body[0];
}

//  POST /api/v1/system/maintenance[/pop] { enabled }; expects 200 and the
//  flag echoed. Resolves to the body.
export async function setMaintenance (url, enabled, { pop: popMode = false } = {}) {
    const res = await request(url, `/api/v1/system/maintenance${popMode ? '/pop' : ''}`, {
        method: 'POST', body: { enabled },
    });
    assert.equal(res.body[popMode ? 'popMaintenanceMode' : 'maintenanceMode'], enabled, res.raw);
    return res.body;
}

//  GET /api/v1/system/maintenance; expects 200. Resolves to the body.
export async function getMaintenance (url) {
    return (await request(url, '/api/v1/system/maintenance')).body;
}

//  GET /api/v1/status/buffers; expects 200. Resolves to the body.
export async function buffers (url) {
    return (await request(url, '/api/v1/status/buffers')).body;
}

//  GET /api/v1/dlq?<query>; expects 200. Resolves to the body.
export async function dlqList (url, query = '') {
    const res = await request(url, `/api/v1/dlq${query ? `?${query}` : ''}`);
    assert.ok(Array.isArray(res.body?.messages), res.raw.slice(0, 2000));
    return res.body;
}
