//! The documented sweep (docs/reasoning.md "Sweeps") against the fake
//! server, in the browser: the overview draws one curve per axis the cells
//! have numbers for, one mark per setting at the JSON report's numbers,
//! joined in the order the sweep gave.

use serde_json::{Value, json};

use super::{open, report};
use crate::common::browser::{Browser, artifacts};
use crate::common::fake_server::FakeServer;
use crate::reasoning_controls::{SWEEP, sweep_workspace, thinks};

#[test]
fn a_sweep_draws_its_curve_at_the_json_reports_numbers() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let fake = FakeServer::start(thinks);
    let ws = sweep_workspace(&fake);
    let mut args = SWEEP.to_vec();
    args.push("json");
    ws.run_ok(&args);
    let results = ws.path().join("results");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(report(&results, "json")).unwrap()).unwrap();
    let points = json["sweeps"][0]["points"].as_array().unwrap().clone();
    open(&mut b, &report(&results, "html"), 1280, "sweep_overview");
    // One curve against reasoning tokens, one against cost (the model has a price).
    for (k, axis) in ["reasoning_tokens", "cost"].into_iter().enumerate() {
        let chart =
            format!("document.querySelectorAll('[data-sweep=\"fake:reasoning_sweep\"] svg')[{k}]");
        assert_eq!(b.eval(&format!("{chart}.dataset.axis")), json!(axis));
        let marks = b.eval(&format!(
            "[...{chart}.querySelectorAll('.mark')].map(m => [m.dataset.model, \
             Number(m.dataset.x), Number(m.dataset.y), m.querySelector('text').textContent])"
        ));
        let marks: Vec<(String, f64, f64, String)> = serde_json::from_value(marks).unwrap();
        assert_eq!(marks.len(), 3, "{marks:?}");
        for (mark, point) in marks.iter().zip(&points) {
            let value = point["value"].as_str().unwrap();
            assert_eq!(mark.0, point["model"].as_str().unwrap());
            assert_eq!(mark.1, point[axis].as_f64().unwrap());
            assert_eq!(mark.2, point["score"].as_f64().unwrap());
            assert_eq!(mark.3, format!("effort={value}"));
        }
        let line = format!("{chart}.querySelector('polyline').getAttribute('points')");
        let joined = b.eval(&format!("{line}.split(' ').length"));
        assert_eq!(joined, json!(3), "one line through the settings");
    }
    let charts = b.eval("document.querySelectorAll('[data-sweep] svg').length");
    assert_eq!(charts, json!(2));
    b.eval("document.querySelector('[data-sweep]').scrollIntoView()");
    b.screenshot(&artifacts().join("sweep_curves_1280.png"));
    open(&mut b, &report(&results, "html"), 390, "sweep_overview");
}
