//! Fused-ranking parts and their text columns resident on the device by content key
//! ([`crate::RankPart::key`], [`crate::PartText::key`]): what a batch saw before is not
//! uploaded again; the batch's matrix and row columns are assembled from the parts
//! (`assemble`: the kernel reads one matrix). Least recently used parts and texts go when the
//! resident bytes pass the budget (those of the batch in hand stay until it is done: they are
//! shared).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::assemble::{Columns, DevicePart};
use super::text::DeviceText;
use super::{nonempty, DeviceMatrix, DeviceRankRows, Gpu};
use crate::{Assembly, AssemblyGate, KernelError, PartText, RankPart};

/// Resident bytes kept at most when the device's memory is unknown (parts of one batch may
/// exceed it).
pub const DEFAULT_RESIDENT_BYTES: usize = 8 << 30;

/// A value resident by key: a part's rows or its text columns.
#[derive(Debug)]
struct Entry<V> {
    value: Arc<V>,
    used: u64,
    bytes: usize,
}

/// Counters of the resident parts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResidentStats {
    pub parts: usize,
    pub bytes: usize,
    /// Parts found resident / uploaded, over all calls.
    pub hits: u64,
    pub uploads: u64,
}

#[derive(Debug, Default)]
struct State {
    parts: HashMap<u64, Entry<DevicePart>>,
    texts: HashMap<u64, Entry<DeviceText>>,
    tick: u64,
    stats: ResidentStats,
}

/// The resident parts of one [`Gpu`] (shared by its clones).
#[derive(Debug)]
pub(crate) struct Resident {
    state: Mutex<State>,
    budget: usize,
    /// Whether the gather kernel built the first batch's columns as the copies did (compared
    /// until a batch with rows); a disagreement is a fault of this device.
    gather: AssemblyGate,
}

impl Resident {
    pub(crate) fn new(budget: usize) -> Resident {
        Resident {
            state: Mutex::default(),
            budget,
            gather: AssemblyGate::default(),
        }
    }

    /// The gather kernel's disagreements with the copies ([`crate::Kernels::faults`]).
    pub(crate) fn faults(&self) -> Vec<String> {
        self.gather.faults()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn stats(&self) -> ResidentStats {
        let st = self.lock();
        ResidentStats {
            parts: st.parts.len(),
            ..st.stats
        }
    }

    /// The resident value under `key` in the map `slot` picks, or `upload`'s (`bytes` on the
    /// device), kept under `key` when it is not 0.
    fn keep<V>(
        &self,
        key: u64,
        slot: fn(&mut State) -> &mut HashMap<u64, Entry<V>>,
        bytes: usize,
        upload: impl FnOnce() -> Result<V, KernelError>,
    ) -> Result<Arc<V>, KernelError> {
        if key != 0 {
            let mut st = self.lock();
            st.tick += 1;
            let tick = st.tick;
            if let Some(e) = slot(&mut st).get_mut(&key) {
                e.used = tick;
                let value = e.value.clone();
                st.stats.hits += 1;
                return Ok(value);
            }
        }
        let value = Arc::new(upload()?);
        let mut st = self.lock();
        st.stats.uploads += 1;
        if key != 0 {
            st.tick += 1;
            let e = Entry {
                value: value.clone(),
                used: st.tick,
                bytes,
            };
            if let Some(old) = slot(&mut st).insert(key, e) {
                st.stats.bytes -= old.bytes;
            }
            st.stats.bytes += bytes;
            evict(&mut st, self.budget);
        }
        Ok(value)
    }

    /// `p` on the device: the resident copy of its key, or a fresh upload (kept when keyed).
    fn get(&self, gpu: &Gpu, p: &RankPart<'_>) -> Result<Arc<DevicePart>, KernelError> {
        let bytes = p.embeddings.len() * 2 + p.rows() * 9;
        self.keep(
            p.key,
            |st| &mut st.parts,
            bytes,
            || {
                Ok(DevicePart {
                    rows: p.rows(),
                    embeddings: gpu.upload(&nonempty(p.embeddings))?,
                    positions: gpu.upload(&nonempty(p.positions))?,
                    groups: gpu.upload(&nonempty(p.groups))?,
                    importance: gpu.upload(&nonempty(p.importance))?,
                })
            },
        )
    }

    /// `t` on the device: the resident copy of its key, or a fresh upload (kept when keyed)
    /// after `check` accepts it.
    pub(crate) fn text(
        &self,
        gpu: &Gpu,
        t: &PartText<'_>,
        check: impl FnOnce() -> Result<(), KernelError>,
    ) -> Result<Arc<DeviceText>, KernelError> {
        let bytes = DeviceText::bytes(t);
        let upload = || {
            check()?;
            DeviceText::upload(gpu, t)
        };
        self.keep(t.key, |st| &mut st.texts, bytes, upload)
    }

    /// The batch's matrix and row columns on the device, the parts concatenated in order
    /// (`starts`: each part's first row, `total` rows), every row live: gathered in one launch
    /// once the first batch showed that it builds what the per-part copies build.
    pub(crate) fn assemble(
        &self,
        gpu: &Gpu,
        dim: usize,
        parts: &[RankPart<'_>],
        starts: &[usize],
        total: usize,
    ) -> Result<(DeviceMatrix, DeviceRankRows), KernelError> {
        let on_device = parts
            .iter()
            .map(|p| self.get(gpu, p))
            .collect::<Result<Vec<_>, _>>()?;
        let mut cols = Columns::alloc(gpu, dim, total)?;
        match self.gather.next() {
            Assembly::Fast => cols.gather_parts(gpu, dim, &on_device, starts)?,
            Assembly::Reference => cols.copy_parts(gpu, dim, &on_device, starts)?,
            Assembly::Compare if total == 0 => {}
            Assembly::Compare => {
                cols.gather_parts(gpu, dim, &on_device, starts)?;
                let mut reference = Columns::alloc(gpu, dim, total)?;
                reference.copy_parts(gpu, dim, &on_device, starts)?;
                let same = cols.same_as(gpu, &reference)?;
                self.gather.record(same, || {
                    format!(
                        "memdex_gather_parts built other rows than the per-part copies on \
                         cuda:{} ({} parts, {total} rows): the copies assemble every batch",
                        gpu.ordinal,
                        parts.len()
                    )
                });
                if !same {
                    tracing::error!(
                        "memdex_gather_parts built other rows than the copies on {}: the \
                         copies assemble every batch",
                        gpu.ordinal
                    );
                    cols = reference;
                }
            }
        }
        Ok(cols.into_device(dim, total))
    }
}

/// Drops least recently used parts and texts until the resident bytes fit `budget` (the
/// batch in hand holds its own references, so its parts survive until it is done).
fn evict(st: &mut State, budget: usize) {
    while st.stats.bytes > budget {
        let part = st.parts.iter().map(|(&k, e)| (e.used, k)).min();
        let text = st.texts.iter().map(|(&k, e)| (e.used, k)).min();
        let bytes = match (part, text) {
            (Some(p), Some(t)) if t < p => st.texts.remove(&t.1).map(|e| e.bytes),
            (Some(p), _) => st.parts.remove(&p.1).map(|e| e.bytes),
            (None, Some(t)) => st.texts.remove(&t.1).map(|e| e.bytes),
            (None, None) => break,
        };
        st.stats.bytes -= bytes.unwrap_or(0);
    }
}
