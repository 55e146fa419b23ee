//! One Parquet file of a dataset (`part-N.parquet`): the writer settings every dataset shares, and
//! the row group being filled.
//!
//! Written with `parquet`'s own column writers: a row group's columns must each lie in one piece in
//! the file, while rows come in batches of every column, so each column of the row group being filled
//! has its own writer, whose encoded and compressed pages wait in memory until the row group is full
//! and they are appended to the file one column after the other (what Arrow's writer does too).
//!
//! A full row group's chunks are closed (their last pages compressed, a dictionary page written) a
//! few at a time, by the writes that fill the next row group ([`Part::close_some`]), and appended
//! when the last is closed: closed all at once, a row group cost one write about ten times a batch's
//! time (the pages of a row group's numbers are compressed at its close), and the other cores waited
//! for the bucket that made that write at the end of the engine's tracking phase. The file's bytes
//! are the same either way.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, Type as PhysicalType};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescPtr, ColumnPath, TypePtr};

use crate::buffers::ColumnRows;
use crate::{ExportError, ROW_GROUP_ROWS};

use crate::chunk::Chunk;
use crate::pages::{codec, SharedCodec};

/// Text columns dictionary-encoded (each distinct text stored once per row group, then small
/// integers): the long texts that repeat, fingerprints and error messages (and their SQLSTATE, null for
/// most rows), and the short ones that repeat row after row, endpoints, commands and states (a
/// connection's rows share its endpoints; [`crate::plain::TextChunk::push_run`] gives a run of one
/// text its index at once, where PLAIN would copy its bytes into every row for zstd to find them
/// again). The texts of every row or none (the capture's name and the labels) are written plain, as a
/// run costs the same either way; integers (ports, error codes) are delta-encoded below.
const DICTIONARY: &[&str] = &[
    "fingerprint",
    "sql_state",
    "error_message",
    "client",
    "server",
    "client_ip",
    "server_ip",
    "command",
    "state",
];

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
    "last_request_frame",
    "last_request_time",
    "upload_us",
    "server_us",
    "download_us",
];

/// zstd, at a level per kind of column ([`TEXT_LEVEL`], [`NUMBER_LEVEL`]; a file does not record the
/// level, readers need none).
///
/// Integers and times that are not dictionary-encoded are delta-encoded (DELTA_BINARY_PACKED, which
/// every engine reads): frames and times rise within a connection and counts are small, so a value
/// takes a byte or two before zstd sees it, where plain encoding would hand zstd eight. Statistics
/// (min and max per row group) are kept for numbers and times (but [`NO_STATISTICS`]), where engines
/// prune by them, and left out for texts, where computing them compares every value and prunes little.
///
/// A data page holds up to a row group's rows (or 1 MiB of values), where the generic writer's
/// default is 20,000 rows: see [`crate::plain`]'s `PAGE_ROWS`, which the text columns share.
///
/// The generic writer is told to leave pages uncompressed: [`Pages`] compresses them, with the one
/// compressor of the file (the generic writer makes a zstd compression and decompression context per
/// column and row group, 16 MB of contexts at once on the bench capture), and the column chunk's
/// metadata is given [`compression`] when it closes.
pub(crate) fn properties(schema: &TypePtr) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::UNCOMPRESSED)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_data_page_row_count_limit(ROW_GROUP_ROWS)
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

/// Files written, whose data is on its way to the disk: each file's `fsync` runs on a thread of its
/// own while the export goes on, and [`Syncs::wait`] waits for them all before the datasets are put in
/// place (a partition still appears only once every file of it is on the disk). Synced one after the
/// other where they were closed, they took the end of a run: on the 2.1 GB bench capture the two
/// files of `transactions` waited 17 and 32 ms for the disk, the four end-of-run datasets 20 ms more,
/// each time with a core idle.
#[derive(Default)]
pub(crate) struct Syncs(Mutex<Vec<Syncing>>);

/// A file's `fsync` under way.
struct Syncing {
    path: PathBuf,
    done: std::thread::JoinHandle<std::io::Result<()>>,
}

impl Syncs {
    /// Syncs `file` (written and flushed) on a thread of its own; here, if no thread can be made.
    fn sync(&self, path: &Path, file: File) -> Result<(), ExportError> {
        let syncing = std::thread::Builder::new()
            .name("pcapsleuth-export-sync".into())
            .spawn(move || file.sync_all());
        match syncing {
            Ok(done) => {
                let path = path.to_path_buf();
                self.0
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(Syncing { path, done });
                Ok(())
            }
            // The file was closed with the thread that was not made: any handle syncs it.
            Err(_) => File::open(path)
                .and_then(|f| f.sync_all())
                .map_err(|e| ExportError::io(path, e)),
        }
    }

    /// Waits for every sync begun; the first that failed.
    pub(crate) fn wait(&self) -> Result<(), ExportError> {
        let syncs = std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        let mut result = Ok(());
        for Syncing { path, done } in syncs {
            let synced = done
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the sync's thread panicked")));
            if let (Err(e), Ok(())) = (synced, &result) {
                result = Err(ExportError::io(&path, e));
            }
        }
        result
    }
}

/// Bytes buffered on their way to a file: column chunks are appended whole (and pass the buffer by),
/// so it holds only the small writes (the footer, the magic bytes).
const FILE_BUFFER: usize = 64 << 10;

/// A text column holding one value in every row (the capture's name, a label's value).
struct Constant(String);

impl Constant {
    fn write(&mut self, to: &mut Chunk, n: usize) -> Result<(), ParquetError> {
        let (text, pages) = to.text()?;
        text.push_run(Some(self.0.as_bytes()), n, pages)
    }
}

/// A Parquet file being written.
pub(crate) struct Part {
    path: PathBuf,
    file: SerializedFileWriter<BufWriter<File>>,
    props: WriterPropertiesPtr,
    codec: SharedCodec,
    /// Every column of the schema.
    descrs: Vec<ColumnDescPtr>,
    /// The constant columns, which come first.
    constants: Vec<Constant>,
    /// The row group being filled, one chunk per column; `None` between row groups.
    group: Option<Vec<Chunk>>,
    /// The last full row group's chunks not yet closed, in the schema's order.
    closing: VecDeque<Chunk>,
    /// Its chunks closed, with their bytes: appended to the file when the last one is.
    closed: Vec<(ColumnCloseResult, Vec<u8>)>,
    /// Full row groups are closed a few chunks per write (else in the write that filled them).
    #[cfg(test)]
    spread: bool,
    /// Rows in `group`.
    group_rows: usize,
    /// Rows per row group ([`ROW_GROUP_ROWS`]; fewer in tests).
    row_group_rows: usize,
    /// Row groups appended to the file.
    row_groups: usize,
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
            BufWriter::with_capacity(FILE_BUFFER, file),
            schema.clone(),
            props.clone(),
        )
        .map_err(|e| ExportError::parquet(&path, e))?;
        let descrs = file.schema_descr().columns().to_vec();
        let codec = codec().map_err(|e| ExportError::parquet(&path, e))?;
        Ok(Part {
            path,
            file,
            props,
            codec,
            descrs,
            constants: constants.iter().map(|c| Constant(c.clone())).collect(),
            group: None,
            closing: VecDeque::new(),
            closed: Vec::new(),
            #[cfg(test)]
            spread: true,
            group_rows: 0,
            row_group_rows: ROW_GROUP_ROWS,
            row_groups: 0,
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
            let n = (rows - from).min(self.row_group_rows - self.group_rows);
            if self.group.is_none() {
                let chunks = self
                    .descrs
                    .iter()
                    .map(|d| Chunk::new(d.clone(), &self.props, &self.codec))
                    .collect::<Result<Vec<_>, _>>()?;
                self.group = Some(chunks);
            }
            let Some(group) = self.group.as_mut() else {
                return Ok(());
            };
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
            if self.group_rows >= self.row_group_rows {
                self.begin_closing()?;
            }
        }
        self.close_some()
    }

    /// Ends the row group being filled (if any rows are in it): its chunks are to be closed, after
    /// those of the row group before if some are still open.
    fn begin_closing(&mut self) -> Result<(), ParquetError> {
        let Some(group) = self.group.take() else {
            return Ok(());
        };
        self.finish_closing()?;
        self.group_rows = 0;
        self.closing = group.into();
        self.row_groups += 1;
        Ok(())
    }

    /// Closes chunks of the full row group until those left are in proportion to the rows the next
    /// row group lacks to be half full: with batches of 4,096 rows and row groups of 32 such batches,
    /// two chunks per write, every chunk closed by the time the next row group is half full (the full
    /// row group's pages are held meanwhile, beside the next one's).
    fn close_some(&mut self) -> Result<(), ParquetError> {
        #[cfg(test)]
        if !self.spread {
            return self.finish_closing();
        }
        if self.closing.is_empty() {
            return Ok(());
        }
        let half = (self.row_group_rows / 2).max(1);
        let lacking = half.saturating_sub(self.group_rows);
        let keep = self.descrs.len() * lacking / half;
        while self.closing.len() > keep {
            self.close_next()?;
        }
        if self.closing.is_empty() {
            self.append_closed()?;
        }
        Ok(())
    }

    /// Closes every chunk of the full row group, and appends it to the file.
    fn finish_closing(&mut self) -> Result<(), ParquetError> {
        while !self.closing.is_empty() {
            self.close_next()?;
        }
        self.append_closed()
    }

    fn close_next(&mut self) -> Result<(), ParquetError> {
        if let Some(chunk) = self.closing.pop_front() {
            self.closed.push(chunk.close()?);
        }
        Ok(())
    }

    /// Appends the closed chunks to the file as a row group, one column after the other.
    fn append_closed(&mut self) -> Result<(), ParquetError> {
        if self.closed.is_empty() {
            return Ok(());
        }
        let mut row_group = self.file.next_row_group()?;
        for (closed, bytes) in self.closed.drain(..) {
            row_group.append_column(&Bytes::from(bytes), closed)?;
        }
        row_group.close()?;
        Ok(())
    }

    /// Appends the row group being filled, and the one before if it is not yet, to the file.
    fn flush_group(&mut self) -> Result<(), ParquetError> {
        self.begin_closing()?;
        self.finish_closing()
    }

    /// Row groups of `n` rows rather than [`ROW_GROUP_ROWS`] (for tests of what depends on them).
    #[cfg(test)]
    pub(crate) fn with_row_group_rows(mut self, n: usize) -> Part {
        self.row_group_rows = n.max(1);
        self
    }

    /// Row groups filled so far (the one being filled not counted; the last may still be closing).
    pub(crate) fn row_groups(&self) -> usize {
        self.row_groups
    }

    /// Writes the last row group and the footer, and closes the file, whose sync `syncs` waits for;
    /// returns its rows.
    pub(crate) fn close(mut self, syncs: &Syncs) -> Result<u64, ExportError> {
        self.flush_group()
            .map_err(|e| ExportError::parquet(&self.path, e))?;
        let Part {
            path, file, rows, ..
        } = self;
        let mut out = file
            .into_inner()
            .map_err(|e| ExportError::parquet(&path, e))?;
        out.flush().map_err(|e| ExportError::io(&path, e))?;
        let file = out
            .into_inner()
            .map_err(|e| ExportError::io(&path, e.into_error()))?;
        syncs.sync(&path, file)?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffers::Texts;
    use parquet::basic::Encoding;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    use parquet::schema::parser::parse_message_type;
    use std::fs::File;

    /// Text columns, dictionary-encoded (`fingerprint`) and plain (`statement`, `client`), written and
    /// read back with parquet's reader: nulls, pages cut by rows and bytes, row groups, and a
    /// dictionary that outgrows its limit and goes on PLAIN.
    #[test]
    fn texts_written_by_the_text_chunks_read_back_as_written() {
        let dir =
            std::env::temp_dir().join(format!("pcapsleuth-export-part-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let schema = Arc::new(
            parse_message_type(
                "message m { required binary capture (STRING); optional binary fingerprint (STRING);
                 optional binary statement (STRING); required binary client (STRING); }",
            )
            .expect("schema"),
        );
        // 150,000 rows (more than a row group): fingerprints from 40 repeated texts, then distinct
        // ones (past the dictionary's 1 MiB), every 7th null; long statements (pages cut by bytes).
        let row = |i: usize| {
            let fp = (!i.is_multiple_of(7)).then(|| {
                if i < 60_000 {
                    format!("select ? from t{}", i % 40)
                } else {
                    format!("select ? from distinct_table_number_{i}")
                }
            });
            let statement = (!i.is_multiple_of(5))
                .then(|| format!("SELECT {} FROM t{}", "x".repeat(i % 300), i % 40));
            (
                fp,
                statement,
                format!("10.0.{}.{}:{}", i % 3, i % 250, 1024 + i % 60_000),
            )
        };
        let n = 150_000;
        let mut part = Part::create(&dir, 0, &schema, &["cap".to_string()]).expect("part");
        let (mut fps, mut statements, mut clients) =
            (Texts::default(), Texts::default(), Texts::default());
        for batch in (0..n).collect::<Vec<_>>().chunks(4096) {
            for &i in batch {
                let (fp, s, c) = row(i);
                fps.push_opt(fp.as_deref());
                statements.push_opt(s.as_deref());
                clients.push(&c);
            }
            part.write(batch.len(), &mut [&mut fps, &mut statements, &mut clients])
                .expect("write");
        }
        let syncs = Syncs::default();
        assert_eq!(part.close(&syncs).expect("close"), n as u64);
        syncs.wait().expect("synced");
        let path = dir.join("part-00000.parquet");
        let reader = SerializedFileReader::new(File::open(&path).expect("open")).expect("reader");
        let meta = reader.metadata();
        assert_eq!(meta.num_row_groups(), 2);
        let fp_encodings: Vec<Encoding> = meta.row_group(0).column(1).encodings().collect();
        assert!(
            fp_encodings.contains(&Encoding::RLE_DICTIONARY)
                && fp_encodings.contains(&Encoding::PLAIN),
            "the first row group's dictionary fills up: {fp_encodings:?}"
        );
        let text = |f: &Field| match f {
            Field::Str(s) => Some(s.clone()),
            Field::Null => None,
            other => panic!("not a text: {other:?}"),
        };
        let mut read = 0;
        for (i, r) in reader.get_row_iter(None).expect("rows").enumerate() {
            let r = r.expect("row");
            let cells: Vec<Option<String>> = r.get_column_iter().map(|(_, f)| text(f)).collect();
            let (fp, s, c) = row(i);
            assert_eq!(cells, [Some("cap".to_string()), fp, s, Some(c)], "row {i}");
            read += 1;
        }
        assert_eq!(read, n);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A file whose full row groups are closed a few chunks per write is the same, byte for byte, as
    /// one whose row groups are closed in the write that fills them: texts (a dictionary column and a
    /// PLAIN one), integers with and without nulls, doubles and booleans; row groups of 1,000 rows in
    /// writes of 97 (a row group fills in the middle of a write, and some writes close no chunk).
    #[test]
    fn row_groups_closed_across_writes_are_the_same_bytes() {
        use crate::buffers::Nullable;
        let dir =
            std::env::temp_dir().join(format!("pcapsleuth-export-spread-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let schema = Arc::new(
            parse_message_type(
                "message m { required binary capture (STRING); optional binary fingerprint (STRING);
                 optional binary statement (STRING); required int64 request_frame;
                 optional int64 response_frame; optional double rt_us; required boolean is_query; }",
            )
            .expect("schema"),
        );
        let (group, n, batch) = (1000, 10_500, 97);
        let mut files = Vec::new();
        for (k, spread) in [true, false].into_iter().enumerate() {
            let mut part = Part::create(&dir, k, &schema, &["cap".to_string()])
                .expect("part")
                .with_row_group_rows(group);
            part.spread = spread;
            let (mut fps, mut statements) = (Texts::default(), Texts::default());
            let (mut frames, mut responses) = (Vec::new(), Nullable::default());
            let (mut rts, mut queries) = (Nullable::default(), Vec::new());
            let mut closing_seen = false;
            for rows in (0..n).collect::<Vec<usize>>().chunks(batch) {
                for &i in rows {
                    fps.push_opt(
                        (i % 5 != 0)
                            .then(|| format!("select ? from t{}", i % 13))
                            .as_deref(),
                    );
                    statements.push_opt(
                        (i % 7 != 0)
                            .then(|| format!("select {i} from t"))
                            .as_deref(),
                    );
                    frames.push(i as i64 * 3);
                    responses.push((i % 4 != 0).then_some(i as i64 * 3 + 1));
                    rts.push((i % 6 != 0).then_some(i as f64 / 7.0));
                    queries.push(i % 3 == 0);
                }
                part.write(
                    rows.len(),
                    &mut [
                        &mut fps,
                        &mut statements,
                        &mut frames,
                        &mut responses,
                        &mut rts,
                        &mut queries,
                    ],
                )
                .expect("write");
                closing_seen |= !part.closing.is_empty();
                assert!(spread || part.closing.is_empty());
                assert!(
                    part.closed.is_empty() || !part.closing.is_empty(),
                    "appended once all are closed"
                );
            }
            assert_eq!(closing_seen, spread, "chunks left to close between writes");
            let syncs = Syncs::default();
            assert_eq!(part.close(&syncs).expect("close"), n as u64);
            syncs.wait().expect("synced");
            let path = dir.join(format!("part-{k:05}.parquet"));
            files.push(std::fs::read(&path).expect("read"));
            let reader =
                SerializedFileReader::new(File::open(&path).expect("open")).expect("reader");
            assert_eq!(reader.metadata().num_row_groups(), n.div_ceil(group));
        }
        assert!(files[0] == files[1], "the same bytes");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
