// One record drawn in full: the drill-down of the HTML report and of
// `harness view`, from the row the server or the page's data holds
// (src/report/html/rows.rs). dom.js comes first.

// The record's verdict differs from its golden transcript's.
const golden = (r) => r.g && r.g.ok !== r.ok;

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

// The drill-down of row `r`. `c` holds what the page knows beside the row:
// `id`, `model` (its name), `spec` ({id, title}), `prompt` (its rows), and
// optional: `titleId` (the heading's element id), and nodes of the page's
// own: `samples` under the facts, `other` at the end.
function drillNodes(r, c) {
  const verdict = t(r.e ? 'request error' : r.ok ? 'passed' : 'failed');
  return [
    h('h2', { id: c.titleId }, c.id, ' ', h('span', { class: r.ok ? 'good' : 'bad' }, verdict)),
    h('dl', { class: 'kv' },
      h('dt', null, t('model')), h('dd', null, c.model),
      h('dt', null, t('category')), h('dd', null, c.spec.title + ' (' + c.spec.id + ')'),
      h('dt', null, t('score')), h('dd', null, fix(r.sc, 3)),
      r.f ? [h('dt', null, t('failure')), h('dd', null, r.f)] : null,
      r.l != null ? [h('dt', null, t('latency')), h('dd', null, r.l + ' ' + t('ms'))] : null,
      r.to != null ? [h('dt', null, t('output tokens')), h('dd', null, r.to)] : null,
      r.tt != null ? [h('dt', null, t('reasoning tokens')), h('dd', null, r.tt)] : null,
      r.gv ? Object.entries(r.gv).map(([k, val]) => [h('dt', null, k), h('dd', null, val)]) : null),
    c.samples,
    h('h3', null, t('Prompt')),
    c.prompt.length ? c.prompt.map(([role, content, imgs]) => [h('div', { class: 'role' }, role),
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
    c.other];
}
