//  test/integration/sink_abort.test.mjs - AbortMultipartUpload of the
//  sink's S3 client (actors/sink/s3.c through build/test/s3-tool) against
//  moto's S3 server, which implements it (s3rver, the bucket of the other
//  sink tests, answers 405). moto_server comes with the machine's Python
//  (pip moto); the test fails when it cannot start it. The last test runs
//  queen-sink against a broker and moto behind a proxy that fails one part
//  upload, so the sink itself aborts, and checks exactly once after it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { S3Client, CreateBucketCommand, ListMultipartUploadsCommand, ListPartsCommand,
    GetObjectCommand } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import { BIN, freePort, pushItems, startBroker, waitFor, warmUp } from './lib.mjs';

const execFileP = promisify(execFile);
const TOOL = path.join(path.dirname(BIN), 'test', 's3-tool');
let moto;
let endpoint;
let sdk;
let output = '';

function motoServer () {
    for (const dir of (process.env.PATH || '').split(':').concat(['/root/.pyenv/shims', '/usr/local/bin']))
        if (dir && fs.existsSync(path.join(dir, 'moto_server')))
            return path.join(dir, 'moto_server');
    throw new Error('moto_server not found (pip moto: the machine\'s Python has it)');
}

before(async () => {
    const port = await freePort();
    endpoint = `http://127.0.0.1:${port}`;
    moto = spawn(motoServer(), ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    moto.stdout.on('data', (c) => { output += c; });
    moto.stderr.on('data', (c) => { output += c; });
    await waitFor(async () => {
        if (moto.exitCode !== null)
            throw new Error(`moto_server exited: ${output}`);
        return (await fetch(`${endpoint}/`).catch(() => null)) !== null;
    }, 60000, 200);
    sdk = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true,
        credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' } });
    await sdk.send(new CreateBucketCommand({ Bucket: 'lake' }));
});

after(() => { moto?.kill('SIGKILL'); });

async function tool (args) {
    const env = { ...process.env, S3_ENDPOINT: endpoint, S3_BUCKET: 'lake', S3_REGION: 'us-east-1',
        S3_ACCESS_KEY_ID: 'testing', S3_SECRET_ACCESS_KEY: 'testing', S3_PATH_STYLE: '1' };
    try {
        const r = await execFileP(TOOL, args, { env });
        return { code: 0, out: r.stdout, err: r.stderr };
    } catch (e) {
        return { code: e.code, out: e.stdout, err: e.stderr };
    }
}

const uploads = async (key) => ((await sdk.send(new ListMultipartUploadsCommand({ Bucket: 'lake', Prefix: key })))
    .Uploads || []).map((u) => u.UploadId);

test('AbortMultipartUpload: the open upload and its parts are gone, nothing is visible', async () => {
    const key = 'queue=q/dt=2026-12-01/hour=18/part-20261201T180000Z-00000.parquet';
    const started = await tool(['mpu-start', key]);
    assert.equal(started.code, 0, started.err);
    const id = /upload=(\S+)/.exec(started.out)?.[1];
    assert.ok(id, started.out);
    //  Open: listed, with its part.
    assert.deepEqual(await uploads(key), [id]);
    const parts = await sdk.send(new ListPartsCommand({ Bucket: 'lake', Key: key, UploadId: id }));
    assert.deepEqual((parts.Parts || []).map((p) => [p.PartNumber, p.Size]), [[1, 3]]);

    const aborted = await tool(['mpu-abort-id', key, id]);
    assert.equal(aborted.code, 0, aborted.err);
    assert.match(aborted.out, /^status=204 /);
    assert.deepEqual(await uploads(key), []);
    //  Its parts are gone, a part sent to it now is refused (moto answers
    //  500 there), and no object appeared.
    await assert.rejects(sdk.send(new ListPartsCommand({ Bucket: 'lake', Key: key, UploadId: id })),
        (e) => e.name === 'NoSuchUpload');
    const late = await tool(['mpu-part', key, id]);
    assert.equal(late.code, 1, late.out);
    assert.doesNotMatch(late.out, /^status=2/);
    await assert.rejects(sdk.send(new GetObjectCommand({ Bucket: 'lake', Key: key })), (e) => e.name === 'NoSuchKey');
    //  Aborting it again, or an upload that never was: S3's own error.
    const again = await tool(['mpu-abort-id', key, id]);
    assert.equal(again.code, 1);
    assert.match(again.err, /NoSuchUpload/);
});

test('the client\'s own abort path (mpu-abort: create, one part, abort) leaves no upload behind', async () => {
    const key = 'abort-path/part-00000.parquet';
    const r = await tool(['mpu-abort', key]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^status=204 /);
    assert.deepEqual(await uploads(key), []);
    await assert.rejects(sdk.send(new GetObjectCommand({ Bucket: 'lake', Key: key })), (e) => e.name === 'NoSuchKey');
});

//  A proxy in front of moto: forwards everything, records each request
//  (method, query), and answers 500 to the first UploadPart with
//  partNumber=2 (the sink runs with S3_RETRIES=0, so that part fails).
async function faultProxy () {
    const log = [];
    let failed = false;
    const server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
            const url = new URL(req.url, 'http://x');
            log.push(`${req.method} ${url.search}`);
            if (!failed && req.method === 'PUT' && url.searchParams.get('partNumber') === '2') {
                failed = true;
                res.writeHead(500, { 'content-type': 'application/xml' });
                res.end('<Error><Code>InternalError</Code><Message>test fault</Message></Error>');
                return;
            }
            const up = http.request(`${endpoint}${req.url}`, { method: req.method, headers: req.headers }, (r) => {
                res.writeHead(r.statusCode, r.headers);
                r.pipe(res);
            });
            up.on('error', () => res.destroy());
            up.end(Buffer.concat(chunks));
        });
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    return { url: `http://127.0.0.1:${server.address().port}`, log, failed: () => failed, close: () => server.close() };
}

test('queen-sink aborts a multipart upload whose part failed, writes the window again, every message once', async () => {
    const broker = await startBroker();
    const proxy = await faultProxy();
    let sink;
    try {
        await warmUp(broker.url);
        const queue = 'aborty';
        //  ~11 MiB of JSONL over one or two 10 s windows: at least one object
        //  above 5 MiB, S3's smallest part but the last, goes up in parts.
        const N = 1100;
        for (let i = 0; i < N; i += 100)
            await pushItems(broker.url, Array.from({ length: 100 }, (_, k) => ({ queue, partition: `p${(i + k) % 5}`,
                transactionId: `t-${i + k}`, payload: { n: i + k, pad: 'x'.repeat(10000) } })));
        const port = await freePort();
        let out = '';
        sink = spawn(path.join(path.dirname(BIN), 'queen-sink'), [], { env: { ...process.env,
            QUEEN_URL: broker.url, SINK_PORT: String(port), SINK_QUEUES: queue, SINK_WINDOW: '10s',
            SINK_LATENESS_MS: '500', SINK_WAIT_MS: '300', SINK_FORMAT: 'jsonl', SINK_COMPRESSION: 'none',
            SINK_MULTIPART_BYTES: String(5 * 1024 * 1024), S3_RETRIES: '0', S3_ENDPOINT: proxy.url, S3_BUCKET: 'lake',
            S3_PREFIX: 'e2e', S3_REGION: 'us-east-1', S3_ACCESS_KEY_ID: 'testing', S3_SECRET_ACCESS_KEY: 'testing',
            S3_PATH_STYLE: 'true' }, stdio: ['ignore', 'pipe', 'pipe'] });
        sink.stdout.on('data', (c) => { out += c; });
        sink.stderr.on('data', (c) => { out += c; });
        await waitFor(async () => {
            if (sink.exitCode !== null)
                throw new Error(`queen-sink exited:\n${out}`);
            const m = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text(), () => '');
            return new RegExp(`queen_sink_messages_staged ${N}\\b`).test(m)
                && /queen_sink_staged_windows\{queue="aborty"\} 0/.test(m);
        }, 180000, 250).catch((e) => {
            throw new Error(`${e.message}\nsink:\n${out.slice(-3000)}\nrequests:\n${proxy.log.slice(-30).join('\n')}`);
        });
        //  The fault happened, the sink aborted that upload, then wrote the
        //  window again and completed.
        assert.ok(proxy.failed(), 'a part upload failed');
        const aborts = proxy.log.filter((l) => /^DELETE \?uploadId=/.test(l)).length;
        assert.equal(aborts, 1, proxy.log.join('\n'));
        assert.ok(proxy.log.some((l) => /^POST \?uploadId=/.test(l)), 'a multipart upload completed');
        assert.deepEqual(await uploads('e2e/'), [], 'no upload left open');
        //  Every message exactly once in the bucket.
        const dir = fs.mkdtempSync(path.join(process.env.QN_TMP || os.tmpdir(), 'abort-'));
        const list = await sdk.send(new (await import('@aws-sdk/client-s3')).ListObjectsV2Command({ Bucket: 'lake', Prefix: 'e2e/' }));
        const keys = (list.Contents || []).map((o) => o.Key);
        assert.ok(keys.length >= 1, 'objects written');
        for (const key of keys) {
            assert.match(key, /^e2e\/queue=aborty\/dt=[\d-]+\/hour=\d\d\/part-\d{8}T\d{6}Z-\d{5}\.jsonl$/);
            const r = await sdk.send(new GetObjectCommand({ Bucket: 'lake', Key: key }));
            const file = path.join(dir, key);
            fs.mkdirSync(path.dirname(file), { recursive: true });
            fs.writeFileSync(file, Buffer.from(await r.Body.transformToByteArray()));
        }
        const duck = await (await DuckDBInstance.create(':memory:')).connect();
        const [row] = (await duck.runAndReadAll(`SELECT count(*) AS c, count(DISTINCT message_id) AS d,
                count(DISTINCT (payload->>'n')::INT) AS dn, min((payload->>'n')::INT) AS lo, max((payload->>'n')::INT) AS hi
                FROM read_json('${dir}/**/*.jsonl', format = 'newline_delimited')`)).getRowObjectsJson();
        assert.deepEqual([row.c, row.d, row.dn, row.lo, row.hi].map(Number), [N, N, N, 0, N - 1]);
        fs.rmSync(dir, { recursive: true, force: true });
    } finally {
        sink?.kill('SIGKILL');
        proxy.close();
        await broker.stop();
    }
});
