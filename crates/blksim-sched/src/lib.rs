//! blksim-sched: the elevators (I/O schedulers) behind the [`Elevator`] trait of
//! `blksim-block`.
//!
//! Module map (kernel file each follows):
//! * [`mq_deadline`]: `block/mq-deadline.c` — faithful (three priority levels, batching,
//!   direction switching, starvation, expiry, `latest_pos`, prio aging, merges, async depth).
//! * [`kyber`]: `block/kyber-iosched.c` — domains, token depths, per-CPU queues, latency
//!   histograms and the 100 ms depth-adaptation timer.
//! * [`bfq`]: `block/bfq-iosched.c` + `block/bfq-wf2q.c` — a model: per-process queues,
//!   B-WF2Q+ on sector budgets, in-service life cycle, idling, budget feedback, timeouts and
//!   the weight-raising heuristics (see the module docs for what is left out).
//! * [`eraseblock`]: not in the kernel — the MMC-aware scheduler of measurements §4: deadline
//!   for reads, writes grouped per erase block with the gaps read and one combined write.
//! * [`common`]: jiffies (HZ = 250) and the generic merge code of `block/elevator.c`.
//! * [`sorted`]: the ordered list the schedulers keep their rb-trees and FIFO lists in.
//!
//! Registry: [`make_elevator`] by name with the kernel's aliases (`deadline` → `mq-deadline`).

pub mod bfq;
pub mod common;
pub mod eraseblock;
pub mod kyber;
pub mod mq_deadline;
pub mod sorted;

pub use bfq::Bfq;
pub use common::{HZ, TICK_NS};
pub use eraseblock::EraseBlock;
pub use kyber::Kyber;
pub use mq_deadline::MqDeadline;

use blksim_block::elevator::{Elevator, ElvParams};
use blksim_block::limits::QueueLimits;

/// Names `scheduler` accepts (the kernel's `elevator_name`s plus `none`).
pub const ELEVATOR_NAMES: &[&str] = &["none", "mq-deadline", "kyber", "bfq", "eraseblock"];

/// `elevator_find` with aliases (`elevator_alias`: mq-deadline registers "deadline").
pub fn canonical_name(name: &str) -> Option<&'static str> {
    match name.trim() {
        "none" | "" => Some("none"),
        "mq-deadline" | "deadline" => Some("mq-deadline"),
        "kyber" => Some("kyber"),
        "bfq" => Some("bfq"),
        "eraseblock" => Some("eraseblock"),
        _ => None,
    }
}

/// Build an elevator by name. `none` → `Ok(None)`.
pub fn make_elevator(name: &str, p: &ElvParams) -> Result<Option<Box<dyn Elevator>>, String> {
    make_elevator_with_limits(name, p, &QueueLimits::default())
}

/// As [`make_elevator`], with the queue limits the merge code needs (`nomerges`,
/// `max_sectors`, `max_segments` for insert merges, which the elevator performs itself).
pub fn make_elevator_with_limits(
    name: &str,
    p: &ElvParams,
    lim: &QueueLimits,
) -> Result<Option<Box<dyn Elevator>>, String> {
    match canonical_name(name) {
        Some("none") => Ok(None),
        Some("mq-deadline") => Ok(Some(Box::new(MqDeadline::with_limits(p, lim.clone())))),
        Some("kyber") => Ok(Some(Box::new(Kyber::new(p)))),
        Some("bfq") => Ok(Some(Box::new(Bfq::with_limits(p, lim.clone())))),
        Some("eraseblock") => Ok(Some(Box::new(EraseBlock::with_limits(p, lim.clone())))),
        _ => Err(format!(
            "unknown I/O scheduler '{name}' (known: {})",
            ELEVATOR_NAMES.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests_bfq;
#[cfg(test)]
mod tests_dd;
#[cfg(test)]
mod tests_kyber;
#[cfg(test)]
mod tests_util;
#[cfg(test)]
mod tests_registry {
    use super::*;

    fn params() -> ElvParams {
        ElvParams {
            nr_requests: 64,
            queue_depth: 32,
            rotational: false,
            erase_block_bytes: None,
            seed: 1,
        }
    }

    #[test]
    fn registry_names_and_aliases() {
        assert!(make_elevator("none", &params()).unwrap().is_none());
        assert_eq!(
            make_elevator("deadline", &params())
                .unwrap()
                .unwrap()
                .name(),
            "mq-deadline"
        );
        for n in ELEVATOR_NAMES.iter().filter(|n| **n != "none") {
            assert_eq!(make_elevator(n, &params()).unwrap().unwrap().name(), *n);
        }
        assert!(make_elevator("cfq", &params()).is_err());
    }

    /// Every elevator's tunable table is well formed, the values it shows parse back within
    /// its bounds, and out-of-range or malformed values are errors naming the tunable.
    #[test]
    fn tunable_tables_parse_and_bound() {
        for (name, table) in [
            ("mq-deadline", mq_deadline::DD_TUNABLES),
            ("kyber", kyber::KYBER_TUNABLES),
            ("bfq", bfq::BFQ_TUNABLES),
            ("eraseblock", eraseblock::EB_TUNABLES),
        ] {
            blksim_core::param::check_table(table).unwrap();
            let mut e = make_elevator(name, &params()).unwrap().unwrap();
            for t in e.tunables() {
                t.def.parse_u64(&t.value).unwrap();
            }
            for d in table {
                let past = format!("{}", d.max as u128 + 1);
                let err = e.set_tunable(d.key, &past).unwrap_err();
                assert!(err.contains(d.key) && err.contains("out of range"), "{err}");
                assert!(e.set_tunable(d.key, "x").is_err());
            }
        }
        // Time tunables take the shared syntax: 2s is 2000 ms.
        let mut dd = make_elevator("mq-deadline", &params()).unwrap().unwrap();
        dd.set_tunable("write_expire", "2s").unwrap();
        let t = dd.tunables();
        assert_eq!(
            t.iter().find(|t| t.name() == "write_expire").unwrap().value,
            "2000"
        );
    }
}
