//  test/integration/cardinality.test.mjs - the small cardinality run of
//  issue 5 (the full one is bench/cardinality.sh): one queue grows from
//  nothing to 50,000 partitions while a steady load pushes to and consumes
//  from 100 hot partitions. Checks that every message is delivered exactly
//  once, that drained partitions leave the claim index (no ready row), and
//  that one call of pop, empty pop, ack and push touches about as many
//  buffers at 50,000 partitions as at 1,000 (auto_explain; the empty pop
//  exactly as many, the others at most the extra B-tree levels): the serve
//  path does not scan idle partitions. Latencies at both sizes are logged, not
//  asserted (shared 2-core machines, sanitizer build).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startBroker, http, psql, sleep, waitFor, PG_HOST, PG_PORT, pushItems, warmUp } from './lib.mjs';

const execFileP = promisify(execFile);
const Q = 'card';
const HOT = 100;                //  Partitions h0..h99 carry the steady load
const TOTAL = Number(process.env.QN_CARD_TOTAL || 50000);           //  Partitions at the end
const SMALL = 1000;             //  First probe point
const GROW_BATCH = 1000;        //  New partitions per growth push

let broker;
after(async () => {
    if (broker)
        await broker.stop();
});

//  Runs `sql` once per round under auto_explain and returns, per probe tag
//  of the last round, the buffers (shared hit + read) of its top plan node.
//  The first rounds warm the session's caches (plans, catalog).
async function probe (db, n) {
    const file = path.join(process.env.QN_TMP || os.tmpdir(), `card-probe-${process.pid}-${n}.sql`);
    const round = (tag, r) => `
SELECT /* ${tag}push_existing */ count(*) FROM queen.push ('', array_fill ('${Q}'::text, ARRAY[100]), ARRAY (SELECT 'h' || (g % 10) FROM generate_series (1, 100) g), array_fill (NULL::text, ARRAY[100]), array_fill (convert_to ('{"probe":true}', 'UTF8'), ARRAY[100]), array_fill (NULL::uuid, ARRAY[100]), array_fill (NULL::text, ARRAY[100]), array_fill (false, ARRAY[100]), false);
SELECT /* ${tag}pop */ coalesce (array_agg (partition_id), '{}') AS pids, coalesce (array_agg (seq), '{}') AS seqs, count (seq) AS n FROM queen.pop ('', '${Q}', NULL, NULL, NULL, NULL, 100, 10, gen_random_uuid (), false) WHERE seq IS NOT NULL \\gset
SELECT /* ${tag}ack */ count(*) FROM queen.ack ('', array_fill ('__QUEUE_MODE__'::text, ARRAY[:n]), :'pids'::bigint[], array_fill (NULL::text, ARRAY[:n]), :'seqs'::bigint[], array_fill ('completed'::text, ARRAY[:n]), array_fill (NULL::uuid, ARRAY[:n]), array_fill (NULL::text, ARRAY[:n]));
SELECT /* ${tag}pop_empty */ count(*) FROM queen.pop ('', '${Q}', NULL, NULL, NULL, NULL, 100, 10, gen_random_uuid (), false);
SELECT /* ${tag}push_new */ count(*) FROM queen.push ('', array_fill ('${Q}'::text, ARRAY[100]), ARRAY (SELECT 'probe${n}_${r}_' || g FROM generate_series (1, 100) g), array_fill (NULL::text, ARRAY[100]), array_fill (convert_to ('{"probe":true}', 'UTF8'), ARRAY[100]), array_fill (NULL::uuid, ARRAY[100]), array_fill (NULL::text, ARRAY[100]), array_fill (false, ARRAY[100]), false);
SELECT /* ${tag}pop_new */ coalesce (array_agg (partition_id), '{}') AS pids, coalesce (array_agg (seq), '{}') AS seqs, count (seq) AS n FROM queen.pop ('', '${Q}', NULL, NULL, NULL, NULL, 100, 100, gen_random_uuid (), false) WHERE seq IS NOT NULL \\gset
SELECT /* ${tag}ack_new */ count(*) FROM queen.ack ('', array_fill ('__QUEUE_MODE__'::text, ARRAY[:n]), :'pids'::bigint[], array_fill (NULL::text, ARRAY[:n]), :'seqs'::bigint[], array_fill ('completed'::text, ARRAY[:n]), array_fill (NULL::uuid, ARRAY[:n]), array_fill (NULL::text, ARRAY[:n]));
`;
    //  The ANALYZEs keep the broker's plans sane after the VACUUM makes
    //  them re-plan: plans made on nearly empty tables scan cursors,
    //  partitions and ready per call (docs/benchmarks.md, finding 1), which
    //  would make this test's growth phase slow, not fail it.
    fs.writeFileSync(file, `
VACUUM ANALYZE queen.ready;
ANALYZE queen.cursors;
ANALYZE queen.partitions;
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_analyze = on;
SET auto_explain.log_buffers = on;
SET auto_explain.log_timing = off;
SET auto_explain.log_nested_statements = on;
${round('warm0:', 0)}
${round('warm1:', 1)}
SET client_min_messages = log;
${round('probe:', 2)}
`);
    const { stderr } = await execFileP('psql', ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-h', PG_HOST,
        '-p', String(PG_PORT), '-U', 'postgres', '-d', db, '-f', file], { timeout: 120000, maxBuffer: 64 << 20 });
    fs.rmSync(file, { force: true });
    const out = {};
    let name = null;
    for (const line of stderr.split('\n')) {
        const m = /Query Text:.*probe:(\w+)/.exec(line);
        if (m) {
            name = m[1];
            continue;
        }
        const b = /Buffers: (.*)/.exec(line);
        if (name && b) {
            const hit = /hit=(\d+)/.exec(b[1]);
            const read = /read=(\d+)/.exec(b[1]);
            out[name] = Number(hit ? hit[1] : 0) + Number(read ? read[1] : 0);
            name = null;
        }
    }
    for (const k of ['push_existing', 'pop', 'ack', 'pop_empty', 'push_new', 'pop_new', 'ack_new'])
        assert.ok(Number.isFinite(out[k]), `probe ${k} missing at ${n} partitions:\n${stderr.slice(-3000)}`);
    return out;
}

function percentile (values, p) {
    const s = [...values].sort((a, b) => a - b);
    return s.length ? Math.round(s[Math.min(s.length - 1, Math.floor(s.length * p))] * 10) / 10 : null;
}

test('one queue grows to 50,000 partitions under steady load; the serve path ignores idle partitions',
     { timeout: 240000 }, async () => {
    broker = await startBroker({ env: { LOG_LEVEL: 'warn' } });
    const U = broker.url;
    //  A fresh broker spools pushes until the spool's first report
    await warmUp(U);

    const pushed = new Set();       //  "partition/seq-in-payload" of every message pushed by HTTP
    const seen = new Map();         //  Same key -> times delivered
    let dups = 0;
    const errors = [];
    let stopProducer = false;
    let stopConsumers = false;
    let popLat = [];
    let hotSeq = 0;

    async function push (items) {
        await pushItems(U, items, { queued: true, timeoutMs: 60000 });
        for (const it of items)
            pushed.add(`${it.partition}/${it.payload.k}`);
    }

    async function consumer () {
        try {
            await consumeLoop();
        } catch (e) {
            errors.push(`consumer: ${e.stack || e}`);
        }
    }

    async function consumeLoop () {
        while (!stopConsumers) {
            const t0 = performance.now();
            const r = await http(`${U}/api/v1/pop/queue/${Q}?batch=100&partitions=50&wait=false`, { timeoutMs: 60000 });
            if (r.status === 204) {
                await sleep(20);
                continue;
            }
            if (r.status !== 200) {
                errors.push(`pop ${r.status} ${r.raw.slice(0, 200)}`);
                await sleep(50);
                continue;
            }
            popLat.push(performance.now() - t0);
            const msgs = r.body.messages;
            const a = await http(`${U}/api/v1/ack/batch`, {
                method: 'POST', timeoutMs: 60000,
                body: { acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId,
                                                           leaseId: m.leaseId, status: 'completed' })) },
            });
            if (a.status !== 200 || a.body.some((x) => !x.success)) {
                errors.push(`ack ${a.status} ${a.raw.slice(0, 200)}`);
                continue;
            }
            for (const m of msgs) {
                if (m.data && m.data.probe)
                    continue;           //  Pushed by a probe (SQL), not counted
                const key = `${m.partition}/${m.data.k}`;
                const n = (seen.get(key) || 0) + 1;
                seen.set(key, n);
                if (n > 1)
                    dups++;
            }
        }
    }

    //  Steady producer: 50 messages to random hot partitions every 100 ms
    async function producer () {
        while (!stopProducer) {
            const items = [];
            for (let i = 0; i < 50; i++)
                items.push({ queue: Q, partition: `h${Math.floor(Math.random() * HOT)}`, payload: { k: hotSeq++ } });
            await push(items);
            await sleep(100);
        }
    }

    //  Stops the producer, waits until the consumers got everything, stops them
    async function drain (workers) {
        stopProducer = true;
        await workers[0];
        try {
            await waitFor(() => errors.length || [...pushed].every((k) => seen.has(k)), 150000, 100);
        } catch (e) {
            const missing = [...pushed].filter((k) => !seen.has(k));
            const state = await psql(`SELECT count(*), min(avail_at), max(avail_at), now(), count(lease_id)
                FROM queen.ready`, { db: broker.db });
            throw new Error(`${e.message}: ${missing.length} of ${pushed.size} not delivered ` +
                            `(${missing.slice(0, 5).join(' ')}); ready rows: ${state}`);
        }
        stopConsumers = true;
        await Promise.all(workers);
        assert.deepEqual(errors, []);
    }

    //  Grow from `from` to `to` partitions: one message per new partition
    async function grow (from, to) {
        let next = from;
        async function one () {
            while (next < to) {
                const first = next;
                next = Math.min(to, next + GROW_BATCH);
                const items = [];
                for (let i = first; i < next; i++)
                    items.push({ queue: Q, partition: `g${i}`, payload: { k: i } });
                await push(items);
            }
        }
        await Promise.all([one(), one()]);
    }

    //  The hot partitions, then growth to SMALL, all with the load running
    const hotItems = Array.from({ length: HOT }, (_, i) => ({ queue: Q, partition: `h${i}`, payload: { k: `init${i}` } }));
    await push(hotItems);
    const workers = [producer(), consumer(), consumer()];
    try {
        await grow(HOT, SMALL);
        await drain(workers);
        const p1 = await probe(broker.db, SMALL);
        const lat1 = popLat;

        //  Growth to TOTAL with the steady load running
        stopProducer = stopConsumers = false;
        popLat = [];
        workers.splice(0, 3, producer(), consumer(), consumer());
        const t0 = Date.now();
        await grow(SMALL, TOTAL);
        const growSeconds = (Date.now() - t0) / 1000;
        //  A few seconds of steady load at the full size
        popLat = [];
        await sleep(3000);
        const lat2 = popLat;
        await drain(workers);

        //  Exactly once: every message delivered, none twice
        assert.equal(dups, 0, 'no message delivered twice');
        assert.equal(seen.size, pushed.size);
        const parts = Number(await psql(`SELECT count(*) FROM queen.partitions p JOIN queen.queues q
            ON q.id = p.queue_id AND q.name = '${Q}' WHERE p.name NOT LIKE 'probe%'`, { db: broker.db }));
        assert.equal(parts, TOTAL);
        //  Drained partitions are idle: no ready row (the claim index holds
        //  only partitions with work), one cursor row each
        const [ready, cursors] = (await psql(`SELECT (SELECT count(*) FROM queen.ready r JOIN queen.queues q
            ON q.id = r.queue_id AND q.name = '${Q}'), (SELECT count(*) FROM queen.cursors)`, { db: broker.db }))
            .split('|').map(Number);
        assert.equal(ready, 0, 'a drained partition keeps no ready row');
        assert.ok(cursors >= TOTAL, `cursors ${cursors}`);

        const p2 = await probe(broker.db, TOTAL);
        console.log(`cardinality: grew ${SMALL} -> ${TOTAL} partitions in ${growSeconds.toFixed(1)} s ` +
                    `(${Math.round((TOTAL - SMALL) / growSeconds)}/s) under steady load`);
        console.log(`cardinality: pop HTTP latency p50/p99 ms at ${SMALL}: ${percentile(lat1, 0.5)}/${percentile(lat1, 0.99)}` +
                    ` (${lat1.length} pops); at ${TOTAL}: ${percentile(lat2, 0.5)}/${percentile(lat2, 0.99)} (${lat2.length} pops)`);
        console.log(`cardinality: buffers per call at ${SMALL}: ${JSON.stringify(p1)}`);
        console.log(`cardinality: buffers per call at ${TOTAL}: ${JSON.stringify(p2)}`);
        //  50x the partitions. A deeper B-tree costs about one page per
        //  lookup, and a call of 100 items does a few lookups per item, so
        //  a call may read up to ~2x; one scan of the idle partitions'
        //  rows (partitions, cursors: ~160 and ~120 bytes each) would add
        //  700+ pages, one per item tens of thousands. The empty pop is the
        //  claim alone: it must not grow at all.
        assert.ok(p2.pop_empty <= p1.pop_empty + 20,
                  `pop_empty: ${p2.pop_empty} buffers at ${TOTAL} partitions vs ${p1.pop_empty} at ${SMALL}`);
        for (const k of ['pop', 'ack', 'push_existing', 'push_new', 'pop_new', 'ack_new'])
            assert.ok(p2[k] <= p1[k] * 2 + 100, `${k}: ${p2[k]} buffers at ${TOTAL} partitions vs ${p1[k]} at ${SMALL}`);
    } finally {
        stopProducer = stopConsumers = true;
        await Promise.allSettled(workers);
    }
});
