//! Text column chunks written without `parquet`'s generic column writer.
//!
//! The generic writer takes texts only as `ByteArray`s, one reference-counted buffer per value: a row
//! of the export then cost, per text column, an atomic increment and decrement (contended when the
//! two cores touch one text's count), the writer's checks per value, a copy into a page buffer that
//! grows by reallocation, and for a dictionary-encoded column a hash of the value. The pages of a text
//! column are simple enough to build here, in the generic writer's layout:
//!
//! * version 1 data pages: the definition levels of a column that can be null (a 4-byte length, then
//!   the RLE/bit-packed hybrid at bit width 1, here one bit-packed run), then the values, the whole
//!   compressed with zstd at the text pages' level (`part::TEXT_LEVEL`); cut at the limits the
//!   generic writer is given (1 MiB of values, its default, or a row group's rows, see [`PAGE_ROWS`]);
//! * PLAIN values: each a 4-byte little-endian length and the bytes;
//! * dictionary-encoded values (RLE_DICTIONARY, for [`crate::part`]'s dictionary columns): a
//!   dictionary page (PLAIN) before the chunk's data pages, each data page the bit width and the
//!   indices (one bit-packed run); when the dictionary would pass 1 MiB (the generic writer's limit)
//!   the rest of the chunk is written PLAIN, as the generic writer falls back;
//! * the column chunk's metadata and offset index as the generic writer makes them for a column
//!   without statistics (no page statistics, no column index).
//!
//! Readers see the same columns: the export's tests read them back with parquet's own reader, DuckDB
//! and Spark.

use std::collections::HashMap;
use std::sync::Arc;

use parquet::basic::{Encoding, PageType};
use parquet::column::page::{CompressedPage, Page};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::metadata::PageEncodingStats;
use parquet::schema::types::ColumnDescPtr;

use crate::page::{data_page, definition_levels, uleb128, ChunkTally};
use crate::pages::Pages;
use crate::ROW_GROUP_ROWS;

/// A null row of an interned text column (`Interned` in `buffers`).
pub(crate) const NO_TEXT: u32 = u32::MAX;

/// A page is written when its values reach this many bytes (the generic writer's default limit)...
const PAGE_BYTES: usize = 1024 * 1024;
/// ...or it holds this many rows: a row group's (as the generic writer is set to in `part`), so a
/// chunk is cut into pages by bytes only. The export writes no page statistics nor column index, so
/// smaller pages let no reader skip anything, while each page costs a zstd frame and a header, and
/// zstd finds fewer repeats in small ones: pages of a row group take fewer instructions and fewer bytes
/// than the generic writer's default of 20,000 rows. The page being filled then holds up to a row
/// group's indices (512 KiB per dictionary-encoded column).
const PAGE_ROWS: usize = ROW_GROUP_ROWS;
/// A dictionary stops taking new texts at this many bytes (the generic writer's default limit).
const DICTIONARY_BYTES: usize = 1024 * 1024;

/// The distinct texts of a dictionary-encoded chunk.
struct Dictionary {
    /// Each text's index, and where its bytes begin in `plain`.
    index: HashMap<Box<[u8]>, (u32, usize), ahash::RandomState>,
    /// The texts, PLAIN-encoded in index order: the dictionary page.
    plain: Vec<u8>,
    /// Still taking texts (else the chunk went on PLAIN).
    open: bool,
    /// The last text's index, and where it lies in `plain` (runs of one text skip the hash).
    last: Option<(u32, usize, usize)>,
    /// Each shared copy of a text seen (by its address), with the text's index and where it lies in
    /// `plain`: the rows of a [`crate::buffers::Interned`] column give their text's one copy, whose
    /// address is hashed at the cost of one word rather than the text's bytes.
    copies: HashMap<usize, (u32, usize), ahash::RandomState>,
    /// Those copies, held so that no other text takes an address in `copies` while it is in use.
    pinned: Vec<Arc<str>>,
}

/// Copies remembered per dictionary at most (a text with many copies, after a [`TextCache`] starts
/// again, takes an entry for each): past it, copies are looked up by their bytes.
///
/// [`TextCache`]: crate::buffers::TextCache
const MAX_COPIES: usize = 1 << 16;

impl Dictionary {
    /// Remembers that `copy` holds the text of index `i` at `start` in `plain`.
    fn remember(&mut self, copy: Option<&Arc<str>>, i: u32, start: usize) {
        if let Some(c) = copy {
            if self.pinned.len() < MAX_COPIES {
                self.copies.insert(address(c), (i, start));
                self.pinned.push(c.clone());
            }
        }
    }
}

/// A shared copy's address.
fn address(copy: &Arc<str>) -> usize {
    Arc::as_ptr(copy).cast::<u8>() as usize
}

/// The part of a text column chunk not yet in a page, and what the chunk's metadata needs.
pub(crate) struct TextChunk {
    descr: ColumnDescPtr,
    nullable: bool,
    dictionary: Option<Dictionary>,
    /// The page being filled: its values PLAIN-encoded, or their indices in the dictionary.
    values: Vec<u8>,
    indices: Vec<u32>,
    /// Its definition levels, one bit per row (1: a value), least significant bit first.
    levels: Vec<u8>,
    /// Rows in the page being filled.
    rows: usize,
    /// Data pages of a dictionary-encoded chunk, with their rows, held until the dictionary page is
    /// written before them.
    held: Vec<(CompressedPage, usize)>,
    /// Data pages per encoding, in the order the encodings began.
    page_counts: Vec<(Encoding, i32)>,
    /// The chunk so far.
    total_rows: u64,
    dictionary_page: Option<u64>,
    tally: ChunkTally,
}

/// Appends `values` as one bit-packed run of the RLE/bit-packed hybrid at `bit_width` (1 to 32): its
/// header, then the values least significant bit first, padded with zeros to whole groups of 8.
fn bit_packed(values: &[u32], bit_width: u32, out: &mut Vec<u8>) {
    let groups = values.len().div_ceil(8);
    uleb128(((groups as u64) << 1) | 1, out);
    let end = out.len() + groups * bit_width as usize;
    out.reserve(end - out.len());
    // Widths of up to 16 bits (dictionaries of up to 65,536 texts) a group of 8 at a time, the
    // width known to the compiler; wider ones a value at a time.
    macro_rules! by_width {
        ($($w:literal)*) => {
            match bit_width {
                $($w => return pack_groups::<$w>(values, out),)*
                _ => {}
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
    let (mut acc, mut bits) = (0u64, 0u32);
    // Below 32 bits held before a value of at most 32 is added: they fit in 64.
    for &v in values {
        acc |= u64::from(v) << bits;
        bits += bit_width;
        if bits >= 32 {
            out.extend_from_slice(&(acc as u32).to_le_bytes());
            acc >>= 32;
            bits -= 32;
        }
    }
    while bits > 0 {
        out.push(acc as u8);
        acc >>= 8;
        bits = bits.saturating_sub(8);
    }
    out.resize(end, 0);
}

/// Appends `values`, `W` bits each (16 at most), least significant bit first, in groups of 8 (each
/// `W` bytes), the last padded with zeros.
fn pack_groups<const W: usize>(values: &[u32], out: &mut Vec<u8>) {
    let group = |values: &[u32]| {
        let mut acc = 0u128;
        for (k, &v) in values.iter().enumerate() {
            acc |= u128::from(v) << (k * W);
        }
        acc.to_le_bytes()
    };
    let mut chunks = values.chunks_exact(8);
    for values in &mut chunks {
        out.extend_from_slice(&group(values)[..W]);
    }
    if !chunks.remainder().is_empty() {
        out.extend_from_slice(&group(chunks.remainder())[..W]);
    }
}

/// A text's length, as its PLAIN value holds it (4 bytes).
#[inline]
fn text_len(t: &[u8]) -> Result<u32, ParquetError> {
    u32::try_from(t.len()).map_err(|_| ParquetError::General("a text of 4 GiB or more".into()))
}

impl TextChunk {
    /// A chunk of the text column `descr`, dictionary-encoded or PLAIN.
    pub(crate) fn new(descr: ColumnDescPtr, dictionary: bool) -> TextChunk {
        let nullable = descr.max_def_level() > 0;
        TextChunk {
            descr,
            nullable,
            dictionary: dictionary.then(|| Dictionary {
                index: HashMap::default(),
                plain: Vec::new(),
                open: true,
                last: None,
                copies: HashMap::default(),
                pinned: Vec::new(),
            }),
            values: Vec::new(),
            indices: Vec::new(),
            levels: Vec::new(),
            rows: 0,
            held: Vec::new(),
            page_counts: Vec::new(),
            total_rows: 0,
            dictionary_page: None,
            tally: ChunkTally::new(),
        }
    }

    /// Appends a row: a text, or a null (of a column that can be null; in one that cannot, a null is
    /// a defect of the export).
    #[inline]
    pub(crate) fn push(
        &mut self,
        text: Option<&[u8]>,
        pages: &mut Pages,
    ) -> Result<(), ParquetError> {
        self.push_copy(text, None, pages)
    }

    /// [`TextChunk::push`], given the shared copy `copy` of `text` if it has one (see
    /// [`Dictionary::copies`]).
    #[inline]
    fn push_copy(
        &mut self,
        text: Option<&[u8]>,
        copy: Option<&Arc<str>>,
        pages: &mut Pages,
    ) -> Result<(), ParquetError> {
        match text {
            Some(t) => {
                let len = text_len(t)?;
                // (A full dictionary cuts the page here, before this row.)
                if !self.push_index(t, len, copy, pages)? {
                    self.push_plain(t, len);
                }
            }
            None => self.null_allowed()?,
        }
        self.end_row(text.is_some(), pages)
    }

    /// Appends `t`'s PLAIN value (its length `len`, then its bytes) to the page being filled.
    #[inline]
    fn push_plain(&mut self, t: &[u8], len: u32) {
        self.values.extend_from_slice(&len.to_le_bytes());
        self.values.extend_from_slice(t);
    }

    /// A null row is refused in a column that cannot hold one (a defect of the export).
    #[inline]
    fn null_allowed(&self) -> Result<(), ParquetError> {
        if self.nullable {
            return Ok(());
        }
        Err(ParquetError::General(format!(
            "a null in column {}, which cannot hold one",
            self.descr.name()
        )))
    }

    /// Ends a row whose value (`valid`) or null is appended: its level, and the page cut at its
    /// limits.
    #[inline]
    fn end_row(&mut self, valid: bool, pages: &mut Pages) -> Result<(), ParquetError> {
        self.push_level(valid);
        self.rows += 1;
        if self.values.len() >= PAGE_BYTES || self.rows >= PAGE_ROWS {
            self.flush_page(pages)?;
        }
        Ok(())
    }

    /// Appends rows (`None` for a null) as [`TextChunk::push`] of each would (pages cut at the same
    /// rows), in one loop for a PLAIN chunk (statements: no dictionary to look in, no call per row).
    pub(crate) fn push_all<'a>(
        &mut self,
        rows: impl Iterator<Item = Option<&'a [u8]>>,
        pages: &mut Pages,
    ) -> Result<(), ParquetError> {
        if self.dictionary.is_some() {
            for text in rows {
                self.push(text, pages)?;
            }
            return Ok(());
        }
        for text in rows {
            match text {
                Some(t) => {
                    let len = text_len(t)?;
                    self.values.reserve(4 + t.len());
                    self.push_plain(t, len);
                }
                None => self.null_allowed()?,
            }
            self.end_row(text.is_some(), pages)?;
        }
        Ok(())
    }

    /// Appends `n` rows that all hold `text`, as `n` calls of [`TextChunk::push`] would (pages cut
    /// at the same rows), but at the cost of a few calls: the first row of each page goes through
    /// `push` (which settles whether the text is in the dictionary), the rest of the page's share is
    /// appended at once (its indices, or its PLAIN values copied from the first).
    pub(crate) fn push_run(
        &mut self,
        text: Option<&[u8]>,
        n: usize,
        pages: &mut Pages,
    ) -> Result<(), ParquetError> {
        self.push_run_copy(text, None, n, pages)
    }

    /// Appends rows given as indices into `texts` (shared copies; [`NO_TEXT`] for a null), as
    /// [`TextChunk::push`] of each row's text would (pages cut at the same rows), but a copy's place
    /// in the dictionary is looked up at its first row here only: its later rows are appended as
    /// that index (and a null as its level) without a call or a lookup.
    pub(crate) fn push_shared(
        &mut self,
        texts: &[Arc<str>],
        rows: &[u32],
        pages: &mut Pages,
    ) -> Result<(), ParquetError> {
        // Each copy's index in the dictionary, once known (`NO_TEXT` before).
        let mut known = vec![NO_TEXT; texts.len()];
        let mut open = self.dictionary.as_ref().is_some_and(|d| d.open);
        for &r in rows {
            let copy = texts.get(r as usize);
            let fast = match copy {
                None => self.nullable,
                Some(_) => open && known[r as usize] != NO_TEXT,
            };
            if !fast {
                self.push_copy(copy.map(|c| c.as_bytes()), copy, pages)?;
                open = self.dictionary.as_ref().is_some_and(|d| d.open);
                if let (Some(slot), Some(d)) = (known.get_mut(r as usize), &self.dictionary) {
                    if let (true, Some((i, _, _))) = (d.open, d.last) {
                        *slot = i;
                    }
                }
                continue;
            }
            // As `push` appends a row whose index is known, or a null.
            if copy.is_some() {
                self.indices.push(known[r as usize]);
            }
            self.push_level(copy.is_some());
            self.rows += 1;
            if self.rows >= PAGE_ROWS {
                self.flush_page(pages)?;
            }
        }
        Ok(())
    }

    fn push_run_copy(
        &mut self,
        text: Option<&[u8]>,
        copy: Option<&Arc<str>>,
        n: usize,
        pages: &mut Pages,
    ) -> Result<(), ParquetError> {
        let mut left = n;
        while left > 0 {
            self.push_copy(text, copy, pages)?;
            left -= 1;
            if left == 0 {
                break;
            }
            if self.rows == 0 {
                // That row filled a page: the next begins with `push` again.
                continue;
            }
            // The index `push` gave the text, while the dictionary takes texts; else the bytes of
            // the PLAIN value it appended (or none for a null).
            let index = match (text, &self.dictionary) {
                (Some(_), Some(d)) if d.open => d.last.map(|(i, _, _)| i),
                _ => None,
            };
            let value = match (text, index) {
                (Some(t), None) => 4 + t.len(),
                _ => 0,
            };
            // Rows that fit before the page is cut (the last of them may fill it), as `push` cuts:
            // `push` left the page below both limits, so at least one.
            let by_rows = PAGE_ROWS - self.rows;
            let by_bytes = match value {
                0 => usize::MAX,
                v => (PAGE_BYTES - self.values.len()).div_ceil(v),
            };
            let k = left.min(by_rows).min(by_bytes);
            match (index, text) {
                (Some(i), _) => self.indices.extend(std::iter::repeat_n(i, k)),
                (None, Some(_)) => {
                    // The value `push` appended last, copied k times by doubling.
                    let start = self.values.len() - value;
                    let end = self.values.len() + k * value;
                    while self.values.len() < end {
                        let have = self.values.len() - start;
                        let more = have.min(end - self.values.len());
                        self.values.extend_from_within(start..start + more);
                    }
                }
                (None, None) => {}
            }
            self.push_levels(text.is_some(), k);
            self.rows += k;
            left -= k;
            if self.values.len() >= PAGE_BYTES || self.rows >= PAGE_ROWS {
                self.flush_page(pages)?;
            }
        }
        Ok(())
    }

    /// The definition level of the row after `self.rows` (as [`TextChunk::push_levels`] of one row).
    #[inline]
    fn push_level(&mut self, valid: bool) {
        if self.nullable {
            self.level_of(self.rows, valid);
        }
    }

    /// Sets row `row`'s bit of the definition levels (rows come in order: a row at a multiple of 8
    /// starts a byte).
    #[inline]
    fn level_of(&mut self, row: usize, valid: bool) {
        let bit = row % 8;
        if bit == 0 {
            self.levels.push(u8::from(valid));
        } else if valid {
            if let Some(last) = self.levels.last_mut() {
                *last |= 1 << bit;
            }
        }
    }

    /// The definition levels of `n` rows after `self.rows`, each a value (`valid`) or a null; none
    /// for a column that cannot be null (its pages have no levels).
    #[inline]
    fn push_levels(&mut self, valid: bool, n: usize) {
        if !self.nullable {
            return;
        }
        for row in self.rows..self.rows + n {
            self.level_of(row, valid);
        }
    }

    /// Appends `text`'s index in the dictionary, adding it if new; false when the chunk is PLAIN
    /// (or just became so: the dictionary is full).
    #[inline]
    fn push_index(
        &mut self,
        text: &[u8],
        len: u32,
        copy: Option<&Arc<str>>,
        pages: &mut Pages,
    ) -> Result<bool, ParquetError> {
        let Some(d) = self.dictionary.as_mut().filter(|d| d.open) else {
            return Ok(false);
        };
        if let Some((i, start, end)) = d.last {
            if d.plain.get(start..end) == Some(text) {
                self.indices.push(i);
                return Ok(true);
            }
        }
        if let Some(&(i, start)) = copy.and_then(|c| d.copies.get(&address(c))) {
            self.indices.push(i);
            d.last = Some((i, start, start + text.len()));
            return Ok(true);
        }
        if let Some(&(i, start)) = d.index.get(text) {
            self.indices.push(i);
            d.last = Some((i, start, start + text.len()));
            d.remember(copy, i, start);
            return Ok(true);
        }
        if d.plain.len() + 4 + text.len() > DICTIONARY_BYTES {
            // The rows so far keep their indices, in a page of their own; the rest go PLAIN.
            self.flush_page(pages)?;
            if let Some(d) = self.dictionary.as_mut() {
                d.open = false;
            }
            return Ok(false);
        }
        let i = u32::try_from(d.index.len())
            .map_err(|_| ParquetError::General("a dictionary of 4 G texts".into()))?;
        d.plain.extend_from_slice(&len.to_le_bytes());
        let start = d.plain.len();
        d.plain.extend_from_slice(text);
        d.last = Some((i, start, d.plain.len()));
        d.index.insert(text.into(), (i, start));
        d.remember(copy, i, start);
        self.indices.push(i);
        Ok(true)
    }

    /// Compresses the page being filled and writes it, or holds it for after the dictionary page.
    fn flush_page(&mut self, pages: &mut Pages) -> Result<(), ParquetError> {
        if self.rows == 0 {
            return Ok(());
        }
        let dictionary = self
            .dictionary
            .as_ref()
            .filter(|d| d.open)
            .map(|d| d.index.len());
        let encoding = match dictionary {
            Some(_) => Encoding::RLE_DICTIONARY,
            None => Encoding::PLAIN,
        };
        let (compressed, uncompressed) = if !self.nullable && dictionary.is_none() {
            // The page is its values: compressed where they lie.
            (pages.compress_slice(&self.values)?, self.values.len())
        } else {
            pages.compress(|page| {
                if self.nullable {
                    definition_levels(&self.levels, self.rows, page)?;
                }
                match dictionary {
                    Some(entries) => {
                        // Bits for the largest index, at least one.
                        let bit_width =
                            (usize::BITS - entries.saturating_sub(1).leading_zeros()).max(1);
                        page.push(bit_width as u8);
                        bit_packed(&self.indices, bit_width, page);
                    }
                    None => page.extend_from_slice(&self.values),
                }
                Ok(())
            })?
        };
        let page = data_page(compressed, self.rows, encoding, uncompressed)?;
        match self.page_counts.last_mut() {
            Some((e, n)) if *e == encoding => *n += 1,
            _ => self.page_counts.push((encoding, 1)),
        }
        if self.dictionary.is_some() {
            self.held.push((page, self.rows));
        } else {
            self.write_data_page(page, self.rows, pages)?;
        }
        self.total_rows += self.rows as u64;
        self.values.clear();
        self.indices.clear();
        self.levels.clear();
        self.rows = 0;
        Ok(())
    }

    fn write_data_page(
        &mut self,
        page: CompressedPage,
        rows: usize,
        pages: &mut Pages,
    ) -> Result<(), ParquetError> {
        let spec = pages.write_compressed(page)?;
        self.tally.data_page(&spec, rows);
        Ok(())
    }

    /// Writes the last page (and a dictionary-encoded chunk's dictionary page, then its data pages);
    /// the chunk's metadata, as the generic writer's `close` returns it.
    pub(crate) fn close(mut self, pages: &mut Pages) -> Result<ColumnCloseResult, ParquetError> {
        self.flush_page(pages)?;
        let mut stats = Vec::new();
        let mut encodings = vec![Encoding::PLAIN, Encoding::RLE];
        if let Some(d) = self.dictionary.take() {
            let (compressed, _) = pages.compress(|page| {
                page.extend_from_slice(&d.plain);
                Ok(())
            })?;
            let entries = u32::try_from(d.index.len())
                .map_err(|_| ParquetError::General("a dictionary of 4 G texts".into()))?;
            let page = CompressedPage::new(
                Page::DictionaryPage {
                    buf: compressed,
                    num_values: entries,
                    encoding: Encoding::PLAIN,
                    is_sorted: false,
                },
                d.plain.len(),
            );
            let spec = pages.write_compressed(page)?;
            self.tally.page(&spec);
            self.dictionary_page = Some(spec.offset);
            stats.push(PageEncodingStats {
                page_type: PageType::DICTIONARY_PAGE,
                encoding: Encoding::PLAIN,
                count: 1,
            });
            encodings.push(Encoding::RLE_DICTIONARY);
            for (page, rows) in std::mem::take(&mut self.held) {
                self.write_data_page(page, rows, pages)?;
            }
        }
        stats.extend(
            self.page_counts
                .iter()
                .map(|&(encoding, count)| PageEncodingStats {
                    page_type: PageType::DATA_PAGE,
                    encoding,
                    count,
                }),
        );
        let metadata = self
            .tally
            .metadata(self.descr.clone())
            .set_encodings(encodings)
            .set_page_encoding_stats(stats)
            .set_dictionary_page_offset(self.dictionary_page.map(|o| o as i64))
            .build()?;
        Ok(self.tally.close(self.total_rows, metadata))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_packed_runs_pack_least_significant_bit_first_in_groups_of_8() {
        let mut out = Vec::new();
        bit_packed(&[1u32, 0, 1, 1], 1, &mut out);
        // One group: header (1 << 1) | 1, then 0b1101 padded.
        assert_eq!(out, [3, 0b1101]);
        out.clear();
        bit_packed(&(0..9u32).collect::<Vec<_>>(), 4, &mut out);
        // Two groups of 8 at 4 bits: 8 bytes, the ninth value and padding.
        assert_eq!(out[0], (2 << 1) | 1);
        assert_eq!(&out[1..6], [0x10, 0x32, 0x54, 0x76, 0x08]);
        assert_eq!(out.len(), 1 + 8);
        out.clear();
        uleb128(300, &mut out);
        assert_eq!(out, [0xac, 0x02]);
    }

    /// Every width (both ways of packing) and length, against a packer of one bit at a time.
    #[test]
    fn bit_packed_runs_match_packing_bit_by_bit() {
        for width in 1..=32u32 {
            for len in 0..=19usize {
                let mask = if width == 32 {
                    u32::MAX
                } else {
                    (1 << width) - 1
                };
                let values: Vec<u32> = (0..len as u32)
                    .map(|i| i.wrapping_mul(0x9e37_79b9).rotate_left(i) & mask)
                    .collect();
                let groups = len.div_ceil(8);
                let mut want = Vec::new();
                uleb128(((groups << 1) | 1) as u64, &mut want);
                let start = want.len();
                want.resize(start + groups * width as usize, 0);
                for (i, v) in values.iter().enumerate() {
                    for b in 0..width as usize {
                        if v >> b & 1 == 1 {
                            let bit = i * width as usize + b;
                            want[start + bit / 8] |= 1 << (bit % 8);
                        }
                    }
                }
                let mut got = vec![7u8];
                bit_packed(&values, width, &mut got);
                assert_eq!(got[1..], want[..], "width {width}, {len} values");
            }
        }
    }
}
