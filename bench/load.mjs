//  bench/load.mjs - HTTP load generator for the messaging benchmarks.
//  Plain HTTP/1.1 keep-alive, one connection per worker, bounded in time.
//
//  node bench/load.mjs push  --url U --queue Q --conns 8 --batch 100 --payload 256 --partitions 1000 --seconds 15
//  node bench/load.mjs cycle --url U --queue Q --producers 4 --consumers 4 --batch 100 --payload 256 --partitions 1000 --seconds 15
//  node bench/load.mjs wake  --url U --queue Q --samples 300 --interval 20
//  Prints one JSON line with the figures.

import http from 'node:http';
import { makeRequest } from './http.mjs';

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
const popPartitions = Number(args['pop-partitions'] || 100);

const request = makeRequest(url);

const filler = 'x'.repeat(Math.max(0, payloadBytes - 40));
function items (n, seq) {
    const out = [];
    for (let i = 0; i < n; i++) {
        const p = Math.floor(Math.random() * partitions);
        out.push({ queue, partition: `p${p}`, payload: { s: seq + i, t: Date.now(), f: filler } });
    }
    return out;
}

async function producer (deadline, stats) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let seq = 0;
    while (Date.now() < deadline) {
        const r = await request(agent, 'POST', '/api/v1/push', { items: items(batch, seq) });
        seq += batch;
        if (r.status !== 201) {
            stats.errors++;
            continue;
        }
        stats.pushed += batch;
    }
    agent.destroy();
}

async function consumer (deadline, stats) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    while (Date.now() < deadline) {
        const r = await request(agent, 'GET',
            `/api/v1/pop/queue/${queue}?batch=${batch}&partitions=${popPartitions}&wait=true&timeout=500`);
        if (r.status === 204)
            continue;
        if (r.status !== 200) {
            stats.errors++;
            continue;
        }
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

async function configure () {
    const agent = new http.Agent({ keepAlive: false });
    const r = await request(agent, 'POST', '/api/v1/configure', { queue, options: { leaseTime: 60 } });
    if (r.status !== 200)
        throw new Error(`configure failed: ${r.status}`);
}

function percentile (sorted, p) {
    return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function wake () {
    const samples = Number(args.samples || 300);
    const interval = Number(args.interval || 20);
    const popAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const pushAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const lat = [];
    for (let i = 0; i < samples; i++) {
        //  Park a pop, give it time to park, then push and time delivery.
        const popped = request(popAgent, 'GET', `/api/v1/pop/queue/${queue}?batch=1&wait=true&timeout=5000&autoAck=true`);
        await new Promise((r) => setTimeout(r, interval));
        const t0 = process.hrtime.bigint();
        request(pushAgent, 'POST', '/api/v1/push', { items: [{ queue, partition: 'w', payload: { i } }] });
        const r = await popped;
        const t1 = process.hrtime.bigint();
        if (r.status === 200)
            lat.push(Number(t1 - t0) / 1e6);
    }
    popAgent.destroy();
    pushAgent.destroy();
    lat.sort((a, b) => a - b);
    return { samples: lat.length, p50_ms: percentile(lat, 0.5), p99_ms: percentile(lat, 0.99),
             max_ms: lat[lat.length - 1] };
}

async function main () {
    await configure();
    if (mode === 'push') {
        const stats = { pushed: 0, errors: 0 };
        const deadline = Date.now() + seconds * 1000;
        const t0 = Date.now();
        await Promise.all(Array.from({ length: Number(args.conns || 8) }, () => producer(deadline, stats)));
        const s = (Date.now() - t0) / 1000;
        console.log(JSON.stringify({ mode, msgs_per_s: Math.round(stats.pushed / s), ...stats, seconds: s }));
    }
    else if (mode === 'cycle') {
        const stats = { pushed: 0, consumed: 0, errors: 0 };
        const deadline = Date.now() + seconds * 1000;
        const t0 = Date.now();
        await Promise.all([
            ...Array.from({ length: Number(args.producers || 4) }, () => producer(deadline, stats)),
            ...Array.from({ length: Number(args.consumers || 4) }, () => consumer(deadline, stats)),
        ]);
        const s = (Date.now() - t0) / 1000;
        console.log(JSON.stringify({ mode, consumed_per_s: Math.round(stats.consumed / s),
                                     pushed_per_s: Math.round(stats.pushed / s), ...stats, seconds: s }));
    }
    else if (mode === 'wake') {
        console.log(JSON.stringify({ mode, ...await wake() }));
    }
    else {
        throw new Error(`unknown mode ${mode}`);
    }
}

main().catch((e) => { console.error(e); process.exit(1); });
