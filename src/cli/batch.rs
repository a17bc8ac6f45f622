//! What `harness run` checks and says about batches: `--batch` on models
//! whose provider has a batch API, and the dry run's word on what would be
//! batched.

use super::exit::{Exit, fail};
use crate::config::batch::refusal;
use crate::provider::{BatchSetup, ModelSetup};
use crate::run::{Estimate, Limits, Manifest};

/// Turns batches on for every model with `--batch`; a model that cannot
/// run in batches (by the flag or its own `batch`) is an error naming it.
pub(super) fn apply(models: &mut [ModelSetup], flag: bool) -> Result<(), Exit> {
    for m in models.iter_mut() {
        if flag && m.batch.is_none() {
            m.batch = Some(BatchSetup::default());
        }
        if m.batch.is_none() {
            continue;
        }
        if let Some(why) = refusal(m.provider, m.pool.len() > 1) {
            // A model's own `batch` key was refused, located, when harness.toml was read.
            return Err(fail(format!("--batch: model `{}`: {why}", m.name)));
        }
    }
    Ok(())
}

/// A budget cannot stop a batch: it is submitted whole, and its answers
/// arrive together. A batched model under one is refused before anything is sent.
pub(super) fn check_budget(manifest: &Manifest, limits: Limits) -> Result<(), Exit> {
    if limits == Limits::default() {
        return Ok(());
    }
    match manifest.models.iter().find(|m| m.batch.is_some()) {
        Some(m) => Err(fail(format!(
            "model `{}` runs in batches, and a batch is submitted whole: --max-cost and --max-tokens-total cannot stop it; run without a budget (--dry-run shows what the batch costs at most); nothing was sent",
            m.name
        ))),
        None => Ok(()),
    }
}

/// The dry run's lines about batches: per batched model, the requests that
/// would go in its batch and at what share of the price.
pub(super) fn dry_run_lines(manifest: &Manifest, rows: &[Estimate]) -> Vec<String> {
    let mut lines = Vec::new();
    for model in &manifest.models {
        let Some(batch) = model.batch else { continue };
        let mine = rows.iter().filter(|e| e.model == model.name);
        let (batched, live): (Vec<&Estimate>, Vec<&Estimate>) = mine.partition(|e| e.batched);
        let requests: u64 = batched.iter().map(|e| e.requests).sum();
        let specs: Vec<&str> = batched.iter().map(|e| e.spec.as_str()).collect();
        let mut line = format!(
            "batch: model `{}` would send {requests} requests ({}) in one batch through the provider's batch API, at {}% of its price, polled every {} s",
            model.name,
            if specs.is_empty() {
                "none".to_owned()
            } else {
                specs.join(", ")
            },
            ((1.0 - batch.discount) * 100.0).round(),
            batch.poll_secs
        );
        if !live.is_empty() {
            let specs: Vec<&str> = live.iter().map(|e| e.spec.as_str()).collect();
            line.push_str(&format!(
                "; agent episodes are asked live, at the full price ({})",
                specs.join(", ")
            ));
        }
        lines.push(format!("{line}."));
    }
    lines
}
