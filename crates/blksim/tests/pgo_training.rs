//! The profile-guided build's training set (`scripts/pgo-training.txt`) stays runnable: every
//! line is a `blksim run` that succeeds, here cut short to a few hundred I/Os, so that an option
//! or profile key renamed later fails this test instead of `scripts/build-pgo.sh`.

use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

#[test]
fn every_training_run_succeeds() {
    let text = std::fs::read_to_string(format!("{ROOT}/scripts/pgo-training.txt"))
        .expect("read scripts/pgo-training.txt");
    let out = std::env::temp_dir().join(format!("blksim-pgo-training-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        n += 1;
        let line = line.replace("$OUT", out.to_str().unwrap());
        let mut args = vec!["run".to_string()];
        args.extend(line.split_whitespace().map(str::to_string));
        // After a job file these cap every job; after `--name` options, the last job (the
        // others are small).
        args.push("--number_ios=300".into());
        let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
            .args(&args)
            .current_dir(ROOT)
            .output()
            .expect("run blksim");
        assert!(
            o.status.success(),
            "training run {n} failed: blksim {}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert!(n >= 20, "only {n} training runs");
    let _ = std::fs::remove_dir_all(&out);
}
