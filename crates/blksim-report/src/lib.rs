//! fio's latency histogram, per-job statistics and report sinks (normal, JSON, JSON+).
//!
//! * [`hist`]: fio's 1856-bucket log-linear histogram and `calc_clat_percentiles`.
//! * [`stats`]: what the simulation engine records per I/O, in virtual time
//!   ([`JobStats::record_io`] and friends), and group_reporting merges.
//! * [`report`]: the report model ([`RunReport`]) the writers print.
//! * [`normal`] / [`json`]: fio 3.33's normal and JSON/JSON+ layouts, byte for byte.
//! * [`log`]: fio's per-job log files (bw, lat, iops, clat histogram), streamed.
//! * [`terse`]: fio's terse (`--minimal`) lines, versions 2 to 5.
//! * [`html`]: the HTML report, with [`timeline`] (completions over time) and [`depth`]
//!   (queue depth at each stage and device busy over time) as its data.
//!
//! Nothing here reads the wall clock: the timestamps and ctime strings fio prints come
//! from the caller, and pids are deterministic ([`report::FAKE_PID_BASE`]).

pub mod depth;
pub mod hist;
pub mod html;
pub mod json;
pub mod log;
pub mod normal;
pub mod num2str;
pub mod report;
pub mod stats;
pub mod terse;
pub mod timeline;

pub use hist::{plat_idx_to_val, plat_val_to_idx, LatHist, DEFAULT_PERCENTILES, PLAT_NR};
pub use json::{report_json, write_json, JsonValue};
pub use normal::{write_normal, write_normal_header, write_normal_results};
pub use num2str::{num2str, N2sUnit};
pub use report::{
    DiskUtil, GroupRunStats, JobHeader, JobReport, RunReport, SteadyStateReport, UnitBase,
    FAKE_PID_BASE, FIO_VERSION,
};
pub use stats::{
    DirStats, JobStats, LatStat, StatsOptions, WindowSample, DDIR_READ, DDIR_TRIM, DDIR_WRITE,
};
