//  bench/kafka_http.mjs URL QUEUE COUNT CONNS - the HTTP read side of the
//  Kafka scenario (bench/kafka.sh): CONNS connections pop batches of 100
//  with autoAck (a read without a separate ack, like a Kafka fetch) from up
//  to 100 partitions until COUNT messages arrived (or 30 s pass without
//  one). Prints one JSON line.
import http from 'node:http';
import { makeRequest } from './http.mjs';

const [u, queue, countArg, connsArg] = process.argv.slice(2);
const request = makeRequest(new URL(u));
const count = Number(countArg);
const conns = Number(connsArg || 8);
const stats = { consumed: 0, errors: 0 };
let last = Date.now();

async function reader () {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    while (stats.consumed < count && Date.now() - last < 30000) {
        const r = await request(agent, 'GET', `/api/v1/pop/queue/${queue}?batch=100&partitions=100&wait=false&autoAck=true`);
        if (r.status === 200) {
            stats.consumed += r.body.messages.length;
            last = Date.now();
        }
        else if (r.status !== 204)
            stats.errors++;
    }
    agent.destroy();
}

const t0 = Date.now();
await Promise.all(Array.from({ length: conns }, reader));
const s = (Date.now() - t0) / 1000;
console.log(JSON.stringify({ mode: 'drain', ...stats, seconds: s, msgs_per_s: Math.round(stats.consumed / s) }));
process.exit(stats.consumed >= count ? 0 : 1);
