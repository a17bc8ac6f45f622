//! `harness check`: validate a spec end to end without a model — compile,
//! generate and render its instances, run its self-check examples, and
//! compare its instances with the golden file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::error::{Diagnostic, ErrorKind, Location};
use crate::format::key_path;
use crate::format::{Example, GoldenInstances};
use crate::golden::instances::{GoldenInstance, instances_path};
use crate::golden::stream::StreamCompare;
use crate::golden::{GoldenMode, GoldenStatus};
use crate::spec::Spec;
pub(crate) use examples::ExampleVerdict;
use examples::run_example;
pub(crate) use exec::ExecModel;

mod examples;
mod exec;
mod listings;
pub(crate) mod mcp;
mod tokens;

/// Options of a check run.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Root of the golden files.
    pub golden_dir: PathBuf,
    /// Bless or write `.new` files.
    pub mode: GoldenMode,
    /// `exec` models whose commands are rendered for every instance.
    pub exec_models: Vec<ExecModel>,
    /// The models the spec would run on (`-m`, else `[run] models`): its
    /// reasoning setting is checked against each one's wire.
    pub models: Vec<crate::provider::ModelSetup>,
    /// The models named on the command line: their servers are asked how
    /// they tokenize `first_token` labels.
    pub asked: Vec<crate::provider::ModelSetup>,
    /// `harness.toml`'s `[[mcp]]` servers, for specs that name one.
    pub mcp_servers: Vec<(crate::format::McpServer, PathBuf)>,
    /// Start every MCP server, instead of using a listing an earlier check
    /// kept (`--fresh`).
    pub fresh_servers: bool,
}

impl CheckOptions {
    /// A check against `golden_dir` in `mode` with no model and no
    /// machine's servers, starting every MCP server a spec names.
    pub fn alone(golden_dir: &Path, mode: GoldenMode) -> CheckOptions {
        CheckOptions {
            golden_dir: golden_dir.to_path_buf(),
            mode,
            exec_models: Vec::new(),
            models: Vec::new(),
            asked: Vec::new(),
            mcp_servers: Vec::new(),
            fresh_servers: true,
        }
    }
}

/// How many of a spec's examples held, shown as `held/total`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Examples {
    /// Examples that held.
    pub held: usize,
    /// Examples in the spec.
    pub total: usize,
}

impl std::fmt::Display for Examples {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.held, self.total)
    }
}

/// The result of checking one spec file.
#[derive(Debug, Default)]
pub struct SpecCheck {
    /// The spec file.
    pub file: PathBuf,
    /// The spec id, when it loaded.
    pub id: Option<String>,
    /// Instances generated and rendered.
    pub instances: usize,
    /// The spec's examples and how many held.
    pub examples: Examples,
    /// What each example that could be judged actually got, in order.
    pub verdicts: Vec<ExampleVerdict>,
    /// Every problem found.
    pub errors: Vec<Diagnostic>,
    /// What may go wrong with a model, though the spec is sound.
    pub warnings: Vec<Diagnostic>,
    /// The golden comparison, when the spec was sound enough to make one.
    pub golden: Option<GoldenStatus>,
    /// Wall time of the check.
    pub elapsed: Duration,
    /// MCP servers whose tools an earlier check listed, not started again.
    pub servers_remembered: Vec<String>,
}

/// The first problem of the reasoning `model`'s requests for `spec` would
/// send (a key its wire cannot carry, a budget above `max_tokens`), located.
pub(crate) fn reasoning_problem(
    spec: &Spec,
    model: &crate::provider::ModelSetup,
) -> Option<Diagnostic> {
    let unsupported = |r: &crate::format::ReasoningSetting| {
        crate::provider::reasoning_setting::unsupported(model.provider, r)
    };
    let argument = model
        .sweep
        .as_ref()
        .map(|c| (c.setting, format!("reasoning.{}={}", c.key, c.value)));
    spec.reasoning_problem(&crate::spec::ModelReasoning {
        name: &model.name,
        own: model.reasoning,
        sweep: argument.as_ref().map(|(s, a)| (*s, a.as_str())),
        max_tokens: model.options.max_tokens,
        unsupported: &unsupported,
    })
}

/// Checks one spec file; never panics on bad input, reports instead.
pub fn check_file(file: &Path, options: &CheckOptions) -> SpecCheck {
    let started = Instant::now();
    let mut report = SpecCheck {
        file: file.to_path_buf(),
        ..SpecCheck::default()
    };
    let loaded = Spec::load(file).and_then(|mut spec| {
        spec.complete_mcp(&options.mcp_servers)?;
        Ok(spec)
    });
    match loaded {
        Err(diags) => report.errors = diags.0,
        Ok(spec) => check_spec(&spec, options, &mut report),
    }
    report.elapsed = started.elapsed();
    report
}

fn check_spec(spec: &Spec, options: &CheckOptions, report: &mut SpecCheck) {
    report.id = Some(spec.id.clone());
    report
        .errors
        .extend((options.models.iter()).filter_map(|model| reasoning_problem(spec, model)));
    let path = instances_path(&options.golden_dir, &spec.id);
    let golden_error = |e: std::io::Error| {
        Diagnostic::new(
            ErrorKind::Golden,
            Location::file_start(&path),
            format!("cannot compare with the golden file: {e}"),
        )
    };
    let mut golden = match StreamCompare::new(&path, options.mode) {
        Ok(g) => Some(g),
        Err(e) => {
            report.errors.push(golden_error(e));
            None
        }
    };
    let generated = check_instances(spec, golden.as_mut(), &options.exec_models, report);
    if let Some(labels) = generated.filter(|&labels| labels > 0) {
        report.warnings = tokens::label_warnings(spec, labels, &options.asked);
    }
    let listings = if options.fresh_servers {
        mcp::Listings::Fresh
    } else {
        mcp::Listings::Remembered
    };
    let servers = mcp::check_servers(spec, listings);
    report.errors.extend(servers.errors);
    report.warnings.extend(servers.warnings);
    report.servers_remembered = (servers.servers.into_iter())
        .filter(|s| s.remembered)
        .map(|s| s.name)
        .collect();
    let generated = generated.is_some();
    report.examples.total = spec.def.examples.len();
    if spec.rules.needs_sandbox()
        && !spec.def.examples.is_empty()
        && let Err(e) = crate::sandbox::shared()
    {
        report.errors.push(Diagnostic::new(
            ErrorKind::Io,
            spec.source_map().locate(key_path!["verify"]),
            format!("cannot run this spec's examples: {e}"),
        ));
        return;
    }
    // Examples taken from a generated instance would repeat the generator's error.
    let runnable = |example: &Example| generated || example.instance.is_none();
    let outcomes: Vec<Outcome> = if spec.rules.needs_sandbox() {
        // Each example is a program run that may wait for its time limit: overlap
        // them, the ones with a limit of their own (a program meant to run into
        // it) first, so the longest runs do not start last and hold the end up.
        let mut order: Vec<(usize, &Example)> = spec
            .def
            .examples
            .iter()
            .enumerate()
            .filter(|(_, example)| runnable(example))
            .collect();
        order.sort_by_key(|(i, example)| (example.timeout_secs.is_none(), *i));
        let mut outcomes: Vec<(usize, Outcome)> = std::thread::scope(|scope| {
            let handles: Vec<_> = order
                .into_iter()
                .map(|(i, example)| (i, scope.spawn(move || run_example(spec, i, example))))
                .collect();
            handles
                .into_iter()
                .map(|(i, h)| (i, h.join().expect("an example panicked")))
                .collect()
        });
        outcomes.sort_by_key(|(i, _)| *i);
        outcomes.into_iter().map(|(_, outcome)| outcome).collect()
    } else {
        spec.def
            .examples
            .iter()
            .enumerate()
            .filter(|(_, example)| runnable(example))
            .map(|(i, example)| run_example(spec, i, example))
            .collect()
    };
    for (verdict, outcome) in outcomes {
        report.verdicts.extend(verdict);
        match outcome {
            Ok(()) => report.examples.held += 1,
            Err(e) => report
                .errors
                .push(e.with_source(spec.source_map().source())),
        }
    }
    if !report.errors.is_empty() {
        return;
    }
    if let Some(golden) = golden {
        match golden.finish() {
            Ok(status) => report.golden = Some(status),
            Err(e) => report.errors.push(golden_error(e)),
        }
    }
}

/// An example's verdict, when it could be judged, and whether it held.
type Outcome = (Option<ExampleVerdict>, Result<(), Diagnostic>);

/// Generates and renders every instance, checking what the rules read from
/// it and streaming its golden line to `golden`; when generation held, the
/// most choices an instance has (0 without `[choices]`).
fn check_instances(
    spec: &Spec,
    mut golden: Option<&mut StreamCompare>,
    exec_models: &[ExecModel],
    report: &mut SpecCheck,
) -> Option<usize> {
    let mut most_choices = 0;
    let mut seen = BTreeSet::new();
    let mut seen_commands = exec::Seen::default();
    let group_by = spec.def.report.group_by();
    let mut grouped = vec![false; group_by.len()];
    for index in 0..u64::from(spec.runs) {
        let instance = match spec.instance(index) {
            Ok(i) => i,
            Err(e) => {
                report.errors.push(e);
                return None;
            }
        };
        if let Ok(Some(set)) = spec.choice_set(index, &instance.vars) {
            most_choices = most_choices.max(set.labels.len());
        }
        for (rule, key, var) in spec.rules.missing_variables(&instance.vars) {
            if seen.insert((rule, key, var.clone())) {
                report.errors.push(missing_variable(
                    spec,
                    rule,
                    key,
                    &var,
                    &instance.vars,
                    index,
                ));
            }
        }
        for (rule, key, why) in spec.rules.value_problems(&instance.vars) {
            if seen.insert((rule, key, String::new())) {
                let key = crate::verify::value_key(spec.source_map(), rule, key);
                report.errors.push(
                    Diagnostic::new(
                        ErrorKind::Invalid,
                        spec.source_map().locate(key_path!["verify", rule, key]),
                        format!("instance {index}: {why}"),
                    )
                    .with_source(spec.source_map().source()),
                );
            }
        }
        report.errors.extend(exec::check_commands(
            spec,
            exec_models,
            index,
            &instance.vars,
            &instance.messages,
            &mut seen_commands,
        ));
        for (found, var) in grouped.iter_mut().zip(&group_by) {
            *found |= crate::verify::lookup(&instance.vars, var).is_some();
        }
        let record = GoldenInstance {
            index,
            id: instance.id.clone(),
            expected: spec.rules.expected(&instance.vars),
            vars: instance.vars,
            messages: instance.messages,
            tools: instance.tools,
        };
        let mut line = serde_json::to_string(&record).expect("instances serialize");
        if spec.def.golden_instances == Some(GoldenInstances::Digest) {
            line = digest_line(&record, &line);
        }
        if let Some(g) = golden.as_deref_mut()
            && let Err(e) = g.push_line(&line)
        {
            report.errors.push(Diagnostic::new(
                ErrorKind::Golden,
                Location::file_start(spec.file.as_path()),
                format!("cannot write the golden comparison: {e}"),
            ));
            golden = None;
        }
        report.instances += 1;
    }
    for (j, var) in group_by.iter().enumerate().filter(|(j, _)| !grouped[*j]) {
        report.errors.push(group_by_unknown(spec, j, var));
    }
    Some(most_choices)
}

/// `[report] group_by` names a variable that no instance sets.
fn group_by_unknown(spec: &Spec, j: usize, var: &str) -> Diagnostic {
    let map = spec.source_map();
    let location = match &spec.def.report.group_by {
        Some(crate::format::OneOrMany::Many(_)) => map.locate(key_path!["report", "group_by", j]),
        _ => map.locate(key_path!["report", "group_by"]),
    };
    map.diagnostic(
        ErrorKind::Invalid,
        location,
        format!("group_by names variable `{var}`, which no instance sets"),
    )
}

/// A golden line that pins an instance without holding its content: for
/// specs over third-party datasets, which must stay out of the repository.
fn digest_line(record: &GoldenInstance, full: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(full.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    serde_json::json!({ "index": record.index, "id": record.id, "sha256": hex }).to_string()
}

fn missing_variable(
    spec: &Spec,
    rule: usize,
    key: &str,
    var: &str,
    vars: &Map<String, Value>,
    index: u64,
) -> Diagnostic {
    let have: Vec<&str> = vars.keys().map(String::as_str).collect();
    let mut d = Diagnostic::new(
        ErrorKind::Invalid,
        spec.source_map().locate(key_path!["verify", rule, key]),
        format!("`{key}` names variable `{var}`, which instance {index} does not set"),
    )
    .with_source(spec.source_map().source());
    let root = var.split('.').next().unwrap_or(var);
    d = match crate::error::did_you_mean(root, have.iter().copied()) {
        Some(s) => d.with_help(format!(
            "did you mean `{s}`? the instance sets: {}",
            have.join(", ")
        )),
        None => d.with_help(format!("the instance sets: {}", have.join(", "))),
    };
    d
}
