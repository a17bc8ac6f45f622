//! The ranges of the numbers users write, in specs and in `harness.toml`:
//! one type for a key's bounds and one sentence for a number outside them,
//! so every key says alike what it takes. TOML itself reads `inf`, `nan`
//! and `1e999` (as infinity); those are out of every range here.

use std::fmt;

/// Instances per spec, wherever they are set (a spec's `runs`, `[run] runs`
/// of `harness.toml`, `--runs`): each is a record and a line of the plan.
pub(crate) const RUNS: Bounds = Bounds::Count(1, 1_000_000);
/// A sampling temperature (a model's `options`, a synth pipeline's steps).
pub(crate) const TEMPERATURE: Bounds = Bounds::Within(0.0, 2.0);
/// Nucleus sampling's `top_p`: a share of the probability mass.
pub(crate) const TOP_P: Bounds = Bounds::Above(0.0, 1.0);
/// A count of tokens (`max_tokens`, a context window): none would hold no text.
pub(crate) const TOKENS: Bounds = Bounds::Count(1, u32::MAX as u64);
/// Asks of one answer that does not parse: each is a request.
pub(crate) const ATTEMPTS: Bounds = Bounds::Count(1, 100);

/// The numbers a key takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Bounds {
    /// Whole numbers from `.0` to `.1`, both included.
    Count(u64, u64),
    /// Finite numbers from `.0` to `.1`, both included.
    Within(f64, f64),
    /// Finite numbers above `.0` and at most `.1`: timeouts, `top_p`, fractions.
    Above(f64, f64),
}

/// A number as a key holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    /// A whole number (every integer key is unsigned).
    Whole(u64),
    /// A float.
    Real(f64),
}

impl From<u64> for Number {
    fn from(n: u64) -> Number {
        Number::Whole(n)
    }
}

impl From<u32> for Number {
    fn from(n: u32) -> Number {
        Number::Whole(u64::from(n))
    }
}

impl From<usize> for Number {
    fn from(n: usize) -> Number {
        Number::Whole(n as u64)
    }
}

impl From<f64> for Number {
    fn from(x: f64) -> Number {
        Number::Real(x)
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::Whole(n) => write!(f, "{n}"),
            Number::Real(x) if x.is_nan() => f.write_str("nan"),
            Number::Real(x) if x.is_infinite() => {
                f.write_str(if *x > 0.0 { "inf" } else { "-inf" })
            }
            Number::Real(x) => write!(f, "{x}"),
        }
    }
}

impl Bounds {
    /// Whether `value` lies within these bounds (a NaN never does).
    pub(crate) fn holds(self, value: Number) -> bool {
        let x = match value {
            Number::Whole(n) => {
                if let Bounds::Count(min, max) = self {
                    return (min..=max).contains(&n);
                }
                n as f64
            }
            Number::Real(x) => x,
        };
        match self {
            // A whole-number key never holds a float: serde refuses it first.
            Bounds::Count(min, max) => x.fract() == 0.0 && x >= min as f64 && x <= max as f64,
            Bounds::Within(min, max) => x.is_finite() && x >= min && x <= max,
            Bounds::Above(min, max) => x.is_finite() && x > min && x <= max,
        }
    }

    /// What the key takes, as the end of a sentence: `from 1 to 1024`.
    pub(crate) fn describe(self) -> String {
        match self {
            // The key's type bounds it from there: a larger one is its own error.
            // A bound below the type's (`max_response_bytes`: 4 GiB of a u64) is said.
            Bounds::Count(min, max) if max == u64::from(u32::MAX) || max == u64::MAX => {
                format!("a whole number of {min} or more")
            }
            Bounds::Count(min, max) => format!("a whole number from {min} to {max}"),
            Bounds::Within(min, f64::MAX) => format!("a finite number of {min} or more"),
            Bounds::Within(min, max) => format!("a number from {min} to {max}"),
            Bounds::Above(min, max) => format!("a number above {min} and at most {max}"),
        }
    }

    /// The problem of `key = value`, when it lies outside these bounds.
    pub(crate) fn problem(self, key: &str, value: impl Into<Number>) -> Option<String> {
        let value = value.into();
        (!self.holds(value)).then(|| {
            format!(
                "{key} = {value} is out of range: {key} takes {}",
                self.describe()
            )
        })
    }
}

/// Whether the text of a TOML float (`inf`, `+nan`, `1e999`, `1_000.5`) is
/// a number the harness can use: finite once read.
pub(crate) fn finite_float_text(text: &str) -> bool {
    text.replace('_', "")
        .parse::<f64>()
        .is_ok_and(f64::is_finite)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_refuse_what_lies_outside_and_every_nan() {
        let cases: [(Bounds, Number, bool); 16] = [
            (Bounds::Count(1, 10), 0u64.into(), false),
            (Bounds::Count(1, 10), 1u64.into(), true),
            (Bounds::Count(1, 10), 10u64.into(), true),
            (Bounds::Count(1, 10), 11u64.into(), false),
            (Bounds::Count(0, u64::MAX), u64::MAX.into(), true),
            (Bounds::Within(0.0, 2.0), 0.0.into(), true),
            (Bounds::Within(0.0, 2.0), 2.0.into(), true),
            (Bounds::Within(0.0, 2.0), (-0.1).into(), false),
            (Bounds::Within(0.0, 2.0), f64::NAN.into(), false),
            (Bounds::Within(0.0, f64::MAX), f64::INFINITY.into(), false),
            (Bounds::Above(0.0, 60.0), 0.0.into(), false),
            (Bounds::Above(0.0, 60.0), 1e-3.into(), true),
            (Bounds::Above(0.0, 60.0), 60.0.into(), true),
            (Bounds::Above(0.0, 60.0), 1e300.into(), false),
            (Bounds::Above(0.0, 60.0), f64::NAN.into(), false),
            (Bounds::Above(0.0, 60.0), 5u64.into(), true),
        ];
        for (bounds, value, ok) in cases {
            assert_eq!(bounds.holds(value), ok, "{bounds:?} {value}");
            assert_eq!(
                bounds.problem("k", value).is_none(),
                ok,
                "{bounds:?} {value}"
            );
        }
    }

    #[test]
    fn problems_name_the_key_the_value_and_the_range() {
        let p = Bounds::Above(0.0, 86400.0)
            .problem("timeout_secs", f64::NEG_INFINITY)
            .unwrap();
        assert_eq!(
            p,
            "timeout_secs = -inf is out of range: timeout_secs takes a number above 0 and at most 86400"
        );
        let p = Bounds::Count(1, u64::MAX).problem("n", 0u32).unwrap();
        assert!(p.ends_with("a whole number of 1 or more"), "{p}");
        let p = Bounds::Count(1024, 4 << 30)
            .problem("n", 8u64 << 30)
            .unwrap();
        assert!(p.ends_with("a whole number from 1024 to 4294967296"), "{p}");
        assert!(
            Bounds::Within(0.0, 1.0)
                .problem("x", f64::NAN)
                .unwrap()
                .contains("x = nan")
        );
    }

    #[test]
    fn float_texts_are_finite_unless_toml_reads_them_as_infinity_or_nan() {
        for (text, finite) in [
            ("1.5", true),
            ("1_000.25", true),
            ("-0.0", true),
            ("1e300", true),
            ("1e999", false),
            ("inf", false),
            ("+inf", false),
            ("-inf", false),
            ("nan", false),
            ("-nan", false),
        ] {
            assert_eq!(finite_float_text(text), finite, "{text}");
        }
    }
}
