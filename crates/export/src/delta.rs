//! Integer column chunks (INT64, INT32, timestamps) written without `parquet`'s generic column writer.
//!
//! The generic writer's delta encoder (`DeltaBitPackEncoder`) packs every value through a general bit
//! writer, a call per value, after the writer's own per-value work (levels, statistics): about 60
//! instructions a value, 14% of `export -j 1` of the bench slice. The format is simple enough to write
//! here, in the generic writer's layout and with its encoding, as [`crate::plain`] writes the texts:
//!
//! * version 1 data pages of up to [`PAGE_ROWS`] rows: the definition levels of a column that can be
//!   null (a 4-byte length, then the RLE/bit-packed hybrid at bit width 1 as one bit-packed run, as
//!   the text pages), then the values that are not null, DELTA_BINARY_PACKED; the whole compressed
//!   with zstd at the number pages' level (`part::NUMBER_LEVEL`);
//! * DELTA_BINARY_PACKED as parquet's encoder writes it: a header (the block size, 4 miniblocks, the
//!   number of values, the first value zigzag-encoded), then per block of differences the least
//!   (zigzag) and each miniblock's bit width, and each miniblock's differences above the least, packed
//!   least significant bit first (a last, partial miniblock padded with zeros; widths of 0 for the
//!   miniblocks after the last value). Miniblocks of 64 values for INT64, 32 for INT32; differences
//!   wrap at the column's width. A page's values are therefore the bytes parquet's encoder writes;
//! * the column chunk's metadata and offset index as the generic writer makes them: chunk statistics
//!   (min, max, nulls, and the definition levels' histogram) for a column that keeps statistics, none
//!   for the others; no page statistics, no column index.
//!
//! Blocks are encoded as values arrive (a page holds its encoded bytes, not its values). Readers see
//! the same columns: the tests below read them back with parquet's reader and DuckDB, the export's
//! end-to-end tests with DuckDB and Spark.

use parquet::basic::{Encoding, PageType, Type as PhysicalType};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::metadata::{LevelHistogram, PageEncodingStats};
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::schema::types::ColumnDescPtr;

use crate::page::{data_page, definition_levels, uleb128, ChunkTally};
use crate::pages::Pages;
use crate::ROW_GROUP_ROWS;

/// Rows per page at most: a row group's, as for the other columns (see `crate::plain`'s `PAGE_ROWS`).
/// The generic writer also cuts a page at 1 MiB of encoded values, which a page of these columns
/// reaches only when most differences take 64 bits (never in a capture: frames and times rise); a
/// page here is at most 131,072 values of 8 bytes and a few headers.
const PAGE_ROWS: usize = ROW_GROUP_ROWS;

/// Values per miniblock (parquet's encoder's): 64 for INT64 (`wide`), 32 for INT32; 4 miniblocks a
/// block.
const fn miniblock(wide: bool) -> usize {
    if wide {
        64
    } else {
        32
    }
}
const MINIBLOCKS: usize = 4;

/// Values packed at once: a miniblock of INT64 is two of these (32 values of any width fill whole
/// bytes, so the halves pack alone).
const PACKED: usize = 32;

/// Appends `n` zigzag-encoded, as a ULEB128 varint.
fn zigzag(n: i64, out: &mut Vec<u8>) {
    uleb128(((n << 1) ^ (n >> 63)) as u64, out);
}

/// Appends one block of `deltas` (4 miniblocks at most; fewer values only for a page's last block),
/// whose least is `min`: the least, the miniblocks' widths, then each miniblock that holds
/// differences, packed (padded with zeros to a whole miniblock). `wide`: the differences are of
/// 64-bit values (else of 32-bit ones, held sign-extended).
fn block(deltas: &[i64], min: i64, wide: bool, out: &mut Vec<u8>) {
    zigzag(min, out);
    let widths_at = out.len();
    out.extend_from_slice(&[0; MINIBLOCKS]);
    let mut above = [0u64; 64];
    for (m, mini) in deltas.chunks(miniblock(wide)).enumerate() {
        if mini.len() < miniblock(wide) {
            // The page's last miniblock: padded with zeros.
            above.fill(0);
        }
        let mut any = 0u64;
        for (a, &d) in above.iter_mut().zip(mini) {
            *a = if wide {
                d.wrapping_sub(min) as u64
            } else {
                u64::from((d as i32).wrapping_sub(min as i32) as u32)
            };
            any |= *a;
        }
        let width = u64::BITS - any.leading_zeros();
        out[widths_at + m] = width as u8;
        for half in above[..miniblock(wide)].chunks_exact(PACKED) {
            if let Ok(half) = half.try_into() {
                pack(half, width, out);
            }
        }
    }
}

/// Appends 32 values of `width` bits each (0 to 64), least significant bit first: `4 * width` bytes.
/// The width is known to the compiler in each arm (the shifts and word places are constants).
fn pack(values: &[u64; PACKED], width: u32, out: &mut Vec<u8>) {
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                $($w => pack_at::<$w>(values, out),)*
                _ => {}
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
        33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
        64);
}

/// [`pack`] at width `W` (1 to 64): the 32 values fill `W / 2` words of 64 bits exactly. Written out
/// value by value, so that every place and shift is a constant of the width.
#[inline(always)]
fn pack_at<const W: usize>(values: &[u64; PACKED], out: &mut Vec<u8>) {
    let mut words = [0u64; PACKED];
    macro_rules! each {
        ($($i:literal)*) => {$({
            let (word, shift) = ($i * W / 64, $i * W % 64);
            words[word] |= values[$i] << shift;
            // The value's high bits, when it crosses into the next word (`shift` is then above 0).
            if shift + W > 64 {
                words[word + 1] |= values[$i] >> (64 - shift);
            }
        })*};
    }
    each!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    let mut bytes = [0u8; PACKED * 8];
    for (b, w) in bytes.chunks_exact_mut(8).zip(&words).take(W.div_ceil(2)) {
        b.copy_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&bytes[..4 * W]);
}

/// The part of an integer column chunk not yet in a page, and what the chunk's metadata needs.
pub(crate) struct IntChunk {
    descr: ColumnDescPtr,
    nullable: bool,
    /// INT64 (differences wrap at 64 bits), else INT32.
    wide: bool,
    /// Min, max and nulls are kept for the chunk's metadata.
    statistics: bool,
    /// The page being filled: its first value, the last one, the differences not yet in a block
    /// (fewer than a block between writes) and their least, its blocks, and its values.
    first: i64,
    last: i64,
    deltas: Vec<i64>,
    least: i64,
    blocks: Vec<u8>,
    values: u64,
    /// Its definition levels, one bit per row (1: a value), least significant bit first.
    levels: Vec<u8>,
    /// Rows in the page being filled.
    rows: usize,
    min: Option<i64>,
    max: Option<i64>,
    nulls: u64,
    pages: i32,
    total_rows: u64,
    tally: ChunkTally,
}

/// Definition level of a row that holds a value.
const VALUE: i16 = 1;

impl IntChunk {
    /// A chunk of the integer column `descr`, with chunk statistics or none.
    pub(crate) fn new(descr: ColumnDescPtr, statistics: bool) -> IntChunk {
        IntChunk {
            nullable: descr.max_def_level() > 0,
            wide: descr.physical_type() == PhysicalType::INT64,
            descr,
            statistics,
            first: 0,
            last: 0,
            deltas: Vec::with_capacity(MINIBLOCKS * 64),
            least: i64::MAX,
            blocks: Vec::new(),
            values: 0,
            levels: Vec::new(),
            rows: 0,
            min: None,
            max: None,
            nulls: 0,
            pages: 0,
            total_rows: 0,
            tally: ChunkTally::new(),
        }
    }

    /// Appends rows: with `defs`, one row per level, taking the values in order for the levels that
    /// are 1 (`values` may hold more: the rest are left); without, one row per value. A column that
    /// can be null must be given levels; one that cannot ignores them (every row takes a value), as
    /// the generic writer does.
    pub(crate) fn write<T: Copy + Into<i64>>(
        &mut self,
        values: &[T],
        defs: Option<&[i16]>,
        pages: &mut Pages,
    ) -> Result<(), ParquetError> {
        if self.nullable && defs.is_none() {
            return Err(ParquetError::General(format!(
                "levels missing for column {}",
                self.descr.name()
            )));
        }
        let rows = defs.map_or(values.len(), <[i16]>::len);
        let defs = defs.filter(|_| self.nullable);
        let (mut row, mut value) = (0, 0);
        while row < rows {
            let k = (rows - row).min(PAGE_ROWS - self.rows);
            let n = match defs {
                Some(defs) => {
                    let n = self.push_levels(&defs[row..row + k]);
                    self.nulls += (k - n) as u64;
                    n
                }
                None => k,
            };
            let taken = values.get(value..value + n).ok_or_else(|| {
                ParquetError::General(format!(
                    "fewer values than levels for column {}",
                    self.descr.name()
                ))
            })?;
            self.push_values(taken);
            value += n;
            row += k;
            self.rows += k;
            if self.rows >= PAGE_ROWS {
                self.flush_page(pages)?;
            }
        }
        Ok(())
    }

    /// Appends the levels of `defs`, the rows after the page's first `self.rows`, 8 to a byte; the
    /// values among them.
    fn push_levels(&mut self, defs: &[i16]) -> usize {
        let mut row = self.rows;
        let mut rest = defs;
        // One at a time up to a whole byte (after a write of a number of rows not a multiple of 8)...
        while !row.is_multiple_of(8) {
            let Some((&d, after)) = rest.split_first() else {
                break;
            };
            if d == VALUE {
                if let Some(byte) = self.levels.last_mut() {
                    *byte |= 1 << (row % 8);
                }
            }
            row += 1;
            rest = after;
        }
        // ...then a byte per 8 rows, the last one begun with what is left.
        let mut bytes = rest.chunks_exact(8);
        for eight in &mut bytes {
            let mut byte = 0u8;
            for (k, &d) in eight.iter().enumerate() {
                byte |= u8::from(d == VALUE) << k;
            }
            self.levels.push(byte);
        }
        let mut byte = 0u8;
        for (k, &d) in bytes.remainder().iter().enumerate() {
            byte |= u8::from(d == VALUE) << k;
        }
        if !bytes.remainder().is_empty() {
            self.levels.push(byte);
        }
        defs.iter().filter(|&&d| d == VALUE).count()
    }

    /// Appends values to the page being filled: their differences (with their least), a block encoded
    /// each time a block's worth is held; and their least and greatest to the chunk's statistics.
    fn push_values<T: Copy + Into<i64>>(&mut self, values: &[T]) {
        let Some(&first) = values.first() else {
            return;
        };
        // The least and greatest of `values`, for the statistics: found in the loop that takes the
        // differences (a pass of their own cost 3 times as much: 64-bit compares are emulated in the
        // baseline x86-64's vector instructions).
        let statistics = self.statistics;
        let (mut lo, mut hi) = (first.into(), first.into());
        let mut rest = values;
        if self.values == 0 {
            self.first = first.into();
            self.last = self.first;
            rest = &values[1..];
        }
        self.values += values.len() as u64;
        let wide = self.wide;
        let block_len = MINIBLOCKS * miniblock(wide);
        let mut last = self.last;
        let mut least = self.least;
        while !rest.is_empty() {
            let (now, later) = rest.split_at(rest.len().min(block_len - self.deltas.len()));
            let mut step = |v: i64| {
                let d = if wide {
                    v.wrapping_sub(last)
                } else {
                    i64::from((v as i32).wrapping_sub(last as i32))
                };
                last = v;
                least = least.min(d);
                d
            };
            if statistics {
                self.deltas.extend(now.iter().map(|&v| {
                    let v: i64 = v.into();
                    lo = lo.min(v);
                    hi = hi.max(v);
                    step(v)
                }));
            } else {
                self.deltas.extend(now.iter().map(|&v| step(v.into())));
            }
            if self.deltas.len() == block_len {
                block(&self.deltas, least, wide, &mut self.blocks);
                self.deltas.clear();
                least = i64::MAX;
            }
            rest = later;
        }
        self.last = last;
        self.least = least;
        if statistics {
            self.min = Some(self.min.map_or(lo, |m| m.min(lo)));
            self.max = Some(self.max.map_or(hi, |m| m.max(hi)));
        }
    }

    /// Compresses the page being filled and writes it.
    fn flush_page(&mut self, pages: &mut Pages) -> Result<(), ParquetError> {
        if self.rows == 0 {
            return Ok(());
        }
        if !self.deltas.is_empty() {
            block(&self.deltas, self.least, self.wide, &mut self.blocks);
            self.deltas.clear();
            self.least = i64::MAX;
        }
        let (compressed, uncompressed) = pages.compress_numbers_with(|page| {
            if self.nullable {
                definition_levels(&self.levels, self.rows, page)?;
            }
            uleb128((MINIBLOCKS * miniblock(self.wide)) as u64, page);
            uleb128(MINIBLOCKS as u64, page);
            uleb128(self.values, page);
            zigzag(self.first, page);
            page.extend_from_slice(&self.blocks);
            Ok(())
        })?;
        let page = data_page(
            compressed,
            self.rows,
            Encoding::DELTA_BINARY_PACKED,
            uncompressed,
        )?;
        let spec = pages.write_compressed(page)?;
        self.tally.data_page(&spec, self.rows);
        self.pages += 1;
        self.total_rows += self.rows as u64;
        self.first = 0;
        self.last = 0;
        self.values = 0;
        self.blocks.clear();
        self.levels.clear();
        self.rows = 0;
        Ok(())
    }

    /// Writes the last page; the chunk's metadata, as the generic writer's `close` returns it.
    pub(crate) fn close(mut self, pages: &mut Pages) -> Result<ColumnCloseResult, ParquetError> {
        self.flush_page(pages)?;
        let mut metadata = self
            .tally
            .metadata(self.descr.clone())
            .set_encodings(vec![Encoding::RLE, Encoding::DELTA_BINARY_PACKED])
            .set_page_encoding_stats(vec![PageEncodingStats {
                page_type: PageType::DATA_PAGE,
                encoding: Encoding::DELTA_BINARY_PACKED,
                count: self.pages,
            }]);
        if self.statistics {
            let nulls = Some(self.nulls);
            let statistics: Statistics = if self.wide {
                ValueStatistics::<i64>::new(self.min, self.max, None, nulls, false)
                    .with_backwards_compatible_min_max(true)
                    .into()
            } else {
                let narrow = |v: Option<i64>| v.map(|v| v as i32);
                ValueStatistics::<i32>::new(narrow(self.min), narrow(self.max), None, nulls, false)
                    .with_backwards_compatible_min_max(true)
                    .into()
            };
            // The generic writer's histogram of definition levels (nulls, values) with its
            // statistics, for a column that can be null.
            let histogram = self.nullable.then(|| {
                let values = self.total_rows.saturating_sub(self.nulls);
                LevelHistogram::from(vec![self.nulls as i64, values as i64])
            });
            metadata = metadata
                .set_statistics(statistics)
                .set_definition_level_histogram(histogram);
        }
        Ok(self.tally.close(self.total_rows, metadata.build()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffers::{ColumnRows, Nullable};
    use crate::part::Part;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    use parquet::schema::parser::parse_message_type;
    use pcapsleuth_testkit::oracle::{self, Oracle};
    use std::sync::Arc;

    /// Decodes DELTA_BINARY_PACKED as the format defines it, a bit at a time, for the tests.
    fn decode(mut b: &[u8], wide: bool) -> Vec<i64> {
        fn uleb(b: &mut &[u8]) -> u64 {
            let (mut n, mut shift) = (0u64, 0);
            loop {
                let byte = b[0];
                *b = &b[1..];
                n |= u64::from(byte & 0x7f) << shift;
                shift += 7;
                if byte & 0x80 == 0 {
                    return n;
                }
            }
        }
        let zz = |n: u64| ((n >> 1) as i64) ^ -((n & 1) as i64);
        let block = uleb(&mut b) as usize;
        let minis = uleb(&mut b) as usize;
        let total = uleb(&mut b) as usize;
        let mut v = zz(uleb(&mut b));
        let mut out = Vec::new();
        if total > 0 {
            out.push(v);
        }
        while out.len() < total {
            let min = zz(uleb(&mut b));
            let widths: Vec<usize> = b[..minis].iter().map(|&w| usize::from(w)).collect();
            b = &b[minis..];
            for w in widths {
                let per = block / minis;
                let data = &b[..per * w / 8];
                for i in 0..per {
                    let mut x: u64 = 0;
                    for bit in 0..w {
                        let at = i * w + bit;
                        x |= u64::from((data[at / 8] >> (at % 8)) & 1) << bit;
                    }
                    if out.len() < total {
                        v = if wide {
                            v.wrapping_add(min).wrapping_add(x as i64)
                        } else {
                            i64::from((v as i32).wrapping_add(min as i32).wrapping_add(x as i32))
                        };
                        out.push(v);
                    }
                }
                b = &b[per * w / 8..];
                if out.len() >= total {
                    break;
                }
            }
        }
        assert!(b.is_empty(), "{} bytes left after the values", b.len());
        out
    }

    /// Values whose differences take every width from 0 to 64 bits (the width changes every
    /// miniblock, up and down, with both signs), with the extremes of `i64` (or of `i32`, `wide`
    /// false) among them.
    fn every_width(n: usize, wide: bool) -> Vec<i64> {
        let mut v = 0i64;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let width = (i / miniblock(wide) * 7) % 65;
                let d = if width == 64 {
                    x
                } else {
                    x & ((1 << width) - 1)
                };
                v = match i % 997 {
                    13 => i64::MIN,
                    14 => i64::MAX,
                    _ if i % 2 == 0 => v.wrapping_add(d as i64),
                    _ => v.wrapping_sub(d as i64),
                };
                if wide {
                    v
                } else {
                    i64::from(v as i32)
                }
            })
            .collect()
    }

    fn least(deltas: &[i64]) -> i64 {
        deltas.iter().copied().min().unwrap_or(i64::MAX)
    }

    /// A page's values as the chunk encodes them.
    fn encode(values: &[i64], wide: bool) -> Vec<u8> {
        let mut deltas = Vec::new();
        let mut blocks = Vec::new();
        for w in values.windows(2) {
            deltas.push(if wide {
                w[1].wrapping_sub(w[0])
            } else {
                i64::from((w[1] as i32).wrapping_sub(w[0] as i32))
            });
            if deltas.len() == MINIBLOCKS * miniblock(wide) {
                block(&deltas, least(&deltas), wide, &mut blocks);
                deltas.clear();
            }
        }
        if !deltas.is_empty() {
            block(&deltas, least(&deltas), wide, &mut blocks);
        }
        let mut out = Vec::new();
        uleb128((MINIBLOCKS * miniblock(wide)) as u64, &mut out);
        uleb128(MINIBLOCKS as u64, &mut out);
        uleb128(values.len() as u64, &mut out);
        zigzag(values.first().copied().unwrap_or(0), &mut out);
        out.extend_from_slice(&blocks);
        out
    }

    #[test]
    fn delta_binary_packed_round_trips_every_width_at_both_sizes() {
        for wide in [true, false] {
            let narrow = |v: &[i64]| -> Vec<i64> {
                v.iter()
                    .map(|&v| if wide { v } else { i64::from(v as i32) })
                    .collect()
            };
            let mut cases = vec![
                vec![],
                vec![7],
                vec![5, 5, 5],
                narrow(&[i64::MIN, i64::MAX, 0, -1, i64::MAX, i64::MIN]),
                (0..1000).map(|i| 700 - i * 3).collect(),
            ];
            for n in [
                2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 130, 255, 256, 257, 258, 5000,
            ] {
                cases.push(every_width(n, wide));
            }
            for values in cases {
                let encoded = encode(&values, wide);
                assert_eq!(decode(&encoded, wide), values, "wide {wide}");
            }
        }
    }

    /// Every width is packed as a bit-by-bit packer does.
    #[test]
    fn miniblocks_pack_as_bit_by_bit_at_every_width() {
        for width in 0..=64u32 {
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            let values: [u64; PACKED] = std::array::from_fn(|i| {
                (i as u64 + 1)
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    .rotate_left(i as u32)
                    & mask
            });
            let mut want = vec![0u8; 4 * width as usize];
            for (i, v) in values.iter().enumerate() {
                for b in 0..width as usize {
                    if v >> b & 1 == 1 {
                        let bit = i * width as usize + b;
                        want[bit / 8] |= 1 << (bit % 8);
                    }
                }
            }
            let mut got = vec![];
            pack(&values, width, &mut got);
            assert_eq!(got, want, "width {width}");
        }
    }

    /// A file of INT64 and INT32 columns, required and nullable, written by the integer chunks and
    /// read back by parquet's reader and by DuckDB: differences of every width with both signs, the
    /// extremes of both sizes, nulls and runs of nulls, a row group whose nullable columns hold no
    /// value, a last row group of one row (pages of one value), several row groups; and the chunk
    /// statistics (min, max, nulls).
    #[test]
    fn integer_chunks_read_back_by_parquet_and_duckdb() {
        let dir =
            std::env::temp_dir().join(format!("pcapsleuth-export-delta-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let schema = Arc::new(
            parse_message_type(
                "message m { required binary capture (STRING); required int64 a;
                 optional int64 b; optional int32 c; required int32 d; }",
            )
            .expect("schema"),
        );
        let group = 1000;
        let n = 5 * group + 1;
        let wide = every_width(n, true);
        let narrow = every_width(n, false);
        type Row = (i64, Option<i64>, Option<i32>, i32);
        let row = |i: usize| -> Row {
            let empty = (2 * group..3 * group).contains(&i);
            let b = (!empty && !i.is_multiple_of(3) && !(700..800).contains(&i))
                .then_some(wide[n - 1 - i]);
            let c = (!empty && i % 4 != 1).then_some(narrow[i] as i32);
            (wide[i], b, c, narrow[n - 1 - i] as i32)
        };
        let rows: Vec<Row> = (0..n).map(row).collect();
        let mut part = Part::create(&dir, 0, &schema, &["cap".to_string()])
            .expect("part")
            .with_row_group_rows(group);
        let (mut a, mut b, mut c, mut d) = (
            Vec::<i64>::new(),
            Nullable::<i64>::default(),
            Nullable::<i32>::default(),
            Vec::<i32>::new(),
        );
        // Batches of odd sizes: levels begun mid-byte, blocks mid-batch.
        for batch in rows.chunks(333) {
            for r in batch {
                a.push(r.0);
                b.push(r.1);
                c.push(r.2);
                d.push(r.3);
            }
            let mut columns: [&mut dyn ColumnRows; 4] = [&mut a, &mut b, &mut c, &mut d];
            part.write(batch.len(), &mut columns).expect("write");
        }
        let syncs = crate::part::Syncs::default();
        assert_eq!(part.close(&syncs).expect("close"), n as u64);
        syncs.wait().expect("synced");
        let path = dir.join("part-00000.parquet");
        let reader =
            SerializedFileReader::new(std::fs::File::open(&path).expect("open")).expect("reader");
        let meta = reader.metadata();
        assert_eq!(meta.num_row_groups(), 6);
        for (g, rg) in meta.row_groups().iter().enumerate() {
            let these = &rows[g * group..((g + 1) * group).min(n)];
            let encodings: Vec<Encoding> = rg.column(1).encodings().collect();
            assert!(
                encodings.contains(&Encoding::DELTA_BINARY_PACKED),
                "{encodings:?}"
            );
            let minmax = |v: Vec<i64>| (v.iter().min().copied(), v.iter().max().copied());
            let want_a = minmax(these.iter().map(|r| r.0).collect());
            match rg.column(1).statistics() {
                Some(Statistics::Int64(s)) => {
                    assert_eq!((s.min_opt().copied(), s.max_opt().copied()), want_a);
                    assert_eq!(s.null_count_opt(), Some(0));
                }
                other => panic!("statistics of a: {other:?}"),
            }
            let want_c = minmax(these.iter().filter_map(|r| r.2.map(i64::from)).collect());
            let nulls_c = these.iter().filter(|r| r.2.is_none()).count() as u64;
            match rg.column(3).statistics() {
                Some(Statistics::Int32(s)) => {
                    let got = (
                        s.min_opt().map(|&v| i64::from(v)),
                        s.max_opt().map(|&v| i64::from(v)),
                    );
                    assert_eq!(got, want_c, "row group {g}");
                    assert_eq!(s.null_count_opt(), Some(nulls_c));
                }
                other => panic!("statistics of c: {other:?}"),
            }
        }
        let expected: Vec<[Field; 4]> = rows
            .iter()
            .map(|&(a, b, c, d)| {
                [
                    Field::Long(a),
                    b.map_or(Field::Null, Field::Long),
                    c.map_or(Field::Null, Field::Int),
                    Field::Int(d),
                ]
            })
            .collect();
        let read: Vec<[Field; 4]> = reader
            .get_row_iter(None)
            .expect("rows")
            .map(|r| {
                let r = r.expect("row");
                let cells: Vec<Field> = r
                    .get_column_iter()
                    .skip(1)
                    .map(|(_, f)| f.clone())
                    .collect();
                cells.try_into().expect("4 columns")
            })
            .collect();
        assert!(read == expected, "parquet's reader reads other values");
        // DuckDB: every row, as JSON (integers of any size), in the file's order.
        if let Some(duckdb) = oracle::require(Oracle::DuckDb) {
            let script = "import duckdb, json, sys
rows = duckdb.sql(\"SELECT a, b, c, d FROM read_parquet('\" + sys.argv[1] + \"', file_row_number = true) ORDER BY file_row_number\").fetchall()
print(json.dumps(rows))";
            let out = duckdb
                .command()
                .arg("-c")
                .arg(script)
                .arg(&path)
                .output()
                .expect("python3");
            assert!(
                out.status.success(),
                "duckdb: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let got: Vec<(i64, Option<i64>, Option<i32>, i32)> =
                serde_json::from_slice(&out.stdout).expect("json rows");
            assert!(got == rows, "DuckDB reads other values");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
