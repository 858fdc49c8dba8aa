//! A cache prefetch hint, for where the simulator knows which cache line it will read an
//! I/O later (the integrity oracle's dense map, at a write's submission): it changes nothing
//! but when the line arrives. fio's random map was tried too (the next draw's word, an I/O
//! ahead): within noise on `blksim bench --workload=server` and `null`, so not kept.

/// Ask the CPU to bring `v`'s cache line into its caches now. No effect on other targets.
#[inline(always)]
pub fn prefetch<T>(v: &T) {
    // SAFETY: a prefetch is a hint that reads nothing and cannot fault; SSE, which it
    // needs, is part of every x86_64 CPU.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (v as *const T).cast(),
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}
