// harness view: the pages, drawn from the server's JSON. The server puts
// the HTML report's dom.js and record.js before this file, in one function:
// a record is drawn by the report's own drill-down (`drillNodes`). Every
// string from a run (model output above all) is set as text, never parsed
// as markup.

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

function grid(headers, rows) {
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

// The git commits a run's specs were at, each shortened (whole in its title).
function commits(run) {
  const box = el('span', null, { class: 'commit' });
  run.commits.forEach(function (c, i) { box.append(i ? ', ' : '', el('code', c.slice(0, 10), { title: c })); });
  return box;
}

// Where a run stands, with the commands that go on with it when interrupted.
function status(run) {
  const box = el('span');
  box.append(el('span', run.status, { class: run.status }));
  for (const command of run.resume) { box.append(' ', el('code', command, { class: 'cmd' })); }
  return box;
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
      money(run.cost, run.currency), run.shard || '', commits(run)] };
  });
  const list = el('div');
  function draw() {
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    sessionStorage.setItem('filter', filter.value);
    sessionStorage.setItem('since', since.value);
    sessionStorage.setItem('until', until.value);
    const kept = rows.filter(function (r) {
      const hay = [r.run.id, r.run.created, r.run.status, r.run.models.join(' '), r.run.specs.join(' '), r.run.tags.join(' '), r.run.commits.join(' ')].join(' ').toLowerCase();
      const day = (r.run.created || '').slice(0, 10);
      return words.every(function (w) { return hay.includes(w); }) &&
        (!since.value || day >= since.value) && (!until.value || day <= until.value);
    });
    list.replaceChildren(grid(['', 'run', 'created', 'status', 'models', 'specs', 'records',
      'pass rate', 'errors', 'unreadable', 'cost', 'shard', 'commit'], kept.map(function (r) { return r.cells; })));
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
  if (run.shard) { facts.append(' · ' + run.shard); }
  if (run.commits.length) { facts.append(' · commit ', commits(run)); }
  box.append(facts);
  if (run.shards.length) {
    const shards = el('p', 'Shards: ', { id: 'shards' });
    run.shards.forEach(function (s, i) { shards.append(i ? ', ' : '', link(s, '/run/' + encodeURIComponent(s))); });
    box.append(shards);
  }
  const base = '/run/' + encodeURIComponent(id) + '/records';
  box.append(grid(['model', 'spec', 'records', 'pass rate', '95% interval', 'errors', 'cost'],
    run.cells.map(function (c, i) {
      const interval = c.low === null || c.low === undefined ? '—' : percent(c.low) + ' – ' + percent(c.high);
      return [link(c.model, base + '?cell=' + i), c.spec, c.records, percent(c.rate), interval, c.errors, money(c.cost, run.currency)];
    })));
  const more = el('p');
  more.append(link('All records', base), ' · ', link('Against the golden transcripts', '/golden/' + encodeURIComponent(id)));
  box.append(more);
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
        '/run/' + encodeURIComponent(r.run) + '/record/' + r.n);
      return [open, r.model || '', el('span', verdict, { class: verdict }), r.failure || ''];
    });
    list.append(grid(['instance', 'model', 'verdict', 'failure'], rows));
    from = page.next;
    more.hidden = page.next === null;
  }
  more.addEventListener('click', load);
  box.append(more);
  await load();
  return box;
}

// One record, drawn by the report's drill-down; a journal line that is not
// a record shows as its text.
function recordView(d) {
  const box = el('div', null, { class: 'record' });
  if (d.unreadable !== undefined) {
    box.append(el('h2', 'Unreadable journal line'), el('p', d.unreadable, { class: 'error' }), el('pre', d.text));
    return box;
  }
  add(box, drillNodes(d.row, { id: d.id, model: d.model, spec: d.spec, prompt: d.row.p || [] }));
  return box;
}

// Where an answer of a comparison is read from.
function placePath(place) {
  const at = place.journal || place.golden;
  const path = '/api/runs/' + encodeURIComponent(at.run) + '/records/' + at.n;
  return place.golden ? path + '/golden' : path;
}

// One record of a run folder, and its journal line on request.
async function recordPage(id, n) {
  const path = '/api/runs/' + encodeURIComponent(id) + '/records/' + n;
  const d = await getJson(path);
  const box = el('div');
  box.append(link('back to the run', '/run/' + encodeURIComponent(id)), recordView(d));
  const line = el('details', null, { id: 'raw' });
  line.append(el('summary', 'The journal line'));
  line.addEventListener('toggle', async function () {
    if (!line.open || line.dataset.read) { return; }
    line.dataset.read = '1';
    const response = await fetch(api(path + '/raw'));
    line.append(el('pre', await response.text()));
  });
  box.append(line);
  return box;
}

// Two runs, or a run against its golden transcripts (`b` null): every
// shared cell tested, every flip with both answers side by side. The page's
// address is the view's: it can be shared.
async function comparePage(a, b) {
  const c = await getJson(b === null ? '/api/golden/' + encodeURIComponent(a)
    : '/api/compare/' + encodeURIComponent(a) + '/' + encodeURIComponent(b));
  const box = el('div');
  box.append(el('h1', b === null ? 'Run ' + c.b + ' against its golden transcripts' : 'Run ' + c.a + ' → run ' + c.b));
  const share = el('p');
  share.append('This view: ', el('a', location.href, { href: location.href, id: 'share' }));
  box.append(share);
  if (!c.cells.length) { box.append(el('p', b === null ? 'No golden transcript holds an instance of this run.' : 'No instance answered in both runs.')); }
  box.append(grid(['model', 'spec', 'instances', 'pass rate (' + c.a + ')', 'pass rate (' + c.b + ')', 'fixed', 'broke', 'p (McNemar)', 'b − a, 95%'],
    c.cells.map(function (x) {
      const interval = x.low === null || x.low === undefined ? '—' : percent(x.low) + ' – ' + percent(x.high);
      return [x.model, x.spec, x.instances, percent(x.a_rate), percent(x.b_rate), x.fixed, x.broke, x.p === null ? '—' : x.p.toPrecision(3), interval];
    })));
  box.append(el('h2', 'Flips'));
  const side = el('div', null, { class: 'side', id: 'side' });
  box.append(grid(['instance', 'model', 'change', ''], c.flips.map(function (f) {
    const show = el('button', 'both answers');
    show.addEventListener('click', async function () {
      const [ra, rb] = await Promise.all([getJson(placePath(f.a)), getJson(placePath(f.b))]);
      const column = function (title, d) {
        const col = el('div');
        col.append(el('h3', title), recordView(d));
        return col;
      };
      side.replaceChildren(column(c.a, ra), column(c.b, rb));
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
      else if (parts[0] === 'golden') { node = await comparePage(parts[1], null); }
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
