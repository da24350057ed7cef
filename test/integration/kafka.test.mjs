//  test/integration/kafka.test.mjs - the Kafka front door with the real
//  kcat 1.7.1 (Debian; librdkafka 2.0.2) against a broker whose KAFKA_PORT
//  comes from freePort() (spec kafka.md §12.2, §12.4, §12.5; docs/kafka.md):
//  metadata, auto-creation, kcat -P with keys, headers and gzip / snappy /
//  lz4 / zstd, Kafka in -> HTTP out, murmur2_random placement, HTTP in ->
//  kcat out with keys, offsets and
//  -o beginning/end/<n>/s@ts, -Q, -e; the same rows for HTTP pops (and
//  native acks change nothing for Kafka readers); murmur2 placement on a
//  3-partition topic; a fetch long-poll woken by a push; offset out of
//  range and auto.offset.reset; a transactional producer refused (53);
//  kafkajs admin and producer; raw-socket refusals (an API outside the
//  table closes, ApiVersions v4 gets the v0 body with error 35, a frame
//  over the limit closes, a fetch past the end answers error 1).

import { kcatRun } from './kafka_lib.mjs';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import kafkajs from 'kafkajs';
import { createRequire } from 'node:module';
import {
    startBroker, freePort, pushItems, popMessages, ackBatch, ackFor, configureQueue, request, pop, waitFor, psql,
} from './lib.mjs';
import { ReceiveMessageCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { sdk, AKID, SECRET } from './sqs_lib.mjs';

//  Payloads of queues with encryptionEnabled are sealed with this key.
const ENC_KEY = 'a1'.repeat(32);
let broker;
let U;
let B;
let kport;
let sport;

before(async () => {
    //  Two distinct free ports (freePort may hand out the same one twice).
    const port = await freePort();
    do
        kport = await freePort();
    while (kport === port);
    do
        sport = await freePort();
    while (sport === port || sport === kport);
    broker = await startBroker({
        port,
        env: { KAFKA_PORT: String(kport), KAFKA_ADVERTISED_HOST: '127.0.0.1', KAFKA_DEFAULT_PARTITIONS: '3',
               KAFKA_MAX_REQUEST_BYTES: '1048576', QUEEN_ENCRYPTION_KEY: ENC_KEY,
               //  The SQS door too: Kafka-produced sealed records received over SQS
               SQS_PORT: String(sport), SQS_CREDENTIALS: `${AKID}:${SECRET}` },
    });
    U = broker.url;
    B = `127.0.0.1:${kport}`;
});

after(async () => {
    if (broker)
        await broker.stop();
});

const kcat = (args, opts) => kcatRun(B, args, { timeoutMs: 30000, ...opts });

const push = (items) => pushItems(U, items, { queued: true });

//  A queue created natively is invisible to Kafka until Kafka first names
//  it (docs/kafka.md, deviations): the tests that push over HTTP and read
//  with kcat have Kafka create the topic first, with one partition (this
//  broker's KAFKA_DEFAULT_PARTITIONS is 3), through kafkajs's CreateTopics.
async function createTopic (topic, numPartitions = 1) {
    const { Kafka, logLevel } = kafkajs;
    const admin = new Kafka({ clientId: 'kjs-setup', brokers: [B], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
        assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions }] }), true);
    } finally {
        await admin.disconnect();
    }
}

//  One raw Kafka exchange: sends `frames` (Buffers, each a whole frame
//  with its size prefix) and collects what comes back until the broker
//  closes or `want` response frames arrived. Resolves to { frames, closed }.
function raw (frames, want) {
    return new Promise((resolve, reject) => {
        const s = net.connect(kport, '127.0.0.1');
        let buf = Buffer.alloc(0);
        const got = [];
        let done = false;
        const finish = (closed) => {
            if (done)
                return;
            done = true;
            clearTimeout(timer);
            s.destroy();
            resolve({ frames: got, closed });
        };
        const timer = setTimeout(() => {
            done = true;
            s.destroy();
            reject(new Error(`raw exchange: no answer (got ${got.length} frames)`));
        }, 15000);
        s.on('connect', () => { for (const f of frames) s.write(f); });
        s.on('data', (c) => {
            buf = Buffer.concat([buf, c]);
            while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
                const n = buf.readInt32BE(0);
                got.push(buf.subarray(4, 4 + n));
                buf = buf.subarray(4 + n);
            }
            if (want !== undefined && got.length >= want)
                finish(false);
        });
        s.on('close', () => finish(true));
        s.on('error', () => finish(true));
    });
}

//  A request frame: header v1 (client id "t"), or v2 (an empty tag
//  section after it) for the flexible ApiVersions v3+, then the body.
function frame (key, version, corr, body = Buffer.alloc(0)) {
    const head = Buffer.alloc(10);
    head.writeInt16BE(key, 0);
    head.writeInt16BE(version, 2);
    head.writeInt32BE(corr, 4);
    head.writeInt16BE(1, 8);
    const tags = key === 18 && version >= 3 ? Buffer.from([0]) : Buffer.alloc(0);
    const payload = Buffer.concat([head, Buffer.from('t'), tags, body]);
    const size = Buffer.alloc(4);
    size.writeInt32BE(payload.length, 0);
    return Buffer.concat([size, payload]);
}

function str (s) {
    const b = Buffer.alloc(2 + Buffer.byteLength(s));
    b.writeInt16BE(Buffer.byteLength(s), 0);
    b.write(s, 2);
    return b;
}

function i32 (v) {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v, 0);
    return b;
}

function i64 (v) {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt(v), 0);
    return b;
}

test('kcat -L lists our broker as controller; naming a topic creates it with KAFKA_DEFAULT_PARTITIONS', async () => {
    const all = await kcat(['-L']);
    assert.equal(all.code, 0, all.err);
    assert.match(all.out, new RegExp(`broker 1 at 127\\.0\\.0\\.1:${kport} \\(controller\\)`));
    const one = await kcat(['-L', '-t', 'kmeta']);
    assert.equal(one.code, 0, one.err);
    assert.match(one.out, /topic "kmeta" with 3 partitions:/);
    assert.match(one.out, /partition 2, leader 1, replicas: 1, isrs: 1/);
    const again = await kcat(['-L']);
    assert.match(again.out, /topic "kmeta" with 3 partitions/);
});

test('HTTP push in, kcat out: keys are partition names, offsets dense, -o beginning/<n>/end/s@ts, -Q, -e', async () => {
    //  Kafka creates the topic (one partition), then HTTP pushes into it.
    await createTopic('kx1');
    await push([
        { queue: 'kx1', partition: 'k1', payload: 'hello' },
        { queue: 'kx1', partition: 'k2', payload: { w: 'world' } },
        { queue: 'kx1', payload: 'nokey' },
    ]);
    const all = await kcat(['-C', '-t', 'kx1', '-o', 'beginning', '-e', '-f', '%k=%s p%p @%o\\n']);
    assert.equal(all.code, 0, all.err);
    assert.equal(all.out, 'k1="hello" p0 @0\nk2={"w":"world"} p0 @1\n="nokey" p0 @2\n');
    const json = await kcat(['-C', '-t', 'kx1', '-o', 'beginning', '-e', '-J']);
    const recs = json.out.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(recs.map((r) => [r.key, r.offset, r.tstype]), [['k1', 0, 'create'], ['k2', 1, 'create'], [null, 2, 'create']]);
    assert.ok(recs.every((r) => r.ts > 1600000000000));
    const second = await kcat(['-C', '-t', 'kx1', '-o', '1', '-c', '1', '-e', '-f', '%s\\n']);
    assert.equal(second.out, '{"w":"world"}\n');
    const end = await kcat(['-C', '-t', 'kx1', '-o', 'end', '-e']);
    assert.equal(end.code, 0, end.err);
    assert.equal(end.out, '');
    const q = await kcat(['-Q', '-t', 'kx1:0:0']);
    assert.equal(q.code, 0, q.err);
    assert.match(q.out, /kx1 \[0\] offset 0/);
    const later = await kcat(['-C', '-t', 'kx1', '-o', `s@${Date.now() + 60000}`, '-e']);
    assert.equal(later.code, 0, later.err);
    assert.equal(later.out, '');
    const fromTs = recs[1].ts;
    const since = await kcat(['-C', '-t', 'kx1', '-o', `s@${fromTs}`, '-e', '-f', '%o\\n']);
    assert.ok(since.out.startsWith(recs.find((r) => r.ts >= fromTs).offset + '\n'), since.out);
});

test('the same rows for HTTP pops; native acks do not change what Kafka readers see', async () => {
    await createTopic('kx2');
    await push([
        { queue: 'kx2', partition: 'e1', payload: 1 },
        { queue: 'kx2', partition: 'e2', payload: 2 },
        { queue: 'kx2', payload: 3 },
    ]);
    const before = await kcat(['-C', '-t', 'kx2', '-o', 'beginning', '-e', '-f', '%k:%s\\n']);
    assert.equal(before.out, 'e1:1\ne2:2\n:3\n');
    //  A queue-mode pop serves one partition at a time: three pops.
    const msgs = [];
    for (let i = 0; i < 3; i++)
        msgs.push(...await popMessages(U, 'kx2', { batch: 10 }));
    assert.deepEqual(msgs.map((m) => m.data).sort(), [1, 2, 3]);
    await ackBatch(U, msgs.map((m) => ackFor(m, { status: 'completed' })), { success: true });
    const afterAck = await kcat(['-C', '-t', 'kx2', '-o', 'beginning', '-e', '-f', '%k:%s\\n']);
    assert.equal(afterAck.out, before.out);
});

test('a 3-partition topic: native partitions land by murmur2, order kept per key', async () => {
    //  kmeta has 3 Kafka partitions (created above). order-42 -> 0,
    //  key1 -> 2, key4 -> 0, key0 -> 1 (spec §6.2 vectors).
    await push([
        { queue: 'kmeta', partition: 'order-42', payload: 'a' },
        { queue: 'kmeta', partition: 'key1', payload: 'b' },
        { queue: 'kmeta', partition: 'order-42', payload: 'c' },
        { queue: 'kmeta', partition: 'key0', payload: 'd' },
        { queue: 'kmeta', partition: 'order-42', payload: 'e' },
    ]);
    const out = await kcat(['-C', '-t', 'kmeta', '-o', 'beginning', '-e', '-f', '%k %p %o %s\\n']);
    assert.equal(out.code, 0, out.err);
    const lines = out.out.trim().split('\n').sort();
    assert.deepEqual(lines, [
        'key0 1 0 "d"', 'key1 2 0 "b"', 'order-42 0 0 "a"', 'order-42 0 1 "c"', 'order-42 0 2 "e"',
    ]);
});

test('a native queue joins Kafka when Kafka first names it: earlier messages are not in its log, later ones are, dense from 0', async () => {
    await push([
        { queue: 'kview', partition: 'order-42', payload: 'before1' },
        { queue: 'kview', partition: 'key1', payload: 'before2' },
    ]);
    //  Never named by Kafka: Metadata of all topics does not list it.
    const all = await kcat(['-L']);
    assert.equal(all.code, 0, all.err);
    assert.doesNotMatch(all.out, /topic "kview"/);
    //  Kafka names it: KAFKA_DEFAULT_PARTITIONS (3), the log starts now.
    const named = await kcat(['-L', '-t', 'kview']);
    assert.equal(named.code, 0, named.err);
    assert.match(named.out, /topic "kview" with 3 partitions/);
    await push([
        { queue: 'kview', partition: 'order-42', payload: 'after1' },
        { queue: 'kview', partition: 'key1', payload: 'after2' },
        { queue: 'kview', partition: 'order-42', payload: 'after3' },
    ]);
    //  order-42 -> Kafka partition 0, key1 -> 2 (spec §6.2 vectors).
    const out = await kcat(['-C', '-t', 'kview', '-o', 'beginning', '-e', '-f', '%k %p %o %s\\n']);
    assert.equal(out.code, 0, out.err);
    assert.deepEqual(out.out.trim().split('\n').sort(),
        ['key1 2 0 "after2"', 'order-42 0 0 "after1"', 'order-42 0 1 "after3"']);
    const q0 = await kcat(['-Q', '-t', 'kview:0:-1']);
    assert.match(q0.out, /kview \[0\] offset 2/);
    //  The earlier messages are still there for native readers.
    const msgs = [];
    for (let i = 0; i < 2; i++)
        msgs.push(...await popMessages(U, 'kview', { batch: 10 }));
    assert.deepEqual(msgs.map((m) => m.data).sort(), ['after1', 'after2', 'after3', 'before1', 'before2']);
});

test('a transactional producer is refused: Transactional Id authorization failed (spec §12.5)', async () => {
    const res = await kcat(['-X', 'transactional.id=x', '-P', '-t', 'ktx'], { input: 'x\n' });
    assert.notEqual(res.code, 0);
    assert.match(res.err, /Fatal error: Broker: Transactional Id authorization failed/);
});

test('kcat -P with keys, headers and every codec, read back exactly (spec §12.2)', async () => {
    //  Created by Kafka with one partition, then configured natively (the
    //  spec's run configures natively only: with this broker's default of 3
    //  the first naming would give 3 partitions).
    await createTopic('kp1');
    await configureQueue(U, 'kp1');
    const p1 = await kcat(['-P', '-t', 'kp1', '-K:'], { input: 'k1:hello\nk2:world\n' });
    assert.equal(p1.code, 0, p1.err);
    const p2 = await kcat(['-P', '-t', 'kp1', '-H', 'a=1', '-H', 'b=2', '-k', 'kk'], { input: 'hv\n' });
    assert.equal(p2.code, 0, p2.err);
    for (const z of ['gzip', 'snappy', 'lz4', 'zstd']) {
        const pz = await kcat(['-P', '-t', 'kp1', '-K:', '-z', z], { input: `z:${z}\n` });
        assert.equal(pz.code, 0, pz.err);
    }
    const out = await kcat(['-C', '-t', 'kp1', '-o', 'beginning', '-e', '-f', '%k=%s p%p @%o h=%h\n']);
    assert.equal(out.code, 0, out.err);
    assert.equal(out.out, 'k1=hello p0 @0 h=\nk2=world p0 @1 h=\nkk=hv p0 @2 h=a=1,b=2\n'
        + 'z=gzip p0 @3 h=\nz=snappy p0 @4 h=\nz=lz4 p0 @5 h=\nz=zstd p0 @6 h=\n');
    const json = await kcat(['-C', '-t', 'kp1', '-o', '0', '-c', '1', '-e', '-J']);
    const rec = JSON.parse(json.out.trim());
    assert.equal(rec.tstype, 'create');
    assert.ok(Math.abs(rec.ts - Date.now()) < 600000, json.out);
});

test('Kafka in, HTTP out: keys are native partitions, values the payload bytes (spec §12.4.1)', async () => {
    await createTopic('kx5');
    await configureQueue(U, 'kx5');
    const p = await kcat(['-P', '-t', 'kx5', '-K:'], { input: 'e1:{"v":1}\ne2:{"v":2}\ne1:{"v":3}\n' });
    assert.equal(p.code, 0, p.err);
    const msgs = [];
    for (let i = 0; i < 2; i++)
        msgs.push(...await popMessages(U, 'kx5', { batch: 10 }));
    const byPart = {};
    for (const m of msgs)
        (byPart[m.partition] ??= []).push(m.data.v);
    assert.deepEqual(byPart, { e1: [1, 3], e2: [2] });
    await ackBatch(U, msgs.map((m) => ackFor(m, { status: 'completed' })), { success: true });
    const again = await kcat(['-C', '-t', 'kx5', '-o', 'beginning', '-e', '-f', '%k %s\n']);
    assert.equal(again.out, 'e1 {"v":1}\ne2 {"v":2}\ne1 {"v":3}\n');
});

test('idempotent murmur2_random gzip producer puts key0..key8 where kafkajs and native pushes do (spec §12.2)', async () => {
    //  A topic first named by a producer gets KAFKA_DEFAULT_PARTITIONS (3).
    const input = [...Array(9).keys()].map((i) => `key${i}:v${i}`).join('\n') + '\n';
    //  Idempotent (spec §12.2): InitProducerId, then sequence-numbered batches.
    const p = await kcat(['-P', '-t', 'kc3', '-K:', '-X', 'partitioner=murmur2_random',
        '-X', 'enable.idempotence=true', '-z', 'gzip'], { input });
    assert.equal(p.code, 0, p.err);
    const out = await kcat(['-C', '-t', 'kc3', '-o', 'beginning', '-e', '-f', '%k %p\n']);
    assert.deepEqual(out.out.trim().split('\n').sort(),
        ['key0 1', 'key1 2', 'key2 2', 'key3 1', 'key4 0', 'key5 1', 'key6 0', 'key7 0', 'key8 1']);
    //  A native push to partition key4 lands in the same Kafka partition.
    await push([{ queue: 'kc3', partition: 'key4', payload: 'native' }]);
    const p0 = await kcat(['-C', '-t', 'kc3', '-p', '0', '-o', 'beginning', '-e', '-f', '%k %s\n']);
    assert.match(p0.out, /key4 "native"\n$/);
});

test('a waiting fetch is woken by a push (kcat -o end -c 1 exits with the new message)', async () => {
    //  Kafka names the topic first (Metadata with auto-creation: 3 partitions).
    const named = await kcat(['-L', '-t', 'kx3']);
    assert.match(named.out, /topic "kx3" with 3 partitions/);
    await push([{ queue: 'kx3', partition: 'p', payload: 'first' }]);
    const waiting = kcat(['-C', '-t', 'kx3', '-o', 'end', '-c', '1', '-f', '%s @%o\\n']);
    //  Let kcat reach the end and park its fetch, then push.
    await new Promise((r) => setTimeout(r, 1500));
    await push([{ queue: 'kx3', partition: 'p', payload: 'second' }]);
    const res = await waiting;
    assert.equal(res.code, 0, res.err);
    assert.equal(res.out, '"second" @1\n');
});

test('offset out of range: error 1, kcat resets with auto.offset.reset', async () => {
    await createTopic('kx4');
    await push([{ queue: 'kx4', payload: 'x' }, { queue: 'kx4', payload: 'y' }]);
    const early = await kcat(['-C', '-t', 'kx4', '-o', '100', '-e', '-X', 'auto.offset.reset=earliest', '-f', '%o\\n']);
    assert.equal(early.code, 0, early.err);
    assert.equal(early.out, '0\n1\n');
    assert.match(early.err, /Offset out of range/);
    //  Raw Fetch v4 at HWM + 5: partition error 1, empty records.
    const body = Buffer.concat([i32(-1), i32(0), i32(1), i32(1048576), Buffer.from([0]),
        i32(1), str('kx4'), i32(1), i32(0), i64(7), i32(1048576)]);
    const r = await raw([frame(1, 4, 9, body)], 1);
    assert.equal(r.frames.length, 1);
    const f = r.frames[0];
    assert.equal(f.readInt32BE(0), 9);                          //  correlation id
    //  throttle(4) topics(4) name(2+3) parts(4) index(4) error(2)
    assert.equal(f.readInt16BE(4 + 4 + 4 + 5 + 4 + 4), 1);
});

test('raw refusals: an API outside the table closes; ApiVersions v4 gets v0 with error 35; a huge frame closes', async () => {
    //  DescribeGroups (15) v0: closed without an answer.
    const dg = await raw([frame(15, 0, 1, Buffer.concat([i32(1), str('g')]))]);
    assert.equal(dg.closed, true);
    assert.equal(dg.frames.length, 0);
    //  Produce v2 (below our range): closed.
    const old = await raw([frame(0, 2, 1, Buffer.alloc(0))]);
    assert.equal(old.closed, true);
    assert.equal(old.frames.length, 0);
    //  ApiVersions v4: v0 body, error 35, the 15 APIs, connection stays open
    //  (a second request on it is answered).
    const av = await raw([frame(18, 4, 5), frame(18, 0, 6)], 2);
    assert.equal(av.closed, false);
    assert.equal(av.frames[0].readInt32BE(0), 5);
    assert.equal(av.frames[0].readInt16BE(4), 35);
    assert.equal(av.frames[0].readInt32BE(6), 15);
    assert.equal(av.frames[0].length, 4 + 2 + 4 + 15 * 6);
    assert.equal(av.frames[1].readInt32BE(0), 6);
    assert.equal(av.frames[1].readInt16BE(4), 0);
    //  A frame larger than KAFKA_MAX_REQUEST_BYTES: closed at once.
    const big = Buffer.alloc(4);
    big.writeInt32BE(2 * 1048576, 0);
    const huge = await raw([big]);
    assert.equal(huge.closed, true);
    assert.equal(huge.frames.length, 0);
    //  Pipelined: three ApiVersions answered in order on one connection.
    const pipe = await raw([frame(18, 2, 11), frame(18, 1, 12), frame(18, 0, 13)], 3);
    assert.deepEqual(pipe.frames.map((x) => x.readInt32BE(0)), [11, 12, 13]);
    //  The broker is still fine.
    const ok = await kcat(['-L']);
    assert.equal(ok.code, 0, ok.err);
});

test('kafkajs 2.2.4: admin create/list/delete topics, producer acks -1/1/0 with gzip, fetchTopicOffsets (spec §12.3, no groups)', async () => {
    const { Kafka, logLevel, CompressionTypes } = kafkajs;
    const kafka = new Kafka({ clientId: 'kjs', brokers: [B], logLevel: logLevel.NOTHING, retry: { retries: 3 } });
    const admin = kafka.admin();
    await admin.connect();
    try {
        assert.equal(await admin.createTopics({ topics: [{ topic: 'kt', numPartitions: 3 }] }), true);
        assert.equal(await admin.createTopics({ topics: [{ topic: 'kt', numPartitions: 3 }] }), false);
        await assert.rejects(admin.createTopics({ topics: [{ topic: 'kbad', numPartitions: 1,
            configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] }),
            (e) => e.errors?.[0]?.type === 'INVALID_CONFIG');
        assert.ok((await admin.listTopics()).includes('kt'));
        const p = kafka.producer();
        await p.connect();
        const msgs = [...Array(9).keys()].map((i) => ({ key: 'key' + i, value: 'v' + i, headers: { h: 'x' + i } }));
        await p.send({ topic: 'kt', messages: msgs, compression: CompressionTypes.GZIP, acks: -1 });
        //  acks=1 to a topic the producer's Metadata auto-creates.
        const one = await p.send({ topic: 'kt1', messages: [{ value: 'one' }], acks: 1 });
        assert.equal(one[0].errorCode, 0);
        assert.equal(one[0].baseOffset, '0');
        await p.disconnect();
        //  kafkajs's default partitioner is murmur2: key4 -> 0 (spec §6.2).
        const out = await kcat(['-C', '-t', 'kt', '-o', 'beginning', '-e', '-f', '%k %p %s %h\n']);
        const lines = out.out.trim().split('\n').sort();
        assert.deepEqual(lines, [
            'key0 1 v0 h=x0', 'key1 2 v1 h=x1', 'key2 2 v2 h=x2', 'key3 1 v3 h=x3', 'key4 0 v4 h=x4',
            'key5 1 v5 h=x5', 'key6 0 v6 h=x6', 'key7 0 v7 h=x7', 'key8 1 v8 h=x8',
        ]);
        const tops = await admin.fetchTopicOffsets('kt');
        assert.deepEqual(tops.map((x) => [x.partition, x.high, x.low]).sort(),
            [[0, '3', '0'], [1, '4', '0'], [2, '2', '0']]);
        //  acks=0: no answer, the next request on the connection still works.
        assert.equal(await admin.createTopics({ topics: [{ topic: 'kt0', numPartitions: 1 }] }), true);
        await configureQueue(U, 'kt0');
        const p0 = kafka.producer();
        await p0.connect();
        await p0.send({ topic: 'kt0', messages: [{ value: 'fire' }], acks: 0 });
        await p0.send({ topic: 'kt0', messages: [{ value: 'forget' }], acks: 1 });
        await p0.disconnect();
        const got = await kcat(['-C', '-t', 'kt0', '-o', 'beginning', '-e', '-f', '%s\n']);
        assert.equal(got.out, 'fire\nforget\n');
        await admin.deleteTopics({ topics: ['kt'] });
        assert.ok(!(await admin.listTopics()).includes('kt'));
    } finally {
        await admin.disconnect();
    }
});

//  kafkajs's own request encoders build raw idempotent Produce frames.
const require = createRequire(import.meta.url);
const produceV3 = require('kafkajs/src/protocol/requests/produce/v3/request');
const KLong = require('kafkajs/src/utils/long');

//  A Produce v3 frame (acks -1) of one idempotent batch to topic/partition.
async function idemProduce (corr, topic, partition, producerId, producerEpoch, firstSequence, values) {
    const req = produceV3({
        acks: -1, timeout: 5000, producerId: KLong.fromValue(producerId), producerEpoch,
        topicData: [{ topic, partitions: [{ partition, firstSequence,
            messages: values.map((v) => ({ key: 'k', value: v })) }] }],
    });
    return frame(0, 3, corr, (await req.encode()).buffer);
}

//  error_code and base_offset of the one partition of a Produce v3 answer
function produceAnswer (f, topic) {
    const at = 4 + 4 + 2 + Buffer.byteLength(topic) + 4 + 4;
    return { corr: f.readInt32BE(0), error: f.readInt16BE(at), base: Number(f.readBigInt64BE(at + 2)) };
}

test('InitProducerId and sequence checks: a retried batch is answered with its offset and stored once; a gap gets 45; an old epoch 47 (spec §4.15, §6.5)', async () => {
    await createTopic('kidem', 2);
    //  InitProducerId v1 (null transactional id): a fresh id, epoch 0; ids differ.
    const ip = frame(22, 1, 3, Buffer.concat([Buffer.from([0xff, 0xff]), i32(60000)]));
    const a = await raw([ip, frame(22, 0, 4, Buffer.concat([Buffer.from([0xff, 0xff]), i32(60000)]))], 2);
    assert.equal(a.frames.length, 2);
    const ids = a.frames.map((f) => ({ corr: f.readInt32BE(0), err: f.readInt16BE(8),
                                       pid: f.readBigInt64BE(10), epoch: f.readInt16BE(18) }));
    assert.deepEqual(ids.map((x) => [x.corr, x.err, x.epoch]), [[3, 0, 0], [4, 0, 0]]);
    assert.ok(ids[0].pid >= 1000n && ids[1].pid !== ids[0].pid, `producer ids ${ids[0].pid} ${ids[1].pid}`);
    const pid = Number(ids[0].pid);
    //  Batch seq 0..2, then the same bytes again (a retry after a lost answer),
    //  on a new connection as a client would after a timeout.
    const b0 = await idemProduce(10, 'kidem', 1, pid, 0, 0, ['a', 'b', 'c']);
    const r1 = await raw([b0], 1);
    assert.deepEqual(produceAnswer(r1.frames[0], 'kidem'), { corr: 10, error: 0, base: 0 });
    const r2 = await raw([b0], 1);
    assert.deepEqual(produceAnswer(r2.frames[0], 'kidem'), { corr: 10, error: 0, base: 0 });
    //  The next batch (3..4), a gap (7), the retry again, an old epoch.
    const next = await idemProduce(11, 'kidem', 1, pid, 0, 3, ['d', 'e']);
    const gap = await idemProduce(12, 'kidem', 1, pid, 0, 7, ['x']);
    const r3 = await raw([next, gap, b0], 3);
    assert.deepEqual(r3.frames.map((f) => produceAnswer(f, 'kidem')), [
        { corr: 11, error: 0, base: 3 }, { corr: 12, error: 45, base: -1 }, { corr: 10, error: 0, base: 0 }]);
    const e1 = await idemProduce(13, 'kidem', 1, pid, 1, 0, ['f']);
    const e0 = await idemProduce(14, 'kidem', 1, pid, 0, 5, ['y']);
    const r4 = await raw([e1, e0], 2);
    assert.deepEqual(r4.frames.map((f) => produceAnswer(f, 'kidem')), [
        { corr: 13, error: 0, base: 5 }, { corr: 14, error: 47, base: -1 }]);
    //  Stored exactly once each, in order; nothing of the refused batches.
    const out = await kcat(['-C', '-t', 'kidem', '-p', '1', '-o', 'beginning', '-e', '-f', '%s@%o\n']);
    assert.equal(out.code, 0, out.err);
    assert.equal(out.out, 'a@0\nb@1\nc@2\nd@3\ne@4\nf@5\n');
});

test('kafkajs 2.2.4 idempotent producer with gzip: every message once, in order (spec §12.3)', async () => {
    const { Kafka, logLevel, CompressionTypes } = kafkajs;
    await createTopic('kjsidem', 3);
    const kafka = new Kafka({ clientId: 'kjs-idem', brokers: [B], logLevel: logLevel.NOTHING });
    const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await p.connect();
    try {
        for (let round = 0; round < 3; round++) {
            const msgs = [...Array(9).keys()].map((i) => ({ key: 'key' + i, value: `r${round}v${i}` }));
            const res = await p.send({ topic: 'kjsidem', messages: msgs, compression: CompressionTypes.GZIP });
            assert.ok(res.every((x) => x.errorCode === 0), JSON.stringify(res));
        }
    } finally {
        await p.disconnect();
    }
    const out = await kcat(['-C', '-t', 'kjsidem', '-o', 'beginning', '-e', '-f', '%k %p %s\n']);
    assert.equal(out.code, 0, out.err);
    const lines = out.out.trim().split('\n');
    assert.equal(lines.length, 27);
    //  Per key, the three rounds in order, in kafkajs's murmur2 partition.
    const part = [1, 2, 2, 1, 0, 1, 0, 0, 1];
    for (let i = 0; i < 9; i++)
        assert.deepEqual(lines.filter((l) => l.startsWith(`key${i} `)),
            [0, 1, 2].map((r) => `key${i} ${part[i]} r${r}v${i}`));
});

test('Fetch opens payloads of an encrypted queue, as HTTP pop does (spec §6.2)', async () => {
    await createTopic('kenc');
    await configureQueue(U, 'kenc', { encryptionEnabled: true });
    await push([{ queue: 'kenc', partition: 'e1', payload: { secret: 1 } },
                { queue: 'kenc', partition: 'e1', payload: { secret: 2 } }]);
    const out = await kcat(['-C', '-t', 'kenc', '-o', 'beginning', '-e', '-f', '%k %s\n']);
    assert.equal(out.code, 0, out.err);
    assert.equal(out.out, 'e1 {"secret":1}\ne1 {"secret":2}\n');
    //  The same plaintext for an HTTP pop.
    const msgs = await popMessages(U, 'kenc', { batch: 10 });
    assert.deepEqual(msgs.map((m) => m.data), [{ secret: 1 }, { secret: 2 }]);
});

test('Produce seals records of an encrypted queue; kcat, HTTP pop and SQS receive read plaintext', async () => {
    await createTopic('kseal');
    await configureQueue(U, 'kseal', { encryptionEnabled: true });
    //  A plain topic beside it in the same Produce request stays in clear.
    await createTopic('kclear');
    //  One key each: an SQS receive of a standard queue takes one message a partition.
    const input = 's1:{"secret":"alpha"}\ns2:{"secret":"beta"}\ns4:classified text\n';
    const put = await kcat(['-P', '-t', 'kseal', '-K', ':'], { input });
    assert.equal(put.code, 0, put.err);
    const { Kafka, logLevel } = kafkajs;
    const kafka = new Kafka({ clientId: 'kseal', brokers: [B], logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    try {
        await producer.sendBatch({ topicMessages: [
            { topic: 'kseal', messages: [{ key: 's3', value: 'gamma-secret' }] },
            { topic: 'kclear', messages: [{ key: 'c1', value: 'plain-visible' }] },
        ] });
    } finally {
        await producer.disconnect();
    }
    //  At rest: sealed envelopes, no plaintext, is_encrypted set.
    const rows = (await psql(`SELECT q.name, m.is_encrypted, convert_from(m.payload, 'UTF8')
                                FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
                                JOIN queen.queues q ON q.id = p.queue_id
                               WHERE q.name IN ('kseal', 'kclear') ORDER BY q.name, m.seq`,
                             { db: broker.db })).split('\n');
    assert.equal(rows.length, 5, rows.join('\n'));
    assert.equal(rows[0], 'kclear|f|plain-visible');
    for (const row of rows.slice(1)) {
        assert.ok(row.startsWith('kseal|t|{"encrypted":'), row);
        assert.ok(!/alpha|beta|classified|gamma/.test(row), row);
    }
    //  kcat reads plaintext back (Fetch opens them).
    const out = await kcat(['-C', '-t', 'kseal', '-o', 'beginning', '-e', '-f', '%k %s\n']);
    assert.equal(out.code, 0, out.err);
    assert.deepEqual(out.out.split('\n').filter(Boolean).sort(),
                     ['s1 {"secret":"alpha"}', 's2 {"secret":"beta"}', 's3 gamma-secret', 's4 classified text']);
    //  SQS receive: plaintext bodies (MD5 validated by the SDK).
    const c = sdk(`http://127.0.0.1:${sport}`);
    const { QueueUrl } = await c.send(new GetQueueUrlCommand({ QueueName: 'kseal' }));
    const r = await c.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
                                                       VisibilityTimeout: 0 }));
    assert.deepEqual((r.Messages ?? []).map((m) => m.Body).sort(),
                     ['classified text', 'gamma-secret', '{"secret":"alpha"}', '{"secret":"beta"}']);
    //  HTTP pop: the same plaintext (a pop leases one partition: pop until all four are held).
    const msgs = [];
    for (let i = 0; i < 10 && msgs.length < 4; i++)
        msgs.push(...await popMessages(U, 'kseal', { batch: 10, wait: 'false' }));
    assert.deepEqual(msgs.map((m) => m.data).sort((a, b) => JSON.stringify(a) < JSON.stringify(b) ? -1 : 1),
                     ['classified text', 'gamma-secret', { secret: 'alpha' }, { secret: 'beta' }]
                         .sort((a, b) => JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
});

test('the configure option kafkaPartitions: set over HTTP, kept when left out, fixed once set, 0 switches the view off', async () => {
    //  A native queue: no Kafka view (the option is not echoed) until named or configured.
    assert.ok(!('kafkaPartitions' in (await configureQueue(U, 'kplain')).options));
    const set = await configureQueue(U, 'kcfg', { kafkaPartitions: 4 });
    assert.equal(set.options.kafkaPartitions, 4);
    //  4, not this broker's KAFKA_DEFAULT_PARTITIONS (3)
    const md = await kcat(['-L', '-t', 'kcfg']);
    assert.match(md.out, /topic "kcfg" with 4 partitions/);
    //  A configure without the option keeps it.
    assert.equal((await configureQueue(U, 'kcfg', { leaseTime: 30 })).options.kafkaPartitions, 4);
    await push([{ queue: 'kcfg', partition: 'order-42', payload: 'x' }]);
    const got = await kcat(['-C', '-t', 'kcfg', '-o', 'beginning', '-e', '-f', '%k %p %o\n']);
    assert.equal(got.out, 'order-42 0 0\n');
    //  Another count is refused; so are bad values.
    for (const v of [5, -1, 1025, 'abc', 1.5]) {
        const res = await request(U, '/api/v1/configure', {
            method: 'POST', body: { queue: 'kcfg', options: { kafkaPartitions: v } }, expect: 400 });
        assert.match(res.body.error, /kafkaPartitions/, res.raw);
    }
    //  A name Kafka cannot use.
    const bad = await request(U, '/api/v1/configure', {
        method: 'POST', body: { queue: 'not:kafka', options: { kafkaPartitions: 2 } }, expect: 400 });
    assert.match(bad.body.error, /kafkaPartitions/, bad.raw);
    //  0: off, gone from Metadata; on again with the same count, back.
    assert.equal((await configureQueue(U, 'kcfg', { kafkaPartitions: 0 })).options.kafkaPartitions, 0);
    assert.doesNotMatch((await kcat(['-L'])).out, /topic "kcfg"/);
    assert.equal((await configureQueue(U, 'kcfg', { kafkaPartitions: 4 })).options.kafkaPartitions, 4);
    assert.match((await kcat(['-L'])).out, /topic "kcfg" with 4 partitions/);
    //  A native queue configured with a count: visible at once, with it.
    assert.equal((await configureQueue(U, 'kplain', { kafkaPartitions: 2 })).options.kafkaPartitions, 2);
    assert.match((await kcat(['-L'])).out, /topic "kplain" with 2 partitions/);
});

test('a record without a key lands in the Default partition; HTTP sees it there (spec §12.4.1)', async () => {
    await createTopic('knokey');
    const p = await kcat(['-P', '-t', 'knokey', '-K:'], { input: 'e1:{"v":1}\n' });
    assert.equal(p.code, 0, p.err);
    const q = await kcat(['-P', '-t', 'knokey'], { input: '{"v":2}\n' });
    assert.equal(q.code, 0, q.err);
    const msgs = await popMessages(U, 'knokey', { batch: 10, partitions: 10 });
    assert.deepEqual(msgs.map((m) => [m.partition, m.data.v]).sort(), [['Default', 2], ['e1', 1]]);
    const out = await kcat(['-C', '-t', 'knokey', '-o', 'beginning', '-e', '-f', '%k|%s\n']);
    assert.equal(out.out, 'e1|{"v":1}\n|{"v":2}\n');
});

test('delayedProcessing holds a message back from native pops, not from Kafka readers (spec §12.4.3, D-K6)', async () => {
    await configureQueue(U, 'kdelay', { delayedProcessing: 60, kafkaPartitions: 1 });
    await push([{ queue: 'kdelay', partition: 'd', payload: 'later' }]);
    const out = await kcat(['-C', '-t', 'kdelay', '-o', 'beginning', '-e', '-f', '%k %s\n']);
    assert.equal(out.code, 0, out.err);
    assert.equal(out.out, 'd "later"\n');
    const res = await pop(U, 'kdelay');
    assert.equal(res.status, 204);
});

test('4 native pushers and 2 kcat producers on one partition for 10 s: a kcat consumer started before gets every row once, offsets strictly increasing (spec §12.4.5)', async () => {
    await createTopic('kconc', 1);
    let out = '';
    const consumer = spawn('kcat', ['-b', B, '-u', '-C', '-t', 'kconc', '-o', 'beginning', '-f', '%o %s\n'],
                           { stdio: ['ignore', 'pipe', 'pipe'] });
    consumer.stdout.on('data', (c) => { out += c; });
    try {
        await new Promise((r) => setTimeout(r, 1500));
        const until = Date.now() + 10000;
        const expected = new Set();
        const pusher = async (w) => {
            for (let i = 0; Date.now() < until; i++) {
                const items = [0, 1, 2, 3, 4].map((k) => ({ queue: 'kconc', partition: `n${w}`, payload: { w, i, k } }));
                await push(items);
                for (const it of items)
                    expected.add(JSON.stringify(it.payload));
            }
        };
        const producer = async (j) => {
            for (let round = 0; Date.now() < until; round++) {
                const lines = [...Array(200).keys()].map((i) => `c${j}-${round}-${i}`);
                const r = await kcat(['-P', '-t', 'kconc', '-p', '0'], { input: lines.join('\n') + '\n' });
                assert.equal(r.code, 0, r.err);
                for (const l of lines)
                    expected.add(l);
            }
        };
        await Promise.all([0, 1, 2, 3].map(pusher).concat([0, 1].map(producer)));
        assert.ok(expected.size > 1000, `only ${expected.size} rows`);
        await waitFor(() => out.split('\n').length - 1 >= expected.size, 60000, 200);
        await new Promise((r) => setTimeout(r, 500));       //  nothing more may come
        const lines = out.trim().split('\n');
        assert.equal(lines.length, expected.size);
        const offsets = lines.map((l) => Number(l.slice(0, l.indexOf(' '))));
        assert.deepEqual(offsets, [...Array(lines.length).keys()]);     //  0, 1, 2, ... : none skipped
        const values = lines.map((l) => l.slice(l.indexOf(' ') + 1));
        assert.equal(new Set(values).size, values.length);                //  none twice
        assert.deepEqual(new Set(values), expected);
    } finally {
        consumer.kill('SIGKILL');
    }
});

test('kafkajs transactional producer is refused (spec §12.5)', async () => {
    const { Kafka, logLevel } = kafkajs;
    const kafka = new Kafka({ clientId: 'kjs-tx', brokers: [B], logLevel: logLevel.NOTHING, retry: { retries: 1 } });
    const p = kafka.producer({ transactionalId: 'x', idempotent: true, maxInFlightRequests: 1, retry: { retries: 1 } });
    try {
        await assert.rejects(async () => {
            await p.connect();
            await p.transaction();
        });
    } finally {
        await p.disconnect().catch(() => {});
    }
    //  The broker still serves.
    assert.equal((await kcat(['-L'])).code, 0);
});

test('a Produce batch with a flipped byte under its CRC gets error 2, nothing stored (spec §12.5)', async () => {
    await createTopic('kcrc');
    const req = produceV3({ acks: -1, timeout: 5000,
        topicData: [{ topic: 'kcrc', partitions: [{ partition: 0, messages: [{ key: 'k', value: 'payload' }] }] }] });
    const good = frame(0, 3, 21, (await req.encode()).buffer);
    const bad = Buffer.from(good);
    bad[bad.length - 3] ^= 0x20;        //  inside the record value, covered by the CRC
    const r = await raw([bad, good], 2);
    assert.deepEqual(r.frames.map((f) => produceAnswer(f, 'kcrc')),
        [{ corr: 21, error: 2, base: -1 }, { corr: 21, error: 0, base: 0 }]);
    const out = await kcat(['-C', '-t', 'kcrc', '-o', 'beginning', '-e', '-f', '%s\n']);
    assert.equal(out.out, 'payload\n');
});
