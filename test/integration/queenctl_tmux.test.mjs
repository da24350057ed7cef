//  test/integration/queenctl_tmux.test.mjs - queenctl driven like a person
//
//  Types queenctl commands into a shell inside a private tmux server
//  (send-keys), reads the screen (capture-pane) while they run and after,
//  against a broker this file starts: the progress bar of a push from a
//  file, bench's live line, tail -f waiting, printing messages pushed
//  meanwhile and stopping on Ctrl-C, and no live line when stdout is a pipe.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN, pushItems, sleep, startBroker } from './lib.mjs';

const CTL = path.resolve(path.dirname(BIN), 'queenctl');
const TMP = process.env.QN_TMP || os.tmpdir();
const SOCK = `queenctl-test-${process.pid}`;
let broker;
let url;

function tmux (...args) {
    return execFileSync('tmux', ['-L', SOCK, ...args], { encoding: 'utf8' });
}

function screen () {
    return tmux('capture-pane', '-p', '-J', '-t', 'main');
}

//  Types a command line and Enter.
function type (line) {
    tmux('send-keys', '-t', 'main', '-l', line);
    tmux('send-keys', '-t', 'main', 'Enter');
}

//  Polls the screen every 40 ms until every regex of `until` matched the
//  final screen; records which of `watch` were ever seen on the way.
async function watchScreen ({ until, watch = [], timeoutMs = 60000 }) {
    const seen = watch.map(() => null);
    const t0 = Date.now();
    let s = '';
    for (;;) {
        s = screen();
        watch.forEach((re, i) => {
            const m = s.match(re);
            if (m && !seen[i])
                seen[i] = m[0];
        });
        if (until.every((re) => re.test(s)))
            return { screen: s, seen };
        if (Date.now() - t0 > timeoutMs)
            throw new Error(`screen never matched ${until.map(String).join(', ')}:\n${s}`);
        await sleep(40);
    }
}

//  Clears the screen and waits until it is blank, so nothing of the
//  previous command can match.
let marker = 0;
async function clear () {
    type('clear');
    await watchScreen({ until: [/^\S*[$#] *\n\s*$/] , timeoutMs: 10000 });
    marker++;
}
//  The exit status line of the current command, as typed and as printed.
const exitEcho = () => `echo EXIT${marker}=$?`;
const exitRe = () => new RegExp(`EXIT${marker}=(\\d+)`);

before(async () => {
    assert.ok(fs.existsSync(CTL), `${CTL} not built (make)`);
    broker = await startBroker();
    url = broker.url;
    tmux('new-session', '-d', '-s', 'main', '-x', '200', '-y', '50',
         '-e', 'PS1=$ ', '-e', `HOME=${TMP}`, 'bash --norc --noprofile');
    await sleep(300);
});

after(() => {
    try {
        execFileSync('tmux', ['-L', SOCK, 'kill-server'], { stdio: 'ignore' });
    } catch {
        //  Already stopped by the last test
    }
});

test('push from a file on a terminal: a progress bar with rate, then the summary', async () => {
    const file = path.join(TMP, `tmux-push-${process.pid}.ndjson`);
    fs.writeFileSync(file, Array.from({ length: 1500 }, (_, i) => JSON.stringify({ i })).join('\n') + '\n');
    await clear();
    type(`${CTL} --server ${url} push tm-push ${file} --batch 5; ${exitEcho()}`);
    const bar = /push tm-push \[#*-*\] +(\d+)% +(\d+) msgs +(\d+) msg\/s/;
    const r = await watchScreen({ until: [exitRe()], watch: [bar] });
    assert.ok(r.seen[0], `no progress bar seen; final screen:\n${r.screen}`);
    const [, pct, , rate] = r.seen[0].match(bar);
    assert.ok(Number(pct) < 100 && Number(rate) >= 0, r.seen[0]);
    assert.equal(r.screen.match(exitRe())[1], '0', r.screen);
    assert.match(r.screen, /^pushed 1500 messages to tm-push \(1500 queued, 0 duplicate, 0 buffered, 0 failed\) in [\d.]+ s, \d+ msg\/s$/m, r.screen);
    //  The bar was erased: the summary is alone on its line
    assert.doesNotMatch(r.screen, bar, r.screen);
});

test('the same push piped into cat: no live line on the screen', async () => {
    const file = path.join(TMP, `tmux-push-${process.pid}.ndjson`);
    await clear();
    type(`${CTL} --server ${url} push tm-pipe ${file} --batch 5 | cat; ${exitEcho()}`);
    const r = await watchScreen({ until: [exitRe()], watch: [/msgs +\d+ msg\/s/, /\[#+-*\]/] });
    assert.deepEqual(r.seen, [null, null], r.screen);
    assert.match(r.screen, /^pushed 1500 messages to tm-pipe/m, r.screen);
    assert.equal(r.screen.match(exitRe())[1], '0', r.screen);
});

test('bench on a terminal: a live line for push and pop, then both rates', async () => {
    await clear();
    type(`${CTL} --server ${url} bench --messages 1000 --batch 5 --queue tm-bench; ${exitEcho()}`);
    const r = await watchScreen({
        until: [exitRe()],
        watch: [/bench push \[[#-]+\] \d+\/1000 +\d+ msg\/s/, /bench pop\+ack \[[#-]+\] \d+\/1000 +\d+ msg\/s/],
    });
    assert.ok(r.seen[0], `no push live line; final screen:\n${r.screen}`);
    assert.ok(r.seen[1], `no pop live line; final screen:\n${r.screen}`);
    assert.match(r.screen, /^bench tm-bench: pushed 1000 in [\d.]+ s \(\d+ msg\/s\), popped\+acked 1000 in [\d.]+ s \(\d+ msg\/s\)$/m, r.screen);
    assert.equal(r.screen.match(exitRe())[1], '0', r.screen);
});

test('tail -f: waits, prints messages pushed meanwhile, stops on Ctrl-C', async () => {
    await clear();
    type(`${CTL} --server ${url} tail tm-tail -f --group ops --from all; ${exitEcho()}`);
    await watchScreen({ until: [/tail tm-tail group ops: 0 messages, waiting\.\.\. \(Ctrl-C to stop\)/] });
    await pushItems(url, [1, 2, 3].map((n) => ({ queue: 'tm-tail', partition: 'p', payload: { n } })));
    const r = await watchScreen({ until: [/"data":\{"n":3\}/, /tail tm-tail group ops: 3 messages, waiting/] });
    const printed = r.screen.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    assert.deepEqual(printed.map((m) => m.data.n), [1, 2, 3], r.screen);
    assert.equal(printed[0].consumerGroup, 'ops');
    tmux('send-keys', '-t', 'main', 'C-c');
    const end = await watchScreen({ until: [exitRe()] });
    assert.equal(end.screen.match(exitRe())[1], '0', end.screen);
    assert.doesNotMatch(end.screen, /waiting\.\.\./, 'the live line is erased on exit');
});

test('the tmux server and the broker stop', async () => {
    tmux('kill-server');
    assert.equal(await broker.stop(), 0, 'broker exit status');
});
