//! The accelerated ranker's per-batch choice between the device and the CPU ranker, from what
//! each side took on earlier batches of about the same work (rows × queries, in powers of
//! two). Measured as it serves: the first batch of a size goes to the CPU (the safe side),
//! the second to the device; after that the cheaper side wins, and every
//! [`PROBE_EVERY`]th batch of a size runs on the other side so the figures follow the load.

use std::time::Duration;

/// Batches of one size between two runs on the side that is not winning.
pub const PROBE_EVERY: u32 = 32;

/// Weight of a new timing in a size's running mean.
const NEW: f64 = 0.3;

/// Where one batch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Cpu,
    Device,
}

/// Running seconds per batch of each side, per size class.
#[derive(Debug, Clone)]
pub struct CostModel {
    sizes: Vec<Class>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Class {
    cpu: Option<f64>,
    device: Option<f64>,
    /// Batches since the losing side last ran.
    since_probe: u32,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            sizes: vec![Class::default(); 65],
        }
    }
}

/// The size class of `work` (rows × queries): its bit length.
fn class(work: u64) -> usize {
    (u64::BITS - work.leading_zeros()) as usize
}

impl CostModel {
    /// Where a batch of `work` runs.
    pub fn choose(&mut self, work: u64) -> Side {
        let c = &mut self.sizes[class(work)];
        match (c.cpu, c.device) {
            (None, _) => Side::Cpu,
            (Some(_), None) => Side::Device,
            (Some(cpu), Some(device)) => {
                let (best, other) = if device < cpu {
                    (Side::Device, Side::Cpu)
                } else {
                    (Side::Cpu, Side::Device)
                };
                c.since_probe += 1;
                if c.since_probe >= PROBE_EVERY {
                    c.since_probe = 0;
                    return other;
                }
                best
            }
        }
    }

    /// Records that a batch of `work` took `took` on `side`.
    pub fn observe(&mut self, work: u64, side: Side, took: Duration) {
        let c = &mut self.sizes[class(work)];
        let slot = match side {
            Side::Cpu => &mut c.cpu,
            Side::Device => &mut c.device,
        };
        let s = took.as_secs_f64();
        *slot = Some(slot.map_or(s, |old| old + NEW * (s - old)));
    }

    /// The running seconds per batch of each side for `work`'s size, where measured.
    pub fn estimate(&self, work: u64) -> (Option<f64>, Option<f64>) {
        let c = &self.sizes[class(work)];
        (c.cpu, c.device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn measures_both_sides_then_keeps_the_cheaper_and_probes_the_other() {
        let mut m = CostModel::default();
        assert_eq!(m.choose(1000), Side::Cpu);
        m.observe(1000, Side::Cpu, MS(2));
        assert_eq!(m.choose(1000), Side::Device);
        m.observe(1000, Side::Device, MS(5));
        let picks: Vec<Side> = (0..PROBE_EVERY).map(|_| m.choose(1000)).collect();
        assert_eq!(picks.iter().filter(|&&s| s == Side::Cpu).count(), 31);
        assert_eq!(picks.last(), Some(&Side::Device), "the probe");
        // a big batch is its own size class: measured afresh, and here the device wins
        assert_eq!(m.choose(1 << 24), Side::Cpu);
        m.observe(1 << 24, Side::Cpu, MS(40));
        assert_eq!(m.choose(1 << 24), Side::Device);
        m.observe(1 << 24, Side::Device, MS(4));
        assert_eq!(m.choose(1 << 24), Side::Device);
    }

    #[test]
    fn follows_the_load() {
        let mut m = CostModel::default();
        m.observe(64, Side::Cpu, MS(1));
        m.observe(64, Side::Device, MS(3));
        assert_eq!(m.choose(64), Side::Cpu);
        for _ in 0..10 {
            m.observe(64, Side::Cpu, MS(9)); // the CPU got busy
        }
        assert_eq!(m.choose(64), Side::Device);
        let (cpu, dev) = m.estimate(64);
        assert!(cpu.unwrap() > 0.008 && (dev.unwrap() - 0.003).abs() < 1e-9);
    }
}
