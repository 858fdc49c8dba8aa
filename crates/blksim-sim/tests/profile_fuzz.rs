//! The profile parser and `--set` never panic, whatever the input; errors name the file.

use blksim_sim::profile::{Profile, BUNDLED};

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

#[test]
fn mutated_profiles_never_panic_and_errors_are_located() {
    let alphabet = b"[]=\"#.\n abcdefghijklmnopqrstuvwxyz_0123456789-+tf{},";
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut parsed = 0;
    for b in BUNDLED {
        let base = b.toml.as_bytes();
        for _ in 0..400 {
            let mut bytes = base.to_vec();
            for _ in 0..(1 + xorshift(&mut x) % 6) {
                let pos = (xorshift(&mut x) % (bytes.len() as u64 + 1)) as usize;
                match xorshift(&mut x) % 3 {
                    0 if pos < bytes.len() => {
                        bytes.remove(pos);
                    }
                    1 => bytes.insert(
                        pos,
                        alphabet[(xorshift(&mut x) % alphabet.len() as u64) as usize],
                    ),
                    _ if pos < bytes.len() => {
                        bytes[pos] = alphabet[(xorshift(&mut x) % alphabet.len() as u64) as usize]
                    }
                    _ => {}
                }
            }
            let text = String::from_utf8_lossy(&bytes);
            match Profile::parse(&text, "m.toml") {
                Ok(mut p) => {
                    parsed += 1;
                    // Building the driver and limits validates every field; it must not panic.
                    let pl = blksim_sim::platform::Platform::from_profile(&p).unwrap_or_default();
                    if let Ok(d) = blksim_sim::setup::build_driver(&p, &pl) {
                        let _ = blksim_sim::setup::build_limits(&p, &*d);
                    }
                    let _ = p.set("queue.nr_requests=abc");
                }
                Err(e) => assert!(e.starts_with("m.toml"), "unlocated error: {e}"),
            }
        }
    }
    assert!(
        parsed > 100,
        "mutations too destructive to test the builders ({parsed})"
    );
}

#[test]
fn set_rejects_malformed_and_unknown_tables() {
    let mut p = Profile::load("null_blk").unwrap();
    for bad in ["", "=", "x", "=1", "bogus.table=1", "queue"] {
        assert!(p.set(bad).is_err(), "{bad:?} accepted");
    }
    p.set("queue.iosched.fifo_batch=4").unwrap();
}

#[test]
fn kblockd_tail_is_parsed_and_bounded() {
    use blksim_sim::platform::Platform;
    let p = Profile::load("emmc-allwinner").unwrap();
    let pl = Platform::from_profile(&p).unwrap();
    assert_eq!((pl.kblockd_tail_ppm, pl.kblockd_tail_ns), (1000, 200_000));
    let mut p = Profile::load("null_blk").unwrap();
    assert_eq!(Platform::from_profile(&p).unwrap().kblockd_tail_ppm, 0);
    p.set("platform.kblockd_tail_ppm=1000001").unwrap();
    let e = Platform::from_profile(&p).unwrap_err();
    assert!(
        e.contains("platform.kblockd_tail_ppm") && e.contains("0..=1000000 ppm"),
        "{e}"
    );
    // Latencies are bounded, so virtual time cannot overflow.
    let mut q = Profile::load("null_blk").unwrap();
    q.set(&format!("platform.kblockd_tail_ns={}", u64::MAX))
        .unwrap();
    let e2 = Platform::from_profile(&q).unwrap_err();
    assert!(e2.contains("platform.kblockd_tail_ns"), "{e2}");
}
