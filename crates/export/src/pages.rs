//! Pages written into memory, compressed with zstd: a column's part of the row group being filled, as
//! `parquet`'s column writers hand them over.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use parquet::basic::{Compression, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriteSpec, PageWriter};
use parquet::errors::ParquetError;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};

/// Every page's compression, as the column chunks' metadata names it: zstd (the level a page was
/// compressed at is not recorded; [`ZstdLevel::default`] is what parquet's reader reports).
pub(crate) fn compression() -> Compression {
    Compression::ZSTD(ZstdLevel::default())
}

/// zstd's level for the pages of text columns: 2 (statements and endpoints repeat; pages of up to 1 MiB
/// of statements): as small as level 3's output for fewer instructions; faster levels write larger files
/// for no fewer instructions.
pub(crate) const TEXT_LEVEL: i32 = 2;

/// zstd's level for the pages of numbers, times and booleans: -7, one of zstd's fast levels. Their
/// pages are mostly delta-encoded times and frames, whose low bits zstd cannot shrink: at its usual
/// levels zstd spends a visible share of the export's instructions searching them for repeats it
/// hardly finds, and a faster level still than -7 writes visibly larger files for little less work.
pub(crate) const NUMBER_LEVEL: i32 = -7;

/// What the column chunks of a file share: its compressors (one per level), and the buffer a text
/// page is assembled in before it is compressed (a file's chunks are written one after the other, by
/// one thread at a time).
pub(crate) struct Codec {
    texts: zstd::bulk::Compressor<'static>,
    numbers: zstd::bulk::Compressor<'static>,
    page: Vec<u8>,
}

pub(crate) type SharedCodec = Arc<Mutex<Codec>>;

fn external(e: std::io::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

pub(crate) fn codec() -> Result<SharedCodec, ParquetError> {
    Ok(Arc::new(Mutex::new(Codec {
        texts: zstd::bulk::Compressor::new(TEXT_LEVEL).map_err(external)?,
        numbers: zstd::bulk::Compressor::new(NUMBER_LEVEL).map_err(external)?,
        page: Vec::new(),
    })))
}

/// Pages written into memory: a column's part of the row group being filled.
#[derive(Clone)]
pub(crate) struct Pages {
    sink: Arc<Mutex<TrackedWrite<Vec<u8>>>>,
    codec: SharedCodec,
}

impl Pages {
    pub(crate) fn new(codec: SharedCodec) -> Self {
        Pages {
            sink: Arc::new(Mutex::new(TrackedWrite::new(Vec::new()))),
            codec,
        }
    }

    /// The bytes written, leaving none.
    pub(crate) fn take(&self) -> Vec<u8> {
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *sink, TrackedWrite::new(Vec::new()))
            .into_inner()
            .unwrap_or_default()
    }

    /// A page's bytes, assembled by `build` in the file's page buffer (which it finds empty), then
    /// compressed; with the size before compression.
    pub(crate) fn compress(
        &self,
        build: impl FnOnce(&mut Vec<u8>) -> Result<(), ParquetError>,
    ) -> Result<(Bytes, usize), ParquetError> {
        self.assemble(false, build)
    }

    /// A text page compressed where it lies (assembled elsewhere: no copy into the page buffer).
    pub(crate) fn compress_slice(&self, data: &[u8]) -> Result<Bytes, ParquetError> {
        let mut codec = self.codec.lock().unwrap_or_else(PoisonError::into_inner);
        let compressed = codec.texts.compress(data).map_err(external)?;
        Ok(Bytes::from(compressed))
    }

    /// A page of numbers assembled by `build` in the file's page buffer (which it finds empty), then
    /// compressed at the numbers' level; with the size before compression.
    pub(crate) fn compress_numbers_with(
        &self,
        build: impl FnOnce(&mut Vec<u8>) -> Result<(), ParquetError>,
    ) -> Result<(Bytes, usize), ParquetError> {
        self.assemble(true, build)
    }

    /// A page assembled by `build` in the file's page buffer (which it finds empty), then compressed
    /// at the numbers' level or the texts'; with the size before compression.
    #[inline]
    fn assemble(
        &self,
        numbers: bool,
        build: impl FnOnce(&mut Vec<u8>) -> Result<(), ParquetError>,
    ) -> Result<(Bytes, usize), ParquetError> {
        let mut codec = self.codec.lock().unwrap_or_else(PoisonError::into_inner);
        let Codec {
            texts,
            numbers: number_codec,
            page,
        } = &mut *codec;
        page.clear();
        build(page)?;
        let compressor = if numbers { number_codec } else { texts };
        let compressed = compressor.compress(page).map_err(external)?;
        Ok((Bytes::from(compressed), page.len()))
    }

    /// A page of the generic writer (doubles, booleans) compressed where it lies.
    fn compress_numbers(&self, data: &[u8]) -> Result<Bytes, ParquetError> {
        let mut codec = self.codec.lock().unwrap_or_else(PoisonError::into_inner);
        let compressed = codec.numbers.compress(data).map_err(external)?;
        Ok(Bytes::from(compressed))
    }

    /// Writes a page already compressed (by [`Pages::compress`]).
    pub(crate) fn write_compressed(
        &mut self,
        page: CompressedPage,
    ) -> Result<PageWriteSpec, ParquetError> {
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        SerializedPageWriter::new(&mut sink).write_page(page)
    }
}

impl PageWriter for Pages {
    /// Compresses a page of the generic writer (which leaves them uncompressed, see [`properties`])
    /// and serialises it (header and data) as a file writer does, into memory.
    fn write_page(&mut self, page: CompressedPage) -> Result<PageWriteSpec, ParquetError> {
        let data = |buf: &Bytes| Ok::<_, ParquetError>((self.compress_numbers(buf)?, buf.len()));
        let compressed = match page.compressed_page() {
            Page::DataPage {
                buf,
                num_values,
                encoding,
                def_level_encoding,
                rep_level_encoding,
                statistics,
            } => {
                let (buf, size) = data(buf)?;
                CompressedPage::new(
                    Page::DataPage {
                        buf,
                        num_values: *num_values,
                        encoding: *encoding,
                        def_level_encoding: *def_level_encoding,
                        rep_level_encoding: *rep_level_encoding,
                        statistics: statistics.clone(),
                    },
                    size,
                )
            }
            Page::DictionaryPage {
                buf,
                num_values,
                encoding,
                is_sorted,
            } => {
                let (buf, size) = data(buf)?;
                CompressedPage::new(
                    Page::DictionaryPage {
                        buf,
                        num_values: *num_values,
                        encoding: *encoding,
                        is_sorted: *is_sorted,
                    },
                    size,
                )
            }
            Page::DataPageV2 { .. } => {
                return Err(ParquetError::General(
                    "a version 2 data page from a writer set to version 1".into(),
                ))
            }
        };
        self.write_compressed(compressed)
    }

    fn close(&mut self) -> Result<(), ParquetError> {
        Ok(())
    }
}
