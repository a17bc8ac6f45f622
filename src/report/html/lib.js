// The report's data and lookups shared by its views; dom.js comes first.

const data = JSON.parse(document.getElementById('report-data').textContent);
const R = data.report;
const rows = data.records;
const specs = R.specs;
const models = R.models;
const ROW = 34;
WORDS = new Map(R.meta.words || []);
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
