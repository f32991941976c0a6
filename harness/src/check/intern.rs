//! Interns the checker's strings (accounts, keys, jobs, resources) as `u32`
//! ids.
//!
//! A million-attempt history has hundreds of thousands of distinct keys and
//! jobs. Every name lives in one arena string and the table maps a name's
//! 64-bit hash to the newest id with that hash, with a chain for the rare
//! collision, so interning costs no allocation per name and dropping the
//! interner frees a handful of buffers instead of one box per name twice
//! over (which, with a map of boxed strings, took a tenth of a check).

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};

use super::aggregate::NONE;

/// Strings as `u32` ids, in the order they were first interned.
#[derive(Default)]
pub(crate) struct Interner {
    /// Every name, back to back.
    text: String,
    /// `ends[id]`: where name `id` ends in `text` (it starts where `id - 1` ends).
    ends: Vec<usize>,
    /// Hash of a name -> the newest id with that hash.
    heads: FxHashMap<u64, u32>,
    /// `next[id]`: the previous id with the same hash, or [`NONE`].
    next: Vec<u32>,
}

fn hash(s: &str) -> u64 {
    let mut h = FxHasher::default();
    s.hash(&mut h);
    h.finish()
}

impl Interner {
    fn find(&self, h: u64, s: &str) -> Option<u32> {
        let mut id = *self.heads.get(&h)?;
        while id != NONE {
            if self.name(id) == s {
                return Some(id);
            }
            id = self.next[id as usize];
        }
        None
    }

    /// The id of `s`, interning it first if it is new.
    pub fn intern(&mut self, s: &str) -> u32 {
        let h = hash(s);
        if let Some(id) = self.find(h, s) {
            return id;
        }
        let id = self.ends.len() as u32;
        self.text.push_str(s);
        self.ends.push(self.text.len());
        let prev = self.heads.insert(h, id).unwrap_or(NONE);
        self.next.push(prev);
        id
    }

    /// The id of `s`, if it was interned.
    #[cfg(test)]
    pub fn get(&self, s: &str) -> Option<u32> {
        self.find(hash(s), s)
    }

    /// The name of `id` (empty for [`NONE`]).
    pub fn name(&self, id: u32) -> &str {
        if id == NONE {
            return "";
        }
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    /// How many names there are; their ids are `0..len()`.
    pub fn len(&self) -> usize {
        self.ends.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_intern_once_and_read_back_including_the_empty_one() {
        let mut i = Interner::default();
        let words = ["acct_a", "tsk_1", "", "tsk_1", "é😀", "acct_a", "tsk_10"];
        let ids: Vec<u32> = words.iter().map(|w| i.intern(w)).collect();
        assert_eq!(ids, [0, 1, 2, 1, 3, 0, 4]);
        assert_eq!(i.len(), 5);
        for (w, id) in words.iter().zip(&ids) {
            assert_eq!(i.name(*id), *w);
            assert_eq!(i.get(w), Some(*id));
        }
        assert_eq!(i.get("tsk_2"), None);
        assert_eq!(i.name(NONE), "");
    }

    #[test]
    fn names_whose_hashes_collide_stay_apart() {
        // Force a collision: chain two names under one hash by hand.
        let mut i = Interner::default();
        let a = i.intern("a");
        let h = hash("a");
        // What `intern` does for a new name, with the colliding hash.
        let b = i.ends.len() as u32;
        i.text.push('b');
        i.ends.push(i.text.len());
        let prev = i.heads.insert(h, b).unwrap_or(NONE);
        i.next.push(prev);
        assert_eq!(i.find(h, "a"), Some(a));
        assert_eq!(i.find(h, "b"), Some(b));
        assert_eq!(i.find(h, "c"), None);
    }
}
