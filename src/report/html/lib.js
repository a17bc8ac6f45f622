// Text, numbers, elements and lookups shared by every view. The page's script
// is lib.js, overview.js, instances.js and views.js in that order, inside one
// function (see mod.rs): they share its scope. Everything shown comes from the
// JSON in #report-data and is set as text, never as markup: model output is hostile.

const data = JSON.parse(document.getElementById('report-data').textContent);
const R = data.report;
const rows = data.records;
const specs = R.specs;
const models = R.models;
const ROW = 34;
const SVG = 'http://www.w3.org/2000/svg';
// The page's text in the report's language: its English phrases looked up in
// the report's [English, translation] pairs (none for English), {0}, {1}, ...
// replaced by the arguments.
const WORDS = new Map(R.meta.words || []);
function t(text, ...args) {
  let out = WORDS.get(text) || text;
  args.forEach((a, k) => { out = out.split('{' + k + '}').join(String(a)); });
  return out;
}
const cap = (text) => text.charAt(0).toUpperCase() + text.slice(1);

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
const pts = (d) => (d >= 0 ? '+' : '') + fix(d * 100, 1) + ' ' + t('pp');
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
  const tbl = h('table', { class: cls },
    h('thead', null, h('tr', null, head.map((x) => h('th', null, x)))),
    h('tbody', null, body));
  // Text and bar columns (td.name, td.bar) get left-aligned headers too.
  const first = tbl.tBodies[0].rows[0];
  if (first) {
    [...first.cells].forEach((c, i) => {
      const th = tbl.tHead.rows[0].cells[i];
      for (const k of ['name', 'bar']) if (th && c.classList.contains(k)) th.classList.add(k);
    });
  }
  return h('div', { class: 'scroll' }, tbl);
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
