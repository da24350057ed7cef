//  test/integration/verify.test.mjs - the end-to-end verifier in CI
//
//  Runs build*/queen-verify (the directory of QN_BIN) against real brokers:
//  a pipeline run against a broker this file starts, which must report
//  0 duplicates, 0 gaps and 0 order violations and exit 0; and a --chaos
//  run in which the verifier starts the broker itself and SIGKILLs and
//  restarts it while the pipeline runs, which must report 0 gaps, 0 order
//  violations and no unexplained duplicates (redeliveries after a kill are
//  counted separately, as explained). Sizes are scaled for the 2-core
//  machine and the sanitizer build (docs/verify.md, "In CI").
//  Also: a reused queue prefix is caught (exit 1), bad flags exit 2.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN, PG_HOST, PG_PORT, createDatabase, startBroker } from './lib.mjs';

const VERIFY = path.join(path.dirname(BIN), 'queen-verify');
const TMP = process.env.QN_TMP || os.tmpdir();

//  Overridable, e.g. QN_VERIFY_MESSAGES=20000 for a quick local run.
const MESSAGES = Number(process.env.QN_VERIFY_MESSAGES || 200000);
const CHAOS_MESSAGES = Number(process.env.QN_VERIFY_CHAOS_MESSAGES || 20000);

//  Runs the verifier; resolves to { code, stdout, stderr, summary } where
//  summary holds the key=value pairs of the last line ("verify: ...").
function runVerify (args, timeoutMs) {
    return new Promise((resolve, reject) => {
        const proc = spawn(VERIFY, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        proc.stdout.on('data', (d) => { stdout += d; });
        proc.stderr.on('data', (d) => { stderr += d; });
        const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
        proc.once('error', reject);
        proc.once('close', (code, signal) => {
            clearTimeout(timer);
            const lines = stdout.trim().split('\n');
            const last = lines[lines.length - 1] || '';
            const summary = {};
            if (last.startsWith('verify: ')) {
                for (const pair of last.slice(8).split(' ')) {
                    const [k, v] = pair.split('=');
                    summary[k] = Number.isNaN(Number(v)) ? v : Number(v);
                }
            }
            resolve({ code: code ?? 128, signal, stdout, stderr, summary, last });
        });
    });
}

function explain (r, extra = '') {
    return `exit ${r.code}${r.signal ? ` (${r.signal})` : ''}\n--- stdout\n${r.stdout}\n` +
           `--- stderr\n${r.stderr.slice(-4000)}${extra}`;
}

test('queen-verify binary exists', () => {
    assert.ok(fs.existsSync(VERIFY), `${VERIFY} not built (make)`);
});

test('pipeline run: 4 stages x 200 partitions, nothing lost, duplicated or reordered', async () => {
    const broker = await startBroker();
    try {
        const r = await runVerify([
            '--url', broker.url, '--stages', '4', '--partitions', '200',
            '--messages', String(MESSAGES), '--batch', '100', '--consumers', '3',
            '--payload-bytes', '256', '--drain-timeout', '180', '--seed', '11',
        ], 330000);
        const s = r.summary;
        assert.equal(r.code, 0, explain(r));
        assert.equal(s.messages, MESSAGES, explain(r));
        assert.equal(s.duplicates, 0, explain(r));
        assert.equal(s.gaps, 0, explain(r));
        assert.equal(s.order_violations, 0, explain(r));
        assert.equal(s.corrupt, 0, explain(r));
        assert.ok(s['msg/s'] > 0, explain(r));
        //  One table row per stage (push, 3 moves, check) before the summary
        assert.match(r.stdout, /^4 +check +/m, explain(r));
        console.log(`  ${r.last}`);
    } finally {
        assert.equal(await broker.stop(), 0, 'broker exit status');
    }
});

test('chaos run: broker SIGKILLed and restarted, 0 gaps, 0 order violations, duplicates explained', async () => {
    const db = await createDatabase('verify_chaos');
    const log = path.join(TMP, `verify-chaos-${process.pid}.log`);
    const r = await runVerify([
        '--broker-bin', BIN, '--pg-host', PG_HOST, '--pg-port', String(PG_PORT), '--pg-db', db,
        '--broker-log', log, '--chaos', '--chaos-interval', '2:4', '--chaos-kills', '5',
        '--stages', '4', '--partitions', '100', '--messages', String(CHAOS_MESSAGES),
        '--batch', '50', '--consumers', '2', '--rate', '1500', '--lease-seconds', '3',
        '--drain-timeout', '120', '--seed', '7',
    ], 200000);
    const tail = fs.existsSync(log) ? `\n--- broker log (tail)\n${fs.readFileSync(log, 'utf8').slice(-3000)}` : '';
    const s = r.summary;
    assert.equal(r.code, 0, explain(r, tail));
    assert.ok(s.kills >= 1, `expected at least one kill\n${explain(r, tail)}`);
    assert.equal(s.crashes, 0, explain(r, tail));
    assert.equal(s.gaps, 0, explain(r, tail));
    assert.equal(s.order_violations, 0, explain(r, tail));
    //  Every duplicate is explained: redeliveries of messages whose ack was
    //  never confirmed are counted apart (explained_duplicates), and the
    //  report says why when there are any.
    assert.equal(s.duplicates, 0, explain(r, tail));
    assert.equal(s.messages, CHAOS_MESSAGES, explain(r, tail));
    assert.equal(typeof s.explained_duplicates, 'number', explain(r, tail));
    if (s.explained_duplicates > 0 || s.redelivered > 0)
        assert.match(r.stdout, /^explained: \d+ redeliveries/m, explain(r, tail));
    console.log(`  ${r.last}`);
    fs.rmSync(log, { force: true });
});

test('a reused queue prefix is reported as duplicates (exit 1)', async () => {
    const broker = await startBroker();
    try {
        const args = ['--url', broker.url, '--stages', '2', '--partitions', '5', '--messages', '50',
                      '--queue-prefix', 'vf-reused', '--drain-timeout', '3', '--quiet'];
        const first = await runVerify(args, 60000);
        assert.equal(first.code, 0, explain(first));
        const second = await runVerify(args, 60000);
        assert.equal(second.code, 1, explain(second));
        assert.equal(second.summary.duplicates, 50, explain(second));
        assert.equal(second.summary.gaps, 50, explain(second));
        assert.match(second.stderr, /answered duplicate on its first attempt/, explain(second));
    } finally {
        await broker.stop();
    }
});

test('bad flags exit 2 naming the flag', async () => {
    for (const [args, re] of [
        [['--stages', '0'], /--stages/],
        [['--batch', 'abc'], /--batch/],
        [['--nope'], /unknown flag '--nope'/],
        [['--chaos'], /--chaos needs --broker-bin/],
        [['--queue-prefix', 'a b'], /--queue-prefix/],
        [['--url', 'http://127.0.0.1:1', '--messages', '1'], /not healthy/],
    ]) {
        const r = await runVerify(args, 30000);
        assert.equal(r.code, 2, `${args.join(' ')}: ${explain(r)}`);
        assert.match(r.stderr, re, `${args.join(' ')}: ${explain(r)}`);
    }
    const help = await runVerify(['--help'], 10000);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--chaos-interval/);
});
