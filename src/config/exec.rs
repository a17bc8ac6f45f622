//! The keys of an `exec` model (`command`, `env`, `env_set`) checked and
//! turned into [`ExecOptions`]: the program runs in the directory of
//! `harness.toml`, made absolute so a resume from elsewhere runs it alike.

use std::path::Path;

use super::{ModelConfig, ModelError};
use crate::error::Location;
use crate::format::key_path;
use crate::format::locate::SourceMap;
use crate::provider::exec::DEFAULT_TIMEOUT_SECS;
use crate::provider::{ExecOptions, ModelSetup, ProviderKind};

/// Fills `spec`'s exec settings from `m` (a table of `config_dir`'s
/// `harness.toml`); the exec keys on another provider, or an exec model
/// without a usable `command`, are errors.
pub(super) fn settings(
    name: &str,
    m: &ModelConfig,
    config_dir: &Path,
    spec: &mut ModelSetup,
) -> Result<(), ModelError> {
    let problem = |problem: &str| ModelError::Exec {
        name: name.to_owned(),
        problem: problem.to_owned(),
    };
    let exec_keys = m.command.is_some() || m.env.is_some() || m.env_set.is_some();
    if m.provider != ProviderKind::Exec {
        return match exec_keys {
            true => Err(problem(
                "`command`, `env` and `env_set` are for provider = \"exec\"",
            )),
            false => Ok(()),
        };
    }
    if m.base_url.is_some()
        || m.api_key_env.is_some()
        || m.stream
        || m.max_n.is_some()
        || m.max_prompts.is_some()
    {
        return Err(problem(
            "an exec model runs a program: `base_url`, `api_key_env`, `stream`, `max_n` and `max_prompts` do not apply",
        ));
    }
    if m.max_response_bytes.is_some() {
        return Err(problem(
            "`max_response_bytes` caps HTTP bodies; an exec program's stdout has its own cap (16 MiB)",
        ));
    }
    let command = m.command.clone().ok_or_else(|| {
        problem("provider \"exec\" needs `command = [\"program\", \"arg\", ...]`")
    })?;
    let cwd = if config_dir.as_os_str().is_empty() {
        std::env::current_dir()
    } else {
        std::path::absolute(config_dir)
    }
    .map_err(|e| problem(&format!("no working directory: {e}")))?;
    let options = ExecOptions {
        command,
        cwd,
        env: m.env.clone().unwrap_or_default(),
        env_set: m.env_set.clone().unwrap_or_default(),
    };
    options.check().map_err(|e| problem(&e.to_string()))?;
    spec.exec = Some(options);
    spec.timeout_secs = m.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
    // A program that failed once fails alike: no retries unless asked for.
    spec.max_retries = m.max_retries.unwrap_or(0);
    Ok(())
}

impl super::Config {
    /// Where each `command[N]` of model `name` stands in this file, by `N`,
    /// and the file's text, so `harness check` can point into it.
    pub fn command_locations(&self, name: &str) -> (Vec<Location>, String) {
        let Some(path) = self.path.as_deref() else {
            return (Vec::new(), String::new());
        };
        let text =
            crate::files::read_text(path, crate::files::FileKind::Config).unwrap_or_default();
        let count = self
            .models
            .get(name)
            .and_then(|m| m.command.as_ref())
            .map_or(0, Vec::len);
        let locations = match SourceMap::parse(path, &text) {
            Ok(map) => (0..count)
                .map(|i| map.locate(key_path!["models", name, "command", i]))
                .collect(),
            Err(_) => vec![Location::file_start(path); count],
        };
        (locations, text)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::*;

    fn config(text: &str) -> Config {
        let mut config: Config = toml::from_str(text).unwrap();
        config.path = Some("/work/project/harness.toml".into());
        config
    }

    #[test]
    fn exec_models_resolve_with_their_program_and_defaults() {
        let c = config(
            r#"
            [models.ocr]
            provider = "exec"
            command = ["tesseract", "{{ image }}", "-", "-l", "{% if lang == 'ru' %}rus{% else %}eng{% endif %}"]
            env = ["LANG"]
            env_set = { OMP_THREAD_LIMIT = "1" }
            price = { per_call = 0.5 }
            "#,
        );
        for reference in ["ocr", "exec:ocr"] {
            let m = c.resolve_model(reference).unwrap();
            assert_eq!((m.name.as_str(), m.provider), ("ocr", ProviderKind::Exec));
            let exec = m.exec.unwrap();
            assert_eq!(exec.cwd, Path::new("/work/project"));
            assert_eq!(exec.env, ["LANG"]);
            assert_eq!(exec.env_set["OMP_THREAD_LIMIT"], "1");
            assert_eq!((m.timeout_secs, m.max_retries), (DEFAULT_TIMEOUT_SECS, 0));
        }
    }

    #[test]
    fn each_command_argument_is_located_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("harness.toml");
        let text =
            "[models.ocr]\nprovider = \"exec\"\ncommand = [\n  \"ocr\",\n  \"{{ imag }}\",\n]\n";
        std::fs::write(&path, text).unwrap();
        let config = Config::load(&path, true).unwrap();
        let (at, source) = config.command_locations("ocr");
        assert_eq!(source, text);
        let lines: Vec<(usize, usize)> = at.iter().map(|l| (l.line, l.column)).collect();
        assert_eq!(lines, [(4, 3), (5, 3)]);
        assert!(config.command_locations("nope").0.is_empty());
    }

    #[test]
    fn misplaced_or_broken_exec_settings_are_errors() {
        let cases = [
            ("[models.a]\nprovider = \"exec\"\n", "needs `command"),
            (
                "[models.a]\nprovider = \"exec\"\ncommand = []\n",
                "`command` is empty",
            ),
            (
                "[models.a]\nprovider = \"exec\"\ncommand = [\"x\", \"{{ oops\"]\n",
                "`command[1]`, line 1",
            ),
            (
                "[models.a]\nprovider = \"openai\"\ncommand = [\"x\"]\n",
                "are for provider = \"exec\"",
            ),
            (
                "[models.a]\nprovider = \"exec\"\ncommand = [\"x\"]\nbase_url = \"http://h\"\n",
                "do not apply",
            ),
        ];
        for (text, wanted) in cases {
            let e = config(text).resolve_model("a").unwrap_err().to_string();
            assert!(e.contains(wanted), "{text}: {e}");
        }
        let e = config("[models.a]\nprovider = \"openai\"\n")
            .resolve_model("exec:a")
            .unwrap_err()
            .to_string();
        assert!(e.contains("provider = \"exec\""), "{e}");
    }
}
