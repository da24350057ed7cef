//  test/integration/sink_abort.test.mjs - AbortMultipartUpload of the
//  sink's S3 client (actors/sink/s3.c through build/test/s3-tool) against
//  moto's S3 server, which implements it (s3rver, the bucket of the other
//  sink tests, answers 405). moto_server comes with the machine's Python
//  (pip moto); the test fails when it cannot start it. Needs no broker.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { S3Client, CreateBucketCommand, ListMultipartUploadsCommand, ListPartsCommand,
    GetObjectCommand } from '@aws-sdk/client-s3';
import { BIN, freePort, waitFor } from './lib.mjs';

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
