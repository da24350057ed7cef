//  test/integration/kafka_groups.test.mjs - the Kafka consumer-group
//  coordinator and committed offsets (spec kafka.md §7, §4.6-4.12, §12.2
//  group lines, §12.3, §12.5; docs/kafka.md) with the real kcat 1.7.1
//  (librdkafka 2.0.2) and kafkajs 2.2.4, plus raw-socket requests for the
//  error codes: kcat -G resumes from the committed offset; a kafkajs group
//  of 2 members, then a third joining and one leaving, with commits where
//  the test puts them: nothing lost, nothing twice, admin fetchOffsets;
//  the state machine's refusals (79, 25, 22, 27, 26, 23, 24, 42, 12, 3);
//  a broker SIGKILLed under a producing kcat and a consuming group resumes
//  the group where it committed.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import kafkajs from 'kafkajs';
import { startBroker, freePort, psql, sleep, waitFor, popMessages, ackBatch, ackFor } from './lib.mjs';

const { Kafka, logLevel, CompressionTypes } = kafkajs;

let broker;
let B;
let kport;
let hport;

//  Two distinct free ports (freePort may hand out the same one twice).
async function twoPorts () {
    const a = await freePort();
    let b;
    do
        b = await freePort();
    while (b === a);
    return [a, b];
}

const ENV = (kp) => ({
    KAFKA_PORT: String(kp), KAFKA_ADVERTISED_HOST: '127.0.0.1', KAFKA_DEFAULT_PARTITIONS: '1',
});

before(async () => {
    [hport, kport] = await twoPorts();
    broker = await startBroker({ port: hport, env: ENV(kport) });
    B = `127.0.0.1:${kport}`;
});

after(async () => {
    if (broker)
        await broker.stop();
});

//  A kcat process; out/err collect as it runs.
function kcatStart (args, { input } = {}) {
    const p = spawn('kcat', ['-b', B, '-u', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    const k = { proc: p, out: '', err: '', code: null };
    p.stdout.on('data', (c) => { k.out += c; });
    p.stderr.on('data', (c) => { k.err += c; });
    k.done = new Promise((resolve) => p.on('close', (code) => { k.code = code; resolve(code); }));
    if (input !== undefined)
        p.stdin.end(input);
    return k;
}

async function kcat (args, { input, timeoutMs = 30000 } = {}) {
    const k = kcatStart(args, { input: input ?? '' });
    const t = setTimeout(() => k.proc.kill('SIGKILL'), timeoutMs);
    await k.done;
    clearTimeout(t);
    return k;
}

const lines = (s) => s.split('\n').filter((l) => l.length > 0);

// ------------------------------------------------------------------ raw requests

function str (s) {
    if (s === null)
        return Buffer.from([0xff, 0xff]);
    const b = Buffer.from(s);
    const h = Buffer.alloc(2);
    h.writeInt16BE(b.length);
    return Buffer.concat([h, b]);
}
function bytes (b) {
    const h = Buffer.alloc(4);
    h.writeInt32BE(b.length);
    return Buffer.concat([h, b]);
}
const i8 = (v) => Buffer.from([v & 0xff]);
function i16 (v) { const b = Buffer.alloc(2); b.writeInt16BE(v); return b; }
function i32 (v) { const b = Buffer.alloc(4); b.writeInt32BE(v); return b; }
function i64 (v) { const b = Buffer.alloc(8); b.writeBigInt64BE(BigInt(v)); return b; }
const arr = (items) => Buffer.concat([i32(items.length), ...items]);

//  A reader over a response body.
function reader (buf) {
    let at = 0;
    const r = {
        i8: () => { const v = buf.readInt8(at); at += 1; return v; },
        i16: () => { const v = buf.readInt16BE(at); at += 2; return v; },
        i32: () => { const v = buf.readInt32BE(at); at += 4; return v; },
        i64: () => { const v = buf.readBigInt64BE(at); at += 8; return Number(v); },
        str: () => { const n = r.i16(); if (n < 0) return null; const s = buf.subarray(at, at + n).toString(); at += n; return s; },
        bytes: () => { const n = r.i32(); if (n < 0) return null; const s = buf.subarray(at, at + n); at += n; return s; },
        left: () => buf.length - at,
    };
    return r;
}

//  One connection sending requests and reading answers in order.
async function connect () {
    const sock = net.connect(kport, '127.0.0.1');
    await new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
    let acc = Buffer.alloc(0);
    const waiting = [];
    let closed = false;
    sock.on('data', (c) => {
        acc = Buffer.concat([acc, c]);
        while (acc.length >= 4 && acc.length >= 4 + acc.readInt32BE(0)) {
            const n = acc.readInt32BE(0);
            const frame = acc.subarray(4, 4 + n);
            acc = acc.subarray(4 + n);
            waiting.shift().resolve(frame);
        }
    });
    sock.on('close', () => { closed = true; for (const w of waiting.splice(0)) w.reject(new Error('closed')); });
    sock.on('error', () => {});
    let corr = 1;
    return {
        send (key, version, body) {
            const c = corr++;
            const payload = Buffer.concat([i16(key), i16(version), i32(c), str('raw-client'), body]);
            sock.write(Buffer.concat([i32(payload.length), payload]));
            return new Promise((resolve, reject) => waiting.push({
                resolve: (frame) => {
                    assert.equal(frame.readInt32BE(0), c, 'correlation id');
                    resolve(reader(frame.subarray(4)));
                },
                reject,
            }));
        },
        closed: () => closed,
        end: () => sock.destroy(),
    };
}

const CONSUMER_META = Buffer.from([0, 0, 0, 0, 0, 1, 0, 2, 0x74, 0x31, 0, 0, 0, 0]);

function joinBody ({ group, session = 10000, rebalance = 10000, member = '', instance = null,
                     type = 'consumer', protocols = [['range', CONSUMER_META]] }) {
    return Buffer.concat([str(group), i32(session), i32(rebalance), str(member), str(instance), str(type),
                          arr(protocols.map(([n, m]) => Buffer.concat([str(n), bytes(m)])))]);
}
function readJoin (r) {
    const out = { throttle: r.i32(), error: r.i16(), generation: r.i32(), protocol: r.str(),
                  leader: r.str(), member: r.str(), members: [] };
    for (let n = r.i32(); n > 0; n--)
        out.members.push({ id: r.str(), instance: r.str(), meta: r.bytes() });
    return out;
}
const syncBody = (group, gen, member, assignments = []) => Buffer.concat([
    str(group), i32(gen), str(member), str(null),
    arr(assignments.map(([m, a]) => Buffer.concat([str(m), bytes(a)]))),
]);
const readSync = (r) => ({ throttle: r.i32(), error: r.i16(), assignment: r.bytes() });
const hbBody = (group, gen, member) => Buffer.concat([str(group), i32(gen), str(member), str(null)]);
const readErr = (r) => { r.i32(); return r.i16(); };

function commitBody (group, gen, member, topics) {
    return Buffer.concat([str(group), i32(gen), str(member), arr(topics.map(([t, parts]) =>
        Buffer.concat([str(t), arr(parts.map(([p, off, meta]) => Buffer.concat([i32(p), i64(off), str(meta)])))])))]);
}
function readCommit (r, v = 5) {
    if (v >= 3)
        r.i32();
    const out = {};
    for (let t = r.i32(); t > 0; t--) {
        const name = r.str();
        out[name] = {};
        for (let p = r.i32(); p > 0; p--) {
            const idx = r.i32();
            out[name][idx] = r.i16();
        }
    }
    return out;
}
function fetchBody (group, topics) {
    if (topics === null)
        return Buffer.concat([str(group), i32(-1)]);
    return Buffer.concat([str(group), arr(topics.map(([t, parts]) => Buffer.concat([str(t), arr(parts.map(i32))])))]);
}
function readFetch (r) {
    r.i32();
    const out = { topics: {} };
    for (let t = r.i32(); t > 0; t--) {
        const name = r.str();
        out.topics[name] = {};
        for (let p = r.i32(); p > 0; p--) {
            const idx = r.i32();
            out.topics[name][idx] = { offset: r.i64(), meta: r.str(), error: r.i16() };
        }
    }
    out.error = r.i16();
    return out;
}

// ------------------------------------------------------------------ the state machine

test('FindCoordinator, JoinGroup (79, leader), SyncGroup, Heartbeat, LeaveGroup and their error codes', async () => {
    const c = await connect();
    const d = await connect();
    try {
        //  FindCoordinator v2 for a group: this broker.
        let r = await c.send(10, 2, Buffer.concat([str('rg'), i8(0)]));
        assert.deepEqual([r.i32(), r.i16(), r.str(), r.i32(), r.str(), r.i32()], [0, 0, null, 1, '127.0.0.1', kport]);
        //  Refusals before any state: bad session 26, static membership 42, reserved / empty id 24.
        assert.equal(readJoin(await c.send(11, 5, joinBody({ group: 'rg', session: 1000 }))).error, 26);
        assert.equal(readJoin(await c.send(11, 5, joinBody({ group: 'rg', instance: 'a' }))).error, 42);
        assert.equal(readJoin(await c.send(11, 5, joinBody({ group: '__QUEUE_MODE__' }))).error, 24);
        assert.equal(readJoin(await c.send(11, 5, joinBody({ group: '' }))).error, 24);
        assert.equal(readJoin(await c.send(11, 5, joinBody({ group: 'rg', member: 'nobody' }))).error, 25);
        //  KIP-394: an empty member id gets 79 and an id, then joins with it.
        const first = readJoin(await c.send(11, 5, joinBody({ group: 'rg' })));
        assert.equal(first.error, 79);
        assert.equal(first.generation, -1);
        assert.match(first.member, /^raw-client-[0-9a-f-]{36}$/);
        const j1 = readJoin(await c.send(11, 5, joinBody({ group: 'rg', member: first.member })));
        assert.deepEqual([j1.error, j1.generation, j1.protocol, j1.leader, j1.member],
                         [0, 1, 'range', first.member, first.member]);
        assert.equal(j1.members.length, 1);
        assert.deepEqual(j1.members[0].meta, CONSUMER_META);
        //  Another protocol type, or no protocol in common: 23.
        assert.equal(readJoin(await d.send(11, 5, joinBody({ group: 'rg', type: 'connect' }))).error, 23);
        assert.equal(readJoin(await d.send(11, 5, joinBody({ group: 'rg', protocols: [['x', CONSUMER_META]] }))).error, 23);
        //  Sync from the leader: Stable, its assignment back.
        const s1 = readSync(await c.send(14, 3, syncBody('rg', 1, first.member, [[first.member, Buffer.from('A1')]])));
        assert.deepEqual([s1.error, s1.assignment.toString()], [0, 'A1']);
        assert.equal(readErr(await c.send(12, 3, hbBody('rg', 1, first.member))), 0);
        assert.equal(readErr(await c.send(12, 3, hbBody('rg', 7, first.member))), 22);
        assert.equal(readErr(await c.send(12, 3, hbBody('rg', 1, 'stranger'))), 25);
        assert.equal(readSync(await c.send(14, 3, syncBody('rg', 9, first.member))).error, 22);
        //  A second member: its join is held, the first learns of the
        //  rebalance from its heartbeat (27), rejoins, both answered.
        const d0 = readJoin(await d.send(11, 5, joinBody({ group: 'rg', protocols: [['roundrobin', CONSUMER_META], ['range', CONSUMER_META]] })));
        assert.equal(d0.error, 79);
        const dJoin = d.send(11, 5, joinBody({ group: 'rg', member: d0.member, protocols: [['roundrobin', CONSUMER_META], ['range', CONSUMER_META]] }));
        await sleep(300);
        assert.equal(readErr(await c.send(12, 3, hbBody('rg', 1, first.member))), 27);
        //  A member commit while the rebalance waits for joins is still
        //  taken (as Kafka does; here the unknown topic answers 3).
        const during = readCommit(await c.send(8, 5, commitBody('rg', 1, first.member, [['nosuch', [[0, 1, null]]]])));
        assert.equal(during.nosuch[0], 3);
        const cJoin = readJoin(await c.send(11, 5, joinBody({ group: 'rg', member: first.member })));
        const dj = readJoin(await dJoin);
        assert.deepEqual([cJoin.error, cJoin.generation, cJoin.leader], [0, 2, first.member]);
        assert.deepEqual([dj.error, dj.generation, dj.leader, dj.protocol], [0, 2, first.member, 'range']);
        assert.equal(cJoin.members.length, 2, 'the leader gets every member');
        assert.equal(dj.members.length, 0, 'a follower gets none');
        //  While the assignment is handed out: commits 27, heartbeats 0.
        assert.equal(readCommit(await d.send(8, 5, commitBody('rg', 2, d0.member, [['nosuch', [[0, 1, null]]]]))).nosuch[0], 27);
        assert.equal(readErr(await d.send(12, 3, hbBody('rg', 2, d0.member))), 0);
        //  The follower's sync waits for the leader's.
        const dSync = d.send(14, 3, syncBody('rg', 2, d0.member));
        await sleep(200);
        const cs = readSync(await c.send(14, 3, syncBody('rg', 2, first.member, [
            [first.member, Buffer.from('C')], [d0.member, Buffer.from('D')]])));
        assert.equal(cs.assignment.toString(), 'C');
        const ds = readSync(await dSync);
        assert.deepEqual([ds.error, ds.assignment.toString()], [0, 'D']);
        //  LeaveGroup: the other member rebalances alone.
        assert.equal(readErr(await d.send(13, 1, Buffer.concat([str('rg'), str(d0.member)]))), 0);
        assert.equal(readErr(await d.send(13, 1, Buffer.concat([str('rg'), str(d0.member)]))), 25);
        assert.equal(readErr(await c.send(12, 3, hbBody('rg', 2, first.member))), 27);
        const alone = readJoin(await c.send(11, 5, joinBody({ group: 'rg', member: first.member })));
        assert.deepEqual([alone.error, alone.generation, alone.members.length], [0, 3, 1]);
        //  A simple (non-member) commit while the group has members: 25.
        assert.equal(readCommit(await d.send(8, 5, commitBody('rg', -1, '', [['nosuch', [[0, 1, null]]]]))).nosuch[0], 25);
        assert.equal(readErr(await c.send(13, 1, Buffer.concat([str('rg'), str(first.member)]))), 0);
        assert.equal(c.closed(), false);
    } finally {
        c.end();
        d.end();
    }
});

test('session expiry removes a silent member and rebalances the rest', async () => {
    const c = await connect();
    const d = await connect();
    try {
        const a0 = readJoin(await c.send(11, 5, joinBody({ group: 'sx', session: 6000 })));
        const a = readJoin(await c.send(11, 5, joinBody({ group: 'sx', session: 6000, member: a0.member })));
        assert.equal(a.generation, 1);
        assert.equal(readSync(await c.send(14, 3, syncBody('sx', 1, a.member, []))).error, 0);
        const b0 = readJoin(await d.send(11, 5, joinBody({ group: 'sx', session: 6000 })));
        //  d joins and waits; c never heartbeats again: after its 6 s session the join completes without it.
        const t0 = Date.now();
        const b = readJoin(await d.send(11, 5, joinBody({ group: 'sx', session: 6000, member: b0.member })));
        const waited = Date.now() - t0;
        assert.deepEqual([b.error, b.generation, b.leader, b.members.length], [0, 2, b0.member, 1]);
        assert.ok(waited >= 4000, `the join waited for the session to expire (${waited} ms)`);
        assert.equal(readErr(await c.send(12, 3, hbBody('sx', 1, a.member))), 25);
    } finally {
        c.end();
        d.end();
    }
});

test('OffsetCommit / OffsetFetch: stored in PostgreSQL, metadata byte for byte, 3, 12, 24, never-seen group -1', async () => {
    await kcat(['-P', '-t', 'oc1'], { input: 'a\nb\nc\n' });
    const c = await connect();
    try {
        const meta = 'm\u00e9ta\u0000data';
        const big = 'x'.repeat(4097);
        const cr = readCommit(await c.send(8, 2, Buffer.concat([str('og'), i32(-1), str(''), i64(-1),
            arr([Buffer.concat([str('oc1'), arr([Buffer.concat([i32(0), i64(2), str(meta)])])]),
                 Buffer.concat([str('nosuch'), arr([Buffer.concat([i32(0), i64(1), str(null)])])])])])), 2);
        assert.deepEqual(cr, { oc1: { 0: 0 }, nosuch: { 0: 3 } });
        const cr2 = readCommit(await c.send(8, 5, commitBody('og', -1, '', [['oc1', [[1, 1, null], [0, 3, big]]]])));
        assert.deepEqual(cr2, { oc1: { 1: 3, 0: 12 } });
        //  v1: no group error; v4: group error 0 at the end; null topics = all.
        const f1 = readFetch(await c.send(9, 4, fetchBody('og', [['oc1', [0, 1]], ['nosuch', [0]]])));
        assert.deepEqual(f1.topics.oc1[0], { offset: 2, meta, error: 0 });
        assert.deepEqual(f1.topics.oc1[1], { offset: -1, meta: null, error: 3 });
        assert.equal(f1.topics.nosuch[0].error, 3);
        assert.equal(f1.error, 0);
        const all = readFetch(await c.send(9, 4, fetchBody('og', null)));
        assert.deepEqual(all.topics, { oc1: { 0: { offset: 2, meta, error: 0 } } });
        const never = readFetch(await c.send(9, 3, fetchBody('never-seen', [['oc1', [0]]])));
        assert.deepEqual(never.topics.oc1[0], { offset: -1, meta: null, error: 0 });
        const v1 = await c.send(9, 1, fetchBody('og', [['oc1', [0]]]));
        assert.equal(v1.i32(), 1);
        assert.equal(v1.str(), 'oc1');
        assert.equal(v1.i32(), 1);
        assert.deepEqual([v1.i32(), v1.i64(), v1.str(), v1.i16(), v1.left()], [0, 2, meta, 0, 0]);
        assert.equal(readFetch(await c.send(9, 4, fetchBody('__QUEUE_MODE__', [['oc1', [0]]]))).error, 24);
        //  The row is in PostgreSQL.
        const rows = await psql(`SELECT committed_offset, encode(metadata, 'hex') FROM queen.kafka_group_offset WHERE group_name = 'og'`,
                                { db: broker.db });
        assert.match(rows, /2\|6dc3a974610064617461/);
    } finally {
        c.end();
    }
});

test('a Kafka group and a native group of the same name share nothing (spec §6.4, §12.4.4)', async () => {
    const p = await kcat(['-P', '-t', 'xg', '-K:'], { input: 'e1:{"v":1}\ne2:{"v":2}\ne3:{"v":3}\n' });
    assert.equal(p.code, 0, p.err);
    const c = await connect();
    try {
        //  The Kafka group kx has read everything (a simple commit at the end).
        assert.deepEqual(readCommit(await c.send(8, 5, commitBody('kx', -1, '', [['xg', [[0, 3, null]]]]))), { xg: { 0: 0 } });
        //  The native group kx still starts at the beginning, and its acks
        //  do not move the Kafka group's offset.
        const msgs = [];
        for (let i = 0; i < 5 && msgs.length < 3; i++)
            msgs.push(...await popMessages(broker.url, 'xg', { batch: 10, consumerGroup: 'kx' }));
        assert.deepEqual(msgs.map((m) => m.data.v).sort(), [1, 2, 3]);
        await ackBatch(broker.url, msgs.map((m) => ackFor(m, { status: 'completed' })), { consumerGroup: 'kx', success: true });
        assert.deepEqual((await popMessages(broker.url, 'xg', { batch: 10, consumerGroup: 'kx' })).length, 0);
        const f = readFetch(await c.send(9, 4, fetchBody('kx', [['xg', [0]]])));
        assert.deepEqual(f.topics.xg[0], { offset: 3, meta: null, error: 0 });
    } finally {
        c.end();
    }
});

// ------------------------------------------------------------------ kcat -G (§12.2)

test('kcat -G: a group consumes, commits, and the next run resumes from the committed offset', async () => {
    const p1 = await kcat(['-P', '-t', 'g1t', '-K:'], { input: 'k1:hello\nk2:world\nk3:third\n' });
    assert.equal(p1.code, 0, p1.err);
    const g = kcatStart(['-G', 'g1', '-o', 'beginning', '-f', '%k=%s @%o\n', '-X', 'auto.commit.interval.ms=500', 'g1t']);
    await waitFor(() => lines(g.out).length >= 3, 30000);
    //  Committed (librdkafka commits every 500 ms) before it stops.
    await waitFor(async () => (await psql(`SELECT committed_offset FROM queen.kafka_group_offset WHERE group_name = 'g1'`,
                                          { db: broker.db })).trim() === '3', 15000);
    g.proc.kill('SIGTERM');
    await g.done;
    assert.deepEqual(lines(g.out), ['k1=hello @0', 'k2=world @1', 'k3=third @2']);
    const p2 = await kcat(['-P', '-t', 'g1t', '-K:'], { input: 'k4:four\n' });
    assert.equal(p2.code, 0, p2.err);
    const h = kcatStart(['-G', 'g1', '-f', '%k=%s @%o\n', 'g1t']);
    await waitFor(() => lines(h.out).length >= 1, 30000);
    await sleep(1500);      //  Anything else would show up now
    h.proc.kill('SIGTERM');
    await h.done;
    assert.deepEqual(lines(h.out), ['k4=four @3']);
});

test('kcat -G with group.instance.id: JoinGroup answers 42, the broker stays up', async () => {
    await kcat(['-P', '-t', 'g2t'], { input: 'x\n' });
    const k = kcatStart(['-G', 'g2', '-X', 'group.instance.id=a', '-o', 'beginning', 'g2t']);
    await waitFor(() => /nvalid request|INVALID_REQUEST/i.test(k.err), 20000);
    k.proc.kill('SIGKILL');
    await k.done;
    assert.equal(lines(k.out).length, 0, 'nothing consumed');
    const c = await connect();
    const r = await c.send(10, 2, Buffer.concat([str('any'), i8(0)]));
    r.i32();
    assert.equal(r.i16(), 0);
    c.end();
});

// ------------------------------------------------------------------ kafkajs (§12.3)

function kjs (clientId) {
    return new Kafka({ clientId, brokers: [B], logLevel: logLevel.NOTHING });
}

test('kafkajs: the §12.3 script (2-member group, admin fetchOffsets, fetchTopicOffsets)', async () => {
    const kafka = kjs('kjs');
    const admin = kafka.admin();
    await admin.connect();
    assert.equal(await admin.createTopics({ topics: [{ topic: 'kt', numPartitions: 3 }] }), true);
    const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await p.connect();
    const msgs = [...Array(9).keys()].map((i) => ({ key: 'key' + i, value: 'v' + i, headers: { h: 'x' + i } }));
    await p.send({ topic: 'kt', messages: msgs, compression: CompressionTypes.GZIP });
    const seen = new Map();
    const mk = async () => {
        const c = kafka.consumer({ groupId: 'kg', maxWaitTimeInMs: 1000 });
        await c.connect();
        await c.subscribe({ topic: 'kt', fromBeginning: true });
        await c.run({ eachMessage: async ({ partition, message }) => {
            const k = message.key.toString();
            seen.set(k, [partition, message.value.toString(), message.headers.h.toString()]);
        } });
        return c;
    };
    const c1 = await mk();
    const c2 = await mk();
    try {
        await waitFor(() => seen.size === 9, 60000, 200);
        assert.deepEqual(seen.get('key4'), [0, 'v4', 'x4']);
        //  Both members settle and commit (kafkajs commits every 5 s and on rebalance).
        await waitFor(async () => {
            const offs = await admin.fetchOffsets({ groupId: 'kg', topics: ['kt'] });
            return offs[0].partitions.reduce((s, x) => s + Number(x.offset), 0) === 9;
        }, 30000, 500);
        const offs = await admin.fetchOffsets({ groupId: 'kg', topics: ['kt'] });
        assert.deepEqual(offs[0].partitions.map((x) => [x.partition, x.offset]).sort(),
                         [[0, '3'], [1, '4'], [2, '2']]);
        const tops = await admin.fetchTopicOffsets('kt');
        assert.deepEqual(tops.map((x) => [x.partition, x.high, x.low]).sort(),
                         [[0, '3', '0'], [1, '4', '0'], [2, '2', '0']]);
    } finally {
        await c1.disconnect();
        await c2.disconnect();
        await p.disconnect();
    }
    await admin.deleteTopics({ topics: ['kt'] });
    assert.ok(!(await admin.listTopics()).includes('kt'));
    await admin.disconnect();
});

test('kafkajs: a third member joins, one leaves, then another; assignments disjoint and complete, nothing lost or twice', async () => {
    const kafka = kjs('kjs-rb');
    const admin = kafka.admin();
    await admin.connect();
    assert.equal(await admin.createTopics({ topics: [{ topic: 'krb', numPartitions: 3 }] }), true);
    const p = kafka.producer();
    await p.connect();
    const count = new Map();            //  value -> times delivered
    const assigned = new Map();         //  consumer name -> its latest partitions
    const mk = async (name) => {
        const c = kafka.consumer({ groupId: 'kg2', maxWaitTimeInMs: 500, sessionTimeout: 10000, heartbeatInterval: 1000 });
        c.on(c.events.GROUP_JOIN, (e) => assigned.set(name, [...(e.payload.memberAssignment.krb || [])].sort()));
        await c.connect();
        await c.subscribe({ topic: 'krb', fromBeginning: true });
        //  The commit is the test's: after each message, before the next.
        await c.run({ autoCommit: false, eachMessage: async ({ topic, partition, message }) => {
            const v = message.value.toString();
            count.set(v, (count.get(v) || 0) + 1);
            await c.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }]);
        } });
        return c;
    };
    //  True when the named members each hold a partition and together hold
    //  {0,1,2}, none twice (the latest assignment of each).
    const covers = (names) => {
        const all = names.flatMap((x) => assigned.get(x) || []);
        return all.length === 3 && new Set(all).size === 3
            && names.every((x) => (assigned.get(x) || []).length > 0);
    };
    let n = 0;
    const produce = async (k) => {
        const msgs = [];
        for (let i = 0; i < k; i++, n++)
            msgs.push({ key: 'key' + (n % 9), value: 'm' + n });   //  Every partition (§6.2 vectors)
        await p.send({ topic: 'krb', messages: msgs });
    };
    const committedSum = async () => {
        const offs = await admin.fetchOffsets({ groupId: 'kg2', topics: ['krb'] });
        return offs[0].partitions.reduce((s, x) => s + Math.max(0, Number(x.offset)), 0);
    };
    const c1 = await mk('c1');
    const c2 = await mk('c2');
    let c3;
    let left2 = false;
    try {
        await waitFor(() => covers(['c1', 'c2']), 60000, 200);
        await produce(30);
        await waitFor(async () => count.size === 30 && await committedSum() === 30, 60000, 200);
        //  A third member: each of the three gets one partition.
        c3 = await mk('c3');
        await waitFor(() => covers(['c1', 'c2', 'c3']), 60000, 200);
        await produce(30);
        await waitFor(async () => count.size === 60 && await committedSum() === 60, 60000, 200);
        //  c1 leaves: the other two share the three partitions.
        await c1.disconnect();
        await waitFor(() => covers(['c2', 'c3']), 60000, 200);
        await produce(30);
        await waitFor(async () => count.size === 90 && await committedSum() === 90, 60000, 200);
        //  c2 leaves too: c3 is reassigned all three within 15 s (spec §12.3's second script).
        await c2.disconnect();
        left2 = true;
        await waitFor(() => covers(['c3']), 15000, 100);
        await produce(30);
        await waitFor(async () => count.size === 120 && await committedSum() === 120, 60000, 200);
        await sleep(1000);
        const twice = [...count].filter(([, k]) => k !== 1);
        assert.deepEqual(twice, [], 'each message delivered exactly once');
        assert.equal(count.size, 120);
        const tops = await admin.fetchTopicOffsets('krb');
        const offs = await admin.fetchOffsets({ groupId: 'kg2', topics: ['krb'] });
        assert.deepEqual(offs[0].partitions.map((x) => [x.partition, x.offset]).sort(),
                         tops.map((x) => [x.partition, x.high]).sort(), 'committed = high watermark');
    } finally {
        for (const c of [left2 ? null : c2, c3])
            if (c)
                await c.disconnect();
        await p.disconnect();
        await admin.disconnect();
    }
});

test('kafkajs: groupId __QUEUE_MODE__ is refused with 24', async () => {
    const c = kjs('kjs-qm').consumer({ groupId: '__QUEUE_MODE__', retry: { retries: 0 } });
    await c.connect();
    await c.subscribe({ topic: 'oc1', fromBeginning: true });
    const crashed = new Promise((resolve) => c.on(c.events.CRASH, (e) => resolve(e.payload.error)));
    await c.run({ eachMessage: async () => {} });
    const err = await crashed;
    assert.equal(err.type, 'INVALID_GROUP_ID');
    await c.disconnect();
});

// ------------------------------------------------------------------ SIGKILL

test('SIGKILL under a producing kcat and a consuming group: committed offsets survive, the group resumes there', async () => {
    const [hp, kp] = await twoPorts();
    let b1 = await startBroker({ port: hp, env: ENV(kp) });
    const BK = `127.0.0.1:${kp}`;
    const start = (args) => {
        const p = spawn('kcat', ['-b', BK, '-u', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
        const k = { proc: p, out: '', err: '' };
        p.stdout.on('data', (c) => { k.out += c; });
        p.stderr.on('data', (c) => { k.err += c; });
        k.done = new Promise((resolve) => p.on('close', (code) => resolve(code)));
        return k;
    };
    let b2;
    //  The topic exists before the group subscribes (a librdkafka consumer
    //  does not create topics).
    const first = start(['-P', '-t', 'sk']);
    first.proc.stdin.end('first\n');
    assert.equal(await first.done, 0, first.err);
    //  -E: kcat keeps going while the broker is down (librdkafka reconnects
    //  and delivers what it buffered).
    const prod = start(['-E', '-P', '-t', 'sk']);
    let i = 0;
    const feed = setInterval(() => { prod.proc.stdin.write(`m${i++}\n`); }, 10);
    const cons = start(['-E', '-G', 'gk', '-o', 'beginning', '-f', '%o %s\n', '-X', 'auto.commit.interval.ms=300', 'sk']);
    const committed = async (db) => {
        const v = (await psql(`SELECT committed_offset FROM queen.kafka_group_offset WHERE group_name = 'gk'`, { db })).trim();
        return v === '' ? -1 : Number(v);
    };
    try {
        await waitFor(async () => await committed(b1.db) >= 50, 60000, 200);
        await b1.kill();
        const at = await committed(b1.db);
        cons.proc.kill('SIGKILL');
        await cons.done;
        const seen1 = lines(cons.out).map((l) => Number(l.split(' ')[0]));
        assert.ok(seen1.length >= at, `the first consumer printed what it committed (${seen1.length} >= ${at})`);
        //  The broker comes back on the same ports and database; the producer reconnects.
        b2 = await startBroker({ port: hp, db: b1.db, env: ENV(kp), fileBufferDir: b1.fileBufferDir });
        assert.equal(await committed(b1.db), at, 'committed offset survived');
        //  Were the offsets lost, earliest would start it at 0.
        const again = start(['-E', '-G', 'gk', '-X', 'auto.offset.reset=earliest', '-f', '%o %s\n', 'sk']);
        try {
            await waitFor(() => lines(again.out).length >= 20, 60000, 200);
        } catch (e) {
            throw new Error(`${e.message}\nconsumer out: ${again.out.slice(-500)}\nconsumer err: ${again.err.slice(-2000)}\n`
                            + `producer err: ${prod.err.slice(-1000)}\nbroker: ${b2.logs().slice(-3000)}`);
        }
        clearInterval(feed);
        prod.proc.stdin.end();
        assert.equal(await prod.done, 0, prod.err);
        again.proc.kill('SIGTERM');
        await again.done;
        const seen2 = lines(again.out).map((l) => Number(l.split(' ')[0]));
        assert.equal(seen2[0], at, 'the group resumed at its committed offset');
        for (let k = 1; k < seen2.length; k++)
            assert.equal(seen2[k], seen2[k - 1] + 1, 'no gap after the restart');
    } finally {
        clearInterval(feed);
        prod.proc.kill('SIGKILL');
        cons.proc.kill('SIGKILL');
        if (b2)
            assert.equal(await b2.stop(), 0, b2.logs().slice(-4000));
        else
            await b1.kill();
    }
});

//  Last (lib.mjs's own after hook SIGKILLs what is left, so the exit is
//  checked here): SIGTERM gives a clean exit, under ASan with no error or
//  leak report, with the coordinator's groups and held requests freed.
test('the broker stops cleanly after the group tests', async () => {
    assert.equal(await broker.stop(), 0, broker.logs().slice(-4000));
});
