//! fio's write-then-verify phases (`verify=`, `do_verify`).
//!
//! In fio a job with `verify=<method>` that writes logs every write it issues
//! (`log_io_piece`, iolog.c) and, when the write phase is over, `do_verify()` (backend.c)
//! reads the logged pieces back (`get_next_verify`) and checks them. blksim simulates no
//! data: the method (md5, crc32c, ...) only means "check", and the check is the block layer's
//! integrity oracle (`blksim_block::integrity`), which compares every read with the last write
//! that completed on each sector.
//!
//! What is read back, and in which order, is fio's:
//! * with a random map (random I/O, `norandommap` off, fio's own generator, not LFSR) the log
//!   is a list in issue order (the map already keeps a block from being written twice in a
//!   pass). blksim keeps no list: it replays a copy of the write generator taken before the
//!   first I/O, which yields the same writes in the same order, in constant memory;
//! * otherwise the log is fio's rbtree sorted by offset, where a new piece replaces the pieces
//!   it overlaps. blksim keeps the same ordered map, whose size follows the written footprint
//!   (one entry per distinct piece), not the number of writes.
//!
//! `thread_main` verifies after every pass (`do_io`), not once at the end, and not at all
//! after a pass that runtime cut short (`td->terminate`): so does the engine, and the
//! generator stops at each pass end of a verifying job ([`IoGen::stop_at_pass_ends`]).

use std::collections::BTreeMap;

use blksim_job::{Ddir, JobSpec, RwPattern};
use blksim_workload::{IoGen, IoU};

/// Whether the job has a verify phase: `verify` set, `do_verify=1`, and it writes.
pub fn has_verify_phase(spec: &JobSpec) -> bool {
    let writes = !matches!(
        spec.rw,
        RwPattern::Read | RwPattern::RandRead | RwPattern::Trim | RwPattern::RandTrim
    );
    spec.verify.is_some() && spec.do_verify && writes
}

/// The writes a job logged for its verify phase.
#[derive(Debug)]
pub enum VerifyLog {
    /// Issue order: the write generator as it was before the first I/O not yet read back,
    /// how many writes were logged and not read back, how many were logged in all, and the
    /// ones still in flight (their number in the log and their io_u), at most `iodepth`.
    Replay {
        gen: Box<IoGen>,
        writes: u64,
        logged: u64,
        in_flight: Vec<(u64, u32)>,
    },
    /// Offset order, overlapping pieces replaced by the newer one: offset → (length, the
    /// io_u while the write is in flight).
    Sorted(BTreeMap<u64, (u64, Option<u32>)>),
}

impl VerifyLog {
    /// The log of a job about to start its write phase with generator `gen`; None if the job
    /// has no verify phase.
    pub fn new(spec: &JobSpec, gen: &IoGen) -> Option<Self> {
        has_verify_phase(spec).then(|| Self::for_pass(gen))
    }

    /// An empty log for the pass `gen` is about to run.
    pub fn for_pass(gen: &IoGen) -> Self {
        if gen.uses_random_map() {
            VerifyLog::Replay {
                gen: Box::new(gen.clone()),
                writes: 0,
                logged: 0,
                in_flight: Vec::new(),
            }
        } else {
            VerifyLog::Sorted(BTreeMap::new())
        }
    }

    /// `log_io_piece`: a write was issued as io_u `id` (in flight until
    /// [`Self::completed`]).
    pub fn logged(&mut self, io: &IoU, id: u32) {
        if io.ddir != Ddir::Write {
            return;
        }
        match self {
            VerifyLog::Replay {
                writes,
                logged,
                in_flight,
                ..
            } => {
                in_flight.push((*logged, id));
                *logged += 1;
                *writes += 1;
            }
            VerifyLog::Sorted(_) => {
                self.drop_overlapped(io);
                if let VerifyLog::Sorted(map) = self {
                    map.insert(io.offset, (io.len, Some(id)));
                }
            }
        }
    }

    /// The pieces a write about to be logged overlaps leave the offset-sorted log (fio's
    /// rbtree insert removes each and restarts). They stay out if the write is then
    /// requeued: FIO_Q_BUSY unlogs only the write itself (`unlog_io_piece`).
    pub fn drop_overlapped(&mut self, io: &IoU) {
        let VerifyLog::Sorted(map) = self else {
            return;
        };
        if io.ddir != Ddir::Write {
            return;
        }
        let (s, e) = (io.offset, io.offset + io.len);
        let first = map
            .range(..s)
            .next_back()
            .filter(|&(&o, &(l, _))| o + l > s)
            .map(|(&o, _)| o);
        let overlapped: Vec<u64> = first
            .into_iter()
            .chain(map.range(s..e).map(|(&o, _)| o))
            .collect();
        for o in overlapped {
            map.remove(&o);
        }
    }

    /// `io_completed`: the write io_u `id` at `offset` was reaped, so its piece may be read
    /// back (IP_F_IN_FLIGHT cleared). fio also takes a failed write out of the log
    /// (`unlog_io_piece`); the log here keeps it, and the oracle checks its read against
    /// what the device holds.
    pub fn completed(&mut self, id: u32, offset: u64) {
        match self {
            VerifyLog::Replay { in_flight, .. } => in_flight.retain(|&(_, i)| i != id),
            VerifyLog::Sorted(map) => {
                if let Some(e) = map.get_mut(&offset).filter(|e| e.1 == Some(id)) {
                    e.1 = None;
                }
            }
        }
    }

    /// fio's `io_hist_len`: pieces logged and not read back.
    pub fn hist_len(&self) -> u64 {
        match self {
            VerifyLog::Replay { writes, .. } => *writes,
            VerifyLog::Sorted(map) => map.len() as u64,
        }
    }

    /// `get_next_verify` during the writes (`verify_backlog`): the first piece as a read,
    /// taken out of the log, unless its write is still in flight.
    pub fn take_first(&mut self) -> Option<IoU> {
        match self {
            VerifyLog::Replay {
                gen,
                writes,
                logged,
                in_flight,
            } => {
                let head = *logged - *writes;
                if *writes == 0 || in_flight.iter().any(|&(n, _)| n == head) {
                    return None;
                }
                let read = next_write(gen)?;
                *writes -= 1;
                Some(read)
            }
            VerifyLog::Sorted(map) => {
                let (&offset, &(len, id)) = map.first_key_value()?;
                if id.is_some() {
                    return None;
                }
                map.remove(&offset);
                Some(IoU {
                    ddir: Ddir::Read,
                    offset,
                    len,
                })
            }
        }
    }

    /// The read-back, in fio's order.
    pub fn into_reads(self) -> VerifyReads {
        match self {
            VerifyLog::Replay { gen, writes, .. } => VerifyReads::Replay { gen, left: writes },
            VerifyLog::Sorted(map) => VerifyReads::Sorted(map.into_iter()),
        }
    }
}

/// The write generator's next write, as the read that verifies it.
fn next_write(gen: &mut IoGen) -> Option<IoU> {
    loop {
        let io = gen.next()?;
        if io.ddir == Ddir::Write {
            return Some(IoU {
                ddir: Ddir::Read,
                ..io
            });
        }
    }
}

/// The verify phase's reads (`get_next_verify`).
#[derive(Debug)]
pub enum VerifyReads {
    Replay { gen: Box<IoGen>, left: u64 },
    Sorted(std::collections::btree_map::IntoIter<u64, (u64, Option<u32>)>),
}

impl Iterator for VerifyReads {
    type Item = IoU;

    fn next(&mut self) -> Option<IoU> {
        match self {
            VerifyReads::Replay { gen, left } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                next_write(gen)
            }
            VerifyReads::Sorted(it) => it.next().map(|(offset, (len, _))| IoU {
                ddir: Ddir::Read,
                offset,
                len,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(offset: u64, len: u64) -> IoU {
        IoU {
            ddir: Ddir::Write,
            offset,
            len,
        }
    }

    /// fio's rbtree: sorted by offset, a newer piece replaces those it overlaps.
    #[test]
    fn sorted_log_replaces_overlapped_pieces() {
        let mut log = VerifyLog::Sorted(BTreeMap::new());
        for io in [w(8192, 4096), w(0, 4096), w(2048, 4096), w(16384, 4096)] {
            log.logged(&io, 0);
        }
        let reads: Vec<(u64, u64)> = log.into_reads().map(|r| (r.offset, r.len)).collect();
        // [2048, 6144) replaced [0, 4096).
        assert_eq!(reads, vec![(2048, 4096), (8192, 4096), (16384, 4096)]);
        let mut log = VerifyLog::Sorted(BTreeMap::new());
        for io in [w(8192, 4096), w(0, 4096), w(4096, 8192)] {
            log.logged(&io, 0);
        }
        let reads: Vec<(u64, u64)> = log.into_reads().map(|r| (r.offset, r.len)).collect();
        // [4096, 12288) replaced [8192, 12288).
        assert_eq!(reads, vec![(0, 4096), (4096, 8192)]);
    }
}
