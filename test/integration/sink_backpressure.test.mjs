//  test/integration/sink_backpressure.test.mjs - every answer of queen-sink's
//  own HTTP port arrives, in order
//
//  The shape of backpressure.test.mjs, for the sink's port (sink_acceptor
//  and sink_http): many connections write many pipelined requests and do
//  not read at first; once they read, every answer must arrive, in order.
//  ACTOR_QUEUE_HWM shrinks every actor queue, so sink_http meets the door's
//  high-water mark and must hold its answers and send them when the door
//  drains. An answer dropped there leaves its client waiting for ever
//  (issue 25: sink_http dropped it). Requests alternate GET /nope/<i>
//  (404) and GET /metrics (200), so each status also tells whether it
//  answers the request in its place.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { BIN, freePort, startBroker, sleep, waitFor } from './lib.mjs';
import { pipelined, httpStatuses, tally } from './pipeline_lib.mjs';
import { startBucket } from './s3_fixture.mjs';

const SINK = path.join(path.dirname(BIN), 'queen-sink');
let broker;
let s3;
let sink;

async function startSink (env) {
    const port = await freePort();
    const proc = spawn(SINK, [], {
        env: { ...process.env, ...s3.env, QUEEN_URL: broker.url, SINK_PORT: String(port),
               SINK_QUEUES: 'sinkbp', SINK_WINDOW: '2s', LOG_LEVEL: 'warn', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    proc.stdout.on('data', (c) => { output += c; });
    proc.stderr.on('data', (c) => { output += c; });
    let gone = false;
    proc.once('close', () => { gone = true; });
    const s = { proc, port, url: `http://127.0.0.1:${port}`, logs: () => output };
    await waitFor(async () => {
        if (gone)
            throw new Error(`queen-sink exited:\n${output}`);
        const r = await fetch(`${s.url}/health`).catch(() => null);
        return r && (r.status === 200 || r.status === 503);
    }, 20000);
    return s;
}

before(async () => {
    broker = await startBroker();
    s3 = await startBucket();
    sink = await startSink({ ACTOR_QUEUE_HWM: '16' });
});

after(async () => {
    if (sink)
        sink.proc.kill('SIGKILL');
    if (s3)
        await s3.stop();
    if (broker)
        await broker.stop();
});

const KINDS = [
    { req: (i) => `GET /nope/${i} HTTP/1.1\r\nHost: t\r\n\r\n`, status: 404 },
    { req: (i) => `GET /metrics?i=${i} HTTP/1.1\r\nHost: t\r\n\r\n`, status: 200 },
];

//  Writes `count` pipelined requests on one connection, reads after
//  pauseMs; resolves to the statuses read, in order.
function requests (port, count, pauseMs, idleMs) {
    const all = Array.from({ length: count }, (_, i) => KINDS[i % KINDS.length].req(i));
    return pipelined(port, all, httpStatuses, { pauseMs, idleMs });
}

test('queen-sink port: 50 connections x 200 pipelined requests, small actor queues: answers held, all arrive in order',
     { timeout: 240000 }, async () => {
    const conns = 50, perConn = 200;
    const results = await Promise.all(
        Array.from({ length: conns }, () => requests(sink.port, perConn, 300, 30000)));
    assert.equal(results.length, conns);
    const { missing, misplaced } = tally(results, perConn, (i) => KINDS[i % KINDS.length].status);
    assert.equal(missing, 0, `${missing} of ${conns * perConn} answers never arrived;`
                 + ` sink log tail:\n${sink.logs().slice(-2000)}`);
    assert.equal(misplaced, 0, `${misplaced} answers out of order`);
    for (const statuses of results)
        assert.equal(statuses.length, perConn);
    //  Still answering, and the load met the door's mark.
    await sleep(100);
    assert.deepEqual(await requests(sink.port, 2, 0, 10000), [404, 200]);
    const metrics = await (await fetch(`${sink.url}/metrics`)).text();
    const held = /^queen_sink_http_responses_held (\d+)$/m.exec(metrics);
    assert.ok(held && Number(held[1]) > 0, `no answer was held:\n${metrics}`);
});
