//! The integration tests, in one binary: `cargo test --test tests`.
//!
//! One module per area; most drive the real `harness` binary in a temp
//! workspace, some call the library directly. Helpers live in `common`: the
//! fake model server (`fake_server`, for fault injection only), the
//! workspace, documents and Parquet files the tests make, the managed-server
//! helpers, and what keeps tests sharing this process from disturbing each
//! other: a lock for the real llama.cpp servers (`locks`) and a process of
//! its own for a test that sets or measures process-wide state (`alone`).
//!
//! - Specs and their loading: `shipped_specs`, `malformed_specs`, `stalls`,
//!   `fuzz_specs` (a seeded mutation fuzzer), `golden_workflow`, `datasets`,
//!   `datasets_hub`, `rrr`, `tools` (tool definitions: `show` and golden instances),
//!   `bfcl` (the BFCL specs' verdicts equal BFCL's checker on every reference answer).
//! - The front door: `front_door` (`harness new`, `harness completions`) and
//!   `main_job` (the README's `harness run specs/`, offline, in a fresh copy).
//! - Past one machine: `shards` (`run --shard`, `merge`, offline in a fresh
//!   copy) and `cluster` (the Slurm example on a real single-node cluster,
//!   the Kubernetes example's manifests and their pods' commands).
//! - The project's own shape: `architecture` (layers, file and function
//!   sizes), `formatting` (every tracked `.rs` file reached by `cargo fmt`
//!   and formatted), `docs` (every documented TOML example is a checked
//!   file) and `self_contained` (nothing reads a path outside the repository).
//! - Bad input and failed requests: `bad_input` (exit 2 with a message,
//!   nothing left behind; the causes of failed requests on the terminal).
//! - Runs against the fake server: `adaptive` (`concurrency = "auto"`
//!   against a rate limit), `provider_wire`, `tool_wire` (tool
//!   calls), `agent` (episodes of `specs/shop_agent.toml`, resume mid-episode),
//!   `tau2_retail` (the τ² retail spec's gold actions pass and wrong ones fail, with `exec` agents), `media` (images), `runner_faults`, `resume_kill`,
//!   `native_wires` (Anthropic, Gemini and OpenAI Responses), `batches`
//!   (`--batch` against the fake OpenAI Batch API, SIGKILL mid-poll), `native_reasoning`
//!   (their reasoning captured, counted, replayed and signed blocks sent back), `openapi_wires`
//!   (request bodies checked against the vendored OpenAI OpenAPI document),
//!   `atomic_writes` (SIGKILL mid-rewrite), `run_errors`, `sampling`,
//!   `judge`, `synth`, `costs` (prices, budgets, `--dry-run`), `reasoning`
//!   (reasoning kept apart from answers, counted, priced, `unfinished_reasoning`
//!   in every report), `reasoning_controls` (reasoning settings on the wire,
//!   `--sweep` and its reports).
//! - Programs as models: `exec` (the fixture program `tests/fixtures/exec/model.py`;
//!   Tesseract on three lines of `datasets/ocr_lines/`, skipped without it).
//! - Model-written code in the sandbox: `code_rule`, `code_parity` (verdicts equal bare
//!   `python3`'s on an honest corpus), `code_values` (every
//!   value the program and its checker exchange), `forgery` (attacks on the
//!   `code` verdict), `unsandboxed` (an empty environment either way, the
//!   confinement on record), `humaneval` (reads `datasets/humaneval/`),
//!   `sandbox_hostile` (in a process of its own).
//! - Closed pipes (`| head -1`, an unread stderr, children that exit unread): `pipes`.
//! - Model text on the terminal: `terminal_escapes`.
//! - Hostile inputs of every kind under a memory cap, one table per area:
//!   `limits`.
//! - Measures beside the pass rate (mean CER and WER per cell and group, a
//!   program answering): `measures`.
//! - Reports from a fixture journal: `reports` (`large_journals_stay_bounded`
//!   is `#[ignore]`d: run it with `--release -- --ignored`); their language
//!   (`--lang`, `[report] language`, the locale): `report_language`.
//! - The HTML report in headless Chromium (`common::browser`, Debian's
//!   `chromium`; skipped without it unless `CI` or `HARNESS_E2E` is set):
//!   `html_report` (the shipped replay, a sampled spec, hostile answers) and
//!   `compare_runs` (`harness report RUN_A RUN_B`).
//! - Managed servers: `managed_vllm` (a Python stand-in for vLLM) and
//!   `managed_llama` (the real llama-server).
//! - End to end against real llama.cpp servers: `e2e_llama`, and
//!   `pool_llama` (two servers of its own in one pool, one killed mid-run).
//!
//! The real-server tests need what `scripts/test.sh` starts and exports;
//! without it they print why and pass, and with `HARNESS_E2E=1` they fail:
//!
//! - `HARNESS_LLAMA_URL`, `HARNESS_LLAMA2_URL`: two SmolLM2-135M llama-servers,
//!   one pool (`e2e_llama`, `e2e_tools`).
//! - `HARNESS_GEMMA_URL`, `HARNESS_GEMMA2_URL`: two Gemma 3 270M llama-servers,
//!   one pool (`e2e_llama`'s golden transcripts, `e2e_tools`).
//! - `HARNESS_JUDGE_URL`, `HARNESS_JUDGE2_URL`: two more SmolLM2 servers, the
//!   judge's pool (`e2e_llama`).
//! - `LLAMA_SERVER_BIN`, `SMOLLM2_MODEL`: the llama-server binary and SmolLM2's
//!   GGUF, for `managed_llama`, `pool_llama` and `reasoning_controls` (a budget sweep)
//!   to start servers of their own.
//! - `SLURM_CONF`: the single-node Slurm cluster's configuration (`cluster`).
//! - `HARNESS_E2E=1`: a missing variable above is a failure, not a skip.
//!
//! Also read: `HARNESS_PYTHON`, the interpreter the sandbox runs Python with
//! (default: the system `python3`), and `HOSTILE_VERBOSE=1`, which prints
//! every hostile snippet's outcome.

mod common;

mod adaptive;
mod agent;
mod agent_user;
mod architecture;
mod atomic_writes;
mod bad_input;
mod batches;
mod bfcl;
mod choices;
mod cluster;
mod code_parity;
mod code_rule;
mod code_values;
mod compare_runs;
mod costs;
mod datasets;
mod datasets_hub;
mod docs;
mod e2e_llama;
mod e2e_tools;
mod exec;
mod forgery;
mod formatting;
mod front_door;
mod fuzz_specs;
mod golden_workflow;
mod html_report;
mod humaneval;
mod judge;
mod limits;
mod main_job;
mod malformed_specs;
mod managed_llama;
mod managed_vllm;
mod mcp;
mod mcp_check;
mod measures;
mod media;
mod native_reasoning;
mod native_wires;
mod ocr;
mod openapi_wires;
mod pipes;
mod pool_llama;
mod provider_wire;
mod reasoning;
mod reasoning_controls;
mod report_language;
mod reports;
mod resume_kill;
mod rrr;
mod run_errors;
mod runner_faults;
mod sampling;
mod sandbox_hostile;
mod self_contained;
mod shards;
mod shipped_specs;
mod stalls;
mod synth;
mod tau2_retail;
mod terminal_escapes;
mod tool_wire;
mod tools;
mod unsandboxed;
/// `harness view`: the viewer of a results folder.
mod view;
mod warm_start;
