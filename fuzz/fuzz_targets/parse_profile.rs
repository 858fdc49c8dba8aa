#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(p) = blksim_sim::profile::Profile::parse(&text, "fuzz.toml") {
        if let Ok(d) = blksim_sim::setup::build_driver(&p) {
            let _ = blksim_sim::setup::build_limits(&p, &*d);
        }
    }
});
