//! The update stage on its scenario sets (memdex-testkit fixtures), through the default
//! `memdex index` and `memdex search` with the real MiniLM, one store for all twenty-eight sets:
//! the public knowledge-update and control sets, the everyday ones written before the
//! stage's cue list was read, the fresh ones written after its clause and value rules by
//! someone who read none of them, and the fresh-2 ones written after every rule up to
//! `663f746`, the fresh-3 and fresh-4 ones after the rules of the stage's phase 4, and the
//! fresh-5 and fresh-6 ones after those and some of phase 5, the fresh-7 ones after all of
//! phase 5, the fresh-8, fresh-9 and fresh-10 ones during phase 6, the fresh-11 ones after
//! phase 6 and the fresh-12 ones after phase 7, each by someone who opened no file of the
//! project (`crates/memdex-testkit/fixtures/README.md`).
//!
//! Every set is split by `memdex_testkit::split_half` (FNV-1a of the scenario id) into a
//! tuning half, where rules are developed, and a checking half, where they are judged. The
//! test prints, for each set and each half, the update table (present question: the newer
//! session first; past question: the older one in the top 5 and first) and the control table
//! (the older, right statement first), stage on and off, per relation / kind.
//!
//! Asserted today, on the public sets whole (the bars the stage was built to):
//! * knowledge updates: the newer session above the older one in ≥ 90 % of the present
//!   questions, and the older one in the top 5 of every past question;
//! * controls of tier `stage`: the answer above the related session in ≥ 95 %.
//!
//! The bars on the checking halves (`ENFORCE_CHECKING_BARS`): in each set's checking
//! half, ≥ 85 % of the updates put the newer session at rank 1, every past question finds the
//! older session in its top 5, and ≥ 98 % of the controls of tier `stage` keep the answer at
//! rank 1 (for `repeated-fact`, either session).
//!
//! `MEMDEX_UPDATE_SETS_JSON=FILE` also writes every scenario's ranks to FILE. The ids of the
//! checking halves' failures are printed only with `MEMDEX_SHOW_CHECKING=1`.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memdex_testkit::{
    controls_everyday, controls_fresh, controls_fresh10, controls_fresh11, controls_fresh12,
    controls_fresh2, controls_fresh3, controls_fresh4, controls_fresh5, controls_fresh6,
    controls_fresh7, controls_fresh8, controls_fresh9, knowledge_updates, minilm, ok, split_half,
    update_controls, updates_everyday, updates_fresh, updates_fresh10, updates_fresh11,
    updates_fresh12, updates_fresh2, updates_fresh3, updates_fresh4, updates_fresh5,
    updates_fresh6, updates_fresh7, updates_fresh8, updates_fresh9, Half,
};
use serde_json::{json, Value};

/// Whether the checking-half bars are asserted. False while the stage misses them: the
/// checking halves put the newer session first in 144 of 226 updates and keep 170 of 186
/// controls (`bench/results/update-stage-8-2026-11-29`); every bar is printed each run, and
/// [`CHECKING_FLOORS`] hold meanwhile.
const ENFORCE_CHECKING_BARS: bool = false;
/// What the checking halves of all sets together reach today (updates with the newer
/// session first, tier-`stage` controls kept): a change that loses a held-out update or
/// control fails the test. Raise them, in the same commit, when the stage gains.
const CHECKING_FLOORS: (usize, usize) = (144, 170);
/// Share of a checking half's updates whose present question puts the newer session first.
const UPDATE_BAR: f64 = 0.85;
/// Share of a checking half's tier-`stage` controls whose answer stays first.
const CONTROL_BAR: f64 = 0.98;

fn memdex(model: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memdex"))
        .args(args)
        .env("MEMDEX_MODEL", model)
        .env_remove("MEMDEX_STORE")
        .output()
        .unwrap();
    ok(&out)
}

/// Rank (1-based) of the first hit from each of two sessions (99: not in the top 10).
fn ranks(hits: &Value, a: &str, b: &str) -> (usize, usize) {
    let first = |s: &str| {
        hits.as_array()
            .unwrap()
            .iter()
            .find(|h| h["session_id"] == s)
            .map_or(99, |h| h["rank"].as_u64().unwrap() as usize)
    };
    (first(a), first(b))
}

/// One scenario set: its name in the tables, its tenant prefix, its JSON.
struct Set {
    name: &'static str,
    prefix: &'static str,
    json: Value,
}

impl Set {
    fn scenarios(&self) -> &[Value] {
        self.json["scenarios"].as_array().unwrap()
    }

    fn tenant(&self, sc: &Value) -> String {
        format!("{}-{}", self.prefix, sc["id"].as_str().unwrap())
    }
}

fn update_sets() -> [Set; 14] {
    [
        Set {
            name: "public updates",
            prefix: "u",
            json: knowledge_updates(),
        },
        Set {
            name: "everyday updates",
            prefix: "ue",
            json: updates_everyday(),
        },
        Set {
            name: "fresh updates",
            prefix: "uf",
            json: updates_fresh(),
        },
        Set {
            name: "fresh-2 updates",
            prefix: "uf2",
            json: updates_fresh2(),
        },
        Set {
            name: "fresh-3 updates",
            prefix: "uf3",
            json: updates_fresh3(),
        },
        Set {
            name: "fresh-4 updates",
            prefix: "uf4",
            json: updates_fresh4(),
        },
        Set {
            name: "fresh-5 updates",
            prefix: "uf5",
            json: updates_fresh5(),
        },
        Set {
            name: "fresh-6 updates",
            prefix: "uf6",
            json: updates_fresh6(),
        },
        Set {
            name: "fresh-7 updates",
            prefix: "uf7",
            json: updates_fresh7(),
        },
        Set {
            name: "fresh-8 updates",
            prefix: "uf8",
            json: updates_fresh8(),
        },
        Set {
            name: "fresh-9 updates",
            prefix: "uf9",
            json: updates_fresh9(),
        },
        Set {
            name: "fresh-10 updates",
            prefix: "uf10",
            json: updates_fresh10(),
        },
        Set {
            name: "fresh-11 updates",
            prefix: "uf11",
            json: updates_fresh11(),
        },
        Set {
            name: "fresh-12 updates",
            prefix: "uf12",
            json: updates_fresh12(),
        },
    ]
}

fn control_sets() -> [Set; 14] {
    [
        Set {
            name: "public controls",
            prefix: "c",
            json: update_controls(),
        },
        Set {
            name: "everyday controls",
            prefix: "ce",
            json: controls_everyday(),
        },
        Set {
            name: "fresh controls",
            prefix: "cf",
            json: controls_fresh(),
        },
        Set {
            name: "fresh-2 controls",
            prefix: "cf2",
            json: controls_fresh2(),
        },
        Set {
            name: "fresh-3 controls",
            prefix: "cf3",
            json: controls_fresh3(),
        },
        Set {
            name: "fresh-4 controls",
            prefix: "cf4",
            json: controls_fresh4(),
        },
        Set {
            name: "fresh-5 controls",
            prefix: "cf5",
            json: controls_fresh5(),
        },
        Set {
            name: "fresh-6 controls",
            prefix: "cf6",
            json: controls_fresh6(),
        },
        Set {
            name: "fresh-7 controls",
            prefix: "cf7",
            json: controls_fresh7(),
        },
        Set {
            name: "fresh-8 controls",
            prefix: "cf8",
            json: controls_fresh8(),
        },
        Set {
            name: "fresh-9 controls",
            prefix: "cf9",
            json: controls_fresh9(),
        },
        Set {
            name: "fresh-10 controls",
            prefix: "cf10",
            json: controls_fresh10(),
        },
        Set {
            name: "fresh-11 controls",
            prefix: "cf11",
            json: controls_fresh11(),
        },
        Set {
            name: "fresh-12 controls",
            prefix: "cf12",
            json: controls_fresh12(),
        },
    ]
}

/// A store holding every scenario of the given sets, one tenant each.
struct Store {
    _dir: tempfile::TempDir,
    store: PathBuf,
    model: PathBuf,
}

impl Store {
    fn build(model: PathBuf, sets: &[&Set]) -> Store {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = String::new();
        for set in sets {
            for sc in set.scenarios() {
                for s in sc["sessions"].as_array().unwrap() {
                    let mut s = s.clone();
                    s["tenant"] = set.tenant(sc).into();
                    lines.push_str(&format!("{s}\n"));
                }
            }
        }
        let input = dir.path().join("sessions.jsonl");
        std::fs::write(&input, lines).unwrap();
        let store = dir.path().join("store");
        let (i, s) = (input.to_str().unwrap(), store.to_str().unwrap());
        memdex(&model, &["index", "--input", i, "--store", s]);
        Store {
            _dir: dir,
            store,
            model,
        }
    }

    /// The top 10 of `q` for `tenant`, the stage on (`on`) or off.
    fn search(&self, tenant: &str, q: &str, on: bool) -> Value {
        let store = self.store.to_str().unwrap();
        let mut args = vec!["search", "--store", store, "--tenant", tenant, "--query", q];
        args.extend_from_slice(&["-k", "10", "--json"]);
        if !on {
            args.extend_from_slice(&["--update-window", "0"]);
        }
        serde_json::from_str(&memdex(&self.model, &args)).unwrap()
    }

    /// The ranks of sessions `a` and `b` for `q`, stage on and off.
    fn pair(&self, tenant: &str, q: &str, a: &str, b: &str) -> Pair {
        Pair {
            on: ranks(&self.search(tenant, q, true), a, b),
            off: ranks(&self.search(tenant, q, false), a, b),
        }
    }
}

/// Runs `f` over `items` on two threads (each search is a process), in order.
fn par<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let half = items.len().div_ceil(2);
    std::thread::scope(|s| {
        let parts: Vec<_> = items
            .chunks(half.max(1))
            .map(|c| s.spawn(|| c.iter().map(&f).collect::<Vec<R>>()))
            .collect();
        parts.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

/// Ranks of two sessions for one question, with the stage on and off.
#[derive(Clone, Copy)]
struct Pair {
    on: (usize, usize),
    off: (usize, usize),
}

impl Pair {
    fn get(&self, on: bool) -> (usize, usize) {
        if on {
            self.on
        } else {
            self.off
        }
    }
}

/// One knowledge-update scenario's outcome: (new, old) ranks for both questions.
struct Update {
    id: String,
    relation: String,
    half: Half,
    present: Pair,
    past: Pair,
}

/// One control's outcome: (answer, related) ranks.
struct Control {
    id: String,
    kind: String,
    tier: String,
    half: Half,
    ranks: Pair,
}

impl Control {
    /// The answer first (for `repeated-fact`, either session first).
    fn first(&self, on: bool) -> bool {
        let (a, r) = self.ranks.get(on);
        a == 1 || (self.kind == "repeated-fact" && r == 1)
    }

    /// The answer above the related session (the public set's original criterion).
    fn above(&self, on: bool) -> bool {
        let (a, r) = self.ranks.get(on);
        a < r || (self.kind == "repeated-fact" && a.min(r) == 1)
    }
}

fn run_updates(store: &Store, set: &Set) -> Vec<Update> {
    par(set.scenarios(), |sc| {
        let tenant = set.tenant(sc);
        let (new, old) = (
            sc["new_session"].as_str().unwrap(),
            sc["old_session"].as_str().unwrap(),
        );
        let id = sc["id"].as_str().unwrap();
        Update {
            id: id.to_string(),
            relation: sc["relation"].as_str().unwrap().to_string(),
            half: split_half(id),
            present: store.pair(&tenant, sc["present"].as_str().unwrap(), new, old),
            past: store.pair(&tenant, sc["past"].as_str().unwrap(), new, old),
        }
    })
}

fn run_controls(store: &Store, set: &Set) -> Vec<Control> {
    par(set.scenarios(), |sc| {
        let id = sc["id"].as_str().unwrap();
        let (answer, related) = (
            sc["answer_session"].as_str().unwrap(),
            sc["related_session"].as_str().unwrap(),
        );
        Control {
            id: id.to_string(),
            kind: sc["kind"].as_str().unwrap().to_string(),
            tier: sc["tier"].as_str().unwrap().to_string(),
            half: split_half(id),
            ranks: store.pair(
                &set.tenant(sc),
                sc["question"].as_str().unwrap(),
                answer,
                related,
            ),
        }
    })
}

/// Counts of one table row, each stage off and on.
#[derive(Default, Clone, Copy)]
struct Row {
    n: usize,
    first: [usize; 2],
    above: [usize; 2],
    past_top5: [usize; 2],
    past_first: [usize; 2],
}

impl Row {
    fn add_update(&mut self, u: &Update) {
        self.n += 1;
        for (i, on) in [false, true].into_iter().enumerate() {
            let (n, o) = u.present.get(on);
            let (_, po) = u.past.get(on);
            self.first[i] += usize::from(n == 1);
            self.above[i] += usize::from(n < o);
            self.past_top5[i] += usize::from(po <= 5);
            self.past_first[i] += usize::from(po == 1);
        }
    }

    fn add_control(&mut self, c: &Control) {
        self.n += 1;
        for (i, on) in [false, true].into_iter().enumerate() {
            self.first[i] += usize::from(c.first(on));
            self.above[i] += usize::from(c.above(on));
        }
    }

    fn sum(rows: &BTreeMap<String, Row>) -> Row {
        rows.values().fold(Row::default(), |mut t, r| {
            t.n += r.n;
            for i in 0..2 {
                t.first[i] += r.first[i];
                t.above[i] += r.above[i];
                t.past_top5[i] += r.past_top5[i];
                t.past_first[i] += r.past_first[i];
            }
            t
        })
    }
}

fn pair(c: [usize; 2], n: usize) -> String {
    format!("{:>3}/{n:<3} {:>3}/{n:<3}", c[0], c[1])
}

/// Prints the update table of `items` per relation (off / on in each column) and its total.
fn update_table(title: &str, items: &[&Update]) -> Row {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    items
        .iter()
        .for_each(|u| rows.entry(u.relation.clone()).or_default().add_update(u));
    let total = Row::sum(&rows);
    eprintln!(
        "{title}: {} scenarios; each column stage off, stage on",
        total.n
    );
    eprintln!(
        "{:<14} {:^15} {:^15} {:^15} {:^15}",
        "relation", "newest first", "new above old", "past: old top5", "past: old first"
    );
    for (r, t) in rows.iter().chain([(&"all".to_string(), &total)]) {
        eprintln!(
            "{r:<14} {} {} {} {}",
            pair(t.first, t.n),
            pair(t.above, t.n),
            pair(t.past_top5, t.n),
            pair(t.past_first, t.n)
        );
    }
    total
}

/// Prints the control table of `items` per tier and kind; returns tier `stage`'s total.
fn control_table(title: &str, items: &[&Control]) -> Row {
    let mut tiers: BTreeMap<String, BTreeMap<String, Row>> = BTreeMap::new();
    for c in items {
        let t = tiers.entry(c.tier.clone()).or_default();
        t.entry(c.kind.clone()).or_default().add_control(c);
    }
    eprintln!("{title}: the older, right statement first; each column stage off, stage on");
    for (tier, rows) in &tiers {
        let total = Row::sum(rows);
        eprintln!(
            "{:<24} {:^15} {:^15}",
            format!("tier {tier}"),
            "first",
            "above related"
        );
        for (k, t) in rows.iter().chain([(&"all".to_string(), &total)]) {
            eprintln!("{k:<24} {} {}", pair(t.first, t.n), pair(t.above, t.n));
        }
    }
    tiers.get("stage").map_or_else(Row::default, Row::sum)
}

#[test]
fn the_update_stage_moves_what_was_superseded_and_nothing_else() {
    let Some(model) = minilm("knowledge_updates") else {
        return;
    };
    let (us, cs) = (update_sets(), control_sets());
    let all: Vec<&Set> = us.iter().chain(cs.iter()).collect();
    let store = Store::build(model, &all);
    let updates: Vec<Vec<Update>> = us.iter().map(|s| run_updates(&store, s)).collect();
    let controls: Vec<Vec<Control>> = cs.iter().map(|s| run_controls(&store, s)).collect();
    write_json(&us, &updates, &cs, &controls);
    let mut failures = Vec::new();
    for (set, items) in us.iter().zip(&updates) {
        failures.extend(update_halves(set.name, items));
    }
    for (set, items) in cs.iter().zip(&controls) {
        failures.extend(control_halves(set.name, items));
    }
    eprintln!("checking-half bars: {}", bar_summary(&failures));
    public_bars(&updates[0], &controls[0]);
    let floors = checking_totals(&updates, &controls);
    eprintln!("checking halves, all sets: {floors:?} (floors {CHECKING_FLOORS:?})");
    assert!(
        floors.0 >= CHECKING_FLOORS.0 && floors.1 >= CHECKING_FLOORS.1,
        "checking halves fell below their floors: {floors:?} < {CHECKING_FLOORS:?}"
    );
    if ENFORCE_CHECKING_BARS {
        assert!(
            failures.is_empty(),
            "checking-half bars missed: {failures:#?}"
        );
    }
}

/// The checking halves of all sets: updates whose present question puts the newer session
/// first, and tier-`stage` controls that keep the answer first (stage on).
fn checking_totals(updates: &[Vec<Update>], controls: &[Vec<Control>]) -> (usize, usize) {
    let checking = |h: Half| h == Half::Checking;
    let u = (updates.iter().flatten())
        .filter(|u| checking(u.half) && u.present.on.0 == 1)
        .count();
    let c = (controls.iter().flatten())
        .filter(|c| checking(c.half) && c.tier == "stage" && c.first(true))
        .count();
    (u, c)
}

fn bar_summary(failures: &[String]) -> String {
    match (failures.is_empty(), ENFORCE_CHECKING_BARS) {
        (true, _) => "all met".to_string(),
        (false, true) => format!("{} missed (enforced)", failures.len()),
        (false, false) => format!(
            "{} missed (not enforced yet): {failures:#?}",
            failures.len()
        ),
    }
}

/// The bars the stage was built to, on the public sets whole.
fn public_bars(updates: &[Update], controls: &[Control]) {
    assert!(updates.len() >= 40, "{} scenarios", updates.len());
    let on = updates
        .iter()
        .filter(|u| u.present.on.0 < u.present.on.1)
        .count();
    let misses: Vec<String> = (updates.iter())
        .filter(|u| u.present.on.0 >= u.present.on.1)
        .map(|u| {
            format!(
                "{}: new at {}, old at {}",
                u.id, u.present.on.0, u.present.on.1
            )
        })
        .collect();
    let n = updates.len();
    eprintln!("public updates, whole set: new above old {on}/{n} stage on; misses: {misses:?}");
    assert!(
        on as f64 >= 0.9 * n as f64,
        "new above old in {on} of {n} (< 90 %): {misses:?}"
    );
    assert!(
        updates.iter().all(|u| u.past.on.1 <= 5),
        "a past question lost the older statement"
    );
    let stage: Vec<&Control> = controls.iter().filter(|c| c.tier == "stage").collect();
    let kept = stage.iter().filter(|c| c.above(true)).count();
    let lost: Vec<&str> = (stage.iter().filter(|c| !c.above(true)))
        .map(|c| c.id.as_str())
        .collect();
    let n = stage.len();
    eprintln!(
        "public controls, tier stage: answer above related {kept}/{n} stage on; lost: {lost:?}"
    );
    assert!(n >= 40, "{n} controls of tier stage");
    assert!(
        kept as f64 >= 0.95 * n as f64,
        "kept {kept} of {n} (< 95 %): {lost:?}"
    );
}

/// Whether the ids of `half`'s failures are printed: the tuning half's always, the checking
/// half's only with `MEMDEX_SHOW_CHECKING=1`, so that developing rules on the tuning half does
/// not show which held-out scenarios they miss (its tables by relation and kind are printed).
fn shown(half: Half) -> bool {
    half == Half::Tuning || std::env::var("MEMDEX_SHOW_CHECKING").is_ok_and(|v| v == "1")
}

/// Prints both halves' update tables; returns the checking half's missed bars.
fn update_halves(name: &str, items: &[Update]) -> Vec<String> {
    let mut failures = Vec::new();
    for half in [Half::Tuning, Half::Checking] {
        let part: Vec<&Update> = items.iter().filter(|u| u.half == half).collect();
        let t = update_table(&format!("{name}, {} half", half.name()), &part);
        let misses: Vec<String> = (part.iter())
            .filter(|u| u.present.on.0 != 1)
            .map(|u| {
                format!(
                    "{} (new at {}, old at {})",
                    u.id, u.present.on.0, u.present.on.1
                )
            })
            .collect();
        if shown(half) {
            eprintln!("  present questions without the newer session first: {misses:?}");
        }
        if half == Half::Checking {
            if (t.first[1] as f64) < UPDATE_BAR * t.n as f64 {
                failures.push(format!(
                    "{name}: newest first {}/{} < 85 %",
                    t.first[1], t.n
                ));
            }
            if t.past_top5[1] < t.n {
                failures.push(format!(
                    "{name}: past old in top 5 {}/{}",
                    t.past_top5[1], t.n
                ));
            }
        }
    }
    failures
}

/// Prints both halves' control tables; returns the checking half's missed bar.
fn control_halves(name: &str, items: &[Control]) -> Vec<String> {
    let mut failures = Vec::new();
    for half in [Half::Tuning, Half::Checking] {
        let part: Vec<&Control> = items.iter().filter(|c| c.half == half).collect();
        let t = control_table(&format!("{name}, {} half", half.name()), &part);
        let lost: Vec<String> = (part.iter())
            .filter(|c| c.tier == "stage" && !c.first(true))
            .map(|c| {
                format!(
                    "{} (answer at {}, related at {})",
                    c.id, c.ranks.on.0, c.ranks.on.1
                )
            })
            .collect();
        if shown(half) {
            eprintln!("  tier stage without the answer first, stage on: {lost:?}");
        }
        if half == Half::Checking && (t.first[1] as f64) < CONTROL_BAR * t.n as f64 {
            failures.push(format!("{name}: kept {}/{} < 98 %", t.first[1], t.n));
        }
    }
    failures
}

/// Every scenario's ranks to `MEMDEX_UPDATE_SETS_JSON`, when set.
fn write_json(us: &[Set], updates: &[Vec<Update>], cs: &[Set], controls: &[Vec<Control>]) {
    let Ok(path) = std::env::var("MEMDEX_UPDATE_SETS_JSON") else {
        return;
    };
    let pair = |p: &Pair| json!({"on": [p.on.0, p.on.1], "off": [p.off.0, p.off.1]});
    let mut out = Vec::new();
    for (set, items) in us.iter().zip(updates) {
        out.extend(items.iter().map(|u| {
            json!({"set": set.name, "id": u.id, "relation": u.relation, "half": u.half.name(),
                   "present_new_old": pair(&u.present), "past_new_old": pair(&u.past)})
        }));
    }
    for (set, items) in cs.iter().zip(controls) {
        out.extend(items.iter().map(|c| {
            json!({"set": set.name, "id": c.id, "kind": c.kind, "tier": c.tier,
                   "half": c.half.name(), "answer_related": pair(&c.ranks)})
        }));
    }
    std::fs::write(path, serde_json::to_string_pretty(&out).unwrap()).unwrap();
}
