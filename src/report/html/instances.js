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
    const text = r.e || r.rt || r.r || '';
    const el = h('div', { class: 'vrow', role: 'button', tabindex: 0, 'data-row': i,
      on: { click: () => onOpen(i), keydown: (e) => { if (e.key === 'Enter') onOpen(i); } } },
      h('span', { class: 'st ' + (r.e ? 'warn' : r.ok ? 'good' : 'bad') }, st),
      h('span', { class: 'id' }, rowId(r)),
      h('span', { class: 'mdl' }, models[r.m].name),
      h('span', { class: 'sc' }, fix(r.sc, 2)),
      r.fl & 1 ? h('span', { class: 'tag' }, t('flaky')) : null,
      r.fl & 2 || golden(r) ? h('span', { class: 'tag' }, t('flipped')) : null,
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

const state = { model: -1, spec: -1, status: 'all', tool: '', arg: '', q: '' };
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
  if (state.tool && !(r.tn || []).includes(state.tool)) return false;
  if (state.arg && !(r.fa || []).includes(state.arg)) return false;
  if (state.q) {
    if (!hay) hay = rows.map((x) => [rowId(x), x.r, x.a, x.x, x.d, x.e, steps(x)].filter(Boolean).join('\n').toLowerCase());
    if (!hay[i].includes(state.q)) return false;
  }
  return true;
}
// An episode's text for the search: every step's content, tool names and arguments.
function steps(x) {
  return (x.tr || []).map((st) => [st.n, st.c].concat((st.tc || []).map((c) => c.n + ' ' + c.a)).filter(Boolean).join('\n')).join('\n');
}
let list = null, countEl = null;
const controls = {};
function refilter() {
  const picked = [];
  for (let i = 0; i < rows.length; i++) if (matches(rows[i], i)) picked.push(i);
  list.update(picked);
  countEl.textContent = t('{0} of {1} records', picked.length, rows.length);
}

function instances() {
  const v = view('instances');
  const select = (name, options, value) => {
    const el = h('select', { name: name, 'aria-label': name },
      options.map(([val, label]) => h('option', { value: val }, label)));
    el.value = String(value);
    el.addEventListener('change', () => { state[name] = name === 'model' || name === 'spec' ? Number(el.value) : el.value; refilter(); });
    controls[name] = el;
    return el;
  };
  const search = h('input', { type: 'search', name: 'q', placeholder: t('Search id, response, answer, expected…'), 'aria-label': 'search' });
  let timer = 0;
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => { state.q = search.value.toLowerCase(); refilter(); }, 120);
  });
  controls.q = search;
  countEl = h('span', { class: 'muted count' });
  // Filters into calls, shown when some answer called a tool or failed on an argument.
  const tools = [...new Set(rows.flatMap((x) => x.tn || []))].sort();
  const args = [...new Set(rows.flatMap((x) => x.fa || []))].sort();
  add(v, h('div', { class: 'controls' },
    select('model', [[-1, t('All models')]].concat(order.map((m) => [m, models[m].name])), state.model),
    select('spec', [[-1, t('All categories')]].concat(specs.map((sp, i) => [i, sp.title])), state.spec),
    select('status', [['all', t('All')], ['fail', t('Failures only')], ['error', t('Errors')], ['flaky', t('Flaky')], ['flipped', t('Flipped')]], state.status),
    tools.length ? select('tool', [['', t('Any tool')]].concat(tools.map((n) => [n, t('called {0}', n)])), state.tool) : null,
    args.length ? select('arg', [['', t('Any argument')]].concat(args.map((n) => [n, t('failed argument {0}', n)])), state.arg) : null,
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

function openDrill(i) {
  const r = rows[i];
  const body = document.getElementById('drill-body');
  const siblings = rows.map((x, j) => [x, j]).filter(([x]) => x.s === r.s && x.i === r.i &&
    models[x.m].model === models[r.m].model);
  body.replaceChildren();
  add(body, drillNodes(r, {
    titleId: 'drill-title',
    id: rowId(r),
    model: models[r.m].name,
    spec: specs[r.s],
    prompt: prompts.get(r.s + ':' + r.i) || [],
    samples: siblings.length > 1 ? h('div', { class: 'samples' }, siblings.map(([x, j]) => h('button', {
      type: 'button', 'aria-current': j === i ? 'true' : 'false', on: { click: () => openDrill(j) } },
    (x.ok ? '✓ ' : '✗ ') + models[x.m].name + (x.k ? ' #' + x.k : '')))) : null,
    other: otherRun(r),
  }));
  const drill = document.getElementById('drill');
  drill.hidden = false;
  document.getElementById('drill-close').focus();
}

function otherRun(r) {
  if (!partner.has(r.m)) return null;
  const j = byKey.get(partner.get(r.m) + ':' + r.s + ':' + r.i + ':' + r.k);
  if (j == null) return null;
  const o = rows[j];
  return [h('h3', null, t('In the other run: {0} — {1}', models[o.m].name, t(o.ok ? 'passed' : 'failed'))), pre(o.e || o.r, 'other')];
}

function closeDrill() { document.getElementById('drill').hidden = true; }
