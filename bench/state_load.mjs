//  bench/state_load.mjs - HTTP load for the state benchmarks (bench/state.sh).
//  Plain HTTP/1.1 keep-alive, one connection per client, bounded in time.
//
//  node bench/state_load.mjs cas    --url U --bucket B --keys 1000 --clients 16 --seconds 15
//      each client: pick a random key, GET it, PUT value+1 with ifVersion;
//      counts successful CAS updates and 409 conflicts.
//  node bench/state_load.mjs timers --url U --queue Q --count 200 --spread 10000 --lead 1000
//      creates `count` timers via POST /api/v1/timers, due lead..lead+spread
//      ms from their creation, spread evenly (the lag is read from the
//      database afterwards).
//  Prints one JSON line with the figures.

import http from 'node:http';

const args = Object.fromEntries(process.argv.slice(3).reduce((acc, a, i, all) => {
    if (a.startsWith('--'))
        acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const mode = process.argv[2];
const url = new URL(args.url || 'http://127.0.0.1:6632');

function request (agent, method, path, text) {
    return new Promise((resolve, reject) => {
        const data = text === undefined ? undefined : Buffer.from(text);
        const req = http.request({
            host: url.hostname, port: url.port, method, path, agent,
            headers: data ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {},
        }, (res) => {
            const chunks = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => {
                const body = Buffer.concat(chunks).toString();
                resolve({ status: res.statusCode, body: body.length ? JSON.parse(body) : null });
            });
        });
        req.on('error', reject);
        if (data)
            req.write(data);
        req.end();
    });
}

function percentile (sorted, p) {
    return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : null;
}

async function cas () {
    const bucket = args.bucket || 'bench';
    const keys = Number(args.keys || 1000);
    const clients = Number(args.clients || 16);
    const seconds = Number(args.seconds || 15);
    const setup = new http.Agent({ keepAlive: true, maxSockets: 16 });
    for (let i = 0; i < keys; i += 100)
        await Promise.all(Array.from({ length: Math.min(100, keys - i) }, (_, k) =>
            request(setup, 'PUT', `/api/v1/kv/${bucket}/k${i + k}`, '0')));
    setup.destroy();
    const stats = { updates: 0, conflicts: 0, errors: 0 };
    const lat = [];
    const deadline = Date.now() + seconds * 1000;
    async function client () {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        while (Date.now() < deadline) {
            const key = `k${Math.floor(Math.random() * keys)}`;
            const t0 = process.hrtime.bigint();
            const cur = await request(agent, 'GET', `/api/v1/kv/${bucket}/${key}`);
            if (cur.status !== 200) {
                stats.errors++;
                continue;
            }
            const r = await request(agent, 'PUT', `/api/v1/kv/${bucket}/${key}?ifVersion=${cur.body.version}`,
                String(cur.body.value + 1));
            if (r.status === 200) {
                stats.updates++;
                lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
            }
            else if (r.status === 409)
                stats.conflicts++;
            else
                stats.errors++;
        }
        agent.destroy();
    }
    const t0 = Date.now();
    await Promise.all(Array.from({ length: clients }, client));
    const s = (Date.now() - t0) / 1000;
    lat.sort((a, b) => a - b);
    return { mode, updates_per_s: Math.round(stats.updates / s), ...stats, seconds: s,
             p50_ms: percentile(lat, 0.5), p99_ms: percentile(lat, 0.99) };
}

async function timers () {
    const queue = args.queue || 'bench-timers';
    const count = Number(args.count || 200);
    const spread = Number(args.spread || 10000);
    const lead = Number(args.lead || 1000);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const stats = { created: 0, errors: 0 };
    //  One at a time, each due `lead` ms after creation plus its slot: the
    //  timers come due one by one, spaced spread / count ms apart.
    const t0 = Date.now();
    for (let i = 0; i < count; i++) {
        const due = t0 + lead + Math.round(i * spread / count);
        const r = await request(agent, 'POST', '/api/v1/timers',
            JSON.stringify({ queue, partition: `p${i % 10}`, payload: { i }, delayMs: Math.max(0, due - Date.now()) }));
        if (r.status === 201)
            stats.created++;
        else
            stats.errors++;
    }
    agent.destroy();
    return { mode, ...stats, seconds: (Date.now() - t0) / 1000 };
}

async function main () {
    if (mode === 'cas')
        console.log(JSON.stringify(await cas()));
    else if (mode === 'timers')
        console.log(JSON.stringify(await timers()));
    else
        throw new Error(`unknown mode ${mode}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
