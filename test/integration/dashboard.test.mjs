//  test/integration/dashboard.test.mjs - the dashboard in a real browser:
//  headless Chromium (Debian) driven by playwright-core against a broker
//  with data, including a queue of 100,000 partitions. Every view loads
//  without a console error; the partitions of the big queue page and
//  search through the API; an operator requeues a dead letter, seeks a
//  group and toggles maintenance, and the broker's own API shows each
//  change. Screenshots of every view go to <build>/test-output/dashboard/
//  (docs/operations.md).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import {
    BIN, startBroker, settle, http, psql, createDatabase, configureQueue, pushItems,
    popMessages, ack, ackBatch, ackFor, request, waitFor, transaction, freePort,
} from './lib.mjs';

const SHOTS = path.join(path.dirname(BIN), 'test-output', 'dashboard');
const BIG = 'dash.big';
const BIG_PARTITIONS = 100000;

let broker, url, db, browser, page;
const problems = [];            //  console errors, page errors, failed requests

before(async () => {
    fs.rmSync(SHOTS, { recursive: true, force: true });
    fs.mkdirSync(SHOTS, { recursive: true });
    db = await createDatabase('dash');
    broker = await startBroker({ db });
    url = broker.url;
    await settle(url);

    //  Ordinary data through the API
    await configureQueue(url, 'dash.orders', { leaseTime: 30, retryLimit: 2 });
    await configureQueue(url, 'dash.dlq', { retryLimit: 0, retryDelay: 0 });
    await pushItems(url, Array.from({ length: 30 }, (_, i) => ({
        queue: 'dash.orders', partition: `c-${i % 3}`, transactionId: `o-${i}`, payload: { order: i } })), { queued: true });
    for (const m of await popMessages(url, 'dash.orders', { consumerGroup: 'billing', batch: 5 }))
        await ack(url, ackFor(m, { consumerGroup: 'billing', status: 'completed' }), { success: true });
    await pushItems(url, [{ queue: 'dash.dlq', transactionId: 'bad-1', payload: { poison: true } }], { queued: true });
    const [poison] = await popMessages(url, 'dash.dlq');
    assert.equal((await ack(url, ackFor(poison, { status: 'failed', error: 'cannot parse' }), { success: true })).dlq, true);
    await request(url, '/api/v1/kv/carts/user-1', { method: 'PUT', body: { items: [1, 2] } });
    await request(url, '/api/v1/timers', { method: 'POST', expect: [200, 201],
        body: { timerId: 'remind-1', queue: 'dash.orders', payload: { remind: true }, fireAt: new Date(Date.now() + 3600e3).toISOString() } });

    //  More than one page everywhere the dashboard pages: 120 messages in
    //  three partitions (the browser shows 50 a page), 60 keys in one
    //  bucket (50 a page) and 103 buckets (100 a page).
    await pushItems(url, Array.from({ length: 120 }, (_, i) => ({
        queue: 'dash.browse', partition: `b-${Math.floor(i / 40)}`, transactionId: `br-${String(i).padStart(3, '0')}`,
        payload: { i } })), { queued: true });
    const kvOps = [
        ...Array.from({ length: 101 }, (_, i) => ({ type: 'kv.set', bucket: `b-${String(i).padStart(3, '0')}`, key: 'k', value: i })),
        ...Array.from({ length: 60 }, (_, i) => ({ type: 'kv.set', bucket: 'many', key: `key-${String(i).padStart(3, '0')}`, value: i })),
    ];
    assert.equal((await transaction(url, kvOps)).success, true);

    //  The 100,000-partition queue: set up in PostgreSQL directly (ten
    //  queen.push calls of 10,000 partitions), which is only the fixture;
    //  everything the test reads goes through the dashboard and the API.
    await configureQueue(url, BIG, {});
    for (let k = 0; k < BIG_PARTITIONS / 10000; k++) {
        await psql(`SELECT count(*) FROM queen.push('', array_fill('${BIG}'::text, ARRAY[10000]),
            (SELECT array_agg('p' || lpad(i::text, 6, '0') ORDER BY i) FROM generate_series(${k * 10000}, ${k * 10000 + 9999}) i),
            array_fill(NULL::text, ARRAY[10000]), array_fill(convert_to('{"n":1}', 'UTF8'), ARRAY[10000]),
            array_fill(NULL::uuid, ARRAY[10000]), array_fill(NULL::text, ARRAY[10000]), array_fill(false, ARRAY[10000]), false)`,
        { db, timeoutMs: 120000 });
    }

    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.setDefaultTimeout(60000);
    page.on('console', (msg) => { if (msg.type() === 'error') problems.push(`console: ${msg.text()}`); });
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('requestfailed', (req) => problems.push(`request failed: ${req.url()} ${req.failure()?.errorText}`));
    page.on('response', (res) => { if (res.status() >= 400) problems.push(`HTTP ${res.status()} ${res.url()}`); });
    page.on('dialog', (d) => d.accept());
});

after(async () => {
    await browser?.close();
    await broker?.stop();
});

//  Opens a view and waits until it rendered (data-ready on <main>).
async function open (hash, shot) {
    await page.goto(`${url}/${hash}`);
    await page.waitForSelector('main[data-ready="true"]');
    if (shot)
        await page.screenshot({ path: path.join(SHOTS, `${shot}.png`), fullPage: true });
}

//  After an action: the view re-rendered.
async function settled () {
    await page.waitForSelector('main[data-ready="true"]');
}

test('the broker serves the dashboard and its assets from the binary', async () => {
    const index = await http(`${url}/`);
    assert.equal(index.status, 200);
    assert.match(index.headers['content-type'], /^text\/html/);
    assert.match(index.raw, /<script src="\/dashboard\/app\.js"><\/script>/);
    for (const [file, type] of [['app.js', /javascript/], ['app.css', /css/], ['uPlot.js', /javascript/], ['uPlot.css', /css/]]) {
        const r = await http(`${url}/dashboard/${file}`);
        assert.equal(r.status, 200, file);
        assert.match(r.headers['content-type'], type, file);
        assert.ok(r.raw.length > 100, file);
    }
    assert.match((await http(`${url}/dashboard/uPlot.js`)).raw, /uPlot/);
    assert.equal((await http(`${url}/dashboard/nothing.js`)).status, 404);
});

test('every view loads against a broker with data, without a console error', async () => {
    await open('#/overview', '01-overview');
    assert.match(await page.textContent('#overview-cards'), /connected/);
    //  Stored messages: 30 + 1 + 120 + 100,000 (+ nothing else), from the statistics
    assert.match(await page.textContent('#overview-cards'), /100,151/);
    assert.equal(await page.locator('#chart-live .uplot').count(), 1);
    assert.equal(await page.locator('#chart-history .uplot').count(), 1);

    await open('#/queues', '02-queues');
    const queues = await page.textContent('#queues-table');
    for (const q of ['dash.orders', 'dash.dlq', BIG])
        assert.match(queues, new RegExp(q.replace('.', '\\.')));
    assert.match(queues, /100,000/);

    await open(`#/queue/${BIG}`, '03-big-queue');
    //  Name order: the queue's Default partition (made by configure), then p000000 ...
    assert.equal(await page.locator('#partitions tbody tr').count(), 50);
    assert.match(await page.textContent('#partitions tbody tr:nth-child(1)'), /^Default/);
    assert.match(await page.textContent('#partitions tbody tr:nth-child(2)'), /^p000000/);
    assert.match(await page.textContent('#partitions tbody tr:nth-child(2)'), /^p0000001/);    //  total 1
    await page.click('#partitions-next');
    await page.waitForFunction(() => document.querySelector('#partitions tbody tr')?.textContent.startsWith('p000049'));
    await page.click('#partitions-next');
    await page.waitForFunction(() => document.querySelector('#partitions tbody tr')?.textContent.startsWith('p000099'));
    await page.click('#partitions-prev');
    await page.waitForFunction(() => document.querySelector('#partitions tbody tr')?.textContent.startsWith('p000049'));
    await page.fill('#partition-search', 'p07770');
    await page.click('#partitions button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#partitions tbody tr')?.textContent.startsWith('p077700'));
    assert.equal(await page.locator('#partitions tbody tr').count(), 10);
    assert.equal(await page.isDisabled('#partitions-next'), true);
    await page.screenshot({ path: path.join(SHOTS, '04-big-queue-search.png'), fullPage: true });

    await open('#/queue/dash.orders', '05-queue');
    assert.match(await page.textContent('main'), /billing/);
    await open('#/groups', '06-groups');
    assert.match(await page.textContent('#groups-table'), /billing/);
    await open('#/group/billing', '07-group');
    assert.match(await page.textContent('main'), /c-0/);
    await open('#/messages?queue=dash.orders', '08-messages');
    assert.equal(await page.locator('#messages-table tbody tr').count(), 30);
    await page.click('#messages-table a.msg-link');
    await page.waitForSelector('#payload');
    assert.match(await page.textContent('#payload'), /"order"/);
    await page.screenshot({ path: path.join(SHOTS, '09-message.png'), fullPage: true });
    await open('#/dlq', '10-dlq');
    assert.match(await page.textContent('#dlq-table'), /cannot parse/);
    await open('#/state?bucket=carts', '11-state');
    assert.match(await page.textContent('main'), /Bucket carts/);
    assert.match(await page.textContent('#kv-keys'), /user-1/);
    assert.match(await page.textContent('#timers'), /remind-1/);
    await open('#/system', '12-system');
    assert.equal(await page.isChecked('#maint-push'), false);
    assert.deepEqual(problems, []);
});

//  The transaction ids in the rows of a table (the messages' links).
async function txnIds (sel) {
    return page.$$eval(`${sel} a.msg-link`, (as) => as.map((a) => a.textContent));
}

//  Clicks a pager's Next (or Previous) and waits for the page number.
async function turn (box, button, pageNo) {
    await page.click(`#${button}`);
    await page.waitForSelector(`#${box}[data-page="${pageNo}"]`);
}

test('the message browser and the kv view page through everything, keyset pages', async () => {
    //  120 messages in b-0, b-1, b-2 (40 each): pages of 50, 50, 20,
    //  partition by partition, newest first in each; every message once.
    await open('#/messages?queue=dash.browse', '16-messages-page1');
    const seen = [];
    const p1 = await txnIds('#messages-table');
    assert.equal(p1.length, 50);
    assert.equal(p1[0], 'br-039');          //  b-0, newest first
    assert.equal(p1[39], 'br-000');
    assert.equal(p1[40], 'br-079');         //  then b-1
    assert.equal(await page.isDisabled('#messages-prev'), true);
    seen.push(...p1);
    await turn('messages-table', 'messages-next', 2);
    const p2 = await txnIds('#messages-table');
    assert.equal(p2.length, 50);
    assert.equal(p2[0], 'br-069');
    seen.push(...p2);
    await turn('messages-table', 'messages-next', 3);
    const p3 = await txnIds('#messages-table');
    assert.equal(p3.length, 20);
    assert.equal(p3[19], 'br-080');
    assert.equal(await page.isDisabled('#messages-next'), true);
    seen.push(...p3);
    await page.screenshot({ path: path.join(SHOTS, '17-messages-page3.png'), fullPage: true });
    assert.equal(new Set(seen).size, 120);
    assert.deepEqual([...seen].sort(), Array.from({ length: 120 }, (_, i) => `br-${String(i).padStart(3, '0')}`));
    await turn('messages-table', 'messages-prev', 2);
    assert.deepEqual(await txnIds('#messages-table'), p2);

    //  The route under the browser: a time range, a cursor that is not one.
    const route = '/api/v1/resources/queues/dash.browse/messages';
    const hourAgo = new Date(Date.now() - 3600e3).toISOString();
    let r = await request(url, `${route}?limit=200&from=${hourAgo}`);
    assert.equal(r.body.messages.length, 120);
    assert.equal(r.body.next, null);
    r = await request(url, `${route}?to=${hourAgo}`);
    assert.deepEqual(r.body, { queue: 'dash.browse', messages: [], next: null });
    r = await request(url, `${route}?partition=b-2&limit=5`);
    assert.deepEqual(r.body.messages.map((m) => m.transactionId), ['br-119', 'br-118', 'br-117', 'br-116', 'br-115']);
    r = await request(url, `${route}?partition=b-2&limit=5&cursor=${encodeURIComponent(r.body.next)}`);
    assert.equal(r.body.messages[0].transactionId, 'br-114');
    assert.equal((await request(url, `${route}?cursor=nope`, { expect: 400 })).body.error,
        'Invalid cursor: must be the next of a previous page');
    assert.equal((await request(url, '/api/v1/resources/queues/no.such/messages', { expect: 404 })).status, 404);

    //  One partition of the 100,000-partition queue, and the queue as a
    //  whole: a page of 50 partitions' messages, then the next 50.
    await open(`#/messages?queue=${BIG}&partition=p077777`);
    assert.equal(await page.locator('#messages-table tbody tr').count(), 1);
    assert.match(await page.textContent('#messages-table'), /p077777/);
    await open(`#/messages?queue=${BIG}`, '18-messages-big');
    const parts = () => page.$$eval('#messages-table tbody tr td:nth-child(2)', (tds) => tds.map((t) => t.textContent));
    const b1 = await parts();
    assert.equal(b1.length, 50);
    assert.equal(b1[0], `${BIG} / p000000`);
    assert.equal(b1[49], `${BIG} / p000049`);
    await turn('messages-table', 'messages-next', 2);
    const b2 = await parts();
    assert.equal(b2[0], `${BIG} / p000050`);
    assert.equal(b2[49], `${BIG} / p000099`);

    //  Buckets: 103 of them, 100 a page; keys of "many": 60, 50 a page.
    await open('#/state?bucket=many', '19-kv-page1');
    const buckets = () => page.$$eval('#kv-buckets a.pill', (as) => as.map((a) => a.textContent));
    const bk1 = await buckets();
    assert.equal(bk1.length, 100);
    assert.equal(bk1[0], 'b-000');
    assert.equal(bk1[99], 'b-099');
    await turn('kv-buckets', 'buckets-next', 2);
    assert.deepEqual(await buckets(), ['b-100', 'carts', 'many']);
    assert.equal(await page.isDisabled('#buckets-next'), true);
    const keys = () => page.$$eval('#kv-keys a.kv-key', (as) => as.map((a) => a.textContent));
    const k1 = await keys();
    assert.equal(k1.length, 50);
    assert.equal(k1[0], 'key-000');
    await turn('kv-keys', 'kv-next', 2);
    const k2 = await keys();
    assert.deepEqual(k2, Array.from({ length: 10 }, (_, i) => `key-${String(50 + i).padStart(3, '0')}`));
    assert.equal(await page.isDisabled('#kv-next'), true);
    await page.screenshot({ path: path.join(SHOTS, '20-kv-page2.png'), fullPage: true });
    //  A prefix search narrows the keys to one page.
    await page.fill('#kv-prefix', 'key-05');
    await page.click('#main form:has(#kv-prefix) button[type=submit]');
    await page.waitForFunction(() => document.querySelectorAll('#kv-keys a.kv-key').length === 10
        && document.querySelector('#kv-keys a.kv-key').textContent === 'key-050');
    assert.deepEqual(problems, []);
});

//  Every entry of a queue's dead letters through the keyset route, page by
//  page (each page asked with the `next` of the one before).
async function deadLetters (queue) {
    const all = [];
    let cursor = null;
    for (let pages = 0; pages < 100; pages++) {
        const r = await request(url, `/api/v1/resources/dead-letters?queue=${queue}&limit=30${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal('total' in r.body, false);
        all.push(...r.body.messages);
        cursor = r.body.next;
        if (!cursor)
            return all;
    }
    assert.fail('the dead-letter pages never end');
}

test('the dead-letter view pages through every entry without a total; requeue one or many', async () => {
    //  70 dead letters of dash.dead (7 partitions): pages of 50 and 20.
    await configureQueue(url, 'dash.dead', { retryLimit: 0, retryDelay: 0 });
    await pushItems(url, Array.from({ length: 70 }, (_, i) => ({
        queue: 'dash.dead', partition: `d-${i % 7}`, transactionId: `dead-${String(i).padStart(2, '0')}`,
        payload: { dead: i } })), { queued: true });
    const popped = [];
    await waitFor(async () => {
        popped.push(...await popMessages(url, 'dash.dead', { batch: 70 }));
        return popped.length >= 70;
    }, 20000);
    assert.equal(popped.length, 70);
    await ackBatch(url, popped.map((m) => ackFor(m, { status: 'failed', error: 'poison' })), { success: true });
    const entries = await deadLetters('dash.dead');
    assert.equal(entries.length, 70);
    assert.equal(new Set(entries.map((m) => m.dlqId)).size, 70);

    await open('#/dlq?queue=dash.dead', '21-dlq-page1');
    const data = () => page.$$eval('#dlq-table code.dlq-data', (cs) => cs.map((c) => JSON.parse(c.textContent).dead));
    const d1 = await data();
    assert.equal(d1.length, 50);
    assert.equal(await page.isDisabled('#dlq-prev'), true);
    assert.doesNotMatch(await page.textContent('main'), /entries/);     //  no total shown
    await turn('dlq-table', 'dlq-next', 2);
    const d2 = await data();
    assert.equal(d2.length, 20);
    assert.equal(await page.isDisabled('#dlq-next'), true);
    await page.screenshot({ path: path.join(SHOTS, '22-dlq-page2.png'), fullPage: true });
    //  every entry once, in the order of the route
    assert.deepEqual([...d1, ...d2], entries.map((m) => m.data.dead));
    assert.equal(new Set([...d1, ...d2]).size, 70);
    await turn('dlq-table', 'dlq-prev', 1);
    assert.deepEqual(await data(), d1);

    //  Requeue one entry from the second page: it leaves the DLQ and is
    //  back in its queue.
    await turn('dlq-table', 'dlq-next', 2);
    const one = d2[5];
    await page.click(`#dlq-table tbody tr:nth-child(6) .dlq-requeue`);
    await settled();
    await waitFor(async () => (await deadLetters('dash.dead')).length === 69, 10000);
    assert.equal((await deadLetters('dash.dead')).some((m) => m.data.dead === one), false);
    const back = await popMessages(url, 'dash.dead', { batch: 10 });
    assert.deepEqual(back.map((m) => m.data), [{ dead: one }]);
    //  Requeue two ticked on the first page.
    await page.waitForSelector('#dlq-table[data-page="1"]');
    const first = await data();
    await page.check('#dlq-table tbody tr:nth-child(1) input.dlq-pick');
    await page.check('#dlq-table tbody tr:nth-child(2) input.dlq-pick');
    await page.click('#dlq-requeue-selected');
    await settled();
    await waitFor(async () => (await deadLetters('dash.dead')).length === 67, 10000);
    const left = new Set((await deadLetters('dash.dead')).map((m) => m.data.dead));
    assert.equal(left.has(first[0]) || left.has(first[1]), false);
    assert.deepEqual(problems, []);
});

test('actions: requeue a dead letter, seek a group, toggle maintenance', async () => {
    //  Requeue: the entry leaves the DLQ and the message is back in its queue.
    await open('#/dlq?queue=dash.dlq');
    await page.click('#dlq-table .dlq-requeue');
    await settled();
    await waitFor(async () => (await request(url, '/api/v1/dlq?queue=dash.dlq')).body.total === 0, 10000);
    //  The view re-renders after the action: it then says the DLQ is empty.
    await page.waitForFunction(() => /empty/.test(document.querySelector('#dlq-table')?.textContent || ''));
    const back = await popMessages(url, 'dash.dlq');
    assert.equal(back.length, 1);
    assert.deepEqual(back[0].data, { poison: true });

    //  Seek billing on dash.orders to the end: no lag left.
    const lag = async () => (await request(url, '/api/v1/consumer-groups')).body
        .find((g) => g.name === 'billing' && g.queueName === 'dash.orders').offsetLag;
    assert.ok(await lag() > 0);
    await open('#/group/billing');
    await page.selectOption('form.seek-form[data-queue="dash.orders"] select[name=mode]', 'end');
    await page.click('form.seek-form[data-queue="dash.orders"] button[type=submit]');
    await settled();
    await waitFor(async () => await lag() === 0, 10000);
    await page.screenshot({ path: path.join(SHOTS, '13-group-after-seek.png'), fullPage: true });

    //  Pop maintenance on, then off, from the system view.
    await open('#/system');
    await page.click('#maint-pop');
    await settled();
    await waitFor(async () => (await request(url, '/api/v1/system/maintenance')).body.popMaintenanceMode === true, 10000);
    assert.equal(await page.isChecked('#maint-pop'), true);
    await page.screenshot({ path: path.join(SHOTS, '14-maintenance-on.png'), fullPage: true });
    await page.click('#maint-pop');
    await settled();
    await waitFor(async () => (await request(url, '/api/v1/system/maintenance')).body.popMaintenanceMode === false, 10000);
    assert.deepEqual(problems, []);
    for (const f of ['01-overview.png', '03-big-queue.png', '10-dlq.png', '14-maintenance-on.png'])
        assert.ok(fs.statSync(path.join(SHOTS, f)).size > 10000, f);
});

test('the brokers view: two brokers joined by the mesh list each other, one leaving shows', async () => {
    //  Two brokers on their own database, meshed (docs/mesh.md); the
    //  single broker of the other tests has the mesh off (startBroker's
    //  MESH_PORT=0) and its overview says so.
    await open('#/overview');
    assert.match(await page.textContent('#brokers'), /mesh is off/);
    const mdb = await createDatabase('dashmesh');
    const meshed = [];
    const start = async () => {
        const port = await freePort();
        const b = await startBroker({ db: mdb, env: {
            MESH_PORT: String(port), MESH_SECRET: 'dash-mesh-secret-0123456789abcdef',
            MESH_ADVERTISED_HOST: '127.0.0.1', MESH_HEARTBEAT_MS: '500' } });
        b.meshId = `127.0.0.1:${port}`;
        meshed.push(b);
        return b;
    };
    const p = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const seen = [];
    p.on('console', (msg) => { if (msg.type() === 'error') seen.push(msg.text()); });
    p.on('pageerror', (err) => seen.push(`page error: ${err.message}`));
    try {
        const A = await start();
        const B = await start();
        const upOn = (x, y) => async () => ((await http(`${x.url}/health`)).body.mesh?.peers ?? [])
            .some((q) => q.address === y.meshId && q.state === 'up');
        await waitFor(upOn(B, A), 20000, 100);
        //  A's overview, reloaded until it lists B up (the status the page
        //  reads is the mesh's last periodic report)
        const brokerRows = async () => {
            //  (a goto to the URL the page is on would only move to the
            //  same fragment: reload to read /health again)
            if (p.url() === `${A.url}/#/overview`)
                await p.reload();
            else
                await p.goto(`${A.url}/#/overview`);
            await p.waitForSelector('main[data-ready="true"]');
            return p.$$eval('#brokers tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
        };
        let rows = [];
        await waitFor(async () => (rows = await brokerRows()).some((r) => r[0] === B.meshId && r[1] === 'up'), 20000, 250);
        assert.equal(rows.length, 2, JSON.stringify(rows));
        assert.deepEqual(rows[0].slice(0, 2), [A.meshId, 'this broker']);
        assert.deepEqual(rows[1].slice(0, 2), [B.meshId, 'up']);
        assert.match(rows[1][2], /^\d[\d,]* ms ago$/);
        assert.match(await p.textContent('#overview-cards'), /Brokers2this broker \+ 1 of 1 peers up/);
        await p.screenshot({ path: path.join(SHOTS, '21-brokers.png'), fullPage: true });
        //  B stops: A's view shows it no longer up once A notices.
        await B.stop();
        meshed.splice(meshed.indexOf(B), 1);
        let after = [];
        await waitFor(async () => {
            after = await brokerRows();
            const b = after.find((r) => r[0] === B.meshId);
            return !b || b[1] !== 'up';
        }, 20000, 250);
        assert.deepEqual(after[0].slice(0, 2), [A.meshId, 'this broker']);
        assert.match(await p.textContent('#overview-cards'), /Brokers1this broker \+ 0 of \d peers? up/);
        assert.deepEqual(seen, []);
    } finally {
        await p.close();
        for (const b of meshed) await b.stop().catch(() => {});
    }
});

test('behind JWT auth the dashboard asks for a token, then every call carries it', async () => {
    const secret = 'dash-secret-0123456789abcdef-0123456789';
    const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub: 'operator', role: 'admin', iat: now - 5, exp: now + 3600 })}`;
    const jwt = `${input}.${crypto.createHmac('sha256', secret).update(input).digest('base64url')}`;
    const secured = await startBroker({ env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: secret } });
    const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const seen = [];
    p.on('console', (msg) => { if (msg.type() === 'error') seen.push(msg.text()); });
    p.on('pageerror', (err) => seen.push(`page error: ${err.message}`));
    const statuses = [];
    p.on('response', (res) => { if (res.url().includes('/api/')) statuses.push(res.status()); });
    try {
        //  The API refuses the page without a token: the login form shows.
        assert.equal((await http(`${secured.url}/api/v1/resources/queue-summaries`)).status, 401);
        await p.goto(`${secured.url}/#/queues`);
        await p.waitForSelector('#login textarea');
        await p.screenshot({ path: path.join(SHOTS, '15-login.png') });
        assert.ok(statuses.includes(401));
        //  With the token, the view loads and every API call succeeded.
        statuses.length = 0;
        await p.fill('#token', jwt);
        await p.click('#login button[type=submit]');
        await p.waitForSelector('main[data-ready="true"]');
        assert.match(await p.textContent('main'), /No queues yet|Queues/);
        assert.ok(statuses.length > 0 && statuses.every((x) => x === 200), String(statuses));
        await p.click('#create-form input[name=queue]');
        await p.fill('#create-form input[name=queue]', 'secured.q');
        await p.click('#create-form button[type=submit]');
        await p.waitForFunction(() => document.querySelector('#queues-table')?.textContent.includes('secured.q'));
        const listed = await http(`${secured.url}/api/v1/resources/queue-summaries`, { headers: { Authorization: `Bearer ${jwt}` } });
        assert.deepEqual(listed.body.queues.map((q) => q.name), ['secured.q']);
        //  Only the refused first load logged errors (its 401s).
        assert.deepEqual(seen.filter((t) => !/status of 401/.test(t)), []);
    } finally {
        await p.close();
        await secured.stop();
    }
});
