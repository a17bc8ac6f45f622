// The instance list (drawn on demand), its filters, and the drill-down.

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
