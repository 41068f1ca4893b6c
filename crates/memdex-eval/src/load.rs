//! Reading a benchmark file's questions while its sessions are indexed. The sessions come
//! from the format's session source in memdex-ingest's registry, and the build is the
//! caller's (the same [`IndexOptions`] `memdex index` uses for every format): this module
//! adds only the questions, read from each record as the source reads it.

use std::path::Path;
use std::sync::Mutex;

use memdex_core::{Granularity, OnError};
use memdex_ingest::{Format, ReadOptions, Record};
use memdex_memory::{Builder, IndexOptions, IndexProgress, IndexReport};
use serde::Serialize;

use crate::dataset::{self, longmemeval_question, EvalQuestion};
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

/// Which benchmark file format, at which granularity, and what a bad record does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    pub format: &'static Format,
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
    let seen = Mutex::new(Seen::default());
    let granularity = load.granularity;
    let read = ReadOptions {
        on_error: load.on_error,
        on_record: Some(Box::new(|r: Record<'_>| {
            let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.add(r, granularity);
        })),
        ..ReadOptions::default()
    };
    let source = (load.format.open)(input, read)?;
    let index = builder.index(source, opts, progress)?;
    let Seen {
        questions,
        warnings,
    } = seen.into_inner().unwrap_or_else(|p| p.into_inner());
    let report = LoadReport {
        questions: questions.len(),
        rejected: index.errors.clone(),
        warnings,
        index,
    };
    Ok((questions, report))
}

/// The questions and warnings of the records read so far.
#[derive(Default)]
struct Seen {
    questions: Vec<EvalQuestion>,
    warnings: Vec<String>,
}

impl Seen {
    fn add(&mut self, record: Record<'_>, granularity: Granularity) {
        self.warnings.extend(record.warnings().iter().cloned());
        match record {
            Record::LongMemEval(inst) => {
                self.questions.push(longmemeval_question(inst, granularity));
            }
            Record::Locomo(c) => {
                for (i, qa) in c.qa.iter().enumerate() {
                    for d in &qa.dropped {
                        self.warnings.push(format!(
                            "{}: question {}: evidence id {d:?} names no turn (dropped)",
                            c.tenant,
                            i + 1
                        ));
                    }
                }
                let one = std::slice::from_ref(c);
                self.questions
                    .extend(dataset::locomo_questions(one, granularity));
            }
        }
    }
}
