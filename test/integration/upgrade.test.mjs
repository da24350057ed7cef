//  test/integration/upgrade.test.mjs - a schema that upgrades (issue 10 §5;
//  docs/storage.md "Upgrades"). A database made by the previous release
//  (test/fixtures/schema-v1: its schema files, applied the way its broker
//  did, recorded by name in queen.schema_version) and filled with messages,
//  consumer groups, kv and timers is opened by this build: it is recognised
//  (baseline, nothing re-created), every function is this build's, nothing is
//  lost, and the contract flows (push, pop, ack, transaction) work on it.
//  A database at a newer migration, or with an edited migration, is refused
//  with one clear line; the function set is re-installed only when it
//  changed; brokers booting together on an old database baseline it once.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
    ROOT, PG_HOST, PG_PORT, createDatabase, psql, http, startBroker, warmUp, popPath, pushItems,
} from './lib.mjs';

const execFileP = promisify(execFile);
const FIXTURE = path.join(ROOT, 'test/fixtures/schema-v1');
//  Migrations newer than the previous release's schema (0003): an upgrade
//  applies exactly these, never a baselined one.
const NEWER = fs.readdirSync(path.join(ROOT, 'schema/migrations'))
    .filter((f) => /^\d{4}_.*\.sql$/.test(f) && Number(f.slice(0, 4)) > 3).sort();

//  Applies the previous release's schema the way its kernel/schema.c did:
//  each file in name order, in one transaction under the schema lock, then
//  recorded by name in queen.schema_version.
//  `without`: files left out (a database of an even older release).
async function createOldDatabase (prefix, without = []) {
    const db = await createDatabase(prefix);
    const all = fs.readdirSync(FIXTURE).filter((f) => f.endsWith('.sql')).sort();
    assert.ok(all.length >= 6, 'the fixture holds the previous release\'s schema files');
    const files = all.filter((f) => !without.includes(f));
    for (const name of files) {
        const script = path.join(process.env.QN_TMP || '/tmp', `${db}-${name}`);
        fs.writeFileSync(script, [
            'SET client_min_messages = warning;',
            'BEGIN;',
            'SELECT pg_advisory_xact_lock(7193553170000001);',
            fs.readFileSync(path.join(FIXTURE, name), 'utf8'),
            ';',
            'CREATE TABLE IF NOT EXISTS queen.schema_version (file text COLLATE "C" PRIMARY KEY,'
                + ' applied_at timestamptz NOT NULL DEFAULT now());',
            `INSERT INTO queen.schema_version (file) VALUES ('${name}');`,
            'COMMIT;',
        ].join('\n'));
        await execFileP('psql', ['-X', '-q', '-o', '/dev/null', '-v', 'ON_ERROR_STOP=1', '-h', PG_HOST,
            '-p', String(PG_PORT), '-U', 'postgres', '-d', db, '-f', script], { timeout: 60000 });
        fs.unlinkSync(script);
    }
    return db;
}

//  Fills an old database through the previous release's own functions.
async function fillOldDatabase (db) {
    const sql = (text) => psql(text, { db });
    await sql(`SELECT queen.configure('', 'up-q', NULL, NULL, '{"leaseTime": 60}')`);
    const pushed = await sql(`SELECT count(*) FROM queen.push('',
        array_fill('up-q'::text, ARRAY[5]), array_fill('p1'::text, ARRAY[5]),
        ARRAY['u-0', 'u-1', 'u-2', 'u-3', 'u-4'],
        (SELECT array_agg(convert_to(format('{"n":%s}', i), 'UTF8') ORDER BY i) FROM generate_series(0, 4) i),
        array_fill(NULL::uuid, ARRAY[5]), array_fill(NULL::text, ARRAY[5]), array_fill(false, ARRAY[5]), false)`);
    assert.equal(pushed, '5');
    //  Group g1 (named, from the beginning) consumed n=0,1; the queue mode n=0.
    assert.equal(await sql(`SELECT count(*) FROM queen.pop('', 'up-q', NULL, 'g1', NULL, NULL, 2, 1,
        gen_random_uuid(), true) WHERE seq IS NOT NULL`), '2');
    assert.equal(await sql(`SELECT count(*) FROM queen.pop('', 'up-q', NULL, NULL, NULL, NULL, 1, 1,
        gen_random_uuid(), true) WHERE seq IS NOT NULL`), '1');
    assert.equal(await sql(`SELECT status FROM queen.kv_put('', 'up-b', 'k1', convert_to('{"v":1}', 'UTF8'), NULL, NULL)`), 'ok');
    assert.equal(await sql(`SELECT status FROM queen.timer_create('', 'up-t1', 'up-timed', 'Default',
        convert_to('{"t":1}', 'UTF8'), 'up-t1-txn', true, NULL, 3600000)`), 'created');
}

//  Everything a client could lose, as one JSON text.
const STATE = `SELECT json_build_object(
    'queues', (SELECT json_agg(json_build_object('name', name, 'lease', lease_time) ORDER BY name) FROM queen.queues),
    'partitions', (SELECT json_agg(json_build_object('id', id, 'name', name) ORDER BY id) FROM queen.partitions),
    'messages', (SELECT json_agg(json_build_object('seq', seq, 'p', partition_id, 'txn', txn_id,
                  'payload', convert_from(payload, 'UTF8'), 'at', created_at) ORDER BY seq) FROM queen.messages),
    'groups', (SELECT json_agg(json_build_object('id', id, 'name', name, 'start', start_seq) ORDER BY id) FROM queen.consumer_groups),
    'ready', (SELECT json_agg(json_build_object('p', partition_id, 'g', group_id, 'acked', acked_seq) ORDER BY partition_id, group_id) FROM queen.ready),
    'cursors', (SELECT json_agg(json_build_object('p', partition_id, 'g', group_id, 'acked', acked_seq) ORDER BY partition_id, group_id) FROM queen.cursors),
    'kv', (SELECT json_agg(json_build_object('ns', ns, 'key', key, 'value', convert_from(value, 'UTF8'), 'version', version) ORDER BY ns, key) FROM queen.kv),
    'timers', (SELECT json_agg(json_build_object('id', timer_id, 'due', due_at, 'fired', fired_at) ORDER BY timer_id) FROM queen.timers),
    'seq', (SELECT last_value FROM queen.msg_seq))::text`;

//  Every routine of the broker's schemas with a digest of its full definition.
const FUNCTIONS = `SELECT string_agg(p.oid::regprocedure::text || ' ' || md5(pg_get_functiondef(p.oid)), E'\\n'
    ORDER BY p.oid::regprocedure::text)
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname IN ('queen', 'queen_streams')`;

const count = (text, re) => (text.match(re) || []).length;

test('a database of the previous release: recognised, new functions, nothing lost, contract flows pass', async () => {
    //  The reference: what this build installs on an empty database.
    const fresh = await startBroker();
    const want = await psql(FUNCTIONS, { db: fresh.db });
    const wantSum = await psql('SELECT checksum FROM queen.schema_functions', { db: fresh.db });
    assert.equal(await fresh.stop(), 0);
    assert.match(want, /^queen\.pop\(/m);

    const db = await createOldDatabase('upgrade');
    await fillOldDatabase(db);
    const before = await psql(STATE, { db });
    assert.notEqual(await psql(FUNCTIONS, { db }), want, 'the old set differs from the new one');

    const b = await startBroker({ db });
    try {
        const logs = b.logs();
        assert.equal(count(logs, /schema baseline: file=\S+ is migration=/g), 3, logs);
        assert.match(logs, /schema baseline: file=001_catalog\.sql is migration=0001_catalog\.sql/);
        assert.equal(count(logs, /schema applied: file=/g), NEWER.length, 'no table re-created: only newer migrations');
        for (const f of NEWER)
            assert.ok(logs.includes(`schema applied: file=${f}`), f);
        assert.equal(count(logs, /schema functions installed: /g), 1);
        assert.match(logs, new RegExp(`files_applied=${NEWER.length}\\b`));
        //  Nothing lost: the state is what the old release left.
        assert.equal(await psql(STATE, { db }), before);
        //  Every function is this build's, and nothing of the old set is left.
        assert.equal(await psql(FUNCTIONS, { db }), want);
        assert.equal(await psql('SELECT checksum FROM queen.schema_functions', { db }), wantSum);
        assert.equal(await psql(`SELECT string_agg(version || ':' || name || ':' || baseline, ',' ORDER BY version)
            FROM queen.schema_migrations`, { db }),
        '1:0001_catalog.sql:001_catalog.sql,2:0002_state.sql:030_state.sql,3:0003_streams.sql:040_streams.sql');
        //  A broker of the previous release reads queen.schema_version at
        //  boot: that fails now, so it refuses this database.
        await assert.rejects(psql('SELECT file FROM queen.schema_version', { db }),
            /upgraded by migrations \(queen\.schema_migrations\)/);

        //  The contract flows on the upgraded database.
        await warmUp(b.url);
        const g1 = await popPath(b.url, 'up-q', '&consumerGroup=g1&batch=10');
        assert.deepEqual(g1.map((m) => m.data.n), [2, 3, 4], 'g1 resumes after its cursor');
        assert.deepEqual(g1.map((m) => m.transactionId), ['u-2', 'u-3', 'u-4']);
        const acked = await http(`${b.url}/api/v1/ack/batch`, {
            method: 'POST',
            body: { consumerGroup: 'g1', acknowledgments: g1.map((m) => ({
                transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed',
            })) },
        });
        assert.equal(acked.status, 200, acked.raw);
        assert.deepEqual(acked.body.map((r) => r.success), [true, true, true], acked.raw);
        assert.deepEqual(await popPath(b.url, 'up-q', '&consumerGroup=g1'), []);

        const qm = await popPath(b.url, 'up-q', '&batch=10');
        assert.deepEqual(qm.map((m) => m.data.n), [1, 2, 3, 4], 'the queue mode resumes after its cursor');
        const txn = await http(`${b.url}/api/v1/transaction`, {
            method: 'POST',
            body: { operations: [
                { type: 'push', items: [{ queue: 'up-out', payload: { moved: 4 } }] },
                ...qm.map((m) => ({ type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId })),
            ], requiredLeases: [qm[0].leaseId] },
        });
        assert.equal(txn.status, 200, txn.raw);
        assert.equal(txn.body.success, true, txn.raw);
        assert.deepEqual(txn.body.results.map((r) => [r.type, r.success]),
            [['push', true], ['ack', true], ['ack', true], ['ack', true], ['ack', true]]);
        assert.deepEqual(await popPath(b.url, 'up-q'), []);
        assert.deepEqual((await popPath(b.url, 'up-out')).map((m) => m.data), [{ moved: 4 }]);

        await pushItems(b.url, [{ queue: 'up-q', partition: 'p1', payload: { n: 5 }, transactionId: 'u-5' }], { queued: true });
        const [m5] = await popPath(b.url, 'up-q');
        assert.equal(m5.data.n, 5);
        const ack5 = await http(`${b.url}/api/v1/ack`, {
            method: 'POST',
            body: { transactionId: m5.transactionId, partitionId: m5.partitionId, leaseId: m5.leaseId, status: 'completed' },
        });
        assert.equal(ack5.status, 200, ack5.raw);
        assert.equal(ack5.body[0].success, true, ack5.raw);

        //  kv and timers written by the old release read back through the API.
        const kv = await http(`${b.url}/api/v1/kv/up-b/k1`);
        assert.equal(kv.status, 200, kv.raw);
        assert.deepEqual(kv.body.value, { v: 1 });
        assert.equal(String(kv.body.version), JSON.parse(before).kv[0].version.toString());
        const timer = await http(`${b.url}/api/v1/timers/up-t1`);
        assert.equal(timer.status, 200, timer.raw);
        assert.equal(timer.body.status, 'pending');
        assert.deepEqual(timer.body.payload, { t: 1 });
        assert.ok(Math.abs(new Date(timer.body.fireAt).getTime() - new Date(JSON.parse(before).timers[0].due).getTime()) <= 1,
            timer.raw);

        //  A restart finds everything in place: nothing applied, nothing installed.
        assert.equal(await b.stop(), 0);
        const again = await startBroker({ db });
        assert.match(again.logs(), /files_applied=0/);
        assert.equal(count(again.logs(), /schema (baseline|applied|functions installed)/g), 0, again.logs());
        assert.equal(await again.stop(), 0);
    } finally {
        await b.stop();
    }
});

test('a database at a newer migration: this build refuses with one clear line and changes nothing', async () => {
    const b = await startBroker();
    const db = b.db;
    assert.equal(await b.stop(), 0);
    await psql(`INSERT INTO queen.schema_migrations (version, name, checksum) VALUES (9999, '9999_future.sql', 'f')`, { db });
    await psql(`UPDATE queen.schema_functions SET version = 9999, checksum = 'future'`, { db });
    const installed = await psql('SELECT installed_at FROM queen.schema_functions', { db });
    await assert.rejects(startBroker({ db }), (err) => {
        assert.match(err.message, /exited with status 1/);
        assert.match(err.message, /schema not applied: database schema is at migration 9999 \(9999_future\.sql\), newer than this build knows \(\d+\): refusing to start/);
        return true;
    });
    assert.equal(await psql('SELECT checksum || installed_at FROM queen.schema_functions', { db }), `future${installed}`);
});

test('a migration edited after it was applied is a boot error', async () => {
    const b = await startBroker();
    const db = b.db;
    assert.equal(await b.stop(), 0);
    await psql(`UPDATE queen.schema_migrations SET checksum = 'edited' WHERE version = 1`, { db });
    await assert.rejects(startBroker({ db }),
        /schema not applied: migration 0001_catalog\.sql was edited after it was applied \(recorded checksum edited, this build's [0-9a-f]{12}\)/);
});

test('the function set is re-installed when its checksum differs, and only then', async () => {
    const b = await startBroker();
    const db = b.db;
    assert.equal(count(b.logs(), /schema functions installed: files=\d+ checksum=[0-9a-f]{12} previous=none/g), 1, b.logs());
    assert.equal(await b.stop(), 0);
    const sum = await psql('SELECT checksum FROM queen.schema_functions', { db });
    //  Another build's bodies (one replaced by hand here) with another checksum.
    await psql(`CREATE OR REPLACE FUNCTION queen.uuid_of(kind int, id bigint) RETURNS uuid
        LANGUAGE sql IMMUTABLE AS $$ SELECT NULL::uuid $$`, { db });
    await psql(`UPDATE queen.schema_functions SET checksum = 'older'`, { db });
    const c = await startBroker({ db });
    assert.match(c.logs(), /schema functions installed: files=\d+ checksum=[0-9a-f]{12} previous=older/);
    assert.equal(await psql('SELECT checksum FROM queen.schema_functions', { db }), sum);
    assert.equal(await psql('SELECT queen.uuid_of(1, 5)', { db }), '00000001-0000-8000-8000-000000000005');
    assert.equal(await c.stop(), 0);
    const d = await startBroker({ db });
    assert.equal(count(d.logs(), /schema functions installed/g), 0, d.logs());
    assert.equal(await d.stop(), 0);
});

test('a database of an older release (no streams yet): baseline of what it has, the newer migrations applied', async () => {
    const db = await createOldDatabase('upgrade3', ['040_streams.sql']);
    assert.equal(await psql(`SELECT to_regclass('queen_streams.queries') IS NULL`, { db }), 't');
    const b = await startBroker({ db });
    try {
        const logs = b.logs();
        assert.equal(count(logs, /schema baseline: file=/g), 2, logs);
        assert.equal(count(logs, /schema applied: file=/g), 1 + NEWER.length, logs);
        assert.match(logs, /schema applied: file=0003_streams\.sql/);
        assert.match(logs, new RegExp(`files_applied=${1 + NEWER.length}\\b`));
        assert.equal(await psql(`SELECT string_agg(version || ':' || coalesce(baseline, '-'), ',' ORDER BY version)
            FROM queen.schema_migrations`, { db }),
            ['1:001_catalog.sql', '2:030_state.sql', '3:-', ...NEWER.map((f) => `${Number(f.slice(0, 4))}:-`)].join(','));
        assert.equal(await psql(`SELECT to_regclass('queen_streams.queries') IS NOT NULL`, { db }), 't');
    } finally {
        await b.stop();
    }
});

test('two brokers booting together on a database of the previous release: one baseline, both serve', async () => {
    const db = await createOldDatabase('upgrade2');
    const [a, b] = await Promise.all([startBroker({ db }), startBroker({ db })]);
    try {
        assert.equal((await http(`${a.url}/health`)).status, 200);
        assert.equal((await http(`${b.url}/health`)).status, 200);
        const logs = a.logs() + b.logs();
        assert.equal(count(logs, /schema baseline: file=/g), 3, logs);
        assert.equal(count(logs, /schema functions installed: /g), 1, logs);
        assert.equal(await psql('SELECT count(*) FROM queen.schema_migrations', { db }), String(3 + NEWER.length));
    } finally {
        await a.stop();
        await b.stop();
    }
});
