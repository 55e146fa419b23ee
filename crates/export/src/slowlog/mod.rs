//! The MySQL slow query log of a capture (`pcapsleuth export FILE... --slowlog OUT.log`): every
//! statement the capture shows answered, as MySQL 5.7 and 8.0 write it into their slow log with
//! `log_slow_extra`, for pt-query-digest, pt-upgrade, mysqldumpslow and every tool that reads the
//! format.
//!
//! ```text
//! # Time: 2026-11-22T09:17:42.118403Z
//! # User@Host: sbtest[sbtest] @  [10.77.1.2]  Id:    31
//! # Query_time: 0.000131  Lock_time: 0.000000 Rows_sent: 0  Rows_examined: 0 Thread_id: 31 Errno: 1146 Bytes_received: 45 Bytes_sent: 63 Start: 2026-11-22T09:17:42.118272Z End: 2026-11-22T09:17:42.118403Z
//! use sbtest;
//! SET timestamp=1795339062;
//! select c from sbtest9 where id=4991;
//! ```
//!
//! **What an entry is.** One per `COM_QUERY` and per `COM_STMT_EXECUTE` whose response the capture
//! holds whole: the statement as sent, or, for an execute, the prepared statement's text with the
//! values it ran with in place of its `?` markers (as the server logs a run) when the capture holds
//! them (the execute whole, its statement's `COM_STMT_PREPARE` answered, the parameter types bound by
//! it or an earlier execute); otherwise the text with its markers. Requests without a response time
//! (cut off by a close, unanswered at the capture's end, a response the capture lacks) have no entry,
//! and are counted in [`SlowLogCounts`].
//!
//! **Fields.** Measured on the wire: `Query_time` (request's first byte to the response's last, the
//! response time of `mysql`), `Rows_sent`, `Errno`, `Bytes_received`/`Bytes_sent` (MySQL packets with
//! their headers), `Start`/`End`, `# Time:` (the end, when the server writes the entry), `SET
//! timestamp` (the start's second), `Rows_affected` (Percona's field, from an OK response's
//! `affected_rows`). From the login: the user, the schema (as `COM_INIT_DB`, `COM_CHANGE_USER` and
//! `USE` statements change it), the client's address; `Id` and `Thread_id` are the server's thread id
//! from its greeting, or 4294967296 (2^32, no server's) plus the connection's first frame when the
//! capture missed the greeting; a user the capture does not hold is blank. Not on the wire: `Lock_time` and `Rows_examined` are written as 0, the host name (which the server resolves)
//! empty as with `skip_name_resolve`; the other fields of `log_slow_extra` (handler and sort counts,
//! temporary tables, `Killed`) are left out.
//!
//! **Order.** By completion, as the server writes its log: the `# Time:` of each entry, then its frames.
//! The file is the same for any number of splits and threads. `use db;` precedes an entry whose schema
//! differs from the last one written, as the server writes it (one log, all connections).
//!
//! **Memory** is bounded by the open connections, not the statements: each worker thread sorts what it
//! formatted in a buffer ([`SlowLogOptions::buffer_bytes`], 16 MiB) and writes it into an unnamed temporary
//! file beside the log when it is full; at the end these are merged into the log, which is written
//! beside its target and put in place only when complete.

mod entry;
mod runs;

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use atomic_write_file::AtomicWriteFile;
use pcapsleuth_analysis::{
    Analysis, CaptureFacts, ConnectionView, Fate, MysqlFilter, TransactionView,
};
use pcapsleuth_capture::{refuse_input_as_output, CaptureError, FileId};
use pcapsleuth_mysql::prepared::{Execute, ExecuteError, QueryAttributes};
use pcapsleuth_mysql::{Command, Outcome, SessionInfo};

use crate::per_thread::lock;
use crate::ExportError;
use entry::Fields;
use runs::{Key, Pool, RUN_BYTES};

/// What to write, and where.
#[derive(Debug, Clone)]
pub struct SlowLogOptions {
    /// The log's path (replaced if it exists; never an input).
    pub path: PathBuf,
    /// Which statements: `--port`, `--server`, `--errors-only`, `--slower-than`, as `mysql` has them.
    pub filter: MysqlFilter,
    /// Bytes of entries each worker thread holds before it writes them, sorted, to a temporary file
    /// (default 16 MiB): the log's memory, whatever the capture's length.
    pub buffer_bytes: usize,
}

impl SlowLogOptions {
    /// Every statement, into `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        SlowLogOptions {
            path: path.into(),
            filter: MysqlFilter::default(),
            buffer_bytes: RUN_BYTES,
        }
    }
}

/// A slow log being made: its target, the file it is written in, and the entries formatted so far.
pub struct SlowLog {
    options: SlowLogOptions,
    out: AtomicWriteFile,
    pool: Arc<Pool>,
}

/// What was written, and what could not be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlowLogSummary {
    /// The log's path, now in place.
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
    /// Entries, and the statements without one.
    pub counts: SlowLogCounts,
    /// Sorted runs written to temporary files while the capture was read (0 when every entry fitted in
    /// memory).
    pub runs: usize,
}

/// The statements the filter selected, and what became of them. Merged by addition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlowLogCounts {
    /// Entries written.
    pub entries: u64,
    /// Of them, runs of prepared statements with their values in place.
    pub executes_with_values: u64,
    /// Of them, runs written with their `?` markers: the values could not be read (the capture holds the
    /// execute in part, the types were bound before the capture began, a value was sent apart with
    /// `COM_STMT_SEND_LONG_DATA`, or the bytes do not decode).
    pub executes_without_values: u64,
    /// Entries without a `use` line for their schema, whose name a line cannot hold (a control
    /// character in it): a reader takes the schema of the entry before.
    pub schemas_not_written: u64,
    /// Statements without an entry: cut off by a close (no response time).
    pub cut_off: u64,
    /// Still unanswered when the capture ended.
    pub unanswered: u64,
    /// Their response fell into bytes the capture lacks, or its time is not plausible.
    pub unreadable: u64,
    /// Runs of prepared statements whose `COM_STMT_PREPARE` the capture does not hold: no text.
    pub executes_without_text: u64,
}

impl SlowLogCounts {
    /// Statements selected that have no entry.
    pub fn left_out(&self) -> u64 {
        self.cut_off + self.unanswered + self.unreadable + self.executes_without_text
    }

    /// What the log lacks, in sentences (none when every statement selected has its entry, values and
    /// schema): for stderr.
    pub fn notes(&self) -> Vec<String> {
        use pcapsleuth_analysis::units::count;
        let counted = |n: u64, one: &str, many: &str| {
            format!("{} {}", count(n), if n == 1 { one } else { many })
        };
        let mut notes = Vec::new();
        if self.left_out() > 0 {
            let why: Vec<String> = [
                (self.cut_off, "cut off by a close"),
                (self.unanswered, "still unanswered when the capture ended"),
                (
                    self.unreadable,
                    "whose response the capture does not hold whole",
                ),
                (
                    self.executes_without_text,
                    "runs of prepared statements whose COM_STMT_PREPARE the capture does not hold",
                ),
            ]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{} {what}", count(*n)))
            .collect();
            notes.push(format!(
                "{} no entry: {}",
                counted(self.left_out(), "statement has", "statements have"),
                why.join(", ")
            ));
        }
        if self.executes_without_values > 0 {
            notes.push(format!(
                "{} written with its ? markers: the capture does not hold the values whole (the execute \
                 cut, its types bound before the capture began, a value sent apart)",
                counted(
                    self.executes_without_values,
                    "run of a prepared statement is",
                    "runs of prepared statements are"
                )
            ));
        }
        if self.schemas_not_written > 0 {
            notes.push(format!(
                "{} no use line: its schema's name holds a control character",
                counted(self.schemas_not_written, "entry has", "entries have")
            ));
        }
        notes
    }

    fn add(&mut self, o: &SlowLogCounts) {
        self.entries += o.entries;
        self.executes_with_values += o.executes_with_values;
        self.executes_without_values += o.executes_without_values;
        self.schemas_not_written += o.schemas_not_written;
        self.cut_off += o.cut_off;
        self.unanswered += o.unanswered;
        self.unreadable += o.unreadable;
        self.executes_without_text += o.executes_without_text;
    }
}

impl SlowLog {
    /// Checks where the log goes and opens the file it is written in, before anything is read: the path
    /// must be no input (by device and inode: a hard link or a symlink to one is refused too) and no
    /// directory. `inputs`: the captures read, with their identities.
    pub fn begin<'a>(
        options: SlowLogOptions,
        inputs: impl IntoIterator<Item = (&'a Path, Option<FileId>)>,
    ) -> Result<SlowLog, ExportError> {
        let path = &options.path;
        // Standard input redirected from a file (`- < big.pcap`) reads that file: it is an input too.
        let stdin = Path::new("/dev/stdin");
        let inputs = inputs.into_iter().map(|(p, id)| match id {
            None if p.as_os_str() == "-" => (p, FileId::of_path(stdin)),
            known => (p, known),
        });
        refuse_input_as_output(path, inputs).map_err(|e| match e {
            CaptureError::OutputIsInput { output, input } => {
                ExportError::OutputIsInput { output, input }
            }
            other => ExportError::io(path, std::io::Error::other(other.to_string())),
        })?;
        if path.is_dir() {
            return Err(ExportError::OutputIsADirectory { path: path.clone() });
        }
        let out = AtomicWriteFile::open(path).map_err(|e| ExportError::io(path, e))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(SlowLog {
            out,
            pool: Arc::new(Pool::new(&dir, options.buffer_bytes.max(1))),
            options,
        })
    }

    /// A [`SlowLogAnalysis`] instance: give the engine a function that calls this.
    pub fn analysis(&self) -> SlowLogAnalysis {
        SlowLogAnalysis {
            pool: self.pool.clone(),
            filter: self.options.filter.clone(),
            counts: SlowLogCounts::default(),
        }
    }

    /// Writes the entries in their order and puts the log in place; `counts` is the run's output of
    /// the analysis. On an error nothing is put in place.
    pub fn finish(self, counts: &SlowLogCounts) -> Result<SlowLogSummary, ExportError> {
        let path = self.options.path;
        let runs = self.pool.runs();
        let mut w = BufWriter::with_capacity(1 << 20, self.out);
        let mut last_schema: Option<Vec<u8>> = None;
        let mut bytes = 0u64;
        let written = self.pool.merge(
            |r| {
                w.write_all(r.head)?;
                bytes += r.head.len() as u64;
                if let Some(s) = r.schema {
                    if last_schema.as_deref() != Some(s) {
                        let mut line = Vec::with_capacity(s.len() + 6);
                        line.extend_from_slice(b"use ");
                        line.extend_from_slice(s);
                        line.extend_from_slice(b";\n");
                        w.write_all(&line)?;
                        bytes += line.len() as u64;
                        last_schema = Some(s.to_vec());
                    }
                }
                w.write_all(r.tail)?;
                bytes += r.tail.len() as u64;
                Ok(())
            },
            &path,
        )?;
        let file = w
            .into_inner()
            .map_err(|e| ExportError::io(&path, e.into_error()))?;
        file.commit().map_err(|e| ExportError::io(&path, e))?;
        debug_assert_eq!(written, counts.entries);
        Ok(SlowLogSummary {
            path,
            bytes,
            counts: *counts,
            runs,
        })
    }
}

/// What a connection's entries need from its history: the schema in use, its prepared statements'
/// parameter counts and bound types.
#[derive(Default)]
pub struct ConnectionLog {
    /// Entries of the connection so far (their order among entries that share frames).
    seq: u64,
    /// The schema known in use (the session's, then as `USE` statements change it).
    schema: Option<String>,
    /// Whether the schema was read from the session yet (at the connection's first transaction).
    schema_read: bool,
    /// Prepared statements by id.
    prepared: HashMap<u32, Prepared>,
    /// Parameter types kept in `prepared`, in all.
    types_kept: usize,
    /// The client's address as text (made at the connection's first entry).
    ip: String,
}

/// A prepared statement of the connection.
struct Prepared {
    /// Its parameter count, from its `COM_STMT_PREPARE_OK`.
    params: u16,
    /// The types its executes bound (empty until one did).
    types: Vec<u16>,
    /// A value was sent apart (`COM_STMT_SEND_LONG_DATA`) since its last execute.
    long_data: bool,
}

/// Prepared statements followed per connection (as many as the decoder remembers texts for).
const MAX_PREPARED: usize = 4096;

/// Parameter types kept per connection, in all its prepared statements: 512 KiB.
const MAX_TYPES_KEPT: usize = 256 << 10;

impl ConnectionLog {
    /// Follows what `t` changes: the schema, the prepared statements.
    fn follow(&mut self, t: &TransactionView<'_>) {
        let tx = t.transaction;
        let ok = matches!(tx.outcome, Outcome::Ok { .. });
        let session = t.session();
        if !self.schema_read {
            self.schema_read = true;
            self.schema = session.schema.clone();
        }
        match (tx.command, &tx.outcome) {
            (Command::Connect | Command::InitDb, _) if ok => {
                self.schema = session.schema.clone();
            }
            (Command::ChangeUser | Command::ResetConnection, _) if ok => {
                if tx.command == Command::ChangeUser {
                    self.schema = session.schema.clone();
                }
                // Both deallocate the session's prepared statements.
                self.prepared.clear();
                self.types_kept = 0;
            }
            (Command::Query, _) if ok => {
                if let Some(s) = tx.statement.as_deref().and_then(entry::used_schema) {
                    self.schema = Some(s);
                }
            }
            (
                Command::StmtPrepare,
                &Outcome::Prepared {
                    statement_id,
                    params,
                    ..
                },
            ) => {
                if let Some(old) = self.prepared.remove(&statement_id) {
                    self.types_kept -= old.types.len();
                }
                if self.prepared.len() < MAX_PREPARED {
                    self.prepared.insert(
                        statement_id,
                        Prepared {
                            params,
                            types: Vec::new(),
                            long_data: false,
                        },
                    );
                }
            }
            (Command::StmtClose, _) => {
                if let Some(old) = tx.statement_id.and_then(|id| self.prepared.remove(&id)) {
                    self.types_kept -= old.types.len();
                }
            }
            (Command::StmtSendLongData | Command::StmtReset, _) => {
                if let Some(p) = tx.statement_id.and_then(|id| self.prepared.get_mut(&id)) {
                    p.long_data = tx.command == Command::StmtSendLongData;
                }
            }
            _ => {}
        }
    }

    /// The text of an execute with its values in place, if they can be read (else `Err`, and the
    /// statement is logged with its markers). Follows the types it binds.
    fn executed(
        &mut self,
        t: &TransactionView<'_>,
        statement: &str,
    ) -> Result<String, ExecuteError> {
        let tx = t.transaction;
        let Some(p) = tx.statement_id.and_then(|id| self.prepared.get_mut(&id)) else {
            return Err(ExecuteError::TypesUnknown);
        };
        let long_data = std::mem::take(&mut p.long_data);
        let attributes = QueryAttributes::from_capabilities(capabilities(t.session()));
        let before = p.types.len();
        let read = Execute::read(&tx.execute, p.params, attributes, &mut p.types);
        // Types kept stay bounded: a statement's are dropped past the connection's allowance.
        self.types_kept = self.types_kept - before + p.types.len();
        if self.types_kept > MAX_TYPES_KEPT {
            self.types_kept -= p.types.len();
            p.types = Vec::new();
        }
        if long_data {
            // The execute leaves out the values sent apart: what it holds cannot be laid out.
            return Err(ExecuteError::Malformed);
        }
        read?.substitute(statement).ok_or(ExecuteError::Malformed)
    }
}

/// The capabilities in force, if the login was seen.
fn capabilities(s: &SessionInfo) -> Option<u32> {
    let client = s.client_capabilities?;
    Some(
        s.server_capabilities
            .map_or(client, |server| client & server),
    )
}

/// The analysis that formats the slow log's entries as the engine runs: made by
/// [`SlowLog::analysis`], one instance per worker and batch, every instance adding to the log's
/// buffers (one per worker thread; see the [module documentation](self)).
pub struct SlowLogAnalysis {
    pool: Arc<Pool>,
    filter: MysqlFilter,
    counts: SlowLogCounts,
}

impl Analysis for SlowLogAnalysis {
    type PerConnection = ConnectionLog;
    /// What became of the statements; the entries are the log's ([`SlowLog::finish`] writes them).
    type Output = SlowLogCounts;

    fn transaction(
        &mut self,
        log: &mut ConnectionLog,
        conn: &ConnectionView<'_>,
        t: &TransactionView<'_>,
    ) {
        log.follow(t);
        let tx = t.transaction;
        if !matches!(tx.command, Command::Query | Command::StmtExecute)
            || !self.filter.connection(t.client, t.server)
            || !self.filter.transaction(tx, t.waited_ns())
        {
            return;
        }
        let Some(query_ns) = t.response_time_ns() else {
            match t.fate() {
                Fate::CutOff => self.counts.cut_off += 1,
                Fate::Unanswered => self.counts.unanswered += 1,
                _ => self.counts.unreadable += 1,
            }
            return;
        };
        let Some(statement) = tx.statement.as_deref() else {
            // An execute whose statement's prepare the capture does not hold (a query always has text).
            self.counts.executes_without_text += 1;
            return;
        };
        let executed = match tx.command {
            Command::StmtExecute => match log.executed(t, statement) {
                Ok(text) => {
                    self.counts.executes_with_values += 1;
                    Some(text)
                }
                Err(_) => {
                    self.counts.executes_without_values += 1;
                    None
                }
            },
            _ => None,
        };
        let session = t.session();
        let start_us = round_us(tx.request_ts_ns);
        let query_us = round_us(query_ns);
        let end_us = start_us + query_us;
        if log.ip.is_empty() {
            log.ip = t.client.ip.to_string();
        }
        let fields = Fields {
            end_us,
            start_us,
            query_us,
            user: session.user.as_deref(),
            ip: &log.ip,
            id: session
                .connection_id
                .map_or(entry::NO_THREAD_ID + conn.tcp().first().frame, u64::from),
            rows_sent: tx.rows,
            errno: t.error_code().unwrap_or(0),
            bytes_received: tx.request_bytes,
            bytes_sent: tx.response_bytes,
            rows_affected: match tx.outcome {
                Outcome::Ok { affected_rows, .. } => Some(affected_rows),
                _ => None,
            },
        };
        let schema = log
            .schema
            .as_deref()
            .filter(|s| !s.chars().any(char::is_control));
        if schema.is_none() && log.schema.is_some() {
            self.counts.schemas_not_written += 1;
        }
        let key = Key {
            end_us,
            end_frame: tx.last_response_frame.unwrap_or(tx.request_frame),
            request_frame: tx.request_frame,
            seq: log.seq,
        };
        log.seq += 1;
        self.counts.entries += 1;
        let mut buffer = lock(self.pool.buffer());
        let b = &mut *buffer;
        let adding = b.start(schema);
        let (text, times) = b.text();
        entry::write_head(&fields, times, text);
        b.end_head(&adding);
        entry::write_tail(
            start_us,
            executed.as_deref().unwrap_or(statement),
            b.text().0,
        );
        b.finish(key, adding);
        self.pool.spill_if_full(b);
    }

    fn merge(&mut self, other: Self) {
        self.counts.add(&other.counts);
    }

    fn finish(self, _: &CaptureFacts) -> SlowLogCounts {
        self.counts
    }
}

/// Nanoseconds to the nearest microsecond, the slow log's unit.
fn round_us(ns: u64) -> u64 {
    ns.saturating_add(500) / 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of `statements`, one entry each, written as the analysis writes them (a second apart).
    fn log_of(statements: &[String], path: &Path) {
        let dir = path.parent().expect("a directory");
        let pool = Pool::new(dir, RUN_BYTES);
        for (i, sql) in statements.iter().enumerate() {
            let start_us = 1_700_000_000_000_000 + i as u64 * 1_000_000;
            let fields = Fields {
                end_us: start_us + 250,
                start_us,
                query_us: 250,
                user: Some("app"),
                ip: "10.0.0.1",
                id: 7,
                rows_sent: 1,
                errno: 0,
                bytes_received: 40,
                bytes_sent: 60,
                rows_affected: None,
            };
            let mut b = lock(pool.buffer());
            let adding = b.start(Some("db"));
            let (text, times) = b.text();
            entry::write_head(&fields, times, text);
            b.end_head(&adding);
            entry::write_tail(start_us, sql, b.text().0);
            let key = Key {
                end_us: start_us + 250,
                end_frame: i as u64,
                request_frame: i as u64,
                seq: 0,
            };
            b.finish(key, adding);
        }
        let mut text = Vec::new();
        pool.merge(
            |r| {
                text.extend_from_slice(r.head);
                text.extend_from_slice(r.tail);
                Ok(())
            },
            path,
        )
        .expect("merged");
        std::fs::write(path, text).expect("written");
    }

    /// Statements that would forge entries if written raw, as pt-query-digest and mysqldumpslow split a
    /// log (at `;` ending a line followed by a line beginning with `#`) and read an entry (a first line
    /// beginning with `#`, `use ` or `SET timestamp=` is a header).
    fn hostile() -> Vec<String> {
        [
            "select 1;\n# Time: 2024-01-01T00:00:00.000000Z\n# User@Host: root[root] @ x []  Id: 1\n# Query_time: 99.000000  Lock_time: 0.000000 Rows_sent: 0  Rows_examined: 0\nSET timestamp=1;\ndrop table t",
            "select 'a;\n# Time: 2024-01-01T00:00:00.000000Z\n', \"b;\r\n#\"",
            "select `x;\n# y`",
            "select 1 /* c;\n# Query_time: 1 */",
            "select 1 -- c;\n# Time: x\n;\n#\n",
            "# a comment line;\nselect 2",
            "use other;\nselect 3",
            "SET timestamp=5;\nselect 4",
            "select 'it''s;\n#', 'x\\';\n#'",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    /// pt-query-digest reads one entry per statement, each with its own header (the forged `# Time:`
    /// lines are in no entry's header: every entry keeps its 250 µs and the user `app`, and the
    /// statement `use other` is no `use` line).
    #[test]
    fn pt_query_digest_reads_one_entry_per_hostile_statement() {
        use pcapsleuth_testkit::{oracle, Oracle};
        let Some(digest) = oracle::require(Oracle::PtQueryDigest) else {
            return;
        };
        let path =
            std::env::temp_dir().join(format!("pcapsleuth-hostile-{}.log", std::process::id()));
        let statements = hostile();
        log_of(&statements, &path);
        let out = digest.stdout([
            "--type",
            "slowlog",
            "--limit",
            "100%:1000",
            "--output",
            "json",
            path.to_str().expect("a path"),
        ]);
        let _ = std::fs::remove_file(&path);
        let report: serde_json::Value = serde_json::from_str(&out).expect("json");
        let global = &report["global"];
        assert_eq!(global["query_count"], statements.len(), "{out}");
        let qt = &global["metrics"]["Query_time"];
        assert_eq!(
            (qt["min"].as_str(), qt["max"].as_str()),
            (Some("0.000250"), Some("0.000250"))
        );
        for c in report["classes"].as_array().expect("classes") {
            assert_eq!(c["metrics"]["user"]["value"], "app", "{c}");
            // The log has no `use` line: the statement `use other` sets no schema.
            assert!(c["metrics"]["db"].is_null(), "{c}");
        }
    }

    /// The pieces hostile statements are made of: line breaks, comment and quote marks, the starts of
    /// header lines.
    const PIECES: &[&str] = &[
        "\n",
        "\r",
        "#",
        ";",
        "'",
        "\"",
        "`",
        "\\",
        "/*",
        "*/",
        "-- ",
        " ",
        "a",
        "use ",
        "USE `x`",
        "SET timestamp=1",
        "SET insert_id=2",
        "SET last_insert_id=3",
        "# Time: 2024-01-01T00:00:00Z",
        "# User@Host: a[a] @  [1.2.3.4]",
        "select 1",
    ];

    fn statement() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::strategy::Strategy;
        proptest::collection::vec(proptest::sample::select(PIECES), 0..16).prop_map(|v| v.concat())
    }

    proptest::proptest! {
        /// However a statement mixes line breaks, `#`, `;`, quotes, backslashes and comments, the
        /// log splits into one entry per statement where pt-query-digest splits it, and no line of a
        /// statement reads as a header line.
        #[test]
        fn no_statement_forges_an_entry(
            statements in proptest::collection::vec(statement(), 1..20)
        ) {
            let path = std::env::temp_dir().join(format!(
                "pcapsleuth-forge-{}-{:?}.log",
                std::process::id(),
                std::thread::current().id()
            ));
            log_of(&statements, &path);
            let text = std::fs::read_to_string(&path).expect("read");
            let _ = std::fs::remove_file(&path);
            proptest::prop_assert_eq!(text.matches(";\n#").count() + 1, statements.len());
            proptest::prop_assert_eq!(text.matches("\n# Time: ").count() + 1, statements.len());
            for entry in text.split("\n# Time: ") {
                // After the header and `SET timestamp`, no line of the statement is a header line.
                let statement = entry.split_once("\nSET timestamp=").expect("a SET line").1;
                for line in statement.lines().skip(1) {
                    proptest::prop_assert!(!line.starts_with('#'), "{:?}", line);
                }
                // pt-query-digest's header lines: `^(?:#|use |SET (?:last_insert_id|insert_id|timestamp))`.
                let first = statement.lines().nth(1).unwrap_or("");
                let header = ["#", "use ", "SET last_insert_id", "SET insert_id", "SET timestamp"];
                proptest::prop_assert!(!header.iter().any(|h| first.starts_with(h)), "{:?}", first);
            }
        }
    }

    /// Entries spilled into many small runs and those left in buffers come out merged in key order,
    /// each once, with a `use` line wherever the schema changes.
    #[test]
    fn runs_and_buffers_merge_in_order() {
        let dir = std::env::temp_dir();
        let pool = Pool::new(&dir, 200);
        let mut want = Vec::new();
        for i in 0..500u64 {
            // Keys out of order, in one buffer (the caller's thread's).
            let end_us = (i * 7919) % 1000;
            let mut b = lock(pool.buffer());
            let schema = if end_us % 3 == 0 { "a" } else { "b" };
            let adding = b.start(Some(schema));
            b.text()
                .0
                .extend_from_slice(format!("# Time: {end_us}\n").as_bytes());
            b.end_head(&adding);
            b.text()
                .0
                .extend_from_slice(format!("select {i};\n").as_bytes());
            let key = Key {
                end_us,
                end_frame: i,
                request_frame: i,
                seq: 0,
            };
            b.finish(key, adding);
            pool.spill_if_full(&mut b);
            want.push((end_us, i, schema));
        }
        // More than are merged at once: merged in two passes.
        assert!(pool.runs() > runs::MAX_FAN_IN, "{} runs", pool.runs());
        want.sort();
        let mut text = Vec::new();
        let mut last: Option<Vec<u8>> = None;
        let n = pool
            .merge(
                |r| {
                    text.extend_from_slice(r.head);
                    if let Some(s) = r.schema {
                        if last.as_deref() != Some(s) {
                            text.extend_from_slice(b"use ");
                            text.extend_from_slice(s);
                            text.extend_from_slice(b";\n");
                            last = Some(s.to_vec());
                        }
                    }
                    text.extend_from_slice(r.tail);
                    Ok(())
                },
                &dir,
            )
            .expect("merged");
        assert_eq!(n, 500);
        let mut expected = String::new();
        let mut last = "";
        for (end_us, i, schema) in want {
            expected.push_str(&format!("# Time: {end_us}\n"));
            if schema != last {
                expected.push_str(&format!("use {schema};\n"));
                last = schema;
            }
            expected.push_str(&format!("select {i};\n"));
        }
        assert_eq!(String::from_utf8(text).expect("text"), expected);
    }
}
