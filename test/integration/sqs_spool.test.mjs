//  test/integration/sqs_spool.test.mjs - SQS sends during a PostgreSQL
//  outage, with @aws-sdk/client-sqs v3 (MD5 validation on)
//
//  SendMessage and SendMessageBatch are the push operation (QN_MSG_PUSH):
//  while PostgreSQL is down they are made durable in the disk spool and
//  answered with the SQS response (MessageId, MD5s); when PostgreSQL
//  returns, the spool replays them and ReceiveMessage gets each message
//  exactly once, with its body, message attributes, MessageId, group and
//  deduplication ids; a FIFO deduplication id sent twice during the
//  outage is delivered once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import {
    CreateQueueCommand, GetQueueUrlCommand, SendMessageCommand, SendMessageBatchCommand,
    ReceiveMessageCommand, DeleteMessageCommand, DeleteMessageBatchCommand,
} from '@aws-sdk/client-sqs';
import { pgStop, pgStart, waitFor, buffers, psql } from './lib.mjs';
import { startSqsBroker, sdk, md5Attrs } from './sqs_lib.mjs';

//  DelaySeconds of one message: longer than the outage and the first
//  receives take, so it is still delayed when the others are received.
const DELAY_S = 20;

function md5 (text) {
    return crypto.createHash('md5').update(Buffer.from(text, 'utf8')).digest('hex');
}

//  Receives (and deletes) until a receive waiting `quietS` seconds finds
//  nothing; returns every message received, in order.
async function drain (c, QueueUrl, quietS = 2) {
    const got = [];
    for (let round = 0; round < 100; round++) {
        const r = await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10,
            WaitTimeSeconds: quietS, MessageAttributeNames: ['All'], MessageSystemAttributeNames: ['All'] }));
        if (!r.Messages?.length)
            return got;
        got.push(...r.Messages);
        //  One batch per receive: a FIFO group's messages share one lease.
        const d = await c.send(new DeleteMessageBatchCommand({ QueueUrl,
            Entries: r.Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })) }));
        assert.equal(d.Failed?.length ?? 0, 0, JSON.stringify(d.Failed));
    }
    throw new Error('the queue does not drain');
}

test('SendMessage and SendMessageBatch during an outage: spooled, answered, delivered once', async () => {
    const ctx = await startSqsBroker();
    const c = sdk(ctx.endpoint);
    try {
        //  The queues exist and this broker has looked them up before the
        //  outage (an application's CreateQueue / GetQueueUrl at start).
        const std = (await c.send(new CreateQueueCommand({ QueueName: 'outage-std' }))).QueueUrl;
        const fifo = (await c.send(new CreateQueueCommand({ QueueName: 'outage.fifo',
            Attributes: { FifoQueue: 'true' } }))).QueueUrl;
        for (const QueueName of ['outage-std', 'outage.fifo'])
            await c.send(new GetQueueUrlCommand({ QueueName }));

        const attrs = {
            colour: { DataType: 'String', StringValue: 'blue' },
            blob: { DataType: 'Binary', BinaryValue: Buffer.from([0, 1, 2, 255]) },
            n: { DataType: 'Number', StringValue: '42' },
        };
        const sent = new Map();     //  body -> { id, md5Attrs }
        const outageStart = Date.now();
        await pgStop();
        try {
            //  Every send below must succeed: the spool takes them.
            const one = await c.send(new SendMessageCommand({ QueueUrl: std, MessageBody: 'single ✓',
                MessageAttributes: attrs }));
            assert.ok(one.MessageId, 'a MessageId');
            assert.equal(one.MD5OfMessageBody, md5('single ✓'));
            assert.equal(one.MD5OfMessageAttributes, md5Attrs(attrs));
            sent.set('single ✓', { id: one.MessageId, md5Attrs: one.MD5OfMessageAttributes });

            const batch = await c.send(new SendMessageBatchCommand({ QueueUrl: std, Entries: [
                { Id: 'a', MessageBody: 'batch-a' },
                { Id: 'b', MessageBody: 'batch-b', MessageAttributes: { k: { DataType: 'String', StringValue: 'v' } } },
                { Id: 'c', MessageBody: 'batch-delayed', DelaySeconds: DELAY_S },
            ] }));
            assert.equal(batch.Failed?.length ?? 0, 0, JSON.stringify(batch.Failed));
            assert.equal(batch.Successful.length, 3);
            for (const e of batch.Successful) {
                const body = { a: 'batch-a', b: 'batch-b', c: 'batch-delayed' }[e.Id];
                assert.equal(e.MD5OfMessageBody, md5(body));
                sent.set(body, { id: e.MessageId, md5Attrs: e.MD5OfMessageAttributes });
            }
            assert.equal(batch.Successful.find((e) => e.Id === 'b').MD5OfMessageAttributes,
                md5Attrs({ k: { DataType: 'String', StringValue: 'v' } }));

            //  FIFO: a deduplication id sent twice, and a batch of two groups.
            const f1 = await c.send(new SendMessageCommand({ QueueUrl: fifo, MessageBody: 'fifo-1',
                MessageGroupId: 'g1', MessageDeduplicationId: 'd-1' }));
            const f1again = await c.send(new SendMessageCommand({ QueueUrl: fifo, MessageBody: 'fifo-1-again',
                MessageGroupId: 'g1', MessageDeduplicationId: 'd-1' }));
            assert.ok(f1.MessageId && f1again.MessageId);
            sent.set('fifo-1', { id: f1.MessageId });
            const fb = await c.send(new SendMessageBatchCommand({ QueueUrl: fifo, Entries: [
                { Id: 'x', MessageBody: 'fifo-2', MessageGroupId: 'g1', MessageDeduplicationId: 'd-2' },
                { Id: 'y', MessageBody: 'fifo-3', MessageGroupId: 'g2', MessageDeduplicationId: 'd-3',
                  MessageAttributes: attrs },
            ] }));
            assert.equal(fb.Successful.length, 2, JSON.stringify(fb.Failed));
            for (const e of fb.Successful)
                sent.set(e.Id === 'x' ? 'fifo-2' : 'fifo-3', { id: e.MessageId, md5Attrs: e.MD5OfMessageAttributes });

            const b = await buffers(ctx.broker.url);
            assert.equal(b.pending, 8, `the spool holds every send: ${JSON.stringify(b)}`);
        } finally {
            await pgStart();
        }
        const outageEnd = Date.now();
        await waitFor(async () => (await buffers(ctx.broker.url)).pending === 0, 30000, 200);

        //  Standard queue: each message once, with what was sent; the
        //  delayed one not before its DelaySeconds are over.
        const got = await drain(c, std);
        assert.deepEqual(got.map((m) => m.Body).sort(), ['batch-a', 'batch-b', 'single ✓']);
        assert.ok(Date.now() < outageStart + DELAY_S * 1000, 'the first receives end before the delay');
        const dueAt = Number(await psql(`SELECT (extract(epoch FROM m.not_before) * 1000)::bigint
            FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
            JOIN queen.queues q ON q.id = p.queue_id
            WHERE q.name = 'outage-std' AND convert_from(m.payload, 'UTF8') = 'batch-delayed'`,
            { db: ctx.broker.db }));
        assert.ok(dueAt >= outageStart + DELAY_S * 1000 && dueAt <= outageEnd + DELAY_S * 1000,
            `not before the send's instant + DelaySeconds: ${dueAt}`);
        const late = await c.send(new ReceiveMessageCommand({ QueueUrl: std, WaitTimeSeconds: DELAY_S,
            MessageAttributeNames: ['All'], MessageSystemAttributeNames: ['All'] }));
        assert.equal(late.Messages?.length, 1);
        assert.ok(Date.now() >= dueAt - 1000, 'received once due');
        await c.send(new DeleteMessageCommand({ QueueUrl: std, ReceiptHandle: late.Messages[0].ReceiptHandle }));
        got.push(late.Messages[0]);
        for (const m of got) {
            const s = sent.get(m.Body);
            assert.equal(m.MessageId, s.id, `${m.Body}: the MessageId the send answered`);
            assert.equal(m.MD5OfBody, md5(m.Body));
            const ts = Number(m.Attributes.SentTimestamp);
            assert.ok(ts >= outageStart - 1000 && ts <= outageEnd, `${m.Body}: SentTimestamp of the send`);
            if (s.md5Attrs)
                assert.equal(m.MD5OfMessageAttributes, s.md5Attrs, `${m.Body}: attributes`);
            else
                assert.equal(m.MessageAttributes, undefined);
        }
        const single = got.find((m) => m.Body === 'single ✓');
        assert.equal(single.MessageAttributes.colour.StringValue, 'blue');
        assert.deepEqual([...single.MessageAttributes.blob.BinaryValue], [0, 1, 2, 255]);
        assert.equal(single.MessageAttributes.n.StringValue, '42');
        assert.equal(got.find((m) => m.Body === 'batch-b').MessageAttributes.k.StringValue, 'v');

        //  FIFO: the duplicate is not delivered; groups and ids kept.
        const fgot = await drain(c, fifo);
        assert.deepEqual(fgot.map((m) => m.Body).sort(), ['fifo-1', 'fifo-2', 'fifo-3']);
        for (const m of fgot) {
            assert.equal(m.MessageId, sent.get(m.Body).id, `${m.Body}: MessageId`);
            assert.equal(m.Attributes.MessageGroupId, m.Body === 'fifo-3' ? 'g2' : 'g1');
            assert.equal(m.Attributes.MessageDeduplicationId, { 'fifo-1': 'd-1', 'fifo-2': 'd-2', 'fifo-3': 'd-3' }[m.Body]);
        }
        assert.deepEqual(fgot.filter((m) => m.Attributes.MessageGroupId === 'g1').map((m) => m.Body),
            ['fifo-1', 'fifo-2'], 'a group in send order');
        assert.equal(fgot.find((m) => m.Body === 'fifo-3').MD5OfMessageAttributes, md5Attrs(attrs));

        //  Stored once each (the replay deduplicates by transaction id).
        const rows = await psql(`SELECT count(*) || ' ' || count(DISTINCT m.txn_id)
            FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
            JOIN queen.queues q ON q.id = p.queue_id WHERE q.name IN ('outage-std', 'outage.fifo')`,
            { db: ctx.broker.db });
        assert.equal(rows, '7 7');

        //  After the replay, sends go to PostgreSQL again: a native id.
        const after = await c.send(new SendMessageCommand({ QueueUrl: std, MessageBody: 'after' }));
        const back = await drain(c, std);
        assert.deepEqual(back.map((m) => [m.Body, m.MessageId]), [['after', after.MessageId]]);
    } finally {
        await ctx.broker.stop();
    }
});
