//  test/integration/sqs_awscli_fifo.test.mjs - the SQS door with awscli 2.9
//  (Debian's /usr/bin/aws: AWS query protocol, XML answers), signatures
//  verified: the FIFO and redrive commands of spec shared/spec/sqs.md
//  §14.2 (the others: sqs_awscli.test.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sleep } from './lib.mjs';
import { startSqsBroker, aws, awsOk as ok, awsFails as fails } from './sqs_lib.mjs';

let ctx;
let A;

before(async () => {
    ctx = await startSqsBroker();
    A = (args, opts) => aws(ctx.endpoint, args, opts);
});
after(async () => { await ctx?.broker.stop(); });

test('FIFO: groups, content-based dedup, order, a group is not handed out while in flight', async () => {
    const U = ok(await A(['create-queue', '--queue-name', 'f1.fifo', '--attributes',
                          'FifoQueue=true,ContentBasedDeduplication=true']), 'create fifo').QueueUrl;
    fails(await A(['create-queue', '--queue-name', 'plain', '--attributes', 'FifoQueue=true']),
          'InvalidParameterValue', 'FifoQueue on a name without .fifo');
    const s1 = ok(await A(['send-message', '--queue-url', U, '--message-body', 'm1', '--message-group-id', 'g1']), 's1');
    const dup = ok(await A(['send-message', '--queue-url', U, '--message-body', 'm1', '--message-group-id', 'g1']), 'dup');
    assert.equal(dup.MessageId, s1.MessageId);
    assert.equal(dup.SequenceNumber, s1.SequenceNumber);
    const s2 = ok(await A(['send-message', '--queue-url', U, '--message-body', 'm2', '--message-group-id', 'g1']), 's2');
    assert.ok(BigInt(s2.SequenceNumber) > BigInt(s1.SequenceNumber));
    fails(await A(['send-message', '--queue-url', U, '--message-body', 'z']), 'MissingParameter', 'no group');
    fails(await A(['send-message', '--queue-url', U, '--message-body', 'z', '--message-group-id', 'g1',
                   '--delay-seconds', '5']), 'InvalidParameterValue', 'per-message delay on FIFO');
    //  (a long visibility: each awscli run takes seconds on a loaded machine)
    const r = ok(await A(['receive-message', '--queue-url', U, '--max-number-of-messages', '10',
                          '--visibility-timeout', '600', '--attribute-names', 'All']), 'receive');
    //  the whole group in send order, in one receive (spec §14.2)
    assert.deepEqual(r.Messages.map((m) => m.Body), ['m1', 'm2']);
    assert.deepEqual(r.Messages.map((m) => m.Attributes.MessageGroupId), ['g1', 'g1']);
    assert.deepEqual(r.Messages.map((m) => m.Attributes.SequenceNumber), [s1.SequenceNumber, s2.SequenceNumber]);
    assert.notEqual(r.Messages[0].ReceiptHandle, r.Messages[1].ReceiptHandle);
    //  g1 is in flight: nothing else from it.
    assert.equal(ok(await A(['receive-message', '--queue-url', U, '--max-number-of-messages', '10',
                             '--wait-time-seconds', '1']), 'g1 in flight'), null);
    //  both deleted: the group is free, and empty
    const del = ok(await A(['delete-message-batch', '--queue-url', U, '--entries', JSON.stringify(
        r.Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })))]), 'delete m1 m2');
    assert.equal(del.Successful.length, 2);
    assert.equal(ok(await A(['receive-message', '--queue-url', U, '--wait-time-seconds', '1']), 'drained'), null);
    //  The dedup window outlives the deleted original.
    const again = ok(await A(['send-message', '--queue-url', U, '--message-body', 'm1', '--message-group-id', 'g1']), 'again');
    assert.equal(again.MessageId, s1.MessageId);
});

test('redrive: after maxReceiveCount receives the message moves to the DLQ with its MessageId', async () => {
    const U = ok(await A(['create-queue', '--queue-name', 'r1', '--attributes', 'VisibilityTimeout=1']), 'create').QueueUrl;
    const D = ok(await A(['create-queue', '--queue-name', 'r1-dlq']), 'create dlq').QueueUrl;
    const policy = (target) => JSON.stringify({ RedrivePolicy: JSON.stringify({
        deadLetterTargetArn: `arn:aws:sqs:us-east-1:000000000000:${target}`, maxReceiveCount: '2' }) });
    //  the target must exist (§8.4; the type check: sqs_sdk.test.mjs)
    fails(await A(['set-queue-attributes', '--queue-url', U, '--attributes', policy('r1-nowhere')]),
          'InvalidParameterValue', 'redrive to a missing queue');
    ok(await A(['set-queue-attributes', '--queue-url', U, '--attributes', policy('r1-dlq')]), 'redrive policy');
    const id = ok(await A(['send-message', '--queue-url', U, '--message-body', 'doomed']), 'send').MessageId;
    for (let i = 1; i <= 2; i++) {
        const r = ok(await A(['receive-message', '--queue-url', U, '--wait-time-seconds', '5',
                              '--attribute-names', 'ApproximateReceiveCount']), `receive ${i}`);
        assert.equal(r.Messages[0].MessageId, id);
        assert.equal(r.Messages[0].Attributes.ApproximateReceiveCount, String(i));
        await sleep(1200);                      //  let the visibility expire
    }
    assert.equal(ok(await A(['receive-message', '--queue-url', U, '--wait-time-seconds', '1']), 'third receive'), null);
    const d = ok(await A(['receive-message', '--queue-url', D, '--wait-time-seconds', '2']), 'dlq receive');
    assert.equal(d.Messages[0].MessageId, id);
    assert.equal(d.Messages[0].Body, 'doomed');
    assert.deepEqual(ok(await A(['list-dead-letter-source-queues', '--queue-url', D]), 'sources').queueUrls, [U]);
});

//  Last: a clean exit (0) after SIGTERM.
test('the SQS door shuts down cleanly', async () => {
    assert.equal(await ctx.broker.stop(), 0, ctx.broker.logs().slice(-3000));
});
