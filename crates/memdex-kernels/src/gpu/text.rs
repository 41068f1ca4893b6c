//! A batch's BM25 scores and time flags on the device (`kernels/cuda/query_inputs.cu`), from
//! the parts' texts resident by key and each query's term ids and window.

use candle_core::cuda_backend::cudarc::driver::{
    CudaSlice, DevicePtr, LaunchConfig, PushKernelArg,
};
use memdex_rank::TimeWindow;

use super::{launch, nonempty, Gpu};
use crate::text::{check_part_text, PartText, TextQueries};
use crate::{f16, ptx, range_offsets, KernelError, RankParams, RankPart};

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

impl Gpu {
    /// Every query's BM25 score (with query expansion: its keyword share) and time flag per
    /// row of its range, on the device, laid out as the fused ranking reads them (`starts`:
    /// each part's first row; `vectors`: the queries' vectors on the device, of dimension
    /// `dim`). The batch's inputs are checked already; each part's text columns are checked
    /// against its rows here, when they are uploaded (once per key).
    pub(super) fn text_inputs_dev(
        &self,
        (parts, texts): (&[RankPart<'_>], &[PartText<'_>]),
        starts: &[usize],
        tq: &TextQueries<'_>,
        ranges: &[[u32; 2]],
        (vectors, dim): (&CudaSlice<f32>, usize),
        params: &RankParams,
    ) -> Result<(CudaSlice<f32>, CudaSlice<u8>), KernelError> {
        let (offsets, total) = range_offsets(ranges);
        let sparse = self.cuda.alloc_zeros::<f32>(total.max(1))?;
        let flags = self.cuda.alloc_zeros::<u8>(total.max(1))?;
        // the expansion column: one entry per range row with expansion, else a placeholder
        let x_total = if tq.expand.is_some() { total } else { 0 };
        let mut expansion = self.cuda.alloc_zeros::<f32>(x_total.max(1))?;
        let nq = ranges.len();
        if nq == 0 {
            return Ok((sparse, flags));
        }
        let on = (texts.iter().zip(parts).enumerate())
            .map(|(i, (t, p))| {
                self.resident
                    .text(self, t, || check_part_text(i, dim, p, t))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let stream = self.cuda.cuda_stream();
        let mut table: Vec<u64> = Vec::with_capacity(9 * on.len());
        let mut guards = Vec::with_capacity(9 * on.len());
        for d in &on {
            let ptrs = [
                d.term_offsets.device_ptr(&stream),
                d.term_rows.device_ptr(&stream),
                d.term_weights.device_ptr(&stream),
                d.timestamps.device_ptr(&stream),
                d.event_offsets.device_ptr(&stream),
                d.event_lo.device_ptr(&stream),
                d.event_hi.device_ptr(&stream),
                d.vocab_terms.device_ptr(&stream),
            ];
            for (p, g) in ptrs {
                table.push(p);
                guards.push(g);
            }
            let (p, g) = d.vocab_vectors.device_ptr(&stream);
            table.push(p);
            guards.push(g);
        }
        let vocab_len: Vec<u32> = on.iter().map(|d| d.vocab_len).collect();
        let (kind, lo, hi) = windows(tq.windows);
        let flat: Vec<u32> = ranges.iter().flatten().copied().collect();
        let part_start: Vec<u32> = starts.iter().map(|&s| s as u32).collect();
        let d_table = self.upload(&table)?;
        let d_vocab_len = self.upload(&vocab_len)?;
        let d_part = self.upload(tq.part)?;
        let d_term_offsets = self.upload(tq.term_offsets)?;
        let d_terms = self.upload(&nonempty(tq.terms))?;
        let (d_kind, d_lo, d_hi) = (self.upload(&kind)?, self.upload(&lo)?, self.upload(&hi)?);
        let d_ranges = self.upload(&flat)?;
        let d_starts = self.upload(&nonempty(&part_start))?;
        let d_offsets = self.upload(&offsets)?;
        let (mut sparse, mut flags) = (sparse, flags);
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
        let mut b = f.builder();
        b.arg(&d_table)
            .arg(&d_vocab_len)
            .arg(&d_part)
            .arg(&d_term_offsets)
            .arg(&d_terms);
        b.arg(&d_kind).arg(&d_lo).arg(&d_hi);
        b.arg(&d_ranges).arg(&d_starts).arg(&d_offsets);
        b.arg(vectors).arg(&dim).arg(&n_expand).arg(&x_weight);
        b.arg(&params.w_sparse).arg(&mut expansion);
        b.arg(&mut sparse).arg(&mut flags);
        // SAFETY: argument order and types match memdex_query_inputs; the table holds 9 live
        // device pointers per part (the resident texts `on`, kept until the launch is queued,
        // their guards after it) and vocab_len their candidates' counts; every query's part,
        // term ids and range were checked against the parts (check_text), n_expand <= 32
        // (check_expand); each part's columns were checked against its rows when they were
        // uploaded under their key (check_part_text: postings' rows, one date per row, its
        // candidates' term ids against its terms and their vectors against `dim` <= 1024,
        // the kernel's shared query; a key names one content, as RankPart::key does), so
        // each read is inside its column; vectors hold dim values per query; sparse, flags
        // and (with expansion) expansion hold one entry per range row at the queries' offsets.
        unsafe { launch(b, cfg)? };
        drop(guards);
        drop(expansion);
        Ok((sparse, flags))
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
