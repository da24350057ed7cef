//  test/integration/maintenance.test.mjs - maintenance modes (contract §2.11,
//  §3.20) and the spool status routes (§3.18 /api/v1/status/buffers)
//
//  Push maintenance sends every push to the spool (201 "buffered") while
//  pops keep working; switching it off replays everything within a bound
//  and bufferedMessages returns to 0. Pop maintenance answers every pop 204.
//  Both flags are persisted in queen.system_state and reach a second broker
//  on the same database.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
    startBroker, createDatabase, http, psql, waitFor, pushItems, popMessages, getMaintenance,
    setMaintenance as setMaintenanceRoute,
} from './lib.mjs';

//  POST /api/v1/push; expects 201 and one result per item.
async function push (url, items) {
    const body = await pushItems(url, items);
    return { status: 201, body, raw: JSON.stringify(body) };
}

//  POST /api/v1/system/maintenance[/pop]; expects 200 and the flag echoed.
async function setMaintenance (url, enabled, which = '') {
    const body = await setMaintenanceRoute(url, enabled, { pop: which === '/pop' });
    return { status: 200, body, raw: JSON.stringify(body) };
}

const maintenance = (url) => getMaintenance(url);

async function count (db, q) {
    return Number(await psql(`SELECT count(*) FROM queen.messages m
        JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = '${q}'`, { db }));
}

test('maintenance routes: shapes and validation', async () => {
    const broker = await startBroker();
    const m = await maintenance(broker.url);
    assert.deepEqual(m, {
        maintenanceMode: false, popMaintenanceMode: false, bufferedMessages: 0, bufferHealthy: true,
        bufferStats: {
            pendingCount: 0, failedCount: 0, dbHealthy: true,
            failedFiles: { count: 0, totalBytes: 0, totalMB: 0, failoverCount: 0, qos0Count: 0 },
        },
    });
    let res = await http(`${broker.url}/api/v1/system/maintenance/pop`);
    assert.equal(res.status, 200);
    assert.equal(res.body.popMaintenanceMode, false);
    assert.equal(typeof res.body.message, 'string');
    res = await http(`${broker.url}/api/v1/system/shared-state`);
    assert.equal(res.status, 200);
    assert.equal(res.body.enabled, false);
    res = await http(`${broker.url}/api/v1/status/buffers`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { pending: 0, failed: 0, dbHealthy: true, worker: 0 });
    //  "enabled" must be a boolean, on both routes.
    for (const which of ['', '/pop'])
        for (const body of [{}, { enabled: 'true' }, { enabled: 1 }, { enabled: null }, [true], 'null', '']) {
            res = await http(`${broker.url}/api/v1/system/maintenance${which}`, {
                method: 'POST', body, headers: { 'Content-Type': 'application/json' },
            });
            assert.equal(res.status, 400, `${which} ${JSON.stringify(body)}: ${res.raw}`);
            assert.equal(res.body.error, 'enabled (boolean) is required');
        }
    res = await http(`${broker.url}/api/v1/system/maintenance`, { method: 'POST', body: '{"enabled":' });
    assert.equal(res.status, 400);
    assert.equal(typeof res.body.error, 'string');
    //  Nothing was written by the refused requests.
    assert.equal(await psql(`SELECT count(*) FROM queen.system_state WHERE key LIKE '%maintenance_mode'`,
        { db: broker.db }), '0');
    await broker.stop();
});

test('push maintenance buffers pushes, pops keep working, off replays them all', async () => {
    const broker = await startBroker();
    const q = 'maint';
    let res = await push(broker.url, [{ queue: q, partition: 'p', transactionId: 'before', payload: { i: -1 } }]);
    assert.equal(res.status, 201, res.raw);
    assert.equal(res.body[0].status, 'queued');

    res = await setMaintenance(broker.url, true);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.maintenanceMode, true);
    assert.equal(typeof res.body.bufferedMessages, 'number');
    assert.equal(res.body.bufferHealthy, true);
    assert.equal(typeof res.body.message, 'string');
    assert.equal(await psql(`SELECT value::text FROM queen.system_state WHERE key = 'maintenance_mode'`,
        { db: broker.db }), '{"enabled": true}');
    assert.equal((await maintenance(broker.url)).maintenanceMode, true);

    const total = 200;
    for (let from = 0; from < total; from += 10) {
        const items = Array.from({ length: 10 }, (_, k) => ({
            queue: q, partition: 'p', transactionId: `m-${from + k}`, payload: { i: from + k },
        }));
        res = await push(broker.url, items);
        assert.equal(res.status, 201, res.raw);
        for (const [k, r] of res.body.entries()) {
            assert.equal(r.status, 'buffered');
            assert.equal(r.queue, q);
            assert.equal(r.partition, 'p');
            assert.equal(r.transactionId, `m-${from + k}`);
        }
    }
    const m = await maintenance(broker.url);
    assert.equal(m.bufferedMessages, total);
    assert.equal(m.bufferStats.pendingCount, total);
    assert.equal(await count(broker.db, q), 1, 'nothing reached PostgreSQL during maintenance');

    //  Pops keep working: the message pushed before maintenance is there.
    const early = await popMessages(broker.url, q, { batch: 10, autoAck: true });
    assert.deepEqual(early.map((x) => x.data.i), [-1]);

    const off = Date.now();
    res = await setMaintenance(broker.url, false);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.maintenanceMode, false);
    await waitFor(async () => (await maintenance(broker.url)).bufferedMessages === 0, 12000, 100);
    await waitFor(async () => await count(broker.db, q) === total + 1, 12000, 100);
    assert.ok(Date.now() - off < 12000);
    const order = (await psql(`SELECT convert_from(m.payload, 'UTF8') FROM queen.messages m
        JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues qq ON qq.id = p.queue_id
        WHERE qq.name = '${q}' AND m.txn_id LIKE 'm-%' ORDER BY m.seq`, { db: broker.db }))
        .split('\n').map((line) => JSON.parse(line).i);
    assert.deepEqual(order, Array.from({ length: total }, (_, k) => k));
    let got = 0;
    for (let i = 0; i < 20 && got < total; i++) {
        const msgs = await popMessages(broker.url, q, { batch: 1000, autoAck: true });
        if (!msgs.length)
            break;
        got += msgs.length;
    }
    assert.equal(got, total);
    //  Pushes go straight to PostgreSQL again.
    res = await push(broker.url, [{ queue: q, partition: 'p', payload: { i: 'after' } }]);
    assert.equal(res.body[0].status, 'queued');
    await broker.stop();
});

test('pop maintenance answers every pop 204, without touching the messages', async () => {
    const broker = await startBroker();
    const q = 'popmaint';
    let res = await push(broker.url, [{ queue: q, payload: { i: 1 } }, { queue: q, payload: { i: 2 } }]);
    assert.equal(res.status, 201, res.raw);
    res = await setMaintenance(broker.url, true, '/pop');
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(Object.keys(res.body).sort(), ['message', 'popMaintenanceMode']);
    assert.equal(res.body.popMaintenanceMode, true);
    assert.equal(await psql(`SELECT value::text FROM queen.system_state WHERE key = 'pop_maintenance_mode'`,
        { db: broker.db }), '{"enabled": true}');
    res = await http(`${broker.url}/api/v1/system/maintenance/pop`);
    assert.equal(res.body.popMaintenanceMode, true);
    assert.equal((await maintenance(broker.url)).popMaintenanceMode, true);
    assert.equal((await maintenance(broker.url)).maintenanceMode, false);
    for (const target of [`/api/v1/pop/queue/${q}?wait=false`, `/api/v1/pop/queue/${q}/partition/Default?wait=false`,
        `/api/v1/pop/queue/${q}?wait=true&timeout=5000`]) {
        const started = Date.now();
        res = await http(`${broker.url}${target}`);
        assert.equal(res.status, 204, `${target}: ${res.raw}`);
        assert.ok(Date.now() - started < 3000, 'answered at once, not after the long-poll');
    }
    //  Pushes are unaffected by pop maintenance.
    res = await push(broker.url, [{ queue: q, payload: { i: 3 } }]);
    assert.equal(res.body[0].status, 'queued');
    res = await setMaintenance(broker.url, false, '/pop');
    assert.equal(res.status, 200);
    assert.equal(res.body.popMaintenanceMode, false);
    const after = await popMessages(broker.url, q, { batch: 10, autoAck: true });
    assert.deepEqual(after.map((x) => x.data.i), [1, 2, 3]);
    await broker.stop();
});

test('the flags are cluster-wide: a second broker follows within a bound', async () => {
    const db = await createDatabase('maint_cluster');
    const one = await startBroker({ db });
    const two = await startBroker({ db });
    let res = await setMaintenance(one.url, true);
    assert.equal(res.status, 200, res.raw);
    await waitFor(async () => (await maintenance(two.url)).maintenanceMode === true, 8000, 100);
    res = await push(two.url, [{ queue: 'cw', transactionId: 'cw-1', payload: { i: 1 } }]);
    assert.equal(res.body[0].status, 'buffered');
    res = await setMaintenance(one.url, true, '/pop');
    await waitFor(async () => (await maintenance(two.url)).popMaintenanceMode === true, 8000, 100);
    res = await setMaintenance(two.url, false);
    res = await setMaintenance(two.url, false, '/pop');
    await waitFor(async () => {
        const m = await maintenance(one.url);
        return !m.maintenanceMode && !m.popMaintenanceMode;
    }, 8000, 100);
    //  The second broker replays its own spool once maintenance is off.
    await waitFor(async () => (await maintenance(two.url)).bufferedMessages === 0, 12000, 100);
    await waitFor(async () => await count(db, 'cw') === 1, 12000, 100);
    //  A broker started while a flag is on picks it up from the database.
    await setMaintenance(one.url, true, '/pop');
    const three = await startBroker({ db });
    await waitFor(async () => (await maintenance(three.url)).popMaintenanceMode === true, 8000, 100);
    await setMaintenance(three.url, false, '/pop');
    await Promise.all([one.stop(), two.stop(), three.stop()]);
});
