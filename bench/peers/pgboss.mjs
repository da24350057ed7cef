//  bench/peers/pgboss.mjs - pg-boss load generator of bench/peers.sh, the
//  same shapes as bench/load.mjs (push, cycle) on the same PostgreSQL
//  (synchronous_commit on): jobs are sent in batches (boss.insert of
//  --batch jobs = one INSERT), fetched in batches (boss.fetch batchSize)
//  and completed in batches (boss.complete with the fetched ids).
//
//  node bench/peers/pgboss.mjs push  --db postgres://... --queue Q --conns 8 --batch 100 --payload 256 --seconds 15
//  node bench/peers/pgboss.mjs cycle --db postgres://... --queue Q --producers 4 --consumers 4 --batch 100 --payload 256 --seconds 15
//  Prints one JSON line with the figures. Each worker is one async loop;
//  the pool has one connection per worker. A consumer that fetches nothing
//  sleeps 5 ms (pg-boss's own work() polls every 2 s at least).

import PgBoss from 'pg-boss';

const args = Object.fromEntries(process.argv.slice(3).reduce((acc, a, i, all) => {
    if (a.startsWith('--'))
        acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const mode = process.argv[2];
const db = args.db || 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
const queue = args.queue || 'bench';
const seconds = Number(args.seconds || 15);
const batch = Number(args.batch || 100);
const payloadBytes = Number(args.payload || 256);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const filler = 'x'.repeat(Math.max(0, payloadBytes - 40));

async function producer (boss, deadline, stats) {
    let seq = 0;
    while (Date.now() < deadline) {
        const jobs = [];
        for (let i = 0; i < batch; i++)
            jobs.push({ name: queue, data: { s: seq++, t: Date.now(), f: filler } });
        try {
            await boss.insert(jobs);
            stats.pushed += batch;
        } catch (e) {
            stats.errors++;
            stats.lastError = String(e);
        }
    }
}

async function consumer (boss, deadline, stats) {
    while (Date.now() < deadline) {
        const jobs = await boss.fetch(queue, { batchSize: batch });
        if (!jobs || jobs.length === 0) {
            await sleep(5);
            continue;
        }
        try {
            await boss.complete(queue, jobs.map((j) => j.id));
            stats.consumed += jobs.length;
        } catch (e) {
            stats.errors++;
            stats.lastError = String(e);
        }
    }
}

async function main () {
    const workers = mode === 'push' ? Number(args.conns || 8)
                                    : Number(args.producers || 4) + Number(args.consumers || 4);
    const boss = new PgBoss({ connectionString: db, max: workers + 2 });
    boss.on('error', (e) => console.error(`pg-boss: ${e.message}`));
    await boss.start();
    await boss.createQueue(queue);
    const stats = { pushed: 0, consumed: 0, errors: 0, lastError: '' };
    const deadline = Date.now() + seconds * 1000;
    const t0 = Date.now();
    if (mode === 'push') {
        await Promise.all(Array.from({ length: workers }, () => producer(boss, deadline, stats)));
        const s = (Date.now() - t0) / 1000;
        console.log(JSON.stringify({ mode, msgs_per_s: Math.round(stats.pushed / s), ...stats, seconds: s }));
    }
    else if (mode === 'cycle') {
        await Promise.all([
            ...Array.from({ length: Number(args.producers || 4) }, () => producer(boss, deadline, stats)),
            ...Array.from({ length: Number(args.consumers || 4) }, () => consumer(boss, deadline, stats)),
        ]);
        const s = (Date.now() - t0) / 1000;
        console.log(JSON.stringify({ mode, consumed_per_s: Math.round(stats.consumed / s),
                                     pushed_per_s: Math.round(stats.pushed / s), ...stats, seconds: s }));
    }
    else {
        throw new Error(`unknown mode ${mode}`);
    }
    await boss.stop({ graceful: false, wait: true, timeout: 5000 });
}

main().catch((e) => { console.error(`pgboss: ${e.stack || e}`); process.exit(1); });
