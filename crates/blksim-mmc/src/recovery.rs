//! Faults on the card and bus, and the MMC block driver's recovery
//! (`drivers/mmc/core/block.c`).
//!
//! Faults are drawn per attempt of a data command from one seeded stream (only when a fault
//! rate is set, so runs without faults draw nothing): a data CRC error (`-EILSEQ`: the
//! transfer runs, then fails), a data timeout (`-ETIMEDOUT`: the host waits its data timeout),
//! a command response error (fails before any data).
//!
//! Recovery of a failed read or write (`mmc_blk_mq_rw_recovery`, then
//! `mmc_blk_mq_complete_rq`), per request, with `mqrq->retries` kept across requeues:
//! * CMD13 for the card's status; after a data error the card is brought back to `tran`
//!   (`mmc_blk_fix_state`: CMD12, then CMD13 until not busy);
//! * before the last retry (`retries + 1 == MMC_MAX_RETRIES`) the card is reset
//!   (`mmc_blk_reset`: at most once per direction until a request of that direction
//!   succeeds, `md->reset_done`); the reset flushes the card's cache first
//!   (`_mmc_hw_reset` → `_mmc_flush_cache`);
//! * command errors keep all `MMC_MAX_RETRIES` (5); data errors jump to the last
//!   `MMC_DATA_RETRIES` (2);
//! * when the retries are used up, a multi-block read is read again one sector at a time
//!   (`mmc_blk_read_single`, each sector up to 1 + `MMC_READ_SINGLE_RETRIES` tries);
//! * then the request is requeued (`blk_mq_requeue_request`) while `retries++ <
//!   MMC_MAX_RETRIES`, else it ends with `BLK_STS_IOERR` (EIO to the submitter).
//!
//! On the host software queue the failing request's completion sets `recovery_needed`: the
//! queue is halted (`mmc_hsq_recovery_start`), `queue_rq` answers BLK_STS_RESOURCE, and the
//! recovery work runs the same recovery, then resumes the queue. On CQE the recovery work
//! halts the engine and discards every queued task (`mmc_cqe_recovery`: CMD12, CMD48); each
//! is completed with an error and requeued while `retries++ < MMC_CQE_RETRIES` (2).
//!
//! Departure: `mmc_blk_read_single` completes the sectors it read and fails the others;
//! here one failed sector fails the whole request.

use blksim_core::{Ns, Rng};
use std::collections::BTreeMap;

/// `MMC_MAX_RETRIES`, `MMC_DATA_RETRIES`, `MMC_READ_SINGLE_RETRIES`, `MMC_CQE_RETRIES`.
pub const MMC_MAX_RETRIES: u32 = 5;
pub const MMC_DATA_RETRIES: u32 = 2;
pub const MMC_READ_SINGLE_RETRIES: u32 = 2;
pub const MMC_CQE_RETRIES: u32 = 2;

/// What went wrong with one attempt of a data command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fault {
    #[default]
    None,
    /// Data CRC error (`-EILSEQ`).
    DataCrc,
    /// Data timeout (`-ETIMEDOUT`).
    DataTimeout,
    /// Command response CRC error or timeout.
    Cmd,
}

impl Fault {
    pub fn is_data(self) -> bool {
        matches!(self, Fault::DataCrc | Fault::DataTimeout)
    }
}

/// Fault rates (per million attempts) and the card removal time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultConfig {
    pub crc_ppm: u64,
    pub timeout_ppm: u64,
    pub cmd_ppm: u64,
    /// 0 = never.
    pub removed_at: Ns,
}

impl FaultConfig {
    pub fn any_rate(&self) -> bool {
        self.crc_ppm + self.timeout_ppm + self.cmd_ppm > 0
    }
}

/// What the driver does with a request after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `blk_mq_requeue_request`: try again.
    Requeue,
    /// `blk_mq_end_request(req, BLK_STS_IOERR)`.
    Fail,
    /// The single-sector reads got every sector.
    Done,
}

/// The costs of recovery steps, from the host and bus models.
pub struct Costs {
    /// One CMD13 SEND_STATUS round trip.
    pub cmd13: Ns,
    /// CMD12 STOP_TRANSMISSION (R1b).
    pub cmd12: Ns,
}

/// What recovery asks of the host and card: a reset (returns when it is done), waiting for
/// the card to leave its busy state (`card_busy_detect` from `t`: returns when a CMD13 shows
/// it ready) and a sector-by-sector re-read (returns when it ends and whether every sector
/// was read).
pub trait RecoveryOps {
    fn reset(&mut self, t: Ns) -> Ns;
    fn card_busy(&mut self, t: Ns) -> Ns;
    fn read_single(&mut self, rec: &mut Recovery, t: Ns) -> (Ns, bool);
}

/// Per-driver recovery state and counters.
#[derive(Clone, Debug, Default)]
pub struct Recovery {
    pub cfg: FaultConfig,
    rng: Option<Rng>,
    /// `mqrq->retries` of requests that failed at least once, until they end.
    retries: BTreeMap<u32, u32>,
    /// `md->reset_done`: bit 0 reads, bit 1 writes.
    reset_done: u8,
    pub injected: u64,
    pub retried: u64,
    pub resets: u64,
    pub single_block_fallbacks: u64,
    pub failed: u64,
    pub recoveries: u64,
}

impl Recovery {
    pub fn new(cfg: FaultConfig) -> Self {
        Recovery {
            cfg,
            ..Default::default()
        }
    }

    /// Seed the fault stream (only drawn from when a rate is set).
    pub fn seed(&mut self, seed: u64) {
        if self.cfg.any_rate() {
            self.rng = Some(Rng::from_seed(seed));
        }
    }

    /// The fault of one attempt of a data command.
    pub fn draw(&mut self) -> Fault {
        let Some(rng) = self.rng.as_mut() else {
            return Fault::None;
        };
        let x = rng.below(1_000_000);
        let c = &self.cfg;
        let f = if x < c.crc_ppm {
            Fault::DataCrc
        } else if x < c.crc_ppm + c.timeout_ppm {
            Fault::DataTimeout
        } else if x < c.crc_ppm + c.timeout_ppm + c.cmd_ppm {
            Fault::Cmd
        } else {
            Fault::None
        };
        if f != Fault::None {
            self.injected += 1;
        }
        f
    }

    fn dir_bit(read: bool) -> u8 {
        if read {
            1
        } else {
            2
        }
    }

    /// A request of this direction succeeded (`mmc_blk_reset_success`): a later failure may
    /// reset again. Its retry count is forgotten.
    pub fn success(&mut self, tag: u32, read: bool) {
        self.reset_done &= !Self::dir_bit(read);
        self.retries.remove(&tag);
    }

    /// Forget a request that ended another way (a power cut, a removal).
    pub fn forget_all(&mut self) {
        self.retries.clear();
    }

    /// `mmc_blk_mq_rw_recovery` then `mmc_blk_mq_complete_rq` for request `tag`'s failed
    /// attempt at `t`, resetting and re-reading through `ops`. Returns when recovery ends and
    /// what happens to the request.
    #[allow(clippy::too_many_arguments)]
    pub fn rw_recovery(
        &mut self,
        tag: u32,
        read: bool,
        blocks: u32,
        fault: Fault,
        t: Ns,
        costs: &Costs,
        ops: &mut dyn RecoveryOps,
    ) -> (Ns, Outcome) {
        self.recoveries += 1;
        let mut retries = self.retries.get(&tag).copied().unwrap_or(0);
        // __mmc_send_status; a data error leaves the card out of `tran`: mmc_blk_fix_state
        // sends CMD12, then polls CMD13 until the card is no longer busy (a failed write may
        // still be programming).
        let mut t = t + costs.cmd13;
        if fault.is_data() {
            t = ops.card_busy(t + costs.cmd12);
        }
        let mut single = None;
        'recovery: {
            // Reset before the last retry (at most once per direction until a success).
            if retries + 1 == MMC_MAX_RETRIES {
                let bit = Self::dir_bit(read);
                if self.reset_done & bit != 0 {
                    break 'recovery;
                }
                self.reset_done |= bit;
                self.resets += 1;
                t = ops.reset(t);
            }
            // Command errors fail fast: keep all retries.
            if fault == Fault::Cmd {
                break 'recovery;
            }
            // Reduce the remaining retries for data errors.
            if retries < MMC_MAX_RETRIES - MMC_DATA_RETRIES {
                retries = MMC_MAX_RETRIES - MMC_DATA_RETRIES;
                break 'recovery;
            }
            if read && blocks > 1 {
                self.single_block_fallbacks += 1;
                let (end, ok) = ops.read_single(self, t);
                t = end;
                single = Some(ok);
            }
        }
        // mmc_blk_mq_complete_rq.
        let outcome = match single {
            Some(true) => Outcome::Done,
            Some(false) => Outcome::Fail,
            None if retries < MMC_MAX_RETRIES => {
                retries += 1;
                Outcome::Requeue
            }
            None => Outcome::Fail,
        };
        match outcome {
            Outcome::Requeue => {
                self.retried += 1;
                self.retries.insert(tag, retries);
            }
            Outcome::Fail => {
                self.failed += 1;
                self.retries.remove(&tag);
            }
            Outcome::Done => {
                self.retries.remove(&tag);
            }
        }
        (t, outcome)
    }

    /// `mmc_blk_cqe_complete_rq` for a task the CQE recovery discarded or that failed:
    /// requeue while `retries++ < MMC_CQE_RETRIES`, else fail.
    pub fn cqe_retry(&mut self, tag: u32) -> Outcome {
        let r = self.retries.entry(tag).or_insert(0);
        if *r < MMC_CQE_RETRIES {
            *r += 1;
            self.retried += 1;
            Outcome::Requeue
        } else {
            self.retries.remove(&tag);
            self.failed += 1;
            Outcome::Fail
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts resets and sector-by-sector reads; every sector reads back `single_ok`.
    struct Ops {
        resets: u32,
        singles: u32,
        single_ok: bool,
    }

    impl RecoveryOps for Ops {
        fn reset(&mut self, t: Ns) -> Ns {
            self.resets += 1;
            t + 1000
        }
        fn card_busy(&mut self, t: Ns) -> Ns {
            t + costs().cmd13
        }
        fn read_single(&mut self, _rec: &mut Recovery, t: Ns) -> (Ns, bool) {
            self.singles += 1;
            (t + 7, self.single_ok)
        }
    }

    fn ops(single_ok: bool) -> Ops {
        Ops {
            resets: 0,
            singles: 0,
            single_ok,
        }
    }

    fn costs() -> Costs {
        Costs {
            cmd13: 10,
            cmd12: 5,
        }
    }

    /// A data error that never goes away. A read: fail, requeue (retries jumps to 3, then 4),
    /// fail, reset (retries + 1 == 5), then it is read sector by sector. A write: the same
    /// reset, one more try (retries 5), fail, EIO.
    #[test]
    fn persistent_data_error_follows_the_kernels_retry_sequence() {
        let mut r = Recovery::new(FaultConfig::default());
        let mut o = ops(false);
        let mut outcomes = Vec::new();
        for _ in 0..2 {
            let (_, x) = r.rw_recovery(1, true, 8, Fault::DataCrc, 0, &costs(), &mut o);
            outcomes.push(x);
        }
        assert_eq!(outcomes, vec![Outcome::Requeue, Outcome::Fail]);
        assert_eq!((o.resets, o.singles), (1, 1));
        assert_eq!((r.retried, r.failed, r.resets), (1, 1, 1));
        // One sector: nothing to read sector by sector; it is retried like a write.
        let mut one = Recovery::new(FaultConfig::default());
        let mut n = 0;
        while one
            .rw_recovery(5, true, 1, Fault::DataCrc, 0, &costs(), &mut ops(true))
            .1
            == Outcome::Requeue
        {
            n += 1;
        }
        assert_eq!(n, 2);
        // A write: no single-sector fallback; three attempts, then EIO.
        let mut w = Recovery::new(FaultConfig::default());
        let mut n = 0;
        while w
            .rw_recovery(2, false, 8, Fault::DataTimeout, 0, &costs(), &mut ops(true))
            .1
            == Outcome::Requeue
        {
            n += 1;
        }
        assert_eq!(n, 2, "two retries for data errors");
    }

    /// Command errors keep every retry: six attempts, with a reset before the last.
    #[test]
    fn command_errors_use_every_retry() {
        let mut r = Recovery::new(FaultConfig::default());
        let mut o = ops(true);
        let mut requeues = 0;
        loop {
            let (_, x) = r.rw_recovery(3, false, 8, Fault::Cmd, 0, &costs(), &mut o);
            if x != Outcome::Requeue {
                assert_eq!(x, Outcome::Fail);
                break;
            }
            requeues += 1;
        }
        assert_eq!((requeues, o.resets), (MMC_MAX_RETRIES, 1));
        // The reset is spent until a write succeeds.
        r.success(9, false);
        assert_eq!(r.reset_done & 2, 0);
    }

    #[test]
    fn faults_are_drawn_at_their_rates() {
        let mut r = Recovery::new(FaultConfig {
            crc_ppm: 100_000,
            timeout_ppm: 50_000,
            cmd_ppm: 50_000,
            removed_at: 0,
        });
        r.seed(42);
        let mut n = [0u32; 4];
        for _ in 0..100_000 {
            n[r.draw() as usize] += 1;
        }
        // 80%, 10%, 5%, 5% within 1 point.
        for (i, want) in [80_000i64, 10_000, 5_000, 5_000].iter().enumerate() {
            assert!((n[i] as i64 - want).abs() < 1000, "{i}: {}", n[i]);
        }
        let mut off = Recovery::new(FaultConfig::default());
        off.seed(42);
        assert_eq!(off.draw(), Fault::None);
    }
}
