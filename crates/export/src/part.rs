//! One Parquet file of a dataset (`part-N.parquet`): the writer settings every dataset shares, and
//! the row group being filled.
//!
//! Written with `parquet`'s own column writers: a row group's columns must each lie in one piece in
//! the file, while rows come in batches of every column, so each column of the row group being filled
//! has its own writer, whose encoded and compressed pages wait in memory until the row group is full
//! and they are appended to the file one column after the other (what Arrow's writer does too).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, Type as PhysicalType, ZstdLevel};
use parquet::column::page::{CompressedPage, PageWriteSpec, PageWriter};
use parquet::column::writer::{get_column_writer, ColumnWriter};
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::{ColumnDescPtr, ColumnPath, TypePtr};

use crate::buffers::ColumnRows;
use crate::ExportError;

/// Rows per row group: the unit engines read in parallel and skip by statistics. 128 Ki rows of
/// transactions are a few MB compressed, and a writer holds one row group in memory while it fills.
pub(crate) const ROW_GROUP_ROWS: usize = 128 * 1024;

/// Text columns dictionary-encoded (each distinct text stored once per row group, then small
/// integers): the long texts that repeat, fingerprints and error messages (and their SQLSTATE, null for
/// most rows). Short texts with few values (endpoints, commands, states, the capture's name and the
/// labels) are written plain and left to zstd, which finds their repeats for less than the dictionary's
/// hashing of every value costs (on a 60 MB slice of the bench capture, one thread: about 3% fewer
/// instructions, output about 1.5% larger); so are integers (ports, error codes), delta-encoded below.
const DICTIONARY: &[&str] = &["fingerprint", "sql_state", "error_message"];

/// Columns without statistics. Min and max per row group are kept where engines prune by them (frames,
/// times, connection ids, error codes, response times, and every column of the small datasets): for the
/// other columns of `transactions` they cost a comparison per value (0.8% of an export) and prune little.
const NO_STATISTICS: &[&str] = &[
    "first_response_frame",
    "first_response_time",
    "client_port",
    "server_port",
    "statement_id",
    "text_cut",
    "is_query",
    "rows",
    "affected_rows",
    "request_bytes",
    "response_bytes",
    "waited_us",
    "retransmitted",
];

/// zstd level 1: most of zstd's ratio on this data at a fraction of the higher levels' time (level -1,
/// zstd's faster mode, saved 2% of the instructions for 15% more bytes; -4, none for 65% more).
///
/// Integers and times that are not dictionary-encoded are delta-encoded (DELTA_BINARY_PACKED, which
/// every engine reads): frames and times rise within a connection and counts are small, so a value
/// takes a byte or two before zstd sees it, where plain encoding would hand zstd eight. Statistics
/// (min and max per row group) are kept for numbers and times (but [`NO_STATISTICS`]), where engines
/// prune by them, and left out for texts, where computing them compares every value and prunes little.
fn properties(schema: &TypePtr) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_created_by(format!("pcapsleuth {}", env!("CARGO_PKG_VERSION")));
    for f in schema.get_fields() {
        let name = f.name();
        let path = || ColumnPath::from(name);
        let dictionary = DICTIONARY.contains(&name);
        if dictionary {
            b = b.set_column_dictionary_enabled(path(), true);
        }
        if NO_STATISTICS.contains(&name) {
            b = b.set_column_statistics_enabled(path(), EnabledStatistics::None);
        }
        match f.get_physical_type() {
            PhysicalType::BYTE_ARRAY => {
                b = b.set_column_statistics_enabled(path(), EnabledStatistics::None);
            }
            PhysicalType::INT64 | PhysicalType::INT32 if !dictionary => {
                b = b.set_column_encoding(path(), Encoding::DELTA_BINARY_PACKED);
            }
            _ => {}
        }
    }
    b.build()
}

/// Pages written into memory: a column's part of the row group being filled.
#[derive(Clone)]
struct Pages(Arc<Mutex<TrackedWrite<Vec<u8>>>>);

impl Pages {
    fn new() -> Self {
        Pages(Arc::new(Mutex::new(TrackedWrite::new(Vec::new()))))
    }

    /// The bytes written, leaving none.
    fn take(&self) -> Vec<u8> {
        let mut sink = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *sink, TrackedWrite::new(Vec::new()))
            .into_inner()
            .unwrap_or_default()
    }
}

impl PageWriter for Pages {
    /// Serialises the page (header and data) as a file writer does, into memory.
    fn write_page(&mut self, page: CompressedPage) -> Result<PageWriteSpec, ParquetError> {
        let mut sink = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        SerializedPageWriter::new(&mut sink).write_page(page)
    }

    fn close(&mut self) -> Result<(), ParquetError> {
        Ok(())
    }
}

/// One column of the row group being filled: its writer and the pages it wrote.
pub(crate) struct Chunk {
    writer: ColumnWriter<'static>,
    pages: Pages,
    /// Dictionary-encoded (see [`DICTIONARY`]).
    dictionary: bool,
    /// Room for a batch's values as `ByteArray`s, kept between batches.
    scratch: Vec<ByteArray>,
}

impl Chunk {
    fn new(descr: ColumnDescPtr, props: &WriterPropertiesPtr) -> Chunk {
        let dictionary = props.dictionary_enabled(descr.path());
        let pages = Pages::new();
        Chunk {
            writer: get_column_writer(descr, props.clone(), Box::new(pages.clone())),
            pages,
            dictionary,
            scratch: Vec::new(),
        }
    }

    pub(crate) fn writer(&mut self) -> &mut ColumnWriter<'static> {
        &mut self.writer
    }

    /// Whether the column is dictionary-encoded (its encoder keeps the distinct values given).
    pub(crate) fn dictionary(&self) -> bool {
        self.dictionary
    }

    /// The scratch vector, empty; give it back with [`Chunk::give_scratch`].
    pub(crate) fn take_scratch(&mut self) -> Vec<ByteArray> {
        std::mem::take(&mut self.scratch)
    }

    pub(crate) fn give_scratch(&mut self, v: Vec<ByteArray>) {
        self.scratch = v;
    }
}

/// A text column holding one value in every row (the capture's name, a label's value).
struct Constant {
    value: ByteArray,
    /// `value` repeated, as many times as the largest batch yet.
    repeated: Vec<ByteArray>,
}

impl Constant {
    fn write(&mut self, to: &mut Chunk, n: usize) -> Result<(), ParquetError> {
        if self.repeated.len() < n {
            self.repeated.resize(n, self.value.clone());
        }
        match to.writer() {
            ColumnWriter::ByteArrayColumnWriter(w) => {
                w.write_batch(&self.repeated[..n], None, None)?;
                Ok(())
            }
            _ => Err(ParquetError::General(
                "a constant column that is not text".into(),
            )),
        }
    }
}

/// A Parquet file being written.
pub(crate) struct Part {
    path: PathBuf,
    file: SerializedFileWriter<BufWriter<File>>,
    props: WriterPropertiesPtr,
    /// Every column of the schema.
    descrs: Vec<ColumnDescPtr>,
    /// The constant columns, which come first.
    constants: Vec<Constant>,
    /// The row group being filled, one chunk per column; `None` between row groups.
    group: Option<Vec<Chunk>>,
    /// Rows in `group`.
    group_rows: usize,
    rows: u64,
}

impl Part {
    /// Creates `dir/part-N.parquet` (`dir` must exist) for rows of `schema`, whose first columns hold
    /// `constants` in every row.
    pub(crate) fn create(
        dir: &Path,
        n: usize,
        schema: &TypePtr,
        constants: &[String],
    ) -> Result<Part, ExportError> {
        let path = dir.join(format!("part-{n:05}.parquet"));
        let file = File::create(&path).map_err(|e| ExportError::io(&path, e))?;
        let props = Arc::new(properties(schema));
        let file = SerializedFileWriter::new(
            BufWriter::with_capacity(1 << 20, file),
            schema.clone(),
            props.clone(),
        )
        .map_err(|e| ExportError::parquet(&path, e))?;
        let descrs = file.schema_descr().columns().to_vec();
        Ok(Part {
            path,
            file,
            props,
            descrs,
            constants: constants
                .iter()
                .map(|c| Constant {
                    value: ByteArray::from(c.as_str()),
                    repeated: Vec::new(),
                })
                .collect(),
            group: None,
            group_rows: 0,
            rows: 0,
        })
    }

    /// Writes `rows` rows of `columns` (every column after the constant ones, in the schema's order),
    /// then clears them. Row groups hold [`ROW_GROUP_ROWS`] rows (the last one of a file fewer): rows
    /// that would overfill one begin the next.
    pub(crate) fn write(
        &mut self,
        rows: usize,
        columns: &mut [&mut dyn ColumnRows],
    ) -> Result<(), ExportError> {
        let result = self.write_rows(rows, columns);
        for c in columns {
            c.clear();
        }
        result.map_err(|e| ExportError::parquet(&self.path, e))
    }

    fn write_rows(
        &mut self,
        rows: usize,
        columns: &mut [&mut dyn ColumnRows],
    ) -> Result<(), ParquetError> {
        if self.constants.len() + columns.len() != self.descrs.len() {
            return Err(ParquetError::General(format!(
                "{} columns for a schema of {}",
                self.constants.len() + columns.len(),
                self.descrs.len()
            )));
        }
        let mut from = 0;
        while from < rows {
            let n = (rows - from).min(ROW_GROUP_ROWS - self.group_rows);
            let (props, descrs) = (&self.props, &self.descrs);
            let group = self.group.get_or_insert_with(|| {
                descrs
                    .iter()
                    .map(|d| Chunk::new(d.clone(), props))
                    .collect()
            });
            let (constant_chunks, chunks) = group.split_at_mut(self.constants.len());
            for (c, chunk) in self.constants.iter_mut().zip(constant_chunks) {
                c.write(chunk, n)?;
            }
            for (c, chunk) in columns.iter().zip(chunks) {
                c.write(chunk, from, n)?;
            }
            self.group_rows += n;
            self.rows += n as u64;
            from += n;
            if self.group_rows >= ROW_GROUP_ROWS {
                self.flush_group()?;
            }
        }
        Ok(())
    }

    /// Appends the row group being filled to the file, one column after the other.
    fn flush_group(&mut self) -> Result<(), ParquetError> {
        let Some(group) = self.group.take() else {
            return Ok(());
        };
        self.group_rows = 0;
        let mut row_group = self.file.next_row_group()?;
        for chunk in group {
            let closed = chunk.writer.close()?;
            row_group.append_column(&Bytes::from(chunk.pages.take()), closed)?;
        }
        row_group.close()?;
        Ok(())
    }

    /// Writes the last row group and the footer, and closes the file; returns its rows.
    pub(crate) fn close(mut self) -> Result<u64, ExportError> {
        self.flush_group()
            .map_err(|e| ExportError::parquet(&self.path, e))?;
        let Part {
            path, file, rows, ..
        } = self;
        let mut out = file
            .into_inner()
            .map_err(|e| ExportError::parquet(&path, e))?;
        out.flush().map_err(|e| ExportError::io(&path, e))?;
        out.into_inner()
            .map_err(|e| ExportError::io(&path, e.into_error()))?
            .sync_all()
            .map_err(|e| ExportError::io(&path, e))?;
        Ok(rows)
    }
}
