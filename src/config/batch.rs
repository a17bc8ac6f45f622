//! `batch` of a `[models.X]` table: only a wire with a batch API the
//! harness speaks takes it, and its numbers have ranges. Each problem is
//! located at the key, like every other of `harness.toml`.

use crate::format::locate::Key;
use crate::format::range::Bounds;
use crate::provider::{BatchConfig, ProviderKind};

use super::ModelConfig;

/// `poll_secs`: above 0, at most an hour (a batch runs up to a day).
const POLL_SECS: Bounds = Bounds::Within(0.01, 3600.0);
/// `discount`: a share of the price.
const DISCOUNT: Bounds = Bounds::Within(0.0, 1.0);

/// The providers whose batches the harness submits.
pub(crate) fn has_batch_api(provider: ProviderKind) -> bool {
    matches!(provider, ProviderKind::OpenAi | ProviderKind::Anthropic)
}

/// Why a model cannot run in batches, when it cannot: its provider, or a pool.
pub(crate) fn refusal(provider: ProviderKind, pool: bool) -> Option<String> {
    if !has_batch_api(provider) {
        Some(format!(
            "provider {} has no batch API the harness speaks (batches go through provider openai or anthropic)",
            provider.prefix()
        ))
    } else if pool {
        Some("a pool's replicas share no batches: give one base_url".to_owned())
    } else {
        None
    }
}

/// The problems of model `name`'s `batch`: each key's path and why, as
/// `in_range` gathers them (it calls this, so this names no type of its).
pub(super) fn problems<'a>(name: &'a str, m: &'a ModelConfig) -> Vec<(Vec<Key<'a>>, String)> {
    let path = |keys: &[&'static str]| {
        let mut path = vec![Key::Name("models"), Key::Name(name), Key::Name("batch")];
        path.extend(keys.iter().map(|k| Key::Name(k)));
        path
    };
    let Some(batch) = m.batch else {
        return Vec::new();
    };
    let mut found = Vec::new();
    if let BatchConfig::Table(table) = batch {
        let numbers = [
            ("poll_secs", table.poll_secs, POLL_SECS),
            ("discount", table.discount, DISCOUNT),
        ];
        for (key, value, bounds) in numbers {
            if let Some(problem) = value.and_then(|v| bounds.problem(key, v)) {
                found.push((path(&[key]), problem));
            }
        }
    }
    let pool = m.base_url.as_ref().is_some_and(|b| b.urls().len() > 1);
    if batch.setup().is_some()
        && let Some(why) = refusal(m.provider, pool)
    {
        found.push((path(&[]), format!("model `{name}`: batch: {why}")));
    }
    found
}
