//! fio's `rate_min` and `rate_iops_min` (`check_min_rate`, `backend.c`, fio 3.33): after a
//! job's first two seconds, every `rate_cycle` ms each direction's bytes (or I/Os) done since
//! the last check must come to the minimum rate, or the job ends with EIO. The first check
//! after the settle period only takes the counts it measures from.

use blksim_core::Ns;
use blksim_job::JobSpec;

/// `td->start` to the first check (`mtime_since(&td->start, now) < 2000`).
const SETTLE_MS: u64 = 2000;

pub(crate) struct MinRate {
    /// Per direction: `ratemin` (bytes/s) and `rate_iops_min`.
    bytes_min: [u64; 3],
    iops_min: [u64; 3],
    cycle_ms: u64,
    /// `this_io_bytes`, `this_io_blocks`: what the job has done per direction.
    bytes: [u64; 3],
    blocks: [u64; 3],
    /// `last_rate_check_bytes`, `_blocks`, `_time` per direction.
    last_bytes: [u64; 3],
    last_blocks: [u64; 3],
    last_time: [Ns; 3],
    /// When the job last went to reap (`comp_time`): what the check measures to.
    pub(crate) comp_time: Ns,
}

impl MinRate {
    pub(crate) fn new(spec: &JobSpec) -> Option<Self> {
        let on = (0..3).any(|d| spec.rate_min[d] > 0 || spec.rate_iops_min[d] > 0);
        on.then_some(MinRate {
            bytes_min: spec.rate_min,
            iops_min: spec.rate_iops_min,
            cycle_ms: spec.rate_cycle_ms,
            bytes: [0; 3],
            blocks: [0; 3],
            last_bytes: [0; 3],
            last_blocks: [0; 3],
            last_time: [0; 3],
            comp_time: 0,
        })
    }

    /// An I/O of direction `d` done with `bytes`.
    pub(crate) fn done(&mut self, d: usize, bytes: u64) {
        self.bytes[d] += bytes;
        self.blocks[d] += 1;
    }

    /// `check_min_rate` at `comp_time` for a job that started (or ended its ramp) at
    /// `start`: fio's message for each direction that has done I/O and falls short (each
    /// is checked).
    pub(crate) fn check(&mut self, name: &str, start: Ns) -> Vec<String> {
        let now = self.comp_time;
        let mut out = Vec::new();
        for d in 0..3 {
            if self.blocks[d] > 0 {
                out.extend(self.check_dir(name, start, now, d));
            }
        }
        out
    }

    /// `__check_min_rate`.
    fn check_dir(&mut self, name: &str, start: Ns, now: Ns, d: usize) -> Option<String> {
        if self.bytes_min[d] == 0 && self.iops_min[d] == 0 {
            return None;
        }
        let ms = |from: Ns| now.saturating_sub(from) / 1_000_000;
        if ms(start) < SETTLE_MS {
            return None;
        }
        if self.last_bytes[d] != 0 || self.last_blocks[d] != 0 {
            let spent = ms(self.last_time[d]);
            if spent < self.cycle_ms || spent == 0 {
                return None;
            }
            // Bytes against `rate_min` if given, else I/Os against `rate_iops_min`.
            let per_s = |now: u64, last: u64| now.wrapping_sub(last).wrapping_mul(1000) / spent;
            if self.bytes_min[d] > 0 {
                let got = per_s(self.bytes[d], self.last_bytes[d]);
                if got < self.bytes_min[d] {
                    let min = self.bytes_min[d];
                    return Some(format!("{name}: rate_min={min}B/s not met, got {got}B/s"));
                }
            } else {
                let got = per_s(self.blocks[d], self.last_blocks[d]);
                if got < self.iops_min[d] {
                    let min = self.iops_min[d];
                    return Some(format!(
                        "{name}: rate_iops_min={min} not met, got {got} IOPS"
                    ));
                }
            }
        }
        self.last_bytes[d] = self.bytes[d];
        self.last_blocks[d] = self.blocks[d];
        self.last_time[d] = now;
        None
    }
}
