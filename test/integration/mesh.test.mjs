//  test/integration/mesh.test.mjs - three replicas of one cell on loopback
//  (issue 13, docs/mesh.md): one PostgreSQL database shared by three
//  brokers whose mesh ports come from freePort(). A push on A wakes a
//  long-poll parked on C well before the park table's 3 s safety net; a
//  configuration change on B is seen by A's next push at once (A's 2 s
//  settings cache is dropped by the hint); a SIGKILLed broker is dropped
//  after its heartbeat expires while the others keep serving; a frozen
//  (SIGSTOP) broker catches up after SIGCONT; a broker with another
//  secret is refused; /health, /metrics and /metrics/prometheus show
//  peers, their state and hint counts.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
    startBroker, createDatabase, freePort, http, psql, waitFor, configureQueue, pushItems,
    ack, ackFor, sleep,
} from './lib.mjs';

const SECRET = 'mesh-test-cell-secret-0123456789';
const KEY = 'ab'.repeat(32);
const BEAT_MS = 500;                //  A peer silent 5 beats (2.5 s) is dropped
const SAFETY_NET_MS = 3000;         //  The park table's own wake-up
//  "Well under the safety net": a hint crosses two brokers' buses and one
//  TCP hop; a third of the safety net leaves a slow shared machine room.
const WAKE_BOUND_MS = SAFETY_NET_MS / 3;

let db;
const brokers = {};

async function start (name, env = {}) {
    const meshPort = await freePort();
    const b = await startBroker({
        db,
        env: {
            MESH_PORT: String(meshPort), MESH_SECRET: SECRET, MESH_ADVERTISED_HOST: '127.0.0.1',
            MESH_HEARTBEAT_MS: String(BEAT_MS), QUEEN_ENCRYPTION_KEY: KEY, ...env,
        },
    });
    b.meshPort = meshPort;
    b.meshId = `127.0.0.1:${meshPort}`;
    brokers[name] = b;
    return b;
}

async function mesh (b) {
    const res = await http(`${b.url}/health`);
    assert.equal(res.status, 200, res.raw);
    assert.ok(res.body.mesh, `no mesh in /health: ${res.raw}`);
    return res.body.mesh;
}

function peer (m, b) {
    return m.peers.find((p) => p.address === b.meshId);
}

async function waitUp (b, others) {
    await waitFor(async () => {
        const m = await mesh(b);
        return others.every((o) => peer(m, o)?.state === 'up');
    }, 15000, 100);
}

async function parked (url) {
    const res = await http(`${url}/metrics/prometheus`);
    const m = /^queen_parked_pops (\d+)$/m.exec(res.raw);
    assert.ok(m, `no queen_parked_pops in /metrics/prometheus (${res.status})`);
    return Number(m[1]);
}

function longPoll (url, queue, timeout = 20000) {
    return http(`${url}/api/v1/pop/queue/${encodeURIComponent(queue)}?wait=true&timeout=${timeout}`,
                { timeoutMs: 120000 })
        .then((res) => ({ ...res, at: Date.now() }));
}

//  Parks a pop on `waiter`, pushes on `pusher`, and returns how long after
//  the push's answer the pop was answered (asserting its message).
async function wakeAcross (pusher, waiter, queue, payload) {
    const lp = longPoll(waiter.url, queue);
    await waitFor(async () => (await parked(waiter.url)) === 1, 10000, 20);
    await pushItems(pusher.url, [{ queue, payload }], { queued: true });
    const pushed = Date.now();
    const res = await lp;
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.messages.map((m) => m.data), [payload]);
    await ack(waiter.url, ackFor(res.body.messages[0], { leaseId: res.body.leaseId }), { success: true });
    return res.at - pushed;
}

before(async () => {
    db = await createDatabase('mesh');
    await start('A');
    await start('B');
    await start('C');
});

after(async () => {
    for (const b of Object.values(brokers)) {
        try { process.kill(b.proc.pid, 'SIGCONT'); } catch { /* gone */ }
        await b.kill();
    }
});

test('the three brokers find each other through PostgreSQL and are up', async () => {
    const { A, B, C } = brokers;
    await waitUp(A, [B, C]);
    await waitUp(B, [A, C]);
    await waitUp(C, [A, B]);
    const m = await mesh(A);
    assert.equal(m.enabled, true);
    assert.equal(m.id, A.meshId);
    assert.equal(m.peersUp, 2);
    const rows = await psql(`SELECT count(*) FROM queen.mesh_members`, { db });
    assert.match(rows, /\b3\b/);
    const prom = await http(`${A.url}/metrics/prometheus`);
    assert.match(prom.raw, /^queen_mesh_peers_up 2$/m);
    const metrics = await http(`${A.url}/metrics`);
    assert.equal(metrics.body.mesh.peersUp, 2, metrics.raw);
});

test('a push on A wakes a long-poll parked on C, well before the safety net', async () => {
    const { A, B, C } = brokers;
    await configureQueue(A.url, 'mesh-wake');
    const took = [];
    for (let i = 0; i < 5; i++)
        took.push(await wakeAcross(A, C, 'mesh-wake', { i }));
    //  And the other way round, through B.
    took.push(await wakeAcross(C, B, 'mesh-wake', { back: 1 }));
    for (const ms of took)
        assert.ok(ms < WAKE_BOUND_MS, `woken ${ms} ms after the push (all: ${took.join(', ')})`);
    //  The status is republished every heartbeat.
    await waitFor(async () => (await mesh(A)).hints.sent >= 5, 5000, 50);
    await waitFor(async () => (await mesh(C)).hints.received >= 5, 5000, 50);
});

test('a configuration change on B is seen by the next push on A at once', async () => {
    const { A, B } = brokers;
    const Q = 'mesh-conf';
    await configureQueue(A.url, Q, { encryptionEnabled: false });
    //  A confirms the queue is plaintext and caches that for 2 s.
    await pushItems(A.url, [{ queue: Q, payload: 'before' }], { queued: true });
    const before = (await mesh(A)).hints.received;
    await configureQueue(B.url, Q, { encryptionEnabled: true });
    //  The hint reaches A (well inside the cache's 2 s).
    await waitFor(async () => (await mesh(A)).hints.received > before, 1000, 10);
    await pushItems(A.url, [{ queue: Q, payload: 'after' }], { queued: true });
    const out = await psql(`SELECT string_agg(m.is_encrypted::text, ',' ORDER BY m.seq)
                              FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
                              JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '${Q}'`, { db });
    assert.equal(out.trim(), 'false,true');
});

test('a consumer group sought or deleted travels as its own GROUP hint', async () => {
    const { A, B } = brokers;
    const Q = 'mesh-group', G = 'mesh-g';
    await configureQueue(A.url, Q);
    await pushItems(A.url, [{ queue: Q, payload: 'once' }], { queued: true });
    const path = `/api/v1/pop/queue/${Q}?consumerGroup=${G}&autoAck=true`;
    const first = await http(`${B.url}${path}&wait=false`);
    assert.equal(first.status, 200, first.raw);
    assert.deepEqual(first.body.messages.map((m) => m.data), ['once']);
    const groupsOnB = (await mesh(B)).hints.receivedByType.group;
    const committedOnB = (await mesh(B)).hints.receivedByType.committed;
    //  B parks the group's next pop: the group has consumed everything.
    const lp = http(`${B.url}${path}&wait=true&timeout=20000`, { timeoutMs: 60000 })
        .then((res) => ({ ...res, at: Date.now() }));
    await waitFor(async () => (await parked(B.url)) === 1, 10000, 20);
    //  A seeks the group back to the start: the message is the group's
    //  again, and B's parked pop gets it at once.
    const sought = await http(`${A.url}/api/v1/consumer-groups/${G}/queues/${Q}/seek`,
                              { method: 'POST', body: { timestamp: '2000-01-01T00:00:00Z' } });
    assert.equal(sought.status, 200, sought.raw);
    const at = Date.now();
    const res = await lp;
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.messages.map((m) => m.data), ['once']);
    assert.ok(res.at - at < WAKE_BOUND_MS, `woken ${res.at - at} ms after the seek`);
    //  B counted a GROUP hint, not only a committed one.
    await waitFor(async () => (await mesh(B)).hints.receivedByType.group === groupsOnB + 1, 5000, 50);
    assert.ok((await mesh(B)).hints.receivedByType.committed >= committedOnB);
    //  A deletion on B reaches A as a GROUP hint too.
    const groupsOnA = (await mesh(A)).hints.receivedByType.group;
    const del = await http(`${B.url}/api/v1/consumer-groups/${G}/queues/${Q}`, { method: 'DELETE' });
    assert.equal(del.status, 200, del.raw);
    await waitFor(async () => (await mesh(A)).hints.receivedByType.group === groupsOnA + 1, 5000, 50);
    const prom = await http(`${A.url}/metrics/prometheus`);
    const m = /^queen_mesh_hints_received_by_type_total\{type="group"\} (\d+)$/m.exec(prom.raw);
    assert.ok(m && Number(m[1]) >= 1, 'no group hints in /metrics/prometheus');
    assert.match(prom.raw, new RegExp(`^queen_mesh_peer_up\\{peer="${B.meshId}"\\} 1$`, 'm'));
    assert.match(prom.raw, /^queen_mesh_hints_sent_total [1-9]\d*$/m);
    assert.match(prom.raw, /^queen_mesh_frames_dropped_total 0$/m);
    assert.match(prom.raw, new RegExp(`^queen_mesh_peer_hints_received_total\\{peer="${B.meshId}"\\} [1-9]\\d*$`, 'm'));
});

test('a broker frozen with SIGSTOP is dropped, then catches up after SIGCONT', async () => {
    const { A, B, C } = brokers;
    const staleBefore = (await mesh(B)).staleMarks;
    process.kill(B.proc.pid, 'SIGSTOP');
    try {
        await waitFor(async () => !peer(await mesh(A), B), 15000, 200);
        //  The others keep serving each other.
        assert.ok(await wakeAcross(A, C, 'mesh-wake', { frozen: 1 }) < WAKE_BOUND_MS);
    } finally {
        process.kill(B.proc.pid, 'SIGCONT');
    }
    await waitUp(A, [B]);
    await waitUp(B, [A, C]);
    //  B noticed it had been frozen (and its peers reappearing): it drops
    //  its cached settings, which may have missed hints meanwhile.
    await waitFor(async () => (await mesh(B)).staleMarks > staleBefore, 5000, 50);
    const took = await wakeAcross(A, B, 'mesh-wake', { thawed: 1 });
    assert.ok(took < WAKE_BOUND_MS, `woken ${took} ms after the push`);
});

test('a peer with the wrong CURVE key is refused and never heard', async () => {
    const { A } = brokers;
    const D = await start('D', { MESH_SECRET: 'another-cell-secret-9876543210' });
    //  D registers in the same table, so A dials it and D dials A: both
    //  handshakes fail.
    await waitFor(async () => (await mesh(A)).refused > 0, 15000, 100);
    await sleep(BEAT_MS * 3);
    const m = await mesh(A);
    const d = peer(m, D);
    assert.ok(d, `A does not list D: ${JSON.stringify(m.peers)}`);
    assert.notEqual(d.state, 'up');
    assert.equal(d.hintsReceived, 0);
    assert.equal(m.peersUp, 2);
    const dm = await mesh(D);
    assert.equal(dm.peersUp, 0, JSON.stringify(dm.peers));
    await D.kill();
    delete brokers.D;
});

test('a SIGKILLed broker is dropped after its heartbeat; the others keep serving', async () => {
    const { A, B, C } = brokers;
    await waitUp(A, [B, C]);
    await C.kill();
    delete brokers.C;
    const killed = Date.now();
    await waitFor(async () => !peer(await mesh(A), C) && !peer(await mesh(B), C), 15000, 100);
    const dropped = Date.now() - killed;
    assert.ok(dropped >= BEAT_MS, `dropped ${dropped} ms after the kill: before its heartbeat expired`);
    const took = await wakeAcross(A, B, 'mesh-wake', { after: 'kill' });
    assert.ok(took < WAKE_BOUND_MS, `woken ${took} ms after the push`);
});

//  The mesh port closed (MESH_PORT=0) on both brokers of a cell: the hints
//  travel as authenticated NOTIFY payloads on a dedicated LISTEN
//  connection, so a push on one still wakes a long-poll on the other well
//  before the safety net; a member of another cell (another secret) on the
//  same database is not heard.
test('mesh port closed: LISTEN/NOTIFY carries the wake-ups', async () => {
    const ndb = await createDatabase('meshnotify');
    const env = { MESH_PORT: '0', MESH_SECRET: SECRET, MESH_HEARTBEAT_MS: String(BEAT_MS) };
    const E = await startBroker({ db: ndb, env });
    const F = await startBroker({ db: ndb, env });
    const G = await startBroker({ db: ndb, env: { ...env, MESH_SECRET: 'another-cell-secret-9876543210' } });
    brokers.E = E;
    brokers.F = F;
    brokers.G = G;
    for (const b of [E, F]) {
        await waitFor(async () => {
            const m = await mesh(b);
            return m.enabled === false && m.cell === true && m.fallback.active && m.fallback.listen === 'listening';
        }, 15000, 100);
    }
    await configureQueue(E.url, 'mesh-notify');
    const took = [];
    for (let i = 0; i < 3; i++)
        took.push(await wakeAcross(E, F, 'mesh-notify', { i }));
    took.push(await wakeAcross(F, E, 'mesh-notify', { back: 1 }));
    for (const ms of took)
        assert.ok(ms < WAKE_BOUND_MS, `woken ${ms} ms after the push (all: ${took.join(', ')})`);
    await waitFor(async () => (await mesh(F)).fallback.notifyReceived >= 3, 5000, 50);
    //  G's hints (another secret) reach F's LISTEN but are refused.
    await configureQueue(G.url, 'mesh-notify-g');
    await pushItems(G.url, [{ queue: 'mesh-notify-g', payload: 1 }], { queued: true });
    await waitFor(async () => (await mesh(F)).fallback.notifyRefused > 0, 5000, 50);
    for (const b of [E, F, G])
        await b.kill();
    delete brokers.E;
    delete brokers.F;
    delete brokers.G;
});

test('SIGTERM stops a broker of the cell cleanly', async () => {
    const { A, B } = brokers;
    assert.equal(await A.stop(), 0, A.logs().slice(-2000));
    delete brokers.A;
    //  B drops it after its heartbeat, and keeps serving.
    await waitFor(async () => !peer(await mesh(B), A), 15000, 100);
    await pushItems(B.url, [{ queue: 'mesh-wake', payload: 'last' }], { queued: true });
});
