//! # pcapsleuth-mysql
//!
//! A streaming decoder of the MySQL client/server protocol for offline forensics.
//! It knows nothing about pcap or TCP: the caller hands it the reassembled,
//! in-order payload bytes of each direction of one connection (plus the gaps it
//! could not fill and the FIN/RST it saw), and gets back one [`Transaction`] per
//! client request: which `COM_*` command, its statement text, when it was sent and
//! answered (time and frame), how many rows came back and how it ended.
//!
//! Design constraints that shape the code:
//! * **Untrusted bytes.** Nothing panics or loops on data, and no length field is
//!   trusted for an allocation. Bytes that do not decode are counted in
//!   [`SessionInfo::counters`], never returned as errors.
//! * **Bounded memory.** Resultset rows are counted by walking packet headers and
//!   never buffered; each direction keeps only a packet header and a capped
//!   prefix of each packet (statement text is kept up to [`STATEMENT_CAP`]).
//! * **Chunking invariance.** The same bytes split into segments differently
//!   give the same transactions: the decoder is a byte-level state machine.
//! * **Resynchronisation.** After a gap the client side hunts for the next
//!   command packet; the server side resynchronises on the client's next
//!   command or on two chained packet headers with consecutive sequence ids.
//! * **Replication.** After a replica's binlog dump the connection is a
//!   replication stream ([`replication`]): the primary's events are no
//!   response and the replica's semi-sync ACKs no request; they are summarised
//!   in [`Session::replication`], never returned as transactions.
//!
//! ```
//! use pcapsleuth_mysql::{Command, Direction, Meta, Outcome, Session, StartMode};
//!
//! let mut s = Session::new(StartMode::MidStream);
//! let at = |frame| Meta { ts_ns: frame * 1_000, frame };
//! // COM_QUERY "select 1" (sequence id 0)...
//! s.feed(Direction::ClientToServer, b"\x09\x00\x00\x00\x03select 1", at(1));
//! // ...answered by a one-column, one-row resultset (classic EOF framing).
//! s.feed(
//!     Direction::ServerToClient,
//!     b"\x01\x00\x00\x01\x01\
//!       \x17\x00\x00\x02\x03def\x00\x00\x00\x011\x00\x0c\x3f\x00\x01\x00\x00\x00\x08\x81\x00\x00\x00\x00\
//!       \x05\x00\x00\x03\xfe\x00\x00\x02\x00\
//!       \x02\x00\x00\x04\x011\
//!       \x05\x00\x00\x05\xfe\x00\x00\x02\x00",
//!     at(2),
//! );
//! let t: Vec<_> = s.drain().collect();
//! assert_eq!(t.len(), 1);
//! assert_eq!(t[0].command, Command::Query);
//! assert_eq!(t[0].command.name(), "COM_QUERY");
//! assert_eq!(t[0].statement.as_deref(), Some("select 1"));
//! assert_eq!(t[0].outcome, Outcome::ResultSet { rows: 1 });
//! assert_eq!(t[0].last_response_frame, Some(2));
//! assert_eq!(pcapsleuth_mysql::fingerprint("SELECT * FROM t WHERE id IN (1, 2, 3)"),
//!            "select * from t where id in (?)");
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod command;
mod compress;
mod detect;
mod exchange;
mod fingerprint;
mod framing;
pub mod prepared;
pub mod replication;
mod session;
pub mod wire;

use serde::{Deserialize, Serialize};

pub use command::Command;
pub use detect::{
    client_command_verdict, error_packet_verdict, greeting_verdict, login_verdict,
    looks_like_client_command, looks_like_greeting, looks_like_login, packet_run_verdict,
    response_verdict, Extent, Verdict, PACKET_RUN,
};
pub use exchange::{ExchangeShape, PieceShape, PlainExchange};
pub use fingerprint::{fingerprint, fingerprint_into, Fingerprinter};
pub use prepared::ExecuteBytes;
pub use replication::{
    binlog_event_verdict, looks_like_binlog_events, looks_like_semi_sync_acks,
    semi_sync_acks_verdict, ReplicationAtClose, ReplicationSample, ReplicationSummary,
};
pub use session::{Session, TlsBytes, TLS_BYTES_KEPT};

/// Statement text longer than this is cut (at a character boundary) and marked
/// with a trailing `/* truncated: N bytes */` comment.
pub const STATEMENT_CAP: usize = 16 * 1024;

/// Which way bytes travel on the connection (`client_to_server`, `server_to_client` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From the MySQL client to the server (commands).
    ClientToServer,
    /// From the server to the client (greeting, responses).
    ServerToClient,
}

/// Where bytes were seen: capture time and Wireshark frame number (1-based) of
/// the TCP segment carrying them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Meta {
    /// Capture timestamp in nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Wireshark's frame number of the segment (1-based position in the capture).
    pub frame: u64,
}

/// How much of the connection the capture saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StartMode {
    /// The connection was seen from its SYN: the first server bytes are the greeting.
    Handshake,
    /// The capture began mid-connection: hunt for the first client command.
    MidStream,
    /// The capture began between the greeting and the login: the client's first bytes are its login
    /// (what the greeting said is not known).
    Login,
    /// The capture began in the middle of the server's answer, whose packets are plain (a run of them
    /// showed it, [`packet_run_verdict`]): as [`StartMode::MidStream`], the compressed protocol known not
    /// to be in force.
    MidAnswer,
}

/// How a direction was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CloseFlag {
    /// Orderly close (TCP FIN).
    Fin,
    /// Abortive close (TCP RST).
    Rst,
}

/// How one request ended: the server's answer, or why there was none to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// OK_Packet (or EOF_Packet for commands answered by one).
    Ok {
        /// `affected_rows`.
        affected_rows: u64,
        /// `last_insert_id`.
        last_insert_id: u64,
        /// Server status flags (`SERVER_STATUS_*`).
        status_flags: u16,
        /// Warning count.
        warnings: u16,
    },
    /// ERR_Packet.
    Err {
        /// MySQL error code (e.g. 1146).
        code: u16,
        /// SQLSTATE after the '#' marker; empty when the server sent none.
        sql_state: SqlState,
        /// Human-readable message.
        message: String,
    },
    /// One or more resultsets (rows summed over all of them, including
    /// `SERVER_MORE_RESULTS_EXISTS` continuations). Also used for COM_FIELD_LIST
    /// (rows = field definitions).
    ResultSet {
        /// Rows (or fields/events, see above).
        rows: u64,
    },
    /// COM_STMT_PREPARE answered by COM_STMT_PREPARE_OK.
    Prepared {
        /// Statement id the server assigned.
        statement_id: u32,
        /// Parameter count.
        params: u16,
        /// Column count.
        columns: u16,
    },
    /// LOAD DATA LOCAL INFILE: the server asked for a file (0xFB), the client
    /// sent it and the server accepted it with an OK_Packet.
    LocalInfile {
        /// Bytes of file data the client sent.
        file_bytes: u64,
        /// `affected_rows` of the final OK_Packet.
        affected_rows: u64,
    },
    /// A command the server never answers (COM_QUIT, COM_STMT_CLOSE, COM_STMT_SEND_LONG_DATA).
    NoResponseExpected,
    /// COM_BINLOG_DUMP(_GTID) answered by binary-log events: the connection became a replication
    /// stream ([`Session::replication`]). The events are no response and the dump has no response time.
    ReplicationStream,
    /// The connection was closed after part of the response arrived.
    ClosedMidResponse {
        /// Which side closed.
        by: Direction,
        /// FIN or RST.
        flag: CloseFlag,
    },
    /// The connection was closed before any of the response arrived.
    ClosedBeforeResponse {
        /// Which side closed.
        by: Direction,
        /// FIN or RST.
        flag: CloseFlag,
    },
    /// The capture ended while the request was open.
    CaptureEnded,
    /// The login asked for TLS (an SSLRequest, CLIENT_SSL): it went on encrypted, and how it
    /// ended, like everything after it, cannot be read.
    Encrypted,
    /// Server bytes of this response fell into a gap (loss, snaplen) and the
    /// decoder had to resynchronise: how the request ended is unknown.
    GapLost,
    /// The response did not decode as any valid answer to the command.
    Unparsed,
}

/// The server status flags (`SERVER_*`, [`wire::status`]) and the warning count of the OK or EOF
/// packet that ended a response: whether the query used an index, how many warnings it raised (what
/// pt-query-digest reports as `No_index_used`, `No_good_index_used` and `Warning_count`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStatus {
    /// The status flags; of a response of several resultsets, those of every terminator together
    /// (`SERVER_MORE_RESULTS_EXISTS` aside).
    pub flags: u16,
    /// The warning count of the last terminator.
    pub warnings: u16,
}

impl ServerStatus {
    /// `SERVER_QUERY_NO_INDEX_USED`: the query read a table without an index (a full scan).
    pub fn no_index_used(&self) -> bool {
        self.flags & wire::status::SERVER_QUERY_NO_INDEX_USED != 0
    }

    /// `SERVER_QUERY_NO_GOOD_INDEX_USED`: no good index was found (a range checked per record).
    pub fn no_good_index_used(&self) -> bool {
        self.flags & wire::status::SERVER_QUERY_NO_GOOD_INDEX_USED != 0
    }
}

/// One client request and its response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transaction {
    /// The command byte of the request (`Command::Connect` for the connection
    /// phase: HandshakeResponse up to the authentication OK/ERR).
    pub command: Command,
    /// COM_QUERY / COM_STMT_PREPARE text; for COM_STMT_EXECUTE/FETCH/RESET/CLOSE/
    /// SEND_LONG_DATA the SQL of the prepared statement (when its prepare was
    /// seen); COM_INIT_DB / CREATE_DB / DROP_DB schema; COM_FIELD_LIST table;
    /// COM_CHANGE_USER user; COM_PROCESS_KILL the thread id. Capped at
    /// [`STATEMENT_CAP`]. A gap inside the text is marked `/* gap: N bytes */`.
    pub statement: Option<String>,
    /// Statement id for the COM_STMT_* commands (assigned id for COM_STMT_PREPARE).
    pub statement_id: Option<u32>,
    /// Capture time of the segment carrying the first byte of the request, in nanoseconds since the
    /// Unix epoch.
    pub request_ts_ns: u64,
    /// Frame of the segment carrying the first byte of the request.
    pub request_frame: u64,
    /// Capture time of the segment carrying the last byte of the request (ns since the Unix epoch):
    /// the end of its command packet (over every 16 MB continuation packet), or of the last LOCAL
    /// INFILE data or authentication packet the client sent for it. A request the server answered
    /// before it was whole (an early ERR such as 1153) ends where that answer began; one the capture
    /// holds only the start of ends where its bytes stopped. Under the compressed protocol or in TLS,
    /// the segment whose bytes, inflated or decrypted, completed it. A binlog dump's is its first
    /// byte's.
    pub last_request_ts_ns: u64,
    /// Frame of the segment carrying the last byte of the request (see `last_request_ts_ns`).
    pub last_request_frame: u64,
    /// Capture time of the segment carrying the first response byte (ns since the Unix epoch); `None`
    /// when no response byte was seen (unanswered, cut off before the response, no response expected).
    /// Under the compressed protocol, where the server's compressed packet began, even when the capture
    /// holds too little of it to inflate.
    pub first_response_ts_ns: Option<u64>,
    /// Frame of the segment carrying the first response byte; `None` as for `first_response_ts_ns`.
    pub first_response_frame: Option<u64>,
    /// Capture time of the segment carrying the last response byte seen (ns since the Unix epoch):
    /// the end of the response when it completed, or the last that arrived before a close or the end
    /// of the capture. `None` when no response byte was seen.
    pub last_response_ts_ns: Option<u64>,
    /// Frame of the segment carrying the last response byte seen; `None` as for `last_response_ts_ns`.
    pub last_response_frame: Option<u64>,
    /// Rows returned, summed over every resultset of the response; those that arrived before a close
    /// when it was cut off (see [`Outcome::ResultSet`]). 0 for responses without rows.
    pub rows: u64,
    /// The server status flags and warning count the response ended with (its OK packet, or the EOF
    /// or OK that ended its resultsets); `None` when it ended otherwise (ERR, cut off, none).
    pub server_status: Option<ServerStatus>,
    /// Response bytes on the wire (payloads and packet headers).
    pub response_bytes: u64,
    /// Request bytes on the wire (command, LOCAL INFILE data, auth data).
    pub request_bytes: u64,
    /// Bytes of this request or response that were missing (gaps absorbed
    /// without losing the packet framing).
    pub gap_bytes: u64,
    /// How it ended: the server's answer (OK, ERR, rows, ...), or why there is none.
    pub outcome: Outcome,
    /// A `COM_STMT_EXECUTE`'s bytes after the statement id, which hold the values it ran the
    /// statement with (read them with [`prepared::Execute::read`]); empty for other commands.
    #[serde(skip)]
    pub execute: ExecuteBytes,
}

/// What a request that is still open looks like (see [`CloseContext`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingRequest {
    /// The request's command (`Command::Connect` while the login is under way).
    pub command: Command,
    /// Its statement text, as in [`Transaction::statement`].
    pub statement: Option<String>,
    /// Capture time of the segment carrying the request's first byte, in nanoseconds since the Unix
    /// epoch.
    pub request_ts_ns: u64,
    /// Frame of the segment carrying the request's first byte.
    pub request_frame: u64,
    /// Capture time of the segment carrying the request's last byte so far (as
    /// [`Transaction::last_request_ts_ns`]).
    pub last_request_ts_ns: u64,
    /// Request bytes sent so far.
    pub request_bytes: u64,
    /// Resultset rows delivered so far (0 until a row arrives).
    pub rows: u64,
    /// Response bytes delivered so far.
    pub response_bytes: u64,
    /// Capture time of the first response byte, if any came.
    pub first_response_ts_ns: Option<u64>,
    /// Frame of the first response byte, if any came.
    pub first_response_frame: Option<u64>,
    /// Capture time of the last response byte so far.
    pub last_response_ts_ns: Option<u64>,
    /// Frame of the last response byte so far.
    pub last_response_frame: Option<u64>,
}

/// What the session was doing when a side closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SessionPhase {
    /// Connection phase: greeting, HandshakeResponse, authentication exchange.
    Handshake,
    /// Command phase, nothing outstanding.
    Idle,
    /// A request was sent and nothing of its response has arrived.
    AwaitingResponse,
    /// A resultset is being streamed.
    InResultset {
        /// Rows so far.
        rows: u64,
        /// Response bytes so far.
        bytes: u64,
    },
    /// A response other than a resultset is partly received (auth exchange,
    /// COM_STMT_PREPARE metadata, LOCAL INFILE, ...).
    InResponse {
        /// Response bytes so far.
        bytes: u64,
    },
    /// The client sent COM_QUIT.
    AfterQuit,
    /// TLS was negotiated (CLIENT_SSL): decoding stopped.
    Encrypted,
    /// The stream cannot be decoded (e.g. zstd compression): decoding stopped.
    Undecodable,
    /// A replication stream (after COM_BINLOG_DUMP, or binlog events seen mid-stream).
    Replicating(ReplicationAtClose),
    /// Mid-stream start not yet synchronised, or synchronisation lost.
    Unknown,
}

/// What the MySQL session was doing when a side of the connection closed (the answer of
/// [`Session::close`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseContext {
    /// The protocol phase: login, idle, waiting for or receiving a response, after COM_QUIT, ...
    pub phase: SessionPhase,
    /// The oldest request sent and not yet fully answered; `None` when none was open.
    pub pending: Option<PendingRequest>,
    /// The client was in the middle of sending a packet (a request not yet whole) that the server had not
    /// answered.
    pub request_cut: bool,
    /// The server was in the middle of sending a packet: its byte stream ended inside a MySQL packet.
    pub response_cut: bool,
    /// The last thing the server said, when it was an error and no command came after it: the ERR that
    /// answered the last request (or the login), or one it sent unasked (MySQL's 4031 before an idle
    /// disconnect).
    pub error: Option<ErrorAt>,
}

/// An error the server sent, where, and the request it answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorAt {
    /// The error.
    pub error: ServerError,
    /// The ERR packet's last byte.
    pub at: Meta,
    /// The request it answered (its command and first byte; `Command::Connect` for a login); `None` for
    /// an error sent unasked.
    pub request: Option<(Command, Meta)>,
    /// The start of that request's statement (its first 160 bytes), when it has one.
    pub statement: Option<String>,
    /// The ERR came in place of the server's greeting, before any login (the request is then the
    /// connection itself, `Command::Connect` at the ERR's first byte).
    pub in_place_of_greeting: bool,
}

/// Whether the connection is readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Encryption {
    /// Cleartext MySQL protocol.
    #[default]
    Plain,
    /// The client sent an SSLRequest (CLIENT_SSL): TLS follows and decoding
    /// stopped cleanly there; later bytes are counted as `undecoded_bytes`.
    Tls,
    /// TLS followed an SSLRequest, and a TLS layer decrypts it: the session is decoded from the
    /// plaintext ([`Session::resume_decrypted`]).
    TlsDecrypted,
}

/// The compressed protocol in force after authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Compression {
    /// Not compressed.
    #[default]
    None,
    /// CLIENT_COMPRESS (zlib): decoded.
    Zlib,
    /// CLIENT_ZSTD_COMPRESSION_ALGORITHM: not decoded; decoding stopped.
    Zstd,
}

/// Whether caching_sha2_password authenticated the login from the server's cache or needed the full
/// exchange, as its AuthMoreData packet said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CachingSha2Auth {
    /// `0x01 0x03`: the password hash was in the server cache.
    FastAuthSuccess,
    /// `0x01 0x04`: full authentication (cleartext over TLS or RSA) was needed.
    FullAuthRequired,
}

/// A SQLSTATE (`42S02`): five ASCII letters and digits, or empty when the server sent none (pre-4.1
/// protocol). Held inline, as error storms carry one per response.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct SqlState {
    bytes: [u8; 5],
    len: u8,
}

impl SqlState {
    /// From the five bytes after an ERR_Packet's `#` marker; anything but five ASCII letters or digits
    /// (a damaged or hostile packet) reads as empty.
    pub fn from_wire(b: &[u8]) -> SqlState {
        match <[u8; 5]>::try_from(b) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_alphanumeric) => SqlState { bytes, len: 5 },
            _ => SqlState::default(),
        }
    }

    /// The five characters, or `""`.
    pub fn as_str(&self) -> &str {
        let b = self.bytes.get(..usize::from(self.len)).unwrap_or(&[]);
        std::str::from_utf8(b).unwrap_or("")
    }

    /// Whether the server sent none (pre-4.1 protocol, or bytes that were no SQLSTATE).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Display for SqlState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for SqlState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for SqlState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SqlState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(SqlState::from_wire(s.as_bytes()))
    }
}

/// An error the server sent (an ERR_Packet): its code, SQLSTATE and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerError {
    /// MySQL error code (e.g. 1146, `ER_NO_SUCH_TABLE`).
    pub code: u16,
    /// SQLSTATE (e.g. `42S02`); empty when the server sent none.
    pub sql_state: SqlState,
    /// The human-readable message, as the server wrote it (e.g. `Table 'db.t' doesn't exist`).
    pub message: String,
}

/// What was skipped or looked wrong, and why. Bad bytes are data: they are
/// counted here, never reported as errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counters {
    /// MariaDB progress reports (ERR_Packet with code 0xFFFF), which are not errors.
    pub progress_reports: u64,
    /// Bytes fed from the client.
    pub client_bytes: u64,
    /// Bytes fed from the server.
    pub server_bytes: u64,
    /// Gaps reported by the caller.
    pub gaps: u64,
    /// Bytes missing in those gaps.
    pub gap_bytes: u64,
    /// Times a direction lost its packet framing and had to hunt.
    pub resyncs: u64,
    /// Bytes discarded while hunting for a packet boundary.
    pub skipped_bytes: u64,
    /// Packets that did not decode as what the protocol state expected.
    pub malformed_packets: u64,
    /// Command packets with a command byte that is not a known `COM_*`.
    pub unknown_commands: u64,
    /// Client packets that arrived where no client packet was expected.
    pub unexpected_client_packets: u64,
    /// Server packets that arrived with no request outstanding.
    pub unsolicited_server_packets: u64,
    /// Of those, ERR_Packets (e.g. a server timeout or shutdown notice).
    pub unsolicited_errors: u64,
    /// Packets whose sequence id was not the expected one.
    pub sequence_anomalies: u64,
    /// Bytes after TLS started or of an undecodable compression (not errors).
    pub undecoded_bytes: u64,
    /// Compressed payloads that failed to inflate.
    pub decompression_errors: u64,
    /// Bytes of packets left incomplete at close or end of capture.
    pub truncated_bytes: u64,
    /// Requests dropped because too many were outstanding at once.
    pub dropped_requests: u64,
    /// Prepared statements not remembered because the statement map was full.
    pub untracked_statements: u64,
}

/// What is known about the connection.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Protocol version from the greeting (10 for every server since 3.21).
    pub protocol_version: Option<u8>,
    /// Server version string from the greeting (e.g. "8.0.36").
    pub server_version: Option<String>,
    /// Connection (thread) id from the greeting.
    pub connection_id: Option<u32>,
    /// Server capability flags from the greeting.
    pub server_capabilities: Option<u32>,
    /// Client capability flags from the HandshakeResponse (or SSLRequest).
    pub client_capabilities: Option<u32>,
    /// Character set the client asked for.
    pub character_set: Option<u8>,
    /// Authentication plugin in force: the greeting's, replaced by an AuthSwitchRequest's.
    pub auth_plugin: Option<String>,
    /// Plugin the client named in its HandshakeResponse.
    pub client_auth_plugin: Option<String>,
    /// caching_sha2_password fast/full authentication, when seen.
    pub caching_sha2: Option<CachingSha2Auth>,
    /// User name (HandshakeResponse, then COM_CHANGE_USER).
    pub user: Option<String>,
    /// Default schema (HandshakeResponse, COM_INIT_DB, COM_CHANGE_USER).
    pub schema: Option<String>,
    /// Whether the session stayed readable or went on in TLS after an SSLRequest.
    pub encryption: Encryption,
    /// The compressed protocol in force after authentication (zlib is decoded, zstd is not).
    pub compression: Compression,
    /// The last ERR_Packet that arrived with no request outstanding.
    pub last_unsolicited_error: Option<ServerError>,
    /// Where it arrived (its last byte).
    pub last_unsolicited_error_at: Option<Meta>,
    /// What the decoder skipped or found malformed, and the gaps it was told about.
    pub counters: Counters,
}
