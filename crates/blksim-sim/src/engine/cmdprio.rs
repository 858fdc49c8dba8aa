//! The libaio and io_uring engines' per-I/O priorities (`engines/cmdprio.c`, fio 3.33):
//! `cmdprio_percentage`, `cmdprio_class`, `cmdprio` and `cmdprio_bssplit`.
//!
//! Each read or write the engine queues draws a number from 0 to 99 from the job's own
//! stream (`td->prio_state`, seeded from `FIO_RAND_PRIO_CMDS`) if its direction (and, with
//! `cmdprio_bssplit`, its exact size) has a percentage, and takes the first priority whose
//! running sum of percentages is above it; otherwise it keeps the job's priority
//! (`fio_cmdprio_set_ioprio`, called from `fio_libaio_queue` and `fio_ioring_queue` once the
//! io_u is past their FIO_Q_BUSY checks). The kernel gives the priority to the I/O's bios
//! (`IOCB_FLAG_IOPRIO` → `ki_ioprio`, an SQE's `ioprio`; `__blkdev_direct_IO` copies it to
//! `bio->bi_ioprio`). fio keeps each priority's latencies apart (`ts->clat_prio`).

use blksim_block::request::IoPrio;
use blksim_job::{Ddir, JobSpec};
use blksim_workload::frand::FRand;

/// One block size's priorities: `bs` None matches every size (`cmdprio_percentage`).
struct BsPrios {
    bs: Option<u64>,
    /// The sum of the percentages (`tot_perc`).
    total: u32,
    /// (percentage, priority, its index in the direction's latency list).
    prios: Vec<(u32, IoPrio, u16)>,
}

pub(crate) struct CmdPrio {
    /// `td->prio_state`: a 32-bit stream whatever `random_generator` says.
    rand: FRand,
    /// Reads, writes.
    tables: [Vec<BsPrios>; 2],
}

impl CmdPrio {
    /// The job's draws, and per direction the priorities its latencies are kept by (the
    /// job's own first; empty for a direction that draws nothing). None when the job sets
    /// no `cmdprio_percentage` or `cmdprio_bssplit`.
    pub(crate) fn new(spec: &JobSpec, seed: u64, own: u32) -> Option<(Self, [Vec<u32>; 2])> {
        if !spec.cmdprio.enabled() {
            return None;
        }
        let mut lists: [Vec<u32>; 2] = Default::default();
        let does = [spec.rw.has_read(), spec.rw.has_write()];
        let tables = [0, 1].map(|d| {
            let table = spec.cmdprio.table(d, does[d]);
            let list = &mut lists[d];
            if !table.is_empty() {
                list.push(own);
            }
            table
                .into_iter()
                .map(|b| BsPrios {
                    bs: b.bs,
                    total: b.prios.iter().map(|p| p.0).sum(),
                    prios: b
                        .prios
                        .iter()
                        .map(|&(perc, prio)| {
                            // `assign_clat_prio_index`: one index per distinct value.
                            let i = match list.iter().position(|&v| v == prio) {
                                Some(i) => i,
                                None => {
                                    list.push(prio);
                                    list.len() - 1
                                }
                            };
                            (perc, IoPrio(prio as u16), i as u16)
                        })
                        .collect(),
                })
                .collect()
        });
        Some((
            CmdPrio {
                rand: FRand::new(seed, false),
                tables,
            },
            lists,
        ))
    }

    /// `fio_cmdprio_set_ioprio` for a read or write of `len` bytes being queued: its
    /// priority and that priority's index, or None to keep the job's.
    pub(crate) fn draw(&mut self, ddir: Ddir, len: u64) -> Option<(IoPrio, u16)> {
        let table = self.tables.get(ddir.idx())?;
        // `fio_cmdprio_percentage`: the size's entry (its exact size), or nothing to draw.
        let b = table.iter().find(|b| b.bs.is_none_or(|bs| bs == len))?;
        let r = self.rand.rand_between(0, 99) as u32;
        if r >= b.total {
            return None;
        }
        let mut sum = 0;
        b.prios.iter().find_map(|&(perc, prio, i)| {
            sum += perc;
            (r < sum).then_some((prio, i))
        })
    }
}
