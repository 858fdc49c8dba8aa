//! Device profiles: TOML files describing a device, its driver, the queue settings and the
//! platform. Parsed once into an ordered key → value map with the line each key came from;
//! `--set=KEY=VALUE` edits that map; each layer then builds its typed config from it and
//! rejects what it does not know, naming the file and line.
//!
//! Key namespace (as `--set` spells it):
//! * bare keys (`irqmode`, `completion_nsec`): the `[device]` table, the driver's parameters
//!   under their kernel names;
//! * `queue.NAME`: sysfs queue settings (`queue.nr_requests`, `queue.max_sectors_kb`,
//!   `queue.nomerges`, `queue.scheduler`, ...);
//! * `queue.iosched.NAME`: elevator tunables under their sysfs names;
//! * `host.NAME`, `card.NAME`: MMC host and eMMC card parameters;
//! * `platform.NAME`: CPUs and per-step CPU costs.

use std::collections::BTreeMap;
use std::path::Path;

/// A bundled profile: name, embedded TOML.
pub struct Bundled {
    pub name: &'static str,
    pub toml: &'static str,
}

/// Profiles shipped with blksim (`profiles/*.toml`), embedded so the binary stands alone.
pub const BUNDLED: &[Bundled] = &[
    Bundled {
        name: "emmc-hbg4a2",
        toml: include_str!("../../../profiles/emmc-hbg4a2.toml"),
    },
    Bundled {
        name: "emmc-ux500",
        toml: include_str!("../../../profiles/emmc-ux500.toml"),
    },
    Bundled {
        name: "emmc-512k-2009",
        toml: include_str!("../../../profiles/emmc-512k-2009.toml"),
    },
    Bundled {
        name: "emmc-allwinner",
        toml: include_str!("../../../profiles/emmc-allwinner.toml"),
    },
    Bundled {
        name: "sd-a1-pi4",
        toml: include_str!("../../../profiles/sd-a1-pi4.toml"),
    },
    Bundled {
        name: "sd-a2-pi4",
        toml: include_str!("../../../profiles/sd-a2-pi4.toml"),
    },
    Bundled {
        name: "sd-kingston-4g-bbb",
        toml: include_str!("../../../profiles/sd-kingston-4g-bbb.toml"),
    },
    Bundled {
        name: "ufs31-samsung-512g",
        toml: include_str!("../../../profiles/ufs31-samsung-512g.toml"),
    },
    Bundled {
        name: "ufs40-samsung-512g",
        toml: include_str!("../../../profiles/ufs40-samsung-512g.toml"),
    },
    Bundled {
        name: "nvme-980pro-1tb",
        toml: include_str!("../../../profiles/nvme-980pro-1tb.toml"),
    },
    Bundled {
        name: "null_blk",
        toml: include_str!("../../../profiles/null_blk.toml"),
    },
    Bundled {
        name: "null_blk-server",
        toml: include_str!("../../../profiles/null_blk-server.toml"),
    },
    Bundled {
        name: "loop-2cpu",
        toml: include_str!("../../../profiles/loop-2cpu.toml"),
    },
];

/// The default device when no `--device` is given: eMMC is what blksim is for.
pub const DEFAULT_DEVICE: &str = "emmc-hbg4a2";

#[derive(Clone, Debug, PartialEq)]
pub struct ProfileValue {
    pub value: String,
    /// Where it was set: `file:line` or `--set`.
    pub origin: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// `null_blk` or `mmc`.
    pub driver: String,
    /// Source file name, for messages.
    pub file: String,
    pub values: BTreeMap<String, ProfileValue>,
}

impl Profile {
    pub fn get(&self, key: &str) -> Option<String> {
        self.values.get(key).map(|v| v.value.clone())
    }

    pub fn origin(&self, key: &str) -> String {
        self.values
            .get(key)
            .map(|v| v.origin.clone())
            .unwrap_or_else(|| self.file.clone())
    }

    /// Keys under `prefix.` with the prefix stripped (e.g. all `queue.iosched.*`).
    pub fn with_prefix(&self, prefix: &str) -> Vec<(String, ProfileValue)> {
        let p = format!("{prefix}.");
        self.values
            .iter()
            .filter_map(|(k, v)| k.strip_prefix(&p).map(|s| (s.to_string(), v.clone())))
            .collect()
    }

    /// Bare keys (the `[device]` table).
    pub fn device_keys(&self) -> Vec<(String, ProfileValue)> {
        self.values
            .iter()
            .filter(|(k, _)| !k.contains('.'))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Apply `--set=KEY=VALUE`. The key must name a known table; whether the field exists is
    /// checked when the layer builds its config.
    pub fn set(&mut self, kv: &str) -> Result<(), String> {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(format!(
                "--set={kv}: expected KEY=VALUE (e.g. --set=irqmode=2, --set=queue.nr_requests=64)"
            ));
        };
        let k = k.trim();
        if k.is_empty() {
            return Err(format!("--set={kv}: empty key"));
        }
        if let Some((top, _)) = k.split_once('.') {
            if !["queue", "host", "card", "nvme", "ufs", "ssd", "platform"].contains(&top) {
                return Err(format!(
                    "--set={kv}: unknown table '{top}' (expected a device field like 'irqmode', or queue.*, queue.iosched.*, host.*, card.*, nvme.*, ufs.*, ssd.*, platform.*)"
                ));
            }
        }
        self.values.insert(
            k.to_string(),
            ProfileValue {
                value: v.trim().to_string(),
                origin: format!("--set={kv}"),
            },
        );
        Ok(())
    }

    pub fn parse(text: &str, file: &str) -> Result<Profile, String> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1))
                .unwrap_or(0);
            format!("{file}:{line}: invalid TOML: {}", e.message())
        })?;
        let mut p = Profile {
            file: file.to_string(),
            ..Default::default()
        };
        for (k, v) in &table {
            match (k.as_str(), v) {
                ("name", toml::Value::String(s)) => p.name = s.clone(),
                ("description", toml::Value::String(s)) => p.description = s.clone(),
                ("driver", toml::Value::String(s)) => p.driver = s.clone(),
                ("device", toml::Value::Table(t)) => flatten(&mut p, "", t, text, file, "device")?,
                ("queue" | "host" | "card" | "nvme" | "ufs" | "ssd" | "platform", toml::Value::Table(t)) => flatten(&mut p, k, t, text, file, k)?,
                _ => {
                    return Err(format!(
                        "{file}:{}: unexpected top-level key '{k}' (expected name, description, driver, [device], [queue], [queue.iosched], [host], [card], [nvme], [ufs], [ssd], [platform])",
                        find_line(text, k, None)
                    ))
                }
            }
        }
        if p.driver.is_empty() {
            return Err(format!(
                "{file}: missing 'driver' (null_blk, loop, mmc, nvme or ufs)"
            ));
        }
        if !["null_blk", "loop", "mmc", "nvme", "ufs"].contains(&p.driver.as_str()) {
            return Err(format!(
                "{file}:{}: driver '{}': expected null_blk, loop, mmc, nvme or ufs",
                find_line(text, "driver", None),
                p.driver
            ));
        }
        if p.name.is_empty() {
            p.name = Path::new(file)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
        Ok(p)
    }

    /// The TOML text of a bundled profile by name, or of a TOML file by path, with the file
    /// name messages use for it.
    pub fn source(name_or_path: &str) -> Result<(String, String), String> {
        if let Some(b) = BUNDLED.iter().find(|b| b.name == name_or_path) {
            return Ok((b.toml.to_string(), format!("profiles/{}.toml", b.name)));
        }
        let path = Path::new(name_or_path);
        if path.exists() {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{name_or_path}: {e}"))?;
            return Ok((text, name_or_path.to_string()));
        }
        let names: Vec<&str> = BUNDLED.iter().map(|b| b.name).collect();
        Err(format!("--device={name_or_path}: no bundled profile of that name and no such file (bundled: {})", names.join(", ")))
    }

    /// A bundled profile by name, or a TOML file by path.
    pub fn load(name_or_path: &str) -> Result<Profile, String> {
        let (text, file) = Profile::source(name_or_path)?;
        Profile::parse(&text, &file)
    }
}

fn flatten(
    p: &mut Profile,
    prefix: &str,
    t: &toml::Table,
    text: &str,
    file: &str,
    section: &str,
) -> Result<(), String> {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let line = find_line(text, k, Some(section));
        let value = match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Table(sub) => {
                flatten(p, &key, sub, text, file, &format!("{section}.{k}"))?;
                continue;
            }
            other => {
                return Err(format!(
                    "{file}:{line}: '{key}': expected a number, string or boolean, got {}",
                    other.type_str()
                ))
            }
        };
        p.values.insert(
            key,
            ProfileValue {
                value,
                origin: format!("{file}:{line}"),
            },
        );
    }
    Ok(())
}

/// Line of `key = ...` (inside `[section]` when given), for messages; 0 when not found.
fn find_line(text: &str, key: &str, section: Option<&str>) -> usize {
    let mut in_section = section.is_none();
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.starts_with('[') {
            in_section = section
                .map(|s| t.trim_matches(|c| c == '[' || c == ']').trim() == s)
                .unwrap_or(false);
            continue;
        }
        if in_section {
            if let Some((k, _)) = t.split_once('=') {
                if k.trim() == key {
                    return i + 1;
                }
            }
        }
    }
    0
}

/// Suggest the nearest known key (for "unknown field" errors).
pub fn nearest<'a>(key: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (levenshtein(key, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min()
        .map(|(_, k)| k)
}

pub fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + (ca != *cb) as usize)
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tables_and_lines() {
        let t = "name = \"x\"\ndriver = \"null_blk\"\n[device]\nirqmode = 2\n[queue]\nnr_requests = 64\n[queue.iosched]\nfifo_batch = 8\n";
        let p = Profile::parse(t, "x.toml").unwrap();
        assert_eq!(p.get("irqmode").as_deref(), Some("2"));
        assert_eq!(p.get("queue.nr_requests").as_deref(), Some("64"));
        assert_eq!(p.get("queue.iosched.fifo_batch").as_deref(), Some("8"));
        assert_eq!(p.origin("irqmode"), "x.toml:4");
        assert_eq!(p.origin("queue.iosched.fifo_batch"), "x.toml:8");
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = Profile::parse("driver = \"null_blk\"\n[device\nx=1\n", "bad.toml").unwrap_err();
        assert!(e.starts_with("bad.toml:2:"), "{e}");
        let e = Profile::parse("driver = \"null_blk\"\nbogus = 1\n", "b.toml").unwrap_err();
        assert!(e.starts_with("b.toml:2:"), "{e}");
        let mut p = Profile::parse("driver = \"null_blk\"\n", "c.toml").unwrap();
        assert!(p.set("nonsense").is_err());
        assert!(p.set("foo.bar=1").is_err());
        p.set("queue.nr_requests=32").unwrap();
        assert_eq!(p.get("queue.nr_requests").as_deref(), Some("32"));
    }

    #[test]
    fn every_bundled_profile_parses() {
        for b in BUNDLED {
            Profile::parse(b.toml, b.name).unwrap();
        }
    }
}
