//! `harness view` in headless Chromium: hostile answers stay text, a record
//! and an episode drill down, two runs compare, the history's trend and
//! filters, a live run appearing without a reload; and the viewer at scale
//! (`bench/view.sh`).

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Viewer, slow_workspace, with_runs};
use crate::common::browser::{Browser, artifacts};
use crate::common::workspace::Workspace;

/// The run list in Chromium redraws as a run that starts after the page
/// opened writes its records: no reload (a value set in the page survives).
#[test]
fn in_chromium_a_live_run_appears_and_updates_without_a_reload() {
    let (ws, _fake) = slow_workspace(300);
    let viewer = Viewer::start(&ws, &[]);
    let Some(mut b) = Browser::launch() else {
        return;
    };
    open(&mut b, &viewer.url);
    b.wait_for("document.getElementById('live').textContent.startsWith('live')");
    b.eval("window.__kept = 'still here'; true");
    let mut run = crate::common::spawn_quiet(&mut ws.run_cmd(&["specs/q.toml", "-m", "fake"]));
    b.wait_for("document.querySelectorAll('input[data-run]').length === 1");
    b.wait_for(
        "document.querySelector('main table tr:nth-child(2) td:nth-child(7)').textContent === '6'",
    );
    assert_eq!(b.eval("window.__kept"), "still here");
    assert!(run.wait().unwrap().success());
    b.wait_for("document.querySelector('main .finished') !== null");
    b.screenshot(&artifacts().join("view-live.png"));
    assert!(b.errors().is_empty(), "{:?}", b.errors());
}

/// Opens `url` in `b` and waits until the page has drawn.
fn open(b: &mut Browser, url: &str) {
    b.navigate(url);
    b.wait_for("document.getElementById('main') && document.getElementById('main').dataset.drawn !== undefined");
}

#[test]
fn in_chromium_hostile_answers_stay_text_and_runs_drill_down_and_compare() {
    let (ws, _fake) = with_runs(2);
    let viewer = Viewer::start(&ws, &[]);
    let Some(mut b) = Browser::launch() else {
        return;
    };
    b.viewport(1200, 900);
    open(&mut b, &viewer.url);
    b.wait_for("document.querySelectorAll('input[data-run]').length === 2");
    // History: the trend of fake on q over both runs, 50% then 100%.
    b.wait_for("document.querySelectorAll('#trend circle.point').length === 2");
    let titles = b.eval("[...document.querySelectorAll('#trend circle.point title')].map(t => t.textContent.split(' · ')[2])");
    assert_eq!(titles, serde_json::json!(["50.0% of 6", "100.0% of 6"]));
    b.screenshot(&artifacts().join("view-runs.png"));
    // Filters: by tag, by date.
    let rows = "document.querySelectorAll('input[data-run]').length";
    let filter = |b: &mut Browser, id: &str, value: &str, event: &str| {
        b.eval(&format!(
            "(() => {{ const f = document.getElementById('{id}'); f.value = '{value}'; f.dispatchEvent(new Event('{event}')); return true; }})()"
        ));
    };
    filter(&mut b, "filter", "arith", "input");
    assert_eq!(b.eval(rows), 2);
    filter(&mut b, "filter", "no-such-tag", "input");
    assert_eq!(b.eval(rows), 0);
    filter(&mut b, "filter", "", "input");
    filter(&mut b, "since", "2999-01-01", "change");
    assert_eq!(b.eval(rows), 0);
    filter(&mut b, "since", "", "change");
    assert_eq!(b.eval(rows), 2);
    // The first run's failing record: its answer is the hostile text, shown as text.
    let runs = viewer.runs_with(2, 6);
    let older = runs[1]["id"].as_str().unwrap().to_owned();
    let newer = runs[0]["id"].as_str().unwrap().to_owned();
    let page = viewer.json(&format!("/api/runs/{older}/records?outcome=fail"));
    let n = page["items"][0]["n"].as_u64().expect("a failing record");
    open(&mut b, &format!("{}#/run/{older}/record/{n}", viewer.url));
    b.wait_for("document.querySelector('.record') !== null");
    let shown = b.eval("document.querySelector('.record').textContent");
    assert!(
        shown
            .as_str()
            .unwrap()
            .contains("<script>window.__pwned=1</script>"),
        "{shown}"
    );
    assert_eq!(
        b.eval(
            "document.querySelectorAll('main script, main img, main a[href^=javascript]').length"
        ),
        0
    );
    b.screenshot(&artifacts().join("view-record.png"));
    // Compare: the odd questions flipped fail → pass.
    open(&mut b, &format!("{}#/compare/{older}/{newer}", viewer.url));
    b.wait_for("document.body.textContent.includes('fail → pass')");
    let flips =
        b.eval("[...document.querySelectorAll('main table')[1].querySelectorAll('tr')].length - 1");
    assert_eq!(flips, 3);
    b.eval("document.querySelector('main table:nth-of-type(2) button').click(); true");
    b.wait_for("document.querySelectorAll('#side .record').length === 2");
    b.screenshot(&artifacts().join("view-compare.png"));
    // An episode: every turn of both sides, its tool call, hostile user turns as text.
    let conversation = ws.path().join("results/runs/20990101_000000");
    std::fs::create_dir_all(&conversation).unwrap();
    let plan = ws.run_dirs()[0].join("plan.json");
    std::fs::copy(plan, conversation.join("plan.json")).unwrap();
    std::fs::copy(
        crate::common::root().join("tests/fixtures/journals/conversation.jsonl"),
        conversation.join("journal.jsonl"),
    )
    .unwrap();
    viewer.runs_with(3, 1);
    open(
        &mut b,
        &format!("{}#/run/20990101_000000/record/0", viewer.url),
    );
    // Drawn by the HTML report's own drill-down: six steps, both sides.
    b.wait_for("document.querySelectorAll('.record .episode .step').length === 6");
    let episode = b.eval("document.querySelector('.record').textContent");
    let episode = episode.as_str().unwrap();
    assert!(episode.contains("→ cancel_order"), "{episode}");
    assert!(episode.contains("\"order_id\": \"A-1002\""), "{episode}");
    assert!(
        episode.contains("<script>window.__pwned = 8</script>###STOP###"),
        "{episode}"
    );
    b.screenshot(&artifacts().join("view-episode.png"));
    assert_eq!(b.eval("window.__pwned === undefined"), true);
    assert!(b.errors().is_empty(), "{:?}", b.errors());
    let outside: Vec<String> = b
        .requests()
        .into_iter()
        // Chromium draws a date field's own icon from a data: URL.
        .filter(|u| !u.starts_with(viewer.url.trim_end_matches('/')) && !u.starts_with("data:"))
        .collect();
    assert!(
        outside.is_empty(),
        "requests outside the viewer: {outside:?}"
    );
}

/// Writes `runs` run folders of `per_run` records each under `ws`'s
/// results, made from the one real run there (its plan and its first
/// record as templates), and returns how many records it wrote.
fn synthetic_runs(ws: &Workspace, runs: usize, per_run: usize) -> usize {
    let real = ws.run_dirs()[0].clone();
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(real.join("plan.json")).unwrap()).unwrap();
    let journal = std::fs::read_to_string(real.join("journal.jsonl")).unwrap();
    let record: Value = serde_json::from_str(journal.lines().next().unwrap()).unwrap();
    for r in 0..runs {
        let id = format!("20250101_{:06}", r);
        let dir = ws.path().join("results/runs").join(&id);
        std::fs::create_dir_all(&dir).unwrap();
        let mut plan = plan.clone();
        plan["run_id"] = Value::from(id.clone());
        plan["created"] = Value::from(format!("2025-01-{:02} 00:00:00", r % 28 + 1));
        std::fs::write(dir.join("plan.json"), plan.to_string()).unwrap();
        let mut out =
            std::io::BufWriter::new(std::fs::File::create(dir.join("journal.jsonl")).unwrap());
        for i in 0..per_run {
            let mut line = record.clone();
            line["model"] = Value::from(format!("model{}", i % 4));
            line["spec"] = Value::from(format!("spec{}", (i / 4) % 10));
            line["instance"] = Value::from(i / 40);
            line["instance_id"] = Value::from(format!("spec{}/{}", (i / 4) % 10, i / 40));
            line["passed"] = Value::from((i * 7 + r) % 3 != 0);
            serde_json::to_writer(&mut out, &line).unwrap();
            out.write_all(b"\n").unwrap();
        }
        out.flush().unwrap();
    }
    runs * per_run
}

/// A process's resident and peak resident memory, in MiB, from /proc.
fn memory_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        let kb: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kb / 1024.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The viewer at scale (`bench/view.sh` runs it; `HARNESS_VIEW_RECORDS`,
/// default 1,000,000, over 50 runs): how long the index takes, the run
/// list's first paint and a drill-down page in Chromium (from the page's own
/// clock), and the server's memory.
#[test]
#[ignore = "a benchmark: bench/view.sh"]
fn scale_a_results_folder_of_a_million_records() {
    let total: usize = std::env::var("HARNESS_VIEW_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let runs = 50;
    let (ws, _fake) = with_runs(1);
    let made = Instant::now();
    let written = synthetic_runs(&ws, runs, total / runs);
    eprintln!(
        "wrote {written} records in {:.1} s",
        made.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let viewer = Viewer::start(&ws, &[]);
    let pid = viewer.child.id();
    let mut b = Browser::launch().expect("Chromium");
    b.viewport(1280, 800);
    // First paint: the run list drawn, by the page's own clock from navigation.
    open(&mut b, &viewer.url);
    b.wait_for("document.querySelectorAll('input[data-run]').length >= 50");
    let paint =
        b.eval("Number(document.getElementById('main').dataset.drawn) - performance.timeOrigin");
    // The index, complete.
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let list = viewer.json("/api/runs");
        let sum: u64 = list
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["records"].as_u64().unwrap())
            .sum();
        if sum as usize >= written {
            break;
        }
        assert!(Instant::now() < deadline, "not indexed in 30 min");
        std::thread::sleep(Duration::from_millis(200));
    }
    let indexed = started.elapsed().as_secs_f64();
    let (rss, peak) = memory_mib(pid);
    // A drill-down: the last record of the last run, from the hash change to drawn.
    let last = format!("#/run/20250101_{:06}/record/{}", runs - 1, total / runs - 1);
    let drill = b.eval(&format!(
        "new Promise(done => {{ const main = document.getElementById('main'); const before = main.dataset.drawn; \
         const t0 = performance.now(); location.hash = '{last}'; \
         const poll = () => main.dataset.drawn !== before && document.querySelector('.record') ? done(performance.now() - t0) : setTimeout(poll, 5); poll(); }})"
    ));
    // A page of one cell's records, filtered by outcome.
    let page = b.eval(&format!(
        "new Promise(done => {{ const main = document.getElementById('main'); const before = main.dataset.drawn; \
         const t0 = performance.now(); location.hash = '#/run/20250101_{:06}/records?cell=3&outcome=fail'; \
         const poll = () => main.dataset.drawn !== before && document.querySelector('#records table') ? done(performance.now() - t0) : setTimeout(poll, 5); poll(); }})",
        runs - 1
    ));
    let (rss_after, peak_after) = memory_mib(pid);
    println!("records                 {written}");
    println!("runs                    {runs}");
    println!("index complete          {indexed:.1} s");
    println!("first paint (run list)  {:.0} ms", paint.as_f64().unwrap());
    println!("drill-down (a record)   {:.0} ms", drill.as_f64().unwrap());
    println!("a page of a cell        {:.0} ms", page.as_f64().unwrap());
    println!(
        "server RSS              {rss:.0} MiB indexed (peak {peak:.0}), {rss_after:.0} MiB after the pages (peak {peak_after:.0})"
    );
}
