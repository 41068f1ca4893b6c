//! One staging buffer per ranking batch: the batch's small inputs (query vectors, ranges,
//! tiles, offsets, time rules, term ids, windows, the resident texts' pointer table) packed
//! one after another into one byte buffer, so that the device gets them in ONE host→device
//! copy and each kernel argument is a view at a known offset into it (`gpu::staged`).
//!
//! This module is plain Rust (no device, no `unsafe`): the layout (each part's offset, length
//! and alignment), the packing and the unpacking are tested on the CPU; the CUDA path only
//! copies [`Staging::bytes`] and passes views at [`Part::offset`].

use std::marker::PhantomData;

use crate::f16;

/// Every part starts at a multiple of this many bytes: the alignment `cudaMalloc` gives a
/// buffer of its own, so a kernel's vector loads (`float4`, 16-byte `uint4`) that held for a
/// separate upload hold for a part too.
pub const ALIGN: usize = 256;

/// A value the device reads as raw bytes in native order (`DeviceRepr` on the CUDA side).
pub trait Plain: Copy + Default + 'static {
    /// Bytes of one value (its `size_of`).
    const SIZE: usize;
    /// Writes the value's native-order bytes into `out` (exactly [`Plain::SIZE`] bytes).
    fn put(self, out: &mut [u8]);
    /// The value in `b` (exactly [`Plain::SIZE`] bytes).
    fn get(b: &[u8]) -> Self;
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl Plain for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_ne_bytes());
            }
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_ne_bytes(a)
            }
        }
    )*};
}
plain!(u8, u16, u32, u64, i64, f32);

impl Plain for f16 {
    const SIZE: usize = 2;
    fn put(self, out: &mut [u8]) {
        self.to_bits().put(out);
    }
    fn get(b: &[u8]) -> Self {
        f16::from_bits(u16::get(b))
    }
}

/// Where one part lies in a [`Staging`] buffer: `len` values of `T` from byte `offset`
/// (`slots` of them reserved: at least one, as the device has no empty buffers).
#[derive(Debug)]
pub struct Part<T> {
    pub offset: usize,
    pub len: usize,
    pub slots: usize,
    _t: PhantomData<T>,
}

impl<T> Clone for Part<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Part<T> {}

impl<T: Plain> Part<T> {
    /// Bytes the part occupies (its reserved slots).
    pub fn bytes(&self) -> usize {
        self.slots * T::SIZE
    }
}

/// A batch's inputs packed into one buffer (see the module's doc).
#[derive(Debug, Default)]
pub struct Staging {
    bytes: Vec<u8>,
    parts: usize,
}

impl Staging {
    pub fn new() -> Staging {
        Staging::default()
    }

    /// An empty buffer with room for `bytes`.
    pub fn with_capacity(bytes: usize) -> Staging {
        Staging {
            bytes: Vec::with_capacity(bytes),
            parts: 0,
        }
    }

    /// Appends `v` at the next multiple of [`ALIGN`]; an empty `v` reserves one zero value
    /// (never read: the kernels read no empty input), as separate uploads did.
    pub fn push<T: Plain>(&mut self, v: &[T]) -> Part<T> {
        let offset = self.bytes.len().next_multiple_of(ALIGN);
        let slots = v.len().max(1);
        // zeros first (the padding, and an empty part's one default value), then the values
        // written in place (a loop without capacity checks, which the compiler vectorises)
        self.bytes.resize(offset + slots * T::SIZE, 0);
        let out = &mut self.bytes[offset..];
        for (b, &x) in out.chunks_exact_mut(T::SIZE).zip(v) {
            x.put(b);
        }
        self.parts += 1;
        Part {
            offset,
            len: v.len(),
            slots,
            _t: PhantomData,
        }
    }

    /// Appends the values `it` yields (as [`Staging::push`] of them collected).
    pub fn push_iter<T: Plain>(&mut self, it: impl IntoIterator<Item = T>) -> Part<T> {
        let v: Vec<T> = it.into_iter().collect();
        self.push(&v)
    }

    /// The packed buffer: what the device copy sends.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Bytes packed (padding included).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Parts packed.
    pub fn parts(&self) -> usize {
        self.parts
    }

    /// `part`'s values read back from the packed bytes (the unpacking the device does by
    /// reading at the part's offset).
    pub fn read<T: Plain>(&self, part: Part<T>) -> Vec<T> {
        unpack(&self.bytes, part)
    }
}

/// `part`'s values in `bytes` (a buffer packed by [`Staging`], e.g. a copy of it back from the
/// device).
pub fn unpack<T: Plain>(bytes: &[u8], part: Part<T>) -> Vec<T> {
    bytes[part.offset..][..part.len * T::SIZE]
        .chunks_exact(T::SIZE)
        .map(T::get)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<T: Plain + PartialEq + std::fmt::Debug>(s: &Staging, p: Part<T>, want: &[T]) {
        assert_eq!(p.offset % ALIGN, 0);
        assert_eq!(p.offset % std::mem::align_of::<T>(), 0);
        assert!(p.offset + p.bytes() <= s.len());
        assert_eq!(s.read(p), want);
    }

    #[test]
    fn every_type_round_trips_aligned() {
        let mut s = Staging::new();
        let a = s.push(&[1u8, 2, 3]);
        let b = s.push(&[f16::from_f32(0.5), f16::from_f32(-2.0)]);
        let c = s.push(&[7u32, u32::MAX]);
        let d = s.push(&[i64::MIN, -1, 5]);
        let e = s.push(&[0.25f32, f32::NEG_INFINITY]);
        let f = s.push(&[u64::MAX, 0xdead_beef]);
        let g = s.push(&[9u16]);
        check(&s, a, &[1, 2, 3]);
        check(&s, b, &[f16::from_f32(0.5), f16::from_f32(-2.0)]);
        check(&s, c, &[7, u32::MAX]);
        check(&s, d, &[i64::MIN, -1, 5]);
        check(&s, e, &[0.25, f32::NEG_INFINITY]);
        check(&s, f, &[u64::MAX, 0xdead_beef]);
        check(&s, g, &[9]);
        assert_eq!(s.parts(), 7);
        // parts never overlap and come in order
        let ends = [
            (a.offset, a.bytes()),
            (b.offset, b.bytes()),
            (c.offset, c.bytes()),
            (d.offset, d.bytes()),
            (e.offset, e.bytes()),
            (f.offset, f.bytes()),
            (g.offset, g.bytes()),
        ];
        for w in ends.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "{w:?}");
        }
    }

    #[test]
    fn empty_parts_reserve_one_zero_value() {
        let mut s = Staging::new();
        let a = s.push::<u32>(&[]);
        let b = s.push::<i64>(&[]);
        let c = s.push(&[3.5f32]);
        assert_eq!((a.len, a.slots, b.len, b.slots), (0, 1, 0, 1));
        check(&s, a, &[]);
        check(&s, b, &[]);
        check(&s, c, &[3.5]);
        assert_eq!(unpack(s.bytes(), Part::<i64> { len: 1, ..b }), [0]);
        assert_eq!((a.offset, b.offset, c.offset), (0, ALIGN, 2 * ALIGN));
        assert!(Staging::new().is_empty());
    }

    #[test]
    fn a_part_at_an_odd_end_starts_on_the_next_boundary() {
        let mut s = Staging::new();
        s.push(&[1u8; 257]);
        let p = s.push(&[2u64]);
        assert_eq!(p.offset, 2 * ALIGN);
        let q = s.push_iter((0..3).map(|i| i as f32));
        check(&s, q, &[0.0, 1.0, 2.0]);
    }

    /// The bench's batch: 100 tenants × 5,000 items, 256 queries of dim 384, as
    /// `gpu::staged` packs it (the sizes below are the parts it pushes).
    #[test]
    fn the_bench_batch_packs_into_one_buffer() {
        let (tenants, items, nq, dim) = (100usize, 5_000u32, 256usize, 384usize);
        let vectors: Vec<f32> = (0..nq * dim).map(|i| (i % 97) as f32 / 97.0).collect();
        let ranges: Vec<u32> = (0..nq)
            .flat_map(|q| {
                let t = (q % tenants) as u32;
                [t * items, (t + 1) * items]
            })
            .collect();
        let offsets: Vec<u32> = (0..=nq as u32).map(|q| q * items).collect();
        let table: Vec<u64> = (0..9 * tenants as u64)
            .map(|i| 0x7f00_0000_0000 + 256 * i)
            .collect();
        let terms: Vec<u32> = (0..nq as u32 * 6).collect();
        let lo = vec![i64::MIN; nq];
        let mut s = Staging::with_capacity(1 << 20);
        let pv = s.push(&vectors);
        let pr = s.push(&ranges);
        let po = s.push(&offsets);
        let pt = s.push(&table);
        let pm = s.push(&terms);
        let pl = s.push(&lo);
        let pk = s.push(&vec![0u8; nq]);
        check(&s, pv, &vectors);
        check(&s, pr, &ranges);
        check(&s, po, &offsets);
        check(&s, pt, &table);
        check(&s, pm, &terms);
        check(&s, pl, &lo);
        check(&s, pk, &vec![0u8; nq]);
        let payload = 4 * (vectors.len() + ranges.len() + offsets.len() + terms.len())
            + 8 * (table.len() + lo.len())
            + nq;
        // padding is at most ALIGN per part
        assert!(
            s.len() >= payload && s.len() < payload + 7 * ALIGN,
            "{}",
            s.len()
        );
    }
}
