//! blksim-workload: fio's I/O generation — which direction, which offset, how many bytes.
//!
//! [`IoGen`] is the per-job (per-clone) generator. It ports the decisions fio makes in
//! `io_u.c` (`fill_io_u` → `set_rw_ddir`/`get_rw_ddir`, `get_next_offset` →
//! `get_next_block` → `get_next_seq_offset`/`get_next_rand_offset`, `get_next_buflen`,
//! `mark_random_map`) and the loop/termination rules of `backend.c` (`do_io`,
//! `keep_running`, `io_bytes_exceeded`, `exceeds_number_ios`, `clear_io_state`).
//!
//! # Randomness and seeding
//!
//! The streams fio keeps per job draw fio's own numbers ([`frand`]): the offset of uniform
//! random I/O (`random_state`), the read/write mix (`rwmix_state`), block sizes per
//! direction (`bsrange_state`), `percentage_random` (`seq_rand_state`) and zones
//! (`zone_state`), each a Tausworthe generator seeded as fio 3.33's `setup_random_seeds` and
//! `td_fill_rand_seeds` seed it ([`workload_seeds`]). A job therefore visits the offsets,
//! sizes and directions the real fio visits for the same job file (checked against fio's
//! `write_iolog` on its null engine). zipf, pareto and normal draw from a stream of
//! blksim's own: their numbers are not fio's.
//!
//! As in fio's `clear_io_state`, with `randrepeat=1` every new pass over the region (a new
//! `loops` iteration, or a wrap of `io_size > size`) restarts the streams, so the pass
//! repeats the previous pass's random choices; a job that sets `randseed` goes on with its
//! streams instead (`fixup_options` turns `randrepeat` off once the seeds are drawn). A
//! pass of an async engine ends after `size` bytes; a sync engine's only when the region
//! is done, so with `norandommap` its `io_size` is one pass (`do_io` counts the bytes it
//! queued, and a sync engine queues none).
//!
//! # Distribution parameters
//!
//! `center` in [`RandomDistribution`] follows fio's convention: a negative value (fio uses
//! -1) means "not given" — zipf/pareto then add a random offset to every rank, normal is
//! centred. Every distribution but `random` turns the random map off, zoned and zoned_abs
//! included (fio's `fixup_options`), so they may repeat blocks within a pass.
//!
//! # Allocation
//!
//! Everything [`IoGen::next`] needs is allocated in [`IoGen::new`]: the random map (one bit
//! per block), the 100-entry zone tables and the bssplit tables. No per-I/O history is kept.
//!
//! # Files
//!
//! The simulator has one block device. `nrfiles`/`filesize` are resolved by
//! [`Region::resolve`] into one contiguous region (the files laid out back to back); the
//! generator then behaves as fio does for a single file of that size.

mod axmap;
pub mod blktrace;
mod dist;
pub mod foreign;
pub mod frand;
pub mod iolog;
pub mod lfsr;
pub mod recorded;

pub use axmap::Axmap;
pub use blksim_job::Ddir;
pub use dist::{hash_u64, Gauss, Zipf, GOLDEN_RATIO_64};
pub use frand::{FRand, WorkloadSeeds};

use blksim_core::Rng;
use blksim_job::{
    IoEngine, JobSpec, ParseError, RandomDistribution, RandomGenerator, RwPattern, SizeOrPct,
};

/// One I/O unit: direction, absolute byte offset on the device, length in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoU {
    pub ddir: Ddir,
    pub offset: u64,
    pub len: u64,
}

/// The byte range one job (clone) does I/O in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// fio's `f->file_offset`: absolute start on the device.
    pub start: u64,
    /// fio's `get_start_offset` once the files are set up, where it differs from `start`
    /// only for a percentage offset of the null engine's file, which `setup_files` grew: where
    /// a new pass or a wrapped zone starts, and what `io_u_fits` measures the region from.
    pub run_start: u64,
    /// fio's `f->io_size`: length of the region.
    pub len: u64,
    /// fio's `o->size` once `setup_files` is done: the bytes of a pass, `len` unless the
    /// files have a `filesize` and `size` asks for fewer bytes than they hold.
    pub bytes: u64,
    /// fio's `f->real_file_size`: the size of the target as fio sees it. For a block device
    /// that is the device's size; for the null engine, which has no file to measure, it is
    /// `size / nrfiles` (or unbounded without a byte `size`), raised to the region's end for
    /// a regular file (see [`Region::resolve`]). Sequential I/O with holes
    /// wraps at this size, and a sequential run of `rw=randxxx:N` that reaches it continues
    /// at a random block; below it, an offset past the region ends the pass.
    pub device_bytes: u64,
}

fn min_bs_of(spec: &JobSpec, d: Ddir) -> u64 {
    let b = &spec.bs[d.idx()];
    if b.split.is_empty() {
        b.min
    } else {
        b.split.iter().map(|s| s.bs).min().unwrap_or(b.min)
    }
}

fn max_bs_of(spec: &JobSpec, d: Ddir) -> u64 {
    let b = &spec.bs[d.idx()];
    if b.split.is_empty() {
        b.max
    } else {
        b.split.iter().map(|s| s.bs).max().unwrap_or(b.max)
    }
}

/// fio's `td_min_bs`: smallest block size over all directions.
fn td_min_bs(spec: &JobSpec) -> u64 {
    Ddir::ALL
        .iter()
        .map(|&d| min_bs_of(spec, d))
        .min()
        .unwrap_or(4096)
        .max(1)
}

/// A job that fio's `setup_files` (or `total_file_size`) fails when its thread starts: fio
/// prints [`Self::fio_lines`], that job runs without I/O and stays in the JSON and terse
/// reports with error [`Self::errno`], the other jobs run, and fio exits with 1.
#[derive(Clone, Debug)]
pub struct JobSetupFailure {
    /// What fio prints on stderr, one line each.
    pub fio_lines: Vec<String>,
    /// `td->error` in the report: `EINVAL` from `total_file_size`, none from `setup_files`'
    /// offset check (it returns without `td_verror`).
    pub errno: i32,
    /// blksim's explanation, naming the job file line and option.
    pub detail: ParseError,
}

/// Why a region could not be resolved.
enum RegionFailure {
    /// fio refuses the whole run.
    Refused(ParseError),
    /// fio fails this job only.
    Job(JobSetupFailure),
}

impl From<ParseError> for RegionFailure {
    fn from(e: ParseError) -> Self {
        RegionFailure::Refused(e)
    }
}

impl Region {
    /// [`Self::resolve_in_run`] for callers that refuse every failure.
    pub fn resolve(
        spec: &JobSpec,
        clone_index: u32,
        device_bytes: u64,
    ) -> Result<Region, ParseError> {
        match Self::resolve_inner(spec, clone_index, device_bytes) {
            Ok(r) => Ok(r),
            Err(RegionFailure::Refused(e)) => Err(e),
            Err(RegionFailure::Job(f)) => Err(f.detail),
        }
    }

    /// The region of a job in a run: `Ok(Err(_))` for a job fio fails alone (an offset past
    /// the file or device, a null-engine job that nothing sizes), `Err` for a job fio refuses
    /// the whole run for.
    pub fn resolve_in_run(
        spec: &JobSpec,
        clone_index: u32,
        device_bytes: u64,
    ) -> Result<Result<Region, JobSetupFailure>, ParseError> {
        match Self::resolve_inner(spec, clone_index, device_bytes) {
            Ok(r) => Ok(Ok(r)),
            Err(RegionFailure::Refused(e)) => Err(e),
            Err(RegionFailure::Job(f)) => Ok(Err(f)),
        }
    }

    /// Resolve the region of clone `clone_index` (0-based, fio's `subjob_number`) of `spec`
    /// on a device of `device_bytes`, following `filesetup.c` `get_start_offset` and
    /// `setup_files`:
    /// * start = `offset` + `clone_index * offset_increment` (percentages are of the device,
    ///   or with the null engine of `size / nrfiles`; if either is a percentage the sum is
    ///   aligned **up** to `offset_align`, or without it to the minimum block size);
    /// * length = `(filesize - start) * nrfiles` if `filesize` is set (then a percentage
    ///   `size` scales it and a byte `size` is the bytes of a pass), else `size` (a percentage of the
    ///   device, aligned down to the minimum block size), else the rest of the device;
    /// * the length is clamped to the end of the device (fio would stop at the device end),
    ///   except with the null engine, which never reaches the device;
    /// * errors as fio: offset beyond the device, a region smaller than the block size, or a
    ///   null-engine job that nothing sizes ("you need to specify size=");
    /// * `device_bytes` of the result (fio's `real_file_size`) is the device size, except with
    ///   `ioengine=null`: a diskless engine has no size hook, so `add_file` leaves it at -1
    ///   and `get_file_sizes` sets it to `size / nr_files` for a byte `size`, and
    ///   `setup_files` raises it to `file_offset + io_size` for a regular file (not for a
    ///   device path such as `/dev/null`).
    fn resolve_inner(
        spec: &JobSpec,
        clone_index: u32,
        device_bytes: u64,
    ) -> Result<Region, RegionFailure> {
        let min_bs = td_min_bs(spec);
        // `fixup_options`: a byte size under the smallest block size refuses the whole run.
        if let Some(SizeOrPct::Bytes(b @ 1..)) = spec.size {
            if b < min_bs {
                return Err(spec
                    .error_at(
                        &["size"],
                        format!("size too small, must not be less than minimum block size: {b} < {min_bs}"),
                    )
                    .into());
            }
        }
        // `setup_files`' "you need to specify valid offset=" (no `td_verror`).
        let bad_offset = |detail: ParseError| {
            RegionFailure::Job(JobSetupFailure {
                fio_lines: vec![format!("{}: you need to specify valid offset=", spec.name)],
                errno: 0,
                detail,
            })
        };
        let nrfiles = spec.nr_files();
        // fio's null engine has no file to measure (`FIO_DISKLESSIO`): `add_file` leaves
        // `real_file_size` at -1, and `get_file_sizes` makes it `size / nr_files` when `size`
        // is a byte count. That, not the simulated device (which the engine never reaches),
        // is what a percentage offset is of and where a device path ends.
        let null = matches!(spec.ioengine, IoEngine::Null);
        let file_bytes = match (null, spec.size) {
            (false, _) => device_bytes,
            (true, Some(SizeOrPct::Bytes(b))) if b > 0 => b / nrfiles,
            (true, _) => u64::MAX,
        };
        if null && spec.filesize.is_none() && file_bytes == u64::MAX {
            // `total_file_size`: nothing sizes the files; `td_verror(td, EINVAL, ...)`.
            return Err(RegionFailure::Job(JobSetupFailure {
                fio_lines: vec![
                    format!("{}: you need to specify size=", spec.name),
                    "fio: pid=0, err=22/file:filesetup.c:1155, func=total_file_size, error=Invalid argument".into(),
                ],
                errno: 22,
                detail: spec.error_at(
                    &["size"],
                    "you need to specify size= (the null engine has no file or device to take a size or percentage of)",
                ),
            }));
        }
        // get_start_offset: offset (+ clone × increment) for a file of `file_size`; when
        // either is a percentage the sum is aligned up to the minimum block size.
        let start_of = |file_size: u64| -> Result<u64, ParseError> {
            let pct = |p: u64| (file_size as u128 * p as u128 / 100_000) as u64;
            let mut align = false;
            let increment = match spec.offset_increment_pct {
                Some(p) => {
                    align = true;
                    pct(p)
                }
                None => spec.offset_increment,
            };
            let base = match spec.offset {
                SizeOrPct::Bytes(b) => b,
                SizeOrPct::PctMilli(p) => {
                    align = true;
                    pct(p)
                }
            };
            let mut start = base
                .checked_add(increment.saturating_mul(clone_index as u64))
                .ok_or_else(|| {
                    spec.error_at(&["offset_increment", "offset"], "offset overflows")
                })?;
            if align {
                // `offset_align` when given, else the minimum block size. fio 3.33 divides
                // by a given 0 and dies of SIGFPE; blksim says so.
                let a = spec.offset_align.unwrap_or(min_bs);
                if a == 0 {
                    return Err(spec.error_at(
                        &["offset_align"],
                        "offset_align=0 with a percentage offset or offset_increment: fio 3.33 divides by it and crashes (SIGFPE); leave it unset to align to the minimum block size",
                    ));
                }
                start = start.div_ceil(a).saturating_mul(a);
            }
            Ok(start)
        };
        let start = start_of(file_bytes)?;
        // A null engine's file ends where its I/O does (below), wherever it starts.
        // `setup_files` checks the offset only for a file it sizes from the device (no
        // `size=`, no `filesize=`): with a byte `size` the job starts past the device's end
        // and issues nothing (fio 3.33: no message, exit 0).
        let sized = matches!(spec.size, Some(SizeOrPct::Bytes(b)) if b > 0);
        let past_the_device = !null && start >= device_bytes && sized && spec.filesize.is_none();
        if !null && start >= device_bytes && !past_the_device {
            return Err(bad_offset(spec.error_at(
                &["offset", "offset_increment"],
                format!(
                    "you need to specify valid offset= (start {start} is beyond the device size {device_bytes})"
                ),
            )));
        }
        let avail = if null {
            u64::MAX - start
        } else {
            device_bytes.saturating_sub(start)
        };
        // `setup_files` checks the offset against `filesize` only for a file whose size is
        // not `filesize` already; the null engine's file is `size / nrfiles` big, and when
        // that is `filesize`, `f->io_size = real_file_size - file_offset` wraps below zero and
        // the job issues nothing (fio 3.33: no message, exit 0).
        let past_a_sized_file = null
            && spec
                .filesize
                .is_some_and(|fs| start > fs && file_bytes == fs);
        let mut len = if past_a_sized_file {
            0
        } else if let Some(fs) = spec.filesize {
            // `setup_files`: a file of `filesize` is used from the job's start offset on
            // (`f->io_size = o->file_size_low - f->file_offset`).
            if start > fs {
                return Err(bad_offset(spec.error_at(
                    &["offset", "offset_increment", "filesize"],
                    if file_bytes == u64::MAX
                        && (matches!(spec.offset, SizeOrPct::PctMilli(_))
                            || spec.offset_increment_pct.is_some())
                    {
                        // fio takes the percentage of the null engine's file size, which no
                        // byte `size=` set: it is unknown (-1), and the start lands past any
                        // `filesize`.
                        format!("you need to specify valid offset= (a percentage offset of the null engine's file, which no byte size= sizes, starts past the filesize {fs})")
                    } else {
                        format!("you need to specify valid offset= (start {start} is beyond the filesize {fs})")
                    },
                )));
            }
            (fs - start).saturating_mul(nrfiles)
        } else {
            match spec.size {
                None => avail,
                Some(SizeOrPct::Bytes(b)) => b,
                Some(SizeOrPct::PctMilli(p)) => {
                    let l = (device_bytes as u128 * p as u128 / 100_000) as u64;
                    let l = l.min(avail);
                    l - l % min_bs
                }
            }
        };
        // With `filesize`, `size` no longer sizes the files (`setup_files`): a percentage
        // scales each file (`size_percent`, aligned down to the minimum block size), and
        // a byte count, if smaller than the files, is the bytes of a pass ("if
        // (!o->size || o->size > total_size) o->size = total_size").
        let mut bytes = None;
        if let Some(fs) = spec.filesize {
            match spec.size {
                Some(SizeOrPct::PctMilli(p)) if p != 100_000 => {
                    // Per file: `io_size = (io_size + file_offset) * pct / 100`, at most
                    // what the offset leaves, aligned down; the files add up.
                    let per = ((fs as u128 * p as u128 / 100_000) as u64).min(fs - start);
                    len = (per - per % min_bs).saturating_mul(nrfiles);
                }
                Some(SizeOrPct::Bytes(b)) if b > 0 => bytes = Some(b),
                _ => {}
            }
        }
        // `size=0` is no size; a filesize that leaves nothing after the offset stays empty
        // (and is refused just below).
        if len == 0 && spec.filesize.is_none() {
            len = avail;
        }
        len = len.min(avail);
        let bytes = bytes.map_or(len, |b| b.min(len));
        // A file whose start offset is its end (`filesize` = offset, a clone placed there by
        // `offset_increment`) is empty: fio runs the job and it issues nothing.
        let empty_file =
            (spec.filesize == Some(start) && len == 0) || past_a_sized_file || past_the_device;
        if len < min_bs && !empty_file {
            // `setup_files`' "blocksize is larger than data set range" (`err_out`, no
            // `td_verror`): fio fails this job alone.
            return Err(RegionFailure::Job(JobSetupFailure {
                fio_lines: vec!["fio: blocksize is larger than data set range".into()],
                errno: 0,
                detail: spec.error_at(
                    &["size", "filesize", "offset", "bs", "bsrange", "bssplit"],
                    format!(
                        "blocksize is larger than data set range ({len} bytes available, block size {min_bs})"
                    ),
                ),
            }));
        }
        // setup_files: a null engine's regular file grows to where its I/O ends
        // (`real_file_size = io_size + file_offset`), so fio wraps (or stops) there; a device
        // (`/dev/null`) keeps the size `get_file_sizes` gave it. fio tells them apart with
        // stat(2); a run must not depend on the machine it runs on, so a path under /dev
        // (not the tmpfs of /dev/shm) is taken for a device. With several names, the first.
        let real_file_size = if null {
            let device_path = spec
                .filename
                .as_deref()
                .and_then(|f| f.split(':').next())
                .is_some_and(|f| f.starts_with("/dev/") && !f.starts_with("/dev/shm/"));
            if device_path {
                file_bytes
            } else {
                file_bytes.max(start.saturating_add(len))
            }
        } else {
            device_bytes
        };
        // Later calls of `get_start_offset` (a new pass, a zone that wraps, `io_u_fits`) see
        // the file as `setup_files` left it: a percentage of the null engine's grown file is
        // another start.
        let run_start = if real_file_size == file_bytes {
            start
        } else {
            start_of(real_file_size)?
        };
        Ok(Region {
            start,
            run_start,
            len,
            bytes,
            device_bytes: real_file_size,
        })
    }
}

/// A job's stream seeds: fio 3.33's for the job with `thread_number` (1-based, its place
/// among all jobs and clones), mixed with `salt` (0: fio's own; see [`frand`]).
pub fn workload_seeds(spec: &JobSpec, thread_number: u64, salt: u64) -> WorkloadSeeds {
    clone_seeds(spec, 0, thread_number, salt)
}

/// [`workload_seeds`] of clone `clone` (0-based, in creation order). fio copies a clone from
/// its parent after `fixup_options` turned `randrepeat` off for a job with `randseed`, so the
/// clone's own `setup_random_seeds` seeds its offsets from `randseed` where the parent's
/// came from `FIO_RANDSEED` (`init.c`: `add_job` → `get_new_job`).
pub fn clone_seeds(spec: &JobSpec, clone: u32, thread_number: u64, salt: u64) -> WorkloadSeeds {
    WorkloadSeeds::new(
        spec.randseed,
        spec.randseed_set,
        spec.randrepeat && !(clone > 0 && spec.randseed_set),
        spec.allrandrepeat,
        thread_number,
        salt,
    )
}

/// `struct zone_split_index`: one of the 100 per-percent entries built by fio's
/// `__setup_zone_dist`.
#[derive(Clone, Copy, Debug, Default)]
struct ZoneIdx {
    size_perc_prev: u64,
    size_perc: u64,
    size_prev: u64,
    size: u64,
    valid: bool,
}

/// Offset distribution after option fixup.
#[derive(Clone, Debug)]
enum Dist {
    Random,
    Zipf(Zipf),
    Pareto(Zipf),
    Gauss(Gauss),
    /// Per direction: 100 entries (empty = no zones for that direction: uniform).
    Zoned([Vec<ZoneIdx>; 3]),
    ZonedAbs([Vec<ZoneIdx>; 3]),
}

/// All random streams of one job; cloned back from `initial` at each new pass when
/// `randrepeat=1` (fio's `td_fill_rand_seeds` from `clear_io_state`).
#[derive(Clone, Debug)]
struct Rngs {
    ddir: FRand,
    offset: FRand,
    /// `offset` [`OFFSET_LEAD`] draws ahead, drawn with it: where the random map will be
    /// looked at soon, to fetch that word early. A hint only: a stream out of step fetches
    /// the wrong word and changes nothing else.
    offset_lead: FRand,
    bs: [FRand; 3],
    seqrand: [FRand; 3],
    zone: FRand,
    /// zipf/pareto/normal: blksim's own stream (their numbers are not fio's).
    dist: Rng,
}

/// I/Os in a row that a size-bounded job may issue without the bytes that end it moving
/// before it stops with [`IoGen::no_progress`]; a pass that ends resets the count, since
/// `keep_running` counts every direction. A trimwrite job alternates uncounted trims with
/// counted writes, so a legitimate run of them is one long; 2^20 leaves every real job
/// alone and stops fio's endless loops (which would never return at a standstill of virtual
/// time with the null engine) within a fraction of a second.
pub const NO_PROGRESS_IOS: u64 = 1 << 20;

/// How many offset draws ahead the random map's word is fetched. A job's next draw is often
/// the next I/O of the same batch (`iodepth_batch_submit`), too soon for a fetch from memory
/// to land; 16 draws ahead is at least one batch of the job's own work. On `blksim bench
/// --workload=server` (16 jobs, about 250 I/Os of the others in between) the line is still
/// there when the draw comes: the map's bit test went from 4.0 to 2.1 % of `perf` samples,
/// and 8 or 48 draws ahead measured the same within the noise.
const OFFSET_LEAD: u32 = 16;

/// Per-job generator of I/O units. See the crate docs.
#[derive(Clone, Debug)]
pub struct IoGen {
    // ---- configuration (fixed after new) ----
    rw: RwPattern,
    region: Region,
    seq_add: i64,
    /// `o->ddir_seq_nr` (rw=randread:N).
    ddir_seq_nr_cfg: u32,
    seq_identical: bool,
    rwmix: [u64; 2],
    /// For a rated job: now, and when each direction's next I/O is due (`rate_ddir`).
    rate_due: Option<(u64, [u64; 3])>,
    min_bs: [u64; 3],
    max_bs: [u64; 3],
    ba: [u64; 3],
    /// bssplit per direction, in fio's order (sorted by percentage, smallest first).
    split: [Vec<(u64, u64)>; 3],
    bs_unaligned: bool,
    /// `bs_is_seq_rand`, and whether the offset just drawn was a random one (fio's
    /// `is_random` from `get_next_block`), which then picks the sizes.
    bs_is_seq_rand: bool,
    is_random: bool,
    perc_rand: [u32; 3],
    time_based: bool,
    io_size_opt: Option<u64>,
    /// Limit for `io_bytes_exceeded`: (`io_size` or `size`) × loops.
    byte_limit: u64,
    /// `keep_running` limit: `io_size` or `size` (not multiplied by loops).
    keep_limit: u64,
    /// number_ios × loops (0 = no limit).
    ios_limit: u64,
    /// `do_io`'s per-pass `total_bytes`.
    pass_total_bytes: u64,
    max_bs_all: u64,
    dist: Dist,
    dist_initial: Dist,
    // ---- state ----
    rngs: Rngs,
    rngs_initial: Rngs,
    randrepeat: bool,
    map: Option<Axmap>,
    /// `random_generator=lfsr`: the file's register, which each pass restarts
    /// (`fio_file_reset` → `lfsr_reset`). No random map then (`init_random_map`).
    lfsr: Option<lfsr::Lfsr>,
    /// fio could not set the register up (its seed is the forbidden state): the job runs
    /// and issues nothing, as in fio.
    lfsr_failed: bool,
    /// fio's `f->last_pos` / `f->last_start` (absolute; None = -1).
    last_pos: [u64; 3],
    last_start: [Option<u64>; 3],
    ddir_seq_nr: u32,
    rwmix_ddir: Ddir,
    rwmix_issues: u64,
    io_issues: [u64; 3],
    issued_bytes: [u64; 3],
    /// I/Os issued in a row without the bytes `io_issue_exceeded` counts moving, and those
    /// bytes when they last moved ([`NO_PROGRESS_IOS`]).
    stalled_ios: u64,
    stall_mark: u64,
    /// `zoned_abs` draws that landed in a zone ending past the file (fio prints a line for
    /// each).
    zoned_abs_exceeded: u32,
    total_ios: u64,
    pass_bytes: u64,
    pass_ios: u64,
    /// keep_running's copy of `o->loops`, decremented per pass.
    loops_left: u32,
    passes: u64,
    /// Set by get_next_block for the I/O being built: do not mark the random map.
    busy_ok: bool,
    /// Strided zones (`zonemode=strided`), the bytes done in the current zone
    /// (`td->zone_bytes`) and where the current zone starts (`f->file_offset`, which
    /// `setup_strided_zone_mode` moves; `region.start` is `get_start_offset`).
    zones: Option<blksim_job::StridedZones>,
    zone_bytes: u64,
    file_offset: u64,
    /// Size draws past the first 1000 of an I/O this job may still make (see
    /// `get_next_buflen`).
    size_draws_left: u64,
    finished: bool,
    /// The job verifies after each pass (`thread_main` runs `do_verify` after every
    /// `do_io`): the generator stops at a pass end until [`IoGen::resume`].
    pass_stops: bool,
    at_pass_end: bool,
    resuming: bool,
    /// The last `None` came from a fill that failed (the region done, an offset or size
    /// that does not fit), not from the byte, `number_ios` or per-pass limit.
    fill_failed: bool,
    /// Reads of the verify phases so far: fio's `io_blocks`/`io_bytes`, which
    /// `keep_running` reads, count them (the issue counters do not).
    verify_ios: u64,
    verify_bytes: u64,
    /// A verify phase ran after the last pass: `do_verify`'s `clear_io_state` cleared the
    /// files' done state, so `keep_running`'s `fio_files_done` does not stop the job.
    verified: bool,
}

impl IoGen {
    /// Build the generator; panics on an invalid combination (see [`IoGen::try_new`]).
    pub fn new(spec: &JobSpec, region: Region, seeds: &WorkloadSeeds) -> Self {
        Self::try_new(spec, region, seeds).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The job's streams, seeded as fio's `td_fill_rand_seeds_internal` seeds them.
    fn rngs(spec: &JobSpec, seeds: &WorkloadSeeds) -> Rngs {
        let s = &seeds.seeds;
        // tausworthe64 when asked. fio 3.33 also switches to it by itself for a file of more
        // than 2^32 blocks (`check_rand_gen_limits`), but only after `add_job` seeded the
        // streams with 32 bits, so the first pass still draws 32-bit numbers; blksim keeps
        // 32 bits throughout there (a 16 TiB region at 4 KiB blocks).
        let use64 = spec.random_generator == RandomGenerator::Tausworthe64;
        // Writes draw their sizes with the reads' seed under verify, and trims with the
        // writes' for trimwrite, so the pairs repeat each other's sizes.
        let read_seed = s[frand::off::BS];
        let mut write_seed = s[frand::off::BS1];
        let mut trim_seed = s[frand::off::BS2];
        if spec.verify.is_some() {
            write_seed = read_seed;
        }
        if matches!(spec.rw, RwPattern::TrimWrite | RwPattern::RandTrimWrite) {
            trim_seed = write_seed;
        }
        let seqrand = FRand::new(s[frand::off::SEQ_RAND_READ], false);
        let offset = FRand::new(s[frand::off::BLOCK], use64);
        let mut offset_lead = offset;
        for _ in 0..OFFSET_LEAD {
            offset_lead.rand();
        }
        Rngs {
            ddir: FRand::new(s[frand::off::MIX], false),
            offset,
            offset_lead,
            bs: [read_seed, write_seed, trim_seed].map(|x| FRand::new(x, use64)),
            seqrand: [seqrand; 3],
            zone: FRand::new(s[frand::off::ZONE], false),
            dist: Rng::from_seed(s[frand::off::BLOCK] ^ 0x6469_7374), // "dist"
        }
    }

    /// Build the generator, reporting fio's option errors (zipf θ = 1, pareto h outside
    /// (0,1), zoned_abs beyond the region).
    pub fn try_new(
        spec: &JobSpec,
        region: Region,
        seeds: &WorkloadSeeds,
    ) -> Result<Self, ParseError> {
        let random = spec.rw.is_random();
        let min_bs = Ddir::ALL.map(|d| min_bs_of(spec, d).max(1));
        let rngs = Self::rngs(spec, seeds);
        let max_bs = Ddir::ALL.map(|d| max_bs_of(spec, d).max(min_bs_of(spec, d)).max(1));
        // fixup_options: blockalign only applies to random I/O; default = min bs.
        let ba = Ddir::ALL.map(|d| match spec.blockalign[d.idx()] {
            Some(a) if a > 0 && random => a,
            _ => min_bs[d.idx()],
        });
        // "Any use of blockalign= turns off randommap" (only when it differs from min bs).
        let ba_differs = (0..3).any(|i| ba[i] != min_bs[i]);
        // fixup_options: "Using a non-uniform random distribution excludes usage of a random
        // map" (zoned too: fio 3.33 repeats blocks inside a zone).
        let non_uniform = !matches!(spec.random_distribution, RandomDistribution::Random);
        let norandommap = spec.norandommap || ba_differs || non_uniform;

        // split_parse_ddir sorts the entries with `bs_cmp` (`perc1 - perc2`): smallest
        // percentage first; glibc's qsort is a stable merge sort, so ties keep their order.
        // `__get_next_buflen` walks them in that order, so the order decides which size a
        // draw maps to (checked against fio 3.33's write_iolog).
        let split = Ddir::ALL.map(|d| {
            let mut v: Vec<(u64, u64)> = spec.bs[d.idx()]
                .split
                .iter()
                .map(|s| (s.bs, s.pct as u64))
                .collect();
            v.sort_by_key(|e| e.1);
            v
        });

        let zones = spec.strided_zones();
        let mut rngs_mut = rngs.clone();
        let dist = Self::build_dist(spec, &region, &min_bs, &mut rngs_mut.dist)?;
        // The dist stream after init (rand_off drawn) is the pass-start state.
        let rngs = rngs_mut;

        // init_random_map: the file's blocks of the smallest block size, `min(real_file_size,
        // io_size)` of them or a zone's range with strided zones.
        let rw_min_bs = *min_bs.iter().min().unwrap();
        let whole = region.len.min(region.device_bytes);
        let map_bytes = zones.map_or(whole, |z| z.range);
        // An LFSR for every random job that asks for one. The register's length is the
        // number of values it gives, so a zone range is not bounded by the region here (it
        // costs no memory).
        let mut lfsr_failed = false;
        let lfsr = if random && spec.random_generator == RandomGenerator::Lfsr {
            let blocks = map_bytes / rw_min_bs;
            let seed = seeds.seeds[frand::off::BLOCK];
            match lfsr::Lfsr::new(blocks, seed, 0) {
                Ok(l) => Some(l),
                // blksim's own seeds (another `--seed`, or `randrepeat=0`'s entropy) are not
                // fio's, so the register's forbidden state there is the seed's accident, not
                // the job's: the next seed is used.
                Err(lfsr::LfsrError::AllOnesSeed) if !seeds.fios_own => {
                    lfsr::Lfsr::new(blocks, seed ^ 1, 0).ok()
                }
                // fio's own seed: fio fails the job ("failed initializing LFSR" and
                // `thread_main`'s error path), which then issues nothing; the others run.
                Err(lfsr::LfsrError::AllOnesSeed) => {
                    lfsr_failed = true;
                    None
                }
                Err(e) => {
                    return Err(spec.error_at(
                        &["random_generator", "bs", "zonerange"],
                        format!(
                            "fio: failed initializing LFSR for {blocks} blocks of {rw_min_bs} bytes ({e:?})"
                        ),
                    ))
                }
            }
        } else {
            None
        };
        let map = if random && !norandommap && spec.random_generator != RandomGenerator::Lfsr {
            // A block at or past the region's length fails whatever the map says, so the map
            // stops there: a huge `zonerange` costs no memory.
            Some(Axmap::new(map_bytes.min(whole) / rw_min_bs))
        } else {
            None
        };

        let loops = spec.loops.max(1);
        let size_limit = spec.io_size.unwrap_or(region.bytes);
        let max_bs_all = *max_bs.iter().max().unwrap();
        // do_io: total_bytes = size, larger for random norandommap writes and trimwrite.
        let is_write = spec.rw.has_write();
        let norandommap_write_rand = is_write && random && norandommap;
        // Only bytes the engine queued count toward it (`io_queue_event` adds them for
        // FIO_Q_QUEUED): a sync engine's pass ends only when the file is done, so with
        // `norandommap` it runs on to `io_size` in one pass, on one random stream.
        let mut pass_total_bytes = if spec.ioengine.completes_in_queue(spec.iodepth) {
            u64::MAX
        } else {
            region.bytes
        };
        if norandommap_write_rand {
            pass_total_bytes = pass_total_bytes.max(spec.io_size.unwrap_or(0));
        }
        if matches!(spec.rw, RwPattern::TrimWrite | RwPattern::RandTrimWrite) {
            pass_total_bytes =
                pass_total_bytes.saturating_add(size_limit.saturating_mul(loops as u64));
        }
        // "If verify_backlog is enabled, we'll run the verify in this handler as well":
        // its reads count among the pass's bytes, which may then be up to twice the size.
        if spec.verify.is_some() && spec.do_verify && is_write && spec.verify_backlog > 0 {
            pass_total_bytes = pass_total_bytes.saturating_add(region.bytes);
        }
        let rwmixread = spec.rwmixread.min(100) as u64;
        let start = region.start;
        let mut g = IoGen {
            rw: spec.rw,
            region,
            seq_add: spec.rw_seq_skip,
            ddir_seq_nr_cfg: spec.rw_nr_random.max(1),
            seq_identical: spec.rw_sequencer_identical,
            rwmix: [rwmixread, 100 - rwmixread],
            rate_due: None,
            min_bs,
            max_bs,
            ba,
            split,
            bs_unaligned: spec.bs_unaligned,
            bs_is_seq_rand: spec.bs_is_seq_rand,
            is_random: false,
            perc_rand: spec.percentage_random.map(|p| p.min(100)),
            time_based: spec.time_based,
            io_size_opt: spec.io_size,
            byte_limit: size_limit.saturating_mul(loops as u64),
            keep_limit: size_limit,
            ios_limit: spec.effective_number_ios(),
            pass_total_bytes,
            max_bs_all,
            dist_initial: dist.clone(),
            dist,
            rngs_initial: rngs.clone(),
            rngs,
            // `fixup_options`: "If randseed is set, that overrides randrepeat". It runs
            // after the seeds were drawn (so the first pass's offsets are randrepeat's),
            // and `clear_io_state` then no longer re-seeds a new pass.
            randrepeat: spec.randrepeat && !spec.randseed_set,
            map,
            lfsr,
            lfsr_failed,
            last_pos: [start; 3],
            last_start: [None; 3],
            // init.c add_job: td->ddir_seq_nr starts at 1, not o->ddir_seq_nr, so the first
            // get_next_offset of rw=randxxx:N draws a random offset instead of running N-1
            // I/Os from offset 0. Not reset between passes.
            ddir_seq_nr: 1,
            rwmix_ddir: Ddir::Read,
            rwmix_issues: 0,
            io_issues: [0; 3],
            issued_bytes: [0; 3],
            stalled_ios: 0,
            stall_mark: 0,
            zoned_abs_exceeded: 0,
            total_ios: 0,
            pass_bytes: 0,
            pass_ios: 0,
            loops_left: loops - 1,
            passes: 1,
            busy_ok: false,
            zones,
            zone_bytes: 0,
            file_offset: start,
            size_draws_left: 1 << 26,
            finished: lfsr_failed,
            pass_stops: false,
            at_pass_end: false,
            resuming: false,
            fill_failed: false,
            verify_ios: 0,
            verify_bytes: 0,
            verified: false,
        };
        g.reset_file();
        Ok(g)
    }

    fn build_dist(
        spec: &JobSpec,
        region: &Region,
        min_bs: &[u64; 3],
        rng: &mut Rng,
    ) -> Result<Dist, ParseError> {
        // __init_rand_distribution: ranges of min(min_bs[R], min_bs[W]) over the region.
        let range_size = min_bs[0].min(min_bs[1]).max(1);
        let fsize = region.len.min(region.device_bytes);
        let nranges = fsize.div_ceil(range_size).max(1);
        Ok(match &spec.random_distribution {
            RandomDistribution::Random => Dist::Random,
            RandomDistribution::Zipf { theta, center } => {
                if *theta == 1.0 || !theta.is_finite() || *theta <= 0.0 {
                    return Err(spec.error_at(
                        &["random_distribution"],
                        "zipf theta must be > 0 and != 1.0",
                    ));
                }
                Dist::Zipf(Zipf::zipf(nranges, *theta, *center, rng))
            }
            RandomDistribution::Pareto { h, center } => {
                if !(*h > 0.0 && *h < 1.0) {
                    return Err(spec.error_at(
                        &["random_distribution"],
                        "pareto input out of range (0 < h < 1)",
                    ));
                }
                Dist::Pareto(Zipf::pareto(nranges, *h, *center, rng))
            }
            RandomDistribution::Normal { dev_pct, center } => {
                if !(*dev_pct >= 0.0 && *dev_pct <= 100.0) {
                    return Err(spec.error_at(
                        &["random_distribution"],
                        "normal deviation out of range (0..100)",
                    ));
                }
                Dist::Gauss(Gauss::new(nranges, *dev_pct, *center))
            }
            RandomDistribution::Zoned { zones } => {
                let idx = zones.clone().map(|z| {
                    Self::zone_index(
                        z.iter()
                            .map(|z| (z.access_pct as u64, z.size_pct as u64, 0)),
                    )
                });
                Dist::Zoned(idx)
            }
            RandomDistribution::ZonedAbs { zones } => {
                let idx = zones
                    .clone()
                    .map(|z| Self::zone_index(z.iter().map(|z| (z.access_pct as u64, 0, z.size))));
                // Zones past the file are found when a draw lands in one, as in fio
                // (`__get_next_rand_offset_zoned_abs`); see `zoned_abs_exceeded`.
                Dist::ZonedAbs(idx)
            }
        })
    }

    /// `__setup_zone_dist`: expand (access%, size%, size bytes) zones into 100 entries, one
    /// per access percent.
    fn zone_index(zones: impl Iterator<Item = (u64, u64, u64)>) -> Vec<ZoneIdx> {
        let zones: Vec<_> = zones.collect();
        if zones.is_empty() {
            return Vec::new();
        }
        let mut v = vec![ZoneIdx::default(); 100];
        let (mut aprev, mut sprev, mut sprev_sz) = (0u64, 0u64, 0u64);
        for (acc, sp, sz) in zones {
            for j in aprev..(aprev + acc).min(100) {
                v[j as usize] = ZoneIdx {
                    size_perc_prev: sprev,
                    size_perc: sprev + sp,
                    size_prev: sprev_sz,
                    size: sprev_sz + sz,
                    valid: true,
                };
            }
            aprev += acc;
            sprev += sp;
            sprev_sz += sz;
        }
        v
    }

    // ------------------------------------------------------------------ accessors

    /// Bytes issued so far in direction `ddir`.
    pub fn issued_bytes(&self, ddir: Ddir) -> u64 {
        self.issued_bytes[ddir.idx()]
    }

    /// I/Os issued so far in direction `ddir` (fio's `io_issues`).
    pub fn issued_ios(&self, ddir: Ddir) -> u64 {
        self.io_issues[ddir.idx()]
    }

    /// Passes over the region started so far (1 for the first).
    pub fn passes(&self) -> u64 {
        self.passes
    }

    pub fn region(&self) -> Region {
        self.region
    }

    /// Stop at the end of each pass (a job with a verify phase after every `do_io`): `next`
    /// returns None with [`IoGen::at_pass_end`] set, until [`IoGen::resume`].
    pub fn stop_at_pass_ends(&mut self) {
        self.pass_stops = true;
    }

    /// `next` returned None because the fill failed (`fill_io_u`: the region is done, or the
    /// next offset or size does not fit), not at a limit that ends `do_io`'s loop first. fio
    /// picks the direction before the offset (`get_rw_ddir`), so a sync due then still goes.
    pub fn fill_failed(&self) -> bool {
        self.fill_failed
    }

    /// `next` returned None at the end of a pass, not at the end of the job.
    pub fn at_pass_end(&self) -> bool {
        self.at_pass_end
    }

    /// `do_io` would end here, before its next `get_io_u`: the job or the pass is done
    /// (`io_issue_bytes_exceeded`, or the pass's bytes), or [`Self::next`] said so.
    pub fn issue_done(&self) -> bool {
        self.finished
            || self.at_pass_end
            || (!self.time_based
                && (self.io_issue_exceeded() || self.pass_bytes >= self.pass_total_bytes))
    }

    /// A `verify_backlog` read was issued: it counts for `number_ios` (fio's `io_blocks`),
    /// `keep_running`'s bytes and the pass's bytes (`bytes_issued` in `do_io`), not for
    /// `io_issue_bytes` (IO_U_F_VER_LIST).
    pub fn backlog_read(&mut self, len: u64) {
        self.verify_ios += 1;
        self.verify_bytes += len;
        self.pass_bytes += len;
    }

    /// The verify phase after this pass read `ios` blocks of `bytes` in all.
    pub fn verified(&mut self, ios: u64, bytes: u64) {
        self.verify_ios += ios;
        self.verify_bytes += bytes;
        self.verified = true;
    }

    /// Go on after a pass end: `keep_running` decides whether another pass starts.
    pub fn resume(&mut self) {
        if self.at_pass_end {
            self.at_pass_end = false;
            self.resuming = true;
        }
    }

    /// The job issues nothing: fio failed its setup (see [`JobSetupFailure`]).
    pub fn fail_setup(&mut self) {
        self.finished = true;
    }

    /// fio's message for an offset draw that failed because a `zoned_abs` zone ends past the
    /// file, and how many times it came (printed once the run is over).
    pub fn draw_failure(&self) -> Option<(&'static str, u32)> {
        (self.zoned_abs_exceeded > 0).then_some((
            "fio: zoned_abs sizes exceed file size",
            self.zoned_abs_exceeded,
        ))
    }

    /// fio's message for a job it sets up but cannot run (printed, the job issues nothing).
    pub fn setup_failure(&self) -> Option<&'static str> {
        self.lfsr_failed.then_some("fio: failed initializing LFSR")
    }

    /// Whether the random map (fio's axmap) is in use.
    pub fn uses_random_map(&self) -> bool {
        self.map.is_some()
    }

    // ------------------------------------------------------------------ main loop

    /// The next I/O, or None when the job's I/O is done (`io_size`/`size` × `loops`,
    /// `number_ios` × `loops`, or the region used up). With `time_based` it never ends.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<IoU> {
        self.rate_due = None;
        self.next_io()
    }

    /// [`Self::next`] for a rate-limited job: `due` is when the next I/O of each direction
    /// may be issued, and `get_rw_ddir` ends with fio's `rate_ddir` choice.
    pub fn next_rated(&mut self, now: u64, due: [u64; 3]) -> Option<IoU> {
        self.rate_due = Some((now, due));
        self.next_io()
    }

    fn next_io(&mut self) -> Option<IoU> {
        // Still at a pass end the caller has not resumed from: the same answer, no new draw.
        if self.at_pass_end {
            return None;
        }
        self.fill_failed = false;
        loop {
            if self.finished {
                return None;
            }
            if self.stalled_ios >= NO_PROGRESS_IOS {
                self.finished = true;
                return None;
            }
            // do_io's loop condition: io_issue_bytes_exceeded (bytes or number_ios), unless
            // time_based. A trimwrite job counts its writes' bytes (`td_write`), so the write
            // after the last trim still goes.
            if !self.time_based && self.io_issue_exceeded() {
                self.finished = true;
                return None;
            }
            // do_io: "Break if we exceeded the bytes" for this pass.
            let pass_done = !self.time_based && self.pass_bytes >= self.pass_total_bytes;
            // Resuming after a pass end: the pass already ended (a sync engine's by an offset
            // draw that failed, which must not be drawn again), `keep_running` decides.
            let iou = if pass_done || self.resuming {
                None
            } else {
                self.fill_io_u()
            };
            self.fill_failed = iou.is_none() && !pass_done && !self.resuming;
            match iou {
                Some(u) => {
                    self.account(&u);
                    return Some(u);
                }
                None => {
                    // The file is done for this pass; backend.c decides whether to go again.
                    if self.pass_ios == 0 {
                        // A pass that issued nothing (a fill that failed at once, or nothing
                        // to issue: a region past the device's end) did no bytes, and
                        // `thread_main` then marks the job terminated
                        // (`fio_mark_td_terminate`) whatever `io_size` asks for.
                        self.finished = true;
                        return None;
                    }
                    if self.pass_stops && !self.resuming {
                        self.at_pass_end = true;
                        return None;
                    }
                    self.resuming = false;
                    if !self.keep_running() {
                        self.finished = true;
                        return None;
                    }
                    self.new_pass();
                }
            }
        }
    }

    fn account(&mut self, u: &IoU) {
        let d = u.ddir.idx();
        self.io_issues[d] += 1;
        self.issued_bytes[d] += u.len;
        self.total_ios += 1;
        self.pass_ios += 1;
        self.pass_bytes += u.len;
        // Only a job that its counted bytes alone end can stall: number_ios counts every
        // I/O, a time-based job ends at its runtime, and a pass of bytes that the engine
        // queued (not a sync engine's) counts trims too (`bytes_issued` in `do_io`).
        if !self.time_based && self.ios_limit == 0 && self.pass_total_bytes == u64::MAX {
            let counted = self.counted_bytes();
            if counted == self.stall_mark {
                self.stalled_ios += 1;
            } else {
                self.stall_mark = counted;
                self.stalled_ios = 0;
            }
        }
    }

    fn td_rw(&self) -> bool {
        matches!(self.rw, RwPattern::ReadWrite | RwPattern::RandRw)
    }

    /// `number_ios` now counts `by` more I/Os: those completed before the ramp ended, which
    /// fio's `reset_all_stats` takes out of `io_blocks` (`exceeds_number_ios`).
    pub fn raise_ios_limit(&mut self, by: u64) {
        if self.ios_limit != 0 {
            self.ios_limit = self.ios_limit.saturating_add(by);
        }
    }

    /// `io_bytes_exceeded` on issued bytes, including `exceeds_number_ios`.
    /// The bytes `io_issue_bytes_exceeded` counts: reads and writes for a mixed job, else
    /// writes (a trimwrite job's trims do not count), reads, or trims.
    fn counted_bytes(&self) -> u64 {
        let b = &self.issued_bytes;
        if self.td_rw() {
            b[0] + b[1]
        } else if self.rw.has_write() {
            b[1]
        } else if self.rw.has_read() {
            b[0]
        } else {
            b[2]
        }
    }

    fn io_issue_exceeded(&self) -> bool {
        self.counted_bytes() >= self.byte_limit
            || (self.ios_limit != 0 && self.total_ios + self.verify_ios >= self.ios_limit)
    }

    /// The job stopped because its I/Os no longer brought it nearer its end: the error to
    /// report, which fio does not have (it issues them forever).
    pub fn no_progress(&self) -> Option<String> {
        (self.stalled_ios >= NO_PROGRESS_IOS).then(|| {
            format!(
                "{NO_PROGRESS_IOS} I/Os in a row without the bytes that end the job (size, io_size) moving: fio 3.33 issues them forever here (a trimwrite job whose offsets wrap onto a block it already wrote trims it again and again, and only its writes count); bound the job with number_ios, or give it a region its offsets do not wrap in"
            )
        })
    }

    /// `keep_running` after a pass ended.
    fn keep_running(&mut self) -> bool {
        if self.time_based {
            return true;
        }
        if self.loops_left > 0 {
            self.loops_left -= 1;
            return true;
        }
        if self.ios_limit != 0 && self.total_ios + self.verify_ios >= self.ios_limit {
            return false;
        }
        let done: u64 = self.issued_bytes.iter().sum::<u64>() + self.verify_bytes;
        if done < self.keep_limit {
            let diff = self.keep_limit - done;
            if diff < self.max_bs_all {
                return false;
            }
            // "fio_files_done(td) && !td->o.io_size": without io_size a pass that ended
            // early (holes, map) is not repeated, unless a verify phase cleared the files'
            // done state.
            if self.io_size_opt.is_none() && !std::mem::take(&mut self.verified) {
                return false;
            }
            return true;
        }
        false
    }

    /// `clear_io_state`: files reset, rwmix counter reset, streams re-seeded (randrepeat).
    fn new_pass(&mut self) {
        // A pass that ended brought the job nearer its end: `keep_running` counts every
        // direction's bytes (trims too), against `io_size`.
        self.stalled_ios = 0;
        self.passes += 1;
        self.verified = false;
        self.pass_bytes = 0;
        self.pass_ios = 0;
        self.rwmix_issues = 0;
        // `clear_io_state`: the file starts at its start offset again, and
        // `reset_io_counters` zeroes the zone's bytes.
        self.file_offset = self.region.run_start;
        self.zone_bytes = 0;
        if self.randrepeat {
            self.rngs = self.rngs_initial.clone();
            self.dist = self.dist_initial.clone();
        }
        self.reset_file();
    }

    /// `fio_file_reset`.
    fn reset_file(&mut self) {
        self.last_pos = [self.file_offset; 3];
        self.last_start = [None; 3];
        if let Some(m) = &mut self.map {
            m.reset();
        }
        if let Some(l) = &mut self.lfsr {
            l.reset();
        }
    }

    // ------------------------------------------------------------------ fill_io_u

    fn fill_io_u(&mut self) -> Option<IoU> {
        let mut ddir = self.get_rw_ddir();
        // `set_rw_ddir` for (rand)trimwrite: a trim when the last trim and write started at
        // the same place, else a write. randtrimwrite writes the block it just trimmed;
        // trimwrite's write takes the next sequential offset and size of its own direction,
        // so with a larger write size the two drift apart and fio goes on writing.
        if self.trimwrite() {
            ddir = if self.last_start[Ddir::Write.idx()] == self.last_start[Ddir::Trim.idx()] {
                Ddir::Trim
            } else {
                Ddir::Write
            };
        }
        if let Some(z) = self.zones {
            self.setup_strided_zone_mode(z, ddir);
        }
        // `IO_U_F_BUSY_OK` lives on the io_u and only `io_completed` clears it: a fill that
        // failed after setting it hands it to the next fill, which takes the same io_u back
        // from the free list (`io_u_qpop` is last in, first out).
        let offset = self.get_next_offset(ddir)?;
        let mut len = self.get_next_buflen(ddir, offset);
        if len == 0 {
            return None;
        }
        if offset + len > self.region.device_bytes {
            return None;
        }
        // mark entry before potentially trimming io_u
        if self.rw.is_random() && self.map.is_some() {
            len = self.mark_random_map(ddir, offset, len);
        }
        let d = ddir.idx();
        self.last_start[d] = Some(offset);
        self.last_pos[d] = offset + len;
        // The io_u goes out; the next fill takes a clean one.
        self.busy_ok = false;
        self.zone_bytes += len;
        Some(IoU { ddir, offset, len })
    }

    /// `get_rw_ddir` (+ `set_rwmix_bytes`, `get_rand_ddir`).
    fn get_rw_ddir(&mut self) -> Ddir {
        if self.td_rw() {
            if self.io_issues[self.rwmix_ddir.idx()] >= self.rwmix_issues {
                let v = self.rngs.ddir.rand_between(1, 100);
                let ddir = if v <= self.rwmix[0] {
                    Ddir::Read
                } else {
                    Ddir::Write
                };
                if ddir != self.rwmix_ddir {
                    // set_rwmix_bytes: run the new direction until its issue count reaches
                    // old-direction issues × new-direction percentage.
                    let diff = self.rwmix[ddir.idx()];
                    self.rwmix_issues = self.io_issues[self.rwmix_ddir.idx()] * diff / 100;
                }
                self.rwmix_ddir = ddir;
            }
            // `td->rwmix_ddir = rate_ddir(td, ddir)`.
            self.rwmix_ddir = self.rate_ddir(self.rwmix_ddir);
            self.rwmix_ddir
        } else if self.rw.has_trim() {
            // trim, randtrim, and the trim half of (rand)trimwrite
            Ddir::Trim
        } else if self.rw.has_read() {
            Ddir::Read
        } else {
            Ddir::Write
        }
    }

    /// `rate_ddir`: a direction not yet due gives way to the other one if that one is due
    /// (mixed jobs whose other direction has a share); with both ahead, the one due first.
    /// The caller then waits until the chosen direction is due.
    fn rate_ddir(&self, ddir: Ddir) -> Ddir {
        let Some((now, due)) = self.rate_due else {
            return ddir;
        };
        let odir = if ddir == Ddir::Read {
            Ddir::Write
        } else {
            Ddir::Read
        };
        if due[ddir.idx()] <= now || self.rwmix[odir.idx()] == 0 {
            return ddir;
        }
        if due[odir.idx()] <= now || due[odir.idx()] < due[ddir.idx()] {
            odir
        } else {
            ddir
        }
    }

    /// `get_next_offset`: a relative block position from get_next_block, made absolute.
    fn get_next_offset(&mut self, ddir: Ddir) -> Option<u64> {
        let mut rw_seq_hit = false;
        if self.ddir_seq_nr_cfg > 0 {
            self.ddir_seq_nr -= 1;
            if self.ddir_seq_nr == 0 {
                rw_seq_hit = true;
                self.ddir_seq_nr = self.ddir_seq_nr_cfg;
            }
        }
        let rel = if self.rw == RwPattern::RandTrimWrite && ddir == Ddir::Write {
            // `get_next_block`: the block just trimmed, not marked in the random map.
            // Departure: fio 3.33 takes the trim's absolute offset here and adds the
            // region's start again in `get_next_offset`, so with `offset` > 0 it writes one
            // wrong block over and over; blksim writes the trimmed block.
            self.busy_ok = true;
            self.is_random = true;
            self.last_start[Ddir::Trim.idx()]? - self.file_offset
        } else {
            self.get_next_block(ddir, rw_seq_hit)?
        };
        if rel >= self.region.len {
            return None;
        }
        let abs = rel.checked_add(self.file_offset)?;
        if abs >= self.region.device_bytes {
            return None;
        }
        // A random trim that lands where the last pair was: move the last write's start
        // so that the next io_u is still this trim's write.
        if self.rw == RwPattern::RandTrimWrite
            && ddir == Ddir::Trim
            && self.last_start[Ddir::Trim.idx()] == Some(abs)
        {
            if let Some(w) = self.last_start[Ddir::Write.idx()].as_mut() {
                *w = w.wrapping_sub(1);
            }
        }
        Some(abs)
    }

    /// `setup_strided_zone_mode`: after `size` bytes in a zone, the next zone starts
    /// `range + skip` further on (back at the start past the file's end); a sequential
    /// position past the zone's range goes back to its start; at each `range` bytes the
    /// file is reset (its random map covers one range).
    fn setup_strided_zone_mode(&mut self, z: blksim_job::StridedZones, ddir: Ddir) {
        let d = ddir.idx();
        // fio's unsigned arithmetic wraps, and so does this.
        if self.zone_bytes >= z.size {
            self.zone_bytes = 0;
            self.file_offset = self.file_offset.wrapping_add(z.range.wrapping_add(z.skip));
            if self.file_offset >= self.region.device_bytes {
                self.file_offset = self.region.run_start;
            }
            self.last_pos[d] = self.file_offset;
        }
        if self.last_pos[d] >= self.file_offset.wrapping_add(z.range) {
            self.last_pos[d] = self.file_offset;
        }
        if self.zone_bytes.is_multiple_of(z.range) {
            self.reset_file();
        }
    }

    fn trimwrite(&self) -> bool {
        matches!(self.rw, RwPattern::TrimWrite | RwPattern::RandTrimWrite)
    }

    /// `get_next_block`: relative offset (bytes from the region start). `b * ba` wraps as
    /// fio's `uint64_t` product does: an LFSR block counts blocks of the smallest size, and
    /// a larger alignment can take it past 2^64 (the offset then fails the region check).
    fn get_next_block(&mut self, ddir: Ddir, rw_seq: bool) -> Option<u64> {
        let ba = self.ba[ddir.idx()];
        // fio's `is_random`: a random draw of `should_do_random` only, not a random block
        // that stands in for a sequential offset that failed.
        self.is_random = false;
        if rw_seq {
            if self.rw.is_random() {
                if self.should_do_random(ddir) {
                    self.is_random = true;
                    self.get_next_rand_block(ddir).map(|b| b.wrapping_mul(ba))
                } else {
                    self.busy_ok = true;
                    match self.get_next_seq_offset(ddir) {
                        Some(o) => Some(o),
                        None => self.get_next_rand_block(ddir).map(|b| b.wrapping_mul(ba)),
                    }
                }
            } else {
                self.get_next_seq_offset(ddir)
            }
        } else {
            // Between the new random offsets of rw=randxxx:N.
            self.busy_ok = true;
            if !self.seq_identical {
                match self.get_next_seq_offset(ddir) {
                    Some(o) => Some(o),
                    None => self.get_next_rand_block(ddir).map(|b| b.wrapping_mul(ba)),
                }
            } else {
                Some(self.last_start[ddir.idx()].map_or(0, |s| s - self.file_offset))
            }
        }
    }

    /// `should_do_random`: percentage_random per direction.
    fn should_do_random(&mut self, ddir: Ddir) -> bool {
        let p = self.perc_rand[ddir.idx()];
        if p == 100 {
            return true;
        }
        let v = self.rngs.seqrand[ddir.idx()].rand_between(1, 100);
        v <= p as u64
    }

    /// `get_next_seq_offset`, including its wrap rules (time_based, `io_size > size` for
    /// mixed jobs, holes from `rw=...:N`). Returns a relative offset.
    fn get_next_seq_offset(&mut self, ddir: Ddir) -> Option<u64> {
        let d = ddir.idx();
        // `f->file_offset`, which strided zones move; the time-based wrap is checked
        // against `get_start_offset`, the region's own start.
        let start = self.file_offset;
        let io_size = self.region.len;
        let real = self.region.device_bytes;
        if self.last_pos[d] >= io_size + self.region.run_start && self.time_based {
            self.last_pos[d] = start;
        }
        if self.last_pos[d] < real {
            // Only rewind if we already hit the end (fio mixes absolute and relative
            // positions here; kept as is).
            if self.last_pos[d] == start && start != 0 && self.seq_add < 0 {
                self.last_pos[d] = if real > io_size { io_size } else { real };
            }
            let mut pos = self.last_pos[d].wrapping_sub(start);
            if pos != 0 && self.seq_add != 0 {
                pos = pos.wrapping_add(self.seq_add as u64);
                // Beyond the end with holed I/O: wrap to the beginning, or for backwards
                // I/O to the end.
                if pos >= real {
                    if self.seq_add > 0 {
                        pos = start;
                    } else {
                        pos = if real > io_size { io_size } else { real };
                        pos = pos.wrapping_add(self.seq_add as u64);
                    }
                }
            }
            return Some(pos);
        }
        None
    }

    /// `get_next_rand_block`: on failure a time_based job resets the file and retries.
    fn get_next_rand_block(&mut self, ddir: Ddir) -> Option<u64> {
        if let Some(b) = self.get_next_rand_offset(ddir) {
            return Some(b);
        }
        if self.time_based {
            self.reset_file();
            return self.get_next_rand_offset(ddir);
        }
        None
    }

    fn last_block_of(region: &Region, zone_range: Option<u64>, min_bs: u64, ba: u64) -> u64 {
        let mut max_size = region.len.min(region.device_bytes);
        // Random offsets fall in the current zone's range.
        if let Some(r) = zone_range {
            max_size = r;
        }
        if min_bs > ba {
            max_size = max_size.saturating_sub(min_bs - ba);
        }
        max_size / ba
    }

    /// `last_block`.
    fn last_block(&self, ddir: Ddir) -> u64 {
        let range = self.zones.map(|z| z.range);
        Self::last_block_of(
            &self.region,
            range,
            self.min_bs[ddir.idx()],
            self.ba[ddir.idx()],
        )
    }

    /// `get_next_rand_offset`: a block index in units of `ba[ddir]`.
    fn get_next_rand_offset(&mut self, ddir: Ddir) -> Option<u64> {
        let d = ddir.idx();
        match &self.dist {
            Dist::Random => {
                let lastb = self.last_block(ddir);
                if lastb == 0 {
                    return None;
                }
                self.rand_block_in(lastb)
            }
            Dist::Zipf(z) => Some(z.zipf_next(&mut self.rngs.dist)),
            Dist::Pareto(z) => Some(z.pareto_next(&mut self.rngs.dist)),
            Dist::Gauss(g) => Some(g.next(&mut self.rngs.dist)),
            Dist::Zoned(idx) => {
                let lastb = self.last_block(ddir);
                if lastb == 0 {
                    return None;
                }
                if idx[d].is_empty() {
                    return self.rand_block_in(lastb);
                }
                // __get_next_rand_offset_zoned: v in 1..=100 picks the zone.
                let v = self.rngs.zone.rand_between(1, 100);
                let z = idx[d][(v - 1) as usize];
                if !z.valid {
                    return self.rand_block_in(lastb);
                }
                let offset = if z.size_perc_prev != 0 {
                    z.size_perc_prev * lastb / 100
                } else {
                    0
                };
                let zlast = lastb * (z.size_perc - z.size_perc_prev) / 100;
                // No random map with zones (fixup_options), so the zone-relative block is
                // drawn as is and the zone start added.
                self.zone_block(zlast).map(|b| b + offset)
            }
            Dist::ZonedAbs(idx) => {
                let lastb = self.last_block(ddir);
                if lastb == 0 {
                    return None;
                }
                if idx[d].is_empty() {
                    return self.rand_block_in(lastb);
                }
                let v = self.rngs.zone.rand_between(1, 100);
                let z = idx[d][(v - 1) as usize];
                if !z.valid {
                    return self.rand_block_in(lastb);
                }
                let ba = self.ba[d];
                let stotal = z.size_prev / ba;
                let send = z.size / ba;
                if send > lastb {
                    // "fio: zoned_abs sizes exceed file size": the offset fails, and with it
                    // the pass (fio 3.33 says so each time).
                    self.zoned_abs_exceeded = self.zoned_abs_exceeded.saturating_add(1);
                    return None;
                }
                self.zone_block(send.saturating_sub(stotal))
                    .map(|b| b + stotal)
            }
        }
    }

    /// A block in a zone of `lastb` blocks (no random map with zones). A zone smaller than
    /// a block still draws, and gives its first block: `lastb * r` is 0. The LFSR knows no
    /// zones: it gives its next block of the whole file, or fails when it is done.
    fn zone_block(&mut self, lastb: u64) -> Option<u64> {
        if self.lfsr.is_some() {
            return self.rand_block_in(lastb);
        }
        if lastb == 0 {
            self.rngs.offset.unit();
            self.rngs.offset_lead.rand();
            return Some(0);
        }
        Some(self.rand_block_in(lastb).unwrap_or(0))
    }

    /// `__get_next_rand_offset`: uniform block in `[0, lastb)`, then, with the random map,
    /// the next free block if that one was used (None when the map is full).
    /// With the LFSR, its next value whatever `lastb` is (fio 3.33 does not bound it).
    fn rand_block_in(&mut self, lastb: u64) -> Option<u64> {
        if let Some(l) = &mut self.lfsr {
            return l.next_val();
        }
        // `*b = lastb * (r / (rand_max + 1.0))`.
        let block = |u: f64| ((lastb as f64 * u) as u64).min(lastb - 1);
        let b = block(self.rngs.offset.unit());
        match &self.map {
            None => Some(b),
            Some(m) => {
                // A later draw's word, fetched ahead: the map is a bit per block of the
                // whole region, one cache miss per random I/O otherwise.
                m.prefetch(block(self.rngs.offset_lead.unit()));
                // A block past the map is free: fio's map with strided zones is as long as
                // the zone range, which can pass the region, where blksim's stops at the
                // region (no block there was ever used); the offset then fails at the
                // region's end and ends the pass, as in fio, instead of moving to the next
                // free block.
                if b >= m.nr_bits() || !m.is_set(b) {
                    Some(b)
                } else {
                    m.next_free(b)
                }
            }
        }
    }

    /// `mark_random_map`: mark the blocks covered; shorten the I/O if it runs into a block
    /// that was already used.
    fn mark_random_map(&mut self, ddir: Ddir, offset: u64, len: u64) -> u64 {
        let min_bs = self.min_bs[ddir.idx()];
        let block = (offset - self.file_offset) / min_bs;
        let mut nr = len.div_ceil(min_bs);
        if !self.busy_ok {
            if let Some(m) = &mut self.map {
                let set = m.set_run(block, nr);
                if set > 0 {
                    nr = set;
                }
            }
        }
        if nr * min_bs < len {
            nr * min_bs
        } else {
            len
        }
    }

    /// `io_u_fits`: the I/O ends inside the region.
    fn io_u_fits(&self, offset: u64, len: u64) -> bool {
        offset + len <= self.region.len + self.region.run_start
    }

    /// `get_next_buflen`: fixed bs, bsrange or bssplit.
    fn get_next_buflen(&mut self, ddir: Ddir, offset: u64) -> u64 {
        if self.rw == RwPattern::RandTrimWrite && ddir == Ddir::Write {
            // The trimmed block's length.
            let t = Ddir::Trim.idx();
            return self.last_start[t].map_or(0, |s| self.last_pos[t] - s);
        }
        let d = match (self.bs_is_seq_rand, self.is_random) {
            (false, _) => ddir.idx(),
            (true, true) => Ddir::Write.idx(),
            (true, false) => Ddir::Read.idx(),
        };
        let (minbs, maxbs) = (self.min_bs[d], self.max_bs[d]);
        if minbs == maxbs {
            return minbs;
        }
        if !self.io_u_fits(offset, minbs) {
            return 0;
        }
        let frand_max = self.rngs.bs[d].rand_max();
        // fio loops until the size fits. A range always gets there (its minimum fits, and
        // each draw lands on a size that fits with a chance of at least 1 in `maxbs`), so it
        // draws as long as fio would: near the region's end with `bs_unaligned` that is
        // thousands of draws, and stopping early would desynchronise the stream. A job whose
        // sizes rarely fit (a range far larger than its region) would pay that on every I/O,
        // so an I/O's draws past its first 1000 come from a per-job budget of 2^26 (at most
        // 2^22 at a time); once it is spent a range stops at 1000 and takes the minimum. A
        // split whose entries never fit would loop forever in fio: it stops at 1000 too.
        let draws = if self.split[d].is_empty() && self.size_draws_left > 0 {
            1000 + self.size_draws_left.min(1 << 22)
        } else {
            1000
        };
        for i in 0..draws {
            if i >= 1000 {
                self.size_draws_left -= 1;
            }
            let r = self.rngs.bs[d].rand();
            let mut buflen = 0;
            if self.split[d].is_empty() {
                buflen = minbs + (maxbs as f64 * (r as f64 / (frand_max as f64 + 1.0))) as u64;
            } else {
                let mut perc = 0u64;
                for &(bs, p) in &self.split[d] {
                    if p == 0 {
                        continue;
                    }
                    buflen = bs;
                    perc += p;
                    if r / perc <= frand_max / 100 && self.io_u_fits(offset, buflen) {
                        break;
                    }
                }
            }
            if !self.bs_unaligned {
                buflen -= buflen % minbs;
            }
            if buflen > maxbs {
                buflen = maxbs;
            }
            if self.io_u_fits(offset, buflen) && buflen > 0 {
                return buflen;
            }
        }
        minbs
    }
}

/// `IoGen` is also an iterator over its I/O units (same as calling [`IoGen::next`]).
impl Iterator for IoGen {
    type Item = IoU;
    fn next(&mut self) -> Option<IoU> {
        IoGen::next(self)
    }
}
