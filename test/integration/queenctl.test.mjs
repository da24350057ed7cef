//  test/integration/queenctl.test.mjs - queenctl driven like a script
//
//  Runs build*/queenctl against a broker this file starts: through pipes
//  (stdin, stdout not a terminal), checking exit codes, the JSON output
//  (parsed) and that nothing but results reaches stdout (no progress line
//  when stdout is not a terminal). queenctl_tmux.test.mjs drives it like a
//  person, on a terminal.

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN, configureQueue, freePort, pushItems, request, startBroker } from './lib.mjs';

const CTL = path.join(path.dirname(BIN), 'queenctl');
const TMP = process.env.QN_TMP || os.tmpdir();
let broker;
let url;
const P = `qc${process.pid}`;

//  Runs queenctl; resolves to { code, stdout, stderr }.
function ctl (args, { input, env = {}, timeoutMs = 60000, server = true } = {}) {
    return new Promise((resolve, reject) => {
        const full = server ? ['--server', url, ...args] : args;
        const proc = spawn(CTL, full, {
            env: { ...process.env, HOME: TMP, QUEEN_SERVER: '', QUEEN_TOKEN: '', ...env },
            stdio: ['pipe', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        proc.stdout.on('data', (d) => { stdout += d; });
        proc.stderr.on('data', (d) => { stderr += d; });
        const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
        proc.once('error', reject);
        proc.once('close', (code, signal) => {
            clearTimeout(timer);
            resolve({ code, signal, stdout, stderr });
        });
        if (input !== undefined)
            proc.stdin.end(input);
        else
            proc.stdin.end();
    });
}

const show = (r) => `exit ${r.code}\n--- stdout\n${r.stdout.slice(0, 3000)}\n--- stderr\n${r.stderr.slice(0, 3000)}`;
const lines = (s) => s.split('\n').filter((l) => l.length > 0);

before(async () => {
    assert.ok(fs.existsSync(CTL), `${CTL} not built (make)`);
    broker = await startBroker();
    url = broker.url;
});


test('help, usage errors and completion', async () => {
    let r = await ctl(['--help'], { server: false });
    assert.equal(r.code, 0, show(r));
    for (const c of ['status', 'queues', 'push', 'tail', 'ack', 'dlq', 'seek', 'replay', 'lag', 'kv', 'timers', 'maintenance', 'bench'])
        assert.match(r.stdout, new RegExp(`^  ${c} `, 'm'), show(r));
    r = await ctl(['tail', '--help'], { server: false });
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^usage: queenctl tail QUEUE/m, show(r));
    r = await ctl(['help', 'kv'], { server: false });
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /kv get B K/, show(r));
    r = await ctl(['frobnicate']);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /unknown command 'frobnicate'/, show(r));
    r = await ctl(['queues', '--bogus']);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /unknown option --bogus/, show(r));
    r = await ctl(['push']);
    assert.equal(r.code, 2, show(r));
    r = await ctl(['queues', '-o', 'yaml']);
    assert.equal(r.code, 2, show(r));
    r = await ctl(['tail', 'q', '--limit', 'ten']);
    assert.equal(r.code, 2, show(r));
    r = await ctl([]);
    assert.equal(r.code, 2, show(r));
    //  The completion script loads in bash and completes commands
    r = await ctl(['completion', 'bash'], { server: false });
    assert.equal(r.code, 0, show(r));
    const script = path.join(TMP, `queenctl-completion-${process.pid}.bash`);
    fs.writeFileSync(script, r.stdout);
    const b = await new Promise((resolve) => {
        const p = spawn('bash', ['-c', `source ${script}; COMP_WORDS=(queenctl dl); COMP_CWORD=1; _queenctl; echo "\${COMPREPLY[@]}"; ` +
            `COMP_WORDS=(queenctl dlq ''); COMP_CWORD=2; _queenctl; echo "\${COMPREPLY[@]}"`]);
        let out = '';
        p.stdout.on('data', (d) => { out += d; });
        p.once('close', (code) => resolve({ code, out }));
    });
    assert.equal(b.code, 0, b.out);
    assert.deepEqual(lines(b.out)[0].split(' '), ['dlq']);
    assert.match(lines(b.out)[1], /\blist\b.*\brequeue\b.*\bdelete\b.*--queue/);

    //  zsh: the script registers with compsys (compinit's _comps), and its
    //  function offers what the words so far call for (compadd and
    //  _describe, compsys's builtins, replaced by functions that print
    //  their arguments, since they only run inside a completion widget)
    r = await ctl(['completion', 'zsh'], { server: false });
    assert.equal(r.code, 0, show(r));
    const zscript = path.join(TMP, `queenctl-completion-${process.pid}.zsh`);
    fs.writeFileSync(zscript, r.stdout);
    const zsh = (code) => new Promise((resolve) => {
        const p = spawn('/usr/bin/zsh', ['-f', '-c', code]);
        let out = '';
        p.stdout.on('data', (d) => { out += d; });
        p.stderr.on('data', (d) => { out += d; });
        p.once('close', (c) => resolve({ code: c, out }));
    });
    const reg = await zsh(`autoload -U compinit; compinit -u -D; source ${zscript}; print -r -- "$_comps[queenctl]"`);
    assert.equal(reg.code, 0, reg.out);
    assert.equal(reg.out.trim(), '_queenctl');
    const z = await zsh(`compadd () { print -r -- "compadd: $*" }; _describe () { print -r -- "describe: \${(j: :)\${(P@)4}}" }; ` +
        `compdef () { : }; source ${zscript}; ` +
        `words=(queenctl dl); CURRENT=2; _queenctl; ` +
        `words=(queenctl --server http://x:1 dlq ''); CURRENT=5; _queenctl; ` +
        `words=(queenctl push q -o ''); CURRENT=5; _queenctl; ` +
        `words=(queenctl kv ''); CURRENT=3; _queenctl`);
    assert.equal(z.code, 0, z.out);
    const zl = lines(z.out);
    assert.equal(zl.length, 4, z.out);
    assert.match(zl[0], /^describe: .*\bdlq:browse, requeue or delete dead letters\b/);
    for (const c of ['status', 'queues', 'push', 'tail', 'ack', 'seek', 'replay', 'lag', 'kv', 'timers', 'maintenance', 'bench'])
        assert.match(zl[0], new RegExp(`\\b${c}:`), c);
    assert.match(zl[1], /^compadd: -- list requeue delete --queue/);
    assert.equal(zl[2], 'compadd: -- json table');
    assert.match(zl[3], /^compadd: -- get set del list /);
});

test('the manual page renders without groff warnings and lists every command', async () => {
    const r = await ctl(['man'], { server: false });
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^\.TH QUEENCTL 1 /);
    for (const c of ['status', 'queues', 'push', 'tail', 'ack', 'dlq', 'seek', 'replay', 'lag', 'kv', 'timers', 'maintenance', 'bench'])
        assert.match(r.stdout, new RegExp(`^\\.B ${c}\\b`, 'm'), c);
    const g = await new Promise((resolve) => {
        const p = spawn('groff', ['-man', '-Tutf8', '-ww', '-z'], { stdio: ['pipe', 'pipe', 'pipe'] });
        let err = '';
        p.stderr.on('data', (d) => { err += d; });
        p.once('close', (code) => resolve({ code, err }));
        p.stdin.end(r.stdout);
    });
    assert.equal(g.code, 0, g.err);
    assert.equal(g.err, '', g.err);
});

test('a broker that is down: exit 3 and a connection error', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    for (const args of [['status'], ['queues'], ['kv', 'get', 'b', 'k'], ['tail', 'q']]) {
        const r = await ctl(['--server', dead, ...args], { server: false });
        assert.equal(r.code, 3, show(r));
        assert.match(r.stderr, /connection error/, show(r));
        assert.equal(r.stdout, '', show(r));
    }
});

test('status and queues, as tables and JSON', async () => {
    await pushItems(url, [{ queue: `${P}-st`, partition: 'a', payload: { x: 1 } }]);
    let r = await ctl(['status']);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^health +healthy \(database connected\)/m, show(r));
    assert.match(r.stdout, /^maintenance +push off +pop off/m, show(r));
    r = await ctl(['status', '-o', 'json']);
    assert.equal(r.code, 0, show(r));
    const st = JSON.parse(r.stdout);
    assert.equal(st.healthy, true);
    assert.equal(st.server, url);
    assert.ok(st.overview.queues >= 1, r.stdout);
    assert.equal(st.maintenance.maintenanceMode, false);

    r = await ctl(['queues']);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^QUEUE +NAMESPACE +TASK +PARTITIONS/m, show(r));
    assert.match(r.stdout, new RegExp(`^${P}-st +`, 'm'), show(r));
    r = await ctl(['queues', '--output=json']);
    assert.equal(r.code, 0, show(r));
    assert.ok(JSON.parse(r.stdout).queues.some((q) => q.name === `${P}-st`), r.stdout);
    r = await ctl(['queues', `${P}-st`]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^a +1 +1 +0/m, show(r));
    r = await ctl(['queues', `${P}-none`]);
    assert.equal(r.code, 4, show(r));
    assert.match(r.stderr, /Queue not found \(HTTP 404, not found\)/, show(r));
});

test('push NDJSON from a pipe and a file, then tail it back as JSON lines', async () => {
    const q = `${P}-push`;
    const input = Array.from({ length: 250 }, (_, i) => JSON.stringify({ i, s: `m${i}` })).join('\n') + '\n';
    let r = await ctl(['push', q, '--batch', '100', '--partition', 'p1'], { input });
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^pushed 250 messages to .* \(250 queued, 0 duplicate, 0 buffered, 0 failed\)/, show(r));
    assert.equal(r.stderr, '', 'no progress line when stdout is not a terminal');

    //  A file of items with their own partition and transaction id, twice
    const file = path.join(TMP, `queenctl-items-${process.pid}.ndjson`);
    fs.writeFileSync(file, [
        { partition: 'p2', transactionId: 'it-1', payload: { a: 1 } },
        { partition: 'p2', transactionId: 'it-2', payload: 'text' },
        { partition: 'p2', transactionId: 'it-3', payload: [1, 2, 3] },
    ].map((o) => JSON.stringify(o)).join('\n') + '\n');
    r = await ctl(['push', q, '--file', file, '--items', '-o', 'json']);
    assert.equal(r.code, 0, show(r));
    let s = JSON.parse(r.stdout);
    assert.equal(s.pushed, 3);
    assert.equal(s.queued, 3);
    r = await ctl(['push', q, file, '--items', '-o', 'json']);
    assert.equal(r.code, 0, show(r));
    s = JSON.parse(r.stdout);
    assert.equal(s.duplicate, 3, r.stdout);

    //  A line that is not JSON: what came before it is pushed, exit 2
    r = await ctl(['push', `${q}-bad`], { input: '{"ok":1}\n{"ok":2}\nnot json\n{"ok":3}\n' });
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /line 3 is not JSON/, show(r));
    assert.match(r.stdout, /^pushed 2 messages/, show(r));

    //  tail without -f: drains and exits; --limit
    r = await ctl(['tail', q, '--partition', 'p1', '--limit', '5']);
    assert.equal(r.code, 0, show(r));
    let msgs = lines(r.stdout).map((l) => JSON.parse(l));
    assert.equal(msgs.length, 5);
    assert.deepEqual(msgs.map((m) => m.data.i), [0, 1, 2, 3, 4]);
    assert.equal(msgs[0].queue, q);
    assert.equal(msgs[0].partition, 'p1');
    assert.ok(msgs[0].transactionId && msgs[0].partitionId && msgs[0].id, r.stdout);
    r = await ctl(['tail', q, '--batch', '50']);
    assert.equal(r.code, 0, show(r));
    msgs = lines(r.stdout).map((l) => JSON.parse(l));
    assert.equal(msgs.length, 248, 'the rest of p1 (245) and p2 (3)');
    assert.deepEqual(msgs.filter((m) => m.partition === 'p2').map((m) => m.data), [{ a: 1 }, 'text', [1, 2, 3]]);
    assert.deepEqual(msgs.filter((m) => m.partition === 'p1').map((m) => m.data.i),
        Array.from({ length: 245 }, (_, i) => i + 5));
    //  Acked: nothing left
    r = await ctl(['tail', q]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stdout, '');
});

test('consumer groups: tail --group, lag, replay and seek', async () => {
    const q = `${P}-grp`;
    await pushItems(url, Array.from({ length: 20 }, (_, i) => ({ queue: q, partition: 'p', payload: { i } })));
    let r = await ctl(['tail', q, '--group', 'g1', '--from', 'all', '--limit', '15']);
    assert.equal(r.code, 0, show(r));
    let msgs = lines(r.stdout).map((l) => JSON.parse(l));
    assert.equal(msgs.length, 15);
    assert.equal(msgs[0].consumerGroup, 'g1');

    r = await ctl(['lag', '--group', 'g1', '-o', 'json']);
    assert.equal(r.code, 0, show(r));
    const lag = JSON.parse(r.stdout);
    const row = lag.find((g) => g.queueName === q);
    assert.ok(row, r.stdout);
    assert.equal(row.offsetLag, 5, r.stdout);
    r = await ctl(['lag', '--queue', q]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^GROUP +QUEUE +PARTITIONS +LAGGING +OFFSET_LAG/m, show(r));
    assert.match(r.stdout, new RegExp(`^g1 +${q} +1 +\\S+ +5 `, 'm'), show(r));

    //  replay: from the beginning, everything again
    r = await ctl(['replay', 'g1', q]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /1 partition\(s\) updated/, show(r));
    r = await ctl(['tail', q, '--group', 'g1']);
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(lines(r.stdout).map((l) => JSON.parse(l).data.i), Array.from({ length: 20 }, (_, i) => i));

    //  seek one partition to an offset: the 11th message is next
    r = await ctl(['seek', 'g1', q, '--partition', 'p', '--offset', String(msgs[10].id), '-o', 'json']);
    assert.equal(r.code, 0, show(r));
    assert.equal(JSON.parse(r.stdout).success, true);
    r = await ctl(['tail', q, '--group', 'g1']);
    assert.deepEqual(lines(r.stdout).map((l) => JSON.parse(l).data.i), Array.from({ length: 10 }, (_, i) => i + 10), show(r));

    //  seek to the end after a replay: nothing
    r = await ctl(['replay', 'g1', q, '--since', '2000-01-01T00:00:00Z']);
    assert.equal(r.code, 0, show(r));
    r = await ctl(['seek', 'g1', q, '--to-end']);
    assert.equal(r.code, 0, show(r));
    r = await ctl(['tail', q, '--group', 'g1']);
    assert.equal(r.stdout, '', show(r));
    r = await ctl(['seek', 'g1', q]);
    assert.equal(r.code, 2, show(r));
    r = await ctl(['seek', 'g1', `${P}-nope`, '--to-end']);
    assert.equal(r.code, 4, show(r));
});

test('ack --failed, then dlq list, requeue and delete', async () => {
    const q = `${P}-dlq`;
    await configureQueue(url, q, { retryLimit: 0 });
    await pushItems(url, [{ queue: q, partition: 'p', transactionId: 'd-1', payload: { d: 1 } },
                          { queue: q, partition: 'p', transactionId: 'd-2', payload: { d: 2 } }]);
    let r = await ctl(['tail', q, '--no-ack', '--limit', '1']);
    assert.equal(r.code, 0, show(r));
    const m = JSON.parse(r.stdout);
    r = await ctl(['ack', m.transactionId, '--partition-id', m.partitionId, '--lease', m.leaseId,
                   '--failed', '--error', 'boom']);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^acked d-1 \(failed\)/, show(r));
    //  A second ack with that lease is refused: exit 1 with the broker's reason
    r = await ctl(['ack', m.transactionId, '--partition-id', m.partitionId, '--lease', m.leaseId]);
    assert.equal(r.code, 1, show(r));
    assert.match(r.stderr, /refused/, show(r));
    r = await ctl(['ack', 'x']);
    assert.equal(r.code, 2, show(r));

    r = await ctl(['dlq', 'list', '--queue', q, '-o', 'json']);
    assert.equal(r.code, 0, show(r));
    const dl = JSON.parse(r.stdout);
    assert.equal(dl.total, 1, r.stdout);
    assert.equal(dl.messages[0].transactionId, 'd-1');
    assert.equal(dl.messages[0].errorMessage, 'boom');
    r = await ctl(['dlq', '--queue', q]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^DLQ_ID +QUEUE +PARTITION +GROUP +TRANSACTION +FAILED_AT +ERROR/m, show(r));
    assert.match(r.stdout, /d-1 .* boom$/m, show(r));
    assert.match(r.stdout, /^total 1$/m, show(r));

    r = await ctl(['dlq', 'requeue', '--queue', q]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^requeued 1 dead letter/, show(r));
    r = await ctl(['tail', q]);
    const back = lines(r.stdout).map((l) => JSON.parse(l));
    assert.deepEqual(back.map((x) => x.data.d).sort(), [1, 2], r.stdout);
    assert.ok(back.some((x) => x.transactionId.startsWith('d-1:requeue:')), r.stdout);

    //  Dead-letter again, then delete
    await pushItems(url, [{ queue: q, partition: 'p', transactionId: 'd-3', payload: { d: 3 } }]);
    r = await ctl(['tail', q, '--no-ack', '--limit', '1']);
    const m3 = JSON.parse(r.stdout);
    r = await ctl(['ack', 'd-3', '--partition-id', m3.partitionId, '--lease', m3.leaseId, '--failed']);
    assert.equal(r.code, 0, show(r));
    r = await ctl(['dlq', 'delete', '--queue', q, '-o', 'json']);
    assert.equal(r.code, 0, show(r));
    assert.equal(JSON.parse(r.stdout).deleted, 1);
    r = await ctl(['dlq', 'list', '--queue', q, '-o', 'json']);
    assert.equal(JSON.parse(r.stdout).total, 0);
    r = await ctl(['dlq', 'requeue']);
    assert.equal(r.code, 2, show(r));
});

test('kv get, set, del, list with exit codes', async () => {
    const b = `${P}-kv`;
    let r = await ctl(['kv', 'set', b, 'user/1', '{"n": 1}']);
    assert.equal(r.code, 0, show(r));
    const version = Number(r.stdout.match(/version (\d+)/)[1]);
    r = await ctl(['kv', 'get', b, 'user/1']);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stdout, '{"n": 1}\n');
    r = await ctl(['kv', 'set', b, 'user/2', '-o', 'json'], { input: '[1,2]' });
    assert.equal(r.code, 0, show(r));
    assert.ok(JSON.parse(r.stdout).version > version);
    r = await ctl(['kv', 'get', b, 'user/2', '-o', 'json']);
    assert.deepEqual(JSON.parse(r.stdout).value, [1, 2]);
    r = await ctl(['kv', 'set', b, 'user/1', '2', '--if-version', String(version + 1000)]);
    assert.equal(r.code, 5, show(r));
    assert.match(r.stderr, /version conflict \(HTTP 409/, show(r));
    r = await ctl(['kv', 'list', b, '--prefix', 'user/']);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^KEY +VERSION/m);
    assert.match(r.stdout, /^user\/1 /m);
    assert.match(r.stdout, /^user\/2 /m);
    r = await ctl(['kv', 'del', b, 'user/1', '--if-version', String(version)]);
    assert.equal(r.code, 0, show(r));
    r = await ctl(['kv', 'get', b, 'user/1']);
    assert.equal(r.code, 4, show(r));
    assert.match(r.stderr, /key not found/, show(r));
    r = await ctl(['kv', 'set', b, 'k', '{bad']);
    assert.equal(r.code, 1, show(r));
    assert.match(r.stderr, /Invalid JSON: .*HTTP 400/, show(r));
    r = await ctl(['kv', 'frob', b]);
    assert.equal(r.code, 2, show(r));
});

test('timers add, list, get, cancel', async () => {
    const q = `${P}-tm`;
    const id = `${P}-t1`;
    let r = await ctl(['timers', 'add', '--queue', q, '--payload', '{"k":1}', '--delay-ms', '3600000', '--id', id]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, new RegExp(`^timer ${id} scheduled`), show(r));
    r = await ctl(['timers', 'add', '--queue', q, '--payload', '{"k":1}', '--delay-ms', '3600000', '--id', id, '-o', 'json']);
    assert.equal(JSON.parse(r.stdout).created, false, show(r));
    r = await ctl(['timers', '--queue', q]);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, new RegExp(`^${id} +${q} +Default `, 'm'), show(r));
    r = await ctl(['timers', 'get', id]);
    assert.equal(r.code, 0, show(r));
    assert.equal(JSON.parse(r.stdout).status, 'pending');
    r = await ctl(['timers', 'cancel', id]);
    assert.equal(r.code, 0, show(r));
    r = await ctl(['timers', 'cancel', id]);
    assert.equal(r.code, 4, show(r));
    r = await ctl(['timers', 'add', '--queue', q]);
    assert.equal(r.code, 2, show(r));
});

test('maintenance on and off, push and pop', async () => {
    let r = await ctl(['maintenance', 'on', '-o', 'json']);
    assert.equal(r.code, 0, show(r));
    assert.equal(JSON.parse(r.stdout).maintenanceMode, true);
    r = await ctl(['push', `${P}-mt`, '-o', 'json'], { input: '{"m":1}\n' });
    assert.equal(r.code, 0, show(r));
    assert.equal(JSON.parse(r.stdout).buffered, 1, r.stdout);
    r = await ctl(['maintenance']);
    assert.match(r.stdout, /^push maintenance: on$/m, show(r));
    r = await ctl(['maintenance', 'off']);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /^push maintenance: off$/m, show(r));
    r = await ctl(['maintenance', 'on', '--pop']);
    assert.match(r.stdout, /^pop maintenance: on$/m, show(r));
    r = await ctl(['maintenance', 'off', '--pop']);
    assert.match(r.stdout, /^pop maintenance: off$/m, show(r));
    r = await ctl(['maintenance', 'sideways']);
    assert.equal(r.code, 2, show(r));
});

test('bench: push then pop+ack, JSON result, queue removed', async () => {
    const q = `${P}-bench`;
    const r = await ctl(['bench', '--messages', '600', '--batch', '100', '--queue', q, '-o', 'json']);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stderr, '');
    const s = JSON.parse(r.stdout);
    assert.equal(s.pushed, 600);
    assert.equal(s.popped, 600);
    assert.ok(s.pushRate > 0 && s.popRate > 0, r.stdout);
    await request(url, `/api/v1/resources/queues/${q}`, { expect: 404 });
});

test('server and token from flags, environment and config file contexts', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const cfg = path.join(TMP, `queenctl-config-${process.pid}`);
    fs.writeFileSync(cfg, `# queenctl contexts\ncurrent-context = down\n\n[context down]\nserver = ${dead}\n\n` +
                          `[context up]\nserver = ${url}\ntoken = secret-token\n`);
    let r = await ctl(['queues', '--config', cfg], { server: false });
    assert.equal(r.code, 3, show(r));
    r = await ctl(['queues', '--config', cfg, '--context', 'up'], { server: false });
    assert.equal(r.code, 0, show(r));
    r = await ctl(['config', '-o', 'json'], { server: false, env: { QUEENCTL_CONFIG: cfg, QUEENCTL_CONTEXT: 'up' } });
    assert.equal(r.code, 0, show(r));
    assert.deepEqual(JSON.parse(r.stdout), { server: url, context: 'up', token: 'config', config: cfg });
    //  The environment beats the file, a flag beats the environment
    r = await ctl(['config', '-o', 'json'], { server: false, env: { QUEENCTL_CONFIG: cfg, QUEEN_SERVER: url, QUEEN_TOKEN: 't' } });
    assert.deepEqual(JSON.parse(r.stdout), { server: url, context: 'down', token: 'QUEEN_TOKEN', config: cfg });
    r = await ctl(['status', '--server', url], { server: false, env: { QUEENCTL_CONFIG: cfg } });
    assert.equal(r.code, 0, show(r));
    r = await ctl(['status', '--config', cfg, '--context', 'nowhere'], { server: false });
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /context 'nowhere' not found/, show(r));
});

test('the broker stops cleanly', async () => {
    assert.equal(await broker.stop(), 0, 'broker exit status');
});
