//! `memdex eval` against the independent Python implementation of the metrics
//! (`scripts/eval_crosscheck.py`), and `memdex synth` determinism.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn memdex(args: &[&str]) -> std::process::Output {
    let out = memdex_testkit::memdex(env!("CARGO_BIN_EXE_memdex"), args);
    memdex_testkit::ok(&out);
    out
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

fn crosscheck(input: &Path, format: &str, granularity: &str, retriever: &str, tmp: &Path) {
    crosscheck_with(input, format, granularity, retriever, &[], tmp)
}

fn crosscheck_with(
    input: &Path,
    format: &str,
    granularity: &str,
    retriever: &str,
    extra: &[&str],
    tmp: &Path,
) {
    let log = tmp.join(format!("{format}-{granularity}-{retriever}.log.jsonl"));
    let mut args = vec![
        "eval",
        "--input",
        input.to_str().unwrap(),
        "--format",
        format,
        "--granularity",
        granularity,
        "--retriever",
        retriever,
        "--k",
        "1,3,5,10",
        "--json",
        "--log",
        log.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = memdex(&args);
    let report = tmp.join(format!("{format}-{granularity}-{retriever}.json"));
    std::fs::write(&report, &out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["questions"].as_u64().unwrap() > 0);
    let check = Command::new(python())
        .arg(root().join("scripts/eval_crosscheck.py"))
        .arg(&log)
        .args(["--k", "1,3,5,10", "--compare"])
        .arg(&report)
        .args(["--tol", "1e-9"])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{format}/{granularity}/{retriever}: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn metrics_agree_with_independent_python_implementation() {
    let tmp = tempfile::tempdir().unwrap();
    let locomo = root().join("crates/memdex-cli/tests/fixtures/locomo-mini.json");
    let synth = tmp.path().join("synth.json");
    memdex(&[
        "synth",
        "--output",
        synth.to_str().unwrap(),
        "--questions",
        "12",
        "--sessions",
        "9",
        "--pool",
        "25",
        "--seed",
        "3",
    ]);
    for (input, format) in [(&locomo, "locomo"), (&synth, "longmemeval")] {
        for granularity in ["turn", "session"] {
            for retriever in ["dense", "bm25", "hybrid"] {
                crosscheck(input, format, granularity, retriever, tmp.path());
            }
        }
    }
    // with FragRel environment scores on top
    crosscheck_with(
        &locomo,
        "locomo",
        "turn",
        "hybrid",
        &[
            "--fragrel-alpha",
            "0.5",
            "--fragrel-w",
            "0.5",
            "--bm25",
            "memdex",
        ],
        tmp.path(),
    );
}

#[test]
fn locomo_fixture_counts_and_skips() {
    let locomo = root().join("crates/memdex-cli/tests/fixtures/locomo-mini.json");
    let out = memdex(&[
        "eval",
        "--input",
        locomo.to_str().unwrap(),
        "--format",
        "locomo",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // 9 questions: one without evidence, one whose only id names no turn
    assert_eq!(v["questions"], 7);
    assert_eq!(v["skipped"]["no usable evidence"], 2);
    assert!(v["by_type"]["multi-hop"]["turn"]["recall_all@5"].is_number());
    let turn = &v["levels"]["turn"];
    for k in [1, 3, 5, 10, 30, 50] {
        let any = turn[format!("recall_any@{k}")].as_f64().unwrap();
        let all = turn[format!("recall_all@{k}")].as_f64().unwrap();
        assert!(all <= any && (0.0..=1.0).contains(&any));
    }
    assert_eq!(
        turn["recall_any@50"], 1.0,
        "every corpus is smaller than 50 turns"
    );
}

/// `memdex eval --json` on the LoCoMo fixture (`--preset default` unless `extra` names one).
fn eval_locomo_mini(extra: &[&str]) -> serde_json::Value {
    let locomo = root().join("crates/memdex-cli/tests/fixtures/locomo-mini.json");
    let mut args = vec![
        "eval",
        "--input",
        locomo.to_str().unwrap(),
        "--format",
        "locomo",
        "--json",
    ];
    if !extra.contains(&"--preset") {
        args.extend_from_slice(&["--preset", "default"]);
    }
    args.extend_from_slice(extra);
    serde_json::from_slice(&memdex(&args).stdout).unwrap()
}

/// Every metric of report `b` within 0.002 of report `a`'s.
fn assert_metrics_close(a: &serde_json::Value, b: &serde_json::Value) {
    for (level, metrics) in a["levels"].as_object().unwrap() {
        for (m, x) in metrics.as_object().unwrap() {
            let y = b["levels"][level][m].as_f64().unwrap();
            assert!(
                (x.as_f64().unwrap() - y).abs() <= 0.002,
                "{level} {m}: {x} vs {y}"
            );
        }
    }
}

/// The report records the whole ranking configuration: two runs that differ in one stage
/// (here the time stage, which the old hand-built config left out) record different configs.
#[test]
fn reports_record_every_stage() {
    let run = eval_locomo_mini;
    let front = run(&[]);
    let off = run(&["--time", "off"]);
    let rank = &front["config"]["rank"];
    assert_eq!(rank["retriever"], "hybrid", "{rank}");
    assert_eq!(rank["time"]["mode"]["kind"], "front");
    assert_eq!(rank["fragrel"]["alpha"], 0.5);
    assert!(off["config"]["rank"]["time"].is_null());
    assert_ne!(front["config"], off["config"]);
    assert_eq!(
        front["config"]["run"]["index"]["sessions_indexed"], 5,
        "{}",
        front["config"]
    );
    // `--preset default` indexes as `memdex index` does by default (facts and events on);
    // `--preset dense` as the reference baselines (no facts); the report says which
    let extraction = &front["config"]["run"]["extraction"];
    assert!(extraction["facts"].is_string(), "{extraction}");
    assert_eq!(extraction["events"], true);
    let dense = run(&["--preset", "dense"]);
    assert!(dense["config"]["run"]["extraction"]["facts"].is_null());
    let forced = run(&["--facts", "false"]);
    assert!(forced["config"]["run"]["extraction"]["facts"].is_null());
}

/// `--device-scan on` scores every question's dense stage in batches through the model's
/// device scorer (candle's batched products here on the CPU; CUDA on a GPU box) instead of
/// one CPU call per question: the same rankings, the same metrics, and the report says which.
#[test]
fn batched_device_scan_ranks_as_the_cpu_scorer() {
    let tmp = tempfile::tempdir().unwrap();
    let locomo = root().join("crates/memdex-cli/tests/fixtures/locomo-mini.json");
    let run = |scan: &str| -> (serde_json::Value, Vec<serde_json::Value>) {
        let log = tmp.path().join(format!("{scan}.jsonl"));
        let out = memdex(&[
            "eval",
            "--input",
            locomo.to_str().unwrap(),
            "--format",
            "locomo",
            "--preset",
            "default",
            "--device-scan",
            scan,
            "--json",
            "--log",
            log.to_str().unwrap(),
        ]);
        let lines = std::fs::read_to_string(&log).unwrap();
        let lines = lines.lines().map(|l| serde_json::from_str(l).unwrap());
        (
            serde_json::from_slice(&out.stdout).unwrap(),
            lines.collect(),
        )
    };
    let (cpu, cpu_log) = run("off");
    let (dev, dev_log) = run("on");
    assert_eq!(cpu["config"]["ranker"], "cpu");
    assert_eq!(dev["config"]["ranker"], "cpu, dense scores on candle-cpu");
    assert_eq!(cpu_log.len(), dev_log.len());
    assert!(!cpu_log.is_empty());
    for (a, b) in cpu_log.iter().zip(&dev_log) {
        let top = |v: &serde_json::Value| -> Vec<(String, f64)> {
            v["ranked"].as_array().unwrap()[..10.min(v["ranked"].as_array().unwrap().len())]
                .iter()
                .map(|r| {
                    (
                        r["id"].as_str().unwrap().to_string(),
                        r["score"].as_f64().unwrap(),
                    )
                })
                .collect()
        };
        let (ta, tb) = (top(a), top(b));
        for ((ia, sa), (ib, sb)) in ta.iter().zip(&tb) {
            assert!(
                (sa - sb).abs() < 1e-4,
                "{}: {ia} {sa} vs {ib} {sb}",
                a["question_id"]
            );
            // ids may swap only between near-equal scores
            assert!(
                ia == ib || (sa - sb).abs() < 1e-4,
                "{}: {ta:?} vs {tb:?}",
                a["question_id"]
            );
        }
    }
    assert_metrics_close(&cpu, &dev);
}

/// `--rank-device kernels` ranks every question through the accelerated ranker (here on the
/// kernels' CPU reference), and `--rank-check` compares its top-10 with the CPU ranker's.
#[test]
fn kernel_ranking_evaluates_as_the_cpu_ranker() {
    let locomo = root().join("crates/memdex-cli/tests/fixtures/locomo-mini.json");
    let cpu = eval_locomo_mini(&["--device", "cpu", "--rank-device", "cpu"]);
    let fused = eval_locomo_mini(&[
        "--device",
        "cpu",
        "--rank-device",
        "kernels",
        "--rank-check",
    ]);
    assert_eq!(cpu["config"]["ranker"], "cpu");
    assert_eq!(fused["config"]["ranker"], "kernels on cpu");
    assert!(
        fused["config"]["rank_batches"]["kernels:cpu"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(fused["config"]["rank_batches"]["cpu"], 0);
    assert_eq!(cpu["questions"], fused["questions"]);
    // the top-10 check: the kernels' reference against the CPU ranker, per question
    let check = &fused["agreement"];
    assert!(check["queries"].as_u64().unwrap() > 0);
    assert_eq!(check["different"], 0, "{check}");
    assert_metrics_close(&cpu, &fused);
    // options the kernel does not run go to the CPU ranker the accelerated one holds
    let out = memdex(&[
        "eval",
        "--input",
        locomo.to_str().unwrap(),
        "--format",
        "locomo",
        "--preset",
        "dense",
        "--device",
        "cpu",
        "--rank-device",
        "kernels",
        "--json",
    ]);
    let dense: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(dense["config"]["rank_batches"]["kernels:cpu"], 0);
    assert!(dense["config"]["rank_batches"]["cpu"].as_u64().unwrap() > 0);
}

#[test]
fn synth_is_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a.json");
    let b = tmp.path().join("b.json");
    for p in [&a, &b] {
        memdex(&[
            "synth",
            "--output",
            p.to_str().unwrap(),
            "--questions",
            "5",
            "--sessions",
            "6",
            "--pool",
            "10",
        ]);
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}
