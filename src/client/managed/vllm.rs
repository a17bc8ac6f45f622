//! vLLM's OpenAI-compatible server (`vllm serve`): binary and arguments.

use std::path::PathBuf;

use super::{
    ManagedError, ServerOptions, find_on_path, on_loopback, push_flag, with_template_and_extra,
};
use crate::provider::ModelSetup;

/// The command's file name.
pub(super) const BINARY: &str = "vllm";

/// The readiness endpoint: it lists the model once the engine serves it.
pub(super) const READY_PATH: &str = "/v1/models";

/// Variables the server keeps although they look like secrets: vLLM downloads
/// gated models from the Hugging Face hub with them.
pub(super) const KEEP_ENV: &[&str] = &["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"];

/// The command: `binary` from the config, else `vllm` on `PATH`.
pub(super) fn find_binary(options: &ServerOptions) -> Result<PathBuf, ManagedError> {
    if let Some(configured) = &options.binary {
        return Ok(configured.clone());
    }
    find_on_path(BINARY).ok_or(ManagedError::BinaryNotFound {
        binary: BINARY,
        searched: "`binary` in harness.toml, PATH".into(),
    })
}

/// `serve MODEL ...` for `spec` on `port`: the model is served under its own
/// id (`--served-model-name`), so requests name it as the plan does; one
/// sequence per request in flight (`--max-num-seqs`, times `max_n`), and
/// `ctx_size` is the per-sequence `--max-model-len`.
pub(super) fn args(setup: &ModelSetup, options: &ServerOptions, port: u16) -> Vec<String> {
    let mut args = on_loopback(["serve".into(), setup.model.clone()], port);
    let seqs = options.slots(setup).to_string();
    args.extend([
        "--served-model-name".into(),
        setup.model.clone(),
        "--max-num-seqs".into(),
        seqs,
    ]);
    push_flag(&mut args, "--max-model-len", options.ctx_size);
    let memory = options.gpu_memory_utilization;
    push_flag(&mut args, "--gpu-memory-utilization", memory);
    with_template_and_extra(args, "--chat-template", options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderKind;

    #[test]
    fn arguments_follow_the_options() {
        let spec = ModelSetup::new(ProviderKind::Vllm, "Qwen/Qwen2.5-0.5B-Instruct");
        let options = ServerOptions {
            ctx_size: Some(2048),
            gpu_memory_utilization: Some(0.9),
            extra_args: vec!["--dtype".into(), "half".into()],
            ..ServerOptions::default()
        };
        assert_eq!(
            args(&spec, &options, 8001).join(" "),
            "serve Qwen/Qwen2.5-0.5B-Instruct --host 127.0.0.1 --port 8001 \
             --served-model-name Qwen/Qwen2.5-0.5B-Instruct --max-num-seqs 4 \
             --max-model-len 2048 --gpu-memory-utilization 0.9 --dtype half"
        );
    }
}
