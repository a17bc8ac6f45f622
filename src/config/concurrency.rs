//! `concurrency`: a number of requests in flight, or `"auto"`, which lets
//! the harness find the number the server allows (up to `max_concurrency`).
//! Any other word is a located TOML error, as a wrong type is.

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// The ceiling of `concurrency = "auto"` when `max_concurrency` is unset.
pub(crate) const DEFAULT_MAX_CONCURRENCY: usize = 64;

/// What `concurrency` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    /// This many in flight.
    Fixed(u64),
    /// Adapt to the server's throttling.
    Auto,
}

impl Concurrency {
    /// The fixed number, for its range check.
    pub(crate) fn fixed(self) -> Option<u64> {
        match self {
            Concurrency::Fixed(n) => Some(n),
            Concurrency::Auto => None,
        }
    }
}

impl<'de> Deserialize<'de> for Concurrency {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Concurrency, D::Error> {
        d.deserialize_any(ConcurrencyVisitor)
    }
}

struct ConcurrencyVisitor;

impl Visitor<'_> for ConcurrencyVisitor {
    type Value = Concurrency;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a whole number of requests in flight, or \"auto\"")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Concurrency, E> {
        Ok(Concurrency::Fixed(n))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Concurrency, E> {
        u64::try_from(n)
            .map(Concurrency::Fixed)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(n), &self))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Concurrency, E> {
        match s {
            "auto" => Ok(Concurrency::Auto),
            _ => Err(E::invalid_value(de::Unexpected::Str(s), &self)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Table {
        concurrency: Concurrency,
    }

    #[test]
    fn numbers_and_auto_are_read_and_anything_else_is_located() {
        let read = |v: &str| toml::from_str::<Table>(&format!("concurrency = {v}\n"));
        assert_eq!(read("8").unwrap().concurrency, Concurrency::Fixed(8));
        assert_eq!(read("\"auto\"").unwrap().concurrency, Concurrency::Auto);
        for bad in ["\"Auto\"", "\"fast\"", "-1", "1.5", "true", "[]"] {
            let e = read(bad).expect_err(bad);
            let span = e.span().expect("located");
            assert_eq!(span.start, "concurrency = ".len(), "{bad}: {e}");
            assert!(e.message().contains("or \"auto\""), "{bad}: {e}");
        }
    }
}
