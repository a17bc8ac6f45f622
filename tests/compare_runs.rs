//! `harness report RUN_A RUN_B`: two runs of one model against the fake server,
//! the second answering a third of the instances wrong. The comparison lines the
//! instances up by id, calls the drop significant (exact McNemar test) and lists
//! the regressions first, in the terminal, the JSON report and the HTML page;
//! two identical runs show no significant difference.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::browser::{Browser, artifacts};
use crate::common::fake_server::{FakeServer, Reply, eval, expression};
use crate::common::harness;
use crate::common::workspace::{Workspace, fake_workspace};
use serde_json::{Value, json};

pub(crate) const SPEC: &str = include_str!("fixtures/specs/sums.toml");

/// Runs the spec three times: right, then wrong on every third instance, then right again.
fn three_runs() -> (Workspace, Vec<String>) {
    let broken = Arc::new(AtomicBool::new(false));
    let flag = broken.clone();
    let fake = FakeServer::start(move |request| {
        let value = expression(&request.prompt)
            .and_then(|e| eval(&e))
            .unwrap_or(0);
        let wrong = flag.load(Ordering::SeqCst) && value % 3 == 0;
        Reply::Text(format!(
            "the answer is {}",
            if wrong { value + 1 } else { value }
        ))
    });
    let ws = fake_workspace(&fake, "sums.toml", SPEC);
    for broken_now in [false, true, false] {
        broken.store(broken_now, Ordering::SeqCst);
        let (code, out) = ws.run(&["specs/sums.toml", "-m", "fake", "--no-cache"]);
        assert_eq!(code, 0, "{out}");
    }
    let ids = ws
        .run_dirs()
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    (ws, ids)
}

fn report(ws: &Workspace, runs: &[&str]) -> (String, Value, std::path::PathBuf) {
    let mut cmd = harness(ws.path());
    cmd.args(["report", "--results", "results", "--format", "json"])
        .args(runs);
    let output = cmd.output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let html = out
        .lines()
        .next_back()
        .and_then(|l| l.strip_prefix("html report: "))
        .unwrap_or_else(|| panic!("the last line names the HTML report: {out}"))
        .to_owned();
    let json_path = ws
        .path()
        .join(html.trim_end_matches(".html").to_owned() + ".json");
    let json = serde_json::from_str(&std::fs::read_to_string(json_path).unwrap()).unwrap();
    (out, json, ws.path().join(html))
}

#[test]
fn a_worse_run_is_called_worse_with_its_regressions_first() {
    let (ws, ids) = three_runs();
    let (out, json, html) = report(&ws, &[&ids[0], &ids[1]]);
    let (a, b) = (format!("{}/fake", ids[0]), format!("{}/fake", ids[1]));
    // 30 instances, 10 lost (3, 6, ..., 30 are the values, instances 2, 5, ..., 29).
    let pair = &json["run_comparison"]["pairs"][0];
    assert_eq!(
        (pair["baseline"].as_str(), pair["candidate"].as_str()),
        (Some(a.as_str()), Some(b.as_str()))
    );
    let cat = &pair["categories"][0]["delta"];
    assert_eq!(cat["verdict"], "worse", "{pair:#}");
    assert_eq!(cat["test"], "mcnemar");
    assert!((cat["difference"].as_f64().unwrap() + 1.0 / 3.0).abs() < 1e-12);
    // Exact McNemar with 10 discordant pairs all one way: 2 / 2^10.
    assert!((cat["p_value"].as_f64().unwrap() - 2.0 / 1024.0).abs() < 1e-12);
    let regressions: Vec<u64> = pair["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["instance"].as_u64().unwrap())
        .collect();
    assert_eq!(regressions, (0..10).map(|k| 3 * k + 2).collect::<Vec<_>>());
    assert_eq!(pair["fixes"], json!([]));
    // Long lines wrap at 80 columns: compare the words.
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(&format!("{b} against {a}: worse (-33.3 pp, p = 0.002)")),
        "{out}"
    );
    assert!(
        words.contains("regressions (pass → fail): 10: sums/2, sums/5"),
        "{out}"
    );
    let verdict_line = out.lines().find(|l| l.starts_with("Sums ")).unwrap();
    assert!(verdict_line.ends_with("worse"), "{verdict_line}");
    assert!(
        out.lines().all(|l| l.chars().count() <= 80),
        "80 columns: {out}"
    );
    let md = std::fs::read_to_string(html.with_extension("md")).unwrap();
    assert!(
        md.contains("## Run Comparison") && md.contains("**Regressions"),
        "{md}"
    );

    let Some(mut browser) = Browser::launch() else {
        return;
    };
    browser.viewport(1280, 900);
    browser.open(&html);
    browser.eval("document.querySelector('#tabs [data-view=compare]').click()");
    let rows = browser.eval(
        "[...document.querySelectorAll('#view-compare .pair tr.regression, #view-compare .pair tr.fix')]\
         .map(r => [r.className, r.cells[0].textContent, getComputedStyle(r.cells[0]).color])",
    );
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 10, "{rows:?}");
    assert_eq!(rows[0][0], "regression");
    assert_eq!(rows[0][1], "sums/2");
    // Regressions in red (the light scheme's --bad), fixes would be green.
    assert_eq!(rows[0][2], "rgb(207, 34, 46)", "{rows:?}");
    let verdict = browser
        .eval("document.querySelector('#view-compare .pair tbody tr td:last-child').textContent");
    assert_eq!(verdict, json!("worse"));
    browser.screenshot(&artifacts().join("compare_1280.png"));
    // The instance list's "Flipped" filter finds the same instances in both runs.
    browser.eval("document.querySelector('#tabs [data-view=instances]').click()");
    browser.eval(
        "(() => { const el = document.querySelector('#view-instances [name=status]'); \
         el.value = 'flipped'; el.dispatchEvent(new Event('change')); })()",
    );
    browser.wait_for(
        "document.querySelector('#view-instances .count').textContent === '20 of 60 records'",
    );
    assert_eq!(browser.errors(), Vec::<String>::new());
}

#[test]
fn identical_runs_show_no_significant_difference() {
    let (ws, ids) = three_runs();
    let (out, json, _) = report(&ws, &[&ids[0], &ids[2]]);
    let pair = &json["run_comparison"]["pairs"][0];
    assert_eq!(
        pair["categories"][0]["delta"]["verdict"],
        "no significant difference"
    );
    assert_eq!(pair["overall"]["verdict"], "no significant difference");
    assert_eq!(pair["regressions"], json!([]));
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(": no significant difference (+0.0 pp, p = 1.000)"),
        "{out}"
    );
}
