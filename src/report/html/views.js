// Flaky, golden and run-comparison views; tabs and start-up.

// ---------- flaky, golden, compare ----------

function flaky() {
  const v = view('flaky');
  const f = R.flaky;
  add(v, [h('h2', null, t('Stability')),
    table([t('Model'), t('Category'), t('Instances'), 'k', 'pass@k', 'pass^k', t('Flaky')], f.stability.map((st) => h('tr', null,
      h('td', { class: 'name' }, st.model), h('td', { class: 'name' }, st.spec), h('td', null, st.instances), h('td', null, st.k),
      h('td', null, pct(st.pass_at_k)), h('td', null, pct(st.pass_hat_k)), h('td', null, st.flaky)))),
    h('p', { class: 'note' }, t('pass@k: some of k samples pass; pass^k: all k pass. Flaky instances passed some samples but not all.')),
    h('h2', null, t('Flaky instances, lowest pass rate first'))]);
  const picked = [];
  for (const fi of f.instances) {
    const si = specIndex.get(fi.spec);
    const m = models.findIndex((x) => x.model === fi.model);
    const j = byKey.get(m + ':' + si + ':' + fi.instance + ':0');
    picked.push({ fi, j });
  }
  const body = h('tbody');
  let shown = 0;
  const more = h('button', { type: 'button', class: 'btn more', on: { click: () => page() } }, t('Show more'));
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
    [t('Instance'), t('Model'), t('Passed'), t('Rate')].map((x) => h('th', null, x)))), body)), more]);
  page();
  if (!picked.length) add(v, h('p', { class: 'muted' }, t('No flaky instances.')));
}

function goldenView() {
  const v = view('golden');
  add(v, [h('h2', null, t('Against the golden transcripts')),
    table([t('Model'), t('Category'), t('Compared'), t('pass → fail'), t('fail → pass'), t('Changed responses'), t('Not in golden')],
      R.golden.map((g) => h('tr', null, h('td', { class: 'name' }, g.model), h('td', { class: 'name' }, g.spec),
        h('td', null, g.compared), h('td', { class: g.regressions ? 'bad' : '' }, g.regressions),
        h('td', { class: g.fixes ? 'good' : '' }, g.fixes), h('td', null, g.changed), h('td', null, g.missing)))),
    h('h3', null, t('Flipped verdicts first, then changed responses'))]);
  const picked = [];
  rows.forEach((r, i) => { if (golden(r)) picked.push(i); });
  const flips = picked.length;
  rows.forEach((r, i) => { if (r.g && r.g.diff && !golden(r)) picked.push(i); });
  add(v, h('p', { class: 'note' }, t('{0} flipped, {1} more with a changed response.', flips, picked.length - flips)));
  vlist(v, picked, openDrill);
}

function compare() {
  const v = view('compare');
  add(v, h('p', { class: 'note' }, t('Baseline run: {0}. Differences are the later run minus the baseline on the same instances.',
    R.runs.baseline_run)));
  for (const p of R.runs.pairs) {
    const d = p.overall;
    const card = h('div', { class: 'card pair' }, h('h3', null, t('{0} against {1}', p.candidate, p.baseline)),
      d ? h('p', null, t('Overall: '), h('strong', { class: verdictClass(d.verdict) }, t(d.verdict)),
        ' (' + pts(d.difference) + ', 95% ' + span(d.interval).replace('%', ' ' + t('pp')) + ', p = ' + pval(d.p_value) + ')') : null,
      table([t('Category'), t('Baseline'), t('Later'), t('Change'), t('95% interval'), 'p', t('Verdict')], p.categories.map((c) => h('tr', null,
        h('td', { class: 'name' }, c.title), h('td', null, pct(c.baseline)), h('td', null, pct(c.candidate)),
        h('td', null, pts(c.delta.difference)), h('td', null, span(c.delta.interval).replace('%', ' ' + t('pp'))),
        h('td', null, pval(c.delta.p_value)), h('td', { class: verdictClass(c.delta.verdict) }, t(c.delta.verdict))))),
      h('h4', null, t('Flipped instances: {0} pass → fail, {1} fail → pass', p.regressions.length, p.fixes.length)));
    const b = modelIndex.get(p.candidate);
    const flips = p.regressions.map((f) => [f, true]).concat(p.fixes.map((f) => [f, false]));
    add(card, table([t('Instance'), t('Baseline'), t('Later'), ''], flips.slice(0, 500).map(([f, worse]) => {
      const j = byKey.get(b + ':' + specIndex.get(f.spec) + ':' + f.instance + ':0');
      return h('tr', { class: worse ? 'regression' : 'fix', on: { click: () => j != null && openDrill(j) } },
        h('td', { class: 'name ' + (worse ? 'bad' : 'good') }, f.spec + '/' + f.instance),
        h('td', null, pct(f.from)), h('td', null, pct(f.to)), h('td', { class: worse ? 'bad' : 'good' }, worse ? t('pass → fail') : t('fail → pass')));
    })));
    if (flips.length > 500) add(card, h('p', { class: 'note' }, t('First 500 of {0}; filter the Instances view by "Flipped" for all.', flips.length)));
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
document.getElementById('meta').textContent = vis(t('runs {0} · {1} UTC · {2} models · {3} categories · {4} records · harness {5}',
  R.meta.runs.join(', '), R.meta.timestamp, models.length, specs.length, rows.length, R.meta.version));
// The page's fixed text (body.html) in the report's language.
document.querySelectorAll('.brand h1, #tabs button').forEach((el) => { el.textContent = t(el.textContent); });
document.getElementById('drill-close').setAttribute('aria-label', t('Close'));
show((location.hash || '#overview').slice(1));
// Milliseconds from navigation to a drawn page: what benches/report.rs reports.
window.__ready_ms = performance.now();
document.body.dataset.ready = 'true';
