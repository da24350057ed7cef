//  bench/card_load.mjs - load generator of the "cardinality" scenario: grows
//  one queue to many partitions while serving steady load, and measures the
//  steady load at checkpoints (partition counts).
//
//  node bench/card_load.mjs --url U --queue Q [options]
//    --checkpoints 1000,100000,1000000   partition counts to measure at
//    --hot 1000            partitions of the steady load (h0..h999); they
//                          are the first ones created, by pushes
//    --rate 3000           new partitions per second while growing (target)
//    --grow-batch 500      new partitions per growth push (one message each)
//    --grow-conns 2        connections pushing new partitions
//    --steady-rate 1000    msg/s of the steady producers while growing
//    --producers 2 --consumers 2 --batch 100 --pop-partitions 10 --payload 256
//    --window 15           seconds of each measurement window
//    --drain-timeout 300   seconds to wait for the consumers to catch up
//    --checkpoint-cmd CMD  run `sh -c CMD` at each checkpoint (load paused,
//                          queue drained) with QN_CARD_PARTITIONS set
//    --max-seconds 3000    give up (exit 1) after this long
//
//  Phases: create the hot partitions; at each checkpoint (growth paused,
//  everything pushed so far consumed) a measurement window: producers and
//  consumers closed-loop on the hot partitions for --window seconds, then
//  (drained again) the checkpoint command; then grow to the next one with
//  the steady load running (producers paced at --steady-rate, consumers
//  popping whatever is ready: hot and new partitions alike).
//
//  Producers push --batch items, each to a random hot partition. Consumers
//  pop the wildcard route (batch, partitions, wait=false; an empty pop
//  backs off 5 ms) and ack the whole batch with /ack/batch. Latencies are
//  HTTP round trips seen by the client. Prints one JSON line per window and
//  per growth phase, then {"phase":"done",...}.

import http from 'node:http';
import { execFileSync } from 'node:child_process';
import { makeRequest } from './http.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--'))
        acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const url = new URL(args.url || 'http://127.0.0.1:6632');
const queue = args.queue || 'card';
const checkpoints = (args.checkpoints || '1000,100000,1000000').split(',').map(Number);
const hot = Number(args.hot || 1000);
const rate = Number(args.rate || 3000);
const growBatch = Number(args['grow-batch'] || 500);
const growConns = Number(args['grow-conns'] || 2);
const steadyRate = Number(args['steady-rate'] || 1000);
const producers = Number(args.producers || 2);
const consumers = Number(args.consumers || 2);
const batch = Number(args.batch || 100);
const popPartitions = Number(args['pop-partitions'] || 10);
const payloadBytes = Number(args.payload || 256);
const windowSeconds = Number(args.window || 15);
const drainTimeout = Number(args['drain-timeout'] || 300);
const checkpointCmd = args['checkpoint-cmd'] || '';
const maxSeconds = Number(args['max-seconds'] || 3000);

if (checkpoints.some((c, i) => !(c >= hot) || (i > 0 && c <= checkpoints[i - 1])))
    throw new Error('--checkpoints must be increasing and >= --hot');

const agentOpts = { keepAlive: true, maxSockets: 1 };

const request = makeRequest(url, 60000);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

//  ------------------------------------------------------------ state
const filler = 'x'.repeat(Math.max(0, payloadBytes - 40));
const counts = {
    hotPushed: 0, hotConsumed: 0, newPushed: 0, newConsumed: 0,
    partitions: 0,              //  Partitions created so far (hot + new)
    errors: 0, lastError: '',
};
let mode = 'idle';              //  idle | paced | closed | stop
let stats = null;               //  Counters of the current phase

function newStats () {
    return { pushed: 0, consumed: 0, pops: 0, emptyPops: 0, popLat: [], pushLat: [], ackLat: [],
             created: 0, t0: now() };
}

function fail (what, r) {
    counts.errors++;
    counts.lastError = `${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`;
}

function percentile (values, p) {
    if (!values.length)
        return null;
    const sorted = Float64Array.from(values).sort();
    return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] * 100) / 100;
}

//  ------------------------------------------------------------ workers
async function producer (id) {
    const agent = new http.Agent(agentOpts);
    let seq = 0;
    let next = now();
    while (mode !== 'stop') {
        if (mode !== 'paced' && mode !== 'closed') {
            await sleep(10);
            next = now();
            continue;
        }
        if (mode === 'paced') {
            //  steadyRate msg/s over all producers
            const gap = (producers * batch * 1000) / steadyRate;
            if (now() < next) {
                await sleep(Math.min(50, next - now()));
                continue;
            }
            next = Math.max(next + gap, now() - gap);
        }
        const items = [];
        for (let i = 0; i < batch; i++) {
            const p = Math.floor(Math.random() * hot);
            items.push({ queue, partition: `h${p}`, payload: { s: seq++, w: id, t: Date.now(), f: filler } });
        }
        const st = stats;
        const t0 = now();
        const r = await request(agent, 'POST', '/api/v1/push', { items });
        if (r.status !== 201) {
            fail('push', r);
            continue;
        }
        st.pushLat.push(now() - t0);
        st.pushed += batch;
        counts.hotPushed += batch;
    }
    agent.destroy();
}

async function consumer () {
    const agent = new http.Agent(agentOpts);
    const path = `/api/v1/pop/queue/${encodeURIComponent(queue)}?batch=${batch}&partitions=${popPartitions}&wait=false`;
    while (mode !== 'stop') {
        const st = stats;
        const t0 = now();
        const r = await request(agent, 'GET', path);
        if (r.status === 204) {
            st.emptyPops++;
            await sleep(5);
            continue;
        }
        if (r.status !== 200) {
            fail('pop', r);
            await sleep(50);
            continue;
        }
        st.popLat.push(now() - t0);
        st.pops++;
        const msgs = r.body.messages;
        const acks = msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId,
                                        leaseId: m.leaseId, status: 'completed' }));
        const t1 = now();
        const a = await request(agent, 'POST', '/api/v1/ack/batch', { acknowledgments: acks });
        if (a.status !== 200 || !Array.isArray(a.body) || a.body.some((x) => !x.success)) {
            fail('ack', a);
            continue;
        }
        st.ackLat.push(now() - t1);
        st.consumed += msgs.length;
        for (const m of msgs) {
            if (m.partition.charCodeAt(0) === 104)      //  'h'
                counts.hotConsumed++;
            else
                counts.newConsumed++;
        }
    }
    agent.destroy();
}

//  Pushes one message to each of the partitions named prefix+from ..
//  prefix+(to-1), `growBatch` per request over `growConns` connections,
//  paced at `pace` new partitions/s (0 = as fast as possible).
async function createPartitions (prefix, from, to, pace) {
    const t0 = now();
    let nextName = from;
    async function one () {
        const agent = new http.Agent(agentOpts);
        while (nextName < to) {
            if (pace > 0) {
                const due = t0 + ((nextName - from) * 1000) / pace;
                if (now() < due) {
                    await sleep(Math.min(50, due - now()));
                    continue;
                }
            }
            const first = nextName;
            const last = Math.min(to, first + growBatch);
            nextName = last;
            const items = [];
            for (let i = first; i < last; i++)
                items.push({ queue, partition: `${prefix}${i}`, payload: { n: i } });
            const r = await request(agent, 'POST', '/api/v1/push', { items });
            if (r.status !== 201) {
                fail('grow push', r);
                throw new Error(`growth push failed: ${counts.lastError}`);
            }
            counts.partitions += items.length;
            stats.created += items.length;
            if (prefix !== 'h')
                counts.newPushed += items.length;
            else
                counts.hotPushed += items.length;
        }
        agent.destroy();
    }
    await Promise.all(Array.from({ length: growConns }, one));
}

async function drain () {
    const deadline = now() + drainTimeout * 1000;
    while (counts.hotConsumed < counts.hotPushed || counts.newConsumed < counts.newPushed) {
        if (now() > deadline)
            throw new Error(`consumers did not catch up in ${drainTimeout} s: ${JSON.stringify(counts)}`);
        await sleep(20);
    }
}

function summary (phase, st, extra) {
    const s = (now() - st.t0) / 1000;
    return {
        phase, ...extra, seconds: Math.round(s * 10) / 10,
        push_msgs_per_s: Math.round(st.pushed / s),
        pop_msgs_per_s: Math.round(st.consumed / s),
        pop_p50_ms: percentile(st.popLat, 0.5), pop_p99_ms: percentile(st.popLat, 0.99),
        push_p50_ms: percentile(st.pushLat, 0.5), push_p99_ms: percentile(st.pushLat, 0.99),
        ack_p50_ms: percentile(st.ackLat, 0.5), ack_p99_ms: percentile(st.ackLat, 0.99),
        pops: st.pops, empty_pops: st.emptyPops, msgs_per_pop: st.pops ? Math.round(st.consumed / st.pops) : 0,
        errors: counts.errors,
    };
}

function checkpoint (n) {
    if (!checkpointCmd)
        return;
    execFileSync('sh', ['-c', checkpointCmd], {
        stdio: ['ignore', 'ignore', 'inherit'],
        env: { ...process.env, QN_CARD_PARTITIONS: String(n) },
        timeout: 600000,
    });
}

async function main () {
    const started = now();
    const guard = setTimeout(() => {
        console.error(`card_load: gave up after ${maxSeconds} s: ${JSON.stringify(counts)}`);
        process.exit(1);
    }, maxSeconds * 1000);
    stats = newStats();
    const workers = [
        ...Array.from({ length: producers }, (_, i) => producer(i)),
        ...Array.from({ length: consumers }, () => consumer()),
    ];
    const done = Promise.all(workers);
    done.catch(() => {});

    //  A fresh broker spools pushes until the spool's first report: wait
    //  until they go straight to PostgreSQL
    const warm = new http.Agent(agentOpts);
    for (let i = 0; ; i++) {
        const r = await request(warm, 'POST', '/api/v1/push', { items: [{ queue: `${queue}-warm-up`, payload: 0 }] });
        if (r.status === 201 && r.body[0].status === 'queued')
            break;
        if (i > 200)
            throw new Error(`pushes are not stored directly: ${r.status} ${JSON.stringify(r.body)}`);
        await sleep(100);
    }
    warm.destroy();

    //  Hot partitions first: the queue starts from nothing
    mode = 'idle';
    await createPartitions('h', 0, hot, 0);
    let grown = 0;              //  New partitions g0..g(grown-1)
    for (const target of checkpoints) {
        //  Grow to the checkpoint with the steady load running (paced)
        const need = target - hot - grown;
        if (need > 0) {
            mode = 'paced';
            stats = newStats();
            await createPartitions('g', grown, grown + need, rate);
            const g = summary('growth', stats, { from: hot + grown, to: target });
            g.partitions_per_s = Math.round(stats.created / g.seconds);
            grown += need;
            console.log(JSON.stringify(g));
        }
        //  Pause, let the consumers catch up, then the measurement window:
        //  closed loop on the hot partitions
        mode = 'idle';
        await drain();
        stats = newStats();
        mode = 'closed';
        await sleep(windowSeconds * 1000);
        const w = summary('window', stats, { partitions: counts.partitions });
        mode = 'idle';
        console.log(JSON.stringify(w));
        await drain();
        if (counts.errors)
            throw new Error(`errors: ${counts.lastError}`);
        //  Drained and quiet: the checkpoint command
        checkpoint(counts.partitions);
    }
    mode = 'stop';
    await done;
    clearTimeout(guard);
    console.log(JSON.stringify({ phase: 'done', partitions: counts.partitions,
                                 seconds: Math.round((now() - started) / 100) / 10, ...counts }));
}

main().catch((e) => { console.error(`card_load: ${e.stack || e}`); process.exit(1); });
