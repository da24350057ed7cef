//  test/integration/sqs_lib.mjs - helpers for the SQS front door's tests
//  A broker with its SQS door on a free port, signature verification on and
//  the key AKIDEXAMPLE/secret; awscli (Debian's /usr/bin/aws, query
//  protocol), the AWS SDK v3 (JSON 1.0) and a hand-signed raw request
//  (SigV4 written out here, independently of the broker's wire/sigv4.c).
import { execFile } from 'node:child_process';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import { SQSClient } from '@aws-sdk/client-sqs';
import { startBroker, freePort } from './lib.mjs';

export const AKID = 'AKIDEXAMPLE';
export const SECRET = 'secret';
export const ACCOUNT = '000000000000';

//  { broker, sqsPort, endpoint, queueUrl(name) }
export async function startSqsBroker (env = {}) {
    const sqsPort = await freePort();
    const broker = await startBroker({
        env: { SQS_PORT: String(sqsPort), SQS_CREDENTIALS: `${AKID}:${SECRET},AKIDOTHER:other`, ...env },
    });
    const endpoint = `http://127.0.0.1:${sqsPort}`;
    return { broker, sqsPort, endpoint, queueUrl: (name) => `${endpoint}/${ACCOUNT}/${name}` };
}

//  Runs `/usr/bin/aws --endpoint-url E sqs ARGS...`; resolves to
//  { code, out (parsed JSON or text), stderr }.
export function aws (endpoint, args, { secret = SECRET, akid = AKID, timeoutMs = 60000 } = {}) {
    return new Promise((resolve) => {
        execFile('/usr/bin/aws', ['--endpoint-url', endpoint, '--output', 'json', 'sqs', ...args], {
            timeout: timeoutMs,
            env: {
                PATH: process.env.PATH, HOME: process.env.QN_TMP || '/tmp',
                AWS_ACCESS_KEY_ID: akid, AWS_SECRET_ACCESS_KEY: secret, AWS_DEFAULT_REGION: 'us-east-1',
                AWS_PAGER: '', AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
                AWS_MAX_ATTEMPTS: '1',
            },
        }, (err, stdout, stderr) => {
            let out = stdout;
            try { out = stdout.trim() ? JSON.parse(stdout) : null; } catch { /* text */ }
            resolve({ code: err ? (err.code ?? 1) : 0, out, stderr });
        });
    });
}

//  The answer of an awscli command that must succeed (its parsed output).
export function awsOk (r, what) {
    assert.equal(r.code, 0, `${what}: rc ${r.code} ${r.stderr}`);
    return r.out;
}

//  An awscli command that must fail with the SQS error `code`.
export function awsFails (r, code, what) {
    assert.notEqual(r.code, 0, `${what} should fail`);
    assert.match(r.stderr, new RegExp(`\\(${code.replace(/\./g, '\\.')}\\)`), `${what}: ${r.stderr}`);
}

export function sdk (endpoint, { secret = SECRET, akid = AKID } = {}) {
    return new SQSClient({
        endpoint, region: 'us-east-1', maxAttempts: 1,
        credentials: { accessKeyId: akid, secretAccessKey: secret },
    });
}

function hmac (key, data) {
    return crypto.createHmac('sha256', key).update(data).digest();
}

//  A raw SigV4-signed POST to the SQS door. headers: extra ones (all
//  signed). httpDate: the request time goes in a signed HTTP `Date`
//  header instead of X-Amz-Date. Resolves to { status, headers, text }.
export async function signedPost (endpoint, body, { headers = {}, secret = SECRET, akid = AKID,
                                                     date = new Date(), path = '/', httpDate = false } = {}) {
    const url = new URL(path, endpoint);
    const amzDate = date.toISOString().replace(/[-:]/g, '').replace(/\.\d+/, '');
    const day = amzDate.slice(0, 8);
    const when = httpDate ? { date: date.toUTCString() } : { 'x-amz-date': amzDate };
    const h = { host: url.host, ...when, ...Object.fromEntries(
        Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])) };
    const names = Object.keys(h).sort();
    const payloadHash = crypto.createHash('sha256').update(body).digest('hex');
    const canonical = ['POST', url.pathname, '', names.map((n) => `${n}:${String(h[n]).trim()}\n`).join(''),
                       names.join(';'), payloadHash].join('\n');
    const scope = `${day}/us-east-1/sqs/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', amzDate, scope,
                    crypto.createHash('sha256').update(canonical).digest('hex')].join('\n');
    let k = hmac('AWS4' + secret, day);
    k = hmac(k, 'us-east-1');
    k = hmac(k, 'sqs');
    k = hmac(k, 'aws4_request');
    const sig = hmac(k, toSign).toString('hex');
    const auth = `AWS4-HMAC-SHA256 Credential=${akid}/${scope}, SignedHeaders=${names.join(';')}, Signature=${sig}`;
    return rawPost(endpoint, body, { ...h, authorization: auth }, path);
}

//  A POST with exactly these headers (content-length added).
export function rawPost (endpoint, body, headers, path = '/') {
    const url = new URL(path, endpoint);
    const buf = Buffer.from(body);
    return new Promise((resolve, reject) => {
        const req = http.request({
            host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
            headers: { ...headers, 'content-length': buf.length },
        }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d) => { text += d; });
            res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
        });
        req.setTimeout(60000, () => req.destroy(new Error('timeout')));
        req.on('error', reject);
        req.end(buf);
    });
}

//  MD5OfMessageAttributes as AWS computes it (spec §10), written out here
//  independently of the broker. attrs: { name: { DataType, StringValue |
//  BinaryValue } }.
export function md5Attrs (attrs) {
    const parts = [];
    const u32 = (n) => { const b = Buffer.alloc(4); b.writeUInt32BE(n); return b; };
    for (const name of Object.keys(attrs).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))) {
        const a = attrs[name];
        const n = Buffer.from(name), t = Buffer.from(a.DataType);
        const binary = a.BinaryValue !== undefined;
        const v = binary ? Buffer.from(a.BinaryValue) : Buffer.from(a.StringValue);
        parts.push(u32(n.length), n, u32(t.length), t, Buffer.from([binary ? 2 : 1]), u32(v.length), v);
    }
    return crypto.createHash('md5').update(Buffer.concat(parts)).digest('hex');
}
