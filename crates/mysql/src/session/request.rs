//! The request queue's element: a request waiting for (or receiving) its response ([`Pending`]),
//! what the server's answer to it should look like next ([`Stage`]), and the small readers of
//! response packets that become a transaction's outcome.

use super::*;
use crate::ServerStatus;

/// How the server is expected to answer, given what it sent so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// No response will come.
    NoResponse,
    /// One OK/ERR/EOF.
    Simple,
    /// One packet of any content (COM_STATISTICS).
    AnyOne,
    /// OK, ERR, LOCAL INFILE request or the column count of a resultset.
    First,
    /// Column definitions still to come.
    ColumnDefs { left: u64 },
    /// After the definitions: metadata EOF (classic) or first row/terminator.
    AfterDefs,
    /// Rows until EOF/OK terminator or ERR.
    Rows,
    /// LOCAL INFILE requested: the client is sending the file.
    InfileData,
    /// The client's empty packet ended the file: OK/ERR follows.
    InfileResult,
    /// COM_STMT_PREPARE: COM_STMT_PREPARE_OK or ERR.
    PrepareFirst,
    /// Parameter then column definitions, each block followed by EOF in classic mode.
    PrepareDefs { params: u16, columns: u16 },
    /// COM_FIELD_LIST: definitions until EOF.
    FieldList,
    /// COM_BINLOG_DUMP(_GTID): events until EOF or ERR.
    Binlog,
    /// Authentication exchange (connection phase or COM_CHANGE_USER).
    Auth,
    /// Server framing was lost during this response.
    Lost,
}

pub(super) struct Pending {
    pub(super) command: Command,
    pub(super) statement: Option<String>,
    pub(super) statement_id: Option<u32>,
    pub(super) request: Meta,
    /// Where the request's last byte seen so far came (its command packet's end, then each LOCAL
    /// INFILE or authentication packet's it sent after it).
    pub(super) last_request: Meta,
    pub(super) first_response: Option<Meta>,
    pub(super) last_response: Option<Meta>,
    pub(super) rows: u64,
    /// The status flags and warnings of the terminators seen so far (see
    /// [`Transaction::server_status`]).
    pub(super) server_status: Option<ServerStatus>,
    pub(super) response_bytes: u64,
    pub(super) request_bytes: u64,
    pub(super) gap_bytes: u64,
    pub(super) stage: Stage,
    pub(super) next_seq: u8,
    pub(super) saw_resultset: bool,
    pub(super) saw_infile: bool,
    pub(super) file_bytes: u64,
    /// Server bytes of this response may be in a gap.
    pub(super) lost: bool,
    /// Bytes of a server gap that ended the framing while nothing of this response had come: the
    /// response may have begun in it, or may begin after it (see [`starts_response`]).
    pub(super) gap_before_response: Option<u64>,
    /// COM_STMT_EXECUTE asked for a cursor.
    pub(super) cursor: bool,
    /// COM_STMT_PREPARE_OK's (statement id, params, columns), while definitions follow.
    pub(super) prepared: Option<(u32, u16, u16)>,
    /// COM_INIT_DB / COM_CHANGE_USER: what to record in the session info on OK.
    pub(super) new_schema: Option<String>,
    pub(super) new_user: Option<String>,
    /// COM_STMT_EXECUTE: its bytes after the statement id (see [`Transaction::execute`]).
    pub(super) execute: ExecuteBytes,
}

impl Pending {
    pub(super) fn new(command: Command, request: Meta, stage: Stage) -> Self {
        Pending {
            command,
            statement: None,
            statement_id: None,
            request,
            last_request: request,
            first_response: None,
            last_response: None,
            rows: 0,
            server_status: None,
            response_bytes: 0,
            request_bytes: 0,
            gap_bytes: 0,
            stage,
            next_seq: 1,
            saw_resultset: false,
            saw_infile: false,
            file_bytes: 0,
            lost: false,
            gap_before_response: None,
            cursor: false,
            prepared: None,
            new_schema: None,
            new_user: None,
            execute: ExecuteBytes::default(),
        }
    }

    /// Makes this (recycled) request a new one, as [`Pending::new`] would, written in place.
    pub(super) fn reset(&mut self, command: Command, request: Meta, stage: Stage) {
        // Every field is named: one added to the request cannot be forgotten here.
        let Pending {
            command: c,
            statement,
            statement_id,
            request: r,
            last_request,
            first_response,
            last_response,
            rows,
            server_status,
            response_bytes,
            request_bytes,
            gap_bytes,
            stage: st,
            next_seq,
            saw_resultset,
            saw_infile,
            file_bytes,
            lost,
            gap_before_response,
            cursor,
            prepared,
            new_schema,
            new_user,
            execute,
        } = self;
        *c = command;
        *statement = None;
        *statement_id = None;
        *r = request;
        *last_request = request;
        *first_response = None;
        *last_response = None;
        *rows = 0;
        *server_status = None;
        *response_bytes = 0;
        *request_bytes = 0;
        *gap_bytes = 0;
        *st = stage;
        *next_seq = 1;
        *saw_resultset = false;
        *saw_infile = false;
        *file_bytes = 0;
        *lost = false;
        *gap_before_response = None;
        *cursor = false;
        *prepared = None;
        *new_schema = None;
        *new_user = None;
        execute.clear();
    }

    /// Writes this request's transaction, ended by `outcome`, over `t` (as [`Pending::to_transaction`]
    /// would make it, the statement taken from the request). The strings of the transaction `t` held,
    /// one the caller is done with, go to `spares`.
    #[inline(always)]
    pub(super) fn fill(&mut self, t: &mut Transaction, outcome: Outcome, spares: &mut TextSpares) {
        let Transaction {
            command,
            statement,
            statement_id,
            request_ts_ns,
            request_frame,
            last_request_ts_ns,
            last_request_frame,
            first_response_ts_ns,
            first_response_frame,
            last_response_ts_ns,
            last_response_frame,
            rows,
            server_status,
            response_bytes,
            request_bytes,
            gap_bytes,
            outcome: o,
            execute,
        } = t;
        *command = self.command;
        // The old texts are moved, not dropped: a free saved now and an allocation later.
        if let Some(old) = std::mem::replace(statement, self.statement.take()) {
            spares.statements.keep(old);
        }
        if let Outcome::Err { message, .. } = o {
            spares.messages.keep(std::mem::take(message));
        }
        *statement_id = self.statement_id;
        *request_ts_ns = self.request.ts_ns;
        *request_frame = self.request.frame;
        *last_request_ts_ns = self.last_request.ts_ns;
        *last_request_frame = self.last_request.frame;
        *first_response_ts_ns = self.first_response.map(|m| m.ts_ns);
        *first_response_frame = self.first_response.map(|m| m.frame);
        *last_response_ts_ns = self.last_response.map(|m| m.ts_ns);
        *last_response_frame = self.last_response.map(|m| m.frame);
        *rows = self.rows;
        *server_status = ended_with(&outcome, self.server_status);
        *response_bytes = self.response_bytes;
        *request_bytes = self.request_bytes;
        *gap_bytes = self.gap_bytes;
        *o = outcome;
        // The bytes move, and the old ones' allocation stays with the request for its next execute.
        std::mem::swap(execute, &mut self.execute);
        self.execute.clear();
    }

    pub(super) fn to_transaction(
        &self,
        statement: Option<String>,
        outcome: Outcome,
    ) -> Transaction {
        Transaction {
            command: self.command,
            statement,
            statement_id: self.statement_id,
            request_ts_ns: self.request.ts_ns,
            request_frame: self.request.frame,
            last_request_ts_ns: self.last_request.ts_ns,
            last_request_frame: self.last_request.frame,
            first_response_ts_ns: self.first_response.map(|m| m.ts_ns),
            first_response_frame: self.first_response.map(|m| m.frame),
            last_response_ts_ns: self.last_response.map(|m| m.ts_ns),
            last_response_frame: self.last_response.map(|m| m.frame),
            rows: self.rows,
            server_status: ended_with(&outcome, self.server_status),
            response_bytes: self.response_bytes,
            request_bytes: self.request_bytes,
            gap_bytes: self.gap_bytes,
            outcome,
            execute: self.execute.clone(),
        }
    }

    /// Notes a terminator's status flags and warnings (`SERVER_MORE_RESULTS_EXISTS` aside): flags
    /// of several resultsets together, the last warning count.
    pub(super) fn note_status(&mut self, flags: u16, warnings: u16) {
        let flags = flags & !crate::wire::status::SERVER_MORE_RESULTS_EXISTS;
        let before = self.server_status.map_or(0, |s| s.flags);
        self.server_status = Some(ServerStatus {
            flags: before | flags,
            warnings,
        });
    }

    pub(super) fn snapshot(&self) -> PendingRequest {
        PendingRequest {
            command: self.command,
            statement: self.statement.clone(),
            request_ts_ns: self.request.ts_ns,
            request_frame: self.request.frame,
            last_request_ts_ns: self.last_request.ts_ns,
            request_bytes: self.request_bytes,
            rows: self.rows,
            response_bytes: self.response_bytes,
            first_response_ts_ns: self.first_response.map(|m| m.ts_ns),
            first_response_frame: self.first_response.map(|m| m.frame),
            last_response_ts_ns: self.last_response.map(|m| m.ts_ns),
            last_response_frame: self.last_response.map(|m| m.frame),
        }
    }
}

/// Wire bytes of a logical packet: payload plus one 4-byte header per physical packet.
pub(super) fn wire_len(len: u64) -> u64 {
    len + 4 * physical_packets(len)
}

/// Physical packets of a logical packet of `len` bytes: one more than its full (0xFFFFFF-byte) ones.
pub(super) fn physical_packets(len: u64) -> u64 {
    // Nearly every packet is one physical packet: no division for those.
    if len < u64::from(wire::MAX_PAYLOAD) {
        return 1;
    }
    len / u64::from(wire::MAX_PAYLOAD) + 1
}

pub(super) fn err_outcome(p: &[u8]) -> Option<Outcome> {
    err_outcome_in(p, &mut TextSpares::default())
}

/// [`err_outcome`], its message written into one of `spares` (see [`Core::spares`]) when there is one.
pub(super) fn err_outcome_in(p: &[u8], spares: &mut TextSpares) -> Option<Outcome> {
    err_outcome_here(p, spares)
}

/// [`err_outcome_in`], inlined where most errors are read (the answer to a command).
#[inline(always)]
pub(super) fn err_outcome_here(p: &[u8], spares: &mut TextSpares) -> Option<Outcome> {
    let e = wire::parse_err(p)?;
    let msg = e
        .message
        .get(..e.message.len().min(MESSAGE_CAP))
        .unwrap_or(&[]);
    // An error storm repeats one SQLSTATE: the last one read is not checked again.
    let sql_state = match <[u8; 5]>::try_from(e.sql_state) {
        Ok(bytes) => match spares.sql_state {
            Some((seen, state)) if seen == bytes => state,
            _ => {
                let state = SqlState::from_wire(&bytes);
                spares.sql_state = Some((bytes, state));
                state
            }
        },
        Err(_) => SqlState::from_wire(e.sql_state),
    };
    Some(Outcome::Err {
        code: e.code,
        sql_state,
        message: wire::text_in(spares.messages.take(), msg),
    })
}

/// The status a response ended with: an OK's own, else the terminators' noted while its resultsets
/// came; none for any other ending.
fn ended_with(outcome: &Outcome, noted: Option<ServerStatus>) -> Option<ServerStatus> {
    match outcome {
        Outcome::Ok {
            status_flags,
            warnings,
            ..
        } => Some(ServerStatus {
            flags: *status_flags,
            warnings: *warnings,
        }),
        Outcome::ResultSet { .. } | Outcome::LocalInfile { .. } | Outcome::Prepared { .. } => noted,
        _ => None,
    }
}

pub(super) fn ok_outcome(ok: OkPacket) -> Outcome {
    Outcome::Ok {
        affected_rows: ok.affected_rows,
        last_insert_id: ok.last_insert_id,
        status_flags: ok.status_flags,
        warnings: ok.warnings,
    }
}

/// Statement text from a packet body, capped, with markers for truncation and gaps, written into
/// `s` (a string of the session's spares, or a new one).
#[inline]
pub(super) fn capped_text(
    s: String,
    text: &[u8],
    total: u64,
    damaged: bool,
    gap_bytes: u64,
) -> String {
    let keep = text.get(..text.len().min(STATEMENT_CAP)).unwrap_or(&[]);
    let s = wire::text_in(s, keep);
    if damaged || total > keep.len() as u64 {
        return marked_text(s, keep.len(), total, damaged, gap_bytes);
    }
    s
}

/// [`capped_text`]'s text `s`, of `kept` bytes, with its marker (apart, and never inlined: the
/// formatting would weigh on every statement's path).
#[cold]
#[inline(never)]
fn marked_text(mut s: String, kept: usize, total: u64, damaged: bool, gap_bytes: u64) -> String {
    if damaged {
        s.push_str(&format!(" /* gap: {gap_bytes} bytes */"));
    } else if total > kept as u64 {
        // Cut at a character boundary might have left a replacement char: fine.
        s.push_str(&format!(" /* truncated: {total} bytes */"));
    }
    s
}

/// How the server's answer to a command begins.
pub(super) fn first_stage(command: Command) -> Stage {
    match command {
        Command::Quit | Command::StmtClose | Command::StmtSendLongData => Stage::NoResponse,
        Command::Query | Command::ProcessInfo | Command::StmtExecute => Stage::First,
        Command::StmtPrepare => Stage::PrepareFirst,
        Command::StmtFetch => Stage::Rows,
        Command::FieldList => Stage::FieldList,
        Command::Statistics => Stage::AnyOne,
        Command::BinlogDump | Command::BinlogDumpGtid => Stage::Binlog,
        Command::ChangeUser => Stage::Auth,
        _ => Stage::Simple,
    }
}

/// After a server gap that fell before any of a request's response, is this packet (sequence id 1)
/// where that response begins, rather than a later packet whose sequence id wrapped around? An ERR
/// (no row nor definition starts with 0xFF) and a resultset's column count (one byte, 1 to 250: too
/// short for a row) can only begin one. Other first packets (an OK, an EOF) could be the 257th packet
/// of a binary resultset, unless the gap is too short to have held 255 packets.
pub(super) fn starts_response(command: Command, p: &[u8], len: u64, gap: u64) -> bool {
    const WRAP_BYTES: u64 = 4 * 255;
    match (p.first(), first_stage(command)) {
        (Some(0xFF), _) => true,
        (Some(&n), Stage::First) if len == 1 && (1..=250).contains(&n) => true,
        // MariaDB's column count, followed by whether the column definitions follow
        // (MARIADB_CLIENT_CACHE_METADATA).
        (Some(&n), Stage::First) if len == 2 && (1..=250).contains(&n) && p.get(1) <= Some(&1) => {
            gap < WRAP_BYTES
        }
        (Some(0x00 | 0xFE), Stage::First | Stage::PrepareFirst | Stage::Simple) => gap < WRAP_BYTES,
        // The server asks for a LOCAL INFILE file (a text row whose first column is NULL starts with
        // 0xFB too, but never with sequence id 1, unless the numbers wrapped in the gap).
        (Some(0xFB), Stage::First) => gap < WRAP_BYTES,
        _ => false,
    }
}
