//! The one shape every model parameter table uses: key, unit, default, meaning, source.
//!
//! Each layer keeps its parameters in one static table of these (`NULL_BLK_PARAMS`,
//! `CARD_PARAMS`/`HOST_PARAMS`, ...), so every parameter has a unit, a default and a source
//! defined in exactly one place.

/// One parameter of a model.
#[derive(Clone, Copy, Debug)]
pub struct ParamDef {
    pub key: &'static str,
    /// `ns`, `bytes`, `KiB`, `MiB`, `MB/s`, `Hz`, `clk`, `count`, `pct`, `bool`, or `enum:a|b|c`.
    pub unit: &'static str,
    /// Default, as text in `unit`.
    pub default: &'static str,
    pub doc: &'static str,
    /// Kernel file, datasheet, or the calibration it came from.
    pub source: &'static str,
}
