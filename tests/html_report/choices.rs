//! A multiple-choice report in Chromium: the reliability diagram drawn from
//! the cell's bins, the drill-down's choices and its token shading, with a
//! hostile token among the alternatives rendered as text.

use serde_json::json;

use super::{assert_clean, open, report, text};
use crate::choices::{chat_with_logprobs, workspace};
use crate::common::browser::{Browser, artifacts};
use crate::common::fake_server::{FakeServer, Reply};

const HOSTILE_TOKEN: &str = "<img src=x onerror=\"window.__pwned = 7\">";

#[test]
fn the_reliability_diagram_and_the_token_shading_render_from_the_data() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let fake = FakeServer::start(|_| {
        let top = [(" B", -0.4), ("A", -1.6), (HOSTILE_TOKEN, -2.0)];
        Reply::Raw(chat_with_logprobs(" B", &top))
    });
    let ws = workspace("choices_first_token.toml", "openai", &fake.openai_base());
    let args = [
        "specs/choices_first_token.toml",
        "-m",
        "fake",
        "--format",
        "json",
    ];
    ws.run_expect(&args, 0, &[]);
    let results = ws.path().join("results");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report(&results, "json")).unwrap()).unwrap();
    let cell = &json["models"][0]["specs"][0]["metrics"]["choices"];
    let bins = cell["bins"]
        .as_array()
        .unwrap_or_else(|| panic!("no bins: {json:#}"));

    open(&mut b, &report(&results, "html"), 1280, "choices_overview");
    b.eval("document.querySelector('#tabs [data-view=categories]').click()");
    b.wait_for("document.querySelectorAll('svg.reliability').length > 0");
    let drawn = b.eval(
        "[...document.querySelectorAll('svg.reliability rect.bin')].map(r => [+r.dataset.count, +r.dataset.accuracy])",
    );
    let expected: Vec<_> = bins
        .iter()
        .map(|b| json!([b["count"], b["accuracy"]]))
        .collect();
    assert_eq!(drawn, json!(expected));
    let table = text(&mut b, "#view-categories table.choices");
    assert!(
        table.contains("acc_norm") && table.contains("ECE"),
        "{table}"
    );
    b.screenshot(&artifacts().join("choices_categories_1280.png"));

    b.eval("document.querySelector('#tabs [data-view=instances]').click()");
    b.wait_for("document.querySelectorAll('#view-instances .vrow').length > 0");
    b.eval("document.querySelector('#view-instances .vrow').click()");
    b.wait_for("!document.getElementById('drill').hidden");
    let choices = text(&mut b, "#drill-body table.choices");
    assert!(
        choices.contains("Mercury") && choices.contains("not listed"),
        "{choices}"
    );
    let title = b.eval("document.querySelector('#drill-body .tokens .token').title");
    assert!(title.as_str().unwrap().contains(HOSTILE_TOKEN), "{title}");
    assert_eq!(
        b.eval("[window.__pwned === undefined, document.querySelectorAll('#drill img').length]"),
        json!([true, 0])
    );
    b.screenshot(&artifacts().join("choices_drill_1280.png"));
    assert_clean(&b);
}
