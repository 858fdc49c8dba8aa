#![no_main]
use libfuzzer_sys::fuzz_target;

// `blksim sweep`'s reader: a sweep within its bounds whose points can be listed, or a
// located error, never a panic.
fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(s) = blksim_sweep::spec::parse(&text, "fuzz.toml", std::path::Path::new("/nonexistent")) {
        let _ = blksim_sweep::grid::points(&s);
    }
});
