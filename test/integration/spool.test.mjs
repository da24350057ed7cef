//  test/integration/spool.test.mjs - the disk spool while PostgreSQL is down
//
//  Pushes during an outage are answered 201 "buffered" once on disk, and
//  replayed in order, exactly once, when PostgreSQL returns - also after the
//  broker was SIGKILLed during the outage and restarted on the same
//  FILE_BUFFER_DIR, and after a torn tail was left in a segment. A spool
//  that cannot write answers 503 and keeps nothing.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
    startBroker, createDatabase, http, psql, pgStop, pgStart, waitFor, pushItems, popMessages, pop,
    buffers, setMaintenance, getMaintenance,
} from './lib.mjs';

//  POST /api/v1/push; expects 201 and one result per item.
async function push (url, items) {
    const body = await pushItems(url, items);
    return { status: 201, body, raw: JSON.stringify(body) };
}

//  Items of queue q, partition p, numbered from `from`, with client
//  transaction ids (the dedup key of a replay).
function items (q, p, from, n) {
    return Array.from({ length: n }, (_, k) => ({
        queue: q, partition: p, transactionId: `${q}-${p}-${from + k}`, payload: { i: from + k },
    }));
}

//  Messages stored for queue q: total, distinct transaction ids, and the
//  payload numbers in seq order per partition.
async function stored (db, q) {
    const out = await psql(`SELECT count(*) || ' ' || count(DISTINCT m.txn_id)
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = '${q}'`, { db });
    const [total, distinct] = out.split(' ').map(Number);
    return { total, distinct };
}

async function orderIn (db, q, part) {
    const out = await psql(`SELECT convert_from(m.payload, 'UTF8')
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues qq ON qq.id = p.queue_id
        WHERE qq.name = '${q}' AND p.name = '${part}' ORDER BY m.seq`, { db });
    return out ? out.split('\n').map((line) => JSON.parse(line).i) : [];
}

function ascending (n, from = 0) {
    return Array.from({ length: n }, (_, k) => from + k);
}

//  Pops everything of q with autoAck and returns the payload numbers in
//  delivery order.
async function popAll (url, q) {
    const got = [];
    for (let round = 0; round < 200; round++) {
        const msgs = await popMessages(url, q, { batch: 1000, autoAck: true });
        if (!msgs.length)
            return got;
        for (const m of msgs)
            got.push(m.data.i);
    }
    return got;
}

async function pushDuringOutage (url, q, parts, perPart, perPush) {
    for (let from = 0; from < perPart; from += perPush)
        for (const p of parts) {
            const res = await push(url, items(q, p, from, perPush));
            assert.equal(res.status, 201, res.raw);
            assert.equal(res.body.length, perPush);
            for (const r of res.body)
                assert.equal(r.status, 'buffered', JSON.stringify(r));
        }
}

test('pushes during an outage are buffered, then replayed in order, once', async () => {
    const broker = await startBroker();
    const q = 'outage';
    let res = await push(broker.url, items(q, 'p0', 1000, 1));
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body[0].status, 'queued');
    await pgStop();
    try {
        await pushDuringOutage(broker.url, q, ['p0', 'p1'], 60, 5);
        //  Pops fail fast while the database is away.
        const started = Date.now();
        res = await pop(broker.url, q, { expect: 503 });
        assert.ok(typeof res.body.error === 'string');
        assert.ok(Date.now() - started < 5000, 'a pop during the outage answers fast');
        const b = await buffers(broker.url);
        assert.equal(b.pending, 120);
        assert.equal(b.failed, 0);
        assert.equal(typeof b.dbHealthy, 'boolean');
        assert.ok('worker' in b);
        //  The spool keeps taking pushes while it holds anything.
        res = await push(broker.url, items(q, 'p1', 60, 5));
        assert.equal(res.body[0].status, 'buffered');
        assert.equal(res.body[0].transactionId, `${q}-p1-60`);
        assert.equal(res.body[0].partition, 'p1');
    } finally {
        await pgStart();
    }
    await waitFor(async () => (await buffers(broker.url)).pending === 0, 30000, 200);
    assert.deepEqual(await stored(broker.db, q), { total: 126, distinct: 126 });
    assert.deepEqual(await orderIn(broker.db, q, 'p0'), [1000, ...ascending(60)]);
    assert.deepEqual(await orderIn(broker.db, q, 'p1'), ascending(65));
    //  After the replay, pushes go straight to PostgreSQL again.
    res = await push(broker.url, items(q, 'p0', 2000, 1));
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body[0].status, 'queued');
    const popped = await popAll(broker.url, q);
    assert.equal(popped.length, 127);
    assert.ok(!fs.readdirSync(broker.fileBufferDir).some((f) => f.startsWith('segment-')),
        'replayed segments are removed');
    await broker.stop();
});

test('a broker killed during the outage replays its acknowledged spool exactly once', async () => {
    const db = await createDatabase('spool_kill');
    const first = await startBroker({ db });
    const q = 'killed';
    await pgStop();
    try {
        await pushDuringOutage(first.url, q, ['a', 'b', 'c'], 40, 4);
    } finally {
        await first.kill();
        await pgStart();
    }
    const names = fs.readdirSync(first.fileBufferDir);
    assert.ok(names.some((f) => /^segment-\d{16}\.qspool$/.test(f)), names.join(','));
    //  A copy of the spool as it was, to replay a second time below.
    const copy = fs.mkdtempSync(path.join(process.env.QN_TMP || os.tmpdir(), 'qn-spool-copy-'));
    fs.cpSync(first.fileBufferDir, copy, { recursive: true });
    const second = await startBroker({ db, fileBufferDir: first.fileBufferDir });
    await waitFor(async () => (await buffers(second.url)).pending === 0, 30000, 200);
    assert.deepEqual(await stored(db, q), { total: 120, distinct: 120 });
    for (const p of ['a', 'b', 'c'])
        assert.deepEqual(await orderIn(db, q, p), ascending(40));
    await second.stop();
    //  A third start finds nothing left to replay.
    const third = await startBroker({ db, fileBufferDir: first.fileBufferDir });
    assert.equal((await buffers(third.url)).pending, 0);
    assert.deepEqual(await stored(db, q), { total: 120, distinct: 120 });
    await third.stop();
    //  Replaying the same records again (a checkpoint lost in a crash) is
    //  harmless: the transaction ids deduplicate.
    const fourth = await startBroker({ db, fileBufferDir: copy });
    await waitFor(async () => (await buffers(fourth.url)).pending === 0, 30000, 200);
    assert.deepEqual(await stored(db, q), { total: 120, distinct: 120 });
    assert.match(await (await fetch(`${fourth.url}/metrics/prometheus`)).text(),
        /queen_spool_replay_duplicates_total 120/);
    await fourth.stop();
    fs.rmSync(copy, { recursive: true, force: true });
});

test('a torn tail in a segment is cut off and the whole records before it replay', async () => {
    const db = await createDatabase('spool_torn');
    const first = await startBroker({ db });
    const q = 'torn';
    await pgStop();
    try {
        await pushDuringOutage(first.url, q, ['x'], 30, 3);
    } finally {
        await first.kill();
        await pgStart();
    }
    const seg = fs.readdirSync(first.fileBufferDir).filter((f) => f.startsWith('segment-')).sort().pop();
    const file = path.join(first.fileBufferDir, seg);
    const size = fs.statSync(file).size;
    //  Half a record: a header that promises more bytes than follow.
    fs.appendFileSync(file, Buffer.from([0x51, 0x53, 0x52, 0x31, 0xff, 0x00, 0x00, 0x00, 1, 2, 3, 4, 5, 6]));
    const second = await startBroker({ db, fileBufferDir: first.fileBufferDir });
    await waitFor(async () => (await buffers(second.url)).pending === 0, 30000, 200);
    assert.match(second.logs(), /torn tail truncated/);
    assert.deepEqual(await stored(db, q), { total: 30, distinct: 30 });
    assert.deepEqual(await orderIn(db, q, 'x'), ascending(30));
    assert.ok(!fs.existsSync(file) || fs.statSync(file).size <= size);
    await second.stop();
});

test('a spool that cannot write answers 503 and buffers nothing', async () => {
    const tmp = fs.mkdtempSync(path.join(process.env.QN_TMP || os.tmpdir(), 'qn-spool-file-'));
    const notDir = path.join(tmp, 'not-a-directory');
    fs.writeFileSync(notDir, 'x');
    const broker = await startBroker({ fileBufferDir: notDir });
    try {
        //  With PostgreSQL up the spool is not needed.
        let res = await push(broker.url, items('nospool', 'p', 0, 2));
        assert.equal(res.status, 201, res.raw);
        assert.equal(res.body[0].status, 'queued');
        await pgStop();
        try {
            res = await http(`${broker.url}/api/v1/push`, { method: 'POST', body: { items: items('nospool', 'p', 2, 2) } });
            assert.equal(res.status, 503, res.raw);
            assert.ok(res.headers['content-type'].includes('application/json'));
            assert.equal(typeof res.body.error, 'string');
            assert.match(res.body.error, /File buffer write failed/);
            const b = await buffers(broker.url);
            assert.equal(b.pending, 0);
            const m = await getMaintenance(broker.url);
            assert.equal(m.bufferHealthy, false);
            assert.equal(m.bufferedMessages, 0);
        } finally {
            await pgStart();
        }
        assert.deepEqual(await stored(broker.db, 'nospool'), { total: 2, distinct: 2 });
        assert.equal(fs.readFileSync(notDir, 'utf8'), 'x');
    } finally {
        await broker.stop();
        fs.rmSync(tmp, { recursive: true, force: true });
    }
});

test('group commit and segment rotation: concurrent pushes, several segments, one replay', async () => {
    const broker = await startBroker({ env: { SPOOL_FSYNC_MS: '50' } });
    const q = 'rotate';
    await setMaintenance(broker.url, true);
    let res;
    const fsyncs = async () => Number(/queen_spool_fsyncs_total (\d+)/.exec(
        (await http(`${broker.url}/metrics/prometheus`)).raw)?.[1] ?? 0);
    const before = await fsyncs();
    //  Small pushes in parallel share fdatasyncs.
    const small = await Promise.all(Array.from({ length: 40 }, (_, k) =>
        push(broker.url, [{ queue: q, partition: `s${k % 4}`, transactionId: `s-${k}`, payload: { i: k } }])));
    for (const r of small) {
        assert.equal(r.status, 201, r.raw);
        assert.equal(r.body[0].status, 'buffered');
    }
    const synced = await fsyncs() - before;
    assert.ok(synced >= 1 && synced < 40, `40 appends took ${synced} fdatasyncs`);
    //  Then ~70 MiB in 2 MiB pushes: more than one 64 MiB segment.
    const pad = 'x'.repeat(2 << 20);
    for (let k = 0; k < 35; k++) {
        res = await push(broker.url, [{ queue: q, partition: 'big', transactionId: `b-${k}`, payload: { i: k, pad } }]);
        assert.equal(res.status, 201, res.raw);
        assert.equal(res.body[0].status, 'buffered');
    }
    const segments = fs.readdirSync(broker.fileBufferDir).filter((f) => f.startsWith('segment-'));
    assert.ok(segments.length >= 2, `segments: ${segments.join(',')}`);
    assert.equal((await buffers(broker.url)).pending, 75);
    await setMaintenance(broker.url, false);
    await waitFor(async () => (await buffers(broker.url)).pending === 0, 60000, 200);
    assert.deepEqual(await stored(broker.db, q), { total: 75, distinct: 75 });
    const big = await psql(`SELECT string_agg((convert_from(m.payload, 'UTF8')::json->>'i'), ',' ORDER BY m.seq)
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id WHERE p.name = 'big'`,
    { db: broker.db });
    assert.equal(big, ascending(35).join(','));
    assert.deepEqual(fs.readdirSync(broker.fileBufferDir).filter((f) => f.startsWith('segment-')), []);
    await broker.stop();
});
