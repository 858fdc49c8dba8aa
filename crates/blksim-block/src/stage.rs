//! Where a request spends its time on the way down, as intervals the layers report when it
//! leaves them: what the HTML report integrates into queue depth over time at each stage
//! (the time-weighted mean number of requests there, `iostat`'s `aqu-sz` split by stage) and
//! into the time the device was busy (`io_ticks`, `iostat`'s `%util`).
//!
//! Spans are reported only when [`Spans::on`] (the report asks for them), at the moment the
//! request leaves the stage, so they come out of time order; the consumer sums overlaps.

use blksim_core::Ns;

/// A stage of the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The request was made (`blk_mq_submit_bio`) and not yet accepted by the driver: in a
    /// plug, the elevator, a dispatch list, or waiting for a driver tag or budget.
    BlockLayer,
    /// Accepted by `queue_rq` until `blk_mq_end_request`.
    Driver,
    /// Inside the driver, waiting for the host: preparation, the host software queue's
    /// slots, the command queue (MMC: from `queue_rq` to the command on the bus).
    HostQueue,
    /// MMC host software queue: queued in a slot, waiting for `mmc_hsq_pump_requests`.
    HsqSlot,
    /// On the bus and in the device: from the command to the end of the transfer and busy.
    Device,
}

impl Stage {
    pub const ALL: [Stage; 5] = [
        Stage::BlockLayer,
        Stage::Driver,
        Stage::HostQueue,
        Stage::HsqSlot,
        Stage::Device,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    /// The name the report shows.
    pub fn label(self) -> &'static str {
        match self {
            Stage::BlockLayer => "block layer",
            Stage::Driver => "at the driver",
            Stage::HostQueue => "host queue",
            Stage::HsqSlot => "hsq slot wait",
            Stage::Device => "device (bus and card)",
        }
    }
}

/// Intervals `[from, to)` a layer reports, and busy intervals (at least one request at the
/// driver), drained by the event loop.
#[derive(Clone, Debug, Default)]
pub struct Spans {
    pub on: bool,
    pub stages: Vec<(Stage, Ns, Ns)>,
    pub busy: Vec<(Ns, Ns)>,
}

impl Spans {
    pub fn push(&mut self, stage: Stage, from: Ns, to: Ns) {
        if self.on && to > from {
            self.stages.push((stage, from, to));
        }
    }

    pub fn push_busy(&mut self, from: Ns, to: Ns) {
        if self.on && to > from {
            self.busy.push((from, to));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.stages.is_empty() && self.busy.is_empty()
    }
}
