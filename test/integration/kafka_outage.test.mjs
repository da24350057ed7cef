//  test/integration/kafka_outage.test.mjs - Kafka Produce while PostgreSQL
//  is stopped and started again (docs/kafka.md, "Produce during a database
//  outage"): a Produce is not spooled (a Kafka client needs the real base
//  offset and the sequence check, which only the database transaction can
//  give); it is answered 7 REQUEST_TIMED_OUT, which kafkajs and librdkafka
//  retry. With an idempotent producer every message arrives once: nothing
//  lost, nothing duplicated, in order per partition.

import { kcatRun } from './kafka_lib.mjs';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import kafkajs from 'kafkajs';
import { startBroker, freePort, pgStop, pgStart, sleep } from './lib.mjs';

let broker;
let B;

before(async () => {
    const port = await freePort();
    let kport;
    do
        kport = await freePort();
    while (kport === port);
    broker = await startBroker({ port, env: { KAFKA_PORT: String(kport), KAFKA_ADVERTISED_HOST: '127.0.0.1' } });
    B = `127.0.0.1:${kport}`;
});

after(async () => {
    if (broker)
        await broker.stop();
});

const kcat = (args, opts) => kcatRun(B, args, { timeoutMs: 60000, ...opts });

test('Produce during a database outage: retried by the clients, every message stored once, in order', async () => {
    const { Kafka, logLevel } = kafkajs;
    const kafka = new Kafka({ clientId: 'kjs-outage', brokers: [B], logLevel: logLevel.NOTHING,
                              retry: { retries: 30, initialRetryTime: 300, maxRetryTime: 1000 } });
    const admin = kafka.admin();
    await admin.connect();
    assert.equal(await admin.createTopics({ topics: [{ topic: 'kout', numPartitions: 1 }] }), true);
    await admin.disconnect();
    const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1,
                               retry: { retries: 30, initialRetryTime: 300, maxRetryTime: 1000 } });
    await p.connect();
    try {
        const before = await p.send({ topic: 'kout', messages: [{ key: 'e', value: 'm0' }] });
        assert.equal(before[0].baseOffset, '0');
        await pgStop();
        let during;
        let kc;
        try {
            //  Both producers send while the database is away.
            during = p.send({ topic: 'kout', messages: [{ key: 'e', value: 'm1' }, { key: 'e', value: 'm2' }] });
            kc = kcat(['-P', '-t', 'kout', '-p', '0', '-K:', '-X', 'enable.idempotence=true'],
                      { input: 'k:c1\nk:c2\n' });
            await sleep(4000);
        } finally {
            await pgStart();
        }
        const res = await during;
        assert.equal(res[0].errorCode, 0);
        const kr = await kc;
        assert.equal(kr.code, 0, kr.err);
        const after = await p.send({ topic: 'kout', messages: [{ key: 'e', value: 'm3' }] });
        assert.equal(after[0].errorCode, 0);
    } finally {
        await p.disconnect();
    }
    const out = await kcat(['-C', '-t', 'kout', '-o', 'beginning', '-e', '-f', '%s@%o\n']);
    assert.equal(out.code, 0, out.err);
    const lines = out.out.trim().split('\n');
    //  Offsets dense from 0, each message once; per producer in send order.
    assert.deepEqual(lines.map((l) => l.split('@')[1]), ['0', '1', '2', '3', '4', '5']);
    const values = lines.map((l) => l.split('@')[0]);
    assert.deepEqual([...values].sort(), ['c1', 'c2', 'm0', 'm1', 'm2', 'm3']);
    assert.deepEqual(values.filter((v) => v[0] === 'm'), ['m0', 'm1', 'm2', 'm3']);
    assert.deepEqual(values.filter((v) => v[0] === 'c'), ['c1', 'c2']);
});
