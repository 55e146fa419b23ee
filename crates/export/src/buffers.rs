//! Column buffers: rows are appended to plain vectors (the values, without the nulls, and for a column
//! that can be null one definition level per row), handed to Parquet's column writers as they are when
//! a batch is written.

use std::collections::HashMap;
use std::sync::Arc;

use parquet::column::writer::{ColumnWriter, ColumnWriterImpl};
use parquet::data_type::{BoolType, DataType, DoubleType, Int32Type, Int64Type};
use parquet::errors::ParquetError;

use crate::chunk::Chunk;
use crate::plain::NO_TEXT;
#[cfg(doc)]
use pcapsleuth_analysis::StatementFingerprinter;

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

    /// Writes `values` (with `defs`, those the levels call for) into `to`: by `parquet`'s generic
    /// writer, or for integers by the chunk's [`crate::delta::IntChunk`] when it has one.
    fn write(values: &[Self], defs: Option<&[i16]>, to: &mut Chunk) -> Result<(), ParquetError> {
        typed::<Self::Parquet>(to.writer()?)?.write_batch(values, defs, None)?;
        Ok(())
    }
}

/// [`Native::write`] of integers.
fn write_ints<T: Native + Into<i64>>(
    values: &[T],
    defs: Option<&[i16]>,
    to: &mut Chunk,
) -> Result<(), ParquetError> {
    match to.ints() {
        Some((chunk, pages)) => chunk.write(values, defs, pages),
        None => {
            typed::<T::Parquet>(to.writer()?)?.write_batch(values, defs, None)?;
            Ok(())
        }
    }
}

impl Native for i64 {
    type Parquet = Int64Type;

    fn write(values: &[i64], defs: Option<&[i16]>, to: &mut Chunk) -> Result<(), ParquetError> {
        write_ints(values, defs, to)
    }
}

impl Native for i32 {
    type Parquet = Int32Type;

    fn write(values: &[i32], defs: Option<&[i16]>, to: &mut Chunk) -> Result<(), ParquetError> {
        write_ints(values, defs, to)
    }
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
        T::write(values, None, to)
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
        T::write(values, Some(defs), to)
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

    /// The texts of rows `from..from + n`, `None` for a null.
    fn rows(&self, from: usize, n: usize) -> impl Iterator<Item = Option<&[u8]>> + '_ {
        let defs = self.defs.get(from..from + n).unwrap_or_default();
        let mut value = values_before(&self.defs, from);
        let mut start = value
            .checked_sub(1)
            .and_then(|i| self.ends.get(i).copied())
            .unwrap_or(0);
        defs.iter().map(move |&d| {
            if d != VALUE {
                return None;
            }
            let end = self.ends.get(value).copied().unwrap_or(start);
            let text = self.bytes.as_bytes().get(start..end);
            start = end;
            value += 1;
            text
        })
    }
}

impl ColumnRows for Texts {
    fn write(&self, to: &mut Chunk, from: usize, n: usize) -> Result<(), ParquetError> {
        let (chunk, pages) = to.text()?;
        chunk.push_all(self.rows(from, n), pages)
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.defs.clear();
    }
}

/// A column of static texts (a command's name, a state): a row is a pointer.
#[derive(Debug, Default)]
pub(crate) struct Statics(Vec<&'static str>);

impl Statics {
    #[inline]
    pub(crate) fn push(&mut self, s: &'static str) {
        self.0.push(s);
    }

    pub(crate) fn reserve(&mut self, n: usize) {
        self.0.reserve(n);
    }
}

impl ColumnRows for Statics {
    /// A run of rows holding one text is pushed at once (a command and a state repeat row after row).
    fn write(&self, to: &mut Chunk, from: usize, n: usize) -> Result<(), ParquetError> {
        let (chunk, pages) = to.text()?;
        let rows = self.0.get(from..from + n).unwrap_or_default();
        for run in rows.chunk_by(|a, b| std::ptr::eq(*a, *b) || a == b) {
            chunk.push_run(Some(run[0].as_bytes()), run.len(), pages)?;
        }
        Ok(())
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// Texts, maybe null, that many rows share (a connection's endpoints; a fingerprint, SQLSTATE or
/// error message from a [`TextCache`]): their copies, each held by reference (taken once per copy
/// and buffer, not per row: no copy of the bytes and no reference count touched per row), and each
/// row's index among them. The writer settles each copy's place in the column's dictionary once per
/// batch, then appends indices ([`crate::plain::TextChunk::push_shared`]).
#[derive(Debug, Default)]
pub(crate) struct Interned {
    texts: Vec<Arc<str>>,
    rows: Vec<u32>,
}

impl Interned {
    /// A row holding `text`, whose index among the buffer's copies was `*place` when it was last
    /// pushed (kept by the caller with the copy: no lookup). When `*place` does not hold this copy
    /// (its first row, or its place was in a buffer since cleared, or another worker's), the copy is
    /// added and `*place` updated: a copy may then be held twice, which costs the writer one more
    /// lookup and changes no row.
    #[inline]
    pub(crate) fn push(&mut self, text: &Arc<str>, place: &mut u32) {
        let held = self
            .texts
            .get(*place as usize)
            .is_some_and(|t| Arc::ptr_eq(t, text));
        if !held {
            // A buffer's copies are far fewer than u32::MAX (at most one per row).
            *place = u32::try_from(self.texts.len()).unwrap_or(NO_TEXT);
            self.texts.push(text.clone());
        }
        self.rows.push(*place);
    }

    #[inline]
    pub(crate) fn push_null(&mut self) {
        self.rows.push(NO_TEXT);
    }

    pub(crate) fn reserve(&mut self, n: usize) {
        self.rows.reserve(n);
    }
}

impl ColumnRows for Interned {
    fn write(&self, to: &mut Chunk, from: usize, n: usize) -> Result<(), ParquetError> {
        let (chunk, pages) = to.text()?;
        let rows = self.rows.get(from..from + n).unwrap_or_default();
        chunk.push_shared(&self.texts, rows, pages)
    }

    fn clear(&mut self) {
        self.texts.clear();
        self.rows.clear();
    }
}

/// Distinct texts seen lately, each with one copy that the rows repeating it share ([`Interned`]):
/// for texts that repeat across connections (fingerprints, error messages, SQLSTATEs). Bounded: past
/// [`TextCache::MAX_TEXTS`] texts or [`TextCache::MAX_BYTES`] bytes it starts again from empty (a
/// capture with more distinct texts than that pays a copy per value, as without the cache).
#[derive(Debug, Default)]
pub(crate) struct TextCache {
    /// Each text's place in `copies`.
    index: HashMap<Box<str>, usize, ahash::RandomState>,
    /// Each copy, and its place in the [`Interned`] column it goes to ([`Interned::push`]).
    copies: Vec<(Arc<str>, u32)>,
    bytes: usize,
    /// The place in `copies` of the text asked for last (a SQLSTATE repeats row after row: its bytes
    /// are compared before any hash).
    last: usize,
    /// For [`TextCache::get_parts`], by the head id of a [`StatementFingerprinter`]: up to
    /// [`TextCache::PER_HEAD`] (the fingerprint after the head's output, its place in `copies`).
    /// Emptied with `copies`.
    by_head: Vec<Vec<(Box<[u8]>, u32)>>,
    /// A whole fingerprint put together from its parts, for the lookup by text.
    whole: String,
}

impl TextCache {
    const MAX_TEXTS: usize = 1024;
    const MAX_BYTES: usize = 64 << 10;
    /// Rests remembered per head ([`TextCache::get_parts`]): the others of a head go by the whole
    /// text, as without heads.
    const PER_HEAD: usize = 4;

    /// The shared copy of `text`, and its place in the column it goes to.
    #[inline]
    pub(crate) fn get(&mut self, text: &str) -> (&Arc<str>, &mut u32) {
        let last = self.copies.get(self.last);
        if last.is_none_or(|(c, _)| **c != *text) {
            self.last = match self.index.get(text) {
                Some(&i) => i,
                None => self.add(text),
            };
        }
        let (copy, place) = &mut self.copies[self.last];
        (copy, place)
    }

    /// As [`TextCache::get`], for the fingerprint of a statement given in the parts
    /// [`StatementFingerprinter::fingerprint_parts`] gives (head, rest): with a head, it is found
    /// by comparing the rest (often one byte, `?`) with those remembered for the head, without
    /// putting the fingerprint together or hashing it. Anything else (no head, a rest not
    /// remembered, a head with more than [`TextCache::PER_HEAD`] rests) goes by the whole text.
    ///
    /// The head ids must all come from one fingerprinter, the same for the life of this cache (a
    /// head id stands for one head only within one fingerprinter).
    #[inline]
    pub(crate) fn get_parts(
        &mut self,
        parts: (Option<(usize, &str)>, &str),
    ) -> (&Arc<str>, &mut u32) {
        if let (Some((id, _)), rest) = parts {
            let rest = rest.as_bytes();
            let found = self.by_head.get(id).and_then(|g| {
                g.iter()
                    .find(|(r, _)| pcapsleuth_mysql::Fingerprinter::same_rest(r, rest))
            });
            if let Some(&(_, i)) = found {
                let i = i as usize;
                if i < self.copies.len() {
                    let (copy, place) = &mut self.copies[i];
                    return (copy, place);
                }
            }
        }
        self.get_whole(parts)
    }

    /// [`TextCache::get_parts`] by the whole fingerprint; remembers where it is by its head.
    #[inline(never)]
    fn get_whole(&mut self, parts: (Option<(usize, &str)>, &str)) -> (&Arc<str>, &mut u32) {
        let mut whole = std::mem::take(&mut self.whole);
        let text = match parts {
            (None, fp) => fp,
            (Some((_, head)), rest) => {
                whole.clear();
                whole.push_str(head);
                whole.push_str(rest);
                &whole
            }
        };
        self.get(text);
        self.whole = whole;
        let i = self.last;
        if let (Some((id, _)), rest) = parts {
            if self.by_head.len() <= id {
                self.by_head.resize_with(id + 1, Vec::new);
            }
            // Places are below MAX_TEXTS.
            if let (Some(g), Ok(i)) = (self.by_head.get_mut(id), u32::try_from(i)) {
                if g.len() < Self::PER_HEAD {
                    g.push((rest.as_bytes().into(), i));
                }
            }
        }
        let (copy, place) = &mut self.copies[i];
        (copy, place)
    }

    /// Adds a copy of `text`; its place.
    fn add(&mut self, text: &str) -> usize {
        if self.copies.len() >= Self::MAX_TEXTS || self.bytes + text.len() > Self::MAX_BYTES {
            self.index.clear();
            self.copies.clear();
            self.bytes = 0;
            self.by_head.clear();
        }
        self.bytes += text.len();
        self.index.insert(text.into(), self.copies.len());
        self.copies.push((Arc::from(text), NO_TEXT));
        self.copies.len() - 1
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

    fn texts(t: &Texts, from: usize, n: usize) -> Vec<Option<&str>> {
        t.rows(from, n)
            .map(|b| b.map(|b| std::str::from_utf8(b).expect("utf-8")))
            .collect()
    }

    #[test]
    fn texts_slice_by_rows_with_nulls() {
        let mut a = Texts::default();
        for t in ["ab", "", "cde", "", "f"] {
            a.push(t);
        }
        a.defs[1] = NULL;
        a.ends.remove(1);
        assert_eq!(a.defs, [VALUE, NULL, VALUE, VALUE, VALUE]);
        let all = [Some("ab"), None, Some("cde"), Some(""), Some("f")];
        assert_eq!(texts(&a, 0, 5), all);
        assert_eq!(texts(&a, 1, 3), all[1..4]);
        assert_eq!(texts(&a, 3, 2), all[3..5]);
        assert_eq!(texts(&a, 1, 1), [None]);
        assert!(texts(&a, 5, 0).is_empty());
        a.clear();
        assert_eq!(a.len_bytes(), 0);
        assert!(texts(&a, 0, 0).is_empty());
    }

    #[test]
    fn interned_rows_share_their_copy() {
        let (x, y): (Arc<str>, Arc<str>) = ("x".into(), "y".into());
        let mut a = Interned::default();
        let (mut px, mut py) = (NO_TEXT, NO_TEXT);
        a.push(&x, &mut px);
        a.push(&x, &mut px);
        a.push_null();
        a.push(&y, &mut py);
        a.push(&y, &mut py);
        a.push(&x, &mut px);
        assert_eq!(a.texts.len(), 2, "one reference per copy");
        // A place that does not hold the copy (here: another buffer's) adds it again.
        let mut stale = px;
        a.push(&y, &mut stale);
        assert_eq!((a.texts.len(), stale), (3, 2));
        let rows: Vec<Option<&str>> = a
            .rows
            .iter()
            .map(|&i| a.texts.get(i as usize).map(|t| &**t))
            .collect();
        assert_eq!(
            rows,
            [
                Some("x"),
                Some("x"),
                None,
                Some("y"),
                Some("y"),
                Some("x"),
                Some("y")
            ]
        );
    }

    #[test]
    fn the_text_cache_gives_one_copy_per_text_and_starts_again_when_full() {
        let mut c = TextCache::default();
        let a = c.get("select ?").0.clone();
        assert!(Arc::ptr_eq(&a, c.get("select ?").0));
        for i in 0..TextCache::MAX_TEXTS {
            c.get(&i.to_string());
        }
        assert!(c.copies.len() <= TextCache::MAX_TEXTS);
        assert_eq!(&**c.get("select ?").0, "select ?");
    }

    /// Texts asked for in turn each get their own copy, the same one every time.
    #[test]
    fn texts_asked_for_in_turn_keep_their_own_copies() {
        let mut c = TextCache::default();
        let texts: Vec<String> = (0..3).map(|i| format!("select ? from t{i}")).collect();
        let asked: Vec<&String> = texts.iter().collect();
        let copies: Vec<Arc<str>> = asked.iter().map(|t| c.get(t).0.clone()).collect();
        for _ in 0..3 {
            for (t, copy) in asked.iter().zip(&copies) {
                let got = c.get(t).0;
                assert_eq!(&**got, t.as_str());
                assert!(Arc::ptr_eq(got, copy), "one copy per text");
            }
        }
        for t in ["", "a", "1234567", "12345678", "123456789"] {
            assert_eq!(&**c.get(t).0, t);
        }
    }

    /// Fingerprints found by their head and rest are the copies of the whole fingerprints: for
    /// heads with more rests than are remembered, statements with no head or held only in part,
    /// and across the cache starting again from empty (more distinct texts than it keeps).
    #[test]
    fn fingerprints_by_head_are_the_copies_of_the_whole_fingerprints() {
        use pcapsleuth_analysis::StatementFingerprinter;
        let mut c = TextCache::default();
        let mut by_parts = StatementFingerprinter::default();
        let mut by_whole = StatementFingerprinter::default();
        let mut statements = Vec::new();
        for round in 0..3 {
            for t in 0..600 {
                // Heads, each with more rests than remembered (a `LIMIT` or not, an `IN` list).
                statements.push(format!(
                    "SELECT c FROM sbtest{t} WHERE id={}",
                    t * 7 + round
                ));
                statements.push(format!(
                    "SELECT c FROM sbtest{t} WHERE id={t} LIMIT {round}"
                ));
                statements.push(format!("SELECT c FROM sbtest{t} WHERE id IN ({t}, 2)"));
                statements.push(format!(
                    "SELECT c FROM sbtest{t} WHERE id={t} AND k=k{}",
                    t % 7
                ));
                statements.push(format!(
                    "SELECT c FROM sbtest{t} WHERE id={t} OR k=k{}",
                    t % 5
                ));
                if t % 50 == 0 {
                    statements.push(format!("SELECT {t}"));
                    statements.push(format!(
                        "SELECT c FROM sbtest{t} WHERE id /* gap: 9 bytes */"
                    ));
                }
            }
        }
        let (mut found, mut copies) = (0, std::collections::HashMap::new());
        for sql in &statements {
            let (head, rest, cut) = by_parts.fingerprint_parts(sql);
            found +=
                usize::from(head.is_some() && c.by_head.get(head.map_or(0, |h| h.0)).is_some());
            let (copy, place) = c.get_parts((head, rest));
            let (whole, whole_cut) = by_whole.fingerprint(sql);
            assert_eq!((&**copy, cut), (whole, whole_cut), "{sql}");
            *place = 7;
            let copy = copy.clone();
            // The copy is the cache's own: asked for by the whole text, the same one.
            let (again, place) = c.get(whole);
            assert!(Arc::ptr_eq(&copy, again) && *place == 7, "{sql}");
            copies.insert(whole.to_string(), copy);
        }
        assert!(
            copies.len() > 2 * TextCache::MAX_TEXTS,
            "the cache started again"
        );
        assert!(
            found > statements.len() / 2,
            "most found by their head: {found}"
        );
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
