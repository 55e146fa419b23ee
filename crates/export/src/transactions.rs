//! The `transactions` dataset, written as the engine completes transactions by [`TransactionExport`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use parquet::schema::types::TypePtr;
use pcapsleuth_analysis::{
    Analysis, CaptureFacts, ConnectionView, Fate, RequestPhases, StatementFingerprinter,
    TransactionView,
};
use pcapsleuth_flow::Endpoint;
use pcapsleuth_mysql::{Command, Outcome};

use crate::buffers::{int, ns, ColumnRows, Interned, Nullable, Statics, TextCache, Texts, Times};
use crate::columns::TRANSACTIONS;
use crate::part::{Part, Syncs};
use crate::per_thread::{lock, PerThread};
use crate::{ExportError, Partition};

/// Rows a worker buffers before it writes them: few enough that the buffers (one per worker thread)
/// hold little, enough that a write is cheap per row.
pub(crate) const BATCH_ROWS: usize = 4096;

/// Statement text a worker buffers before it writes it, whatever the rows (statements are kept up to
/// 16 KiB each; the other texts are shared copies).
pub(crate) const BATCH_TEXT_BYTES: usize = 4 << 20;

/// Row groups after which a file is closed (at the end of the batch that filled them) and the next
/// batch begins a new one: a file writer keeps every row group's metadata (and offset index) for the
/// footer, which would otherwise grow with the capture. 64 row groups of 128 Ki rows: 8 Mi
/// transactions, about 100 MB of Parquet.
const FILE_ROW_GROUPS: usize = 64;

/// The `transactions` files of one export, the rows waiting for one, and the first error.
pub(crate) struct PartPool {
    dir: std::path::PathBuf,
    schema: TypePtr,
    /// The capture's name and the labels' values: the constant columns.
    constants: Vec<String>,
    /// The files not being written to, and how many are open.
    files: Mutex<Files>,
    /// Signalled when a file is given back or closed.
    file_free: Condvar,
    /// Files open at most: as many as batches can be written at the same moment, one per core (a pool
    /// of more threads than cores would otherwise open a file per thread, each holding its row group).
    max_open: usize,
    /// Files created so far (the next one's number).
    opened: AtomicUsize,
    /// Row groups after which a file is closed ([`FILE_ROW_GROUPS`]; fewer in tests).
    file_row_groups: usize,
    /// Rows per row group of new files (`None`: [`crate::part::ROW_GROUP_ROWS`]; fewer in tests).
    #[cfg(test)]
    row_group_rows: Option<usize>,
    /// Rows not yet written, one buffer per worker thread of the engine's pool (and a last one for
    /// calls from any other thread), made at the first row. Per thread rather than per instance: the
    /// engine runs many instances at once (eight per thread, made afresh every batch), and a buffer
    /// each held a batch of rows per instance (about 40 MB on the bench capture, two threads).
    buffers: PerThread<Buffer>,
    /// Rows and files of the files already closed (see [`FILE_ROW_GROUPS`]).
    closed: Mutex<TransactionsWritten>,
    /// The first write that failed: later batches are dropped, and the export fails with it.
    failed: Mutex<Option<ExportError>>,
    /// The syncs of the files closed, which the export waits for before it puts them in place.
    syncs: Arc<Syncs>,
}

#[derive(Default)]
struct Files {
    idle: Vec<Part>,
    open: usize,
}

/// A worker's rows not yet written, and what building them keeps across rows.
#[derive(Default)]
struct Buffer {
    rows: Rows,
    fingerprints: StatementFingerprinter,
}

impl PartPool {
    pub(crate) fn new(
        dir: std::path::PathBuf,
        partition: &Partition,
        syncs: Arc<Syncs>,
    ) -> Result<Self, ExportError> {
        let label_keys: Vec<String> = partition
            .labels()
            .iter()
            .map(|l| l.key().to_string())
            .collect();
        let keys: Vec<&str> = label_keys.iter().map(String::as_str).collect();
        let mut constants = vec![partition.capture().to_string()];
        constants.extend(partition.labels().iter().map(|l| l.value().to_string()));
        let schema = TRANSACTIONS
            .schema(&keys)
            .map_err(|e| ExportError::parquet(&dir, e))?;
        Ok(PartPool {
            dir,
            schema,
            constants,
            files: Mutex::new(Files::default()),
            file_free: Condvar::new(),
            max_open: std::thread::available_parallelism().map_or(1, |n| n.get()),
            opened: AtomicUsize::new(0),
            file_row_groups: FILE_ROW_GROUPS,
            #[cfg(test)]
            row_group_rows: None,
            buffers: PerThread::new(),
            closed: Mutex::new(TransactionsWritten { rows: 0, files: 0 }),
            failed: Mutex::new(None),
            syncs,
        })
    }

    fn fail(&self, e: ExportError) {
        lock(&self.failed).get_or_insert(e);
    }

    fn has_failed(&self) -> bool {
        lock(&self.failed).is_some()
    }

    /// A new file, `part-N.parquet` with the next N.
    fn create_part(&self) -> Result<Part, ExportError> {
        let n = self.opened.fetch_add(1, Ordering::Relaxed);
        let part = Part::create(&self.dir, n, &self.schema, &self.constants)?;
        #[cfg(test)]
        let part = match self.row_group_rows {
            Some(rows) => part.with_row_group_rows(rows),
            None => part,
        };
        Ok(part)
    }

    /// The threads of the engine's pool that wrote rows (1 before any row).
    pub(crate) fn threads(&self) -> usize {
        self.buffers.all().len().saturating_sub(1).max(1)
    }

    /// An idle file; else a new one if fewer than [`PartPool::max_open`] are open; else the first
    /// given back.
    fn take_part(&self) -> Result<Part, ExportError> {
        let mut files = lock(&self.files);
        loop {
            if let Some(part) = files.idle.pop() {
                return Ok(part);
            }
            if files.open < self.max_open {
                files.open += 1;
                drop(files);
                let part = self.create_part();
                if part.is_err() {
                    self.retire_part();
                }
                return part;
            }
            files = self
                .file_free
                .wait(files)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Gives back a file taken.
    fn give_back(&self, part: Part) {
        lock(&self.files).idle.push(part);
        self.file_free.notify_one();
    }

    /// Counts a file taken as no longer open (closed, or lost to an error).
    fn retire_part(&self) {
        let mut files = lock(&self.files);
        files.open = files.open.saturating_sub(1);
        drop(files);
        self.file_free.notify_one();
    }

    /// Writes `rows` into an idle file, or a new one, leaving the buffer empty (with its capacity). A
    /// file that holds [`FILE_ROW_GROUPS`] row groups is closed.
    fn write(&self, rows: &mut Rows) {
        if rows.len == 0 {
            return;
        }
        if self.has_failed() {
            rows.clear();
            return;
        }
        let mut part = match self.take_part() {
            Ok(part) => part,
            Err(e) => {
                rows.clear();
                self.fail(e);
                return;
            }
        };
        let n = std::mem::take(&mut rows.len);
        if let Err(e) = part.write(n, &mut rows.columns()) {
            rows.clear();
            self.retire_part();
            self.fail(e);
            return;
        }
        if part.row_groups() < self.file_row_groups {
            self.give_back(part);
            return;
        }
        let closed = part.close(&self.syncs);
        self.retire_part();
        match closed {
            Ok(n) => {
                let mut closed = lock(&self.closed);
                closed.rows += n;
                closed.files += 1;
            }
            Err(e) => self.fail(e),
        }
    }

    /// Writes every buffered row and closes every file (all are idle once the engine has run); with
    /// none written, one empty file still gives the partition its schema. A failure is kept for
    /// [`PartPool::take_failure`].
    fn close(&self) -> TransactionsWritten {
        for b in self.buffers.all() {
            let mut b = lock(b);
            self.write(&mut b.rows);
            *b = Buffer::default();
        }
        let mut written = *lock(&self.closed);
        if self.has_failed() {
            return written;
        }
        let mut parts = std::mem::take(&mut lock(&self.files).idle);
        if parts.is_empty() && written.files == 0 {
            match self.create_part() {
                Ok(p) => parts.push(p),
                Err(e) => self.fail(e),
            }
        }
        // Each file's last row group and footer, on as many threads as the engine ran (a file each:
        // at most one per core).
        let threads = self.threads();
        let closed: Vec<Result<u64, ExportError>> = std::thread::scope(|s| {
            let mut parts = parts.into_iter();
            let others: Vec<_> = parts
                .by_ref()
                .take(threads.saturating_sub(1))
                .map(|p| s.spawn(|| p.close(&self.syncs)))
                .collect();
            let mut closed: Vec<_> = parts.map(|p| p.close(&self.syncs)).collect();
            for other in others {
                closed.push(other.join().unwrap_or_else(|_| {
                    Err(ExportError::io(
                        &self.dir,
                        std::io::Error::other("a file's closing thread panicked"),
                    ))
                }));
            }
            closed
        });
        for c in closed {
            match c {
                Ok(rows) => {
                    written.rows += rows;
                    written.files += 1;
                }
                Err(e) => self.fail(e),
            }
        }
        written
    }

    /// The first failure of a write, if any: the export must not be put in place.
    pub(crate) fn take_failure(&self) -> Option<ExportError> {
        lock(&self.failed).take()
    }
}

/// What the `transactions` dataset received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionsWritten {
    /// Rows written.
    pub rows: u64,
    /// Files (`part-N.parquet`) written.
    pub files: usize,
}

/// Rows not yet written, one buffer per column of [`TRANSACTIONS`].
#[derive(Default)]
struct Rows {
    len: usize,
    connection_id: Vec<i64>,
    request_frame: Vec<i64>,
    response_frame: Nullable<i64>,
    first_response_frame: Nullable<i64>,
    /// Never null (a `TIMESTAMP` column like the other times, written from nanoseconds).
    request_time: Vec<i64>,
    response_time: Times,
    first_response_time: Times,
    client: Interned,
    server: Interned,
    client_ip: Interned,
    client_port: Vec<i32>,
    server_ip: Interned,
    server_port: Vec<i32>,
    command: Statics,
    statement: Texts,
    statement_id: Nullable<i64>,
    fingerprint: Interned,
    text_cut: Vec<bool>,
    state: Statics,
    is_query: Vec<bool>,
    error_code: Nullable<i32>,
    sql_state: Interned,
    error_message: Interned,
    rows: Vec<i64>,
    affected_rows: Nullable<i64>,
    request_bytes: Vec<i64>,
    response_bytes: Vec<i64>,
    rt_us: Nullable<f64>,
    waited_us: Nullable<f64>,
    retransmitted: Vec<bool>,
    last_request_frame: Vec<i64>,
    /// Never null, as `request_time`.
    last_request_time: Vec<i64>,
    upload_us: Nullable<f64>,
    server_us: Nullable<f64>,
    download_us: Nullable<f64>,
    /// The copies `fingerprint`, `sql_state` and `error_message` share (these texts repeat across
    /// connections). Kept with the buffer when it is recycled.
    fingerprints: TextCache,
    sql_states: TextCache,
    messages: TextCache,
}

impl Rows {
    /// Empty, with room for a batch: growing a buffer from nothing costs a dozen reallocations of
    /// every column.
    fn with_capacity() -> Rows {
        let n = BATCH_ROWS;
        let mut r = Rows::default();
        for v in [
            &mut r.connection_id,
            &mut r.request_frame,
            &mut r.request_time,
            &mut r.rows,
            &mut r.last_request_frame,
            &mut r.last_request_time,
        ] {
            v.reserve(n);
        }
        for v in [&mut r.request_bytes, &mut r.response_bytes] {
            v.reserve(n);
        }
        for v in [&mut r.client_port, &mut r.server_port] {
            v.reserve(n);
        }
        for v in [&mut r.text_cut, &mut r.is_query, &mut r.retransmitted] {
            v.reserve(n);
        }
        for v in [
            &mut r.response_frame,
            &mut r.first_response_frame,
            &mut r.statement_id,
            &mut r.affected_rows,
        ] {
            v.reserve(n);
        }
        for v in [&mut r.response_time, &mut r.first_response_time] {
            v.reserve(n);
        }
        r.error_code.reserve(n);
        for v in [
            &mut r.rt_us,
            &mut r.waited_us,
            &mut r.upload_us,
            &mut r.server_us,
            &mut r.download_us,
        ] {
            v.reserve(n);
        }
        // Texts: a row index each (endpoints, fingerprints), a pointer (commands, states), and
        // statements of about 100 bytes.
        let interned = [
            &mut r.client,
            &mut r.server,
            &mut r.client_ip,
            &mut r.server_ip,
        ];
        interned.into_iter().for_each(|t| t.reserve(n));
        r.fingerprint.reserve(n);
        r.command.reserve(n);
        r.state.reserve(n);
        r.statement.reserve(n, n * 100);
        r
    }

    /// Drops the rows (after a failed write: the export is lost, so is the capacity).
    fn clear(&mut self) {
        *self = Rows::default();
    }

    fn is_full(&self) -> bool {
        self.len >= BATCH_ROWS || self.statement.len_bytes() >= BATCH_TEXT_BYTES
    }

    fn push(
        &mut self,
        names: &mut EndpointNames,
        conn: &ConnectionView<'_>,
        v: &TransactionView<'_>,
        fingerprints: &mut StatementFingerprinter,
    ) {
        let t = v.transaction;
        let fate = v.fate();
        self.len += 1;
        self.connection_id.push(int(conn.tcp().first().frame));
        self.request_frame.push(int(t.request_frame));
        self.response_frame.push(t.last_response_frame.map(int));
        self.first_response_frame
            .push(t.first_response_frame.map(int));
        self.request_time.push(ns(t.request_ts_ns));
        self.response_time.push(t.last_response_ts_ns.map(ns));
        self.first_response_time
            .push(t.first_response_ts_ns.map(ns));
        let [client, server, client_ip, server_ip] = &mut names.places;
        self.client.push(&names.client, client);
        self.server.push(&names.server, server);
        self.client_ip.push(&names.client_ip, client_ip);
        self.client_port.push(i32::from(v.client.port));
        self.server_ip.push(&names.server_ip, server_ip);
        self.server_port.push(i32::from(v.server.port));
        self.command.push(t.command.name());
        self.statement.push_opt(t.statement.as_deref());
        self.statement_id.push(t.statement_id.map(i64::from));
        let cut = match &t.statement {
            Some(sql) => {
                // Found by the fingerprinter's head and the rest (this buffer's fingerprinter,
                // whose head ids the cache keeps for as long as both live: see `Buffer`).
                let (head, rest, cut) = fingerprints.fingerprint_parts(sql);
                let (copy, place) = self.fingerprints.get_parts((head, rest));
                self.fingerprint.push(copy, place);
                cut
            }
            None => {
                self.fingerprint.push_null();
                false
            }
        };
        self.text_cut.push(cut);
        self.state.push(state_name(fate, t.command));
        self.is_query
            .push(fate != Fate::NoResponse && t.command != Command::Connect);
        match &t.outcome {
            Outcome::Err {
                code,
                sql_state,
                message,
            } => {
                self.error_code.push(Some(i32::from(*code)));
                if sql_state.is_empty() {
                    self.sql_state.push_null();
                } else {
                    let (copy, place) = self.sql_states.get(sql_state.as_str());
                    self.sql_state.push(copy, place);
                }
                let (copy, place) = self.messages.get(message);
                self.error_message.push(copy, place);
            }
            _ => {
                self.error_code.push(None);
                self.sql_state.push_null();
                self.error_message.push_null();
            }
        }
        self.rows.push(int(t.rows));
        self.affected_rows.push(match t.outcome {
            Outcome::Ok { affected_rows, .. } | Outcome::LocalInfile { affected_rows, .. } => {
                Some(int(affected_rows))
            }
            _ => None,
        });
        self.request_bytes.push(int(t.request_bytes));
        self.response_bytes.push(int(t.response_bytes));
        self.rt_us
            .push(v.response_time_ns().map(|n| n as f64 / 1e3));
        self.waited_us.push(v.waited_ns().map(|n| n as f64 / 1e3));
        self.retransmitted.push(v.retransmitted());
        self.last_request_frame.push(int(t.last_request_frame));
        self.last_request_time.push(ns(t.last_request_ts_ns));
        let phases = if fate == Fate::Answered {
            RequestPhases::of(t)
        } else {
            None
        };
        let us = |n: u64| n as f64 / 1e3;
        self.upload_us.push(phases.map(|p| us(p.upload_ns)));
        self.server_us.push(phases.map(|p| us(p.server_ns)));
        self.download_us
            .push(phases.and_then(|p| p.download_ns).map(us));
    }

    /// Every column's buffer, in [`TRANSACTIONS`]'s order.
    fn columns(&mut self) -> [&mut dyn ColumnRows; TRANSACTION_COLUMNS] {
        [
            &mut self.connection_id,
            &mut self.request_frame,
            &mut self.response_frame,
            &mut self.first_response_frame,
            &mut self.request_time,
            &mut self.response_time,
            &mut self.first_response_time,
            &mut self.client,
            &mut self.server,
            &mut self.client_ip,
            &mut self.client_port,
            &mut self.server_ip,
            &mut self.server_port,
            &mut self.command,
            &mut self.statement,
            &mut self.statement_id,
            &mut self.fingerprint,
            &mut self.text_cut,
            &mut self.state,
            &mut self.is_query,
            &mut self.error_code,
            &mut self.sql_state,
            &mut self.error_message,
            &mut self.rows,
            &mut self.affected_rows,
            &mut self.request_bytes,
            &mut self.response_bytes,
            &mut self.rt_us,
            &mut self.waited_us,
            &mut self.retransmitted,
            &mut self.last_request_frame,
            &mut self.last_request_time,
            &mut self.upload_us,
            &mut self.server_us,
            &mut self.download_us,
        ]
    }
}

/// The columns of [`TRANSACTIONS`], one buffer each in [`Rows`]: a column added to one and not the
/// other fails to compile.
const TRANSACTION_COLUMNS: usize = 35;
const _: () = assert!(TRANSACTIONS.columns.len() == TRANSACTION_COLUMNS);

/// `state`'s values. A login's are its own (`login_...`), so that `state = 'answered'` counts what
/// `mysql` counts among answered queries, which leaves logins out.
fn state_name(f: Fate, command: Command) -> &'static str {
    let login = command == Command::Connect;
    match f {
        Fate::Answered if login => "login_answered",
        Fate::CutOff if login => "login_cut_off",
        Fate::Unanswered if login => "login_unanswered",
        Fate::Unreadable if login => "login_unreadable",
        Fate::Answered => "answered",
        Fate::CutOff => "cut_off",
        Fate::Unanswered => "unanswered",
        Fate::Unreadable => "unreadable",
        Fate::NoResponse => "no_response",
    }
}

/// A connection's endpoints as text, made once per connection rather than once per row (and shared
/// by its rows).
#[derive(Default)]
pub struct EndpointNames {
    of: Option<(Endpoint, Endpoint)>,
    client: Arc<str>,
    server: Arc<str>,
    client_ip: Arc<str>,
    server_ip: Arc<str>,
    /// Where the four texts above are in the [`Interned`] columns of the buffer the connection's
    /// rows went to last ([`Interned::push`]).
    places: [u32; 4],
}

impl EndpointNames {
    fn update(&mut self, client: Endpoint, server: Endpoint) {
        if self.of == Some((client, server)) {
            return;
        }
        self.of = Some((client, server));
        self.client = client.to_string().into();
        self.server = server.to_string().into();
        self.client_ip = client.ip.to_string().into();
        self.server_ip = server.ip.to_string().into();
    }
}

/// The analysis that writes the `transactions` dataset as the engine runs: made by
/// [`crate::Export::transactions`], one instance per worker and batch, all writing into the export's
/// files.
///
/// **How rows are written.** The engine runs many instances at once, each told about different
/// connections, on its worker threads. Rows go to column buffers of the worker's own (the instances are
/// handles: the engine makes eight per thread afresh every batch, and rows buffered per instance would
/// be that many batches in memory); when a worker's buffers hold a batch (4,096 rows, or 4 MiB of
/// text), it takes an idle file from the export's pool, or opens a new `part-N.parquet` when every file
/// is busy (up to one per core, then it waits for one), writes the batch into its row group and gives
/// the file back. Files are therefore as many as batches were written at the same moment (at most one
/// per core), and encoding and compression run on every core in parallel; a file is closed after 64 row groups, the next batch
/// opening another. `finish` writes what the buffers hold and closes the files.
///
/// Memory stays flat in the capture's size: a worker holds at most a batch, and a file the row group
/// it is filling (at most 131,072 rows, compressed) and the metadata of at most 64 row groups.
///
/// **Order.** A connection's rows come in capture order (the engine's contract), but connections
/// interleave, and which file a batch lands in depends on timing: the *set* of rows is the same for any
/// number of splits and threads, their order within and across files is not. Sort by `request_frame`.
pub struct TransactionExport {
    pool: Arc<PartPool>,
}

impl TransactionExport {
    pub(crate) fn new(pool: Arc<PartPool>) -> Self {
        TransactionExport { pool }
    }
}

impl Analysis for TransactionExport {
    type PerConnection = EndpointNames;
    /// What was written; a failure is the export's ([`crate::Export::finish`] returns it).
    type Output = TransactionsWritten;

    fn transaction(
        &mut self,
        names: &mut EndpointNames,
        conn: &ConnectionView<'_>,
        t: &TransactionView<'_>,
    ) {
        names.update(t.client, t.server);
        let mut buffer = lock(self.pool.buffers.get());
        let Buffer { rows, fingerprints } = &mut *buffer;
        if rows.request_frame.capacity() == 0 {
            *rows = Rows::with_capacity();
        }
        rows.push(names, conn, t, fingerprints);
        if rows.is_full() {
            self.pool.write(rows);
        }
    }

    /// Nothing to do: the rows are the workers', not the instances'.
    fn merge(&mut self, _: Self) {}

    fn finish(self, _: &CaptureFacts) -> Self::Output {
        self.pool.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plain::NO_TEXT;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    /// Appends `n` rows, numbered by `request_frame` from `*frame + 1`, every column filled.
    fn fill(r: &mut Rows, frame: &mut i64, n: usize) {
        let text: Arc<str> = "10.0.0.1:3306".into();
        let mut places = [NO_TEXT; 4];
        for _ in 0..n {
            *frame += 1;
            let f = *frame;
            r.len += 1;
            r.connection_id.push(1);
            r.request_frame.push(f);
            r.response_frame.push(Some(f + 1));
            r.first_response_frame.push(None);
            r.request_time.push(f * 1000);
            r.response_time.push(None);
            r.first_response_time.push(Some(f * 1000 + 5));
            let columns = [
                &mut r.client,
                &mut r.server,
                &mut r.client_ip,
                &mut r.server_ip,
            ];
            for (t, place) in columns.into_iter().zip(&mut places) {
                t.push(&text, place);
            }
            r.client_port.push(40_000);
            r.server_port.push(3306);
            r.command.push("COM_QUERY");
            r.statement.push_opt(Some("select 1"));
            r.statement_id.push(None);
            r.fingerprint.push_null();
            r.text_cut.push(false);
            r.state.push("answered");
            r.is_query.push(true);
            r.error_code.push(None);
            r.sql_state.push_null();
            r.error_message.push_null();
            r.rows.push(1);
            r.affected_rows.push(None);
            r.request_bytes.push(20);
            r.response_bytes.push(60);
            r.rt_us.push(Some(5.0));
            r.waited_us.push(None);
            r.retransmitted.push(false);
            r.last_request_frame.push(f);
            r.last_request_time.push(f * 1000);
            r.upload_us.push(Some(0.0));
            r.server_us.push(Some(4.0));
            r.download_us.push(Some(1.0));
        }
    }

    /// A file is closed once it holds its row groups (here 2 of 10 rows: the batch being written
    /// finishes in it), the next batch opens another, and every row is written once.
    #[test]
    fn files_close_after_their_row_groups_and_every_row_is_written_once() {
        let dir =
            std::env::temp_dir().join(format!("pcapsleuth-export-pool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let partition = Partition::new("cap", vec![]).expect("partition");
        let syncs = Arc::new(Syncs::default());
        let mut pool = PartPool::new(dir.clone(), &partition, syncs.clone()).expect("pool");
        pool.file_row_groups = 2;
        pool.row_group_rows = Some(10);
        let mut rows = Rows::with_capacity();
        let mut frame = 0;
        for _ in 0..5 {
            fill(&mut rows, &mut frame, 9);
            pool.write(&mut rows);
            assert_eq!(rows.len, 0, "a write empties the buffer");
        }
        let written = pool.close();
        assert!(pool.take_failure().is_none());
        syncs.wait().expect("synced");
        // 27 rows (2 full row groups, then the rest of the third batch), then 18.
        assert_eq!(written, TransactionsWritten { rows: 45, files: 2 });
        let mut frames = Vec::new();
        for (n, (rows, groups)) in [(27, 3), (18, 2)].into_iter().enumerate() {
            let path = dir.join(format!("part-{n:05}.parquet"));
            let file = std::fs::File::open(&path).expect("a closed file");
            let reader = SerializedFileReader::new(file).expect("reader");
            assert_eq!(
                reader.metadata().num_row_groups(),
                groups,
                "{}",
                path.display()
            );
            assert_eq!(reader.metadata().file_metadata().num_rows(), rows);
            for row in reader.get_row_iter(None).expect("rows") {
                let row = row.expect("row");
                for (name, field) in row.get_column_iter() {
                    if let ("request_frame", Field::Long(f)) = (name.as_str(), field) {
                        frames.push(*f);
                    }
                }
            }
        }
        frames.sort_unstable();
        assert_eq!(frames, (1..=45).collect::<Vec<i64>>());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
