//! llama.cpp's `llama-server`: where the binary is and what arguments it gets.

use std::path::{Path, PathBuf};

use super::{
    ManagedError, ServerOptions, find_on_path, on_loopback, push_flag, with_template_and_extra,
};
use crate::provider::ModelSetup;

/// The binary's file name.
pub(super) const BINARY: &str = "llama-server";

/// Context tokens per slot when `ctx_size` is unset. Not the model's own
/// (possibly 128k) window: that would allocate gigabytes of KV cache per slot.
pub(super) const DEFAULT_CTX_PER_SLOT: u32 = 4096;

/// The readiness endpoint: 503 while the model loads, 200 when it serves.
pub(super) const READY_PATH: &str = "/health";

/// The binary: `binary` from the config, else `llama-server` on `PATH`, else the
/// newest build the test setup caches (`scripts/llama-server.sh`):
/// `$HARNESS_CACHE_DIR/llama-server-<version>/bin/llama-server`, where
/// `HARNESS_CACHE_DIR` defaults to `~/.cache/harness`.
pub(super) fn find_binary(options: &ServerOptions) -> Result<PathBuf, ManagedError> {
    if let Some(configured) = &options.binary {
        return Ok(configured.clone());
    }
    if let Some(found) = find_on_path(BINARY) {
        return Ok(found);
    }
    let cache = cache_dir();
    if let Some(found) = cache.as_deref().and_then(newest_cached) {
        return Ok(found);
    }
    Err(ManagedError::BinaryNotFound {
        binary: BINARY,
        searched: format!(
            "`binary` in harness.toml, PATH, {}",
            cache.map_or_else(
                || "$HARNESS_CACHE_DIR (unset, no HOME)".to_owned(),
                |c| format!("{}/llama-server-*/bin/", c.display())
            )
        ),
    })
}

fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os("HARNESS_CACHE_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/harness")),
    }
}

/// `<cache>/llama-server-<version>/bin/llama-server` with the highest version.
fn newest_cached(cache: &Path) -> Option<PathBuf> {
    let version_of = |name: &str| -> Option<Vec<u64>> {
        let v = name.strip_prefix("llama-server-")?;
        v.split('.').map(|p| p.parse().ok()).collect()
    };
    std::fs::read_dir(cache)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let bin = e.path().join("bin").join(BINARY);
            Some((version_of(&name)?, bin))
        })
        .filter(|(_, bin)| bin.is_file())
        .max()
        .map(|(_, bin)| bin)
}

/// The arguments for `spec` on `port`. `-np` defaults to the model's requests
/// in flight times `max_n` (each choice of an `n` request takes a slot), and
/// `-c` is `ctx_size` per slot times the slots, since llama-server splits its
/// context among them.
pub(super) fn args(setup: &ModelSetup, options: &ServerOptions, port: u16) -> Vec<String> {
    let slots = options.slots(setup);
    let ctx = u64::from(options.ctx_size.unwrap_or(DEFAULT_CTX_PER_SLOT)) * u64::from(slots);
    let mut args = on_loopback(["--model".into(), setup.model.clone()], port);
    args.extend([
        // Responses name the model as reports do, not by its path.
        "--alias".into(),
        setup.name.clone(),
        "--parallel".into(),
        slots.to_string(),
        "--ctx-size".into(),
        ctx.to_string(),
    ]);
    push_flag(&mut args, "--threads", options.threads);
    with_template_and_extra(args, "--chat-template-file", options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderKind;

    #[test]
    fn arguments_follow_the_options() {
        let mut spec = ModelSetup::new(ProviderKind::LlamaCpp, "/m/smol.gguf");
        spec.name = "smol".into();
        spec.concurrency = 2;
        spec.max_n = 3;
        let options = ServerOptions {
            ctx_size: Some(1024),
            threads: Some(1),
            chat_template: Some("/t/chat.jinja".into()),
            extra_args: vec!["--seed".into(), "1".into()],
            ..ServerOptions::default()
        };
        let args = args(&spec, &options, 4321).join(" ");
        assert_eq!(
            args,
            "--model /m/smol.gguf --host 127.0.0.1 --port 4321 --alias smol --parallel 6 \
             --ctx-size 6144 --threads 1 --chat-template-file /t/chat.jinja --seed 1"
        );
        let explicit = ServerOptions {
            parallel: Some(1),
            ..ServerOptions::default()
        };
        assert!(
            super::args(&spec, &explicit, 1)
                .join(" ")
                .contains("--parallel 1 --ctx-size 4096")
        );
    }

    #[test]
    fn the_newest_cached_build_wins() {
        let dir = tempfile::tempdir().unwrap();
        for version in ["9.0.0", "11434.0.0", "100.0.0"] {
            let bin = dir.path().join(format!("llama-server-{version}/bin"));
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(bin.join(BINARY), "").unwrap();
        }
        std::fs::create_dir_all(dir.path().join("llama-server-99999.0.0/bin")).unwrap();
        assert_eq!(
            newest_cached(dir.path()).unwrap(),
            dir.path().join("llama-server-11434.0.0/bin/llama-server")
        );
    }
}
