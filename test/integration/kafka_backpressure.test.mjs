//  test/integration/kafka_backpressure.test.mjs - every Kafka answer arrives, in order
//
//  The shape of backpressure.test.mjs, for the Kafka door: clients write
//  many pipelined requests over raw sockets and stop reading while their
//  requests keep coming; once they read again every answer must arrive, in
//  order. The door keeps at most 64 requests of a connection at the codec,
//  so many busy connections put more answers in flight than the door's
//  inbox holds (ACTOR_QUEUE_HWM shrinks every actor queue): the codec meets
//  the door's high-water mark and must hold its answers and send them, in
//  order, when the door drains. An answer dropped there leaves its client
//  waiting for ever (issue 25: the Kafka codec dropped it).
//
//  Requests are ApiVersions (answered without the database) with
//  correlation ids 0, 1, 2, ...: each answer's correlation id tells whether
//  it answers the request in its place.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, freePort } from './lib.mjs';
import { pipelined, kafkaCorrelations, tally } from './pipeline_lib.mjs';

//  ApiVersions v0 with correlation id corr (header v1, client id "t").
function apiVersions (corr) {
    const payload = Buffer.alloc(11);
    payload.writeInt16BE(18, 0);
    payload.writeInt16BE(0, 2);
    payload.writeInt32BE(corr, 4);
    payload.writeInt16BE(1, 8);
    payload.write('t', 10);
    const size = Buffer.alloc(4);
    size.writeInt32BE(payload.length, 0);
    return Buffer.concat([size, payload]);
}

//  Writes `count` pipelined requests on one connection without reading for
//  `pauseMs`, then reads. Resolves to the correlation ids of the answers,
//  in order, once all arrived or nothing arrived for idleMs.
function requests (port, count, pauseMs, idleMs) {
    const all = Array.from({ length: count }, (_, i) => apiVersions(i));
    return pipelined(port, all, kafkaCorrelations, { pauseMs, idleMs });
}

async function run (conns, perConn, pauseMs, env) {
    const kport = await freePort();
    const broker = await startBroker({ env: { KAFKA_PORT: String(kport), ...env } });
    try {
        const started = Date.now();
        const results = await Promise.all(
            Array.from({ length: conns }, () => requests(kport, perConn, pauseMs, 30000)));
        const ms = Date.now() - started;
        assert.equal(results.length, conns);
        const { missing, misplaced } = tally(results, perConn, (i) => i);
        assert.equal(missing, 0, `${missing} of ${conns * perConn} answers never arrived`
                     + ` (${ms} ms); broker log tail:\n${broker.logs().slice(-2000)}`);
        assert.equal(misplaced, 0, `${misplaced} answers out of order`);
        for (const corrs of results)
            assert.equal(corrs.length, perConn);
        //  The door still answers.
        const again = await requests(kport, 3, 0, 10000);
        assert.deepEqual(again, [0, 1, 2]);
        return broker;
    } catch (e) {
        await broker.stop();
        throw e;
    }
}

//  Queues of 16 messages: the codec meets the door's mark, so answers must
//  be held and sent later (counted by kafka_responses_held).
test('Kafka: 50 connections x 400 pipelined requests, clients not reading at first, small actor queues: answers held, all arrive in order',
     { timeout: 240000 }, async () => {
    const broker = await run(50, 400, 500, { ACTOR_QUEUE_HWM: '16' });
    try {
        const prom = await (await fetch(`${broker.url}/metrics/prometheus`)).text();
        const held = /^queen_kafka_responses_held_total (\d+)$/m.exec(prom);
        assert.ok(held && Number(held[1]) > 0, `no answer was held:\n${prom}`);
    } finally {
        await broker.stop();
    }
});

//  One client that writes far more than the socket buffers and the door's
//  unsent-output limit hold while it does not read: the door stops reading
//  it (TCP pushes back on its writes) and goes on once it reads; small
//  actor queues make the codec meet the door's mark on the way.
test('Kafka: one connection x 30000 pipelined requests, not reading for 2 s: all arrive in order',
     { timeout: 240000 }, async () => {
    const broker = await run(1, 30000, 2000, { ACTOR_QUEUE_HWM: '16' });
    await broker.stop();
});
