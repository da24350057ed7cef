//  bench/mesh_load.mjs URL_A URL_B OUT_JSON [PARTS] - node load of bench/mesh.sh.
//  PARTS: "wake,rpc" (default) or one of them.
//  1. wake: push -> parked pop wake-up: a pop parks (wait=true) on A (same
//     broker) or on B (other broker), then one push on A; the time from
//     sending the push to the pop's answer, and to the push's own answer.
//     ROUNDS rounds each, alternated.
//  2. rpc: ephemeral request/reply across two brokers with node's http
//     client: REPLIERS loops on B (receive, reply), REQUESTERS loops on A
//     (request), for SECONDS: round trips per second and their latency.
//     (The generator of the first measurements; bench/mesh_rr.c is the
//     one that can load the brokers: node spent ~1.8 ms CPU per round trip.)
import http from 'node:http';
import fs from 'node:fs';
import { makeRequest } from './http.mjs';

const [urlA, urlB, out, partsArg] = process.argv.slice(2);
const PARTS = (partsArg || 'wake,rpc').split(',');
const A = new URL(urlA), B = new URL(urlB);
const reqA = makeRequest(A, 60000), reqB = makeRequest(B, 60000);
const ROUNDS = Number(process.env.MESH_ROUNDS || 200);
const SECONDS = Number(process.env.MESH_SECONDS || 10);
const REQUESTERS = Number(process.env.MESH_REQUESTERS || 32);
const REPLIERS = Number(process.env.MESH_REPLIERS || 32);
const agent = () => new http.Agent({ keepAlive: true, maxSockets: 1 });

function pct (v, p) {
    const s = [...v].sort((a, b) => a - b);
    return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function wakeups () {
    const pushAgent = agent(), popAgent = agent();
    await reqA(pushAgent, 'POST', '/api/v1/configure', { queue: 'bench-wake', options: {} });
    const same = [], cross = [], pushed = [];
    for (let i = 0; i < ROUNDS * 2; i++) {
        const crossRound = i % 2 === 1;
        const req = crossRound ? reqB : reqA;
        const pop = req(popAgent, 'GET', '/api/v1/pop/queue/bench-wake?wait=true&timeout=10000&autoAck=true');
        await sleep(15);                        //  The pop parks (its first attempt finds nothing)
        const t0 = process.hrtime.bigint();
        await reqA(pushAgent, 'POST', '/api/v1/push', { items: [{ queue: 'bench-wake', payload: { i } }] });
        pushed.push(Number(process.hrtime.bigint() - t0) / 1e6);
        const res = await pop;
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (res.status !== 200)
            throw new Error(`round ${i}: pop answered ${res.status}`);
        (crossRound ? cross : same).push(ms);
    }
    return { same, cross, pushed };
}

async function requestReply () {
    let stop = false, trips = 0, errors = 0;
    const lat = [];
    const repliers = Array.from({ length: REPLIERS }, async () => {
        const a = agent();
        while (!stop) {
            const w = await reqB(a, 'GET', '/api/v1/ephemeral/queues/bench-rpc/receive?timeout=1000');
            if (w.status !== 200)
                continue;
            await reqB(a, 'POST', '/api/v1/ephemeral/reply',
                       { replyTo: w.body.replyTo, correlationId: w.body.correlationId, payload: w.body.payload });
        }
    });
    await sleep(500);                           //  Every replier waits, and A knows
    const started = Date.now();
    const requesters = Array.from({ length: REQUESTERS }, async (_, k) => {
        const a = agent();
        for (let n = 0; Date.now() - started < SECONDS * 1000; n++) {
            const t0 = process.hrtime.bigint();
            const r = await reqA(a, 'POST', '/api/v1/ephemeral/queues/bench-rpc/request',
                                 { payload: { k, n }, timeout: 5000 });
            if (r.status === 200) {
                trips++;
                lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
            } else
                errors++;
        }
    });
    await Promise.all(requesters);
    const elapsed = (Date.now() - started) / 1000;
    stop = true;
    await Promise.all(repliers);
    return { trips, errors, elapsed, lat };
}

const result = {};
if (PARTS.includes('wake')) {
    const w = await wakeups();
    result.wake = {
        rounds: ROUNDS,
        same: { p50: pct(w.same, 0.5), p99: pct(w.same, 0.99) },
        cross: { p50: pct(w.cross, 0.5), p99: pct(w.cross, 0.99) },
        push: { p50: pct(w.pushed, 0.5), p99: pct(w.pushed, 0.99) },
    };
}
if (PARTS.includes('rpc')) {
    const rr = await requestReply();
    result.rpc = {
        requesters: REQUESTERS, repliers: REPLIERS, seconds: rr.elapsed, trips: rr.trips, errors: rr.errors,
        perSecond: rr.trips / rr.elapsed, p50: pct(rr.lat, 0.5), p99: pct(rr.lat, 0.99),
    };
}
fs.writeFileSync(out, JSON.stringify(result));
console.log(JSON.stringify(result));
