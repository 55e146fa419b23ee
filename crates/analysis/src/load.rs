//! The load-test view (`pcapsleuth load`): how many requests were in flight, how many connections were
//! open and active, how many transactions per second and how long they took, how long the clients
//! thought between a response and their next request, and who sat idle inside an open transaction.
//!
//! * **Requests in flight** are measured, not derived: every request (logins aside) is in flight from
//!   its first byte to its response's last (to the close that cut it off, or the capture's end), and the
//!   step function of their number is integrated per interval (time-weighted mean) and its maximum kept.
//!   Little's law (requests/s x mean response time) is given beside it as a check.
//! * **Transactions** are told by the server where it says: the `SERVER_STATUS_IN_TRANS` flag of the
//!   OK or EOF that ends a response is set while a transaction is open. Where a response carries no
//!   status (an ERR, a cut-off response), the statements tell: `BEGIN` / `START TRANSACTION` open one,
//!   `COMMIT` / `ROLLBACK` end it, and with autocommit off (`SET autocommit=0`) any statement opens one.
//!   Each transaction says which was used.
//! * **Think time** is a connection's silence from a response's last byte to its next request's first
//!   byte; inside an open transaction the same silence is **idle in transaction**: the client held locks
//!   and a snapshot while the server waited for it.
//!
//! Everything is kept per connection (the engine's per-connection state) and summed, or sorted at the
//! end: the result is the same for any number of splits.

use std::collections::BTreeMap;

use pcapsleuth_flow::{CloseFlag, Endpoint, Side};
use pcapsleuth_mysql::{Command, Transaction};
use serde::Serialize;

use crate::events::{Analysis, ConnectionView, EndView, TransactionView};
use crate::facts::CaptureFacts;
use crate::finding::{Finding, FindingKind};
use crate::histogram::{Histogram, RtSummary};
use crate::mysql::Fate;
use crate::mysql::{EstimatedExchangeView, EstimatedTimes};
use crate::thresholds::{
    IDLE_IN_TRANSACTION_MIN_S, IDLE_IN_TRANSACTION_PATH_SHARE, IDLE_IN_TRANSACTION_SHARE,
};
use crate::timeline::plausible_response_time;
use crate::units;
use crate::widening::{self, BinMemo, BinWidth};

mod sweep;
use sweep::{sweep, Level, Spans};

/// `SERVER_STATUS_IN_TRANS`: a transaction is open after this response.
const SERVER_STATUS_IN_TRANS: u16 = 0x0001;
/// `SERVER_STATUS_AUTOCOMMIT`: the session's autocommit is on.
const SERVER_STATUS_AUTOCOMMIT: u16 = 0x0002;
/// MySQL's deadlock error: the server rolled the whole transaction back.
const ER_LOCK_DEADLOCK: u16 = 1213;
/// Connections listed by name, the worst first.
pub const LOAD_WORST_CONNECTIONS: usize = 5;
/// Transactions listed with their statements, the longest first.
pub const LOAD_WORST_TRANSACTIONS: usize = 10;
/// Statements of one transaction listed (the first; its count says how many there were).
pub const LOAD_TRANSACTION_STATEMENTS_KEPT: usize = 50;
/// Bytes of a statement's text kept while its transaction is open, to be fingerprinted if the
/// transaction turns out to be among the longest (a fingerprint of a longer text is cut there).
const STATEMENT_TEXT_KEPT: usize = 512;
/// Per-interval rows (from the first interval to the last) beyond which the intervals widen (an
/// interval far finer than the capture is long would write millions of rows; [`crate::widening`]).
const MAX_INTERVAL_ROWS: i64 = 200_000;
/// Intervals with requests kept while the run is read (about 170 bytes each): past it, they double in
/// width ([`crate::widening`]). 65,536 is 18 hours of requests every second.
const LOAD_INTERVALS_KEPT: usize = 65_536;

/// The load-test analysis: one instance per worker, merged, finished into a [`LoadReport`].
///
/// Every request's time in flight is kept until the end of the run (the figures need all of them and the
/// capture's body): past 8 MB, in an unnamed scratch file in the temporary directory
/// ([`std::env::temp_dir`]), so that memory does not grow with the capture; in memory where no such file
/// can be written.
#[derive(Debug, Clone, Default)]
pub struct LoadTest {
    /// The per-interval rows' width: as asked, or wider for a run whose intervals would be more than
    /// [`LOAD_INTERVALS_KEPT`] ([`crate::widening`]).
    width: BinWidth,
    /// Each request's time in flight: from its first byte to its end, ns; `i64::MAX` for one still in
    /// flight when the capture ended.
    requests: Spans,
    /// Each MySQL connection's first and last packet, ns.
    connections: Spans,
    /// Per interval (bin of `width`): counts that add up.
    bins: BTreeMap<i64, BinCounts>,
    /// The counts of the bin the latest request fell in, not yet added to `bins`: requests come in time
    /// order on a connection, so most fall in the bin of the one before (added when one falls
    /// elsewhere, and before `bins` is read; addition commutes, so the sums are the same).
    pending: Option<(i64, BinCounts)>,
    /// The bin of the latest request, remembered (a division saved per request).
    memo: BinMemo,
    /// Response times of the answered requests (logins aside): how many, and their sum in ns (only the
    /// mean is needed; `mysql` and `rt` keep the distribution).
    rt_count: u64,
    rt_sum_ns: u128,
    think: Histogram,
    idle_gaps: Histogram,
    transaction_rt: Histogram,
    tx: TransactionCounts,
    statements_in_transactions: u64,
    statements_max: u64,
    worst_idle: Vec<ConnectionRow>,
    worst_think: Vec<ConnectionRow>,
    /// MySQL connections that sent a request.
    active_connections: u64,
    /// The longest transactions with their statements (at most [`LOAD_WORST_TRANSACTIONS`]).
    worst_transactions: Vec<TransactionRow>,
    /// Per server: what its connections added up to.
    servers: BTreeMap<Endpoint, ServerCounts>,
    /// The exchanges of the MySQL sessions in TLS not decrypted, timed from their records.
    tls: EstimatedTimes,
}

/// What one server's connections added up to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct ServerCounts {
    connections: u64,
    requests: u64,
    answered: u64,
    errors: u64,
    rt_sum_ns: u128,
    transactions: u64,
    rollbacks: u64,
    transaction_ns: u128,
    idle_ns: u128,
    think_ns: u128,
    think_gaps: u64,
}

impl ServerCounts {
    fn add(&mut self, o: &ServerCounts) {
        self.connections += o.connections;
        self.requests += o.requests;
        self.answered += o.answered;
        self.errors += o.errors;
        self.rt_sum_ns += o.rt_sum_ns;
        self.transactions += o.transactions;
        self.rollbacks += o.rollbacks;
        self.transaction_ns += o.transaction_ns;
        self.idle_ns += o.idle_ns;
        self.think_ns += o.think_ns;
        self.think_gaps += o.think_gaps;
    }
}

/// One of the longest transactions, with its statements.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransactionRow {
    /// The client, `ip:port`.
    pub client: String,
    /// The server, `ip:port`.
    pub server: String,
    /// Frame of its first statement's request (the `BEGIN`, or the statement that opened it).
    pub first_frame: u64,
    /// When it began, seconds since the epoch.
    pub start: f64,
    /// First statement's first byte to the last byte of the answer to the statement that ended it, µs.
    pub rt_us: f64,
    /// How it ended: `commit`, `rollback` or `implicit_commit`.
    pub ending: &'static str,
    /// Of its time, µs spent waiting for the client's next statement.
    pub idle_us: f64,
    /// Its requests, from the one that opened it to the one that ended it.
    pub statement_count: u64,
    /// The first [`LOAD_TRANSACTION_STATEMENTS_KEPT`] of them, in order.
    pub statements: Vec<TransactionStatement>,
}

/// A request inside a listed transaction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransactionStatement {
    /// The statement's fingerprint (literals as `?`), or the command's name without text.
    pub fingerprint: String,
    /// The command: `COM_QUERY`, `COM_STMT_EXECUTE`, ...
    pub command: &'static str,
    /// Request's first byte to its response's last, µs; null when not answered.
    pub rt_us: Option<f64>,
    /// Frame of its request.
    pub frame: u64,
}

/// One server's row of the load view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerLoad {
    /// The server's `ip:port` (IPv6 as `[addr]:port`).
    pub server: String,
    /// Its port.
    pub port: u16,
    /// Connections to it that sent a request.
    pub connections: u64,
    /// Requests it was sent (logins aside) and per second of the span.
    pub requests: u64,
    /// Requests per second of the span.
    pub requests_per_s: f64,
    /// Mean response time of its answered requests, µs.
    pub rt_mean_us: f64,
    /// Error responses.
    pub errors: u64,
    /// Transactions ended on it, per second of the span, and rolled back.
    pub transactions: u64,
    /// Transactions ended per second of the span.
    pub tps: f64,
    /// Of them, rolled back.
    pub rollbacks: u64,
    /// Mean transaction time, µs (0 with none).
    pub transaction_rt_mean_us: f64,
    /// Seconds its connections sat idle inside a transaction.
    pub idle_in_transaction_s: f64,
    /// Mean think time of its clients, µs (0 with none).
    pub think_mean_us: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct BinCounts {
    requests: u64,
    answered: u64,
    rt_sum_ns: u128,
    active_connections: u64,
    transactions: u64,
    rollbacks: u64,
    transaction_rt_sum_ns: u128,
    idle_in_transaction_ns: u128,
    think_ns: u128,
    think_gaps: u64,
}

impl BinCounts {
    fn add(&mut self, o: &BinCounts) {
        self.requests += o.requests;
        self.answered += o.answered;
        self.rt_sum_ns += o.rt_sum_ns;
        self.active_connections += o.active_connections;
        self.transactions += o.transactions;
        self.rollbacks += o.rollbacks;
        self.transaction_rt_sum_ns += o.transaction_rt_sum_ns;
        self.idle_in_transaction_ns += o.idle_in_transaction_ns;
        self.think_ns += o.think_ns;
        self.think_gaps += o.think_gaps;
    }
}

/// Transactions by how they ended and how they were told.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TransactionCounts {
    /// Ended by `COMMIT` (or a statement that commits implicitly: a DDL, `SET autocommit=1`, a `BEGIN`
    /// inside one), seen from start to end.
    pub committed: u64,
    /// Ended by `ROLLBACK`, or by a deadlock (ERR 1213) that rolled it back.
    pub rolled_back: u64,
    /// Of those, ended by a statement other than `COMMIT`/`ROLLBACK` (a DDL, `SET autocommit=1`, a new
    /// `BEGIN`) that committed them implicitly.
    pub implicit_commits: u64,
    /// Of the ended ones, opened with `BEGIN` / `START TRANSACTION`.
    pub explicit: u64,
    /// Of the ended ones, opened by a statement with autocommit off.
    pub autocommit_off: u64,
    /// Of the ended ones, told from start to end by the server's `SERVER_STATUS_IN_TRANS` flag.
    pub by_server_status: u64,
    /// Of the ended ones, told (at their start or their end) by the statements alone: a response
    /// without a status (an ERR) where the server's flag would have said.
    pub by_statements: u64,
    /// Already open when the capture (or the connection's part in it) began: their start is unknown,
    /// they are counted here and in no time figure.
    pub began_before_capture: u64,
    /// Still open when the capture ended.
    pub open_at_end: u64,
    /// Open when their connection closed or sent `COMM_QUIT`: the server rolls them back.
    pub abandoned: u64,
}

impl TransactionCounts {
    fn add(&mut self, o: &TransactionCounts) {
        self.committed += o.committed;
        self.rolled_back += o.rolled_back;
        self.implicit_commits += o.implicit_commits;
        self.explicit += o.explicit;
        self.autocommit_off += o.autocommit_off;
        self.by_server_status += o.by_server_status;
        self.by_statements += o.by_statements;
        self.began_before_capture += o.began_before_capture;
        self.open_at_end += o.open_at_end;
        self.abandoned += o.abandoned;
    }

    /// Transactions seen from start to end.
    pub fn ended(&self) -> u64 {
        self.committed + self.rolled_back
    }
}

/// One connection's load, for the lists of the worst.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectionRow {
    /// The client, `ip:port`.
    pub client: String,
    /// The server, `ip:port`.
    pub server: String,
    /// The connection's first frame.
    pub first_frame: u64,
    /// Requests sent (logins aside).
    pub requests: u64,
    /// Transactions it ended.
    pub transactions: u64,
    /// Seconds it sat idle inside an open transaction.
    pub idle_in_transaction_s: f64,
    /// Seconds of think time (every silence between a response and the next request).
    pub think_s: f64,
    /// Seconds its transactions took, first statement to the end's answer.
    pub transaction_s: f64,
    /// Its longest silence inside a transaction, if any.
    pub longest_idle: Option<IdleGap>,
}

/// A silence inside an open transaction: the response it followed and the request that ended it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdleGap {
    /// Seconds.
    pub seconds: f64,
    /// Frame of the response's last byte the silence began after.
    pub after_frame: u64,
    /// Frame of the request that ended it.
    pub request_frame: u64,
    /// That request's statement (`COMMIT` when it was sent late).
    pub statement: String,
}

/// What a connection keeps while the engine follows it.
#[derive(Debug, Default)]
pub struct LoadConnection {
    /// The last response's last byte (ns, frame): the next request's think time starts there.
    last_response: Option<(i64, u64)>,
    /// The session's autocommit as last told (the server's flag, or `SET autocommit`).
    autocommit: Option<bool>,
    open: Option<OpenTransaction>,
    login_seen: bool,
    requests: u64,
    transactions: u64,
    last_active_bin: Option<i64>,
    idle_ns: u64,
    think_ns: u64,
    transaction_ns: u64,
    longest_idle: Option<IdleGap>,
    quit: bool,
    answered: u64,
    errors: u64,
    rt_sum_ns: u128,
    rollbacks: u64,
    think_gaps: u64,
    /// The open transaction's requests so far (at most [`LOAD_TRANSACTION_STATEMENTS_KEPT`]), their
    /// texts one after the other in `texts`: both reused from one transaction to the next.
    statements: Vec<KeptStatement>,
    texts: String,
}

/// A request of the open transaction, as kept until the transaction ends.
#[derive(Debug, Clone, Copy)]
struct KeptStatement {
    command: Command,
    /// Its text in the connection's `texts`, when it had one.
    text: Option<(u32, u32)>,
    rt_ns: Option<u64>,
    frame: u64,
}

#[derive(Debug)]
struct OpenTransaction {
    start_ns: i64,
    /// Whether its start was seen (it began inside the capture).
    start_known: bool,
    explicit: bool,
    /// Whether the server's flag said it opened.
    started_by_flag: bool,
    statements: u64,
    /// Its requests, from the one that opened it (statements and the `BEGIN`/`COMMIT`).
    requests: u64,
    first_frame: u64,
    idle_ns: u64,
}

impl OpenTransaction {
    /// A transaction opened at `start_ns` by the request of `first_frame`, told by its statements, with
    /// its start unknown and nothing counted yet.
    fn at(start_ns: i64, first_frame: u64) -> Self {
        OpenTransaction {
            start_ns,
            start_known: false,
            explicit: false,
            started_by_flag: false,
            statements: 0,
            requests: 0,
            first_frame,
            idle_ns: 0,
        }
    }
}

/// What a statement does to transactions, read from its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Begin,
    Commit,
    Rollback,
    Autocommit(bool),
    Other,
}

fn verb(t: &Transaction) -> Verb {
    if t.command != Command::Query {
        return Verb::Other;
    }
    let Some(text) = t.statement.as_deref() else {
        return Verb::Other;
    };
    let text = skip_comments(text);
    // Most statements start with none of the words below: told so by their first bytes, before the
    // text is cut into words (a statement whose first word is one of them starts with it).
    let head = text.as_bytes();
    let starts_with = |word: &str| {
        head.get(..word.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(word.as_bytes()))
    };
    if !["begin", "start", "commit", "rollback", "set"]
        .into_iter()
        .any(starts_with)
    {
        return Verb::Other;
    }
    let mut words = text
        .split(|c: char| c.is_whitespace() || c == ';')
        .filter(|w| !w.is_empty());
    let first = words.next().unwrap_or("");
    let is = |w: &str, s: &str| w.eq_ignore_ascii_case(s);
    if is(first, "begin") {
        // `BEGIN NOT ATOMIC` is a compound statement, not a transaction.
        return match words.next() {
            Some(w) if is(w, "not") => Verb::Other,
            _ => Verb::Begin,
        };
    }
    if is(first, "start") {
        return match words.next() {
            Some(w) if is(w, "transaction") => Verb::Begin,
            _ => Verb::Other,
        };
    }
    if is(first, "commit") {
        return Verb::Commit;
    }
    if is(first, "rollback") {
        // `ROLLBACK TO SAVEPOINT` keeps the transaction open.
        return match words.next() {
            Some(w) if is(w, "to") => Verb::Other,
            _ => Verb::Rollback,
        };
    }
    if is(first, "set") {
        // After the SET itself: `text` begins with it (comments and white space skipped).
        let squeezed: String = text[first.len()..]
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '@' && *c != '`')
            .flat_map(char::to_lowercase)
            .collect();
        for (pattern, on) in [
            ("autocommit=0", false),
            ("autocommit=off", false),
            ("autocommit=false", false),
            ("autocommit=1", true),
            ("autocommit=on", true),
            ("autocommit=true", true),
        ] {
            if let Some(at) = squeezed.find(pattern) {
                // Not `autocommit=10` or a longer name ending in autocommit.
                let after = squeezed[at + pattern.len()..].chars().next();
                let before = squeezed[..at].chars().next_back();
                let whole = after.is_none_or(|c| !c.is_ascii_alphanumeric())
                    && before.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
                if whole {
                    return Verb::Autocommit(on);
                }
            }
        }
    }
    Verb::Other
}

/// A request's statement as lists name it: its text, shortened, or its command.
fn short_statement(t: &Transaction) -> String {
    match t.statement.as_deref() {
        Some(text) if text.chars().count() > 80 => {
            let mut s: String = text.chars().take(79).collect();
            s.push('…');
            s
        }
        Some(text) => text.to_string(),
        None => t.command.name().to_string(),
    }
}

/// The text after leading whitespace and `/* ... */` comments.
fn skip_comments(mut s: &str) -> &str {
    // The common case: a statement that starts with a letter.
    if s.as_bytes().first().is_some_and(u8::is_ascii_alphabetic) {
        return s;
    }
    loop {
        s = s.trim_start();
        match s.strip_prefix("/*") {
            Some(rest) => match rest.find("*/") {
                Some(end) => s = &rest[end + 2..],
                None => return "",
            },
            None => return s,
        }
    }
}

/// How an open transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Commit,
    Rollback,
    /// A statement that commits implicitly.
    Implicit,
}

impl LoadTest {
    /// The analysis, with per-interval rows `interval_ns` wide (0: one second).
    pub fn new(interval_ns: i64) -> Self {
        LoadTest {
            width: BinWidth::new(if interval_ns > 0 {
                interval_ns
            } else {
                1_000_000_000
            }),
            ..Default::default()
        }
    }

    fn bin(&mut self, ts_ns: i64) -> i64 {
        self.memo.bin(self.width, ts_ns)
    }

    /// The counts of the interval of `ts_ns` (see `pending`).
    fn cell(&mut self, ts_ns: i64) -> &mut BinCounts {
        let bin = self.bin(ts_ns);
        if self.pending.as_ref().is_none_or(|(b, _)| *b != bin) {
            self.flush_bin();
        }
        // After the flush, which may have widened the intervals.
        let bin = self.bin(ts_ns);
        &mut self
            .pending
            .get_or_insert_with(|| (bin, BinCounts::default()))
            .1
    }

    /// Adds the pending bin's counts to `bins`, widening the intervals while they are too many.
    fn flush_bin(&mut self) {
        if let Some((bin, c)) = self.pending.take() {
            self.bins.entry(bin).or_default().add(&c);
            while widening::over(self.bins.len(), LOAD_INTERVALS_KEPT, self.width) {
                self.widen(self.width.doubled());
            }
        }
    }

    /// The per-interval counts in intervals of width `to` (as wide as theirs or wider).
    fn widen(&mut self, to: BinWidth) {
        self.flush_bin();
        let from = self.width;
        for (b, c) in std::mem::take(&mut self.bins) {
            self.bins.entry(from.rebin(b, to)).or_default().add(&c);
        }
        self.width = to;
    }

    #[allow(clippy::too_many_arguments)]
    fn end_transaction(
        &mut self,
        c: &mut LoadConnection,
        conn: &ConnectionView<'_>,
        end_ns: i64,
        at_ns: i64,
        ending: Ending,
        told_by_flag: bool,
    ) {
        let Some(open) = c.open.take() else {
            return;
        };
        let kept = std::mem::take(&mut c.statements);
        if !open.start_known {
            self.tx.began_before_capture += 1;
            return;
        }
        match ending {
            Ending::Rollback => self.tx.rolled_back += 1,
            Ending::Commit => self.tx.committed += 1,
            Ending::Implicit => {
                self.tx.committed += 1;
                self.tx.implicit_commits += 1;
            }
        }
        if open.explicit {
            self.tx.explicit += 1;
        } else {
            self.tx.autocommit_off += 1;
        }
        if open.started_by_flag && told_by_flag {
            self.tx.by_server_status += 1;
        } else {
            self.tx.by_statements += 1;
        }
        self.statements_in_transactions += open.statements;
        self.statements_max = self.statements_max.max(open.statements);
        c.transactions += 1;
        let rt = plausible_response_time(open.start_ns, end_ns);
        let b = self.cell(at_ns);
        b.transactions += 1;
        b.rollbacks += u64::from(ending == Ending::Rollback);
        if let Some(rt) = rt {
            b.transaction_rt_sum_ns += u128::from(rt);
        }
        c.rollbacks += u64::from(ending == Ending::Rollback);
        if let Some(rt) = rt {
            self.transaction_rt.add(rt);
            c.transaction_ns += rt;
            let rt_us = rt as f64 / 1e3;
            let listed = self.worst_transactions.len() < LOAD_WORST_TRANSACTIONS
                || self
                    .worst_transactions
                    .last()
                    .is_none_or(|w| rt_us >= w.rt_us);
            if listed {
                let statements = kept
                    .iter()
                    .map(|k| TransactionStatement {
                        fingerprint: match k.text {
                            Some((at, len)) => c
                                .texts
                                .get(at as usize..(at + len) as usize)
                                .map_or_else(String::new, pcapsleuth_mysql::fingerprint),
                            None => k.command.name().to_string(),
                        },
                        command: k.command.name(),
                        rt_us: k.rt_ns.map(|n| n as f64 / 1e3),
                        frame: k.frame,
                    })
                    .collect();
                self.worst_transactions.push(TransactionRow {
                    client: conn.client().to_string(),
                    server: conn.server().to_string(),
                    first_frame: open.first_frame,
                    start: open.start_ns as f64 / 1e9,
                    rt_us,
                    ending: match ending {
                        Ending::Commit => "commit",
                        Ending::Rollback => "rollback",
                        Ending::Implicit => "implicit_commit",
                    },
                    idle_us: open.idle_ns as f64 / 1e3,
                    statement_count: open.requests,
                    statements,
                });
                keep_worst_transactions(&mut self.worst_transactions);
            }
        }
        // The list's memory is kept for the connection's next transaction.
        c.statements = kept;
        c.statements.clear();
        c.texts.clear();
    }
}

/// What a request's answer said about transactions, as the steps of [`LoadTest::transactions_told`]
/// read it.
struct Answer {
    fate: Fate,
    /// The server's status flags, when the response carried them.
    flags: Option<u16>,
    /// Whether the server said a transaction is open after it.
    in_trans_after: Option<bool>,
    /// The response's last byte (the request's first when there was none), ns.
    end_ns: i64,
    error: Option<u16>,
    rt_ns: Option<u64>,
}

impl Answer {
    /// Answered without an error.
    fn succeeded(&self) -> bool {
        self.fate == Fate::Answered && self.error.is_none()
    }
}

impl LoadTest {
    /// The silence before a request starting at `start`: think time, and idle in transaction when one
    /// is open.
    fn silence_before(&mut self, c: &mut LoadConnection, t: &Transaction, start: i64) {
        let Some((end, frame)) = c.last_response else {
            return;
        };
        let Some(gap) = plausible_response_time(end, start) else {
            return;
        };
        self.think.add(gap);
        c.think_ns += gap;
        c.think_gaps += 1;
        let idle = c.open.as_ref().is_some_and(|o| o.start_known);
        let b = self.cell(start);
        b.think_ns += u128::from(gap);
        b.think_gaps += 1;
        if !idle {
            return;
        }
        b.idle_in_transaction_ns += u128::from(gap);
        self.idle_gaps.add(gap);
        c.idle_ns += gap;
        if let Some(o) = c.open.as_mut() {
            o.idle_ns += gap;
        }
        let longer = c
            .longest_idle
            .as_ref()
            .is_none_or(|l| gap as f64 / 1e9 > l.seconds);
        if longer {
            c.longest_idle = Some(IdleGap {
                seconds: gap as f64 / 1e9,
                after_frame: frame,
                request_frame: t.request_frame,
                statement: short_statement(t),
            });
        }
    }

    /// Counts a request starting at `start`: its time in flight, its interval's and its connection's
    /// counts. Returns its response time.
    fn request(
        &mut self,
        c: &mut LoadConnection,
        view: &TransactionView<'_>,
        start: i64,
    ) -> Option<u64> {
        let t = view.transaction;
        // In flight from the first request byte to the end of what became of it.
        let end = match view.fate() {
            Fate::Answered | Fate::Unreadable => t.last_response_ts_ns.map(|e| e as i64),
            Fate::CutOff => view.waited_ns().map(|w| start.saturating_add(w as i64)),
            Fate::Unanswered => Some(i64::MAX),
            Fate::NoResponse => None,
        };
        if let Some(end) = end {
            if end == i64::MAX || plausible_response_time(start, end).is_some() {
                self.requests.push(start, end.max(start));
            }
        }
        c.requests += 1;
        // Distinct connections per interval are counted at the width asked only: widened intervals
        // leave them out (a sum of narrower intervals' counts would count a connection more than once).
        let bin = self.bin(start);
        let first_in_bin = c.last_active_bin != Some(bin);
        c.last_active_bin = Some(bin);
        let rt = view.response_time_ns();
        let b = self.cell(start);
        b.requests += 1;
        b.active_connections += u64::from(first_in_bin);
        if let Some(rt) = rt {
            b.answered += 1;
            b.rt_sum_ns += u128::from(rt);
            self.rt_count += 1;
            self.rt_sum_ns += u128::from(rt);
            c.answered += 1;
            c.rt_sum_ns += u128::from(rt);
        }
        c.errors += u64::from(view.error_code().is_some());
        rt
    }

    /// What a request does to its connection's transactions: opens one, ends one, or is one of its
    /// statements.
    fn transactions_told(
        &mut self,
        c: &mut LoadConnection,
        conn: &ConnectionView<'_>,
        view: &TransactionView<'_>,
        start: i64,
        rt_ns: Option<u64>,
    ) {
        let t = view.transaction;
        let flags = t.server_status.map(|s| s.flags);
        if let Some(f) = flags {
            c.autocommit = Some(f & SERVER_STATUS_AUTOCOMMIT != 0);
        }
        let a = Answer {
            fate: view.fate(),
            flags,
            in_trans_after: flags.map(|f| f & SERVER_STATUS_IN_TRANS != 0),
            end_ns: t.last_response_ts_ns.map(|e| e as i64).unwrap_or(start),
            error: view.error_code(),
            rt_ns,
        };
        match verb(t) {
            Verb::Begin => self.begin(c, conn, t, start, &a),
            v @ (Verb::Commit | Verb::Rollback) => {
                if c.open.is_some() {
                    keep_statement(c, t, rt_ns);
                    let ending = if v == Verb::Commit {
                        Ending::Commit
                    } else {
                        Ending::Rollback
                    };
                    // Its end not seen, the transaction is left open, and counted as such when its
                    // connection ends.
                    if a.fate == Fate::Answered {
                        let by_flag = a.in_trans_after == Some(false);
                        self.end_transaction(c, conn, a.end_ns, a.end_ns, ending, by_flag);
                    }
                }
            }
            Verb::Autocommit(on) => {
                if c.open.is_some() {
                    keep_statement(c, t, rt_ns);
                }
                if on && c.open.is_some() && a.fate == Fate::Answered {
                    let by_flag = a.in_trans_after == Some(false);
                    self.end_transaction(c, conn, a.end_ns, a.end_ns, Ending::Implicit, by_flag);
                }
                if a.succeeded() {
                    c.autocommit = Some(on);
                }
            }
            Verb::Other if c.open.is_some() => self.statement_inside(c, conn, t, &a),
            Verb::Other => self.statement_outside(c, t, start, &a),
        }
    }

    /// A `BEGIN` / `START TRANSACTION`: commits the open transaction, opens one when it succeeded.
    fn begin(
        &mut self,
        c: &mut LoadConnection,
        conn: &ConnectionView<'_>,
        t: &Transaction,
        start: i64,
        a: &Answer,
    ) {
        if c.open.is_some() {
            self.end_transaction(c, conn, start, start, Ending::Implicit, false);
        }
        if a.succeeded() {
            let open = OpenTransaction {
                start_known: true,
                explicit: true,
                started_by_flag: a.in_trans_after == Some(true),
                ..OpenTransaction::at(start, t.request_frame)
            };
            open_transaction(c, t, a.rt_ns, open);
        }
    }

    /// A statement inside the open transaction: kept, and the transaction's end when the server says
    /// it committed implicitly or a deadlock rolled it back.
    fn statement_inside(
        &mut self,
        c: &mut LoadConnection,
        conn: &ConnectionView<'_>,
        t: &Transaction,
        a: &Answer,
    ) {
        if let Some(open) = c.open.as_mut() {
            open.statements += 1;
        }
        keep_statement(c, t, a.rt_ns);
        let ending = match (a.in_trans_after, a.error) {
            // The server says the transaction is over: a statement that commits implicitly.
            (Some(false), _) => (Ending::Implicit, true),
            (_, Some(ER_LOCK_DEADLOCK)) => (Ending::Rollback, false),
            _ => return,
        };
        self.end_transaction(c, conn, a.end_ns, a.end_ns, ending.0, ending.1);
    }

    /// A statement with no transaction open: opens one when the server's flag says so, or when
    /// autocommit is off.
    fn statement_outside(
        &mut self,
        c: &mut LoadConnection,
        t: &Transaction,
        start: i64,
        a: &Answer,
    ) {
        let by_flag = a.in_trans_after == Some(true);
        let by_statement =
            a.in_trans_after.is_none() && c.autocommit == Some(false) && a.succeeded();
        if !(by_flag || by_statement) {
            return;
        }
        // With autocommit on the server opened a transaction only if a BEGIN came before what the
        // capture holds; with autocommit off, this statement opened it (known when the session was
        // followed from its login, or from a request before).
        let autocommit_on = a.flags.is_some_and(|f| f & SERVER_STATUS_AUTOCOMMIT != 0);
        let start_known = !autocommit_on && (c.login_seen || c.requests > 1);
        let open = OpenTransaction {
            start_known,
            explicit: autocommit_on,
            started_by_flag: by_flag,
            statements: 1,
            ..OpenTransaction::at(start, t.request_frame)
        };
        open_transaction(c, t, a.rt_ns, open);
    }
}

/// Makes `open` the connection's open transaction, its statements kept from `t`, the request that
/// opened it.
fn open_transaction(
    c: &mut LoadConnection,
    t: &Transaction,
    rt_ns: Option<u64>,
    open: OpenTransaction,
) {
    c.open = Some(open);
    c.statements.clear();
    c.texts.clear();
    keep_statement(c, t, rt_ns);
}

impl Analysis for LoadTest {
    /// Made at the connection's first transaction: a connection that never carries one (an attempt of
    /// a SYN flood) costs a pointer, not the record's ~150 bytes.
    type PerConnection = Option<Box<LoadConnection>>;
    type Output = LoadReport;

    fn transaction(
        &mut self,
        c: &mut Option<Box<LoadConnection>>,
        conn: &ConnectionView<'_>,
        view: &TransactionView<'_>,
    ) {
        let c: &mut LoadConnection = c.get_or_insert_with(Box::default);
        let t = view.transaction;
        let fate = view.fate();
        if t.command == Command::Connect {
            c.login_seen = true;
            c.last_response = match (fate, t.last_response_ts_ns, t.last_response_frame) {
                (Fate::Answered, Some(ts), Some(f)) => Some((ts as i64, f)),
                _ => None,
            };
            if let Some(s) = t.server_status {
                c.autocommit = Some(s.flags & SERVER_STATUS_AUTOCOMMIT != 0);
            }
            return;
        }
        if fate == Fate::NoResponse {
            if t.command == Command::Quit {
                c.quit = true;
            }
            return;
        }
        let start = t.request_ts_ns as i64;
        self.silence_before(c, t, start);
        let rt = self.request(c, view, start);
        self.transactions_told(c, conn, view, start, rt);
        c.last_response = match (fate, t.last_response_ts_ns, t.last_response_frame) {
            (Fate::Answered, Some(ts), Some(f)) => Some((ts as i64, f)),
            // A request not answered leaves no response for the next one to follow.
            _ => None,
        };
    }

    fn connection_ended(
        &mut self,
        c: Option<Box<LoadConnection>>,
        conn: &ConnectionView<'_>,
        end: &EndView<'_>,
    ) {
        if !conn.is_mysql() {
            return;
        }
        let c = c.map_or_else(LoadConnection::default, |c| *c);
        let tcp = conn.tcp();
        let (first, last) = (tcp.first(), tcp.last());
        if plausible_response_time(first.ts.0, last.ts.0).is_some() {
            self.connections.push(first.ts.0, last.ts.0);
        }
        if let Some(open) = &c.open {
            let closed = c.quit
                || [Side::Lo, Side::Hi].into_iter().any(|side| {
                    [CloseFlag::Fin, CloseFlag::Rst]
                        .into_iter()
                        .any(|flag| tcp.first_close(side, flag).is_some())
                });
            if !open.start_known {
                self.tx.began_before_capture += 1;
            } else if closed || end.by == crate::events::EndedBy::PortReuse {
                self.tx.abandoned += 1;
            } else {
                self.tx.open_at_end += 1;
            }
        }
        if c.requests == 0 {
            return;
        }
        self.active_connections += 1;
        self.servers
            .entry(conn.server())
            .or_default()
            .add(&ServerCounts {
                connections: 1,
                requests: c.requests,
                answered: c.answered,
                errors: c.errors,
                rt_sum_ns: c.rt_sum_ns,
                transactions: c.transactions,
                rollbacks: c.rollbacks,
                transaction_ns: u128::from(c.transaction_ns),
                idle_ns: u128::from(c.idle_ns),
                think_ns: u128::from(c.think_ns),
                think_gaps: c.think_gaps,
            });
        let row = ConnectionRow {
            client: conn.client().to_string(),
            server: conn.server().to_string(),
            first_frame: first.frame,
            requests: c.requests,
            transactions: c.transactions,
            idle_in_transaction_s: c.idle_ns as f64 / 1e9,
            think_s: c.think_ns as f64 / 1e9,
            transaction_s: c.transaction_ns as f64 / 1e9,
            longest_idle: c.longest_idle,
        };
        if c.idle_ns > 0 {
            self.worst_idle.push(row.clone());
            keep_worst(&mut self.worst_idle, |r| r.idle_in_transaction_s);
        }
        if c.think_ns > 0 {
            self.worst_think.push(row);
            keep_worst(&mut self.worst_think, |r| r.think_s);
        }
    }

    fn merge(&mut self, mut o: Self) {
        if self.width == BinWidth::default() {
            self.width = o.width;
        }
        self.flush_bin();
        o.flush_bin();
        // Both at the wider of the two widths first: widening commutes with adding.
        let to = self.width.max(o.width);
        if self.width != to {
            self.widen(to);
        }
        if o.width != to {
            o.widen(to);
        }
        self.requests.merge(o.requests);
        self.connections.merge(o.connections);
        for (k, v) in o.bins {
            self.bins.entry(k).or_default().add(&v);
        }
        while widening::over(self.bins.len(), LOAD_INTERVALS_KEPT, self.width) {
            self.widen(self.width.doubled());
        }
        self.rt_count += o.rt_count;
        self.rt_sum_ns += o.rt_sum_ns;
        self.think.merge(&o.think);
        self.idle_gaps.merge(&o.idle_gaps);
        self.transaction_rt.merge(&o.transaction_rt);
        self.tx.add(&o.tx);
        self.statements_in_transactions += o.statements_in_transactions;
        self.statements_max = self.statements_max.max(o.statements_max);
        self.active_connections += o.active_connections;
        self.worst_idle.extend(o.worst_idle);
        keep_worst(&mut self.worst_idle, |r| r.idle_in_transaction_s);
        self.worst_think.extend(o.worst_think);
        keep_worst(&mut self.worst_think, |r| r.think_s);
        self.worst_transactions.extend(o.worst_transactions);
        keep_worst_transactions(&mut self.worst_transactions);
        for (k, v) in o.servers {
            self.servers.entry(k).or_default().add(&v);
        }
        self.tls.merge(&o.tls);
    }

    fn estimated_exchange(
        &mut self,
        _: &mut Option<Box<LoadConnection>>,
        _: &ConnectionView<'_>,
        x: &EstimatedExchangeView<'_>,
    ) {
        self.tls.add(x);
    }

    fn finish(mut self, capture: &CaptureFacts) -> LoadReport {
        self.flush_bin();
        report(self, capture)
    }
}

/// Sorts the rows worst first (ties by client and frame: the same order for any merge) and keeps
/// [`LOAD_WORST_CONNECTIONS`].
fn keep_worst(rows: &mut Vec<ConnectionRow>, by: impl Fn(&ConnectionRow) -> f64) {
    rows.sort_by(|x, y| {
        by(y)
            .total_cmp(&by(x))
            .then_with(|| x.first_frame.cmp(&y.first_frame))
            .then_with(|| x.client.cmp(&y.client))
    });
    rows.truncate(LOAD_WORST_CONNECTIONS);
}

/// Notes a request of the open transaction (its statement's text kept up to [`STATEMENT_TEXT_KEPT`]
/// bytes), past the first [`LOAD_TRANSACTION_STATEMENTS_KEPT`] only counted.
fn keep_statement(c: &mut LoadConnection, t: &Transaction, rt_ns: Option<u64>) {
    if let Some(open) = c.open.as_mut() {
        open.requests += 1;
    }
    if c.statements.len() >= LOAD_TRANSACTION_STATEMENTS_KEPT {
        return;
    }
    let text = t.statement.as_deref().map(|s| {
        let mut cut = s.len().min(STATEMENT_TEXT_KEPT);
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        let at = c.texts.len();
        c.texts.push_str(&s[..cut]);
        (at as u32, cut as u32)
    });
    c.statements.push(KeptStatement {
        command: t.command,
        text,
        rt_ns,
        frame: t.request_frame,
    });
}

/// Sorts the transactions longest first (ties by first frame and client: the same order for any
/// merge) and keeps [`LOAD_WORST_TRANSACTIONS`].
fn keep_worst_transactions(rows: &mut Vec<TransactionRow>) {
    rows.sort_by(|x, y| {
        y.rt_us
            .total_cmp(&x.rt_us)
            .then_with(|| x.first_frame.cmp(&y.first_frame))
            .then_with(|| x.client.cmp(&y.client))
    });
    rows.truncate(LOAD_WORST_TRANSACTIONS);
}

/// What `pcapsleuth load` reports: the whole run, and per interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadReport {
    /// Width of the per-interval rows, seconds: the width asked for, or a power of two times it when a
    /// long capture would need more than 65,536 intervals with requests or 200,000 rows.
    pub interval_s: f64,
    /// The width asked for, seconds.
    pub asked_interval_s: f64,
    /// Seconds the capture covers (its body, first to last packet): every whole-run rate is per second
    /// of it.
    pub span_s: f64,
    /// Requests (logins aside) that expected a response.
    pub requests: u64,
    /// Requests per second of the span.
    pub requests_per_s: f64,
    /// Requests in flight.
    pub in_flight: InFlight,
    /// MySQL connections.
    pub connections: Connections,
    /// Transactions.
    pub transactions: Transactions,
    /// Think time, µs: on each connection, a response's last byte to the next request's first byte.
    pub think_time_us: RtSummary,
    /// One row per interval with requests, transactions or connections open.
    pub per_interval: Vec<LoadInterval>,
    /// The connections that sat idle inside a transaction longest (at most 5), the worst first.
    pub worst_idle_in_transaction: Vec<ConnectionRow>,
    /// The connections with the most think time (at most 5), the worst first.
    pub worst_think_time: Vec<ConnectionRow>,
    /// One row per server (`ip:port`), the most requests first.
    pub servers: Vec<ServerLoad>,
    /// The exchanges of the MySQL sessions in TLS that were not decrypted (no key log), timed from
    /// their records: what such a run shows of its load; `None` when there are none.
    pub tls_estimated: Option<EstimatedLoad>,
    /// What the figures could not know, in words.
    pub notes: Vec<String>,
    /// The transactions' times, ns, for tests of their change (`diff`).
    #[serde(skip)]
    pub(crate) transaction_rt: Histogram,
}

/// The load of MySQL sessions in TLS that were not decrypted, as their records' timing shows it: an
/// exchange is a burst of client records and the server's records until the client's next (one request
/// and its response, as far as the timing tells; [`EstimatedExchangeView`]). Estimates, never decoded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EstimatedLoad {
    /// Exchanges timed (each session's login aside).
    pub exchanges: u64,
    /// Exchanges not timed: no answer came before a close (a `COM_QUIT` looks so) or the capture's end.
    pub unfinished: u64,
    /// Exchanges timed per second of the span.
    pub exchanges_per_s: f64,
    /// Their times (the first client record's first byte to the last server record's), µs.
    pub rt_us: RtSummary,
    /// Little's law: exchanges per second x their mean time, the exchanges in flight on average.
    pub littles_law: f64,
}

/// Requests in flight over the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct InFlight {
    /// Time-weighted mean over the span.
    pub mean: f64,
    /// The most at once.
    pub max: u64,
    /// When it was first reached, seconds since the epoch (0 with no request).
    pub max_at: f64,
    /// Little's law as a check: requests per second x mean response time (answered requests).
    pub littles_law: f64,
    /// Mean response time of the answered requests, µs.
    pub rt_mean_us: f64,
}

/// MySQL connections over the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Connections {
    /// Connections seen.
    pub seen: u64,
    /// Time-weighted mean of those open (first to last packet) over the span.
    pub open_mean: f64,
    /// The most open at once.
    pub open_max: u64,
    /// Connections that sent at least one request.
    pub active: u64,
}

/// Transactions over the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Transactions {
    /// Counts by how they ended and how they were told.
    pub counts: TransactionCounts,
    /// Transactions ended (committed or rolled back) per second of the span.
    pub per_s: f64,
    /// From the first statement's first byte (the `BEGIN`'s, or the statement that opened it) to the
    /// last byte of the answer to the statement that ended it, µs.
    pub rt_us: RtSummary,
    /// Statements per transaction (the `BEGIN`, `COMMIT` and `ROLLBACK` not counted): mean.
    pub statements_mean: f64,
    /// The most statements in one.
    pub statements_max: u64,
    /// Seconds connections sat idle inside an open transaction (between a response and their next
    /// request).
    pub idle_in_transaction_s: f64,
    /// Of the time the ended transactions took, the share idle: waiting for the client's next statement.
    pub idle_share: f64,
    /// Each silence inside a transaction, µs.
    pub idle_gaps_us: RtSummary,
    /// How transactions were told: `server_status` (every one by the server's flag), `statements` (every
    /// one by its statements), `both` (some each way), `none` (no transaction).
    pub told_by: &'static str,
    /// The longest transactions (at most [`LOAD_WORST_TRANSACTIONS`]), each with its statements, the
    /// longest first.
    pub worst: Vec<TransactionRow>,
}

/// One interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoadInterval {
    /// Start, seconds since the epoch.
    pub start: f64,
    /// Seconds of the interval the capture covers: less than the interval at the capture's edges, and
    /// every rate of the row is per second of it.
    pub covered_s: f64,
    /// Whether the capture covers only part of the interval (`covered_s` below the interval).
    pub partial: bool,
    /// Requests that began in it.
    pub requests: u64,
    /// Of them, per covered second.
    pub requests_per_s: f64,
    /// Requests in flight, time-weighted mean over the covered seconds.
    pub in_flight_mean: f64,
    /// The most in flight at once.
    pub in_flight_max: u64,
    /// Little's law for the requests that began in it: requests/s x their mean response time.
    pub littles_law: f64,
    /// Connections open, time-weighted mean.
    pub connections_open_mean: f64,
    /// The most open at once.
    pub connections_open_max: u64,
    /// Connections that sent a request in it; `null` when the intervals are wider than asked (a long
    /// capture), where they are not counted.
    pub connections_active: Option<u64>,
    /// Transactions that ended in it.
    pub transactions: u64,
    /// Of them, rolled back.
    pub rollbacks: u64,
    /// Transactions ended per covered second.
    pub tps: f64,
    /// Mean time of the transactions that ended in it, µs (0 with none).
    pub transaction_rt_mean_us: f64,
    /// Mean think time of the requests that began in it, µs (0 with none).
    pub think_mean_us: f64,
    /// Idle-in-transaction seconds of the silences that ended in it.
    pub idle_in_transaction_s: f64,
}

/// The capture's body in time (first and last packet, ns), and the per-second rate over it.
#[derive(Clone, Copy)]
struct Span {
    first: i64,
    last: i64,
    ns: i64,
}

impl Span {
    fn per_s(&self, n: f64) -> f64 {
        let s = self.ns as f64 / 1e9;
        if s > 0.0 {
            n / s
        } else {
            0.0
        }
    }

    /// `area` (ns x count) as a time-weighted mean over the span.
    fn mean(&self, area: u128) -> f64 {
        if self.ns > 0 {
            area as f64 / self.ns as f64
        } else {
            0.0
        }
    }
}

fn report(l: LoadTest, capture: &CaptureFacts) -> LoadReport {
    let tl = &capture.timeline;
    let (first, last) = match (tl.body_first, tl.body_last) {
        (Some(a), Some(b)) => (a.0, b.0),
        _ => (0, 0),
    };
    let span = Span {
        first,
        last,
        ns: (last - first).max(0),
    };
    // Rows from the first interval to the last: wider ones when they would be too many.
    let mut l = l;
    let rows_needed = |w: BinWidth| w.bin(last) - w.bin(first) + 1;
    while rows_needed(l.width) > MAX_INTERVAL_ROWS && !l.width.widest() {
        l.widen(l.width.doubled());
    }
    let interval = l.width.ns();
    let with_bins = rows_needed(l.width) <= MAX_INTERVAL_ROWS;
    let widened = l.width.ns() != l.width.asked_ns();
    let mut notes = Vec::new();
    if widened {
        notes.push(format!(
            "intervals of {}, not {} as asked: the capture is too long for that many; connections active per interval are not counted at this width",
            crate::units::seconds(interval as f64 / 1e9),
            crate::units::seconds(l.width.asked_ns() as f64 / 1e9)
        ));
    }
    let req = sweep(&l.requests, interval, first, last, with_bins);
    let conn = sweep(&l.connections, interval, first, last, with_bins);

    let requests: u64 = l.bins.values().map(|b| b.requests).sum();
    let rt_mean_us = if l.rt_count > 0 {
        l.rt_sum_ns as f64 / l.rt_count as f64 / 1e3
    } else {
        0.0
    };
    let rate = span.per_s(requests as f64);
    let in_flight = InFlight {
        mean: span.mean(req.area),
        max: req.max,
        max_at: if req.max > 0 {
            req.max_at as f64 / 1e9
        } else {
            0.0
        },
        littles_law: rate * rt_mean_us / 1e6,
        rt_mean_us,
    };
    let transactions = transactions(&l, span, &mut notes);
    if req.lost || conn.lost {
        notes.push(
            "spans kept in a scratch file could not be read back: requests in flight and connections open leave them out"
                .to_string(),
        );
    }
    if l.requests.any_unended() {
        notes.push(
            "requests still unanswered at the capture's end are counted in flight up to its last packet"
                .to_string(),
        );
    }
    let per_interval = if with_bins && tl.body_first.is_some() {
        per_interval(&l, span, &req.bins, &conn.bins)
    } else {
        Vec::new()
    };
    LoadReport {
        interval_s: interval as f64 / 1e9,
        asked_interval_s: l.width.asked_ns() as f64 / 1e9,
        span_s: span.ns as f64 / 1e9,
        requests,
        requests_per_s: rate,
        in_flight,
        connections: Connections {
            seen: l.connections.len(),
            open_mean: span.mean(conn.area),
            open_max: conn.max,
            active: l.active_connections,
        },
        transactions,
        think_time_us: l.think.summary_us(),
        per_interval,
        worst_idle_in_transaction: l.worst_idle,
        worst_think_time: l.worst_think,
        servers: servers(&l.servers, span),
        tls_estimated: (l.tls.rt.count() + l.tls.unfinished > 0).then(|| {
            let rt_us = l.tls.rt.summary_us();
            let per_s = span.per_s(l.tls.rt.count() as f64);
            EstimatedLoad {
                exchanges: l.tls.rt.count(),
                unfinished: l.tls.unfinished,
                exchanges_per_s: per_s,
                rt_us,
                littles_law: per_s * rt_us.mean / 1e6,
            }
        }),
        notes,
        transaction_rt: l.transaction_rt,
    }
}

/// The run's transactions (their list of the longest taken from `l`), with the notes on those whose
/// time could not be known.
fn transactions(l: &LoadTest, span: Span, notes: &mut Vec<String>) -> Transactions {
    let tx = l.tx;
    let ended = tx.ended();
    let idle_s = l.idle_gaps.sum_ns() as f64 / 1e9;
    let tx_total_s = l.transaction_rt.sum_ns() as f64 / 1e9;
    let told_by = match (tx.by_server_status, tx.by_statements) {
        (0, 0) => "none",
        (_, 0) => "server_status",
        (0, _) => "statements",
        _ => "both",
    };
    if tx.began_before_capture > 0 {
        notes.push(format!(
            "{} transactions were already open when the capture began: counted apart, their time unknown",
            tx.began_before_capture
        ));
    }
    if tx.open_at_end > 0 {
        notes.push(format!(
            "{} transactions were still open when the capture ended: not in the transaction figures",
            tx.open_at_end
        ));
    }
    Transactions {
        counts: tx,
        per_s: span.per_s(ended as f64),
        rt_us: l.transaction_rt.summary_us(),
        statements_mean: if ended > 0 {
            l.statements_in_transactions as f64 / ended as f64
        } else {
            0.0
        },
        statements_max: l.statements_max,
        idle_in_transaction_s: idle_s,
        idle_share: if tx_total_s > 0.0 {
            idle_s / tx_total_s
        } else {
            0.0
        },
        idle_gaps_us: l.idle_gaps.summary_us(),
        told_by,
        worst: l.worst_transactions.clone(),
    }
}

/// One row per interval with requests, transactions or connections open, from the counts of `l` and
/// the sweeps' levels of requests in flight and connections open.
fn per_interval(
    l: &LoadTest,
    span: Span,
    req_bins: &BTreeMap<i64, Level>,
    conn_bins: &BTreeMap<i64, Level>,
) -> Vec<LoadInterval> {
    let (first, last, interval) = (span.first, span.last, l.width.ns());
    let widened = interval != l.width.asked_ns();
    let secs = interval as f64 / 1e9;
    let covered = |bin: i64| -> f64 {
        let start = bin.saturating_mul(interval);
        let end = start.saturating_add(interval);
        let c = end.min(last.saturating_add(1)) - start.max(first);
        (c.max(1) as f64 / 1e9).min(secs)
    };
    let mut keys: Vec<i64> = l
        .bins
        .keys()
        .chain(req_bins.keys())
        .chain(conn_bins.keys())
        .copied()
        .filter(|b| (first.div_euclid(interval)..=last.div_euclid(interval)).contains(b))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|bin| {
            let c = l.bins.get(&bin).copied().unwrap_or_default();
            let r = req_bins.get(&bin).copied().unwrap_or_default();
            let k = conn_bins.get(&bin).copied().unwrap_or_default();
            let cov = covered(bin);
            let cov_ns = cov * 1e9;
            let mean_rt_s = if c.answered > 0 {
                c.rt_sum_ns as f64 / c.answered as f64 / 1e9
            } else {
                0.0
            };
            LoadInterval {
                start: bin as f64 * secs,
                covered_s: cov,
                partial: cov < secs,
                requests: c.requests,
                requests_per_s: c.requests as f64 / cov,
                in_flight_mean: r.area as f64 / cov_ns,
                in_flight_max: r.max,
                littles_law: c.requests as f64 / cov * mean_rt_s,
                connections_open_mean: k.area as f64 / cov_ns,
                connections_open_max: k.max,
                connections_active: (!widened).then_some(c.active_connections),
                transactions: c.transactions,
                rollbacks: c.rollbacks,
                tps: c.transactions as f64 / cov,
                transaction_rt_mean_us: if c.transactions > 0 {
                    c.transaction_rt_sum_ns as f64 / c.transactions as f64 / 1e3
                } else {
                    0.0
                },
                think_mean_us: if c.think_gaps > 0 {
                    c.think_ns as f64 / c.think_gaps as f64 / 1e3
                } else {
                    0.0
                },
                idle_in_transaction_s: c.idle_in_transaction_ns as f64 / 1e9,
            }
        })
        .collect()
}

/// One row per server, the most requests first.
fn servers(servers: &BTreeMap<Endpoint, ServerCounts>, span: Span) -> Vec<ServerLoad> {
    let mean = |sum: u128, n: u64| {
        if n > 0 {
            sum as f64 / n as f64 / 1e3
        } else {
            0.0
        }
    };
    let mut rows: Vec<ServerLoad> = servers
        .iter()
        .map(|(e, k)| ServerLoad {
            server: e.to_string(),
            port: e.port,
            connections: k.connections,
            requests: k.requests,
            requests_per_s: span.per_s(k.requests as f64),
            rt_mean_us: mean(k.rt_sum_ns, k.answered),
            errors: k.errors,
            transactions: k.transactions,
            tps: span.per_s(k.transactions as f64),
            rollbacks: k.rollbacks,
            transaction_rt_mean_us: mean(k.transaction_ns, k.transactions),
            idle_in_transaction_s: k.idle_ns as f64 / 1e9,
            think_mean_us: mean(k.think_ns, k.think_gaps),
        })
        .collect();
    rows.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.server.cmp(&b.server)));
    rows
}

/// `report`'s finding when transactions spent most of their time waiting for their clients' next
/// statement ([`IDLE_IN_TRANSACTION_SHARE`] of it, at least [`IDLE_IN_TRANSACTION_MIN_S`] in all): how
/// much, the worst connection and its longest silence with its frames. Look-first (severity 2) when one
/// silence inside a transaction lasted a second or more: locks held that long stall everyone else. When
/// the median TCP handshake round trip (`path_rtt_us`) is most of the median silence, the path holds the
/// idle time more than the client, and the finding says so (severity 3).
pub(crate) fn idle_in_transaction_finding(
    l: &LoadReport,
    path_rtt_us: Option<f64>,
) -> Option<Finding> {
    let tx = &l.transactions;
    if tx.idle_share < IDLE_IN_TRANSACTION_SHARE
        || tx.idle_in_transaction_s < IDLE_IN_TRANSACTION_MIN_S
    {
        return None;
    }
    let worst = l.worst_idle_in_transaction.first()?;
    let mut summary = format!(
        "transactions spend {} of their time waiting for the client's next statement ({} idle in {}, told \
         by {}); worst connection {} -> {}: {} idle in {}",
        units::percent(tx.idle_share),
        units::seconds(tx.idle_in_transaction_s),
        units::counted(tx.counts.ended(), "transaction", "transactions"),
        match tx.told_by {
            "server_status" => "the server's SERVER_STATUS_IN_TRANS flag",
            "statements" => "their statements",
            _ => "the server's flag and the statements",
        },
        worst.client,
        worst.server,
        units::seconds(worst.idle_in_transaction_s),
        units::counted(worst.transactions, "transaction", "transactions")
    );
    let path =
        path_rtt_us.filter(|&rtt| rtt >= IDLE_IN_TRANSACTION_PATH_SHARE * tx.idle_gaps_us.p50);
    let mut frames = Vec::new();
    if let Some(g) = &worst.longest_idle {
        summary.push_str(&format!(
            ", the longest {} before `{}` (frame {})",
            units::seconds(g.seconds),
            g.statement,
            g.request_frame
        ));
        frames.extend([g.after_frame, g.request_frame]);
    }
    if let Some(rtt) = path {
        summary.push_str(&format!(
            "; but the path's round trip (median TCP handshake {}) is most of the median silence ({}) or \
             more: the clients answered at once, the path holds most of it",
            units::duration_us(rtt),
            units::duration_us(tx.idle_gaps_us.p50)
        ));
    }
    let mut evidence = vec![format!(
        "transaction time: p50 {}, p99 {}; each silence inside one: p50 {}, max {}; think time between \
         any response and the next request: p50 {} (seen at a server, each silence holds the path's round \
         trip too)",
        units::duration_us(tx.rt_us.p50),
        units::duration_us(tx.rt_us.p99),
        units::duration_us(tx.idle_gaps_us.p50),
        units::duration_us(tx.idle_gaps_us.max),
        units::duration_us(l.think_time_us.p50)
    )];
    for w in &l.worst_idle_in_transaction {
        let mut line = format!(
            "{} -> {} (from frame {}): {} idle in {} taking {}",
            w.client,
            w.server,
            w.first_frame,
            units::seconds(w.idle_in_transaction_s),
            units::counted(w.transactions, "transaction", "transactions"),
            units::seconds(w.transaction_s)
        );
        if let Some(g) = &w.longest_idle {
            line.push_str(&format!(
                "; longest {} from frame {} to `{}` (frame {})",
                units::seconds(g.seconds),
                g.after_frame,
                g.statement,
                g.request_frame
            ));
        }
        evidence.push(line);
    }
    let long = worst
        .longest_idle
        .as_ref()
        .is_some_and(|g| g.seconds >= 1.0);
    Some(Finding {
        severity: if long { 2 } else { 3 },
        kind: FindingKind::IdleInTransaction,
        summary,
        evidence,
        frames,
        ..Finding::blank()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> Transaction {
        serde_json::from_value(serde_json::json!({
            "command": "Query", "statement": text, "statement_id": null, "request_ts_ns": 0,
            "request_frame": 1, "last_request_ts_ns": 0, "last_request_frame": 1,
            "first_response_ts_ns": null, "first_response_frame": null,
            "last_response_ts_ns": null, "last_response_frame": null, "rows": 0, "server_status": null,
            "response_bytes": 0, "request_bytes": 0, "gap_bytes": 0, "outcome": "NoResponseExpected"
        }))
        .unwrap()
    }

    #[test]
    fn statements_that_open_and_end_transactions() {
        for (text, want) in [
            ("BEGIN", Verb::Begin),
            ("begin work", Verb::Begin),
            ("  /* app */ START TRANSACTION READ ONLY", Verb::Begin),
            ("BEGIN NOT ATOMIC SELECT 1; END", Verb::Other),
            ("COMMIT", Verb::Commit),
            ("commit;", Verb::Commit),
            ("ROLLBACK", Verb::Rollback),
            ("ROLLBACK TO SAVEPOINT a", Verb::Other),
            ("SET AUTOCOMMIT = 0", Verb::Autocommit(false)),
            ("set @@session.autocommit=1", Verb::Autocommit(true)),
            ("SET autocommit=OFF, sql_mode=''", Verb::Autocommit(false)),
            ("SET my_autocommit=0", Verb::Other),
            ("SET autocommit=10", Verb::Other),
            ("SELECT 1", Verb::Other),
            ("/* unterminated", Verb::Other),
        ] {
            assert_eq!(verb(&q(text)), want, "{text}");
        }
    }
}
