//! Range checks on a spec's values that serde cannot express: each a key
//! path, whether its value is out of range, and the message to show there.

use crate::format::SpecFile;
use crate::format::key_path;
use crate::format::locate::Key;
use crate::format::range::{ATTEMPTS, Bounds, Number, RUNS};
use crate::scripting::max_operations_problem;

const TEMPERATURE: &str = "temperature must be within 0..2";
const TOP_P: &str = "top_p must be within 0..1 (greater than 0)";
const MAX_TOKENS: &str = "max_tokens must be at least 1";

fn bad_temperature(t: Option<f64>) -> bool {
    t.is_some_and(|t| !(0.0..=2.0).contains(&t))
}

fn bad_top_p(p: Option<f64>) -> bool {
    p.is_some_and(|p| !(p > 0.0 && p <= 1.0))
}

/// `golden.instances`: a subset of at most as many instances as a run may have.
const GOLDEN_INSTANCES: Bounds = RUNS;
/// `[sampling] n`: samples per instance, each a record.
pub(crate) const SAMPLES: Bounds = Bounds::Count(1, 1000);
/// `num_ctx`: a context window of no tokens holds no prompt.
const CONTEXT: Bounds = Bounds::Count(1, u32::MAX as u64);
/// `[dataset] sample` and `limit`: 0 rows would make no instance.
const ROWS: Bounds = Bounds::Count(1, u64::MAX);
/// `[[example]] score`: a weighted mean of rule scores, each within 0..1.
const SCORE: Bounds = Bounds::Within(0.0, 1.0);
/// `[[example]] timeout_secs`: as a `code` rule's own `timeout_secs`.
const EXAMPLE_TIMEOUT: Bounds = Bounds::Above(0.0, 3600.0);

type Check = (bool, Vec<Key<'static>>, String);

fn check(bad: bool, path: &[Key<'static>], message: &str) -> Check {
    (bad, path.to_vec(), message.to_owned())
}

/// The check of a number against `bounds`, named by the last key of `path`.
fn bounded(path: &[Key<'static>], value: Option<impl Into<Number>>, bounds: Bounds) -> Check {
    let key = match path.last() {
        Some(Key::Name(key)) => key,
        _ => "value",
    };
    match value.and_then(|v| bounds.problem(key, v)) {
        Some(problem) => (true, path.to_vec(), problem),
        None => (false, Vec::new(), String::new()),
    }
}

/// The checks of a count that must be at least 1 (`what` names it when it
/// is 0) and within `bounds`.
fn count<T>(path: &[Key<'static>], value: Option<T>, what: &str, bounds: Bounds) -> [Check; 2]
where
    T: Copy + Default + PartialEq + Into<Number>,
{
    let zero = value == Some(T::default());
    [
        check(zero, path, &format!("{what} must be at least 1")),
        bounded(path, value.filter(|_| !zero), bounds),
    ]
}

/// The checks of a table that sets `temperature`, `top_p` and `max_tokens`.
fn sampling_checks(
    table: &'static str,
    temperature: Option<f64>,
    top_p: Option<f64>,
    max_tokens: Option<u32>,
) -> [Check; 3] {
    [
        check(
            bad_temperature(temperature),
            key_path![table, "temperature"],
            TEMPERATURE,
        ),
        check(bad_top_p(top_p), key_path![table, "top_p"], TOP_P),
        check(
            max_tokens == Some(0),
            key_path![table, "max_tokens"],
            MAX_TOKENS,
        ),
    ]
}

/// The checks of `[request] reasoning` that need no model: the budget
/// against the `max_tokens` the spec sets (a model's own `max_tokens` is
/// checked with the model).
fn reasoning_checks(def: &SpecFile) -> Vec<Check> {
    let sampling = def.sampling.as_ref().and_then(|s| s.max_tokens);
    let problems =
        (def.request.reasoning).problems(sampling.or(def.request.max_tokens), "max_tokens");
    problems
        .into_iter()
        .map(|(key, message)| {
            let path = [Key::Name("request"), Key::Name("reasoning"), Key::Name(key)];
            check(true, &path, &message)
        })
        .collect()
}

/// Every out-of-range value of `def`, in file order: (where, why).
pub(super) fn value_errors(def: &SpecFile) -> Vec<(Vec<Key<'static>>, String)> {
    let r = &def.request;
    let mut checks = Vec::from(count(key_path!["runs"], def.runs, "runs", RUNS));
    let golden = def.golden.as_ref().and_then(|g| g.instances);
    checks.extend(count(
        key_path!["golden", "instances"],
        golden,
        "golden instances",
        GOLDEN_INSTANCES,
    ));
    checks.extend(sampling_checks(
        "request",
        r.temperature,
        r.top_p,
        r.max_tokens,
    ));
    if let Some(s) = &def.sampling {
        let n = s.n();
        checks.extend(count(key_path!["sampling", "n"], s.n, "n", SAMPLES));
        if let Some((i, &k)) = s.k.iter().enumerate().find(|(_, k)| **k == 0 || **k > n) {
            let message =
                format!("k = {k} is outside 1..={n}: pass@k needs k samples of the n drawn");
            checks.push(check(true, key_path!["sampling", "k", i], &message));
        }
        checks.extend(sampling_checks(
            "sampling",
            s.temperature,
            s.top_p,
            s.max_tokens,
        ));
    }
    checks.extend(count(
        key_path!["request", "attempts"],
        r.attempts,
        "attempts",
        ATTEMPTS,
    ));
    checks.push(bounded(key_path!["request", "num_ctx"], r.num_ctx, CONTEXT));
    checks.push(check(
        r.top_logprobs
            .is_some_and(|n| n as usize > crate::format::MAX_TOP),
        key_path!["request", "top_logprobs"],
        "top_logprobs must be within 0..=20: no wire lists more alternatives per token",
    ));
    checks.push(check(
        r.top_logprobs.is_some() && r.logprobs != Some(true),
        key_path!["request", "top_logprobs"],
        "top_logprobs needs `logprobs = true`",
    ));
    checks.extend(reasoning_checks(def));
    if let Some(d) = &def.dataset {
        checks.push(bounded(key_path!["dataset", "sample"], d.sample, ROWS));
        checks.push(bounded(key_path!["dataset", "limit"], d.limit, ROWS));
    }
    for (i, example) in def.examples.iter().enumerate() {
        let path = |key| [Key::Name("example"), Key::Index(i), Key::Name(key)];
        checks.push(bounded(&path("score"), example.score, SCORE));
        checks.push(bounded(
            &path("timeout_secs"),
            example.timeout_secs,
            EXAMPLE_TIMEOUT,
        ));
    }
    checks.push(check(
        def.prompt
            .max_image_bytes
            .is_some_and(|b| !(1..=crate::media::MAX_IMAGE_BYTES_CEILING).contains(&b)),
        key_path!["prompt", "max_image_bytes"],
        "max_image_bytes must be within 1..=104857600 (100 MiB)",
    ));
    let max_operations = def.generate.as_ref().and_then(|g| g.max_operations);
    if let Some(message) = max_operations.and_then(max_operations_problem) {
        checks.push(check(
            true,
            key_path!["generate", "max_operations"],
            &message,
        ));
    }
    checks
        .into_iter()
        .filter(|(bad, _, _)| *bad)
        .map(|(_, path, message)| (path, message))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dotted paths of `value_errors` for a spec of `extra` lines.
    fn errors(extra: &str) -> Vec<String> {
        let text = format!("{extra}\n[prompt]\nuser = \"x\"\n");
        let def: SpecFile = toml::from_str(&text).unwrap_or_else(|e| panic!("{extra}: {e}"));
        value_errors(&def)
            .into_iter()
            .map(|(path, message)| {
                let path: Vec<String> = path
                    .iter()
                    .map(|k| match k {
                        Key::Name(n) => (*n).to_owned(),
                        Key::Index(i) => i.to_string(),
                    })
                    .collect();
                format!("{}: {message}", path.join("."))
            })
            .collect()
    }

    #[test]
    fn every_number_has_a_range_and_each_side_is_refused() {
        // (lines, the path of the one error, or "" for none)
        let cases = [
            ("runs = 1", ""),
            ("runs = 1000000", ""),
            ("runs = 0", "runs"),
            ("runs = 1000001", "runs"),
            ("[golden]\ninstances = 0", "golden.instances"),
            ("[golden]\ninstances = 2000000", "golden.instances"),
            ("[request]\ntemperature = 2.5", "request.temperature"),
            ("[request]\ntemperature = nan", "request.temperature"),
            ("[request]\ntop_p = 0", "request.top_p"),
            ("[request]\nmax_tokens = 0", "request.max_tokens"),
            ("[request]\nattempts = 100", ""),
            ("[request]\nattempts = 101", "request.attempts"),
            ("[request]\nnum_ctx = 0", "request.num_ctx"),
            (
                "[request]\nreasoning = { budget_tokens = 0 }",
                "request.reasoning.budget_tokens",
            ),
            (
                "[request]\nmax_tokens = 64\nreasoning = { budget_tokens = 65 }",
                "request.reasoning.budget_tokens",
            ),
            (
                "[request]\nmax_tokens = 64\nreasoning = { budget_tokens = 64 }",
                "",
            ),
            (
                "[request]\nmax_tokens = 4096\nreasoning = { budget_tokens = 2048 }\n[sampling]\nmax_tokens = 1024",
                "request.reasoning.budget_tokens",
            ),
            (
                "[request]\nreasoning = { enabled = false, effort = \"low\" }",
                "request.reasoning.effort",
            ),
            ("[sampling]\nn = 1000", ""),
            ("[sampling]\nn = 1001", "sampling.n"),
            ("[sampling]\nn = 2\nk = [3]", "sampling.k.0"),
            ("[sampling]\ntop_p = inf", "sampling.top_p"),
            (
                "[dataset]\npath = \"d.jsonl\"\nsample = 0",
                "dataset.sample",
            ),
            ("[dataset]\npath = \"d.jsonl\"\nlimit = 0", "dataset.limit"),
            ("[[example]]\npasses = true\nscore = 1", ""),
            (
                "[[example]]\npasses = true\nscore = -0.5",
                "example.0.score",
            ),
            ("[[example]]\npasses = true\nscore = nan", "example.0.score"),
            (
                "[[example]]\npasses = true\ntimeout_secs = 0",
                "example.0.timeout_secs",
            ),
            (
                "[[example]]\npasses = true\ntimeout_secs = 3601",
                "example.0.timeout_secs",
            ),
        ];
        for (lines, path) in cases {
            let found = errors(lines);
            match path {
                "" => assert!(found.is_empty(), "{lines}: {found:?}"),
                path => assert!(
                    found.len() == 1 && found[0].starts_with(&format!("{path}: ")),
                    "{lines}: {found:?}"
                ),
            }
        }
    }
}
