//! `blksim probe` end to end: on a simulated card it finds the geometry and saves fio JSON
//! results `blksim calibrate` reads back; on a real file it reads only, unless told to write.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

fn tmpdir(name: &str) -> PathBuf {
    // On the target directory's file system: O_DIRECT needs a disk-backed one.
    common::fresh_dir("probe-cli", name, true)
}

fn blksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn results(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn a_simulated_card_gives_its_geometry_and_calibration_inputs() {
    let d = tmpdir("sim");
    let text = ok(blksim(&[
        "probe",
        "sim:emmc-512k-2009",
        "--write",
        "--no-calibrate",
        &format!("--results={}", d.display()),
    ]));
    assert!(text.contains("-> 1 open unit(s)"), "{text}");
    assert!(text.contains("-> allocation unit 512 KiB"), "{text}");
    let files = results(&d);
    assert_eq!(files.len(), 12, "{files:?}");
    for f in files {
        let r = blksim_calibrate::fiojson::read_run(&f).unwrap();
        let name = f.file_stem().unwrap().to_str().unwrap();
        let j = &r.jobs.jobs[0];
        assert_eq!(j.name, name);
        // randread-4k-qd16: the options rebuild the point.
        let qd: u32 = name.rsplit("qd").next().unwrap().parse().unwrap();
        assert_eq!(j.iodepth, qd, "{name}");
        let kib: u64 = name
            .split('-')
            .nth(1)
            .unwrap()
            .trim_end_matches('k')
            .parse()
            .unwrap();
        assert_eq!(j.bs[0].min.max(j.bs[1].min), kib * 1024, "{name}");
        assert!(j.direct && j.time_based && j.norandommap, "{name}");
        assert_eq!(r.measured.len(), 3, "{name}: IOPS, mean and p99");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_real_file_is_only_read_without_write() {
    let d = tmpdir("file");
    let f = d.join("data");
    // 32 MiB of non-repeating bytes.
    let mut s = 1u64;
    let bytes: Vec<u8> = (0..32 << 20)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 56) as u8
        })
        .collect();
    std::fs::write(&f, &bytes).unwrap();
    let res = d.join("res");
    let text = ok(blksim(&[
        "probe",
        f.to_str().unwrap(),
        "--time=2",
        "--no-calibrate",
        &format!("--results={}", res.display()),
    ]));
    assert!(text.contains("randread-4k-qd64"), "{text}");
    assert!(!text.contains("open allocation units"), "{text}");
    assert_eq!(
        std::fs::read(&f).unwrap(),
        bytes,
        "the probe changed the file"
    );
    assert_eq!(results(&res).len(), 9);
    // A path that does not exist is created only with a size to create.
    let e = blksim(&["probe", "/nonexistent-dir/x", "--write"]);
    assert!(!e.status.success());
    assert!(String::from_utf8_lossy(&e.stderr).contains("give --size=N"));
    let _ = std::fs::remove_dir_all(&d);
}
