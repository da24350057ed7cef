//  test/compose/cell.test.mjs - the cell of compose.yaml, in containers
//  (run by test/compose/run.sh, which brings the cell up and down).
//
//  Environment: QN_CELL_URL_1, QN_CELL_URL_2 (the two brokers as published
//  on the host), QN_CELL_PROXY (queen-proxy), QN_CELL_PROJECT (the compose
//  project: containers are <project>_<service>_1), QN_CELL_SECRET (the
//  brokers' TENANT_ASSERTION_SECRET, as compose.yaml sets it), QN_CELL_SINK
//  (queen-sink's /health and /metrics as published), QN_CELL_S3 (the bucket
//  service, with the key pair MINIO_ROOT_USER / MINIO_ROOT_PASSWORD), and
//  the compose environment of run.sh (DOCKER_HOST, COMPOSE_PROJECT_NAME,
//  the ports and secrets), with which the test starts queen-sink itself.
//
//  Clients go through the proxy with a tenant key made by `queen-proxy
//  create-tenant`; the test reaches a broker directly only as the proxy
//  does, with an assertion for that tenant (wire/tenant_assert.h).

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { S3Client, ListObjectsV2Command, GetObjectCommand } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import {
    configureQueue, pushItems, pop, ackBatch, request, waitFor, sleep,
} from '../integration/lib.mjs';

const BROKER1 = process.env.QN_CELL_URL_1;
const BROKER2 = process.env.QN_CELL_URL_2;
const PROXY = process.env.QN_CELL_PROXY;
const PROJECT = process.env.QN_CELL_PROJECT;
const SECRET = process.env.QN_CELL_SECRET;
const SINK = process.env.QN_CELL_SINK;
const S3 = process.env.QN_CELL_S3;
assert.ok(BROKER1 && BROKER2 && PROXY && PROJECT && SECRET && SINK && S3, 'run by test/compose/run.sh');
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TENANT = 'cell';
let KEY = '';

//  X-Queen-Assertion for TENANT as the proxy signs it: v1.<b64url(tenant LF
//  role LF seconds LF subject)>.<b64url(HMAC(HMAC(secret, label), signed))>.
function assertion (role = 'read-write') {
    const payload = Buffer.from(`${TENANT}\n${role}\n${Math.floor(Date.now() / 1000)}\ncompose-test`)
        .toString('base64url');
    const signed = `v1.${payload}`;
    const key = crypto.createHmac('sha256', SECRET).update('queen-tenant-assertion-v1').digest();
    return `${signed}.${crypto.createHmac('sha256', key).update(signed).digest('base64url')}`;
}

//  Each URL with the headers that authenticate it as TENANT.
const via = {
    proxy: () => ({ url: PROXY, headers: { authorization: `Bearer ${KEY}` } }),
    broker1: () => ({ url: BROKER1, headers: { 'x-queen-assertion': assertion() } }),
    broker2: () => ({ url: BROKER2, headers: { 'x-queen-assertion': assertion() } }),
};

function podman (...args) {
    return execFileSync('podman', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}
const container = (service) => `${PROJECT}_${service}_1`;

before(async () => {
    const out = podman('exec', container('proxy'), 'queen-proxy', 'create-tenant', TENANT);
    KEY = JSON.parse(out.split('\n').filter((l) => l.startsWith('{')).pop()).key;
    assert.match(KEY, /^qk_/);
    //  A key made by the sub-command (straight in PostgreSQL) reaches the
    //  proxy at its next key-table refresh (1 s).
    await waitFor(async () => (await request(PROXY, '/proxy/v1/whoami',
        { headers: via.proxy().headers, expect: [200, 401] })).status === 200, 10000, 200);
});

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
async function consume (door, queue, group, want) {
    const seen = new Map();
    let idle = 0;
    while (seen.size < want && idle < 10) {
        const { url, headers } = door();
        const res = await pop(url, queue, { headers, consumerGroup: group, batch: 500, wait: true, timeout: 1000 });
        if (!res.messages.length) {
            idle++;
            continue;
        }
        idle = 0;
        for (const m of res.messages)
            seen.set(m.data.i, (seen.get(m.data.i) || 0) + 1);
        await ackBatch(url, res.messages.map((m) => ({
            transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed',
        })), { consumerGroup: group, success: true, headers: door().headers });
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

//  Pushes n items of `prefix` numbered from `from` through a door.
async function pushVia (door, queue, prefix, from, n, parts, opts = {}) {
    const { url, headers } = door();
    return pushItems(url, items(queue, prefix, from, n, parts), { headers, ...opts });
}

async function configureVia (door, queue, options = {}) {
    const { url, headers } = door();
    return configureQueue(url, queue, options, {}, { headers });
}

test('the proxy and both brokers are healthy; the brokers trust only the proxy', async () => {
    assert.ok(await healthy(PROXY), 'proxy healthy');
    assert.ok(await healthy(BROKER1), 'broker 1 healthy');
    assert.ok(await healthy(BROKER2), 'broker 2 healthy');
    const who = await request(PROXY, '/proxy/v1/whoami', { headers: via.proxy().headers });
    assert.equal(who.body.tenant, TENANT, who.raw);
    //  No assertion, or a proxy key sent straight to a broker: refused.
    await request(BROKER1, '/api/v1/resources/queues', { expect: 401 });
    await request(BROKER1, '/api/v1/resources/queues', { headers: via.proxy().headers, expect: 401 });
});

test('10,000 messages pushed through the proxy over 200 partitions are consumed on broker 2 exactly once', async () => {
    await configureVia(via.proxy, 'cell-orders', { leaseTime: 30 });
    for (let from = 0; from < 10000; from += 500)
        await pushVia(via.proxy, 'cell-orders', 'o', from, 500, 200, { queued: true });
    const seen = await consume(via.broker2, 'cell-orders', 'billing', 10000);
    exactlyOnce(seen, 0, 10000);
});

test('a long-poll parked on broker 2 wakes for a push on broker 1 through the mesh', async () => {
    await configureVia(via.broker1, 'cell-wake', {});
    for (let round = 0; round < 3; round++) {
        const parked = pop(BROKER2, 'cell-wake', { headers: via.broker2().headers, wait: true, timeout: 20000 });
        await sleep(300);
        const t0 = Date.now();
        await pushVia(via.broker1, 'cell-wake', 'w', round, 1, 1, { queued: true });
        const res = await parked;
        const took = Date.now() - t0;
        assert.equal(res.status, 200);
        assert.equal(res.messages[0].data.i, round);
        //  The mesh wakes it at once; the safety net alone would take up to 3 s.
        assert.ok(took < 1000, `round ${round}: woken ${took} ms after the push`);
        await ackBatch(BROKER2, [{ transactionId: res.messages[0].transactionId,
            partitionId: res.messages[0].partitionId, leaseId: res.messages[0].leaseId, status: 'completed' }],
        { headers: via.broker2().headers, success: true });
    }
});

test('kill -9 of broker 1: traffic through the proxy continues, broker 1 restarts by its policy and rejoins', async () => {
    await configureVia(via.proxy, 'cell-kill', {});
    const before = podman('inspect', container('queen-1'), '--format', '{{.State.StartedAt}}');
    //  A crash, not an operator's stop: SIGKILL to the broker process from
    //  outside (`podman kill` would count as a stop by the user, which
    //  restart: unless-stopped respects).
    const pid = Number(podman('inspect', container('queen-1'), '--format', '{{.State.Pid}}'));
    assert.ok(pid > 1, `broker 1 runs as pid ${pid}`);
    process.kill(pid, 'SIGKILL');
    for (let from = 0; from < 1000; from += 250)
        await pushVia(via.proxy, 'cell-kill', 'k', from, 250, 20, { queued: true });
    exactlyOnce(await consume(via.proxy, 'cell-kill', 'g', 1000), 0, 1000);
    //  restart: unless-stopped brings it back, healthy again, in the mesh.
    await waitFor(async () => podman('inspect', container('queen-1'), '--format', '{{.State.StartedAt}}') !== before
        && await healthy(BROKER1), 90000, 500);
    await waitFor(async () => {
        const h = await request(BROKER1, '/health', { expect: [200, 503] });
        return (h.body?.mesh?.peers || []).some((p) => p.state === 'up' || p.up === true);
    }, 30000, 500);
    await pushVia(via.broker1, 'cell-kill', 'k', 1000, 10, 20, { queued: true });
    exactlyOnce(await consume(via.broker1, 'cell-kill', 'g', 10), 1000, 10);
});

test('PostgreSQL stopped for 10 s: pushes straight and through the proxy are spooled, then replayed, nothing lost', async () => {
    await configureVia(via.broker1, 'cell-outage', {});
    podman('stop', '-t', '5', container('postgres'));
    const t0 = Date.now();
    //  Half straight to broker 1, half through the proxy: a broker whose
    //  database is away is degraded, not down, and the proxy still uses it.
    const buffered = { broker1: 0, proxy: 0 };
    for (let from = 0; from < 500; from += 50) {
        const door = from % 100 ? 'proxy' : 'broker1';
        const res = await pushVia(via[door], 'cell-outage', 'x', from, 50, 10);
        for (const r of res)
            if (r.status === 'buffered')
                buffered[door]++;
    }
    assert.ok(buffered.broker1 > 0 && buffered.proxy > 0, `pushes during the outage were buffered: ${JSON.stringify(buffered)}`);
    await sleep(Math.max(0, 10000 - (Date.now() - t0)));
    podman('start', container('postgres'));
    await waitFor(async () => await healthy(BROKER1) && await healthy(BROKER2), 120000, 500);
    exactlyOnce(await consume(via.broker2, 'cell-outage', 'g', 500), 0, 500);
});

//  ---------------------------------------------------------------- the sink
//  queen-sink of compose.yaml, started as docs/deploy.md says (the tenant's
//  key in QUEEN_SINK_KEY), reads the tenant's queue "events" through the
//  proxy and writes Parquet into the bucket "lake" of the S3 service under
//  the prefix "queen"; windows of 10 s here (SINK_WINDOW, set like the key
//  through the environment compose.yaml reads).

function compose (env, ...args) {
    return execFileSync('docker-compose', ['-f', 'compose.yaml', '-f', 'compose.test.yaml', ...args],
        { cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

const s3 = new S3Client({
    endpoint: S3, region: 'us-east-1', forcePathStyle: true,
    credentials: { accessKeyId: process.env.MINIO_ROOT_USER, secretAccessKey: process.env.MINIO_ROOT_PASSWORD },
});

//  Every object under queen/: [{ key, etag, size, modified }].
async function listLake () {
    const out = [];
    let token;
    do {
        const r = await s3.send(new ListObjectsV2Command({ Bucket: 'lake', Prefix: 'queen/', ContinuationToken: token }));
        for (const o of r.Contents || [])
            out.push({ key: o.Key, etag: o.ETag, size: o.Size, modified: new Date(o.LastModified).toISOString() });
        token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
    return out.sort((a, b) => a.key.localeCompare(b.key));
}

//  Downloads the objects into a fresh directory (keys kept as paths).
async function downloadLake (objects) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cell-lake-'));
    for (const o of objects) {
        const r = await s3.send(new GetObjectCommand({ Bucket: 'lake', Key: o.key }));
        const file = path.join(dir, o.key);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, Buffer.from(await r.Body.transformToByteArray()));
    }
    return dir;
}

async function sinkMetrics () {
    const r = await fetch(`${SINK}/metrics`).catch(() => null);
    return r && r.status === 200 ? r.text() : '';
}

async function killSink () {
    const pid = Number(podman('inspect', container('queen-sink'), '--format', '{{.State.Pid}}'));
    assert.ok(pid > 1, `queen-sink runs as pid ${pid}`);
    const started = podman('inspect', container('queen-sink'), '--format', '{{.State.StartedAt}}');
    process.kill(pid, 'SIGKILL');
    //  restart: unless-stopped brings it back (a crash, not a stop).
    await waitFor(async () => podman('inspect', container('queen-sink'), '--format', '{{.State.StartedAt}}') !== started
        && (await fetch(`${SINK}/health`).catch(() => null))?.status === 200, 90000, 500);
}

test('queen-sink writes the queue into the S3 service exactly once per window, across SIGKILLs of the sink', async () => {
    const N = 4000;
    //  A short lease: what the kill leaves popped but not staged comes back soon.
    await configureVia(via.proxy, 'events', { leaseTime: 10 });
    compose({ QUEEN_SINK_KEY: KEY, SINK_WINDOW: '10s', SINK_LATENESS_MS: '1000' },
        'up', '-d', '--no-build', '--no-deps', 'queen-sink');
    await waitFor(async () => (await fetch(`${SINK}/health`).catch(() => null))?.status === 200, 60000, 500);
    assert.deepEqual(await listLake(), [], 'the bucket starts empty');

    //  Half the messages, a kill as soon as the sink has staged some of them
    //  (their windows not yet written: 10 s windows + 1 s lateness), the
    //  other half while it restarts.
    const payload = (i) => ({ i, text: `event ${i}`, amount: i * 0.5 });
    const push = async (from, n) => {
        for (let k = from; k < from + n; k += 500) {
            const batch = Array.from({ length: Math.min(500, from + n - k) }, (_, j) => ({
                queue: 'events', partition: `p${(k + j) % 40}`, transactionId: `e-${k + j}`, payload: payload(k + j),
            }));
            await pushItems(PROXY, batch, { headers: via.proxy().headers, queued: true });
        }
    };
    await push(0, N / 2);
    await waitFor(async () => Number(/queen_sink_messages_staged (\d+)/.exec(await sinkMetrics())?.[1] || 0) >= 500,
        60000, 100);
    const beforeKill = await listLake();
    await killSink();
    await push(N / 2, N / 2);

    //  Until every message is in the bucket (then no staged window is left).
    let objects = [];
    let dir = '';
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    const query = async (sql) => (await duck.runAndReadAll(sql)).getRowObjectsJson();
    await waitFor(async () => {
        objects = await listLake();
        if (!objects.length)
            return false;
        if (dir)
            fs.rmSync(dir, { recursive: true, force: true });
        dir = await downloadLake(objects);
        const [r] = await query(`SELECT count(*) AS c FROM read_parquet('${dir}/**/*.parquet', hive_partitioning = true)`);
        return Number(r.c) >= N && /queen_sink_staged_windows\{queue="events"\} 0/.test(await sinkMetrics());
    }, 180000, 2000);

    //  Every message exactly once, with its content; every key in the Hive
    //  layout; each window's parts numbered from 00000 without a gap.
    const src = `read_parquet('${dir}/**/*.parquet', hive_partitioning = true, filename = true)`;
    const [r] = await query(`SELECT count(*) AS c, count(DISTINCT message_id) AS ids,
            count(DISTINCT transaction_id) AS txs, count(DISTINCT (payload->>'i')::INT) AS dist,
            min((payload->>'i')::INT) AS lo, max((payload->>'i')::INT) AS hi,
            count(*) FILTER (WHERE transaction_id <> ('e-' || (payload->>'i'))
                OR (payload->>'text') <> ('event ' || (payload->>'i'))
                OR (payload->>'amount')::DOUBLE <> (payload->>'i')::INT * 0.5
                OR "partition" <> ('p' || ((payload->>'i')::INT % 40))) AS wrong,
            count(DISTINCT queue) AS queues, min(queue) AS queue FROM ${src}`);
    assert.deepEqual([r.c, r.ids, r.txs, r.dist, r.lo, r.hi, r.wrong, r.queues, r.queue].map(String),
        [N, N, N, N, 0, N - 1, 0, 1, 'events'].map(String));
    const windows = new Map();
    for (const o of objects) {
        const m = /^queen\/queue=events\/dt=(\d{4}-\d\d-\d\d)\/hour=(\d\d)\/part-(\d{8}T\d{6}Z)-(\d{5})\.parquet$/.exec(o.key);
        assert.ok(m, `key in the Hive layout: ${o.key}`);
        assert.equal(`${m[1].replaceAll('-', '')}T${m[2]}`, m[3].slice(0, 11), `dt/hour of the window: ${o.key}`);
        windows.set(m[3], [...(windows.get(m[3]) || []), Number(m[4])]);
    }
    for (const [label, parts] of windows)
        assert.deepEqual(parts, parts.map((_, k) => k), `window ${label}: parts without a gap`);
    //  Each row sits in the object of its window or, late (a message whose
    //  lease the kill left held, back after its window was committed), of a
    //  later one: never of an earlier one.
    const [early] = await query(`SELECT count(*) AS c FROM ${src}
        WHERE strftime(make_timestamp((epoch_us(created_at) // 10000000) * 10000000), '%Y%m%dT%H%M%SZ')
              > regexp_extract(filename, 'part-([0-9TZ]+)-', 1)`);
    assert.equal(Number(early.c), 0, 'no row in an earlier window than its own');
    //  An object written before the kill was rewritten with the same bytes.
    for (const o of beforeKill)
        assert.equal(objects.find((x) => x.key === o.key)?.etag, o.etag, `${o.key} unchanged`);

    //  A kill after everything is written: nothing is written again.
    await killSink();
    await sleep(13000);
    assert.deepEqual(await listLake(), objects, 'no object added or rewritten after a restart');
    fs.rmSync(dir, { recursive: true, force: true });
});
