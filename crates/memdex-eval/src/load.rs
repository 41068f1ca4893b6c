//! Reading a benchmark file and indexing its sessions, keeping the questions.

use std::path::Path;

use memdex_core::{Granularity, OnError, Session};
use memdex_ingest::{read_locomo, IngestError, LongMemEvalReader, SessionList, SessionSource};
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

/// Sessions of a LongMemEval stream, one instance at a time, collecting its questions.
struct LmeSessions<'a, R: std::io::BufRead> {
    reader: LongMemEvalReader<R>,
    granularity: Granularity,
    on_error: OnError,
    questions: &'a mut Vec<EvalQuestion>,
    warnings: &'a mut Vec<String>,
    pending: std::vec::IntoIter<Session>,
    skipped: Vec<IngestError>,
}

impl<R: std::io::BufRead> Iterator for LmeSessions<'_, R> {
    type Item = Result<Session, IngestError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(s) = self.pending.next() {
                return Some(Ok(s));
            }
            match self.reader.next()? {
                Ok(inst) => {
                    self.questions
                        .push(longmemeval_question(&inst, self.granularity));
                    self.warnings.extend(inst.warnings);
                    self.pending = inst.sessions.into_iter();
                }
                Err(e @ IngestError::Record { .. }) if self.on_error == OnError::Skip => {
                    tracing::warn!("skipping: {e}");
                    self.skipped.push(e);
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl<R: std::io::BufRead> SessionSource for LmeSessions<'_, R> {
    fn skipped(&self) -> &[IngestError] {
        &self.skipped
    }

    fn position(&self) -> Option<(u64, u64)> {
        self.reader.position()
    }
}

/// How a benchmark file is read and indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    pub dataset: Dataset,
    pub granularity: Granularity,
    pub on_error: OnError,
    /// Items per committed segment.
    pub flush_items: usize,
}

/// Reads `input` and indexes its sessions through `builder` (skipping what is already
/// stored, with the extraction the store records) and returns the questions.
pub fn load_and_index(
    input: &Path,
    load: &LoadOptions,
    builder: &mut Builder,
    progress: &dyn IndexProgress,
) -> Result<(Vec<EvalQuestion>, LoadReport), EvalError> {
    let LoadOptions {
        dataset,
        granularity,
        on_error,
        flush_items,
    } = *load;
    let opts = IndexOptions {
        itemize: dataset::benchmark_itemize(granularity),
        on_error,
        flush_items,
        accel: None,
    };
    let mut questions = Vec::new();
    let mut warnings = Vec::new();
    let index = match dataset {
        Dataset::LongMemEval => {
            let source = LmeSessions {
                reader: LongMemEvalReader::open(input)?,
                granularity,
                on_error,
                questions: &mut questions,
                warnings: &mut warnings,
                pending: Vec::new().into_iter(),
                skipped: Vec::new(),
            };
            builder.index(source, &opts, progress)?
        }
        Dataset::Locomo => {
            let convs = read_locomo(input)?;
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
            let (sessions, qs) = dataset::locomo(&convs, granularity);
            questions = qs;
            builder.index(SessionList::new(sessions), &opts, progress)?
        }
    };
    let report = LoadReport {
        questions: questions.len(),
        rejected: index.errors.clone(),
        warnings,
        index,
    };
    Ok((questions, report))
}
