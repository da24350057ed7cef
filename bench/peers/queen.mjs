//  bench/peers/queen.mjs - the cycle of bench/load.mjs (4 producers pushing
//  batches of 100 to random partitions, 4 consumers popping batch 100 and
//  acking with /ack/batch) with a choice of how many partitions one pop may
//  claim (--pop-partitions; load.mjs uses the default, 1) and of how many
//  partitions one push batch spans (--spread K: the batch goes to K random
//  partitions; default: a random partition per item, as load.mjs does).
//  bench/peers.sh runs it beside load.mjs to show what these shapes cost.
//
//  node bench/peers/queen.mjs cycle --url U --queue Q --producers 4 --consumers 4 --batch 100 \
//       --payload 256 --partitions 1000 --pop-partitions 10 [--spread 1] --seconds 15
//  Prints one JSON line (consumed_per_s, pushed_per_s, msgs_per_pop, ...).

import http from 'node:http';
import { makeRequest } from '../http.mjs';

const args = Object.fromEntries(process.argv.slice(3).reduce((acc, a, i, all) => {
    if (a.startsWith('--'))
        acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const mode = process.argv[2];
const url = new URL(args.url || 'http://127.0.0.1:6632');
const queue = args.queue || 'bench';
const seconds = Number(args.seconds || 15);
const batch = Number(args.batch || 100);
const payloadBytes = Number(args.payload || 256);
const partitions = Number(args.partitions || 1000);
const popPartitions = Number(args['pop-partitions'] || 1);
const spread = Number(args.spread || 0);       //  Partitions per push batch; 0 = random per item

const request = makeRequest(url);

const filler = 'x'.repeat(Math.max(0, payloadBytes - 40));

async function producer (deadline, stats) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let seq = 0;
    while (Date.now() < deadline) {
        const items = [];
        const chosen = Array.from({ length: spread }, () => Math.floor(Math.random() * partitions));
        for (let i = 0; i < batch; i++) {
            const p = spread ? chosen[i % spread] : Math.floor(Math.random() * partitions);
            items.push({ queue, partition: `p${p}`, payload: { s: seq++, t: Date.now(), f: filler } });
        }
        const r = await request(agent, 'POST', '/api/v1/push', { items });
        if (r.status !== 201)
            stats.errors++;
        else
            stats.pushed += batch;
    }
    agent.destroy();
}

async function consumer (deadline, stats) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const path = `/api/v1/pop/queue/${encodeURIComponent(queue)}?batch=${batch}&partitions=${popPartitions}` +
                 '&wait=true&timeout=500';
    while (Date.now() < deadline) {
        const r = await request(agent, 'GET', path);
        if (r.status === 204)
            continue;
        if (r.status !== 200) {
            stats.errors++;
            continue;
        }
        stats.pops++;
        const msgs = r.body.messages;
        const acks = msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId,
                                        leaseId: m.leaseId, status: 'completed' }));
        const a = await request(agent, 'POST', '/api/v1/ack/batch', { acknowledgments: acks });
        if (a.status !== 200)
            stats.errors++;
        else
            stats.consumed += msgs.length;
    }
    agent.destroy();
}

async function main () {
    if (mode !== 'cycle')
        throw new Error(`unknown mode ${mode}`);
    const agent = new http.Agent({ keepAlive: false });
    const r = await request(agent, 'POST', '/api/v1/configure', { queue, options: { leaseTime: 60 } });
    if (r.status !== 200)
        throw new Error(`configure failed: ${r.status}`);
    const stats = { pushed: 0, consumed: 0, pops: 0, errors: 0 };
    const deadline = Date.now() + seconds * 1000;
    const t0 = Date.now();
    await Promise.all([
        ...Array.from({ length: Number(args.producers || 4) }, () => producer(deadline, stats)),
        ...Array.from({ length: Number(args.consumers || 4) }, () => consumer(deadline, stats)),
    ]);
    const s = (Date.now() - t0) / 1000;
    console.log(JSON.stringify({ mode, consumed_per_s: Math.round(stats.consumed / s),
                                 pushed_per_s: Math.round(stats.pushed / s),
                                 msgs_per_pop: stats.pops ? Math.round(stats.consumed / stats.pops) : 0,
                                 ...stats, seconds: s }));
}

main().catch((e) => { console.error(`queen: ${e.stack || e}`); process.exit(1); });
