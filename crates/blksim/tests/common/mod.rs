//! What several test files of the binary share.

use std::path::Path;
use std::process::Command;

/// The blksim binary with `args` (run in `dir` when given, with the report's wall clock
/// pinned so reports compare byte for byte), `--output-format=json` added; it must succeed.
/// Returns the JSON report.
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
