//! Key paths of a JSON report, for comparing blksim's report shape with fio's.
//!
//! One function shared by the fuzzer (`blksim fuzz` checks every case's JSON against the key
//! set of fio's own reports) and by the live comparison with fio (`tests/live_fio.rs`, which
//! includes this file with `#[path]`), so both mean the same by "fio's key set".

use serde_json::Value;

/// Every key path of `v` under `prefix`, as `/jobs[]/read/clat_ns/percentile/<n>`: array
/// elements are `[]` (their number depends on the jobs) and numeric keys (percentiles, bins)
/// are `<n>` (they are values, not names). Paths may repeat; callers sort and dedup.
pub fn key_paths(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let k2 = if k.parse::<f64>().is_ok() {
                    "<n>".to_string()
                } else {
                    k.clone()
                };
                let p = format!("{prefix}/{k2}");
                out.push(p.clone());
                key_paths(x, &p, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}
