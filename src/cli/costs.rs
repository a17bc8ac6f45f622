//! What `harness run` says and checks about money: prices from `--prices`,
//! the refusal of a budget some model has no price for, the dry run's
//! estimate, and the words a budget stop ends with.

use crate::output::{err, out};
use std::path::Path;
use std::sync::Arc;

use super::exit::{Exit, fail};
use crate::config::prices::PriceTable;
use crate::provider::ModelSetup;
use crate::report::fit::{Fit, fitted};
use crate::run::{self, Estimate, Limits, Manifest, RunOutcome, SpecRuntime};
use crate::text::money;

/// Parses `--max-cost`: a finite amount of 0 or more.
pub(super) fn amount(text: &str) -> Result<f64, super::asking::BadNumber> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(super::asking::BadNumber::Amount(text.to_owned())),
    }
}

/// The models of a plan and its judge.
fn priced_models(manifest: &mut Manifest) -> impl Iterator<Item = &mut ModelSetup> {
    manifest.models.iter_mut().chain(manifest.judge.as_mut())
}

/// Gives every model of the plan without a price the one `file` has for it.
pub(super) fn apply_prices(file: &Path, manifest: &mut Manifest, color: bool) -> Result<(), Exit> {
    let table = PriceTable::read(file).map_err(|d| super::exit::diagnostics([&d], color))?;
    for model in priced_models(manifest).filter(|m| m.price.is_none()) {
        model.price = table.lookup(model);
    }
    Ok(())
}

/// With a cost budget every model and the judge need a price: a budget that
/// cannot see a model's spending would never stop it.
pub(super) fn check_priced(manifest: &mut Manifest, limits: Limits) -> Result<(), Exit> {
    super::batch::check_budget(manifest, limits)?;
    if limits.max_cost.is_none() {
        return Ok(());
    }
    let missing: Vec<String> = priced_models(manifest)
        .filter(|m| m.price.is_none())
        .map(|m| format!("`{}`", m.name))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(fail(format!(
        "--max-cost needs a price for every model, and {} has none: set `price = {{ input = ..., output = ... }}` (or `{{ per_hour = ... }}`, `{{ per_call = ... }}`) in its [models] table, or give --prices FILE; nothing was sent",
        missing.join(", ")
    )))
}

/// `harness run --dry-run`: the requests the plan still has and the most
/// they could cost, per model and spec; sends nothing.
pub(super) fn dry_run(
    manifest: &Manifest,
    specs: &[Arc<SpecRuntime>],
    journal_path: &Path,
) -> Result<Exit, Exit> {
    let rows = run::estimate(manifest, specs, journal_path).map_err(fail)?;
    let currency = &manifest.currency;
    let cost = |c: Option<f64>| c.map_or("—".to_owned(), |c| format!("{} {currency}", money(c)));
    let judged = rows.iter().any(|e| e.judge_requests > 0);
    let mut header: Vec<String> = [
        "model / spec",
        "requests",
        "re-asks",
        "prompt tokens",
        "max output tokens",
        "cost at most",
    ]
    .map(str::to_owned)
    .to_vec();
    if judged {
        header.extend(["judge requests", "judge cost at most"].map(str::to_owned));
    }
    let talked = rows.iter().any(|e| e.user_requests > 0);
    if talked {
        header.extend(["user requests", "user cost at most"].map(str::to_owned));
    }
    let lines: Vec<Vec<(String, Option<f64>)>> = rows
        .iter()
        .map(|e| {
            let mut line = vec![
                format!("{} / {}", e.model, e.spec),
                e.requests.to_string(),
                e.reasks.to_string(),
                e.prompt_tokens.to_string(),
                e.max_output_tokens.to_string(),
                cost(e.cost),
            ];
            if judged {
                line.extend([e.judge_requests.to_string(), cost(e.judge_cost)]);
            }
            if talked {
                line.extend([e.user_requests.to_string(), cost(e.user_cost)]);
            }
            line.into_iter().map(|c| (c, None)).collect()
        })
        .collect();
    out!(
        "{}",
        fitted(
            &header,
            &lines,
            Fit::plain(super::columns()),
            Some("estimate")
        )
    );
    let total = |f: fn(&Estimate) -> u64| rows.iter().map(f).sum::<u64>();
    let priced: f64 = rows
        .iter()
        .map(|e| e.cost.unwrap_or(0.0) + e.judge_cost.unwrap_or(0.0) + e.user_cost.unwrap_or(0.0))
        .sum();
    let unknown = unpriced(manifest, &rows);
    let users = match total(|e| e.user_requests) {
        0 => String::new(),
        n => format!(", {n} to simulated users"),
    };
    let line = format!(
        "dry run: {} requests ({} to the judge{users}) and at most {} re-asks; to the models {} prompt tokens and at most {} output tokens; cost at most {}, every answer at max_tokens, every re-ask made and nothing from the cache{unknown}. Not counted: retries of failed requests (at most {} each), which return no answer to bill. Nothing was sent.",
        total(|e| e.requests) + total(|e| e.judge_requests) + total(|e| e.user_requests),
        total(|e| e.judge_requests),
        total(|e| e.reasks),
        total(|e| e.prompt_tokens),
        total(|e| e.max_output_tokens),
        cost(Some(priced)),
        manifest
            .models
            .iter()
            .map(|m| m.max_retries)
            .max()
            .unwrap_or(0),
    );
    out!("{}", crate::text::wrap(&line, 80));
    for line in super::batch::dry_run_lines(manifest, &rows) {
        out!("{}", crate::text::wrap(&line, 80));
    }
    let episodes = total(|e| e.episodes);
    if episodes > 0 {
        let line = format!(
            "{episodes} agent episodes are counted at their max_turns requests each, every turn's prompt holding the turns before it at max_tokens (a simulated user's turns too, one after each agent turn); the tools' results are not counted."
        );
        out!("{}", crate::text::wrap(&line, 80));
    }
    Ok(Exit::Success)
}

/// ` (no price: ...)` naming the models, the judge and the simulated users
/// whose requests the estimate cannot price; empty when it prices them all.
fn unpriced(manifest: &Manifest, rows: &[Estimate]) -> String {
    let mut names: Vec<&str> = rows
        .iter()
        .filter(|e| e.cost.is_none())
        .map(|e| e.model.as_str())
        .collect();
    if let Some(judge) = manifest.judge.as_ref().filter(|j| j.price.is_none())
        && rows.iter().any(|e| e.judge_requests > 0)
    {
        names.push(&judge.name);
    }
    for e in rows
        .iter()
        .filter(|e| e.user_requests > 0 && e.user_cost.is_none())
    {
        if let Some(user) = manifest.users.get(&e.spec) {
            names.push(&user.name);
        }
    }
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        String::new()
    } else {
        format!(" (no price: {})", names.join(", "))
    }
}

/// What the run spent against each of its limits, `None` without a budget.
fn against_limits(outcome: &RunOutcome, limits: Limits, currency: &str) -> Option<String> {
    let spent = outcome.spent;
    let mut words = Vec::new();
    if let Some(max) = limits.max_cost {
        words.push(format!(
            "spent {} {currency} of --max-cost {} {currency}",
            money(spent.cost),
            money(max)
        ));
    }
    if let Some(max) = limits.max_tokens {
        words.push(format!(
            "used {} tokens of --max-tokens-total {max}",
            spent.tokens
        ));
    }
    (!words.is_empty()).then(|| words.join(", "))
}

/// After a run that finished within its budget: what it spent of it.
pub(super) fn within_budget(outcome: &RunOutcome, limits: Limits, currency: &str) {
    if let Some(words) = against_limits(outcome, limits, currency) {
        out!("{}", crate::text::wrap(&format!("budget: {words}"), 80));
    }
}

/// After a run stopped by its budget: what it spent, against which limit,
/// and how to go on.
pub(super) fn budget_stopped(outcome: &RunOutcome, limits: Limits, currency: &str, run_id: &str) {
    let words = against_limits(outcome, limits, currency).unwrap_or_default();
    let flag = if limits.max_cost.is_some() {
        "--max-cost"
    } else {
        "--max-tokens-total"
    };
    let line = format!(
        "budget reached: {words}; no request was started that could pass it, and every answer that finished is saved; continue with `harness run --resume {run_id} {flag} MORE`"
    );
    err!("{}", crate::text::wrap(&line, 80));
}
