//! fio's `random_generator=lfsr` (`lib/lfsr.c`): a maximal-length XNOR linear feedback shift
//! register over the file's blocks. It visits every block exactly once per pass without a
//! random map, in an order that depends on the number of blocks and on its seed
//! (`rand_seeds[FIO_RAND_BLOCK_OFF]`, which with `randrepeat` is `FIO_RANDSEED *
//! thread_number` whatever `randseed` says).

/// Tap positions per register length (`lfsr_taps` in fio's `lib/lfsr.c`, from
/// http://home1.gte.net/res0658s/electronics/LFSRtaps.html). Lengths below 3 do not exist.
const TAPS: [&[u8]; 64] = [
    &[],
    &[],
    &[],
    &[3, 2],
    &[4, 3],
    &[5, 3],
    &[6, 5],
    &[7, 6],
    &[8, 6, 5, 4],
    &[9, 5],
    &[10, 7],
    &[11, 9],
    &[12, 6, 4, 1],
    &[13, 4, 3, 1],
    &[14, 5, 3, 1],
    &[15, 14],
    &[16, 15, 13, 4],
    &[17, 14],
    &[18, 11],
    &[19, 6, 2, 1],
    &[20, 17],
    &[21, 19],
    &[22, 21],
    &[23, 18],
    &[24, 23, 22, 17],
    &[25, 22],
    &[26, 6, 2, 1],
    &[27, 5, 2, 1],
    &[28, 25],
    &[29, 27],
    &[30, 6, 4, 1],
    &[31, 28],
    &[32, 31, 29, 1],
    &[33, 20],
    &[34, 27, 2, 1],
    &[35, 33],
    &[36, 25],
    &[37, 5, 4, 3, 2, 1],
    &[38, 6, 5, 1],
    &[39, 35],
    &[40, 38, 21, 19],
    &[41, 38],
    &[42, 41, 20, 19],
    &[43, 42, 38, 37],
    &[44, 43, 18, 17],
    &[45, 44, 42, 41],
    &[46, 45, 26, 25],
    &[47, 42],
    &[48, 47, 21, 20],
    &[49, 40],
    &[50, 49, 24, 23],
    &[51, 50, 36, 35],
    &[52, 49],
    &[53, 52, 38, 37],
    &[54, 53, 18, 17],
    &[55, 31],
    &[56, 55, 35, 34],
    &[57, 50],
    &[58, 39],
    &[59, 58, 38, 37],
    &[60, 59],
    &[61, 60, 46, 45],
    &[62, 61, 6, 5],
    &[63, 62],
];

/// Why `lfsr_init` fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LfsrError {
    /// No register is long enough: 2^63 blocks or more.
    TooManyBlocks,
    /// A spin over 15.
    Spin,
    /// The seed is the register's forbidden all-ones state.
    AllOnesSeed,
}

/// `struct fio_lfsr`, with the seed each pass restarts it from (`fio_file_reset`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lfsr {
    seed: u64,
    xormask: u64,
    last_val: u64,
    cached_bit: u64,
    max_val: u64,
    num_vals: u64,
    cycle_length: u64,
    cached_cycle_length: u64,
    spin: u32,
}

impl Lfsr {
    /// `lfsr_init(fl, nums, seed, spin)`, failing where fio fails ("failed initializing
    /// LFSR").
    pub fn new(nums: u64, seed: u64, spin: u32) -> Result<Lfsr, LfsrError> {
        // `find_lfsr`: the shortest register with more states than `nums`, since the
        // all-ones state is never reached.
        let len = (3..64)
            .find(|&i| (1u64 << i) > nums)
            .ok_or(LfsrError::TooManyBlocks)?;
        let taps = TAPS[len];
        let mut fl = Lfsr {
            seed,
            // `nums - 1` wraps for an empty file, as in fio.
            max_val: nums.wrapping_sub(1),
            xormask: taps.iter().fold(0, |m, &t| m | 1u64 << (t - 1)),
            cached_bit: 1u64 << (taps[0] - 1),
            last_val: 0,
            num_vals: 0,
            cycle_length: 0,
            cached_cycle_length: 0,
            spin: 0,
        };
        if !fl.prepare_spin(spin) {
            return Err(LfsrError::Spin);
        }
        if !fl.reset() {
            return Err(LfsrError::AllOnesSeed);
        }
        Ok(fl)
    }

    /// `prepare_spin`: with a spin, `(2^n - 1) * i % (spin + 1) == 0` for some `i <= spin`
    /// repeats a sub-sequence after `cycle_length` values, so one extra step is taken there.
    fn prepare_spin(&mut self, spin: u32) -> bool {
        if spin > 15 {
            return false;
        }
        let max = (self.cached_bit << 1) - 1;
        let s = u64::from(spin) + 1;
        let (x, y) = (max / s, max % s);
        self.cycle_length = 0;
        self.spin = spin;
        for i in 1..=u64::from(spin) {
            if (y * i) % s == 0 {
                self.cycle_length = x * i + (y * i) / s;
                break;
            }
        }
        self.cached_cycle_length = self.cycle_length;
        // fio increments it once here, so the first `lfsr_next` takes `spin + 2` steps even
        // without a spin cycle (spin 0: two steps, then one per value).
        self.cycle_length += 1;
        true
    }

    /// `lfsr_reset`: start over from the seed; false for the all-ones state (fio's callers
    /// other than `lfsr_init` ignore that and go on from it).
    pub fn reset(&mut self) -> bool {
        let bitmask = (self.cached_bit << 1) - 1;
        self.num_vals = 0;
        self.last_val = self.seed & bitmask;
        self.last_val != bitmask
    }

    /// `__LFSR_NEXT` repeated `spin + 1` times (`__lfsr_next`'s switch falls through from
    /// case `spin` to case 0, and does nothing past 15).
    #[inline]
    fn step(&mut self, spin: u32) {
        if spin > 15 {
            return;
        }
        for _ in 0..=spin {
            let v = self.last_val;
            self.last_val = ((v >> 1) | self.cached_bit) ^ ((v & 1).wrapping_sub(1) & self.xormask);
        }
    }

    /// `lfsr_next`: the next value in `[0, nums)`, None once `nums` values were given.
    pub fn next_val(&mut self) -> Option<u64> {
        let n = self.num_vals;
        self.num_vals += 1;
        if n > self.max_val {
            return None;
        }
        loop {
            if self.cycle_length != 0 {
                self.cycle_length -= 1;
                if self.cycle_length == 0 {
                    self.step(self.spin + 1);
                    self.cycle_length = self.cached_cycle_length;
                } else {
                    self.step(self.spin);
                }
            } else {
                self.step(self.spin);
            }
            if self.last_val <= self.max_val {
                return Some(self.last_val);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value in `[0, nums)` comes exactly once, then the register is done: fio's
    /// promise for `random_generator=lfsr` (one pass, no random map).
    #[test]
    fn visits_every_value_once() {
        for nums in [1u64, 2, 5, 7, 8, 100, 1000, 4096, 5000] {
            for seed in [0u64, 1, 0x1234_5678, 0xb189_9bed] {
                let Ok(mut l) = Lfsr::new(nums, seed, 0) else {
                    // Only the all-ones state is refused.
                    let len = (3..64).find(|&i| (1u64 << i) > nums).unwrap();
                    assert_eq!(seed & ((1 << len) - 1), (1 << len) - 1);
                    continue;
                };
                let mut seen = vec![false; nums as usize];
                for _ in 0..nums {
                    let v = l.next_val().expect("a value per block") as usize;
                    assert!(!seen[v], "nums {nums} seed {seed}: {v} twice");
                    seen[v] = true;
                }
                assert_eq!(l.next_val(), None);
            }
        }
    }

    /// The first values for `size=64m bs=4k` (16384 blocks) with fio's default block seed
    /// for job 1 (`FIO_RANDSEED` = 0xb1899bed): fio 3.33's `write_iolog` of
    /// `--rw=randread --random_generator=lfsr --ioengine=null` gives these block numbers.
    #[test]
    fn matches_fio_for_job_one() {
        let mut l = Lfsr::new(16384, 0xb189_9bed, 0).unwrap();
        let got: Vec<u64> = (0..8).map(|_| l.next_val().unwrap()).collect();
        assert_eq!(got, [1787, 4319, 7747, 5064, 10724, 13554, 14969, 3742]);
    }

    #[test]
    fn refuses_the_all_ones_seed_and_long_spins() {
        assert_eq!(Lfsr::new(4, 7, 0), Err(LfsrError::AllOnesSeed));
        assert!(Lfsr::new(4, 6, 0).is_ok());
        assert_eq!(Lfsr::new(4, 6, 16), Err(LfsrError::Spin));
        assert_eq!(Lfsr::new(1 << 63, 0, 0), Err(LfsrError::TooManyBlocks));
    }
}
