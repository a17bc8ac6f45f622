//! The documented sweep (docs/reasoning.md "Sweeps") against the fake
//! server, in the browser: the overview draws one curve per axis the cells
//! have numbers for, one mark per setting at the JSON report's numbers,
//! joined in the order the sweep gave.

use serde_json::{Value, json};

use super::{open, report};
use crate::common::browser::Browser;
use crate::common::fake_server::FakeServer;
use crate::common::workspace::fake_workspace;
use crate::reasoning::{SPEC, SWEEP, thinks};

#[test]
fn a_sweep_draws_its_curve_at_the_json_reports_numbers() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let fake = FakeServer::start(thinks);
    let ws = fake_workspace(&fake, "reasoning.toml", SPEC);
    let mut args = SWEEP.to_vec();
    args.push("json");
    ws.run_ok(&args);
    let results = ws.path().join("results");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(report(&results, "json")).unwrap()).unwrap();
    let points = json["sweeps"][0]["points"].as_array().unwrap().clone();
    open(&mut b, &report(&results, "html"), 1280, "sweep_overview");
    let charts = b.eval("document.querySelectorAll('[data-sweep=\"fake:reasoning\"] svg').length");
    // Reasoning tokens only: the fake model has no price, so no cost axis.
    assert_eq!(charts, json!(1));
    let marks = b.eval(
        "[...document.querySelectorAll('[data-sweep] .mark')].map(m => [m.dataset.model, Number(m.dataset.x), Number(m.dataset.y), m.querySelector('text').textContent])",
    );
    let marks: Vec<(String, f64, f64, String)> = serde_json::from_value(marks).unwrap();
    assert_eq!(marks.len(), 3, "{marks:?}");
    for (mark, point) in marks.iter().zip(&points) {
        assert_eq!(mark.0, point["model"].as_str().unwrap());
        assert_eq!(mark.1, point["reasoning_tokens"].as_f64().unwrap());
        assert_eq!(mark.2, point["score"].as_f64().unwrap());
        assert_eq!(
            mark.3,
            format!("effort={}", point["value"].as_str().unwrap())
        );
    }
    let joined = b.eval(
        "document.querySelector('[data-sweep] polyline').getAttribute('points').split(' ').length",
    );
    assert_eq!(joined, json!(3), "one line through the settings");
    open(&mut b, &report(&results, "html"), 390, "sweep_overview");
}
