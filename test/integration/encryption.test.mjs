//  test/integration/encryption.test.mjs - payload encryption (contract §2.10,
//  docs/security.md "Payload encryption")
//
//  A queue with encryptionEnabled stores the envelope
//  {"encrypted","iv","authTag","kid"} (AES-256-GCM, fresh 16-byte IV per
//  message) and never its plaintext - in PostgreSQL and in the disk spool,
//  pushed directly, by a transaction, during push maintenance and while
//  PostgreSQL is down. Pop and the message read route give back the exact
//  bytes pushed. configure on this broker takes effect at once, on another
//  broker within the cache lifetime; a warm cache asks nothing. Rotation:
//  a new current key with the old one in QUEEN_ENCRYPTION_OLD_KEYS reads
//  everything; without the old key its messages give a clear 500 naming
//  the message, never garbage. Bad key settings stop the broker at start.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import {
    BIN, startBroker, createDatabase, http, psql, waitFor, pgStop, pgStart, pushItems, configureQueue,
} from './lib.mjs';

const KEY_A = crypto.randomBytes(32).toString('hex');
const KEY_B = crypto.randomBytes(32).toString('hex');
const kid = (hex) => crypto.createHash('sha256').update(Buffer.from(hex, 'hex')).digest('hex').slice(0, 8);

let db;
const live = new Set();

after(async () => {
    for (const b of live)
        await b.stop().catch(() => {});
});

async function start (env, opts = {}) {
    const b = await startBroker({ db, env, ...opts });
    live.add(b);
    //  A fresh broker spools until the spool's first report: wait until
    //  pushes go straight to PostgreSQL.
    await waitFor(async () => {
        const res = await push(b.url, [{ queue: 'warm-up', payload: 0 }]);
        return res.status === 201 && res.body[0].status === 'queued';
    }, 20000, 100);
    return b;
}

//  A clean exit (0): under the sanitizer build a leak or memory error fails.
async function stop (b) {
    const code = await b.stop();
    live.delete(b);
    assert.equal(code, 0, `broker exited with ${code}:\n${b.logs().slice(-4000)}`);
}

function push (url, items) {
    return http(`${url}/api/v1/push`, { method: 'POST', body: { items } });
}

async function pushOk (url, items, status = 'queued') {
    const body = await pushItems(url, items);
    for (const r of body)
        assert.equal(r.status, status, JSON.stringify(body));
    return body;
}

async function configure (url, queue, options) {
    const body = await configureQueue(url, queue, options);
    assert.equal(body.options.encryptionEnabled, !!options.encryptionEnabled);
    return body;
}

function pop (url, queue, params = {}) {
    const qs = new URLSearchParams({ wait: 'false', batch: '100', ...params });
    return http(`${url}/api/v1/pop/queue/${encodeURIComponent(queue)}?${qs}`);
}

//  The stored rows of queue q in seq order: { enc, text, txn }.
async function stored (q) {
    const out = await psql(`SELECT coalesce(json_agg(json_build_object('enc', m.is_encrypted,
            'text', convert_from(m.payload, 'UTF8'), 'txn', m.txn_id) ORDER BY m.seq), '[]')
        FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = '${q}'`, { db });
    return JSON.parse(out);
}

//  Opens a stored envelope the way the reference would (Node crypto).
function openEnvelope (text, hexKey) {
    const e = JSON.parse(text);
    const d = crypto.createDecipheriv('aes-256-gcm', Buffer.from(hexKey, 'hex'), Buffer.from(e.iv, 'base64'));
    d.setAuthTag(Buffer.from(e.authTag, 'base64'));
    return Buffer.concat([d.update(Buffer.from(e.encrypted, 'base64')), d.final()]).toString('utf8');
}

function assertEnvelope (row, hexKey, secret) {
    assert.equal(row.enc, true, JSON.stringify(row));
    assert.ok(!row.text.includes(secret), `plaintext stored: ${row.text}`);
    const e = JSON.parse(row.text);
    assert.deepEqual(Object.keys(e).sort(), ['authTag', 'encrypted', 'iv', 'kid']);
    assert.equal(Buffer.from(e.iv, 'base64').length, 16);
    assert.equal(Buffer.from(e.authTag, 'base64').length, 16);
    assert.equal(e.kid, kid(hexKey));
    return e;
}

async function counter (url, name) {
    const res = await http(`${url}/metrics/prometheus`);
    assert.equal(res.status, 200);
    const m = res.raw.match(new RegExp(`^queen_${name} (\\d+)$`, 'm'));
    assert.ok(m, `no queen_${name} in /metrics/prometheus`);
    return Number(m[1]);
}

//  Every byte of every file under dir.
function spoolBytes (dir) {
    const parts = [];
    for (const name of fs.readdirSync(dir, { recursive: true })) {
        const file = path.join(dir, String(name));
        if (fs.statSync(file).isFile())
            parts.push(fs.readFileSync(file));
    }
    return Buffer.concat(parts);
}

//  The exact payload text of the first test: escapes and spacing kept.
const EXACT = '{"secret":"TOP-SECRET-1",  "n": 1.50, "u":"\\u00e9", "list":[1, 2]}';

let A;          //  Broker with KEY_A
let A2;         //  Second broker on the same database, KEY_A

test('encrypted queue: stored as an envelope, popped as the exact bytes', async () => {
    db = await createDatabase('encryption');
    A = await start({ QUEEN_ENCRYPTION_KEY: KEY_A });
    await configure(A.url, 'enc', { encryptionEnabled: true });
    await configure(A.url, 'rot', { encryptionEnabled: true });
    await configure(A.url, 'plain', {});
    const body = `{"items":[{"queue":"enc","transactionId":"e1","payload":${EXACT}},`
               + `{"queue":"enc","transactionId":"e2","payload":${EXACT}},`
               + '{"queue":"plain","transactionId":"p1","payload":{"secret":"PLAIN-1"}},'
               + '{"queue":"rot","transactionId":"rot-a-0","payload":{"secret":"ROT-A-0"}},'
               + '{"queue":"rot","transactionId":"rot-a-1","payload":"ROT-A-1"}]}';
    const res = await http(`${A.url}/api/v1/push`, {
        method: 'POST', body, headers: { 'Content-Type': 'application/json' },
    });
    assert.equal(res.status, 201, res.raw);
    assert.deepEqual(res.body.map((r) => r.status), ['queued', 'queued', 'queued', 'queued', 'queued']);

    const enc = await stored('enc');
    assert.equal(enc.length, 2);
    const e1 = assertEnvelope(enc[0], KEY_A, 'TOP-SECRET');
    const e2 = assertEnvelope(enc[1], KEY_A, 'TOP-SECRET');
    //  Same payload twice: fresh IVs, different ciphertexts
    assert.notEqual(e1.iv, e2.iv);
    assert.notEqual(e1.encrypted, e2.encrypted);
    //  The reference's decryption (Node crypto) reads our envelope
    assert.equal(openEnvelope(enc[0].text, KEY_A), EXACT);
    const plain = await stored('plain');
    assert.deepEqual(plain, [{ enc: false, text: '{"secret":"PLAIN-1"}', txn: 'p1' }]);
    const rot = await stored('rot');
    assertEnvelope(rot[0], KEY_A, 'ROT-A-0');
    assertEnvelope(rot[1], KEY_A, 'ROT-A-1');

    //  Pop: the exact bytes pushed, verbatim in the response
    const popped = await pop(A.url, 'enc', { autoAck: 'false' });
    assert.equal(popped.status, 200, popped.raw);
    assert.equal(popped.body.messages.length, 2);
    assert.equal(popped.raw.split(`"data":${EXACT}`).length - 1, 2, popped.raw);
    assert.deepEqual(popped.body.messages[0].data, JSON.parse(EXACT));
    //  The message read route decrypts too
    const pid = popped.body.messages[0].partitionId;
    const read = await http(`${A.url}/api/v1/messages/${pid}/e1`);
    assert.equal(read.status, 200, read.raw);
    assert.ok(read.raw.replace(/"payload"\s*:\s*/, '"payload":').includes(`"payload":${EXACT}`), read.raw);
    assert.equal(read.body.decryptionError, undefined);
});

test('transaction pushes to an encrypted queue are encrypted', async () => {
    const res = await http(`${A.url}/api/v1/transaction`, {
        method: 'POST',
        body: { operations: [
            { type: 'push', items: [{ queue: 'enc', transactionId: 't1', payload: { secret: 'TXN-SECRET' } }] },
            { type: 'push', items: [{ queue: 'plain', transactionId: 't2', payload: { secret: 'TXN-PLAIN' } }] },
        ] },
    });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true, res.raw);
    const row = (await stored('enc')).find((r) => r.txn === 't1');
    assertEnvelope(row, KEY_A, 'TXN-SECRET');
    assert.equal(openEnvelope(row.text, KEY_A), '{"secret":"TXN-SECRET"}');
    const p = (await stored('plain')).find((r) => r.txn === 't2');
    assert.deepEqual(p, { enc: false, text: '{"secret":"TXN-PLAIN"}', txn: 't2' });
    const popped = await pop(A.url, 'enc', { consumerGroup: 'txn-reader' });
    assert.equal(popped.status, 200, popped.raw);
    assert.deepEqual(popped.body.messages.find((m) => m.transactionId === 't1').data, { secret: 'TXN-SECRET' });
});

test('queue settings cache: configure applies at once, new queues are plain, warm pushes ask nothing', async () => {
    //  A queue created by the push itself has the defaults: not encrypted
    await pushOk(A.url, [{ queue: 'born-by-push', payload: { secret: 'BORN' } }]);
    assert.deepEqual((await stored('born-by-push')).map((r) => r.enc), [false]);

    //  configure on this broker: the next push follows it, no waiting
    await configure(A.url, 'flip', { encryptionEnabled: true });
    await pushOk(A.url, [{ queue: 'flip', payload: { secret: 'FLIP-1' } }]);
    await configure(A.url, 'flip', { encryptionEnabled: false });
    await pushOk(A.url, [{ queue: 'flip', payload: { secret: 'FLIP-2' } }]);
    await configure(A.url, 'flip', { encryptionEnabled: true });
    await pushOk(A.url, [{ queue: 'flip', payload: { secret: 'FLIP-3' } }]);
    const flip = await stored('flip');
    assertEnvelope(flip[0], KEY_A, 'FLIP-1');
    assert.deepEqual(flip[1], { enc: false, text: '{"secret":"FLIP-2"}', txn: null });
    assertEnvelope(flip[2], KEY_A, 'FLIP-3');

    //  A cold push asks once for all its queues
    let before = await counter(A.url, 'queue_settings_queries_total');
    await pushOk(A.url, [
        { queue: 'cold-1', payload: 1 }, { queue: 'cold-2', payload: 2 }, { queue: 'cold-1', payload: 3 },
    ]);
    assert.equal(await counter(A.url, 'queue_settings_queries_total'), before + 1);

    //  Warm: within the cache lifetime (~2 s) pushes ask nothing. The
    //  queue is new, so its entry is fetched by the first push, after t0
    //  (a queue cached earlier may expire in the middle of the loop).
    const t0 = Date.now();
    await pushOk(A.url, [{ queue: 'warm', payload: { warm: 0 } }]);
    before = await counter(A.url, 'queue_settings_queries_total');
    for (let i = 1; i <= 5; i++)
        await pushOk(A.url, [{ queue: 'warm', payload: { warm: i } }]);
    const after = await counter(A.url, 'queue_settings_queries_total');
    //  (After the cache lifetime a query is allowed: only a slow run gets there.)
    assert.ok(after === before || Date.now() - t0 >= 1500, `warm pushes queried the queue settings (${before} -> ${after})`);
});

test('configure on another broker reaches this one within the cache lifetime', async () => {
    A2 = await start({ QUEEN_ENCRYPTION_KEY: KEY_A });
    await pushOk(A.url, [{ queue: 'shared', payload: { secret: 'SHARED-0' } }]);
    assert.deepEqual((await stored('shared')).map((r) => r.enc), [false]);
    await configure(A2.url, 'shared', { encryptionEnabled: true });
    let n = 0;
    await waitFor(async () => {
        await pushOk(A.url, [{ queue: 'shared', payload: { secret: `SHARED-${++n}` } }]);
        const rows = await stored('shared');
        return rows[rows.length - 1].enc;
    }, 15000, 200);
    const rows = await stored('shared');
    assertEnvelope(rows[rows.length - 1], KEY_A, 'SHARED-');
});

test('push maintenance: the spool holds only ciphertext of an encrypted queue', async () => {
    let res = await http(`${A.url}/api/v1/system/maintenance`, { method: 'POST', body: { enabled: true } });
    assert.equal(res.status, 200, res.raw);
    const items = Array.from({ length: 5 }, (_, i) => ({
        queue: 'enc', transactionId: `spool-${i}`, payload: { secret: `SPOOL-SECRET-${i}` },
    }));
    await pushOk(A.url, items, 'buffered');
    const bytes = spoolBytes(A.fileBufferDir);
    assert.ok(bytes.length > 0, 'nothing in the spool');
    assert.ok(!bytes.includes('SPOOL-SECRET'), 'plaintext in the spool');
    assert.ok(bytes.includes('authTag'), 'no envelope in the spool');
    res = await http(`${A.url}/api/v1/system/maintenance`, { method: 'POST', body: { enabled: false } });
    assert.equal(res.status, 200, res.raw);
    await waitFor(async () => (await stored('enc')).filter((r) => /^spool-/.test(r.txn || '')).length === 5, 30000);
    for (const row of (await stored('enc')).filter((r) => /^spool-/.test(r.txn || ''))) {
        assertEnvelope(row, KEY_A, 'SPOOL-SECRET');
        assert.match(openEnvelope(row.text, KEY_A), /^\{"secret":"SPOOL-SECRET-\d"\}$/);
    }
});

test('database down: spooled pushes of encrypted and unconfirmed queues are ciphertext', async () => {
    await pgStop();
    try {
        //  'enc' is encrypted; 'outage-new' was never seen, so its setting is
        //  unconfirmed and its payload is encrypted too.
        await waitFor(async () => {
            const res = await push(A.url, [{ queue: 'enc', transactionId: 'down-probe', payload: { secret: 'OUTAGE-SECRET-P' } }]);
            return res.status === 201 && res.body[0].status === 'buffered';
        }, 30000, 200);
        await pushOk(A.url, [
            { queue: 'enc', transactionId: 'down-0', payload: { secret: 'OUTAGE-SECRET-0' } },
            { queue: 'outage-new', transactionId: 'down-1', payload: { secret: 'OUTAGE-SECRET-1' } },
        ], 'buffered');
        const bytes = spoolBytes(A.fileBufferDir);
        assert.ok(!bytes.includes('OUTAGE-SECRET'), 'plaintext in the spool');
    } finally {
        await pgStart();
    }
    await waitFor(async () => (await stored('outage-new')).length === 1, 60000, 250);
    const row = (await stored('outage-new'))[0];
    assertEnvelope(row, KEY_A, 'OUTAGE-SECRET');
    await waitFor(async () => (await stored('enc')).some((r) => r.txn === 'down-0'), 60000, 250);
    assertEnvelope((await stored('enc')).find((r) => r.txn === 'down-0'), KEY_A, 'OUTAGE-SECRET');
    //  Popped: plaintext, like any encrypted message
    let popped;
    await waitFor(async () => {
        popped = await pop(A.url, 'outage-new');
        return popped.status === 200;
    }, 30000, 250);
    assert.deepEqual(popped.body.messages[0].data, { secret: 'OUTAGE-SECRET-1' });
});

test('rotation: new key current, old key kept for reading; without it a clear error', async () => {
    await stop(A);
    await stop(A2);
    //  Key B current, A kept for reading
    const R = await start({ QUEEN_ENCRYPTION_KEY: KEY_B, QUEEN_ENCRYPTION_OLD_KEYS: `${crypto.randomBytes(32).toString('hex')}, ${KEY_A}` });
    await pushOk(R.url, [
        { queue: 'rot', transactionId: 'rot-b-0', payload: { secret: 'ROT-B-0' } },
        { queue: 'rot', transactionId: 'rot-b-1', payload: { secret: 'ROT-B-1' } },
    ]);
    const rows = await stored('rot');
    assert.deepEqual(rows.map((r) => JSON.parse(r.text).kid), [kid(KEY_A), kid(KEY_A), kid(KEY_B), kid(KEY_B)]);
    assertEnvelope(rows[2], KEY_B, 'ROT-B-0');
    let res = await pop(R.url, 'rot', { consumerGroup: 'g-both' });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.messages.map((m) => m.data),
        [{ secret: 'ROT-A-0' }, 'ROT-A-1', { secret: 'ROT-B-0' }, { secret: 'ROT-B-1' }]);
    const pid = res.body.messages[0].partitionId;
    const aId = res.body.messages[0].id;
    await stop(R);

    //  Key B only: A's messages give a clear error, never their bytes
    const O = await start({ QUEEN_ENCRYPTION_KEY: KEY_B });
    res = await pop(O.url, 'rot', { consumerGroup: 'g-only-b' });
    assert.equal(res.status, 500, res.raw);
    assert.match(res.body.error, /^Payload decryption failed for message /);
    assert.ok(res.body.error.includes(kid(KEY_A)), res.raw);
    assert.ok(res.body.error.includes('not configured'), res.raw);
    assert.equal(res.body.messageId, aId);
    assert.equal(res.body.transactionId, 'rot-a-0');
    assert.equal(res.body.partitionId, pid);
    assert.equal(res.body.queue, 'rot');
    assert.equal(res.body.partition, 'Default');
    assert.equal(typeof res.body.leaseId, 'string');
    assert.ok(!res.raw.includes('ROT-') && !res.raw.includes('authTag'), res.raw);
    //  Read route: B's message decrypts; A's stays in its stored form with the reason
    let read = await http(`${O.url}/api/v1/messages/${pid}/rot-b-0`);
    assert.equal(read.status, 200, read.raw);
    assert.deepEqual(read.body.payload, { secret: 'ROT-B-0' });
    read = await http(`${O.url}/api/v1/messages/${pid}/rot-a-0`);
    assert.equal(read.status, 200, read.raw);
    assert.equal(read.body.isEncrypted, true);
    assert.equal(read.body.payload.kid, kid(KEY_A));
    assert.ok(read.body.decryptionError.includes('not configured'), read.raw);
    assert.ok(O.logs().includes('payload decryption failed'), O.logs());
    assert.ok(!O.logs().includes(KEY_B) && !O.logs().includes(KEY_A), 'a key in the log');
    await stop(O);

    //  No key at all: a clear error too; pushes to an encrypted queue are
    //  stored in plaintext (contract), and configure warns.
    const N = await start({});
    res = await pop(N.url, 'rot', { consumerGroup: 'g-none' });
    assert.equal(res.status, 500, res.raw);
    assert.ok(res.body.error.includes('no encryption key is configured'), res.raw);
    await configure(N.url, 'enc', { encryptionEnabled: true });
    await pushOk(N.url, [{ queue: 'enc', transactionId: 'nokey', payload: { secret: 'NO-KEY' } }]);
    assert.deepEqual((await stored('enc')).find((r) => r.txn === 'nokey'),
        { enc: false, text: '{"secret":"NO-KEY"}', txn: 'nokey' });
    await waitFor(() => N.logs().includes('QUEEN_ENCRYPTION_KEY is unset'), 5000);
    await stop(N);
});

test('bad key settings stop the broker at start, without echoing keys', () => {
    const cases = [
        [{ QUEEN_ENCRYPTION_KEY: 'abc' }, 'QUEEN_ENCRYPTION_KEY: expected 64 hex'],
        [{ QUEEN_ENCRYPTION_KEY: KEY_A, QUEEN_ENCRYPTION_OLD_KEYS: `${KEY_B},nothex` },
         'QUEEN_ENCRYPTION_OLD_KEYS: entry 2: expected 64 hex'],
        [{ QUEEN_ENCRYPTION_OLD_KEYS: `${KEY_B}0` }, 'QUEEN_ENCRYPTION_OLD_KEYS: entry 1'],
    ];
    for (const [env, expected] of cases) {
        const r = spawnSync(BIN, [], {
            env: { ...process.env, PG_HOST: '127.0.0.1', PORT: '1', ...env },
            timeout: 20000, encoding: 'utf8',
        });
        assert.notEqual(r.status, 0);
        const out = r.stdout + r.stderr;
        assert.ok(out.includes(expected), out);
        assert.ok(!out.includes(KEY_A) && !out.includes(KEY_B), out);
    }
});
