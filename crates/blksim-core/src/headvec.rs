//! A vector that drops entries from its front by moving a start index: for lists that are
//! kept in order, searched as one slice, and lose their oldest entries most often (a lock's
//! timeline, trimmed on every acquisition; a scheduler's FIFO list). The dropped prefix is
//! removed in one move once it is half the array, so the cost per dropped entry stays
//! constant and memory stays at about twice the live entries.

#[derive(Clone, Debug)]
pub struct HeadVec<T> {
    /// `items[head..]` are the entries.
    items: Vec<T>,
    head: usize,
}

impl<T> Default for HeadVec<T> {
    fn default() -> Self {
        HeadVec {
            items: Vec::new(),
            head: 0,
        }
    }
}

impl<T> HeadVec<T> {
    /// The entries, in order.
    #[inline]
    pub fn live(&self) -> &[T] {
        &self.items[self.head..]
    }

    #[inline]
    pub fn live_mut(&mut self) -> &mut [T] {
        &mut self.items[self.head..]
    }

    pub fn len(&self) -> usize {
        self.items.len() - self.head
    }

    pub fn is_empty(&self) -> bool {
        self.head == self.items.len()
    }

    pub fn first(&self) -> Option<&T> {
        self.items.get(self.head)
    }

    pub fn last(&self) -> Option<&T> {
        self.live().last()
    }

    /// Append `v` after the last entry.
    #[inline]
    pub fn push(&mut self, v: T) {
        self.items.push(v);
    }

    /// Insert `v` at index `i` of [`Self::live`].
    pub fn insert(&mut self, i: usize, v: T) {
        self.items.insert(self.head + i, v);
    }

    /// Remove the entry at index `i` of [`Self::live`].
    pub fn remove(&mut self, i: usize) {
        if i == 0 {
            self.drop_front(1);
        } else {
            self.items.remove(self.head + i);
        }
    }

    /// Drop the first `n` entries.
    pub fn drop_front(&mut self, n: usize) {
        self.head += n;
        if self.head == self.items.len() {
            self.items.clear();
            self.head = 0;
        } else if self.head >= 32 && 2 * self.head >= self.items.len() {
            self.items.drain(..self.head);
            self.head = 0;
        }
    }

    /// How many dropped entries are still in the array (tests: it falls back to 0 when the
    /// prefix is removed).
    pub fn head(&self) -> usize {
        self.head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a `VecDeque`: random inserts, removals (front and middle) and front drops.
    #[test]
    fn agrees_with_a_deque() {
        let mut a: HeadVec<u64> = HeadVec::default();
        let mut b = std::collections::VecDeque::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut compacted = false;
        for op in 0..50_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let head = a.head();
            match x % 5 {
                0 | 1 => {
                    let i = (x >> 8) as usize % (b.len() + 1);
                    a.insert(i, op);
                    b.insert(i, op);
                }
                2 if !b.is_empty() => {
                    let i = if x & 256 == 0 {
                        0
                    } else {
                        (x >> 8) as usize % b.len()
                    };
                    a.remove(i);
                    b.remove(i);
                }
                3 if !b.is_empty() => {
                    let n = 1 + (x >> 8) as usize % b.len().min(4);
                    a.drop_front(n);
                    b.drain(..n);
                }
                _ => {}
            }
            compacted |= a.head() < head && !a.is_empty();
            assert_eq!(a.live(), b.iter().copied().collect::<Vec<_>>().as_slice());
            assert_eq!(a.len(), b.len());
        }
        assert!(compacted);
    }
}
