//! fio's write-then-verify phases (`verify=`, `do_verify`).
//!
//! In fio a job with `verify=<method>` that writes logs what it wrote and, when the write
//! phase is over, `do_verify()` (backend.c) reads it back and checks it. blksim simulates no
//! data: the method (md5, crc32c, ...) only means "check", and the check is the block layer's
//! integrity oracle (`blksim_block::integrity`), which compares every read with the last write
//! that completed on each sector. The read-back phase reads the job's whole region once,
//! sequentially, in blocks of the write block size (fio reads back the logged blocks sorted by
//! offset, which for a job that covered its region is the same sequence; sectors the job never
//! wrote read back as version 0 and check trivially).

use blksim_core::RngStreams;
use blksim_job::{JobSpec, RwPattern};
use blksim_workload::{IoGen, Region};

/// Whether the job has a verify phase: `verify` set, `do_verify=1`, and it writes.
pub fn has_verify_phase(spec: &JobSpec) -> bool {
    let writes = !matches!(
        spec.rw,
        RwPattern::Read | RwPattern::RandRead | RwPattern::Trim | RwPattern::RandTrim
    );
    spec.verify.is_some() && spec.do_verify && writes
}

/// The read-back generator of a job's verify phase, if it has one.
pub fn verify_gen(
    spec: &JobSpec,
    region: Region,
    streams: &RngStreams,
    job_index: usize,
) -> Result<Option<IoGen>, blksim_job::ParseError> {
    if !has_verify_phase(spec) {
        return Ok(None);
    }
    let mut v = spec.clone();
    v.rw = RwPattern::Read;
    v.bs[0] = v.bs[1].clone();
    v.time_based = false;
    v.runtime_ns = 0;
    v.number_ios = 0;
    v.loops = 1;
    v.io_size = None;
    v.rate = [0; 3];
    v.rate_iops = [0; 3];
    v.thinktime_ns = 0;
    let streams = RngStreams::new(streams.stream(&format!("job{job_index}.verify")).next_u64());
    IoGen::try_new(&v, region, &streams, job_index).map(Some)
}

/// At the end of the write phase: switch the task to its read-back generator. Returns true if
/// a verify phase starts now.
pub fn start_verify_phase(gen: &mut Option<IoGen>, verify: &mut Option<IoGen>) -> bool {
    match verify.take() {
        Some(v) => {
            *gen = Some(v);
            true
        }
        None => false,
    }
}
