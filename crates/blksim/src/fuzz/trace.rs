//! The blktrace files of a case's second run, checked for what a CPU and a request can do:
//! each CPU's file is in time order with its data records numbered 1, 2, ... (the kernel's
//! per-CPU relay buffer and `bt->sequence`; the writer orders what the simulation gives it,
//! so this checks the writer); a request is issued (`D`) only after a bio was queued (`Q`) at
//! its sector, completes (`C`) only after it was issued, and every request issued has
//! completed by the end of the run. The issue-after-queue check is left out
//! when the elevator makes requests of its own, which have no bio (eraseblock's gap reads and
//! combined writes): a trace does not tell them apart.

use blksim_trace::{Action, Op};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The device name of the trace in `dir`: `<dev>` of its `<dev>.blktrace.0`.
fn devname(dir: &Path) -> Result<String, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for ent in rd.flatten() {
        let name = ent.file_name().to_string_lossy().into_owned();
        if let Some(dev) = name.strip_suffix(".blktrace.0") {
            return Ok(dev.to_string());
        }
    }
    Err(format!("no <dev>.blktrace.0 in {}", dir.display()))
}

/// Where an action falls among the records of one time: a bio is queued before its request
/// is issued, and a request is issued before it is requeued or completes.
fn rank(a: Action) -> u8 {
    match a {
        Action::Queue => 0,
        Action::Issue => 1,
        Action::Requeue | Action::Complete => 2,
        _ => 3,
    }
}

/// Check the trace in `dir`; `own_requests`: the elevator makes requests without bios.
/// Returns the bytes of the requests that completed without an error, per direction (read,
/// write, discard).
pub fn check(dir: &Path, own_requests: bool) -> Result<[u64; 3], String> {
    let dev = devname(dir)?;
    let mut events = blksim_trace::read_trace_checked(dir, &dev).map_err(|e| e.to_string())?;
    events.sort_by_key(|e| (e.time_ns, rank(e.action)));
    // Per sector: bios queued there and requests issued there, not yet completed (a
    // requeued request is issued again without a new bio). A bio merged into a request at
    // another sector never completes at its own: it only leaves the check weaker there.
    let mut at: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    // Sectors with a failed completion, which the count below cannot pair with an issue.
    let mut failed = BTreeSet::new();
    let mut done = [0u64; 3];
    for e in &events {
        // Empty flushes are the flush machinery's own requests. A failed completion may
        // have had no issue (a request the driver refused before `blk_mq_start_request`,
        // as `mmc_mq_queue_rq` does on a removed card, or a flush-sequenced request that
        // failed while it waited), and a trace cannot tell which issue it pairs with: it
        // is left out, which only leaves the check weaker at its sector.
        if e.action == Action::Complete && e.error != 0 {
            failed.insert(e.sector);
            continue;
        }
        if e.bytes == 0 {
            continue;
        }
        let (queued, issued) = at.entry(e.sector).or_default();
        match e.action {
            Action::Queue => *queued += 1,
            Action::Issue if *queued == 0 && !own_requests => {
                return Err(format!(
                    "sector {}: issued (D) at {} ns before a bio was queued there",
                    e.sector, e.time_ns
                ))
            }
            Action::Issue => *issued += 1,
            Action::Requeue => *issued = issued.saturating_sub(1),
            Action::Complete if *issued == 0 => {
                return Err(format!(
                    "sector {}: completed (C) at {} ns before it was issued",
                    e.sector, e.time_ns
                ))
            }
            Action::Complete => {
                *issued -= 1;
                *queued = queued.saturating_sub(1);
                match e.op {
                    Op::Read => done[0] += u64::from(e.bytes),
                    Op::Write => done[1] += u64::from(e.bytes),
                    Op::Discard => done[2] += u64::from(e.bytes),
                    Op::Flush => {}
                }
            }
            _ => {}
        }
    }
    // The run ends with nothing in flight: every request issued was completed (or failed,
    // where the count above leaves its sector uncertain).
    if let Some((sector, (_, n))) = at.iter().find(|(s, (_, n))| *n > 0 && !failed.contains(*s)) {
        return Err(format!(
            "sector {sector}: issued (D) {n} more time(s) than it completed (C) by the end"
        ));
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use blksim_trace::{BlktraceWriter, TraceEvent};

    /// Write `events` (time, action, sector, error) on CPU 0 and check them.
    fn checked(
        name: &str,
        events: &[(u64, Action, u64, i16)],
        own: bool,
    ) -> Result<[u64; 3], String> {
        let dir =
            std::env::temp_dir().join(format!("blksim-fztrace-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut w = BlktraceWriter::create(&dir, "sda", (8, 0)).unwrap();
        for &(t, action, sector, error) in events {
            w.write(&TraceEvent {
                error,
                ..TraceEvent::new(t, action, Op::Read, sector, 4096)
            })
            .unwrap();
        }
        w.finish().unwrap();
        let r = check(&dir, own);
        std::fs::remove_dir_all(&dir).unwrap();
        r
    }

    #[test]
    fn issue_after_queue_and_completion_after_issue() {
        use Action::{Complete as C, Issue as D, Queue as Q, Requeue as R};
        // In order, with a requeue and a second request at the same sector.
        let ok = [
            (1, Q, 8, 0),
            (2, D, 8, 0),
            (3, R, 8, 0),
            (4, D, 8, 0),
            (5, C, 8, 0),
        ];
        // One read of 4096 bytes completed.
        assert_eq!(checked("ok", &ok, false), Ok([4096, 0, 0]));
        let again = [
            (1, Q, 8, 0),
            (2, D, 8, 0),
            (3, C, 8, 0),
            (4, Q, 8, 0),
            (5, D, 8, 0),
            (6, C, 8, 0),
        ];
        checked("again", &again, false).unwrap();
        // Issued and never completed.
        assert!(checked("lost", &again[..5], false)
            .unwrap_err()
            .contains("more time(s) than it completed"));
        // Issued before its bio was queued: allowed only for an elevator's own requests.
        let early = [(2, D, 8, 0), (3, Q, 8, 0), (4, C, 8, 0)];
        assert!(checked("early", &early, false)
            .unwrap_err()
            .contains("issued (D)"));
        let own = [(2, D, 8, 0), (4, C, 8, 0)];
        checked("own", &own, true).unwrap();
        // Completed before its issue; a failed completion may have had none.
        let done_early = [(1, Q, 8, 0), (2, C, 8, 0), (3, D, 8, 0)];
        assert!(checked("c", &done_early, false)
            .unwrap_err()
            .contains("completed (C)"));
        let refused = [(1, Q, 8, 0), (2, C, 8, -5)];
        checked("eio", &refused, false).unwrap();
        // A failed completion leaves its sector's issues uncounted at the end.
        let failed = [(1, Q, 8, 0), (2, D, 8, 0), (3, C, 8, -5)];
        checked("failed", &failed, false).unwrap();
    }
}
