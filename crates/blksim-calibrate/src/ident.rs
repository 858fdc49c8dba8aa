//! Which fitted parameters the runs determine, from the Jacobian of the residuals at the fit.
//!
//! Near the optimum the loss is `L(u* + δ) ≈ L* + δᵀ A δ` with `A = JᵀJ / n` (J: the
//! derivative of each figure's relative error by each parameter's position, n figures).
//! A unit direction `v` of `A` with eigenvalue λ changes the loss by `0.01 λ` over a tenth of
//! the range: when that is below [`crate::IDENTIFIED_DLOSS`] the runs cannot tell the points
//! along `v` apart, and the parameters that make up `v` are not identified (one parameter
//! alone the runs ignore, or several that trade off against each other, like a firmware time
//! and a sense time that only appear as their sum). With fewer figures than parameters there
//! is always such a direction.

use crate::fit::{rel_err, Problem};
use crate::IDENTIFIED_DLOSS;

/// Step of the central differences, as a fraction of each range: wide enough that whole-unit
/// rounding of the values does not dominate.
pub const STEP: f64 = 0.1;

/// A parameter takes part in a weak direction when its share of the unit vector is at least
/// this (|v_k| ≥ 0.4, 16 % of the squared length).
pub const SHARE: f64 = 0.4;

pub struct Identifiability {
    /// Per parameter: how much the loss grows when it alone moves a tenth of its range (the
    /// larger of the two sides).
    pub dloss: Vec<f64>,
    /// The eigen-directions of `A` along which the loss barely changes: (loss change over a
    /// tenth of the range, unit vector over the parameters).
    pub weak: Vec<(f64, Vec<f64>)>,
}

impl Identifiability {
    /// Whether parameter `k` takes part in a weak direction.
    pub fn unidentified(&self, k: usize) -> bool {
        self.weak.iter().any(|(_, v)| v[k].abs() >= SHARE)
    }
}

/// Relative errors of every figure of `runs` at positions `u`.
fn residuals(p: &Problem, u: &[f64], runs: &[usize]) -> Result<Vec<f64>, String> {
    let values = p.values(u);
    let mut r = Vec::new();
    for &i in runs {
        let sim = p.simulate(&values, i)?;
        for (m, s) in p.runs[i].measured.iter().zip(sim) {
            r.push(rel_err(s, m.value));
        }
    }
    Ok(r)
}

pub fn analyse(p: &Problem, u: &[f64], runs: &[usize]) -> Result<Identifiability, String> {
    let r0 = residuals(p, u, runs)?;
    let n = r0.len().max(1) as f64;
    let loss = |r: &[f64]| r.iter().map(|x| x * x).sum::<f64>() / n;
    let l0 = loss(&r0);
    let k = u.len();
    let mut jac = vec![vec![0.0; k]; r0.len()];
    let mut dloss = vec![0.0f64; k];
    for c in 0..k {
        let (mut up, mut dn) = (u.to_vec(), u.to_vec());
        up[c] = (u[c] + STEP).min(1.0);
        dn[c] = (u[c] - STEP).max(0.0);
        let ru = residuals(p, &up, runs)?;
        let rd = residuals(p, &dn, runs)?;
        dloss[c] = (loss(&ru) - l0).max(loss(&rd) - l0).max(0.0);
        let h = up[c] - dn[c];
        for (row, (a, b)) in jac.iter_mut().zip(ru.iter().zip(&rd)) {
            row[c] = (a - b) / h;
        }
    }
    let mut a = vec![vec![0.0; k]; k];
    for row in &jac {
        for i in 0..k {
            for j in 0..k {
                a[i][j] += row[i] * row[j] / n;
            }
        }
    }
    let (vals, vecs) = jacobi_eigen(a);
    let mut weak = Vec::new();
    for (e, lambda) in vals.iter().enumerate() {
        let change = STEP * STEP * lambda.max(0.0);
        if change < IDENTIFIED_DLOSS {
            let mut v: Vec<f64> = (0..k).map(|i| vecs[i][e]).collect();
            // Sign fixed so the largest component is positive: the same direction prints the
            // same way every time.
            let big = v
                .iter()
                .copied()
                .fold(0.0f64, |m, x| if x.abs() > m.abs() { x } else { m });
            if big < 0.0 {
                v.iter_mut().for_each(|x| *x = -*x);
            }
            weak.push((change, v));
        }
    }
    weak.sort_by(|x, y| x.0.total_cmp(&y.0));
    Ok(Identifiability { dloss, weak })
}

/// Eigenvalues and eigenvectors (columns) of a symmetric matrix by cyclic Jacobi rotations:
/// exact to rounding for the few parameters a fit has, and deterministic.
pub fn jacobi_eigen(mut a: Vec<Vec<f64>>) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = a.len();
    let mut v = vec![vec![0.0; n]; n];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        let scale: f64 = (0..n).map(|i| a[i][i] * a[i][i]).sum::<f64>().max(1e-300);
        if off <= 1e-24 * scale {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if a[p][q] == 0.0 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for row in a.iter_mut() {
                    let (akp, akq) = (row[p], row[q]);
                    row[p] = c * akp - s * akq;
                    row[q] = s * akp + c * akq;
                }
                let (lo, hi) = a.split_at_mut(q);
                for (x, y) in lo[p].iter_mut().zip(hi[0].iter_mut()) {
                    let (apk, aqk) = (*x, *y);
                    *x = c * apk - s * aqk;
                    *y = s * apk + c * aqk;
                }
                for row in v.iter_mut() {
                    let (vkp, vkq) = (row[p], row[q]);
                    row[p] = c * vkp - s * vkq;
                    row[q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i][i]).collect(), v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_finds_the_eigenpairs() {
        // [[2, 1], [1, 2]]: eigenvalues 1 and 3, vectors (1, -1)/√2 and (1, 1)/√2.
        let (vals, vecs) = jacobi_eigen(vec![vec![2.0, 1.0], vec![1.0, 2.0]]);
        let mut pairs: Vec<(f64, f64, f64)> =
            (0..2).map(|e| (vals[e], vecs[0][e], vecs[1][e])).collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!((pairs[0].0 - 1.0).abs() < 1e-12 && (pairs[1].0 - 3.0).abs() < 1e-12);
        assert!((pairs[0].1 + pairs[0].2).abs() < 1e-12, "{pairs:?}");
        assert!((pairs[1].1 - pairs[1].2).abs() < 1e-12, "{pairs:?}");
        // A rank-one matrix (two parameters that only appear as their sum): one zero
        // eigenvalue along (1, -1).
        let (vals, vecs) = jacobi_eigen(vec![vec![1.0, 1.0], vec![1.0, 1.0]]);
        let zero = (0..2).find(|&e| vals[e].abs() < 1e-12).unwrap();
        assert!((vecs[0][zero] + vecs[1][zero]).abs() < 1e-12);
    }
}
