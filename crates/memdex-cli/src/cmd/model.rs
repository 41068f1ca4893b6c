//! `memdex model convert` and `memdex model verify`.

use std::path::Path;

use anyhow::{bail, Context, Result};
use memdex_convert::{convert_e5s1, E5s1, Source};
use memdex_core::{DeviceChoice, TextKind};
use memdex_embed::{select_device, CpuBackend, EmbedOptions, Embedder, WeightFormat};
use serde::{Deserialize, Serialize};

use crate::cli_model::{ContainerFormat, ConvertArgs, ModelCommand, VerifyArgs};

pub fn run(cmd: ModelCommand) -> Result<()> {
    match cmd {
        ModelCommand::Convert(a) => convert(a),
        ModelCommand::Verify(a) => verify(a),
    }
}

fn convert(a: ConvertArgs) -> Result<()> {
    let ContainerFormat::E5s1 = a.from;
    let c = E5s1::read(&a.input)?;
    let source = Source {
        package: a.package,
        upstream: a.upstream,
        license: a.license,
    };
    let out = convert_e5s1(&c, &a.output, &source)?;
    let s = c.shape;
    println!(
        "converted {} -> {}: {} tensors, {} weights (f32, Q4-derived), {} pieces; \
         hidden {}, {} layers, vocab {}, {} positions",
        a.input.display(),
        out.dir.display(),
        out.tensors,
        out.weights,
        out.pieces,
        s.hidden,
        s.layers,
        s.vocab,
        s.max_positions
    );
    Ok(())
}

#[derive(Deserialize)]
struct Reference {
    kind: String,
    text: String,
    ids: Vec<u32>,
    embedding: Vec<f32>,
}

/// One encoder's agreement with the reference.
#[derive(Debug, Serialize)]
struct Parity {
    backend: &'static str,
    texts: usize,
    same_tokens: usize,
    min_cosine: f32,
    mean_cosine: f32,
    /// The text with the lowest cosine.
    worst: String,
}

fn read_reference(path: &Path) -> Result<Vec<Reference>> {
    let s = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    s.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let r: Reference = serde_json::from_str(l).with_context(|| {
                format!(
                    "{}:{}: expected {{kind, text, ids, embedding}}",
                    path.display(),
                    i + 1
                )
            })?;
            if r.kind != "query" && r.kind != "passage" {
                bail!(
                    "{}:{}: kind must be query or passage",
                    path.display(),
                    i + 1
                );
            }
            Ok(r)
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| (x * y) as f64).sum();
    let n = |v: &[f32]| v.iter().map(|x| (x * x) as f64).sum::<f64>().sqrt();
    (dot / (n(a) * n(b)).max(1e-30)) as f32
}

fn parity(e: &Embedder, refs: &[Reference], backend: &'static str) -> Result<Parity> {
    let mut p = Parity {
        backend,
        texts: refs.len(),
        same_tokens: 0,
        min_cosine: f32::INFINITY,
        mean_cosine: 0.0,
        worst: String::new(),
    };
    for (name, kind) in [("query", TextKind::Query), ("passage", TextKind::Passage)] {
        let rows: Vec<&Reference> = refs.iter().filter(|r| r.kind == name).collect();
        let texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
        let ids = e.tokenize(&texts, kind)?;
        let got = e.embed(&texts, kind)?;
        for (i, r) in rows.iter().enumerate() {
            if r.embedding.len() != got.dim {
                bail!(
                    "reference vector of {:?} has {} dims, the model {}",
                    r.text,
                    r.embedding.len(),
                    got.dim
                );
            }
            p.same_tokens += usize::from(ids[i] == r.ids);
            let c = cosine(got.row(i), &r.embedding);
            p.mean_cosine += c / refs.len() as f32;
            if c < p.min_cosine {
                p.min_cosine = c;
                p.worst = format!("{name}: {}", r.text.chars().take(60).collect::<String>());
            }
        }
    }
    Ok(p)
}

fn verify(a: VerifyArgs) -> Result<()> {
    let refs = read_reference(&a.reference)?;
    if refs.is_empty() {
        bail!("{}: no reference vectors", a.reference.display());
    }
    let spec = a.model.to_str().context("model path is not UTF-8")?;
    let mut report = Vec::new();
    let mut runs = vec![
        (CpuBackend::Fast, WeightFormat::Dense, "fast-cpu"),
        (CpuBackend::Candle, WeightFormat::Dense, "candle"),
    ];
    if a.model.join(memdex_embed::GGUF_FILE).is_file() {
        runs.push((CpuBackend::Fast, WeightFormat::Gguf, "fast-cpu-gguf"));
        runs.push((CpuBackend::Candle, WeightFormat::Gguf, "candle-gguf"));
    }
    if !cfg!(feature = "candle") {
        eprintln!(
            "note: checking the fast encoder only; candle's encoders need a build with \
             `--features candle`"
        );
        runs.retain(|r| r.0 != CpuBackend::Candle);
    }
    for (cpu_backend, weights, name) in runs {
        let opts = EmbedOptions {
            cpu_backend,
            weights,
            ..Default::default()
        };
        let e = Embedder::load(spec, select_device(DeviceChoice::Cpu)?, &opts)
            .with_context(|| format!("loading {spec} ({name})"))?;
        report.push(parity(&e, &refs, name)?);
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for p in &report {
            println!(
                "{:13} {} texts: tokens identical {}/{}, cosine min {:.5} mean {:.5} (worst: {})",
                p.backend, p.texts, p.same_tokens, p.texts, p.min_cosine, p.mean_cosine, p.worst
            );
        }
    }
    if a.record {
        let path = a.model.join("PROVENANCE.json");
        let mut prov: serde_json::Value = serde_json::from_slice(
            &std::fs::read(&path).with_context(|| format!("{}", path.display()))?,
        )
        .with_context(|| format!("{}: invalid JSON", path.display()))?;
        prov["parity"] = serde_json::json!({
            "reference": a.reference.file_name().map(|f| f.to_string_lossy().into_owned()),
            "results": report,
        });
        std::fs::write(&path, serde_json::to_string_pretty(&prov)? + "\n")
            .with_context(|| format!("{}", path.display()))?;
    }
    if let Some(p) = report.iter().find(|p| p.min_cosine < a.min_cosine) {
        bail!(
            "{}: cosine {:.5} < {} on {}",
            p.backend,
            p.min_cosine,
            a.min_cosine,
            p.worst
        );
    }
    Ok(())
}
