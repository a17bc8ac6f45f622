//! `[run]` numbers checked as they are read, so a bad one is located like
//! any TOML error: the same ranges the command line's flags take.

use serde::de::{Deserialize, Deserializer, Error};

/// `runs`: 1 to 1,000,000.
pub(super) fn runs<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let v = Option::<u32>::deserialize(d)?;
    match v {
        Some(n) if !(1..=1_000_000).contains(&n) => Err(D::Error::custom(format!(
            "runs = {n}: instances per spec must be from 1 to 1,000,000"
        ))),
        _ => Ok(v),
    }
}

/// `max_cost`: a finite amount of 0 or more.
pub(super) fn amount<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = Option::<f64>::deserialize(d)?;
    match v {
        Some(a) if !(a.is_finite() && a >= 0.0) => Err(D::Error::custom(format!(
            "max_cost = {a}: not an amount of 0 or more"
        ))),
        _ => Ok(v),
    }
}

/// `max_tokens_total`: 1 or more.
pub(super) fn tokens<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Option::<u64>::deserialize(d)?;
    match v {
        Some(0) => Err(D::Error::custom(
            "max_tokens_total = 0: a budget of no tokens runs nothing",
        )),
        _ => Ok(v),
    }
}

/// `max_response_bytes`: 1 KiB to 4 GiB. Below, no answer fits; above, a
/// body would not fit in memory before it is refused.
pub(super) fn response_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Option::<u64>::deserialize(d)?;
    match v {
        Some(n) if !(1 << 10..=4 << 30).contains(&n) => Err(D::Error::custom(format!(
            "max_response_bytes = {n}: must be from 1024 (1 KiB) to 4294967296 (4 GiB)"
        ))),
        _ => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;

    #[test]
    fn max_response_bytes_reaches_the_model_and_out_of_range_is_located() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("harness.toml");
        let model = "[models.m]\nprovider = \"openai\"\n";
        for bad in ["10", "8589934592"] {
            std::fs::write(&path, format!("{model}max_response_bytes = {bad}\n")).unwrap();
            let e = Config::load(&path, true).unwrap_err().to_string();
            assert!(e.contains("3:22") && e.contains("from 1024 (1 KiB)"), "{e}");
        }
        std::fs::write(&path, format!("{model}max_response_bytes = 2048\n")).unwrap();
        let config = Config::load(&path, true).unwrap();
        assert_eq!(config.resolve_model("m").unwrap().max_response_bytes, 2048);
        let exec =
            "[models.m]\nprovider = \"exec\"\ncommand = [\"x\"]\nmax_response_bytes = 2048\n";
        std::fs::write(&path, exec).unwrap();
        let config = Config::load(&path, true).unwrap();
        let e = config.resolve_model("m").unwrap_err().to_string();
        assert!(e.contains("its own cap"), "{e}");
        let default = Config::default().resolve_model("openai:x").unwrap();
        assert_eq!(default.max_response_bytes, 64 << 20);
    }
}
