//! The platform: CPUs and the CPU-side latencies of the path. On the ideal platform every
//! cost is zero so closed-form results are exact; issue #4 adds per-step CPU costs and locks.

/// Platform parameters (`platform.*` in a profile): key, unit, default, meaning, source.
pub const PLATFORM_PARAMS: &[(&str, &str, &str, &str, &str)] = &[
    ("nr_cpus", "count", "2", "CPUs the jobs run on (job clone i on CPU i mod nr_cpus)", "blksim model"),
    ("kblockd_wakeup_ns", "ns", "0", "delay before an asynchronous hardware-queue run (kblockd work item wake-up and context switch)", "blksim model; 0 on the ideal platform"),
    ("task_wakeup_ns", "ns", "0", "delay before a task woken from a tag wait runs again", "blksim model; 0 on the ideal platform"),
];

#[derive(Clone, Debug, PartialEq)]
pub struct Platform {
    pub nr_cpus: u16,
    pub kblockd_wakeup_ns: u64,
    pub task_wakeup_ns: u64,
}

impl Default for Platform {
    fn default() -> Self {
        Platform {
            nr_cpus: 2,
            kblockd_wakeup_ns: 0,
            task_wakeup_ns: 0,
        }
    }
}

impl Platform {
    pub fn from_profile(p: &crate::profile::Profile) -> Result<Self, String> {
        let mut pl = Platform::default();
        for (k, v) in p.with_prefix("platform") {
            let n: u64 = v.value.parse().map_err(|_| {
                format!(
                    "{}: platform.{k}: expected a whole number, got '{}'",
                    v.origin, v.value
                )
            })?;
            match k.as_str() {
                "nr_cpus" => {
                    if n == 0 || n > 4096 {
                        return Err(format!(
                            "{}: platform.nr_cpus: expected 1..4096, got {n}",
                            v.origin
                        ));
                    }
                    pl.nr_cpus = n as u16
                }
                "kblockd_wakeup_ns" => pl.kblockd_wakeup_ns = n,
                "task_wakeup_ns" => pl.task_wakeup_ns = n,
                _ => {
                    let hint = crate::profile::nearest(&k, PLATFORM_PARAMS.iter().map(|p| p.0))
                        .map(|s| format!(" (did you mean 'platform.{s}'?)"))
                        .unwrap_or_default();
                    return Err(format!("{}: unknown field 'platform.{k}'{hint}", v.origin));
                }
            }
        }
        Ok(pl)
    }
}
