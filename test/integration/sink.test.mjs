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

test('SINK_CONFIG: per-queue format, compression, window, prefix and fields; a bad file is refused at start', async () => {
    const dir0 = fs.mkdtempSync(path.join(process.env.QN_TMP || '/tmp', 'sinkconf-'));
    const file = (name, text) => {
        fs.writeFileSync(path.join(dir0, name), text);
        return path.join(dir0, name);
    };
    //  Refusals, with the file's line.
    let r = await startSink({ SINK_QUEUES: '', SINK_CONFIG: path.join(dir0, 'missing.conf') }, { expectExit: true });
    assert.equal(r.code, 2, r.output);
    assert.match(r.output, /bad configuration: SINK_CONFIG \S*missing\.conf: No such file or directory/);
    r = await startSink({ SINK_QUEUES: '', SINK_CONFIG: file('typo.conf', '[a]\nwindw = 1h\n') }, { expectExit: true });
    assert.equal(r.code, 2, r.output);
    assert.match(r.output, /bad configuration: SINK_CONFIG \S*typo\.conf: line 2: unknown key 'windw'/);
    r = await startSink({ SINK_QUEUES: 'a', SINK_CONFIG: file('bad.conf', '[a]\nformat = jsonl\ncompression = zstd\n') },
        { expectExit: true });
    assert.equal(r.code, 2, r.output);
    assert.match(r.output, /SINK_CONFIG \S*bad\.conf: line 1: \[a\]: SINK_COMPRESSION: jsonl takes none or gzip, got 'zstd'/);
    r = await startSink({ SINK_QUEUES: '', SINK_CONFIG: file('empty.conf', '# nothing\n') }, { expectExit: true });
    assert.equal(r.code, 2, r.output);
    assert.match(r.output, /SINK_QUEUES: name at least one queue/);

    //  Three queues: one from SINK_QUEUES with the environment's settings,
    //  two from the file with settings of their own.
    const conf = file('sink.conf', [
        '# per-queue settings',
        '[cfg-parquet]',
        'compression = snappy',
        'window = 1s',
        'prefix = /cfg/typed/',
        'fields = n:int64,tag:string',
        '',
        '[cfg-jsonl]',
        'format = jsonl',
        'compression = none',
        'prefix = cfg/raw',
        '',
    ].join('\n'));
    const sink = await startSink({ SINK_QUEUES: 'cfg-env', SINK_CONFIG: conf, S3_PREFIX: 'cfg/env' });
    for (const q of ['cfg-env', 'cfg-parquet', 'cfg-jsonl'])
        await push(q, 300, 7);
    await waitFor(async () => {
        const m = await (await fetch(`${sink.url}/metrics`)).text();
        const staged = /queen_sink_messages_staged (\d+)/.exec(m);
        return staged && Number(staged[1]) === 900 && ['cfg-env', 'cfg-parquet', 'cfg-jsonl']
            .every((q) => new RegExp(`queen_sink_staged_windows\\{queue="${q}"\\} 0`).test(m)
                && new RegExp(`queen_sink_committed_window_ms\\{queue="${q}"\\} [1-9]`).test(m));
    }, 60000, 200);
    assert.equal(await stopSink(sink), 0, sink.logs());
    const keys = await s3.listKeys('cfg/');
    const of = (re) => keys.filter((k) => re.test(k));
    assert.equal(keys.length, of(/^cfg\/env\/queue=cfg-env\/.*\.parquet$/).length
        + of(/^cfg\/typed\/queue=cfg-parquet\/.*\.parquet$/).length + of(/^cfg\/raw\/queue=cfg-jsonl\/.*\.jsonl$/).length,
    keys.join('\n'));
    for (const re of [/^cfg\/env\/queue=cfg-env\//, /^cfg\/typed\/queue=cfg-parquet\//, /^cfg\/raw\/queue=cfg-jsonl\//])
        assert.ok(of(re).length > 0, `objects for ${re}`);
    const dir = await download('cfg/');
    await checkExactlyOnce(`${dir}/cfg/env`, 'cfg-env', 300);
    await checkExactlyOnce(`${dir}/cfg/typed`, 'cfg-parquet', 300);
    await checkExactlyOnce(`${dir}/cfg/raw`, 'cfg-jsonl', 300, 'jsonl');
    //  The file's window (1 s) and the environment's (2 s): each object
    //  holds one window of its queue's width.
    const [w1] = await rows(`SELECT max(d) AS d FROM (SELECT max(epoch_ms(created_at)) // 1000 - min(epoch_ms(created_at)) // 1000 AS d
            FROM read_parquet('${dir}/cfg/typed/**/*.parquet', filename = true) GROUP BY filename)`);
    assert.equal(Number(w1.d), 0);
    const [w2] = await rows(`SELECT max(d) AS d FROM (SELECT max(epoch_ms(created_at)) // 2000 - min(epoch_ms(created_at)) // 2000 AS d
            FROM read_parquet('${dir}/cfg/env/**/*.parquet', filename = true) GROUP BY filename)`);
    assert.equal(Number(w2.d), 0);
    //  Codecs and columns: snappy with the typed fields for cfg-parquet,
    //  zstd (the default) without them for cfg-env.
    const codecs = await rows(`SELECT DISTINCT split_part(file_name, '/cfg/', 2) LIKE 'typed/%' AS typed, compression
            FROM parquet_metadata('${dir}/cfg/**/*.parquet') ORDER BY 1`);
    assert.deepEqual(codecs.map((c) => [c.typed, c.compression]), [[false, 'ZSTD'], [true, 'SNAPPY']]);
    const [t] = await rows(`SELECT sum(n) AS s, count(*) FILTER (WHERE tag = 'k1') AS k1
            FROM read_parquet('${dir}/cfg/typed/**/*.parquet')`);
    assert.deepEqual([Number(t.s), Number(t.k1)], [300 * 299 / 2, 100]);
    const cols = await rows(`SELECT name FROM parquet_schema('${dir}/cfg/env/**/*.parquet') WHERE name IN ('n', 'tag')`);
    assert.deepEqual(cols, []);
});

test('a window far larger than SINK_PART_BYTES is written in bounded memory (spill file), every message once', async (t) => {
    const queue = 'big';
    const N = 4000;
    //  ~2 KiB payloads pushed in one burst: one or two 10 s windows of
    //  8 MiB of raw bytes, parts of at most 64 KiB.
    for (let i = 0; i < N; i += 250) {
        const items = [];
        for (let j = i; j < i + 250; j++)
            items.push({ queue, partition: `p${j % 13}`, transactionId: `t-${j}`,
                         payload: { n: j, pad: `${j}`.padEnd(2000, '.') } });
        await pushItems(broker.url, items);
    }
    const sink = await startSink({ SINK_QUEUES: queue, S3_PREFIX: 'big', SINK_WINDOW: '10s',
                                   SINK_PART_BYTES: '65536', SINK_COMPRESSION: 'snappy' });
    let metrics = '';
    await waitFor(async () => {
        metrics = await (await fetch(`${sink.url}/metrics`)).text();
        const staged = /queen_sink_messages_staged (\d+)/.exec(metrics);
        return staged && Number(staged[1]) === N && /queen_sink_staged_windows\{queue="big"\} 0/.test(metrics)
            && /queen_sink_committed_window_ms\{queue="big"\} [1-9]/.test(metrics);
    }, 90000, 250);
    assert.equal(await stopSink(sink), 0, sink.logs());
    const dir = await download('big/');
    await checkExactlyOnce(dir, queue, N);
    const perWindow = await rows(`SELECT regexp_extract(filename, 'part-([0-9TZ]+)-', 1) AS w, count(DISTINCT filename) AS parts,
            sum(length(message_id) + length(transaction_id) + length("partition") + coalesce(length(trace_id), 0)
                + octet_length(payload::VARCHAR::BLOB) + 32) AS raw
            FROM read_parquet('${dir}/**/*.parquet', filename = true) GROUP BY 1 ORDER BY raw DESC`);
    const biggest = Number(perWindow[0].raw);
    assert.ok(biggest > 4 * 1024 * 1024, `the biggest window holds ${biggest} raw bytes`);
    //  Each part holds at most 64 KiB of raw bytes: many parts per window.
    assert.ok(Number(perWindow[0].parts) >= Math.floor(biggest / 65536), JSON.stringify(perWindow));
    const peak = Number(/queen_sink_window_memory_peak_bytes (\d+)/.exec(metrics)?.[1]);
    //  The index (~150 bytes a message), one staged kv value (< 1 MiB) and
    //  one part with its file; never the window.
    assert.ok(peak > 0 && peak < 3 * 1024 * 1024, `memory peak ${peak} for a window of ${biggest} raw bytes`);
    assert.ok(peak < biggest / 2, `memory peak ${peak} for a window of ${biggest} raw bytes`);
    t.diagnostic(`memory peak ${peak} bytes; biggest window ${biggest} raw bytes in ${perWindow[0].parts} parts`);
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

test('SIGKILLed before a PUT, after a PUT before the commit, mid-multipart, restarted: still exactly once', async () => {
    const queue = 'crashy';
    const prefix = 'crash';
    //  Messages over several windows: five pushes a second apart.
    let pushed = 0;
    for (let round = 0; round < 5; round++) {
        await push(queue, 400, 25, pushed);
        pushed += 400;
        await sleep(1000);
    }
    //  Every object of more than 4 KiB goes up in 4 KiB parts.
    const env = { SINK_QUEUES: queue, S3_PREFIX: prefix, SINK_MULTIPART_BYTES: '4096', SINK_FORMAT: 'parquet',
                  SINK_COMPRESSION: 'snappy' };
    const points = [
        //  Before the first PUT of an object: the request never arrives.
        { name: 'before PUT', match: (m, u) => m === 'PUT' || (m === 'POST' && u.includes('uploads')), drop: true },
        //  After the object is complete, at its verification (HEAD), before the commit.
        { name: 'after PUT before commit', match: (m) => m === 'HEAD', drop: false },
        //  Mid-multipart: at the second part.
        { name: 'mid-multipart', match: (m, u) => m === 'PUT' && u.includes('partNumber=2'), drop: true },
    ];
    const etagsAtKill = new Map();
    let kills = 0;
    for (let i = 0; i < 9; i++) {
        const point = points[i % points.length];
        let sink = null;
        let fired = false;
        let pendingKey = null;
        s3.setHook((method, url) => {
            if (fired || !sink || !point.match(method, url))
                return undefined;
            fired = true;
            sink.proc.kill('SIGKILL');
            if (method === 'HEAD')
                pendingKey = decodeURIComponent(url.split('?')[0].replace(/^\/lake\//, ''));
            return point.drop ? 'drop' : undefined;
        });
        sink = await startSink(env);
        const ended = await Promise.race([sink.exited, sleep(20000).then(() => 'running')]);
        s3.setHook(null);
        if (ended === 'running') {
            //  Nothing left to write at this point of the run.
            await stopSink(sink);
            break;
        }
        kills++;
        if (pendingKey) {
            //  The object written just before the kill: its ETag now.
            const keys = await s3.listKeys(pendingKey);
            if (keys.includes(pendingKey))
                etagsAtKill.set(pendingKey, (await s3.getObject(pendingKey)).toString('base64'));
        }
    }
    assert.ok(kills >= 3, `the sink was killed ${kills} times`);
    //  A last run without faults finishes the job.
    const sink = await startSink(env);
    await waitFor(async () => {
        const m = await (await fetch(`${sink.url}/metrics`)).text();
        const left = await fetch(`${broker.url}/api/v1/pop/queue/${queue}?consumerGroup=queen-sink&wait=false&batch=1`);
        return left.status === 204 && /queen_sink_staged_windows\{queue="crashy"\} 0/.test(m);
    }, 60000, 250);
    assert.equal(await stopSink(sink), 0, sink.logs());
    const dir = await download(`${prefix}/`);
    await checkExactlyOnce(dir, queue, pushed);
    //  No duplicate objects: per window the parts are 0..k-1, and no file
    //  holds a message another file holds (checked above by count = distinct).
    const keys = await s3.listKeys(`${prefix}/`);
    const byWindow = new Map();
    for (const k of keys) {
        const m = /part-(\d{8}T\d{6}Z)-(\d{5})\.parquet$/.exec(k);
        assert.ok(m, k);
        byWindow.set(m[1], [...(byWindow.get(m[1]) || []), Number(m[2])]);
    }
    for (const [w, parts] of byWindow)
        assert.deepEqual(parts.sort((a, b) => a - b), parts.map((_, i) => i), `window ${w}`);
    //  An object written before a kill and rewritten after has the same bytes.
    for (const [key, bytes] of etagsAtKill)
        assert.equal((await s3.getObject(key)).toString('base64'), bytes, key);
    //  Every object is a whole Parquet file (DuckDB read them all above).
    for (const k of keys) {
        const b = fs.readFileSync(path.join(dir, k));
        assert.equal(b.subarray(0, 4).toString(), 'PAR1', k);
        assert.equal(b.subarray(b.length - 4).toString(), 'PAR1', k);
    }
});

test('the bucket unavailable for a while: the sink waits, reports failing, resumes; nothing lost', async () => {
    const queue = 'outage';
    const sink = await startSink({ SINK_QUEUES: queue, S3_PREFIX: 'outage', SINK_FORMAT: 'jsonl' });
    s3.down();
    await push(queue, 500, 10);
    await sleep(1000);
    await push(queue, 500, 10, 500);
    //  Windows are due, the bucket refuses: health says failing.
    await waitFor(async () => (await fetch(`${sink.url}/health`)).status === 503, 20000, 200);
    assert.ok(s3.stats.refused > 0);
    s3.up();
    await waitFor(async () => {
        const m = await (await fetch(`${sink.url}/metrics`)).text();
        return /queen_sink_messages_staged \d+/.test(m) && /queen_sink_staged_windows\{queue="outage"\} 0/.test(m)
            && (await fetch(`${sink.url}/health`)).status === 200;
    }, 60000, 200);
    assert.equal(await stopSink(sink), 0, sink.logs());
    const dir = await download('outage/');
    await checkExactlyOnce(dir, queue, 1000, 'jsonl.gz');
    for (const k of await s3.listKeys('outage/'))
        assert.match(k, /^outage\/queue=outage\/dt=[\d-]+\/hour=\d\d\/part-\d{8}T\d{6}Z-00000\.jsonl\.gz$/);
});

test('a message for a window already committed goes under late/ (SINK_LATE=prefix)', async () => {
    const queue = 'latecomers';
    const sink = await startSink({ SINK_QUEUES: queue, S3_PREFIX: 'lt', SINK_LATE: 'prefix' });
    //  Created now, claimable in 4 s: its window is committed by then.
    await pushItems(broker.url, [{ queue, partition: 'slow', transactionId: 'late-1', payload: { n: 0 }, delayMs: 4000 }]);
    for (let i = 1; i <= 6; i++) {
        await pushItems(broker.url, [{ queue, partition: 'fast', transactionId: `on-time-${i}`, payload: { n: i } }]);
        await sleep(1000);
    }
    await waitFor(async () => {
        const m = await (await fetch(`${sink.url}/metrics`)).text();
        return /queen_sink_late_messages 1/.test(m) && /queen_sink_staged_windows\{queue="latecomers"\} 0/.test(m);
    }, 30000, 200);
    assert.equal(await stopSink(sink), 0, sink.logs());
    const late = await s3.listKeys('lt/late/');
    assert.equal(late.length, 1);
    assert.match(late[0], /^lt\/late\/queue=latecomers\/dt=/);
    const dir = await download('lt/');
    const got = await rows(`SELECT transaction_id AS t FROM read_parquet('${dir}/lt/late/**/*.parquet')`);
    assert.deepEqual(got.map((r) => r.t), ['late-1']);
    await checkExactlyOnce(dir, queue, 7);
});

test('two queues in one sink; a late message goes into the next window\'s object (SINK_LATE=next)', async () => {
    const sink = await startSink({ SINK_QUEUES: 'left, right', S3_PREFIX: 'two' });
    //  Created now, claimable in 4 s: its own window is committed by then.
    await pushItems(broker.url, [{ queue: 'left', partition: 'slow', transactionId: 'late-1', payload: { n: 0 }, delayMs: 4000 }]);
    for (let i = 1; i <= 6; i++) {
        await pushItems(broker.url, [
            { queue: 'left', partition: 'fast', transactionId: `l-${i}`, payload: { n: i } },
            { queue: 'right', partition: `r${i % 2}`, transactionId: `r-${i}`, payload: { n: i - 1 } },
        ]);
        await sleep(1000);
    }
    await waitFor(async () => {
        const m = await (await fetch(`${sink.url}/metrics`)).text();
        return /queen_sink_late_messages 1/.test(m) && /queen_sink_messages_staged 13/.test(m)
            && /queen_sink_staged_windows\{queue="left"\} 0/.test(m) && /queen_sink_staged_windows\{queue="right"\} 0/.test(m);
    }, 30000, 200);
    assert.equal(await stopSink(sink), 0, sink.logs());
    assert.deepEqual(await s3.listKeys('two/late/'), []);
    const dir = await download('two/');
    await checkExactlyOnce(dir, 'left', 7);
    await checkExactlyOnce(dir, 'right', 6);
    //  The late message sits in an object of a window after its own.
    const [r] = await rows(`SELECT filename AS f, epoch_ms(created_at) AS c FROM
            read_parquet('${dir}/**/*.parquet', filename = true) WHERE transaction_id = 'late-1'`);
    const label = /part-(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z-/.exec(r.f);
    const objectWindow = Date.UTC(+label[1], +label[2] - 1, +label[3], +label[4], +label[5], +label[6]);
    const ownWindow = Math.floor(Number(r.c) / 2000) * 2000;
    assert.ok(objectWindow > ownWindow, `${r.f}: own window ${ownWindow}`);
});

test('a 100,000-partition queue gives one object per window', async () => {
    const queue = 'wide';
    const total = 100000;
    for (let i = 0; i < total; i += 5000) {
        const items = [];
        for (let j = i; j < i + 5000; j++)
            items.push({ queue, partition: `p${j}`, transactionId: `w-${j}`, payload: { n: j } });
        await pushItems(broker.url, items, { timeoutMs: 120000 });
    }
    const sink = await startSink({ SINK_QUEUES: queue, S3_PREFIX: 'wide', SINK_WINDOW: '10s', SINK_LATENESS_MS: '1000',
                                   SINK_BATCH: '5000', SINK_PARTITIONS: '1000' });
    await waitFor(async () => {
        const m = await (await fetch(`${sink.url}/metrics`)).text();
        const staged = /queen_sink_messages_staged (\d+)/.exec(m);
        return staged && Number(staged[1]) === total && /queen_sink_staged_windows\{queue="wide"\} 0/.test(m);
    }, 240000, 500);
    assert.equal(await stopSink(sink), 0, sink.logs());
    const dir = await download('wide/');
    await checkExactlyOnce(dir, queue, total);
    const [r] = await rows(`SELECT count(DISTINCT filename) AS files, count(DISTINCT time_bucket(INTERVAL 10 SECOND, created_at)) AS windows,
            count(DISTINCT partition) AS parts FROM read_parquet('${dir}/**/*.parquet', filename = true)`);
    assert.equal(Number(r.parts), total);
    assert.equal(Number(r.files), Number(r.windows));
    assert.ok(Number(r.files) <= 30, `${r.files} objects`);
});

test('SINK_IN_BROKER: the same sink actor inside the broker process', async () => {
    const queue = 'inside';
    const port = await freePort();
    const inner = await startBroker({ port, env: { ...s3.env, SINK_IN_BROKER: 'true', SINK_QUEUES: queue,
        QUEEN_URL: `http://127.0.0.1:${port}`, S3_PREFIX: 'inside', SINK_WINDOW: '2s', SINK_LATENESS_MS: '500',
        SINK_WAIT_MS: '300', SINK_FORMAT: 'jsonl', SINK_COMPRESSION: 'none' } });
    try {
        await warmUp(inner.url);
        for (let i = 0; i < 300; i += 100) {
            const items = [];
            for (let j = i; j < i + 100; j++)
                items.push({ queue, partition: `p${j % 7}`, transactionId: `in-${j}`, payload: { n: j } });
            await pushItems(inner.url, items);
        }
        await waitFor(async () => {
            const dir = await download('inside/');
            const files = fs.readdirSync(dir, { recursive: true }).filter((f) => f.endsWith('.jsonl'));
            let lines = 0;
            for (const f of files)
                lines += fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean).length;
            return lines === 300;
        }, 30000, 500);
        const dir = await download('inside/');
        await checkExactlyOnce(dir, queue, 300, 'jsonl');
        const prom = await (await fetch(`${inner.url}/metrics/prometheus`)).text();
        assert.match(prom, /queen_sink_messages_staged_total 300/);
    } finally {
        assert.equal(await inner.stop(), 0, inner.logs());
    }
    //  A bad setting stops the broker at start with the reason.
    const bad = await startBroker({ env: { ...s3.env, SINK_IN_BROKER: 'true', SINK_QUEUES: queue, SINK_LATE: 'never' },
                                    expectHealthy: false, timeoutMs: 3000 }).catch((e) => e);
    assert.ok(bad instanceof Error);
    assert.match(bad.message, /SINK_LATE: expected next or prefix/);
});

test('through queen-proxy with a tenant key (SINK_AUTH_TOKEN)', async () => {
    const SECRET = 'sink-it-proxy-secret-0123456789abcdef-0123';
    const proxyBin = path.join(path.dirname(BIN), 'queen-proxy');
    const up = await startBroker({ env: { TENANT_ASSERTION_SECRET: SECRET } });
    let proxy;
    try {
        const { spawnSync } = await import('node:child_process');
        const { PG_HOST, PG_PORT } = await import('./lib.mjs');
        const r = spawnSync(proxyBin, ['create-tenant', 'acme'], { encoding: 'utf8', timeout: 30000,
            env: { ...process.env, PG_HOST, PG_PORT: String(PG_PORT), PG_USER: 'postgres', PG_PASSWORD: 'postgres', PG_DB: up.db } });
        assert.equal(r.status, 0, r.stderr);
        const key = JSON.parse(r.stdout).key;
        proxy = await startBroker({ bin: proxyBin, db: up.db, env: { TENANT_ASSERTION_SECRET: SECRET, QUEEN_UPSTREAMS: up.url } });
        await waitFor(async () => (await fetch(`${proxy.url}/proxy/v1/whoami`, { headers: { Authorization: `Bearer ${key}` } })).status === 200, 5000);
        //  Without the key the broker refuses the sink's calls; with it, through the proxy, it works.
        const items = [];
        for (let j = 0; j < 50; j++)
            items.push({ queue: 'tenanted', partition: `p${j % 3}`, transactionId: `x-${j}`, payload: { n: j } });
        const res = await fetch(`${proxy.url}/api/v1/push`, { method: 'POST', body: JSON.stringify({ items }),
            headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json' } });
        assert.equal(res.status, 201, await res.text());
        const sink = await startSink({ QUEEN_URL: proxy.url, SINK_AUTH_TOKEN: key, SINK_QUEUES: 'tenanted', S3_PREFIX: 'tenanted' });
        await waitFor(async () => {
            const m = await (await fetch(`${sink.url}/metrics`)).text();
            return /queen_sink_messages_staged 50/.test(m) && /queen_sink_staged_windows\{queue="tenanted"\} 0/.test(m);
        }, 30000, 200);
        assert.equal(await stopSink(sink), 0, sink.logs());
        await checkExactlyOnce(await download('tenanted/'), 'tenanted', 50);
    } finally {
        await proxy?.stop();
        await up.stop();
    }
});
