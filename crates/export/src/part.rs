//! One Parquet file of a dataset (`part-N.parquet`): the writer settings every dataset shares.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

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
fn properties(schema: &SchemaRef) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_created_by(format!("pcapsleuth {}", env!("CARGO_PKG_VERSION")));
    for f in schema.fields() {
        let name = f.name().as_str();
        let path = || ColumnPath::from(name);
        let dictionary = DICTIONARY.contains(&name);
        if dictionary {
            b = b.set_column_dictionary_enabled(path(), true);
        }
        if NO_STATISTICS.contains(&name) {
            b = b.set_column_statistics_enabled(path(), EnabledStatistics::None);
        }
        match f.data_type() {
            DataType::Utf8 => {
                b = b.set_column_statistics_enabled(path(), EnabledStatistics::None);
            }
            DataType::Int64 | DataType::Int32 | DataType::Timestamp(..) if !dictionary => {
                b = b.set_column_encoding(path(), Encoding::DELTA_BINARY_PACKED);
            }
            _ => {}
        }
    }
    b.build()
}

/// A Parquet file being written.
pub(crate) struct Part {
    path: PathBuf,
    writer: ArrowWriter<BufWriter<File>>,
    rows: u64,
}

impl Part {
    /// Creates `dir/part-N.parquet` (`dir` must exist) for batches of `schema`.
    pub(crate) fn create(dir: &Path, n: usize, schema: &SchemaRef) -> Result<Part, ExportError> {
        let path = dir.join(format!("part-{n:05}.parquet"));
        let file = File::create(&path).map_err(|e| ExportError::io(&path, e))?;
        let writer = ArrowWriter::try_new(
            BufWriter::with_capacity(1 << 20, file),
            schema.clone(),
            Some(properties(schema)),
        )
        .map_err(|e| ExportError::parquet(&path, e))?;
        Ok(Part {
            path,
            writer,
            rows: 0,
        })
    }

    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<(), ExportError> {
        self.rows += batch.num_rows() as u64;
        self.writer
            .write(batch)
            .map_err(|e| ExportError::parquet(&self.path, e))
    }

    /// Writes the footer and closes the file; returns its rows.
    pub(crate) fn close(self) -> Result<u64, ExportError> {
        let Part { path, writer, rows } = self;
        let out = writer
            .into_inner()
            .map_err(|e| ExportError::parquet(&path, e))?;
        out.into_inner()
            .map_err(|e| ExportError::io(&path, e.into_error()))?
            .sync_all()
            .map_err(|e| ExportError::io(&path, e))?;
        Ok(rows)
    }
}
