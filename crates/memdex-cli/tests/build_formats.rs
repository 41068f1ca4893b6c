//! One build path for every input format: the same sessions as a LongMemEval file and as
//! JSONL, built by `memdex index` with the same `--key-roles` and TiM hashing (`--lsh-*`,
//! `--lsh-device`), give stores with the same items, keys and bucket ids; and the benchmark
//! format honours `--key-roles` (its default keys user turns only); `memdex info` digests the
//! bucket ids so that two stores' ids compare in one number.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use memdex_store::Store;
use memdex_testkit::{memdex, ok};
use serde_json::{json, Value};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_memdex")
}

/// Two LongMemEval instances (one session each, plus one shared), and the same sessions
/// as JSONL (the tenant is the question id).
fn inputs(dir: &Path) -> (String, String) {
    let turn = |role: &str, content: &str| json!({"role": role, "content": content});
    let session = |a: &str, b: &str| {
        vec![
            turn("user", a),
            turn("assistant", b),
            turn("user", "Thanks, that helps."),
            turn("assistant", "Anytime."),
        ]
    };
    let instances: Vec<Value> = ["q1", "q2"]
        .iter()
        .map(|q| {
            json!({
                "question_id": q, "question_type": "single-session-user",
                "question": "Where does my sister live?", "answer": "Lisbon",
                "question_date": "2023/06/01 (Thu) 10:00",
                "haystack_session_ids": [format!("{q}-a"), format!("{q}-b")],
                "haystack_dates": ["2023/05/01 (Mon) 10:00", "2023/05/20 (Sat) 10:00"],
                "haystack_sessions": [
                    session("My sister lives in Porto.", "Lovely city."),
                    session("My sister moved to Lisbon.", "Exciting news!"),
                ],
                "answer_session_ids": [format!("{q}-b")],
            })
        })
        .collect();
    let lme = dir.join("lme.json");
    std::fs::write(&lme, serde_json::to_string(&instances).unwrap()).unwrap();
    let mut lines = String::new();
    for inst in &instances {
        for (i, s) in inst["haystack_sessions"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let line = json!({
                "tenant": inst["question_id"], "session_id": inst["haystack_session_ids"][i],
                "date": inst["haystack_dates"][i], "turns": s,
            });
            lines.push_str(&format!("{line}\n"));
        }
    }
    let jsonl = dir.join("sessions.jsonl");
    std::fs::write(&jsonl, lines).unwrap();
    (lme.display().to_string(), jsonl.display().to_string())
}

/// Every live row of `store`: (tenant, session, turn, key, bucket ids).
fn rows(store: &Path) -> Vec<(String, String, u32, String, Vec<u16>)> {
    let store = Store::open(store).unwrap();
    let mut out = Vec::new();
    for tenant in store.tenants().keys() {
        for slice in store.tenant_slices(tenant) {
            let lsh = slice.lsh_buckets();
            for i in 0..slice.rows {
                let it = slice.item(i);
                let ids = lsh.map_or(Vec::new(), |(ids, t)| ids[i * t..(i + 1) * t].to_vec());
                out.push((
                    tenant.to_string(),
                    it.session_id.to_string(),
                    it.turn,
                    it.key.to_string(),
                    ids,
                ));
            }
        }
    }
    out
}

fn index(input: &str, format: &str, store: &Path, extra: &[&str]) {
    let store = store.to_str().unwrap();
    let args = [
        "index", "--input", input, "--format", format, "--store", store,
    ];
    ok(&memdex(bin(), &[&args[..], extra].concat()));
}

#[test]
fn every_format_is_built_with_the_same_options() {
    let dir = tempfile::tempdir().unwrap();
    let (lme, jsonl) = inputs(dir.path());
    let hashing = [
        "--lsh-buckets",
        "8",
        "--lsh-tables",
        "3",
        "--lsh-device",
        "auto",
    ];
    for roles in ["all", "user"] {
        let opts = [&["--key-roles", roles][..], &hashing[..]].concat();
        let (a, b) = (
            dir.path().join(format!("lme-{roles}")),
            dir.path().join(format!("jsonl-{roles}")),
        );
        index(&lme, "longmemeval", &a, &opts);
        index(&jsonl, "jsonl", &b, &opts);
        let (ra, rb) = (rows(&a), rows(&b));
        assert_eq!(ra.len(), 8, "{ra:?}");
        assert_eq!(ra, rb, "--key-roles {roles}: the formats' stores differ");
        assert!(
            ra.iter().all(|r| r.4.len() == 3),
            "bucket ids on every row: {ra:?}"
        );
    }
    // the benchmark format honours --key-roles: `all` keys hold the assistant's words
    let all = rows(&dir.path().join("lme-all"));
    let user = rows(&dir.path().join("lme-user"));
    assert!(all.iter().any(|r| r.3.contains("Lovely city")), "{all:?}");
    assert!(
        user.iter().all(|r| !r.3.contains("Lovely city")),
        "{user:?}"
    );
    // --lsh-device cpu gives the bucket ids auto gives (on a CPU model both hash on the CPU)
    let c = dir.path().join("lme-cpu");
    let cpu = [
        &["--key-roles", "all"][..],
        &hashing[..4],
        &["--lsh-device", "cpu"][..],
    ]
    .concat();
    index(&lme, "longmemeval", &c, &cpu);
    assert_eq!(rows(&c), all);

    // `memdex info`'s digest of the bucket ids: equal exactly when the ids are
    let lsh = |store: &Path| -> Value {
        let out = ok(&memdex(
            bin(),
            &["info", "--store", store.to_str().unwrap(), "--json"],
        ));
        serde_json::from_str::<Value>(&out).unwrap()["lsh"].clone()
    };
    let (d_all, d_cpu) = (lsh(&dir.path().join("lme-all")), lsh(&c));
    assert_eq!(
        (d_all["tables"].as_u64(), d_all["rows"].as_u64()),
        (Some(3), Some(8))
    );
    assert_eq!(d_all, d_cpu, "the same ids, the same digest");
    assert_eq!(d_all, lsh(&dir.path().join("jsonl-all")));
    let d_user = lsh(&dir.path().join("lme-user"));
    let ids = |r: &[(String, String, u32, String, Vec<u16>)]| -> Vec<Vec<u16>> {
        r.iter().map(|x| x.4.clone()).collect()
    };
    assert_eq!(
        ids(&all) == ids(&user),
        d_all == d_user,
        "the digest follows the ids: {d_all} / {d_user}"
    );
    let plain = dir.path().join("plain");
    index(&lme, "longmemeval", &plain, &[]);
    assert!(lsh(&plain).is_null(), "no hashing, no digest");

    // --lsh-ids writes the ids themselves, in the digest's order
    let dump = |store: &Path, name: &str| {
        let path = dir.path().join(name);
        let args = [
            "info",
            "--store",
            store.to_str().unwrap(),
            "--lsh-ids",
            path.to_str().unwrap(),
        ];
        (memdex(bin(), &args), path)
    };
    let (out, path) = dump(&dir.path().join("lme-all"), "all.ids");
    ok(&out);
    let bytes = std::fs::read(path).unwrap();
    let want: Vec<u8> = (all.iter())
        .flat_map(|r| r.4.iter().flat_map(|id| id.to_le_bytes()))
        .collect();
    assert_eq!(bytes, want, "every row's ids, u16 little-endian");
    let (out, _) = dump(&plain, "plain.ids");
    assert!(!out.status.success(), "a store without ids is an error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no bucket ids"));
}
