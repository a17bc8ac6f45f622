'use strict';
// The harness HTML report. Everything shown comes from the JSON in #report-data and
// is set as text (never as markup): model output is hostile. Rows are drawn on
// demand, so a page with 10,000 instances stays quick.
(function () {
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const R = data.report;
  const rows = data.records;
  const specs = R.specs;
  const models = R.models;
  const ROW = 34;
  const SVG = 'http://www.w3.org/2000/svg';

  // ---------- text and numbers ----------

  // Control characters as visible symbols: raw ANSI escapes must not hide as nothing.
  function vis(text) {
    return String(text)
      .replace(/[\u0000-\u0008\u000b-\u001f]/g, (c) => String.fromCharCode(0x2400 + c.charCodeAt(0)))
      .replace(/\u007f/g, '\u2421')
      .replace(/[\u0080-\u009f]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  }

  // Fixed decimals as the other reports print them: exact ties round to even.
  function fix(v, d) {
    const a = Math.abs(v);
    let s = a.toFixed(d);
    const exact = a.toFixed(Math.min(100, d + 60));
    const kept = exact.slice(0, exact.length - 60).replace(/\.$/, '');
    if (/^50*$/.test(exact.slice(exact.length - 60)) && Number(kept.slice(-1)) % 2 === 0) s = kept;
    return (v < 0 ? '-' : '') + s;
  }
  const pct = (x) => (x == null ? '—' : fix(x * 100, 1) + '%');
  const pm = (x, iv) => (iv ? pct(x) + ' ±' + fix((iv.high - iv.low) * 50, 1) : pct(x));
  const span = (iv) => (iv ? fix(iv.low * 100, 1) + '–' + fix(iv.high * 100, 1) + '%' : '—');
  const pts = (d) => (d >= 0 ? '+' : '') + fix(d * 100, 1) + ' pp';
  const pval = (p) => (p == null ? '—' : p < 0.001 ? '<0.001' : fix(p, 3));
  const num = (x, d) => (x == null ? '—' : fix(x, d));

  // ---------- elements ----------

  function add(node, kids) {
    for (const k of Array.isArray(kids) ? kids : [kids]) {
      if (k == null || k === false) continue;
      if (Array.isArray(k)) add(node, k);
      else if (typeof k === 'object') node.appendChild(k);
      else node.appendChild(document.createTextNode(vis(k)));
    }
    return node;
  }
  function set(node, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null || v === false) continue;
      if (k === 'on') for (const [ev, f] of Object.entries(v)) node.addEventListener(ev, f);
      else node.setAttribute(k, k === 'title' ? vis(v) : String(v));
    }
    return node;
  }
  const h = (tag, attrs, ...kids) => add(set(document.createElement(tag), attrs), kids);
  const s = (tag, attrs, ...kids) => add(set(document.createElementNS(SVG, tag), attrs), kids);
  function table(head, body, cls) {
    const t = h('table', { class: cls },
      h('thead', null, h('tr', null, head.map((x) => h('th', null, x)))),
      h('tbody', null, body));
    // Text columns (td.name) get left-aligned headers too.
    const first = t.tBodies[0].rows[0];
    if (first) {
      [...first.cells].forEach((c, i) => {
        if (c.classList.contains('name') && t.tHead.rows[0].cells[i]) t.tHead.rows[0].cells[i].classList.add('name');
      });
    }
    return h('div', { class: 'scroll' }, t);
  }
  const view = (name) => document.getElementById('view-' + name);

  // ---------- lookups ----------

  const cells = new Map(R.cells.map((c) => [c.m + ':' + c.s, c]));
  const prompts = new Map();
  const byKey = new Map();
  rows.forEach((r, i) => {
    if (r.p) prompts.set(r.s + ':' + r.i, r.p);
    byKey.set(r.m + ':' + r.s + ':' + r.i + ':' + r.k, i);
  });
  const modelIndex = new Map(models.map((m, i) => [m.name, i]));
  const specIndex = new Map(specs.map((sp, i) => [sp.id, i]));
  // Run pairs: model index → the index it is compared with.
  const partner = new Map();
  for (const p of (R.runs && R.runs.pairs) || []) {
    const a = modelIndex.get(p.baseline), b = modelIndex.get(p.candidate);
    partner.set(a, b);
    partner.set(b, a);
  }
  const rankOf = new Map(((R.leaderboard && R.leaderboard.standings) || []).map((st) => [st.model, st]));
  const order = models.map((_, i) => i).sort((a, b) => {
    const x = rankOf.get(models[a].name), y = rankOf.get(models[b].name);
    if (!x || !y) return (x ? -1 : 0) + (y ? 1 : 0) || a - b;
    return x.rank - y.rank || y.score - x.score || a - b;
  });
  const rowId = (r) => specs[r.s].id + '/' + r.i + (r.k > 0 ? '#' + r.k : '');
  const golden = (r) => r.g && r.g.ok !== r.ok;

  // ---------- overview ----------

  function errorBar(score, iv) {
    const x = (v) => Math.max(0, Math.min(100, v * 100));
    const bar = s('svg', { viewBox: '0 0 100 10', preserveAspectRatio: 'none', role: 'img',
      'aria-label': pm(score, iv) },
      s('rect', { x: 0, y: 2, width: x(score), height: 6, fill: 'var(--bar)', class: 'score' }));
    if (iv) {
      add(bar, [
        s('line', { x1: x(iv.low), x2: x(iv.high), y1: 5, y2: 5, stroke: 'var(--err)', 'stroke-width': 0.8,
          'vector-effect': 'non-scaling-stroke', class: 'interval', 'data-low': iv.low, 'data-high': iv.high }),
        s('line', { x1: x(iv.low), x2: x(iv.low), y1: 2, y2: 8, stroke: 'var(--err)', 'vector-effect': 'non-scaling-stroke' }),
        s('line', { x1: x(iv.high), x2: x(iv.high), y1: 2, y2: 8, stroke: 'var(--err)', 'vector-effect': 'non-scaling-stroke' }),
      ]);
    }
    return bar;
  }

  function leaderboard() {
    const board = R.leaderboard;
    if (!board) return h('p', { class: 'muted' }, 'No records.');
    const body = board.standings.map((st) => {
      const vs = st.vs_best;
      return h('tr', { class: st.rank % 2 ? 'group-a' : 'group-b', 'data-model': st.model, 'data-rank': st.rank },
        h('td', null, h('span', { class: 'rank', title: 'tie group ' + st.rank }, st.rank)),
        h('td', { class: 'name', title: st.model }, st.model),
        h('td', { class: 'total' }, pm(st.score, st.interval)),
        h('td', { class: 'bar' }, errorBar(st.score, st.interval)),
        h('td', null, vs ? pts(vs.difference) : '—'),
        h('td', null, vs ? pval(vs.p_value) : '—'));
    });
    return h('div', null,
      table(['Rank', 'Model', 'Total ±95%', '95% interval', 'vs best', 'p'], body, 'board'),
      h('p', { class: 'note' }, 'Total: the mean of category accuracies, each category weighted once; ± is half ' +
        'the 95% interval (bootstrap stratified by category). Models sharing a rank are not significantly worse ' +
        'than the best of their group (paired tests, Holm-adjusted, α = ' + R.meta.alpha + ').'));
  }

  function heat(x) {
    const hue = Math.round(Math.max(0, Math.min(1, x)) * 120);
    return 'hsl(' + hue + ', 62%, 38%)';
  }

  function heatmap() {
    const head = ['Model'].concat(specs.map((sp) => sp.title));
    const body = order.map((m) => h('tr', { 'data-model': models[m].name },
      h('td', { class: 'name', title: models[m].name }, models[m].name),
      specs.map((sp, si) => {
        const c = cells.get(m + ':' + si);
        if (!c) return h('td', { class: 'empty' }, '—');
        const td = h('td', { class: 'cell', 'data-spec': sp.id,
          title: sp.title + ': ' + pm(c.accuracy, c.interval) + ' (95% ' + span(c.interval) + '), ' +
            c.passed + '/' + c.total + ' passed',
          on: { click: () => showInstances({ model: m, spec: si, status: 'all' }) } }, pct(c.accuracy));
        td.style.background = heat(c.accuracy);
        return td;
      })));
    return table(head, body, 'heat');
  }

  // Axes of the scatter plots; cost appears once runs record it.
  const AXES = [
    { key: 'p50_ms', label: 'p50 latency, ms' },
    { key: 'tokens_out', label: 'output tokens per answer (mean)' },
    { key: 'cost', label: 'cost, USD' },
  ];

  function scatter(axis) {
    const pts_ = order.map((i) => ({ m: models[i], st: rankOf.get(models[i].name) }))
      .filter((p) => p.m[axis.key] != null && p.m.total != null);
    if (!pts_.length) return null;
    const W = 340, H = 230, L = 40, B = 34, T = 10, Rm = 12;
    const maxX = Math.max(...pts_.map((p) => p.m[axis.key])) * 1.1 || 1;
    const X = (v) => L + (v / maxX) * (W - L - Rm);
    const Y = (v) => T + (1 - v) * (H - T - B);
    const g = s('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'accuracy against ' + axis.label,
      'data-axis': axis.key });
    const ax = s('g', { class: 'axis' });
    for (let k = 0; k <= 4; k++) {
      const y = Y(k / 4), x = X((maxX * k) / 4);
      add(ax, [
        s('line', { x1: L, x2: W - Rm, y1: y, y2: y, stroke: 'var(--line)' }),
        s('text', { x: L - 4, y: y + 3, 'text-anchor': 'end' }, k * 25 + '%'),
        s('line', { x1: x, x2: x, y1: H - B, y2: H - B + 3, stroke: 'var(--line)' }),
        s('text', { x: x, y: H - B + 13, 'text-anchor': 'middle' }, num((maxX * k) / 4, maxX > 20 ? 0 : 1)),
      ]);
    }
    add(ax, s('text', { x: (L + W) / 2, y: H - 4, 'text-anchor': 'middle' }, axis.label));
    add(g, ax);
    for (const p of pts_) {
      const x = X(p.m[axis.key]), y = Y(p.m.total), iv = p.st && p.st.interval;
      const mark = s('g', { class: 'mark', 'data-model': p.m.name, 'data-x': p.m[axis.key], 'data-y': p.m.total },
        s('title', null, p.m.name + ': ' + pm(p.m.total, iv) + ', ' + axis.label + ' ' + num(p.m[axis.key], 1)));
      if (iv) add(mark, s('line', { class: 'whisker', x1: x, x2: x, y1: Y(iv.high), y2: Y(iv.low) }));
      const right = x > W * 0.6;
      add(mark, [s('circle', { class: 'point', cx: x, cy: y, r: 4 }),
        s('text', { x: right ? x - 6 : x + 6, y: y - 5, 'text-anchor': right ? 'end' : 'start' },
          p.m.name.length > 24 ? p.m.name.slice(0, 23) + '…' : p.m.name)]);
      add(g, mark);
    }
    return h('div', { class: 'chart' }, g);
  }

  function overview() {
    const v = view('overview');
    const charts = AXES.map(scatter).filter(Boolean);
    add(v, [
      h('h2', null, 'Leaderboard'), leaderboard(),
      h('h2', null, 'Accuracy by category'),
      h('p', { class: 'note' }, 'Click a cell to see its instances.'), heatmap(),
      h('h2', null, 'Accuracy against cost of answering'),
      charts.length ? h('div', { class: 'charts' }, charts)
        : h('p', { class: 'note' }, 'No timed requests: replayed and cached answers have no latency to plot.'),
    ]);
  }

  // ---------- categories ----------

  function boardTable(board) {
    const body = board.standings.map((st) => h('tr', { class: st.rank % 2 ? 'group-a' : 'group-b', 'data-model': st.model },
      h('td', null, h('span', { class: 'rank' }, st.rank)),
      h('td', { class: 'name', title: st.model }, st.model),
      h('td', null, pct(st.score)),
      h('td', null, span(st.interval)),
      h('td', null, st.vs_best ? pts(st.vs_best.difference) : '—'),
      h('td', null, st.vs_best ? span(st.vs_best.interval).replace('%', ' pp') : '—'),
      h('td', null, st.vs_best ? pval(st.vs_best.p_value) : '—')));
    return table(['Rank', 'Model', 'Accuracy', '95% interval', 'vs best', '95% interval', 'p'], body, 'board');
  }

  function boardNote(board) {
    const test = board.test === 'mcnemar' ? 'exact McNemar test, Newcombe interval' : 'paired bootstrap over instances';
    let t = board.instances + ' instances; ' + test + '.';
    if (board.mde != null) t += ' At this size the category detects a drop of ' + fix(board.mde * 100, 1) +
      ' pp or more below the best model (power 80%).';
    if (board.gap && board.gap.needed && board.gap.difference > 0) t += ' Telling the two best apart (gap ' +
      fix(board.gap.difference * 100, 1) + ' pp) needs about ' + board.gap.needed + ' instances.';
    return h('p', { class: 'note' }, t);
  }

  function groupTables(si) {
    const out = [];
    for (const v of specs[si].group_by) {
      const values = new Set();
      for (const m of order) {
        const c = cells.get(m + ':' + si);
        if (c && c.groups && c.groups[v]) Object.keys(c.groups[v]).forEach((k) => values.add(k));
      }
      if (!values.size) continue;
      const vals = [...values].sort();
      const body = order.filter((m) => cells.has(m + ':' + si)).map((m) => {
        const g = (cells.get(m + ':' + si).groups || {})[v] || {};
        return h('tr', null, h('td', { class: 'name' }, models[m].name),
          vals.map((k) => h('td', { title: g[k] ? g[k].passed + '/' + g[k].total : '' }, g[k] ? pm(g[k].accuracy, g[k].interval) : '—')));
      });
      out.push(h('h4', null, 'By ' + v), table(['Model'].concat(vals), body));
    }
    return out;
  }

  function sampledTable(sp) {
    const c = (R.sampled || []).find((x) => x.spec === sp.id);
    if (!c) return null;
    const hats = c.ks.filter((k) => k > 1);
    const maj = c.models.some((l) => l.maj != null);
    const head = ['Model', 'mean acc'].concat(c.ks.map((k) => 'pass@' + k), hats.map((k) => 'pass^' + k),
      maj ? ['maj@n'] : [], ['tier']);
    const body = c.models.map((l) => h('tr', null, h('td', { class: 'name' }, l.model), h('td', null, pct(l.accuracy)),
      c.ks.map((k) => h('td', null, pct(l.pass_at_k[k]))), hats.map((k) => h('td', null, pct(l.pass_hat_k[k]))),
      maj ? h('td', null, pct(l.maj)) : null, h('td', null, l.tier)));
    return [h('h4', null, 'Sampled: pass@k (some of k pass) beside pass^k (all k pass)'), table(head, body)];
  }

  function categories() {
    const v = view('categories');
    specs.forEach((sp, si) => {
      if (!sp.board) return;
      add(v, h('div', { class: 'card', id: 'spec-' + sp.id },
        h('h3', null, sp.title, ' ', h('span', { class: 'tag' }, sp.id)),
        boardTable(sp.board), boardNote(sp.board), groupTables(si), sampledTable(sp)));
    });
  }

  // ---------- instance lists ----------

  // A scrolling list that only draws the rows in view.
  function vlist(container, indices, onOpen) {
    const box = h('div', { class: 'vlist', tabindex: 0 });
    const space = h('div', { class: 'vspace' });
    box.appendChild(space);
    container.appendChild(box);
    let items = indices;
    function row(i) {
      const r = rows[i];
      const st = r.e ? '!' : r.ok ? '✓' : '✗';
      const text = r.e || r.r || '';
      const el = h('div', { class: 'vrow', role: 'button', tabindex: 0, 'data-row': i,
        on: { click: () => onOpen(i), keydown: (e) => { if (e.key === 'Enter') onOpen(i); } } },
        h('span', { class: 'st ' + (r.e ? 'warn' : r.ok ? 'good' : 'bad') }, st),
        h('span', { class: 'id' }, rowId(r)),
        h('span', { class: 'mdl' }, models[r.m].name),
        h('span', { class: 'sc' }, fix(r.sc, 2)),
        r.fl & 1 ? h('span', { class: 'tag' }, 'flaky') : null,
        r.fl & 2 || golden(r) ? h('span', { class: 'tag' }, 'flipped') : null,
        h('span', { class: 'txt' }, text.length > 200 ? text.slice(0, 200) : text));
      return el;
    }
    function draw() {
      space.style.height = items.length * ROW + 'px';
      const first = Math.max(0, Math.floor(box.scrollTop / ROW) - 5);
      const last = Math.min(items.length, Math.ceil((box.scrollTop + box.clientHeight) / ROW) + 5);
      space.replaceChildren();
      for (let k = first; k < last; k++) {
        const el = row(items[k]);
        el.style.top = k * ROW + 'px';
        space.appendChild(el);
      }
    }
    let pending = false;
    box.addEventListener('scroll', () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => { pending = false; draw(); });
    });
    draw();
    return { update(next) { items = next; box.scrollTop = 0; draw(); }, draw };
  }

  const state = { model: -1, spec: -1, status: 'all', q: '' };
  let hay = null;
  function matches(r, i) {
    if (state.model >= 0 && r.m !== state.model) return false;
    if (state.spec >= 0 && r.s !== state.spec) return false;
    switch (state.status) {
      case 'fail': if (r.ok) return false; break;
      case 'error': if (!r.e) return false; break;
      case 'flaky': if (!(r.fl & 1)) return false; break;
      case 'flipped': if (!(r.fl & 2) && !golden(r)) return false; break;
      default: break;
    }
    if (state.q) {
      if (!hay) hay = rows.map((x) => [rowId(x), x.r, x.a, x.x, x.d, x.e].filter(Boolean).join('\n').toLowerCase());
      if (!hay[i].includes(state.q)) return false;
    }
    return true;
  }
  let list = null, countEl = null;
  const controls = {};
  function refilter() {
    const picked = [];
    for (let i = 0; i < rows.length; i++) if (matches(rows[i], i)) picked.push(i);
    list.update(picked);
    countEl.textContent = picked.length + ' of ' + rows.length + ' records';
  }

  function instances() {
    const v = view('instances');
    const select = (name, options, value) => {
      const el = h('select', { name: name, 'aria-label': name },
        options.map(([val, label]) => h('option', { value: val }, label)));
      el.value = String(value);
      el.addEventListener('change', () => { state[name] = name === 'status' ? el.value : Number(el.value); refilter(); });
      controls[name] = el;
      return el;
    };
    const search = h('input', { type: 'search', name: 'q', placeholder: 'Search id, response, answer, expected…', 'aria-label': 'search' });
    let timer = 0;
    search.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => { state.q = search.value.toLowerCase(); refilter(); }, 120);
    });
    controls.q = search;
    countEl = h('span', { class: 'muted count' });
    add(v, h('div', { class: 'controls' },
      select('model', [[-1, 'All models']].concat(order.map((m) => [m, models[m].name])), state.model),
      select('spec', [[-1, 'All categories']].concat(specs.map((sp, i) => [i, sp.title])), state.spec),
      select('status', [['all', 'All'], ['fail', 'Failures only'], ['error', 'Errors'], ['flaky', 'Flaky'], ['flipped', 'Flipped']], state.status),
      search, countEl));
    list = vlist(v, [], openDrill);
    refilter();
  }

  function showInstances(filter) {
    Object.assign(state, filter);
    for (const k of ['model', 'spec', 'status']) if (controls[k]) controls[k].value = String(state[k]);
    show('instances');
    refilter();
  }

  // ---------- drill-down ----------

  function pre(text, cls) {
    return h('pre', { class: cls }, text == null || text === '' ? '—' : text);
  }

  // Expected values arrive as JSON: strings show as themselves, lists of strings one per block.
  function expected(x) {
    if (!x) return x;
    try {
      const v = JSON.parse(x);
      if (typeof v === 'string') return v;
      if (Array.isArray(v) && v.every((e) => typeof e === 'string')) return v.join('\n— — —\n');
      return JSON.stringify(v, null, 2);
    } catch (e) {
      return x;
    }
  }

  function diffView(ops) {
    return h('pre', { class: 'diff' }, ops.map(([op, t]) => (op === '=' ? t : h(op === '-' ? 'del' : 'ins', null, t))));
  }

  function openDrill(i) {
    const r = rows[i];
    const body = document.getElementById('drill-body');
    const sp = specs[r.s];
    const prompt = prompts.get(r.s + ':' + r.i) || [];
    const siblings = rows.map((x, j) => [x, j]).filter(([x]) => x.s === r.s && x.i === r.i &&
      models[x.m].model === models[r.m].model);
    const verdict = r.e ? 'request error' : r.ok ? 'passed' : 'failed';
    body.replaceChildren();
    add(body, [
      h('h2', { id: 'drill-title' }, rowId(r), ' ', h('span', { class: r.ok ? 'good' : 'bad' }, verdict)),
      h('dl', { class: 'kv' },
        h('dt', null, 'model'), h('dd', null, models[r.m].name),
        h('dt', null, 'category'), h('dd', null, sp.title + ' (' + sp.id + ')'),
        h('dt', null, 'score'), h('dd', null, fix(r.sc, 3)),
        r.f ? [h('dt', null, 'failure'), h('dd', null, r.f)] : null,
        r.l != null ? [h('dt', null, 'latency'), h('dd', null, r.l + ' ms')] : null,
        r.to != null ? [h('dt', null, 'output tokens'), h('dd', null, r.to)] : null,
        r.gv ? Object.entries(r.gv).map(([k, val]) => [h('dt', null, k), h('dd', null, val)]) : null),
      siblings.length > 1 ? h('div', { class: 'samples' }, siblings.map(([x, j]) => h('button', {
        type: 'button', 'aria-current': j === i ? 'true' : 'false', on: { click: () => openDrill(j) } },
      (x.ok ? '✓ ' : '✗ ') + models[x.m].name + (x.k ? ' #' + x.k : '')))) : null,
      h('h3', null, 'Prompt'),
      prompt.length ? prompt.map(([role, content]) => [h('div', { class: 'role' }, role), pre(content)]) : pre(null),
      h('h3', null, r.e ? 'Request error' : 'Response'), pre(r.e || r.r, 'response'),
      h('h3', null, 'Expected'), pre(expected(r.x), 'expected'),
      h('h3', null, 'Extracted answer'), pre(r.a, 'answer'),
      r.d ? [h('h3', null, 'Why it failed'), pre(r.d)] : null,
      r.ru && r.ru.length ? [h('h3', null, 'Rules'), table(['Rule', 'Verdict', 'Score', 'Answer', 'Detail'],
        r.ru.map((u) => h('tr', null, h('td', { class: 'name' }, u.n + (u.ro ? ' (report only)' : '')),
          h('td', { class: u.ok ? 'good' : 'bad' }, u.ok ? 'pass' : 'fail'), h('td', null, fix(u.sc, 3)),
          h('td', { class: 'name' }, u.a == null ? '—' : u.a), h('td', { class: 'name' }, u.d || ''))))] : null,
      (r.ru || []).filter((u) => u.j).map((u) => [
        h('h3', null, 'Judge: ' + u.n),
        h('p', null, 'judge ' + u.j[0] + ', level ' + (u.j[1] == null ? '—' : u.j[1]) + ', sampled levels ' + (u.j[2].join(', ') || '—')),
        u.j[3].map((t, k) => [h('div', { class: 'role' }, 'reasoning ' + (k + 1)), pre(t, 'reasoning')]),
      ]),
      r.g ? [h('h3', null, 'Against the golden transcript'),
        h('p', null, 'golden verdict ' + (r.g.ok ? 'passed' : 'failed') + ', score ' + fix(r.g.sc, 3) +
          (golden(r) ? ' — the verdict flipped' : '') + (r.g.diff ? '' : '; same response')),
        r.g.diff ? diffView(r.g.diff) : null] : null,
      otherRun(r)]);
    const drill = document.getElementById('drill');
    drill.hidden = false;
    document.getElementById('drill-close').focus();
  }

  function otherRun(r) {
    if (!partner.has(r.m)) return null;
    const j = byKey.get(partner.get(r.m) + ':' + r.s + ':' + r.i + ':' + r.k);
    if (j == null) return null;
    const o = rows[j];
    return [h('h3', null, 'In the other run: ' + models[o.m].name + ' — ' + (o.ok ? 'passed' : 'failed')), pre(o.e || o.r, 'other')];
  }

  function closeDrill() { document.getElementById('drill').hidden = true; }

  // ---------- flaky, golden, compare ----------

  function flaky() {
    const v = view('flaky');
    const f = R.flaky;
    add(v, [h('h2', null, 'Stability'),
      table(['Model', 'Category', 'Instances', 'k', 'pass@k', 'pass^k', 'Flaky'], f.stability.map((st) => h('tr', null,
        h('td', { class: 'name' }, st.model), h('td', { class: 'name' }, st.spec), h('td', null, st.instances), h('td', null, st.k),
        h('td', null, pct(st.pass_at_k)), h('td', null, pct(st.pass_hat_k)), h('td', null, st.flaky)))),
      h('p', { class: 'note' }, 'pass@k: some of k samples pass; pass^k: all k pass. Flaky instances passed some samples but not all.'),
      h('h2', null, 'Flaky instances, lowest pass rate first')]);
    const picked = [];
    for (const fi of f.instances) {
      const si = specIndex.get(fi.spec);
      const m = models.findIndex((x) => x.model === fi.model);
      const j = byKey.get(m + ':' + si + ':' + fi.instance + ':0');
      picked.push({ fi, j });
    }
    const body = h('tbody');
    let shown = 0;
    const more = h('button', { type: 'button', class: 'btn more', on: { click: () => page() } }, 'Show more');
    function page() {
      for (const { fi, j } of picked.slice(shown, shown + 100)) {
        add(body, h('tr', { class: j == null ? '' : 'link', on: { click: () => j != null && openDrill(j) } },
          h('td', { class: 'name' }, fi.spec + '/' + fi.instance), h('td', { class: 'name' }, fi.model),
          h('td', null, fi.passed + '/' + fi.samples), h('td', null, pct(fi.passed / fi.samples))));
      }
      shown = Math.min(picked.length, shown + 100);
      more.hidden = shown >= picked.length;
    }
    add(v, [h('div', { class: 'scroll' }, h('table', { class: 'flaky' }, h('thead', null, h('tr', null,
      ['Instance', 'Model', 'Passed', 'Rate'].map((x) => h('th', null, x)))), body)), more]);
    page();
    if (!picked.length) add(v, h('p', { class: 'muted' }, 'No flaky instances.'));
  }

  function goldenView() {
    const v = view('golden');
    add(v, [h('h2', null, 'Against the golden transcripts'),
      table(['Model', 'Category', 'Compared', 'pass → fail', 'fail → pass', 'Changed responses', 'Not in golden'],
        R.golden.map((g) => h('tr', null, h('td', { class: 'name' }, g.model), h('td', { class: 'name' }, g.spec),
          h('td', null, g.compared), h('td', { class: g.regressions ? 'bad' : '' }, g.regressions),
          h('td', { class: g.fixes ? 'good' : '' }, g.fixes), h('td', null, g.changed), h('td', null, g.missing)))),
      h('h3', null, 'Flipped verdicts first, then changed responses')]);
    const picked = [];
    rows.forEach((r, i) => { if (golden(r)) picked.push(i); });
    const flips = picked.length;
    rows.forEach((r, i) => { if (r.g && r.g.diff && !golden(r)) picked.push(i); });
    add(v, h('p', { class: 'note' }, flips + ' flipped, ' + (picked.length - flips) + ' more with a changed response.'));
    vlist(v, picked, openDrill);
  }

  function compare() {
    const v = view('compare');
    add(v, h('p', { class: 'note' }, 'Baseline run: ' + R.runs.baseline_run + '. Differences are the later run minus the ' +
      'baseline on the same instances.'));
    for (const p of R.runs.pairs) {
      const d = p.overall;
      const card = h('div', { class: 'card pair' }, h('h3', null, p.candidate + ' against ' + p.baseline),
        d ? h('p', null, 'Overall: ', h('strong', { class: verdictClass(d.verdict) }, d.verdict),
          ' (' + pts(d.difference) + ', 95% ' + span(d.interval).replace('%', ' pp') + ', p = ' + pval(d.p_value) + ')') : null,
        table(['Category', 'Baseline', 'Later', 'Change', '95% interval', 'p', 'Verdict'], p.categories.map((c) => h('tr', null,
          h('td', { class: 'name' }, c.title), h('td', null, pct(c.baseline)), h('td', null, pct(c.candidate)),
          h('td', null, pts(c.delta.difference)), h('td', null, span(c.delta.interval).replace('%', ' pp')),
          h('td', null, pval(c.delta.p_value)), h('td', { class: verdictClass(c.delta.verdict) }, c.delta.verdict)))),
        h('h4', null, 'Flipped instances: ' + p.regressions.length + ' pass → fail, ' + p.fixes.length + ' fail → pass'));
      const b = modelIndex.get(p.candidate);
      const flips = p.regressions.map((f) => [f, true]).concat(p.fixes.map((f) => [f, false]));
      add(card, table(['Instance', 'Baseline', 'Later', ''], flips.slice(0, 500).map(([f, worse]) => {
        const j = byKey.get(b + ':' + specIndex.get(f.spec) + ':' + f.instance + ':0');
        return h('tr', { class: worse ? 'regression' : 'fix', on: { click: () => j != null && openDrill(j) } },
          h('td', { class: 'name ' + (worse ? 'bad' : 'good') }, f.spec + '/' + f.instance),
          h('td', null, pct(f.from)), h('td', null, pct(f.to)), h('td', { class: worse ? 'bad' : 'good' }, worse ? 'pass → fail' : 'fail → pass'));
      })));
      if (flips.length > 500) add(card, h('p', { class: 'note' }, 'First 500 of ' + flips.length + '; filter the Instances view by "Flipped" for all.'));
      add(v, card);
    }
  }

  function verdictClass(v) { return v === 'better' ? 'good' : v === 'worse' ? 'bad' : 'muted'; }

  // ---------- views ----------

  const built = {};
  const builders = { overview, categories, instances, flaky, golden: goldenView, compare };
  const available = {
    flaky: R.flaky && R.flaky.stability && R.flaky.stability.length > 0,
    golden: R.golden && R.golden.length > 0,
    compare: !!R.runs,
  };
  function show(name) {
    if (!builders[name] || available[name] === false) name = 'overview';
    if (!built[name]) { builders[name](); built[name] = true; }
    document.querySelectorAll('.view').forEach((el) => { el.hidden = el.id !== 'view-' + name; });
    document.querySelectorAll('#tabs button').forEach((b) => {
      if (b.dataset.view === name) b.setAttribute('aria-current', 'page'); else b.removeAttribute('aria-current');
    });
    try {
      if (location.hash !== '#' + name) history.replaceState(null, '', '#' + name);
    } catch (e) {
      // Some browsers refuse history changes on file:// pages; the view still shows.
    }
    if (name === 'instances' && list) list.draw();
  }
  document.querySelectorAll('#tabs button').forEach((b) => {
    if (available[b.dataset.view] === false) b.hidden = true;
    b.addEventListener('click', () => show(b.dataset.view));
  });
  document.getElementById('drill-close').addEventListener('click', closeDrill);
  document.getElementById('drill').addEventListener('click', (e) => { if (e.target.id === 'drill') closeDrill(); });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape') closeDrill(); });
  document.getElementById('meta').textContent = vis('runs ' + R.meta.runs.join(', ') + ' · ' + R.meta.timestamp +
    ' UTC · ' + models.length + ' models · ' + specs.length + ' categories · ' + rows.length + ' records · harness ' + R.meta.version);
  show((location.hash || '#overview').slice(1));
  document.body.dataset.ready = 'true';
})();
