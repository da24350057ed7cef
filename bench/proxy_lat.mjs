//  bench/proxy_lat.mjs - latency of single-item pushes, one at a time on
//  one keep-alive connection (QN_BENCH_KEY as in bench/http.mjs).
//  node bench/proxy_lat.mjs --url U --queue Q --samples 500
//  Prints {"samples", "p50_ms", "p99_ms", "max_ms"}.

import http from 'node:http';
import { makeRequest } from './http.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--'))
        acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const url = new URL(args.url);
const samples = Number(args.samples || 500);
const request = makeRequest(url, 30000);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const lat = [];
for (let i = 0; i < samples + 20; i++) {
    const t0 = process.hrtime.bigint();
    const r = await request(agent, 'POST', '/api/v1/push', { items: [{ queue: args.queue, payload: { i } }] });
    const t1 = process.hrtime.bigint();
    if (r.status !== 201)
        throw new Error(`push answered ${r.status}`);
    if (i >= 20)                //  warm-up
        lat.push(Number(t1 - t0) / 1e6);
}
agent.destroy();
lat.sort((a, b) => a - b);
const pct = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))].toFixed(2);
console.log(JSON.stringify({ samples: lat.length, p50_ms: Number(pct(0.5)), p99_ms: Number(pct(0.99)),
                             max_ms: Number(lat[lat.length - 1].toFixed(2)) }));
