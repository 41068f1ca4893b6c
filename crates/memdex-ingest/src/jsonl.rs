//! The memdex JSONL chat format: one session per line.
//!
//! ```json
//! {"tenant": "alice", "session_id": "s1", "date": "2023/05/30 (Tue) 23:40",
//!  "turns": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]}
//! ```
//! Each line is one [`SessionIn`], validated as every source's sessions are (see `wire`):
//! `tenant` follows the HTTP API's rule ([`memdex_core::check_tenant_name`]), `date` is RFC 3339
//! or `YYYY/MM/DD (Day) HH:MM` (UTC), years 1000 to 9999 (see [`crate::parse_date`]); an undated
//! session is dated when it is read; unknown fields are refused by name (`metadata` holds
//! anything extra). Blank lines are ignored. Errors quote at most a short prefix of a bad value
//! (`"…(N bytes)"`), so `--on-error skip` keeps little of each rejected line.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use memdex_core::{OnError, Session};

use crate::{Context, IngestError, SessionIn, SessionLimits, SessionSource, WireError};
use memdex_core::clip_message;

/// Default cap on one input line (one session): 64 MiB.
pub const DEFAULT_MAX_LINE_BYTES: u64 = 64 << 20;

/// Reader settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonlOptions {
    pub on_error: OnError,
    pub max_line_bytes: u64,
}

impl Default for JsonlOptions {
    fn default() -> Self {
        Self {
            on_error: OnError::Abort,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// Streams sessions from a JSONL file, holding one line in memory at a time.
#[derive(Debug)]
pub struct JsonlSessions<R> {
    path: PathBuf,
    reader: R,
    line: u64,
    opts: JsonlOptions,
    buf: Vec<u8>,
    skipped: Vec<IngestError>,
    done: bool,
    /// The date of undated sessions: when the reader was opened.
    now_ms: i64,
    /// Bytes read so far, and the input's size when known.
    consumed: u64,
    total: Option<u64>,
}

impl JsonlSessions<BufReader<File>> {
    pub fn open(path: &Path, opts: JsonlOptions) -> Result<Self, IngestError> {
        let file = File::open(path).map_err(|source| IngestError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let total = file.metadata().ok().map(|m| m.len());
        let mut r = Self::new(path, BufReader::with_capacity(1 << 20, file), opts);
        r.total = total;
        Ok(r)
    }
}

impl<R: BufRead> JsonlSessions<R> {
    /// `path` is used in error messages only.
    pub fn new(path: &Path, reader: R, opts: JsonlOptions) -> Self {
        Self {
            path: path.to_path_buf(),
            reader,
            line: 0,
            opts,
            buf: Vec::new(),
            skipped: Vec::new(),
            done: false,
            now_ms: chrono::Utc::now().timestamp_millis(),
            consumed: 0,
            total: None,
        }
    }

    /// Reads the next line into `self.buf`; Ok(false) at end of input.
    fn read_line(&mut self) -> Result<bool, IngestError> {
        self.buf.clear();
        self.line += 1;
        let limit = self.opts.max_line_bytes;
        let io = |source| IngestError::Io {
            path: self.path.clone(),
            source,
        };
        let n = (&mut self.reader)
            .take(limit + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(io)?;
        self.consumed += n as u64;
        if n == 0 {
            return Ok(false);
        }
        if self.buf.len() as u64 > limit && self.buf.last() != Some(&b'\n') {
            // Drain the rest of the oversized line so a `skip` policy can go on after it.
            let mut total = self.buf.len() as u64;
            loop {
                let chunk = self.reader.fill_buf().map_err(|source| IngestError::Io {
                    path: self.path.clone(),
                    source,
                })?;
                if chunk.is_empty() {
                    break;
                }
                match chunk.iter().position(|&b| b == b'\n') {
                    Some(p) => {
                        self.consumed += p as u64 + 1;
                        total += p as u64;
                        self.reader.consume(p + 1);
                        break;
                    }
                    None => {
                        let l = chunk.len();
                        self.consumed += l as u64;
                        total += l as u64;
                        self.reader.consume(l);
                    }
                }
            }
            self.buf.clear();
            return Err(IngestError::TooLarge {
                path: self.path.clone(),
                line: self.line,
                bytes: total,
                limit,
            });
        }
        Ok(true)
    }

    fn parse(&self) -> Result<Option<Session>, IngestError> {
        let text = std::str::from_utf8(&self.buf).map_err(|e| IngestError::Utf8 {
            path: self.path.clone(),
            line: self.line,
            offset: e.valid_up_to(),
        })?;
        if text.trim().is_empty() {
            return Ok(None);
        }
        if text.trim_start().starts_with('[') {
            // serde would read the array as a tuple and complain about its first field
            return Err(IngestError::Schema {
                path: self.path.clone(),
                line: self.line,
                message: "a JSON array, not one session object per line; LongMemEval and \
                          LoCoMo files need --format longmemeval or --format locomo"
                    .into(),
            });
        }
        let raw: SessionIn = serde_json::from_str(text).map_err(|e| {
            // serde quotes mistyped values whole (`invalid type: string "…"`)
            let message = clip_message(&e.to_string());
            if e.is_data() {
                IngestError::Schema {
                    path: self.path.clone(),
                    line: self.line,
                    message,
                }
            } else {
                IngestError::Json {
                    path: self.path.clone(),
                    line: self.line,
                    message,
                }
            }
        })?;
        let cx = Context {
            tenant: None,
            now_ms: self.now_ms,
            limits: SessionLimits::FILES,
        };
        raw.into_session(&cx).map(Some).map_err(|e| match e {
            WireError::Date { value, message } => IngestError::Date {
                path: self.path.clone(),
                line: self.line,
                field: "date",
                value,
                message,
            },
            e => IngestError::Schema {
                path: self.path.clone(),
                line: self.line,
                message: e.to_string(),
            },
        })
    }
}

impl<R: BufRead> Iterator for JsonlSessions<R> {
    type Item = Result<Session, IngestError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let res = match self.read_line() {
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Ok(true) => self.parse(),
                Err(e) => Err(e),
            };
            match res {
                Ok(Some(s)) => return Some(Ok(s)),
                Ok(None) => continue,
                Err(e @ IngestError::Io { .. }) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Err(e) if self.opts.on_error == OnError::Skip => {
                    tracing::warn!("skipping: {e}");
                    self.skipped.push(e);
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        None
    }
}

impl<R: BufRead> SessionSource for JsonlSessions<R> {
    fn skipped(&self) -> &[IngestError] {
        &self.skipped
    }

    fn position(&self) -> Option<(u64, u64)> {
        self.total.map(|t| (self.consumed.min(t), t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"tenant":"a","session_id":"s1","date":"2023-05-30T10:00:00Z","turns":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}"#;

    fn read(input: &str, opts: JsonlOptions) -> (Vec<Result<Session, IngestError>>, usize) {
        let mut r = JsonlSessions::new(Path::new("in.jsonl"), input.as_bytes(), opts);
        let out: Vec<_> = r.by_ref().collect();
        let skipped = r.skipped().len();
        (out, skipped)
    }

    #[test]
    fn reads_sessions_and_ignores_blank_lines() {
        let input = format!("{GOOD}\n\n{}\n", GOOD.replace("s1", "s2"));
        let (out, _) = read(&input, JsonlOptions::default());
        let s: Vec<Session> = out.into_iter().map(Result::unwrap).collect();
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].session_id, "s2");
        assert_eq!(s[0].turns[1].role, memdex_core::Role::Assistant);
        assert_eq!(s[0].timestamp_ms, 1_685_440_800_000);
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let bad_json = format!("{GOOD}\n{{\"tenant\": \n");
        let (out, _) = read(&bad_json, JsonlOptions::default());
        let e = out[1].as_ref().unwrap_err().to_string();
        assert!(e.starts_with("in.jsonl:2: malformed JSON"), "{e}");

        let missing = r#"{"tenant":"a","session_id":"s","date":"2023-05-30"}"#;
        let e = read(missing, JsonlOptions::default()).0[0]
            .as_ref()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("in.jsonl:1: wrong schema") && e.contains("turns"),
            "{e}"
        );

        let array = format!("[{GOOD}]");
        let e = read(&array, JsonlOptions::default()).0[0]
            .as_ref()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("in.jsonl:1: wrong schema") && e.contains("--format longmemeval"),
            "{e}"
        );

        let role = GOOD.replace("\"assistant\"", "\"system\"");
        let e = read(&role, JsonlOptions::default()).0[0]
            .as_ref()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("in.jsonl:1: wrong schema") && e.contains("`system`"),
            "{e}"
        );

        let date = GOOD.replace("2023-05-30T10:00:00Z", "2023/05/30 (Mon) 10:00");
        let e = read(&date, JsonlOptions::default()).0[0]
            .as_ref()
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `date`") && e.contains("weekday"), "{e}");
    }

    #[test]
    fn abort_stops_and_skip_continues() {
        let input = format!("{GOOD}\nnot json\n{}\n", GOOD.replace("s1", "s3"));
        let (out, _) = read(&input, JsonlOptions::default());
        assert_eq!(out.len(), 2);
        assert!(out[1].is_err());
        let (out, skipped) = read(
            &input,
            JsonlOptions {
                on_error: OnError::Skip,
                ..Default::default()
            },
        );
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(Result::is_ok));
        assert_eq!(skipped, 1);
    }

    #[test]
    fn oversized_and_invalid_utf8_lines_are_reported() {
        let big = GOOD.replace("hello", &"x".repeat(500));
        let input = format!("{big}\n{GOOD}\n");
        let opts = JsonlOptions {
            on_error: OnError::Skip,
            max_line_bytes: 200,
        };
        let mut r = JsonlSessions::new(Path::new("in.jsonl"), input.as_bytes(), opts);
        let ok: Vec<_> = r.by_ref().collect();
        assert_eq!(ok.len(), 1, "the next line is still read");
        let e = r.skipped()[0].to_string();
        assert!(
            e.contains("in.jsonl:1:") && e.contains("200-byte limit"),
            "{e}"
        );

        let mut bytes = GOOD.as_bytes().to_vec();
        bytes[60] = 0xff;
        let mut r = JsonlSessions::new(Path::new("in.jsonl"), &bytes[..], JsonlOptions::default());
        let e = r.next().unwrap().unwrap_err().to_string();
        assert!(e.contains("not valid UTF-8"), "{e}");
    }
}
