//! blksim's own model as a probe target: each batch is replayed as a fio iolog
//! (`read_iolog`, `replay_no_stall=1`) on a device profile, and each I/O's latency is read
//! back from the job's clat log (`write_lat_log`, one line per I/O in completion order).
//! `blksim probe sim:PROFILE` probes a model the way the probe measures hardware; the tests
//! probe profiles whose geometry they set and check that the probe finds it.
//!
//! Every batch starts from the profile's initial state (`card.state`), as a device the probe
//! has not touched; the probe's sequences are self-contained for that reason.

use crate::target::{Batch, Op, Target};
use blksim_sim::setup::{self, RunOptions};
use blksim_sim::Profile;
use std::fmt::Write as _;
use std::path::PathBuf;

pub struct SimTarget {
    pub profile: Profile,
    label: String,
    size: u64,
    dir: PathBuf,
    seed: u64,
    batches: u64,
}

impl SimTarget {
    /// `profile` with `sets` applied; the probed area is the device's capacity, or `size`
    /// bytes when given (at most the capacity).
    pub fn new(
        device: &str,
        sets: &[String],
        size: Option<u64>,
        seed: u64,
    ) -> Result<Self, String> {
        let mut profile = Profile::load(device)?;
        for s in sets {
            profile.set(s)?;
        }
        let cap = capacity_bytes(&profile)?;
        let size = size.unwrap_or(cap);
        if size > cap {
            return Err(format!(
                "--size={size}: the simulated device {device} has {cap} bytes"
            ));
        }
        let dir = std::env::temp_dir().join(format!(
            "blksim-probe-sim-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(SimTarget {
            profile,
            label: format!("sim:{device}"),
            size,
            dir,
            seed,
            batches: 0,
        })
    }
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Drop for SimTarget {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The simulated device's capacity in bytes, as the driver it builds reports it.
fn capacity_bytes(p: &Profile) -> Result<u64, String> {
    let platform = blksim_sim::platform::Platform::from_profile(p)?;
    let d = setup::build_driver(p, &platform)?;
    Ok(d.capacity_sectors() * 512)
}

impl Target for SimTarget {
    fn name(&self) -> String {
        self.label.clone()
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn writable(&self) -> bool {
        true
    }

    fn engine(&self, qd: u32) -> &'static str {
        if qd > 1 {
            "libaio"
        } else {
            "psync"
        }
    }

    fn run(&mut self, ops: &[Op], qd: u32, _deadline_ns: u64) -> Result<Batch, String> {
        if ops.is_empty() {
            return Ok(Batch::default());
        }
        self.batches += 1;
        let log = self.dir.join(format!("ops.{}.log", self.batches));
        let mut t = String::from("fio version 2 iolog\n/dev/probe add\n/dev/probe open\n");
        for o in ops {
            if o.offset + o.len as u64 > self.size {
                return Err(format!(
                    "probe op at {} + {} past the probed size {}",
                    o.offset, o.len, self.size
                ));
            }
            let dir = if o.write { "write" } else { "read" };
            let _ = writeln!(t, "/dev/probe {dir} {} {}", o.offset, o.len);
        }
        t.push_str("/dev/probe close\n");
        std::fs::write(&log, t).map_err(|e| format!("{}: {e}", log.display()))?;
        let lat = self.dir.join(format!("lat{}", self.batches));
        let job = format!(
            "[probe]\nread_iolog={}\nreplay_no_stall=1\nioengine={}\niodepth={qd}\nwrite_lat_log={}\nlog_offset=1\n",
            log.display(),
            self.engine(qd),
            lat.display()
        );
        let mut jobs = blksim_job::jobfile::parse_job_str(&job, "probe", &|_| None)
            .map_err(|e| e.to_string())?;
        setup::prepare_replay(&mut jobs).map_err(|e| e.to_string())?;
        let opts = RunOptions {
            seed: self.seed,
            ..Default::default()
        };
        let out = setup::run(&jobs, &self.profile, &opts)?;
        let task = out
            .tasks
            .first()
            .ok_or("probe: the simulation ran no job")?;
        let clat = self.dir.join(format!("lat{}_clat.1.log", self.batches));
        let text =
            std::fs::read_to_string(&clat).map_err(|e| format!("{}: {e}", clat.display()))?;
        let mut lat_ns = Vec::with_capacity(ops.len());
        for line in text.lines() {
            let v = line
                .split(',')
                .nth(1)
                .and_then(|f| f.trim().parse::<u64>().ok())
                .ok_or_else(|| format!("{}: unexpected line '{line}'", clat.display()))?;
            lat_ns.push(v);
        }
        for f in [log, clat] {
            let _ = std::fs::remove_file(f);
        }
        for k in ["lat", "slat"] {
            let _ = std::fs::remove_file(self.dir.join(format!("lat{}_{k}.1.log", self.batches)));
        }
        if lat_ns.len() != ops.len() {
            return Err(format!(
                "probe: {} I/Os completed of {} (error {})",
                lat_ns.len(),
                ops.len(),
                task.error
            ));
        }
        Ok(Batch {
            lat_ns,
            elapsed_ns: task.end_ns.saturating_sub(task.start_ns),
        })
    }
}
