//! A running digest of the event sequence (FNV-1a over little-endian words).
//!
//! Every handled event feeds `(time, kind, id)` in; two runs with the same input and seed
//! produce the same digest, and almost any divergence (a different order, a different time)
//! changes it. Printed as `blksim.event_digest` in the JSON.

#[derive(Clone, Debug)]
pub struct Digest {
    h: u64,
    n: u64,
}

impl Default for Digest {
    fn default() -> Self {
        Digest {
            h: 0xcbf2_9ce4_8422_2325,
            n: 0,
        }
    }
}

impl Digest {
    #[inline]
    pub fn feed(&mut self, word: u64) {
        // Word-at-a-time FNV-1a variant: cheap enough for the hot path.
        self.h ^= word;
        self.h = self.h.wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
        self.n += 1;
    }

    pub fn event(&mut self, time: u64, kind: u64, id: u64) {
        self.feed(time);
        self.feed(kind);
        self.feed(id);
    }

    pub fn value(&self) -> u64 {
        self.h
    }

    pub fn hex(&self) -> String {
        format!("{:016x}", self.h)
    }

    pub fn words(&self) -> u64 {
        self.n
    }
}
