//  bench/sqs_load.mjs SQS_ENDPOINT HTTP_URL SECONDS WORKERS
//  The SQS scenario's load (bench/sqs.sh): the same loop through both doors,
//  one after the other, on separate queues:
//    SQS   SendMessageBatch of 10, ReceiveMessage of 10, DeleteMessageBatch
//    HTTP  push of 10, pop of 10 (10 partitions), ack/batch
//  with WORKERS concurrent loops for SECONDS each; then the long-poll
//  wake-up: a parked ReceiveMessage (WaitTimeSeconds 20) and a send, 50
//  times, timing send-start -> receive-answer. Prints one JSON line.
import {
    SQSClient, CreateQueueCommand, SendMessageBatchCommand, ReceiveMessageCommand, DeleteMessageBatchCommand,
    SendMessageCommand,
} from '@aws-sdk/client-sqs';
import http from 'node:http';

const [endpoint, httpUrl, secondsArg, workersArg] = process.argv.slice(2);
const seconds = Number(secondsArg || 10), workers = Number(workersArg || 8);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const c = new SQSClient({ endpoint, region: 'us-east-1', maxAttempts: 1,
    credentials: { accessKeyId: 'AKIDBENCH', secretAccessKey: 'bench' } });

function req (method, path, body) {
    const u = new URL(path, httpUrl);
    const data = body ? Buffer.from(JSON.stringify(body)) : null;
    return new Promise((resolve, reject) => {
        const r = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method, agent,
            headers: data ? { 'content-type': 'application/json', 'content-length': data.length } : {} }, (res) => {
            let t = '';
            res.on('data', (d) => { t += d; });
            res.on('end', () => resolve({ status: res.statusCode, body: t ? JSON.parse(t) : null }));
        });
        r.on('error', reject);
        r.end(data);
    });
}

function pct (xs, p) {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : 0;
}

async function sqsLoop (QueueUrl, until, stats) {
    while (Date.now() < until) {
        await c.send(new SendMessageBatchCommand({ QueueUrl, Entries: [...Array(10).keys()].map((k) => ({
            Id: `e${k}`, MessageBody: `{"k":${k}}` })) }));
        const r = await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
        if (r.Messages) {
            await c.send(new DeleteMessageBatchCommand({ QueueUrl,
                Entries: r.Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })) }));
            stats.n += r.Messages.length;
        }
    }
}

async function httpLoop (queue, until, stats) {
    while (Date.now() < until) {
        await req('POST', '/api/v1/push', { items: [...Array(10).keys()].map((k) => ({ queue, payload: { k } })) });
        const r = await req('GET', `/api/v1/pop/queue/${queue}?batch=10&partitions=10&wait=false`);
        if (r.status === 200) {
            await req('POST', '/api/v1/ack/batch', { acknowledgments: r.body.messages.map((m) => ({
                transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' })) });
            stats.n += r.body.messages.length;
        }
    }
}

const { QueueUrl } = await c.send(new CreateQueueCommand({ QueueName: 'bench-sqs' }));
//  The HTTP queue gets the same spread as the SQS one: 10 partitions.
const sqsStats = { n: 0 }, httpStats = { n: 0 };
let t0 = Date.now();
await Promise.all([...Array(workers).keys()].map(() => sqsLoop(QueueUrl, t0 + seconds * 1000, sqsStats)));
const sqsRate = sqsStats.n / ((Date.now() - t0) / 1000);
t0 = Date.now();
await Promise.all([...Array(workers).keys()].map((w) => httpLoop('bench-http', t0 + seconds * 1000, httpStats)));
const httpRate = httpStats.n / ((Date.now() - t0) / 1000);

const { QueueUrl: wq } = await c.send(new CreateQueueCommand({ QueueName: 'bench-wake' }));
const wake = [];
for (let i = 0; i < 50; i++) {
    const parked = c.send(new ReceiveMessageCommand({ QueueUrl: wq, WaitTimeSeconds: 20 }));
    await new Promise((r) => setTimeout(r, 50));
    const s = performance.now();
    await c.send(new SendMessageCommand({ QueueUrl: wq, MessageBody: 'w' }));
    const r = await parked;
    wake.push(performance.now() - s);
    await c.send(new DeleteMessageBatchCommand({ QueueUrl: wq, Entries: [{ Id: 'a', ReceiptHandle: r.Messages[0].ReceiptHandle }] }));
}
console.log(JSON.stringify({
    seconds, workers, sqs_msgs_per_s: Math.round(sqsRate), http_msgs_per_s: Math.round(httpRate),
    ratio: +(sqsRate / httpRate).toFixed(2), wake_p50_ms: +pct(wake, 0.5).toFixed(1), wake_p99_ms: +pct(wake, 0.99).toFixed(1),
}));
