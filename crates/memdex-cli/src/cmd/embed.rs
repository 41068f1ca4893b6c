use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use memdex_core::TextKind;
use serde::{Deserialize, Serialize};

use crate::cli::{EmbedArgs, Kind};
use crate::output::bar;

#[derive(Deserialize)]
struct In {
    text: String,
}

#[derive(Serialize)]
struct Out<'a> {
    text: &'a str,
    embedding: &'a [f32],
}

/// Reads `{"text": ...}` lines; errors name the file and line.
pub fn read_texts(path: &Path) -> Result<Vec<String>> {
    let f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let mut texts = Vec::new();
    for (i, line) in BufReader::new(f).lines().enumerate() {
        let line = line.with_context(|| format!("{}:{}: cannot read", path.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let rec: In = serde_json::from_str(&line).with_context(|| {
            format!(
                "{}:{}: expected {{\"text\": string}}",
                path.display(),
                i + 1
            )
        })?;
        texts.push(rec.text);
    }
    Ok(texts)
}

pub fn run(a: EmbedArgs) -> Result<()> {
    let embedder = super::common::load_embedder(&a.model, None)?;
    let texts = read_texts(&a.input)?;
    if texts.is_empty() {
        bail!("{}: no texts", a.input.display());
    }
    let kind = match a.kind {
        Kind::Query => TextKind::Query,
        Kind::Passage => TextKind::Passage,
    };
    // Written next to the target and renamed at the end: a failed run leaves no partial file.
    let tmp = a.output.with_extension("partial");
    let mut w = BufWriter::new(
        File::create(&tmp).with_context(|| format!("{}: cannot create", tmp.display()))?,
    );
    let pb = bar(texts.len() as u64, "embedding");
    for chunk in texts.chunks(4096) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        let emb = embedder.embed_with_progress(&refs, kind, &mut |n| pb.inc(n as u64))?;
        for (i, text) in chunk.iter().enumerate() {
            serde_json::to_writer(
                &mut w,
                &Out {
                    text,
                    embedding: emb.row(i),
                },
            )?;
            w.write_all(b"\n")?;
        }
    }
    pb.finish_and_clear();
    w.flush()?;
    w.get_ref().sync_all()?;
    drop(w);
    std::fs::rename(&tmp, &a.output)
        .with_context(|| format!("{}: cannot write", a.output.display()))?;
    eprintln!(
        "embedded {} texts with {} (dim {}) → {}",
        texts.len(),
        embedder.info().name,
        embedder.dim(),
        a.output.display()
    );
    Ok(())
}
