//! The models of a new plan that play a part besides those under test: the
//! judge of `judge` rules and each spec's simulated user (`[agent.user]`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::exit::{Exit, fail};
use crate::config::Config;
use crate::provider::{ModelSetup, ProviderKind};
use crate::spec::Spec;

/// The flags naming those models.
#[derive(Debug, clap::Args)]
pub(super) struct RoleArgs {
    /// The judge model for `judge` rules (default: harness.toml's [judge]).
    #[arg(long, conflicts_with = "resume")]
    pub judge: Option<String>,
    /// The model playing every spec's simulated user (`[agent.user]`),
    /// instead of the one each spec names.
    #[arg(long, value_name = "MODEL", conflicts_with = "resume")]
    pub user_model: Option<String>,
}

/// The judge and, per spec id, the user model of a plan of `models` on `specs`.
pub(super) fn resolve(
    args: &RoleArgs,
    config: &Config,
    specs: &[Arc<Spec>],
    models: &[ModelSetup],
) -> Result<(Option<ModelSetup>, BTreeMap<String, ModelSetup>), Exit> {
    let judge = match args
        .judge
        .as_ref()
        .or(config.judge.as_ref().map(|j| &j.model))
    {
        Some(name) => Some(config.resolve_model(name).map_err(fail)?),
        None => None,
    };
    let live = models.iter().any(|m| m.provider != ProviderKind::Replay);
    if judge.is_none()
        && let Some(spec) = specs.iter().find(|s| s.rules.needs_judge())
        && live
    {
        return Err(fail(format!(
            "spec `{}` has a `judge` rule: name the judge model with --judge MODEL or [judge] model = \"...\" in harness.toml",
            spec.id
        )));
    }
    let mut users = BTreeMap::new();
    // A replayed model replays its recorded user turns: no user model is asked.
    if !live {
        return Ok((judge, users));
    }
    for spec in specs {
        let Some(user) = spec.agent().and_then(|a| a.user.as_ref()) else {
            continue;
        };
        let name = args.user_model.as_deref().unwrap_or(&user.model);
        let setup = config
            .resolve_model(name)
            .map_err(|e| fail(format!("spec `{}`: the user model: {e}", spec.id)))?;
        if setup.provider.is_managed() {
            return Err(fail(format!(
                "spec `{}`: the user model `{name}` is a managed {} server; give it a fixed endpoint (`openai:NAME@URL` or a harness.toml model with a base_url)",
                spec.id,
                setup.provider.prefix()
            )));
        }
        users.insert(spec.id.clone(), setup);
    }
    Ok((judge, users))
}
