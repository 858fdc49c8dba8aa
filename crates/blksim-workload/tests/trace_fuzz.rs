//! No trace may panic or hang `read_iolog`. A deterministic generator (fixed seed, so a
//! failure reproduces) mutates valid traces of every format the reader recognises — fio
//! versions 2 and 3, MQSim/DiskSim ASCII, MSR Cambridge CSV, blkparse text, the Alibaba and
//! Tencent CSVs — by replacing,
//! deleting, duplicating and splicing bytes and fields. Every input must end in a located
//! error or the end of the trace within as many records as it has lines, and every I/O read
//! must have a length.

use std::panic::{catch_unwind, AssertUnwindSafe};

use blksim_workload::iolog::{IologReader, ReplayOp, ReplayOpts};

/// The fuzz tests' one generator (deterministic from its seed).
struct Rng(blksim_core::mutate::Mutator);
impl Rng {
    fn seeded(seed: u64) -> Rng {
        Rng(blksim_core::mutate::Mutator::new(seed))
    }
    fn next(&mut self) -> u64 {
        self.0.draw()
    }
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }
}

const SEEDS: &[&str] = &[
    "fio version 3 iolog\n0 f add\n0 f open\n10 f read 4096 512\n20 f sync 0 0\n\
     30 f write 8192 4096\n40 f trim 0 4096\n50 f datasync 0 0\n60 f close\n",
    "fio version 2 iolog\nf add\nf open\nf read 0 4096\nf wait 500 0\nf write 4096 4096\nf close\n",
    // File lines that carry a gap over to the first I/O, which comes at the end of the time
    // range: with `replay_time_scale` below 100 % the sum passes u64.
    "fio version 3 iolog\n5 f add\n9 f open\n18446744073709551615 f read 0 4096\n\
     18446744073709551615 f write 4096 4096\n7 f close\n",
    "1000 0 8 16 1\n4000 2 64 8 0\n9000 1 0 1 1\n",
    "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
     128166372003061629,wdev,0,Write,3995500544,4096,1318\n\
     128166372016382155,wdev,0,Read,3974135808,65536,1087\n",
    "259,0    0        1     0.000000000  1000  Q  WS 34768 + 8 [fio]\n\
     259,0    0        2     0.000000000  1000  G  WS 34768 + 8 [fio]\n\
     259,0    0       25     0.000060000  1000  Q FWS [fio]\n\
     259,0    0       28     0.000060000  1000  Q FWFS 70312 + 8 [fio]\n\
     259,0    0       29     0.000070000  1000  Q  DS 0 + 2048 [fstrim]\n\
     259,0    0       30     0.000080000  1000  C  WS 34768 + 8 [0]\n\
     CPU0 (259,0):\n Reads Queued:           0,        0KiB\n",
    "0,R,126703644672,4096,1577808000000626\n0,W,4096,8192,1577808000000900\n",
    "Timestamp,Offset,Size,IOType,VolumeID\n1538323200,2048,16,1,1283\n1538323201,0,8,0,7\n",
];

const PIECES: &[&str] = &[
    "0",
    "1",
    "-1",
    " ",
    ",",
    "+",
    ".",
    "\n",
    "18446744073709551615",
    "99999999999999999999",
    "0.9999999999",
    "Q",
    "F",
    "FF",
    "N",
    "D",
    "read",
    "write",
    "wait",
    "sync",
    "Read",
    "x",
    "\u{fffd}",
    "1e9",
    "CPU",
    "Total",
];

fn mutate(r: &mut Rng, seed: &str) -> Vec<u8> {
    let mut b = seed.as_bytes().to_vec();
    for _ in 0..1 + r.below(2) {
        let at = r.below(b.len() + 1);
        match r.below(5) {
            0 if !b.is_empty() => {
                let end = (at + 1 + r.below(8)).min(b.len());
                b.drain(at.min(b.len())..end.max(at.min(b.len())));
            }
            1 => {
                let p = PIECES[r.below(PIECES.len())].as_bytes();
                b.splice(at..at, p.iter().copied());
            }
            2 if at < b.len() => b[at] = r.next() as u8,
            3 => {
                let other = SEEDS[r.below(SEEDS.len())].as_bytes();
                let from = r.below(other.len());
                let end = (from + r.below(80)).min(other.len());
                b.splice(at..at, other[from..end].iter().copied());
            }
            _ => {
                let p = PIECES[r.below(PIECES.len())].as_bytes();
                let end = (at + p.len()).min(b.len());
                b.splice(at..end, p.iter().copied());
            }
        }
    }
    b
}

/// Every record of `rd`: at most `max` (one per line or per 48-byte record), none an I/O of
/// length 0.
fn read_all(rd: &mut IologReader, max: usize) -> Result<usize, String> {
    let mut n = 0;
    while let Some(io) = rd.next_io()? {
        n += 1;
        assert!(n <= max, "more records than the trace holds");
        if let ReplayOp::Io(u) = io.op {
            assert!(u.len > 0, "an I/O of length 0");
        }
    }
    Ok(n)
}

#[test]
fn mutated_traces_end_in_an_error_or_the_end_never_a_panic() {
    let mut r = Rng::seeded(0x5eed_1010);
    let (mut errors, mut ended) = (0, 0);
    for case in 0..20_000 {
        let seed = SEEDS[case % SEEDS.len()];
        let input = mutate(&mut r, seed);
        let lines = input.iter().filter(|&&c| c == b'\n').count() + 1;
        let opts = ReplayOpts {
            no_stall: r.below(2) == 0,
            time_scale_pct: [1, 100, 250, 10_000][r.below(4)],
            scale: [1, 3, 4096][r.below(3)],
            align: [1, 512, 4096][r.below(3)],
            skip: r.below(16) as u8,
            skip_bad: r.below(4) == 0,
            format: None,
            device: None,
        };
        let res = catch_unwind(AssertUnwindSafe(|| -> Result<usize, String> {
            let mut rd =
                IologReader::from_reader("t", Box::new(std::io::Cursor::new(input.clone())), opts)?;
            read_all(&mut rd, lines)
        }));
        match res {
            Ok(Ok(_)) => ended += 1,
            Ok(Err(e)) => {
                assert!(e.starts_with("t:"), "unlocated error {e:?}");
                errors += 1;
            }
            Err(_) => panic!(
                "case {case} panicked on {:?}",
                String::from_utf8_lossy(&input)
            ),
        }
    }
    // Both outcomes are reached: the mutations neither always break nor never break a trace.
    eprintln!("{errors} errors, {ended} ended");
    assert!(
        errors > 1000 && ended > 1000,
        "{errors} errors, {ended} ended"
    );
}

/// The same for blktrace binary files: a real capture (crates/blksim/tests/data/blktrace)
/// with bytes flipped, cut and spliced, in either byte order's magic.
#[test]
fn mutated_blktrace_files_end_in_an_error_or_the_end_never_a_panic() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../blksim/tests/data/blktrace/loop0.bin.dump"
    );
    let seed = std::fs::read(path).unwrap();
    let mut r = Rng::seeded(0xb1c7_7ace);
    let (mut errors, mut ended) = (0, 0);
    for case in 0..3000 {
        let mut b = seed.clone();
        for _ in 0..1 + r.below(3) {
            let at = r.below(b.len());
            match r.below(4) {
                0 => b[at] = r.next() as u8,
                1 => b.truncate(at),
                2 => {
                    // A field of a record made extreme: time, sector, bytes, action, pdu_len.
                    let rec = at / 48 * 48;
                    let off = [8, 16, 24, 28, 46][r.below(5)];
                    if rec + off + 2 <= b.len() {
                        b[rec + off] = 0xff;
                        b[rec + off + 1] = 0xff;
                    }
                }
                _ => {
                    let from = r.below(seed.len());
                    let end = (from + r.below(200)).min(seed.len());
                    b.splice(at..at, seed[from..end].iter().copied());
                }
            }
            if b.is_empty() {
                break;
            }
        }
        let max = b.len() / 48 + 1;
        let opts = ReplayOpts {
            no_stall: r.below(2) == 0,
            time_scale_pct: [1, 100, 10_000][r.below(3)],
            scale: [1, 4096][r.below(2)],
            align: [1, 4096][r.below(2)],
            skip: r.below(16) as u8,
            skip_bad: r.below(4) == 0,
            format: None,
            device: None,
        };
        let res = catch_unwind(AssertUnwindSafe(|| -> Result<usize, String> {
            let mut rd = IologReader::from_blktrace(
                "t.bin",
                Box::new(std::io::Cursor::new(b.clone())),
                opts,
            )?;
            read_all(&mut rd, max)
        }));
        match res {
            Ok(Ok(_)) => ended += 1,
            Ok(Err(e)) => {
                assert!(e.starts_with("t.bin"), "unlocated error {e:?}");
                errors += 1;
            }
            Err(_) => panic!("case {case} panicked"),
        }
    }
    eprintln!("{errors} errors, {ended} ended");
    assert!(
        errors > 300 && ended > 300,
        "{errors} errors, {ended} ended"
    );
}
