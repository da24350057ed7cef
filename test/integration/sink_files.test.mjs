//  test/integration/sink_files.test.mjs - the sink's file writers read back
//  by DuckDB. build/test/sink-files (test/tools/sink_files.c) writes files
//  with wire/parquet.c and wire/sink_format.c; DuckDB (@duckdb/node-api)
//  reads them and every value is checked against the formula that made it.
//  Needs no broker and no PostgreSQL.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { BIN } from './lib.mjs';

const TOOL = path.join(path.dirname(BIN), 'test', 'sink-files');
const ROWS = 2500;

const dir = fs.mkdtempSync(path.join(process.env.QN_TMP || os.tmpdir(), 'sink-files-'));
execFileSync(TOOL, [dir]);

const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();

async function rows (sql) {
    const reader = await conn.runAndReadAll(sql);
    return reader.getRowObjectsJson();
}

//  The formulas of test/tools/sink_files.c, row r.
function expected (r) {
    return {
        b: r % 3 === 0 ? null : r % 2 === 0,
        i32: r * 7 - 5000,
        i64: String(BigInt(r) * 1000000007n),
        d: r % 5 === 4 ? null : r / 4 - 100,
        s: `k${r % 10}`,
        u: `row-${String(r).padStart(5, '0')}`,
        j: `{"r":${r},"t":"x\\"y"}`,
        ts: 1700000000000 + r * 1000,
        n: (r < 1000 || r % 2) ? null : String(-r),
        e: r % 7 === 0 ? null : (r % 2 ? '' : 'été'),
    };
}

for (const codec of ['none', 'snappy', 'zstd', 'gzip']) {
    test(`parquet ${codec}: every row and every column type read back by DuckDB`, async () => {
        const file = path.join(dir, `types_${codec}.parquet`);
        const got = await rows(`SELECT b, i32, i64, d, s, u, j::VARCHAR AS j,
                epoch_ms(ts) AS ts, n, e FROM read_parquet('${file}') ORDER BY u`);
        assert.equal(got.length, ROWS);
        for (let r = 0; r < ROWS; r++) {
            const g = got[r];
            const e = expected(r);
            assert.deepEqual({ ...g, ts: Number(g.ts) }, e, `row ${r}`);
        }
        const types = await rows(`DESCRIBE SELECT * FROM read_parquet('${file}')`);
        assert.deepEqual(types.map((t) => `${t.column_name}:${t.column_type}`), [
            'b:BOOLEAN', 'i32:INTEGER', 'i64:BIGINT', 'd:DOUBLE', 's:VARCHAR', 'u:VARCHAR',
            'j:JSON', 'ts:TIMESTAMP WITH TIME ZONE', 'n:BIGINT', 'e:VARCHAR']);
        const [json] = await rows(`SELECT sum((j->>'r')::INT) AS s, count(*) FILTER (WHERE j->>'t' = 'x"y') AS t
                FROM read_parquet('${file}')`);
        assert.equal(Number(json.s), ROWS * (ROWS - 1) / 2);
        assert.equal(Number(json.t), ROWS);
    });

    test(`parquet ${codec}: row groups, encodings, compression and statistics`, async () => {
        const file = path.join(dir, `types_${codec}.parquet`);
        const meta = await rows(`SELECT row_group_id AS g, row_group_num_rows AS n, path_in_schema AS c,
                encodings, compression, stats_min_value AS min, stats_max_value AS max,
                stats_null_count AS nulls FROM parquet_metadata('${file}') ORDER BY g, column_id`);
        assert.equal(meta.length, 3 * 10);
        const name = { none: 'UNCOMPRESSED', snappy: 'SNAPPY', zstd: 'ZSTD', gzip: 'GZIP' }[codec];
        for (const m of meta)
            assert.equal(m.compression, name);
        const at = (g, c) => meta.find((m) => Number(m.g) === g && m.c === c);
        assert.deepEqual([0, 1, 2].map((g) => Number(at(g, 'u').n)), [1000, 1000, 500]);
        //  Low-cardinality strings get a dictionary; unique ones and the
        //  column that refuses one stay PLAIN.
        assert.match(at(0, 's').encodings, /RLE_DICTIONARY/);
        assert.doesNotMatch(at(0, 'u').encodings, /DICTIONARY/);
        assert.doesNotMatch(at(0, 'e').encodings, /DICTIONARY/);
        //  Statistics per row group.
        assert.equal(at(0, 'i32').min, '-5000');
        assert.equal(at(0, 'i32').max, '1993');
        assert.equal(at(2, 'i32').min, '9000');
        assert.equal(at(2, 'i32').max, '12493');
        assert.equal(at(1, 'i64').min, '1000000007000');
        assert.equal(at(0, 'd').min, '-100.0');
        assert.equal(at(0, 'd').max, '149.5');
        assert.equal(Number(at(0, 'd').nulls), 200);
        assert.equal(at(1, 's').min, 'k0');
        assert.equal(at(1, 's').max, 'k9');
        assert.equal(at(2, 'u').min, 'row-02000');
        assert.equal(at(2, 'u').max, 'row-02499');
        assert.equal(at(0, 'b').min, 'false');
        assert.equal(at(0, 'b').max, 'true');
        assert.equal(Number(at(0, 'b').nulls), 334);
        assert.equal(Number(at(0, 'n').nulls), 1000);
        assert.equal(at(0, 'n').min, null);
        assert.equal(at(2, 'n').min, '-2498');
        assert.equal(at(2, 'n').max, '-2000');
        assert.equal(at(0, 'e').min, '');
        assert.equal(at(0, 'e').max, 'été');
        //  A filter DuckDB can answer from statistics gives the right rows.
        const [f] = await rows(`SELECT count(*) AS c FROM read_parquet('${file}') WHERE i32 > 10000`);
        assert.equal(Number(f.c), ROWS - Math.floor(15000 / 7) - 1);
    });
}

test('parquet: the same rows give the same bytes, compressed files are smaller', () => {
    const again = fs.mkdtempSync(path.join(dir, 'again-'));
    execFileSync(TOOL, [again]);
    for (const codec of ['none', 'snappy', 'zstd', 'gzip']) {
        const a = fs.readFileSync(path.join(dir, `types_${codec}.parquet`));
        const b = fs.readFileSync(path.join(again, `types_${codec}.parquet`));
        assert.ok(a.equals(b), codec);
        assert.equal(a.subarray(0, 4).toString(), 'PAR1');
        assert.equal(a.subarray(a.length - 4).toString(), 'PAR1');
    }
    const size = (c) => fs.statSync(path.join(dir, `types_${c}.parquet`)).size;
    assert.ok(size('snappy') < size('none'));
    assert.ok(size('zstd') < size('snappy'));
});

//  The lake of test/tools/sink_files.c: 300 messages r = 0..299, created at
//  2025-12-01T18:58:00.000123Z + r s, queue "orders" for r < 150 and
//  "a b" after, 1-minute windows in parts of at most 25 records.
const LAKE = 300;
const lakeGlob = (variant, ext) => `'${dir}/lake/${variant}/**/*.${ext}'`;

function checkLake (got) {
    assert.equal(got.length, LAKE);
    for (let r = 0; r < LAKE; r++) {
        const g = got[r];
        const created = new Date(Date.UTC(2025, 11, 1, 18, 58, 0) + r * 1000);
        assert.equal(g.message_id, `m-${String(r).padStart(5, '0')}`);
        assert.equal(g.transaction_id, `t-${r}`);
        assert.equal(g.partition, `p${r % 13}`);
        assert.equal(g.created_at_us, String(BigInt(created.getTime()) * 1000n + 123n));
        assert.equal(g.trace_id, r % 5 ? `0190f3c2-aaaa-7000-8000-${String(r).padStart(12, '0')}` : null);
        assert.equal(g.queue, r < 150 ? 'orders' : 'a b');
        assert.equal(g.dt, '2025-12-01');
        assert.equal(Number(g.hour), created.getUTCHours());
        assert.equal(Number(g.r), r);
    }
}

for (const variant of ['parquet-snappy', 'parquet-zstd']) {
    test(`lake ${variant}: DuckDB reads the Hive layout, every message once, field columns typed`, async () => {
        const src = `read_parquet(${lakeGlob(variant, 'parquet')}, hive_partitioning = true)`;
        const got = await rows(`SELECT message_id, transaction_id, partition, epoch_us(created_at) AS created_at_us,
                trace_id, queue, dt::VARCHAR AS dt, hour, (payload->>'r')::INT AS r,
                amount, user_id, n, ok, epoch_ms("at") AS at_ms, tags::VARCHAR AS tags
                FROM ${src} ORDER BY message_id`);
        checkLake(got);
        for (let r = 0; r < LAKE; r++) {
            const g = got[r];
            if (r % 11 === 0) {
                //  "amount" is a string there: null in a double column;
                //  the other members are missing.
                assert.deepEqual([g.amount, g.user_id, g.n, g.ok, g.at_ms, g.tags], [null, null, null, null, null, null]);
                continue;
            }
            assert.equal(g.amount, r + 0.5);
            assert.equal(g.user_id, `u${r % 7}`);
            assert.equal(g.n, String(r));
            assert.equal(g.ok, r % 2 === 0);
            assert.equal(Number(g.at_ms), 1764615480000 + r);
            assert.equal(g.tags, `[${r}]`);
        }
        //  One object per (queue, window, part): 25 records at most, parts
        //  numbered from 0 without gaps.
        const files = await rows(`SELECT filename AS f, count(*) AS c FROM
                read_parquet(${lakeGlob(variant, 'parquet')}, filename = true) GROUP BY f ORDER BY f`);
        assert.equal(files.length, 16);
        for (const f of files)
            assert.ok(Number(f.c) <= 25 && Number(f.c) > 0);
        const names = files.map((f) => f.f.slice(f.f.indexOf('/lake/') + 6 + variant.length + 1)).sort();
        assert.ok(names.includes('queue=orders/dt=2025-12-01/hour=18/part-20251201T185800Z-00002.parquet'));
        assert.ok(names.includes('queue=a%20b/dt=2025-12-01/hour=19/part-20251201T190000Z-00001.parquet'));
        assert.ok(!names.includes('queue=a%20b/dt=2025-12-01/hour=19/part-20251201T190000Z-00002.parquet'));
    });
}

for (const [variant, ext] of [['jsonl', 'jsonl'], ['jsonl-gz', 'jsonl.gz']]) {
    test(`lake ${variant}: DuckDB reads the Hive layout, every message once`, async () => {
        const src = `read_json(${lakeGlob(variant, ext)}, hive_partitioning = true, format = 'newline_delimited',
                columns = {message_id: 'VARCHAR', transaction_id: 'VARCHAR', partition: 'VARCHAR',
                           created_at: 'TIMESTAMPTZ', trace_id: 'VARCHAR', payload: 'JSON'})`;
        const got = await rows(`SELECT message_id, transaction_id, partition, epoch_us(created_at) AS created_at_us,
                trace_id, queue, dt::VARCHAR AS dt, hour, (payload->>'r')::INT AS r FROM ${src} ORDER BY message_id`);
        checkLake(got);
    });
}

test('lake: gzipped JSONL and Parquet are smaller than plain JSONL', () => {
    const total = (variant) => {
        let n = 0;
        const walk = (d) => {
            for (const e of fs.readdirSync(d, { withFileTypes: true })) {
                if (e.isDirectory())
                    walk(path.join(d, e.name));
                else
                    n += fs.statSync(path.join(d, e.name)).size;
            }
        };
        walk(path.join(dir, 'lake', variant));
        return n;
    };
    assert.ok(total('jsonl-gz') < total('jsonl'));
    assert.ok(total('parquet-zstd') < total('jsonl'));
});
