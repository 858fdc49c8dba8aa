//! The MMC host software queue's slot array and next-tag selection
//! (`drivers/mmc/host/mmc_hsq.[ch]`, reference §5).
//!
//! Slots are indexed by the blk-mq driver tag. `next_tag` is the slot the next pump starts (and,
//! while a request is on the host, the slot of that request); `qcnt` counts queued requests not
//! yet started. Two policies:
//! * [`NextTag::Scan`] — the original (v5.8–v6.1) `mmc_hsq_update_next_tag`: `next_tag + 1` if
//!   that slot holds a request, else the lowest occupied slot. Enqueue only sets `next_tag` when
//!   it is invalid. A high tag can be bypassed indefinitely (measurements §5).
//! * [`NextTag::Fifo`] — "mmc: mmc-hsq: use fifo to dispatch mmc_request" (v6.2+): a singly
//!   linked list through `tag_slot[]`, head `next_tag`, tail `tail_tag`.

use blksim_block::RqId;

pub const HSQ_NUM_SLOTS: usize = 64;
pub const HSQ_INVALID_TAG: usize = HSQ_NUM_SLOTS;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextTag {
    Scan,
    Fifo,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub rq: RqId,
    /// `mrq->data` is a 4096-byte write (for `mmc_hsq_modify_threshold`).
    pub is_4k_write: bool,
}

#[derive(Clone, Debug)]
pub struct HsqSlots {
    pub policy: NextTag,
    pub slot: [Option<Slot>; HSQ_NUM_SLOTS],
    pub next_tag: usize,
    pub tail_tag: usize,
    pub tag_slot: [usize; HSQ_NUM_SLOTS],
    pub qcnt: u32,
    /// Tag of the request owned by the host controller (`hsq->mrq`), if any.
    pub on_host: Option<usize>,
}

impl HsqSlots {
    pub fn new(policy: NextTag) -> Self {
        HsqSlots {
            policy,
            slot: [None; HSQ_NUM_SLOTS],
            next_tag: HSQ_INVALID_TAG,
            tail_tag: HSQ_INVALID_TAG,
            tag_slot: [HSQ_INVALID_TAG; HSQ_NUM_SLOTS],
            qcnt: 0,
            on_host: None,
        }
    }

    /// The slot part of `mmc_hsq_request`.
    pub fn enqueue(&mut self, tag: usize, s: Slot) {
        assert!(tag < HSQ_NUM_SLOTS, "hsq tag {tag} out of range");
        assert!(self.slot[tag].is_none(), "hsq slot {tag} already occupied");
        self.slot[tag] = Some(s);
        match self.policy {
            NextTag::Scan => {
                if self.next_tag == HSQ_INVALID_TAG {
                    self.next_tag = tag;
                }
            }
            NextTag::Fifo => {
                if self.next_tag == HSQ_INVALID_TAG {
                    self.next_tag = tag;
                    self.tail_tag = tag;
                    self.tag_slot[tag] = HSQ_INVALID_TAG;
                } else {
                    self.tag_slot[self.tail_tag] = tag;
                    self.tail_tag = tag;
                }
            }
        }
        self.qcnt += 1;
    }

    /// `mmc_hsq_modify_threshold` as merged (v6.7): depth `perf` when at least two slots hold
    /// 4 KiB writes, else `normal`. (The v4 posting stopped at the first slot that was not a
    /// 4 KiB write; the merged version counts over all slots.)
    pub fn threshold(&self, normal: u32, perf: u32) -> u32 {
        let n = self
            .slot
            .iter()
            .flatten()
            .filter(|s| s.is_4k_write)
            .take(2)
            .count();
        if n == 2 {
            perf
        } else {
            normal
        }
    }

    /// The slot part of `mmc_hsq_pump_requests`: take `slot[next_tag]` onto the host.
    /// None when the host is busy or nothing is queued.
    pub fn pump(&mut self) -> Option<(usize, Slot)> {
        if self.on_host.is_some() || self.qcnt == 0 {
            return None;
        }
        let tag = self.next_tag;
        let s = self.slot[tag].expect("hsq next_tag points at an empty slot");
        self.on_host = Some(tag);
        self.qcnt -= 1;
        Some((tag, s))
    }

    /// `mmc_hsq_finalize_request` + `mmc_hsq_post_request` (slot part): free the slot of the
    /// request on the host and choose the next tag. Returns the finished slot.
    pub fn finalize(&mut self, tag: usize) -> Slot {
        assert_eq!(
            self.on_host,
            Some(tag),
            "hsq finalize of a request not on the host"
        );
        assert_eq!(self.next_tag, tag);
        let s = self.slot[tag]
            .take()
            .expect("hsq finalize of an empty slot");
        self.on_host = None;
        let remains = self.qcnt;
        self.update_next_tag(remains);
        s
    }

    fn update_next_tag(&mut self, remains: u32) {
        if remains == 0 {
            self.next_tag = HSQ_INVALID_TAG;
            self.tail_tag = HSQ_INVALID_TAG;
            return;
        }
        match self.policy {
            NextTag::Scan => {
                self.next_tag += 1;
                if self.next_tag != HSQ_INVALID_TAG && self.slot[self.next_tag].is_some() {
                    return;
                }
                self.next_tag = (0..HSQ_NUM_SLOTS)
                    .find(|&t| self.slot[t].is_some())
                    .unwrap_or(HSQ_INVALID_TAG);
            }
            NextTag::Fifo => {
                let t = self.tag_slot[self.next_tag];
                self.tag_slot[self.next_tag] = HSQ_INVALID_TAG;
                self.next_tag = t;
            }
        }
    }

    pub fn occupied(&self) -> usize {
        self.slot.iter().filter(|s| s.is_some()).count()
    }

    pub fn check(&self) {
        let occ = self.occupied() as u32;
        assert_eq!(
            occ,
            self.qcnt + self.on_host.is_some() as u32,
            "hsq qcnt out of step"
        );
        if occ > 0 {
            assert!(self.next_tag < HSQ_NUM_SLOTS && self.slot[self.next_tag].is_some());
        }
    }
}
