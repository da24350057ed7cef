//  test/integration/s3_fixture.mjs - an S3 bucket for the sink's tests.
//
//  startBucket() runs s3rver (npm) on a free port in a temp directory with
//  one bucket, behind a small proxy of our own that
//    - checks every request's Signature V4 against the AWS SDK's signer
//      (@smithy/signature-v4) with the bucket's secret, and answers 403
//      SignatureDoesNotMatch when it differs (s3rver checks only the
//      access key id),
//    - can answer 503 to the next N requests (failNext(n)),
//    - can go down (connections reset) and come back (down(), up()),
//    - runs a hook on each request (setHook: a test kills the sink at an
//      exact request, or drops it),
//    - counts requests by method.
//  Returns { endpoint (the proxy), direct (s3rver), bucket, dir, env, stats,
//  failNext, down, up, listKeys, getObject, stop }.

import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { SignatureV4 } from '@smithy/signature-v4';
import { S3Client, ListObjectsCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { freePort } from './lib.mjs';

export const ACCESS_KEY = 'S3RVER';
export const SECRET_KEY = 'S3RVER';

class Sha256 {
    constructor (secret) {
        this.h = secret ? crypto.createHmac('sha256', secret) : crypto.createHash('sha256');
    }
    update (data) { this.h.update(data); }
    async digest () { return new Uint8Array(this.h.digest()); }
}

function parseAmzDate (s) {
    const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s || '');
    return m ? new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : null;
}

async function expectedAuthorization (req, body) {
    const auth = req.headers.authorization || '';
    const cred = /Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request/.exec(auth);
    const signed = /SignedHeaders=([^,]+)/.exec(auth);
    if (!cred || !signed)
        return null;
    const url = new URL(req.url, 'http://x');
    const query = {};
    for (const [k, v] of url.searchParams)
        query[k] = v;
    const headers = {};
    for (const h of signed[1].split(';'))
        headers[h] = req.headers[h];
    const [hostname, port] = (req.headers.host || '').split(':');
    const signer = new SignatureV4({ credentials: { accessKeyId: cred[1], secretAccessKey: SECRET_KEY },
        region: cred[3], service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: false });
    const rawPath = req.url.split('?')[0];
    const signedReq = await signer.sign({ method: req.method, protocol: 'http:', hostname,
        port: port ? Number(port) : undefined, path: rawPath, query, headers, body },
    { signingDate: parseAmzDate(req.headers['x-amz-date']) });
    return signedReq.headers.authorization;
}

export async function startBucket ({ bucket = 'lake', tmp } = {}) {
    const dir = fs.mkdtempSync(path.join(tmp || process.env.QN_TMP || os.tmpdir(), 's3-'));
    const directPort = await freePort();
    const server = new S3rver({ port: directPort, address: '127.0.0.1', directory: dir, silent: true,
        serviceEndpoint: 'localhost', configureBuckets: [{ name: bucket }] });
    await server.run();

    const stats = { requests: 0, byMethod: {}, badSignatures: 0, failed503: 0, refused: 0 };
    let fail = 0;
    let isDown = false;
    let hook = null;        //  (method, url) => 'drop' | undefined, before forwarding
    const proxy = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', async () => {
            if (isDown) {
                stats.refused++;
                req.socket.destroy();
                return;
            }
            stats.requests++;
            stats.byMethod[req.method] = (stats.byMethod[req.method] || 0) + 1;
            const body = Buffer.concat(chunks);
            if (fail > 0) {
                fail--;
                stats.failed503++;
                res.writeHead(503, { 'content-type': 'application/xml' });
                res.end('<Error><Code>SlowDown</Code><Message>test fault</Message></Error>');
                return;
            }
            if (hook && hook(req.method, req.url) === 'drop') {
                req.socket.destroy();
                return;
            }
            let want = null;
            try {
                want = await expectedAuthorization(req, body);
            } catch (e) {
                want = `error: ${e.message}`;
            }
            if (want !== req.headers.authorization) {
                stats.badSignatures++;
                res.writeHead(403, { 'content-type': 'application/xml' });
                res.end('<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we ' +
                        'calculated does not match the signature you provided.</Message></Error>');
                return;
            }
            const up = http.request({ host: '127.0.0.1', port: directPort, method: req.method,
                path: req.url, headers: { ...req.headers, host: `127.0.0.1:${directPort}` } }, (ur) => {
                res.writeHead(ur.statusCode, ur.headers);
                ur.pipe(res);
            });
            up.on('error', () => req.socket.destroy());
            up.end(body);
        });
    });
    const proxyPort = await freePort();
    await new Promise((resolve) => proxy.listen(proxyPort, '127.0.0.1', resolve));
    const sockets = new Set();
    proxy.on('connection', (s) => {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        if (isDown) {
            stats.refused++;
            s.destroy();
        }
    });

    const endpoint = `http://127.0.0.1:${proxyPort}`;
    const direct = `http://127.0.0.1:${directPort}`;
    const sdk = new S3Client({ endpoint: direct, region: 'us-east-1', forcePathStyle: true,
        credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY } });
    return {
        endpoint, direct, bucket, dir, stats,
        env: { S3_ENDPOINT: endpoint, S3_BUCKET: bucket, S3_REGION: 'us-east-1',
               S3_ACCESS_KEY_ID: ACCESS_KEY, S3_SECRET_ACCESS_KEY: SECRET_KEY, S3_PATH_STYLE: '1' },
        failNext (n) { fail = n; },
        //  fn(method, url) runs for each request before it is forwarded;
        //  returning 'drop' resets the connection instead. null removes it.
        setHook (fn) { hook = fn; },
        down () {
            isDown = true;
            for (const s of sockets)
                s.destroy();
        },
        up () { isDown = false; },
        async listKeys (prefix = '') {
            //  ListObjects v1 with Marker (s3rver's v2 continuation tokens
            //  fail on current Node).
            const keys = [];
            let marker;
            for (;;) {
                const r = await sdk.send(new ListObjectsCommand({ Bucket: bucket, Prefix: prefix, Marker: marker }));
                for (const o of r.Contents || [])
                    keys.push(o.Key);
                if (!r.IsTruncated || !(r.Contents || []).length)
                    break;
                marker = r.Contents[r.Contents.length - 1].Key;
            }
            return keys.sort();
        },
        async getObject (key) {
            const r = await sdk.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
            return Buffer.from(await r.Body.transformToByteArray());
        },
        async stop () {
            sdk.destroy();
            for (const s of sockets)
                s.destroy();
            await new Promise((resolve) => proxy.close(resolve));
            await server.close();
            fs.rmSync(dir, { recursive: true, force: true });
        },
    };
}
