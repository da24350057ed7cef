//  test/integration/ack_merge.test.mjs - pg_writer merges acks that wait
//  for an ack lane (ACK_LANES) into one queen.ack call (actors/pg/acks.c),
//  and the retention actor vacuums queen.ready past READY_VACUUM_DEAD_ROWS.
//  The merge is made certain, not hoped for: with one ack lane, a first ack
//  waits on a ready row a psql session holds FOR UPDATE, the next requests
//  queue behind it (db_pool_waiting shows them), and the lock is released.
//  Each merged request must get exactly its own answer: its items, indexes
//  from 0, per-item failures where its items are bad, across queues and
//  consumer groups; a request whose items make the merged call raise must
//  fail alone.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
    http, psql, startBroker, waitFor, warmUp, configureQueue, pushItems, popMessages,
    ackFor, request, PG_HOST, PG_PORT,
} from './lib.mjs';

let b;                          //  One ack lane, vacuum of queen.ready at a low threshold

before(async () => {
    b = await startBroker({ env: { ACK_LANES: '1', READY_VACUUM_DEAD_ROWS: '20' } });
    await warmUp(b.url);
});

after(async () => {
    if (b)
        await b.stop();
});

const sql = (text) => psql(text, { db: b.db });

//  The value of a Prometheus series (0 when absent).
async function metric (url, series) {
    const res = await http(`${url}/metrics/prometheus`);
    const line = res.raw.split('\n').find((l) => l.startsWith(`${series} `));
    return line ? Number(line.slice(series.length + 1)) : 0;
}

//  Pushes n messages to (queue, partition) and pops them (batch n, group).
async function leased (queue, partition, n, group) {
    await pushItems(b.url, Array.from({ length: n }, (_, i) => ({ queue, partition, payload: { i } })), { queued: true });
    const msgs = await popMessages(b.url, queue, { partition, batch: n, consumerGroup: group });
    assert.equal(msgs.length, n);
    return msgs;
}

//  A psql session holding queue's ready rows FOR UPDATE until killed.
async function lockReady (queue) {
    const app = `qn_locker_${queue}`.replace(/[^a-z0-9_]/gi, '_');
    const proc = spawn('psql', ['-X', '-q', '-h', PG_HOST, '-p', String(PG_PORT), '-U', 'postgres', '-d', b.db,
        '-c', `BEGIN; SELECT 1 FROM queen.ready r JOIN queen.partitions p ON p.id = r.partition_id
                 JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '${queue}' FOR UPDATE OF r;
               SELECT pg_sleep(120); COMMIT;`],
    { env: { ...process.env, PGAPPNAME: app }, stdio: 'ignore' });
    await waitFor(async () => await sql(`SELECT count(*) FROM pg_stat_activity
        WHERE application_name = '${app}' AND query LIKE '%pg_sleep%' AND state = 'active'`) === '1', 10000, 50);
    return {
        proc,
        release: async () => {
            await sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '${app}'`);
            await new Promise((resolve) => proc.exitCode !== null ? resolve() : proc.once('exit', resolve));
        },
    };
}

//  Starts ack requests (each an ack/batch body) while the lane is held by
//  a first ack on a locked queue; resolves to their responses once all
//  were queued together and the lock went.
async function mergedAcks (bodies) {
    const holder = await leased('m-hold', 'p', 1);
    const lock = await lockReady('m-hold');
    const batches0 = await metric(b.url, 'queen_pg_ack_batches_total');
    const requests0 = await metric(b.url, 'queen_pg_ack_requests_total');
    const first = request(b.url, '/api/v1/ack/batch', { method: 'POST', body: { acknowledgments: holder.map((m) => ackFor(m)) } });
    //  The first ack is in the lane, waiting for the row lock.
    await waitFor(async () => await sql(`SELECT count(*) FROM pg_stat_activity
        WHERE wait_event_type = 'Lock' AND query LIKE '%queen.ack%'`) === '1', 10000, 50);
    const rest = bodies.map((body) => request(b.url, '/api/v1/ack/batch', { method: 'POST', body, expect: [200, 500] }));
    await waitFor(async () => await metric(b.url, 'queen_db_pool_waiting{pool="pg_writer"}') >= bodies.length, 10000, 50);
    await lock.release();
    const held = await first;
    assert.equal(held.body[0].success, true, held.raw);
    const out = await Promise.all(rest);
    return {
        out,
        batches: await metric(b.url, 'queen_pg_ack_batches_total') - batches0,
        requests: await metric(b.url, 'queen_pg_ack_requests_total') - requests0,
    };
}

test('merged acks: each request gets its own items, across queues and groups, bad items beside good', async () => {
    await configureQueue(b.url, 'm-a', {});
    await configureQueue(b.url, 'm-b', {});
    const a = await leased('m-a', 'pa', 3);                 //  queue mode
    const g1 = await leased('m-b', 'pb', 2, 'g1');          //  consumer group g1
    const g2 = await popMessages(b.url, 'm-b', { partition: 'pb', batch: 2, consumerGroup: 'g2' });
    assert.equal(g2.length, 2);
    const c = await leased('m-a', 'pc', 2);
    const bodies = [
        { acknowledgments: a.map((m) => ackFor(m)) },
        { consumerGroup: 'g1', acknowledgments: g1.map((m) => ackFor(m)) },
        //  Bad items beside good: an unknown transaction id, a wrong lease
        { consumerGroup: 'g2', acknowledgments: [
            { transactionId: 'no-such-message', partitionId: g2[0].partitionId },
            ackFor(g2[0]),
            { ...ackFor(g2[1]), leaseId: '00000000-0000-7000-8000-000000000001' },
        ] },
        { acknowledgments: c.map((m) => ackFor(m, { status: 'failed', error: 'nope' })) },
    ];
    const { out, batches, requests } = await mergedAcks(bodies);
    //  The holder's ack ran alone, the four queued ones as one call.
    assert.equal(requests, 5);
    assert.equal(batches, 2);
    const [ra, rg1, rg2, rc] = out.map((r) => {
        assert.equal(r.status, 200, r.raw);
        return r.body;
    });
    assert.deepEqual(ra.map((r) => [r.index, r.transactionId, r.success, r.queueName, r.partitionName]),
        a.map((m, i) => [i, m.transactionId, true, 'm-a', 'pa']));
    assert.equal(ra[2].leaseReleased, true);
    assert.deepEqual(rg1.map((r) => [r.index, r.transactionId, r.success, r.queueName]),
        g1.map((m, i) => [i, m.transactionId, true, 'm-b']));
    assert.deepEqual(rg2.map((r) => [r.index, r.transactionId, r.success]),
        [[0, 'no-such-message', false], [1, g2[0].transactionId, true], [2, g2[1].transactionId, false]]);
    assert.equal(rg2[0].error, 'Message not found');
    assert.equal(rg2[2].error, 'Invalid or expired lease');
    assert.deepEqual(rc.map((r) => [r.index, r.transactionId, r.success, r.partitionName]),
        c.map((m, i) => [i, m.transactionId, true, 'pc']));
    //  What the answers say is what happened: a's and g1's are consumed,
    //  g2 keeps its unacked message leased, c's failed ones come back.
    assert.deepEqual(await popMessages(b.url, 'm-a', { partition: 'pa' }), []);
    assert.deepEqual(await popMessages(b.url, 'm-b', { partition: 'pb', consumerGroup: 'g1' }), []);
    const again = await waitFor(async () => {
        const m = await popMessages(b.url, 'm-a', { partition: 'pc', batch: 2 });
        return m.length ? m : null;
    }, 15000, 200);
    assert.deepEqual(again.map((m) => m.transactionId), c.map((m) => m.transactionId));
    const acked = await metric(b.url, 'queen_messages_acked_total{queue="m-a"}');
    assert.equal(acked, 3);
    assert.equal(await metric(b.url, 'queen_messages_failed_total{queue="m-a"}'), 2);
});

test('merged acks: a request whose items make the call fail fails alone; the others commit', async () => {
    await configureQueue(b.url, 'm-x', {});
    const good1 = await leased('m-x', 'ok1', 2);
    const bad = await leased('m-x', 'boom', 2);
    const good2 = await leased('m-x', 'ok2', 1);
    //  Any write to the ready row of partition "boom" raises.
    const pid = await sql(`SELECT p.id FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                            WHERE q.name = 'm-x' AND p.name = 'boom'`);
    assert.match(pid, /^\d+$/);
    await sql(`CREATE FUNCTION public.qn_boom() RETURNS trigger LANGUAGE plpgsql AS
                 $$BEGIN RAISE EXCEPTION 'injected ack failure'; END$$`);
    await sql(`CREATE TRIGGER qn_boom BEFORE UPDATE OR DELETE ON queen.ready FOR EACH ROW
                 WHEN (OLD.partition_id = ${pid}) EXECUTE FUNCTION public.qn_boom()`);
    const splits0 = await metric(b.url, 'queen_pg_ack_merge_split_total');
    const { out, batches, requests } = await mergedAcks([
        { acknowledgments: good1.map((m) => ackFor(m)) },
        { acknowledgments: bad.map((m) => ackFor(m)) },
        { acknowledgments: good2.map((m) => ackFor(m)) },
    ]);
    await sql('DROP TRIGGER qn_boom ON queen.ready');
    assert.equal(await metric(b.url, 'queen_pg_ack_merge_split_total') - splits0, 1);
    //  Holder alone, then good1 and good2 alone after the split (bad failed:
    //  it answers no rows, so it is not counted as a committed batch).
    assert.equal(batches, 3);
    assert.equal(requests, 3);
    assert.equal(out[0].status, 200, out[0].raw);
    assert.deepEqual(out[0].body.map((r) => [r.index, r.success]), [[0, true], [1, true]]);
    assert.equal(out[2].status, 200, out[2].raw);
    assert.deepEqual(out[2].body.map((r) => [r.index, r.success]), [[0, true]]);
    assert.equal(out[1].status, 500, out[1].raw);
    assert.match(out[1].raw, /injected ack failure/);
    //  The good ones are consumed; the bad ones' lease still holds them.
    assert.deepEqual(await popMessages(b.url, 'm-x', { partition: 'ok1' }), []);
    assert.deepEqual(await popMessages(b.url, 'm-x', { partition: 'ok2' }), []);
    const res = await request(b.url, '/api/v1/ack/batch', { method: 'POST', body: { acknowledgments: bad.map((m) => ackFor(m)) } });
    assert.deepEqual(res.body.map((r) => r.success), [true, true]);
});

test('retention vacuums queen.ready once its dead rows pass READY_VACUUM_DEAD_ROWS', async () => {
    const v = b;
    await configureQueue(v.url, 'vac', {});
    //  Each push, pop and ack of a partition writes its ready row.
    for (let round = 0; round < 3; round++) {
        await pushItems(v.url, Array.from({ length: 20 }, (_, i) => ({ queue: 'vac', partition: `p${i}`, payload: i })), { queued: true });
        for (let left = 20; left > 0;) {
            const msgs = await popMessages(v.url, 'vac', { batch: 20, partitions: 20 });
            assert.ok(msgs.length > 0);
            const res = await request(v.url, '/api/v1/ack/batch', { method: 'POST', body: { acknowledgments: msgs.map((m) => ackFor(m)) } });
            assert.ok(res.body.every((r) => r.success), res.raw);
            left -= msgs.length;
        }
    }
    await waitFor(async () => await metric(v.url, 'queen_ready_vacuums_total') >= 1, 40000, 250).catch(async (e) => {
        const stats = await psql(`SELECT n_dead_tup, n_tup_upd, n_tup_del FROM pg_stat_user_tables
            WHERE relid = 'queen.ready'::regclass`, { db: v.db });
        const dead = await metric(v.url, 'queen_ready_dead_rows');
        throw new Error(`${e.message}: ready_dead_rows=${dead} stats=${stats}\n${v.logs().slice(-3000)}`);
    });
    assert.match(v.logs(), /ready vacuumed: dead_rows=\d+ churn=\d+/);
    //  The vacuum happened in PostgreSQL too.
    const last = await psql(`SELECT vacuum_count > 0 FROM pg_stat_user_tables
        WHERE relid = 'queen.ready'::regclass`, { db: v.db });
    assert.equal(last, 't');
});
