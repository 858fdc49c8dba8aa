//! `calc_clat_percentiles` compares `sum >= (long double) p / 100.0 * nr`. These cases
//! were produced by gcc on x86-64 (80-bit long double); 39 of them differ from plain f64
//! arithmetic (e.g. the 30th percentile of 100 samples needs 31, not 30).
use blksim_report::hist::threshold_reached;

#[test]
fn matches_gcc_long_double() {
    let text = include_str!("data/long_double_thresholds.txt");
    let mut n = 0;
    for line in text.lines().filter(|l| l.starts_with('(')) {
        let f: Vec<&str> = line
            .trim_matches(|c| c == '(' || c == ')' || c == ',')
            .split(", ")
            .collect();
        let p: f64 = f[0].parse().unwrap();
        let nr: u64 = f[1].parse().unwrap();
        let s: u64 = f[2].parse().unwrap();
        assert!(threshold_reached(s, p, nr), "{p} {nr} {s}");
        if s > 0 {
            assert!(!threshold_reached(s - 1, p, nr), "{p} {nr} {}", s - 1);
        }
        n += 1;
    }
    assert_eq!(n, 819);
}
