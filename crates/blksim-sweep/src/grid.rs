//! The points of a sweep: grid cells (or a sample of them) times repeats, numbered in one
//! fixed order so that any subset, run in any order, gives the same rows.

use crate::spec::Spec;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// Position in the sweep's order (the `point` column).
    pub index: u64,
    /// Per axis, the index of its value.
    pub values: Vec<usize>,
    pub seed: u64,
}

impl Point {
    /// `key=value` of every axis, `;`-joined, and the seed: what the point is, whatever the
    /// order it ran in (a resumed sweep checks its journal against it).
    pub fn key(&self, spec: &Spec) -> String {
        let mut k: Vec<String> = spec
            .axes
            .iter()
            .zip(&self.values)
            .map(|(a, &v)| format!("{}={}", a.key, a.values[v]))
            .collect();
        k.push(format!("seed={}", self.seed));
        k.join(";")
    }
}

/// The value indices of grid cell `cell` (the last axis varies fastest).
fn cell_values(spec: &Spec, mut cell: u64) -> Vec<usize> {
    let mut v = vec![0; spec.axes.len()];
    for (i, a) in spec.axes.iter().enumerate().rev() {
        let n = a.values.len() as u64;
        v[i] = (cell % n) as usize;
        cell /= n;
    }
    v
}

/// Every point of the sweep, in order.
pub fn points(spec: &Spec) -> Vec<Point> {
    let cells = spec.grid_cells();
    let chosen: Vec<u64> = match spec.sample {
        Some((count, seed)) if count < cells => sample(cells, count, seed),
        _ => (0..cells).collect(),
    };
    let mut out = Vec::with_capacity(chosen.len() * spec.repeats as usize);
    for c in chosen {
        let values = cell_values(spec, c);
        for r in 0..spec.repeats {
            out.push(Point {
                index: out.len() as u64,
                values: values.clone(),
                seed: spec.seed.wrapping_add(r),
            });
        }
    }
    out
}

/// Point `index` alone, without listing the others (what a remote worker runs).
pub fn point(spec: &Spec, index: u64) -> Option<Point> {
    let cell_pos = index / spec.repeats;
    let cells = spec.grid_cells();
    let cell = match spec.sample {
        Some((count, seed)) if count < cells => {
            *sample(cells, count, seed).get(cell_pos as usize)?
        }
        _ if cell_pos < cells => cell_pos,
        _ => return None,
    };
    Some(Point {
        index,
        values: cell_values(spec, cell),
        seed: spec.seed.wrapping_add(index % spec.repeats),
    })
}

/// `count` distinct cells of `cells`, drawn by Floyd's algorithm (constant memory per draw)
/// from a seeded stream, in ascending order.
fn sample(cells: u64, count: u64, seed: u64) -> Vec<u64> {
    let mut s = seed ^ 0x5745_4550; // "SWEP"
    let mut chosen = std::collections::BTreeSet::new();
    for j in cells - count..cells {
        let t = blksim_core::rng::splitmix64(&mut s) % (j + 1);
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    chosen.into_iter().collect()
}

/// `--shard=K/N`: the points whose index is K modulo N.
pub fn shard(points: Vec<Point>, k: u64, n: u64) -> Vec<Point> {
    points.into_iter().filter(|p| p.index % n == k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn spec(extra: &str) -> Spec {
        crate::spec::parse(
            &format!("[base]\njob_text = \"[j]\\n\"\nrepeats = 2\nseed = 10\n[axes.job]\nnumjobs = [1, 2, 3]\nbs = [\"4k\", \"8k\"]\n{extra}"),
            "s.toml",
            Path::new("."),
        )
        .unwrap()
    }

    #[test]
    fn the_grid_in_order_with_repeats() {
        let s = spec("");
        let p = points(&s);
        assert_eq!(p.len(), 12);
        // Axes: bs, numjobs (name order); numjobs varies fastest, then the seed.
        assert_eq!(p[0].key(&s), "bs=4k;numjobs=1;seed=10");
        assert_eq!(p[1].key(&s), "bs=4k;numjobs=1;seed=11");
        assert_eq!(p[2].key(&s), "bs=4k;numjobs=2;seed=10");
        assert_eq!(p[11].key(&s), "bs=8k;numjobs=3;seed=11");
        let keys: std::collections::BTreeSet<String> = p.iter().map(|x| x.key(&s)).collect();
        assert_eq!(keys.len(), 12);
    }

    #[test]
    fn a_point_alone_is_the_point_of_the_list() {
        for extra in ["", "[sample]\ncount = 4\nseed = 3\n"] {
            let s = spec(extra);
            let all = points(&s);
            for p in &all {
                assert_eq!(point(&s, p.index).as_ref(), Some(p));
            }
            assert_eq!(point(&s, all.len() as u64), None);
        }
    }

    #[test]
    fn shards_cover_the_grid_exactly_once() {
        let s = spec("");
        let all = points(&s);
        let mut seen = Vec::new();
        for k in 0..5 {
            seen.extend(shard(all.clone(), k, 5).into_iter().map(|p| p.index));
        }
        seen.sort();
        assert_eq!(seen, (0..12).collect::<Vec<u64>>());
    }

    #[test]
    fn a_sample_is_distinct_cells_and_the_same_every_time() {
        let s = spec("[sample]\ncount = 4\nseed = 3\n");
        let a = points(&s);
        assert_eq!(a.len(), 8);
        assert_eq!(a, points(&s));
        let cells: std::collections::BTreeSet<Vec<usize>> =
            a.iter().map(|p| p.values.clone()).collect();
        assert_eq!(cells.len(), 4);
        // Other seeds draw other cells (15 ways to pick 4 of 6).
        let draws: std::collections::BTreeSet<Vec<Vec<usize>>> = (0..10)
            .map(|k| {
                let p = points(&spec(&format!("[sample]\ncount = 4\nseed = {k}\n")));
                p.into_iter().map(|x| x.values).collect()
            })
            .collect();
        assert!(draws.len() >= 4, "{draws:?}");
    }
}
