//! The one value syntax every number in blksim is written in: job options, device profiles
//! and `--set` alike. Sizes take fio's `kb_base` suffix rules, times take a unit (`20us`,
//! `1.5s`, a bare number in the quantity's own unit), and a value that starts with `(` is
//! fio's arithmetic.
//!
//! Follows fio's `parse.c` (`str_to_decimal`, `__get_mult_bytes`, `get_mult_time`) with two
//! deliberate differences: fio's `strtoll` silently ignores trailing garbage (`bs=4q` is 4
//! bytes, `size=1.5g` is 1 byte), where we reject it with a message; and `ns`/`nsec` are
//! accepted as a time unit (fio's clock is microseconds, blksim's nanoseconds). All functions
//! return `Err(String)` (the message, without location) and never panic.

pub const SIZE_HINT: &str = "expected a number with an optional k/m/g/t/p suffix";
pub const TIME_HINT: &str = "expected a number with an optional d/h/m/s/ms/us/ns suffix";

/// Nanoseconds per unit.
pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// Nesting limit for `(...)` and unary signs, so hostile input can't overflow the stack.
const MAX_EXPR_DEPTH: usize = 64;

/// Multiplier of a size suffix (`""`, `b`, `k`, `kb`, `ki`, `kib`, ... `p`), or None.
///
/// fio (`__get_mult_bytes`): with `kb_base=1024` (the default) `k/m/g/t/p` are powers of 1024
/// and the IEC spellings are powers of 1000, "opposite from the standards to provide
/// compatibility with old scripts"; `kb_base=1000` swaps them. fio's code matches only the
/// three-letter `kib` (a bare `ki` falls through to `k`); we follow fio's HOWTO ("Parameter
/// types", int), which lists `Ki`, `Mi`, ... as the IEC prefixes, so `ki` counts like `kib`.
pub fn size_suffix_mult(suffix: &str, kb_base: u32) -> Option<u64> {
    let s = suffix.to_ascii_lowercase();
    if s.is_empty() || s == "b" {
        return Some(1);
    }
    let pow = match s.as_bytes()[0] {
        b'k' => 1,
        b'm' => 2,
        b'g' => 3,
        b't' => 4,
        b'p' => 5,
        _ => return None,
    };
    let (base, other) = if kb_base == 1000 {
        (1000u64, 1024u64)
    } else {
        (1024u64, 1000u64)
    };
    // The first byte is ASCII, so slicing after it is on a char boundary.
    let mult = match &s[1..] {
        "" | "b" => base,
        "i" | "ib" => other,
        _ => return None,
    };
    mult.checked_pow(pow)
}

/// Nanoseconds per time unit (fio `get_mult_time`: `us`/`usec`, `ms`/`msec`, `s`, `m`, `h`,
/// `d`, case-insensitive; plus `ns`/`nsec`). `""` is the option's default unit.
pub fn time_unit_ns(unit: &str, default_ns: u64) -> Option<u64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "" => default_ns,
        "ns" | "nsec" => 1,
        "us" | "usec" => NS_PER_US,
        "ms" | "msec" => NS_PER_MS,
        "s" => NS_PER_SEC,
        "m" => 60 * NS_PER_SEC,
        "h" => 3_600 * NS_PER_SEC,
        "d" => 86_400 * NS_PER_SEC,
        _ => return None,
    })
}

/// Leading unsigned integer, decimal or `0x` hex, and the rest. None if there are no digits or
/// the number doesn't fit in u64.
fn split_uint(s: &str) -> Option<(u64, &str)> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
        if end == 0 {
            return None;
        }
        let v = u64::from_str_radix(&h[..end], 16).ok()?;
        Some((v, &h[end..]))
    } else {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        if end == 0 {
            return None;
        }
        let v = s[..end].parse::<u64>().ok()?;
        Some((v, &s[end..]))
    }
}

/// A size in bytes: `4096`, `4k`, `4KiB`, `1gb`, `0x1000`, `(4*1024)`.
pub fn parse_size(s: &str, kb_base: u32) -> Result<u64, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("missing value".into());
    }
    if s.starts_with('(') {
        return eval_expr(s, Unit::Size(kb_base))
            .map_err(|e| format!("invalid expression '{s}': {e}"));
    }
    let bad = || format!("invalid size '{s}' ({SIZE_HINT})");
    let (n, suffix) = split_uint(s).ok_or_else(bad)?;
    let mult = size_suffix_mult(suffix, kb_base).ok_or_else(bad)?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size '{s}' is too large"))
}

/// A time in nanoseconds; a bare number is in `default_ns` units (seconds for `runtime`,
/// microseconds for `thinktime`). A decimal fraction is allowed (`1.5s`).
pub fn parse_time_ns(s: &str, default_ns: u64) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("missing value".into());
    }
    if t.starts_with('(') {
        return eval_expr(t, Unit::Time(default_ns))
            .map_err(|e| format!("invalid expression '{t}': {e}"));
    }
    let bad = || format!("invalid time '{t}' ({TIME_HINT})");
    let num_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(num_end);
    let unit_ns = time_unit_ns(unit, default_ns).ok_or_else(bad)?;
    let (ip, fp) = num.split_once('.').unwrap_or((num, ""));
    if ip.is_empty() && fp.is_empty() || fp.contains('.') {
        return Err(bad());
    }
    let ipv: u64 = if ip.is_empty() {
        0
    } else {
        ip.parse().map_err(|_| bad())?
    };
    let too_big = || format!("time '{t}' is too large");
    let mut total = ipv.checked_mul(unit_ns).ok_or_else(too_big)?;
    // Fraction: digits × unit / 10^len, computed digit by digit to stay in integers.
    let mut scale = unit_ns;
    for b in fp.bytes() {
        scale /= 10;
        if scale == 0 {
            break;
        }
        total = total
            .checked_add(u64::from(b - b'0') * scale)
            .ok_or_else(too_big)?;
    }
    Ok(total)
}

// ---------------------------------------------------------------------------------------------
// Arithmetic: fio's `evaluate_arithmetic_expression` (exp/expression-parser.y), only for values
// that start with `(`. Operators + - * / % ^ and parentheses; a number may carry a unit suffix.
// A bare number is in the option's default unit (bytes for sizes; seconds for runtime, µs for
// thinktime), which is what fio's implied_units / is_seconds handling comes to.

#[derive(Clone, Copy)]
pub enum Unit {
    /// Bytes, with this kb_base for suffixes.
    Size(u32),
    /// Nanoseconds; bare numbers are in this many ns.
    Time(u64),
}

pub fn eval_expr(s: &str, unit: Unit) -> Result<u64, String> {
    let mut p = Expr {
        s: s.as_bytes(),
        pos: 0,
        unit,
        depth: 0,
    };
    let v = p.sum()?;
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(format!(
            "unexpected '{}'",
            String::from_utf8_lossy(&p.s[p.pos..])
        ));
    }
    if !v.is_finite() {
        return Err("result is not a finite number".into());
    }
    if v < 0.0 {
        return Err("result is negative".into());
    }
    if v >= 18_446_744_073_709_551_616.0 {
        return Err("result is too large".into());
    }
    // Truncation, as fio's (long long) conversion of the double result.
    Ok(v as u64)
}

struct Expr<'a> {
    s: &'a [u8],
    pos: usize,
    unit: Unit,
    depth: usize,
}

impl Expr<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }
    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_EXPR_DEPTH {
            return Err("expression nested too deeply".into());
        }
        Ok(())
    }
    fn sum(&mut self) -> Result<f64, String> {
        let mut v = self.product()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            let r = self.product()?;
            v = if op == b'+' { v + r } else { v - r };
        }
        Ok(v)
    }
    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.power()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.pos += 1;
            let r = self.power()?;
            v = match op {
                b'*' => v * r,
                _ if r == 0.0 => return Err("division by zero".into()),
                b'/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }
    fn power(&mut self) -> Result<f64, String> {
        let base = self.unary()?;
        if self.peek() == Some(b'^') {
            self.pos += 1;
            self.enter()?;
            let e = self.power()?;
            self.depth -= 1;
            return Ok(base.powf(e));
        }
        Ok(base)
    }
    fn unary(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(b'-') | Some(b'+') => {
                let neg = self.s[self.pos] == b'-';
                self.pos += 1;
                self.enter()?;
                let v = self.unary()?;
                self.depth -= 1;
                Ok(if neg { -v } else { v })
            }
            _ => self.primary(),
        }
    }
    fn primary(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                self.enter()?;
                let v = self.sum()?;
                self.depth -= 1;
                if self.peek() != Some(b')') {
                    return Err("missing ')'".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => self.number(),
            Some(c) => Err(format!("unexpected '{}'", c as char)),
            None => Err("unexpected end".into()),
        }
    }
    fn number(&mut self) -> Result<f64, String> {
        let start = self.pos;
        let s = self.s;
        let mut v: f64;
        if s[start..].starts_with(b"0x") || s[start..].starts_with(b"0X") {
            self.pos += 2;
            let hs = self.pos;
            while self.pos < s.len() && s[self.pos].is_ascii_hexdigit() {
                self.pos += 1;
            }
            let txt = std::str::from_utf8(&s[hs..self.pos]).map_err(|_| "bad number")?;
            v = u64::from_str_radix(txt, 16).map_err(|_| format!("invalid hex number '0x{txt}'"))?
                as f64;
        } else {
            while self.pos < s.len() && (s[self.pos].is_ascii_digit() || s[self.pos] == b'.') {
                self.pos += 1;
            }
            let txt = std::str::from_utf8(&s[start..self.pos]).map_err(|_| "bad number")?;
            v = txt
                .parse::<f64>()
                .map_err(|_| format!("invalid number '{txt}'"))?;
        }
        let us = self.pos;
        while self.pos < s.len() && s[self.pos].is_ascii_alphabetic() {
            self.pos += 1;
        }
        let suffix = std::str::from_utf8(&s[us..self.pos]).map_err(|_| "bad suffix")?;
        let mult = match self.unit {
            Unit::Size(kb) => size_suffix_mult(suffix, kb),
            Unit::Time(def) => time_unit_ns(suffix, def),
        };
        match mult {
            Some(m) => v *= m as f64,
            None => return Err(format!("unknown unit '{suffix}'")),
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_kb_base_1024() {
        assert_eq!(parse_size("4096", 1024), Ok(4096));
        assert_eq!(parse_size("4k", 1024), Ok(4096));
        assert_eq!(parse_size("4K", 1024), Ok(4096));
        assert_eq!(parse_size("4kb", 1024), Ok(4096));
        assert_eq!(parse_size("4KB", 1024), Ok(4096));
        assert_eq!(parse_size("1m", 1024), Ok(1 << 20));
        assert_eq!(parse_size("10G", 1024), Ok(10 << 30));
        assert_eq!(parse_size("1t", 1024), Ok(1 << 40));
        assert_eq!(parse_size("1p", 1024), Ok(1 << 50));
        assert_eq!(parse_size("512b", 1024), Ok(512));
        // IEC spellings are powers of 1000 with kb_base=1024 (fio's "opposite" rule).
        assert_eq!(parse_size("1ki", 1024), Ok(1000));
        assert_eq!(parse_size("1KiB", 1024), Ok(1000));
        assert_eq!(parse_size("1mi", 1024), Ok(1_000_000));
        assert_eq!(parse_size("2gib", 1024), Ok(2_000_000_000));
    }

    #[test]
    fn sizes_kb_base_1000() {
        assert_eq!(parse_size("4k", 1000), Ok(4000));
        assert_eq!(parse_size("1m", 1000), Ok(1_000_000));
        assert_eq!(parse_size("1ki", 1000), Ok(1024));
        assert_eq!(parse_size("1MiB", 1000), Ok(1 << 20));
    }

    #[test]
    fn hex_expr_and_errors() {
        assert_eq!(parse_size("0x1000", 1024), Ok(4096));
        assert_eq!(parse_size("0x10k", 1024), Ok(16 * 1024));
        assert_eq!(parse_size("(4*1024)", 1024), Ok(4096));
        assert_eq!(parse_size("(2^12)", 1024), Ok(4096));
        assert_eq!(parse_size("((1+3) * 1k)", 1024), Ok(4096));
        assert_eq!(parse_size("(10 % 4)", 1024), Ok(2));
        assert!(parse_size("(1/0)", 1024).is_err());
        assert!(parse_size("(1-2)", 1024).is_err());
        assert!(parse_size("(1", 1024).is_err());
        let e = parse_size("4q", 1024).unwrap_err();
        assert_eq!(e, format!("invalid size '4q' ({SIZE_HINT})"));
        assert!(parse_size("1.5g", 1024).is_err());
        assert!(parse_size("", 1024).is_err());
        assert!(parse_size("k", 1024).is_err());
        assert!(parse_size("99999999999999999999", 1024).is_err());
        assert!(parse_size("99999999p", 1024).is_err());
        let deep = format!("{}1{}", "(".repeat(500), ")".repeat(500));
        assert!(parse_size(&deep, 1024).is_err());
    }

    #[test]
    fn times() {
        let s = NS_PER_SEC;
        assert_eq!(parse_time_ns("60", s), Ok(60 * s));
        assert_eq!(parse_time_ns("2s", s), Ok(2 * s));
        assert_eq!(parse_time_ns("10m", s), Ok(600 * s));
        assert_eq!(parse_time_ns("1h", s), Ok(3600 * s));
        assert_eq!(parse_time_ns("1d", s), Ok(86400 * s));
        assert_eq!(parse_time_ns("500ms", s), Ok(s / 2));
        assert_eq!(parse_time_ns("500msec", s), Ok(s / 2));
        assert_eq!(parse_time_ns("250us", s), Ok(250_000));
        assert_eq!(parse_time_ns("1.5s", s), Ok(1_500_000_000));
        assert_eq!(parse_time_ns("100", NS_PER_US), Ok(100_000));
        assert_eq!(parse_time_ns("(1+2)", s), Ok(3 * s));
        assert_eq!(parse_time_ns("(1m+30s)", s), Ok(90 * s));
        assert_eq!(parse_time_ns("20ns", s), Ok(20));
        assert_eq!(parse_time_ns("20us", 1), Ok(20_000));
        assert_eq!(parse_time_ns("20000", 1), Ok(20_000));
        assert!(parse_time_ns("5x", s).is_err());
        assert!(parse_time_ns("1.2.3", s).is_err());
        assert!(parse_time_ns(".", s).is_err());
    }
}
