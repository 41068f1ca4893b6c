use std::fs::File;
use std::io::{BufWriter, Write};

use anyhow::{Context, Result};
use memdex_eval::{synth_count, write_synth, SynthOptions, SynthScale};

use crate::cli::{SynthArgs, SynthProfile};
use crate::output::print_json;

pub fn run(a: SynthArgs) -> Result<()> {
    let profile = match a.profile {
        SynthProfile::LongmemevalS => SynthScale::LongMemEvalS,
        SynthProfile::LongmemevalM => SynthScale::LongMemEvalM,
    };
    let mut o = SynthOptions::profile(profile, a.seed);
    if let Some(q) = a.questions {
        o.questions = q;
        o.slots = None;
    }
    if let Some(s) = a.sessions {
        o.haystack = (s.max(1), s.max(1));
        o.slots = None;
    }
    o.pool = a.pool.unwrap_or(o.pool).max(1);
    let Some(output) = a.output.filter(|_| !a.count_only) else {
        return print_json(&synth_count(&o));
    };
    let t = std::time::Instant::now();
    let tmp = output.with_extension("partial");
    let file = File::create(&tmp).with_context(|| format!("{}: cannot create", tmp.display()))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let r = write_synth(&mut w, &o)?;
    w.flush()?;
    drop(w);
    std::fs::rename(&tmp, &output)
        .with_context(|| format!("{}: cannot write", output.display()))?;
    let bytes = std::fs::metadata(&output).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "wrote {}: {} questions, {} haystack slots ({} distinct sessions), {:.1} MB in {:.1}s",
        output.display(),
        r.questions,
        r.slots,
        r.distinct_sessions,
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
