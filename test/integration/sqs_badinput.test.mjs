//  test/integration/sqs_badinput.test.mjs - the SQS door refuses bad input
//  with each protocol's own error shape (spec §4.2, §4.3, §9) and never
//  crashes: malformed forms and JSON, wrong types, unknown actions and
//  targets, oversized messages, every authentication failure; and a
//  broker SIGKILLed while consumers hold messages gives them back after
//  their visibility timeout, losing nothing that was deleted... and
//  redelivering nothing that was.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
    CreateQueueCommand, SendMessageBatchCommand, ReceiveMessageCommand, DeleteMessageBatchCommand,
    ListQueuesCommand,
} from '@aws-sdk/client-sqs';
import { startBroker, freePort, sleep } from './lib.mjs';
import { startSqsBroker, sdk, signedPost, rawPost, AKID, SECRET } from './sqs_lib.mjs';

let ctx;
let Q;

before(async () => {
    ctx = await startSqsBroker();
    const c = sdk(ctx.endpoint);
    Q = (await c.send(new CreateQueueCommand({ QueueName: 'bad1', Attributes: { MaximumMessageSize: '262144' } }))).QueueUrl;
});
after(async () => { await ctx?.broker.stop(); });

const FORM = { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' };
const JSON10 = (op) => ({ 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${op}` });

function xmlError (res, status, code) {
    assert.equal(res.status, status, res.text);
    assert.match(res.headers['content-type'], /text\/xml/);
    assert.ok(res.text.includes(`<Code>${code}</Code>`), res.text);
    assert.ok(res.text.startsWith('<?xml version="1.0"?><ErrorResponse'), res.text);
    assert.ok(res.headers['x-amzn-requestid']);
}

function jsonError (res, status, shape, queryCode) {
    assert.equal(res.status, status, res.text);
    assert.match(res.headers['content-type'], /application\/x-amz-json-1\.0/);
    const body = JSON.parse(res.text);
    assert.equal(body.__type, `com.amazonaws.sqs#${shape}`, res.text);
    assert.equal(typeof body.message, 'string');
    if (queryCode)
        assert.equal(res.headers['x-amzn-query-error'], `${queryCode};Sender`);
}

const form = (o) => new URLSearchParams(o).toString();

test('query protocol: malformed forms, unknown actions, wrong types', async () => {
    const E = ctx.endpoint;
    xmlError(await signedPost(E, 'Action=SendMessage&QueueUrl=x&MessageBody=%ZZ', { headers: FORM }), 400, 'MalformedQueryString');
    xmlError(await signedPost(E, 'Version=2012-11-05', { headers: FORM }), 400, 'MissingAction');
    xmlError(await signedPost(E, form({ Action: 'LaunchRockets' }), { headers: FORM }), 400, 'InvalidAction');
    xmlError(await signedPost(E, form({ Action: 'AddPermission', QueueUrl: Q }), { headers: FORM }), 400,
             'AWS.SimpleQueueService.UnsupportedOperation');
    xmlError(await signedPost(E, form({ Action: 'ReceiveMessage', QueueUrl: Q, MaxNumberOfMessages: 'ten' }),
                              { headers: FORM }), 400, 'InvalidParameterValue');
    xmlError(await signedPost(E, form({ Action: 'ReceiveMessage', QueueUrl: Q, WaitTimeSeconds: '21' }),
                              { headers: FORM }), 400, 'InvalidParameterValue');
    xmlError(await signedPost(E, form({ Action: 'SendMessage', QueueUrl: Q }), { headers: FORM }), 400, 'MissingParameter');
    xmlError(await signedPost(E, form({ Action: 'SendMessage', MessageBody: 'x' }), { headers: FORM }), 400, 'MissingParameter');
    xmlError(await signedPost(E, form({ Action: 'SendMessage', QueueUrl: Q, MessageBody: 'x',
                                        'MessageAttribute.1.Name': 'AWS.reserved', 'MessageAttribute.1.Value.DataType': 'String',
                                        'MessageAttribute.1.Value.StringValue': 'v' }), { headers: FORM }),
             400, 'InvalidParameterValue');
    xmlError(await signedPost(E, form({ Action: 'SendMessage', QueueUrl: Q, MessageBody: 'x',
                                        'MessageAttribute.1.Name': 'n', 'MessageAttribute.1.Value.DataType': 'Number',
                                        'MessageAttribute.1.Value.StringValue': 'abc' }), { headers: FORM }),
             400, 'InvalidParameterValue');
    xmlError(await signedPost(E, form({ Action: 'SendMessage', QueueUrl: `${ctx.endpoint}/000000000000/nope`,
                                        MessageBody: 'x' }), { headers: FORM }), 400, 'AWS.SimpleQueueService.NonExistentQueue');
    xmlError(await signedPost(E, form({ Action: 'DeleteMessageBatch', QueueUrl: Q }), { headers: FORM }), 400,
             'AWS.SimpleQueueService.EmptyBatchRequest');
    xmlError(await signedPost(E, form({ Action: 'DeleteMessageBatch', QueueUrl: Q, 'DeleteMessageBatchRequestEntry.11.Id': 'a',
                                        'DeleteMessageBatchRequestEntry.11.ReceiptHandle': 'h' }), { headers: FORM }),
             400, 'AWS.SimpleQueueService.TooManyEntriesInBatchRequest');
    //  The queue may also be addressed by the request path.
    const byPath = await signedPost(E, form({ Action: 'GetQueueAttributes', 'AttributeName.1': 'VisibilityTimeout' }),
                                    { headers: FORM, path: '/000000000000/bad1' });
    assert.equal(byPath.status, 200, byPath.text);
    assert.ok(byPath.text.includes('<Name>VisibilityTimeout</Name><Value>30</Value>'), byPath.text);
});

test('JSON 1.0: malformed JSON, wrong types, unknown targets', async () => {
    const E = ctx.endpoint;
    jsonError(await signedPost(E, '{"QueueUrl":', { headers: JSON10('SendMessage') }), 400, 'SerializationException');
    jsonError(await signedPost(E, '[1,2]', { headers: JSON10('SendMessage') }), 400, 'SerializationException');
    jsonError(await signedPost(E, '{}', { headers: JSON10('Frobnicate') }), 400, 'UnknownOperationException');
    jsonError(await signedPost(E, '{}', { headers: { ...JSON10('x'), 'x-amz-target': 'AmazonSNS.Publish' } }), 400,
              'UnknownOperationException');
    jsonError(await signedPost(E, JSON.stringify({ QueueUrl: Q, MaxNumberOfMessages: '10' }),
                               { headers: JSON10('ReceiveMessage') }), 400, 'InvalidParameterValue', 'InvalidParameterValue');
    jsonError(await signedPost(E, JSON.stringify({ QueueUrl: Q, MessageBody: 42 }),
                               { headers: JSON10('SendMessage') }), 400, 'InvalidParameterValue', 'InvalidParameterValue');
    jsonError(await signedPost(E, JSON.stringify({ QueueUrl: Q, Entries: {} }),
                               { headers: JSON10('SendMessageBatch') }), 400, 'InvalidParameterValue');
    jsonError(await signedPost(E, JSON.stringify({ QueueUrl: Q, MessageBody: 'x', MessageAttributes: {
        l: { DataType: 'String', StringListValues: ['a'] } } }), { headers: JSON10('SendMessage') }), 400, 'InvalidParameterValue');
    jsonError(await signedPost(E, JSON.stringify({ QueueUrl: Q, ReceiptHandle: 'AAAA' }),
                               { headers: JSON10('DeleteMessage') }), 404, 'ReceiptHandleIsInvalid', 'ReceiptHandleIsInvalid');
    jsonError(await signedPost(E, JSON.stringify({ QueueUrl: 'http://x/000000000000/nope' }),
                               { headers: JSON10('PurgeQueue') }), 400, 'QueueDoesNotExist',
              'AWS.SimpleQueueService.NonExistentQueue');
});

test('message size: MaximumMessageSize and the 1 MiB ceiling', async () => {
    const E = ctx.endpoint;
    const at = (n) => JSON.stringify({ QueueUrl: Q, MessageBody: 'a'.repeat(n) });
    const okRes = await signedPost(E, at(262144), { headers: JSON10('SendMessage') });
    assert.equal(okRes.status, 200, okRes.text.slice(0, 300));
    jsonError(await signedPost(E, at(262145), { headers: JSON10('SendMessage') }), 400, 'InvalidParameterValue');
    jsonError(await signedPost(E, JSON.stringify({ QueueUrl: Q, Entries: [...Array(5).keys()].map((i) => ({
        Id: `e${i}`, MessageBody: 'b'.repeat(250000) })) }), { headers: JSON10('SendMessageBatch') }), 400,
              'BatchRequestTooLong');
});

test('authentication: missing, malformed, unknown key, bad signature, tampered body, skewed date', async () => {
    const E = ctx.endpoint;
    const body = form({ Action: 'ListQueues' });
    xmlError(await rawPost(E, body, { ...FORM, host: new URL(E).host }), 403, 'MissingAuthenticationToken');
    xmlError(await rawPost(E, body, { ...FORM, host: new URL(E).host, authorization: 'AWS4-HMAC-SHA256 garbage' }), 400,
             'IncompleteSignature');
    xmlError(await signedPost(E, body, { headers: FORM, akid: 'AKIDNOBODY' }), 403, 'InvalidClientTokenId');
    xmlError(await signedPost(E, body, { headers: FORM, secret: 'wrong' }), 403, 'SignatureDoesNotMatch');
    xmlError(await signedPost(E, body, { headers: FORM, date: new Date(Date.now() - 16 * 60 * 1000) }), 400, 'RequestExpired');
    //  Without X-Amz-Date the HTTP Date header is the request time (§3.3).
    const byDate = await signedPost(E, body, { headers: FORM, httpDate: true });
    assert.equal(byDate.status, 200, byDate.text);
    xmlError(await signedPost(E, body, { headers: FORM, httpDate: true, date: new Date(Date.now() + 16 * 60 * 1000) }),
             400, 'RequestExpired');
    jsonError(await signedPost(E, '{}', { headers: JSON10('ListQueues'), httpDate: true,
                                          date: new Date(Date.now() - 20 * 60 * 1000) }), 400, 'RequestExpired');
    xmlError(await signedPost(E, body, { headers: FORM, httpDate: true, secret: 'wrong' }), 403, 'SignatureDoesNotMatch');
    //  Neither header: refused as an incomplete signature.
    xmlError(await rawPost(E, body, { ...FORM, host: new URL(E).host,
        authorization: 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/sqs/aws4_request, ' +
                       'SignedHeaders=host, Signature=' + '0'.repeat(64) }), 400, 'IncompleteSignature');
    jsonError(await signedPost(E, '{}', { headers: JSON10('ListQueues'), secret: 'wrong' }), 403, 'SignatureDoesNotMatch');
    //  Signed for one body, sent with another (x-amz-content-sha256 of the first).
    const good = await signedPost(E, body, { headers: FORM });
    assert.equal(good.status, 200, good.text);
    const hash = crypto.createHash('sha256').update(body).digest('hex');
    const tampered = await signedPost(E, body, { headers: { ...FORM, 'x-amz-content-sha256': hash } });
    assert.equal(tampered.status, 200, tampered.text);
    const lie = await signedPost(E, form({ Action: 'ListQueues', QueueNamePrefix: 'b' }),
                                 { headers: { ...FORM, 'x-amz-content-sha256': hash } });
    xmlError(lie, 403, 'SignatureDoesNotMatch');
    assert.ok(AKID && SECRET);
});

test('random bodies never crash the door', async () => {
    const E = ctx.endpoint;
    let rnd = 12345;
    const next = () => (rnd = (rnd * 1103515245 + 12345) & 0x7fffffff);
    const pieces = ['Action=', 'SendMessage', 'ReceiveMessage', '&', '=', '%', '%4', '.1.', 'Entry', 'MessageAttribute',
                    '{', '}', '[', ']', '"', ':', ',', 'QueueUrl', Q, '\u00e9', '\\u0000', 'Value.BinaryValue', '!!'];
    for (let i = 0; i < 60; i++) {
        let s = '';
        for (let k = next() % 12; k >= 0; k--)
            s += pieces[next() % pieces.length];
        const json = i % 2 === 1;
        const res = await signedPost(E, s, { headers: json ? JSON10(['SendMessage', 'ReceiveMessage', 'DeleteMessageBatch'][i % 3]) : FORM });
        assert.ok(res.status === 200 || (res.status >= 400 && res.status < 500), `${res.status} for ${s}: ${res.text}`);
    }
    const c = sdk(ctx.endpoint);
    assert.ok(Array.isArray((await c.send(new ListQueuesCommand({}))).QueueUrls));
});

test('SIGKILL while consumers hold messages: they come back after visibility; deleted ones never do', async () => {
    const sqsPort = await freePort();
    //  This broker reads its keys from a file (SQS_CREDENTIALS=@path).
    const keys = path.join(process.env.QN_TMP || os.tmpdir(), `sqs-keys-${sqsPort}`);
    fs.writeFileSync(keys, `# SQS keys\nAKIDUNUSED:x\n  ${AKID}:${SECRET}  \n`);
    const env = { SQS_PORT: String(sqsPort), SQS_CREDENTIALS: `@${keys}` };
    let broker = await startBroker({ env });
    const endpoint = `http://127.0.0.1:${sqsPort}`;
    let c = sdk(endpoint);
    const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'crash1', Attributes: { VisibilityTimeout: '4' } }));
    for (let i = 0; i < 20; i += 10)
        await c.send(new SendMessageBatchCommand({ QueueUrl, Entries: [...Array(10).keys()].map((k) => ({
            Id: `e${k}`, MessageBody: `m${i + k}` })) }));
    const held = [];
    const asked = new Map();        //  body -> when the receive that got it was sent
    for (let t = 0; t < 20 && held.length < 10; t++) {
        const at = Date.now();
        const r = await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 - held.length, WaitTimeSeconds: 1 }));
        for (const m of r.Messages ?? []) {
            held.push(m);
            asked.set(m.Body, at);
        }
    }
    assert.equal(held.length, 10);
    const deleted = held.slice(0, 5);
    const d = await c.send(new DeleteMessageBatchCommand({ QueueUrl,
        Entries: deleted.map((m, k) => ({ Id: `d${k}`, ReceiptHandle: m.ReceiptHandle })) }));
    assert.equal(d.Successful.length, 5);
    await broker.stop('SIGKILL');
    broker = await startBroker({ env, db: broker.db });
    c = sdk(endpoint);
    const got = new Map();
    const deadline = Date.now() + 60000;
    while (got.size < 15 && Date.now() < deadline) {
        const r = await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2 }));
        for (const m of r.Messages ?? []) {
            assert.ok(!got.has(m.Body), `${m.Body} twice`);
            got.set(m.Body, Date.now());
        }
        if (r.Messages)
            await c.send(new DeleteMessageBatchCommand({ QueueUrl,
                Entries: r.Messages.map((m, k) => ({ Id: `x${k}`, ReceiptHandle: m.ReceiptHandle })) }));
    }
    const expected = [...Array(20).keys()].map((i) => `m${i}`).filter((b) => !deleted.some((m) => m.Body === b));
    assert.deepEqual([...got.keys()].sort(), expected.sort());
    //  The held ones stayed invisible for their visibility timeout (4 s;
    //  200 ms for the two clocks, node's and PostgreSQL's, on one host).
    for (const m of held.slice(5)) {
        const after = got.get(m.Body) - asked.get(m.Body);
        assert.ok(after >= 3800, `${m.Body} came back ${after} ms after it was received`);
    }
    const empty = await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 5 }));
    assert.equal(empty.Messages, undefined, 'deleted messages never come back');
    assert.equal(await broker.stop(), 0, broker.logs().slice(-3000));
});

//  Last: a clean exit (0) after SIGTERM; under the sanitizer build a leak
//  or a shutdown that hangs fails here (lib.mjs's own after hook SIGKILLs
//  what is left, so this cannot wait for after()).
test('the SQS door shuts down cleanly', async () => {
    assert.equal(await ctx.broker.stop(), 0, ctx.broker.logs().slice(-3000));
});
