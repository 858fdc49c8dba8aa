//! A slab of reusable slots addressed by `u32` ids.
//!
//! Requests live here for their whole life; every other layer holds the id. Freed slots go on
//! a free list and are handed out again (most recently freed first, which keeps the working set
//! hot), so once the slab has grown to the peak number of requests in flight, nothing more is
//! allocated however many I/Os are simulated.

pub struct Slab<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Slab<T> {
    pub fn new() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    pub fn insert(&mut self, v: T) -> u32 {
        self.live += 1;
        if let Some(id) = self.free.pop() {
            debug_assert!(self.slots[id as usize].is_none());
            self.slots[id as usize] = Some(v);
            id
        } else {
            self.slots.push(Some(v));
            (self.slots.len() - 1) as u32
        }
    }

    /// Remove and return the value; panics if the slot is empty (a double free is a bug).
    pub fn remove(&mut self, id: u32) -> T {
        let v = self.slots[id as usize]
            .take()
            .expect("slab: double free or bad id");
        self.free.push(id);
        self.live -= 1;
        v
    }

    /// Drop the value in its slot; panics if the slot is empty. Unlike [`Self::remove`] this
    /// moves nothing: callers that only need a few fields read them first (the null path
    /// spent 3 % copying whole requests out of the slab to drop them).
    pub fn discard(&mut self, id: u32) {
        let slot = &mut self.slots[id as usize];
        assert!(slot.is_some(), "slab: double free or bad id");
        *slot = None;
        self.free.push(id);
        self.live -= 1;
    }

    pub fn get(&self, id: u32) -> &T {
        self.slots[id as usize].as_ref().expect("slab: stale id")
    }

    pub fn get_mut(&mut self, id: u32) -> &mut T {
        self.slots[id as usize].as_mut().expect("slab: stale id")
    }

    pub fn try_get(&self, id: u32) -> Option<&T> {
        self.slots.get(id as usize).and_then(|s| s.as_ref())
    }

    pub fn try_get_mut(&mut self, id: u32) -> Option<&mut T> {
        self.slots.get_mut(id as usize).and_then(|s| s.as_mut())
    }

    pub fn contains(&self, id: u32) -> bool {
        self.try_get(id).is_some()
    }

    /// The live entries, in slot order.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }

    /// Number of live entries.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Peak number of slots ever allocated (the memory high-water mark).
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_recycled() {
        let mut s = Slab::new();
        for round in 0..1000u32 {
            let a = s.insert(round);
            let b = s.insert(round + 1);
            assert_eq!(*s.get(a), round);
            s.remove(a);
            s.remove(b);
        }
        assert_eq!(s.capacity_used(), 2);
        assert!(s.is_empty());
    }

    #[test]
    #[should_panic]
    fn double_free_panics() {
        let mut s = Slab::new();
        let a = s.insert(1);
        s.remove(a);
        s.remove(a);
    }
}
