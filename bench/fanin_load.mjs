//  bench/fanin_load.mjs - load generator of the fan-in benchmark (bench/fanin.sh).
//  Producers push like `load.mjs cycle` (batches into --partitions
//  partitions of --queue); each consumer pops a batch (up to 100 partitions
//  per pop) and commits one transaction per batch: an ack for every popped
//  message, one push of the batch's aggregate to --out (partition agg-<c>,
//  deterministic transactionId), and a kv.set of the consumer's progress
//  record with ifVersion = the version its previous bundle wrote (the
//  exactly-once bookkeeping of docs/transactions.md). Plain HTTP/1.1
//  keep-alive, one connection per worker, bounded in time.
//
//  node bench/fanin_load.mjs --url U --queue Q --out O --producers 4 --consumers 4 --batch 100
//                            --payload 256 --partitions 1000 --seconds 15
//  Prints one JSON line with the figures.

import http from 'node:http';
import { makeRequest } from './http.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--'))
        acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const url = new URL(args.url || 'http://127.0.0.1:6632');
const queue = args.queue || 'fanin-src';
const out = args.out || 'fanin-out';
const seconds = Number(args.seconds || 15);
const batch = Number(args.batch || 100);
const payloadBytes = Number(args.payload || 256);
const partitions = Number(args.partitions || 1000);
const run = Date.now().toString(36);

const request = makeRequest(url);

const filler = 'x'.repeat(Math.max(0, payloadBytes - 40));

async function producer (deadline, stats) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let seq = 0;
    while (Date.now() < deadline) {
        const items = [];
        for (let i = 0; i < batch; i++)
            items.push({ queue, partition: `p${Math.floor(Math.random() * partitions)}`,
                         payload: { s: seq + i, t: Date.now(), f: filler } });
        seq += batch;
        const r = await request(agent, 'POST', '/api/v1/push', { items });
        if (r.status === 201)
            stats.pushed += batch;
        else
            stats.errors++;
    }
    agent.destroy();
}

async function consumer (c, deadline, stats) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const key = `${run}-c${c}`;
    let version = 0, bundles = 0, total = 0;
    while (Date.now() < deadline) {
        const r = await request(agent, 'GET',
            `/api/v1/pop/queue/${queue}?batch=${batch}&partitions=100&wait=true&timeout=500`);
        if (r.status === 204)
            continue;
        if (r.status !== 200) {
            stats.errors++;
            continue;
        }
        const msgs = r.body.messages;
        const ops = msgs.map((m) => ({ type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId,
                                       leaseId: m.leaseId }));
        ops.push({ type: 'push', items: [{ queue: out, partition: `agg-${c}`, transactionId: `${key}-${bundles + 1}`,
                   payload: { n: msgs.length, first: msgs[0].data.s, last: msgs[msgs.length - 1].data.s } }] });
        ops.push({ type: 'kv.set', bucket: 'fanin', key, value: { bundles: bundles + 1, messages: total + msgs.length },
                   ifVersion: version });
        const t = await request(agent, 'POST', '/api/v1/transaction', { operations: ops });
        if (t.status !== 200 || !t.body.success) {
            stats.errors++;
            if (stats.errors <= 3)
                console.error(`fanin: transaction failed: ${t.status} ${JSON.stringify(t.body).slice(0, 300)}`);
            continue;
        }
        version = t.body.results[t.body.results.length - 1].version;
        bundles++;
        total += msgs.length;
        stats.bundles++;
        stats.consumed += msgs.length;
    }
    agent.destroy();
}

async function main () {
    const agent = new http.Agent({ keepAlive: false });
    for (const q of [queue, out]) {
        const r = await request(agent, 'POST', '/api/v1/configure', { queue: q, options: { leaseTime: 60 } });
        if (r.status !== 200)
            throw new Error(`configure ${q} failed: ${r.status}`);
    }
    const stats = { pushed: 0, consumed: 0, bundles: 0, errors: 0 };
    const deadline = Date.now() + seconds * 1000;
    const t0 = Date.now();
    await Promise.all([
        ...Array.from({ length: Number(args.producers || 4) }, () => producer(deadline, stats)),
        ...Array.from({ length: Number(args.consumers || 4) }, (_, c) => consumer(c, deadline, stats)),
    ]);
    const s = (Date.now() - t0) / 1000;
    console.log(JSON.stringify({ mode: 'fanin', consumed_per_s: Math.round(stats.consumed / s),
                                 bundles_per_s: Math.round(stats.bundles / s), pushed_per_s: Math.round(stats.pushed / s),
                                 ...stats, seconds: s }));
}

main().catch((e) => { console.error(e); process.exit(1); });
