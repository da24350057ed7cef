//  test/integration/harness.test.mjs - checks the helpers in lib.mjs against
//  the throwaway PostgreSQL and the broker (which must have been built).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import http_ from 'node:http';
import net from 'node:net';
import {
    PG_PORT, freePort, createDatabase, psql, pgStop, pgStart, pgFreeze,
    pgThaw, http, sleep, waitFor, startBroker, request, configureQueue, pushItems, pop, popMessages,
    popPath, ack, ackBatch, transaction, extendLease, setMaintenance, getMaintenance, buffers, dlqList,
} from './lib.mjs';

//  psql with a short connect timeout, for probing a stopped/frozen server.
async function probe (sql, db) {
    try {
        return { ok: true, out: await psql(sql, { db, timeoutMs: 4000 }) };
    } catch (err) {
        return { ok: false, err };
    }
}

test('freePort returns distinct ports that can be bound', async () => {
    const a = await freePort();
    const b = await freePort();
    assert.notEqual(a, b);
    assert.notEqual(a, PG_PORT);
    const srv = net.createServer();
    await new Promise((resolve) => srv.listen(a, '127.0.0.1', resolve));
    await new Promise((resolve) => srv.close(resolve));
});

test('createDatabase makes fresh, distinct databases', async () => {
    const one = await createDatabase('harness');
    const two = await createDatabase('harness');
    assert.notEqual(one, two);
    const names = (await psql(
        `SELECT datname FROM pg_database WHERE datname IN ('${one}', '${two}') ORDER BY 1`))
        .split('\n');
    assert.deepEqual(names, [one, two].sort());
    assert.equal(await psql('SELECT count(*) FROM pg_tables WHERE schemaname = \'public\'', { db: one }), '0');
});

test('the cluster has the settings the broker is benchmarked with', async () => {
    const out = await psql(`SELECT current_setting('max_connections') || ' ' ||
        current_setting('fsync') || ' ' || current_setting('synchronous_commit') || ' ' ||
        current_setting('jit') || ' ' || current_setting('listen_addresses')`);
    assert.equal(out, '200 on on off 127.0.0.1');
});

test('pgStop / pgStart keep committed data', async () => {
    const db = await createDatabase('harness');
    await psql('CREATE TABLE t (x int); INSERT INTO t VALUES (42)', { db });
    await pgStop();
    try {
        const down = await probe('SELECT 1', db);
        assert.equal(down.ok, false, 'psql must fail while PostgreSQL is stopped');
    } finally {
        await pgStart();
    }
    assert.equal(await psql('SELECT x FROM t', { db }), '42');
});

test('pgFreeze makes PostgreSQL hang, pgThaw brings it back', async () => {
    const db = await createDatabase('harness');
    await pgFreeze();
    try {
        const started = Date.now();
        const frozen = await probe('SELECT 1', db);
        assert.equal(frozen.ok, false, 'psql must not get an answer from a frozen server');
        assert.ok(Date.now() - started >= 2000, 'a frozen server hangs rather than refusing');
    } finally {
        await pgThaw();
    }
    assert.equal(await waitFor(async () => (await probe('SELECT 7', db)).out, 10000), '7');
});

test('http parses JSON, keeps text, sends bodies and headers', async (t) => {
    const srv = http_.createServer((req, res) => {
        let body = '';
        req.on('data', (chunk) => { body += chunk; });
        req.on('end', () => {
            if (req.url === '/text') {
                res.writeHead(404, { 'Content-Type': 'text/plain' });
                res.end('nope');
                return;
            }
            res.writeHead(201, { 'Content-Type': 'application/json' });
            res.end(JSON.stringify({
                method: req.method, body, type: req.headers['content-type'] || null,
                x: req.headers['x-test'] || null,
            }));
        });
    });
    const port = await freePort();
    await new Promise((resolve) => srv.listen(port, '127.0.0.1', resolve));
    t.after(() => new Promise((resolve) => srv.close(resolve)));
    const url = `http://127.0.0.1:${port}`;

    const posted = await http(`${url}/echo`, {
        method: 'POST', body: { a: 1 }, headers: { 'X-Test': 'yes' },
    });
    assert.equal(posted.status, 201);
    assert.deepEqual(posted.body, {
        method: 'POST', body: '{"a":1}', type: 'application/json', x: 'yes',
    });
    assert.equal(posted.headers['content-type'], 'application/json');
    assert.equal(posted.headers.get('Content-Type'), 'application/json');
    assert.equal(posted.headers.get('X-Missing'), null);

    const text = await http(`${url}/text`);
    assert.equal(text.status, 404);
    assert.equal(text.body, 'nope');
    assert.equal(text.raw, 'nope');
});

test('waitFor polls until truthy and times out otherwise', async () => {
    let n = 0;
    assert.equal(await waitFor(() => (++n >= 3 ? 'done' : null), 2000, 10), 'done');
    await assert.rejects(waitFor(() => false, 200, 20), /after 200 ms/);
    const started = Date.now();
    await sleep(50);
    assert.ok(Date.now() - started >= 45);
});

test('startBroker waits for /health and stop() returns the exit code', async () => {
    const broker = await startBroker();
    try {
        const res = await http(`${broker.url}/health`);
        assert.equal(res.status, 200);
        assert.equal(res.body.status, 'healthy');
        assert.equal(res.body.database, 'connected');
    } finally {
        assert.equal(await broker.stop(), 0, `broker output:\n${broker.logs()}`);
    }
});

//  Every request helper throws, with the status and the response text,
//  when its route answers anything but what it expects - here a server
//  that answers 404 "Not found" to everything (a route that is missing).
test('request helpers fail when the route is missing (404)', async (t) => {
    const srv = http_.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
            res.writeHead(404, { 'Content-Type': 'application/json' });
            res.end('{"error":"Not found"}');
        });
    });
    const port = await freePort();
    await new Promise((resolve) => srv.listen(port, '127.0.0.1', resolve));
    t.after(() => new Promise((resolve) => srv.close(resolve)));
    const url = `http://127.0.0.1:${port}`;
    const m = { transactionId: 't', partitionId: '00000002-0000-8000-8000-000000000001', leaseId: null };
    const calls = {
        request: () => request(url, '/x'),
        configureQueue: () => configureQueue(url, 'q', {}),
        pushItems: () => pushItems(url, [{ queue: 'q' }]),
        pop: () => pop(url, 'q'),
        popMessages: () => popMessages(url, 'q', { partition: 'p' }),
        popPath: () => popPath(url, 'q'),
        ack: () => ack(url, m),
        ackBatch: () => ackBatch(url, [m]),
        transaction: () => transaction(url, [{ type: 'push', items: [{ queue: 'q' }] }]),
        extendLease: () => extendLease(url, '00000000-0000-4000-8000-000000000000'),
        setMaintenance: () => setMaintenance(url, true),
        setPopMaintenance: () => setMaintenance(url, true, { pop: true }),
        getMaintenance: () => getMaintenance(url),
        buffers: () => buffers(url),
        dlqList: () => dlqList(url, 'queue=q'),
    };
    for (const [name, call] of Object.entries(calls))
        await assert.rejects(call(), /got 404: \{"error":"Not found"\}/, name);
    assert.equal(Object.keys(calls).length, 15);
});
