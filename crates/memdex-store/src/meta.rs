//! The records the manifest lists, one per committed file: segments (with their tenant
//! ranges), the shared layout's content files, the word table's files and the derived
//! structures' settings and segments. Plain data with their own consistency checks; a leaf,
//! so the manifest and the modules that write or read these files all import it and it
//! imports none of them.

use serde::{Deserialize, Serialize};

use crate::aux_rows::{AuxKind, AuxTenantRange};
use crate::checksum::Checksum;

/// One committed content file of the shared layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentMeta {
    /// From the segments' id sequence: no segment or content file ever shares an id.
    pub id: u64,
    /// File name inside `segments/`.
    pub file: String,
    pub rows: u64,
    pub bytes: u64,
    /// XXH3-64 of the file's bytes, recorded when it is sealed (absent in stores written
    /// before checksums, until their first compaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<Checksum>,
}

/// One committed segment file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentMeta {
    pub id: u64,
    /// File name inside `segments/`.
    pub file: String,
    pub rows: u64,
    pub bytes: u64,
    /// XXH3-64 of the file's bytes, recorded when it is sealed (absent in stores written
    /// before checksums, until their first compaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<Checksum>,
    pub min_item_id: u64,
    pub max_item_id: u64,
    /// Tenants in row order; each occupies one contiguous row range.
    pub tenants: Vec<TenantRange>,
}

/// The rows of one tenant inside a segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantRange {
    pub tenant: String,
    pub start: u64,
    pub rows: u64,
    /// Highest position in the tenant's history held by this range.
    pub max_position: u64,
}

/// One committed word file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WordsMeta {
    /// From the segments' id sequence: no segment, content or word file shares an id.
    pub id: u64,
    /// File name inside `segments/`.
    pub file: String,
    pub rows: u64,
    pub bytes: u64,
    /// XXH3-64 of the file's bytes, recorded when it is sealed (absent in stores written
    /// before checksums, until their first compaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<Checksum>,
}

/// TiM thought memory settings, fixed when the structures are enabled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThoughtsConfig {
    /// The thought extractor (`rules-v1`, or a model extractor's name).
    pub extractor: String,
    /// LSH buckets per table (`b` of `argmax([xR; −xR])`, even).
    pub buckets: u32,
    /// Independent LSH tables.
    pub tables: u32,
    pub seed: u64,
    /// Near-duplicates: a new thought this close (cosine) to a live one in a shared bucket is
    /// merged into it.
    pub merge_cosine: f32,
}

/// MemTree settings, fixed when the structures are enabled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeConfig {
    /// `θ(d) = θ0 · e^{λd}`: base threshold.
    pub theta0: f32,
    /// Growth of the threshold with depth.
    pub lambda: f32,
    /// Bound on a parent's aggregated content (characters).
    pub content_chars: u32,
}

/// One structure segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuxSegmentMeta {
    pub id: u64,
    pub kind: AuxKind,
    /// File name inside `structures/`.
    pub file: String,
    pub rows: u64,
    pub bytes: u64,
    /// XXH3-64 of the file's bytes, recorded when it is sealed (absent in stores written
    /// before checksums, until their first compaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<Checksum>,
    /// Tenants in row order; each occupies one contiguous row range.
    pub tenants: Vec<AuxTenantRange>,
}

/// The manifest's record of the structures: what is on, the segments, the watermark.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StructuresMeta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thoughts: Option<ThoughtsConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<TreeConfig>,
    /// Every item with a lower id has been through the structures (post-thinking, tree
    /// insertion); later items have not yet.
    #[serde(default)]
    pub processed_to: u64,
    #[serde(default)]
    pub segments: Vec<AuxSegmentMeta>,
}

impl StructuresMeta {
    /// Refuses entries that lie: file names outside `structures/`, repeated ids or files,
    /// tenant ranges that do not tile the rows.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let mut ids = std::collections::HashSet::new();
        for s in &self.segments {
            let seg = format!("structure segment {} ({:?})", s.id, s.file);
            if s.file != aux_file_name(s.id) || !ids.insert(s.id) {
                return Err(format!("{seg}: name must be aux-<id>.arrow, ids unique"));
            }
            let mut next = 0u64;
            for t in &s.tenants {
                if t.start != next || t.rows == 0 {
                    return Err(format!("{seg}: tenant ranges must tile the rows"));
                }
                next = t.start.saturating_add(t.rows);
            }
            if next != s.rows {
                return Err(format!(
                    "{seg}: tenant ranges cover {next} of {} rows",
                    s.rows
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn next_id(&self) -> u64 {
        self.segments.iter().map(|s| s.id + 1).max().unwrap_or(1)
    }
}

/// The directory of segment, content and word files inside a store directory.
pub(crate) const SEGMENTS_DIR: &str = "segments";
/// The directory of the structure files inside a store directory.
pub(crate) const STRUCTURES_DIR: &str = "structures";

/// A segments-directory file's path inside the store directory (what checks are keyed by).
pub(crate) fn segment_file(file: &str) -> String {
    format!("{SEGMENTS_DIR}/{file}")
}

/// A structure file's path inside the store directory.
pub(crate) fn aux_file(file: &str) -> String {
    format!("{STRUCTURES_DIR}/{file}")
}

pub(crate) fn aux_file_name(id: u64) -> String {
    format!("aux-{id:08}.arrow")
}
