//! The parameters a calibration fits and the space the optimiser moves in: each parameter's
//! range mapped onto [0, 1], logarithmically when the range starts above zero (a time of
//! 10 µs and one of 1 ms are equally plausible guesses; a step of 10 µs is not the same at
//! both), linearly from zero otherwise.

use blksim_core::ParamDef;
use blksim_sim::Profile;

/// Default range around the base value: a factor of 8 either way. Wide enough for a card of
/// another generation (t_PROG 200 µs … 1.6 ms around 400 µs), narrow enough that every
/// simulated point is a plausible device.
pub const DEFAULT_SPAN: u64 = 8;

/// Default upper end for a time parameter whose base value is 0: 1 ms.
pub const ZERO_BASE_TIME_MAX_NS: u64 = 1_000_000;

/// One fitted parameter.
#[derive(Clone, Debug)]
pub struct FitParam {
    /// The profile key (`card.t_prog_ns`).
    pub key: String,
    pub def: &'static ParamDef,
    /// The base profile's value (its table default when the profile does not set it).
    pub base: u64,
    /// Search range, inclusive, in the parameter's unit.
    pub lo: u64,
    pub hi: u64,
}

impl FitParam {
    fn log_scale(&self) -> bool {
        self.lo > 0
    }

    /// The value at position `u` (clamped to [0, 1]) of the range, a whole number of units.
    pub fn value(&self, u: f64) -> u64 {
        let u = if u.is_finite() {
            u.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let (lo, hi) = (self.lo as f64, self.hi as f64);
        let v = if self.log_scale() {
            lo * (hi / lo).powf(u)
        } else {
            lo + u * (hi - lo)
        };
        (v.round() as u64).clamp(self.lo, self.hi)
    }

    /// The position of `v` in the range.
    pub fn pos(&self, v: u64) -> f64 {
        if self.hi == self.lo {
            return 0.0;
        }
        let v = v.clamp(self.lo, self.hi) as f64;
        let (lo, hi) = (self.lo as f64, self.hi as f64);
        if self.log_scale() {
            (v / lo).ln() / (hi / lo).ln()
        } else {
            (v - lo) / (hi - lo)
        }
    }

    /// `--set` text of a value.
    pub fn set_arg(&self, v: u64) -> String {
        format!("{}={v}", self.key)
    }
}

/// The parameters `specs` name (`KEY` or `KEY=LO..HI`, the bounds in the parameter's unit or
/// with its suffixes: `card.t_prog_ns=200us..2ms`), on `profile`.
pub fn fit_params(profile: &Profile, specs: &[String]) -> Result<Vec<FitParam>, String> {
    let mut out: Vec<FitParam> = Vec::new();
    for spec in specs {
        let (key, range) = match spec.split_once('=') {
            Some((k, r)) => (k.trim(), Some(r.trim())),
            None => (spec.trim(), None),
        };
        let def = blksim_sim::params::find_param(&profile.driver, key).ok_or_else(|| {
            let known: Vec<String> = blksim_sim::params::keys(&profile.driver).collect();
            let hint = blksim_sim::profile::nearest(key, known.iter().map(String::as_str))
                .map(|s| format!(" (did you mean '{s}'?)"))
                .unwrap_or_default();
            format!(
                "--fit={spec}: '{key}' is not a parameter of a {} profile{hint}",
                profile.driver
            )
        })?;
        if !def.is_numeric() {
            return Err(format!(
                "--fit={spec}: '{key}' is a choice ({}), not a number; set it with --set",
                def.bounds_text()
            ));
        }
        if out.iter().any(|p| p.key == key) {
            return Err(format!("--fit={spec}: '{key}' is named twice"));
        }
        let text = profile.get(key).unwrap_or_else(|| def.default.to_string());
        let base = def
            .parse_u64(&text)
            .map_err(|e| format!("{}: {key}: {e}", profile.origin(key)))?;
        let (lo, hi) = match range {
            Some(r) => {
                let (a, b) = r.split_once("..").ok_or_else(|| {
                    format!(
                        "--fit={spec}: expected KEY or KEY=LO..HI (e.g. {key}={}..{})",
                        def.min, def.max
                    )
                })?;
                let a = def.parse_u64(a).map_err(|e| format!("--fit={spec}: {e}"))?;
                let b = def.parse_u64(b).map_err(|e| format!("--fit={spec}: {e}"))?;
                if a >= b {
                    return Err(format!(
                        "--fit={spec}: the range's low end must be below its high end"
                    ));
                }
                (a, b)
            }
            None if base == 0 => {
                if !matches!(def.unit, "ns" | "us" | "ms") {
                    return Err(format!(
                        "--fit={spec}: the base value of '{key}' is 0, so there is no range around it; give one: --fit={key}=LO..HI (bounds {})",
                        def.bounds_text()
                    ));
                }
                let per_ns = match def.unit {
                    "us" => 1_000,
                    "ms" => 1_000_000,
                    _ => 1,
                };
                (
                    def.min,
                    (ZERO_BASE_TIME_MAX_NS / per_ns).clamp(def.min + 1, def.max),
                )
            }
            None => (
                (base / DEFAULT_SPAN).max(def.min).max(1),
                base.saturating_mul(DEFAULT_SPAN).min(def.max),
            ),
        };
        if lo < def.min || hi > def.max || lo >= hi {
            return Err(format!(
                "--fit={spec}: the range {lo}..{hi} {} leaves the parameter's bounds {}",
                def.unit,
                def.bounds_text()
            ));
        }
        out.push(FitParam {
            key: key.to_string(),
            def,
            base,
            lo,
            hi,
        });
    }
    if out.is_empty() {
        return Err("nothing to fit: --fit names no parameter".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_values_round_trip() {
        let p = Profile::load("emmc-hbg4a2").unwrap();
        let f = fit_params(
            &p,
            &["card.t_prog_ns".into(), "card.t_r_ns=0..200us".into()],
        )
        .unwrap();
        assert_eq!((f[0].base, f[0].lo, f[0].hi), (850_000, 106_250, 6_800_000));
        assert_eq!(f[0].value(f[0].pos(850_000)), 850_000);
        assert_eq!(
            (f[0].value(0.0), f[0].value(1.0), f[0].value(7.0)),
            (106_250, 6_800_000, 6_800_000)
        );
        // Logarithmic: the middle of 106.25 µs .. 6.8 ms is their geometric mean, 850 µs.
        assert_eq!(f[0].value(0.5), 850_000);
        assert_eq!((f[1].lo, f[1].hi, f[1].value(0.5)), (0, 200_000, 100_000));
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let p = Profile::load("emmc-hbg4a2").unwrap();
        let e = |s: &str| fit_params(&p, &[s.to_string()]).unwrap_err();
        assert!(
            e("card.t_prog").contains("did you mean 'card.t_prog_ns'"),
            "{}",
            e("card.t_prog")
        );
        assert!(e("card.ftl").contains("is a choice"));
        assert!(e("card.t_prog_ns=5..1").contains("low end"));
        let far = e("card.t_prog_ns=1..99999999999999");
        assert!(
            far.contains("card.t_prog_ns=1..99999999999999") && far.contains("60000000000"),
            "{far}"
        );
        assert!(e("card.map_cache_segs=4").contains("KEY=LO..HI"));
        assert!(e("completion_nsec").contains("not a parameter of a mmc profile"));
        let n = Profile::load("null_blk").unwrap();
        assert!(fit_params(&n, &["completion_nsec".into()]).is_ok());
    }
}
