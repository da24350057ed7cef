//  test/compose/cell.test.mjs - the cell of compose.yaml, in containers
//  (run by test/compose/run.sh, which brings the cell up and down).
//
//  Environment: QN_CELL_URL_1, QN_CELL_URL_2 (the two brokers as published
//  on the host), QN_CELL_PROJECT (the compose project: containers are
//  <project>_<service>_1).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
    configureQueue, pushItems, pop, ackBatch, request, waitFor, sleep,
} from '../integration/lib.mjs';

const URL1 = process.env.QN_CELL_URL_1;
const URL2 = process.env.QN_CELL_URL_2;
const PROJECT = process.env.QN_CELL_PROJECT;
assert.ok(URL1 && URL2 && PROJECT, 'run by test/compose/run.sh');

function podman (...args) {
    return execFileSync('podman', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}
const container = (service) => `${PROJECT}_${service}_1`;

async function healthy (url) {
    try {
        const res = await request(url, '/health', { expect: [200, 503], timeoutMs: 2000 });
        return res.status === 200;
    } catch {
        return false;
    }
}

//  Items over `parts` partitions, numbered from `from`.
function items (queue, prefix, from, n, parts) {
    return Array.from({ length: n }, (_, k) => ({
        queue, partition: `p${(from + k) % parts}`, transactionId: `${prefix}-${from + k}`,
        payload: { i: from + k },
    }));
}

//  Consumes `queue` as `group` through `url` until `want` distinct messages
//  arrived (or a pass finds nothing for 10 s); acks each batch. Resolves to
//  { seen: Map(i -> count) }.
async function consume (url, queue, group, want) {
    const seen = new Map();
    let idle = 0;
    while (seen.size < want && idle < 10) {
        const res = await pop(url, queue, { consumerGroup: group, batch: 500, wait: true, timeout: 1000 });
        if (!res.messages.length) {
            idle++;
            continue;
        }
        idle = 0;
        for (const m of res.messages)
            seen.set(m.data.i, (seen.get(m.data.i) || 0) + 1);
        await ackBatch(url, res.messages.map((m) => ({
            transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed',
        })), { consumerGroup: group, success: true });
    }
    return seen;
}

function exactlyOnce (seen, from, n) {
    const missing = [], twice = [];
    for (let i = from; i < from + n; i++) {
        const c = seen.get(i) || 0;
        if (c === 0)
            missing.push(i);
        else if (c > 1)
            twice.push(i);
    }
    assert.deepEqual({ missing: missing.slice(0, 20), twice: twice.slice(0, 20) }, { missing: [], twice: [] });
    assert.equal(seen.size, n, 'no message outside the range');
}

test('both brokers serve the same queues', async () => {
    assert.ok(await healthy(URL1), 'broker 1 healthy');
    assert.ok(await healthy(URL2), 'broker 2 healthy');
});

test('10,000 messages pushed on broker 1 over 200 partitions are consumed on broker 2 exactly once', async () => {
    await configureQueue(URL1, 'cell-orders', { leaseTime: 30 });
    for (let from = 0; from < 10000; from += 500)
        await pushItems(URL1, items('cell-orders', 'o', from, 500, 200), { queued: true });
    const seen = await consume(URL2, 'cell-orders', 'billing', 10000);
    exactlyOnce(seen, 0, 10000);
});

test('a long-poll parked on broker 2 is delivered a push made on broker 1', async () => {
    await configureQueue(URL1, 'cell-wake', {});
    const t0 = Date.now();
    const parked = pop(URL2, 'cell-wake', { wait: true, timeout: 20000 });
    await sleep(300);
    await pushItems(URL1, items('cell-wake', 'w', 0, 1, 1), { queued: true });
    const res = await parked;
    assert.equal(res.status, 200);
    assert.equal(res.messages[0].data.i, 0);
    //  Without the mesh the wake-up comes from the safety-net timer (3 s).
    assert.ok(Date.now() - t0 < 5000, `woken after ${Date.now() - t0} ms`);
});

test('kill -9 of broker 1: traffic continues on broker 2, broker 1 restarts by its policy', async () => {
    await configureQueue(URL2, 'cell-kill', {});
    const before = podman('inspect', container('queen-1'), '--format', '{{.State.StartedAt}}');
    //  A crash, not an operator's stop: SIGKILL to the broker process from
    //  outside (`podman kill` would count as a stop by the user, which
    //  restart: unless-stopped respects).
    const pid = Number(podman('inspect', container('queen-1'), '--format', '{{.State.Pid}}'));
    assert.ok(pid > 1, `broker 1 runs as pid ${pid}`);
    process.kill(pid, 'SIGKILL');
    for (let from = 0; from < 1000; from += 250)
        await pushItems(URL2, items('cell-kill', 'k', from, 250, 20), { queued: true });
    const seen = await consume(URL2, 'cell-kill', 'g', 1000);
    exactlyOnce(seen, 0, 1000);
    //  restart: unless-stopped brings it back, healthy again.
    await waitFor(async () => podman('inspect', container('queen-1'), '--format', '{{.State.StartedAt}}') !== before
        && await healthy(URL1), 90000, 500);
    await pushItems(URL1, items('cell-kill', 'k', 1000, 10, 20), { queued: true });
    exactlyOnce(await consume(URL1, 'cell-kill', 'g', 10), 1000, 10);
});

test('PostgreSQL stopped for 10 s: pushes are spooled, then replayed, nothing lost', async () => {
    await configureQueue(URL1, 'cell-outage', {});
    podman('stop', '-t', '5', container('postgres'));
    const t0 = Date.now();
    let buffered = 0;
    for (let from = 0; from < 500; from += 50) {
        const res = await pushItems(URL1, items('cell-outage', 'x', from, 50, 10));
        for (const r of res)
            if (r.status === 'buffered')
                buffered++;
    }
    assert.ok(buffered > 0, 'pushes during the outage were buffered');
    await sleep(Math.max(0, 10000 - (Date.now() - t0)));
    podman('start', container('postgres'));
    await waitFor(async () => await healthy(URL1) && await healthy(URL2), 120000, 500);
    const seen = await consume(URL2, 'cell-outage', 'g', 500);
    exactlyOnce(seen, 0, 500);
});
