//! The `transactions` dataset, written as the engine completes transactions by [`TransactionExport`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

use parquet::schema::types::TypePtr;
use pcapsleuth_analysis::{
    Analysis, CaptureFacts, ConnectionView, Fate, StatementFingerprinter, TransactionView,
};
use pcapsleuth_flow::Endpoint;
use pcapsleuth_mysql::{Command, Outcome};

use crate::buffers::{int, ns, ColumnRows, Interned, Nullable, Statics, TextCache, Texts, Times};
use crate::columns::TRANSACTIONS;
use crate::part::Part;
use crate::{ExportError, Partition};

/// Rows an instance buffers before it writes them: small enough that the engine's many instances
/// (eight per worker thread, each batch) hold little, large enough that a write is cheap per row. With
/// 8,192 (and 8 MiB of text) the buffers, filled and recycled, held about 130 MB at their peak on the
/// 2 GB bench capture (2 threads), more than on 300 MB; with 4,096, about 40 MB on either, for no more
/// instructions.
pub(crate) const BATCH_ROWS: usize = 4096;

/// Statement text an instance buffers before it writes it, whatever the rows (statements are kept up
/// to 16 KiB each; the other texts are shared copies).
pub(crate) const BATCH_TEXT_BYTES: usize = 4 << 20;

/// Emptied row buffers kept for new instances: enough for every instance of a batch on a large machine,
/// few enough that their memory (a batch's capacity each) stays small.
const SPARE_BUFFERS: usize = 32;

/// Rows merged from instances that did not fill a batch, past which the merge writes them itself
/// (workers write them as soon as they fill a batch, see [`PartPool::pending_ready`]; this bounds
/// their memory should no worker come by).
const PENDING_LIMIT: usize = 8 * BATCH_ROWS;

/// The `transactions` files of one export, the rows waiting for one, and the first error.
pub(crate) struct PartPool {
    dir: std::path::PathBuf,
    schema: TypePtr,
    /// The capture's name and the labels' values: the constant columns.
    constants: Vec<String>,
    idle: Mutex<Vec<Part>>,
    opened: AtomicUsize,
    /// Emptied buffers with their capacity: the engine makes instances for every batch, and a buffer
    /// grown from nothing each time costs reallocations and fresh pages.
    spare: Mutex<Vec<Rows>>,
    /// Rows of instances merged before they filled a batch (each batch leaves a part-filled buffer per
    /// instance). The next worker that writes a batch of its own writes them too, in parallel with the
    /// others, rather than the merge, which runs alone between batches.
    pending: Mutex<Rows>,
    /// The pending rows fill a batch: the next worker to add a row writes them (the merge, which
    /// runs alone while the other cores wait, does not).
    pending_ready: AtomicBool,
    /// The first write that failed: later batches are dropped, and the export fails with it.
    failed: Mutex<Option<ExportError>>,
}

/// Locks `m`, whose data stays consistent if a holder panicked (every holder only moves buffers).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PartPool {
    pub(crate) fn new(dir: std::path::PathBuf, partition: &Partition) -> Result<Self, ExportError> {
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
            idle: Mutex::new(Vec::new()),
            opened: AtomicUsize::new(0),
            spare: Mutex::new(Vec::new()),
            pending: Mutex::new(Rows::default()),
            pending_ready: AtomicBool::new(false),
            failed: Mutex::new(None),
        })
    }

    fn fail(&self, e: ExportError) {
        lock(&self.failed).get_or_insert(e);
    }

    fn has_failed(&self) -> bool {
        lock(&self.failed).is_some()
    }

    /// An empty buffer, with the capacity of one given back, else of a batch.
    fn buffer(&self) -> Rows {
        lock(&self.spare).pop().unwrap_or_else(Rows::with_capacity)
    }

    /// Gives back an emptied buffer.
    fn recycle(&self, rows: Rows) {
        let mut spare = lock(&self.spare);
        // A buffer grown past a batch (the pending rows') would keep that memory for good.
        let oversized = rows.request_frame.capacity() > 2 * BATCH_ROWS;
        if rows.len == 0 && !oversized && spare.len() < SPARE_BUFFERS {
            spare.push(rows);
        }
    }

    /// A new file, `part-N.parquet` with the next N.
    fn create_part(&self) -> Result<Part, ExportError> {
        let n = self.opened.fetch_add(1, Ordering::Relaxed);
        Part::create(&self.dir, n, &self.schema, &self.constants)
    }

    /// Writes `rows` into an idle file, or a new one, leaving the buffer empty.
    fn write(&self, rows: &mut Rows) {
        if rows.len == 0 {
            return;
        }
        if self.has_failed() {
            rows.clear();
            return;
        }
        let idle = lock(&self.idle).pop();
        let result = match idle {
            Some(part) => Ok(part),
            None => self.create_part(),
        }
        .and_then(|mut part| {
            let n = std::mem::take(&mut rows.len);
            part.write(n, &mut rows.columns())?;
            Ok(part)
        });
        match result {
            Ok(part) => lock(&self.idle).push(part),
            Err(e) => {
                rows.clear();
                self.fail(e);
            }
        }
    }

    /// Moves an instance's rows to the pending ones, for the next worker to write once they fill a
    /// batch; writes them here only when far too many wait.
    fn add_pending(&self, rows: &mut Rows) {
        let (ready, many) = {
            let mut pending = lock(&self.pending);
            pending.append(rows);
            (pending.len >= BATCH_ROWS, pending.len >= PENDING_LIMIT)
        };
        if many {
            self.write_pending();
        } else if ready {
            self.pending_ready.store(true, Ordering::Relaxed);
        }
    }

    /// Writes the pending rows if they fill a batch and no other worker is at them.
    fn write_pending_if_full(&self) {
        let mut batch = {
            let mut pending = match self.pending.try_lock() {
                Ok(p) => p,
                Err(TryLockError::WouldBlock) => return,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
            };
            if pending.len < BATCH_ROWS {
                return;
            }
            self.pending_ready.store(false, Ordering::Relaxed);
            std::mem::replace(&mut *pending, self.buffer())
        };
        self.write(&mut batch);
        self.recycle(batch);
    }

    /// Writes every pending row.
    fn write_pending(&self) {
        let mut batch = {
            let mut pending = lock(&self.pending);
            self.pending_ready.store(false, Ordering::Relaxed);
            std::mem::take(&mut *pending)
        };
        self.write(&mut batch);
        self.recycle(batch);
    }

    /// Closes every file (all are idle once the instances are merged into one); with none written, one
    /// empty file still gives the partition its schema. A failure is kept for [`PartPool::take_failure`].
    fn close(&self) -> TransactionsWritten {
        let mut written = TransactionsWritten { rows: 0, files: 0 };
        if self.has_failed() {
            return written;
        }
        let mut parts = std::mem::take(&mut *lock(&self.idle));
        if parts.is_empty() {
            match self.create_part() {
                Ok(p) => parts.push(p),
                Err(e) => self.fail(e),
            }
        }
        for part in parts {
            match part.close() {
                Ok(rows) => {
                    written.rows += rows;
                    written.files += 1;
                }
                Err(e) => self.fail(e),
            }
        }
        lock(&self.spare).clear();
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

/// The rows of an instance not yet written, one buffer per column of [`TRANSACTIONS`].
#[derive(Default)]
struct Rows {
    len: usize,
    connection_id: Vec<i64>,
    request_frame: Vec<i64>,
    response_frame: Nullable<i64>,
    first_response_frame: Nullable<i64>,
    request_time: Times,
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
        for v in [&mut r.connection_id, &mut r.request_frame, &mut r.rows] {
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
        for v in [
            &mut r.request_time,
            &mut r.response_time,
            &mut r.first_response_time,
        ] {
            v.reserve(n);
        }
        r.error_code.reserve(n);
        r.rt_us.reserve(n);
        r.waited_us.reserve(n);
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
        names: &EndpointNames,
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
        self.request_time.push(Some(ns(t.request_ts_ns)));
        self.response_time.push(t.last_response_ts_ns.map(ns));
        self.first_response_time
            .push(t.first_response_ts_ns.map(ns));
        self.client.push(&names.client);
        self.server.push(&names.server);
        self.client_ip.push(&names.client_ip);
        self.client_port.push(i32::from(v.client.port));
        self.server_ip.push(&names.server_ip);
        self.server_port.push(i32::from(v.server.port));
        self.command.push(t.command.name());
        self.statement.push_opt(t.statement.as_deref());
        self.statement_id.push(t.statement_id.map(i64::from));
        let cut = match &t.statement {
            Some(sql) => {
                let (fp, cut) = fingerprints.fingerprint(sql);
                self.fingerprint.push(self.fingerprints.get(fp));
                cut
            }
            None => {
                self.fingerprint.push_opt(None);
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
                let sql_state =
                    (!sql_state.is_empty()).then(|| self.sql_states.get(sql_state.as_str()));
                self.sql_state.push_opt(sql_state);
                self.error_message.push(self.messages.get(message));
            }
            _ => {
                self.error_code.push(None);
                self.sql_state.push_opt(None);
                self.error_message.push_opt(None);
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
    }

    /// Moves `o`'s rows to the end of these, leaving `o` empty with its capacity (to be recycled).
    fn append(&mut self, o: &mut Rows) {
        self.len += std::mem::take(&mut o.len);
        self.connection_id.append(&mut o.connection_id);
        self.request_frame.append(&mut o.request_frame);
        self.response_frame.append(&mut o.response_frame);
        self.first_response_frame
            .append(&mut o.first_response_frame);
        self.request_time.0.append(&mut o.request_time.0);
        self.response_time.0.append(&mut o.response_time.0);
        self.first_response_time
            .0
            .append(&mut o.first_response_time.0);
        self.client.append(&mut o.client);
        self.server.append(&mut o.server);
        self.client_ip.append(&mut o.client_ip);
        self.client_port.append(&mut o.client_port);
        self.server_ip.append(&mut o.server_ip);
        self.server_port.append(&mut o.server_port);
        self.command.append(&mut o.command);
        self.statement.append(&mut o.statement);
        self.statement_id.append(&mut o.statement_id);
        self.fingerprint.append(&mut o.fingerprint);
        self.text_cut.append(&mut o.text_cut);
        self.state.append(&mut o.state);
        self.is_query.append(&mut o.is_query);
        self.error_code.append(&mut o.error_code);
        self.sql_state.append(&mut o.sql_state);
        self.error_message.append(&mut o.error_message);
        self.rows.append(&mut o.rows);
        self.affected_rows.append(&mut o.affected_rows);
        self.request_bytes.append(&mut o.request_bytes);
        self.response_bytes.append(&mut o.response_bytes);
        self.rt_us.append(&mut o.rt_us);
        self.waited_us.append(&mut o.waited_us);
        self.retransmitted.append(&mut o.retransmitted);
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
        ]
    }
}

/// The columns of [`TRANSACTIONS`], one buffer each in [`Rows`]: a column added to one and not the
/// other fails to compile.
const TRANSACTION_COLUMNS: usize = 30;
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
/// **How instances write.** The engine runs many instances at once, each told about different
/// connections. An instance appends its rows to column buffers; when they hold a batch (4,096 rows, or
/// 4 MiB of text), it takes an idle file from the export's pool, or opens a new `part-N.parquet` when
/// every file is busy, writes the batch into its row group and gives the file back. Files are therefore
/// as many as batches were written at the same moment (at most one per worker thread), and encoding and
/// compression run on every worker in parallel. `merge` hands the other instance's unwritten rows to
/// the pool, where the next worker that writes a batch of its own writes them too (the merge runs alone
/// between the engine's batches, and must not hold the workers up); `finish` writes what is left and
/// closes the files.
///
/// Memory stays flat in the capture's size: an instance holds at most a batch, the pool a few, and a
/// file the row group it is filling (at most 131,072 rows, compressed).
///
/// **Order.** A connection's rows come in capture order (the engine's contract), but connections
/// interleave, and which file a batch lands in depends on timing: the *set* of rows is the same for any
/// number of splits and threads, their order within and across files is not. Sort by `request_frame`.
pub struct TransactionExport {
    pool: Arc<PartPool>,
    /// Rows not yet written; a buffer is taken from the pool at the instance's first row.
    rows: Option<Rows>,
    fingerprints: StatementFingerprinter,
}

impl TransactionExport {
    pub(crate) fn new(pool: Arc<PartPool>) -> Self {
        TransactionExport {
            pool,
            rows: None,
            fingerprints: StatementFingerprinter::default(),
        }
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
        let pool = &self.pool;
        let rows = self.rows.get_or_insert_with(|| pool.buffer());
        rows.push(names, conn, t, &mut self.fingerprints);
        if rows.is_full() {
            pool.write(rows);
        }
        if pool.pending_ready.load(Ordering::Relaxed) {
            pool.write_pending_if_full();
        }
    }

    fn merge(&mut self, other: Self) {
        if let Some(mut rows) = other.rows {
            self.pool.add_pending(&mut rows);
            self.pool.recycle(rows);
        }
    }

    fn finish(self, _: &CaptureFacts) -> Self::Output {
        if let Some(mut rows) = self.rows {
            self.pool.write(&mut rows);
        }
        self.pool.write_pending();
        self.pool.close()
    }
}
