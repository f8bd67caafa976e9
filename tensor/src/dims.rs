//! A short list of sizes or strides kept in place: a layout's shape and strides live
//! inside the tensor for up to [`INLINE`] axes, so that making, cloning and dropping
//! a tensor costs no allocator calls for them (with `Vec`s, four of the dozen or so
//! allocator calls of a small op). Longer lists go to the heap.

use std::ops::{Deref, DerefMut};

/// Axes held in place; ranks above this (rare) are stored on the heap.
pub(crate) const INLINE: usize = 6;

/// A list of up to [`INLINE`] values in place, or any number on the heap; reads as a
/// slice.
#[derive(Clone)]
pub(crate) enum Dims<T: Copy + Default> {
    /// The first `len` of `items`.
    Inline { len: u8, items: [T; INLINE] },
    /// More than [`INLINE`] values.
    Heap(Vec<T>),
}

impl<T: Copy + Default> Dims<T> {
    /// The empty list.
    pub(crate) fn new() -> Self {
        Dims::Inline {
            len: 0,
            items: [T::default(); INLINE],
        }
    }

    /// `len` copies of `v`.
    pub(crate) fn filled(len: usize, v: T) -> Self {
        if len <= INLINE {
            Dims::Inline {
                len: len as u8,
                items: [v; INLINE],
            }
        } else {
            Dims::Heap(vec![v; len])
        }
    }

    /// A copy of `values`.
    pub(crate) fn from_slice(values: &[T]) -> Self {
        if values.len() <= INLINE {
            let mut items = [T::default(); INLINE];
            items[..values.len()].copy_from_slice(values);
            Dims::Inline {
                len: values.len() as u8,
                items,
            }
        } else {
            Dims::Heap(values.to_vec())
        }
    }

    /// Appends `v`, moving to the heap past [`INLINE`] values.
    pub(crate) fn push(&mut self, v: T) {
        match self {
            Dims::Inline { len, items } if (*len as usize) < INLINE => {
                items[*len as usize] = v;
                *len += 1;
            }
            Dims::Inline { len, items } => {
                let mut heap = items[..*len as usize].to_vec();
                heap.push(v);
                *self = Dims::Heap(heap);
            }
            Dims::Heap(heap) => heap.push(v),
        }
    }
}

impl<T: Copy + Default> From<Vec<T>> for Dims<T> {
    fn from(values: Vec<T>) -> Self {
        if values.len() <= INLINE {
            Dims::from_slice(&values)
        } else {
            Dims::Heap(values)
        }
    }
}

impl<T: Copy + Default> Deref for Dims<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Dims::Inline { len, items } => &items[..*len as usize],
            Dims::Heap(heap) => heap,
        }
    }
}

impl<T: Copy + Default> DerefMut for Dims<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Dims::Inline { len, items } => &mut items[..*len as usize],
            Dims::Heap(heap) => heap,
        }
    }
}

impl<'a, T: Copy + Default> IntoIterator for &'a Dims<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Copy + Default + PartialEq> PartialEq for Dims<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Copy + Default + Eq> Eq for Dims<T> {}

impl<T: Copy + Default + std::fmt::Debug> std::fmt::Debug for Dims<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Built at once, from a vector or by pushes, across the inline limit, the
        /// list reads back as the values, and equality is the slices'.
        #[test]
        fn reads_back_what_it_holds(values in proptest::collection::vec(0usize..100, 0..12)) {
            let whole = Dims::from_slice(&values);
            let from_vec = Dims::from(values.clone());
            let mut pushed = Dims::new();
            for &v in &values {
                pushed.push(v);
            }
            prop_assert_eq!(&*whole, &values[..]);
            prop_assert_eq!(&*from_vec, &values[..]);
            prop_assert_eq!(&*pushed, &values[..]);
            prop_assert!(whole == pushed && pushed == from_vec);
            prop_assert_eq!(matches!(pushed, Dims::Heap(_)), values.len() > INLINE);
            prop_assert_eq!(&*Dims::filled(values.len(), 7usize), &vec![7; values.len()][..]);
            prop_assert_eq!(format!("{whole:?}"), format!("{values:?}"));
            // Equal slices compare equal whatever the storage.
            let mut other = Dims::from_slice(&values);
            if let Some(last) = other.last_mut() {
                *last += 1;
                prop_assert!(other != whole);
            }
        }
    }
}
