//  test/integration/groups.test.mjs - consumer-group administration
//  (spec 3.19): listing with lag, lagging partitions, one group, deletes
//  that allow re-consuming, subscription update, whole-queue seeks (to the
//  end, by time) and the one-partition seek (newest, by offset, by time),
//  over plain HTTP.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, http, sleep, settle, pushItems, popPath, ack, ackFor, expectStatus } from './lib.mjs';

let broker;
let url;

const TS_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function get (path) {
    return http(`${url}${path}`);
}

async function post (path, body) {
    return http(`${url}${path}`, { method: 'POST', body });
}

async function push (queue, n, { partition = 'Default', prefix = queue } = {}) {
    const items = [];
    for (let i = 0; i < n; i++)
        items.push({ queue, partition, payload: { i }, transactionId: `${prefix}-${partition}-${i}` });
    return pushItems(url, items);
}

async function pop (path, group, query = '') {
    const g = group ? `&consumerGroup=${encodeURIComponent(group)}` : '';
    return popPath(url, path, `${g}${query}`);
}

async function ackAll (msgs, group) {
    assert.ok(msgs.length > 0, 'nothing to ack');
    for (const m of msgs)
        await ack(url, ackFor(m, { consumerGroup: group ?? null }), { success: true });
}

//  Pops (and acks) everything the group can get right now.
async function drain (queue, group) {
    const seen = [];
    for (;;) {
        const got = await pop(queue, group, '&batch=100&partitions=10');
        if (!got.length)
            return seen;
        await ackAll(got, group);
        seen.push(...got);
    }
}

async function seek (group, queue, body) {
    return post(`/api/v1/consumer-groups/${encodeURIComponent(group)}/queues/${encodeURIComponent(queue)}/seek`, body);
}

async function pseek (group, queue, partition, body) {
    return http(`${url}/api/v1/consumer-groups/${group}/queues/${queue}/partitions/${partition}/seek`,
                { method: 'POST', body });
}

before(async () => {
    broker = await startBroker();
    url = broker.url;
    await settle(url);
});

after(async () => {
    await broker?.stop();
});

test('group list, one group and lagging partitions show lag', async () => {
    await push('gl.q', 4);
    await push('gl.q', 1, { partition: 'p2' });
    const got = await pop('gl.q/partition/Default', 'workers', '&batch=2');
    assert.equal(got.length, 2);
    await ackAll(got, 'workers');
    await sleep(1100);                       //  lag of at least one second

    let res = await get('/api/v1/consumer-groups');
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.body));
    const g = res.body.find((x) => x.name === 'workers' && x.queueName === 'gl.q');
    assert.ok(g, res.raw);
    assert.deepEqual(Object.keys(g), ['name', 'topics', 'queueName', 'members', 'partitionsWithLag', 'totalLag',
        'offsetLag', 'maxTimeLag', 'state', 'subscriptionMode', 'subscriptionTimestamp', 'subscriptionCreatedAt']);
    assert.deepEqual(g.topics, ['gl.q']);
    assert.equal(g.members, 2);              //  Default and p2 (backfilled on creation)
    assert.equal(g.partitionsWithLag, 2);
    assert.equal(g.totalLag, null);
    assert.equal(g.offsetLag, 3);
    assert.ok(g.maxTimeLag >= 1);
    assert.equal(g.state, 'Stable');
    assert.equal(g.subscriptionMode, 'all');
    assert.match(g.subscriptionCreatedAt, TS_MS);
    //  The queue mode group never popped this queue: not listed
    assert.ok(!res.body.some((x) => x.name === '__QUEUE_MODE__' && x.queueName === 'gl.q'));

    res = await get('/api/v1/consumer-groups/workers');
    assert.equal(res.status, 200);
    const parts = res.body['gl.q'].partitions;
    assert.deepEqual(parts.map((p) => p.partition), ['Default', 'p2']);
    assert.deepEqual(Object.keys(parts[0]), ['partition', 'workerId', 'lastConsumedAt', 'totalConsumed', 'offsetLag',
                                             'timeLagSeconds', 'leaseActive', 'leaseExpiresAt']);
    assert.equal(parts[0].totalConsumed, 2);
    assert.equal(parts[0].offsetLag, 2);
    assert.ok(parts[0].timeLagSeconds >= 1);
    assert.match(parts[0].lastConsumedAt, TS_MS);
    assert.equal(parts[0].leaseActive, false);
    assert.equal(parts[1].totalConsumed, 0);
    assert.equal(parts[1].offsetLag, 1);
    assert.equal(parts[1].lastConsumedAt, null);
    res = await get('/api/v1/consumer-groups/nobody');
    assert.deepEqual(res.body, {});

    res = await get('/api/v1/consumer-groups/lagging?minLagSeconds=1');
    assert.equal(res.status, 200);
    const lag = res.body.filter((x) => x.queue_name === 'gl.q' && x.consumer_group === 'workers');
    assert.equal(lag.length, 2);
    assert.deepEqual(Object.keys(lag[0]), ['consumer_group', 'queue_name', 'partition_name', 'partition_id',
        'worker_id', 'offset_lag', 'time_lag_seconds', 'lag_hours', 'oldest_unconsumed_at', 'last_consumed_at']);
    const lags = res.body.map((x) => x.time_lag_seconds);
    assert.deepEqual(lags, [...lags].sort((a, b) => b - a));
    res = await get('/api/v1/consumer-groups/lagging');       //  default 3600 s
    assert.ok(!res.body.some((x) => x.queue_name === 'gl.q'));

    //  An active lease shows
    await pop('gl.q/partition/p2', 'workers');
    res = await get('/api/v1/consumer-groups/workers');
    assert.equal(res.body['gl.q'].partitions[1].leaseActive, true);
    assert.match(res.body['gl.q'].partitions[1].leaseExpiresAt, TS_MS);
});

test('deleting a group lets it consume again', async () => {
    await push('gd.q', 3);
    assert.equal((await drain('gd.q', 'g')).length, 3);
    assert.equal((await drain('gd.q', 'g')).length, 0);
    let res = await http(`${url}/api/v1/consumer-groups/g?deleteMetadata=true`, { method: 'DELETE' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { success: true, consumerGroup: 'g', deletedPartitions: 1, metadataDeleted: true });
    assert.equal((await drain('gd.q', 'g')).length, 3);

    //  Keeping the metadata: the group starts over from its subscription
    res = await http(`${url}/api/v1/consumer-groups/g?deleteMetadata=false`, { method: 'DELETE' });
    assert.deepEqual(res.body, { success: true, consumerGroup: 'g', deletedPartitions: 1, metadataDeleted: false });
    assert.equal((await drain('gd.q', 'g')).length, 3);

    //  Unknown group: not an error
    res = await http(`${url}/api/v1/consumer-groups/ghost`, { method: 'DELETE' });
    assert.deepEqual(res.body, { success: true, consumerGroup: 'ghost', deletedPartitions: 0, metadataDeleted: true });

    //  A "new" group keeps its starting point when only its state is deleted
    await drain('gd.q', 'late');                  //  "all": consumes the 3
    const fresh = await pop('gd.q', 'newbie', '&subscriptionMode=new');
    assert.equal(fresh.length, 0);
    await push('gd.q', 2, { prefix: 'after' });
    assert.equal((await drain('gd.q', 'newbie')).length, 2);
    res = await http(`${url}/api/v1/consumer-groups/newbie?deleteMetadata=false`, { method: 'DELETE' });
    assert.equal(res.status, 200);
    const again = await drain('gd.q', 'newbie');
    assert.deepEqual(again.map((m) => m.transactionId).sort(), ['after-Default-0', 'after-Default-1']);
});

test('deleting a group for one queue leaves its other queues alone', async () => {
    await push('gq.a', 2);
    await push('gq.b', 2);
    await drain('gq.a', 'multi');
    await drain('gq.b', 'multi');
    const res = await http(`${url}/api/v1/consumer-groups/multi/queues/gq.a`, { method: 'DELETE' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { success: true, consumerGroup: 'multi', queueName: 'gq.a', deletedPartitions: 1,
                                 metadataDeleted: true });
    assert.equal((await drain('gq.a', 'multi')).length, 2);
    assert.equal((await drain('gq.b', 'multi')).length, 0);
});

test('seek to the end skips the backlog; later messages are delivered', async () => {
    await push('se.q', 5);
    await push('se.q', 5, { partition: 'p2' });
    const first = await pop('se.q/partition/Default', 'tail', '&batch=1');
    assert.equal(first.length, 1);
    await ackAll(first, 'tail');
    const res = await seek('tail', 'se.q', { toEnd: true });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body, { success: true, consumerGroup: 'tail', queueName: 'se.q', seekToEnd: true,
                                 targetTimestamp: null, partitionsUpdated: 2 });
    assert.equal((await drain('se.q', 'tail')).length, 0);
    await push('se.q', 2, { prefix: 'new' });
    const got = await drain('se.q', 'tail');
    assert.deepEqual(got.map((m) => m.transactionId), ['new-Default-0', 'new-Default-1']);
    //  Other groups are unaffected
    assert.equal((await drain('se.q', 'other')).length, 12);
});

test('seek by timestamp backwards re-delivers; forward skips', async () => {
    await push('st.q', 10);
    const consumed = await drain('st.q', 'replay');
    assert.equal(consumed.length, 10);
    const before10 = new Date(Date.now() - 60000).toISOString();
    let res = await seek('replay', 'st.q', { timestamp: before10 });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.seekToEnd, false);
    assert.match(res.body.targetTimestamp, TS_MS);
    assert.equal(res.body.partitionsUpdated, 1);
    const again = await drain('st.q', 'replay');
    assert.deepEqual(again.map((m) => m.transactionId), consumed.map((m) => m.transactionId));

    //  A timestamp between two batches re-delivers only the later one
    await sleep(50);
    const mid = new Date().toISOString();
    await sleep(50);
    await push('st.q', 3, { prefix: 'late' });
    await drain('st.q', 'replay');
    res = await seek('replay', 'st.q', { timestamp: mid });
    assert.equal(res.status, 200);
    const tail = await drain('st.q', 'replay');
    assert.deepEqual(tail.map((m) => m.transactionId), ['late-Default-0', 'late-Default-1', 'late-Default-2']);

    //  Unknown group on a known queue: nothing to do
    res = await seek('nobody', 'st.q', { toEnd: true });
    assert.equal(res.status, 200);
    assert.equal(res.body.partitionsUpdated, 0);
    res = await seek('replay', 'no-such-queue', { toEnd: true });
    assert.equal(res.status, 404);
});

test('queue mode seek', async () => {
    await push('qm.q', 3);
    assert.equal((await drain('qm.q')).length, 3);
    const res = await seek('__QUEUE_MODE__', 'qm.q', { timestamp: '2000-01-01T00:00:00Z' });
    assert.equal(res.status, 200);
    assert.equal((await drain('qm.q')).length, 3);
});

test('partition seek: to the newest message, by offset and by timestamp', async () => {
    const pushed = await push('ps.q', 4);
    await push('ps.q', 2, { partition: 'other' });
    assert.equal((await drain('ps.q', 'ps')).length, 6);

    //  By message id: that message is delivered next
    let res = await pseek('ps', 'ps.q', 'Default', { offset: pushed[1].message_id });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true);
    assert.equal(res.body.updated, true);
    assert.equal(res.body.partitionName, 'Default');
    assert.match(res.body.cursorMovedTo, TS_MS);
    let got = await drain('ps.q', 'ps');
    assert.deepEqual(got.map((m) => m.transactionId), ['ps.q-Default-1', 'ps.q-Default-2', 'ps.q-Default-3']);

    //  By offset number (the seq inside the message id); 0 = from the start
    const seq3 = parseInt(pushed[3].message_id.slice(-12), 16);
    res = await pseek('ps', 'ps.q', 'Default', { offset: seq3 });
    assert.equal(res.status, 200);
    got = await drain('ps.q', 'ps');
    assert.deepEqual(got.map((m) => m.transactionId), ['ps.q-Default-3']);
    res = await pseek('ps', 'ps.q', 'Default', { offset: '0' });
    assert.equal(res.status, 200);
    assert.equal(res.body.cursorMovedTo, null);
    assert.equal((await drain('ps.q', 'ps')).length, 4);

    //  No body: to the newest message (nothing left)
    res = await pseek('ps', 'ps.q', 'Default');
    assert.equal(res.status, 200);
    expectStatus(await pseek('ps', 'ps.q', 'Default', { offset: pushed[0].message_id }), 200);
    res = await pseek('ps', 'ps.q', 'Default');
    assert.equal(res.body.updated, true);
    assert.equal((await drain('ps.q', 'ps')).length, 0);

    //  By timestamp: only the partition named
    await sleep(50);
    const mid = new Date().toISOString();
    await sleep(50);
    await push('ps.q', 2, { partition: 'Default', prefix: 'late' });
    await push('ps.q', 1, { partition: 'other', prefix: 'late' });
    await drain('ps.q', 'ps');
    res = await pseek('ps', 'ps.q', 'Default', { timestamp: mid });
    assert.equal(res.status, 200);
    got = await drain('ps.q', 'ps');
    assert.deepEqual(got.map((m) => m.transactionId), ['late-Default-0', 'late-Default-1']);
    res = await pseek('ps', 'ps.q', 'other', { timestamp: '2000-01-01T00:00:00Z' });
    assert.equal(res.body.cursorMovedTo, null);
    assert.equal((await drain('ps.q', 'ps')).length, 3);

    //  A seek releases a live lease: the partition is claimable again at once
    const held = await pop('ps.q/partition/Default', 'ps');
    assert.equal(held.length, 0);
    expectStatus(await pseek('ps', 'ps.q', 'Default', { offset: 0 }), 200);
    const leased = await pop('ps.q/partition/Default', 'ps', '&batch=1');
    assert.equal(leased.length, 1);
    expectStatus(await pseek('ps', 'ps.q', 'Default', { offset: 0 }), 200);
    const again = await pop('ps.q/partition/Default', 'ps', '&batch=1');
    assert.deepEqual(again.map((m) => m.transactionId), leased.map((m) => m.transactionId));

    res = await pseek('ps', 'ps.q', 'nope', {});
    assert.equal(res.status, 404);
    assert.deepEqual(res.body, { success: false, error: 'Partition not found' });
    res = await pseek('unknown-group', 'ps.q', 'Default');
    assert.equal(res.status, 200);
    assert.equal(res.body.updated, false);
});

test('subscription update applies to partitions the group has not touched', async () => {
    await push('su.q', 2, { partition: 'a' });
    await push('su.q', 2, { partition: 'b' });
    //  A "new" group: the existing messages are not for it
    assert.deepEqual(await pop('su.q/partition/a', 'subs', '&subscriptionMode=new'), []);
    assert.equal((await drain('su.q', 'subs')).length, 0);
    let res = await get('/api/v1/consumer-groups');
    assert.equal(res.body.find((g) => g.name === 'subs').subscriptionMode, 'new');

    res = await post('/api/v1/consumer-groups/subs/subscription', { subscriptionTimestamp: '2000-01-01T00:00:00Z' });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body, { success: true, consumerGroup: 'subs', newTimestamp: '2000-01-01T00:00:00Z',
                                 rowsUpdated: 1 });
    assert.equal((await drain('su.q', 'subs')).length, 4);
    res = await get('/api/v1/consumer-groups');
    const g = res.body.find((x) => x.name === 'subs');
    assert.equal(g.subscriptionMode, 'timestamp');
    assert.equal(g.subscriptionTimestamp, '2000-01-01T00:00:00.000Z');

    res = await post('/api/v1/consumer-groups/ghost/subscription', { subscriptionTimestamp: '2020-01-01' });
    assert.equal(res.body.rowsUpdated, 0);
});

test('consumer-group bad inputs get a 400 naming the field', async () => {
    await push('bad.q', 1);
    const cases = [
        [seek('g', 'bad.q', {}), "Must specify either 'toEnd': true or 'timestamp'"],
        [seek('g', 'bad.q', { toEnd: false }), "Must specify either 'toEnd': true or 'timestamp'"],
        [seek('g', 'bad.q', { toEnd: 'yes' }), 'toEnd'],
        [seek('g', 'bad.q', { timestamp: 'last week' }), 'timestamp'],
        [seek('g', 'bad.q', { timestamp: 12 }), 'timestamp'],
        [http(`${url}/api/v1/consumer-groups/g/queues/bad.q/seek`, { method: 'POST' }), 'Empty request body'],
        [pseek('g', 'bad.q', 'Default', { offset: -1 }), 'offset'],
        [pseek('g', 'bad.q', 'Default', { offset: 'abc' }), 'offset'],
        [pseek('g', 'bad.q', 'Default', { offset: 1.5 }), 'offset'],
        [pseek('g', 'bad.q', 'Default', { timestamp: 'x' }), 'timestamp'],
        [pseek('g', 'bad.q', 'Default', '[1]'), 'JSON object'],
        [post('/api/v1/consumer-groups/g/subscription', {}), 'Missing subscriptionTimestamp in request body'],
        [post('/api/v1/consumer-groups/g/subscription', { subscriptionTimestamp: 5 }), 'subscriptionTimestamp'],
        [post('/api/v1/consumer-groups/g/subscription', { subscriptionTimestamp: 'nope' }), 'subscriptionTimestamp'],
        [get('/api/v1/consumer-groups/lagging?minLagSeconds=-1'), 'minLagSeconds'],
        [get(`/api/v1/consumer-groups/${'g'.repeat(300)}`), 'group'],
        [http(`${url}/api/v1/consumer-groups/%FF`, { method: 'DELETE' }), 'group'],
    ];
    for (const [pending, text] of cases) {
        const res = await pending;
        assert.equal(res.status, 400, `${text}: ${res.raw}`);
        assert.ok(res.body.error.includes(text), `"${res.body.error}" should contain ${text}`);
    }
    //  deleteMetadata is a query boolean: anything else than true/1 is false
    const res = await http(`${url}/api/v1/consumer-groups/g?deleteMetadata=maybe`, { method: 'DELETE' });
    assert.equal(res.status, 200);
    assert.equal(res.body.metadataDeleted, false);
});
