//! Reasoning controls and sweeps against the fake server: a setting reaches
//! the wire in that wire's fields, `--sweep` runs the example of
//! docs/reasoning.md one cell per setting and every report carries its
//! curve, and a setting a wire cannot carry is refused, located, before
//! anything is sent.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::common::fake_server::{
    COMPLETION_TOKENS, FakeServer, PROMPT_TOKENS, Reply, Request, eval, expression,
};
use crate::common::strings;
use crate::common::workspace::{Workspace, model_toml};
use crate::html_report::report;

/// The example of docs/reasoning.md "Sweeps".
pub(crate) const SPEC: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/docs/examples/specs/reasoning_sweep.toml"
));

/// The sweep the docs show, on the fake model.
pub(crate) const SWEEP: [&str; 6] = [
    "specs/reasoning_sweep.toml",
    "-m",
    "fake",
    "--sweep",
    "reasoning.effort=low,medium,high",
    "--format",
];

/// A price per million tokens, in and out: each cell's answers cost alike.
const PRICE: (f64, f64) = (1.0, 2.0);

/// A workspace with the docs' sweep spec and the fake model, priced.
pub(crate) fn sweep_workspace(fake: &FakeServer) -> Workspace {
    let ws = Workspace::new();
    ws.write("specs/reasoning_sweep.toml", SPEC);
    let price = format!("price = {{ input = {}, output = {} }}", PRICE.0, PRICE.1);
    ws.fake_model(fake, &format!("timeout_secs = 5\n{price}"));
    ws
}

/// Right more often the harder it is asked to think: `high` always,
/// `medium` on the products divisible by 3, `low` on those by 6.
pub(crate) fn thinks(request: &Request) -> Reply {
    let value = expression(&request.prompt)
        .and_then(|e| eval(&e))
        .unwrap_or(0);
    let right = match request.body["reasoning_effort"].as_str() {
        Some("high") => true,
        Some("medium") => value % 3 == 0,
        _ => value % 6 == 0,
    };
    if right { Reply::Correct } else { Reply::Wrong }
}

#[test]
fn the_documented_sweep_runs_a_cell_per_setting_and_reports_its_curve() {
    let fake = FakeServer::start(thinks);
    let ws = sweep_workspace(&fake);
    let mut args = SWEEP.to_vec();
    args.push("json");
    let out = ws.run_ok(&args);
    let mut efforts: BTreeMap<String, usize> = BTreeMap::new();
    for request in fake.requests() {
        let body = &request.body;
        *efforts
            .entry(body["reasoning_effort"].as_str().unwrap().to_owned())
            .or_default() += 1;
        // OpenAI's reasoning models take their limit under this name only.
        assert_eq!(body["max_completion_tokens"], 8192, "{body}");
        assert!(body.get("max_tokens").is_none(), "{body}");
    }
    let want: BTreeMap<String, usize> = [("high", 12), ("low", 12), ("medium", 12)]
        .map(|(e, n)| (e.to_owned(), n))
        .into();
    assert_eq!(efforts, want, "one cell of 12 instances per setting");
    let results = ws.path().join("results");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(report(&results, "json")).unwrap()).unwrap();
    let sweeps = json["sweeps"].as_array().unwrap();
    assert_eq!(sweeps.len(), 1, "{out}");
    let sweep = &sweeps[0];
    assert_eq!(
        (&sweep["model"], &sweep["key"]),
        (&"fake".into(), &"effort".into())
    );
    let points = sweep["points"].as_array().unwrap();
    assert_eq!(strings(points, "value"), ["low", "medium", "high"]);
    assert_eq!(
        strings(points, "model"),
        [
            "fake [effort=low]",
            "fake [effort=medium]",
            "fake [effort=high]"
        ]
    );
    let scores: Vec<f64> = points
        .iter()
        .map(|p| p["score"].as_f64().unwrap())
        .collect();
    assert!(scores[0] < scores[1] && scores[1] < scores[2], "{scores:?}");
    assert_eq!(scores[2], 1.0);
    let tokens = (PROMPT_TOKENS as f64, COMPLETION_TOKENS as f64);
    let cost = 12.0 * (tokens.0 * PRICE.0 + tokens.1 * PRICE.1) / 1e6;
    for p in points {
        assert_eq!(p["answers"], 12);
        assert_eq!(p["reasoning_tokens"], tokens.1, "{p}");
        let spent = p["cost"].as_f64().unwrap();
        assert!((spent - cost).abs() < 1e-12, "{p}: {cost}");
    }
    // The settings are models to the paired tests: the spec's board ranks all three.
    let board = &json["specs"][0]["board"]["standings"];
    assert_eq!(board.as_array().unwrap().len(), 3, "{board}");
    let markdown = std::fs::read_to_string(report(&results, "md")).unwrap();
    assert!(markdown.contains("## Sweeps"), "{markdown}");
    assert!(markdown.contains("| high | 100.0% |"), "{markdown}");
    assert!(
        markdown.contains(&format!("| {COMPLETION_TOKENS}.0 |")),
        "{markdown}"
    );
}

#[test]
fn what_a_wire_cannot_carry_is_refused_located_before_any_request() {
    let fake = FakeServer::healthy();
    let ws = Workspace::new();
    ws.fake_model(&fake, "timeout_secs = 5");
    let budget = SPEC.replace(
        "reasoning = { effort = \"medium\" }",
        "reasoning = { budget_tokens = 512 }",
    );
    ws.write("specs/budget.toml", &budget);
    ws.write("specs/reasoning_sweep.toml", SPEC);
    let line = budget
        .lines()
        .position(|l| l.starts_with("reasoning"))
        .unwrap()
        + 1;
    let at = format!("specs/budget.toml:{line}:");
    let typo = SPEC.replace("\"medium\"", "\"meduim\"");
    ws.write("specs/typo.toml", &typo);
    let typo_at = format!("specs/typo.toml:{line}:");
    // (arguments, what the output says)
    let cases: [(&[&str], &[&str]); 5] = [
        (
            &["specs/typo.toml", "-m", "fake"],
            &[&typo_at, "unknown value `meduim`", "did you mean `medium`?"],
        ),
        (
            &["specs/budget.toml", "-m", "fake"],
            &[
                &at,
                "reasoning `budget_tokens` cannot be sent to a `openai` model",
            ],
        ),
        (
            &[
                "specs/reasoning_sweep.toml",
                "-m",
                "fake",
                "--sweep",
                "reasoning.efort=low,high",
            ],
            &[
                "no sweep key `reasoning.efort`",
                "did you mean `reasoning.effort`?",
            ],
        ),
        (
            &[
                "specs/reasoning_sweep.toml",
                "-m",
                "fake",
                "--sweep",
                "effort=low,hgih",
            ],
            &["did you mean `high`?"],
        ),
        (
            &[
                "specs/reasoning_sweep.toml",
                "-m",
                "fake",
                "--sweep",
                "reasoning.enabled=true,false",
            ],
            &[
                "--sweep reasoning.enabled=true",
                "`enabled` cannot be sent to a `openai` model",
            ],
        ),
    ];
    for (args, says) in cases {
        ws.run_expect(args, 2, says);
    }
    let mut check = crate::common::harness(ws.path());
    check.args(["check", "specs/budget.toml", "-m", "fake"]);
    crate::common::expect(&mut check, 2, &[&at, "cannot be sent"]);
    // In harness.toml alike, located at the value.
    ws.fake_model(&fake, "reasoning = { effort = \"hihg\" }");
    let config_at = format!("harness.toml:5:{}", "reasoning = { effort = ".len() + 1);
    let wanted = [config_at.as_str(), "did you mean `high`?"];
    ws.run_expect(&["specs/reasoning_sweep.toml", "-m", "fake"], 2, &wanted);
    assert_eq!(fake.count(), 0, "nothing was sent");
}

#[test]
fn a_models_own_setting_fills_what_the_spec_leaves_and_each_wire_takes_its_fields() {
    let fake = FakeServer::start(thinks);
    let ws = Workspace::new();
    let models = [
        model_toml(
            "o",
            "openai",
            "m",
            &fake.openai_base(),
            "reasoning = { effort = \"high\" }",
        ),
        model_toml(
            "local",
            "ollama",
            "m",
            &fake.ollama_base(),
            "reasoning = { enabled = true }",
        ),
    ];
    ws.write("harness.toml", &models.concat());
    ws.write("specs/reasoning_sweep.toml", SPEC);
    let plain = SPEC
        .replace("id = \"reasoning_sweep\"", "id = \"plain\"")
        .replace("Think it through", "Answer plainly")
        .replace("reasoning = { effort = \"medium\" }", "");
    ws.write("specs/plain.toml", &plain);
    ws.run_ok(&["specs/", "-m", "o", "-m", "local"]);
    // (wire, spec, the fields every request of theirs carries)
    let cases = [
        (
            "/v1/chat/completions",
            "Think",
            json!({"reasoning_effort": "medium"}),
        ),
        (
            "/v1/chat/completions",
            "plainly",
            json!({"reasoning_effort": "high"}),
        ),
        ("/api/chat", "Think", json!({"think": "medium"})),
        ("/api/chat", "plainly", json!({"think": true})),
    ];
    let requests = fake.requests();
    for (path, prompt, fields) in cases {
        let bodies: Vec<&Value> = (requests.iter())
            .filter(|r| r.path == path && r.prompt.contains(prompt))
            .map(|r| &r.body)
            .collect();
        assert_eq!(bodies.len(), 12, "{path} {prompt}");
        for body in bodies {
            for (key, value) in fields.as_object().unwrap() {
                assert_eq!(&body[key], value, "{path} {prompt}: {body}");
            }
        }
    }
}

/// A ChatML template whose assistant turn opens a think block, closed at
/// once when the request says `enable_thinking = false`.
const THINK_TEMPLATE: &str = "{%- for m in messages -%}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor -%}\n\
{%- if add_generation_prompt -%}<|im_start|>assistant\n\
{%- if enable_thinking is defined and enable_thinking is false %}\n<think>\n\n</think>\n{% else %}\n<think>\n{% endif -%}\n\
{%- endif -%}\n";

#[test]
fn a_budget_sweep_reaches_the_managed_llama_server_per_request() {
    let Some((bin, model)) = crate::common::managed::llama_paths() else {
        return;
    };
    let _one = crate::common::locks::real_llama();
    let ws = Workspace::new();
    let spec = SPEC
        .replace("runs = 12", "runs = 2")
        .replace("max_tokens = 8192", "max_tokens = 16")
        .replace("{ effort = \"medium\" }", "{ enabled = true }");
    ws.write("specs/reasoning_sweep.toml", &spec);
    ws.write("think.jinja", THINK_TEMPLATE);
    let config = format!(
        "[models.smol]\nprovider = \"llamacpp\"\nmodel = \"{}\"\nconcurrency = 1\ntimeout_secs = 120\n\
         [models.smol.server]\nthreads = 1\nctx_size = 1024\nchat_template = \"think.jinja\"\n\
         extra_args = [\"--jinja\", \"--verbose\"]\n",
        model.display()
    );
    ws.write("harness.toml", &config);
    let results = ws.path().join("results");
    let _guard = crate::common::managed::NoOrphans(results.clone());
    let sweep = "reasoning.budget_tokens=3,9";
    let mut cmd = ws.run_cmd(&["specs/reasoning_sweep.toml", "-m", "smol", "--sweep", sweep]);
    // `<cache>/llama-server-<version>/bin/llama-server`
    cmd.env("HARNESS_CACHE_DIR", bin.ancestors().nth(3).unwrap());
    let (code, out) = crate::common::run(&mut cmd);
    assert_eq!(code, 0, "{out}");
    // A verbose log holds the model's raw tokens: not all of it is UTF-8.
    let log = std::fs::read(&crate::common::managed::server_logs(&results)[0]).unwrap();
    let log = String::from_utf8_lossy(&log);
    // The server's own account of each request's budget: both cells' reached it.
    for budget in [3, 9] {
        let line = format!("reasoning budget: tokens={budget},");
        assert_eq!(log.matches(&line).count(), 2, "{line}");
    }
}
