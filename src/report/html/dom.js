// Text, numbers and elements: what every page of the HTML report and of
// `harness view` draws with. A page's script is these files inside one
// function (see mod.rs), so they share its scope. Everything shown is set as
// text, never as markup: model output is hostile.

const SVG = 'http://www.w3.org/2000/svg';
// The page's text in its language: its English phrases looked up in the
// [English, translation] pairs a page puts in WORDS (none for English),
// {0}, {1}, ... replaced by the arguments.
let WORDS = new Map();
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

// A score as a bar, with its interval as a line when it has one.
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
