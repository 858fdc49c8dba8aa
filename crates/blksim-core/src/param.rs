//! The one shape every model parameter table uses: key, unit, default, bounds, meaning,
//! source.
//!
//! Each layer keeps its parameters in one static table of these (`NULL_BLK_PARAMS`,
//! `CARD_PARAMS`/`HOST_PARAMS`, ...), so every parameter has a unit, a default, bounds and a
//! source defined in exactly one place. Values from profiles and `--set` are parsed by
//! [`ParamDef::parse_u64`] / [`ParamDef::parse_bool`] / [`ParamDef::parse_enum`], which use the
//! same number syntax as fio job options ([`crate::value`]): `20us`, `20000` (for a `ns`
//! parameter) and `(10*2)us` mean the same everywhere.

use crate::value::{parse_size, parse_time_ns, NS_PER_MS, NS_PER_SEC, NS_PER_US};

/// One parameter of a model.
#[derive(Clone, Copy, Debug)]
pub struct ParamDef {
    pub key: &'static str,
    /// `ns`, `us`, `ms`, `bytes`, `KiB`, `MiB`, `MB/s`, `Hz`, `clk`, `count`, `pct`, `ppm`,
    /// `bool`, or `enum:a|b|c`; any other text is a plain count in that unit.
    pub unit: &'static str,
    /// Default, as text in `unit`.
    pub default: &'static str,
    pub doc: &'static str,
    /// Kernel file, datasheet, or the calibration it came from.
    pub source: &'static str,
    /// Inclusive bounds in `unit` (numeric units only; a value outside is an error). Time
    /// bounds keep every sum of parameters far below the 64-bit nanosecond clock.
    pub min: u64,
    pub max: u64,
}

/// One minute in ns: the bound of most time parameters of the device and platform models
/// (every step of the modelled path is far shorter; longer values would only be typos).
pub const MAX_STEP_NS: u64 = 60 * NS_PER_SEC;

impl ParamDef {
    /// A parameter with bounds `[min, max]` in its unit.
    pub const fn new(
        key: &'static str,
        unit: &'static str,
        default: &'static str,
        min: u64,
        max: u64,
        doc: &'static str,
        source: &'static str,
    ) -> ParamDef {
        ParamDef {
            key,
            unit,
            default,
            doc,
            source,
            min,
            max,
        }
    }

    /// A `bool` or `enum:` parameter (no numeric bounds).
    pub const fn choice(
        key: &'static str,
        unit: &'static str,
        default: &'static str,
        doc: &'static str,
        source: &'static str,
    ) -> ParamDef {
        ParamDef::new(key, unit, default, 0, 0, doc, source)
    }

    /// Whether the value is a number (not `bool` or `enum:`).
    pub fn is_numeric(&self) -> bool {
        self.unit != "bool" && !self.unit.starts_with("enum:")
    }

    /// `[min, max] unit` for help and errors, e.g. `0..=60000000000 ns`.
    pub fn bounds_text(&self) -> String {
        if self.is_numeric() {
            format!("{}..={} {}", self.min, self.max, self.unit)
        } else if let Some(c) = self.unit.strip_prefix("enum:") {
            c.to_string()
        } else {
            "true|false".to_string()
        }
    }

    /// A numeric value in this parameter's unit, within its bounds. Time units (`ns`, `us`,
    /// `ms`) accept any time suffix (`20us` for a `ns` parameter), size units (`bytes`, `KiB`,
    /// `MiB`) any size suffix (`2m` for a `KiB` parameter); a bare number is in the unit.
    /// Other units take a plain number (fio's `k`/`m` suffixes allowed, as for fio's integer
    /// options). The result must be a whole number of units.
    pub fn parse_u64(&self, text: &str) -> Result<u64, String> {
        let t = text.trim().replace('_', "");
        let (per_unit, is_time) = match self.unit {
            "ns" => (1, true),
            "us" => (NS_PER_US, true),
            "ms" => (NS_PER_MS, true),
            "bytes" => (1, false),
            "KiB" => (1 << 10, false),
            "MiB" => (1 << 20, false),
            _ => (1, false),
        };
        let bare = !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        let base = if bare {
            t.parse::<u64>()
                .map_err(|_| format!("{}: '{}' is too large", self.key, text.trim()))?
        } else {
            let raw = if is_time {
                parse_time_ns(&t, per_unit)
            } else {
                parse_size(&t, 1024)
            }
            .map_err(|e| format!("{}: {e} (unit {})", self.key, self.unit))?;
            if raw % per_unit != 0 {
                return Err(format!(
                    "{}: '{}' is not a whole number of {}",
                    self.key,
                    text.trim(),
                    self.unit
                ));
            }
            raw / per_unit
        };
        if base < self.min || base > self.max {
            return Err(format!(
                "{}: {} is out of range (expected {})",
                self.key,
                text.trim(),
                self.bounds_text()
            ));
        }
        Ok(base)
    }

    /// A `bool` value: `true|false|1|0|yes|no|on|off`.
    pub fn parse_bool(&self, text: &str) -> Result<bool, String> {
        match text.trim() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            t => Err(format!(
                "{}: expected a bool (true|false), got '{t}'",
                self.key
            )),
        }
    }

    /// One of the names of an `enum:a|b|c` unit.
    pub fn parse_enum(&self, text: &str) -> Result<&'static str, String> {
        let choices = self.unit.strip_prefix("enum:").unwrap_or("");
        choices
            .split('|')
            .find(|c| *c == text.trim())
            .ok_or_else(|| {
                format!(
                    "{}: expected one of {choices}, got '{}'",
                    self.key,
                    text.trim()
                )
            })
    }

    /// Check that the default parses as the parameter's own type and lies within its bounds
    /// (used by every table's consistency test).
    pub fn check_default(&self) -> Result<(), String> {
        if self.unit == "bool" {
            self.parse_bool(self.default).map(|_| ())
        } else if self.unit.starts_with("enum:") {
            self.parse_enum(self.default).map(|_| ())
        } else {
            if self.min > self.max {
                return Err(format!("{}: min {} > max {}", self.key, self.min, self.max));
            }
            // `auto`: derived at setup from other parameters (the doc says how).
            if self.default == "auto" {
                return Ok(());
            }
            self.parse_u64(self.default).map(|_| ())
        }
    }
}

/// A lookup over fixed `key = value` pairs, in the shape the config builders take
/// (`from_lookup`): what a test or a caller holding values in a list hands them.
pub fn lookup_pairs(kv: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: std::collections::BTreeMap<String, String> = kv
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| m.get(k).cloned()
}

/// The value of `key` (a key of `table`) from `get`, or the table's default, parsed and
/// checked against its bounds; errors start with the key (as the parsers write them).
pub fn lookup_u64(
    table: &[ParamDef],
    key: &str,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<u64, String> {
    let d = find(table, key);
    d.parse_u64(&get(key).unwrap_or_else(|| d.default.to_string()))
}

/// As [`lookup_u64`] for an `enum:` parameter.
pub fn lookup_enum(
    table: &[ParamDef],
    key: &str,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<&'static str, String> {
    let d = find(table, key);
    d.parse_enum(&get(key).unwrap_or_else(|| d.default.to_string()))
}

fn find<'a>(table: &'a [ParamDef], key: &str) -> &'a ParamDef {
    table
        .iter()
        .find(|d| d.key == key)
        .unwrap_or_else(|| panic!("parameter {key} is not in its table"))
}

/// Every parameter of a table is well formed: unique keys, a doc and a source, a default that
/// parses and lies in bounds. For the tables' own tests.
pub fn check_table(table: &[ParamDef]) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for d in table {
        if !seen.insert(d.key) {
            return Err(format!("duplicate key {}", d.key));
        }
        if d.doc.is_empty() || d.source.is_empty() {
            return Err(format!("{}: missing doc or source", d.key));
        }
        d.check_default()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: ParamDef = ParamDef::new("t_r_ns", "ns", "60000", 0, MAX_STEP_NS, "d", "s");
    const K: ParamDef = ParamDef::new("cache_kib", "KiB", "1024", 0, 1 << 20, "d", "s");
    const C: ParamDef = ParamDef::new("nr_cpus", "count", "2", 1, 4096, "d", "s");

    #[test]
    fn one_syntax_for_every_unit() {
        assert_eq!(T.parse_u64("20000"), Ok(20_000));
        assert_eq!(T.parse_u64("20us"), Ok(20_000));
        assert!(T.parse_u64("20 us").is_err());
        assert_eq!(T.parse_u64("1.5ms"), Ok(1_500_000));
        assert_eq!(T.parse_u64("(10us*2)"), Ok(20_000));
        assert_eq!(T.parse_u64("1_000"), Ok(1_000));
        assert_eq!(K.parse_u64("2m"), Ok(2048));
        assert_eq!(K.parse_u64("512"), Ok(512));
        assert!(K.parse_u64("1000b").unwrap_err().contains("whole number"));
        assert_eq!(C.parse_u64("4"), Ok(4));
        assert_eq!(C.parse_u64("1k"), Ok(1024));
    }

    #[test]
    fn bounds_and_garbage_are_errors_naming_the_key() {
        let e = T.parse_u64("61s").unwrap_err();
        assert!(
            e.contains("t_r_ns") && e.contains("0..=60000000000 ns"),
            "{e}"
        );
        let e = C.parse_u64("0").unwrap_err();
        assert!(e.contains("1..=4096"), "{e}");
        assert!(T.parse_u64("fast").unwrap_err().contains("t_r_ns"));
        assert!(T.parse_u64("99999999999999999999999").is_err());
        assert!(T.parse_u64("-1").is_err());
        assert!(T.parse_u64("").is_err());
        check_table(&[T, K, C]).unwrap();
        assert!(check_table(&[T, T]).is_err());
        let bad = ParamDef::new("x", "ns", "70s", 0, MAX_STEP_NS, "d", "s");
        assert!(check_table(&[bad]).is_err());
    }

    #[test]
    fn choices() {
        let b = ParamDef::choice("cmd23", "bool", "true", "d", "s");
        assert_eq!(b.parse_bool("off"), Ok(false));
        assert!(b.parse_bool("maybe").is_err());
        let e = ParamDef::choice("queue", "enum:legacy|hsq|cqe", "legacy", "d", "s");
        assert_eq!(e.parse_enum("hsq"), Ok("hsq"));
        assert!(e.parse_enum("nvme").unwrap_err().contains("legacy|hsq|cqe"));
        check_table(&[b, e]).unwrap();
    }
}
