use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use memdex_core::{check_tenant_name, clip, clip_message, Granularity, ModelInfo};
use serde::{Deserialize, Serialize};

use crate::checksum::Checksum;
use crate::error::{io, StoreError};
use crate::meta::{ContentMeta, SegmentMeta, StructuresMeta, WordsMeta};

/// On-disk format version of a store whose rows hold their own content (the inline layout).
pub const FORMAT_VERSION: u32 = 3;
/// Format version of a store whose rows reference shared content files (the shared layout):
/// builds that read only version 3 refuse it by name instead of misreading its segments.
pub const FORMAT_VERSION_SHARED: u32 = 4;

pub(crate) const MANIFEST: &str = "manifest.json";
pub(crate) use crate::meta::SEGMENTS_DIR;

/// The committed state of a store. Replaced atomically as a whole on every commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    /// Incremented by every commit.
    pub version: u64,
    pub model: ModelInfo,
    /// Granularity of the items, fixed at creation (one store holds one kind of item).
    pub granularity: Granularity,
    /// Where the model was loaded from when the store was created: a hint for `search`.
    #[serde(default)]
    pub model_source: Option<String>,
    /// What the engine extracts at index time (fixed at creation, like the granularity).
    #[serde(default)]
    pub extraction: Extraction,
    pub segments: Vec<SegmentMeta>,
    /// Where rows keep their content (fixed at creation). Absent in older manifests (=
    /// inline).
    #[serde(default = "Layout::absent")]
    pub layout: Layout,
    /// The shared layout's content files (`cnt-N.arrow`): each distinct item content (key,
    /// value, terms, vector) once, referenced by the rows' `content_hash`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contents: Vec<ContentMeta>,
    /// Tombstones: ids of deleted items whose rows are still in segment files, ascending.
    /// Readers skip them; compaction rewrites their segments without them and drops the ids
    /// here. Absent in older manifests (= none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<u64>,
    /// Lowest id the next item may take, so ids stay unique after compaction removed the
    /// newest rows. Absent in older manifests (= 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub next_id_floor: u64,
    /// TiM LSH applied at index time (bucket-id column in the segments written since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lsh: Option<crate::LshMeta>,
    /// Lowest id the next segment may take: ids are never reused, even after compaction
    /// retired the newest segments, so nothing keyed by segment id (a device's resident
    /// copies) can see another segment's rows. Absent in older manifests (= 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub next_segment_id: u64,
    /// Derived memory structures (TiM thoughts, MemTree) and their segments, when enabled
    /// (see `structures`). Absent in older manifests (= none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structures: Option<StructuresMeta>,
    /// The word table's files (`wrd-N.arrow`): a vector per BM25 term of the stored keys,
    /// for query expansion (see `words`). Absent in older manifests (= none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<WordsMeta>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Index-time extraction settings of a store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extraction {
    /// Event dates are extracted into the `events` column (the time stage needs them).
    pub events: bool,
    /// The fact extractor whose output is prepended to keys (`None`: keys unexpanded).
    pub facts: Option<String>,
    /// FragRel semantic neighbours stored per item (0: none).
    #[serde(default)]
    pub neighbors: usize,
    /// Turn stores: how many preceding messages each turn's key carries (0: none; stores
    /// written before this setting existed read as 0 and keep their keys).
    #[serde(default)]
    pub key_context: usize,
}

/// How a store keeps item content (key, value, terms, vector).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Every row holds its own copy (format 3): one self-contained Arrow file per segment.
    Inline,
    /// Each distinct content once, in content files; rows reference it by `content_hash`
    /// (format 4). Tenants that share sessions share their bytes.
    #[default]
    Shared,
}

impl Layout {
    /// The layout of a manifest that names none: written before layouts existed.
    fn absent() -> Layout {
        Layout::Inline
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Layout::Inline => "inline",
            Layout::Shared => "shared",
        }
    }

    /// The manifest format version a store of this layout is written with.
    pub fn format_version(&self) -> u32 {
        match self {
            Layout::Inline => FORMAT_VERSION,
            Layout::Shared => FORMAT_VERSION_SHARED,
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Layout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "inline" => Ok(Layout::Inline),
            "shared" => Ok(Layout::Shared),
            other => Err(format!("unknown store layout {other:?} (inline or shared)")),
        }
    }
}

impl Manifest {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(MANIFEST)
    }

    /// Reads `DIR/manifest.json`.
    pub fn load(dir: &Path) -> Result<Manifest, StoreError> {
        let path = Self::path(dir);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotAStore {
                    dir: dir.to_path_buf(),
                })
            }
            Err(e) => return Err(io(&path)(e)),
        };
        // damage anywhere in a sealed manifest is named as such before anything is parsed
        let sealed = unseal(&bytes);
        if let Some(Err(message)) = sealed {
            return Err(StoreError::Manifest { path, message });
        }
        #[derive(Deserialize)]
        struct Version {
            format_version: u32,
        }
        let v: Version = serde_json::from_slice(&bytes).map_err(|e| StoreError::Manifest {
            path: path.clone(),
            message: clip_message(&e.to_string()),
        })?;
        if v.format_version != FORMAT_VERSION && v.format_version != FORMAT_VERSION_SHARED {
            return Err(StoreError::FormatVersion {
                path,
                found: v.format_version,
                supported: FORMAT_VERSION_SHARED,
            });
        }
        let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| StoreError::Manifest {
            path: path.clone(),
            message: clip_message(&e.to_string()),
        })?;
        m.validate().map_err(|message| StoreError::Manifest {
            path: path.clone(),
            message: clip_message(&message),
        })?;
        // a manifest without its own checksum was written before checksums, unless it
        // records its files' (only a sealed one does: then the seal line itself was damaged)
        if sealed.is_none() && m.records_checksums() {
            return Err(StoreError::Manifest {
                path,
                message: "the manifest records its files' checksums but not its own: it was \
                          changed after it was written"
                    .into(),
            });
        }
        Ok(m)
    }

    /// Whether any file entry carries a checksum.
    fn records_checksums(&self) -> bool {
        let aux = self.structures.iter().flat_map(|s| &s.segments);
        (self.segments.iter().any(|s| s.checksum.is_some()))
            || self.contents.iter().any(|c| c.checksum.is_some())
            || self.words.iter().any(|w| w.checksum.is_some())
            || aux.clone().any(|a| a.checksum.is_some())
    }

    /// Rewrites `DIR/manifest.json` as it is now (any JSON object, its own checksum field
    /// dropped) with a fresh checksum: for a manifest edited by hand (tests; a repair a
    /// person made on purpose). Nothing else is checked.
    pub fn reseal(dir: &Path) -> Result<(), StoreError> {
        let path = Self::path(dir);
        let bytes = fs::read(&path).map_err(io(&path))?;
        let bad = |e: serde_json::Error| StoreError::Manifest {
            path: path.clone(),
            message: e.to_string(),
        };
        let mut value: serde_json::Value = serde_json::from_slice(&bytes).map_err(bad)?;
        if let Some(m) = value.as_object_mut() {
            m.remove("checksum");
        }
        let body = serde_json::to_vec_pretty(&value).map_err(bad)?;
        let tmp = dir.join(format!("{MANIFEST}.tmp"));
        write_durably(&tmp, &path, &seal(body))
    }

    /// Refuses a manifest that lies about its segments: file names outside `segments/`,
    /// repeated ids or files, tenant ranges that do not tile the rows, inverted id bounds,
    /// unsorted tombstones. (What a segment file holds is checked against its entry when it
    /// is opened.)
    fn validate(&self) -> Result<(), String> {
        let mut ids = std::collections::HashSet::new();
        let mut files = std::collections::HashSet::new();
        for s in &self.segments {
            let seg = format!("segment {} ({:?})", s.id, clip(&s.file, 64));
            if !is_file_name(&s.file, "seg-") {
                return Err(format!("{seg}: file name must be seg-<digits>.arrow"));
            }
            if !ids.insert(s.id) || !files.insert(s.file.as_str()) {
                return Err(format!("{seg}: id or file listed twice"));
            }
            if s.min_item_id > s.max_item_id
                || (s.rows > 0 && s.max_item_id - s.min_item_id < s.rows - 1)
            {
                return Err(format!(
                    "{seg}: item ids {}..={} cannot hold {} rows",
                    s.min_item_id, s.max_item_id, s.rows
                ));
            }
            let mut next = 0u64;
            for t in &s.tenants {
                // a name the store would not accept is no tenant of it
                check_tenant_name(&t.tenant).map_err(|e| format!("{seg}: {e}"))?;
                if t.start != next || t.rows == 0 {
                    return Err(format!(
                        "{seg}: tenant {:?} range starts at row {} with {} rows; ranges must tile the rows",
                        t.tenant, t.start, t.rows
                    ));
                }
                next = t.start.saturating_add(t.rows);
            }
            if next != s.rows {
                return Err(format!(
                    "{seg}: tenant ranges cover {next} rows of {}",
                    s.rows
                ));
            }
        }
        self.validate_contents(&ids, &mut files)?;
        if self.deleted.windows(2).any(|w| w[0] >= w[1]) {
            return Err("deleted item ids are not ascending".into());
        }
        match &self.structures {
            Some(s) => s.validate(),
            None => Ok(()),
        }
    }

    /// Content files (only in a shared store, named `cnt-<digits>.arrow`) and word files
    /// (`wrd-<digits>.arrow`): ids and files unique among segments, contents and words alike.
    fn validate_contents<'a>(
        &'a self,
        ids: &std::collections::HashSet<u64>,
        files: &mut std::collections::HashSet<&'a str>,
    ) -> Result<(), String> {
        if self.format_version != self.layout.format_version() {
            return Err(format!(
                "format version {} does not match the {} layout (version {})",
                self.format_version,
                self.layout,
                self.layout.format_version()
            ));
        }
        if self.layout == Layout::Inline && !self.contents.is_empty() {
            return Err("an inline store lists content files".into());
        }
        let mut seen = std::collections::HashSet::new();
        let words = (self.words.iter()).map(|w| ("word file", "wrd-", w.id, w.file.as_str()));
        let contents =
            (self.contents.iter()).map(|c| ("content file", "cnt-", c.id, c.file.as_str()));
        for (kind, prefix, id, file) in words.chain(contents) {
            let what = format!("{kind} {id} ({:?})", clip(file, 64));
            if !is_file_name(file, prefix) {
                return Err(format!("{what}: file name must be {prefix}<digits>.arrow"));
            }
            if ids.contains(&id) || !seen.insert(id) || !files.insert(file) {
                return Err(format!("{what}: id or file listed twice"));
            }
        }
        Ok(())
    }

    /// Every file the manifest names inside `segments/` (segments, content files, word
    /// files).
    pub fn files(&self) -> impl Iterator<Item = &str> {
        (self.segments.iter().map(|s| s.file.as_str()))
            .chain(self.contents.iter().map(|c| c.file.as_str()))
            .chain(self.words.iter().map(|w| w.file.as_str()))
    }

    /// The id the next new segment takes (and, in the manifest that names it, the next one
    /// after it).
    pub fn next_segment_id(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| s.id + 1)
            .chain(self.contents.iter().map(|c| c.id + 1))
            .chain(self.words.iter().map(|w| w.id + 1))
            .max()
            .unwrap_or(1)
            .max(self.next_segment_id)
    }

    /// Atomically replaces `DIR/manifest.json`: write temp, fsync, rename, fsync the directory.
    pub(crate) fn save(&self, dir: &Path) -> Result<(), StoreError> {
        let path = Self::path(dir);
        let tmp = dir.join(format!("{MANIFEST}.tmp"));
        let json = serde_json::to_vec_pretty(self).map_err(|e| StoreError::Manifest {
            path: path.clone(),
            message: e.to_string(),
        })?;
        write_durably(&tmp, &path, &seal(json))?;
        Ok(())
    }

    /// Every file the manifest names, as paths inside the store directory, with the checksum
    /// each entry records: what verification and snapshots go through.
    pub fn all_files(&self) -> Vec<(String, u64, Option<Checksum>)> {
        let seg = |f: &str| format!("{SEGMENTS_DIR}/{f}");
        let mut out: Vec<(String, u64, Option<Checksum>)> = Vec::new();
        out.extend((self.segments.iter()).map(|s| (seg(&s.file), s.bytes, s.checksum)));
        out.extend((self.contents.iter()).map(|c| (seg(&c.file), c.bytes, c.checksum)));
        out.extend((self.words.iter()).map(|w| (seg(&w.file), w.bytes, w.checksum)));
        for a in self.structures.iter().flat_map(|s| &s.segments) {
            out.push((crate::meta::aux_file(&a.file), a.bytes, a.checksum));
        }
        out
    }

    /// Next item id: one past the highest committed.
    pub fn next_item_id(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| s.max_item_id + 1)
            .max()
            .unwrap_or(0)
            .max(self.next_id_floor)
    }

    pub fn rows(&self) -> u64 {
        self.segments.iter().map(|s| s.rows).sum()
    }

    /// Bytes of every segment, content and word file.
    pub fn bytes(&self) -> u64 {
        let segments: u64 = self.segments.iter().map(|s| s.bytes).sum();
        let words: u64 = self.words.iter().map(|w| w.bytes).sum();
        segments + words + self.contents.iter().map(|c| c.bytes).sum::<u64>()
    }
}

/// What precedes the manifest's own checksum, its last field: `,\n  "checksum": "xxh3:…"\n}`.
const SEAL: &str = ",\n  \"checksum\": \"";

/// `json` (a pretty-printed object, ending in `\n}`) with its own checksum as the last
/// field: the checksum of the text without that field.
fn seal(mut json: Vec<u8>) -> Vec<u8> {
    let sum = Checksum::of(&json);
    if json.ends_with(b"\n}") {
        json.truncate(json.len() - 2);
        json.extend_from_slice(format!("{SEAL}{sum}\"\n}}\n").as_bytes());
    }
    json
}

/// Whether the manifest in `dir` carries its own checksum (a store written before checksums
/// does not).
pub(crate) fn is_sealed(dir: &Path) -> bool {
    fs::read(Manifest::path(dir)).is_ok_and(|b| unseal(&b).is_some())
}

/// Checks a sealed manifest's text against its checksum; None when it carries none.
fn unseal(bytes: &[u8]) -> Option<Result<(), String>> {
    let at = bytes
        .windows(SEAL.len())
        .rposition(|w| w == SEAL.as_bytes())?;
    let tail = &bytes[at + SEAL.len()..];
    let end = tail.iter().position(|&b| b == b'"').unwrap_or(tail.len());
    let rest = String::from_utf8_lossy(&tail[end.min(tail.len())..]).into_owned();
    let recorded = std::str::from_utf8(&tail[..end])
        .ok()
        .and_then(|t| t.parse::<Checksum>().ok());
    let Some(recorded) = recorded.filter(|_| rest == "\"\n}\n") else {
        return Some(Err("the manifest's checksum line is malformed".into()));
    };
    let body = [&bytes[..at], b"\n}"].concat();
    let got = Checksum::of(&body);
    Some(match got == recorded {
        true => Ok(()),
        false => Err(format!(
            "checksum mismatch: the manifest records {recorded}, its text gives {got} (the \
             file changed after it was written)"
        )),
    })
}

/// `seg-<digits>.arrow` / `cnt-<digits>.arrow`: the only names the writer gives, so no path
/// separator or `..`.
fn is_file_name(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|r| r.strip_suffix(".arrow"))
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Writes `bytes` to `tmp`, fsyncs it, renames it to `dst` and fsyncs the parent directory.
/// A failure leaves neither `tmp` nor a partial `dst` behind (a full disk keeps no debris).
pub(crate) fn write_durably(tmp: &Path, dst: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let written = (|| {
        let mut f = File::create(tmp).map_err(io(tmp))?;
        f.write_all(bytes).map_err(io(tmp))?;
        f.sync_all().map_err(io(tmp))?;
        drop(f);
        fs::rename(tmp, dst).map_err(io(dst))
    })();
    if written.is_err() {
        let _ = fs::remove_file(tmp);
    }
    written?;
    sync_dir(dst.parent().unwrap_or(Path::new(".")))
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io(dir))?;
    }
    Ok(())
}
