//! The short fuzz pass CI runs (deterministic: a fixed number of executions from a fixed seed
//! per target), every kept crash input, and the LongMemEval scanner cut at every byte offset.
//! `scripts/fuzz.sh SECONDS` runs the same targets for longer.

use std::path::{Path, PathBuf};

use chrono::Datelike as _;
use memdex_fuzz::targets::{lme_cut, lme_is_valid};
use memdex_fuzz::{fuzz, minimize, run_one, target, Budget, Crash, Target, TARGETS};

/// Executions per target: about two seconds each in a release build. `MEMDEX_FUZZ_SCALE`
/// multiplies them.
fn execs(name: &str) -> u64 {
    let base = match name {
        "jsonl" => 20_000,
        "longmemeval" => 6_000,
        "longmemeval_truncation" => 10_000,
        "locomo" => 4_000,
        "dates" => 100_000,
        "extract" => 30_000,
        "query" => 40_000,
        // a load and one generation of a tiny model per execution
        "gguf" => 300,
        "e5s1" => 1_500,
        "model_dir" => 400,
        "embed_gguf" => 300,
        "store_manifest" => 1_500,
        "store_segment" => 1_000,
        _ => 20_000,
    };
    let scale: f64 = std::env::var("MEMDEX_FUZZ_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    (base as f64 * scale) as u64
}

fn short_pass(name: &str) {
    let t = target(name).unwrap_or_else(|| panic!("no target {name}"));
    let o = fuzz(t, Budget::Execs(execs(name)), 0x5EED, None);
    let report: Vec<String> = o
        .crashes
        .iter()
        .map(|c| {
            format!(
                "{}\n  input: {:?}",
                c.message,
                String::from_utf8_lossy(&c.input)
            )
        })
        .collect();
    assert!(report.is_empty(), "{name}: {}", report.join("\n"));
    assert_eq!(o.execs, execs(name));
    assert!(
        o.corpus > (t.seeds)().len(),
        "{name}: no input behaved in a new way"
    );
}

macro_rules! short {
    ($($name:ident),+) => {$(
        #[test]
        fn $name() {
            short_pass(stringify!($name));
        }
    )+};
}

short!(
    jsonl,
    longmemeval,
    longmemeval_truncation,
    locomo,
    dates,
    extract,
    structures,
    query,
    http_bodies,
    gguf,
    e5s1,
    model_dir,
    embed_gguf,
    store_manifest,
    store_segment,
    model_answer
);

#[test]
fn every_target_has_a_short_pass_and_valid_seeds() {
    let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "jsonl",
            "longmemeval",
            "longmemeval_truncation",
            "locomo",
            "dates",
            "extract",
            "structures",
            "query",
            "http_bodies",
            "gguf",
            "e5s1",
            "model_dir",
            "embed_gguf",
            "store_manifest",
            "store_segment",
            "model_answer"
        ]
    );
    for t in TARGETS {
        for s in (t.seeds)() {
            assert!(
                run_one(t, &s).is_ok(),
                "{}: seed {:?}",
                t.name,
                String::from_utf8_lossy(&s)
            );
        }
    }
}

fn regressions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions")
}

/// Every input that once crashed a target (`regressions/<target>/*`) runs clean.
#[test]
fn kept_crash_inputs_run_clean() {
    let mut n = 0;
    for dir in std::fs::read_dir(regressions()).expect("regressions/") {
        let dir = dir.expect("entry").path();
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        let t = target(&name).unwrap_or_else(|| panic!("regressions/{name}: no such target"));
        for f in std::fs::read_dir(&dir).expect("target dir") {
            let f = f.expect("entry").path();
            let input = std::fs::read(&f).expect("read");
            if let Err(m) = run_one(t, &input) {
                panic!("{}: {m}", f.display());
            }
            n += 1;
        }
    }
    assert!(n >= 12, "{n} kept inputs");
}

#[test]
fn longmemeval_seeds_fail_cleanly_when_cut_at_every_byte() {
    let mut checked = 0;
    for s in memdex_fuzz::seeds::longmemeval() {
        assert!(lme_is_valid(&s), "{}", String::from_utf8_lossy(&s));
        for cut in 0..s.len() {
            lme_cut(&s, cut);
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked}");
}

fn planted(data: &[u8]) -> u64 {
    let v: Option<serde_json::Value> = serde_json::from_slice(data).ok();
    let date = v
        .as_ref()
        .and_then(|v| v.get("date"))
        .and_then(|d| d.as_str());
    if date.is_some_and(|d| d.starts_with('+')) {
        panic!("planted: a signed year");
    }
    u64::from(date.is_some())
}

/// The driver can fail: a bug planted in a harness is found and minimised.
#[test]
fn the_driver_finds_and_minimises_a_planted_crash() {
    let t = Target {
        name: "planted",
        shape: memdex_fuzz::mutate::Shape::Json,
        run: planted,
        seeds: memdex_fuzz::seeds::http_bodies,
    };
    let o = fuzz(&t, Budget::Execs(20_000), 1, None);
    assert_eq!(o.crashes.len(), 1, "{:?}", o.crashes);
    let c: &Crash = &o.crashes[0];
    assert!(
        c.message.contains("planted: a signed year"),
        "{}",
        c.message
    );
    let small = minimize(&t, c, 5_000);
    assert!(small.len() <= c.input.len());
    assert!(run_one(&t, &small).is_err());
    // the smallest such input is `{"date":"+"}`
    assert!(small.len() < 40, "{}", String::from_utf8_lossy(&small));
}

#[test]
fn the_kept_extract_anchor_is_chronos_last_week() {
    // regressions/extract/*: the anchor line is days from the common era
    assert_eq!(chrono::NaiveDate::MAX.num_days_from_ce(), 95_745_399);
}
