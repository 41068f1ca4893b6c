use std::fs::File;
use std::io::{BufWriter, Write};

use anyhow::{Context, Result};
use memdex_eval::{write_synth, SynthOptions};

use crate::cli::{SynthArgs, SynthScale};

pub fn run(a: SynthArgs) -> Result<()> {
    let mut o = match a.scale {
        SynthScale::S => SynthOptions::s_scale(a.seed),
        SynthScale::M => SynthOptions::m_scale(a.seed),
    };
    o.questions = a.questions.unwrap_or(o.questions);
    o.sessions_per_question = a.sessions.unwrap_or(o.sessions_per_question);
    o.pool = a.pool.unwrap_or(o.pool).max(1);
    o.rounds = a.rounds.unwrap_or(o.rounds).max(1);
    let t = std::time::Instant::now();
    let tmp = a.output.with_extension("partial");
    let file = File::create(&tmp).with_context(|| format!("{}: cannot create", tmp.display()))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let (q, sessions, distinct) = write_synth(&mut w, &o)?;
    w.flush()?;
    drop(w);
    std::fs::rename(&tmp, &a.output)
        .with_context(|| format!("{}: cannot write", a.output.display()))?;
    let bytes = std::fs::metadata(&a.output).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "wrote {}: {q} questions, {sessions} haystack sessions ({distinct} distinct), {:.1} MB in {:.1}s",
        a.output.display(),
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
