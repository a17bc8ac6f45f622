// harness view: the pages, drawn from the server's JSON. Every string from
// a run (model output above all) is set as text, never parsed as markup.
(function () {
'use strict';

const token = new URLSearchParams(location.search).get('token');
const main = document.getElementById('main');

// `path` of the API with the token, when the viewer has one.
function api(path) {
  if (!token) { return path; }
  return path + (path.includes('?') ? '&' : '?') + 'token=' + encodeURIComponent(token);
}

async function getJson(path) {
  const response = await fetch(api(path));
  if (!response.ok) { throw new Error(path + ': ' + response.status); }
  return response.json();
}

// An element with text `text` (set as text) and attributes `attrs`.
function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) { node.textContent = String(text); }
  for (const [k, v] of Object.entries(attrs || {})) { node.setAttribute(k, v); }
  return node;
}

// A link to the page `hash` of this viewer (only ever `#/...`).
function link(text, hash) {
  return el('a', text, { href: '#' + hash });
}

function percent(x) { return x === null || x === undefined ? '—' : (100 * x).toFixed(1) + '%'; }
function money(x, currency) { return x === null || x === undefined ? '—' : x.toFixed(4) + ' ' + (currency || ''); }

function table(headers, rows) {
  const t = el('table');
  const head = el('tr');
  for (const h of headers) { head.append(el('th', h)); }
  t.append(head);
  for (const cells of rows) {
    const tr = el('tr');
    for (const c of cells) {
      const td = el('td');
      if (c instanceof Node) { td.append(c); } else { td.textContent = c === null || c === undefined ? '' : String(c); }
      if (typeof c === 'number') { td.className = 'num'; }
      tr.append(td);
    }
    t.append(tr);
  }
  return t;
}

function status(run) {
  const s = el('span', run.status, { class: run.status });
  if (run.resume) {
    const box = el('span');
    box.append(s, ' ', el('code', run.resume, { class: 'cmd' }));
    return box;
  }
  return s;
}

// The run list, with filters and a compare of two chosen runs.
async function runsPage() {
  const runs = await getJson('/api/runs');
  const box = el('div');
  box.append(el('h1', 'Runs'));
  const controls = el('div', null, { class: 'controls' });
  const filter = el('input', null, { id: 'filter', placeholder: 'filter: model, spec, tag, status' });
  filter.value = sessionStorage.getItem('filter') || '';
  const since = el('input', null, { id: 'since', type: 'date', title: 'made on or after' });
  const until = el('input', null, { id: 'until', type: 'date', title: 'made on or before' });
  since.value = sessionStorage.getItem('since') || '';
  until.value = sessionStorage.getItem('until') || '';
  const compareButton = el('button', 'Compare the two checked runs', { id: 'compare' });
  controls.append(filter, 'from ', since, ' to ', until, compareButton);
  box.append(controls);
  const chosen = [];
  const rows = runs.map(function (run) {
    const check = el('input', null, { type: 'checkbox', 'data-run': run.id });
    check.addEventListener('change', function () {
      const i = chosen.indexOf(run.id);
      if (check.checked && i < 0) { chosen.push(run.id); }
      if (!check.checked && i >= 0) { chosen.splice(i, 1); }
    });
    const rate = run.records > 0 ? run.passed / run.records : null;
    const id = link(run.id, '/run/' + encodeURIComponent(run.id));
    return { run: run, cells: [check, id, run.created || '', status(run), run.models.join(', '),
      run.specs.join(', '), run.records, percent(rate), run.errors, run.unreadable,
      money(run.cost, run.currency), run.shard || ''] };
  });
  const list = el('div');
  function draw() {
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    sessionStorage.setItem('filter', filter.value);
    sessionStorage.setItem('since', since.value);
    sessionStorage.setItem('until', until.value);
    const kept = rows.filter(function (r) {
      const hay = [r.run.id, r.run.created, r.run.status, r.run.models.join(' '), r.run.specs.join(' '), r.run.tags.join(' ')].join(' ').toLowerCase();
      const day = (r.run.created || '').slice(0, 10);
      return words.every(function (w) { return hay.includes(w); }) &&
        (!since.value || day >= since.value) && (!until.value || day <= until.value);
    });
    list.replaceChildren(table(['', 'run', 'created', 'status', 'models', 'specs', 'records',
      'pass rate', 'errors', 'unreadable', 'cost', 'shard'], kept.map(function (r) { return r.cells; })));
  }
  filter.addEventListener('input', draw);
  since.addEventListener('change', draw);
  until.addEventListener('change', draw);
  compareButton.addEventListener('click', function () {
    if (chosen.length === 2) {
      location.hash = '#/compare/' + encodeURIComponent(chosen[0]) + '/' + encodeURIComponent(chosen[1]);
    }
  });
  draw();
  box.append(list);
  box.append(await trendSection());
  return box;
}

const SVG = 'http://www.w3.org/2000/svg';

// An SVG element with attributes `attrs` (numbers and fixed names only).
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) { node.setAttribute(k, String(v)); }
  return node;
}

// One (model, spec)'s pass rate over the runs, oldest first, with its 95%
// interval as a bar; a point's title names its run.
function trendChart(points) {
  const width = 640, height = 220, left = 40, right = 10, top = 10, bottom = 30;
  const chart = svg('svg', { class: 'trend', width: width, height: height, viewBox: '0 0 ' + width + ' ' + height, role: 'img' });
  const x = function (i) { return left + (points.length < 2 ? (width - left - right) / 2 : i * (width - left - right) / (points.length - 1)); };
  const y = function (v) { return top + (1 - v) * (height - top - bottom); };
  for (const v of [0, 0.5, 1]) {
    chart.append(svg('line', { x1: left, x2: width - right, y1: y(v), y2: y(v), stroke: 'currentColor', 'stroke-opacity': 0.2 }));
    const label = svg('text', { x: 4, y: y(v) + 4, 'font-size': 11, fill: 'currentColor' });
    label.textContent = (100 * v) + '%';
    chart.append(label);
  }
  let path = '';
  points.forEach(function (p, i) {
    if (p.rate === null || p.rate === undefined) { return; }
    path += (path ? ' L ' : 'M ') + x(i) + ' ' + y(p.rate);
    if (p.low !== null && p.low !== undefined) {
      chart.append(svg('line', { x1: x(i), x2: x(i), y1: y(p.low), y2: y(p.high), stroke: 'currentColor', 'stroke-width': 2, 'stroke-opacity': 0.5 }));
    }
    const dot = svg('circle', { cx: x(i), cy: y(p.rate), r: 4, fill: 'currentColor', class: 'point' });
    const title = svg('title');
    title.textContent = p.run + ' · ' + (p.created || '') + ' · ' + percent(p.rate) + ' of ' + p.records;
    dot.append(title);
    chart.append(dot);
  });
  chart.prepend(svg('path', { d: path || 'M 0 0', fill: 'none', stroke: 'currentColor', 'stroke-width': 1.5 }));
  return chart;
}

// The trend of one (model, spec) across every run, chosen from lists.
async function trendSection() {
  const points = await getJson('/api/trends');
  const box = el('section', null, { id: 'trend' });
  box.append(el('h2', 'Trend'));
  if (!points.length) { box.append(el('p', 'No records yet.')); return box; }
  const pick = function (key) {
    const select = el('select', null, { name: key });
    const seen = [];
    for (const p of points) { if (!seen.includes(p[key])) { seen.push(p[key]); } }
    for (const v of seen.sort()) { select.append(el('option', v, { value: v })); }
    return select;
  };
  const spec = pick('spec'), model = pick('model');
  spec.value = sessionStorage.getItem('trend-spec') || spec.value;
  model.value = sessionStorage.getItem('trend-model') || model.value;
  const area = el('div');
  function draw() {
    sessionStorage.setItem('trend-spec', spec.value);
    sessionStorage.setItem('trend-model', model.value);
    const mine = points.filter(function (p) { return p.spec === spec.value && p.model === model.value; });
    area.replaceChildren(mine.length ? trendChart(mine) : el('p', 'No run of this model on this spec.'));
  }
  spec.addEventListener('change', draw);
  model.addEventListener('change', draw);
  const controls = el('div', null, { class: 'controls' });
  controls.append('spec ', spec, ' model ', model);
  box.append(controls, area);
  draw();
  return box;
}

// One run: its cells, each opening its records.
async function runPage(id) {
  const run = await getJson('/api/runs/' + encodeURIComponent(id));
  const box = el('div');
  box.append(el('h1', 'Run ' + run.id));
  const facts = el('p');
  facts.append(status(run), ' · ' + (run.created || '') + ' · ' + run.records + ' records · cost ' + money(run.cost, run.currency));
  if (run.unreadable) { facts.append(' · ' + run.unreadable + ' unreadable journal lines'); }
  box.append(facts);
  const base = '/run/' + encodeURIComponent(id) + '/records';
  box.append(table(['model', 'spec', 'records', 'pass rate', '95% interval', 'errors', 'cost'],
    run.cells.map(function (c, i) {
      const interval = c.low === null || c.low === undefined ? '—' : percent(c.low) + ' – ' + percent(c.high);
      return [link(c.model, base + '?cell=' + i), c.spec, c.records, percent(c.rate), interval, c.errors, money(c.cost, run.currency)];
    })));
  box.append(link('All records', base));
  return box;
}

// A page of one run's records, filtered.
async function recordsPage(id, params) {
  const box = el('div');
  box.append(el('h1', 'Records of ' + id), link('back to the run', '/run/' + encodeURIComponent(id)));
  const controls = el('form', null, { class: 'controls', id: 'record-filters' });
  const outcome = el('select', null, { name: 'outcome' });
  for (const o of ['', 'pass', 'fail', 'error', 'unreadable']) { outcome.append(el('option', o || 'any outcome', { value: o })); }
  outcome.value = params.get('outcome') || '';
  const failure = el('input', null, { name: 'failure', placeholder: 'failure kind, e.g. wrong_value' });
  failure.value = params.get('failure') || '';
  const q = el('input', null, { name: 'q', placeholder: 'search answers and details' });
  q.value = params.get('q') || '';
  controls.append(outcome, failure, q, el('button', 'Filter', { type: 'submit' }));
  controls.addEventListener('submit', function (e) {
    e.preventDefault();
    const next = new URLSearchParams();
    if (params.get('cell')) { next.set('cell', params.get('cell')); }
    for (const input of [outcome, failure, q]) { if (input.value) { next.set(input.name, input.value); } }
    location.hash = '#/run/' + encodeURIComponent(id) + '/records?' + next.toString();
  });
  box.append(controls);
  const list = el('div', null, { id: 'records' });
  box.append(list);
  const more = el('button', 'More', { id: 'more' });
  let from = 0;
  async function load() {
    const query = new URLSearchParams(params);
    query.set('from', String(from));
    const page = await getJson('/api/runs/' + encodeURIComponent(id) + '/records?' + query.toString());
    const rows = page.items.map(function (r) {
      const verdict = r.unreadable ? 'unreadable' : r.error ? 'error' : r.passed ? 'pass' : 'fail';
      const open = link((r.spec || '?') + '/' + r.instance + (r.sample ? ' #' + r.sample : ''),
        '/run/' + encodeURIComponent(id) + '/record/' + r.n);
      return [open, r.model || '', el('span', verdict, { class: verdict }), r.failure || ''];
    });
    list.append(table(['instance', 'model', 'verdict', 'failure'], rows));
    from = page.next;
    more.hidden = page.next === null;
  }
  more.addEventListener('click', load);
  box.append(more);
  await load();
  return box;
}

// A message of a prompt or an episode.
function message(m) {
  const box = el('div', null, { class: 'msg' });
  box.append(el('div', m.role || '', { class: 'role' }));
  if (typeof m.content === 'string') { box.append(el('pre', m.content)); } else if (m.content !== undefined) { box.append(el('pre', JSON.stringify(m.content, null, 2))); }
  for (const call of m.tool_calls || []) {
    box.append(el('pre', 'call ' + (call.name || '') + ' ' + JSON.stringify(call.arguments)));
  }
  if (m.reasoning) {
    const details = el('details');
    details.append(el('summary', 'reasoning'), el('pre', typeof m.reasoning === 'string' ? m.reasoning : JSON.stringify(m.reasoning, null, 2)));
    box.append(details);
  }
  return box;
}

// Sections of one record: what the journal keeps, every field as text.
function recordView(r) {
  const box = el('div', null, { class: 'record' });
  const verdict = r.error ? 'error' : r.passed ? 'pass' : 'fail';
  box.append(el('h2', (r.instance_id || '') + ' · ' + (r.model || '') + ' · sample ' + (r.sample || 0)));
  box.append(el('p', verdict + (r.failure ? ' · ' + r.failure : ''), { class: verdict }));
  const shown = new Set(['instance_id', 'model', 'sample', 'passed', 'failure', 'messages', 'response', 'trajectory', 'rules', 'error', 'answer', 'expected', 'detail', 'state']);
  function section(title, node) { box.append(el('h3', title), node); }
  if (r.error) { section('Error', el('pre', r.error)); }
  if (r.messages) { const m = el('div'); for (const x of r.messages) { m.append(message(x)); } section('Prompt', m); }
  if (r.response !== undefined && r.response !== null) { section('Answer', el('pre', r.response)); }
  if (r.answer !== undefined && r.answer !== null) { section('Extracted', el('pre', typeof r.answer === 'string' ? r.answer : JSON.stringify(r.answer, null, 2))); }
  if (r.expected !== undefined && r.expected !== null) { section('Expected', el('pre', JSON.stringify(r.expected, null, 2))); }
  if (r.detail) { section('Detail', el('pre', r.detail)); }
  if (Array.isArray(r.rules) && r.rules.length) {
    section('Rules', table(['rule', 'verdict', 'detail', 'judge'], r.rules.map(function (x) {
      const judge = x.judge ? JSON.stringify(x.judge, null, 2) : '';
      return [x.rule || x.name || x.kind || '', x.passed ? 'pass' : 'fail', x.detail || '', judge];
    })));
  }
  if (Array.isArray(r.trajectory) && r.trajectory.length) { const t = el('div'); for (const x of r.trajectory) { t.append(message(x)); } section('Episode', t); }
  if (r.state !== undefined && r.state !== null) { section('Final state', el('pre', JSON.stringify(r.state, null, 2))); }
  const rest = {};
  for (const [k, v] of Object.entries(r)) { if (!shown.has(k)) { rest[k] = v; } }
  section('Everything else', el('pre', JSON.stringify(rest, null, 2)));
  return box;
}

async function recordPage(id, n) {
  const r = await getJson('/api/runs/' + encodeURIComponent(id) + '/records/' + n);
  const box = el('div');
  box.append(link('back to the run', '/run/' + encodeURIComponent(id)), recordView(r));
  return box;
}

// Two runs: every shared cell tested, every flip with both answers.
async function comparePage(a, b) {
  const c = await getJson('/api/compare/' + encodeURIComponent(a) + '/' + encodeURIComponent(b));
  const box = el('div');
  box.append(el('h1', 'Run ' + c.a + ' → run ' + c.b));
  box.append(table(['model', 'spec', 'instances', 'pass rate (a)', 'pass rate (b)', 'fixed', 'broke', 'p (McNemar)', 'b − a, 95%'],
    c.cells.map(function (x) {
      const interval = x.low === null || x.low === undefined ? '—' : percent(x.low) + ' – ' + percent(x.high);
      return [x.model, x.spec, x.instances, percent(x.a_rate), percent(x.b_rate), x.fixed, x.broke, x.p === null ? '—' : x.p.toPrecision(3), interval];
    })));
  box.append(el('h2', 'Flips'));
  const side = el('div', null, { class: 'side', id: 'side' });
  box.append(table(['instance', 'model', 'change', ''], c.flips.map(function (f) {
    const show = el('button', 'both answers');
    show.addEventListener('click', async function () {
      const [ra, rb] = await Promise.all([
        getJson('/api/runs/' + encodeURIComponent(c.a) + '/records/' + f.a),
        getJson('/api/runs/' + encodeURIComponent(c.b) + '/records/' + f.b)]);
      side.replaceChildren(recordView(ra), recordView(rb));
      side.scrollIntoView();
    });
    return [f.spec + '/' + f.instance + (f.sample ? ' #' + f.sample : ''), f.model,
      el('span', f.fixed ? 'fail → pass' : 'pass → fail', { class: f.fixed ? 'pass' : 'fail' }), show];
  })));
  if (c.more_flips) { box.append(el('p', c.more_flips + ' more flips not listed')); }
  box.append(side);
  return box;
}

// Draws the page the hash names.
let drawing = Promise.resolve();
function route() {
  drawing = drawing.then(async function () {
    const [path, query] = location.hash.replace(/^#/, '').split('?');
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    const params = new URLSearchParams(query || '');
    let node;
    try {
      if (parts[0] === 'run' && parts[2] === 'records') { node = await recordsPage(parts[1], params); }
      else if (parts[0] === 'run' && parts[2] === 'record') { node = await recordPage(parts[1], Number(parts[3])); }
      else if (parts[0] === 'run') { node = await runPage(parts[1]); }
      else if (parts[0] === 'compare') { node = await comparePage(parts[1], parts[2]); }
      else { node = await runsPage(); }
    } catch (e) {
      node = el('p', String(e), { class: 'error' });
    }
    main.replaceChildren(node);
    main.setAttribute('data-drawn', String(Date.now()));
  });
}

window.addEventListener('hashchange', route);
route();

// Live: the run list and a run's page redraw when the folder changes.
const live = document.getElementById('live');
const events = new EventSource(api('/api/events'));
events.addEventListener('version', function (e) {
  live.textContent = 'live · v' + e.data;
  const path = location.hash.replace(/^#/, '');
  if (path === '' || path === '/' || /^\/run\/[^/]+$/.test(path.split('?')[0])) { route(); }
});
events.addEventListener('error', function () { live.textContent = 'not connected'; });
})();
