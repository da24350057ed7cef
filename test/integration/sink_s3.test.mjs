//  test/integration/sink_s3.test.mjs - the sink's S3 client
//  (actors/sink/s3.c through build/test/s3-tool) against s3rver behind a
//  proxy that checks every Signature V4 with the AWS SDK's signer
//  (s3_fixture.mjs). Needs no broker.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { BIN, sleep } from './lib.mjs';
import { startBucket } from './s3_fixture.mjs';

const execFileP = promisify(execFile);
const TOOL = path.join(path.dirname(BIN), 'test', 's3-tool');
let s3;

before(async () => { s3 = await startBucket(); });
after(async () => { await s3.stop(); });

async function tool (args, env = {}) {
    try {
        const r = await execFileP(TOOL, args, { env: { ...process.env, ...s3.env, ...env } });
        return { code: 0, out: r.stdout, err: r.stderr };
    } catch (e) {
        return { code: e.code, out: e.stdout, err: e.stderr };
    }
}

function field (out, name) {
    const m = new RegExp(`${name}=(\\S*)`).exec(out);
    return m ? m[1] : null;
}

function tmpFile (name, data) {
    const f = path.join(s3.dir, '..', `${path.basename(s3.dir)}-${name}`);
    fs.writeFileSync(f, data);
    return f;
}

test('PUT, HEAD, GET and LIST with Hive keys, signed as the AWS SDK signs', async () => {
    const data = crypto.randomBytes(100000);
    const key = 'lake/queue=a%20b/dt=2025-12-01/hour=18/part-20251201T180000Z-00000.parquet';
    const before = s3.stats.requests;
    const put = await tool(['put', key, tmpFile('put', data)]);
    assert.equal(put.code, 0, put.err);
    assert.equal(field(put.out, 'etag'), crypto.createHash('md5').update(data).digest('hex'));
    //  The AWS SDK reads back what we wrote, under exactly that key.
    assert.deepEqual(await s3.listKeys('lake/'), [key]);
    assert.ok((await s3.getObject(key)).equals(data));
    const head = await tool(['head', key]);
    assert.equal(head.code, 0, head.err);
    assert.equal(field(head.out, 'length'), '100000');
    const out = tmpFile('get', '');
    const get = await tool(['get', key, out]);
    assert.equal(get.code, 0, get.err);
    assert.ok(fs.readFileSync(out).equals(data));
    const list = await tool(['list', 'lake/queue=a%20b/']);
    assert.equal(list.code, 0, list.err);
    assert.equal(list.out, `${key}\n`);
    assert.equal(s3.stats.badSignatures, 0);
    assert.ok(s3.stats.requests - before >= 4);
    const missing = await tool(['head', 'lake/nothing']);
    assert.equal(missing.code, 1);
    assert.equal(field(missing.out, 'status'), '404');
    const del = await tool(['delete', key]);
    assert.equal(del.code, 0, del.err);
    assert.deepEqual(await s3.listKeys('lake/'), []);
});

test('LIST pages through more than 1000 keys', async () => {
    const put = await tool(['put-many', 'many/k-', '1005', tmpFile('small', 'x')], { S3_RETRIES: '5' });
    assert.equal(put.code, 0, put.err);
    const list = await tool(['list', 'many/']);
    assert.equal(list.code, 0, list.err);
    const keys = list.out.trim().split('\n');
    assert.equal(keys.length, 1005);
    assert.equal(new Set(keys).size, 1005);
    assert.equal(keys[0], 'many/k-00000');
    assert.equal(keys[1004], 'many/k-01004');
});

test('multipart upload: three parts, the SDK reads the whole object', async () => {
    const data = crypto.randomBytes(5 * 1024 * 1024 * 2 + 12345);
    const key = 'mpu/queue=q/part-00000.parquet';
    const r = await tool(['mpu', key, tmpFile('mpu', data), String(5 * 1024 * 1024)]);
    assert.equal(r.code, 0, r.err);
    assert.equal(field(r.out, 'length'), String(data.length));
    assert.ok((await s3.getObject(key)).equals(data));
    assert.equal(s3.stats.badSignatures, 0);
});

test('virtual-host style addressing', async () => {
    //  s3rver maps <bucket>.s3.localhost to the bucket; curl resolves
    //  *.localhost to the loopback address. (Straight to s3rver: the
    //  signature-checking proxy speaks path style only.)
    const port = new URL(s3.direct).port;
    const env = { S3_ENDPOINT: `http://s3.localhost:${port}`, S3_PATH_STYLE: '0' };
    const r = await tool(['put', 'vhost/object.jsonl', tmpFile('vh', '{"a":1}\n')], env);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(await s3.listKeys('vhost/'), ['vhost/object.jsonl']);
    const h = await tool(['head', 'vhost/object.jsonl'], env);
    assert.equal(field(h.out, 'length'), '8');
});

test('bad credentials are refused with the S3 error', async () => {
    const badSecret = await tool(['check'], { S3_SECRET_ACCESS_KEY: 'not-the-secret' });
    assert.equal(badSecret.code, 1);
    assert.match(badSecret.err, /HTTP 403 SignatureDoesNotMatch/);
    const badKey = await tool(['check'], { S3_ACCESS_KEY_ID: 'NOBODY' });
    assert.equal(badKey.code, 1);
    assert.match(badKey.err, /HTTP 403 InvalidAccessKeyId/);
    const good = await tool(['check']);
    assert.equal(good.code, 0, good.err);
    const badEndpoint = await tool(['check'], { S3_ENDPOINT: 'ftp://x' });
    assert.equal(badEndpoint.code, 2);
    assert.match(badEndpoint.err, /S3_ENDPOINT must be http/);
});

test('5xx answers are retried with backoff, then the request succeeds', async () => {
    s3.failNext(2);
    const failedBefore = s3.stats.failed503;
    const r = await tool(['put', 'retry/a', tmpFile('r', 'abc')], { S3_RETRIES: '3', S3_BACKOFF_MS: '50' });
    assert.equal(r.code, 0, r.err);
    assert.equal(field(r.out, 'attempts'), '3');
    assert.equal(s3.stats.failed503 - failedBefore, 2);
    s3.failNext(5);
    const gaveUp = await tool(['put', 'retry/b', tmpFile('r', 'abc')], { S3_RETRIES: '2', S3_BACKOFF_MS: '20' });
    assert.equal(gaveUp.code, 1);
    assert.match(gaveUp.err, /HTTP 503 SlowDown/);
    assert.equal(field(gaveUp.out, 'attempts'), '3');
    s3.failNext(0);
});

test('a bucket that is down for a while: network errors are retried until it is back', async () => {
    s3.down();
    const started = Date.now();
    const pending = tool(['put', 'down/a', tmpFile('d', 'abc')], { S3_RETRIES: '20', S3_BACKOFF_MS: '100' });
    await sleep(1500);
    assert.ok(s3.stats.refused > 0);
    s3.up();
    const r = await pending;
    assert.equal(r.code, 0, r.err);
    assert.ok(Number(field(r.out, 'attempts')) > 1);
    assert.ok(Date.now() - started >= 1500);
    assert.deepEqual(await s3.listKeys('down/'), ['down/a']);
});
