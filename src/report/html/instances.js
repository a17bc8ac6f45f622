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

// A message's images: a thumbnail when the page embeds it (a data: URL of an
// image type, nothing else), and always its path, type, size and digest.
const DATA_URL = /^data:image\/(png|jpeg|webp);base64,[A-Za-z0-9+/=]+$/;
function thumbs(imgs) {
  return h('div', { class: 'thumbs' }, imgs.map((x) => h('figure', null,
    typeof x.u === 'string' && DATA_URL.test(x.u) ? h('img', { src: x.u, alt: x.t }) : null,
    h('figcaption', null, x.t))));
}

// An answer's episode as a conversation: each assistant turn (its text, then
// each call: tool name and arguments, flagged when they were not JSON), each
// tool result (flagged when it is an error) and each simulated user's turn. A last turn that only repeats the
// response is left to the final answer below.
function episode(r) {
  const all = r.tr.slice();
  const last = all[all.length - 1];
  if (last && last.o === 'assistant' && !last.tc && (last.c || '') === (r.r || '')) all.pop();
  let turn = 0;
  let said = 0;
  // Calls are numbered from 1 through the episode, whatever ids the provider
  // gave (`call_0_0` under turn 1); a result shows its call's number, and
  // the provider's id stays in the tooltip.
  const numbers = new Map();
  all.forEach((st) => (st.tc || []).forEach((c) => {
    if (c.i && !numbers.has(c.i)) numbers.set(c.i, numbers.size + 1);
  }));
  const id = (i) => (i ? h('span', { class: 'call-id', title: i }, ' ' + (numbers.has(i) ? t('call {0}', numbers.get(i)) : i)) : null);
  const flag = (text) => [' ', h('span', { class: 'flag bad' }, text)];
  return h('div', { class: 'episode' }, all.map((st) => {
    if (st.o === 'tool') {
      return h('div', { class: 'step tool' },
        h('div', { class: 'role' }, t('tool result'), ' · ', h('span', { class: 'tool-name' }, st.n || '?'), id(st.i),
          st.er ? flag(t('error')) : null),
        pre(st.c, st.er ? 'result error' : 'result'));
    }
    if (st.o === 'assistant') turn += 1;
    // A simulated user's turn ([agent.user]) is the other side of the conversation.
    if (st.o === 'user') said += 1;
    const who = st.o === 'assistant' ? t('assistant, turn {0}', turn) : st.o === 'user' ? t('simulated user, turn {0}', said) : st.o;
    return h('div', { class: 'step ' + st.o },
      h('div', { class: 'role' }, who),
      st.c || !st.tc ? pre(st.c, 'text') : null,
      (st.tc || []).map((c) => h('div', { class: 'call' },
        h('div', { class: 'call-head' }, '→ ', h('span', { class: 'tool-name' }, c.n), id(c.i),
          c.iv ? flag(t('invalid arguments: {0}', c.iv)) : null),
        pre(c.a, 'args'))));
  }));
}

function diffView(ops) {
  return h('pre', { class: 'diff' }, ops.map(([op, t]) => (op === '=' ? t : h(op === '-' ? 'del' : 'ins', null, t))));
}

// A multiple-choice answer's choices: label, text, probability, log-likelihood.
function choices(r) {
  const c = r.ch;
  if (!c) return null;
  const n = (c.labels || []).length;
  const body = [...Array(n).keys()].map((k) => {
    const p = (c.probabilities || [])[k];
    const mark = (k === c.picked ? '→ ' : '') + (k === c.correct ? '✓' : '');
    return h('tr', { class: k === c.picked ? 'picked' : null }, h('td', null, mark), h('td', { class: 'name' }, c.labels[k]),
      h('td', { class: 'name' }, (c.texts || [])[k]), h('td', { class: 'bar' }, p == null ? t('not listed') : errorBar(p, null)),
      h('td', null, p == null ? '—' : fix(p, 3)), h('td', null, c.loglikelihoods ? num(c.loglikelihoods[k], 3) : '—'));
  });
  return [h('h3', null, t('Choices ({0})', c.method)),
    table(['', t('label'), t('text'), t('probability'), '', t('log-likelihood')], body, 'choices')];
}

// Token log-probabilities: each token shaded by how unlikely it was, its
// alternatives on hover (a title, set as text like everything else).
function shading(r) {
  if (!r.lp || !r.lp.length) return null;
  const c = r.ch;
  const names = r.lp.length > 1 && c ? c.labels : null;
  return [h('h3', null, t('Token probabilities')), r.lp.map((seq, k) => h('div', { class: 'tokens' },
    names ? h('span', { class: 'role' }, names[k] + ': ') : null,
    seq.map((tok) => {
      const el = h('span', { class: 'token', title: [tok.t + '  ' + fix(Math.exp(tok.lp), 3)]
        .concat((tok.top || []).map(([a, lp]) => '  ' + a + '  ' + fix(Math.exp(lp), 3))).join('\n') }, tok.t);
      el.style.background = 'rgba(207, 34, 46, ' + fix(Math.min(0.6, 1 - Math.exp(tok.lp)), 2) + ')';
      return el;
    })))];
}

function openDrill(i) {
  const r = rows[i];
  const body = document.getElementById('drill-body');
  const sp = specs[r.s];
  const prompt = prompts.get(r.s + ':' + r.i) || [];
  const siblings = rows.map((x, j) => [x, j]).filter(([x]) => x.s === r.s && x.i === r.i &&
    models[x.m].model === models[r.m].model);
  const verdict = t(r.e ? 'request error' : r.ok ? 'passed' : 'failed');
  body.replaceChildren();
  add(body, [
    h('h2', { id: 'drill-title' }, rowId(r), ' ', h('span', { class: r.ok ? 'good' : 'bad' }, verdict)),
    h('dl', { class: 'kv' },
      h('dt', null, t('model')), h('dd', null, models[r.m].name),
      h('dt', null, t('category')), h('dd', null, sp.title + ' (' + sp.id + ')'),
      h('dt', null, t('score')), h('dd', null, fix(r.sc, 3)),
      r.f ? [h('dt', null, t('failure')), h('dd', null, r.f)] : null,
      r.l != null ? [h('dt', null, t('latency')), h('dd', null, r.l + ' ' + t('ms'))] : null,
      r.to != null ? [h('dt', null, t('output tokens')), h('dd', null, r.to)] : null,
      r.tt != null ? [h('dt', null, t('reasoning tokens')), h('dd', null, r.tt)] : null,
      r.gv ? Object.entries(r.gv).map(([k, val]) => [h('dt', null, k), h('dd', null, val)]) : null),
    siblings.length > 1 ? h('div', { class: 'samples' }, siblings.map(([x, j]) => h('button', {
      type: 'button', 'aria-current': j === i ? 'true' : 'false', on: { click: () => openDrill(j) } },
    (x.ok ? '✓ ' : '✗ ') + models[x.m].name + (x.k ? ' #' + x.k : '')))) : null,
    h('h3', null, t('Prompt')),
    prompt.length ? prompt.map(([role, content, imgs]) => [h('div', { class: 'role' }, role),
      imgs ? h('div', { class: 'with-images' }, pre(content), thumbs(imgs)) : pre(content)]) : pre(null),
    r.tr ? [h('h3', null, t('Episode')), episode(r)] : null,
    r.th != null ? h('details', { class: 'reasoning' }, h('summary', null, t('Reasoning ({0} characters)', [...r.th].length)), pre(r.th, 'reasoning')) : null,
    h('h3', null, t(r.e ? 'Request error' : r.tr ? 'Final answer' : 'Response')), pre(r.e || r.r, 'response'),
    r.st != null ? h('details', { class: 'state' }, h('summary', null, t('Final state')), pre(r.st, 'state')) : null,
    choices(r),
    shading(r),
    h('h3', null, t('Expected')), pre(expected(r.x), 'expected'),
    h('h3', null, t('Extracted answer')), pre(r.a, 'answer'),
    r.d ? [h('h3', null, t('Why it failed')), pre(r.d)] : null,
    r.ru && r.ru.length ? [h('h3', null, t('Rules')), table([t('Rule'), t('Verdict'), t('Score'), t('Answer'), t('Detail')],
      r.ru.map((u) => h('tr', null, h('td', { class: 'name' }, u.n + (u.ro ? t(' (report only)') : '')),
        h('td', { class: u.ok ? 'good' : 'bad' }, t(u.ok ? 'pass' : 'fail')), h('td', null, fix(u.sc, 3)),
        h('td', { class: 'name' }, u.a == null ? '—' : u.a), h('td', { class: 'name' }, u.d || ''))))] : null,
    (r.ru || []).filter((u) => u.j).map((u) => [
      h('h3', null, t('Judge: {0}', u.n)),
      h('p', null, t('judge {0}, level {1}, sampled levels {2}', u.j[0], u.j[1] == null ? '—' : u.j[1], u.j[2].join(', ') || '—')),
      u.j[3].map((text, k) => [h('div', { class: 'role' }, t('reasoning {0}', k + 1)), pre(text, 'reasoning')]),
    ]),
    r.g ? [h('h3', null, t('Against the golden transcript')),
      h('p', null, t('golden verdict {0}, score {1}', t(r.g.ok ? 'passed' : 'failed'), fix(r.g.sc, 3)) +
        (golden(r) ? t(' — the verdict flipped') : '') + (r.g.diff ? '' : t('; same response'))),
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
  return [h('h3', null, t('In the other run: {0} — {1}', models[o.m].name, t(o.ok ? 'passed' : 'failed'))), pre(o.e || o.r, 'other')];
}

function closeDrill() { document.getElementById('drill').hidden = true; }
