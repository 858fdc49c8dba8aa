//! eMMC card model: bus ([`bus`]), NAND + FTLs ([`ftl`]), the card ([`card`]) and the parameter
//! table ([`params`]). Build a card from `card.*` keys (and the bus from `host.bus_*`) with
//! [`build_card`].

pub mod bus;
pub mod card;
pub mod content;
pub mod ftl;
pub mod params;

pub use bus::{BusMode, BusTiming};
pub use card::{Access, Card, CardCmd, CardConfig, CardOp, CardTiming, EmmcCard, Proto};
pub use ftl::{AuFtl, CardState, Ftl, Nand, PageFtl};
pub use params::{
    check_known_keys, get_bool, get_enum, get_u32, get_u64, ParamDef, ParamLookup, ParamMap,
    CARD_CALIBRATE, CARD_PARAMS, HOST_PARAMS,
};

/// The bus the host sets up (`host.bus_mode`, `host.bus_width`, `host.bus_clock_hz`) with the
/// card's N_CR (`card.ncr_clks`).
pub fn build_bus(p: &dyn ParamLookup) -> Result<BusTiming, String> {
    let mode = BusMode::parse(get_enum(p, "host.bus_mode")?)?;
    BusTiming::new(
        mode,
        get_u32(p, "host.bus_width")?,
        get_u64(p, "host.bus_clock_hz")?,
        get_u64(p, "card.ncr_clks")?,
    )
}

pub fn build_nand(p: &dyn ParamLookup) -> Result<Nand, String> {
    // The table's bounds keep every count here at least 1.
    Ok(Nand {
        page_bytes: get_u64(p, "card.page_kib")? * 1024,
        parallel: get_u64(p, "card.planes")? * get_u64(p, "card.dies")?,
        pages_per_block: get_u64(p, "card.pages_per_block")?,
        t_r: get_u64(p, "card.t_r_ns")?,
        t_prog: get_u64(p, "card.t_prog_ns")?,
        t_bers: get_u64(p, "card.t_bers_ns")?,
        channel_mbps: get_u64(p, "card.channel_mbps")?,
    })
}

/// A card from `card.*` keys, on the bus from `host.bus_*`.
pub fn build_card(p: &dyn ParamLookup) -> Result<EmmcCard, String> {
    check_known_keys(p)?;
    let bus = build_bus(p)?;
    let nand = build_nand(p)?;
    let capacity_bytes = get_u64(p, "card.capacity_mib")? << 20;
    let state = CardState::parse(get_enum(p, "card.state")?)?;
    let ftl = match get_enum(p, "card.ftl")? {
        "page" => {
            let prefill = match state {
                CardState::Used => get_u64(p, "card.prefill_pct")?,
                CardState::Fresh | CardState::Steady => 0,
            };
            // The FTL keeps state for at most `card.ftl_model_gib`, `MAX_MODEL_UNITS`
            // mapping units and `MAX_MODEL_BLOCKS` blocks; a larger card folds into it.
            let unit = get_u64(p, "card.map_unit_kib")? * 1024;
            let model = ftl::model_space(
                capacity_bytes,
                get_u64(p, "card.ftl_model_gib")? << 30,
                unit,
                nand.block_bytes(),
            );
            let mut f = PageFtl::new(
                &nand,
                model,
                unit,
                get_u64(p, "card.op_pct")?,
                get_u32(p, "card.gc_low_blocks")?,
                prefill,
            )
            .map_err(|e| e.describe("card.map_unit_kib", "card.ftl_model_gib"))?;
            if capacity_bytes > model {
                f.fold_larger_device(model);
            }
            if state == CardState::Steady {
                f.precondition_steady();
            }
            Ftl::Page(f)
        }
        _ => {
            let au = get_u64(p, "card.au_kib")? * 1024;
            let mut f = AuFtl::new(
                au,
                get_u32(p, "card.au_open")?,
                get_bool(p, "card.au_random_in_open")?,
                get_u64(p, "card.au_merge_fw_ns")?,
            )
            .with_gap_merge(get_bool(p, "card.au_gap_merge")?);
            if state != CardState::Fresh {
                f.open_elsewhere(capacity_bytes);
            }
            Ftl::Au(f)
        }
    };
    let cfg = CardConfig {
        name: if get_enum(p, "card.kind")? == "sd" {
            "sd"
        } else {
            "emmc"
        }
        .into(),
        capacity_bytes,
        read_fw: get_u64(p, "card.read_fw_ns")?,
        write_fw: get_u64(p, "card.write_fw_ns")?,
        cache_bytes: get_u64(p, "card.cache_kib")? * 1024,
        flush_fw: get_u64(p, "card.flush_fw_ns")?,
        trim_ns: get_u64(p, "card.trim_ns")?,
        trim_ns_per_mib: get_u64(p, "card.trim_ns_per_mib")?,
        read_buffer_bytes: get_u64(p, "card.read_buffer_kib")? * 1024,
        read_buffer_ns: get_u64(p, "card.read_buffer_ns")?,
        t_r_step: get_u64(p, "card.t_r_step_ns")?,
        bkops_interval: get_u64(p, "card.bkops_interval_ns")?,
        bkops: get_u64(p, "card.bkops_ns")?,
        map_seg_bytes: get_u64(p, "card.map_seg_kib")? * 1024,
        map_cache_segs: get_u32(p, "card.map_cache_segs")?,
        map_miss: get_u64(p, "card.map_miss_ns")?,
        debug_flush_skips_cache: get_bool(p, "card.debug_flush_skips_cache")?,
    };
    // A background operation longer than its period would hold the NAND engine forever
    // (and could not be caught up on in constant time, see `EmmcCard::run_bkops`).
    if cfg.bkops_interval > 0 && cfg.bkops >= cfg.bkops_interval {
        return Err(format!(
            "card.bkops_ns: {} must be shorter than card.bkops_interval_ns ({})",
            cfg.bkops, cfg.bkops_interval
        ));
    }
    let mut card = EmmcCard::new(cfg, bus, nand, ftl);
    // Content (data versions) is kept only for power cuts, which need it.
    if get_u64(p, "card.power_cut_ns")? > 0 || get_u64(p, "card.power_cut_after_ios")? > 0 {
        card.keep_content();
    }
    Ok(card)
}

#[cfg(test)]
mod tests {
    use super::bus::R1_BITS;
    use super::*;

    fn rd(sector: u64, n: u32) -> CardCmd {
        CardCmd {
            op: CardOp::Read,
            sector,
            nr_sectors: n,
            reliable: false,
            tag: 0,
        }
    }
    fn wr(sector: u64, n: u32) -> CardCmd {
        CardCmd {
            op: CardOp::Write,
            sector,
            nr_sectors: n,
            reliable: false,
            tag: 0,
        }
    }

    /// A 1 TiB card: its page FTL keeps state for `card.ftl_model_gib` (64 GiB, what a
    /// steady state is built over at setup) and the card's writes fold into it
    /// (`page_ftl_folds_a_larger_device_into_its_space`); a card within the bound is
    /// modelled whole.
    #[test]
    fn a_card_larger_than_the_ftl_model_folds_into_it() {
        for (mib, model_gib) in [("1048576", 64u64), ("32768", 32)] {
            let p = ParamMap::new().with("card.capacity_mib", mib);
            let c = build_card(&p).unwrap();
            let Ftl::Page(f) = &c.ftl else {
                panic!("page FTL")
            };
            assert_eq!(f.logical_bytes(), model_gib << 30, "{mib} MiB");
        }
    }

    /// The page FTL's modelled space on a 64 GiB card with `card.*` settings `sets`, in GiB.
    fn modelled_gib(sets: &[(&str, &str)]) -> u64 {
        let p = sets.iter().fold(
            ParamMap::new().with("card.capacity_mib", "65536"),
            |p, (k, v)| p.with(k, v),
        );
        let Ftl::Page(f) = &build_card(&p).unwrap().ftl else {
            panic!("page FTL")
        };
        f.logical_bytes() >> 30
    }

    /// Setup cost follows mapping units, so the modelled space is bounded in units too: a
    /// 64 GiB card with 1 KiB units keeps 2^24 of them (16 GiB) and folds the rest; with
    /// 4 KiB units the same card is modelled whole.
    #[test]
    fn the_ftl_model_is_bounded_in_mapping_units() {
        for (unit_kib, gib) in [("1", 16), ("2", 32), ("4", 64), ("16", 64)] {
            let got = modelled_gib(&[("card.map_unit_kib", unit_kib)]);
            assert_eq!(got, gib, "{unit_kib} KiB units");
        }
    }

    /// Small blocks bound the modelled space too: a block's bookkeeping is what a steady
    /// state over millions of one-page blocks spent its setup on.
    #[test]
    fn the_ftl_model_is_bounded_in_blocks() {
        for (ppb, gib) in [("1", 4), ("4", 16), ("256", 64)] {
            let got = modelled_gib(&[("card.page_kib", "16"), ("card.pages_per_block", ppb)]);
            assert_eq!(got, gib, "{ppb} pages per block");
        }
    }

    #[test]
    fn read_sequence_is_commands_then_sense_then_bus() {
        let p = ParamMap::new().with("card.capacity_mib", "64");
        let mut c = build_card(&p).unwrap();
        let bus = *c.bus();
        let nand = c.nand.clone();
        let t = c.submit(1000, &rd(0, 8), Proto::Cmd23);
        let r1 = bus.cmd_ns(R1_BITS);
        assert_eq!(t.cmd_end, 1000 + 2 * r1);
        // fw, then sense (t_R) and the first round over the channel, then 8 blocks on the bus.
        let ready = t.cmd_end + 20_000 + nand.t_r + nand.chan_ns(4096);
        assert_eq!(t.data_start, ready);
        // One round holding 4 KiB: t_R dominates the channel time of 4 KiB.
        let nand_end = t.cmd_end + 20_000 + nand.t_r.max(nand.chan_ns(4096));
        assert_eq!(
            t.data_end,
            (ready + bus.read_xfer_ns(8)).max(nand_end + bus.read_xfer_ns(8))
        );
        assert_eq!(t.busy_end, t.data_end);
        // Single block: CMD17, no CMD23.
        let t1 = c.submit(t.busy_end, &rd(64, 1), Proto::Cmd23);
        assert_eq!(t1.cmd_end - t1.cmd_start, r1);
        // Open-ended multi-block read adds CMD12.
        let t2 = c.submit(t1.busy_end, &rd(128, 8), Proto::OpenEnded);
        assert_eq!(t2.cmd_end - t2.cmd_start, r1);
        assert_eq!(
            t2.data_end,
            (t2.data_start + bus.read_xfer_ns(8))
                .max(t2.cmd_end + 20_000 + nand.t_r.max(nand.chan_ns(4096)) + bus.read_xfer_ns(8))
                + r1
        );
    }

    #[test]
    fn cache_absorbs_writes_then_stalls_and_flush_drains() {
        let p = ParamMap::new()
            .with("card.capacity_mib", "64")
            .with("card.cache_kib", "64")
            .with("card.t_prog_ns", "2ms");
        let mut c = build_card(&p).unwrap();
        let mut t = 0;
        let mut lat = Vec::new();
        for i in 0..64u64 {
            let x = c.submit(t, &wr(i * 8 * 97 % 131072, 8), Proto::Cmd23);
            lat.push(x.busy_end - x.cmd_start);
            t = x.busy_end;
        }
        // The first 16 writes (64 KiB) fit; later ones wait for write-back.
        assert!(lat[..16].iter().all(|&l| l < 60_000), "{lat:?}");
        assert!(c.stats.cache_stalls > 0);
        assert!(c.dirty_bytes() > 0);
        let f = c.submit(
            t,
            &CardCmd {
                op: CardOp::Flush,
                sector: 0,
                nr_sectors: 0,
                reliable: false,
                tag: 0,
            },
            Proto::Cmd23,
        );
        assert!(f.busy_end > f.cmd_end + 100_000);
        assert_eq!(c.dirty_bytes(), 0);
        // Reliable write goes through: busy includes a full page program.
        let r = c.submit(
            f.busy_end,
            &CardCmd {
                reliable: true,
                tag: 0,
                ..wr(0, 8)
            },
            Proto::Cmd23,
        );
        assert!(r.busy_end - r.data_start >= 2_000_000);
    }

    /// The L2P map cache: a sequential stream stays in one resident segment (one miss), random
    /// commands over more segments than fit miss every time; a read's miss delays the data, a
    /// write's miss lengthens its busy.
    #[test]
    fn map_cache_misses_cost_random_io_only() {
        let p = ParamMap::new()
            .with("card.capacity_mib", "256")
            .with("card.map_cache_segs", "2")
            .with("card.map_seg_kib", "1024")
            .with("card.map_miss_ns", "50us");
        let off = p.clone().with("card.map_cache_segs", "0");
        let mut c = build_card(&p).unwrap();
        let mut t = 0;
        for i in 0..64u64 {
            t = c.submit(t, &rd(i * 8, 8), Proto::Cmd23).busy_end;
        }
        assert_eq!(c.stats.map_misses, 1);
        // Random 4 KiB reads over 63 other segments (1 MiB each): every one misses.
        for i in 0..64u64 {
            t = c
                .submit(t, &rd((i * 37 % 63 + 1) * 2048 + 8, 8), Proto::Cmd23)
                .busy_end;
        }
        assert_eq!(c.stats.map_misses, 65);
        // Same command, miss vs whole map resident: +50 us before the data, +50 us of busy.
        let mut a = build_card(&p).unwrap();
        let mut b = build_card(&off).unwrap();
        let (ra, rb) = (
            a.submit(0, &rd(4096, 8), Proto::Cmd23),
            b.submit(0, &rd(4096, 8), Proto::Cmd23),
        );
        assert_eq!(ra.data_start - rb.data_start, 50_000);
        let (wa, wb) = (
            a.submit(ra.busy_end, &wr(81920, 8), Proto::Cmd23),
            b.submit(ra.busy_end, &wr(81920, 8), Proto::Cmd23),
        );
        assert_eq!(
            (wa.busy_end - wa.data_end) - (wb.busy_end - wb.data_end),
            50_000
        );
    }

    /// Data leaves the controller page by page: after the last page is over the NAND channel
    /// only that page still crosses the bus.
    #[test]
    fn read_tail_after_the_nand_is_one_page() {
        let p = ParamMap::new()
            .with("card.capacity_mib", "256")
            .with("card.channel_mbps", "20")
            .with("card.page_kib", "4")
            .with("host.bus_mode", "hs");
        let mut c = build_card(&p).unwrap();
        let cmd = rd(0, 128); // 64 KiB: channel-bound (20 MB/s < 52 MB/s bus)
        let acc = c.access(0, &cmd);
        assert_eq!(acc.tail_blocks, 8);
        let (end, _) = c.transfer(acc.ready, &cmd, &acc);
        assert_eq!(end, acc.nand_end + c.bus().read_xfer_ns(8));
    }

    /// A write-through write (no cache) is on NAND when its program ends, whether or not the
    /// card's engine has looked since: the next write to the same sectors does not supersede
    /// it, and a cut before that write's data arrives leaves the first version in place.
    #[test]
    fn a_finished_program_is_not_superseded_by_a_later_write() {
        let p = ParamMap::new()
            .with("card.capacity_mib", "64")
            .with("card.cache_kib", "0");
        let mut c = build_card(&p).unwrap();
        c.keep_content();
        c.stage_data(0, vec![(0, 8, 1)]);
        let w1 = c.submit(0, &wr(0, 8), Proto::Cmd23);
        // The second write's command comes well after the first is done; the cut comes
        // before its data crosses the bus.
        let t = w1.busy_end + 1_000_000;
        c.stage_data(1, vec![(0, 8, 2)]);
        let w2 = c.submit(t, &CardCmd { tag: 1, ..wr(0, 8) }, Proto::Cmd23);
        assert!(w2.data_start > t + 1);
        let changed = c.power_cut(t + 1);
        assert_eq!(changed, vec![(0, 8, 1)], "the first write survives");
    }

    #[test]
    fn build_rejects_bad_values_with_the_key() {
        let p = ParamMap::new()
            .with("host.bus_mode", "hs400")
            .with("host.bus_width", "4");
        assert!(build_card(&p).err().unwrap().contains("host.bus_width"));
        let p = ParamMap::new().with("card.ftl", "hybrid");
        assert!(build_card(&p).err().unwrap().contains("card.ftl"));
    }
}
