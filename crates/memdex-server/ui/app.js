// memdex inspector. It talks only to the documented API, with the key the user gives
// (Authorization: Bearer), so it sees exactly what that key may see. Every piece of stored
// text reaches the page as a text node (el() below): never parsed as HTML.
'use strict';

const $ = (id) => document.getElementById(id);
const SVG_NS = 'http://www.w3.org/2000/svg';
const enc = encodeURIComponent;
const KEY_STORE = 'memdex-inspector-key';

const state = {
  key: sessionStorage.getItem(KEY_STORE) || '',
  access: null, // 'admin' | 'tenant'
  tenants: [],
  tenant: null,
  sessions: [],
  empty: '', // what the history says when it lists no session
  granularity: 'round',
  open: new Set(), // sessions whose items are shown
  items: new Map(), // session id -> its items
  lastSearch: null,
  moreTenants: null, // the listing's `next`: more tenants than it shows
  samples: [], // the last minute's /metrics samples {t, searches}, for the rate
  poll: null,
  confirm: null, // the open confirmation's resolver
};

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/* ---------- building the page: user text only ever goes in as text ---------- */

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  setProps(e, props);
  add(e, children);
  return e;
}

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  setProps(e, attrs);
  add(e, children);
  return e;
}

function setProps(e, props) {
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') {
      for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
    } else if (k.startsWith('on')) {
      throw new Error('event handlers go in "on", not attributes');
    } else {
      e.setAttribute(k, v === true ? '' : String(v));
    }
  }
}

function add(e, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

const fmt = (v) => (typeof v !== 'number' ? '—' : Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(3));
const fmtInt = (n) => Number(n).toLocaleString('en-US');
const plural = (n, word) => `${fmtInt(n)} ${word}${n === 1 ? '' : 's'}`;
const fmtDate = (ms) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
const itemWord = () => (state.granularity === 'round' ? 'round' : state.granularity === 'turn' ? 'turn' : 'item');

function notify(message, bad) {
  const n = $('notice');
  n.textContent = message;
  n.className = 'notice' + (bad ? ' bad' : '');
  n.hidden = !message;
}

/* ---------- the API ---------- */

async function api(method, path, body) {
  const headers = {};
  if (state.key) headers.Authorization = 'Bearer ' + state.key;
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (_) {
    data = null;
  }
  if (r.status === 401) askKey(state.key ? 'That key was refused.' : '');
  if (!r.ok) {
    const message = (data && data.error && data.error.message) || text || r.statusText;
    throw new ApiError(r.status, `${method} ${decodeURI(path)}: ${message}`);
  }
  return data === null ? text : data;
}

const tenantPath = (t) => '/v1/tenants/' + enc(t);

/* ---------- key ---------- */

function askKey(message) {
  document.body.dataset.state = 'need-key';
  $('key-error').textContent = message || '';
  $('key').value = '';
  if (!$('key-dialog').open) $('key-dialog').showModal();
  $('key').focus();
}

async function useKey() {
  state.key = $('key').value.trim();
  sessionStorage.setItem(KEY_STORE, state.key);
  $('key-dialog').close();
  await start();
}

function clearData() {
  state.access = null;
  state.tenants = [];
  state.tenant = null;
  state.sessions = [];
  state.open.clear();
  state.items.clear();
  state.lastSearch = null;
  renderTenants();
  renderHistory();
  $('hits').replaceChildren();
  $('search-status').textContent = '';
  $('stats').replaceChildren();
  $('who').textContent = '';
  $('history-title').textContent = 'History';
}

/* ---------- start ---------- */

async function start() {
  document.body.dataset.state = 'loading';
  clearData();
  showHealth();
  try {
    await loadTenants();
  } catch (e) {
    if (e.status === 401) return askKey(state.key ? 'That key was refused.' : '');
    document.body.dataset.state = 'error';
    return notify(e.message, true);
  }
  notify('');
  showWho();
  const first = state.tenants[0] && state.tenants[0].tenant;
  const want = hashTenant() || first;
  if (want) await selectTenant(want);
  document.body.dataset.state = 'ready';
  document.body.dataset.readyMs = String(Math.round(performance.now()));
  startStats();
}

async function showHealth() {
  try {
    const h = await api('GET', '/healthz');
    $('server').textContent = `${h.model} · dim ${h.dim} · ${h.device} · store v${h.manifest_version} · ${h.status}`;
  } catch (e) {
    $('server').textContent = 'server: ' + e.message;
  }
}

function showWho() {
  const who = $('who');
  if (state.access === 'tenant') who.textContent = `tenant key: ${state.tenants.map((t) => t.tenant).join(', ')}`;
  else who.textContent = state.key ? 'admin key' : 'no keys on this server (loopback only)';
  $('change-key').hidden = !state.key;
}

function hashTenant() {
  const m = /^#tenant=(.+)$/.exec(location.hash);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]);
  } catch (_) {
    return null;
  }
}

/* ---------- tenants ---------- */

async function loadTenants() {
  const prefix = $('tenant-filter').value.trim();
  const r = await api('GET', '/v1/tenants' + (prefix ? '?prefix=' + enc(prefix) : ''));
  state.access = r.access;
  state.tenants = r.tenants;
  state.moreTenants = r.next || null;
  renderTenants();
}

function renderTenants() {
  const more = state.moreTenants;
  const rows = state.tenants.map((t) =>
    el('li', { class: t.tenant === state.tenant ? 'on' : '', 'data-tenant': t.tenant, on: { click: () => selectTenant(t.tenant) } },
      el('span', null, t.tenant),
      el('span', { class: 'count', title: 'live items' }, fmtInt(t.items))));
  $('tenant-list').replaceChildren(...rows);
  if (!rows.length && state.access) $('tenant-list').append(el('li', { class: 'muted' }, 'no tenant holds memories yet'));
  $('tenant-more').hidden = !more;
  $('tenant-more').textContent = more ? 'More tenants: filter by name.' : '';
}

async function selectTenant(t) {
  state.tenant = t;
  state.open.clear();
  state.items.clear();
  state.lastSearch = null;
  notify('');
  history.replaceState(null, '', '#tenant=' + enc(t));
  renderTenants();
  $('history-title').textContent = 'History of ' + t;
  $('hits').replaceChildren();
  $('search-status').textContent = `Search ${t}'s memories: each hit shows its score after every ranking stage.`;
  showRequest();
  await loadSessions();
}

/* ---------- history: sessions on a timeline, each session's items ---------- */

async function loadSessions() {
  state.sessions = [];
  state.empty = 'no sessions';
  try {
    const r = await api('GET', tenantPath(state.tenant) + '/sessions');
    state.sessions = r.sessions;
    state.granularity = r.granularity;
  } catch (e) {
    if (e.status === 404) state.empty = 'No memories yet.';
    if (e.status === 403) {
      state.empty = 'This key may not read this tenant.';
      $('search-status').textContent = '';
    }
    if (e.status !== 404) notify(e.message, true);
  }
  for (const id of state.open) if (!state.sessions.some((s) => s.session_id === id)) state.open.delete(id);
  await Promise.all([...state.open].map(loadItems));
  renderHistory();
}

async function loadItems(id) {
  try {
    const r = await api('GET', tenantPath(state.tenant) + '/sessions/' + enc(id));
    state.items.set(id, r.items);
  } catch (e) {
    state.open.delete(id);
    notify(e.message, true);
  }
}

function renderHistory() {
  renderTimeline();
  const rows = state.sessions.map(sessionRow);
  $('sessions').replaceChildren(...rows);
  if (state.tenant && !rows.length) $('sessions').append(el('li', { class: 'muted' }, state.empty));
}

function sessionRow(s) {
  const open = state.open.has(s.session_id);
  const li = el('li', { class: 'session' + (open ? ' on' : ''), 'data-session': s.session_id },
    el('div', { class: 'session-head', on: { click: () => toggleSession(s.session_id) } },
      el('span', { class: 'date', title: 'UTC' }, fmtDate(s.timestamp_ms)),
      el('span', { class: 'id' }, s.session_id),
      el('span', { class: 'count small' }, plural(s.items, itemWord())),
      forgetButton('session', () => forgetSession(s))));
  if (open) li.append(itemsList(s.session_id));
  return li;
}

function itemsList(id) {
  const items = state.items.get(id) || [];
  return el('ol', { class: 'rounds' }, items.map((it) =>
    el('li', { class: 'round', 'data-item': it.item_id },
      el('div', { class: 'round-head' },
        el('span', null, `${itemWord()} ${it.turn} · item ${it.item_id}`),
        forgetButton('item', () => forgetItem(it))),
      el('p', { class: 'text' }, it.value))));
}

async function toggleSession(id) {
  if (state.open.has(id)) {
    state.open.delete(id);
  } else {
    state.open.add(id);
    await loadItems(id);
  }
  renderHistory();
}

async function openSession(id) {
  if (!state.open.has(id)) await toggleSession(id);
  const row = [...document.querySelectorAll('#sessions .session')].find((r) => r.dataset.session === id);
  if (row) row.scrollIntoView({ block: 'nearest' });
}

function renderTimeline() {
  const box = $('timeline');
  const ss = state.sessions;
  if (!ss.length) return box.replaceChildren();
  const W = Math.max(box.clientWidth, 240), H = 74, pad = 16, axisY = 46;
  const t0 = ss[0].timestamp_ms, t1 = ss[ss.length - 1].timestamp_ms;
  const span = Math.max(t1 - t0, 86400000);
  const xOf = (t) => pad + ((t - t0) / span) * (W - 2 * pad);
  const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'sessions over time' },
    svg('line', { x1: pad, x2: W - pad, y1: axisY, y2: axisY, class: 'axis' }));
  for (const t of ticks(t0, t1, W)) {
    g.append(svg('line', { x1: xOf(t.ms), x2: xOf(t.ms), y1: axisY, y2: axisY + 4, class: 'axis' }),
      svg('text', { x: xOf(t.ms), y: H - 6, 'text-anchor': 'middle', class: 'tick' }, t.label));
  }
  let lastX = -99, lift = 0;
  for (const s of ss) {
    const x = xOf(s.timestamp_ms);
    lift = x - lastX < 14 ? (lift + 1) % 3 : 0;
    lastX = x;
    const r = Math.min(4 + Math.sqrt(s.items) * 2, 12);
    g.append(svg('circle', {
      cx: x, cy: axisY - 14 - lift * 9, r, 'data-session': s.session_id,
      class: state.open.has(s.session_id) ? 'on' : '', on: { click: () => openSession(s.session_id) },
    }, svg('title', null, `${s.session_id} · ${fmtDate(s.timestamp_ms)} UTC · ${plural(s.items, itemWord())}`)));
  }
  box.replaceChildren(g);
}

/** Month (or year) ticks between t0 and t1, at most about one per 70 px. */
function ticks(t0, t1, width) {
  const d = new Date(t0);
  let y = d.getUTCFullYear(), m = d.getUTCMonth();
  const months = (new Date(t1).getUTCFullYear() - y) * 12 + new Date(t1).getUTCMonth() - m + 1;
  const step = [1, 2, 3, 6, 12, 24, 60].find((s) => months / s <= width / 70) || 120;
  if (step >= 12) m = 0;
  const out = [];
  for (let i = 0; i < 400; i++) {
    const ms = Date.UTC(y, m, 1);
    if (ms > t1) break;
    if (ms >= t0) out.push({ ms, label: step >= 12 ? String(y) : `${y}-${String(m + 1).padStart(2, '0')}` });
    m += step;
    y += Math.floor(m / 12);
    m %= 12;
  }
  return out;
}

/* ---------- search ---------- */

// The search API's `stages` object: the first value of each choice and the `on` of each
// switch are the server's defaults, left out of the request.
const STAGE_CHOICES = [
  { field: 'retriever', label: 'retriever', values: ['hybrid', 'dense', 'bm25', 'thoughts', 'tree'] },
  { field: 'fusion', label: 'fusion', values: ['minmax', 'rrf'] },
  { field: 'time', label: 'time', values: ['front', 'boost', 'off'] },
];
const STAGE_SWITCHES = [
  { field: 'expand_terms', label: 'expansion', on: true, off: 0, title: 'query expansion: 10 of the tenant\'s terms, weight 0.1' },
  { field: 'fragrel_alpha', label: 'FragRel', on: true, off: 0, title: 'FragRel environment scores (α 0.5, w 0.8, within sessions)' },
  { field: 'importance', label: 'importance', on: true, off: 0, title: 'Mimir importance (0.3)' },
  { field: 'recency', label: 'recency', on: false, value: 0.5, title: 'Mimir recency (0.5 when on)' },
  { field: 'thought_weight', label: 'thoughts', on: false, value: 0.5, title: 'TiM thought stage, weight 0.5 (needs index --thoughts)' },
  { field: 'tree_weight', label: 'tree', on: false, value: 0.5, title: 'MemTree stage, weight 0.5 (needs index --tree)' },
  { field: 'update_window', label: 'update', on: true, off: 0, title: 'update stage: a newer statement of a change first (window 5)' },
];
const controls = new Map();

function buildStages() {
  const fs = $('stages');
  for (const c of STAGE_CHOICES) {
    const sel = el('select', { 'data-field': c.field, on: { change: showRequest } },
      c.values.map((v, i) => el('option', { value: v }, i === 0 ? `${v} (default)` : v)));
    controls.set(c.field, sel);
    fs.append(el('label', null, c.label, sel));
  }
  for (const s of STAGE_SWITCHES) {
    const box = el('input', { type: 'checkbox', 'data-field': s.field, checked: s.on, on: { change: showRequest } });
    controls.set(s.field, box);
    fs.append(el('label', { title: s.title }, box, s.label));
  }
  showRequest();
}

function stagesBody() {
  const out = {};
  for (const c of STAGE_CHOICES) {
    const v = controls.get(c.field).value;
    if (v !== c.values[0]) out[c.field] = v;
  }
  for (const s of STAGE_SWITCHES) {
    const on = controls.get(s.field).checked;
    if (on !== s.on) out[s.field] = on ? s.value : s.off;
  }
  return out;
}

function searchBody() {
  const body = { query: $('q').value.trim(), k: Math.min(Math.max(Number($('k').value) || 5, 1), 100), explain: true };
  const date = $('date').value.trim();
  if (date) body.date = date;
  const stages = stagesBody();
  if (Object.keys(stages).length) body.stages = stages;
  return body;
}

function showRequest() {
  const stages = stagesBody();
  const path = state.tenant ? tenantPath(state.tenant) + '/search' : '/v1/tenants/{tenant}/search';
  $('request').textContent = `POST ${path} · stages: ${Object.keys(stages).length ? JSON.stringify(stages) : 'the defaults'}`;
}

async function submitSearch(ev) {
  ev.preventDefault();
  if (!state.tenant) return notify('Pick a tenant first.', true);
  const body = searchBody();
  if (!body.query) return $('q').focus();
  await runSearch(body);
}

async function runSearch(body) {
  $('search-status').textContent = 'searching…';
  document.body.dataset.search = 'running';
  const t0 = performance.now();
  try {
    const r = await api('POST', tenantPath(state.tenant) + '/search', body);
    state.lastSearch = body;
    renderHits(r, performance.now() - t0);
  } catch (e) {
    $('search-status').textContent = '';
    $('hits').replaceChildren();
    notify(e.message, true);
  }
  document.body.dataset.search = 'done';
}

// Stage inputs (each on its own scale) and the score after each stage (one scale).
const INPUTS = [['dense', 'dense'], ['bm25', 'bm25'], ['expansion', 'exp.']];
const CHAIN = [['first_stage', 'first'], ['fragrel', 'frag.'], ['structures', 'struct.'], ['signals', 'signals'], ['superseded', 'sup.']];

function renderHits(r, ms) {
  const hits = r.hits || [];
  const max = (f) => Math.max(1e-9, ...hits.map((h) => Math.abs((h.explain || {})[f] || 0)));
  const scale = {};
  for (const [f] of INPUTS) scale[f] = max(f);
  scale.chain = Math.max(...CHAIN.map(([f]) => max(f)));
  $('hits').replaceChildren(...hits.map((h) => hitCard(h, scale)));
  const searched = r.searched && r.searched !== r.query ? ` · searched as “${r.searched}”` : '';
  const legend = hits.length ? ' · grey bars: the first stage\'s inputs (each to its own scale); blue: the score after each stage' : '';
  $('search-status').textContent = `${plural(hits.length, 'hit')} in ${Math.round(ms)} ms${searched}${legend}`;
}

function hitCard(h, scale) {
  const x = h.explain || {};
  return el('li', { class: 'hit', 'data-item': h.item_id, 'data-session': h.session_id },
    el('div', { class: 'hit-head' },
      el('span', { class: 'rank' }, '#' + h.rank),
      el('span', { class: 'score', title: 'final score' }, fmt(h.score)),
      el('span', { title: `session date: ${fmtDate(h.timestamp_ms)} UTC` }, fmtDate(h.timestamp_ms).slice(0, 10)),
      el('span', null, 'session ',
        el('button', { type: 'button', class: 'link', on: { click: () => openSession(h.session_id) } }, h.session_id)),
      el('span', null, `${itemWord()} ${h.turn} · item ${h.item_id}`),
      el('span', { class: 'actions' },
        forgetButton('item', () => forgetItem(h)),
        forgetButton('session', () => forgetSession({ session_id: h.session_id })))),
    el('div', { class: 'hit-body' },
      el('p', { class: 'text' }, h.value),
      el('div', { class: 'chart' }, stageChart(x, scale), rankPath(h, x), scoreTable(h, x))),
    updateNote(h, x));
}

function stageChart(x, scale) {
  const W = 250, H = 78, base = 58, room = 44, bw = 21, gap = 9;
  const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'stage-chart', role: 'img', 'aria-label': 'score after each stage' });
  let px = 2;
  const bar = (field, label, max, cls) => {
    const v = x[field];
    if (typeof v !== 'number') return;
    const h = Math.max(1, (Math.max(0, v) / max) * room);
    g.append(
      svg('rect', { x: px, y: base - h, width: bw, height: h, class: cls, 'data-stage': field }, svg('title', null, `${field}: ${fmt(v)}`)),
      svg('text', { x: px + bw / 2, y: base - h - 2, 'text-anchor': 'middle', class: 'lbl' }, v.toFixed(2)),
      svg('text', { x: px + bw / 2, y: H - 8, 'text-anchor': 'middle', class: 'lbl' }, label));
    px += bw + gap;
  };
  for (const [f, l] of INPUTS) bar(f, l, scale[f], 'bar-in');
  g.append(svg('line', { x1: px + 1, x2: px + 1, y1: 6, y2: base + 8, class: 'sep' }));
  px += gap + 2;
  for (const [f, l] of CHAIN) bar(f, l, scale.chain, 'bar');
  g.append(svg('line', { x1: 0, x2: W, y1: base + 0.5, y2: base + 0.5, class: 'sep' }));
  return g;
}

function rankPath(h, x) {
  if (typeof x.score_rank !== 'number') return null;
  const step = (label, r) => [`${label} `, el('b', null, '#' + r)];
  return el('div', { class: 'ranks' },
    step('by score', x.score_rank), ' → ', step(x.time ? `time (${x.time})` : 'time', x.time_rank), ' → ', step('final', h.rank));
}

function scoreTable(h, x) {
  const rows = [...INPUTS, ...CHAIN].filter(([f]) => typeof x[f] === 'number')
    .map(([f]) => el('tr', null, el('td', null, f), el('td', null, fmt(x[f]))));
  rows.push(el('tr', null, el('td', null, 'score'), el('td', null, fmt(h.score))));
  return el('details', { class: 'scores' }, el('summary', null, 'scores'), el('table', null, rows));
}

function updateNote(h, x) {
  if (!x.update && typeof x.update_moved_from !== 'number') return null;
  const u = x.update;
  const moved = typeof x.update_moved_from === 'number' ? `moved this from #${x.update_moved_from} to #${h.rank}` : 'linked this';
  if (!u) return el('div', { class: 'update' }, `Update stage ${moved}.`);
  const dir = u.direction === 'oldest_first' ? 'oldest first: a question about an earlier state' : 'newest first: a question about the present';
  return el('div', { class: 'update', 'data-update': 'moved' },
    el('b', null, 'Update stage'), ` ${moved} (${dir}). Linked to item ${u.linked_item_id} of session `,
    el('button', { type: 'button', class: 'link', on: { click: () => openSession(u.linked_session_id) } }, u.linked_session_id),
    '; cue ', el('b', { class: 'cue' }, `“${u.cue}”`), ' in ', el('q', null, u.sentence));
}

/* ---------- forgetting (the API's DELETE routes, after a confirmation) ---------- */

function forgetButton(what, act) {
  return el('button', {
    type: 'button', class: 'forget', 'data-forget': what, title: `Forget this ${what}`,
    on: { click: (ev) => { ev.stopPropagation(); act(); } },
  }, 'forget ' + what);
}

async function forgetSession(s) {
  const n = typeof s.items === 'number' ? ` (${plural(s.items, itemWord())})` : '';
  if (!(await confirmForget(`Forget session “${s.session_id}” of ${state.tenant}${n}?`))) return;
  await forget(tenantPath(state.tenant) + '/sessions/' + enc(s.session_id), `session “${s.session_id}”`);
}

async function forgetItem(it) {
  const what = `item ${it.item_id} (${itemWord()} ${it.turn} of session “${it.session_id}”)`;
  if (!(await confirmForget(`Forget ${what} of ${state.tenant}?`))) return;
  await forget(tenantPath(state.tenant) + '/items/' + it.item_id, what);
}

function confirmForget(text) {
  $('confirm-text').textContent = text;
  $('confirm-dialog').showModal();
  $('confirm-cancel').focus();
  return new Promise((resolve) => { state.confirm = resolve; });
}

function closeConfirm(yes) {
  if ($('confirm-dialog').open) $('confirm-dialog').close();
  const done = state.confirm;
  state.confirm = null;
  if (done) done(yes);
}

async function forget(path, what) {
  try {
    const r = await api('DELETE', path);
    notify(`Forgot ${what}: ${plural(r.items_deleted, 'item')} deleted (store v${r.manifest_version}).`);
  } catch (e) {
    return notify(e.message, true);
  }
  await loadTenants().catch((e) => notify(e.message, true));
  state.items.clear();
  await loadSessions();
  if (state.lastSearch) await runSearch(state.lastSearch);
  showHealth();
  refreshStats();
}

/* ---------- server stats (/metrics, admin key) ---------- */

const SEARCH_STAGES = ['tokenize', 'model_queue', 'embed', 'rank_queue', 'rank'];

function parseMetrics(text) {
  const out = new Map();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    if (!out.has(m[1])) out.set(m[1], []);
    out.get(m[1]).push({ labels, value: Number(m[3]) });
  }
  return out;
}

const total = (m, name, keep) => (m.get(name) || []).filter((s) => !keep || keep(s.labels)).reduce((a, s) => a + s.value, 0);

function startStats() {
  refreshStats();
  if (!state.poll) state.poll = setInterval(() => { if (!document.hidden) refreshStats(); }, 3000);
}

async function refreshStats() {
  if (state.access !== 'admin') {
    return $('stats').replaceChildren(state.access ? el('div', { class: 'stat muted small' }, 'Server stats need the admin key.') : '');
  }
  let m;
  try {
    m = parseMetrics(await api('GET', '/metrics'));
  } catch (e) {
    return $('stats').replaceChildren(el('div', { class: 'stat muted small' }, 'stats: ' + e.message));
  }
  const now = performance.now();
  const searches = total(m, 'memdex_search_stage_seconds_count', (l) => l.stage === 'rank');
  // searches per second over the last minute of samples (a restarted server starts over)
  state.samples = state.samples.filter((s) => now - s.t <= 60000 && s.searches <= searches);
  state.samples.push({ t: now, searches });
  const first = state.samples[0];
  const rate = now - first.t >= 1000 ? ((searches - first.searches) * 1000) / (now - first.t) : null;
  renderStats(m, searches, rate);
}

function renderStats(m, searches, rate) {
  const requests = total(m, 'memdex_http_requests_total');
  const failed = total(m, 'memdex_http_requests_total', (l) => Number(l.status) >= 400);
  const stat = (value, label, title) => el('div', { class: 'stat', title }, el('b', null, value), el('span', null, label));
  $('stats').replaceChildren(
    stat(rate === null ? '…' : rate.toFixed(2), 'searches/s', 'answered searches per second over the last minute (sampled every 3 s)'),
    stat(fmtInt(searches), 'searches', 'searches answered since the server started'),
    stageStat(m, searches),
    stat(fmtInt(requests), 'requests', 'HTTP requests since the server started'),
    stat(fmtInt(failed), '4xx/5xx', 'requests answered with an error'),
    stat(fmtInt(total(m, 'memdex_store_rows')), 'live items'),
    stat(fmtInt(total(m, 'memdex_store_tenants')), 'tenants'),
    stat(fmtInt(total(m, 'memdex_store_segments')), 'segments'),
    stat(fmtInt(total(m, 'memdex_store_deleted_pending')), 'deleted, pending', 'deleted rows waiting for compaction'),
    stat(fmtInt(total(m, 'memdex_embed_queue_depth') + total(m, 'memdex_write_queue_depth')), 'queued', 'embedding and write jobs waiting'));
}

function stageStat(m, searches) {
  const secs = SEARCH_STAGES.map((s) => total(m, 'memdex_search_stage_seconds_sum', (l) => l.stage === s));
  const mean = secs.map((s) => (searches ? (s * 1000) / searches : 0));
  const sum = mean.reduce((a, b) => a + b, 0);
  const bar = el('div', { class: 'stagebar' }, mean.map((v, i) =>
    el('i', { class: 's' + i, title: `${SEARCH_STAGES[i]}: ${v.toFixed(2)} ms` })));
  // widths through the CSSOM (no inline style attribute: the page's CSP allows none)
  [...bar.children].forEach((c, i) => { c.style.width = sum ? `${(mean[i] / sum) * 100}%` : '0'; });
  const legend = el('div', { class: 'legend' }, SEARCH_STAGES.map((s, i) => el('span', null, el('i', { class: 's' + i }), `${s} ${mean[i].toFixed(2)}`)));
  return el('div', { class: 'stat wide', title: 'mean milliseconds per answered search, per stage' },
    el('span', null, `per search: ${sum.toFixed(2)} ms`), bar, legend);
}

/* ---------- wiring ---------- */

function debounce(f, ms) {
  let t = null;
  return (...a) => { clearTimeout(t); t = setTimeout(() => f(...a), ms); };
}

function wire() {
  $('key-ok').addEventListener('click', useKey);
  $('key').addEventListener('keydown', (ev) => { if (ev.key === 'Enter') { ev.preventDefault(); useKey(); } });
  $('change-key').addEventListener('click', () => askKey(''));
  $('confirm-ok').addEventListener('click', () => closeConfirm(true));
  $('confirm-cancel').addEventListener('click', () => closeConfirm(false));
  $('confirm-dialog').addEventListener('close', () => closeConfirm(false));
  $('search-form').addEventListener('submit', submitSearch);
  $('tenant-filter').addEventListener('input', debounce(() => loadTenants().catch((e) => notify(e.message, true)), 200));
  window.addEventListener('hashchange', () => {
    const t = hashTenant();
    if (t && t !== state.tenant) selectTenant(t);
  });
  window.addEventListener('resize', debounce(renderTimeline, 150));
  buildStages();
}

wire();
start();
