//! Column buffers: rows are appended to plain vectors, which become Arrow arrays without a copy when a
//! batch is written, and which merge by appending (one instance's rows into another's).

use std::sync::Arc;

use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampNanosecondType};
use arrow_array::{ArrayRef, BooleanArray, PrimitiveArray, StringArray};
use arrow_buffer::{ArrowNativeType, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::ArrowError;

/// Values that may be null: the values (a default where null) and their validity.
#[derive(Debug, Default)]
pub(crate) struct Nullable<T> {
    values: Vec<T>,
    valid: Vec<bool>,
}

impl<T: Default> Nullable<T> {
    #[inline]
    pub(crate) fn push(&mut self, v: Option<T>) {
        self.valid.push(v.is_some());
        self.values.push(v.unwrap_or_default());
    }

    /// Moves `o`'s values to the end of these, leaving `o` empty with its capacity.
    pub(crate) fn append(&mut self, o: &mut Nullable<T>) {
        self.values.append(&mut o.values);
        self.valid.append(&mut o.valid);
    }
}

impl<T> Nullable<T> {
    pub(crate) fn reserve(&mut self, n: usize) {
        self.values.reserve(n);
        self.valid.reserve(n);
    }
}

impl<T: ArrowNativeType> Nullable<T> {
    fn take(&mut self) -> (ScalarBuffer<T>, Option<NullBuffer>) {
        let n = self.values.len();
        let values = std::mem::replace(&mut self.values, Vec::with_capacity(n));
        let valid = std::mem::replace(&mut self.valid, Vec::with_capacity(n));
        (ScalarBuffer::from(values), nulls(valid))
    }
}

/// `None` when every value is valid: the array then needs no validity bitmap.
fn nulls(valid: Vec<bool>) -> Option<NullBuffer> {
    if valid.iter().all(|v| *v) {
        None
    } else {
        Some(NullBuffer::from(valid))
    }
}

/// Texts, maybe null, as Arrow keeps them: one string of all their bytes and where each ends.
#[derive(Debug)]
pub(crate) struct Texts {
    bytes: String,
    ends: Vec<i32>,
    valid: Vec<bool>,
}

impl Default for Texts {
    fn default() -> Self {
        Texts {
            bytes: String::new(),
            ends: vec![0],
            valid: Vec::new(),
        }
    }
}

impl Texts {
    #[inline]
    pub(crate) fn push(&mut self, s: &str) {
        self.bytes.push_str(s);
        self.close_value(true);
    }

    #[inline]
    pub(crate) fn push_opt(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.push(s),
            None => self.close_value(false),
        }
    }

    /// Ends a value whose bytes were appended (none for a null).
    #[inline]
    fn close_value(&mut self, valid: bool) {
        // A batch is written long before its texts reach 2 GiB (see `Rows::is_full`).
        self.ends
            .push(i32::try_from(self.bytes.len()).unwrap_or(i32::MAX));
        self.valid.push(valid);
    }

    /// Bytes of text held.
    pub(crate) fn len_bytes(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn reserve(&mut self, rows: usize, bytes: usize) {
        self.bytes.reserve(bytes);
        self.ends.reserve(rows);
        self.valid.reserve(rows);
    }

    /// Moves `o`'s texts to the end of these, leaving `o` empty with its capacity.
    pub(crate) fn append(&mut self, o: &mut Texts) {
        let base = i32::try_from(self.bytes.len()).unwrap_or(i32::MAX);
        self.bytes.push_str(&o.bytes);
        self.ends
            .extend(o.ends[1..].iter().map(|e| e.saturating_add(base)));
        self.valid.append(&mut o.valid);
        o.bytes.clear();
        o.ends.truncate(1);
    }

    fn take(&mut self) -> Result<ArrayRef, ArrowError> {
        let (rows, len) = (self.valid.len(), self.bytes.len());
        let Texts { bytes, ends, valid } = std::mem::replace(self, Texts::with_capacity(rows, len));
        if i32::try_from(bytes.len()).is_err() {
            return Err(ArrowError::OffsetOverflowError(bytes.len()));
        }
        let offsets = OffsetBuffer::new(ScalarBuffer::from(ends));
        // SAFETY: `bytes` is a `String`, valid UTF-8, and each offset is where a pushed `&str` ended
        // (`append` moves another buffer's offsets by its start, keeping them at its values'
        // boundaries); none saturated, as the bytes fit an `i32`. This skips re-validating every
        // text, which cost 2-3% of an export.
        let array = unsafe {
            StringArray::new_unchecked(offsets, Buffer::from(bytes.into_bytes()), nulls(valid))
        };
        Ok(Arc::new(array))
    }

    /// Empty, with room for `rows` values of `bytes` bytes in all: a buffer that was filled once is
    /// likely to fill again, and growing it from nothing costs reallocations and fresh pages.
    fn with_capacity(rows: usize, bytes: usize) -> Self {
        let mut ends = Vec::with_capacity(rows + 1);
        ends.push(0);
        Texts {
            bytes: String::with_capacity(bytes),
            ends,
            valid: Vec::with_capacity(rows),
        }
    }
}

/// Takes a buffer's values as an array, leaving it empty.
pub(crate) trait IntoArray {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError>;
}

/// Columns of Arrow's primitive types: values without nulls (`Vec`) and with ([`Nullable`]).
macro_rules! primitive_columns {
    ($($native:ty => $arrow:ty),+) => {$(
        impl IntoArray for Vec<$native> {
            fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
                let n = self.len();
                Ok(Arc::new(PrimitiveArray::<$arrow>::new(
                    ScalarBuffer::from(std::mem::replace(self, Vec::with_capacity(n))),
                    None,
                )))
            }
        }

        impl IntoArray for Nullable<$native> {
            fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
                let (v, n) = self.take();
                Ok(Arc::new(PrimitiveArray::<$arrow>::new(v, n)))
            }
        }
    )+};
}

primitive_columns!(i64 => Int64Type, i32 => Int32Type, f64 => Float64Type);

impl IntoArray for Vec<bool> {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
        let array = BooleanArray::new(self.as_slice().into(), None);
        self.clear();
        Ok(Arc::new(array))
    }
}

impl IntoArray for Nullable<bool> {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
        let array = BooleanArray::new(self.values.as_slice().into(), nulls(self.valid.clone()));
        self.values.clear();
        self.valid.clear();
        Ok(Arc::new(array))
    }
}

impl IntoArray for Texts {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
        self.take()
    }
}

/// Nanoseconds since the epoch, as a `timestamp(ns, UTC)` column.
#[derive(Debug, Default)]
pub(crate) struct Times(pub(crate) Nullable<i64>);

impl Times {
    pub(crate) fn reserve(&mut self, n: usize) {
        self.0.reserve(n);
    }

    #[inline]
    pub(crate) fn push(&mut self, ns: Option<i64>) {
        self.0.push(ns);
    }
}

impl IntoArray for Times {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
        let (v, n) = self.0.take();
        Ok(Arc::new(
            PrimitiveArray::<TimestampNanosecondType>::new(v, n).with_timezone("UTC"),
        ))
    }
}

/// A text column holding `value` `rows` times (the capture's name, a label's value).
pub(crate) fn constant(value: &str, rows: usize) -> ArrayRef {
    Arc::new(StringArray::new_repeated(value, rows))
}

/// Nanoseconds since the epoch of a decoder's unsigned time (which never exceeds `i64` for a real
/// capture; a value past it is clamped rather than wrapped).
#[inline]
pub(crate) fn ns(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

/// A frame number or count as a signed 64-bit value (all real ones fit; a wild one is clamped).
#[inline]
pub(crate) fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    #[test]
    fn texts_merge_with_their_offsets_moved() {
        let mut a = Texts::default();
        a.push("ab");
        a.push_opt(None);
        let mut b = Texts::default();
        b.push("cde");
        b.push("");
        a.append(&mut b);
        assert_eq!(
            b.take().expect("empty").len(),
            0,
            "appending empties the other"
        );
        let arr = a.take().expect("valid utf-8");
        let s = arr
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("a string array");
        let got: Vec<Option<&str>> = s.iter().collect();
        assert_eq!(got, [Some("ab"), None, Some("cde"), Some("")]);
        // Taken: empty again, ready for the next batch.
        assert_eq!(a.take().expect("empty").len(), 0);
    }
}
