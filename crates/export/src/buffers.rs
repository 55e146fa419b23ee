//! Column buffers: rows are appended to plain vectors (the values, without the nulls, and for a column
//! that can be null one definition level per row), handed to Parquet's column writers as they are when
//! a batch is written, and merged by appending (one instance's rows into another's).

use parquet::column::writer::{ColumnWriter, ColumnWriterImpl};
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DataType, DoubleType, Int32Type, Int64Type,
};
use parquet::errors::ParquetError;

use crate::part::Chunk;

/// Rows of one column, not yet written.
pub(crate) trait ColumnRows {
    /// Writes rows `from..from + n` into the column chunk `to` (of this column's type).
    fn write(&self, to: &mut Chunk, from: usize, n: usize) -> Result<(), ParquetError>;
    /// Forgets every row, keeping the capacity.
    fn clear(&mut self);
}

/// The typed writer of a chunk of Parquet type `T`; an error if the chunk is of another type (a
/// defect of the export: every column's buffer and Parquet type come from the same
/// [`crate::columns::ColumnType`]).
fn typed<'a, 'b, T: DataType>(
    w: &'a mut ColumnWriter<'b>,
) -> Result<&'a mut ColumnWriterImpl<'b, T>, ParquetError> {
    T::get_column_writer_mut(w).ok_or_else(|| {
        ParquetError::General(format!(
            "a buffer of {} values for a column of another type",
            T::get_physical_type()
        ))
    })
}

/// Definition levels: 1 for a value, 0 for a null (a column is at most one level deep).
const VALUE: i16 = 1;
const NULL: i16 = 0;

/// Values of a fixed-size type, mapped to their Parquet type.
pub(crate) trait Native: Copy + Default {
    type Parquet: DataType<T = Self>;
}

impl Native for i64 {
    type Parquet = Int64Type;
}

impl Native for i32 {
    type Parquet = Int32Type;
}

impl Native for f64 {
    type Parquet = DoubleType;
}

impl Native for bool {
    type Parquet = BoolType;
}

/// A column without nulls.
impl<T: Native> ColumnRows for Vec<T> {
    fn write(&self, to: &mut Chunk, from: usize, n: usize) -> Result<(), ParquetError> {
        let values = self.get(from..from + n).unwrap_or_default();
        typed::<T::Parquet>(to.writer())?.write_batch(values, None, None)?;
        Ok(())
    }

    fn clear(&mut self) {
        Vec::clear(self);
    }
}

/// Values that may be null: the values that are not, and every row's definition level.
#[derive(Debug, Default)]
pub(crate) struct Nullable<T> {
    values: Vec<T>,
    defs: Vec<i16>,
}

impl<T> Nullable<T> {
    #[inline]
    pub(crate) fn push(&mut self, v: Option<T>) {
        match v {
            Some(v) => {
                self.values.push(v);
                self.defs.push(VALUE);
            }
            None => self.defs.push(NULL),
        }
    }

    /// Moves `o`'s values to the end of these, leaving `o` empty with its capacity.
    pub(crate) fn append(&mut self, o: &mut Nullable<T>) {
        self.values.append(&mut o.values);
        self.defs.append(&mut o.defs);
    }

    pub(crate) fn reserve(&mut self, n: usize) {
        self.values.reserve(n);
        self.defs.reserve(n);
    }
}

/// Values before row `row`, given each row's definition level.
fn values_before(defs: &[i16], row: usize) -> usize {
    defs[..row.min(defs.len())]
        .iter()
        .filter(|d| **d == VALUE)
        .count()
}

impl<T: Native> ColumnRows for Nullable<T> {
    fn write(&self, to: &mut Chunk, from: usize, n: usize) -> Result<(), ParquetError> {
        let first = values_before(&self.defs, from);
        let defs = self.defs.get(from..from + n).unwrap_or_default();
        let values = self.values.get(first..).unwrap_or_default();
        // Writes the values the levels call for (as many as they hold 1s).
        typed::<T::Parquet>(to.writer())?.write_batch(values, Some(defs), None)?;
        Ok(())
    }

    fn clear(&mut self) {
        self.values.clear();
        self.defs.clear();
    }
}

/// Texts, maybe null: one string of all their bytes, where each ends, and every row's definition
/// level.
#[derive(Debug, Default)]
pub(crate) struct Texts {
    bytes: String,
    /// Where each text (each row that is not null) ends in `bytes`.
    ends: Vec<usize>,
    defs: Vec<i16>,
}

impl Texts {
    #[inline]
    pub(crate) fn push(&mut self, s: &str) {
        self.bytes.push_str(s);
        self.ends.push(self.bytes.len());
        self.defs.push(VALUE);
    }

    #[inline]
    pub(crate) fn push_opt(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.push(s),
            None => self.defs.push(NULL),
        }
    }

    /// Bytes of text held.
    pub(crate) fn len_bytes(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn reserve(&mut self, rows: usize, bytes: usize) {
        self.bytes.reserve(bytes);
        self.ends.reserve(rows);
        self.defs.reserve(rows);
    }

    /// Moves `o`'s texts to the end of these, leaving `o` empty with its capacity.
    pub(crate) fn append(&mut self, o: &mut Texts) {
        let base = self.bytes.len();
        self.bytes.push_str(&o.bytes);
        self.ends.extend(o.ends.iter().map(|e| e + base));
        self.defs.append(&mut o.defs);
        o.bytes.clear();
        o.ends.clear();
    }

    /// The texts of rows `from..from + n` that are not null, each as Parquet's `ByteArray`, into
    /// `out`. A dictionary-encoded column keeps the distinct values it is given until its row group
    /// is written: those get copies of their own; the other columns' encoders copy the bytes they
    /// are given at once, and get slices of one shared copy of the rows' texts.
    fn values(&self, from: usize, n: usize, own: bool, out: &mut Vec<ByteArray>) {
        let first = values_before(&self.defs, from);
        let count = values_before(&self.defs[from.min(self.defs.len())..], n);
        let ends = self.ends.get(first..first + count).unwrap_or_default();
        let mut start = first.checked_sub(1).map_or(0, |i| self.ends[i]);
        let (lo, hi) = (start, ends.last().copied().unwrap_or(start));
        out.reserve(count);
        if own {
            for &end in ends {
                out.push(ByteArray::from(self.bytes.as_bytes()[start..end].to_vec()));
                start = end;
            }
        } else {
            let all = ByteArray::from(self.bytes.as_bytes()[lo..hi].to_vec());
            for &end in ends {
                out.push(all.slice(start - lo, end - start));
                start = end;
            }
        }
    }
}

impl ColumnRows for Texts {
    fn write(&self, to: &mut Chunk, from: usize, n: usize) -> Result<(), ParquetError> {
        let mut values = to.take_scratch();
        self.values(from, n, to.dictionary(), &mut values);
        let w = typed::<ByteArrayType>(to.writer())?;
        let defs = self.defs.get(from..from + n).unwrap_or_default();
        let nullable = w.get_descriptor().max_def_level() > 0;
        let result = w.write_batch(&values, nullable.then_some(defs), None);
        values.clear();
        to.give_scratch(values);
        result.map(|_| ())
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.defs.clear();
    }
}

/// Nanoseconds since the epoch, as a `TIMESTAMP(NANOS, isAdjustedToUTC = true)` column.
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

impl ColumnRows for Times {
    fn write(&self, to: &mut Chunk, from: usize, n: usize) -> Result<(), ParquetError> {
        self.0.write(to, from, n)
    }

    fn clear(&mut self) {
        self.0.clear();
    }
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

    fn texts(t: &Texts, from: usize, n: usize, own: bool) -> Vec<String> {
        let mut out = Vec::new();
        t.values(from, n, own, &mut out);
        out.iter()
            .map(|b| b.as_utf8().expect("utf-8").to_string())
            .collect()
    }

    #[test]
    fn texts_merge_with_their_ends_moved_and_slice_by_rows() {
        let mut a = Texts::default();
        a.push("ab");
        a.push_opt(None);
        let mut b = Texts::default();
        b.push("cde");
        b.push("");
        b.push("f");
        a.append(&mut b);
        assert_eq!(b.len_bytes(), 0, "appending empties the other");
        assert!(b.defs.is_empty() && b.ends.is_empty());
        assert_eq!(a.defs, [VALUE, NULL, VALUE, VALUE, VALUE]);
        for own in [false, true] {
            assert_eq!(texts(&a, 0, 5, own), ["ab", "cde", "", "f"]);
            // Rows 1..4: the null, "cde" and "".
            assert_eq!(texts(&a, 1, 3, own), ["cde", ""]);
            assert_eq!(texts(&a, 3, 2, own), ["", "f"]);
            assert!(texts(&a, 1, 1, own).is_empty());
            assert!(texts(&a, 5, 0, own).is_empty());
        }
        a.clear();
        assert!(texts(&a, 0, 0, false).is_empty());
    }

    #[test]
    fn nulls_are_levels_and_values_skip_them() {
        let mut n = Nullable::default();
        for v in [Some(3i64), None, None, Some(4), Some(5)] {
            n.push(v);
        }
        assert_eq!(n.values, [3, 4, 5]);
        assert_eq!(values_before(&n.defs, 0), 0);
        assert_eq!(values_before(&n.defs, 3), 1);
        assert_eq!(values_before(&n.defs, 5), 3);
        assert_eq!(values_before(&n.defs, 9), 3, "past the end: every value");
    }
}
