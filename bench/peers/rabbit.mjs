//  bench/peers/rabbit.mjs - RabbitMQ load generator of bench/peers.sh, the
//  same shapes as bench/load.mjs (push, cycle) with equivalent durability:
//  a durable queue, persistent messages, publisher confirms (a batch counts
//  once the broker confirmed all of it), manual acks.
//
//  node bench/peers/rabbit.mjs wait  --url amqp://127.0.0.1:PORT [--seconds 60]
//  node bench/peers/rabbit.mjs push  --url U --queue Q --conns 8 --batch 100 --payload 256 --seconds 15
//  node bench/peers/rabbit.mjs cycle --url U --queue Q --producers 4 --consumers 4 --batch 100 --payload 256 --seconds 15
//  Prints one JSON line with the figures.
//
//  Publishers: one connection + confirm channel each; publish --batch
//  persistent messages, then waitForConfirms. Consumers: one connection +
//  channel each, prefetch --batch, manual ack with multiple=true once
//  --batch messages are unacked (or after 20 ms idle): the batched acks of
//  a Queen consumer acking a popped batch.

import amqp from 'amqplib';

const args = Object.fromEntries(process.argv.slice(3).reduce((acc, a, i, all) => {
    if (a.startsWith('--'))
        acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const mode = process.argv[2];
const url = args.url || 'amqp://127.0.0.1:5672';
const queue = args.queue || 'bench';
const seconds = Number(args.seconds || 15);
const batch = Number(args.batch || 100);
const payloadBytes = Number(args.payload || 256);
const queueType = args['queue-type'] || 'classic';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const filler = 'x'.repeat(Math.max(0, payloadBytes - 40));

async function declare (ch) {
    await ch.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': queueType } });
}

async function producer (deadline, stats) {
    const conn = await amqp.connect(url);
    const ch = await conn.createConfirmChannel();
    await declare(ch);
    let seq = 0;
    while (Date.now() < deadline) {
        for (let i = 0; i < batch; i++) {
            const body = Buffer.from(JSON.stringify({ s: seq++, t: Date.now(), f: filler }));
            ch.sendToQueue(queue, body, { persistent: true, contentType: 'application/json' });
        }
        try {
            await ch.waitForConfirms();
            stats.pushed += batch;
        } catch (e) {
            stats.errors++;
            stats.lastError = String(e);
        }
    }
    await ch.close();
    await conn.close();
}

async function consumer (deadline, stats) {
    const conn = await amqp.connect(url);
    const ch = await conn.createChannel();
    await declare(ch);
    await ch.prefetch(batch);
    let unacked = 0;
    let last = null;
    let timer = null;
    const flush = () => {
        if (last) {
            ch.ack(last, true);
            stats.consumed += unacked;
            unacked = 0;
            last = null;
        }
    };
    const { consumerTag } = await ch.consume(queue, (msg) => {
        if (!msg)
            return;
        if (Date.now() >= deadline)
            return;             //  Left unacked: redelivered to nobody, counted by nobody
        last = msg;
        unacked++;
        if (unacked >= batch)
            flush();
        clearTimeout(timer);
        timer = setTimeout(flush, 20);
    }, { noAck: false });
    await sleep(Math.max(0, deadline - Date.now()));
    await ch.cancel(consumerTag);
    clearTimeout(timer);
    flush();
    await sleep(50);
    await ch.close();
    await conn.close();
}

async function main () {
    if (mode === 'wait') {
        const deadline = Date.now() + seconds * 1000;
        for (;;) {
            try {
                const conn = await amqp.connect(url);
                await conn.close();
                console.log(JSON.stringify({ mode, ready: true }));
                return;
            } catch (e) {
                if (Date.now() > deadline)
                    throw new Error(`RabbitMQ not reachable at ${url} after ${seconds} s: ${e.message}`);
                await sleep(500);
            }
        }
    }
    const stats = { pushed: 0, consumed: 0, errors: 0, lastError: '' };
    //  Start from an empty queue
    {
        const conn = await amqp.connect(url);
        const ch = await conn.createChannel();
        await declare(ch);
        await ch.purgeQueue(queue);
        await ch.close();
        await conn.close();
    }
    const deadline = Date.now() + seconds * 1000;
    const t0 = Date.now();
    if (mode === 'push') {
        await Promise.all(Array.from({ length: Number(args.conns || 8) }, () => producer(deadline, stats)));
        const s = (Date.now() - t0) / 1000;
        console.log(JSON.stringify({ mode, msgs_per_s: Math.round(stats.pushed / s), ...stats, seconds: s }));
    }
    else if (mode === 'cycle') {
        await Promise.all([
            ...Array.from({ length: Number(args.producers || 4) }, () => producer(deadline, stats)),
            ...Array.from({ length: Number(args.consumers || 4) }, () => consumer(deadline, stats)),
        ]);
        const s = (Date.now() - t0) / 1000;
        console.log(JSON.stringify({ mode, consumed_per_s: Math.round(stats.consumed / s),
                                     pushed_per_s: Math.round(stats.pushed / s), ...stats, seconds: s }));
    }
    else {
        throw new Error(`unknown mode ${mode}`);
    }
    //  Leave nothing behind
    const conn = await amqp.connect(url);
    const ch = await conn.createChannel();
    await ch.deleteQueue(queue);
    await ch.close();
    await conn.close();
}

main().catch((e) => { console.error(`rabbit: ${e.stack || e}`); process.exit(1); });
