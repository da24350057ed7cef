// The Queen dashboard: one page, plain JavaScript, no build step. Every
// figure and every action goes through the broker's HTTP API (the same one
// a client uses, docs/http-api.md), with the operator's token when JWT auth
// is on. Views are hash routes (#/queues, #/queue/<name>, ...).
'use strict';

const TOKEN_KEY = 'queen.token';
let token = localStorage.getItem(TOKEN_KEY) || '';
let timers = [];            // intervals of the current view, cleared on navigation
let charts = [];            // uPlot instances of the current view

// ---------------------------------------------------------------- helpers
function el (tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
const $ = (sel, root = document) => root.querySelector(sel);
const fmt = (n) => (n === undefined || n === null) ? '–' : Number(n).toLocaleString('en-US');
const enc = encodeURIComponent;
const when = (t) => t ? new Date(t).toLocaleString() : '–';

function toast (msg, error = false) {
  const d = el('div', { class: error ? 'error' : '' }, msg);
  $('#toast').append(d);
  setTimeout(() => d.remove(), error ? 8000 : 3500);
}

class ApiError extends Error {
  constructor (status, message) { super(message); this.status = status; }
}

// One API call. 401/403 ask for a token; other errors carry the body's error.
async function api (method, path, body) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (res.status === 401) {
    showLogin('The broker asks for a token (JWT auth is on).');
    throw new ApiError(401, 'unauthorized');
  }
  if (!res.ok && res.status !== 204) {
    throw new ApiError(res.status, (data && data.error) || `${method} ${path}: HTTP ${res.status}`);
  }
  return data;
}
const get = (p) => api('GET', p);

// Runs an action, reports its outcome, re-renders the view.
async function act (what, fn) {
  try {
    const r = await fn();
    toast(what);
    await render();
    return r;
  } catch (e) {
    if (e.status !== 401) toast(`${what} failed: ${e.message}`, true);
    return null;
  }
}

function table (cols, rows, empty = 'Nothing here.') {
  if (!rows.length) return el('p', { class: 'muted' }, empty);
  return el('table', {},
    el('thead', {}, el('tr', {}, cols.map((c) => el('th', { class: c.num ? 'num' : '' }, c.label)))),
    el('tbody', {}, rows.map((r) => el('tr', {}, cols.map((c) => el('td', { class: c.num ? 'num' : '' }, c.get(r)))))));
}

function card (k, v, s, cls) {
  return el('div', { class: 'card' }, el('div', { class: 'k' }, k), el('div', { class: `v ${cls || ''}` }, v),
    s ? el('div', { class: 's' }, s) : null);
}

// Prometheus text: sum of every sample of a family (labels ignored).
function promSum (text, family) {
  let sum = 0, found = false;
  for (const line of text.split('\n')) {
    if (line.startsWith(family + ' ') || line.startsWith(family + '{')) {
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
      found = true;
    }
  }
  return found ? sum : null;
}

function lineChart (target, title, series, data) {
  const width = Math.max(320, target.clientWidth - 20);
  const opts = {
    title, width, height: 220,
    series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { show: false } }))],
    axes: [{}, { size: 60 }],
  };
  const u = new uPlot(opts, data, target);
  charts.push(u);
  return u;
}

// ---------------------------------------------------------------- login
function showLogin (why) {
  stopView();
  const main = $('#main');
  main.replaceChildren(el('div', { class: 'panel login', id: 'login' },
    el('h1', {}, 'Sign in'),
    el('p', { class: 'muted' }, why || 'Paste a token (JWT) the broker accepts.'),
    el('form', { onsubmit: (ev) => {
      ev.preventDefault();
      token = $('#token').value.trim();
      localStorage.setItem(TOKEN_KEY, token);
      showWho();
      render();
    } }, el('textarea', { id: 'token', placeholder: 'eyJhbGciOi...' }), el('p', {}, el('button', { type: 'submit' }, 'Use token')))));
}

function showWho () {
  $('#who').replaceChildren(token
    ? el('span', {}, 'token set · ', el('a', { href: '#', onclick: (e) => { e.preventDefault(); token = ''; localStorage.removeItem(TOKEN_KEY); showWho(); render(); } }, 'sign out'))
    : '');
}

// ---------------------------------------------------------------- brokers
// The mesh as /health reports it (docs/mesh.md): this broker's id and its
// peers. Fields the view does not know are ignored; missing ones show '–'.
function meshPeers (mesh) {
  return mesh && mesh.enabled && Array.isArray(mesh.peers) ? mesh.peers : [];
}

function brokersCard (mesh) {
  const peers = meshPeers(mesh);
  if (!mesh || !mesh.enabled) return card('Brokers', '1', mesh && mesh.reason ? `mesh off: ${mesh.reason}` : 'this broker; the mesh is off');
  const up = peers.filter((p) => p.state === 'up').length;
  return card('Brokers', fmt(1 + up), `this broker + ${fmt(up)} of ${fmt(peers.length)} peers up`, up === peers.length ? 'ok' : 'warn');
}

function brokersPanel (mesh) {
  const peers = meshPeers(mesh);
  const rows = mesh && mesh.enabled
    ? [{ address: mesh.id, state: 'this broker', self: true }, ...peers]
    : [];
  return el('div', {},
    el('h2', {}, 'Brokers'),
    el('div', { class: 'panel', id: 'brokers' }, table([
      { label: 'broker (mesh address)', get: (p) => p.address ?? '–' },
      { label: 'state', get: (p) => el('span', { class: `pill ${p.self || p.state === 'up' ? 'ok' : 'warn'}` }, p.state ?? '–') },
      { label: 'last heard', num: true, get: (p) => p.self ? '–' : (typeof p.lastHeardMs === 'number' && p.lastHeardMs >= 0 ? `${fmt(p.lastHeardMs)} ms ago` : 'never') },
      { label: 'hints received', num: true, get: (p) => p.self ? fmt(mesh.hints?.received) : fmt(p.hintsReceived) },
      { label: 'reconnects', num: true, get: (p) => p.self ? '–' : fmt(p.reconnects) },
    ], rows, mesh && mesh.reason ? `The mesh is off (${mesh.reason}): this broker works alone.` : 'The mesh is off: this broker works alone.')));
}

// ---------------------------------------------------------------- overview
async function viewOverview (main) {
  main.append(el('h1', {}, 'Overview'));
  const cards = el('div', { class: 'cards', id: 'overview-cards' });
  const live = el('div', { class: 'panel chart', id: 'chart-live' });
  const hist = el('div', { class: 'panel chart', id: 'chart-history' });
  main.append(cards, live, hist);

  const [health, ov, maint, prom, summaries] = await Promise.all([
    fetch('/health').then((r) => r.json()),
    get('/api/v1/resources/overview'),
    get('/api/v1/system/maintenance'),
    fetch('/metrics/prometheus').then((r) => r.text()),
    get('/api/v1/resources/queue-summaries'),
  ]);
  const m = ov.messages;
  const dbUp = health.database === 'connected';
  cards.append(
    card('Database', dbUp ? 'connected' : 'down', `pool ${fmt(promSum(prom, 'queen_db_pool_busy'))} busy / ${fmt(promSum(prom, 'queen_db_pool_connections'))} up, ${fmt(promSum(prom, 'queen_db_pool_waiting'))} waiting`, dbUp ? 'ok' : 'bad'),
    card('Spool', maint.bufferHealthy ? 'healthy' : 'failing', `${fmt(maint.bufferedMessages)} pending, ${fmt(promSum(prom, 'queen_spool_replayed_total') ?? 0)} replayed`, maint.bufferHealthy ? 'ok' : 'bad'),
    card('Queues', fmt(ov.queues), `${fmt(ov.partitions)} partitions`),
    card('Messages', fmt(m.total), `${fmt(m.pending)} pending · ${fmt(m.processing)} processing · ${fmt(m.completed)} done`),
    card('Dead letters', fmt(m.deadLetter), `${fmt(m.failed)} DLQ entries`, m.deadLetter ? 'warn' : ''),
    card('Lag', `${fmt(ov.lag.time.max)} s`, `max offset lag ${fmt(ov.lag.offset.max)}`),
    card('Errors', fmt(promSum(prom, 'queen_http_responses_5xx_total') ?? 0), `${fmt(promSum(prom, 'queen_db_errors_total'))} database errors`),
    brokersCard(health.mesh),
    card('Maintenance', maint.maintenanceMode || maint.popMaintenanceMode ? 'on' : 'off',
      `push ${maint.maintenanceMode ? 'on' : 'off'} · pop ${maint.popMaintenanceMode ? 'on' : 'off'}`, maint.maintenanceMode || maint.popMaintenanceMode ? 'warn' : 'ok'),
  );
  main.append(brokersPanel(health.mesh));
  cards.append(card('Stored (maintained)', fmt(summaries.queues.reduce((a, q) => a + q.messages, 0)), 'from the statistics table'));

  // Live throughput: rates between two scrapes of /metrics/prometheus.
  const liveData = [[], [], [], []];
  const u = lineChart(live, 'Live: messages/s in (pushed), out (acked), errors/s', [
    { label: 'in', color: '#5b3cc4' }, { label: 'out', color: '#16794c' }, { label: 'errors', color: '#b42318' }], liveData);
  let last = null;
  const sample = async () => {
    const text = await (await fetch('/metrics/prometheus')).text();
    const now = Date.now() / 1000;
    const cur = { t: now, i: promSum(text, 'queen_messages_pushed_total') || 0,
      o: promSum(text, 'queen_messages_acked_total') || 0, e: promSum(text, 'queen_http_responses_5xx_total') || 0 };
    if (last) {
      const dt = Math.max(cur.t - last.t, 0.001);
      liveData[0].push(now); liveData[1].push((cur.i - last.i) / dt);
      liveData[2].push((cur.o - last.o) / dt); liveData[3].push((cur.e - last.e) / dt);
      if (liveData[0].length > 150) liveData.forEach((s) => s.shift());
      u.setData(liveData);
    }
    last = cur;
  };
  await sample();
  timers.push(setInterval(() => sample().catch(() => {}), 2000));

  // History: pushed messages per bucket over the last hour (/api/v1/status).
  const st = await get('/api/v1/status');
  const tp = st.throughput || [];
  lineChart(hist, `Last hour: messages in per second (${st.bucketMinutes}-minute buckets)`,
    [{ label: 'in', color: '#5b3cc4' }],
    [tp.map((p) => Date.parse(p.timestamp) / 1000), tp.map((p) => p.ingestedPerSecond)]);
}

// ---------------------------------------------------------------- queues
const QUEUE_OPTIONS = [
  ['leaseTime', 'lease (s)'], ['retryLimit', 'retry limit'], ['retryDelay', 'retry delay (ms)'],
  ['maxSize', 'max size'], ['priority', 'priority'], ['delayedProcessing', 'delay (s)'],
  ['windowBuffer', 'window (s)'], ['retentionSeconds', 'retention (s)'],
  ['completedRetentionSeconds', 'completed retention (s)'], ['maxWaitTimeSeconds', 'max wait (s)'],
];

function queueForm (q) {
  const inputs = QUEUE_OPTIONS.map(([k, label]) =>
    el('label', {}, label, el('input', { name: k, type: 'number', min: 0, style: 'width:8rem', value: q ? q.config[k] : '' })));
  return el('form', { class: 'row panel', id: q ? 'configure-form' : 'create-form', onsubmit: async (ev) => {
    ev.preventDefault();
    const f = ev.target;
    const name = q ? q.name : f.elements.queue.value.trim();
    if (!name) return toast('a queue needs a name', true);
    const options = {};
    for (const [k] of QUEUE_OPTIONS) if (f.elements[k].value !== '') options[k] = Number(f.elements[k].value);
    if (f.elements.retentionSeconds.value !== '' || f.elements.completedRetentionSeconds.value !== '') options.retentionEnabled = true;
    await act(q ? `configured ${name}` : `created ${name}`, () => api('POST', '/api/v1/configure', { queue: name, options }));
  } },
  q ? el('strong', {}, `Configure ${q.name}`) : el('label', {}, 'new queue', el('input', { name: 'queue', required: true, placeholder: 'orders' })),
  inputs, el('button', { type: 'submit' }, q ? 'Save' : 'Create'));
}

async function deleteQueue (name) {
  if (!confirm(`Delete queue "${name}" with all its messages? This cannot be undone.`)) return;
  await act(`deleted ${name}`, () => api('DELETE', `/api/v1/resources/queues/${enc(name)}`));
}

async function viewQueues (main) {
  main.append(el('h1', {}, 'Queues'), queueForm(null));
  const { queues } = await get('/api/v1/resources/queue-summaries');
  main.append(el('div', { class: 'panel', id: 'queues-table' }, table([
    { label: 'queue', get: (q) => el('a', { href: `#/queue/${enc(q.name)}` }, q.name) },
    { label: 'namespace / task', get: (q) => [q.namespace, q.task].filter(Boolean).join(' / ') || '–' },
    { label: 'partitions', num: true, get: (q) => fmt(q.partitions) },
    { label: 'messages', num: true, get: (q) => fmt(q.messages) },
    { label: 'dead letters', num: true, get: (q) => fmt(q.deadLetters) },
    { label: 'groups', num: true, get: (q) => fmt(q.groups) },
    { label: 'lease / retries', get: (q) => `${q.config.leaseTime} s / ${q.config.retryLimit}` },
    { label: '', get: (q) => el('button', { class: 'danger', onclick: () => deleteQueue(q.name) }, 'Delete') },
  ], queues, 'No queues yet.')));
}

// A queue: settings, its groups and lag, its partitions a page at a time.
async function viewQueue (main, name) {
  const { queues } = await get('/api/v1/resources/queue-summaries');
  const q = queues.find((x) => x.name === name);
  if (!q) { main.append(el('h1', {}, name), el('p', {}, 'Queue not found.')); return; }
  main.append(el('h1', {}, `Queue ${name}`),
    el('div', { class: 'cards' }, card('Partitions', fmt(q.partitions)), card('Messages', fmt(q.messages)),
      card('Dead letters', fmt(q.deadLetters)), card('Groups', fmt(q.groups))),
    queueForm(q),
    el('p', {}, el('button', { class: 'danger', onclick: () => deleteQueue(name) }, 'Delete queue')));

  const groups = (await get('/api/v1/consumer-groups')).filter((g) => g.queueName === name);
  main.append(el('h2', {}, 'Consumer groups'), el('div', { class: 'panel' }, table([
    { label: 'group', get: (g) => el('a', { href: `#/group/${enc(g.name)}` }, g.name) },
    { label: 'state', get: (g) => g.state },
    { label: 'partitions with lag', num: true, get: (g) => fmt(g.partitionsWithLag) },
    { label: 'offset lag', num: true, get: (g) => fmt(g.offsetLag) },
    { label: 'max time lag (s)', num: true, get: (g) => fmt(g.maxTimeLag) },
  ], groups, 'No consumer group has consumed this queue.')));

  // Partitions: keyset pages (the `next` name), prefix search.
  const box = el('div', { class: 'panel', id: 'partitions' });
  const pages = [null];
  let search = '';
  const load = async () => {
    const after = pages[pages.length - 1];
    const qs = new URLSearchParams({ limit: '50' });
    if (search) qs.set('search', search);
    if (after) qs.set('after', after);
    const r = await get(`/api/v1/resources/queues/${enc(name)}/partitions?${qs}`);
    box.replaceChildren(
      el('form', { class: 'row', onsubmit: (ev) => { ev.preventDefault(); search = ev.target.elements.search.value; pages.length = 1; load(); } },
        el('label', {}, 'name starts with', el('input', { name: 'search', value: search, id: 'partition-search' })),
        el('button', { type: 'submit' }, 'Search')),
      table([
        { label: 'partition', get: (p) => el('a', { href: `#/messages?queue=${enc(name)}&partition=${enc(p.name)}` }, p.name) },
        { label: 'total', num: true, get: (p) => fmt(p.stats.total) },
        { label: 'pending', num: true, get: (p) => fmt(p.stats.pending) },
        { label: 'processing', num: true, get: (p) => fmt(p.stats.processing) },
        { label: 'completed', num: true, get: (p) => fmt(p.stats.completed) },
        { label: 'dead', num: true, get: (p) => fmt(p.stats.deadLetter) },
        { label: 'newest', get: (p) => when(p.newestMessage) },
      ], r.partitions, 'No partition matches.'),
      el('div', { class: 'row' },
        el('button', { class: 'plain', id: 'partitions-prev', disabled: pages.length === 1, onclick: () => { pages.pop(); load(); } }, '← Previous'),
        el('span', { class: 'muted' }, `page ${pages.length}`),
        el('button', { class: 'plain', id: 'partitions-next', disabled: !r.next, onclick: () => { pages.push(r.next); load(); } }, 'Next →')));
  };
  main.append(el('h2', {}, 'Partitions'), box);
  await load();
}

// ---------------------------------------------------------------- groups
async function viewGroups (main) {
  main.append(el('h1', {}, 'Consumer groups'));
  const groups = await get('/api/v1/consumer-groups');
  main.append(el('div', { class: 'panel', id: 'groups-table' }, table([
    { label: 'group', get: (g) => el('a', { href: `#/group/${enc(g.name)}` }, g.name) },
    { label: 'queue', get: (g) => el('a', { href: `#/queue/${enc(g.queueName)}` }, g.queueName) },
    { label: 'state', get: (g) => g.state },
    { label: 'partitions', num: true, get: (g) => fmt(g.members) },
    { label: 'with lag', num: true, get: (g) => fmt(g.partitionsWithLag) },
    { label: 'offset lag', num: true, get: (g) => fmt(g.offsetLag) },
    { label: 'max time lag (s)', num: true, get: (g) => fmt(g.maxTimeLag) },
    { label: 'subscription', get: (g) => g.subscriptionMode || '–' },
  ], groups, 'No consumer groups yet.')));
}

async function viewGroup (main, name) {
  main.append(el('h1', {}, `Consumer group ${name}`));
  const byQueue = await get(`/api/v1/consumer-groups/${enc(name)}`);
  const queues = Object.keys(byQueue || {});
  main.append(el('p', {}, el('button', { class: 'danger', id: 'group-delete', onclick: async () => {
    if (!confirm(`Delete consumer group "${name}" on every queue?`)) return;
    await act(`deleted group ${name}`, () => api('DELETE', `/api/v1/consumer-groups/${enc(name)}`));
    location.hash = '#/groups';
  } }, 'Delete group')));
  if (!queues.length) main.append(el('p', { class: 'muted' }, 'This group has no state.'));
  for (const queue of queues) {
    const parts = byQueue[queue].partitions;
    main.append(el('h2', {}, `Queue ${queue}`),
      el('form', { class: 'row panel seek-form', 'data-queue': queue, onsubmit: async (ev) => {
        ev.preventDefault();
        const f = ev.target;
        const body = f.elements.mode.value === 'end' ? { toEnd: true } : { timestamp: new Date(f.elements.ts.value).toISOString() };
        if (!confirm(`Move ${name} on every partition of ${queue}?`)) return;
        await act(`seeked ${name} on ${queue}`, () => api('POST', `/api/v1/consumer-groups/${enc(name)}/queues/${enc(queue)}/seek`, body));
      } },
      el('label', {}, 'seek the whole queue', el('select', { name: 'mode' }, el('option', { value: 'end' }, 'to the end'), el('option', { value: 'ts' }, 'to a time'))),
      el('label', {}, 'time', el('input', { name: 'ts', type: 'datetime-local' })),
      el('button', { type: 'submit' }, 'Seek'),
      el('button', { type: 'button', class: 'danger', onclick: async () => {
        if (!confirm(`Delete ${name}'s state on ${queue}?`)) return;
        await act(`deleted ${name} on ${queue}`, () => api('DELETE', `/api/v1/consumer-groups/${enc(name)}/queues/${enc(queue)}`));
      } }, 'Delete on this queue')),
      el('div', { class: 'panel' }, table([
        { label: 'partition', get: (p) => p.partition },
        { label: 'offset lag', num: true, get: (p) => fmt(p.offsetLag) },
        { label: 'time lag (s)', num: true, get: (p) => fmt(p.timeLagSeconds) },
        { label: 'consumed', num: true, get: (p) => fmt(p.totalConsumed) },
        { label: 'lease', get: (p) => p.leaseActive ? `until ${when(p.leaseExpiresAt)}` : '–' },
        { label: 'seek to offset', get: (p) => el('form', { class: 'row offset-seek', 'data-partition': p.partition, onsubmit: async (ev) => {
          ev.preventDefault();
          const v = ev.target.elements.offset.value.trim();
          const offset = /^\d+$/.test(v) ? Number(v) : v;
          await act(`seeked ${name} on ${queue}/${p.partition}`, () => api('POST',
            `/api/v1/consumer-groups/${enc(name)}/queues/${enc(queue)}/partitions/${enc(p.partition)}/seek`, { offset }));
        } }, el('input', { name: 'offset', placeholder: 'offset or message id', style: 'width:11rem' }), el('button', { type: 'submit', class: 'plain' }, 'Seek')) },
      ], parts)));
  }
}

// ---------------------------------------------------------------- messages
function hashQuery () {
  const i = location.hash.indexOf('?');
  return new URLSearchParams(i < 0 ? '' : location.hash.slice(i + 1));
}

// Keyset pager: `fetchPage(cursor)` resolves to { rows, next }; the pager
// keeps the cursors of the pages seen, so Previous goes back and Next
// follows `next` (never an offset, never a total).
function pager (box, id, fetchPage, drawRows) {
  const cursors = [null];
  const load = async () => {
    const { rows, next } = await fetchPage(cursors[cursors.length - 1]);
    box.replaceChildren(drawRows(rows),
      el('div', { class: 'row' },
        el('button', { class: 'plain', id: `${id}-prev`, disabled: cursors.length === 1, onclick: () => { cursors.pop(); load().catch(showError); } }, '← Previous'),
        el('span', { class: 'muted', id: `${id}-page` }, `page ${cursors.length}`),
        el('button', { class: 'plain', id: `${id}-next`, disabled: !next, onclick: () => { cursors.push(next); load().catch(showError); } }, 'Next →')));
    box.setAttribute('data-page', String(cursors.length));
  };
  return load;
}

function showError (e) {
  if (e.status !== 401) toast(`Could not load: ${e.message}`, true);
}

// The message browser: a queue's messages a page at a time, partition by
// partition and newest first (keyset pages of
// /api/v1/resources/queues/<queue>/messages).
async function viewMessages (main) {
  const q = hashQuery();
  main.append(el('h1', {}, 'Messages'));
  const form = el('form', { class: 'row panel', id: 'messages-form', onsubmit: (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const k of ['queue', 'partition', 'from', 'to']) {
      let v = ev.target.elements[k].value;
      if (v && (k === 'from' || k === 'to')) v = new Date(v).toISOString();
      if (v) p.set(k, v);
    }
    location.hash = `#/messages?${p}`;
  } },
  el('label', {}, 'queue', el('input', { name: 'queue', value: q.get('queue') || '', required: true })),
  el('label', {}, 'partition', el('input', { name: 'partition', value: q.get('partition') || '' })),
  el('label', {}, 'from', el('input', { name: 'from', type: 'datetime-local' })),
  el('label', {}, 'to', el('input', { name: 'to', type: 'datetime-local' })),
  el('button', { type: 'submit' }, 'Show'));
  main.append(form);
  const queue = q.get('queue');
  if (!queue) {
    main.append(el('p', { class: 'muted', id: 'messages-table' }, 'Choose a queue (the queues view links each partition here).'));
    return;
  }
  const detail = el('div', { class: 'panel', id: 'message-detail', hidden: true });
  const box = el('div', { class: 'panel', id: 'messages-table' });
  const load = pager(box, 'messages', async (cursor) => {
    const p = new URLSearchParams({ limit: '50' });
    for (const k of ['partition', 'from', 'to']) if (q.get(k)) p.set(k, q.get(k));
    if (cursor) p.set('cursor', cursor);
    const r = await get(`/api/v1/resources/queues/${enc(queue)}/messages?${p}`);
    return { rows: r.messages, next: r.next };
  }, (rows) => table([
    { label: 'created', get: (m) => when(m.createdAt) },
    { label: 'queue / partition', get: (m) => `${m.queue} / ${m.partition}` },
    { label: 'transaction id', get: (m) => el('a', { href: '#', class: 'msg-link', onclick: async (e) => {
      e.preventDefault();
      const full = await get(`/api/v1/messages/${enc(m.partitionId)}/${enc(m.transactionId)}`);
      detail.hidden = false;
      detail.replaceChildren(el('h2', {}, `Message ${m.transactionId}`), el('pre', { id: 'payload' }, JSON.stringify(full, null, 2)),
        el('p', {}, el('button', { class: 'danger', onclick: async () => {
          if (!confirm('Delete this message?')) return;
          await act('message deleted', () => api('DELETE', `/api/v1/messages/${enc(m.partitionId)}/${enc(m.transactionId)}`));
        } }, 'Delete message')));
      detail.scrollIntoView();
    } }, m.transactionId) },
    { label: 'status', get: (m) => el('span', { class: 'pill' }, m.status) },
  ], rows, 'No message on this page.'));
  main.append(el('p', { class: 'muted' }, 'Partition by partition (by name), newest first within each.'), box, detail);
  await load();
}

// ---------------------------------------------------------------- dead letters
// Newest first, a page at a time (keyset pages of
// /api/v1/resources/dead-letters: no offset, no total); requeue or delete
// one entry, or the ones ticked on this page.
async function viewDlq (main) {
  const q = hashQuery();
  main.append(el('h1', {}, 'Dead letters'));
  main.append(el('form', { class: 'row panel', onsubmit: (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const k of ['queue', 'consumerGroup', 'partition']) if (ev.target.elements[k].value) p.set(k, ev.target.elements[k].value);
    location.hash = `#/dlq?${p}`;
  } },
  el('label', {}, 'queue', el('input', { name: 'queue', value: q.get('queue') || '', id: 'dlq-queue' })),
  el('label', {}, 'group', el('input', { name: 'consumerGroup', value: q.get('consumerGroup') || '' })),
  el('label', {}, 'partition', el('input', { name: 'partition', value: q.get('partition') || '' })),
  el('button', { type: 'submit' }, 'Show')));
  let rows = [];
  const chosen = new Set();
  const selected = () => rows.filter((m) => chosen.has(m.dlqId));
  // Requeue / delete: one request per queue (the API takes one queue).
  const many = async (what, entries) => {
    const byQueue = new Map();
    for (const m of entries) byQueue.set(m.queue, [...(byQueue.get(m.queue) || []), m.dlqId]);
    await act(`${what}: ${entries.length}`, async () => {
      for (const [qq, ids] of byQueue) {
        if (what === 'requeued') await api('POST', '/api/v1/dlq/requeue', { queue: qq, ids });
        else await api('DELETE', '/api/v1/dlq', { queue: qq, ids });
      }
    });
  };
  const box = el('div', { class: 'panel', id: 'dlq-table' });
  const load = pager(box, 'dlq', async (cursor) => {
    const p = new URLSearchParams({ limit: '50' });
    for (const k of ['queue', 'consumerGroup', 'partition']) if (q.get(k)) p.set(k, q.get(k));
    if (cursor) p.set('cursor', cursor);
    const r = await get(`/api/v1/resources/dead-letters?${p}`);
    rows = r.messages || [];
    chosen.clear();
    return { rows, next: r.next };
  }, (page) => table([
    { label: '', get: (m) => el('input', { type: 'checkbox', class: 'dlq-pick', onchange: (e) => e.target.checked ? chosen.add(m.dlqId) : chosen.delete(m.dlqId) }) },
    { label: 'failed', get: (m) => when(m.failedAt) },
    { label: 'queue / partition', get: (m) => `${m.queue} / ${m.partition}` },
    { label: 'group', get: (m) => m.consumerGroup },
    { label: 'error', get: (m) => m.errorMessage || '–' },
    { label: 'payload', get: (m) => el('code', { class: 'dlq-data' }, JSON.stringify(m.data).slice(0, 80)) },
    { label: '', get: (m) => el('span', { class: 'row' },
      el('button', { class: 'plain dlq-requeue', onclick: () => many('requeued', [m]) }, 'Requeue'),
      el('button', { class: 'plain dlq-delete', onclick: () => { if (confirm('Delete this entry?')) many('deleted', [m]); } }, 'Delete')) },
  ], page, 'The dead-letter queue is empty.'));
  main.append(el('div', { class: 'row' },
    el('span', { class: 'muted' }, 'Newest first.'),
    el('button', { id: 'dlq-requeue-selected', onclick: () => many('requeued', selected()) }, 'Requeue selected'),
    el('button', { class: 'danger', id: 'dlq-delete-selected', onclick: () => { if (confirm('Delete the selected entries?')) many('deleted', selected()); } }, 'Delete selected')),
  box);
  await load();
}

// ---------------------------------------------------------------- kv and timers
async function viewState (main) {
  const q = hashQuery();
  main.append(el('h1', {}, 'KV buckets and timers'));
  let bucket = q.get('bucket') || '';
  // Buckets: keyset pages of bucket names; without one chosen, the first.
  const buckets = el('div', { class: 'panel', id: 'kv-buckets' });
  main.append(el('h2', {}, 'Buckets'), buckets);
  await pager(buckets, 'buckets', async (after) => {
    const r = await get(`/api/v1/resources/kv-buckets?limit=100${after ? `&after=${enc(after)}` : ''}`);
    if (!bucket && r.buckets.length) bucket = r.buckets[0].name;
    return { rows: r.buckets, next: r.next };
  }, (rows) => rows.length
    ? el('div', { class: 'row' }, rows.map((b) => el('a', { class: `pill ${b.name === bucket ? 'warn' : ''}`, href: `#/state?bucket=${enc(b.name)}` }, b.name)))
    : el('span', { class: 'muted' }, 'No kv bucket yet.'))();
  if (bucket) {
    const value = el('pre', { id: 'kv-value', hidden: true });
    const keys = el('div', { class: 'panel', id: 'kv-keys' });
    const prefix = q.get('prefix') || '';
    main.append(el('h2', {}, `Bucket ${bucket}`),
      el('form', { class: 'row', onsubmit: (ev) => { ev.preventDefault(); location.hash = `#/state?bucket=${enc(bucket)}&prefix=${enc(ev.target.elements.prefix.value)}`; } },
        el('label', {}, 'key starts with', el('input', { name: 'prefix', value: prefix, id: 'kv-prefix' })),
        el('button', { type: 'submit' }, 'Search')),
      keys, value);
    await pager(keys, 'kv', async (after) => {
      const p = new URLSearchParams({ limit: '50' });
      if (prefix) p.set('prefix', prefix);
      if (after) p.set('after', after);
      const r = await get(`/api/v1/kv/${enc(bucket)}?${p}`);
      return { rows: r.keys, next: r.next };
    }, (rows) => table([
      { label: 'key', get: (k) => el('a', { href: '#', class: 'kv-key', onclick: async (e) => {
        e.preventDefault();
        const v = await get(`/api/v1/kv/${enc(bucket)}/${enc(k.key)}`);
        value.hidden = false;
        value.textContent = JSON.stringify(v, null, 2);
      } }, k.key) },
      { label: 'version', num: true, get: (k) => fmt(k.version) },
      { label: 'expires', get: (k) => when(k.expiresAt) },
      { label: 'updated', get: (k) => when(k.updatedAt) },
    ], rows, 'No key on this page.'))();
  }
  const timersBox = el('div', { class: 'panel', id: 'timers' });
  main.append(el('h2', {}, 'Timers'), timersBox);
  await pager(timersBox, 'timers', async (after) => {
    const t = await get(`/api/v1/timers?limit=50${after ? `&after=${enc(after)}` : ''}`);
    return { rows: t.timers, next: t.next };
  }, (rows) => table([
    { label: 'timer', get: (x) => x.timerId },
    { label: 'fires at', get: (x) => when(x.fireAt) },
    { label: 'queue / partition', get: (x) => `${x.queue} / ${x.partition}` },
    { label: 'payload', get: (x) => el('code', {}, JSON.stringify(x.payload).slice(0, 80)) },
    { label: '', get: (x) => el('button', { class: 'plain', onclick: async () => {
      if (!confirm(`Cancel timer ${x.timerId}?`)) return;
      await act(`cancelled ${x.timerId}`, () => api('DELETE', `/api/v1/timers/${enc(x.timerId)}`));
    } }, 'Cancel') },
  ], rows, 'No timer armed.'))();
}

// ---------------------------------------------------------------- system
async function viewSystem (main) {
  main.append(el('h1', {}, 'System'));
  const [maint, buffers, streams, pg] = await Promise.all([
    get('/api/v1/system/maintenance'), get('/api/v1/status/buffers'), get('/api/v1/resources/streams'),
    get('/api/v1/analytics/postgres-stats'),
  ]);
  const toggle = (id, label, on, path) => el('div', { class: 'switch' },
    el('input', { type: 'checkbox', id, checked: on, onchange: async (e) => {
      const enabled = e.target.checked;
      if (!confirm(`${enabled ? 'Enable' : 'Disable'} ${label}?`)) { e.target.checked = !enabled; return; }
      await act(`${label} ${enabled ? 'on' : 'off'}`, () => api('POST', path, { enabled }));
    } }), el('label', { for: id, style: 'flex-direction:row;font-size:1rem;color:inherit' }, label),
    el('span', { class: `pill ${on ? 'warn' : 'ok'}`, id: `${id}-state` }, on ? 'on' : 'off'));
  main.append(el('h2', {}, 'Maintenance'), el('div', { class: 'panel' },
    toggle('maint-push', 'push maintenance (pushes go to the disk spool)', maint.maintenanceMode, '/api/v1/system/maintenance'),
    toggle('maint-pop', 'pop maintenance (pops answer empty)', maint.popMaintenanceMode, '/api/v1/system/maintenance/pop')),
  el('h2', {}, 'Spool'), el('div', { class: 'cards' },
    card('Pending', fmt(buffers.pending)), card('Failed', fmt(buffers.failed), null, buffers.failed ? 'bad' : ''),
    card('Database', buffers.dbHealthy ? 'healthy' : 'down', null, buffers.dbHealthy ? 'ok' : 'bad')),
  el('h2', {}, 'Streams'), el('div', { class: 'panel', id: 'streams' }, table([
    { label: 'query', get: (s) => s.name },
    { label: 'source → sink', get: (s) => `${s.sourceQueue} → ${s.sinkQueue || '–'}` },
    { label: 'state keys', num: true, get: (s) => fmt(s.stateKeys) },
    { label: 'state updated', get: (s) => when(s.stateUpdatedAt) },
  ], streams.queries, 'No streaming query registered.')),
  el('h2', {}, 'PostgreSQL'), el('div', { class: 'panel' }, el('pre', {}, JSON.stringify(pg, null, 2))));
}

// ---------------------------------------------------------------- routing
const VIEWS = {
  overview: viewOverview, queues: viewQueues, queue: viewQueue, groups: viewGroups, group: viewGroup,
  messages: viewMessages, dlq: viewDlq, state: viewState, system: viewSystem,
};

function stopView () {
  timers.forEach(clearInterval);
  timers = [];
  charts.forEach((c) => c.destroy());
  charts = [];
}

let renderSeq = 0;
async function render () {
  stopView();
  const seq = ++renderSeq;
  const path = location.hash.replace(/^#\/?/, '').split('?')[0];
  const [view, ...rest] = path.split('/');
  const name = view && VIEWS[view] ? view : 'overview';
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.view === name || (a.dataset.view === 'queues' && name === 'queue') || (a.dataset.view === 'groups' && name === 'group'));
  }
  const main = el('main', { id: 'main', 'data-view': name });
  $('#main').replaceWith(main);
  try {
    await VIEWS[name](main, decodeURIComponent(rest.join('/')));
    if (seq === renderSeq) main.setAttribute('data-ready', 'true');
  } catch (e) {
    if (e.status === 401) return;
    if (seq !== renderSeq) return;
    main.append(el('p', { class: 'bad', id: 'view-error' }, e.status === 403 ? 'This token may not read this view.' : `Could not load: ${e.message}`));
    main.setAttribute('data-ready', 'error');
  }
}

window.addEventListener('hashchange', render);
showWho();
render();
