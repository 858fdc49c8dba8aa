//! The eMMC and SD bus: modes, clock, and the time of command tokens and 512-byte data blocks.
//!
//! SD cards share the framing (SD Physical Layer Simplified Specification: 48-bit command
//! tokens, R1/R1b 48-bit and R2 136-bit responses, data blocks with start bit, CRC16 per line
//! and end bit, the CRC status token after a written block) on a bus of 1 or 4 data lines. Its
//! modes: Default Speed (25 MHz), High Speed (50 MHz), and the UHS-I modes SDR50 (100 MHz),
//! SDR104 (208 MHz) and DDR50 (50 MHz, data on both edges), 4 bits only.
//!
//! Framing (reference §8.1, JEDEC): a command is a 48-bit token on CMD (one bit per clock in
//! every mode, DDR modes included), answered after N_CR clocks by a 48-bit (R1/R1b) or 136-bit
//! (R2) response; N_CC ≥ 8 clocks separate commands. A data block is, on every data line, a
//! start bit, the payload bits of that line, a CRC16 and an end bit. In DDR modes (DDR52, HS400)
//! payload bits go on both clock edges and each line carries two interleaved CRC16s, so the CRC
//! still takes 16 clocks; start and end bits take one full clock each.
//! Gaps: N_AC (read access between blocks, min 2 clocks); before each written block N_WR ≥ 2;
//! after it N_CRC = 2 clocks then a 5-bit CRC status token and at least 2 clocks of busy.
//! The gap minimums are from memory of JESD84 (marked [from memory] in the reference) — they are
//! ≤ 3 % of a block at 8 bits and are kept so the arithmetic is explicit and testable.

use blksim_core::Ns;

pub const BLOCK_BYTES: u64 = 512;
pub const CMD_TOKEN_BITS: u64 = 48;
pub const R1_BITS: u64 = 48;
pub const R2_BITS: u64 = 136;
/// N_CC: minimum clocks between a response and the next command.
pub const N_CC_CLKS: u64 = 8;
/// Start + end bit of a data block (one clock each, SDR and DDR).
pub const START_END_CLKS: u64 = 2;
/// CRC16 per line (two interleaved CRC16s on both edges in DDR: still 16 clocks).
pub const CRC16_CLKS: u64 = 16;
/// N_AC minimum between read blocks [from memory].
pub const N_AC_MIN_CLKS: u64 = 2;
/// N_WR minimum before a write block [from memory].
pub const N_WR_CLKS: u64 = 2;
/// N_CRC (2) + CRC status token (start, 3 status bits, end = 5) after a write block.
pub const CRC_STATUS_CLKS: u64 = 2 + 5;
/// Minimum busy after a write block [from memory].
pub const WRITE_BUSY_MIN_CLKS: u64 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusMode {
    /// Backwards-compatible timing, ≤ 26 MHz SDR, 1/4/8 bit.
    Legacy,
    /// High Speed SDR, ≤ 52 MHz, 1/4/8 bit.
    Hs,
    /// High Speed DDR, 52 MHz, 4/8 bit.
    Ddr52,
    /// HS200: 200 MHz SDR, 4/8 bit.
    Hs200,
    /// HS400: 200 MHz DDR, 8 bit only.
    Hs400,
    /// SD Default Speed: 25 MHz SDR, 1/4 bit.
    SdDs,
    /// SD High Speed: 50 MHz SDR, 1/4 bit.
    SdHs,
    /// SD UHS-I SDR50: 100 MHz SDR, 4 bit.
    Sdr50,
    /// SD UHS-I SDR104: 208 MHz SDR, 4 bit.
    Sdr104,
    /// SD UHS-I DDR50: 50 MHz DDR, 4 bit.
    Ddr50,
}

impl BusMode {
    pub fn parse(s: &str) -> Result<BusMode, String> {
        Ok(match s {
            "legacy" => BusMode::Legacy,
            "hs" => BusMode::Hs,
            "ddr52" => BusMode::Ddr52,
            "hs200" => BusMode::Hs200,
            "hs400" => BusMode::Hs400,
            "sd_ds" => BusMode::SdDs,
            "sd_hs" => BusMode::SdHs,
            "sdr50" => BusMode::Sdr50,
            "sdr104" => BusMode::Sdr104,
            "ddr50" => BusMode::Ddr50,
            _ => return Err(format!("unknown bus mode '{s}'")),
        })
    }
    pub fn max_clock_hz(self) -> u64 {
        match self {
            BusMode::Legacy => 26_000_000,
            BusMode::Hs | BusMode::Ddr52 => 52_000_000,
            BusMode::Hs200 | BusMode::Hs400 => 200_000_000,
            BusMode::SdDs => 25_000_000,
            BusMode::SdHs | BusMode::Ddr50 => 50_000_000,
            BusMode::Sdr50 => 100_000_000,
            BusMode::Sdr104 => 208_000_000,
        }
    }
    pub fn ddr(self) -> bool {
        matches!(self, BusMode::Ddr52 | BusMode::Hs400 | BusMode::Ddr50)
    }
    /// An SD card's mode (the bus of `card.kind=sd`).
    pub fn is_sd(self) -> bool {
        matches!(
            self,
            BusMode::SdDs | BusMode::SdHs | BusMode::Sdr50 | BusMode::Sdr104 | BusMode::Ddr50
        )
    }
    fn width_ok(self, w: u32) -> bool {
        match self {
            BusMode::Legacy | BusMode::Hs => matches!(w, 1 | 4 | 8),
            BusMode::Ddr52 | BusMode::Hs200 => matches!(w, 4 | 8),
            BusMode::Hs400 => w == 8,
            BusMode::SdDs | BusMode::SdHs => matches!(w, 1 | 4),
            BusMode::Sdr50 | BusMode::Sdr104 | BusMode::Ddr50 => w == 4,
        }
    }
}

/// A configured bus: mode, width, clock, and the card's N_CR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BusTiming {
    pub mode: BusMode,
    pub width: u32,
    pub clock_hz: u64,
    pub ncr_clks: u64,
}

impl BusTiming {
    /// `clock_hz == 0` means the mode's maximum clock.
    pub fn new(mode: BusMode, width: u32, clock_hz: u64, ncr_clks: u64) -> Result<Self, String> {
        if !mode.width_ok(width) {
            return Err(format!(
                "host.bus_width: {width} bits is not allowed in {mode:?} mode"
            ));
        }
        let clock_hz = if clock_hz == 0 {
            mode.max_clock_hz()
        } else {
            clock_hz
        };
        if clock_hz > mode.max_clock_hz() {
            return Err(format!(
                "host.bus_clock_hz: {clock_hz} Hz exceeds the {mode:?} maximum {}",
                mode.max_clock_hz()
            ));
        }
        Ok(BusTiming {
            mode,
            width,
            clock_hz,
            ncr_clks,
        })
    }

    /// Clocks → ns, rounded up once for the whole span (so N blocks is exact arithmetic).
    pub fn clks_to_ns(&self, clks: u64) -> Ns {
        ((clks as u128 * 1_000_000_000u128).div_ceil(self.clock_hz as u128)) as Ns
    }

    /// Clocks of payload per line for one 512-byte block.
    pub fn payload_clks(&self) -> u64 {
        let bits_per_line = BLOCK_BYTES * 8 / self.width as u64;
        if self.mode.ddr() {
            bits_per_line / 2
        } else {
            bits_per_line
        }
    }

    pub fn read_block_clks(&self) -> u64 {
        self.payload_clks() + START_END_CLKS + CRC16_CLKS + N_AC_MIN_CLKS
    }

    pub fn write_block_clks(&self) -> u64 {
        N_WR_CLKS
            + self.payload_clks()
            + START_END_CLKS
            + CRC16_CLKS
            + CRC_STATUS_CLKS
            + WRITE_BUSY_MIN_CLKS
    }

    /// Data-phase time of `blocks` read blocks.
    pub fn read_xfer_ns(&self, blocks: u64) -> Ns {
        self.clks_to_ns(blocks * self.read_block_clks())
    }

    /// Data-phase time of `blocks` written blocks (without the card's programming busy).
    pub fn write_xfer_ns(&self, blocks: u64) -> Ns {
        self.clks_to_ns(blocks * self.write_block_clks())
    }

    /// One command with a response of `resp_bits` (R1/R1b 48, R2 136), plus N_CC.
    pub fn cmd_ns(&self, resp_bits: u64) -> Ns {
        self.clks_to_ns(CMD_TOKEN_BITS + self.ncr_clks + resp_bits + N_CC_CLKS)
    }

    /// Payload bandwidth in bytes/s, ignoring framing (26/52/104/200/400 MB/s at 8 bits).
    pub fn raw_bytes_per_sec(&self) -> u64 {
        self.clock_hz * self.width as u64 / 8 * if self.mode.ddr() { 2 } else { 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_rates_match_the_mode_table() {
        let r = |m, w| BusTiming::new(m, w, 0, 2).unwrap().raw_bytes_per_sec();
        assert_eq!(r(BusMode::Legacy, 8), 26_000_000);
        assert_eq!(r(BusMode::Hs, 8), 52_000_000);
        assert_eq!(r(BusMode::Ddr52, 8), 104_000_000);
        assert_eq!(r(BusMode::Hs200, 8), 200_000_000);
        assert_eq!(r(BusMode::Hs400, 8), 400_000_000);
        assert!(BusTiming::new(BusMode::Hs400, 4, 0, 2).is_err());
        assert!(BusTiming::new(BusMode::Hs, 8, 60_000_000, 2).is_err());
        // SD: 12.5/25 MB/s at 4 bits in Default and High Speed, UHS-I 50/104/50 MB/s.
        assert_eq!(r(BusMode::SdDs, 4), 12_500_000);
        assert_eq!(r(BusMode::SdHs, 4), 25_000_000);
        assert_eq!(r(BusMode::Sdr50, 4), 50_000_000);
        assert_eq!(r(BusMode::Sdr104, 4), 104_000_000);
        assert_eq!(r(BusMode::Ddr50, 4), 50_000_000);
        assert!(BusTiming::new(BusMode::Sdr104, 8, 0, 2).is_err());
        assert!(BusTiming::new(BusMode::Sdr104, 1, 0, 2).is_err());
        assert!(BusTiming::new(BusMode::SdHs, 1, 0, 2).is_ok());
    }

    /// The data-phase time of N blocks is exactly (per-block clocks × N) / clock, per mode,
    /// with the per-block clocks written out from the framing rules.
    #[test]
    fn transfer_time_is_the_framing_arithmetic() {
        // (mode, width, expected read clocks/block, expected write clocks/block)
        let cases = [
            (
                BusMode::Legacy,
                1,
                4096 + 2 + 16 + 2,
                2 + 4096 + 2 + 16 + 7 + 2,
            ),
            (BusMode::Legacy, 4, 1024 + 20, 1024 + 29),
            (BusMode::Hs, 8, 512 + 20, 512 + 29),
            (BusMode::Ddr52, 8, 256 + 20, 256 + 29),
            (BusMode::Ddr52, 4, 512 + 20, 512 + 29),
            (BusMode::Hs200, 8, 512 + 20, 512 + 29),
            (BusMode::Hs400, 8, 256 + 20, 256 + 29),
            // SD at 4 bits: 1024 payload clocks per line, 512 on both edges in DDR50.
            (BusMode::SdHs, 4, 1024 + 20, 1024 + 29),
            (BusMode::Sdr104, 4, 1024 + 20, 1024 + 29),
            (BusMode::Ddr50, 4, 512 + 20, 512 + 29),
        ];
        for (mode, w, rc, wc) in cases {
            let b = BusTiming::new(mode, w, 0, 2).unwrap();
            assert_eq!(b.read_block_clks(), rc, "{mode:?}/{w}");
            assert_eq!(b.write_block_clks(), wc, "{mode:?}/{w}");
            for n in [1u64, 8, 256, 1024] {
                let f = mode.max_clock_hz() as u128;
                let exp_r = ((n * rc) as u128 * 1_000_000_000).div_ceil(f) as u64;
                let exp_w = ((n * wc) as u128 * 1_000_000_000).div_ceil(f) as u64;
                assert_eq!(b.read_xfer_ns(n), exp_r);
                assert_eq!(b.write_xfer_ns(n), exp_w);
            }
        }
        // Spot values: HS400 4 KiB read = 8 × 276 clocks × 5 ns = 11 040 ns; HS200 = 21 280 ns.
        let hs400 = BusTiming::new(BusMode::Hs400, 8, 0, 2).unwrap();
        assert_eq!(hs400.read_xfer_ns(8), 11_040);
        let hs200 = BusTiming::new(BusMode::Hs200, 8, 0, 2).unwrap();
        assert_eq!(hs200.read_xfer_ns(8), 21_280);
        // A command with R1 at 200 MHz: (48 + 2 + 48 + 8) × 5 ns = 530 ns.
        assert_eq!(hs400.cmd_ns(R1_BITS), 530);
        // 52 MHz does not divide 1e9: rounding happens once per span.
        let hs = BusTiming::new(BusMode::Hs, 8, 0, 2).unwrap();
        assert_eq!(
            hs.read_xfer_ns(3),
            (3u64 * 532 * 1_000_000_000).div_ceil(52_000_000)
        );
    }
}
