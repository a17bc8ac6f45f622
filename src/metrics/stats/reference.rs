//! Agreement with independent implementations (statsmodels, scipy, R's epiR) through
//! the values `tests/fixtures/stats/reference.py` wrote to `reference.json`.

use serde_json::Value;

use super::power::n_per_arm;
use super::{
    compare_passes, holm, mcnemar_p, min_detectable_effect, newcombe_paired, required_n, wilson,
};

const REFERENCE: &str = include_str!("../../../tests/fixtures/stats/reference.json");
const TOLERANCE: f64 = 1e-9;

/// The cases of one section of the fixture, at least `min` of them.
fn cases(section: &str, min: usize) -> Vec<Value> {
    let all: Value = serde_json::from_str(REFERENCE).expect("reference.json parses");
    let cases = all[section].as_array().cloned().unwrap_or_default();
    assert!(
        cases.len() >= min,
        "{section}: {} cases, expected at least {min}",
        cases.len()
    );
    cases
}

fn num(case: &Value, key: &str) -> f64 {
    case[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} in {case}"))
}

fn int(case: &Value, key: &str) -> u64 {
    case[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {case}"))
}

/// The largest absolute error seen in a section; reported with `--nocapture`.
struct Errors(&'static str, f64);

impl Errors {
    fn check(&mut self, got: f64, want: f64, case: &Value) {
        let err = (got - want).abs();
        assert!(
            err <= TOLERANCE,
            "{}: got {got}, reference {want} ({case})",
            self.0
        );
        self.1 = self.1.max(err);
    }

    /// Checks each value against the reference under its key in `case`.
    fn check_keys(&mut self, case: &Value, got: &[(&str, f64)]) {
        for &(key, value) in got {
            self.check(value, num(case, key), case);
        }
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        println!("{}: max abs error {:e}", self.0, self.1);
    }
}

#[test]
fn wilson_matches_statsmodels() {
    let mut errors = Errors("wilson", 0.0);
    for case in cases("wilson", 150) {
        let got = wilson(int(&case, "k"), int(&case, "n"), num(&case, "level")).expect("n > 0");
        errors.check_keys(&case, &[("low", got.low), ("high", got.high)]);
    }
}

#[test]
fn mcnemar_matches_statsmodels_and_scipy() {
    let mut errors = Errors("mcnemar", 0.0);
    for case in cases("mcnemar", 170) {
        errors.check(
            mcnemar_p(int(&case, "b"), int(&case, "c")),
            num(&case, "p"),
            &case,
        );
    }
}

#[test]
fn newcombe_matches_epir() {
    let mut errors = Errors("newcombe", 0.0);
    for case in cases("newcombe", 40) {
        let (r, s, t, u) = (
            int(&case, "both"),
            int(&case, "first_only"),
            int(&case, "second_only"),
            int(&case, "neither"),
        );
        let level = num(&case, "level");
        let got = newcombe_paired(r, s, t, u, level).expect("n > 0");
        errors.check(got.low, num(&case, "low"), &case);
        // The same through compare_passes, from per-instance results.
        let rows = [
            (true, true, r),
            (true, false, s),
            (false, true, t),
            (false, false, u),
        ];
        let (first, second): (Vec<bool>, Vec<bool>) = rows
            .iter()
            .flat_map(|&(a, b, count)| std::iter::repeat_n((a, b), count as usize))
            .unzip();
        let cmp = compare_passes(&first, &second, level).expect("same length");
        assert_eq!(cmp.interval, Some(got));
        errors.check_keys(&case, &[("difference", cmp.difference), ("high", got.high)]);
    }
}

#[test]
fn holm_matches_statsmodels() {
    let mut errors = Errors("holm", 0.0);
    for case in cases("holm", 10) {
        let floats = |key: &str| -> Vec<f64> {
            case[key]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_f64)
                .collect()
        };
        let (got, want) = (holm(&floats("p")), floats("adjusted"));
        assert_eq!(got.len(), want.len());
        got.iter()
            .zip(&want)
            .for_each(|(g, w)| errors.check(*g, *w, &case));
    }
}

#[test]
fn required_n_matches_statsmodels() {
    let mut errors = Errors("required_n", 0.0);
    for case in cases("required_n", 30) {
        let args = (
            num(&case, "first"),
            num(&case, "second"),
            num(&case, "alpha"),
            num(&case, "power"),
        );
        let want = num(&case, "n");
        errors.check(n_per_arm(args.0, args.1, args.2, args.3), want, &case);
        assert_eq!(
            required_n(args.0, args.1, args.2, args.3),
            Some((want.ceil() as u64).max(1)),
            "{case}"
        );
    }
}

#[test]
fn min_detectable_effect_matches_statsmodels_power() {
    let mut errors = Errors("mde", 0.0);
    let mut solved = 0;
    for case in cases("mde", 60) {
        let got = min_detectable_effect(
            int(&case, "n"),
            num(&case, "baseline"),
            num(&case, "alpha"),
            num(&case, "power"),
        );
        match case["effect"].as_f64() {
            Some(want) => {
                errors.check(got.expect("a detectable effect"), want, &case);
                solved += 1;
            }
            None => assert_eq!(got, None, "{case}"),
        }
    }
    assert!(solved >= 30, "only {solved} cases with an effect");
}

/// The seeded bootstraps against `bootstrap_reference.py`: the same random stream,
/// resampling and percentiles, written from their specifications in plain Python.
mod bootstrap {
    use serde_json::Value;

    use super::super::{
        Bootstrap, bootstrap_mean, bootstrap_stratified, compare_scores, compare_stratified,
    };
    use super::{Errors, int, num};
    use crate::metrics::stats::{MeanEstimate, ScoreComparison};

    /// A mean and its interval against the case's `mean`, `low` and `high`.
    fn check_mean(errors: &mut Errors, case: &Value, got: &MeanEstimate) {
        let (low, high) = (got.interval.low, got.interval.high);
        errors.check_keys(case, &[("mean", got.mean), ("low", low), ("high", high)]);
    }

    /// A comparison against the case's `difference`, `low`, `high` and `p`.
    fn check_comparison(errors: &mut Errors, case: &Value, got: &ScoreComparison) {
        let interval = got.interval.expect("an interval");
        let (low, high) = (interval.low, interval.high);
        let keys = [("difference", got.difference), ("low", low), ("high", high)];
        errors.check_keys(case, &keys);
        errors.check(got.p_value, num(case, "p"), case);
    }

    const REFERENCE: &str = include_str!("../../../tests/fixtures/stats/bootstrap_reference.json");

    fn cases(section: &str) -> Vec<Value> {
        let all: Value = serde_json::from_str(REFERENCE).expect("bootstrap_reference.json parses");
        let cases = all[section].as_array().cloned().unwrap_or_default();
        assert!(cases.len() >= 3, "{section}: {} cases", cases.len());
        cases
    }

    /// Per instance, its samples' scores.
    fn instances(v: &Value) -> Vec<Vec<f64>> {
        v.as_array()
            .expect("a list of instances")
            .iter()
            .map(|s| {
                s.as_array()
                    .expect("samples")
                    .iter()
                    .filter_map(Value::as_f64)
                    .collect()
            })
            .collect()
    }

    fn cfg(case: &Value) -> Bootstrap {
        Bootstrap {
            resamples: int(case, "resamples") as u32,
            seed: int(case, "seed"),
            level: case["level"].as_f64().unwrap_or(0.95),
        }
    }

    #[test]
    fn bootstrap_mean_matches_plain_python() {
        let mut errors = Errors("bootstrap", 0.0);
        for case in cases("bootstrap") {
            let got = bootstrap_mean(&instances(&case["instances"]), &cfg(&case)).expect("data");
            check_mean(&mut errors, &case, &got);
        }
    }

    #[test]
    fn compare_scores_matches_plain_python() {
        let mut errors = Errors("paired bootstrap", 0.0);
        for case in cases("paired") {
            let (a, b) = (instances(&case["first"]), instances(&case["second"]));
            let got = compare_scores(&a, &b, &cfg(&case)).expect("same length");
            assert_eq!(got.instances as u64, int(&case, "instances"));
            check_comparison(&mut errors, &case, &got);
        }
    }

    #[test]
    fn bootstrap_stratified_matches_plain_python() {
        let mut errors = Errors("stratified bootstrap", 0.0);
        for case in cases("stratified") {
            let strata: Vec<(f64, Vec<Vec<f64>>)> = case["strata"]
                .as_array()
                .expect("strata")
                .iter()
                .map(|s| (num(s, "weight"), instances(&s["instances"])))
                .collect();
            let refs: Vec<(f64, &[Vec<f64>])> =
                strata.iter().map(|(w, s)| (*w, s.as_slice())).collect();
            let got = bootstrap_stratified(&refs, &cfg(&case)).expect("data");
            check_mean(&mut errors, &case, &got);
        }
    }

    #[test]
    fn compare_stratified_matches_plain_python() {
        let mut errors = Errors("stratified paired bootstrap", 0.0);
        for case in cases("stratified_paired") {
            let side = |key: &str| -> Vec<Vec<Vec<f64>>> {
                case[key]
                    .as_array()
                    .expect("strata")
                    .iter()
                    .map(instances)
                    .collect()
            };
            let (a, b) = (side("first"), side("second"));
            let (sa, sb) = (weighted(&a), weighted(&b));
            let got = compare_stratified(&sa, &sb, &cfg(&case)).expect("paired");
            check_comparison(&mut errors, &case, &got);
            let means = [
                ("first_mean", got.first_mean),
                ("second_mean", got.second_mean),
            ];
            errors.check_keys(&case, &means);
        }
    }

    /// Each stratum with weight 1.
    fn weighted(strata: &[Vec<Vec<f64>>]) -> Vec<(f64, &[Vec<f64>])> {
        strata.iter().map(|v| (1.0, v.as_slice())).collect()
    }
}
