//  bench/sink_load.mjs - the "sink" benchmark's driver (bench/sink.sh).
//  Starts s3rver (npm) on a free port with a bucket, then for each format
//  runs build/queen-sink against the broker at --url while producers push
//  --messages messages (about 200-byte JSON payloads, 100 partitions,
//  batches of 1,000) into a fresh queue; measures from the first push
//  until the sink has written every message (its queen_sink_rows_written
//  counter), and the bytes of the objects. Prints one JSON line per format.
//  Usage: node bench/sink_load.mjs --url URL --sink BIN --messages N --port P --s3port P --dir DIR

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import S3rver from 's3rver';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
    (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const N = Number(args.messages || 200000);
const dir = args.dir;

const s3 = new S3rver({ port: Number(args.s3port), address: '127.0.0.1', directory: path.join(dir, 's3'),
    silent: true, configureBuckets: [{ name: 'bench' }] });
await s3.run();

async function push (queue) {
    const t0 = Date.now();
    for (let i = 0; i < N; i += 1000) {
        const items = [];
        for (let j = i; j < Math.min(i + 1000, N); j++)
            items.push({ queue, partition: `p${j % 100}`, payload: {
                orderId: j, customer: `c-${j % 5000}`, amount: (j % 997) * 1.25, currency: 'EUR',
                items: [{ sku: `sku-${j % 300}`, qty: 1 + (j % 4) }], status: j % 10 ? 'paid' : 'refunded',
                note: 'benchmark order payload of about two hundred bytes' } });
        const r = await fetch(`${args.url}/api/v1/push`, { method: 'POST', headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ items }) });
        if (r.status !== 201)
            throw new Error(`push answered ${r.status}: ${await r.text()}`);
    }
    return Date.now() - t0;
}

function objectBytes (prefix) {
    let bytes = 0, files = 0;
    const walk = (d) => {
        if (!fs.existsSync(d))
            return;
        for (const e of fs.readdirSync(d, { withFileTypes: true })) {
            const p = path.join(d, e.name);
            if (e.isDirectory())
                walk(p);
            else if (e.name.endsWith('._S3rver_object')) {
                bytes += fs.statSync(p).size;
                files++;
            }
        }
    };
    walk(path.join(dir, 's3', 'bench', prefix));
    return { bytes, files };
}

async function run (format, compression) {
    const queue = `bsink_${format}`;
    const proc = spawn(args.sink, [], { env: { ...process.env, QUEEN_URL: args.url, SINK_QUEUES: queue,
        SINK_FORMAT: format, SINK_COMPRESSION: compression, SINK_WINDOW: '10s', SINK_LATENESS_MS: '1000',
        SINK_WAIT_MS: '500', SINK_BATCH: '5000', SINK_PARTITIONS: '100', SINK_PORT: args.port,
        S3_ENDPOINT: `http://127.0.0.1:${args.s3port}`, S3_BUCKET: 'bench', S3_PREFIX: format,
        S3_ACCESS_KEY_ID: 'S3RVER', S3_SECRET_ACCESS_KEY: 'S3RVER', S3_PATH_STYLE: 'true', LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'inherit', 'inherit'] });
    const t0 = Date.now();
    const pushMs = await push(queue);
    let written = 0;
    while (written < N) {
        await new Promise((r) => setTimeout(r, 250));
        const m = await (await fetch(`http://127.0.0.1:${args.port}/metrics`)).text().catch(() => '');
        const x = /queen_sink_rows_written (\d+)/.exec(m);
        written = x ? Number(x[1]) : 0;
        if (Date.now() - t0 > 1500000)
            throw new Error(`sink ${format}: ${written} of ${N} after 25 min`);
    }
    const ms = Date.now() - t0;
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('close', r));
    const { bytes, files } = objectBytes(format);
    console.log(JSON.stringify({ format, compression, messages: N, push_ms: pushMs, total_ms: ms,
        msgs_per_s: Math.round(N / (ms / 1000)), objects: files, bytes,
        bytes_per_million: Math.round(bytes * 1e6 / N) }));
}

await run('parquet', 'zstd');
await run('jsonl', 'gzip');
await s3.close();
