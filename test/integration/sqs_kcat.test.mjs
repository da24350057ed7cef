//  test/integration/sqs_kcat.test.mjs - spec shared/spec/sqs.md §14.5: the
//  SQS door, the native HTTP API and the Kafka door (kcat 1.7, Debian) on
//  the same rows; and what the HTTP pop shows for payloads that are not
//  JSON (an SQS body, a Kafka value): a JSON string, base64 with
//  "dataEncoding": "base64" when the bytes are not UTF-8 (docs/sqs.md).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import { ReceiveMessageCommand, CreateQueueCommand, PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { freePort, pushItems, pop, request } from './lib.mjs';
import { startSqsBroker, aws, sdk } from './sqs_lib.mjs';

let ctx;
let B;
let c;

before(async () => {
    let kport;
    do
        kport = await freePort();
    while (kport === 0);
    ctx = await startSqsBroker({ KAFKA_PORT: String(kport), KAFKA_ADVERTISED_HOST: '127.0.0.1',
                                 KAFKA_DEFAULT_PARTITIONS: '1' });
    B = `127.0.0.1:${kport}`;
    c = sdk(ctx.endpoint);
});
after(async () => { await ctx?.broker.stop(); });

//  Runs kcat with args (stdin from input); resolves to { code, out (Buffer), err }.
function kcat (args, { input, timeoutMs = 30000 } = {}) {
    return new Promise((resolve, reject) => {
        const p = spawn('kcat', ['-b', B, '-u', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
        const out = [];
        let err = '';
        p.stdout.on('data', (d) => out.push(d));
        p.stderr.on('data', (d) => { err += d; });
        const timer = setTimeout(() => {
            p.kill('SIGKILL');
            reject(new Error(`kcat ${args.join(' ')} did not finish in ${timeoutMs} ms: ${err}`));
        }, timeoutMs);
        p.on('close', (code) => {
            clearTimeout(timer);
            resolve({ code, out: Buffer.concat(out), err });
        });
        p.stdin.end(input ?? '');
    });
}

//  Kafka names the queue (Metadata with auto-creation): its Kafka log starts.
async function kafkaNames (topic) {
    const r = await kcat(['-L', '-t', topic]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out.toString(), new RegExp(`topic "${topic.replace('.', '\\.')}" with 1 partitions`));
}

//  MD5OfMessageAttributes as the Java SDK checks it (spec §10).
function md5Attrs (attrs) {
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

const ok = (r, what) => {
    assert.equal(r.code, 0, `${what}: rc ${r.code} ${r.stderr}`);
    return r.out;
};

test('§14.5.1 aws sqs send to a FIFO group: native partition e1 in order, kcat key e1 with the bodies', async () => {
    const U = ok(await aws(ctx.endpoint, ['create-queue', '--queue-name', 'x.fifo', '--attributes',
                                          'FifoQueue=true,ContentBasedDeduplication=true']), 'create').QueueUrl;
    await kafkaNames('x.fifo');
    for (const b of ['m1', 'm2', 'm3'])
        ok(await aws(ctx.endpoint, ['send-message', '--queue-url', U, '--message-body', b, '--message-group-id', 'e1']), b);
    //  native: partition e1, the bodies in order (not JSON: JSON strings)
    const res = await pop(ctx.broker.url, 'x.fifo', { partition: 'e1', batch: 10, autoAck: true });
    assert.deepEqual(res.messages.map((m) => m.data), ['m1', 'm2', 'm3']);
    assert.ok(res.messages.every((m) => m.partition === 'e1'));
    //  Kafka: key e1 and the raw bodies
    const k = await kcat(['-C', '-t', 'x.fifo', '-o', 'beginning', '-e', '-f', '%k %s\\n']);
    assert.equal(k.code, 0, k.err);
    assert.equal(k.out.toString(), 'e1 m1\ne1 m2\ne1 m3\n');
});

test('§14.5.2/3/5 native push and Kafka records -> SQS receive (MD5s, base64, headers as attributes); purge', async () => {
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'w' }));
    await kafkaNames('w');
    await pushItems(ctx.broker.url, [{ queue: 'w', payload: { n: 1, s: 'héllo' } }], { queued: true });
    //  a Kafka value with a NUL byte (kcat -P, one record per line)
    const p = await kcat(['-P', '-t', 'w', '-k', 'bin'], { input: Buffer.from([0x61, 0x00, 0x62, 0x0a]) });
    assert.equal(p.code, 0, p.err);
    //  §14.5.3: a record header becomes a String message attribute
    const h = await kcat(['-P', '-t', 'w', '-k', 'tp', '-H', 'traceparent=abc', '-H', 'bad name=x'],
                         { input: 'traced\n' });
    assert.equal(h.code, 0, h.err);
    const got = [];
    for (let t = 0; t < 20 && got.length < 3; t++) {
        const r = await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
                                                          MessageAttributeNames: ['All'], VisibilityTimeout: 600 }));
        got.push(...(r.Messages ?? []));
    }
    assert.equal(got.length, 3);
    const traced = got.find((m) => m.Body === 'traced');
    assert.deepEqual(traced.MessageAttributes, { traceparent: { DataType: 'String', StringValue: 'abc' } });
    assert.equal(traced.MD5OfMessageAttributes, md5Attrs({ traceparent: { DataType: 'String', StringValue: 'abc' } }));
    const json = got.find((m) => m.Body.startsWith('{'));
    assert.deepEqual(JSON.parse(json.Body), { n: 1, s: 'héllo' });
    assert.equal(json.MessageAttributes, undefined);
    const bin = got.find((m) => m !== json && m !== traced);
    assert.equal(bin.Body, Buffer.from([0x61, 0x00, 0x62]).toString('base64'));
    assert.deepEqual(bin.MessageAttributes, { ContentEncoding: { DataType: 'String', StringValue: 'base64' } });
    //  §14.5.5: PurgeQueue leaves what Kafka reads unchanged
    const before = await kcat(['-C', '-t', 'w', '-o', 'beginning', '-e', '-f', '%k|%s\\n']);
    assert.equal(before.code, 0, before.err);
    assert.equal(before.out.length > 0, true);
    await c.send(new PurgeQueueCommand({ QueueUrl }));
    const r = await c.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 0 }));
    assert.equal(r.Messages, undefined);
    const afterPurge = await kcat(['-C', '-t', 'w', '-o', 'beginning', '-e', '-f', '%k|%s\\n']);
    assert.equal(afterPurge.code, 0, afterPurge.err);
    assert.deepEqual(afterPurge.out, before.out);
    assert.match(before.out.toString('latin1'), /^\|\{"n": ?1/m);
});

test('HTTP pop of payloads that are not JSON: text as a JSON string, other bytes base64', async () => {
    await c.send(new CreateQueueCommand({ QueueName: 'wbin' }));
    await kafkaNames('wbin');
    //  three Kafka records: text, bytes that are not UTF-8, JSON
    const input = Buffer.concat([Buffer.from('plain kafka text\n'), Buffer.from([0xff, 0xfe, 0x41, 0x0a]),
                                 Buffer.from('{"j":true}\n')]);
    const p = await kcat(['-P', '-t', 'wbin'], { input });
    assert.equal(p.code, 0, p.err);
    const res = await request(ctx.broker.url, '/api/v1/pop/queue/wbin?wait=false&batch=10&autoAck=true');
    assert.doesNotThrow(() => JSON.parse(res.raw), res.raw);
    const msgs = res.body.messages;
    assert.equal(msgs.length, 3);
    assert.equal(msgs[0].data, 'plain kafka text');
    assert.equal(msgs[0].dataEncoding, undefined);
    assert.equal(msgs[1].data, Buffer.from([0xff, 0xfe, 0x41]).toString('base64'));
    assert.equal(msgs[1].dataEncoding, 'base64');
    assert.deepEqual(msgs[2].data, { j: true });
    assert.equal(msgs[2].dataEncoding, undefined);
});

test('the broker shuts down cleanly', async () => {
    assert.equal(await ctx.broker.stop(), 0, ctx.broker.logs().slice(-3000));
});
