//! The benchmark files as session sources, like any other input: a LongMemEval file streamed
//! one instance at a time, and LoCoMo's conversations. Whoever needs the questions (the
//! evaluation) reads them beside the sessions: a hook sees each LongMemEval instance before
//! its sessions are yielded; LoCoMo's questions are in the conversations it was built from.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use memdex_core::{Granularity, KeyRoles, OnError, Session};

use crate::{IngestError, ItemizeOptions, LmeInstance, LocomoConversation, LongMemEvalReader};
use crate::{SessionList, SessionSource};

/// What a LongMemEval instance hook receives: the instance as read, sessions included.
pub type InstanceHook<'a> = Box<dyn FnMut(&LmeInstance) + Send + 'a>;

/// The sessions of a LongMemEval file, one instance at a time (every instance's haystack
/// in file order). Under [`OnError::Skip`] a malformed instance is skipped and kept, with its
/// position, in [`SessionSource::skipped`].
pub struct LongMemEvalSessions<'a, R> {
    reader: LongMemEvalReader<R>,
    on_error: OnError,
    on_instance: Option<InstanceHook<'a>>,
    pending: std::vec::IntoIter<Session>,
    skipped: Vec<IngestError>,
}

impl<R> std::fmt::Debug for LongMemEvalSessions<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LongMemEvalSessions")
            .field("on_error", &self.on_error)
            .field("hook", &self.on_instance.is_some())
            .field("skipped", &self.skipped.len())
            .finish()
    }
}

impl LongMemEvalSessions<'_, BufReader<File>> {
    /// The sessions of the LongMemEval file at `path`.
    pub fn open(path: &Path, on_error: OnError) -> Result<Self, IngestError> {
        Ok(Self::new(LongMemEvalReader::open(path)?, on_error))
    }
}

impl<'a, R: BufRead> LongMemEvalSessions<'a, R> {
    pub fn new(reader: LongMemEvalReader<R>, on_error: OnError) -> Self {
        LongMemEvalSessions {
            reader,
            on_error,
            on_instance: None,
            pending: Vec::new().into_iter(),
            skipped: Vec::new(),
        }
    }

    /// Calls `hook` with every instance before its sessions are yielded.
    pub fn on_instance(mut self, hook: InstanceHook<'a>) -> Self {
        self.on_instance = Some(hook);
        self
    }
}

impl<R: BufRead> Iterator for LongMemEvalSessions<'_, R> {
    type Item = Result<Session, IngestError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(s) = self.pending.next() {
                return Some(Ok(s));
            }
            match self.reader.next()? {
                Ok(inst) => {
                    if let Some(hook) = self.on_instance.as_mut() {
                        hook(&inst);
                    }
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

impl<R: BufRead> SessionSource for LongMemEvalSessions<'_, R> {
    fn skipped(&self) -> &[IngestError] {
        &self.skipped
    }

    fn position(&self) -> Option<(u64, u64)> {
        self.reader.position()
    }
}

/// The sessions of LoCoMo conversations, in order.
pub fn locomo_sessions(convs: &[LocomoConversation]) -> SessionList {
    SessionList::new(
        convs
            .iter()
            .flat_map(|c| c.sessions.iter().cloned())
            .collect(),
    )
}

impl ItemizeOptions {
    /// How benchmark sessions are cut into items by default, for both datasets: user turns
    /// are the keys (LongMemEval indexes user turns only; LoCoMo's turns are all user turns,
    /// two people talking), and blank turns are kept as the official corpora keep them.
    pub fn benchmark(granularity: Granularity) -> ItemizeOptions {
        ItemizeOptions {
            granularity,
            key_roles: KeyRoles::User,
            keep_blank: true,
            context: 0,
        }
    }
}
