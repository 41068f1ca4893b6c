//! The one registry of input formats. Each [`Format`] says how to recognise its input (a
//! file's first bytes, one JSON value), how to open a file as a [`SessionSource`], how to
//! read the sessions of one JSON value, and how its sessions are itemized by default. Every
//! caller goes through it: `memdex index` and `memdex eval` (`--format`), the door's
//! in-process appends (`memdex_memory::input`), and the Python package's `read_sessions` and
//! sharded build. Adding a format is one entry of [`FORMATS`] (see ARCHITECTURE.md).

use std::io::Read;
use std::path::Path;

use memdex_core::{clip, Granularity, OnError, Session};
use serde_json::Value;

use crate::{
    check_session, locomo_sessions, parse_locomo, read_locomo, Context, IngestError,
    ItemizeOptions, JsonlOptions, JsonlSessions, LmeInstance, LocomoConversation,
    LongMemEvalReader, LongMemEvalSessions, SessionIn, SessionSource, WireError,
    DEFAULT_MAX_LINE_BYTES,
};

/// One record of a multi-record format as read, for a caller that wants more than its
/// sessions (the evaluation reads its questions here).
#[derive(Debug, Clone, Copy)]
pub enum Record<'r> {
    /// A LongMemEval question instance, seen before its haystack's sessions are yielded.
    LongMemEval(&'r LmeInstance),
    /// A LoCoMo conversation, seen before its sessions are yielded.
    Locomo(&'r LocomoConversation),
}

impl Record<'_> {
    /// What reading the record found wrong but kept (dates that did not parse, …).
    pub fn warnings(&self) -> &[String] {
        match self {
            Record::LongMemEval(i) => &i.warnings,
            Record::Locomo(c) => &c.warnings,
        }
    }
}

/// What sees every [`Record`] as it is read.
pub type RecordHook<'a> = Box<dyn FnMut(Record<'_>) + Send + 'a>;

/// How a file is read.
pub struct ReadOptions<'a> {
    /// A malformed record: abort, or skip it and report it ([`SessionSource::skipped`]).
    pub on_error: OnError,
    /// Largest accepted line (line formats).
    pub max_line_bytes: u64,
    /// Sees each record of a multi-record format before its sessions are yielded.
    pub on_record: Option<RecordHook<'a>>,
}

impl Default for ReadOptions<'_> {
    fn default() -> Self {
        ReadOptions {
            on_error: OnError::Abort,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            on_record: None,
        }
    }
}

impl std::fmt::Debug for ReadOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOptions")
            .field("on_error", &self.on_error)
            .field("max_line_bytes", &self.max_line_bytes)
            .field("on_record", &self.on_record.is_some())
            .finish()
    }
}

/// A file open as a session source, whatever its format.
pub type Sessions<'a> = Box<dyn SessionSource + Send + 'a>;

/// Why one JSON value's sessions were refused; the message names the value (`label`) and the
/// field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("{0}")]
    Invalid(String),
    /// A text, a session or a turn count over a limit.
    #[error("{0}")]
    TooLarge(String),
}

/// An input format: one entry of [`FORMATS`].
pub struct Format {
    /// Its name: `--format`'s value, Python's `format=`.
    pub name: &'static str,
    /// One line for `--format`'s help.
    pub about: &'static str,
    /// Its records carry a benchmark's questions (what `memdex eval` reads).
    pub benchmark: bool,
    /// Whether one JSON value is a record of this format, by its distinguishing key (None:
    /// the format of any other object, memdex's own session).
    pub detect_value: Option<fn(&Value) -> bool>,
    /// Whether a file that starts with these bytes (a prefix, blanks skipped) is in this
    /// format.
    pub detect_file: fn(&[u8]) -> bool,
    /// The file at a path as a session source.
    pub open: for<'a> fn(&Path, ReadOptions<'a>) -> Result<Sessions<'a>, IngestError>,
    /// The sessions of one JSON value of this format (`label` names it in errors), each
    /// passed through [`check_session`] with `cx`'s limits and tenant.
    pub from_value: fn(Value, &str, &Context<'_>) -> Result<Vec<Session>, ValueError>,
    /// How its sessions are cut into items and keyed by default.
    pub itemize: fn(Granularity) -> ItemizeOptions,
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Format {}

/// Every input format memdex reads, in the order `--format` lists them.
pub static FORMATS: &[Format] = &[
    Format {
        name: "jsonl",
        about: "One session per line: {\"tenant\",\"session_id\",\"date\",\"turns\":[{\"role\",\"content\"}]}",
        benchmark: false,
        detect_value: None,
        detect_file: |start| start.first() == Some(&b'{'),
        open: open_jsonl,
        from_value: session_value,
        itemize: ItemizeOptions::new,
    },
    Format {
        name: "longmemeval",
        about: "LongMemEval JSON (streamed): each question's haystack is a tenant named by its \
                question_id; user turns are the keys (benchmark convention)",
        benchmark: true,
        detect_value: Some(|v| v.get("haystack_sessions").is_some()),
        detect_file: |start| start.first() == Some(&b'[') && contains(start, b"\"question_id\""),
        open: open_longmemeval,
        from_value: longmemeval_value,
        itemize: ItemizeOptions::benchmark,
    },
    Format {
        name: "locomo",
        about: "LoCoMo JSON: each conversation is a tenant; turns are `Speaker: text`",
        benchmark: true,
        detect_value: Some(|v| v.get("conversation").is_some()),
        detect_file: |start| {
            matches!(start.first(), Some(b'[' | b'{'))
                && (contains(start, b"\"conversation\"") || contains(start, b"\"qa\""))
        },
        open: open_locomo,
        from_value: locomo_value,
        itemize: ItemizeOptions::benchmark,
    },
];

/// The format named `name`.
pub fn format(name: &str) -> Result<&'static Format, String> {
    FORMATS.iter().find(|f| f.name == name).ok_or_else(|| {
        let names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
        format!(
            "unknown format {:?}: use {}",
            clip(name, 32),
            names.join(", ")
        )
    })
}

/// The format of one JSON value: the first whose distinguishing key it has, else memdex's
/// own session.
pub fn detect_value(v: &Value) -> &'static Format {
    let by_key = FORMATS
        .iter()
        .find(|f| f.detect_value.is_some_and(|is| is(v)));
    by_key
        .or_else(|| FORMATS.iter().find(|f| f.detect_value.is_none()))
        .unwrap_or(&FORMATS[0])
}

/// Bytes of a file's start that [`detect_file`] looks at.
const DETECT_BYTES: u64 = 1 << 16;

/// The format of the file at `path`, from its first bytes (benchmark formats first, since a
/// LoCoMo object also starts like a JSONL line).
pub fn detect_file(path: &Path) -> Result<&'static Format, IngestError> {
    let io = |source| IngestError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut start = Vec::new();
    let file = std::fs::File::open(path).map_err(io)?;
    file.take(DETECT_BYTES)
        .read_to_end(&mut start)
        .map_err(io)?;
    let skip = start.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let start = &start[skip..];
    let mut order: Vec<&'static Format> = FORMATS.iter().filter(|f| f.benchmark).collect();
    order.extend(FORMATS.iter().filter(|f| !f.benchmark));
    order
        .into_iter()
        .find(|f| (f.detect_file)(start))
        .ok_or_else(|| IngestError::Malformed {
            path: path.to_path_buf(),
            offset: skip as u64,
            message: "cannot tell its format from its first bytes: name it (--format)".into(),
        })
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn open_jsonl<'a>(path: &Path, o: ReadOptions<'a>) -> Result<Sessions<'a>, IngestError> {
    let opts = JsonlOptions {
        on_error: o.on_error,
        max_line_bytes: o.max_line_bytes,
    };
    Ok(Box::new(JsonlSessions::open(path, opts)?))
}

fn open_longmemeval<'a>(path: &Path, o: ReadOptions<'a>) -> Result<Sessions<'a>, IngestError> {
    let source = LongMemEvalSessions::open(path, o.on_error)?;
    Ok(match o.on_record {
        Some(mut hook) => Box::new(source.on_instance(Box::new(move |inst: &LmeInstance| {
            hook(Record::LongMemEval(inst))
        }))),
        None => Box::new(source),
    })
}

fn open_locomo<'a>(path: &Path, o: ReadOptions<'a>) -> Result<Sessions<'a>, IngestError> {
    let convs = read_locomo(path)?;
    if let Some(mut hook) = o.on_record {
        convs.iter().for_each(|c| hook(Record::Locomo(c)));
    }
    Ok(Box::new(locomo_sessions(&convs)))
}

/// memdex's own session (a JSONL line's shape).
fn session_value(v: Value, label: &str, cx: &Context<'_>) -> Result<Vec<Session>, ValueError> {
    let s: SessionIn = serde_json::from_value(v)
        .map_err(|e| ValueError::Invalid(format!("{label}: {}", short(&e))))?;
    let id = s.session_id.clone();
    Ok(vec![s.into_session(cx).map_err(|e| wire(label, &id, e))?])
}

/// One LongMemEval question instance.
fn longmemeval_value(v: Value, label: &str, cx: &Context<'_>) -> Result<Vec<Session>, ValueError> {
    let at = |m: String| ValueError::Invalid(format!("{label}: {m}"));
    let bytes = serde_json::to_vec(&Value::Array(vec![v])).map_err(|e| at(short(&e)))?;
    let name = format!("{label} (LongMemEval)");
    let reader = LongMemEvalReader::new(Path::new(&name), std::io::Cursor::new(bytes));
    let mut out = Vec::new();
    for inst in reader {
        let inst = inst.map_err(|e| ValueError::Invalid(short(&e)))?;
        out.extend(inst.sessions);
    }
    checked(out, label, cx)
}

/// One LoCoMo conversation.
fn locomo_value(v: Value, label: &str, cx: &Context<'_>) -> Result<Vec<Session>, ValueError> {
    let at = |m: String| ValueError::Invalid(format!("{label}: {m}"));
    let bytes = serde_json::to_vec(&v).map_err(|e| at(short(&e)))?;
    let name = format!("{label} (LoCoMo)");
    let convs =
        parse_locomo(Path::new(&name), &bytes).map_err(|e| ValueError::Invalid(short(&e)))?;
    checked(
        convs.into_iter().flat_map(|c| c.sessions).collect(),
        label,
        cx,
    )
}

/// A benchmark record's sessions under the same rules as memdex's own: `cx`'s tenant and
/// limits.
fn checked(
    sessions: Vec<Session>,
    label: &str,
    cx: &Context<'_>,
) -> Result<Vec<Session>, ValueError> {
    for s in &sessions {
        if let Some(t) = cx.tenant.filter(|t| s.tenant != *t) {
            return Err(ValueError::Invalid(format!(
                "{label}: names tenant {:?} but this memory is for {t:?}",
                s.tenant
            )));
        }
        check_session(s, &cx.limits).map_err(|e| wire(label, &s.session_id, e))?;
    }
    Ok(sessions)
}

/// A wire error as its class: over a size limit, or invalid.
fn wire(label: &str, id: &str, e: WireError) -> ValueError {
    let m = format!("{label}: session {:?}: {e}", clip(id, 64));
    match e {
        WireError::TooLarge { .. } => ValueError::TooLarge(m),
        WireError::Invalid { .. } | WireError::Date { .. } => ValueError::Invalid(m),
    }
}

/// A parser's message, which may quote a mistyped value whole: a short prefix of it.
fn short(e: &dyn std::fmt::Display) -> String {
    clip(&e.to_string(), 240).into_owned()
}

/// A boxed source is a source.
impl<S: SessionSource + ?Sized> SessionSource for Box<S> {
    fn skipped(&self) -> &[IngestError] {
        (**self).skipped()
    }

    fn position(&self) -> Option<(u64, u64)> {
        (**self).position()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SessionLimits;
    use serde_json::json;

    fn cx() -> Context<'static> {
        Context {
            tenant: None,
            now_ms: 7,
            limits: SessionLimits::FILES,
        }
    }

    #[test]
    fn names_are_unique_and_one_format_is_the_fallback() {
        let mut names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FORMATS.len());
        assert_eq!(
            FORMATS.iter().filter(|f| f.detect_value.is_none()).count(),
            1
        );
        assert_eq!(format("locomo").unwrap().name, "locomo");
        let e = format("csv").unwrap_err();
        assert!(e.contains("jsonl, longmemeval, locomo"), "{e}");
    }

    #[test]
    fn values_are_detected_by_their_key() {
        let name = |v: Value| detect_value(&v).name;
        assert_eq!(name(json!({"haystack_sessions": []})), "longmemeval");
        assert_eq!(name(json!({"conversation": {}})), "locomo");
        assert_eq!(name(json!({"session_id": "s", "turns": []})), "jsonl");
    }

    #[test]
    fn files_are_detected_by_their_first_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "a.jsonl",
                "\n {\"tenant\": \"a\", \"session_id\": \"s\"}\n",
                Some("jsonl"),
            ),
            (
                "b.json",
                "[{\"question_id\": \"q1\", \"haystack_sessions\": []}]",
                Some("longmemeval"),
            ),
            (
                "c.json",
                "[{\"qa\": [], \"conversation\": {}}]",
                Some("locomo"),
            ),
            (
                "d.json",
                "{\"sample_id\": \"c\", \"conversation\": {}}",
                Some("locomo"),
            ),
            ("e.txt", "hello", None),
        ];
        for (file, text, want) in cases {
            let p = dir.path().join(file);
            std::fs::write(&p, text).unwrap();
            let got = detect_file(&p).ok().map(|f| f.name);
            assert_eq!(got, want, "{file}");
        }
        let e = detect_file(&dir.path().join("e.txt"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("e.txt") && e.contains("--format"), "{e}");
    }

    #[test]
    fn a_value_reads_as_its_format_with_the_same_checks() {
        let one = json!({"tenant": "a", "session_id": "s1",
                         "turns": [{"role": "user", "content": "hi"}]});
        let s = (detect_value(&one).from_value)(one, "sessions[0]", &cx()).unwrap();
        assert_eq!((s[0].tenant.as_str(), s[0].timestamp_ms), ("a", 7));
        let big = Context {
            limits: SessionLimits {
                max_turns: 10,
                max_text_bytes: 1,
            },
            ..cx()
        };
        let locomo = json!({"sample_id": "c", "conversation": {"speaker_a": "A",
            "speaker_b": "B", "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hello"}]}});
        let f = detect_value(&locomo);
        assert_eq!(
            (f.itemize)(Granularity::Turn),
            ItemizeOptions::benchmark(Granularity::Turn)
        );
        match (f.from_value)(locomo, "sessions[3]", &big) {
            Err(ValueError::TooLarge(m)) => assert!(m.starts_with("sessions[3]: session"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
