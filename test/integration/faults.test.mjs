//  test/integration/faults.test.mjs - faults survived (issue 6, "Faults")
//
//  Real brokers, a real PostgreSQL, real signals:
//    * the broker SIGKILLed under push load, again and again, restarted on
//      the same database and FILE_BUFFER_DIR: every push answered 201 is
//      stored exactly once, every message leased at a kill comes back after
//      its lease, the broker restarts and serves;
//    * PostgreSQL stopped under push and pop load: pushes are spooled
//      (201 buffered), pops answer 503 at once, the spools drain in order
//      with nothing lost or doubled, also the spool of a broker SIGKILLed
//      during the outage;
//    * PostgreSQL frozen (SIGSTOP): the broker stays responsive, /health
//      says unhealthy, no request waits longer than its deadline, and all
//      recovers on thaw;
//    * the spool full (a 1 MiB tmpfs) or unwritable (a read-only mount)
//      while PostgreSQL is down: pushes are refused with 503, never
//      accepted and lost.
//
//  Figures (docs/reliability.md "Faults"): by default 20 kills, a 30 s
//  outage, a 20 s freeze - the issue's own figures. Smaller runs for quick
//  checks: QN_FAULTS_KILLS, QN_FAULTS_OUTAGE_MS, QN_FAULTS_FREEZE_MS.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
    startBroker, createDatabase, http, psql, pgStop, pgStart, pgFreeze, pgThaw, waitFor, sleep,
    configureQueue, setMaintenance, popMessages, ackBatch, ackFor,
} from './lib.mjs';

const KILLS = Number(process.env.QN_FAULTS_KILLS || 20);
const OUTAGE_MS = Number(process.env.QN_FAULTS_OUTAGE_MS || 30000);
const FREEZE_MS = Number(process.env.QN_FAULTS_FREEZE_MS || 20000);
const TMP = process.env.QN_TMP || os.tmpdir();
const OK_STATUSES = new Set(['queued', 'duplicate', 'buffered']);

function tmpDir (prefix) {
    return fs.mkdtempSync(path.join(TMP, prefix));
}

//  A push that never throws: { status, body, ms } or { error, ms }.
async function tryPush (url, items, timeoutMs = 30000) {
    const t0 = Date.now();
    try {
        const res = await http(`${url}/api/v1/push`, { method: 'POST', body: { items }, timeoutMs });
        return { status: res.status, body: res.body, raw: res.raw, ms: Date.now() - t0 };
    } catch (err) {
        return { error: err.message, ms: Date.now() - t0 };
    }
}

//  True when the push was answered as taken: 201 and every item queued,
//  duplicate or buffered.
function taken (r, n) {
    return r.status === 201 && Array.isArray(r.body) && r.body.length === n
        && r.body.every((x) => OK_STATUSES.has(x.status));
}

async function tryGet (url, timeoutMs = 30000) {
    const t0 = Date.now();
    try {
        const res = await http(url, { timeoutMs });
        return { status: res.status, body: res.body, raw: res.raw, ms: Date.now() - t0 };
    } catch (err) {
        return { error: err.message, ms: Date.now() - t0 };
    }
}

async function pending (url) {
    const res = await http(`${url}/api/v1/status/buffers`);
    return res.status === 200 ? res.body.pending : -1;
}

//  Stored messages of queue q: Map txn id -> number of rows.
async function storedByTxn (db, q) {
    const out = await psql(`SELECT m.txn_id || ' ' || count(*)
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues qq ON qq.id = p.queue_id
        WHERE qq.name = '${q}' GROUP BY m.txn_id`, { db });
    const map = new Map();
    for (const line of out ? out.split('\n') : []) {
        const at = line.lastIndexOf(' ');
        map.set(line.slice(0, at), Number(line.slice(at + 1)));
    }
    return map;
}

//  Payload numbers `n` of partition `part` of queue q, in storage order.
async function orderIn (db, q, part) {
    const out = await psql(`SELECT convert_from(m.payload, 'UTF8')
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues qq ON qq.id = p.queue_id
        WHERE qq.name = '${q}' AND p.name = '${part}' ORDER BY m.seq`, { db });
    return out ? out.split('\n').map((line) => JSON.parse(line).n) : [];
}

//  Asserts exactly-once: every taken txn id stored once, nothing stored
//  twice, nothing stored that was never sent.
function assertExactlyOnce (stored, takenIds, sentIds, what) {
    const missing = [...takenIds].filter((t) => stored.get(t) !== 1);
    assert.deepEqual(missing.slice(0, 10), [], `${what}: ${missing.length} answered pushes not stored exactly once`);
    const doubled = [...stored].filter(([, n]) => n !== 1);
    assert.deepEqual(doubled.slice(0, 10), [], `${what}: stored more than once`);
    const strangers = [...stored.keys()].filter((t) => !sentIds.has(t));
    assert.deepEqual(strangers.slice(0, 10), [], `${what}: stored but never sent`);
}

//  Pops queue q (queue mode) until every txn id of `want` was delivered or
//  the deadline passes, acking every batch. Returns the Set of txn ids.
async function drain (url, q, want, timeoutMs = 60000) {
    const got = new Set();
    const deadline = Date.now() + timeoutMs;
    const missing = () => [...want].some((t) => !got.has(t));
    while (missing() && Date.now() < deadline) {
        const msgs = await popMessages(url, q, { batch: 1000, partitions: 100, wait: true, timeout: 1000 });
        if (!msgs.length)
            continue;
        for (const m of msgs)
            got.add(m.transactionId);
        await ackBatch(url, msgs.map((m) => ackFor(m, { status: 'completed' })), { success: true });
    }
    return got;
}

const configure = (url, queue, options) => configureQueue(url, queue, options);

// ------------------------------------------------------------------ SIGKILL loop
const maintenance = (url, enabled) => setMaintenance(url, enabled);

//  Acks one message; a broker killed meanwhile is not an error here.
async function ackOne (url, m) {
    try {
        await http(`${url}/api/v1/ack`, {
            method: 'POST',
            body: { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' },
        });
    } catch {
        //  Killed: the ack did or did not apply
    }
}

//  Rounds cycle through four kinds, so kills land in every state: pushes
//  straight to PostgreSQL; push maintenance switched on at the start of the
//  round (pushes spooled); maintenance still on after the restart, then
//  switched off mid-round (the kill lands while the spool replays); and a
//  plain round right after a replay.
test(`SIGKILL under push load, ${KILLS} times: answered pushes stored once, leases come back`, async () => {
    const db = await createDatabase('faults_kill');
    const spool = tmpDir('qn-faults-kill-');
    const q = 'killq';
    const parts = ['p0', 'p1', 'p2', 'p3'];
    const LEASE_S = 2;
    const sent = new Set();                 //  Every txn id ever sent
    const takenIds = new Set();             //  Txn ids of pushes answered 201
    const leased = new Map();               //  Txn id -> { round, sentAt } of its first lease
    const redelivered = new Set();          //  Leased before a kill, delivered again after it
    const early = [];                       //  Redelivered before its lease could have run out
    let unanswered = [];                    //  Item batches whose push got no answer
    let counter = 0;
    const statuses = { queued: 0, duplicate: 0, buffered: 0 };
    let broker = await startBroker({ db, fileBufferDir: spool });
    await configure(broker.url, q, { leaseTime: LEASE_S, retryLimit: 1000 });
    const started = [];
    for (let round = 0; round <= KILLS; round++) {
        if (round > 0) {
            const t0 = Date.now();
            broker = await startBroker({ db, fileBufferDir: spool });
            started.push(Date.now() - t0);
        }
        //  What a careful client does after a failure: send the same items
        //  (same transaction ids) again. They must be taken now.
        const retry = unanswered;
        unanswered = [];
        for (const items of retry) {
            const r = await tryPush(broker.url, items);
            assert.ok(taken(r, items.length), `retry after restart: ${r.status} ${r.raw || r.error}`);
            for (const x of r.body)
                statuses[x.status]++;
            for (const it of items)
                takenIds.add(it.transactionId);
        }
        if (round === KILLS)
            break;
        if (round % 4 === 1)
            await maintenance(broker.url, true);
        let stop = false;
        const pusher = async (w) => {
            while (!stop) {
                const items = Array.from({ length: 1 + (counter % 5) }, () => {
                    const n = counter++;
                    return { queue: q, partition: parts[n % parts.length], transactionId: `k${n}`, payload: { n, w } };
                });
                for (const it of items)
                    sent.add(it.transactionId);
                const r = await tryPush(broker.url, items);
                if (r.error) {
                    unanswered.push(items);
                    continue;
                }
                assert.ok(taken(r, items.length), `push: ${r.status} ${r.raw}`);
                for (const x of r.body)
                    statuses[x.status]++;
                for (const it of items)
                    takenIds.add(it.transactionId);
            }
        };
        //  First deliveries stay unacked (leased at the kill); a message
        //  delivered again after a kill proves its redelivery and is acked,
        //  so its partition moves on.
        const popper = async () => {
            while (!stop) {
                const sentAt = Date.now();
                const r = await tryGet(`${broker.url}/api/v1/pop/queue/${q}?batch=7&wait=false`);
                if (r.error)
                    break;
                assert.ok(r.status === 200 || r.status === 204, `pop: ${r.status} ${r.raw}`);
                if (r.status === 204) {
                    await sleep(20);
                    continue;
                }
                for (const m of r.body.messages) {
                    const first = leased.get(m.transactionId);
                    if (!first) {
                        leased.set(m.transactionId, { round, sentAt });
                        continue;
                    }
                    //  Measured from the first pop's request to this pop's
                    //  answer: never shorter than the real interval.
                    if (Date.now() - first.sentAt < LEASE_S * 1000)
                        early.push(`${m.transactionId} after ${Date.now() - first.sentAt} ms`);
                    //  The ack only lets the partition move on (its answer
                    //  may be lost to the kill: then it did or did not apply).
                    if (first.round < round) {
                        redelivered.add(m.transactionId);
                        if (!stop)
                            await ackOne(broker.url, m);
                    }
                }
            }
        };
        const load = [pusher(0), pusher(1), pusher(2), popper()];
        await sleep(200 + Math.floor(Math.random() * 300));
        if (round % 4 === 2)
            await maintenance(broker.url, false);
        await sleep(200 + Math.floor(Math.random() * 700));
        await broker.kill();
        stop = true;
        await Promise.all(load);
    }
    if (KILLS % 4 === 2)
        await maintenance(broker.url, false);
    //  The last broker replays whatever the spool still holds.
    await waitFor(async () => await pending(broker.url) === 0, 60000, 200);
    const stored = await storedByTxn(db, q);
    assertExactlyOnce(stored, takenIds, sent, 'after the kills');
    assert.equal(takenIds.size, sent.size, 'every push was taken, at first or on retry');
    //  Every message leased before a kill and not yet seen again must come
    //  back once its lease ran out; messages seen again after a kill may
    //  have been acked, and all the others must be delivered now.
    const rest = new Set([...stored.keys()].filter((t) => !redelivered.has(t)));
    const delivered = await drain(broker.url, q, rest);
    const lost = [...leased.keys()].filter((t) => !redelivered.has(t) && !delivered.has(t));
    assert.deepEqual(lost.slice(0, 10), [], `${lost.length} leased messages never redelivered`);
    const undelivered = [...rest].filter((t) => !delivered.has(t));
    assert.deepEqual(undelivered.slice(0, 10), [], `${undelivered.length} stored messages never delivered`);
    assert.deepEqual(early.slice(0, 10), [], 'redelivered before the lease ran out');
    assert.ok(redelivered.size > 0, 'some redeliveries happened across kills');
    //  And it serves: a fresh push goes straight to PostgreSQL.
    await waitFor(async () => {
        const r = await tryPush(broker.url, [{ queue: q, partition: 'p0', transactionId: 'final', payload: { n: -1 } }]);
        return r.status === 201 && r.body[0].status === 'queued';
    }, 20000, 200);
    await broker.stop();
    fs.rmSync(spool, { recursive: true, force: true });
    const ms = started.sort((x, y) => x - y);
    console.log(`# kills=${KILLS} sent=${sent.size} stored=${stored.size} leased-at-kill=${leased.size} `
        + `redelivered-across-kills=${redelivered.size} statuses=${JSON.stringify(statuses)} `
        + `restart-ms p50=${ms[ms.length >> 1]} max=${ms[ms.length - 1]}`);
});

// ------------------------------------------------------------------ PostgreSQL stopped
test(`PostgreSQL stopped ${OUTAGE_MS / 1000} s under load: spooled, pops fail fast, drained in order`, async () => {
    const db = await createDatabase('faults_outage');
    const q = 'outq';
    const a = await startBroker({ db });
    const b = await startBroker({ db });
    await configure(a.url, q, { leaseTime: 30 });
    for (const brk of [a, b])
        await waitFor(async () => (await tryPush(brk.url, [{ queue: 'warm', payload: 1 }])).body?.[0]?.status === 'queued', 20000, 100);
    const sent = new Set();
    const takenIds = new Set();
    const bad = [];                         //  Answers that break the promise
    const popTimes = [];                    //  ms of pops sent during the outage
    let outage = false;
    let stopA = false;
    let stopB = false;
    const counts = { queued: 0, buffered: 0, duplicate: 0 };
    //  One sequential pusher per partition: the payload numbers must be
    //  stored in order, 0, 1, 2, ...
    const pusher = async (brk, part, stopped) => {
        let n = 0;
        while (!stopped()) {
            const k = 1 + (n % 3);
            const items = Array.from({ length: k }, (_, i) => ({
                queue: q, partition: part, transactionId: `${part}-${n + i}`, payload: { n: n + i },
            }));
            for (const it of items)
                sent.add(it.transactionId);
            const r = await tryPush(brk.url, items);
            if (r.error) {
                if (!stopped())
                    bad.push(`push ${part}: ${r.error}`);
                return n;                   //  Killed: stop this partition here
            }
            if (!taken(r, k)) {
                bad.push(`push ${part}: ${r.status} ${r.raw}`);
                return n;
            }
            for (const x of r.body)
                counts[x.status]++;
            for (const it of items)
                takenIds.add(it.transactionId);
            n += k;
            await sleep(10);
        }
        return n;
    };
    const popper = async (brk, stopped) => {
        while (!stopped()) {
            const during = outage;
            const r = await tryGet(`${brk.url}/api/v1/pop/queue/${q}?batch=5&wait=${popTimes.length % 2 ? 'true' : 'false'}&timeout=2000`);
            if (r.error) {
                if (!stopped())
                    bad.push(`pop: ${r.error}`);
                return;
            }
            if (during && outage) {
                popTimes.push(r.ms);
                if (r.status !== 503 || typeof r.body?.error !== 'string')
                    bad.push(`pop during outage: ${r.status} ${r.raw}`);
            }
            else
            if (![200, 204, 503].includes(r.status))
                bad.push(`pop: ${r.status} ${r.raw}`);
            await sleep(50);
        }
    };
    const loadA = ['a0', 'a1', 'a2'].map((p) => pusher(a, p, () => stopA));
    const loadB = ['b0', 'b1', 'b2'].map((p) => pusher(b, p, () => stopB));
    const pops = [popper(a, () => stopA), popper(b, () => stopB)];
    await sleep(1500);
    await pgStop();
    outage = true;
    const healthDuring = [];
    try {
        const t0 = Date.now();
        let killed = false;
        while (Date.now() - t0 < OUTAGE_MS) {
            const h = await tryGet(`${a.url}/health`, 5000);
            healthDuring.push(h);
            if (!killed && Date.now() - t0 > OUTAGE_MS * 2 / 3) {
                //  Broker b dies with a spool full of answered pushes.
                stopB = true;
                await b.kill();
                killed = true;
            }
            await sleep(500);
        }
        outage = false;
    } finally {
        outage = false;
        await pgStart();
    }
    await Promise.all([...loadB, pops[1]]);
    const pendingA = await pending(a.url);
    assert.ok(pendingA > 0, 'broker a spooled during the outage');
    //  b comes back on its own spool directory and replays it.
    const b2 = await startBroker({ db, fileBufferDir: b.fileBufferDir });
    //  a keeps taking pushes while its spool drains (they queue behind it).
    await sleep(2000);
    stopA = true;
    await Promise.all([...loadA, pops[0]]);
    await waitFor(async () => await pending(a.url) === 0 && await pending(b2.url) === 0, 60000, 200);
    assert.deepEqual(bad.slice(0, 10), [], `${bad.length} broken promises`);
    assert.ok(counts.buffered > 0, JSON.stringify(counts));
    assert.ok(popTimes.length > 0, 'pops were tried during the outage');
    assert.ok(Math.max(...popTimes) < 1000, `pops during the outage took up to ${Math.max(...popTimes)} ms`);
    const late = healthDuring.filter((h) => h.error || h.ms >= 1000);
    assert.deepEqual(late.map((h) => h.error || h.ms), [], '/health answers within 1 s during the outage');
    assert.ok(healthDuring.slice(4).every((h) => h.status === 503 && h.body.status === 'unhealthy'),
        JSON.stringify(healthDuring.slice(4).map((h) => h.status)));
    const stored = await storedByTxn(db, q);
    assertExactlyOnce(stored, takenIds, sent, 'after the outage');
    for (const part of ['a0', 'a1', 'a2', 'b0', 'b1', 'b2']) {
        const order = await orderIn(db, q, part);
        const ids = [...takenIds].filter((t) => t.startsWith(`${part}-`)).length;
        //  In order, no gaps; b's last push (in flight at the kill) may be
        //  there or not, as a whole.
        assert.deepEqual(order, order.map((_, i) => i), `${part} stored in order`);
        assert.ok(order.length >= ids, `${part}: ${order.length} stored, ${ids} answered`);
    }
    //  Pushes and pops work again on both.
    for (const brk of [a, b2]) {
        const r = await tryPush(brk.url, [{ queue: q, partition: 'after', payload: { n: 0 } }]);
        assert.equal(r.status, 201, r.raw);
        assert.equal(r.body[0].status, 'queued');
        const p = await tryGet(`${brk.url}/api/v1/pop/queue/${q}/partition/after?wait=false`);
        assert.ok(p.status === 200 || p.status === 204, p.raw);
    }
    await a.stop();
    await b2.stop();
    console.log(`# outage=${OUTAGE_MS} ms pushes=${JSON.stringify(counts)} stored=${stored.size} `
        + `pops-during=${popTimes.length} pop-max-ms=${Math.max(...popTimes)} spool-a-at-return=${pendingA}`);
});

// ------------------------------------------------------------------ PostgreSQL frozen
test(`PostgreSQL frozen ${FREEZE_MS / 1000} s: responsive, unhealthy, deadlines kept, recovers`, async () => {
    const STMT_MS = 2000;
    const broker = await startBroker({ env: { DB_STATEMENT_TIMEOUT: String(STMT_MS) } });
    const q = 'frozenq';
    await configure(broker.url, q, { leaseTime: 30 });
    await waitFor(async () => (await tryPush(broker.url, [{ queue: 'warm', payload: 1 }])).body?.[0]?.status === 'queued', 20000, 100);
    const sent = new Set();
    const takenIds = new Set();
    const slow = [];
    const bad = [];
    const counts = { queued: 0, buffered: 0, duplicate: 0, refused: 0 };
    let stop = false;
    let n = 0;
    //  Requests in flight when PostgreSQL freezes wait for the client-side
    //  deadline: statement timeout + 2 s. Nothing may wait longer.
    const LIMIT_MS = STMT_MS + 2000 + 1500;
    const pusher = async () => {
        while (!stop) {
            const items = [0, 1].map(() => ({ queue: q, partition: `p${n % 3}`, transactionId: `f${n}`, payload: { n: n++ } }));
            for (const it of items)
                sent.add(it.transactionId);
            const r = await tryPush(broker.url, items);
            if (r.ms > LIMIT_MS)
                slow.push(`push ${r.ms} ms`);
            if (taken(r, 2)) {
                for (const x of r.body)
                    counts[x.status]++;
                for (const it of items)
                    takenIds.add(it.transactionId);
            }
            else
            if (r.status === 503 && typeof r.body?.error === 'string')
                counts.refused++;           //  Not taken, and said so
            else
                bad.push(`push: ${r.status} ${r.raw || r.error}`);
            await sleep(20);
        }
    };
    const popper = async () => {
        while (!stop) {
            const r = await tryGet(`${broker.url}/api/v1/pop/queue/${q}?batch=3&wait=false`);
            if (r.ms > LIMIT_MS)
                slow.push(`pop ${r.ms} ms`);
            if (![200, 204, 503].includes(r.status))
                bad.push(`pop: ${r.status} ${r.raw || r.error}`);
            await sleep(50);
        }
    };
    const load = [pusher(), pusher(), popper()];
    await sleep(1000);
    await pgFreeze();
    const health = [];
    const freezeStart = Date.now();
    try {
        while (Date.now() - freezeStart < FREEZE_MS) {
            health.push({ at: Date.now() - freezeStart, ...await tryGet(`${broker.url}/health`, 5000) });
            await sleep(250);
        }
    } finally {
        await pgThaw();
    }
    const thawed = Date.now();
    await waitFor(async () => (await tryGet(`${broker.url}/health`, 2000)).status === 200, 30000, 200);
    const recoveredMs = Date.now() - thawed;
    stop = true;
    await Promise.all(load);
    assert.deepEqual(bad.slice(0, 10), [], `${bad.length} bad answers`);
    assert.deepEqual(slow.slice(0, 10), [], `requests beyond ${LIMIT_MS} ms`);
    const lateHealth = health.filter((h) => h.error || h.ms >= 1000);
    assert.deepEqual(lateHealth.map((h) => `${h.at}: ${h.error || h.ms}`), [], '/health within 1 s');
    //  Unhealthy within a few seconds of the freeze, and from then on.
    const firstDown = health.findIndex((h) => h.status === 503);
    assert.ok(firstDown >= 0 && health[firstDown].at < 5000, `unhealthy after ${health[firstDown]?.at} ms`);
    assert.ok(health.slice(firstDown).every((h) => h.status === 503 && h.body.status === 'unhealthy'));
    assert.ok(counts.buffered > 0, `pushes during the freeze went to the spool: ${JSON.stringify(counts)}`);
    //  Recovery: the spool drains, pushes go straight in, pops deliver.
    await waitFor(async () => await pending(broker.url) === 0, 60000, 200);
    await waitFor(async () => {
        const r = await tryPush(broker.url, [{ queue: q, partition: 'after', transactionId: 'after-1', payload: { n: -1 } }]);
        return r.status === 201 && ['queued', 'duplicate'].includes(r.body[0].status);
    }, 30000, 200);
    sent.add('after-1');
    takenIds.add('after-1');
    const p = await tryGet(`${broker.url}/api/v1/pop/queue/${q}/partition/after?wait=false`);
    assert.equal(p.status, 200, p.raw);
    assert.equal(p.body.messages[0].transactionId, 'after-1');
    const stored = await storedByTxn(broker.db, q);
    assertExactlyOnce(stored, takenIds, sent, 'after the freeze');
    //  The statements caught by the freeze were timed out by the server
    //  once it ran again: none of the broker's sessions is still busy.
    await waitFor(async () => await psql(`SELECT count(*) FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'queen' AND state = 'active'
          AND now() - query_start > interval '${STMT_MS + 1000} milliseconds'`, { db: broker.db }) === '0',
    10000, 200);
    const answered5xx = /queen_http_responses_5xx_total (\d+)/.exec((await http(`${broker.url}/metrics/prometheus`)).raw)?.[1];
    await broker.stop();
    console.log(`# freeze=${FREEZE_MS} ms pushes=${JSON.stringify(counts)} unhealthy-after=${health[firstDown].at} ms `
        + `health-max-ms=${Math.max(...health.map((h) => h.ms))} recovered-in=${recoveredMs} ms 5xx=${answered5xx}`);
});

// ------------------------------------------------------------------ spool full / unwritable
function tryMount (dir, opts) {
    try {
        execFileSync('mount', ['-t', 'tmpfs', '-o', opts, 'tmpfs', dir], { stdio: 'ignore' });
        return true;
    } catch {
        return false;
    }
}

function unmount (dir) {
    try {
        execFileSync('umount', [dir], { stdio: 'ignore' });
    } catch {
        //  Not mounted
    }
}

test('spool full or unwritable while PostgreSQL is down: 503, never taken and lost', async (t) => {
    const full = tmpDir('qn-faults-full-');
    const ro = tmpDir('qn-faults-ro-');
    const mountedFull = tryMount(full, 'size=1m,mode=0755');
    const mountedRo = mountedFull && tryMount(ro, 'size=1m,ro');
    if (!mountedFull) {
        //  No mount (not root): an unwritable spool is a path that is a file.
        t.diagnostic('mount failed: testing a spool path that is a file instead');
        fs.rmSync(full, { recursive: true, force: true });
        fs.writeFileSync(full, 'x');
    }
    const db = await createDatabase('faults_full');
    const q = 'fullq';
    const brk = await startBroker({ db, fileBufferDir: full });
    const ro2 = mountedRo ? await startBroker({ db, fileBufferDir: path.join(ro, 'spool') }) : null;
    try {
        for (const x of [brk, ro2].filter(Boolean))
            await waitFor(async () => (await tryPush(x.url, [{ queue: 'warm', payload: 1 }])).body?.[0]?.status === 'queued', 20000, 100);
        const takenIds = new Set();
        const sent = new Set();
        const refused = [];
        const pad = 'x'.repeat(60 * 1024);
        await pgStop();
        try {
            //  60 KiB a push: a 1 MiB spool takes about 16 of them.
            for (let n = 0; n < 40; n++) {
                const items = [{ queue: q, partition: 'p', transactionId: `full-${n}`, payload: { n, pad } }];
                sent.add(items[0].transactionId);
                const r = await tryPush(brk.url, items);
                if (taken(r, 1)) {
                    assert.equal(r.body[0].status, 'buffered');
                    takenIds.add(items[0].transactionId);
                }
                else {
                    assert.equal(r.status, 503, r.raw || r.error);
                    assert.match(r.body.error, /File buffer write failed/);
                    refused.push(n);
                }
            }
            if (mountedFull) {
                assert.ok(takenIds.size > 5 && refused.length > 5,
                    `taken ${takenIds.size}, refused ${refused.length}`);
                const r = await tryPush(brk.url, [{ queue: q, payload: { pad } }]);
                assert.equal(r.status, 503, r.raw);
                assert.match(r.body.error, /File buffer write failed: .*No space left on device/);
            }
            else
                assert.equal(takenIds.size, 0);
            if (ro2) {
                const r = await tryPush(ro2.url, [{ queue: q, partition: 'ro', transactionId: 'ro-1', payload: 1 }]);
                sent.add('ro-1');
                assert.equal(r.status, 503, r.raw || r.error);
                assert.match(r.body.error, /File buffer write failed: .*Read-only file system/);
            }
            //  The broker still answers.
            assert.equal((await tryGet(`${brk.url}/health`, 2000)).status, 503);
        } finally {
            await pgStart();
        }
        //  What was taken is replayed, once; what was refused is not there.
        await waitFor(async () => await pending(brk.url) === 0, 60000, 200);
        const stored = await storedByTxn(db, q);
        assertExactlyOnce(stored, takenIds, sent, 'spool full');
        assert.equal(stored.size, takenIds.size);
        //  The spool works again once the database has its records.
        const r = await tryPush(brk.url, [{ queue: q, partition: 'p', transactionId: 'after', payload: 1 }]);
        assert.equal(r.status, 201, r.raw);
        console.log(`# spool ${mountedFull ? '1 MiB tmpfs' : 'path is a file'}: taken=${takenIds.size} refused=${refused.length}`
            + ` read-only mount=${Boolean(ro2)}`);
    } finally {
        await brk.stop().catch(() => {});
        if (ro2)
            await ro2.stop().catch(() => {});
        if (mountedFull)
            unmount(full);
        if (mountedRo)
            unmount(ro);
        fs.rmSync(full, { recursive: true, force: true });
        fs.rmSync(ro, { recursive: true, force: true });
    }
});
