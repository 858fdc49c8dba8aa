//! What several test files of the binary share.

use std::path::Path;
use std::process::Command;

/// A new empty directory for test `name` of this test binary: `<tag>` names the file it
/// serves, the process id keeps parallel runs apart. Under the system's temporary directory,
/// or with `target` under Cargo's (a disk-backed file system, which O_DIRECT needs).
#[allow(dead_code)]
pub fn fresh_dir(tag: &str, name: &str, target: bool) -> std::path::PathBuf {
    let base = if target {
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
    } else {
        std::env::temp_dir()
    };
    let d = base.join(format!("blksim-{tag}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The blksim binary with `args` (run in `dir` when given, with the report's wall clock
/// pinned so reports compare byte for byte), `--output-format=json` added; it must succeed.
/// Returns the JSON report.
#[allow(dead_code)]
pub fn blksim_json(dir: Option<&Path>, args: &[&str]) -> serde_json::Value {
    let mut c = Command::new(env!("CARGO_BIN_EXE_blksim"));
    if let Some(d) = dir {
        c.current_dir(d);
    }
    let o = c
        .args(args)
        .arg("--output-format=json")
        .env("BLKSIM_FAKE_TIME", "1795310737")
        .output()
        .expect("run blksim");
    assert!(
        o.status.success(),
        "blksim {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("a JSON report")
}
