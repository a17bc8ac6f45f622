//! Range checks on a spec's values that serde cannot express: each a key
//! path, whether its value is out of range, and the message to show there.

use crate::format::SpecFile;
use crate::format::key_path;
use crate::format::locate::Key;
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

/// Every out-of-range value of `def`, in file order: (where, why).
pub(super) fn value_errors(def: &SpecFile) -> Vec<(Vec<Key<'static>>, String)> {
    let r = &def.request;
    let mut checks = vec![check(
        def.runs == Some(0),
        key_path!["runs"],
        "runs must be at least 1",
    )];
    checks.push(check(
        def.golden.as_ref().and_then(|g| g.instances) == Some(0),
        key_path!["golden", "instances"],
        "golden instances must be at least 1",
    ));
    checks.extend(sampling_checks(
        "request",
        r.temperature,
        r.top_p,
        r.max_tokens,
    ));
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
        checks.extend(sampling_checks(
            "sampling",
            s.temperature,
            s.top_p,
            s.max_tokens,
        ));
    }
    checks.push(check(
        r.attempts == Some(0),
        key_path!["request", "attempts"],
        "attempts must be at least 1",
    ));
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
