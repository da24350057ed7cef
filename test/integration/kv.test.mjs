//  test/integration/kv.test.mjs - the kv store (PUT/GET/DELETE
//  /api/v1/kv/:bucket/:key, GET /api/v1/kv/:bucket; docs/http-api.md "State:
//  kv and timers") against a real PostgreSQL: values byte-for-byte,
//  optimistic locking with ifVersion, no ABA, ttl expiry read as absent at
//  once and swept later, ordered paginated listing, bad input, and 16
//  concurrent compare-and-set writers on one key losing no update.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { http, psql, startBroker, waitFor } from './lib.mjs';

let b;                          //  The broker of this file

before(async () => {
    b = await startBroker();
});

after(async () => {
    if (b)
        await b.stop();
});

const sql = (text) => psql(text, { db: b.db });
const enc = encodeURIComponent;
const kvUrl = (bucket, key, qs = '') => `${b.url}/api/v1/kv/${enc(bucket)}/${enc(key)}${qs}`;
//  PUT with a raw JSON text body (sent as is).
const put = (bucket, key, text, qs = '') => http(kvUrl(bucket, key, qs), {
    method: 'PUT', body: text, headers: { 'Content-Type': 'application/json' },
});
const get = (bucket, key) => http(kvUrl(bucket, key));
const del = (bucket, key, qs = '') => http(kvUrl(bucket, key, qs), { method: 'DELETE' });
const list = (bucket, qs = '') => http(`${b.url}/api/v1/kv/${enc(bucket)}${qs}`);
const TS_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

test('kv: put, get, delete; values kept byte-for-byte, any JSON type', async () => {
    const text = '{ "a" : [1, 2.50, "x\\u00e9"], "b": null }';
    const p = await put('kv-basic', 'k1', text);
    assert.equal(p.status, 200, p.raw);
    assert.deepEqual(Object.keys(p.body), ['bucket', 'key', 'version', 'expiresAt']);
    assert.equal(p.body.bucket, 'kv-basic');
    assert.equal(p.body.key, 'k1');
    assert.ok(Number.isInteger(p.body.version) && p.body.version > 0);
    assert.equal(p.body.expiresAt, null);

    const g = await get('kv-basic', 'k1');
    assert.equal(g.status, 200, g.raw);
    assert.deepEqual(Object.keys(g.body), ['bucket', 'key', 'value', 'version', 'expiresAt', 'updatedAt']);
    assert.ok(g.raw.includes(`"value":${text},`), `stored as sent: ${g.raw}`);
    assert.equal(g.body.version, p.body.version);
    assert.match(g.body.updatedAt, TS_MS);

    for (const [key, value] of [['s', '"text"'], ['n', '-12.5e3'], ['z', 'null'], ['t', 'true'], ['arr', '[]']]) {
        assert.equal((await put('kv-basic', key, value)).status, 200);
        const r = await get('kv-basic', key);
        assert.ok(r.raw.includes(`"value":${value},`), r.raw);
    }
    //  An unconditional put overwrites and draws a higher version.
    const p2 = await put('kv-basic', 'k1', '2');
    assert.ok(p2.body.version > p.body.version);

    const d = await del('kv-basic', 'k1');
    assert.equal(d.status, 200, d.raw);
    assert.deepEqual(d.body, { deleted: true, bucket: 'kv-basic', key: 'k1', version: p2.body.version });
    assert.equal((await get('kv-basic', 'k1')).status, 404);
    const again = await del('kv-basic', 'k1');
    assert.equal(again.status, 404);
    assert.equal(again.body.error, 'key not found');

    //  Keys may hold any UTF-8 (a percent-encoded path segment).
    const odd = 'ключ/🙂 ?&#';
    assert.equal((await put('kv-basic', odd, '1')).body.key, odd);
    assert.equal((await get('kv-basic', odd)).body.key, odd);
});

test('kv: ifVersion is compare-and-set; 0 creates only if absent; 409 carries currentVersion', async () => {
    const c = await put('kv-cas', 'k', '1', '?ifVersion=0');
    assert.equal(c.status, 200, c.raw);
    const v1 = c.body.version;

    const dup = await put('kv-cas', 'k', '2', '?ifVersion=0');
    assert.equal(dup.status, 409, dup.raw);
    assert.equal(dup.body.error, 'version conflict');
    assert.equal(dup.body.currentVersion, v1);

    const stale = await put('kv-cas', 'k', '2', `?ifVersion=${v1 + 1000}`);
    assert.equal(stale.status, 409);
    assert.equal(stale.body.currentVersion, v1);

    const ok = await put('kv-cas', 'k', '2', `?ifVersion=${v1}`);
    assert.equal(ok.status, 200, ok.raw);
    assert.ok(ok.body.version > v1);
    assert.equal((await put('kv-cas', 'k', '3', `?ifVersion=${v1}`)).status, 409, 'the old version is gone');

    const missing = await put('kv-cas', 'nope', '1', '?ifVersion=7');
    assert.equal(missing.status, 409);
    assert.equal(missing.body.currentVersion, 0, 'absent: currentVersion 0 (the ifVersion that creates it)');

    //  Delete with a version.
    const dc = await del('kv-cas', 'k', `?ifVersion=${v1}`);
    assert.equal(dc.status, 409);
    assert.equal(dc.body.currentVersion, ok.body.version);
    assert.equal((await del('kv-cas', 'k', `?ifVersion=${ok.body.version}`)).status, 200);
    assert.equal((await del('kv-cas', 'k', '?ifVersion=1')).status, 404);

    //  ABA: re-created after a delete, the key gets a version never seen before.
    const re = await put('kv-cas', 'k', '1', '?ifVersion=0');
    assert.equal(re.status, 200);
    assert.ok(re.body.version > ok.body.version, `${re.body.version} > ${ok.body.version}`);
    assert.equal((await put('kv-cas', 'k', '2', `?ifVersion=${v1}`)).status, 409);
});

test('kv: an expired key reads as absent at once, and is swept later', async () => {
    const p = await put('kv-ttl', 'short', '"bye"', '?ttl=1');
    assert.equal(p.status, 200, p.raw);
    const exp = Date.parse(p.body.expiresAt);
    assert.ok(exp > Date.now() - 2000 && exp < Date.now() + 3000, p.body.expiresAt);
    assert.equal((await get('kv-ttl', 'short')).body.expiresAt, p.body.expiresAt);
    await waitFor(async () => (await get('kv-ttl', 'short')).status === 404, 5000, 50);

    //  Expired in the database (the sweep has not run): absent everywhere.
    assert.equal((await put('kv-ttl', 'k', '1', '?ttl=3600')).status, 200);
    assert.equal((await put('kv-ttl', 'live', '1')).status, 200);
    await sql(`UPDATE queen.kv SET expires_at = now() - interval '1 second' WHERE ns = 'kv-ttl' AND key = 'k'`);
    assert.equal((await get('kv-ttl', 'k')).status, 404);
    const l = await list('kv-ttl');
    assert.deepEqual(l.body.keys.map((x) => x.key), ['live']);
    assert.equal((await put('kv-ttl', 'k', '1', '?ifVersion=1')).body.currentVersion, 0);
    assert.equal((await del('kv-ttl', 'k')).status, 404);

    //  Create-only succeeds on an expired key; a write without ttl clears the expiry.
    assert.equal((await put('kv-ttl', 'k2', '1', '?ttl=3600')).status, 200);
    await sql(`UPDATE queen.kv SET expires_at = now() - interval '1 second' WHERE ns = 'kv-ttl' AND key = 'k2'`);
    const c = await put('kv-ttl', 'k2', '2', '?ifVersion=0');
    assert.equal(c.status, 200, c.raw);
    assert.equal(c.body.expiresAt, null);
    assert.equal((await put('kv-ttl', 'k2', '3', '?ttl=0')).body.expiresAt, null, 'ttl=0: no expiry');

    //  The timers actor sweeps expired rows every few seconds.
    await waitFor(async () => await sql(`SELECT count(*) FROM queen.kv WHERE ns = 'kv-ttl' AND key IN ('short', 'k')`) === '0',
        20000, 250);
});

test('kv: listing is ordered by bytes, filtered by prefix, paginated with next', async () => {
    const keys = ['a', 'b/1', 'b/2', 'b/10', 'b/é', 'b0', 'c', 'B'];
    for (const k of keys)
        assert.equal((await put('kv-list', k, '0')).status, 200);
    assert.equal((await put('kv-list', 'b/gone', '0', '?ttl=3600')).status, 200);
    await sql(`UPDATE queen.kv SET expires_at = now() - interval '1 second' WHERE ns = 'kv-list' AND key = 'b/gone'`);

    const all = await list('kv-list');
    assert.equal(all.status, 200, all.raw);
    const bytes = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    assert.deepEqual(all.body.keys.map((x) => x.key), bytes);
    assert.equal(all.body.next, null);
    assert.equal(all.body.bucket, 'kv-list');
    assert.deepEqual(Object.keys(all.body.keys[0]), ['key', 'version', 'expiresAt', 'updatedAt']);

    const pre = await list('kv-list', '?prefix=b%2F');
    assert.deepEqual(pre.body.keys.map((x) => x.key), ['b/1', 'b/10', 'b/2', 'b/é']);

    //  Walk the pages.
    const seen = [];
    let after = '';
    for (let i = 0; i < 10; i++) {
        const page = await list('kv-list', `?limit=3${after ? `&after=${enc(after)}` : ''}`);
        assert.equal(page.status, 200, page.raw);
        assert.ok(page.body.keys.length <= 3);
        seen.push(...page.body.keys.map((x) => x.key));
        if (!page.body.next)
            break;
        assert.equal(page.body.next, page.body.keys.at(-1).key);
        after = page.body.next;
    }
    assert.deepEqual(seen, bytes);
    assert.deepEqual((await list('kv-list', '?prefix=b%2F&after=b%2F10&limit=1')).body,
        { bucket: 'kv-list', keys: [(await list('kv-list', '?prefix=b%2F2')).body.keys[0]], next: 'b/2' });
    assert.deepEqual((await list('kv-empty')).body, { bucket: 'kv-empty', keys: [], next: null });
});

test('kv: bad input gets a 4xx naming the field', async () => {
    const long = 'x'.repeat(256);
    const cases = [
        [await put('kv-bad', long, '1'), 400, /key must be at most 255 bytes/],
        [await put(long, 'k', '1'), 400, /bucket must be at most 255 bytes/],
        [await http(`${b.url}/api/v1/kv/kv-bad/%FF`, { method: 'PUT', body: '1' }), 400, /key must be valid UTF-8/],
        [await http(`${b.url}/api/v1/kv/%C3/k`), 400, /bucket must be valid UTF-8/],
        [await put('kv-bad', 'k', '1', '?ttl=-1'), 400, /ttl must be an integer/],
        [await put('kv-bad', 'k', '1', '?ttl=1.5'), 400, /ttl must be an integer/],
        [await put('kv-bad', 'k', '1', '?ttl=315360001'), 400, /ttl must be an integer between 0 and 315360000/],
        [await put('kv-bad', 'k', '1', '?ifVersion=-1'), 400, /ifVersion must be an integer/],
        [await put('kv-bad', 'k', '1', '?ifVersion=abc'), 400, /ifVersion must be an integer/],
        [await del('kv-bad', 'k', '?ifVersion=x'), 400, /ifVersion must be an integer/],
        [await put('kv-bad', 'k', ''), 400, /Empty request body/],
        [await put('kv-bad', 'k', '{"a":'), 400, /Invalid JSON/],
        [await put('kv-bad', 'k', '1 2'), 400, /Invalid JSON/],
        [await put('kv-bad', 'k', `"${'v'.repeat(1024 * 1024)}"`), 413, /value must be at most 1048576 bytes/],
        [await put('kv-bad', 'k', `"${'v'.repeat(3 * 1024 * 1024)}"`), 413, /value must be at most 1048576 bytes/],
        [await list('kv-bad', '?limit=0'), 400, /limit must be an integer between 1 and 1000/],
        [await list('kv-bad', '?limit=1001'), 400, /limit must be an integer/],
        [await list('kv-bad', `?prefix=${long}`), 400, /prefix must be at most 255 bytes/],
        [await list('kv-bad', '?after=%FF'), 400, /after must be valid UTF-8/],
        [await http(`${b.url}/api/v1/kv/kv-bad/k`, { method: 'POST', body: '1' }), 405, /Method not allowed/],
    ];
    for (const [res, status, re] of cases) {
        assert.equal(res.status, status, res.raw.slice(0, 200));
        assert.match(res.body.error, re);
    }
    //  Exactly 1 MiB is fine; nothing above was written.
    assert.equal((await put('kv-bad', 'big', `"${'v'.repeat(1024 * 1024 - 2)}"`)).status, 200);
    assert.equal(await sql(`SELECT count(*) FROM queen.kv WHERE ns = 'kv-bad'`), '1');
});

test('kv: 16 concurrent CAS writers x 50 increments lose no update', async () => {
    const CLIENTS = 16, EACH = 50;
    assert.equal((await put('kv-race', 'counter', '0')).status, 200);
    let conflicts = 0, attempts = 0;
    const versions = new Set();
    async function client () {
        for (let i = 0; i < EACH; i++) {
            let cur = await get('kv-race', 'counter');
            for (;;) {
                assert.equal(cur.status, 200, cur.raw);
                attempts++;
                const r = await put('kv-race', 'counter', String(cur.body.value + 1), `?ifVersion=${cur.body.version}`);
                if (r.status === 200) {
                    assert.ok(!versions.has(r.body.version), 'each version is won once');
                    versions.add(r.body.version);
                    break;
                }
                assert.equal(r.status, 409, r.raw);
                assert.ok(Number.isInteger(r.body.currentVersion) && r.body.currentVersion > cur.body.version,
                    `409 carries a newer currentVersion: ${r.raw}`);
                conflicts++;
                cur = await get('kv-race', 'counter');
            }
        }
    }
    await Promise.all(Array.from({ length: CLIENTS }, client));
    const end = await get('kv-race', 'counter');
    assert.equal(end.body.value, CLIENTS * EACH, `no lost update (attempts ${attempts}, conflicts ${conflicts})`);
    assert.equal(versions.size, CLIENTS * EACH);
    assert.ok(conflicts > 0, 'the writers did collide');
});
