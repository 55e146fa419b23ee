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

    pub(crate) fn append(&mut self, mut o: Nullable<T>) {
        self.values.append(&mut o.values);
        self.valid.append(&mut o.valid);
    }
}

impl<T: ArrowNativeType> Nullable<T> {
    fn take(&mut self) -> (ScalarBuffer<T>, Option<NullBuffer>) {
        let values = std::mem::take(&mut self.values);
        let valid = std::mem::take(&mut self.valid);
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

    pub(crate) fn append(&mut self, o: Texts) {
        let base = i32::try_from(self.bytes.len()).unwrap_or(i32::MAX);
        self.bytes.push_str(&o.bytes);
        self.ends
            .extend(o.ends[1..].iter().map(|e| e.saturating_add(base)));
        self.valid.extend(o.valid);
    }

    fn take(&mut self) -> Result<ArrayRef, ArrowError> {
        let Texts { bytes, ends, valid } = std::mem::take(self);
        let array = StringArray::try_new(
            OffsetBuffer::new(ScalarBuffer::from(ends)),
            Buffer::from(bytes.into_bytes()),
            nulls(valid),
        )?;
        Ok(Arc::new(array))
    }
}

/// Takes a buffer's values as an array, leaving it empty.
pub(crate) trait IntoArray {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError>;
}

impl IntoArray for Vec<i64> {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
        Ok(Arc::new(PrimitiveArray::<Int64Type>::new(
            ScalarBuffer::from(std::mem::take(self)),
            None,
        )))
    }
}

impl IntoArray for Vec<i32> {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
        Ok(Arc::new(PrimitiveArray::<Int32Type>::new(
            ScalarBuffer::from(std::mem::take(self)),
            None,
        )))
    }
}

impl IntoArray for Vec<bool> {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
        Ok(Arc::new(BooleanArray::from(std::mem::take(self))))
    }
}

impl IntoArray for Nullable<i64> {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
        let (v, n) = self.take();
        Ok(Arc::new(PrimitiveArray::<Int64Type>::new(v, n)))
    }
}

impl IntoArray for Nullable<i32> {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
        let (v, n) = self.take();
        Ok(Arc::new(PrimitiveArray::<Int32Type>::new(v, n)))
    }
}

impl IntoArray for Nullable<f64> {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
        let (v, n) = self.take();
        Ok(Arc::new(PrimitiveArray::<Float64Type>::new(v, n)))
    }
}

impl IntoArray for Nullable<bool> {
    fn take_array(&mut self) -> Result<ArrayRef, ArrowError> {
        let values = std::mem::take(&mut self.values);
        let valid = std::mem::take(&mut self.valid);
        Ok(Arc::new(BooleanArray::new(values.into(), nulls(valid))))
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
        a.append(b);
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
