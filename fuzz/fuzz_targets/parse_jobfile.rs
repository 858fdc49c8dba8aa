#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = blksim_job::jobfile::parse_job_str(&text, "fuzz.fio", &|_| None);
});
