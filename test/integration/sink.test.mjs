//  test/integration/sink.test.mjs - queen-sink end to end: a broker on the
//  test cluster, s3rver as the bucket (behind the signature-checking proxy
//  of s3_fixture.mjs), build/queen-sink between them, DuckDB reading what
//  landed. Windows are seconds wide (SINK_WINDOW=2s) so nothing waits for
//  real minutes.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { BIN, freePort, startBroker, pushItems, request, sleep, waitFor, warmUp } from './lib.mjs';
import { startBucket } from './s3_fixture.mjs';

const SINK = path.join(path.dirname(BIN), 'queen-sink');
let broker;
let s3;
let duck;
const sinks = new Set();

before(async () => {
    broker = await startBroker();
    await warmUp(broker.url);
    s3 = await startBucket();
    duck = await (await DuckDBInstance.create(':memory:')).connect();
});

after(async () => {
    for (const s of sinks)
        s.proc.kill('SIGKILL');
    await s3.stop();
    await broker.stop();
});

//  Starts queen-sink; resolves once its /health answers (or, with
//  expectExit, once it exits: { code, output }).
async function startSink (env, { expectExit = false, timeoutMs = 20000 } = {}) {
    const port = await freePort();
    const proc = spawn(SINK, [], {
        env: { ...process.env, ...s3.env, QUEEN_URL: broker.url, SINK_PORT: String(port),
               SINK_WINDOW: '2s', SINK_LATENESS_MS: '500', SINK_WAIT_MS: '300', S3_RETRIES: '2',
               LOG_LEVEL: process.env.QN_LOG_LEVEL || 'info', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    proc.stdout.on('data', (c) => { output += c; });
    proc.stderr.on('data', (c) => { output += c; });
    const exited = new Promise((resolve) => proc.once('close', (code, sig) => resolve(code ?? sig)));
    const sink = { proc, port, url: `http://127.0.0.1:${port}`, logs: () => output, exited };
    sinks.add(sink);
    exited.then(() => sinks.delete(sink));
    if (expectExit) {
        const code = await Promise.race([exited, sleep(timeoutMs).then(() => 'timeout')]);
        return { code, output };
    }
    await waitFor(async () => {
        if (!sinks.has(sink))
            throw new Error(`queen-sink exited:\n${output}`);
        const r = await fetch(`${sink.url}/health`).catch(() => null);
        return r && (r.status === 200 || r.status === 503);
    }, timeoutMs);
    return sink;
}

async function stopSink (sink) {
    sink.proc.kill('SIGTERM');
    return sink.exited;
}

//  Downloads every object under `prefix` into a fresh directory (keys kept)
//  and returns the directory.
async function download (prefix) {
    const dir = fs.mkdtempSync(path.join(process.env.QN_TMP || '/tmp', 'lake-'));
    for (const key of await s3.listKeys(prefix)) {
        const file = path.join(dir, key);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, await s3.getObject(key));
    }
    return dir;
}

async function rows (sql) {
    return (await duck.runAndReadAll(sql)).getRowObjectsJson();
}

async function push (queue, count, partitions, from = 0) {
    for (let i = from; i < from + count; i += 500) {
        const items = [];
        for (let j = i; j < Math.min(i + 500, from + count); j++)
            items.push({ queue, partition: `p${j % partitions}`, transactionId: `t-${j}`,
                         payload: { n: j, amount: j + 0.25, tag: `k${j % 3}` } });
        await pushItems(broker.url, items);
    }
}

async function committed (queue, group = 'queen-sink') {
    const key = encodeURIComponent(`${group}/${queue}/committed`);
    const r = await fetch(`${broker.url}/api/v1/kv/queen-sink/${key}`);
    return r.status === 200 ? (await r.json()).value : null;
}

//  Every n in [0, count) exactly once in the queue's Parquet objects.
async function checkExactlyOnce (dir, queue, count, ext = 'parquet') {
    const src = ext === 'parquet'
        ? `read_parquet('${dir}/**/*.parquet', hive_partitioning = true)`
        : `read_json('${dir}/**/*.${ext}', hive_partitioning = true, format = 'newline_delimited')`;
    const [r] = await rows(`SELECT count(*) AS c, count(DISTINCT message_id) AS d,
            count(DISTINCT (payload->>'n')::INT) AS dn, min((payload->>'n')::INT) AS lo,
            max((payload->>'n')::INT) AS hi FROM ${src} WHERE queue = '${queue}'`);
    assert.deepEqual([Number(r.c), Number(r.d), Number(r.dn), Number(r.lo), Number(r.hi)],
        [count, count, count, 0, count - 1]);
}

test('bad configuration and bad credentials: a clear error at start', async () => {
    let r = await startSink({ SINK_QUEUES: '' }, { expectExit: true });
    assert.equal(r.code, 2);
    assert.match(r.output, /bad configuration: SINK_QUEUES: name at least one queue/);
    r = await startSink({ SINK_QUEUES: 'q', SINK_WINDOW: '7m' }, { expectExit: true });
    assert.equal(r.code, 2);
    assert.match(r.output, /SINK_WINDOW 7m does not divide a day evenly/);
    r = await startSink({ SINK_QUEUES: 'q', SINK_FORMAT: 'csv' }, { expectExit: true });
    assert.equal(r.code, 2);
    assert.match(r.output, /SINK_FORMAT: expected parquet or jsonl/);
    r = await startSink({ SINK_QUEUES: 'q', SINK_FIELDS: 'amount:float' }, { expectExit: true });
    assert.equal(r.code, 2);
    assert.match(r.output, /SINK_FIELDS type "float"/);
    r = await startSink({ SINK_QUEUES: 'q', S3_SECRET_ACCESS_KEY: 'wrong' }, { expectExit: true });
    assert.equal(r.code, 1);
    assert.match(r.output, /cannot start: bucket lake at .*: HTTP 403 SignatureDoesNotMatch/);
    r = await startSink({ SINK_QUEUES: 'q', S3_BUCKET: 'nosuchbucket' }, { expectExit: true });
    assert.equal(r.code, 1);
    assert.match(r.output, /cannot start: bucket nosuchbucket .*HTTP 404 NoSuchBucket/);
    const help = await new Promise((resolve) => {
        const p = spawn(SINK, ['--help']);
        let out = '';
        p.stdout.on('data', (c) => { out += c; });
        p.on('close', (code) => resolve({ code, out }));
    });
    assert.equal(help.code, 0);
    for (const name of ['QUEEN_URL', 'SINK_QUEUES', 'SINK_FORMAT', 'SINK_WINDOW', 'SINK_GROUP', 'S3_ENDPOINT',
        'S3_BUCKET', 'S3_PREFIX', 'S3_REGION', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'S3_PATH_STYLE'])
        assert.match(help.out, new RegExp(`\\n  ${name} `));
    assert.doesNotMatch(help.out, /\n {2}PG_HOST /);
});

test('messages over many partitions land once per window; DuckDB finds each exactly once', async () => {
    const queue = 'orders';
    const badBefore = s3.stats.badSignatures;
    await push(queue, 3000, 40);
    const sink = await startSink({ SINK_QUEUES: queue, S3_PREFIX: 'lake', SINK_FIELDS: 'n:int64,amount:double,tag:string' });
    await push(queue, 1000, 40, 3000);
    await waitFor(async () => {
        const [r] = await rows(`SELECT 1`);
        const c = await committed(queue);
        const m = await (await fetch(`${sink.url}/metrics`)).text();
        const staged = /queen_sink_messages_staged (\d+)/.exec(m);
        return r && c && staged && Number(staged[1]) === 4000 && /queen_sink_staged_windows\{queue="orders"\} 0/.test(m);
    }, 60000, 200);
    const dir = await download('lake/');
    await checkExactlyOnce(dir, queue, 4000);
    //  One object per window (no part limit reached), keys of the Hive form.
    const keys = await s3.listKeys('lake/');
    for (const k of keys)
        assert.match(k, /^lake\/queue=orders\/dt=\d{4}-\d{2}-\d{2}\/hour=\d{2}\/part-\d{8}T\d{6}Z-00000\.parquet$/);
    const windows = await rows(`SELECT count(DISTINCT filename) AS f, count(DISTINCT time_bucket(INTERVAL 2 SECOND, created_at)) AS w
            FROM read_parquet('${dir}/**/*.parquet', filename = true)`);
    assert.equal(Number(windows[0].f), Number(windows[0].w));
    //  The typed field columns.
    const [t] = await rows(`SELECT sum(n) AS s, sum(amount) AS a, count(*) FILTER (WHERE tag = 'k1') AS k1
            FROM read_parquet('${dir}/**/*.parquet')`);
    assert.equal(Number(t.s), 4000 * 3999 / 2);
    assert.equal(Number(t.a), 4000 * 3999 / 2 + 4000 * 0.25);
    assert.equal(Number(t.k1), 1333);
    //  Health and progress.
    const h = await (await fetch(`${sink.url}/health`)).json();
    assert.equal(h.status, 'ok');
    assert.ok(h.sink['sink_committed_window_ms{queue="orders"}'] > 0);
    assert.ok('sink_lag_ms{queue="orders"}' in h.sink);
    //  Nothing left in the queue for the sink's group.
    const left = await request(broker.url, `/api/v1/pop/queue/${queue}?consumerGroup=queen-sink&wait=false`, { expect: 204 });
    assert.equal(left.status, 204);
    assert.equal(await stopSink(sink), 0, sink.logs());
    assert.equal(s3.stats.badSignatures, badBefore);
});
