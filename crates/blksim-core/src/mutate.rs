//! Deterministic input mutation for the parsers' no-panic tests: from a seed, valid inputs
//! are changed by replacing, deleting, duplicating and splicing bytes, by replacing the value
//! after an assignment, and by truncation. The same seed gives the same cases, so a failure
//! reproduces.

/// How a format assigns values: `key: value,` (JSON) or `key = value\n` (TOML).
#[derive(Clone, Copy, Debug)]
pub struct Syntax {
    /// The byte before a value.
    pub assign: u8,
    /// Bytes that end a value.
    pub value_end: &'static [u8],
    /// Written before a replacement value.
    pub value_prefix: &'static str,
}

pub const JSON: Syntax = Syntax {
    assign: b':',
    value_end: b",}\n",
    value_prefix: "",
};

pub const TOML: Syntax = Syntax {
    assign: b'=',
    value_end: b"\n",
    value_prefix: " ",
};

pub struct Mutator {
    state: u64,
}

impl Mutator {
    pub fn new(seed: u64) -> Mutator {
        Mutator { state: seed }
    }

    pub fn draw(&mut self) -> u64 {
        crate::rng::splitmix64(&mut self.state)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.draw() % n.max(1) as u64) as usize
    }

    /// `s` with one to `max_edits` edits; replacement values are drawn from `values`.
    pub fn mutate(&mut self, s: &str, syntax: Syntax, values: &[&str], max_edits: usize) -> String {
        let mut b = s.as_bytes().to_vec();
        for _ in 0..1 + self.below(max_edits) {
            if b.is_empty() {
                break;
            }
            let at = self.below(b.len());
            match self.below(5) {
                0 => b[at] = self.draw() as u8,
                1 => {
                    let n = self.below(64).min(b.len() - at);
                    b.drain(at..at + n);
                }
                2 => {
                    let n = self.below(64).min(b.len() - at);
                    let piece: Vec<u8> = b[at..at + n].to_vec();
                    let to = self.below(b.len());
                    b.splice(to..to, piece);
                }
                3 => {
                    if let Some(c) = b[at..].iter().position(|&x| x == syntax.assign) {
                        let v = at + c + 1;
                        let end = b[v..]
                            .iter()
                            .position(|x| syntax.value_end.contains(x))
                            .map_or(b.len(), |e| v + e);
                        let new = format!(
                            "{}{}",
                            syntax.value_prefix,
                            values[self.below(values.len())]
                        );
                        b.splice(v..end, new.into_bytes());
                    }
                }
                _ => b.truncate(at),
            }
        }
        String::from_utf8_lossy(&b).into_owned()
    }
}
