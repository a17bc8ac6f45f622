//! The shipped cluster examples, each against the unsharded run of the
//! shipped specs (replayed offline in a fresh copy of the repository):
//!
//! - `examples/slurm/`: submitted with `submit.sh` to the real single-node
//!   Slurm cluster `scripts/test.sh` starts (`scripts/slurm-cluster.sh`,
//!   `SLURM_CONF`): a 4-task array, then the merge job `afterok` it.
//! - `examples/k8s/`: the Indexed Job and merge Job manifests parsed, checked
//!   for what makes them work (indexed completions matching `--shard auto/N`,
//!   one volume for results), and their containers' commands run here, once
//!   per completion index, as the Job controller would.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{e2e_var, fresh_copy, harness, run};
use crate::shards::{report_numbers, verdicts};

/// The unsharded run of the shipped specs in `repo`, as `runs/whole`.
fn whole_run(repo: &Path) {
    let (code, out) = run(harness(repo).args(["run", "--no-progress", "--run-id", "whole"]));
    assert_eq!(code, 0, "{out}");
}

/// The merged run at `merged` (a run directory under `results`) equals `runs/whole`.
fn assert_equals_whole(repo: &Path, merged: &Path, results: &Path) {
    let whole = verdicts(&repo.join("results/runs/whole/journal.jsonl"));
    let merged_verdicts = verdicts(&merged.join("journal.jsonl"));
    assert_eq!(merged_verdicts.len(), whole.len());
    for (key, verdict) in &whole {
        assert_eq!(merged_verdicts.get(key), Some(verdict), "{key}");
    }
    assert_eq!(
        report_numbers(results, ".md"),
        report_numbers(&repo.join("results"), ".md")
    );
}

/// A directory holding only an executable `harness`: the binary under test.
fn harness_on_path(dir: &Path) -> String {
    fs::create_dir_all(dir).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_harness"), dir.join("harness")).unwrap();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn the_slurm_example_runs_an_array_of_shards_and_a_merge_equal_to_one_run() {
    let Some(conf) = e2e_var("SLURM_CONF") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let repo = fresh_copy(tmp.path());
    whole_run(&repo);
    let out = Command::new(repo.join("examples/slurm/submit.sh"))
        .arg("4")
        .current_dir(&repo)
        .env("SLURM_CONF", &conf)
        .env("WAIT", "1")
        .env("HARNESS", env!("CARGO_BIN_EXE_harness"))
        .env("NO_COLOR", "1")
        // The jobs' reports are compared with `harness()`'s, which runs in English.
        .env("LANG", "C")
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .output()
        .expect("submit.sh runs");
    let logs: String = fs::read_dir(&repo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("slurm-")
        })
        .map(|p| format!("== {}\n{}", p.display(), fs::read_to_string(&p).unwrap()))
        .collect();
    let said = format!(
        "{}{}\n{logs}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    let array = said
        .lines()
        .find_map(|l| l.strip_prefix("shards: job "))
        .and_then(|l| l.split_whitespace().next())
        .expect("submit.sh names the array job")
        .to_owned();
    for i in 0..4 {
        let dir = repo.join(format!("results/shard-{i}/runs/job{array}-shard-{i}-of-4"));
        assert!(
            dir.join("journal.jsonl").is_file(),
            "{}: {said}",
            dir.display()
        );
    }
    let merged = repo.join(format!("results/runs/job{array}"));
    assert!(merged.join("plan.json").is_file(), "{said}");
    assert_equals_whole(&repo, &merged, &repo.join("results"));
}

/// Every YAML document in `path`, as JSON values.
fn documents(path: &Path) -> Vec<Value> {
    let text = fs::read_to_string(path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .collect()
}

/// The container's command as one shell line: `sh -c` and its script.
fn shell_line(container: &Value) -> String {
    let words: Vec<&str> = container["command"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(container["args"].as_array().into_iter().flatten())
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(&words[..2], ["sh", "-c"], "{container}");
    words[2].to_owned()
}

#[test]
fn the_kubernetes_example_is_an_indexed_job_whose_pods_merge_into_one_run() {
    let dir = crate::common::root().join("examples/k8s");
    let shards = documents(&dir.join("harness-shards.yaml"));
    let merge = documents(&dir.join("harness-merge.yaml"));
    let job = shards
        .iter()
        .find(|d| d["kind"] == "Job")
        .expect("an Indexed Job");
    let claim = shards
        .iter()
        .find(|d| d["kind"] == "PersistentVolumeClaim")
        .expect("a volume for the results");
    assert_eq!(job["apiVersion"], "batch/v1");
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    let completions = job["spec"]["completions"].as_u64().unwrap();
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let shard_line = shell_line(&pod["containers"][0]);
    assert!(
        shard_line.contains(&format!("--shard auto/{completions}")),
        "the shard count is the Job's completions: {shard_line}"
    );
    let claim_name = claim["metadata"]["name"].as_str().unwrap();
    assert_eq!(merge.len(), 1);
    let merge_pod = &merge[0]["spec"]["template"]["spec"];
    for spec in [pod, merge_pod] {
        assert_eq!(
            spec["volumes"][0]["persistentVolumeClaim"]["claimName"],
            claim_name
        );
        assert_eq!(
            spec["containers"][0]["volumeMounts"][0]["mountPath"],
            "/results"
        );
    }
    let merge_line = shell_line(&merge_pod["containers"][0]);

    // What the Job controller does, here: each index's pod, then the merge pod.
    let tmp = tempfile::tempdir().unwrap();
    let repo = fresh_copy(tmp.path());
    whole_run(&repo);
    let volume = tmp.path().join("volume");
    let path = harness_on_path(&tmp.path().join("bin"));
    let in_pod = |line: &str, index: Option<u64>| {
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(line.replace("/results", &volume.display().to_string()))
            .current_dir(&repo)
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .env("LANG", "C")
            .env_remove("LC_ALL")
            .env_remove("LC_MESSAGES");
        if let Some(i) = index {
            sh.env("JOB_COMPLETION_INDEX", i.to_string());
        }
        run(&mut sh)
    };
    for i in 0..completions {
        let (code, out) = in_pod(&shard_line, Some(i));
        assert_eq!(code, 0, "pod {i}: {out}");
    }
    let (code, out) = in_pod(&merge_line, None);
    assert_eq!(code, 0, "merge: {out}");
    assert_equals_whole(&repo, &volume.join("runs/job1"), &volume);
}
