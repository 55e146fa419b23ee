//! MySQL statistics of a run (`pcapsleuth mysql`): every transaction counted by command, fate, error
//! code and statement fingerprint, with response times, incidents, logins and replication streams,
//! mergeable in any order.

use std::collections::{BTreeMap, HashMap};

use pcapsleuth_flow::{CloseFlag, Endpoint, FlowBuildHasher, FrameRef, Side};
use pcapsleuth_mysql::{Command, Fingerprinter, Outcome, SqlState, Transaction};
use serde::Serialize;

use super::tls::{TlsAggregate, TlsReport};
use super::{
    cut_text, first_byte_ns, response_time_ns, Fate, Incident, ListedPhases, RequestCounts,
    RequestPhases, UnansweredRequest,
};
use crate::events::{Analysis, ConnectionView, EndView, EstimatedExchangeView, TransactionView};
use crate::facts::CaptureFacts;
use crate::histogram::{Binned, Histogram, RtSummary};
use crate::replication::ReplicationStream;
use crate::timeline::plausible_response_time;
use crate::widening::{self, BinMemo, BinWidth};

/// Which transactions the MySQL report counts (`pcapsleuth mysql --port/--server/--errors-only/--slower-than`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MysqlFilter {
    /// Only connections with this port at either end (`--port`).
    pub port: Option<u16>,
    /// Only connections to this server endpoint (`--server`).
    pub server: Option<Endpoint>,
    /// Only requests answered by an error response (`--errors-only`); logins' errors included.
    pub errors_only: bool,
    /// Only requests answered in at least this many nanoseconds, or cut off by a close after waiting at least
    /// that long (`--slower-than`).
    pub slower_than_ns: Option<u64>,
}

impl MysqlFilter {
    /// Whether a connection between `client` and `server` is counted.
    pub fn connection(&self, client: Endpoint, server: Endpoint) -> bool {
        self.port
            .is_none_or(|p| client.port == p || server.port == p)
            && self.server.is_none_or(|s| s == server)
    }

    /// Whether `t` is counted; `waited_ns` is how long a request cut off by a close had waited.
    pub fn transaction(&self, t: &Transaction, waited_ns: Option<u64>) -> bool {
        (!self.errors_only || matches!(t.outcome, Outcome::Err { .. }))
            && self.slower_than_ns.is_none_or(|min| {
                response_time_ns(t)
                    .filter(|_| Fate::of(&t.outcome) == Fate::Answered)
                    .or(waited_ns)
                    .is_some_and(|rt| rt >= min)
            })
    }
}

/// Streams in one order whatever the merge order: a connection carries at most one stream and is tracked
/// by one task, so its first frame and endpoints identify it.
fn sort_streams(streams: &mut [ReplicationStream]) {
    streams.sort_by(|a, b| {
        (a.dump_frame.or(a.first_event_frame), &a.client, &a.server).cmp(&(
            b.dump_frame.or(b.first_event_frame),
            &b.client,
            &b.server,
        ))
    });
}

/// The fingerprint the `mysql` report groups a statement by: literals replaced by `?`, `IN (...)` lists
/// folded ([`Fingerprinter`]); a statement the capture holds only in part (the decoder marked bytes
/// missing inside it) gets the fingerprint of the part held, ending in [`CUT_MARK`], so that it never
/// groups with the complete statements it may be the start of.
///
/// Holds the fingerprinter (its buffer, and the statement heads it remembers) and the cut statement's
/// key, built in reused buffers: one per analysis instance, so no state hides in the thread.
///
/// ```
/// use pcapsleuth_analysis::StatementFingerprinter;
/// let mut f = StatementFingerprinter::default();
/// assert_eq!(f.fingerprint("SELECT * FROM t WHERE id = 42"), ("select * from t where id = ?", false));
/// let (cut, text_cut) = f.fingerprint("SELECT * FROM t WHERE id /* gap: 12 bytes */");
/// assert!(text_cut && cut.ends_with('…'));
/// ```
#[derive(Default)]
pub struct StatementFingerprinter {
    fingerprinter: Fingerprinter,
    cut_key: String,
}

impl StatementFingerprinter {
    /// The fingerprint of `sql`, and whether the capture holds the statement only in part (its
    /// fingerprint then ends in [`CUT_MARK`]). Valid until the next call.
    pub fn fingerprint(&mut self, sql: &str) -> (&str, bool) {
        match cut_text(sql) {
            Some(part) => (self.cut_fingerprint(part), true),
            None => (self.fingerprinter.fingerprint(sql), false),
        }
    }

    /// As [`StatementFingerprinter::fingerprint`], in the parts
    /// [`Fingerprinter::fingerprint_parts`] gives: the remembered head the fingerprint starts with
    /// (never one for a statement held only in part) and the rest; and whether it is cut. The
    /// fingerprint is the head's output followed by the rest (the rest alone without a head). A head
    /// id stands for one head for the life of this fingerprinter: statements with the same head id
    /// have the same fingerprint exactly when their rests are the same. Valid until the next call.
    ///
    /// ```
    /// use pcapsleuth_analysis::StatementFingerprinter;
    /// let mut f = StatementFingerprinter::default();
    /// // The first statement of a head: remembered, and whole in the rest.
    /// let (head, rest, cut) = f.fingerprint_parts("SELECT c FROM sbtest1 WHERE id=50123");
    /// assert_eq!((head, rest, cut), (None, "select c from sbtest1 where id=?", false));
    /// let (head, rest, _) = f.fingerprint_parts("SELECT c FROM sbtest1 WHERE id=7");
    /// assert_eq!((head, rest), (Some((0, "select c from sbtest1 where id=")), "?"));
    /// // Held only in part: no head, the cut mark at the end.
    /// let (head, rest, cut) = f.fingerprint_parts("SELECT c FROM sbtest1 WHERE id /* gap: 9 bytes */");
    /// assert!(head.is_none() && cut && rest.ends_with('…'));
    /// ```
    #[inline]
    pub fn fingerprint_parts(&mut self, sql: &str) -> (Option<(usize, &str)>, &str, bool) {
        match cut_text(sql) {
            Some(part) => (None, self.cut_fingerprint(part), true),
            None => {
                let (head, rest) = self.fingerprinter.fingerprint_parts(sql);
                (head, rest, false)
            }
        }
    }

    /// The fingerprint of `part`, the part held of a statement cut, ending in [`CUT_MARK`].
    fn cut_fingerprint(&mut self, part: &str) -> &str {
        let fp = self.fingerprinter.fingerprint(part);
        self.cut_key.clear();
        self.cut_key.push_str(fp);
        self.cut_key.push_str(CUT_MARK);
        &self.cut_key
    }
}

/// Ends the fingerprint of a statement the capture holds only in part: its group never merges with the
/// complete statements it may be the start of.
pub const CUT_MARK: &str = "…";

/// Statement groups (distinct fingerprints) the MySQL statistics keep one by one: beyond them, the
/// groups whose fingerprints hash highest are folded into one "other statements" group, counted exactly.
/// Which groups are kept depends on their fingerprints alone, so it is the same however the capture was
/// split: the [`STATEMENT_GROUPS_KEPT`] whose fingerprints' hashes (a 64-bit hash, the same in every
/// process) are lowest. Real workloads have
/// hundreds to a few thousand; a capture of hostile or generated SQL can have one per request.
pub const STATEMENT_GROUPS_KEPT: usize = 10_000;

/// Up to this many distinct messages are kept per error code (those seen first).
const MESSAGE_SAMPLES: usize = 3;

/// Up to this many error responses are kept per error code as examples (the earliest requests): enough to
/// find them in Wireshark, few enough that a storm of millions costs nothing more.
pub const ERROR_EXAMPLES: usize = 3;

/// An example's statement is cut to this many characters (on one line), with `…` after.
const EXAMPLE_STATEMENT_CHARS: usize = 120;

#[derive(Debug, Clone, Default, PartialEq)]
struct ErrorAgg {
    count: u64,
    rt: Histogram,
    messages: MessageSamples,
    /// The SQLSTATE of the earliest response that carried one, and its request's frame: responses with
    /// one code may differ (a damaged byte), and the earliest does not depend on how the work was split.
    sql_state: Option<(u64, SqlState)>,
    /// The earliest [`ERROR_EXAMPLES`] error responses, by request frame.
    examples: Vec<ErrorExample>,
}

impl ErrorAgg {
    /// Keeps `e` if it is among the earliest [`ERROR_EXAMPLES`] by request frame (whatever the order
    /// they come in, so the same whatever the split).
    fn note_example(&mut self, e: ErrorExample) {
        if self.examples.len() >= ERROR_EXAMPLES
            && self
                .examples
                .last()
                .is_some_and(|l| l.request_frame <= e.request_frame)
        {
            return;
        }
        let at = self
            .examples
            .partition_point(|x| x.request_frame < e.request_frame);
        self.examples.insert(at, e);
        self.examples.truncate(ERROR_EXAMPLES);
    }

    /// Whether an error answering the request at `frame` would be kept as an example (checked before its
    /// statement is copied: in an error storm, nearly never).
    fn wants_example(&self, frame: u64) -> bool {
        self.examples.len() < ERROR_EXAMPLES
            || self
                .examples
                .last()
                .is_some_and(|l| frame < l.request_frame)
    }

    fn note_sql_state(&mut self, frame: u64, state: SqlState) {
        if !state.is_empty() && self.sql_state.is_none_or(|(seen, _)| frame < seen) {
            self.sql_state = Some((frame, state));
        }
    }
}

impl StatementAgg {
    /// Counts `t`, whose statement is `sql`, whose fate is `fate` and which `is_err` (see
    /// [`MysqlAggregate::add`]).
    /// Inlined into both callers: a call through a closure of captured references cost more than the
    /// counting.
    #[inline(always)]
    fn count(
        &mut self,
        t: &Transaction,
        sql: &str,
        (fate, is_err): (Fate, bool),
        (rt, phases): (Option<Binned>, Option<RequestPhases>),
        waited_ns: Option<u64>,
    ) {
        self.requests.count(fate, t);
        if let Some(p) = phases {
            self.phases.add(p);
        }
        self.errors += u64::from(is_err);
        self.rows += t.rows;
        self.request_bytes += t.request_bytes;
        self.response_bytes += t.response_bytes;
        if let Outcome::Err { code, .. } = &t.outcome {
            note_code(&mut self.error_codes, *code, 1);
        }
        if let Some(st) = t.server_status {
            self.status.count(st);
        }
        if let Some(rt) = rt {
            self.rt.add_binned(rt);
        }
        if let Some(w) = waited_ns {
            self.waited.add(w);
        }
        if t.request_frame < self.sample.0 {
            self.sample = (t.request_frame, sql.to_string());
        }
    }

    /// Adds the requests of `o`, a group with the same fingerprint.
    fn merge(&mut self, o: StatementAgg) {
        self.requests.merge(&o.requests);
        self.errors += o.errors;
        self.rows += o.rows;
        self.request_bytes += o.request_bytes;
        self.response_bytes += o.response_bytes;
        self.status.merge(&o.status);
        for (code, n) in o.error_codes {
            note_code(&mut self.error_codes, code, n);
        }
        self.rt.merge(&o.rt);
        self.phases.merge(&o.phases);
        self.waited.merge(&o.waited);
        if o.sample.0 < self.sample.0 {
            self.sample = o.sample;
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
struct StatementAgg {
    requests: RequestCounts,
    errors: u64,
    rows: u64,
    /// MySQL bytes of the requests and of their responses (packets with their headers).
    request_bytes: u64,
    response_bytes: u64,
    /// The error responses by code, in code order: a group meets one or two codes, so a short vector.
    error_codes: Vec<(u16, u64)>,
    /// What the responses' status flags and warning counts said.
    status: StatusCounts,
    /// Response times of the answered requests.
    rt: Histogram,
    /// The answered requests' phases, summed.
    phases: PhaseSums,
    /// How long the requests cut off by a close had waited.
    waited: Histogram,
    /// The earliest statement of the group, and its frame.
    sample: (u64, String),
    /// The group's statements are held only in part by the capture.
    text_cut: bool,
}

/// The phases of answered requests ([`RequestPhases`]), summed: where a group's time went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PhaseSums {
    timed: u64,
    upload_ns: u64,
    server_ns: u64,
    downloads: u64,
    download_ns: u64,
}

impl PhaseSums {
    #[inline]
    fn add(&mut self, p: RequestPhases) {
        self.timed += 1;
        self.upload_ns += p.upload_ns;
        self.server_ns += p.server_ns;
        if let Some(d) = p.download_ns {
            self.downloads += 1;
            self.download_ns += d;
        }
    }

    fn merge(&mut self, o: &PhaseSums) {
        self.timed += o.timed;
        self.upload_ns += o.upload_ns;
        self.server_ns += o.server_ns;
        self.downloads += o.downloads;
        self.download_ns += o.download_ns;
    }

    fn summary(&self) -> PhaseSummary {
        let mean = |sum: u64, n: u64| {
            if n == 0 {
                0.0
            } else {
                sum as f64 / n as f64 / 1e3
            }
        };
        PhaseSummary {
            requests: self.timed,
            upload_us: self.upload_ns as f64 / 1e3,
            upload_mean_us: mean(self.upload_ns, self.timed),
            server_us: self.server_ns as f64 / 1e3,
            server_mean_us: mean(self.server_ns, self.timed),
            downloads: self.downloads,
            download_us: self.download_ns as f64 / 1e3,
            download_mean_us: mean(self.download_ns, self.downloads),
        }
    }
}

/// Where answered requests' time went, phase by phase ([`RequestPhases`]): sums and means, in
/// microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PhaseSummary {
    /// Answered requests timed phase by phase (every answered request whose timestamps can all be
    /// right).
    pub requests: u64,
    /// Their uploads (first to last request byte), summed.
    pub upload_us: f64,
    /// Their mean upload.
    pub upload_mean_us: f64,
    /// Their server times (last request byte to first response byte), summed.
    pub server_us: f64,
    /// Their mean server time.
    pub server_mean_us: f64,
    /// Of them, those whose download is timed: their response's end is in the capture.
    pub downloads: u64,
    /// Those downloads (first to last response byte), summed.
    pub download_us: f64,
    /// Their mean download.
    pub download_mean_us: f64,
}

/// What the OK and EOF packets that ended a group's responses said (pt-query-digest's
/// `No_index_used`, `No_good_index_used`, `Warning_count`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StatusCounts {
    /// Responses flagged `SERVER_QUERY_NO_INDEX_USED` (a table read without an index).
    pub no_index_used: u64,
    /// Responses flagged `SERVER_QUERY_NO_GOOD_INDEX_USED`.
    pub no_good_index_used: u64,
    /// Responses with at least one warning.
    pub with_warnings: u64,
    /// Their warnings, summed.
    pub warnings: u64,
}

impl StatusCounts {
    #[inline]
    fn count(&mut self, st: pcapsleuth_mysql::ServerStatus) {
        self.no_index_used += u64::from(st.no_index_used());
        self.no_good_index_used += u64::from(st.no_good_index_used());
        self.with_warnings += u64::from(st.warnings > 0);
        self.warnings += u64::from(st.warnings);
    }

    fn merge(&mut self, o: &StatusCounts) {
        self.no_index_used += o.no_index_used;
        self.no_good_index_used += o.no_good_index_used;
        self.with_warnings += o.with_warnings;
        self.warnings += o.warnings;
    }
}

/// Adds `n` error responses of `code` to `codes`, kept in code order.
fn note_code(codes: &mut Vec<(u16, u64)>, code: u16, n: u64) {
    match codes.binary_search_by_key(&code, |&(c, _)| c) {
        Ok(i) => codes[i].1 += n,
        Err(i) => codes.insert(i, (code, n)),
    }
}

/// A 64-bit hash of a statement group's key (its command byte, then its fingerprint) that is the same
/// in every process (FNV-1a, then MurmurHash3's finaliser to spread it over the 64 bits): what decides which statement groups are kept one by one
/// ([`STATEMENT_GROUPS_KEPT`]), and, from the highest kept, about how many there were.
pub(crate) fn fingerprint_hash(key: &StatementKey) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in std::iter::once(key.command).chain(key.fingerprint.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ h >> 33
}

/// Statement groups by command and fingerprint, at most [`STATEMENT_GROUPS_KEPT`] one by one once finished (twice
/// that while counting, so that folding is done once per that many new groups), and the rest folded
/// into one group.
#[derive(Debug, Clone, PartialEq)]
struct Statements {
    groups: HashMap<StatementKey, StatementAgg, FlowBuildHasher>,
    /// The groups folded, counted as one; `None` while none was.
    other: Option<Box<StatementAgg>>,
    /// How many groups are kept one by one ([`STATEMENT_GROUPS_KEPT`] unless told otherwise).
    keep: usize,
}

impl Default for Statements {
    fn default() -> Self {
        Statements {
            groups: HashMap::default(),
            other: None,
            keep: STATEMENT_GROUPS_KEPT,
        }
    }
}

/// What a statement group gathers: the requests of one command with one fingerprint. A prepare and
/// the executions of the statement it prepared are apart (their times have nothing in common), as
/// are the same text sent as `COM_QUERY` and prepared.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct StatementKey {
    /// The command byte ([`Command::byte`]).
    pub(crate) command: u8,
    /// The fingerprint ([`StatementFingerprinter`]).
    pub(crate) fingerprint: String,
}

impl Statements {
    /// Adds the group `s` of `key`.
    fn add(&mut self, key: StatementKey, s: StatementAgg) {
        match self.groups.get_mut(&key) {
            None => {
                self.groups.insert(key, s);
            }
            Some(agg) => agg.merge(s),
        }
    }

    /// Adds every group of `o`.
    fn merge(&mut self, o: Statements) {
        for (fp, s) in o.groups {
            self.add(fp, s);
        }
        if let Some(other) = o.other {
            self.fold_in(*other);
        }
        self.keep = self.keep.min(o.keep);
        self.bound_loosely();
    }

    /// Folds down to the groups kept once there are twice as many: folding is then done once per that
    /// many new groups.
    fn bound_loosely(&mut self) {
        if self.groups.len() > self.keep.saturating_mul(2) {
            self.bound();
        }
    }

    fn fold_in(&mut self, s: StatementAgg) {
        match &mut self.other {
            Some(other) => other.merge(s),
            None => self.other = Some(Box::new(s)),
        }
    }

    /// Folds all but the `keep` groups whose keys hash lowest (ties, which only equal hashes of
    /// different keys make, by key). A group that is folded has `keep` groups of lower
    /// hashes beside it, so it is not among the lowest of the whole capture either: folding early folds
    /// only groups the end would fold.
    fn bound(&mut self) {
        let keep = self.keep;
        if self.groups.len() <= keep {
            return;
        }
        let mut by_hash: Vec<(u64, StatementKey)> = self
            .groups
            .keys()
            .map(|k| (fingerprint_hash(k), k.clone()))
            .collect();
        by_hash.select_nth_unstable(keep);
        for (_, fp) in &by_hash[keep..] {
            if let Some(s) = self.groups.remove(fp) {
                self.fold_in(s);
            }
        }
    }
}

/// The statement groups counted by one [`MysqlStatistics`] and not yet added to its aggregate,
/// numbered, so that a statement whose fingerprint starts with a remembered head of the
/// fingerprinter ([`pcapsleuth_mysql::Fingerprinter::fingerprint_parts`]) finds its group by
/// comparing what follows the head (often one byte, `?`), without hashing the whole fingerprint.
/// Added to the aggregate by fingerprint (so the same as counting into it directly) before it is
/// read ([`MysqlStatistics::merge`], [`MysqlStatistics::finish`]).
#[derive(Default)]
struct Groups {
    /// Group numbers by command and fingerprint: the command byte as the key's first character, then
    /// the fingerprint ([`whole`]), so that a key is looked up by a `&str` built in a reused buffer.
    numbers: HashMap<String, u32, FlowBuildHasher>,
    groups: Vec<StatementAgg>,
    /// By head id: up to [`Groups::PER_HEAD`] groups of the fingerprints that start with that head.
    by_head: Vec<Vec<HeadGroup>>,
    /// A whole key, put together from its parts.
    whole: String,
}

/// A group remembered by its fingerprint's head: the fingerprint after the head's output, the command
/// byte, the group's number.
type HeadGroup = (Box<[u8]>, u8, u32);

impl Groups {
    /// Groups remembered per head: a head with more costs a map lookup for the others, as without
    /// heads.
    const PER_HEAD: usize = 4;

    /// The number of the group of command byte `command` and the fingerprint in `parts` (see
    /// [`StatementFingerprinter::fingerprint_parts`]), if it has one.
    #[inline(always)]
    fn find(&mut self, command: u8, parts: (Option<(usize, &str)>, &str)) -> Option<u32> {
        if let (Some((id, _)), rest) = parts {
            let rest = rest.as_bytes();
            for (r, c, n) in self.by_head.get(id).map_or(&[][..], |g| &g[..]) {
                if *c == command && Fingerprinter::same_rest(r, rest) {
                    return Some(*n);
                }
            }
        }
        self.find_by_fingerprint(command, parts)
    }

    #[inline(never)]
    fn find_by_fingerprint(
        &mut self,
        command: u8,
        parts: (Option<(usize, &str)>, &str),
    ) -> Option<u32> {
        let n = *self.numbers.get(whole(&mut self.whole, command, parts))?;
        self.remember(command, parts, n);
        Some(n)
    }

    /// Adds `agg`, the new group of `command` and the fingerprint in `parts`; its number.
    #[inline(never)]
    fn insert(
        &mut self,
        command: u8,
        parts: (Option<(usize, &str)>, &str),
        agg: StatementAgg,
    ) -> u32 {
        // Fewer groups than requests, which are counted in `u64`s; never near `u32::MAX` in memory.
        let n = self.groups.len() as u32;
        self.groups.push(agg);
        let key = whole(&mut self.whole, command, parts).to_string();
        self.numbers.insert(key, n);
        self.remember(command, parts, n);
        n
    }

    fn remember(&mut self, command: u8, parts: (Option<(usize, &str)>, &str), n: u32) {
        let (Some((id, _)), rest) = parts else {
            return;
        };
        if self.by_head.len() <= id {
            self.by_head.resize_with(id + 1, Vec::new);
        }
        if let Some(g) = self
            .by_head
            .get_mut(id)
            .filter(|g| g.len() < Self::PER_HEAD)
        {
            g.push((rest.as_bytes().into(), command, n));
        }
    }

    #[inline(always)]
    fn group(&mut self, n: u32) -> Option<&mut StatementAgg> {
        self.groups.get_mut(n as usize)
    }

    /// Adds every group to `statements`, and forgets them.
    fn flush(&mut self, statements: &mut Statements) {
        self.by_head.clear();
        for (key, n) in self.numbers.drain() {
            let mut chars = key.chars();
            // The first character is the command byte (`whole`): below 256.
            let command = chars.next().map_or(0, |c| u8::try_from(c).unwrap_or(0));
            let key = StatementKey {
                command,
                fingerprint: chars.as_str().to_string(),
            };
            if let Some(agg) = self.groups.get_mut(n as usize) {
                statements.add(key, std::mem::take(agg));
            }
        }
        self.groups.clear();
        statements.bound_loosely();
    }
}

/// The whole key of `command` and the fingerprint in `parts`
/// ([`StatementFingerprinter::fingerprint_parts`]), put together in `buf`: the command byte as one
/// character, then the fingerprint.
fn whole<'a>(buf: &'a mut String, command: u8, parts: (Option<(usize, &str)>, &str)) -> &'a str {
    buf.clear();
    buf.push(char::from(command));
    if let (Some((_, head)), _) = parts {
        buf.push_str(head);
    }
    buf.push_str(parts.1);
    buf
}

/// The MySQL statistics of a run (`pcapsleuth mysql`): requests by command and fate, errors by code
/// with their own response times, statements grouped by fingerprint, requests per second, logins,
/// incidents (closes that cut a request off), replication streams, and requests unanswered at the end.
///
/// Counts the transactions and sessions its [`MysqlFilter`] lets through. Its output is a
/// [`MysqlAggregate`]; [`MysqlAggregate::report`] gives the report.
#[derive(Default)]
pub struct MysqlStatistics {
    filter: MysqlFilter,
    aggregate: MysqlAggregate,
    pending: Pending,
}

/// What a [`MysqlStatistics`] holds beside its aggregate: the fingerprinter, and the counts not yet
/// added to the aggregate (added by [`Pending::flush`] before it is read).
#[derive(Default)]
struct Pending {
    fingerprints: StatementFingerprinter,
    /// Requests of the current second not yet counted into the aggregate's.
    second: PendingSecond,
    /// Statement groups not yet in the aggregate's.
    groups: Groups,
    /// Per-server counts not yet in the aggregate's.
    servers: PendingServers,
}

impl Pending {
    fn flush(&mut self, aggregate: &mut MysqlAggregate) {
        self.second.flush(&mut aggregate.per_second);
        self.groups.flush(&mut aggregate.statements);
        self.servers.flush(&mut aggregate.servers);
    }
}

/// The servers' counts of one [`MysqlStatistics`] not yet added to its aggregate: found by the server
/// of the previous request (consecutive requests nearly always go to one server), else by a short
/// scan, else by a map; added to the aggregate's map (so the same as counting into it) before it is
/// read. A map lookup per request cost 4% of `mysql`.
#[derive(Default)]
struct PendingServers {
    servers: Vec<(Endpoint, ServerAgg)>,
    /// Where each server is in `servers`, once there are more than [`PendingServers::SCANNED`].
    index: HashMap<Endpoint, usize, FlowBuildHasher>,
    last: usize,
}

impl PendingServers {
    /// Up to this many servers are found by comparing endpoints one by one.
    const SCANNED: usize = 8;

    #[inline(always)]
    fn get(&mut self, server: Endpoint) -> &mut ServerAgg {
        if self
            .servers
            .get(self.last)
            .is_some_and(|(e, _)| *e == server)
        {
            return &mut self.servers[self.last].1;
        }
        self.find(server)
    }

    #[inline(never)]
    fn find(&mut self, server: Endpoint) -> &mut ServerAgg {
        let found = if self.servers.len() <= Self::SCANNED {
            self.servers.iter().position(|(e, _)| *e == server)
        } else {
            self.index.get(&server).copied()
        };
        let i = match found {
            Some(i) => i,
            None => {
                self.servers.push((server, ServerAgg::default()));
                let i = self.servers.len() - 1;
                if self.servers.len() > Self::SCANNED {
                    if self.index.is_empty() {
                        for (j, (e, _)) in self.servers.iter().enumerate() {
                            self.index.insert(*e, j);
                        }
                    } else {
                        self.index.insert(server, i);
                    }
                }
                i
            }
        };
        self.last = i;
        &mut self.servers[i].1
    }

    fn flush(&mut self, servers: &mut HashMap<Endpoint, ServerAgg, FlowBuildHasher>) {
        for (e, s) in self.servers.drain(..) {
            servers.entry(e).or_default().merge(&s);
        }
        self.index.clear();
        self.last = 0;
    }
}

/// The requests (and the errors among them) counted since the last request of another second, not yet
/// added to [`MysqlAggregate`]'s requests per second: requests come in time order, so a second's count is
/// looked up once for its run of requests instead of once per request. Added when a request of another
/// second comes, and before the aggregate is read ([`MysqlStatistics::merge`], [`MysqlStatistics::finish`]).
#[derive(Default)]
struct PendingSecond {
    /// The second (since the epoch) of the pending requests, as a bin of the width then; `None` when
    /// there are none.
    sec: Option<(i64, BinWidth)>,
    /// The bin of the last request: requests come in time order.
    memo: BinMemo,
    requests: u64,
    errors: u64,
}

impl PendingSecond {
    #[inline]
    fn count(&mut self, ts_ns: i64, is_err: bool, per_second: &mut PerSecond) {
        // The rows widen only when pending requests are added (`flush`, which empties `sec`): while
        // `sec` holds a bin, it is the memo's, at the rows' width.
        if self.sec.is_none() || !self.memo.holds(ts_ns) {
            self.count_in_another_bin(ts_ns, per_second);
        }
        self.requests += 1;
        self.errors += u64::from(is_err);
    }

    /// [`PendingSecond::count`] of a request outside the pending bin (or the first).
    #[inline(never)]
    fn count_in_another_bin(&mut self, ts_ns: i64, per_second: &mut PerSecond) {
        let w = per_second.width();
        if self.sec != Some((self.memo.bin(w, ts_ns), w)) {
            self.flush(per_second);
            // After the flush, which may have widened the rows.
            let w = per_second.width();
            self.sec = Some((self.memo.bin(w, ts_ns), w));
        }
    }

    fn flush(&mut self, per_second: &mut PerSecond) {
        if let Some((sec, at)) = self.sec.take() {
            per_second.add(sec, at, self.requests, self.errors);
            self.requests = 0;
            self.errors = 0;
        }
    }
}

/// Requests and errors by second since the epoch: in rows of one second, or of a power of two of
/// seconds past [`MYSQL_SECONDS_KEPT`] rows (a long capture; [`crate::widening`]).
#[derive(Debug, Clone, Default, PartialEq)]
struct PerSecond {
    /// The rows' width (the default, before any request: one second).
    width: BinWidth,
    counts: HashMap<i64, (u64, u64), FlowBuildHasher>,
}

/// Rows of requests per second kept (about 40 bytes each): 18 hours of requests every second.
const MYSQL_SECONDS_KEPT: usize = 65_536;

impl PerSecond {
    fn width(&self) -> BinWidth {
        if self.width == BinWidth::default() {
            BinWidth::new(1_000_000_000)
        } else {
            self.width
        }
    }

    /// Adds `requests` and `errors` to row `bin` of width `at`.
    fn add(&mut self, bin: i64, at: BinWidth, requests: u64, errors: u64) {
        let to = self.width().max(at);
        if self.width != to {
            self.widen(to);
        }
        let e = self.counts.entry(at.rebin(bin, to)).or_insert((0, 0));
        e.0 += requests;
        e.1 += errors;
        while widening::over(self.counts.len(), MYSQL_SECONDS_KEPT, self.width) {
            self.widen(self.width.doubled());
        }
    }

    /// The rows in rows of width `to` (as wide as theirs or wider).
    fn widen(&mut self, to: BinWidth) {
        let from = self.width();
        let mut wide: HashMap<i64, (u64, u64), FlowBuildHasher> = HashMap::default();
        for (b, (q, e)) in self.counts.drain() {
            let slot = wide.entry(from.rebin(b, to)).or_insert((0, 0));
            slot.0 += q;
            slot.1 += e;
        }
        self.counts = wide;
        self.width = to;
    }

    fn merge(&mut self, o: PerSecond) {
        let at = o.width();
        for (b, (q, e)) in o.counts {
            self.add(b, at, q, e);
        }
    }
}

impl MysqlStatistics {
    /// Statistics of the transactions `filter` lets through.
    pub fn new(filter: MysqlFilter) -> Self {
        MysqlStatistics {
            filter,
            ..MysqlStatistics::default()
        }
    }

    /// Keeps `n` statement groups one by one instead of [`STATEMENT_GROUPS_KEPT`] (the others are
    /// folded into `other_statements`). Every instance of a run must be told the same.
    pub fn keeping_statement_groups(mut self, n: usize) -> Self {
        self.aggregate.statements.keep = n;
        self
    }
}

/// A login seen from the client's first SYN: the SYN, and the time from it to the answer to the login.
pub(crate) fn login_from_syn(
    conn: &ConnectionView<'_>,
    t: &TransactionView<'_>,
) -> Option<(FrameRef, u64)> {
    if t.transaction.command != Command::Connect {
        return None;
    }
    let syn = conn.tcp().first_syn()?;
    // Timestamps that cannot both be right (one outside the capture's body) time nothing.
    let login = plausible_response_time(syn.ts.0, t.transaction.last_response_ts_ns? as i64)?;
    Some((syn, login))
}

impl Analysis for MysqlStatistics {
    type PerConnection = ();
    type Output = MysqlAggregate;

    fn transaction(&mut self, _: &mut (), conn: &ConnectionView<'_>, view: &TransactionView<'_>) {
        let filter = &self.filter;
        if !filter.connection(view.client, view.server) {
            return;
        }
        let t = view.transaction;
        if let Some((syn, login)) = login_from_syn(conn, view) {
            if filter.transaction(t, None) {
                let tcp = conn.tcp();
                self.aggregate.connect.add(
                    tcp.connect_ns(),
                    tcp.first_data(conn.client_side().other())
                        .and_then(|g| plausible_response_time(syn.ts.0, g.ts.0)),
                    Some(login),
                );
            }
        } else if t.command == Command::Connect && matches!(t.outcome, Outcome::Encrypted) {
            // A login that went on in TLS, not decrypted: its answer cannot be read, the SYN-ACK and
            // the greeting can.
            let tcp = conn.tcp();
            if let (Some(syn), true) = (tcp.first_syn(), filter.transaction(t, None)) {
                self.aggregate.connect.add(
                    tcp.connect_ns(),
                    tcp.first_data(conn.client_side().other())
                        .and_then(|g| plausible_response_time(syn.ts.0, g.ts.0)),
                    None,
                );
            }
        }
        let waited_ns = view.waited_ns();
        if filter.transaction(t, waited_ns) {
            if filter.slower_than_ns.is_some() && t.command != Command::Connect {
                self.aggregate.note_slow(view, waited_ns);
            }
            self.aggregate.add(
                t,
                view.fate(),
                waited_ns,
                (view.client, view.server),
                &mut self.pending,
            );
        }
    }

    fn connection_ended(&mut self, _: (), conn: &ConnectionView<'_>, end: &EndView<'_>) {
        let Some(facts) = end.mysql else {
            return;
        };
        if !self.filter.connection(conn.client(), conn.server()) {
            return;
        }
        let m = &mut self.aggregate;
        if let Some(stream) = &facts.replication {
            m.replication.push((**stream).clone());
        }
        m.sessions += 1;
        let server = m.servers.entry(conn.server()).or_default();
        server.sessions += 1;
        let tcp = conn.tcp();
        let reset = [Side::Lo, Side::Hi]
            .into_iter()
            .any(|side| tcp.first_close(side, CloseFlag::Rst).is_some());
        server.resets += u64::from(reset);
        if let Some(tls) = &facts.tls {
            m.tls
                .session(tls, conn.client(), conn.server(), conn.tcp().first().frame);
            if let Some(ns) = tls.handshake_ns {
                m.connect.tls_handshake.add(ns);
            }
        }
        m.incidents.extend(facts.incidents.iter().cloned());
        if !self.filter.errors_only {
            m.unanswered.extend(facts.unanswered.iter().cloned());
        }
    }

    fn estimated_exchange(
        &mut self,
        _: &mut (),
        _: &ConnectionView<'_>,
        x: &EstimatedExchangeView<'_>,
    ) {
        if self.filter.connection(x.client, x.server) {
            self.aggregate.tls.exchange(x);
        }
    }

    fn merge(&mut self, mut other: Self) {
        self.pending.flush(&mut self.aggregate);
        other.pending.flush(&mut other.aggregate);
        self.aggregate.merge(other.aggregate);
    }

    fn finish(mut self, capture: &CaptureFacts) -> MysqlAggregate {
        self.pending.flush(&mut self.aggregate);
        self.aggregate.lists_slow = self.filter.slower_than_ns.is_some();
        // The groups kept one by one, the same however the work was split.
        self.aggregate.statements.bound();
        let timeline = &capture.timeline;
        self.aggregate.keep_within(timeline);
        // The MySQL span and the waits of requests open at the end run to the body's last packet, not to
        // a timestamp outside it.
        if let (Some(first), Some(last)) = (timeline.body_first, timeline.body_last) {
            self.aggregate.capture_ended(first.0, last.0);
        }
        self.aggregate
    }
}

/// Everything the `mysql` report counts, mergeable in any order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MysqlAggregate {
    /// Connections recognised as MySQL (those the filter keeps).
    pub sessions: u64,
    /// Requests expecting a response (logins aside), by fate.
    requests: RequestCounts,
    /// How long the requests cut off by a close had waited.
    waited: Histogram,
    /// Requests by command byte ([`Command::byte`]; empty until the first): one counter per
    /// possible byte costs less than a map lookup per request.
    commands: Vec<u64>,
    /// By error code (a hash map: looked up once per error response; sorted when reported).
    errors: HashMap<u16, ErrorAgg, FlowBuildHasher>,
    /// Response times of answered requests, split by outcome (all of them: their sum, at report time).
    rt_ok: Histogram,
    rt_err: Histogram,
    /// Times to first byte of every answered request.
    first_byte: Histogram,
    /// The answered requests' phases, summed.
    phases: PhaseSums,
    statements: Statements,
    /// By server endpoint (looked up once per request; a capture holds few servers).
    servers: HashMap<Endpoint, ServerAgg, FlowBuildHasher>,
    per_second: PerSecond,
    incidents: Vec<Incident>,
    connect: ConnectTimes,
    /// MySQL sessions in TLS.
    pub tls: TlsAggregate,
    /// One per replication stream.
    replication: Vec<ReplicationStream>,
    pub(crate) unanswered: Vec<UnansweredRequest>,
    /// With `--slower-than`: the slowest requests it kept, slowest first (at most
    /// [`SLOW_REQUESTS_LISTED`] once bounded).
    slow: Vec<SlowRequest>,
    /// `--slower-than` was given: the report lists `slow`.
    lists_slow: bool,
    /// Requests whose statement text the capture holds only in part.
    statements_cut: u64,
    /// The capture's first and last packet times (ns since the epoch), once the run is over.
    span: Option<(i64, i64)>,
}

/// What one server endpoint was asked and how it answered: the per-server table of `mysql` and
/// `report`.
#[derive(Debug, Clone, Default, PartialEq)]
struct ServerAgg {
    /// MySQL sessions with this server.
    sessions: u64,
    /// Of them, those a RST ended (either side's).
    resets: u64,
    /// Requests expecting a response (logins aside), by fate.
    requests: RequestCounts,
    /// Of them, those answered by an error response.
    errors: u64,
    /// MySQL bytes of the requests and of their responses.
    request_bytes: u64,
    response_bytes: u64,
    /// Response times of the answered requests.
    rt: Histogram,
}

impl ServerAgg {
    fn merge(&mut self, o: &ServerAgg) {
        self.sessions += o.sessions;
        self.resets += o.resets;
        self.requests.merge(&o.requests);
        self.errors += o.errors;
        self.request_bytes += o.request_bytes;
        self.response_bytes += o.response_bytes;
        self.rt.merge(&o.rt);
    }
}

/// Servers in the order of the per-server table: the most requests first, then by endpoint.
fn sort_servers(servers: &mut [(&Endpoint, &ServerAgg)]) {
    servers.sort_by(|a, b| {
        b.1.requests
            .total()
            .cmp(&a.1.requests.total())
            .then(a.0.cmp(b.0))
    });
}

/// What MySQL clients seen from their first SYN waited for before their first command.
#[derive(Debug, Clone, Default, PartialEq)]
struct ConnectTimes {
    syn_ack: Histogram,
    greeting: Histogram,
    login: Histogram,
    tls_handshake: Histogram,
}

impl ConnectTimes {
    fn add(&mut self, syn_ack: Option<u64>, greeting: Option<u64>, login: Option<u64>) {
        if let Some(ns) = syn_ack {
            self.syn_ack.add(ns);
        }
        if let Some(ns) = greeting {
            self.greeting.add(ns);
        }
        if let Some(ns) = login {
            self.login.add(ns);
        }
    }

    fn merge(&mut self, o: &ConnectTimes) {
        self.syn_ack.merge(&o.syn_ack);
        self.greeting.merge(&o.greeting);
        self.login.merge(&o.login);
        self.tls_handshake.merge(&o.tls_handshake);
    }
}

/// Times from the client's first SYN, µs, of the logins the capture saw from their SYN.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectSummary {
    /// To the SYN-ACK the client answered (what `connect()` waited for).
    pub syn_ack_us: RtSummary,
    /// To the server's greeting.
    pub greeting_us: RtSummary,
    /// To the answer to the login (OK or ERR): all the client waited for before its first command (a
    /// login in TLS only when its session was decrypted).
    pub login_us: RtSummary,
    /// TLS handshakes of the sessions in TLS, from the ClientHello to the last Finished.
    pub tls_handshake_us: RtSummary,
}

/// The earliest [`MESSAGE_SAMPLES`] distinct messages of one error code, each with the first request
/// frame it was seen at, in (frame, message) order. A short vector: an error storm looks a message up
/// once per error, and comparing a few lengths is cheaper than walking a tree.
#[derive(Debug, Clone, Default, PartialEq)]
struct MessageSamples(Vec<(u64, String)>);

impl MessageSamples {
    /// Keeps `message`, first seen at `frame`, if it is among the earliest.
    #[inline]
    fn note(&mut self, message: &str, frame: u64) {
        // Later than every kept message (the last: they are sorted), it changes nothing, whether it is one
        // of them or not, and is not copied. An error storm repeats a few messages millions of times in
        // capture order, so this is nearly every call (inlined); the frames differ, so no text is
        // compared.
        let full = self.0.len() >= MESSAGE_SAMPLES;
        if full
            && self
                .0
                .last()
                .is_some_and(|(f, m)| (*f, m.as_str()) < (frame, message))
        {
            return;
        }
        self.keep(message, frame);
    }

    /// [`MessageSamples::note`] of a message that may be among the earliest.
    #[inline(never)]
    fn keep(&mut self, message: &str, frame: u64) {
        if let Some(seen) = self.0.iter_mut().find(|(_, m)| m == message) {
            if frame < seen.0 {
                seen.0 = frame;
                self.0.sort_unstable();
            }
            return;
        }
        self.0.push((frame, message.to_string()));
        self.0.sort_unstable();
        self.0.truncate(MESSAGE_SAMPLES);
    }

    fn merge(&mut self, o: MessageSamples) {
        for (frame, message) in o.0 {
            self.note(&message, frame);
        }
    }

    fn messages(&self) -> Vec<String> {
        self.0.iter().map(|(_, m)| m.clone()).collect()
    }
}

impl MysqlAggregate {
    /// Counts `t`, whose fate is `fate`; `waited_ns` is how long a request cut off by a close waited;
    /// `endpoints` are the client's and the server's (for an error's example).
    fn add(
        &mut self,
        t: &Transaction,
        fate: Fate,
        waited_ns: Option<u64>,
        (client, server): (Endpoint, Endpoint),
        pending: &mut Pending,
    ) {
        let Pending {
            fingerprints,
            second,
            groups,
            servers,
        } = pending;
        self.commands.resize(256, 0);
        if let Some(n) = self.commands.get_mut(usize::from(t.command.byte())) {
            *n += 1;
        }
        let is_err = matches!(t.outcome, Outcome::Err { .. });
        // Binned once for the (up to) three histograms it goes to.
        let rt = response_time_ns(t)
            .filter(|_| fate == Fate::Answered)
            .map(Binned::new);
        // Logins (COM_CONNECT) count among errors (1045 access denied, 1130 host not allowed, ...) but not
        // among requests and their response times.
        let request = fate != Fate::NoResponse && t.command != Command::Connect;
        let mut phases = None;
        if request {
            self.requests.count(fate, t);
            if fate == Fate::Answered {
                phases = RequestPhases::of(t);
                if let Some(p) = phases {
                    self.phases.add(p);
                }
                // A response in one packet has its first byte at its last: its bin is the response
                // time's, worked out already.
                match rt {
                    Some(rt) if t.first_response_ts_ns == t.last_response_ts_ns => {
                        self.first_byte.add_binned(rt);
                    }
                    _ => {
                        if let Some(ns) = first_byte_ns(t) {
                            self.first_byte.add(ns);
                        }
                    }
                }
            }
            let s = servers.get(server);
            s.requests.count(fate, t);
            s.errors += u64::from(is_err);
            s.request_bytes += t.request_bytes;
            s.response_bytes += t.response_bytes;
            if let Some(rt) = rt {
                s.rt.add_binned(rt);
            }
            second.count(t.request_ts_ns as i64, is_err, &mut self.per_second);
            if let Some(rt) = rt {
                if is_err {
                    self.rt_err.add_binned(rt);
                } else {
                    self.rt_ok.add_binned(rt);
                }
            }
            if let Some(w) = waited_ns {
                self.waited.add(w);
            }
        }
        if let Outcome::Err {
            code,
            sql_state,
            message,
        } = &t.outcome
        {
            let agg = self.errors.entry(*code).or_default();
            agg.count += 1;
            if let Some(rt) = rt {
                agg.rt.add_binned(rt);
            }
            agg.note_sql_state(t.request_frame, *sql_state);
            agg.messages.note(message, t.request_frame);
            // In the same entry: one map lookup per error response.
            if agg.wants_example(t.request_frame) {
                agg.note_example(ErrorExample::new(t, client, server));
            }
        }
        if !request {
            return;
        }
        if let Some(sql) = &t.statement {
            // The fingerprint is built in a reused buffer and looked up by its head, or by reference:
            // a `String` is allocated once per statement group, not once per request.
            let (head, rest, cut) = fingerprints.fingerprint_parts(sql);
            self.statements_cut += u64::from(cut);
            let command = t.command.byte();
            let n = match groups.find(command, (head, rest)) {
                Some(n) => n,
                None => {
                    // The groups not yet added are bounded too (the heads remembered stay valid).
                    if groups.groups.len() >= self.statements.keep.max(1) {
                        groups.flush(&mut self.statements);
                    }
                    groups.insert(
                        command,
                        (head, rest),
                        StatementAgg {
                            sample: (t.request_frame, sql.clone()),
                            text_cut: cut,
                            ..StatementAgg::default()
                        },
                    )
                }
            };
            if let Some(agg) = groups.group(n) {
                agg.count(t, sql, (fate, is_err), (rt, phases), waited_ns);
            }
        }
    }

    /// Keeps `view`, a request `--slower-than` matched, among the slowest (`waited_ns`: how long it
    /// waited when a close cut it off).
    fn note_slow(&mut self, view: &TransactionView<'_>, waited_ns: Option<u64>) {
        let t = view.transaction;
        let Some(ns) = view.response_time_ns().or(waited_ns) else {
            return;
        };
        self.slow.push(SlowRequest {
            request_frame: t.request_frame,
            request_time: t.request_ts_ns as f64 / 1e9,
            client: view.client.to_string(),
            server: view.server.to_string(),
            command: t.command.name().to_string(),
            statement: t.statement.as_deref().map(elided),
            fate: view.fate(),
            time_s: ns as f64 / 1e9,
            phases: ListedPhases::of(t),
        });
        if self.slow.len() >= 2 * SLOW_REQUESTS_LISTED {
            bound_slow(&mut self.slow);
        }
    }

    /// Requests that expect a response, by fate.
    pub fn requests(&self) -> RequestCounts {
        self.requests
    }

    /// Requests whose statement text the capture holds only in part.
    pub fn statements_cut(&self) -> u64 {
        self.statements_cut
    }

    /// The run is over: the capture's first and last packet times (ns since the epoch) give the span
    /// and how long the requests still open at the end had waited.
    pub(crate) fn capture_ended(&mut self, first_ns: i64, last_ns: i64) {
        self.span = Some((first_ns, last_ns));
        for u in &mut self.unanswered {
            u.capture_ended(last_ns);
        }
    }

    pub(crate) fn merge(&mut self, o: MysqlAggregate) {
        self.sessions += o.sessions;
        self.requests.merge(&o.requests);
        self.statements_cut += o.statements_cut;
        self.waited.merge(&o.waited);
        self.span = self.span.or(o.span);
        if self.commands.len() < o.commands.len() {
            self.commands.resize(o.commands.len(), 0);
        }
        for (n, m) in self.commands.iter_mut().zip(&o.commands) {
            *n += m;
        }
        for (code, e) in o.errors {
            let agg = self.errors.entry(code).or_default();
            agg.count += e.count;
            agg.rt.merge(&e.rt);
            if let Some((frame, state)) = e.sql_state {
                agg.note_sql_state(frame, state);
            }
            agg.messages.merge(e.messages);
            for x in e.examples {
                agg.note_example(x);
            }
        }
        self.rt_ok.merge(&o.rt_ok);
        self.rt_err.merge(&o.rt_err);
        self.first_byte.merge(&o.first_byte);
        self.phases.merge(&o.phases);
        self.slow.extend(o.slow);
        self.lists_slow |= o.lists_slow;
        bound_slow(&mut self.slow);
        self.statements.merge(o.statements);
        for (server, s) in o.servers {
            self.servers.entry(server).or_default().merge(&s);
        }
        self.per_second.merge(o.per_second);
        self.incidents.extend(o.incidents);
        self.connect.merge(&o.connect);
        self.tls.merge(&o.tls);
        self.replication.extend(o.replication);
        sort_streams(&mut self.replication);
        // Kept in one order whatever the merge order (batches, buckets): frame, then kind.
        self.incidents
            .sort_by(|a, b| (a.frame, &a.kind).cmp(&(b.frame, &b.kind)));
        self.unanswered.extend(o.unanswered);
        self.unanswered.sort_by_key(|u| u.request_frame);
    }

    /// Leaves out the seconds outside the capture's body (the requests still count).
    pub(crate) fn keep_within(&mut self, timeline: &crate::timeline::Timeline) {
        let w = self.per_second.width();
        self.per_second
            .counts
            .retain(|&sec, _| timeline.overlaps_body(w.start(sec), w.start(sec.saturating_add(1))));
    }

    /// Response-time distribution of each statement group kept one by one, with the group's name
    /// ([`statement_label`]).
    pub(crate) fn statement_histograms(&self) -> impl Iterator<Item = (String, &Histogram)> {
        self.statements.groups.iter().map(|(k, s)| {
            let command = Command::from_byte(k.command).name();
            (statement_label(command, &k.fingerprint), &s.rt)
        })
    }

    /// Every statement group kept one by one (see [`STATEMENT_GROUPS_KEPT`]), as the diff of two runs
    /// reads them.
    pub(crate) fn statement_groups(&self) -> impl Iterator<Item = StatementView<'_>> {
        self.statements.groups.iter().map(|(k, s)| StatementView {
            command: Command::from_byte(k.command),
            fingerprint: &k.fingerprint,
            requests: s.requests,
            errors: s.errors,
            error_codes: &s.error_codes,
            rows: s.rows,
            request_bytes: s.request_bytes,
            response_bytes: s.response_bytes,
            rt: &s.rt,
        })
    }

    /// Requests of the statement groups folded into one past the groups kept one by one (see
    /// [`STATEMENT_GROUPS_KEPT`]): the diff of two runs cannot compare them group by group. 0 when
    /// none was folded.
    pub(crate) fn statement_requests_folded(&self) -> u64 {
        self.statements
            .other
            .as_ref()
            .map_or(0, |o| o.requests.total())
    }

    /// Every error code, as the diff of two runs reads them: the code, its count, the report's detail.
    pub(crate) fn error_codes(&self) -> impl Iterator<Item = (u16, &Histogram, ErrorDetail)> {
        self.errors.iter().map(|(code, e)| {
            (
                *code,
                &e.rt,
                ErrorDetail {
                    code: *code,
                    sql_state: e
                        .sql_state
                        .map_or_else(String::new, |(_, state)| state.to_string()),
                    count: e.count,
                    messages: e.messages.messages(),
                    rt_us: e.rt.summary_us(),
                    examples: e.examples.clone(),
                },
            )
        })
    }

    /// Every server endpoint with its row and its response times, the busiest first.
    pub(crate) fn servers_with_rt(&self) -> Vec<(Endpoint, ServerRow, Histogram)> {
        let rows = self.server_rows();
        let mut sorted: Vec<(&Endpoint, &ServerAgg)> = self.servers.iter().collect();
        sort_servers(&mut sorted);
        sorted
            .into_iter()
            .zip(rows)
            .map(|((e, s), row)| (*e, row, s.rt.clone()))
            .collect()
    }

    /// Every server endpoint with its requests, errors, resets and response times.
    pub(crate) fn server_rows(&self) -> Vec<ServerRow> {
        let span_s = self.span.map_or(0.0, |(a, b)| (b - a).max(0) as f64 / 1e9);
        let mut servers: Vec<(&Endpoint, &ServerAgg)> = self.servers.iter().collect();
        sort_servers(&mut servers);
        servers
            .into_iter()
            .map(|(endpoint, s)| ServerRow {
                server: endpoint.to_string(),
                sessions: s.sessions,
                resets: s.resets,
                requests: s.requests.total(),
                requests_per_s: (span_s > 0.0).then(|| s.requests.total() as f64 / span_s),
                answered: s.requests.answered,
                errors: s.errors,
                request_bytes: s.request_bytes,
                response_bytes: s.response_bytes,
                rt_us: s.rt.summary_us(),
            })
            .collect()
    }

    /// The statements beyond the groups kept, counted together, with about how many groups they were.
    fn other_statements(&mut self) -> Option<OtherStatements> {
        self.statements.other.take().map(|o| {
            // About how many groups there were: the highest kept hash is about the kept groups'
            // share of the 64-bit range (k minimum values: within about 1% for 10,000).
            let highest = self
                .statements
                .groups
                .keys()
                .map(fingerprint_hash)
                .max()
                .unwrap_or(u64::MAX)
                .max(1);
            let kept = self.statements.groups.len() as u64;
            let all = ((kept.saturating_sub(1)) as f64 * (u64::MAX as f64 / highest as f64)) as u64;
            OtherStatements {
                groups_about: all.saturating_sub(kept).max(1),
                groups_kept: kept,
                count: o.requests.total(),
                requests: o.requests,
                errors: o.errors,
                error_codes: o
                    .error_codes
                    .iter()
                    .map(|(code, n)| (code.to_string(), *n))
                    .collect(),
                rows: o.rows,
                request_bytes: o.request_bytes,
                response_bytes: o.response_bytes,
                status: o.status,
                total_us: o.rt.sum_ns() as f64 / 1e3,
                rt_us: o.rt.summary_us(),
                phases: o.phases.summary(),
                cut_off_waited_us: o.waited.summary_us(),
            }
        })
    }

    /// The finished report, in an order that does not depend on how the work was split.
    pub fn report(mut self) -> MysqlReport {
        self.incidents
            .sort_by(|a, b| (a.frame, &a.kind).cmp(&(b.frame, &b.kind)));
        sort_streams(&mut self.replication);
        self.statements.bound();
        let other_statements = self.other_statements();
        let servers = self.server_rows();
        let statements = statement_groups(self.statements.groups);
        MysqlReport {
            sessions: self.sessions,
            queries: self.requests.total(),
            requests: self.requests,
            span_s: self.span.map_or(0.0, |(a, b)| (b - a).max(0) as f64 / 1e9),
            cut_off_waited_us: self.waited.summary_us(),
            unanswered: self.unanswered,
            slow_requests: self.lists_slow.then(|| {
                bound_slow(&mut self.slow);
                std::mem::take(&mut self.slow)
            }),
            commands: (0..=u8::MAX)
                .zip(&self.commands)
                .filter(|&(_, &n)| n > 0)
                .fold(BTreeMap::new(), |mut names, (b, n)| {
                    // Unknown command bytes share one name.
                    *names
                        .entry(Command::from_byte(b).name().to_string())
                        .or_insert(0) += n;
                    names
                }),
            errors: self
                .errors
                .iter()
                .map(|(k, e)| (k.to_string(), e.count))
                .collect(),
            error_details: self
                .errors
                .iter()
                .collect::<BTreeMap<_, _>>()
                .into_iter()
                .map(|(code, e)| ErrorDetail {
                    code: *code,
                    sql_state: e
                        .sql_state
                        .map_or_else(String::new, |(_, state)| state.to_string()),
                    count: e.count,
                    messages: e.messages.messages(),
                    rt_us: e.rt.summary_us(),
                    examples: e.examples.clone(),
                })
                .collect(),
            rt_us: {
                let mut all = self.rt_ok.clone();
                all.merge(&self.rt_err);
                all.summary_us()
            },
            rt_ok_us: self.rt_ok.summary_us(),
            rt_error_us: self.rt_err.summary_us(),
            first_byte_us: self.first_byte.summary_us(),
            phases: self.phases.summary(),
            statements,
            other_statements,
            servers,
            per_second: {
                let w = self.per_second.width();
                self.per_second
                    .counts
                    .iter()
                    .collect::<BTreeMap<_, _>>()
                    .into_iter()
                    .map(|(&s, &(q, e))| SecondCounts {
                        second: w.start(s).div_euclid(1_000_000_000),
                        width_s: w.ns() / 1_000_000_000,
                        covered_s: crate::coverage::covered_ns(self.span, w.start(s), w.ns())
                            as f64
                            / 1e9,
                        queries: q,
                        errors: e,
                    })
                    .collect()
            },
            incidents: self.incidents,
            connect: ConnectSummary {
                syn_ack_us: self.connect.syn_ack.summary_us(),
                greeting_us: self.connect.greeting.summary_us(),
                login_us: self.connect.login.summary_us(),
                tls_handshake_us: self.connect.tls_handshake.summary_us(),
            },
            tls: self.tls.report(),
            replication: self.replication,
        }
    }
}

/// The statement groups kept, most total time first.
fn statement_groups(
    groups: HashMap<StatementKey, StatementAgg, FlowBuildHasher>,
) -> Vec<StatementGroup> {
    let mut statements: Vec<StatementGroup> = groups
        .into_iter()
        .map(|(key, s)| StatementGroup {
            command: Command::from_byte(key.command).name().to_string(),
            fingerprint: key.fingerprint,
            sample: s.sample.1,
            count: s.requests.total(),
            requests: s.requests,
            errors: s.errors,
            error_codes: s
                .error_codes
                .iter()
                .map(|(code, n)| (code.to_string(), *n))
                .collect(),
            rows: s.rows,
            request_bytes: s.request_bytes,
            response_bytes: s.response_bytes,
            status: s.status,
            total_us: s.rt.sum_ns() as f64 / 1e3,
            rt_us: s.rt.summary_us(),
            phases: s.phases.summary(),
            cut_off_waited_us: s.waited.summary_us(),
            text_cut: s.text_cut,
        })
        .collect();
    statements.sort_by(|a, b| {
        b.total_us
            .total_cmp(&a.total_us)
            .then(b.count.cmp(&a.count))
            .then(a.fingerprint.cmp(&b.fingerprint))
            .then(a.command.cmp(&b.command))
    });
    statements
}

/// The slow requests `mysql --slower-than` lists (the slowest, in JSON).
pub const SLOW_REQUESTS_LISTED: usize = 100;

/// The slowest [`SLOW_REQUESTS_LISTED`] of `slow`, slowest first (then by request frame and client:
/// one order however the work was split).
fn bound_slow(slow: &mut Vec<SlowRequest>) {
    slow.sort_by(|a, b| {
        b.time_s
            .total_cmp(&a.time_s)
            .then(a.request_frame.cmp(&b.request_frame))
            .then_with(|| a.client.cmp(&b.client))
    });
    slow.truncate(SLOW_REQUESTS_LISTED);
}

/// A request `mysql --slower-than` matched: answered in at least that long, or cut off by a close after
/// waiting that long.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowRequest {
    /// Frame of the request's first packet.
    pub request_frame: u64,
    /// When the request was sent, seconds since the epoch.
    pub request_time: f64,
    /// The client's `ip:port`.
    pub client: String,
    /// The server's `ip:port`.
    pub server: String,
    /// The request's command name.
    pub command: String,
    /// Its statement on one line, cut after 120 characters (with `…`); `None` when it has none.
    pub statement: Option<String>,
    /// What became of it: `answered` or `cut_off`.
    pub fate: Fate,
    /// Its response time (request to last response byte), or for one cut off by a close how long it
    /// waited until the close, seconds.
    pub time_s: f64,
    /// Where that time went: upload, server, download, with the bytes each way; `None` when its
    /// timestamps cannot all be right.
    pub phases: Option<ListedPhases>,
}

/// `pcapsleuth mysql --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MysqlReport {
    /// Connections recognised as MySQL.
    pub sessions: u64,
    /// Requests that expect a response (logins, COM_QUIT and the other commands without one aside):
    /// `requests` says what became of them.
    pub queries: u64,
    /// `queries` by fate: answered, cut off, unanswered, unreadable.
    pub requests: RequestCounts,
    /// The capture's span, first packet to last, seconds.
    pub span_s: f64,
    /// How long the requests cut off by a close had waited, microseconds.
    pub cut_off_waited_us: RtSummary,
    /// Requests still waiting for their response when the capture ended, in request order.
    pub unanswered: Vec<UnansweredRequest>,
    /// With `--slower-than`: the slowest requests it matched (up to [`SLOW_REQUESTS_LISTED`]), slowest
    /// first, each with its phases; absent (in JSON too) without `--slower-than`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_requests: Option<Vec<SlowRequest>>,
    /// Every request by command name ("COM_QUERY", "COM_STMT_EXECUTE", ..., "COM_CONNECT" for logins).
    pub commands: BTreeMap<String, u64>,
    /// Error responses by code.
    pub errors: BTreeMap<String, u64>,
    /// Per error code, in code order: SQLSTATE, count, first messages, response times.
    pub error_details: Vec<ErrorDetail>,
    /// Response times of the answered requests, microseconds.
    pub rt_us: RtSummary,
    /// Response times of the requests answered successfully (OK, resultset, ...), microseconds.
    pub rt_ok_us: RtSummary,
    /// Response times of the requests answered by an error response, microseconds.
    pub rt_error_us: RtSummary,
    /// Times to first byte (request's first byte to the response's first) of every answered request,
    /// those whose response's end is not in the capture included, microseconds.
    pub first_byte_us: RtSummary,
    /// Where the answered requests' time went: upload, server, download.
    pub phases: PhaseSummary,
    /// Statements grouped by command and fingerprint, by total time: every group, unless the capture
    /// held more than [`STATEMENT_GROUPS_KEPT`] (then `other_statements` says what the others were).
    pub statements: Vec<StatementGroup>,
    /// The statement groups beyond the [`STATEMENT_GROUPS_KEPT`] kept one by one, folded into one and
    /// counted exactly; absent (in JSON too) when every group is in `statements`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_statements: Option<OtherStatements>,
    /// Per server endpoint, the busiest (most requests) first: what it was asked and how it answered.
    pub servers: Vec<ServerRow>,
    /// Requests and error responses per second, for every second with requests (by the second each request
    /// was sent), in time order.
    pub per_second: Vec<SecondCounts>,
    /// Connections closed with MySQL work in progress (a close mid-resultset, mid-response, or with a request
    /// unanswered), one per request cut off.
    pub incidents: Vec<Incident>,
    /// Logins seen from the client's first SYN: what the client waited for before its first command.
    pub connect: ConnectSummary,
    /// MySQL sessions in TLS: decrypted or not, versions, suites, and response times estimated from the
    /// records of those not decrypted.
    pub tls: TlsReport,
    /// Replication streams (a replica's binlog dump and what followed); their events and ACKs are not
    /// among the requests and response times above.
    pub replication: Vec<ReplicationStream>,
}

/// The error responses of one error code.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorDetail {
    /// The MySQL error code (1146: `ER_NO_SUCH_TABLE`, 1045: `ER_ACCESS_DENIED_ERROR`, ...).
    pub code: u16,
    /// Its SQLSTATE (`42S02`, ...), from the earliest error response that carried one; empty when none
    /// did.
    pub sql_state: String,
    /// Error responses with this code (to logins too).
    pub count: u64,
    /// The first distinct messages seen (up to 3).
    pub messages: Vec<String>,
    /// Response times of these error responses, microseconds.
    pub rt_us: RtSummary,
    /// The earliest error responses with this code (up to [`ERROR_EXAMPLES`]), by request frame: where
    /// to look in Wireshark.
    pub examples: Vec<ErrorExample>,
}

/// One error response and its request, as an example of its code.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorExample {
    /// Frame of the request's first packet.
    pub request_frame: u64,
    /// Frame of the error response; `None` when it is not known (a response seen only in part).
    pub response_frame: Option<u64>,
    /// When the request was sent, seconds since the epoch.
    pub request_time: f64,
    /// The client's `ip:port`.
    pub client: String,
    /// The server's `ip:port`.
    pub server: String,
    /// The request's command name (`COM_QUERY`, `COM_STMT_EXECUTE`, `COM_CONNECT` for a login, ...).
    pub command: String,
    /// Its statement on one line, cut after 120 characters (with `…`); `None` when it has none.
    pub statement: Option<String>,
    /// The error message.
    pub message: String,
}

impl ErrorExample {
    fn new(t: &Transaction, client: Endpoint, server: Endpoint) -> Self {
        ErrorExample {
            request_frame: t.request_frame,
            response_frame: t.first_response_frame,
            request_time: t.request_ts_ns as f64 / 1e9,
            client: client.to_string(),
            server: server.to_string(),
            command: t.command.name().to_string(),
            statement: t.statement.as_deref().map(elided),
            message: match &t.outcome {
                Outcome::Err { message, .. } => message.clone(),
                _ => String::new(),
            },
        }
    }
}

/// `sql` on one line (runs of white space made one space), cut after [`EXAMPLE_STATEMENT_CHARS`]
/// characters with `…` after.
fn elided(sql: &str) -> String {
    let mut out = String::new();
    for (n, word) in sql.split_whitespace().enumerate() {
        if n > 0 {
            out.push(' ');
        }
        out.push_str(word);
        if out.chars().count() > EXAMPLE_STATEMENT_CHARS {
            break;
        }
    }
    if out.chars().count() > EXAMPLE_STATEMENT_CHARS {
        out = out.chars().take(EXAMPLE_STATEMENT_CHARS).collect();
        out.push('…');
    }
    out
}

/// The requests of one command with one statement fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatementGroup {
    /// The requests' command (`COM_QUERY`, `COM_STMT_PREPARE`, `COM_STMT_EXECUTE`, ...): a prepare and
    /// the executions of what it prepared are groups apart.
    pub command: String,
    /// The statement normalised ([`pcapsleuth_mysql::fingerprint`]): lower-cased, comments dropped,
    /// literals replaced by `?`, `IN (...)` and `VALUES` lists folded to `(?)`.
    pub fingerprint: String,
    /// The first statement of the group, as sent.
    pub sample: String,
    /// Requests of the group that expect a response; `answered`, `cut_off`, `unanswered` and
    /// `unreadable` say what became of them.
    pub count: u64,
    /// What became of them: `answered`, `cut_off`, `unanswered`, `unreadable` (flattened in JSON).
    #[serde(flatten)]
    pub requests: RequestCounts,
    /// Of them, those answered by an error response.
    pub errors: u64,
    /// Those error responses by code (`"1146"` -> count).
    pub error_codes: BTreeMap<String, u64>,
    /// Rows of the resultsets returned to them.
    pub rows: u64,
    /// MySQL bytes of the requests (packets with their headers).
    pub request_bytes: u64,
    /// MySQL bytes of their responses.
    pub response_bytes: u64,
    /// What the OK and EOF packets that ended the responses said: indexes not used, warnings
    /// (flattened in JSON: `no_index_used`, `no_good_index_used`, `with_warnings`, `warnings`).
    #[serde(flatten)]
    pub status: StatusCounts,
    /// Sum and distribution of the response times of the answered requests.
    pub total_us: f64,
    /// Response times of the answered requests, microseconds.
    pub rt_us: RtSummary,
    /// Where the answered requests' time went: upload, server, download, summed and averaged.
    pub phases: PhaseSummary,
    /// How long the requests cut off by a close had waited.
    pub cut_off_waited_us: RtSummary,
    /// The capture holds these statements only in part (snap length, loss): the fingerprint is of their
    /// start and ends in [`CUT_MARK`].
    pub text_cut: bool,
}

/// The statement groups a report does not list one by one, counted as one: the requests of the groups
/// beyond the [`STATEMENT_GROUPS_KEPT`] kept, which are those whose fingerprints hash lowest (not the
/// groups with the most time: a group is kept or not by its fingerprint alone, so that the report is the
/// same however the capture was split and read).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OtherStatements {
    /// About how many groups are folded here: estimated from the hashes of the groups kept (k minimum
    /// values), within about 1%.
    pub groups_about: u64,
    /// The groups listed one by one in `statements`.
    pub groups_kept: u64,
    /// Requests of these groups that expect a response (`answered`, `cut_off`, `unanswered`,
    /// `unreadable` say what became of them).
    pub count: u64,
    /// What became of them (flattened in JSON).
    #[serde(flatten)]
    pub requests: RequestCounts,
    /// Of them, those answered by an error response.
    pub errors: u64,
    /// Those error responses by code (`"1146"` -> count).
    pub error_codes: BTreeMap<String, u64>,
    /// Rows of the resultsets returned to them.
    pub rows: u64,
    /// MySQL bytes of the requests (packets with their headers).
    pub request_bytes: u64,
    /// MySQL bytes of their responses.
    pub response_bytes: u64,
    /// What the OK and EOF packets that ended the responses said (flattened in JSON, as a group's).
    #[serde(flatten)]
    pub status: StatusCounts,
    /// Sum of the response times of the answered requests, microseconds.
    pub total_us: f64,
    /// Response times of the answered requests, microseconds.
    pub rt_us: RtSummary,
    /// Where the answered requests' time went (as a group's).
    pub phases: PhaseSummary,
    /// How long the requests cut off by a close had waited.
    pub cut_off_waited_us: RtSummary,
}

/// A statement group's name in text where only one string fits: its fingerprint, after its command
/// (`COM_QUERY`, `COM_STMT_EXECUTE`, ...) in brackets when that is not `COM_QUERY`:
/// `[execute] select c from sbtest3 where id=?`.
///
/// ```
/// use pcapsleuth_analysis::statement_label;
/// assert_eq!(statement_label("COM_QUERY", "begin"), "begin");
/// assert_eq!(statement_label("COM_STMT_PREPARE", "select ?"), "[prepare] select ?");
/// ```
pub fn statement_label(command: &str, fingerprint: &str) -> String {
    if command == Command::Query.name() {
        return fingerprint.to_string();
    }
    format!("[{}] {fingerprint}", command_word(command))
}

/// A command's short name: `COM_STMT_EXECUTE` -> `execute`, `COM_INIT_DB` -> `init_db`.
pub fn command_word(command: &str) -> String {
    command
        .strip_prefix("COM_STMT_")
        .or_else(|| command.strip_prefix("COM_"))
        .unwrap_or(command)
        .to_ascii_lowercase()
}

/// One statement group as the diff of two runs reads it.
pub(crate) struct StatementView<'a> {
    pub(crate) command: Command,
    pub(crate) fingerprint: &'a str,
    pub(crate) requests: RequestCounts,
    pub(crate) errors: u64,
    pub(crate) error_codes: &'a [(u16, u64)],
    pub(crate) rows: u64,
    pub(crate) request_bytes: u64,
    pub(crate) response_bytes: u64,
    pub(crate) rt: &'a Histogram,
}

/// What one server endpoint was asked and how it answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerRow {
    /// The server's `ip:port` (IPv6 as `[addr]:port`).
    pub server: String,
    /// MySQL sessions with it.
    pub sessions: u64,
    /// Of them, those a RST ended (sent by either side).
    pub resets: u64,
    /// Requests sent to it that expect a response (logins aside).
    pub requests: u64,
    /// `requests` over the capture's span; `None` when the span is 0.
    pub requests_per_s: Option<f64>,
    /// Of them, those answered (the response times are theirs).
    pub answered: u64,
    /// Of them, those answered by an error response.
    pub errors: u64,
    /// MySQL bytes of the requests.
    pub request_bytes: u64,
    /// MySQL bytes of the responses.
    pub response_bytes: u64,
    /// Response times of the answered requests, µs.
    pub rt_us: RtSummary,
}

/// Requests sent in one second.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SecondCounts {
    /// Seconds since the epoch.
    pub second: i64,
    /// Seconds the row spans from `second`: 1, or a power of two when a long capture would need more
    /// than 65,536 rows (memory does not grow with the capture's duration).
    pub width_s: i64,
    /// Seconds of it the capture covers (less than `width_s` at the capture's ends): the counts are what
    /// was seen in that part, not scaled (see [`crate::coverage`]).
    pub covered_s: f64,
    /// Requests sent in that second that expect a response (logins aside).
    pub queries: u64,
    /// Of them, those answered by an error response.
    pub errors: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Noting messages in any two parts and merging them keeps what the definition says: the earliest
        /// few distinct messages, each at the first frame it was seen at, in (frame, message) order.
        #[test]
        fn message_samples_keep_the_earliest(
            seen in proptest::collection::vec((0u8..6, 0u64..40), 0..40),
            cut in 0usize..40,
        ) {
            let seen: Vec<(String, u64)> =
                seen.into_iter().map(|(m, f)| (format!("Table 't{m}' doesn't exist"), f)).collect();
            let cut = cut.min(seen.len());
            let (mut a, mut b) = (MessageSamples::default(), MessageSamples::default());
            for (m, f) in &seen[..cut] {
                a.note(m, *f);
            }
            for (m, f) in &seen[cut..] {
                b.note(m, *f);
            }
            a.merge(b);
            let mut first: BTreeMap<&str, u64> = BTreeMap::new();
            for (m, f) in &seen {
                let slot = first.entry(m.as_str()).or_insert(*f);
                *slot = (*slot).min(*f);
            }
            let mut want: Vec<(u64, String)> = first.into_iter().map(|(m, f)| (f, m.to_string())).collect();
            want.sort();
            want.truncate(MESSAGE_SAMPLES);
            prop_assert_eq!(a.0, want);
        }

        /// Error examples noted in any two parts (each request frame once) and merged are the earliest
        /// few by request frame, in that order.
        #[test]
        fn error_examples_keep_the_earliest(
            frames in proptest::collection::btree_set(0u64..1000, 0..30),
            cut in 0usize..30,
            order in any::<u64>(),
        ) {
            let mut seen: Vec<u64> = frames.iter().copied().collect();
            seen.sort_by_key(|f| f.wrapping_mul(order | 1) % 1009);
            let example = |f: u64| ErrorExample {
                request_frame: f,
                response_frame: Some(f + 1),
                request_time: 0.0,
                client: String::new(),
                server: String::new(),
                command: "COM_QUERY".into(),
                statement: None,
                message: String::new(),
            };
            let cut = cut.min(seen.len());
            let (mut a, mut b) = (ErrorAgg::default(), ErrorAgg::default());
            for &f in &seen[..cut] {
                if a.wants_example(f) {
                    a.note_example(example(f));
                }
            }
            for &f in &seen[cut..] {
                b.note_example(example(f));
            }
            for x in b.examples {
                a.note_example(x);
            }
            let got: Vec<u64> = a.examples.iter().map(|x| x.request_frame).collect();
            let want: Vec<u64> = frames.into_iter().take(ERROR_EXAMPLES).collect();
            prop_assert_eq!(got, want);
        }
    }

    /// Statements find the group of their whole fingerprint (cut or not), whether by their head or
    /// by the map: a head with more than `PER_HEAD` groups, statements with no head, cut ones.
    #[test]
    fn groups_are_those_of_the_whole_fingerprints() {
        let mut f = StatementFingerprinter::default();
        let mut groups = Groups::default();
        let mut numbers: HashMap<String, u32> = HashMap::new();
        let tails = [
            "1",
            "2 LIMIT 1",
            "3 AND k=4",
            "5 OR k IN (1, 2)",
            "6 ORDER BY c",
            "7 /",
            "8 /* gap: 12 bytes */",
            "9 FOR UPDATE",
            "'x'",
            " /* gap: 3 bytes */",
        ];
        for round in 0..3 {
            for (k, tail) in tails.iter().enumerate() {
                for sql in [
                    format!("SELECT c FROM sbtest{} WHERE id={tail}", k % 2),
                    format!("select {tail}"),
                ] {
                    if round == 1 {
                        // The whole fingerprint first: it may remember the head.
                        f.fingerprint(&sql);
                    }
                    let whole = f.fingerprint(&sql).0.to_string();
                    let (head, rest, _) = f.fingerprint_parts(&sql);
                    let n = match groups.find(3, (head, rest)) {
                        Some(n) => n,
                        None => groups.insert(3, (head, rest), StatementAgg::default()),
                    };
                    assert_eq!(*numbers.entry(whole).or_insert(n), n, "{sql:?}");
                }
            }
        }
        let distinct: std::collections::BTreeSet<u32> = numbers.values().copied().collect();
        assert_eq!(distinct.len(), numbers.len());
        assert_eq!(groups.groups.len(), numbers.len());
        assert!(groups.by_head.iter().any(|g| g.len() == Groups::PER_HEAD));
    }

    #[test]
    fn statements_are_elided_on_one_line() {
        assert_eq!(elided("select  *\n  from t"), "select * from t");
        let long = format!("select {} from t", "c, ".repeat(100));
        let cut = elided(&long);
        assert_eq!(cut.chars().count(), EXAMPLE_STATEMENT_CHARS + 1);
        assert!(
            cut.ends_with('…') && cut.starts_with("select c, c,"),
            "{cut}"
        );
    }
}
