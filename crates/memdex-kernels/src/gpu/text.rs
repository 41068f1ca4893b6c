//! A batch's BM25 scores and time flags on the device (`kernels/cuda/query_inputs.cu`), from
//! the parts' texts resident by key and each query's term ids and window.

use std::sync::Arc;

use candle_core::cuda_backend::cudarc::driver::{
    CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg, SyncOnDrop,
};
use memdex_rank::TimeWindow;

use super::staged::{Staged, Stager, Ticket};
use super::{launch, nonempty, DeviceBuf, DeviceRankQueries, Gpu};
use crate::text::{check_part_text, PartText, TextQueries};
use crate::{f16, ptx, KernelError, RankParams, RankPart};

/// One part's text columns on the device (see [`PartText`]).
#[derive(Debug)]
pub(crate) struct DeviceText {
    term_offsets: CudaSlice<u32>,
    term_rows: CudaSlice<u32>,
    term_weights: CudaSlice<f32>,
    timestamps: CudaSlice<i64>,
    event_offsets: CudaSlice<u32>,
    event_lo: CudaSlice<i64>,
    event_hi: CudaSlice<i64>,
    vocab_terms: CudaSlice<u32>,
    vocab_vectors: CudaSlice<f16>,
    vocab_len: u32,
}

impl DeviceText {
    pub(crate) fn upload(gpu: &Gpu, t: &PartText<'_>) -> Result<DeviceText, KernelError> {
        Ok(DeviceText {
            term_offsets: gpu.upload(&nonempty(t.term_offsets))?,
            term_rows: gpu.upload(&nonempty(t.term_rows))?,
            term_weights: gpu.upload(&nonempty(t.term_weights))?,
            timestamps: gpu.upload(&nonempty(t.timestamps))?,
            event_offsets: gpu.upload(&nonempty(t.event_offsets))?,
            event_lo: gpu.upload(&nonempty(t.event_lo))?,
            event_hi: gpu.upload(&nonempty(t.event_hi))?,
            vocab_terms: gpu.upload(&nonempty(t.vocab_terms))?,
            vocab_vectors: gpu.upload(&nonempty(t.vocab_vectors))?,
            vocab_len: t.vocab_terms.len() as u32,
        })
    }

    /// Bytes of `t` on the device.
    pub(crate) fn bytes(t: &PartText<'_>) -> usize {
        4 * (t.term_offsets.len() + t.term_rows.len() + t.term_weights.len())
            + 4 * t.event_offsets.len()
            + 8 * (t.timestamps.len() + t.event_lo.len() + t.event_hi.len())
            + 4 * t.vocab_terms.len()
            + 2 * t.vocab_vectors.len()
    }
}

/// The resident texts' columns as the kernel's pointer table (9 device pointers per part),
/// with the guards that record the texts' use once the launch is queued (drop them after it).
pub(super) fn pointer_table<'a>(
    on: &'a [Arc<DeviceText>],
    stream: &'a Arc<CudaStream>,
) -> (Vec<u64>, Vec<SyncOnDrop<'a>>) {
    let mut table: Vec<u64> = Vec::with_capacity(9 * on.len());
    let mut guards = Vec::with_capacity(9 * on.len());
    for d in on {
        let ptrs = [
            d.term_offsets.device_ptr(stream),
            d.term_rows.device_ptr(stream),
            d.term_weights.device_ptr(stream),
            d.timestamps.device_ptr(stream),
            d.event_offsets.device_ptr(stream),
            d.event_lo.device_ptr(stream),
            d.event_hi.device_ptr(stream),
            d.vocab_terms.device_ptr(stream),
        ];
        for (p, g) in ptrs {
            table.push(p);
            guards.push(g);
        }
        let (p, g) = d.vocab_vectors.device_ptr(stream);
        table.push(p);
        guards.push(g);
    }
    (table, guards)
}

/// A batch's text inputs pushed to a [`Stager`] (the ranges and offsets are the rank
/// inputs' own: [`super::staged::RankTickets`]).
pub(super) struct TextTickets {
    table: Ticket<u64>,
    vocab_len: Ticket<u32>,
    part: Ticket<u32>,
    term_offsets: Ticket<u32>,
    terms: Ticket<u32>,
    kind: Ticket<u32>,
    lo: Ticket<i64>,
    hi: Ticket<i64>,
    starts: Ticket<u32>,
}

/// The text inputs on the device.
pub(super) struct TextInputs {
    table: DeviceBuf<u64>,
    vocab_len: DeviceBuf<u32>,
    part: DeviceBuf<u32>,
    term_offsets: DeviceBuf<u32>,
    terms: DeviceBuf<u32>,
    kind: DeviceBuf<u32>,
    lo: DeviceBuf<i64>,
    hi: DeviceBuf<i64>,
    starts: DeviceBuf<u32>,
}

impl TextTickets {
    /// `table` ([`pointer_table`] of `on`), the texts' candidates' counts, each part's first
    /// row (`starts`) and the queries' parts, term ids and windows.
    pub(super) fn push(
        st: &mut Stager<'_>,
        (table, on): (&[u64], &[Arc<DeviceText>]),
        starts: &[usize],
        tq: &TextQueries<'_>,
    ) -> Result<TextTickets, KernelError> {
        let (kind, lo, hi) = windows(tq.windows);
        Ok(TextTickets {
            table: st.push(table)?,
            vocab_len: st.push_iter(on.iter().map(|d| d.vocab_len))?,
            part: st.push(tq.part)?,
            term_offsets: st.push(tq.term_offsets)?,
            terms: st.push(tq.terms)?,
            kind: st.push(&kind)?,
            lo: st.push(&lo)?,
            hi: st.push(&hi)?,
            starts: st.push_iter(starts.iter().map(|&s| s as u32))?,
        })
    }

    pub(super) fn on(self, staged: &Staged) -> Result<TextInputs, KernelError> {
        Ok(TextInputs {
            table: staged.get(self.table)?,
            vocab_len: staged.get(self.vocab_len)?,
            part: staged.get(self.part)?,
            term_offsets: staged.get(self.term_offsets)?,
            terms: staged.get(self.terms)?,
            kind: staged.get(self.kind)?,
            lo: staged.get(self.lo)?,
            hi: staged.get(self.hi)?,
            starts: staged.get(self.starts)?,
        })
    }
}

impl Gpu {
    /// Each part's text columns on the device: resident by key, else checked against its
    /// rows (`dim`: the vectors' dimension) and uploaded.
    pub(super) fn resident_texts(
        &self,
        (parts, texts): (&[RankPart<'_>], &[PartText<'_>]),
        dim: usize,
    ) -> Result<Vec<Arc<DeviceText>>, KernelError> {
        (texts.iter().zip(parts).enumerate())
            .map(|(i, (t, p))| {
                self.resident
                    .text(self, t, || check_part_text(i, dim, p, t))
            })
            .collect()
    }

    /// Every query's BM25 score (with query expansion: its keyword share) and time flag per
    /// row of its range into `rq`'s sparse and flags (buffers of their own), laid out as the
    /// fused ranking reads them, from the text inputs `t` and `rq`'s vectors (of `dim`),
    /// ranges and offsets. The batch's inputs are checked already; each part's text columns
    /// were checked against its rows when they were uploaded ([`Gpu::resident_texts`]).
    pub(super) fn text_launch(
        &self,
        t: &TextInputs,
        tq: &TextQueries<'_>,
        rq: &mut DeviceRankQueries,
        dim: usize,
        params: &RankParams,
    ) -> Result<(), KernelError> {
        let (queries, sparse, flags, offsets) = outputs(rq)?;
        let nq = queries.n;
        if nq == 0 {
            return Ok(());
        }
        // the expansion column: one entry per range row with expansion, else a placeholder
        let x_total = if tq.expand.is_some() { sparse.len() } else { 0 };
        let mut expansion = self.cuda.alloc_zeros::<f32>(x_total.max(1))?;
        let f = self.cuda.get_or_load_custom_func(
            "memdex_query_inputs",
            "memdex_query_inputs",
            ptx::QUERY_INPUTS,
        )?;
        let cfg = LaunchConfig {
            grid_dim: (nq as u32, 1, 1),
            block_dim: (super::THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (dim, n_expand) = (dim as u32, tq.expand.map_or(0, |x| x.terms as u32));
        let x_weight = tq.expand.map_or(0.0, |x| x.weight);
        let (table, vocab_len, part) = (t.table.view()?, t.vocab_len.view()?, t.part.view()?);
        let (term_offsets, terms) = (t.term_offsets.view()?, t.terms.view()?);
        let (kind, lo, hi) = (t.kind.view()?, t.lo.view()?, t.hi.view()?);
        let (ranges, starts, offsets) = (queries.ranges.view()?, t.starts.view()?, offsets.view()?);
        let vectors = queries.vectors.view()?;
        let mut b = f.builder();
        b.arg(&table)
            .arg(&vocab_len)
            .arg(&part)
            .arg(&term_offsets)
            .arg(&terms);
        b.arg(&kind).arg(&lo).arg(&hi);
        b.arg(&ranges).arg(&starts).arg(&offsets);
        b.arg(&vectors).arg(&dim).arg(&n_expand).arg(&x_weight);
        b.arg(&params.w_sparse).arg(&mut expansion);
        b.arg(sparse).arg(flags);
        // SAFETY: argument order and types match memdex_query_inputs; the table holds 9 live
        // device pointers per part (the resident texts, held by the caller with their guards
        // until the launch is queued) and vocab_len their candidates' counts; every query's
        // part, term ids and range were checked against the parts (check_text), n_expand <=
        // 32 (check_expand); each part's columns were checked against its rows when they were
        // uploaded under their key (check_part_text: postings' rows, one date per row, its
        // candidates' term ids against its terms and their vectors against `dim` <= 1024,
        // the kernel's shared query; a key names one content, as RankPart::key does), so
        // each read is inside its column; vectors hold dim values per query; sparse, flags
        // and (with expansion) expansion hold one entry per range row at the queries' offsets
        // (allocated by the caller for the ranges' rows; a staged input is `slots` long, at
        // least as long as its values).
        unsafe { launch(b, cfg)? };
        drop(expansion);
        Ok(())
    }
}

/// `rq`'s queries, its BM25 scores and flags (the text kernel's outputs: buffers of their
/// own) and its offsets.
type Outputs<'a> = (
    &'a super::DeviceQueries,
    &'a mut CudaSlice<f32>,
    &'a mut CudaSlice<u8>,
    &'a DeviceBuf<u32>,
);

fn outputs(rq: &mut DeviceRankQueries) -> Result<Outputs<'_>, KernelError> {
    match rq {
        DeviceRankQueries {
            queries,
            sparse: DeviceBuf::Own(sparse),
            flags: DeviceBuf::Own(flags),
            offsets,
            ..
        } => Ok((queries, sparse, flags, offsets)),
        _ => Err(KernelError::Invalid(
            "the text inputs' outputs are staged".into(),
        )),
    }
}

/// Per query: window kind (0 none, 1 range, 2 dated) and range.
fn windows(w: &[Option<TimeWindow>]) -> (Vec<u32>, Vec<i64>, Vec<i64>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for w in w {
        let (k, lo, hi) = match w {
            None => (0, 0, 0),
            Some(TimeWindow::Range { lo, hi }) => (1, *lo, *hi),
            Some(TimeWindow::Dated) => (2, 0, 0),
        };
        out.0.push(k);
        out.1.push(lo);
        out.2.push(hi);
    }
    out
}
