//! Specs: loading a category's TOML file into a ready-to-run [`Spec`], with
//! every problem reported as a [`Diagnostic`] naming file, line and column.
//!
//! Data flow: the file's text → `format::SpecFile` (serde, with a source map
//! for positions) → range checks (`validate`) → a compiled [`Spec`]: its
//! generator or dataset (`source`), prompt templates (`prompt`) and rules
//! (`verify`). A spec then makes an [`Instance`] per index (variables and
//! rendered messages) and verifies responses to it.
//!
//! The glue of the spec path: it imports `format`, `source`, `prompt`, `media`,
//! `verify`, `scripting` and `error`; the run, check and report layers import it.

pub(crate) mod agent;
pub(crate) mod agent_user;
pub(crate) mod choices;
mod golden_subset;
mod images;
mod load;
pub(crate) mod mcp;
mod reasoning;
mod render;
mod replay;
mod sizes;
mod template_vars;
mod tools;
mod validate;

use std::path::{Path, PathBuf};

use minijinja::Value as TemplateValue;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Diagnostic, Diagnostics, ErrorKind};
use crate::format::SpecFile;
use crate::format::locate::SourceMap;
use crate::prompt::{Message, PromptSet, TemplateError};
use crate::source::dataset::{At, Dataset, DatasetError};
use crate::source::generate::Generator;
use crate::verify::{InstanceVerdict, RuleSet};

pub(crate) use load::{duplicate_id, spec_files, valid_id};
pub(crate) use reasoning::ModelReasoning;

/// The JSON Schema of a spec file, rules and all: `harness schema` prints it
/// and `schemas/spec.schema.json` holds it.
pub fn schema() -> serde_json::Value {
    let (rule, defs) = crate::verify::rule_schema();
    crate::format::spec_schema(rule, defs)
}

/// [`schema`] as the pretty JSON committed in `schemas/spec.schema.json`.
pub fn schema_text() -> String {
    crate::format::schema_text(&schema())
}

/// The most instances a spec may make without `allow_large_runs = true`.
pub(crate) const RUNS_CEILING: u32 = 10_000;

/// Where a spec's generation script lives, for error positions.
enum ScriptOrigin {
    Inline,
    File { path: PathBuf, source: String },
}

/// A loaded, compiled spec: parse errors, script and template compile errors
/// and rule errors have all been ruled out.
pub struct Spec {
    /// The spec's id (file stem unless set).
    pub id: String,
    /// The file it was loaded from.
    pub file: PathBuf,
    /// The parsed file.
    pub def: SpecFile,
    /// Instances per model.
    pub runs: u32,
    /// Generator seed.
    pub seed: u64,
    /// The verification rules.
    pub rules: RuleSet,
    map: SourceMap,
    dataset: Option<Dataset>,
    generator: Option<(Generator, ScriptOrigin)>,
    prompt: PromptSet,
    data: TemplateValue,
    tools: Vec<crate::format::Tool>,
    agent: Option<agent::AgentRuntime>,
    choices: Option<choices::ChoicesRuntime>,
    mcp: Vec<mcp::McpSpec>,
}

/// One test instance: its variables and rendered messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// 0-based index within the spec.
    pub index: u64,
    /// `<spec id>/<index>`.
    pub id: String,
    /// Variables made by the generator.
    pub vars: Map<String, Value>,
    /// The rendered chat messages.
    pub messages: Vec<Message>,
    /// The tools the model may call (the spec's, then the instance's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<crate::format::Tool>,
    /// The simulated user's system prompt (`[agent.user]`), rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_system: Option<String>,
}

impl Spec {
    /// Loads and compiles the spec at `path`, reporting every problem found.
    pub fn load(path: &Path) -> Result<Spec, Diagnostics> {
        load::load(path, None)
    }

    /// Loads the spec at `path` with its seed replaced by `seed`.
    pub fn load_with_seed(path: &Path, seed: u64) -> Result<Spec, Diagnostics> {
        load::load(path, Some(seed))
    }

    /// Source positions of the spec file.
    pub fn source_map(&self) -> &SourceMap {
        &self.map
    }

    /// The spec's dataset, when instances come from one.
    pub fn dataset(&self) -> Option<&Dataset> {
        self.dataset.as_ref()
    }

    /// Samples per instance (`[sampling] n`, default 1).
    pub fn samples(&self) -> u32 {
        self.def.sampling.as_ref().map_or(1, |s| s.n())
    }

    /// Instances to run: `requested` (or the spec's `runs`), capped by the dataset's rows.
    pub fn runs_for(&self, requested: Option<u32>) -> u32 {
        let runs = requested.unwrap_or(self.runs);
        match &self.dataset {
            Some(ds) => runs.min(u32::try_from(ds.len()).unwrap_or(u32::MAX)),
            None => runs,
        }
    }

    /// Why running `runs` instances of this spec needs its opt-in, if it does.
    pub fn runs_problem(&self, runs: u32) -> Option<String> {
        (runs > RUNS_CEILING && self.def.allow_large_runs != Some(true)).then(|| {
            format!(
                "{}: {runs} instances is above the ceiling of {RUNS_CEILING}; the spec must say `allow_large_runs = true`",
                self.file.display()
            )
        })
    }

    /// The variables of instance `index`.
    pub fn vars(&self, index: u64) -> Result<Map<String, Value>, Diagnostic> {
        let row = match &self.dataset {
            Some(ds) => Some(
                ds.vars(index)
                    .map_err(|e| dataset_diagnostic(&self.map, &e, Some(index)))?,
            ),
            None => None,
        };
        let Some((generator, origin)) = &self.generator else {
            return self.with_image_files(index, row.unwrap_or_default());
        };
        let vars = generator.generate(index, row.as_ref()).map_err(|e| {
            let (location, source) = match origin {
                ScriptOrigin::Inline if e.line == 0 => (
                    self.map
                        .locate(crate::format::key_path!["generate", "script"]),
                    self.map.source(),
                ),
                ScriptOrigin::Inline => (
                    self.map.locate_in_string(
                        crate::format::key_path!["generate", "script"],
                        e.line,
                        e.column,
                    ),
                    self.map.source(),
                ),
                ScriptOrigin::File { path, source } => {
                    let mut loc = crate::error::Location::file_start(path);
                    loc.line = e.line.max(1);
                    loc.column = e.column.max(1);
                    (loc, source.as_str())
                }
            };
            Diagnostic::new(
                ErrorKind::Script,
                location,
                format!("instance {index}: {}", e.message),
            )
            .with_source(source)
        })?;
        self.with_image_files(index, vars)
    }

    /// `vars` with image bytes columns written to files (see `images::materialize_columns`).
    fn with_image_files(
        &self,
        index: u64,
        mut vars: Map<String, Value>,
    ) -> Result<Map<String, Value>, Diagnostic> {
        images::materialize_columns(&mut vars).map_err(|error| {
            let message = format!("instance {index}: {error}");
            match self.dataset.as_ref().and_then(|d| d.row(index)) {
                Some(row) => Diagnostic::new(ErrorKind::Image, row.origin.location(), message),
                None => Diagnostic::new(
                    ErrorKind::Image,
                    self.map.locate(crate::format::key_path!["prompt"]),
                    message,
                ),
            }
        })?;
        Ok(vars)
    }

    /// An error in instance `index`'s variable `var` read as `what`
    /// (history, tools): at the dataset row when there is one, else at the
    /// spec key `at` that names the variable.
    fn var_diagnostic(
        &self,
        index: u64,
        (what, var): (&str, &str),
        message: &str,
        at: &[crate::format::locate::Key<'_>],
    ) -> Diagnostic {
        let message = format!("{what} `{var}`: {message}");
        self.instance_diagnostic(index, &message, at)
    }

    /// An error in instance `index`'s variables: at its dataset row when
    /// there is one, else at the spec key `at`.
    fn instance_diagnostic(
        &self,
        index: u64,
        message: &str,
        at: &[crate::format::locate::Key<'_>],
    ) -> Diagnostic {
        let message = format!("instance {index}: {message}");
        match self.dataset.as_ref().and_then(|d| d.row(index)) {
            Some(row) => Diagnostic::new(ErrorKind::Dataset, row.origin.location(), message),
            None => self
                .map
                .diagnostic(ErrorKind::Invalid, self.map.locate(at), message),
        }
    }

    /// Generates and renders instance `index`.
    pub fn instance(&self, index: u64) -> Result<Instance, Diagnostic> {
        let vars = std::sync::Arc::new(self.vars(index)?);
        let template_vars = template_vars::lazy(&vars);
        let messages = self.render_with(index, &vars, &template_vars)?;
        let tools = self.instance_tools(index, &vars)?;
        if let Some(agent) = &self.agent
            && let Err(problem) = agent.check_state(&vars)
        {
            let message = format!("instance {index}: {problem}");
            let location = match self.dataset.as_ref().and_then(|d| d.row(index)) {
                Some(row) => row.origin.location(),
                None => self.map.locate(crate::format::key_path!["agent"]),
            };
            return Err(Diagnostic::new(ErrorKind::Invalid, location, message));
        }
        let user_system = self.user_system(index, &template_vars)?;
        drop(template_vars);
        // The templates are done with it: it is the only reference left.
        let vars = std::sync::Arc::try_unwrap(vars).unwrap_or_else(|shared| (*shared).clone());
        Ok(Instance {
            index,
            id: format!("{}/{index}", self.id),
            vars,
            messages,
            tools,
            user_system,
        })
    }

    /// The checked `[choices]`, when the spec is a multiple-choice test.
    pub(crate) fn choices(&self) -> Option<&choices::ChoicesRuntime> {
        self.choices.as_ref()
    }

    /// The choices of instance `index` with `vars`, when the spec has
    /// `[choices]`; an error at the dataset row or at `[choices]`.
    pub(crate) fn choice_set(
        &self,
        index: u64,
        vars: &Map<String, Value>,
    ) -> Result<Option<crate::verify::choices::ChoiceSet>, Diagnostic> {
        let Some(choices) = &self.choices else {
            return Ok(None);
        };
        choices.set(vars).map(Some).map_err(|problem| {
            let at = crate::format::key_path!["choices"];
            self.instance_diagnostic(index, &format!("[choices]: {problem}"), at)
        })
    }

    /// The compiled `[agent]`, when the spec runs episodes.
    pub(crate) fn agent(&self) -> Option<&agent::AgentRuntime> {
        self.agent.as_ref()
    }

    /// The agent's tools, for rules that replay gold actions through them.
    pub(crate) fn replayer(&self) -> Option<crate::verify::Replayer<'_>> {
        let agent = self.agent.as_ref()?;
        Some(crate::verify::Replayer(agent))
    }

    /// The `[[mcp]]` servers whose tools join each episode's.
    pub(crate) fn mcp(&self) -> &[mcp::McpSpec] {
        &self.mcp
    }

    /// Judges a response to an instance with `vars`.
    pub fn verify(&self, response: &str, vars: &Map<String, Value>) -> InstanceVerdict {
        self.rules.verify(response, vars)
    }

    /// The rules as example `index` sees them when it sets `timeout_secs`:
    /// every `code` rule's CPU limit replaced by the example's. `None` when
    /// the example keeps the spec's rules.
    pub fn example_rules(&self, index: usize) -> Result<Option<RuleSet>, Diagnostic> {
        let Some(secs) = self.def.examples.get(index).and_then(|e| e.timeout_secs) else {
            return Ok(None);
        };
        let at = || {
            self.map
                .locate(crate::format::key_path!["example", index, "timeout_secs"])
        };
        let problem = if !(secs.is_finite() && secs > 0.0 && secs <= 3600.0) {
            Some("timeout_secs must be within (0, 3600]")
        } else if !self.def.verify.iter().any(|r| r.rule() == Some("code")) {
            Some("timeout_secs limits `code` rules, and this spec has none")
        } else {
            None
        };
        if let Some(message) = problem {
            return Err(Diagnostic::new(ErrorKind::Invalid, at(), message));
        }
        let dir = self.file.parent().unwrap_or(Path::new("."));
        RuleSet::build(&self.def.verify, &self.map, dir, Some(secs))
            .map(Some)
            .map_err(|mut errors| errors.remove(0))
    }

    /// Verifies `reply` with judge rules' verdicts already obtained.
    pub(crate) fn verify_judged(
        &self,
        reply: &crate::verify::Reply,
        vars: &Map<String, Value>,
        judged: &crate::verify::Judged,
    ) -> InstanceVerdict {
        self.rules.verify_judged(reply, vars, judged)
    }

    /// A rule failure the spec caused (a `script` rule that errs, a test
    /// template that does not render), at its key in rule `rule`.
    pub fn fault_diagnostic(
        &self,
        rule: usize,
        label: &str,
        name: &str,
        verdict: &crate::verify::Verdict,
    ) -> Option<Diagnostic> {
        let fault = verdict.fault?;
        let path = crate::format::key_path!["verify", rule, fault.key];
        let location = if fault.line == 0 {
            self.map.locate(path)
        } else {
            self.map.locate_in_string(path, fault.line, fault.column)
        };
        Some(self.map.diagnostic(
            ErrorKind::Script,
            location,
            format!("{label}: rule `{name}`: {}", verdict.detail),
        ))
    }

    /// What `harness run` checks before asking any model, in well under a
    /// second for a sound spec: instance 0 generates and renders, its variables
    /// suit the rules, and no `script` rule stalls on an empty answer. A broken
    /// generator or a stalling script then fails the run at once, not per instance.
    pub fn preflight(&self) -> Result<(), Diagnostic> {
        let instance = self.instance(0)?;
        let at = |rule: usize, key: &str| {
            self.map
                .locate(crate::format::key_path!["verify", rule, key])
        };
        if let Some((rule, key, var)) = self.rules.missing_variables(&instance.vars).pop() {
            let message = format!("`{key}` names variable `{var}`, which instance 0 does not set");
            return Err(self
                .map
                .diagnostic(ErrorKind::Invalid, at(rule, key), message));
        }
        if let Some((rule, key, why)) = self.rules.value_problems(&instance.vars).pop() {
            let key = crate::verify::value_key(&self.map, rule, key);
            let message = format!("instance 0: {why}");
            return Err(self
                .map
                .diagnostic(ErrorKind::Invalid, at(rule, key), message));
        }
        for (rule, name, verdict) in self.rules.probe(&instance.vars) {
            if crate::scripting::ScriptError::stalled(&verdict.detail)
                && let Some(d) = self.fault_diagnostic(rule, "an empty answer", name, &verdict)
            {
                return Err(d);
            }
        }
        Ok(())
    }

    fn template_diagnostic(&self, e: &TemplateError, index: Option<u64>) -> Diagnostic {
        template_diagnostic(&self.map, e, index)
    }
}

/// A dataset error as a diagnostic: at the row in its file, or at the `[dataset]` key.
pub(crate) fn dataset_diagnostic(
    map: &SourceMap,
    e: &DatasetError,
    index: Option<u64>,
) -> Diagnostic {
    let prefix = index.map(|i| format!("instance {i}: ")).unwrap_or_default();
    let message = format!("{prefix}{}", e.message);
    match &e.at {
        At::File(location) => Diagnostic::new(ErrorKind::Dataset, location.clone(), message),
        At::Key(key, line, column) => {
            let path = crate::format::key_path!["dataset", *key];
            let location = if *line == 0 {
                map.locate(path)
            } else {
                map.locate_in_string(path, *line, *column)
            };
            map.diagnostic(ErrorKind::Dataset, location, message)
        }
    }
}

fn template_diagnostic(map: &SourceMap, e: &TemplateError, index: Option<u64>) -> Diagnostic {
    let path = images::template_key_path(&e.template);
    let location = if e.line == 0 {
        map.locate(&path)
    } else {
        map.locate_in_string(&path, e.line, e.column)
    };
    let prefix = index.map(|i| format!("instance {i}: ")).unwrap_or_default();
    Diagnostic::new(
        ErrorKind::Template,
        location,
        format!("{prefix}template `{}`: {}", e.template, e.message),
    )
}
