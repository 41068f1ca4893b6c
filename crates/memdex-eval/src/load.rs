//! Reading a benchmark file's questions while its sessions are indexed. The sessions come
//! from memdex-ingest's sources for the format, and the build is the caller's (the same
//! [`IndexOptions`] `memdex index` uses for every format): this module adds only the
//! questions.

use std::path::Path;
use std::sync::Mutex;

use memdex_core::{Granularity, OnError};
use memdex_ingest::{locomo_sessions, read_locomo, LongMemEvalSessions};
use memdex_memory::{Builder, IndexOptions, IndexProgress, IndexReport};
use serde::Serialize;

use crate::dataset::{self, longmemeval_question, Dataset, EvalQuestion};
use crate::EvalError;

/// What loading found besides the sessions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadReport {
    pub questions: usize,
    /// Bad records skipped under `--on-error skip`.
    pub rejected: Vec<String>,
    /// Dates that did not parse or go backwards; evidence ids that name no turn.
    pub warnings: Vec<String>,
    pub index: IndexReport,
}

/// Which benchmark file, at which granularity, and what a bad record does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    pub dataset: Dataset,
    pub granularity: Granularity,
    pub on_error: OnError,
}

/// Reads `input`, indexes its sessions through `builder` with `opts` (skipping what is
/// already stored) and returns its questions.
pub fn load_and_index(
    input: &Path,
    load: &LoadOptions,
    opts: &IndexOptions,
    builder: &mut Builder,
    progress: &dyn IndexProgress,
) -> Result<(Vec<EvalQuestion>, LoadReport), EvalError> {
    let (questions, warnings, index) = match load.dataset {
        Dataset::LongMemEval => longmemeval(input, load, opts, builder, progress)?,
        Dataset::Locomo => locomo(input, load.granularity, opts, builder, progress)?,
    };
    let report = LoadReport {
        questions: questions.len(),
        rejected: index.errors.clone(),
        warnings,
        index,
    };
    Ok((questions, report))
}

type Loaded = (Vec<EvalQuestion>, Vec<String>, IndexReport);

fn longmemeval(
    input: &Path,
    load: &LoadOptions,
    opts: &IndexOptions,
    builder: &mut Builder,
    progress: &dyn IndexProgress,
) -> Result<Loaded, EvalError> {
    let seen = Mutex::new((Vec::new(), Vec::new()));
    let granularity = load.granularity;
    let source = LongMemEvalSessions::open(input, load.on_error)?.on_instance(Box::new(|inst| {
        let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.0.push(longmemeval_question(inst, granularity));
        seen.1.extend(inst.warnings.iter().cloned());
    }));
    let index = builder.index(source, opts, progress)?;
    let (questions, warnings) = seen.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok((questions, warnings, index))
}

fn locomo(
    input: &Path,
    granularity: Granularity,
    opts: &IndexOptions,
    builder: &mut Builder,
    progress: &dyn IndexProgress,
) -> Result<Loaded, EvalError> {
    let convs = read_locomo(input)?;
    let mut warnings = Vec::new();
    for c in &convs {
        warnings.extend(c.warnings.iter().cloned());
        for (i, qa) in c.qa.iter().enumerate() {
            for d in &qa.dropped {
                warnings.push(format!(
                    "{}: question {}: evidence id {d:?} names no turn (dropped)",
                    c.tenant,
                    i + 1
                ));
            }
        }
    }
    let questions = dataset::locomo_questions(&convs, granularity);
    let index = builder.index(locomo_sessions(&convs), opts, progress)?;
    Ok((questions, warnings, index))
}
