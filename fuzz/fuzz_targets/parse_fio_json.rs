#![no_main]
use libfuzzer_sys::fuzz_target;

// `blksim calibrate`'s reader of fio JSON results: a run or a located error, never a panic.
fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = blksim_calibrate::fiojson::parse_run(&text, "fuzz.json");
});
