//  test/integration/prometheus.test.mjs - GET /metrics/prometheus after
//  real traffic: promtool accepts it (format and lint), the families an
//  operator needs are there with the values the traffic made, the queue
//  label is capped, and a real Prometheus server scraping the broker every
//  second answers a query for the broker's series.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import {
    startBroker, settle, http, configureQueue, pushItems, popMessages, ack, ackFor, transaction,
    freePort, waitFor, sleep,
} from './lib.mjs';

const PROMTOOL = '/usr/bin/promtool';
const PROMETHEUS = '/usr/bin/prometheus';

let broker, url;

before(async () => {
    //  A cap of 3 queues per family: the fourth and fifth count as _other.
    broker = await startBroker({ env: { METRICS_QUEUE_SERIES: '3' } });
    url = broker.url;
    await settle(url);
});

after(async () => {
    await broker?.stop();
});

async function scrape () {
    const res = await http(`${url}/metrics/prometheus`);
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/);
    return res.raw;
}

//  The value of one sample line (exact name and labels), or undefined.
function sample (text, series) {
    for (const line of text.split('\n')) {
        if (line.startsWith(series + ' '))
            return Number(line.slice(series.length + 1));
    }
    return undefined;
}

function promtoolCheck (text) {
    const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test('after real traffic the exposition is promtool-clean and counts what happened', async () => {
    await configureQueue(url, 'pm.a', { retryLimit: 0, retryDelay: 0 });
    await pushItems(url, Array.from({ length: 20 }, (_, i) => ({ queue: 'pm.a', payload: { i } })), { queued: true });
    const got = await popMessages(url, 'pm.a', { batch: 5 });
    assert.equal(got.length, 5);
    for (const m of got.slice(0, 4))
        await ack(url, ackFor(m, { status: 'completed' }), { success: true });
    const dead = await ack(url, ackFor(got[4], { status: 'failed', error: 'boom' }), { success: true });
    assert.equal(dead.dlq, true);
    //  A push inside a transaction bundle counts too.
    assert.equal((await transaction(url, [{ type: 'push', items: [{ queue: 'pm.a', payload: 'in a txn' }] }])).success, true);
    //  Acks inside a bundle count as acked / failed / dead-lettered like
    //  plain acks, whatever their place among the bundle's operations: a
    //  push first, then completed, failed (retryLimit 0: dead-lettered),
    //  completed.
    const more = await popMessages(url, 'pm.a', { batch: 3 });
    assert.equal(more.length, 3);
    const bundle = await transaction(url, [
        { type: 'push', items: [{ queue: 'pm.a', payload: 'bundle push' }] },
        { type: 'ack', ...ackFor(more[0], { status: 'completed' }) },
        { type: 'ack', ...ackFor(more[1], { status: 'failed', error: 'bundle boom' }) },
        { type: 'ack', ...ackFor(more[2], { status: 'completed' }) },
    ]);
    assert.equal(bundle.success, true, JSON.stringify(bundle));
    //  A long-poll that times out empty: parked, then expired.
    const empty = await http(`${url}/api/v1/pop/queue/pm.empty?wait=true&timeout=300`);
    assert.equal(empty.status, 204);
    //  Five more queues than... the cap is 3: pm.a plus two get their own series.
    for (const q of ['pm.b', 'pm.c', 'pm.d', 'pm.e'])
        await pushItems(url, [{ queue: q, payload: 1 }], { queued: true });
    await http(`${url}/api/v1/nothing-here`);

    const text = await scrape();
    const check = promtoolCheck(text);
    assert.equal(check.status, 0, `promtool check metrics:\n${check.out}\n--- exposition ---\n${text}`);
    assert.equal(check.out.trim(), '', check.out);

    //  Every family has HELP and TYPE, before its samples, once.
    const families = new Map();
    for (const line of text.split('\n')) {
        const m = /^# (HELP|TYPE) (\S+)/.exec(line);
        if (m) {
            const f = families.get(m[2]) ?? {};
            assert.ok(!f[m[1]], `${m[1]} twice for ${m[2]}`);
            f[m[1]] = true;
            families.set(m[2], f);
        } else if (line) {
            const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)[0];
            const base = families.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
            assert.ok(families.get(base)?.HELP && families.get(base)?.TYPE, `no HELP/TYPE before ${line}`);
        }
    }

    //  Process
    for (const f of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'process_start_time_seconds',
        'process_open_fds', 'queen_uptime_seconds'])
        assert.ok(sample(text, f) > 0, `${f} > 0`);
    assert.ok(Math.abs(sample(text, 'process_start_time_seconds') - Date.now() / 1000) < 600);

    //  Messaging by queue, capped
    //  20 + 1 + 1 pushed (two in bundles), 5 + 3 popped, 4 + 2 acked
    //  (two in the bundle), 1 + 1 failed and dead-lettered (one in it)
    assert.equal(sample(text, 'queen_messages_pushed_total{queue="pm.a"}'), 22);
    assert.equal(sample(text, 'queen_messages_popped_total{queue="pm.a"}'), 8);
    assert.equal(sample(text, 'queen_messages_acked_total{queue="pm.a"}'), 6);
    assert.equal(sample(text, 'queen_messages_failed_total{queue="pm.a"}'), 2);
    assert.equal(sample(text, 'queen_messages_dead_lettered_total{queue="pm.a"}'), 2);
    const pushedSeries = text.split('\n').filter((l) => l.startsWith('queen_messages_pushed_total{'));
    //  settle's probe queue, pm.a, pm.b are the 3; pm.c..pm.e are _other
    assert.equal(pushedSeries.length, 4, pushedSeries.join('\n'));
    assert.equal(sample(text, 'queen_messages_pushed_total{queue="_other"}'), 3);

    //  HTTP by route and status, latency histogram in seconds
    assert.equal(sample(text, 'queen_http_responses_total{route="/api/v1/pop/queue/:queue",method="GET",code="204"}'), 1);
    assert.ok(sample(text, 'queen_http_responses_total{route="/api/v1/push",method="POST",code="201"}') >= 5);
    assert.equal(sample(text, 'queen_http_responses_total{route="(unmatched)",method="GET",code="404"}'), 1);
    const popCount = sample(text, 'queen_http_request_duration_seconds_count{route="/api/v1/pop/queue/:queue",method="GET"}');
    assert.ok(popCount >= 2);
    assert.equal(sample(text, 'queen_http_request_duration_seconds_bucket{route="/api/v1/pop/queue/:queue",method="GET",le="+Inf"}'), popCount);
    //  The long-poll waited 300 ms: at least one pop took more than 0.25 s.
    assert.ok(sample(text, 'queen_http_request_duration_seconds_bucket{route="/api/v1/pop/queue/:queue",method="GET",le="0.25"}') < popCount);
    assert.ok(sample(text, 'queen_http_request_duration_seconds_sum{route="/api/v1/pop/queue/:queue",method="GET"}') >= 0.3);

    //  Long-poll, database pool, spool, timers
    assert.ok(sample(text, 'queen_pop_parked_total') >= 1);
    assert.ok(sample(text, 'queen_pop_expired_total') >= 1);
    assert.equal(sample(text, 'queen_parked_pops'), 0);
    assert.ok(sample(text, 'queen_db_pool_connections{pool="pg_writer"}') >= 1);
    assert.ok(sample(text, 'queen_db_pool_busy{pool="pg_writer"}') >= 0);
    assert.ok(sample(text, 'queen_db_pool_waiting{pool="pg_writer"}') >= 0);
    assert.ok(sample(text, 'queen_db_errors_total{pool="pg_writer"}') >= 0);
    assert.equal(sample(text, 'queen_spool_pending'), 0);
    assert.equal(sample(text, 'queen_maintenance_push'), 0);
    assert.ok(sample(text, 'queen_timers_armed') >= 0);
    //  No counter without _total, no unit other than base units
    for (const [name] of families) {
        assert.doesNotMatch(name, /_(ms|us|microseconds|milliseconds)(_|$)/, name);
    }
    //  The JSON /metrics still answers
    const j = await http(`${url}/metrics`);
    assert.equal(j.status, 200);
    assert.ok(j.body.messages.total >= 25);
});

test('a real Prometheus server scrapes the broker every second and answers queries for its series', async () => {
    const dir = fs.mkdtempSync(path.join(process.env.QN_TMP || os.tmpdir(), 'prom-'));
    const port = await freePort();
    const target = new URL(url).host;
    fs.writeFileSync(path.join(dir, 'prometheus.yml'), [
        'global:',
        '  scrape_interval: 1s',
        '  scrape_timeout: 1s',
        'scrape_configs:',
        '  - job_name: queen',
        '    metrics_path: /metrics/prometheus',
        '    static_configs:',
        `      - targets: ['${target}']`,
        '',
    ].join('\n'));
    const check = spawnSync(PROMTOOL, ['check', 'config', path.join(dir, 'prometheus.yml')], { encoding: 'utf8' });
    assert.equal(check.status, 0, check.stdout + check.stderr);
    let log = '';
    const prom = spawn(PROMETHEUS, [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    prom.stdout.on('data', (d) => { log += d; });
    prom.stderr.on('data', (d) => { log += d; });
    const exited = new Promise((resolve) => prom.on('exit', resolve));
    try {
        await pushItems(url, [{ queue: 'pm.a', payload: 'scraped' }], { queued: true });
        const api = `http://127.0.0.1:${port}/api/v1`;
        const query = async (q) => {
            const res = await http(`${api}/query?query=${encodeURIComponent(q)}`, { timeoutMs: 5000 });
            return res.status === 200 && res.body.status === 'success' ? res.body.data.result : [];
        };
        //  The target is up ...
        await waitFor(async () => {
            try {
                return (await query('up{job="queen"}')).some((r) => r.value[1] === '1');
            } catch {
                return false;
            }
        }, 60000, 500);
        //  ... and its series are stored, with their labels and values.
        let pushed = [];
        await waitFor(async () => {
            pushed = await query('queen_messages_pushed_total{queue="pm.a"}');
            return pushed.length === 1 && Number(pushed[0].value[1]) >= 22;
        }, 30000, 500);
        assert.equal(pushed[0].metric.job, 'queen');
        assert.equal(pushed[0].metric.instance, target);
        const hist = await query('sum(queen_http_request_duration_seconds_count)');
        assert.equal(hist.length, 1);
        assert.ok(Number(hist[0].value[1]) > 0);
        const rss = await query('process_resident_memory_bytes{job="queen"}');
        assert.equal(rss.length, 1);
        assert.ok(Number(rss[0].value[1]) > 1e6);
        //  No scrape failed on the format: the target's last error is empty.
        const targets = await http(`${api}/targets`);
        const t = targets.body.data.activeTargets.find((x) => x.labels.job === 'queen');
        assert.equal(t.health, 'up', JSON.stringify(t));
        assert.equal(t.lastError, '');
    } catch (e) {
        e.message += `\n--- prometheus log ---\n${log.slice(-4000)}`;
        throw e;
    } finally {
        prom.kill('SIGTERM');
        await Promise.race([exited, sleep(10000)]);
        if (prom.exitCode === null)
            prom.kill('SIGKILL');
        fs.rmSync(dir, { recursive: true, force: true });
    }
});
