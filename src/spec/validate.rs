//! Range checks on a spec's values that serde cannot express: each a key
//! path, whether its value is out of range, and the message to show there.

use crate::format::SpecFile;
use crate::format::locate::Key;
use crate::key_path;
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

type Check = (bool, Vec<Key<'static>>, String);

fn check(bad: bool, path: &[Key<'static>], message: &str) -> Check {
    (bad, path.to_vec(), message.to_owned())
}

/// Every out-of-range value of `def`, in file order: (where, why).
pub fn value_errors(def: &SpecFile) -> Vec<(Vec<Key<'static>>, String)> {
    let r = &def.request;
    let mut checks = vec![
        check(
            def.runs == Some(0),
            key_path!["runs"],
            "runs must be at least 1",
        ),
        check(
            bad_temperature(r.temperature),
            key_path!["request", "temperature"],
            TEMPERATURE,
        ),
        check(bad_top_p(r.top_p), key_path!["request", "top_p"], TOP_P),
        check(
            r.max_tokens == Some(0),
            key_path!["request", "max_tokens"],
            MAX_TOKENS,
        ),
    ];
    if let Some(s) = &def.sampling {
        let n = s.n();
        checks.push(check(
            s.n == Some(0),
            key_path!["sampling", "n"],
            "n must be at least 1",
        ));
        if let Some((i, &k)) = s.k.iter().enumerate().find(|(_, k)| **k == 0 || **k > n) {
            let message =
                format!("k = {k} is outside 1..={n}: pass@k needs k samples of the n drawn");
            checks.push(check(true, key_path!["sampling", "k", i], &message));
        }
        checks.extend([
            check(
                bad_temperature(s.temperature),
                key_path!["sampling", "temperature"],
                TEMPERATURE,
            ),
            check(bad_top_p(s.top_p), key_path!["sampling", "top_p"], TOP_P),
            check(
                s.max_tokens == Some(0),
                key_path!["sampling", "max_tokens"],
                MAX_TOKENS,
            ),
        ]);
    }
    checks.push(check(
        r.attempts == Some(0),
        key_path!["request", "attempts"],
        "attempts must be at least 1",
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
