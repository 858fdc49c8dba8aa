//! What a probe measures: a device that serves batches of reads and writes at a queue depth
//! and reports each one's latency. The real device ([`crate::real`]) and blksim's own model
//! ([`crate::sim`]) both serve it, so the probe that runs on hardware is the probe the tests
//! check against a model whose geometry they know.

/// One I/O of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    pub write: bool,
    /// Byte offset from the start of the probed area.
    pub offset: u64,
    pub len: u32,
}

impl Op {
    pub fn read(offset: u64, len: u32) -> Op {
        Op {
            write: false,
            offset,
            len,
        }
    }
    pub fn write(offset: u64, len: u32) -> Op {
        Op {
            write: true,
            offset,
            len,
        }
    }
}

/// What a batch measured.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// Completion latency of each I/O (submission to completion), ns. At queue depth 1 in
    /// the order of the ops; deeper, in completion order.
    pub lat_ns: Vec<u64>,
    /// From the first submission to the last completion, ns.
    pub elapsed_ns: u64,
}

impl Batch {
    pub fn iops(&self) -> f64 {
        if self.elapsed_ns == 0 {
            0.0
        } else {
            self.lat_ns.len() as f64 * 1e9 / self.elapsed_ns as f64
        }
    }

    pub fn mean_ns(&self) -> f64 {
        if self.lat_ns.is_empty() {
            0.0
        } else {
            self.lat_ns.iter().sum::<u64>() as f64 / self.lat_ns.len() as f64
        }
    }

    /// The `q`-th percentile (0..=100) by nearest rank.
    pub fn percentile_ns(&self, q: f64) -> u64 {
        let mut v = self.lat_ns.clone();
        if v.is_empty() {
            return 0;
        }
        v.sort_unstable();
        let rank = ((q / 100.0) * v.len() as f64).ceil() as usize;
        v[rank.clamp(1, v.len()) - 1]
    }
}

pub trait Target {
    /// The probed path (or `sim:PROFILE`), for reports and the fio JSON's `filename`.
    fn name(&self) -> String;
    /// Bytes the probe may use, from offset 0.
    fn size(&self) -> u64;
    /// Whether the target was opened for writing.
    fn writable(&self) -> bool;
    /// Serve `ops` keeping up to `qd` in flight. A real target stops issuing at
    /// `deadline_ns` of wall time after the start (the batch is then shorter); a simulated
    /// one serves them all.
    fn run(&mut self, ops: &[Op], qd: u32, deadline_ns: u64) -> Result<Batch, String>;
    /// The fio `ioengine` a batch at `qd` corresponds to, for the saved fio JSON.
    fn engine(&self, qd: u32) -> &'static str;
}
