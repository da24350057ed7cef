//  test/integration/timer_encryption.test.mjs - timers on encrypted queues
//  (contract §2.10, docs/security.md "Payload encryption", "Timers")
//
//  A timer whose queue has encryptionEnabled stores the envelope, never its
//  payload's plaintext, from its creation (POST /api/v1/timers, or a
//  timer.schedule rider of POST /api/v1/transaction) until it fires: the
//  queen.timers row is is_encrypted, and so is the message it becomes,
//  which pop decrypts. The read routes (GET /api/v1/timers/:id, the list)
//  show the plaintext. Re-creating the same timer is idempotent although
//  each create seals fresh bytes (the fingerprint uses a keyed digest of
//  the plaintext); after a key change the same definition is a conflict,
//  and a payload the broker cannot open is shown as stored with a
//  decryptionError. Timers of other queues stay plaintext.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startBroker, createDatabase, http, psql, waitFor, configureQueue, pop } from './lib.mjs';

const KEY_A = crypto.randomBytes(32).toString('hex');
const KEY_B = crypto.randomBytes(32).toString('hex');
const kid = (hex) => crypto.createHash('sha256').update(Buffer.from(hex, 'hex')).digest('hex').slice(0, 8);

//  The exact payload text (escapes and spacing kept) and its marker.
const MARK = 'TIMER-SECRET';
const EXACT = `{"secret":"${MARK}-1",  "n": 1.50, "u":"\\u00e9"}`;

let db;
let A;              //  Broker with KEY_A
const live = new Set();

after(async () => {
    for (const b of live)
        await b.stop().catch(() => {});
});

async function start (env) {
    const b = await startBroker({ db, env });
    live.add(b);
    return b;
}

async function stop (b) {
    const code = await b.stop();
    live.delete(b);
    assert.equal(code, 0, `broker exited with ${code}:\n${b.logs().slice(-4000)}`);
}

const lit = (s) => `'${String(s).replace(/'/g, "''")}'`;

const configure = (url, queue, options) => configureQueue(url, queue, options);

//  POST /api/v1/timers with a body given as text (exact bytes) or object.
function create (body, url = A.url) {
    return http(`${url}/api/v1/timers`, {
        method: 'POST', body, headers: { 'Content-Type': 'application/json' },
    });
}

function txn (operations, url = A.url) {
    return http(`${url}/api/v1/transaction`, { method: 'POST', body: { operations } });
}

//  The queen.timers row of a timer: { enc, text, fired }.
async function timerRow (timerId) {
    const out = await psql(`SELECT json_build_object('enc', is_encrypted,
            'text', convert_from(payload, 'UTF8'), 'fired', fired_at IS NOT NULL)
        FROM queen.timers WHERE timer_id = ${lit(timerId)}`, { db });
    return JSON.parse(out);
}

//  The message a fired timer became: { enc, text }.
async function firedMessage (timerId) {
    const out = await psql(`SELECT json_build_object('enc', m.is_encrypted, 'text', convert_from(m.payload, 'UTF8'))
        FROM queen.timers t JOIN queen.messages m ON m.seq = t.seq WHERE t.timer_id = ${lit(timerId)}`, { db });
    return out ? JSON.parse(out) : null;
}

//  Opens a stored envelope with Node crypto (the reference's way).
function openEnvelope (text, hexKey) {
    const e = JSON.parse(text);
    const d = crypto.createDecipheriv('aes-256-gcm', Buffer.from(hexKey, 'hex'), Buffer.from(e.iv, 'base64'));
    d.setAuthTag(Buffer.from(e.authTag, 'base64'));
    return Buffer.concat([d.update(Buffer.from(e.encrypted, 'base64')), d.final()]).toString('utf8');
}

function assertSealed (row, plain, hexKey = KEY_A) {
    assert.equal(row.enc, true, JSON.stringify(row));
    assert.ok(!row.text.includes(MARK), `plaintext stored: ${row.text}`);
    const e = JSON.parse(row.text);
    assert.deepEqual(Object.keys(e).sort(), ['authTag', 'encrypted', 'iv', 'kid']);
    assert.equal(e.kid, kid(hexKey));
    assert.equal(openEnvelope(row.text, hexKey), plain);
}

//  Pops everything of queue as consumer group `group` (its own cursor).
const popAll = (queue, group) => pop(A.url, queue, { batch: 100, consumerGroup: group, expect: 200 });

const firedAt = async (timerId) =>
    (await http(`${A.url}/api/v1/timers/${encodeURIComponent(timerId)}`)).body.status === 'fired';

test('POST /api/v1/timers on an encrypted queue: sealed at rest, read in plaintext, idempotent', async () => {
    db = await createDatabase('timerenc');
    A = await start({ QUEEN_ENCRYPTION_KEY: KEY_A });
    await configure(A.url, 'tenc', { encryptionEnabled: true });
    await configure(A.url, 'tplain', {});

    const body = `{"timerId":"te-1","queue":"tenc","payload":${EXACT},"delayMs":600000}`;
    const first = await create(body);
    assert.equal(first.status, 201, first.raw);
    assert.deepEqual([first.body.created, first.body.fired], [true, false]);
    const row = await timerRow('te-1');
    assertSealed(row, EXACT);

    //  The read routes decrypt: the exact bytes sent.
    const got = await http(`${A.url}/api/v1/timers/te-1`);
    assert.equal(got.status, 200, got.raw);
    assert.ok(got.raw.includes(`"payload":${EXACT}`), got.raw);
    assert.equal(got.body.status, 'pending');
    assert.equal(got.body.decryptionError, undefined);
    const list = await http(`${A.url}/api/v1/timers?queue=tenc`);
    assert.equal(list.status, 200, list.raw);
    assert.equal(list.body.timers.length, 1);
    assert.deepEqual(list.body.timers[0].payload, JSON.parse(EXACT));
    assert.ok(list.raw.includes(`"payload":${EXACT}`), list.raw);

    //  The same definition again: the same timer (fresh ciphertext, same
    //  keyed digest); the stored envelope is the first one.
    const again = await create(body);
    assert.equal(again.status, 200, again.raw);
    assert.deepEqual(again.body, { ...first.body, created: false });
    assert.deepEqual(await timerRow('te-1'), row);
    //  Another payload under that timerId: conflict.
    const other = await create(body.replace(`${MARK}-1`, `${MARK}-2`));
    assert.equal(other.status, 409, other.raw);
    //  The digest is not an unkeyed hash of the plaintext.
    const fp = await psql(`SELECT encode(fingerprint, 'hex') FROM queen.timers WHERE timer_id = 'te-1'`, { db });
    const unkeyed = await psql(`SELECT encode(queen._timer_fp('tenc', NULL, NULL, 'in:600000',
        convert_to(${lit(EXACT)}, 'UTF8')), 'hex')`, { db });
    assert.notEqual(fp, unkeyed);
});

test('an encrypted timer fires an is_encrypted message that pop decrypts', async () => {
    const body = `{"timerId":"te-fire","queue":"tenc","transactionId":"te-fire-tx","payload":${EXACT},"delayMs":0}`;
    const res = await create(body);
    assert.equal(res.status, 201, res.raw);
    await waitFor(() => firedAt('te-fire'), 10000, 25);
    const msg = await firedMessage('te-fire');
    assertSealed(msg, EXACT);
    const row = await timerRow('te-fire');
    assert.deepEqual([row.fired, row.text], [true, ''], 'fired record emptied');
    const fired = await http(`${A.url}/api/v1/timers/te-fire`);
    assert.equal(fired.body.payload, null, fired.raw);

    const popped = await popAll('tenc', 'g-route');
    const m = popped.body.messages.find((x) => x.transactionId === 'te-fire-tx');
    assert.ok(m, popped.raw);
    assert.deepEqual(m.data, JSON.parse(EXACT));
    assert.ok(popped.raw.includes(`"data":${EXACT}`), popped.raw);

    //  Re-created after firing: answered "fired", not a conflict.
    const again = await create(body);
    assert.equal(again.status, 200, again.raw);
    assert.deepEqual([again.body.created, again.body.fired], [false, true]);
});

test('timer.schedule riders of a transaction are sealed the same way', async () => {
    const ops = [
        { type: 'timer.schedule', timerId: 'tx-pending', queue: 'tenc', payload: { secret: `${MARK}-TX-P` },
          delayMs: 600000 },
        { type: 'timer.schedule', timerId: 'tx-fire', queue: 'tenc', transactionId: 'tx-fire-tx',
          payload: { secret: `${MARK}-TX-F` }, delayMs: 0 },
        { type: 'timer.schedule', timerId: 'tx-plain', queue: 'tplain', payload: { open: 'TX-PLAIN' },
          delayMs: 600000 },
        { type: 'push', items: [{ queue: 'tenc', transactionId: 'tx-push', payload: { secret: `${MARK}-TX-PUSH` } }] },
    ];
    const res = await txn(ops);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true, res.raw);
    assert.deepEqual(res.body.results.slice(0, 3).map((r) => r.created), [true, true, true]);

    assertSealed(await timerRow('tx-pending'), `{"secret":"${MARK}-TX-P"}`);
    assert.deepEqual(await timerRow('tx-plain'), { enc: false, text: '{"open":"TX-PLAIN"}', fired: false });
    const got = await http(`${A.url}/api/v1/timers/tx-pending`);
    assert.deepEqual(got.body.payload, { secret: `${MARK}-TX-P` }, got.raw);

    await waitFor(() => firedAt('tx-fire'), 10000, 25);
    assertSealed(await firedMessage('tx-fire'), `{"secret":"${MARK}-TX-F"}`);
    const popped = await popAll('tenc', 'g-txn');
    const m = popped.body.messages.find((x) => x.transactionId === 'tx-fire-tx');
    assert.ok(m, popped.raw);
    assert.deepEqual(m.data, { secret: `${MARK}-TX-F` });

    //  The same riders again: idempotent (exists / fired), not 409.
    const again = await txn(ops.slice(0, 3));
    assert.equal(again.status, 200, again.raw);
    assert.equal(again.body.success, true, again.raw);
    assert.deepEqual(again.body.results.map((r) => [r.created, r.fired]), [[false, false], [false, true], [false, false]]);
    //  The same via POST /api/v1/timers (one fingerprint for both routes).
    const viaRoute = await create({ timerId: 'tx-pending', queue: 'tenc', payload: { secret: `${MARK}-TX-P` },
        delayMs: 600000 });
    assert.equal(viaRoute.status, 200, viaRoute.raw);
    //  A different payload for a rider's timerId: the rider's 409.
    const taken = await txn([{ ...ops[0], payload: { secret: 'other' } }]);
    assert.equal(taken.status, 409, taken.raw);
});

test('a timer on a queue without encryption stays plaintext', async () => {
    const res = await create({ timerId: 'tp-1', queue: 'tplain', transactionId: 'tp-1-tx',
        payload: { open: 'PLAIN-TIMER' }, delayMs: 0 });
    assert.equal(res.status, 201, res.raw);
    await waitFor(() => firedAt('tp-1'), 10000, 25);
    assert.deepEqual(await firedMessage('tp-1'), { enc: false, text: '{"open":"PLAIN-TIMER"}' });
    //  A queue nobody configured is created by the firing push: not encrypted.
    const fresh = await create({ timerId: 'tp-new', queue: 'tnew', payload: 'NEW-PLAIN', delayMs: 600000 });
    assert.equal(fresh.status, 201, fresh.raw);
    assert.deepEqual(await timerRow('tp-new'), { enc: false, text: '"NEW-PLAIN"', fired: false });
});

test('another key: the stored envelope with a decryptionError; the same definition conflicts', async () => {
    await stop(A);
    const B = await start({ QUEEN_ENCRYPTION_KEY: KEY_B });
    const got = await http(`${B.url}/api/v1/timers/te-1`);
    assert.equal(got.status, 200, got.raw);
    assert.equal(got.body.payload.kid, kid(KEY_A), got.raw);
    assert.ok(!got.raw.includes(MARK), got.raw);
    assert.match(got.body.decryptionError, new RegExp(`key ${kid(KEY_A)}`));
    const list = await http(`${B.url}/api/v1/timers?queue=tenc`);
    assert.equal(list.status, 200, list.raw);
    assert.ok(list.body.timers.every((t) => typeof t.decryptionError === 'string'), list.raw);
    //  The keyed digest changed with the key (docs/security.md).
    const again = await create(`{"timerId":"te-1","queue":"tenc","payload":${EXACT},"delayMs":600000}`, B.url);
    assert.equal(again.status, 409, again.raw);
    //  With the old key among the old keys it reads again.
    await stop(B);
    const C = await start({ QUEEN_ENCRYPTION_KEY: KEY_B, QUEEN_ENCRYPTION_OLD_KEYS: KEY_A });
    const back = await http(`${C.url}/api/v1/timers/te-1`);
    assert.ok(back.raw.includes(`"payload":${EXACT}`), back.raw);
    assert.equal(back.body.decryptionError, undefined);
    await stop(C);
});
