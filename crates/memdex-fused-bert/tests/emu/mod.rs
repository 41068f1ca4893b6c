//! The emulated device: a plan's buffers and operations written for `kernels/emu/bert_launch.cpp`
//! (bert.cu compiled as C++ on the SIMT emulator, products done as cuBLAS defines them), run,
//! and every buffer read back.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use half::f16;
use memdex_fused_bert::{Arg, Buf, Op};

#[path = "../../../../kernels/emu/compile.rs"]
mod compile;
pub use compile::compile;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    F16,
    F32,
    U32,
}

/// A buffer's contents.
pub enum Data<'a> {
    F16(&'a [f32]),
    F32(&'a [f32]),
    U32(&'a [u32]),
    /// NaN-filled values of this type (a device leaves garbage in scratch).
    Garbage(Ty, usize),
}

/// Buffers and operations of one run.
#[derive(Default)]
pub struct EmuRun {
    bytes: Vec<u8>,
    count: u32,
    index: HashMap<Buf, (u32, Ty, usize)>,
    order: Vec<Buf>,
    ops: Vec<u8>,
    op_count: u32,
}

fn u32s(v: &[u32]) -> impl Iterator<Item = u8> + '_ {
    v.iter().flat_map(|x| x.to_le_bytes())
}

impl EmuRun {
    pub fn set(&mut self, b: Buf, data: Data<'_>) {
        let (kind, ty, len, raw): (u8, Ty, usize, Vec<u8>) = match data {
            Data::F16(v) => (
                1,
                Ty::F16,
                v.len(),
                v.iter()
                    .flat_map(|x| f16::from_f32(*x).to_bits().to_le_bytes())
                    .collect(),
            ),
            Data::F32(v) => (
                1,
                Ty::F32,
                v.len(),
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
            Data::U32(v) => (1, Ty::U32, v.len(), u32s(v).collect()),
            Data::Garbage(ty, n) => (2, ty, n, Vec::new()),
        };
        let size = if ty == Ty::F16 { 2 } else { 4 };
        self.bytes.push(kind);
        self.bytes.extend(((len * size) as u64).to_le_bytes());
        self.bytes.extend(raw);
        assert!(
            self.index.insert(b, (self.count, ty, len)).is_none(),
            "{b:?} set twice"
        );
        self.order.push(b);
        self.count += 1;
    }

    fn id(&self, b: Buf) -> u32 {
        self.index
            .get(&b)
            .unwrap_or_else(|| panic!("{b:?} not set"))
            .0
    }

    pub fn op(&mut self, op: &Op) {
        let mut o = Vec::new();
        match op {
            Op::Launch(k) => {
                let args = k.args();
                o.push(0u8);
                o.extend(u32s(&[k.name().len() as u32]));
                o.extend(k.name().as_bytes());
                o.extend(u32s(&[
                    k.grid(),
                    memdex_fused_bert::plan::THREADS,
                    k.smem(),
                    args.len() as u32,
                ]));
                for a in args {
                    let (kind, v) = match a {
                        Arg::U32(v) => (0u8, v),
                        Arg::F32(v) => (1, v.to_bits()),
                        Arg::Buf(b) => (2, self.id(b)),
                    };
                    o.push(kind);
                    o.extend(v.to_le_bytes());
                }
            }
            Op::Gemm(g) => {
                o.extend([1u8, g.ta as u8, g.tb as u8]);
                o.extend(u32s(&[g.m, g.n, g.k]));
                o.extend(g.alpha.to_le_bytes());
                for (b, ld, s) in [
                    (g.a, g.lda, g.stride_a),
                    (g.b, g.ldb, g.stride_b),
                    (g.c, g.ldc, g.stride_c),
                ] {
                    o.extend(u32s(&[self.id(b), ld]));
                    o.extend(s.to_le_bytes());
                }
                o.extend(u32s(&[g.batch]));
                o.push((self.index[&g.c].1 == Ty::F32) as u8);
            }
        }
        self.ops.extend(o);
        self.op_count += 1;
    }

    /// Runs the operations in order; every f16 and f32 buffer's values after them.
    pub fn run(self, exe: &Path, dir: &Path) -> HashMap<Buf, Vec<f32>> {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let tag = format!(
            "{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        );
        let (input, output) = (
            dir.join(format!("bert-in-{tag}")),
            dir.join(format!("bert-out-{tag}")),
        );
        let mut bytes: Vec<u8> = self.count.to_le_bytes().to_vec();
        bytes.extend(&self.bytes);
        bytes.extend(self.op_count.to_le_bytes());
        bytes.extend(&self.ops);
        std::fs::write(&input, bytes).expect("write the plan");
        let run = Command::new(exe)
            .arg(&input)
            .arg(&output)
            .output()
            .expect("run bert_launch");
        assert!(
            run.status.success(),
            "bert_launch: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let out = std::fs::read(&output).expect("bert_launch's output");
        let _ = (std::fs::remove_file(&input), std::fs::remove_file(&output));
        let mut at = 0;
        let mut values = HashMap::new();
        for b in self.order {
            let (_, ty, len) = self.index[&b];
            let bytes = &out[at..];
            let v: Vec<f32> = match ty {
                Ty::F16 => (0..len)
                    .map(|i| f16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]).to_f32())
                    .collect(),
                Ty::F32 => (0..len)
                    .map(|i| f32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4")))
                    .collect(),
                Ty::U32 => Vec::new(),
            };
            at += len * if ty == Ty::F16 { 2 } else { 4 };
            values.insert(b, v);
        }
        values
    }
}
