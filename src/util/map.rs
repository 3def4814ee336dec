//! A map kept as one vector sorted by key: what `BTreeMap` gave the status file, the
//! feeds' validators and the overview (keys in order, lookups by key), for a few
//! hundred entries at most.
//!
//! Why not `BTreeMap`: each key and value type instantiates its own node code
//! (insert, split, merge, steal, iterate, drop), about 5 KB of the router binary
//! per pair of types; these maps are small, so binary search over a vector is as fast
//! and each instantiation is a few hundred bytes. Inserting into the middle moves the
//! entries after it, which is what keeps this for small maps only.

use std::borrow::Borrow;

/// Entries sorted by key, each key once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortedMap<K, V> {
    items: Vec<(K, V)>,
}

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap { items: Vec::new() }
    }
}

impl<K: Ord, V> SortedMap<K, V> {
    /// An empty map.
    pub const fn new() -> Self {
        SortedMap { items: Vec::new() }
    }

    fn find<Q: Ord + ?Sized>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        self.items.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// The value of `key`.
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| &self.items[i].1)
    }

    /// The value of `key`, to change it.
    pub fn get_mut<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| &mut self.items[i].1)
    }

    /// Whether `key` has a value.
    pub fn contains_key<Q: Ord + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.find(key).is_ok()
    }

    /// Sets the value of `key`, giving back the one it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.items[i].1, value)),
            Err(i) => {
                self.items.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes `key`, giving back its value.
    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| self.items.remove(i).1)
    }

    /// The value of `key`, inserted with `make` first when there is none.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                self.items.insert(i, (key, make()));
                i
            }
        };
        &mut self.items[i].1
    }

    /// Keeps the entries for which `keep` says so.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        self.items.retain_mut(|(k, v)| keep(k, v));
    }
}

impl<K, V> SortedMap<K, V> {
    /// The entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> + ExactSizeIterator {
        self.items.iter().map(|(k, v)| (k, v))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator {
        self.items.iter().map(|(k, _)| k)
    }

    /// The values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator {
        self.items.iter().map(|(_, v)| v)
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.items.clear();
    }
}

impl<K: Ord + Borrow<Q>, Q: Ord + ?Sized, V> std::ops::Index<&Q> for SortedMap<K, V> {
    type Output = V;
    /// The value of `key`; panics without one, as `BTreeMap`'s index does.
    fn index(&self, key: &Q) -> &V {
        self.get(key).expect("no entry for the key")
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for SortedMap<K, V> {
    /// Later values of a repeated key win, as with `BTreeMap`.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = SortedMap::new();
        m.extend(iter);
        m
    }
}

impl<K: Ord, V> Extend<(K, V)> for SortedMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K, V> IntoIterator for SortedMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, K, V> IntoIterator for &'a SortedMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::SortedMap;
    use std::collections::BTreeMap;

    /// The same operations on a `BTreeMap` and on a `SortedMap` leave the same entries
    /// in the same order, and give back the same values.
    #[test]
    fn behaves_as_a_btree_map() {
        let mut a = BTreeMap::new();
        let mut b = SortedMap::new();
        let mut x: u32 = 7;
        for step in 0..2000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let key = format!("k{}", (x >> 8) % 97);
            match step % 5 {
                0..=2 => assert_eq!(a.insert(key.clone(), step), b.insert(key, step)),
                3 => assert_eq!(a.remove(&key), b.remove(key.as_str())),
                _ => {
                    assert_eq!(a.get(&key), b.get(key.as_str()));
                    *a.entry(key.clone()).or_insert(0) += 1;
                    *b.get_or_insert_with(key, || 0) += 1;
                }
            }
            assert_eq!(a.len(), b.len());
        }
        a.retain(|_, v| *v % 3 != 0);
        b.retain(|_, v| *v % 3 != 0);
        assert!(a.iter().eq(b.iter()));
        assert!(a.clone().into_iter().eq(b.clone()));
        let c: SortedMap<_, _> = a.clone().into_iter().rev().collect();
        assert_eq!(c, b);
    }
}
