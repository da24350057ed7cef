//  bench/fanout_load.mjs - load generator of the "fanout" scenario: N
//  consumer groups each receive every message of one queue.
//
//  node bench/fanout_load.mjs --url U --queue Q --groups 4 [options]
//    --rate 1000          offered push rate, msg/s (all producers together)
//    --seconds 20         how long the producers push
//    --producers 2 --batch 100 --payload 256 --partitions 100
//    --consumers 1        consumers per group
//    --pop-partitions 10  partitions claimed per pop (batch = --batch)
//    --drain-timeout 120  seconds to wait after the push phase for every
//                         group to catch up
//    --sample-ms 500      lag sampling period
//
//  The groups g0..g(N-1) are created by a first (empty) pop before anything
//  is pushed, so each must receive every message. Producers push batches of
//  --batch to random partitions, paced at --rate; each group's consumers
//  long-poll the wildcard route with consumerGroup and ack with
//  /ack/batch. Lag of a group = messages pushed so far - messages it has
//  acked, sampled every --sample-ms; end-to-end latency = receipt time -
//  the producer's timestamp in the payload. Prints one JSON line.

import http from 'node:http';
import { makeRequest } from './http.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--'))
        acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const url = new URL(args.url || 'http://127.0.0.1:6632');
const queue = args.queue || 'fanout';
const groups = Number(args.groups || 1);
const rate = Number(args.rate || 1000);
const seconds = Number(args.seconds || 20);
const producers = Number(args.producers || 2);
const batch = Number(args.batch || 100);
const payloadBytes = Number(args.payload || 256);
const partitions = Number(args.partitions || 100);
const consumersPerGroup = Number(args.consumers || 1);
const popPartitions = Number(args['pop-partitions'] || 10);
const drainTimeout = Number(args['drain-timeout'] || 120);
const sampleMs = Number(args['sample-ms'] || 500);

const agentOpts = { keepAlive: true, maxSockets: 1 };

const request = makeRequest(url, 60000);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

function percentile (values, p) {
    if (!values.length)
        return null;
    const sorted = Float64Array.from(values).sort();
    return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] * 10) / 10;
}

const filler = 'x'.repeat(Math.max(0, payloadBytes - 40));
let pushed = 0;
let pushing = true;
let stopped = false;
let errors = 0;
let lastError = '';
const g = Array.from({ length: groups }, (_, i) => ({
    name: `g${i}`, consumed: 0, e2e: [], lag: [],
}));

function fail (what, r) {
    errors++;
    lastError = `${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`;
}

async function producer (id, t0) {
    const agent = new http.Agent(agentOpts);
    const gap = (producers * batch * 1000) / rate;
    let next = t0 + id * (gap / producers);
    let seq = 0;
    while (pushing) {
        if (now() < next) {
            await sleep(Math.min(20, next - now()));
            continue;
        }
        next += gap;
        const items = [];
        for (let i = 0; i < batch; i++) {
            items.push({ queue, partition: `p${Math.floor(Math.random() * partitions)}`,
                         payload: { s: seq++, w: id, t: Date.now(), f: filler } });
        }
        const r = await request(agent, 'POST', '/api/v1/push', { items });
        if (r.status !== 201) {
            fail('push', r);
            continue;
        }
        pushed += batch;
    }
    agent.destroy();
}

async function consumer (grp) {
    const agent = new http.Agent(agentOpts);
    const path = `/api/v1/pop/queue/${encodeURIComponent(queue)}?batch=${batch}&partitions=${popPartitions}` +
                 `&wait=true&timeout=1000&consumerGroup=${grp.name}`;
    while (!stopped) {
        const r = await request(agent, 'GET', path);
        if (r.status === 204)
            continue;
        if (r.status !== 200) {
            fail('pop', r);
            await sleep(50);
            continue;
        }
        const msgs = r.body.messages;
        const t = Date.now();
        const acks = msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId,
                                        leaseId: m.leaseId, status: 'completed', consumerGroup: grp.name }));
        const a = await request(agent, 'POST', '/api/v1/ack/batch', { acknowledgments: acks });
        if (a.status !== 200 || !Array.isArray(a.body) || a.body.some((x) => !x.success)) {
            fail('ack', a);
            continue;
        }
        grp.consumed += msgs.length;
        for (const m of msgs)
            grp.e2e.push(t - m.data.t);
    }
    agent.destroy();
}

async function main () {
    //  A fresh broker spools pushes until the spool's first report: wait
    //  until they go straight to PostgreSQL
    const agent = new http.Agent(agentOpts);
    for (let i = 0; ; i++) {
        const r = await request(agent, 'POST', '/api/v1/push', { items: [{ queue: `${queue}-warm-up`, payload: 0 }] });
        if (r.status === 201 && r.body[0].status === 'queued')
            break;
        if (i > 200)
            throw new Error(`pushes are not stored directly: ${r.status} ${JSON.stringify(r.body)}`);
        await sleep(100);
    }
    //  The queue, then each group by a first pop (nothing to get yet)
    let r = await request(agent, 'POST', '/api/v1/configure', { queue, options: { leaseTime: 60 } });
    if (r.status !== 200)
        throw new Error(`configure: ${r.status} ${JSON.stringify(r.body)}`);
    for (const grp of g) {
        r = await request(agent, 'GET', `/api/v1/pop/queue/${encodeURIComponent(queue)}?batch=1&consumerGroup=${grp.name}`);
        if (r.status !== 204)
            throw new Error(`group ${grp.name}: first pop answered ${r.status}`);
    }
    agent.destroy();

    const consumers = g.flatMap((grp) => Array.from({ length: consumersPerGroup }, () => consumer(grp)));
    const t0 = now();
    const series = [];
    const sampler = setInterval(() => {
        const t = (now() - t0) / 1000;
        const row = [Math.round(t * 10) / 10, pushed];
        for (const grp of g) {
            const lag = pushed - grp.consumed;
            grp.lag.push(lag);
            row.push(lag);
        }
        series.push(row);
    }, sampleMs);
    const prods = Array.from({ length: producers }, (_, i) => producer(i, t0));
    await sleep(seconds * 1000);
    pushing = false;
    await Promise.all(prods);
    const tPush = (now() - t0) / 1000;
    const deliveredAtPushEnd = g.reduce((a, grp) => a + grp.consumed, 0);
    const lagAtPushEnd = g.map((grp) => pushed - grp.consumed);
    const deadline = now() + drainTimeout * 1000;
    while (g.some((grp) => grp.consumed < pushed) && now() < deadline)
        await sleep(50);
    const tEnd = (now() - t0) / 1000;
    await sleep(sampleMs + 50);
    clearInterval(sampler);
    stopped = true;
    await Promise.all(consumers);
    const delivered = g.reduce((a, grp) => a + grp.consumed, 0);
    const out = {
        groups, offered_per_s: rate, seconds: Math.round(tPush * 10) / 10,
        pushed, pushed_per_s: Math.round(pushed / tPush),
        delivered_per_s_push: Math.round(deliveredAtPushEnd / tPush),
        delivered, delivered_per_s: Math.round(delivered / tEnd),
        caught_up: g.every((grp) => grp.consumed >= pushed),
        catch_up_s: Math.round((tEnd - tPush) * 10) / 10,
        per_group: g.map((grp, i) => ({
            group: grp.name, consumed: grp.consumed, msgs_per_s: Math.round(grp.consumed / tEnd),
            lag_max: Math.max(0, ...grp.lag), lag_p50: percentile(grp.lag, 0.5), lag_push_end: lagAtPushEnd[i],
            e2e_p50_ms: percentile(grp.e2e, 0.5), e2e_p99_ms: percentile(grp.e2e, 0.99),
        })),
        errors, last_error: lastError,
        series_cols: ['t_s', 'pushed', ...g.map((grp) => `lag_${grp.name}`)],
        series,
    };
    console.log(JSON.stringify(out));
    if (errors || !out.caught_up)
        process.exitCode = 1;
}

main().catch((e) => { console.error(`fanout_load: ${e.stack || e}`); process.exit(1); });
