//! `memdex-fuzz [--seconds N] [--seed S] [--target NAME]... [--out DIR]`: fuzzes every target
//! (or the named ones) for N seconds each; crashes, minimised, go to DIR/<target>/. Exits 1
//! when any target crashed, 2 when an input ran for over a minute (a hang; it is saved too).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use memdex_fuzz::{fuzz, minimize, target, Budget, Target, Watch, TARGETS};

const USAGE: &str =
    "usage: memdex-fuzz [--seconds N] [--seed S] [--target NAME]... [--out DIR] | --list\n\
  fuzzes every target (or the named ones) for N seconds each; crashes, minimised, go to\n\
  DIR/<target>/ (default target/fuzz-crashes); exit 1 on a crash, 2 on a hang";

fn save(dir: &std::path::Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let p = dir.join(name);
    std::fs::write(&p, bytes).with_context(|| format!("writing {}", p.display()))?;
    Ok(p)
}

fn main() -> Result<()> {
    let mut seconds = 60u64;
    let mut seed = 1u64;
    let mut names: Vec<String> = Vec::new();
    let mut out = PathBuf::from("target/fuzz-crashes");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--seconds" => seconds = value()?.parse().context("--seconds")?,
            "--seed" => seed = value()?.parse().context("--seed")?,
            "--target" => names.push(value()?),
            "--out" => out = PathBuf::from(value()?),
            "--list" => {
                for t in TARGETS {
                    println!("{}", t.name);
                }
                return Ok(());
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    let targets: Vec<&Target> = if names.is_empty() {
        TARGETS.iter().collect()
    } else {
        names
            .iter()
            .map(|n| target(n).with_context(|| format!("no target {n:?}")))
            .collect::<Result<_>>()?
    };

    // a watchdog: an input running for a minute is a hang; save it and stop
    let watch = Arc::new(Watch::default());
    let epoch = Instant::now();
    let current: Arc<std::sync::Mutex<&'static str>> = Arc::new(std::sync::Mutex::new(""));
    {
        let (watch, current, out) = (watch.clone(), current.clone(), out.clone());
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_secs(1));
            if let Some((took, input)) = watch.in_flight(epoch) {
                if took > Duration::from_secs(60) {
                    let name = *current.lock().unwrap_or_else(|p| p.into_inner());
                    let p = save(&out.join(name), "hang.bin", &input);
                    eprintln!("{name}: an input has run for {took:?} (a hang): {p:?}");
                    std::process::exit(2);
                }
            }
        });
    }

    let mut crashed = false;
    for (i, t) in targets.iter().enumerate() {
        *current.lock().unwrap_or_else(|p| p.into_inner()) = t.name;
        let s = seed.wrapping_add(i as u64);
        let o = fuzz(
            t,
            Budget::Time(Duration::from_secs(seconds)),
            s,
            Some((&watch, epoch)),
        );
        println!(
            "{:<24} {:>9} execs  {:>5} corpus  slowest {:>8.1?}  {} crash(es)  seed {s}",
            t.name,
            o.execs,
            o.corpus,
            o.slowest,
            o.crashes.len()
        );
        for (k, c) in o.crashes.iter().enumerate() {
            crashed = true;
            let small = minimize(t, c, 20_000);
            let dir = out.join(t.name);
            save(&dir, &format!("crash-{k}.bin"), &c.input)?;
            let p = save(&dir, &format!("crash-{k}-min.bin"), &small)?;
            println!(
                "  {}\n  minimised to {} bytes: {}",
                c.message,
                small.len(),
                p.display()
            );
        }
    }
    if crashed {
        std::process::exit(1);
    }
    Ok(())
}
