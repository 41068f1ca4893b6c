//! `memdex verify`: every file of a store read whole and checked — its size, its checksum,
//! its Arrow structure and what the manifest says it holds — and, for each damaged file, what
//! it holds (tenants, sessions, rows; for a content file, the rows of every segment that
//! reference it). Works on a store that no longer opens, and on a store being served (a file
//! that compaction unlinks meanwhile makes it start over with the newer manifest).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::checksum::Checksum;
use crate::contents::ContentFile;
use crate::error::StoreError;
use crate::integrity::Checks;
use crate::manifest::{Manifest, MANIFEST, SEGMENTS_DIR};
use crate::meta::AuxSegmentMeta;
use crate::meta::{aux_file, segment_file, STRUCTURES_DIR};
use crate::segment::Segment;
use crate::words::WordTable;

/// What one verification found.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub store: PathBuf,
    /// The manifest version checked (None: the manifest itself is damaged).
    pub manifest_version: Option<u64>,
    /// The manifest first, then every file it names.
    pub files: Vec<FileReport>,
    pub damaged: usize,
    /// Files whose bytes give the checksum recorded.
    pub verified: usize,
    /// Files with no checksum recorded (written before checksums): size and structure only.
    pub unrecorded: usize,
    /// Bytes read.
    pub bytes: u64,
    /// Times a concurrent compaction made it start over.
    pub restarts: usize,
}

impl VerifyReport {
    pub fn is_sound(&self) -> bool {
        self.damaged == 0
    }

    /// The damaged files' reports.
    pub fn damaged_files(&self) -> impl Iterator<Item = &FileReport> {
        self.files
            .iter()
            .filter(|f| f.status == FileStatus::Damaged)
    }
}

/// Which kind of store file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    Manifest,
    Segment,
    Content,
    Words,
    Thoughts,
    Tree,
}

/// One file's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    Ok,
    /// Sound as far as can be told without one: size and structure.
    NoChecksum,
    Damaged,
}

/// One file checked.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    /// Path inside the store directory.
    pub file: String,
    pub kind: FileKind,
    pub bytes: u64,
    pub status: FileStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// What a damaged file holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holds: Option<Holds>,
}

/// What a damaged file holds: the rows whose data is in it, by tenant.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Holds {
    /// Live rows affected (searchable until the damage).
    pub rows: u64,
    /// Deleted rows (tombstoned, not compacted yet) whose bytes are in it.
    pub deleted_rows: u64,
    pub tenants: Vec<TenantHold>,
    /// Word files: the terms whose vectors it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One tenant's share of a damaged file.
#[derive(Debug, Clone, Serialize)]
pub struct TenantHold {
    pub tenant: String,
    /// Live rows.
    pub rows: u64,
    /// Distinct sessions of those rows (0: unknown, the file could not be decoded).
    pub sessions: u64,
    /// Their ids, the first [`SESSION_IDS`].
    pub session_ids: Vec<String>,
}

/// Session ids listed per tenant at most.
pub const SESSION_IDS: usize = 50;

/// Reads and checks every file of the store in `dir`. `NotAStore` and an unsupported format
/// are errors; a damaged manifest is a report (nothing else can be checked then).
pub fn verify(dir: &Path) -> Result<VerifyReport, StoreError> {
    let mut restarts = 0;
    loop {
        let manifest = match Manifest::load(dir) {
            Ok(m) => m,
            Err(e @ (StoreError::NotAStore { .. } | StoreError::FormatVersion { .. })) => {
                return Err(e)
            }
            Err(e) => return Ok(manifest_damaged(dir, &e)),
        };
        let pass = Pass::run(dir, &manifest);
        let moved = || Manifest::load(dir).is_ok_and(|m| m.version != manifest.version);
        if pass.missing && restarts < 100 && moved() {
            restarts += 1;
            continue;
        }
        return Ok(pass.report(dir, &manifest, restarts));
    }
}

fn manifest_damaged(dir: &Path, e: &StoreError) -> VerifyReport {
    let bytes = std::fs::metadata(Manifest::path(dir)).map_or(0, |m| m.len());
    VerifyReport {
        store: dir.to_path_buf(),
        manifest_version: None,
        files: vec![FileReport {
            file: MANIFEST.into(),
            kind: FileKind::Manifest,
            bytes,
            status: FileStatus::Damaged,
            problem: Some(e.to_string()),
            holds: Some(Holds {
                note: Some("everything: the store cannot be opened without it".into()),
                ..Holds::default()
            }),
        }],
        damaged: 1,
        verified: 0,
        unrecorded: 0,
        bytes,
        restarts: 0,
    }
}

/// One pass over one manifest version.
struct Pass {
    files: Vec<FileReport>,
    /// A named file was missing (maybe compacted away meanwhile).
    missing: bool,
    contents: Vec<Option<ContentFile>>,
    segments: Vec<Option<Segment>>,
}

impl Pass {
    fn run(dir: &Path, m: &Manifest) -> Pass {
        let checks = Arc::new(Checks::default());
        let mut pass = Pass {
            files: Vec::new(),
            missing: false,
            contents: Vec::new(),
            segments: Vec::new(),
        };
        let sealed = crate::manifest::is_sealed(dir);
        let bytes = std::fs::metadata(Manifest::path(dir)).map_or(0, |x| x.len());
        pass.files.push(FileReport {
            file: MANIFEST.into(),
            kind: FileKind::Manifest,
            bytes,
            status: [FileStatus::NoChecksum, FileStatus::Ok][usize::from(sealed)],
            problem: None,
            holds: None,
        });
        let (seg_dir, dim) = (dir.join(SEGMENTS_DIR), m.model.dim);
        for c in &m.contents {
            let f = segment_file(&c.file);
            let opened = pass.check(dir, &f, FileKind::Content, c.bytes, c.checksum, || {
                ContentFile::open(&seg_dir, c, dim, &checks)
            });
            pass.contents.push(opened);
        }
        for s in &m.segments {
            let f = segment_file(&s.file);
            let opened = pass.check(dir, &f, FileKind::Segment, s.bytes, s.checksum, || {
                Segment::open_unresolved(&seg_dir, s, dim, m.layout, &checks)
            });
            pass.segments.push(opened);
        }
        for w in &m.words {
            let f = segment_file(&w.file);
            pass.check(dir, &f, FileKind::Words, w.bytes, w.checksum, || {
                WordTable::open(&seg_dir, std::slice::from_ref(w), dim, None, &checks)
            });
        }
        for a in m.structures.iter().flat_map(|s| &s.segments) {
            let kind = match a.kind {
                crate::AuxKind::Thoughts => FileKind::Thoughts,
                crate::AuxKind::Tree => FileKind::Tree,
            };
            pass.check(dir, &aux_file(&a.file), kind, a.bytes, a.checksum, || {
                aux_structure(dir, a)
            });
        }
        pass
    }

    /// Checks one file's size and checksum from its bytes, then its structure with `open`;
    /// records the report and returns what `open` gave (None when it failed).
    fn check<T>(
        &mut self,
        dir: &Path,
        file: &str,
        kind: FileKind,
        bytes: u64,
        expected: Option<Checksum>,
        open: impl FnOnce() -> Result<T, StoreError>,
    ) -> Option<T> {
        let raw = raw_check(&dir.join(file), bytes, expected);
        let (status, mut problem) = match raw {
            Err(e) => {
                self.missing |= e.is_missing_file();
                let p = match e.is_missing_file() {
                    true => "missing: the manifest names it, the directory does not hold it".into(),
                    false => e.to_string(),
                };
                self.push(file, kind, bytes, FileStatus::Damaged, Some(p));
                return None;
            }
            Ok(verdict) => verdict,
        };
        let opened = match open() {
            Ok(t) => Some(t),
            Err(e) => {
                let e = e.to_string();
                problem = Some(problem.map_or(e.clone(), |p| format!("{p}; {e}")));
                None
            }
        };
        let status = match problem {
            Some(_) => FileStatus::Damaged,
            None => status,
        };
        self.push(file, kind, bytes, status, problem);
        opened
    }

    fn push(
        &mut self,
        file: &str,
        kind: FileKind,
        bytes: u64,
        status: FileStatus,
        problem: Option<String>,
    ) {
        self.files.push(FileReport {
            file: file.to_string(),
            kind,
            bytes,
            status,
            problem,
            holds: None,
        });
    }

    fn report(mut self, dir: &Path, m: &Manifest, restarts: usize) -> VerifyReport {
        self.fill_holds(m);
        let count = |s: FileStatus| self.files.iter().filter(|f| f.status == s).count();
        VerifyReport {
            store: dir.to_path_buf(),
            manifest_version: Some(m.version),
            damaged: count(FileStatus::Damaged),
            verified: count(FileStatus::Ok),
            unrecorded: count(FileStatus::NoChecksum),
            bytes: self.files.iter().map(|f| f.bytes).sum(),
            files: self.files,
            restarts,
        }
    }
}

/// A file's size and checksum from its bytes: `Ok((status, problem))`, or the error that
/// kept it from being read.
fn raw_check(
    path: &Path,
    bytes: u64,
    expected: Option<Checksum>,
) -> Result<(FileStatus, Option<String>), StoreError> {
    let buffer = crate::mmap::map_file(path)?;
    let len = buffer.len() as u64;
    if len != bytes {
        let p = format!("file is {len} bytes, the manifest says {bytes} (truncated or replaced)");
        return Ok((FileStatus::Damaged, Some(p)));
    }
    let got = Checksum::of(buffer.as_slice());
    Ok(match expected {
        None => (FileStatus::NoChecksum, None),
        Some(want) if want == got => (FileStatus::Ok, None),
        Some(want) => (
            FileStatus::Damaged,
            Some(format!(
                "checksum mismatch: the manifest records {want}, the bytes give {got}"
            )),
        ),
    })
}

fn aux_structure(dir: &Path, a: &AuxSegmentMeta) -> Result<(), StoreError> {
    let path = dir.join(STRUCTURES_DIR).join(&a.file);
    let (_, batch) = crate::ipc::map_batch(&path, a.bytes)?;
    crate::aux_rows::check(&batch, a.kind, a.rows)
        .map_err(|message| StoreError::Segment { path, message })
}

/// Per tenant: live rows, deleted rows, sessions.
type Tally = BTreeMap<String, (u64, u64, BTreeSet<String>)>;

impl Pass {
    /// What each damaged file holds.
    fn fill_holds(&mut self, m: &Manifest) {
        let mut held: HashMap<String, Holds> = HashMap::new();
        self.content_holds(m, &mut held);
        for (s, seg) in m.segments.iter().zip(&self.segments) {
            let file = segment_file(&s.file);
            if self.is_damaged(&file) {
                held.insert(file, segment_holds(m, s, seg.as_ref()));
            }
        }
        for w in &m.words {
            held.insert(
                segment_file(&w.file),
                Holds {
                    terms: Some(w.rows),
                    note: Some(
                        "query expansion loses these terms' vectors; rows are unaffected".into(),
                    ),
                    ..Holds::default()
                },
            );
        }
        for a in m.structures.iter().flat_map(|s| &s.segments) {
            let mut tally = Tally::new();
            for t in &a.tenants {
                tally.entry(t.tenant.clone()).or_default().0 += t.rows;
            }
            let mut h = holds(tally);
            h.note = Some(format!(
                "{:?} structure rows (derived; items are unaffected)",
                a.kind
            ));
            held.insert(aux_file(&a.file), h);
        }
        for f in self
            .files
            .iter_mut()
            .filter(|f| f.status == FileStatus::Damaged)
        {
            f.holds = held.remove(&f.file);
        }
    }

    fn is_damaged(&self, file: &str) -> bool {
        (self.files.iter()).any(|f| f.file == file && f.status == FileStatus::Damaged)
    }

    /// Rows of every decodable segment whose content lies in a damaged content file (or in
    /// none that could be read).
    fn content_holds(&self, m: &Manifest, held: &mut HashMap<String, Holds>) {
        let names: Vec<String> = m.contents.iter().map(|c| segment_file(&c.file)).collect();
        let damaged: Vec<bool> = names.iter().map(|n| self.is_damaged(n)).collect();
        if !damaged.contains(&true) {
            return;
        }
        let mut index: HashMap<u64, usize> = HashMap::new();
        for (i, f) in self.contents.iter().enumerate() {
            for &h in f.iter().flat_map(|f| f.hashes()) {
                index.insert(h, i);
            }
        }
        // rows whose content no readable file holds: in one of the unreadable ones
        let unreadable: Vec<usize> = (0..names.len())
            .filter(|&i| self.contents[i].is_none())
            .collect();
        let mut tallies: Vec<Tally> = vec![Tally::new(); names.len()];
        for seg in self.segments.iter().flatten() {
            let Some(refs) = seg.content_refs() else {
                continue;
            };
            for (row, r) in refs.iter().enumerate() {
                let file = index.get(r).copied().or(unreadable.first().copied());
                if let Some(i) = file.filter(|&i| damaged[i]) {
                    tally_row(&mut tallies[i], seg, row, &m.deleted);
                }
            }
        }
        for (i, tally) in tallies.into_iter().enumerate().filter(|(i, _)| damaged[*i]) {
            let mut h = holds(tally);
            if self.contents[i].is_none() && unreadable.len() > 1 {
                h.note = Some(format!(
                    "{} content files could not be read; rows whose content none of the \
                     readable ones holds are listed under the first",
                    unreadable.len()
                ));
            }
            held.insert(names[i].clone(), h);
        }
    }
}

fn tally_row(tally: &mut Tally, seg: &Segment, row: usize, deleted: &[u64]) {
    let t = tally.entry(seg.tenant(row).to_string()).or_default();
    match deleted.binary_search(&seg.item_ids()[row]).is_ok() {
        true => t.1 += 1,
        false => {
            t.0 += 1;
            t.2.insert(seg.session_id(row).to_string());
        }
    }
}

/// A damaged segment's rows: read from it when it still decodes, else the manifest's ranges.
fn segment_holds(m: &Manifest, s: &crate::meta::SegmentMeta, seg: Option<&Segment>) -> Holds {
    let mut tally = Tally::new();
    match seg {
        Some(seg) => (0..seg.rows()).for_each(|r| tally_row(&mut tally, seg, r, &m.deleted)),
        None => {
            for t in &s.tenants {
                tally.entry(t.tenant.clone()).or_default().0 += t.rows;
            }
        }
    }
    let mut h = holds(tally);
    h.note = Some(match seg {
        Some(_) => "sessions as read from the damaged file".into(),
        None => "the file cannot be decoded: rows from the manifest, deleted ones included; \
                 sessions unknown"
            .into(),
    });
    h
}

fn holds(tally: Tally) -> Holds {
    let mut h = Holds::default();
    for (tenant, (rows, deleted, sessions)) in tally {
        h.rows += rows;
        h.deleted_rows += deleted;
        if rows == 0 {
            continue;
        }
        h.tenants.push(TenantHold {
            tenant,
            rows,
            sessions: sessions.len() as u64,
            session_ids: sessions.into_iter().take(SESSION_IDS).collect(),
        });
    }
    h
}
