// The overview (leaderboard, heatmap, scatter plots, pool endpoints) and the
// categories view.

// ---------- overview ----------

function leaderboard() {
  const board = R.leaderboard;
  if (!board) return h('p', { class: 'muted' }, t('No records.'));
  const body = board.standings.map((st) => {
    const vs = st.vs_best;
    return h('tr', { class: st.rank % 2 ? 'group-a' : 'group-b', 'data-model': st.model, 'data-rank': st.rank },
      h('td', null, h('span', { class: 'rank', title: t('tie group {0}', st.rank) }, st.rank)),
      h('td', { class: 'name', title: st.model }, st.model),
      h('td', { class: 'total' }, pm(st.score, st.interval)),
      h('td', { class: 'bar' }, errorBar(st.score, st.interval)),
      h('td', null, vs ? pts(vs.difference) : '—'),
      h('td', null, vs ? pval(vs.p_value) : '—'));
  });
  // Models that ran other categories stand apart, unranked: their mean is another number.
  const ranked = new Set(board.standings.map((st) => st.model));
  const apart = models.filter((m) => !ranked.has(m.name) && m.total != null).map((m) =>
    h('tr', { class: 'unranked', 'data-model': m.name },
      h('td', null, h('span', { class: 'rank', title: t('not ranked: it ran other categories') }, '—')),
      h('td', { class: 'name', title: m.name }, m.name),
      h('td', { class: 'total' }, pm(m.total, null)),
      h('td', null), h('td', null, '—'), h('td', null, '—')));
  return h('div', null,
    table([t('Rank'), t('Model'), t('Total ±95%'), t('95% interval'), t('vs best'), 'p'], body.concat(apart), 'board'),
    h('p', { class: 'note' }, t('Total: the mean of the categories\' headline numbers (pass rate unless a spec ' +
      'sets [report] headline = "mean_score"), each category weighted once; ± is half ' +
      'the 95% interval (bootstrap stratified by category). Models sharing a rank are not significantly worse ' +
      'than the best of their group (paired tests, Holm-adjusted, α = {0}).', R.meta.alpha)));
}

function heat(x) {
  const hue = Math.round(Math.max(0, Math.min(1, x)) * 120);
  return 'hsl(' + hue + ', 62%, 38%)';
}

// The name of a cell's headline number.
function headlineName(c) {
  return c.headline === 'mean_score' ? t('mean score') : t('pass rate');
}

// `, CER 0.012, WER 0.041`: a cell's or group's mean measures, for a tooltip.
function measured(c) {
  return Object.keys(c.measures || {}).map((k) => ', ' + k + ' ' + fix(c.measures[k].mean, 3)).join('');
}

// A cell's reasoning: mean reasoning tokens, and answers cut off while reasoning.
function reasoned(c) {
  return (c.tokens_reasoning != null ? t(', {0} reasoning tokens per answer', fix(c.tokens_reasoning, 1)) : '') +
    (c.unfinished_reasoning ? t(', {0} unfinished_reasoning', c.unfinished_reasoning) : '');
}

// A spec's mean measures per model and group, beside the headline number.
function measureTable(si) {
  const names = new Set();
  for (const m of order) {
    const c = cells.get(m + ':' + si);
    if (c && c.measures) Object.keys(c.measures).forEach((k) => names.add(k));
  }
  if (!names.size) return null;
  const keys = [...names].sort();
  const row = (name, group, c) => h('tr', null, h('td', { class: 'name' }, name), h('td', null, group),
    h('td', null, pct(c.score)), keys.map((k) => h('td', null, c.measures && c.measures[k] ? fix(c.measures[k].mean, 3) : '—')));
  const body = [];
  for (const m of order) {
    const c = cells.get(m + ':' + si);
    if (!c) continue;
    body.push(row(models[m].name, '', c));
    for (const v of Object.keys(c.groups || {}).sort()) {
      for (const k of Object.keys(c.groups[v]).sort()) body.push(row(models[m].name, v + '=' + k, c.groups[v][k]));
    }
  }
  const head = [t('Model'), t('group'), headlineName(specs[si])].concat(keys.map((k) => k + (lowerIsBetter(si, k) ? ' ↓' : '')));
  return [h('h4', null, t('Mean measures per answer (↓: lower is better)')), table(head, body)];
}

// Whether measure `k` of spec `si` is better lower.
function lowerIsBetter(si, k) {
  for (const m of order) {
    const c = cells.get(m + ':' + si);
    if (c && c.measures && c.measures[k]) return c.measures[k].lower_is_better;
  }
  return false;
}

function heatmap() {
  const head = [t('Model')].concat(specs.map((sp) => sp.title));
  const body = order.map((m) => h('tr', { 'data-model': models[m].name },
    h('td', { class: 'name', title: models[m].name }, models[m].name),
    specs.map((sp, si) => {
      const c = cells.get(m + ':' + si);
      if (!c) return h('td', { class: 'empty' }, '—');
      const td = h('td', { class: 'cell', 'data-spec': sp.id,
        title: t('{0}: {1} {2} (95% {3}), {4}/{5} passed, pass rate {6}, mean score {7}', sp.title,
          headlineName(c), pm(c.score, c.interval), span(c.interval), c.passed, c.total, pct(c.pass_rate),
          pct(c.mean_score)) + measured(c) + reasoned(c),
        on: { click: () => showInstances({ model: m, spec: si, status: 'all' }) } }, pct(c.score));
      td.style.background = heat(c.score);
      return td;
    })));
  return table(head, body, 'heat');
}

// Axes of the scatter plots; an axis no model has a value for is left out.
const AXES = [
  { key: 'p50_ms', label: t('p50 latency, ms') },
  { key: 'tokens_out', label: t('output tokens per answer (mean)') },
  { key: 'tokens_reasoning', label: t('reasoning tokens per answer (mean)') },
  { key: 'cost', label: t('cost, {0}', R.meta.currency) },
];

function scatter(axis) {
  const marks = order.map((i) => ({ m: models[i], st: rankOf.get(models[i].name) }))
    .filter((p) => p.m[axis.key] != null && p.m.total != null)
    .map((p) => ({ name: p.m.name, label: p.m.name, x: p.m[axis.key], y: p.m.total, iv: p.st && p.st.interval }));
  const g = plot(marks, axis, false);
  return g && h('div', { class: 'chart' }, g);
}

// Points (name, label, x, y in 0..1, interval) against an x axis: the scatter
// of models, and with `line` a sweep's curve joining its settings in order.
function plot(marks, axis, line) {
  if (!marks.length) return null;
  const W = 340, H = 230, L = 40, B = 34, T = 10, Rm = 12;
  const maxX = Math.max(...marks.map((p) => p.x)) * 1.1 || 1;
  const X = (v) => L + (v / maxX) * (W - L - Rm);
  const Y = (v) => T + (1 - v) * (H - T - B);
  const g = s('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': t('total against {0}', axis.label),
    'data-axis': axis.key });
  const ax = s('g', { class: 'axis' });
  // Decimals enough for the axis's steps: a cost of 0.0003 is no 0.0.
  const digits = maxX > 20 ? 0 : maxX >= 2 ? 1 : Math.min(8, 1 - Math.floor(Math.log10(maxX / 4)));
  for (let k = 0; k <= 4; k++) {
    const y = Y(k / 4), x = X((maxX * k) / 4);
    add(ax, [
      s('line', { x1: L, x2: W - Rm, y1: y, y2: y, stroke: 'var(--line)' }),
      s('text', { x: L - 4, y: y + 3, 'text-anchor': 'end' }, k * 25 + '%'),
      s('line', { x1: x, x2: x, y1: H - B, y2: H - B + 3, stroke: 'var(--line)' }),
      s('text', { x: x, y: H - B + 13, 'text-anchor': 'middle' }, num((maxX * k) / 4, digits)),
    ]);
  }
  add(ax, s('text', { x: (L + W) / 2, y: H - 4, 'text-anchor': 'middle' }, axis.label));
  add(g, ax);
  if (line) {
    add(g, s('polyline', { class: 'curve', fill: 'none', stroke: 'var(--accent)',
      points: marks.map((p) => X(p.x) + ',' + Y(p.y)).join(' ') }));
  }
  for (const p of marks) {
    const x = X(p.x), y = Y(p.y), iv = p.iv;
    const mark = s('g', { class: 'mark', 'data-model': p.name, 'data-x': p.x, 'data-y': p.y },
      s('title', null, p.name + ': ' + pm(p.y, iv) + ', ' + axis.label + ' ' + num(p.x, 1)));
    if (iv) add(mark, s('line', { class: 'whisker', x1: x, x2: x, y1: Y(iv.high), y2: Y(iv.low) }));
    // Labels go beside the point: left of it near the right edge, below it near the top.
    const right = x > W * 0.6, below = y < T + 12;
    add(mark, [s('circle', { class: 'point', cx: x, cy: y, r: 4 }),
      s('text', { x: right ? x - 6 : x + 6, y: below ? y + 14 : y - 5, 'text-anchor': right ? 'end' : 'start' },
        p.label.length > 24 ? p.label.slice(0, 23) + '…' : p.label)]);
    add(g, mark);
  }
  return g;
}

// A sweep's curves: per spec and swept model, its headline against mean
// reasoning tokens per answer, and against cost where the cells had a price.
const SWEEP_AXES = [
  { key: 'reasoning_tokens', label: t('reasoning tokens per answer (mean)') },
  { key: 'cost', label: t('cost, {0}', R.meta.currency) },
];

function sweeps() {
  if (!(R.sweeps || []).length) return null;
  const out = [h('h2', null, t('Sweeps'))];
  for (const sw of R.sweeps) {
    const sp = specs.find((x) => x.id === sw.spec);
    const charts = SWEEP_AXES.map((axis) => {
      const marks = sw.points.filter((p) => p[axis.key] != null)
        .map((p) => ({ name: p.model, label: sw.key + '=' + p.value, x: p[axis.key], y: p.score, iv: p.interval }));
      const g = plot(marks, axis, true);
      return g && h('div', { class: 'chart', 'data-sweep': sw.model + ':' + sw.spec }, g);
    }).filter(Boolean);
    out.push(h('h3', null, t('{0} on {1}, by {2}', sw.model, sp ? sp.title : sw.spec, sw.key)));
    out.push(charts.length ? h('div', { class: 'charts' }, charts)
      : h('p', { class: 'note' }, t('No answer reported its tokens: nothing to plot.')));
  }
  return out;
}

// What one correct answer cost each priced model: a bar per model, cheapest first.
function costPerCorrect() {
  const priced = order.map((i) => models[i]).filter((m) => m.cost_per_correct != null)
    .sort((a, b) => a.cost_per_correct - b.cost_per_correct);
  if (!priced.length) return null;
  const W = 340, row = 22, L = 120, Rm = 80;
  const max = Math.max(...priced.map((m) => m.cost_per_correct)) || 1;
  const g = s('svg', { viewBox: '0 0 ' + W + ' ' + (row * priced.length + 8), role: 'img',
    'aria-label': t('cost per correct answer'), 'data-chart': 'cost-per-correct' });
  priced.forEach((m, k) => {
    const y = 4 + k * row, w = Math.max(1, (m.cost_per_correct / max) * (W - L - Rm));
    const name = m.name.length > 16 ? m.name.slice(0, 15) + '…' : m.name;
    add(g, s('g', { class: 'bar', 'data-model': m.name }, [
      s('title', null, t('{0}: {1} {2} per correct answer', m.name, num(m.cost_per_correct, 6), R.meta.currency)),
      s('text', { x: L - 6, y: y + 14, 'text-anchor': 'end' }, name),
      s('rect', { class: 'point', x: L, y: y + 3, width: w, height: row - 8 }),
      s('text', { class: 'value', x: L + w + 4, y: y + 14 }, num(m.cost_per_correct, 6)),
    ]));
  });
  return h('div', { class: 'chart' }, [h('h3', null, t('Cost per correct answer, {0}', R.meta.currency)), g]);
}

// A pool's replicas: which endpoint answered how much, how fast, how often it failed.
function pools() {
  const body = [];
  for (const i of order) {
    for (const [url, e] of Object.entries(models[i].endpoints || {})) {
      const l = e.latency_ms;
      body.push(h('tr', { 'data-model': models[i].name },
        h('td', { class: 'name' }, models[i].name), h('td', { class: 'name' }, url),
        h('td', null, e.requests), h('td', null, e.errors),
        h('td', null, l ? fix(l.mean, 0) : '—'), h('td', null, l ? l.p50 : '—'), h('td', null, l ? l.p95 : '—')));
    }
  }
  if (!body.length) return null;
  return [h('h2', null, t('Pool endpoints')),
    table([t('Model'), t('Endpoint'), t('Requests'), t('Errors'), t('mean ms'), t('p50 ms'), t('p95 ms')], body, 'pools')];
}

function overview() {
  const v = view('overview');
  const charts = AXES.map(scatter).filter(Boolean);
  const perCorrect = costPerCorrect();
  if (perCorrect) charts.push(perCorrect);
  add(v, [
    h('h2', null, t('Leaderboard')), leaderboard(),
    h('h2', null, t('Results by category')),
    h('p', { class: 'note' }, t('Click a cell to see its instances.')), heatmap(),
    // Without a price nothing here is a cost: the heading names what is plotted.
    h('h2', null, models.some((m) => m.cost != null || m.cost_per_correct != null)
      ? t('Total against the cost of answering') : t('Total against latency and answer length')),
    charts.length ? h('div', { class: 'charts' }, charts)
      : h('p', { class: 'note' }, t('No timed requests: replayed and cached answers have no latency to plot.')),
    sweeps(),
    pools(),
  ]);
}

// ---------- categories ----------

function boardTable(board, headline) {
  const body = board.standings.map((st) => h('tr', { class: st.rank % 2 ? 'group-a' : 'group-b', 'data-model': st.model },
    h('td', null, h('span', { class: 'rank' }, st.rank)),
    h('td', { class: 'name', title: st.model }, st.model),
    h('td', null, pct(st.score)),
    h('td', null, span(st.interval)),
    h('td', null, st.vs_best ? pts(st.vs_best.difference) : '—'),
    h('td', null, st.vs_best ? span(st.vs_best.interval).replace('%', ' ' + t('pp')) : '—'),
    h('td', null, st.vs_best ? pval(st.vs_best.p_value) : '—')));
  return table([t('Rank'), t('Model'), cap(headline), t('95% interval'), t('vs best'), t('95% interval'), 'p'], body, 'board');
}

function boardNote(board) {
  const test = t(board.test === 'mcnemar' ? 'exact McNemar test, Newcombe interval' : 'paired bootstrap over instances');
  let text = t('{0} instances; {1}.', board.instances, test);
  if (board.mde != null) text += t(' At this size the category detects a drop of {0} pp or more below the best model (power 80%).',
    fix(board.mde * 100, 1));
  if (board.gap && board.gap.needed && board.gap.difference > 0) text += t(' Telling the two best apart (gap {0} pp) needs about {1} instances.',
    fix(board.gap.difference * 100, 1), board.gap.needed);
  return h('p', { class: 'note' }, text);
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
        vals.map((k) => h('td', { title: g[k] ? g[k].passed + '/' + g[k].total + measured(g[k]) : '' }, g[k] ? pm(g[k].score, g[k].interval) : '—')));
    });
    out.push(h('h4', null, t('By {0}', v)), table([t('Model')].concat(vals), body));
  }
  return out;
}

function sampledTable(sp) {
  const c = (R.sampled || []).find((x) => x.spec === sp.id);
  if (!c) return null;
  const hats = c.ks.filter((k) => k > 1);
  const maj = c.models.some((l) => l.maj != null);
  const head = [t('Model'), t('pass rate')].concat(c.ks.map((k) => 'pass@' + k), hats.map((k) => 'pass^' + k),
    maj ? ['maj@n'] : [], [t('tier')]);
  // Each pass@k and pass^k with its bootstrap interval (resampled problems).
  const at = (l, k) => pm(l.pass_at_k[k], (l.pass_at_k_interval || {})[k]);
  const hat = (l, k) => pm(l.pass_hat_k[k], (l.pass_hat_k_interval || {})[k]);
  const body = c.models.map((l) => h('tr', null, h('td', { class: 'name' }, l.model), h('td', null, pct(l.pass_rate)),
    c.ks.map((k) => h('td', null, at(l, k))), hats.map((k) => h('td', null, hat(l, k))),
    maj ? h('td', null, pct(l.maj)) : null, h('td', null, l.tier)));
  const out = [h('h4', null, t('Sampled: pass@k (some of k pass) beside pass^k (all k pass)')), table(head, body)];
  // Per group: the pass rate, pass@k and pass^k at the largest k.
  const top = c.ks[c.ks.length - 1];
  const vars = [...new Set(c.models.flatMap((l) => Object.keys(l.groups || {})))].sort();
  for (const v of vars) {
    const vals = [...new Set(c.models.flatMap((l) => Object.keys((l.groups || {})[v] || {})))].sort();
    const cell = (g) => (g ? [pct(g.pass_rate), at(g, top)].concat(top > 1 ? [hat(g, top)] : []).join(' / ') : '—');
    const rows = c.models.map((l) => h('tr', null, h('td', { class: 'name' }, l.model),
      vals.map((x) => h('td', null, cell(((l.groups || {})[v] || {})[x])))));
    const label = t('pass rate') + ' / pass@' + top + (top > 1 ? ' / pass^' + top : '');
    out.push(h('h4', null, t('By {0}', v) + ' (' + label + ')'), table([t('Model')].concat(vals), rows));
  }
  return out;
}

// A spec's multiple-choice numbers per model, with each model's reliability
// diagram: per confidence bin, the share right against the mean confidence.
function choiceTable(si) {
  const ms = order.filter((m) => (cells.get(m + ':' + si) || {}).choices);
  if (!ms.length) return null;
  const val = (x, d) => (x ? fix(x.value, d) + (x.interval ? ' [' + fix(x.interval.low, d) + ', ' + fix(x.interval.high, d) + ']' : '') : '—');
  const body = ms.map((m) => {
    const c = cells.get(m + ':' + si).choices;
    return h('tr', null, h('td', { class: 'name' }, models[m].name), h('td', null, c.answers),
      h('td', null, val(c.acc, 3)), h('td', null, val(c.acc_norm, 3)), h('td', null, val(c.ece, 3)),
      h('td', null, val(c.brier, 3)), h('td', null, c.missing_labels || 0),
      h('td', { class: 'bar' }, reliability(models[m].name, c)));
  });
  return [h('h4', null, t('Multiple choice: accuracy and calibration')),
    table([t('Model'), t('answers'), 'acc', 'acc_norm', 'ECE ↓', 'Brier ↓', t('missing labels'), t('reliability')], body, 'choices')];
}

// The reliability diagram: a bar per bin (its accuracy), a dot at its mean
// confidence, and the diagonal a calibrated model follows.
function reliability(name, c) {
  const W = 120;
  const y = (v) => W - v * W;
  const g = s('svg', { viewBox: '0 0 ' + W + ' ' + W, width: W, height: W, role: 'img', class: 'reliability',
    'aria-label': t('reliability diagram of {0}', name) },
  s('rect', { x: 0, y: 0, width: W, height: W, fill: 'none', stroke: 'var(--line)' }),
  s('line', { x1: 0, y1: W, x2: W, y2: 0, stroke: 'var(--muted)', 'stroke-dasharray': '3 3' }));
  const step = W / 15;
  for (const b of c.bins || []) {
    const x = b.low * W;
    add(g, s('rect', { x: x + 0.5, y: y(b.accuracy), width: step - 1, height: W - y(b.accuracy), fill: 'var(--bar)',
      class: 'bin', 'data-count': b.count, 'data-accuracy': b.accuracy, 'data-confidence': b.confidence },
    s('title', null, t('{0} answers at confidence {1}: {2} right', b.count, fix(b.confidence, 2), pct(b.accuracy)))));
    add(g, s('circle', { cx: b.confidence * W, cy: y(b.confidence), r: 1.6, fill: 'var(--err)' }));
  }
  return g;
}

function categories() {
  const v = view('categories');
  specs.forEach((sp, si) => {
    if (!sp.board) return;
    add(v, h('div', { class: 'card', id: 'spec-' + sp.id },
      h('h3', null, sp.title, ' ', h('span', { class: 'tag' }, sp.id)),
      boardTable(sp.board, headlineName(sp)), boardNote(sp.board), groupTables(si), measureTable(si), sampledTable(sp),
      choiceTable(si)));
  });
}
