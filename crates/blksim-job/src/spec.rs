//! Typed fio job description. Field names follow fio's option names; defaults are fio's
//! (`options.c`), as fio's HOWTO documents them under "Job file parameters".

use crate::error::ParseError;

/// Data direction index, as fio's `enum fio_ddir` (DDIR_READ=0, DDIR_WRITE=1, DDIR_TRIM=2).
/// A whole word: an `Option<IoU>` keeps its tag in the direction's niche, and a one-byte tag
/// store read back as a word (moving the option) stalls store forwarding on every I/O fio's
/// loop takes (`pump`: 11 % of the null path before, 6 % after).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u64)]
pub enum Ddir {
    Read = 0,
    Write = 1,
    Trim = 2,
}

impl Ddir {
    pub const ALL: [Ddir; 3] = [Ddir::Read, Ddir::Write, Ddir::Trim];
    pub fn idx(self) -> usize {
        self as usize
    }

    /// fio's `io_ddir_name`: "read", "write", "trim".
    pub fn name(self) -> &'static str {
        ["read", "write", "trim"][self as usize]
    }
}

/// fio's `rw=` pattern (without the `:N` suffix, which is [`JobSpec::rw_seq_skip`] /
/// [`JobSpec::rw_nr_random`]).
/// `exit_what`: which jobs `fio_terminate_threads` marks when a job ends under `exitall`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitWhat {
    /// `group` (TERMINATE_GROUP): the jobs of the ending job's group (stonewall/new_group).
    Group,
    /// `stonewall` (TERMINATE_STONEWALL): every job running past its ramp (runstate ≥
    /// TD_RUNNING), in any group; later groups still run.
    Stonewall,
    /// `all` (TERMINATE_ALL): every job, also those not started yet.
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwPattern {
    Read,
    Write,
    Trim,
    RandRead,
    RandWrite,
    RandTrim,
    /// `rw` / `readwrite`: sequential mixed.
    ReadWrite,
    /// `randrw`: random mixed.
    RandRw,
    TrimWrite,
    RandTrimWrite,
}

impl RwPattern {
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwPattern::RandRead
                | RwPattern::RandWrite
                | RwPattern::RandTrim
                | RwPattern::RandRw
                | RwPattern::RandTrimWrite
        )
    }
    pub fn has_read(self) -> bool {
        matches!(
            self,
            RwPattern::Read | RwPattern::RandRead | RwPattern::ReadWrite | RwPattern::RandRw
        )
    }
    pub fn has_write(self) -> bool {
        matches!(
            self,
            RwPattern::Write
                | RwPattern::RandWrite
                | RwPattern::ReadWrite
                | RwPattern::RandRw
                | RwPattern::TrimWrite
                | RwPattern::RandTrimWrite
        )
    }
    pub fn has_trim(self) -> bool {
        matches!(
            self,
            RwPattern::Trim | RwPattern::RandTrim | RwPattern::TrimWrite | RwPattern::RandTrimWrite
        )
    }
    /// fio's text for the pattern as printed in the job header line (`rw=randread`).
    pub fn fio_name(self) -> &'static str {
        match self {
            RwPattern::Read => "read",
            RwPattern::Write => "write",
            RwPattern::Trim => "trim",
            RwPattern::RandRead => "randread",
            RwPattern::RandWrite => "randwrite",
            RwPattern::RandTrim => "randtrim",
            RwPattern::ReadWrite => "rw",
            RwPattern::RandRw => "randrw",
            RwPattern::TrimWrite => "trimwrite",
            RwPattern::RandTrimWrite => "randtrimwrite",
        }
    }
}

/// One entry of `bssplit`: block size and percentage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsSplit {
    pub bs: u64,
    pub pct: u32,
}

/// How block sizes are chosen for one direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BsSpec {
    /// `bsrange` low/high (equal for a fixed `bs`).
    pub min: u64,
    pub max: u64,
    /// Non-empty when `bssplit` was given; percentages resolved (sum 100).
    pub split: Vec<BsSplit>,
}

impl BsSpec {
    pub fn fixed(bs: u64) -> Self {
        BsSpec {
            min: bs,
            max: bs,
            split: Vec::new(),
        }
    }
}

/// `random_distribution=`.
#[derive(Clone, Debug, PartialEq)]
pub enum RandomDistribution {
    Random,
    /// `zipf:theta[:center]`. `center` (0.0..=1.0) shifts the hot spot; default 0.0.
    Zipf {
        theta: f64,
        center: f64,
    },
    /// `pareto:h[:center]`, 0 < h < 1; center default 0.0.
    Pareto {
        h: f64,
        center: f64,
    },
    /// `normal:dev_pct[:center]`, 0 <= dev_pct < 100; center default 0.5.
    Normal {
        dev_pct: f64,
        center: f64,
    },
    /// `zoned:pct/range%:...` per direction (index by Ddir).
    Zoned {
        zones: [Vec<Zone>; 3],
    },
    /// `zoned_abs:pct/size:...`
    ZonedAbs {
        zones: [Vec<ZoneAbs>; 3],
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Zone {
    /// Share of I/Os, percent.
    pub access_pct: u32,
    /// Share of the region, percent.
    pub size_pct: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ZoneAbs {
    pub access_pct: u32,
    pub size: u64,
}

/// `ioengine=`: only how it keeps I/O in flight matters to the simulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoEngine {
    /// sync, psync, vsync, pvsync, pvsync2: one I/O in flight whatever `iodepth` says.
    Sync(&'static str),
    /// libaio, io_uring, posixaio: `iodepth` in flight.
    Async(&'static str),
    /// null: completes at submission, no device involved.
    Null,
}

/// fio's steady-state options (`ss`, `ss_dur`, `ss_ramp`): the criterion, its limit, the
/// window and the ramp before data is taken.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyState {
    /// IOPS (`iops`, `iops_slope`) rather than bandwidth (`bw`, `bw_slope`).
    pub iops: bool,
    /// The slope of a least-squares line over the window rather than the largest
    /// deviation from its mean.
    pub slope: bool,
    /// The limit is a percentage of the window's mean.
    pub pct: bool,
    /// The limit: a percentage, IOPS, or bytes per second.
    pub limit: f64,
    /// `steadystate_duration` in whole seconds (fio divides its µs by 10^6): the window's
    /// length in one-second samples; 0 turns the check off.
    pub dur_s: u64,
    /// `steadystate_duration` as given, in ns: any non-zero value starts fio's once-a-second
    /// check, even when it is under a second.
    pub dur_ns: u64,
    /// `steadystate_ramp_time` in ns: samples start one second after it.
    pub ramp_ns: u64,
}

impl SteadyState {
    /// What `td_steadystate_init` compares between the jobs of a group: nothing is set up
    /// without a duration (`memset` to 0), so only jobs with one carry their criterion.
    pub fn effective(&self) -> Option<(u64, u64, bool, bool, bool, u64)> {
        (self.dur_ns > 0).then_some((
            self.dur_s,
            self.limit.to_bits(),
            self.iops,
            self.slope,
            self.pct,
            self.ramp_ns,
        ))
    }
}

impl Default for SteadyState {
    /// fio's default criterion `iops_slope:0.01%`, off (no duration).
    fn default() -> Self {
        SteadyState {
            iops: true,
            slope: true,
            pct: true,
            limit: 0.01,
            dur_s: 0,
            dur_ns: 0,
            ramp_ns: 0,
        }
    }
}

/// `random_generator` (fio's `FIO_RAND_GEN_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RandomGenerator {
    /// taus88, 32-bit (the default).
    Tausworthe,
    /// taus258, 64-bit.
    Tausworthe64,
    /// A linear feedback shift register over the file's blocks (`lib/lfsr.c`): each block
    /// once per pass, no random map.
    Lfsr,
}

/// fio's `zonemode`. Its default is `none`, so fio 3.33 refuses a `zonesize` without
/// `zonemode=strided` ("--zonemode=none and --zonesize are not compatible").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneMode {
    None,
    Strided,
}

/// Strided zones as `fixup_options` leaves them: I/O covers `size` bytes of a zone that
/// starts `range` bytes long, then moves `range + skip` on (`setup_strided_zone_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StridedZones {
    pub size: u64,
    pub range: u64,
    pub skip: u64,
}

impl IoEngine {
    pub fn name(&self) -> &'static str {
        match self {
            IoEngine::Sync(n) | IoEngine::Async(n) => n,
            IoEngine::Null => "null",
        }
    }
    pub fn is_sync(&self) -> bool {
        matches!(self, IoEngine::Sync(_))
    }
    /// The engine completes each I/O inside its queue call (fio's `FIO_Q_COMPLETED`, a
    /// `FIO_SYNCIO` engine): the sync family, and null at `iodepth=1` (`null_init`).
    pub fn completes_in_queue(&self, iodepth: u32) -> bool {
        match self {
            IoEngine::Sync(_) => true,
            IoEngine::Null => iodepth <= 1,
            IoEngine::Async(_) => false,
        }
    }
    /// The kernel takes a reference on the file for each I/O: `io_submit_one`'s `fget`
    /// (libaio), `io_file_get_normal` (io_uring without registered files), the threads of
    /// glibc's POSIX AIO (a threaded process: `fdget` takes a reference). The sync engines
    /// of a single-threaded fio job use `fdget`'s borrowed reference, and null makes no
    /// syscall.
    pub fn file_ref_per_io(&self) -> bool {
        matches!(self, IoEngine::Async(_))
    }
    /// The engine queues an fsync as it queues I/O: io_uring as an `IORING_OP_FSYNC` SQE,
    /// posixaio through `aio_fsync` (fio 3.33 on Linux has CONFIG_POSIXAIO_FSYNC). The others
    /// call fsync(2) inside their queue hook (`do_io_u_sync`) and the job waits in it.
    pub fn queues_fsync(&self) -> bool {
        matches!(self, IoEngine::Async("io_uring" | "posixaio"))
    }
    /// The engine answers a trim FIO_Q_BUSY while any io_u is unreaped, not only while some
    /// are uncommitted: posixaio's `pd->queued` counts io_us until `fio_posixaio_getevents`.
    pub fn trim_waits_for_reaps(&self) -> bool {
        matches!(self, IoEngine::Async("posixaio"))
    }
}

/// fio's io_uring engine options (`struct ioring_options`, `engines/io_uring.c`): what the
/// kernel does per I/O for the ring. Only the io_uring engine accepts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoUringOpts {
    /// `fixedbufs`: buffers registered once (`IORING_REGISTER_BUFFERS`), I/O with
    /// `IORING_OP_READ_FIXED`/`WRITE_FIXED`: no page pinning per I/O.
    pub fixedbufs: bool,
    /// `registerfiles`: files registered once, SQEs with `IOSQE_FIXED_FILE`: no file
    /// reference taken and dropped per I/O.
    pub registerfiles: bool,
    /// `sqthread_poll`: `IORING_SETUP_SQPOLL`, a kernel thread submits; fio makes no submit
    /// syscall and spins on the completion ring (`fio_ioring_commit`, `fio_ioring_getevents`).
    pub sqthread_poll: bool,
    /// `sqthread_poll_cpu`: the SQ thread's CPU (`IORING_SETUP_SQ_AFF`).
    pub sqthread_poll_cpu: Option<u16>,
}

/// One entry of `cmdprio_bssplit` (`struct split_prio`, `parse_cmdprio_bssplit_entry`): I/Os
/// of exactly `bs` bytes take priority `prio` this percentage of the time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmdPrioSplit {
    pub bs: u64,
    /// 0..=100 (fio caps a larger value at 100).
    pub perc: u32,
    /// The priority value (`ioprio_value(class, level)`), or None for the entry written
    /// `bs/perc`, which takes `cmdprio_class` and `cmdprio`.
    pub prio: Option<u32>,
}

/// The libaio and io_uring engines' per-I/O priorities (`engines/cmdprio.c`, fio 3.33):
/// `cmdprio_percentage`, `cmdprio_class`, `cmdprio` and `cmdprio_bssplit`, reads then
/// writes. The engine draws for each read or write it queues whether the I/O takes the
/// priority given here instead of the job's (`fio_cmdprio_set_ioprio`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CmdPrioOpts {
    /// `cmdprio_percentage` (0..=100).
    pub percentage: [u32; 2],
    /// `cmdprio_class` (1..=3); 0 when not given, which is real time
    /// (`fio_cmdprio_parse_and_gen`).
    pub class: [u32; 2],
    /// `cmdprio` (0..=7).
    pub level: [u32; 2],
    /// `cmdprio_bssplit`, each direction sorted by block size (`fio_split_prio_cmp`; entries
    /// of one size keep their order) without its 0 % entries; None when not given.
    pub bssplit: Option<[Vec<CmdPrioSplit>; 2]>,
}

/// One block size's priorities of a direction (`struct cmdprio_bsprio`): `bs` None matches
/// every size (`cmdprio_percentage`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmdPrioBs {
    pub bs: Option<u64>,
    /// (percentage, priority value), drawn in this order.
    pub prios: Vec<(u32, u32)>,
}

impl CmdPrioOpts {
    /// Either option that turns the draws on was given (`fio_cmdprio_init`'s mode).
    pub fn enabled(&self) -> bool {
        self.bssplit.is_some() || self.percentage.iter().any(|&p| p > 0)
    }

    /// The implicit priority of a direction: `cmdprio_class` (real time when not given)
    /// and `cmdprio`.
    fn implicit(&self, d: usize) -> u32 {
        let class = if self.class[d] == 0 { 1 } else { self.class[d] };
        (class << 13) | self.level[d]
    }

    /// What a direction draws from, empty when it draws nothing: fio builds the tables only
    /// for a direction the job does (`td_read`, `td_write`) with a non-zero percentage
    /// (`fio_cmdprio_gen_perc`, `fio_cmdprio_parse_and_gen_bssplit`).
    pub fn table(&self, d: usize, does_dir: bool) -> Vec<CmdPrioBs> {
        if !does_dir || d > 1 {
            return Vec::new();
        }
        match &self.bssplit {
            Some(split) => {
                let mut out: Vec<CmdPrioBs> = Vec::new();
                for e in &split[d] {
                    let prio = e.prio.unwrap_or_else(|| self.implicit(d));
                    match out.last_mut() {
                        Some(b) if b.bs == Some(e.bs) => b.prios.push((e.perc, prio)),
                        _ => out.push(CmdPrioBs {
                            bs: Some(e.bs),
                            prios: vec![(e.perc, prio)],
                        }),
                    }
                }
                out
            }
            None if self.percentage[d] > 0 => vec![CmdPrioBs {
                bs: None,
                prios: vec![(self.percentage[d], self.implicit(d))],
            }],
            None => Vec::new(),
        }
    }
}

impl IoUringOpts {
    /// Files are registered: asked for, or implied by `sqthread_poll` (`fio_ioring_init`:
    /// "sqthread submission requires registered files").
    pub fn files_registered(&self) -> bool {
        self.registerfiles || self.sqthread_poll
    }
}

/// A value that may be given as bytes or as a percentage of the file/device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeOrPct {
    Bytes(u64),
    /// Percent × 1000 (`50%` → 50_000, `12.5%` → 12_500), so fractional percents stay exact
    /// in an integer. Always in 1..=100_000 after parsing (fio rejects 0% and more than 100%).
    PctMilli(u64),
}

/// One job (after `[global]` has been applied and `numjobs` NOT yet expanded).
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    pub name: String,
    /// Where the `[section]` came from (file:line, or `<command line>`), for messages.
    pub origin: String,
    pub rw: RwPattern,
    /// `rw=...:N` for sequential patterns: bytes added after each I/O (may be negative).
    pub rw_seq_skip: i64,
    /// `rw=rand...:N` for random patterns: new random offset every N I/Os (1 = every I/O).
    pub rw_nr_random: u32,
    /// `rw_sequencer=identical` (false = sequential).
    pub rw_sequencer_identical: bool,
    /// Percentage of reads in mixed workloads (`rwmixread`, or 100 - `rwmixwrite`).
    pub rwmixread: u32,
    /// Per-direction block sizes (index by [`Ddir`]).
    pub bs: [BsSpec; 3],
    /// Per-direction `blockalign` (None = minimum bs of that direction).
    pub blockalign: [Option<u64>; 3],
    pub bs_unaligned: bool,
    /// `bs_is_seq_rand`: the block sizes given for reads are a sequential I/O's, those for
    /// writes a random I/O's, whatever its direction (`get_next_buflen`).
    pub bs_is_seq_rand: bool,
    /// `serialize_overlap`: an io_u that overlaps one in flight waits for completions
    /// (`io_u_submit` answers FIO_Q_BUSY). See [`JobSpec::effective_serialize_overlap`].
    pub serialize_overlap: bool,
    /// `size`: None = the whole device (minus offset).
    pub size: Option<SizeOrPct>,
    /// `io_size`/`io_limit`.
    pub io_size: Option<u64>,
    pub offset: SizeOrPct,
    /// `offset_align` when it was given (fio's `fio_option_is_set`): what a percentage
    /// offset or increment is aligned up to instead of the minimum block size.
    pub offset_align: Option<u64>,
    pub offset_increment: u64,
    pub filesize: Option<u64>,
    pub nrfiles: u32,
    pub filename: Option<String>,
    pub directory: Option<String>,
    pub numjobs: u32,
    /// `cpumask` / `cpus_allowed` (the last given wins, as both set fio's `o->cpumask`): the
    /// CPUs the job's threads may run on, ascending. None: no affinity.
    pub cpus_allowed: Option<Vec<u32>>,
    /// `cpus_allowed_policy`.
    pub cpus_allowed_policy: CpusAllowedPolicy,
    pub iodepth: u32,
    /// 0 means `iodepth` (fio semantics).
    pub iodepth_batch_submit: u32,
    pub iodepth_batch_complete_min: u32,
    /// 0 means = complete_min... fio: default = complete_min.
    pub iodepth_batch_complete_max: u32,
    /// None = iodepth.
    pub iodepth_low: Option<u32>,
    pub ioengine: IoEngine,
    pub direct: bool,
    pub thread: bool,
    pub group_reporting: bool,
    /// Nanoseconds; 0 = unlimited.
    pub runtime_ns: u64,
    /// `time_based` in effect: asked for and with a runtime (`fixup_options`).
    pub time_based: bool,
    /// `time_based` as the job file or command line set it.
    pub time_based_asked: bool,
    pub ramp_time_ns: u64,
    /// `steadystate`, `steadystate_duration`, `steadystate_ramp_time` (fio's
    /// steadystate.c): end the job once its IOPS or bandwidth have settled.
    pub steadystate: SteadyState,
    /// `startdelay` (low, high) in ns; a range picks at random.
    pub startdelay_ns: (u64, u64),
    pub loops: u32,
    pub randrepeat: bool,
    pub randseed: u64,
    /// True when `randseed` was given explicitly.
    pub randseed_set: bool,
    /// `allrandrepeat`: every stream seeded from `FIO_RANDSEED` and the job number.
    pub allrandrepeat: bool,
    /// `hipri`: polled completions (io_uring `IORING_SETUP_IOPOLL`, pvsync2 `RWF_HIPRI`).
    pub hipri: bool,
    /// The io_uring engine's options (`engines/io_uring.c`).
    pub io_uring: IoUringOpts,
    /// The libaio and io_uring engines' per-I/O priorities (`engines/cmdprio.c`).
    pub cmdprio: CmdPrioOpts,
    /// `random_generator`: which generator draws the random offsets.
    pub random_generator: RandomGenerator,
    /// True when `iodepth` was given (fio's `fio_option_is_set`): a blktrace replay
    /// otherwise takes the depth probed from the trace.
    pub iodepth_set: bool,
    /// The iodepth the job header shows when a blktrace replay probed another: fio prints
    /// the header before it reads the trace.
    pub iodepth_shown: Option<u32>,
    pub norandommap: bool,
    pub number_ios: u64,
    pub random_distribution: RandomDistribution,
    /// `percentage_random` per direction.
    pub percentage_random: [u32; 3],
    /// `percentile_list` (percent values).
    pub percentile_list: Vec<f64>,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    /// Per-direction `rate_iops` (0 = unlimited).
    pub rate_iops: [u64; 3],
    /// Per-direction `rate` in bytes/s (0 = unlimited).
    pub rate: [u64; 3],
    /// `rate_process=poisson`.
    pub rate_poisson: bool,
    /// `thinktime` in ns.
    pub thinktime_ns: u64,
    pub thinktime_blocks: u32,
    /// `thinktime_blocks` was given (with `thinktime_iotime` alone, fio skips the blocks
    /// check: its default of 1 would think after every I/O).
    pub thinktime_blocks_set: bool,
    /// `thinktime_iotime` in ns: think once this much time (plus `thinktime`) has passed
    /// since the last think time (`handle_thinktime`).
    pub thinktime_iotime_ns: u64,
    /// `rate_ignore_thinktime`: after a think time the rate does not catch up on it.
    pub rate_ignore_thinktime: bool,
    /// `thinktime_spin` (ns): the first part of each think time, spent spinning on the CPU
    /// instead of sleeping (`usec_spin`).
    pub thinktime_spin_ns: u64,
    /// `latency_target` (ns, 0 = off): fio searches the largest queue depth whose I/Os stay
    /// under it (`lat_target_check`), over windows of `latency_window` (µs, as fio keeps
    /// it), counting a window good when `latency_percentile` % of its I/Os are; with
    /// `latency_run` it keeps adjusting instead of settling.
    pub latency_target_ns: u64,
    pub latency_window_us: u64,
    pub latency_percentile: f64,
    pub latency_run: bool,
    /// `max_latency` per direction (ns, 0 = none): a longer I/O ends the job with ETIMEDOUT.
    pub max_latency_ns: [u64; 3],
    /// `rate_min` (bytes/s) and `rate_iops_min` per direction, 0 = none, checked over
    /// `rate_cycle` ms (`check_min_rate`): a job below them ends with EIO.
    pub rate_min: [u64; 3],
    pub rate_iops_min: [u64; 3],
    pub rate_cycle_ms: u64,
    /// `thinktime_blocks_type=issue`: count the I/Os issued; fio's default counts those
    /// completed.
    pub thinktime_blocks_issue: bool,
    pub fsync: u32,
    pub fdatasync: u32,
    pub end_fsync: bool,
    /// `sync=`: open the device O_SYNC (`sync`, `1`) or O_DSYNC (`dsync`); false for `none`/`0`.
    /// On a block device both make direct writes FUA (`dio_bio_write_op`) and, for the
    /// synchronous engines, add a flush after each write (`generic_write_sync` →
    /// `blkdev_fsync`).
    pub sync_io: bool,
    /// `continue_on_error=`: which errors a job counts and goes on after (`ERROR_TYPE_*`
    /// bits: 1 read, 2 write, 4 verify); 0 (`none`) stops the job at the first error.
    pub continue_on_error: u8,
    /// `ignore_error`: per error type (read, write, verify) the errnos `continue_on_error`
    /// goes on after, instead of fio's default EIO and EILSEQ (`__NON_FATAL_ERR`); a list
    /// also turns `continue_on_error` on for its type.
    pub ignore_error: [Option<Vec<i32>>; 3],
    /// `ioscheduler=`: the elevator to select, None = the device profile's default.
    pub ioscheduler: Option<String>,
    /// `stonewall`/`wait_for_previous`: wait for all earlier jobs and start a new group.
    pub stonewall: bool,
    pub new_group: bool,
    /// `exitall`: fio's global `exitall_on_terminate`, which any job that names the option
    /// (with any value: its callback ignores it) turns on for every job: a job's end then
    /// terminates the jobs `exit_what` names. `exitall_on_error`: the same for a job that
    /// ends with an error.
    /// `wait_for`: start only when every clone of the job of this name has ended.
    pub wait_for: Option<String>,
    pub exitall: bool,
    pub exit_what: ExitWhat,
    pub exitall_on_error: bool,
    /// `prio` and `prioclass`: the job's I/O priority, set with ioprio_set(2) on its thread
    /// when either is given (`thread_main`).
    pub ioprio: Option<u32>,
    pub ioprio_class: Option<u32>,
    /// `kb_base` (1024 or 1000) and `unit_base` (0 auto, 8 bytes, 1 bits) for output.
    pub kb_base: u32,
    pub unit_base: u32,
    pub gtod_reduce: bool,
    /// `disable_lat`, `disable_clat`, `disable_slat`, `disable_bw_measurement` (all four
    /// set by `gtod_reduce=1`): which latencies and per-I/O bandwidth samples fio keeps.
    pub disable_lat: bool,
    pub disable_clat: bool,
    pub disable_slat: bool,
    pub disable_bw: bool,
    /// `significant_figures` of the normal output (1 to 10).
    pub sig_figs: u32,
    /// `stats`: whether fio keeps the job's statistics at all.
    pub stats: bool,
    /// `bwavgtime` / `iopsavgtime` in ms.
    pub bwavgtime_ms: u64,
    pub iopsavgtime_ms: u64,
    /// fio's per-job log files.
    pub logs: LogSpec,
    /// `write_iolog`: where the issued I/O goes, as a fio version 3 iolog.
    pub write_iolog: Option<String>,
    /// `read_iolog` and the `replay_*` options.
    pub replay: ReplaySpec,
    /// `unified_rw_reporting`: "none", "mixed", "both".
    pub unified_rw_reporting: String,
    /// `verify=` method name (None = off) and `do_verify`.
    pub verify: Option<String>,
    pub do_verify: bool,
    /// `verify_backlog`: verify after this many logged writes (0 = only after the writes),
    /// and `verify_backlog_batch`: how many to verify then (0 = `verify_backlog`).
    pub verify_backlog: u64,
    pub verify_backlog_batch: u64,
    /// Options exactly as written (key, value) in order, for the JSON "job options" object.
    /// As fio's dump list (parse.c `add_to_dump_list`): the key is the option's canonical name
    /// (`timeout=60` is stored as `runtime`), the value is as written after `${VAR}` and keyword
    /// substitution, and options given without a value (`time_based`) are left out, because
    /// fio's JSON writer skips them. Options inherited from `[global]` are not repeated here.
    pub raw_options: Vec<(String, String)>,
    /// The options the job's own section names without a value (`stonewall`,
    /// `group_reporting`): fio's JSON echoes the section's options as an object whose
    /// members are only the ones with values, so a section of bare keys alone prints `{}`.
    pub bare_options: Vec<String>,
    /// Where each option that applies to this job was last set: (canonical name, file, line),
    /// including options inherited from `[global]` and command-line overrides. Semantic checks
    /// made after parsing (a region smaller than a block, an unknown scheduler) point there
    /// through [`JobSpec::error_at`].
    pub set_at: Vec<(&'static str, String, usize)>,
    /// Accepted-but-ignored options, with a one-line note each (printed once to stderr).
    pub notes: Vec<String>,
    /// `description=` (free text; fio prints it only in the JSON "job options").
    pub description: Option<String>,
    /// `offset_increment=N%`: percent × 1000 of the file/device size. When `Some`, it replaces
    /// [`JobSpec::offset_increment`] (fio `str_offset_increment_cb` keeps the two apart too).
    pub offset_increment_pct: Option<u64>,
    /// `zonemode`, `zonesize`, `zonerange`, `zoneskip` (bytes): fio's strided zones. See
    /// [`JobSpec::strided_zones`].
    pub zonemode: ZoneMode,
    pub zonesize: u64,
    pub zonerange: u64,
    pub zoneskip: u64,
    /// `io_submit_mode=offload`: submission follows the rate regardless of completions (the
    /// fixed-rate and poisson examples use it). false = `inline`, fio's default.
    pub io_submit_offload: bool,
}

/// `read_iolog` and how it is replayed (`replay_no_stall`, `replay_time_scale`,
/// `replay_scale`, `replay_align`, `replay_redirect`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplaySpec {
    pub file: Option<String>,
    pub no_stall: bool,
    /// Percent of the recorded time (100: as recorded).
    pub time_scale_pct: u64,
    /// Offsets divided by this (1: as recorded) and aligned down to this (0, 1: not).
    pub scale: u64,
    pub align: u64,
    pub redirect: Option<String>,
    /// `replay_skip`: directions not replayed, bit `Ddir as usize` (read, write, trim) and
    /// bit 3 for sync.
    pub skip: u8,
    /// `merge_blktrace_file`: where the merged blktrace is written before it is replayed.
    pub merge_file: Option<String>,
    /// `merge_blktrace_scalars` (% of each file's recorded time) and
    /// `merge_blktrace_iters` (passes over each file); empty: 100 and 1.
    pub merge_scalars: Vec<u64>,
    pub merge_iters: Vec<u64>,
    /// `replay_skip_bad` (blksim's own): malformed lines of a text trace are passed over
    /// and counted instead of stopping the run.
    pub skip_bad: bool,
    /// `read_iolog_format` (blksim's own): the trace's format, None to recognise it.
    pub format: Option<TraceFormat>,
    /// `replay_device` (blksim's own): replay only this device's, disk's or volume's
    /// records (a blktrace's dev_t, major << 20 | minor).
    pub device: Option<u64>,
}

/// The trace formats `read_iolog` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    Fio,
    Blktrace,
    Blkparse,
    Msr,
    Alibaba,
    Tencent,
    Ascii,
}

impl TraceFormat {
    pub const ALL: [TraceFormat; 7] = [
        TraceFormat::Fio,
        TraceFormat::Blktrace,
        TraceFormat::Blkparse,
        TraceFormat::Msr,
        TraceFormat::Alibaba,
        TraceFormat::Tencent,
        TraceFormat::Ascii,
    ];

    /// The `read_iolog_format` value.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Fio => "fio",
            TraceFormat::Blktrace => "blktrace",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::Msr => "msr",
            TraceFormat::Alibaba => "alibaba",
            TraceFormat::Tencent => "tencent",
            TraceFormat::Ascii => "ascii",
        }
    }
}

/// `replay_skip`'s bit for sync (flush) records.
pub const REPLAY_SKIP_SYNC: u8 = 1 << 3;

impl Default for ReplaySpec {
    fn default() -> Self {
        ReplaySpec {
            file: None,
            no_stall: false,
            time_scale_pct: 100,
            scale: 1,
            align: 0,
            redirect: None,
            skip: 0,
            merge_file: None,
            merge_scalars: Vec::new(),
            merge_iters: Vec::new(),
            skip_bad: false,
            format: None,
            device: None,
        }
    }
}

/// fio's per-job log files: `write_bw_log`, `write_lat_log`, `write_iops_log`,
/// `write_hist_log` and the `log_*` options that shape them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSpec {
    /// The log name prefix of each kind, if that log is written ("" = the job's name).
    pub bw: Option<String>,
    pub lat: Option<String>,
    pub iops: Option<String>,
    pub hist: Option<String>,
    /// `log_avg_msec` (0 = one entry per I/O), `log_hist_msec` (0 = no histogram entries),
    /// `log_hist_coarseness` (0..=6).
    pub avg_msec: u64,
    pub hist_msec: u64,
    pub hist_coarseness: u32,
    pub max_value: bool,
    pub offset: bool,
    pub prio: bool,
    /// `per_job_logs`: the job's number in the file name.
    pub per_job: bool,
}

impl Default for LogSpec {
    fn default() -> Self {
        LogSpec {
            bw: None,
            lat: None,
            iops: None,
            hist: None,
            avg_msec: 0,
            hist_msec: 0,
            hist_coarseness: 0,
            max_value: false,
            offset: false,
            prio: false,
            per_job: true,
        }
    }
}

impl LogSpec {
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.lat.is_some() || self.iops.is_some() || self.hist.is_some()
    }
}

/// fio's `cpus_allowed_policy`: how a job's clones use its CPU set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CpusAllowedPolicy {
    /// `shared`: every clone may run on any CPU of the set (`FIO_CPUS_SHARED`).
    #[default]
    Shared,
    /// `split`: clone with `thread_number` n runs on the set's CPU number
    /// `(n - 1) % count` only (`fio_cpus_split`).
    Split,
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            name: String::new(),
            origin: String::new(),
            rw: RwPattern::Read,
            rw_seq_skip: 0,
            rw_nr_random: 1,
            rw_sequencer_identical: false,
            rwmixread: 50,
            bs: [
                BsSpec::fixed(4096),
                BsSpec::fixed(4096),
                BsSpec::fixed(4096),
            ],
            blockalign: [None, None, None],
            bs_unaligned: false,
            bs_is_seq_rand: false,
            serialize_overlap: false,
            size: None,
            io_size: None,
            offset: SizeOrPct::Bytes(0),
            offset_align: None,
            offset_increment: 0,
            filesize: None,
            nrfiles: 1,
            filename: None,
            directory: None,
            numjobs: 1,
            cpus_allowed: None,
            cpus_allowed_policy: CpusAllowedPolicy::Shared,
            iodepth: 1,
            iodepth_batch_submit: 1,
            iodepth_batch_complete_min: 1,
            iodepth_batch_complete_max: 1,
            iodepth_low: None,
            ioengine: IoEngine::Sync("psync"),
            direct: false,
            thread: false,
            group_reporting: false,
            runtime_ns: 0,
            time_based: false,
            time_based_asked: false,
            ramp_time_ns: 0,
            steadystate: SteadyState::default(),
            startdelay_ns: (0, 0),
            loops: 1,
            randrepeat: true,
            randseed: 0x89,
            randseed_set: false,
            allrandrepeat: false,
            hipri: false,
            io_uring: IoUringOpts::default(),
            cmdprio: CmdPrioOpts::default(),
            random_generator: RandomGenerator::Tausworthe,
            iodepth_set: false,
            iodepth_shown: None,
            norandommap: false,
            number_ios: 0,
            random_distribution: RandomDistribution::Random,
            percentage_random: [100, 100, 100],
            percentile_list: vec![
                1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5,
                99.9, 99.95, 99.99,
            ],
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            rate_iops: [0; 3],
            rate: [0; 3],
            rate_poisson: false,
            thinktime_ns: 0,
            thinktime_blocks: 1,
            thinktime_blocks_set: false,
            thinktime_iotime_ns: 0,
            rate_ignore_thinktime: false,
            thinktime_spin_ns: 0,
            latency_target_ns: 0,
            latency_window_us: 0,
            latency_percentile: 100.0,
            latency_run: false,
            max_latency_ns: [0; 3],
            rate_min: [0; 3],
            rate_iops_min: [0; 3],
            rate_cycle_ms: 1000,
            thinktime_blocks_issue: false,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            sync_io: false,
            continue_on_error: 0,
            ignore_error: [None, None, None],
            ioscheduler: None,
            stonewall: false,
            wait_for: None,
            exitall: false,
            exit_what: ExitWhat::Group,
            exitall_on_error: false,
            ioprio: None,
            ioprio_class: None,
            new_group: false,
            kb_base: 1024,
            unit_base: 0,
            gtod_reduce: false,
            disable_lat: false,
            disable_clat: false,
            disable_slat: false,
            disable_bw: false,
            sig_figs: 4,
            stats: true,
            bwavgtime_ms: 500,
            iopsavgtime_ms: 500,
            logs: LogSpec::default(),
            write_iolog: None,
            replay: ReplaySpec::default(),
            unified_rw_reporting: "none".into(),
            verify: None,
            do_verify: true,
            verify_backlog: 0,
            verify_backlog_batch: 0,
            raw_options: Vec::new(),
            bare_options: Vec::new(),
            set_at: Vec::new(),
            notes: Vec::new(),
            description: None,
            offset_increment_pct: None,
            zonemode: ZoneMode::None,
            zonesize: 0,
            zonerange: 0,
            zoneskip: 0,
            io_submit_offload: false,
        }
    }
}

impl JobSpec {
    /// The job's files: the names in `filename` (separated by `:`) when it is given, which
    /// then overrides `nrfiles` (fio 3.33: `filename=a nrfiles=3` uses one file, `a:b`
    /// two), else `nrfiles`.
    pub fn nr_files(&self) -> u64 {
        match self.filename.as_deref() {
            Some(f) => f.split(':').filter(|n| !n.is_empty()).count().max(1) as u64,
            None => self.nrfiles.max(1) as u64,
        }
    }

    /// The job's strided zones, as `fixup_options` settles them: `zonerange` defaults to
    /// `zonesize`; with several files open fio drops them ("Strided zone mode only really
    /// works with 1 file").
    pub fn strided_zones(&self) -> Option<StridedZones> {
        let strided = self.zonemode == ZoneMode::Strided;
        (strided && self.zonesize > 0 && self.nr_files() <= 1).then_some(StridedZones {
            size: self.zonesize,
            range: if self.zonerange > 0 {
                self.zonerange
            } else {
                self.zonesize
            },
            skip: self.zoneskip,
        })
    }

    /// Record that `option` (canonical name) was set at `file:line`.
    pub(crate) fn mark_set(&mut self, option: &'static str, file: &str, line: usize) {
        match self.set_at.iter_mut().find(|(o, _, _)| *o == option) {
            Some(slot) => {
                slot.1 = file.to_string();
                slot.2 = line;
            }
            None => self.set_at.push((option, file.to_string(), line)),
        }
    }

    /// Where `option` was set for this job, if it was.
    /// Forget that `option` was set (an inherited engine option the job's engine drops).
    pub(crate) fn unmark_set(&mut self, option: &str) {
        self.set_at.retain(|(o, _, _)| *o != option);
    }

    pub fn where_set(&self, option: &str) -> Option<(&str, usize)> {
        self.set_at
            .iter()
            .find(|(o, _, _)| *o == option)
            .map(|(_, f, l)| (f.as_str(), *l))
    }

    /// A semantic error about this job, located like a parse error: at the line of the first
    /// of `options` that was set (they are the options the check involves, most specific
    /// first), else at the job's section header.
    pub fn error_at(&self, options: &[&'static str], message: impl Into<String>) -> ParseError {
        let message = message.into();
        for o in options {
            if let Some((file, line)) = self.where_set(o) {
                return ParseError::new(file, line, Some(o), message);
            }
        }
        let (file, line) = match self.origin.rsplit_once(':') {
            Some((f, l)) if l.parse::<usize>().is_ok() => (f, l.parse().unwrap_or(0)),
            _ => (self.origin.as_str(), 0),
        };
        let what = match options.first() {
            Some(o) => format!("job '{}': option '{o}' (default): {message}", self.name),
            None => format!("job '{}': {message}", self.name),
        };
        ParseError::new(file, line, None, what)
    }

    /// I/Os this job keeps in flight: 1 for sync engines whatever `iodepth` says (fio does the
    /// same: a sync engine returns FIO_Q_COMPLETED from `->queue`).
    pub fn effective_depth(&self) -> u32 {
        if self.ioengine.is_sync() {
            1
        } else {
            self.iodepth.max(1)
        }
    }

    /// `iodepth_batch_submit` as fio uses it: 0 or more than `iodepth` means `iodepth`
    /// (init.c `fixup_options`).
    pub fn effective_iodepth_batch_submit(&self) -> u32 {
        let depth = self.iodepth.max(1);
        if self.iodepth_batch_submit == 0 || self.iodepth_batch_submit > depth {
            depth
        } else {
            self.iodepth_batch_submit
        }
    }

    /// `iodepth_batch_complete_max` as fio uses it: never below `iodepth_batch_complete_min`
    /// (init.c `fixup_options`).
    pub fn effective_iodepth_batch_complete_max(&self) -> u32 {
        self.iodepth_batch_complete_max
            .max(self.iodepth_batch_complete_min)
    }

    /// `serialize_overlap` after `fixup_options`, which turns it off for a job that changes
    /// no data or runs at `iodepth=1`, unless it replays a log or submits from offload
    /// threads.
    pub fn effective_serialize_overlap(&self) -> bool {
        let changes = self.rw.has_write() || self.rw.has_trim();
        self.serialize_overlap
            && (self.replay.file.is_some()
                || self.io_submit_offload
                || (changes && self.iodepth > 1))
    }

    /// The I/O priority value fio gives the job's I/O (`ioprio_value`: class, best effort
    /// for 0, in the top bits above the level), 0 when neither option is set.
    pub fn ioprio_value(&self) -> u32 {
        if self.ioprio.is_none() && self.ioprio_class.is_none() {
            return 0;
        }
        let class = match self.ioprio_class.unwrap_or(0) {
            0 => 2,
            c => c,
        };
        (class << 13) | self.ioprio.unwrap_or(0)
    }

    /// The I/Os `number_ios` allows over all passes (0 = no limit): × `loops`, and twice
    /// that for `trimwrite`, whose `do_io` doubles it ("each byte is trimmed and then
    /// written").
    pub fn effective_number_ios(&self) -> u64 {
        // A replayed log runs to its end: fio's `do_io` loops while the log has entries
        // (`read_iolog_file && !flist_empty(&td->io_log_list)`) and only a replay's end,
        // `runtime` or an error stop it, not `number_ios`.
        if self.replay.file.is_some() {
            return 0;
        }
        let trimwrite = matches!(self.rw, RwPattern::TrimWrite | RwPattern::RandTrimWrite);
        self.number_ios
            .saturating_mul(self.loops.max(1) as u64)
            .saturating_mul(if trimwrite { 2 } else { 1 })
    }

    /// `iodepth_low` as fio uses it: unset, 0 or more than `iodepth` means `iodepth`
    /// (init.c `fixup_options`).
    pub fn effective_iodepth_low(&self) -> u32 {
        let depth = self.iodepth.max(1);
        match self.iodepth_low {
            Some(low) if low != 0 && low <= depth => low,
            _ => depth,
        }
    }

    /// Smallest block size of a direction (from `bs`, `bsrange` or `bssplit`).
    pub fn min_bs(&self, ddir: Ddir) -> u64 {
        self.bs[ddir.idx()].min
    }

    /// `blockalign` of a direction, defaulting to its minimum block size as fio does.
    pub fn effective_blockalign(&self, ddir: Ddir) -> u64 {
        self.blockalign[ddir.idx()].unwrap_or(self.bs[ddir.idx()].min)
    }
}

/// The result of parsing job files and/or a command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobSet {
    /// Jobs in file order (numjobs not expanded).
    pub jobs: Vec<JobSpec>,
    /// `[global]` options as written, for the JSON "global options" object (same rules as
    /// [`JobSpec::raw_options`]).
    pub global_options: Vec<(String, String)>,
}
