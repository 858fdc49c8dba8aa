//! The model parameter tables, as a profile's keys name them: which table a key belongs to,
//! for which driver, and what `blksim calibrate` fits by default. Each table stays defined
//! in its own layer (`NULL_BLK_PARAMS`, `CARD_PARAMS`, ...); this is only the index over them
//! that `blksim params` lists and `blksim calibrate` looks keys up in.

use blksim_core::ParamDef;

/// One model's parameter table.
pub struct ParamTable {
    /// Heading in `blksim params`.
    pub title: &'static str,
    /// The key prefix in profiles and `--set` (`queue.`, `platform.`; empty for device keys
    /// and for the MMC tables, whose keys carry their `host.`/`card.` prefix).
    pub prefix: &'static str,
    pub defs: &'static [ParamDef],
    /// The profile drivers the table applies to (empty: every driver).
    pub drivers: &'static [&'static str],
    /// Keys (with prefix) `blksim calibrate` fits when no `--fit` is given.
    pub calibrate: &'static [&'static str],
}

pub static PARAM_TABLES: &[ParamTable] = &[
    ParamTable {
        title: "null_blk ([device], bare --set keys)",
        prefix: "",
        defs: blksim_nullblk::NULL_BLK_PARAMS,
        drivers: &["null_blk"],
        calibrate: blksim_nullblk::NULL_BLK_CALIBRATE,
    },
    ParamTable {
        title: "loop ([device] of driver = \"loop\", bare --set keys)",
        prefix: "",
        defs: blksim_loop::LOOP_PARAMS,
        drivers: &["loop"],
        calibrate: blksim_loop::LOOP_CALIBRATE,
    },
    ParamTable {
        title: "queue ([queue], --set=queue.KEY)",
        prefix: "queue.",
        defs: crate::setup::QUEUE_PARAMS,
        drivers: &[],
        calibrate: &[],
    },
    ParamTable {
        title: "platform ([platform], --set=platform.KEY)",
        prefix: "platform.",
        defs: crate::platform::PLATFORM_PARAMS,
        drivers: &[],
        calibrate: &[],
    },
    ParamTable {
        title: "MMC host ([host], --set=host.KEY)",
        prefix: "",
        defs: blksim_device::emmc::HOST_PARAMS,
        drivers: &["mmc"],
        calibrate: &[],
    },
    ParamTable {
        title: "NVMe driver ([nvme], --set=nvme.KEY)",
        prefix: "",
        defs: blksim_nvme::NVME_PARAMS,
        drivers: &["nvme"],
        calibrate: &[],
    },
    ParamTable {
        title: "UFS host and device ([ufs], --set=ufs.KEY)",
        prefix: "",
        defs: blksim_ufs::UFS_PARAMS,
        drivers: &["ufs"],
        calibrate: &[],
    },
    ParamTable {
        title: "SSD: the flash and controller of NVMe and UFS devices ([ssd], --set=ssd.KEY)",
        prefix: "",
        defs: blksim_device::ssd::SSD_PARAMS,
        drivers: &["nvme", "ufs"],
        calibrate: blksim_device::ssd::SSD_CALIBRATE,
    },
    ParamTable {
        title: "eMMC card ([card], --set=card.KEY)",
        prefix: "",
        defs: blksim_device::emmc::CARD_PARAMS,
        drivers: &["mmc"],
        calibrate: blksim_device::emmc::CARD_CALIBRATE,
    },
];

fn applies(t: &ParamTable, driver: &str) -> bool {
    t.drivers.is_empty() || t.drivers.contains(&driver)
}

/// The definition of a profile key (`completion_nsec`, `card.t_prog_ns`, `platform.nr_cpus`)
/// for a profile of `driver`.
pub fn find_param(driver: &str, key: &str) -> Option<&'static ParamDef> {
    PARAM_TABLES
        .iter()
        .filter(|t| applies(t, driver))
        .find_map(|t| {
            let k = key.strip_prefix(t.prefix)?;
            t.defs.iter().find(|d| d.key == k)
        })
}

/// Every key a profile of `driver` may set (with prefix), for "did you mean" hints.
pub fn keys(driver: &str) -> impl Iterator<Item = String> + '_ {
    PARAM_TABLES
        .iter()
        .filter(move |t| applies(t, driver))
        .flat_map(|t| t.defs.iter().map(move |d| format!("{}{}", t.prefix, d.key)))
}

/// What `blksim calibrate` fits on a profile of `driver` unless told otherwise.
pub fn calibration_keys(driver: &str) -> Vec<&'static str> {
    PARAM_TABLES
        .iter()
        .filter(|t| applies(t, driver))
        .flat_map(|t| t.calibrate.iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_calibration_key_is_a_numeric_parameter_of_its_driver() {
        for driver in ["null_blk", "loop", "mmc", "nvme", "ufs"] {
            let keys = calibration_keys(driver);
            assert!(!keys.is_empty(), "{driver}");
            for k in keys {
                let d = find_param(driver, k).unwrap_or_else(|| panic!("{driver}: {k}"));
                assert!(d.is_numeric(), "{k}");
            }
        }
        assert!(find_param("null_blk", "card.t_prog_ns").is_none());
        assert_eq!(
            find_param("mmc", "queue.nr_requests").map(|d| d.key),
            Some("nr_requests")
        );
    }
}
