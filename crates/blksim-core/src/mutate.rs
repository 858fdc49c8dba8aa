//! Deterministic input mutation for the parsers' no-panic tests: from a seed, valid inputs
//! are changed by replacing, deleting, duplicating and splicing bytes, by replacing the value
//! after an assignment (or a field separator), by overwriting a word of binary input, and by
//! truncation. The same seed gives the same cases, so a failure reproduces.

/// How a format assigns values: `key: value,` (JSON), `key = value\n` (TOML), or where a
/// field starts (a trace's space- or comma-separated records).
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

/// Space-separated fields (fio iologs, blkparse text, MQSim/DiskSim ASCII traces): a value
/// follows a space.
pub const FIELDS: Syntax = Syntax {
    assign: b' ',
    value_end: b" \n",
    value_prefix: "",
};

/// Comma-separated fields (MSR Cambridge, Alibaba and Tencent CSV traces).
pub const CSV: Syntax = Syntax {
    assign: b',',
    value_end: b",\n",
    value_prefix: "",
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
        let b = self.edit(s.as_bytes(), Some((syntax, values)), max_edits);
        String::from_utf8_lossy(&b).into_owned()
    }

    /// Binary input with one to `max_edits` edits: the same as text, except that where text
    /// gets a value replaced a word is overwritten (all ones, all zeros or drawn).
    pub fn mutate_bytes(&mut self, b: &[u8], max_edits: usize) -> Vec<u8> {
        self.edit(b, None, max_edits)
    }

    fn edit(&mut self, s: &[u8], values: Option<(Syntax, &[&str])>, max_edits: usize) -> Vec<u8> {
        let mut b = s.to_vec();
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
                3 => match values {
                    Some((syntax, values)) => {
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
                    None => {
                        let w = match self.below(3) {
                            0 => [0xff; 8],
                            1 => [0; 8],
                            _ => self.draw().to_le_bytes(),
                        };
                        let n = w.len().min(b.len() - at);
                        b[at..at + n].copy_from_slice(&w[..n]);
                    }
                },
                _ => b.truncate(at),
            }
        }
        b
    }
}
