//! Option value syntax on top of blksim-core's number syntax (`blksim_core::value`: sizes,
//! times, arithmetic, shared with device profiles and `--set`): ranges, per-direction lists,
//! percentages, booleans and floats, as fio's `handle_option`.
//! All functions return `Err(String)` (the message, without location) and never panic.

use crate::spec::SizeOrPct;
pub(crate) use blksim_core::value::{parse_size, parse_time_ns, NS_PER_SEC, NS_PER_US};

/// A size that may be negative (`rw=read:-8k`).
pub(crate) fn parse_signed_size(s: &str, kb_base: u32) -> Result<i64, String> {
    let t = s.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let v = parse_size(body, kb_base)?;
    let v = i64::try_from(v).map_err(|_| format!("size '{t}' is too large"))?;
    Ok(if neg { -v } else { v })
}

/// `12.5` → 12_500 (percent × 1000); at most 3 decimals are kept.
pub(crate) fn parse_pct_milli(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let bad = || format!("invalid percentage '{t}%'");
    let (int_part, frac_part) = match t.split_once('.') {
        Some((i, f)) => (i, f),
        None => (t, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(bad());
    }
    if !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let ip: u64 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().map_err(|_| bad())?
    };
    let mut frac = 0u64;
    let mut scale = 100u64;
    for b in frac_part.bytes().take(3) {
        frac += u64::from(b - b'0') * scale;
        scale /= 10;
    }
    ip.checked_mul(1000)
        .and_then(|v| v.checked_add(frac))
        .ok_or_else(bad)
}

/// `size`/`offset`: bytes or `N%` (fio `str_size_cb`/`str_offset_cb` via `parse_is_percent`).
/// Percentages must be in (0, 100].
pub(crate) fn parse_size_or_pct(s: &str, kb_base: u32) -> Result<SizeOrPct, String> {
    let t = s.trim();
    if let Some(p) = t.strip_suffix('%') {
        let v = parse_pct_milli(p)?;
        if v == 0 || v > 100_000 {
            return Err(format!(
                "percentage '{t}' out of range (must be more than 0% and at most 100%)"
            ));
        }
        Ok(SizeOrPct::PctMilli(v))
    } else {
        parse_size(t, kb_base).map(SizeOrPct::Bytes)
    }
}

/// An unsigned integer with fio's size suffixes (fio parses `FIO_OPT_INT` with
/// `check_str_bytes`, so `iodepth=1k` is 1024), bounded by `max`.
pub(crate) fn parse_uint(s: &str, kb_base: u32, max: u64) -> Result<u64, String> {
    let t = s.trim();
    let v = parse_size(t, kb_base).map_err(|e| {
        if e.starts_with("invalid size") {
            format!("invalid number '{t}'")
        } else {
            e
        }
    })?;
    if v > max {
        return Err(format!("value {v} out of range (max {max})"));
    }
    Ok(v)
}

/// Boolean: 0 or 1 (fio `check_int` then the `FIO_OPT_BOOL` 0..1 range).
pub(crate) fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        t => match parse_size(t, 1024) {
            Ok(0) => Ok(false),
            Ok(1) => Ok(true),
            _ => Err(format!("invalid boolean '{t}' (expected 0 or 1)")),
        },
    }
}

/// A finite floating-point number (`1.2`, `99.99`).
pub(crate) fn parse_float(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let ok = !t.is_empty()
        && t.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    match t.parse::<f64>() {
        Ok(v) if ok && v.is_finite() => Ok(v),
        _ => Err(format!("invalid number '{t}'")),
    }
}

/// Split a range `lo-hi` or `lo:hi` (fio `FIO_OPT_RANGE`); a single value is `lo == hi`. The
/// separator is the first `-` or `:` outside parentheses. Low > high is swapped, as fio does.
pub(crate) fn parse_range<T: PartialOrd + Copy>(
    s: &str,
    mut one: impl FnMut(&str) -> Result<T, String>,
) -> Result<(T, T), String> {
    let t = s.trim();
    let mut depth = 0i32;
    let mut sep = None;
    for (i, c) in t.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '-' | ':' if depth == 0 && i > 0 => {
                sep = Some(i);
                break;
            }
            _ => {}
        }
    }
    match sep {
        None => {
            let v = one(t)?;
            Ok((v, v))
        }
        Some(i) => {
            let lo = one(&t[..i])?;
            let hi = one(&t[i + 1..])?;
            Ok(if lo > hi { (hi, lo) } else { (lo, hi) })
        }
    }
}

/// Per-direction list `read,write,trim` (fio `handle_option` and `str_split_parse`):
/// "a value not terminated in a comma applies to subsequent types". `8k,32k` sets write and
/// trim to 32k; `8k,32k,` leaves trim alone; `,8k` leaves read alone. Returns the trimmed value
/// for each direction, None = leave that direction unchanged.
pub(crate) fn split_ddir(s: &str) -> Result<[Option<&str>; 3], String> {
    let mut parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let terminated = parts.len() > 1 && parts.last().is_some_and(|p| p.is_empty());
    if terminated {
        parts.pop();
    }
    if parts.len() > 3 {
        return Err(format!(
            "too many comma-separated values in '{}' (at most 3: read,write,trim)",
            s.trim()
        ));
    }
    let mut out: [Option<&str>; 3] = [None; 3];
    for (i, slot) in out.iter_mut().enumerate() {
        let p = if i < parts.len() {
            parts[i]
        } else if terminated {
            ""
        } else {
            parts[parts.len() - 1]
        };
        if !p.is_empty() {
            *slot = Some(p);
        }
    }
    if out.iter().all(Option::is_none) {
        return Err("missing value".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent() {
        assert_eq!(
            parse_size_or_pct("50%", 1024),
            Ok(SizeOrPct::PctMilli(50_000))
        );
        assert_eq!(
            parse_size_or_pct("12.5%", 1024),
            Ok(SizeOrPct::PctMilli(12_500))
        );
        assert_eq!(
            parse_size_or_pct("100%", 1024),
            Ok(SizeOrPct::PctMilli(100_000))
        );
        assert_eq!(parse_size_or_pct("1g", 1024), Ok(SizeOrPct::Bytes(1 << 30)));
        assert!(parse_size_or_pct("0%", 1024).is_err());
        assert!(parse_size_or_pct("101%", 1024).is_err());
        assert!(parse_size_or_pct("x%", 1024).is_err());
    }

    #[test]
    fn ranges_and_lists() {
        let sz = |v: &str| parse_size(v, 1024);
        assert_eq!(parse_range("1k-4k", sz), Ok((1024, 4096)));
        assert_eq!(parse_range("1k:4k", sz), Ok((1024, 4096)));
        assert_eq!(parse_range("4k-1k", sz), Ok((1024, 4096)));
        assert_eq!(parse_range("4k", sz), Ok((4096, 4096)));
        assert_eq!(split_ddir("8k"), Ok([Some("8k"), Some("8k"), Some("8k")]));
        assert_eq!(
            split_ddir("8k,32k"),
            Ok([Some("8k"), Some("32k"), Some("32k")])
        );
        assert_eq!(split_ddir("8k,32k,"), Ok([Some("8k"), Some("32k"), None]));
        assert_eq!(split_ddir(",8k"), Ok([None, Some("8k"), Some("8k")]));
        assert_eq!(split_ddir("8k,"), Ok([Some("8k"), None, None]));
        assert_eq!(split_ddir("1,2,3"), Ok([Some("1"), Some("2"), Some("3")]));
        assert_eq!(split_ddir("1,,3"), Ok([Some("1"), None, Some("3")]));
        assert!(split_ddir("1,2,3,4").is_err());
        assert!(split_ddir(",").is_err());
    }
}
