//! `harness show`: a spec's instances, readable, for authoring.

use crate::output::outln;
use std::path::{Path, PathBuf};

use owo_colors::OwoColorize;

use super::exit::Exit;
use crate::format::McpServer;
use crate::golden::instances::GoldenInstance;
use crate::spec::Spec;
use crate::text::{one_line, visible};

/// Runs `harness show`.
/// The spec's `[[mcp]]` servers that name one of the machine's come from
/// `servers` (`harness.toml`'s).
pub(super) fn run(
    file: &Path,
    (start, count, seed): (u64, u64, Option<u64>),
    (json, servers): (bool, &[(McpServer, PathBuf)]),
    color: bool,
) -> Exit {
    let loaded = match seed {
        Some(seed) => Spec::load_with_seed(file, seed),
        None => Spec::load(file),
    };
    let loaded = loaded.and_then(|mut spec| {
        spec.complete_mcp(servers)?;
        Ok(spec)
    });
    let spec = match loaded {
        Ok(spec) => spec,
        Err(diags) => return super::exit::diagnostics(&diags.0, color),
    };
    let mut end = start.saturating_add(count);
    if let Some(dataset) = spec.dataset() {
        // A dataset has only so many rows; asking for more shows them all,
        // but a start past the last one shows nothing, which is a mistake.
        let rows = dataset.len() as u64;
        if start >= rows {
            let last = rows
                .checked_sub(1)
                .map_or(String::new(), |l| format!(", 0 to {l}"));
            return super::exit::fail(format!(
                "--start {start} is past the end: the dataset has {rows} instances{last}"
            ));
        }
        end = end.min(rows);
    }
    if !json {
        print_mcp(&spec);
    }
    for index in start..end {
        let instance = match spec.instance(index) {
            Ok(i) => i,
            Err(d) => return super::exit::diagnostics([&d], color),
        };
        let expected = spec.rules.expected(&instance.vars);
        if json {
            let record = GoldenInstance {
                index,
                id: instance.id,
                vars: instance.vars,
                messages: instance.messages,
                tools: instance.tools.clone(),
                expected,
            };
            outln!(
                "{}",
                serde_json::to_string(&record).expect("instances serialize")
            );
            continue;
        }
        let title = format!("── {} ──", instance.id);
        outln!(
            "{}",
            if color {
                title.bold().to_string()
            } else {
                title
            }
        );
        outln!("vars:");
        for (k, v) in &instance.vars {
            outln!("  {k} = {}", visible(&v.to_string()));
        }
        outln!("messages:");
        for m in &instance.messages {
            let role = format!(
                "[{}]",
                serde_json::to_value(m.role).unwrap().as_str().unwrap_or("")
            );
            let role = if color { role.cyan().to_string() } else { role };
            outln!("  {role}");
            for line in visible(&m.content).lines() {
                outln!("    {line}");
            }
            for image in &m.images {
                outln!(
                    "    image {} ({}, {} bytes, sha256 {})",
                    visible(&image.path),
                    image.mime,
                    image.size,
                    image.short_digest()
                );
            }
        }
        print_tools(&instance.tools);
        print_agent(&spec, &instance.vars);
        outln!("expected:");
        for (k, v) in &expected {
            outln!("  {k} = {}", visible(&v.to_string()));
        }
        outln!();
    }
    Exit::Success
}

/// `[agent]`: the turns, what ends an episode, and the instance's initial state.
fn print_agent(spec: &Spec, vars: &serde_json::Map<String, serde_json::Value>) {
    let Some(agent) = spec.agent() else {
        return;
    };
    let end = match &agent.end_tool {
        Some(tool) => format!("a call of `{}`", visible(tool)),
        None => "a final answer (a turn without calls)".to_owned(),
    };
    outln!("agent:");
    outln!("  max_turns: {}", agent.max_turns);
    outln!("  ends on: {end}");
    let state = agent
        .initial_state(vars)
        .map_or_else(|e| e.to_string(), |s| s.to_string());
    outln!(
        "  state (`{}`): {}",
        visible(&agent.state_var),
        one_line(&state, TOOL_LINE)
    );
}

/// `[[mcp]]` servers, each started once: the tools it offers, or why it failed.
fn print_mcp(spec: &Spec) {
    if spec.mcp().is_empty() {
        return;
    }
    let found = crate::check::mcp::check_servers(spec, crate::check::mcp::Listings::Fresh);
    for started in &found.servers {
        outln!(
            "mcp server `{}` (started in {} ms):",
            started.name,
            started.took.as_millis()
        );
        let tools: Vec<crate::format::Tool> = (started.tools)
            .iter()
            .map(|t| crate::format::Tool {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters: t.input_schema.clone(),
            })
            .collect();
        print_tools(&tools);
    }
    for problem in found.errors.iter().chain(&found.warnings) {
        outln!("mcp: {}", one_line(&problem.message, 300));
    }
    outln!();
}

/// The longest description or parameters line `show` prints, in characters.
const TOOL_LINE: usize = 100;

/// An instance's tools: name, description and parameters, each on one clipped line.
fn print_tools(tools: &[crate::format::Tool]) {
    if tools.is_empty() {
        return;
    }
    outln!("tools:");
    for tool in tools {
        outln!("  {}", one_line(&tool.name, TOOL_LINE));
        if !tool.description.is_empty() {
            outln!(
                "    description: {}",
                one_line(&tool.description, TOOL_LINE)
            );
        }
        outln!(
            "    parameters: {}",
            one_line(&tool.parameters.to_string(), TOOL_LINE)
        );
    }
}
