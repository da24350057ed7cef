//  test/integration/sqs_awscli.test.mjs - the SQS door with awscli 2.9
//  (Debian's /usr/bin/aws: AWS query protocol, XML answers), signatures
//  verified: the `aws sqs` commands of spec shared/spec/sqs.md §14.2 for
//  queues and messages, and the errors awscli prints (FIFO and redrive:
//  sqs_awscli_fifo.test.mjs; awscli takes seconds a run on a loaded
//  machine, so the commands are split over two files).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSqsBroker, aws, awsOk as ok, awsFails as fails } from './sqs_lib.mjs';

let ctx;
let A;

before(async () => {
    ctx = await startSqsBroker();
    A = (args, opts) => aws(ctx.endpoint, args, opts);
});
after(async () => { await ctx?.broker.stop(); });

test('queues: create (idempotent, conflict), get-queue-url, list, attributes, delete', async () => {
    const U = ctx.queueUrl('q1');
    assert.equal(ok(await A(['create-queue', '--queue-name', 'q1']), 'create').QueueUrl, U);
    assert.equal(ok(await A(['create-queue', '--queue-name', 'q1']), 'create again').QueueUrl, U);
    fails(await A(['create-queue', '--queue-name', 'q1', '--attributes', 'VisibilityTimeout=99']),
          'QueueAlreadyExists', 'create with other attributes');
    assert.equal(ok(await A(['get-queue-url', '--queue-name', 'q1']), 'get-queue-url').QueueUrl, U);
    fails(await A(['get-queue-url', '--queue-name', 'nope']), 'AWS.SimpleQueueService.NonExistentQueue',
          'get-queue-url of a missing queue');
    ok(await A(['create-queue', '--queue-name', 'other-prefix']), 'create other');
    const list = ok(await A(['list-queues', '--queue-name-prefix', 'q']), 'list');
    assert.deepEqual(list.QueueUrls, [U]);
    ok(await A(['set-queue-attributes', '--queue-url', U, '--attributes', 'VisibilityTimeout=5,DelaySeconds=0']), 'set');
    const attrs = ok(await A(['get-queue-attributes', '--queue-url', U, '--attribute-names', 'All']), 'get attrs').Attributes;
    assert.equal(attrs.VisibilityTimeout, '5');
    assert.equal(attrs.DelaySeconds, '0');
    assert.equal(attrs.QueueArn, 'arn:aws:sqs:us-east-1:000000000000:q1');
    assert.equal(attrs.ApproximateNumberOfMessages, '0');
    assert.match(attrs.CreatedTimestamp, /^\d{10}$/);
    fails(await A(['set-queue-attributes', '--queue-url', U, '--attributes', 'VisibilityTimeout=99999']),
          'InvalidAttributeValue', 'out-of-range attribute');
    fails(await A(['set-queue-attributes', '--queue-url', U, '--attributes', 'Bogus=1']),
          'InvalidAttributeName', 'unknown attribute');
    ok(await A(['tag-queue', '--queue-url', U, '--tags', 'team=core,env=test']), 'tag');
    ok(await A(['untag-queue', '--queue-url', U, '--tag-keys', 'env']), 'untag');
    assert.deepEqual(ok(await A(['list-queue-tags', '--queue-url', U]), 'list tags').Tags, { team: 'core' });
    ok(await A(['delete-queue', '--queue-url', U]), 'delete');
    fails(await A(['delete-queue', '--queue-url', U]), 'AWS.SimpleQueueService.NonExistentQueue', 'delete again');
    assert.equal(ok(await A(['list-queues', '--queue-name-prefix', 'q']), 'list after delete'), null);
});

test('messages: send with attributes, receive, visibility, delete, batches, purge', async () => {
    const U = ok(await A(['create-queue', '--queue-name', 'm1']), 'create').QueueUrl;
    const sent = ok(await A(['send-message', '--queue-url', U, '--message-body', 'hello', '--message-attributes',
        '{"a":{"DataType":"String","StringValue":"x"},"n":{"DataType":"Number.int","StringValue":"42"}}']), 'send');
    assert.equal(sent.MD5OfMessageBody, '5d41402abc4b2a76b9719d911017c592');
    assert.match(sent.MD5OfMessageAttributes, /^[0-9a-f]{32}$/);
    //  Visibility 0: received and at once receivable again.
    const r1 = ok(await A(['receive-message', '--queue-url', U, '--attribute-names', 'All', '--message-attribute-names',
                           'All', '--wait-time-seconds', '1', '--visibility-timeout', '0']), 'receive');
    assert.equal(r1.Messages.length, 1);
    const m = r1.Messages[0];
    assert.equal(m.MessageId, sent.MessageId);
    assert.equal(m.Body, 'hello');
    assert.equal(m.MD5OfBody, sent.MD5OfMessageBody);
    assert.equal(m.MD5OfMessageAttributes, sent.MD5OfMessageAttributes);
    assert.equal(m.Attributes.ApproximateReceiveCount, '1');
    assert.equal(m.Attributes.SenderId, '000000000000');
    assert.deepEqual(m.MessageAttributes, { a: { StringValue: 'x', DataType: 'String' },
                                            n: { StringValue: '42', DataType: 'Number.int' } });
    const r2 = ok(await A(['receive-message', '--queue-url', U, '--visibility-timeout', '30', '--attribute-names',
                           'ApproximateReceiveCount']), 'receive again');
    assert.equal(r2.Messages[0].Attributes.ApproximateReceiveCount, '2');
    const RH = r2.Messages[0].ReceiptHandle;
    //  Held for 30 s: nobody else gets it.
    assert.equal(ok(await A(['receive-message', '--queue-url', U, '--wait-time-seconds', '1']), 'hidden'), null);
    ok(await A(['change-message-visibility', '--queue-url', U, '--receipt-handle', RH, '--visibility-timeout', '60']), 'cmv');
    ok(await A(['delete-message', '--queue-url', U, '--receipt-handle', RH]), 'delete');
    ok(await A(['delete-message', '--queue-url', U, '--receipt-handle', RH]), 'delete twice is fine');
    fails(await A(['change-message-visibility', '--queue-url', U, '--receipt-handle', RH, '--visibility-timeout', '5']),
          'AWS.SimpleQueueService.MessageNotInflight', 'cmv of a deleted message');
    fails(await A(['delete-message', '--queue-url', U, '--receipt-handle', 'garbage']), 'ReceiptHandleIsInvalid',
          'garbage handle');
    //  A handle with one character changed is refused (HMAC).
    const forged = RH.slice(0, 20) + (RH[20] === 'A' ? 'B' : 'A') + RH.slice(21);
    fails(await A(['delete-message', '--queue-url', U, '--receipt-handle', forged]), 'ReceiptHandleIsInvalid', 'forged');

    const batch = ok(await A(['send-message-batch', '--queue-url', U, '--entries',
        '[{"Id":"a","MessageBody":"x","MessageAttributes":{"k":{"DataType":"Binary","BinaryValue":"AAEC"}}},{"Id":"b","MessageBody":"y"}]']),
        'batch');
    assert.deepEqual(batch.Successful.map((e) => e.Id).sort(), ['a', 'b']);
    fails(await A(['send-message-batch', '--queue-url', U, '--entries',
                   '[{"Id":"a","MessageBody":"x"},{"Id":"a","MessageBody":"y"}]']),
          'AWS.SimpleQueueService.BatchEntryIdsNotDistinct', 'duplicate ids');
    const got = ok(await A(['receive-message', '--queue-url', U, '--max-number-of-messages', '10',
                            '--message-attribute-names', 'All', '--wait-time-seconds', '1']), 'receive batch');
    assert.deepEqual(got.Messages.map((x) => x.Body).sort(), ['x', 'y']);
    const x = got.Messages.find((y) => y.Body === 'x');
    assert.deepEqual(x.MessageAttributes.k, { BinaryValue: 'AAEC', DataType: 'Binary' });
    const del = ok(await A(['delete-message-batch', '--queue-url', U, '--entries', JSON.stringify(
        got.Messages.map((y, i) => ({ Id: `d${i}`, ReceiptHandle: y.ReceiptHandle })))]), 'delete batch');
    assert.equal(del.Successful.length, 2);

    ok(await A(['send-message', '--queue-url', U, '--message-body', 'to-purge']), 'send');
    ok(await A(['purge-queue', '--queue-url', U]), 'purge');
    fails(await A(['purge-queue', '--queue-url', U]), 'AWS.SimpleQueueService.PurgeQueueInProgress', 'second purge');
    assert.equal(ok(await A(['receive-message', '--queue-url', U, '--wait-time-seconds', '1']), 'after purge'), null);
    const attrs = ok(await A(['get-queue-attributes', '--queue-url', U, '--attribute-names',
                              'ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible']), 'counts').Attributes;
    assert.deepEqual(attrs, { ApproximateNumberOfMessages: '0', ApproximateNumberOfMessagesNotVisible: '0' });
});

test('authentication: wrong secret, unknown key', async () => {
    fails(await A(['list-queues'], { secret: 'wrong' }), 'SignatureDoesNotMatch', 'wrong secret');
    fails(await A(['list-queues'], { akid: 'AKIDNOBODY' }), 'InvalidClientTokenId', 'unknown key');
    ok(await A(['list-queues'], { akid: 'AKIDOTHER', secret: 'other' }), 'second key of the table');
});

//  Last: a clean exit (0) after SIGTERM; under the sanitizer build a leak
//  or a shutdown that hangs fails here (lib.mjs's own after hook SIGKILLs
//  what is left, so this cannot wait for after()).
test('the SQS door shuts down cleanly', async () => {
    assert.equal(await ctx.broker.stop(), 0, ctx.broker.logs().slice(-3000));
});
