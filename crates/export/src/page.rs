//! What the export's own column writers ([`crate::plain`]'s texts, [`crate::delta`]'s integers) share:
//! the bytes of a version 1 data page's definition levels, the page around its compressed bytes, and
//! the running totals of a column chunk that become its metadata and offset index, as the generic
//! writer makes them.

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::page::{CompressedPage, Page, PageWriteSpec};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::metadata::{
    ColumnChunkMetaData, ColumnChunkMetaDataBuilder, OffsetIndexBuilder,
};
use parquet::schema::types::ColumnDescPtr;

use crate::pages::compression;

/// Appends `n` as a ULEB128 varint.
pub(crate) fn uleb128(mut n: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Appends the definition levels of a page of `rows` rows of a column that can be null: a 4-byte
/// length, then the RLE/bit-packed hybrid at bit width 1 as one bit-packed run of `levels` (one bit
/// per row, 1: a value, least significant bit first), padded with zeros to whole groups of 8.
pub(crate) fn definition_levels(
    levels: &[u8],
    rows: usize,
    page: &mut Vec<u8>,
) -> Result<(), ParquetError> {
    let groups = rows.div_ceil(8);
    let mut header = Vec::with_capacity(10);
    uleb128(((groups as u64) << 1) | 1, &mut header);
    let len = u32::try_from(header.len() + groups).map_err(|_| too_many_rows())?;
    page.extend_from_slice(&len.to_le_bytes());
    page.extend_from_slice(&header);
    let held = &levels[..levels.len().min(groups)];
    page.extend_from_slice(held);
    page.resize(page.len() + groups - held.len(), 0);
    Ok(())
}

/// A version 1 data page of `rows` rows, `buf` its compressed bytes (`uncompressed` before).
pub(crate) fn data_page(
    buf: Bytes,
    rows: usize,
    encoding: Encoding,
    uncompressed: usize,
) -> Result<CompressedPage, ParquetError> {
    let rows = u32::try_from(rows).map_err(|_| too_many_rows())?;
    Ok(CompressedPage::new(
        Page::DataPage {
            buf,
            num_values: rows,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        },
        uncompressed,
    ))
}

fn too_many_rows() -> ParquetError {
    ParquetError::General("a page of too many rows".into())
}

/// What a column chunk's pages have written so far.
pub(crate) struct ChunkTally {
    num_values: u64,
    uncompressed: u64,
    compressed: u64,
    bytes_written: u64,
    first_data_page: Option<u64>,
    offsets: OffsetIndexBuilder,
}

impl ChunkTally {
    pub(crate) fn new() -> ChunkTally {
        ChunkTally {
            num_values: 0,
            uncompressed: 0,
            compressed: 0,
            bytes_written: 0,
            first_data_page: None,
            offsets: OffsetIndexBuilder::new(),
        }
    }

    /// Counts a page written (a dictionary page, or a data page through [`ChunkTally::data_page`]).
    pub(crate) fn page(&mut self, spec: &PageWriteSpec) {
        self.uncompressed += spec.uncompressed_size as u64;
        self.compressed += spec.compressed_size as u64;
        self.bytes_written += spec.bytes_written;
    }

    /// Counts a data page of `rows` rows written, and enters it in the offset index.
    pub(crate) fn data_page(&mut self, spec: &PageWriteSpec, rows: usize) {
        self.page(spec);
        self.offsets.append_row_count(rows as i64);
        self.offsets
            .append_offset_and_size(spec.offset as i64, spec.compressed_size as i32);
        self.num_values += u64::from(spec.num_values);
        self.first_data_page.get_or_insert(spec.offset);
    }

    /// The chunk's metadata as far as the pages tell it: compression, sizes, values, first data page.
    pub(crate) fn metadata(&self, descr: ColumnDescPtr) -> ColumnChunkMetaDataBuilder {
        ColumnChunkMetaData::builder(descr)
            .set_compression(compression())
            .set_total_compressed_size(self.compressed as i64)
            .set_total_uncompressed_size(self.uncompressed as i64)
            .set_num_values(self.num_values as i64)
            .set_data_page_offset(self.first_data_page.unwrap_or(0) as i64)
    }

    /// What the generic writer's `close` returns for the chunk of `rows` rows described by `metadata`.
    pub(crate) fn close(self, rows: u64, metadata: ColumnChunkMetaData) -> ColumnCloseResult {
        ColumnCloseResult {
            bytes_written: self.bytes_written,
            rows_written: rows,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: Some(self.offsets.build()),
        }
    }
}
