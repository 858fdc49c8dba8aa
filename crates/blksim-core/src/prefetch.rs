//! A cache prefetch hint, for where the simulator knows which cache line it will read an
//! I/O later: the integrity oracle's dense map, at a write's submission, and fio's random
//! map, the word of the offset drawn 16 draws ahead (`OFFSET_LEAD` in `blksim-workload`). It
//! changes nothing but when the line arrives. The random map's was within noise while other
//! costs dominated; with mq-deadline's lists cheaper it gave `blksim bench --workload=server`
//! 2–4 % a draw ahead, and fetched 16 ahead its bit test went from 4.0 to 2.1 % of `perf`
//! samples (16 jobs' maps of 32 KiB).

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
