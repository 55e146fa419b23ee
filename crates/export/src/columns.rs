//! The datasets and their columns: names, types and meanings, in the order the files hold them. The
//! README's column tables are these lists (a test keeps them equal).

use std::sync::Arc;

use parquet::basic::{LogicalType, Repetition, TimeUnit, Type as PhysicalType};
use parquet::errors::ParquetError;
use parquet::schema::types::{Type, TypePtr};

/// How a column is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// A signed 64-bit integer (frames, counts, bytes). Signed, as every engine reads it alike.
    Int64,
    /// A signed 32-bit integer (ports, error codes).
    Int32,
    /// A 64-bit float (µs, rates).
    Float64,
    /// A boolean.
    Boolean,
    /// UTF-8 text.
    String,
    /// A Parquet `TIMESTAMP(NANOS, isAdjustedToUTC = true)`: nanoseconds since the epoch, UTC.
    Timestamp,
}

impl ColumnType {
    /// The Parquet type of a column `name` of this type: its physical type and logical annotation
    /// (none for the integers, which are signed, and for doubles and booleans; `STRING` for text,
    /// `TIMESTAMP(NANOS, isAdjustedToUTC = true)` for times), `OPTIONAL` when `nullable`, else
    /// `REQUIRED`.
    pub fn parquet(self, name: &str, nullable: bool) -> Result<Type, ParquetError> {
        let (physical, logical) = match self {
            ColumnType::Int64 => (PhysicalType::INT64, None),
            ColumnType::Int32 => (PhysicalType::INT32, None),
            ColumnType::Float64 => (PhysicalType::DOUBLE, None),
            ColumnType::Boolean => (PhysicalType::BOOLEAN, None),
            ColumnType::String => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
            ColumnType::Timestamp => (
                PhysicalType::INT64,
                Some(LogicalType::timestamp(true, TimeUnit::NANOS)),
            ),
        };
        let repetition = if nullable {
            Repetition::OPTIONAL
        } else {
            Repetition::REQUIRED
        };
        Type::primitive_type_builder(name, physical)
            .with_logical_type(logical)
            .with_repetition(repetition)
            .build()
    }

    /// How the README's tables name the type.
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Int64 => "int64",
            ColumnType::Int32 => "int32",
            ColumnType::Float64 => "double",
            ColumnType::Boolean => "boolean",
            ColumnType::String => "string",
            ColumnType::Timestamp => "timestamp(ns, UTC)",
        }
    }
}

/// One column of a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// Its name: stable, snake_case.
    pub name: &'static str,
    /// How it is stored.
    pub ty: ColumnType,
    /// Whether it can be null.
    pub nullable: bool,
    /// What it holds.
    pub meaning: &'static str,
}

const fn col(name: &'static str, ty: ColumnType, meaning: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable: false,
        meaning,
    }
}

const fn opt(name: &'static str, ty: ColumnType, meaning: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable: true,
        meaning,
    }
}

use ColumnType::{
    Boolean as B, Float64 as F, Int32 as I32, Int64 as I, String as S, Timestamp as T,
};

/// One dataset: a directory of Parquet files, one row per `row`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dataset {
    /// Its directory under the export's root.
    pub name: &'static str,
    /// What one row is.
    pub row: &'static str,
    /// Its columns, after the `capture` column and the label columns every dataset begins with.
    pub columns: &'static [Column],
}

impl Dataset {
    /// The Parquet schema of its files: `capture`, then the labels' keys (text, constant), then
    /// [`Dataset::columns`].
    pub fn schema(&self, labels: &[&str]) -> Result<TypePtr, ParquetError> {
        let constants = std::iter::once("capture").chain(labels.iter().copied());
        let mut fields = constants
            .map(|name| ColumnType::String.parquet(name, false))
            .collect::<Result<Vec<_>, _>>()?;
        for c in self.columns {
            fields.push(c.ty.parquet(c.name, c.nullable)?);
        }
        let fields = fields.into_iter().map(Arc::new).collect();
        Ok(Arc::new(
            Type::group_type_builder("schema")
                .with_fields(fields)
                .build()?,
        ))
    }
}

/// Every MySQL request and what became of it.
pub const TRANSACTIONS: Dataset = Dataset {
    name: "transactions",
    row: "a MySQL request (every command, logins and commands without a response included) and what became of it",
    columns: &[
        col("connection_id", I, "The connection's first frame: with `capture`, the key of `connections` (`connection_id`) and `closes` (`connection_id`)."),
        col("request_frame", I, "Frame of the request's first byte."),
        opt("response_frame", I, "Frame of the response's last byte (null when none came)."),
        opt("first_response_frame", I, "Frame of the response's first byte."),
        col("request_time", T, "Time of the request's first byte."),
        opt("response_time", T, "Time of the response's last byte."),
        opt("first_response_time", T, "Time of the response's first byte."),
        col("client", S, "`ip:port` (IPv6 as `[addr]:port`)."),
        col("server", S, "`ip:port`."),
        col("client_ip", S, "The client's address."),
        col("client_port", I32, "The client's port."),
        col("server_ip", S, "The server's address."),
        col("server_port", I32, "The server's port."),
        col("command", S, "`COM_QUERY`, `COM_STMT_EXECUTE`, ..., `COM_CONNECT` for a login."),
        opt("statement", S, "The SQL (of the prepared statement for `COM_STMT_*`), the schema of `COM_INIT_DB`, ...; a gap inside it is marked `/* gap: N bytes */`."),
        opt("statement_id", I, "The prepared statement's id (`COM_STMT_*`)."),
        opt("fingerprint", S, "The statement with literals as `?` and `IN (...)` lists folded: what `mysql` groups `statements` by. Ends in `…` when `text_cut`."),
        col("text_cut", B, "The capture holds the statement only in part."),
        col("state", S, "What became of the request: `answered` (its response began in the capture), `cut_off` (a FIN or RST came first), `unanswered` (still waiting when the capture ended), `unreadable` (the response fell into bytes the capture lacks, or went on in TLS), `no_response` (a command never answered: `COM_QUIT`, `COM_STMT_CLOSE`, ...); a login's (`COM_CONNECT`, which `mysql` does not count among queries): `login_answered`, `login_cut_off`, `login_unanswered`, `login_unreadable` (it went on in TLS, or fell into bytes the capture lacks). `state = 'answered'` counts what `mysql` counts as answered."),
        col("is_query", B, "Counted by `mysql` among `queries` (and timed in its `rt_us`): `state` is `answered`, `cut_off`, `unanswered` or `unreadable`."),
        opt("error_code", I32, "The MySQL error code of an ERR response (null when not an error)."),
        opt("sql_state", S, "Its SQLSTATE (null when none was sent)."),
        opt("error_message", S, "Its message."),
        col("rows", I, "Rows of the resultset(s) (fields for `COM_FIELD_LIST`; those delivered before a cut)."),
        opt("affected_rows", I, "`affected_rows` of an OK response."),
        col("request_bytes", I, "Request bytes on the wire (MySQL packets with their headers)."),
        col("response_bytes", I, "Response bytes on the wire."),
        opt("rt_us", F, "Response time in µs, request's first byte to response's last, for `answered` requests whose response's end is in the capture (null otherwise)."),
        opt("waited_us", F, "How long a `cut_off` request had waited, request to the close, in µs."),
        col("retransmitted", B, "A segment of the connection was retransmitted between the request and the end of its response."),
        col("last_request_frame", I, "Frame of the request's last byte (of its command packet, or of the last LOCAL INFILE or authentication packet it sent; where the server's answer began, for a request answered before it was whole)."),
        col("last_request_time", T, "Time of the request's last byte."),
        opt("upload_us", F, "First to last request byte, µs, for `answered` requests (null otherwise). `upload_us + server_us + download_us = rt_us`; when the response began before the request's last byte (LOCAL INFILE, an early ERR), the upload ends at the response's end at the latest, the rest is `server_us` and `download_us` is 0."),
        opt("server_us", F, "Last request byte to first response byte, µs, for `answered` requests (null otherwise)."),
        opt("download_us", F, "First to last response byte, µs, for `answered` requests whose response's end is in the capture (null otherwise)."),
    ],
};

/// Every TCP connection: `flows --json`'s connection objects, flattened (nested keys joined by `_`,
/// `{frame, ts}` pairs as `_frame` and `_time`, a close's `at` left out), with the connection's MySQL
/// session facts.
pub const CONNECTIONS: Dataset = Dataset {
    name: "connections",
    row: "a TCP connection",
    columns: &[
        col("connection_id", I, "The connection's first frame (= `first_frame`)."),
        col("client", S, "`ip:port`, as decided from the whole capture (the handshake, a known listener, else the ports)."),
        col("server", S, "`ip:port`."),
        col("client_ip", S, "The client's address."),
        col("client_port", I32, "The client's port."),
        col("server_ip", S, "The server's address."),
        col("server_port", I32, "The server's port."),
        col("roles_known", B, "Whether client and server could be told apart."),
        opt("role_basis", S, "How: `syn`, `syn_ack`, `known_listener`, `port`, `protocol`."),
        col("first_frame", I, "The connection's first packet."),
        col("first_time", T, "Its time."),
        col("last_frame", I, "The connection's last packet."),
        col("last_time", T, "Its time."),
        opt("handshake_rtt_ns", I, "SYN to the ACK completing the handshake (Wireshark's `tcp.analysis.initial_rtt`)."),
        col("to_server_packets", I, "Packets client → server."),
        col("to_server_payload_bytes", I, "TCP payload bytes client → server (retransmissions included)."),
        col("to_server_wire_bytes", I, "Frame bytes client → server."),
        col("to_server_retransmissions", I, "Segments client → server resending sequence space already seen."),
        col("to_server_out_of_order", I, "Segments client → server reordered in flight."),
        col("to_server_zero_windows", I, "Segments client → server advertising a zero window."),
        col("to_server_truncated", I, "Packets client → server cut by the snap length."),
        opt("to_server_first_data_frame", I, "The client's first packet with payload."),
        opt("to_server_first_data_time", T, "Its time."),
        col("to_client_packets", I, "Packets server → client."),
        col("to_client_payload_bytes", I, "TCP payload bytes server → client."),
        col("to_client_wire_bytes", I, "Frame bytes server → client."),
        col("to_client_retransmissions", I, "Segments server → client resending sequence space already seen."),
        col("to_client_out_of_order", I, "Segments server → client reordered in flight."),
        col("to_client_zero_windows", I, "Segments server → client advertising a zero window."),
        col("to_client_truncated", I, "Packets server → client cut by the snap length."),
        opt("to_client_first_data_frame", I, "The server's first packet with payload (a MySQL greeting)."),
        opt("to_client_first_data_time", T, "Its time."),
        opt("first_fin_frame", I, "The connection's first FIN."),
        opt("first_fin_time", T, "Its time."),
        opt("first_fin_by", S, "`client`, `server` or `unknown`."),
        opt("first_fin_peer_unacked_bytes", I, "Bytes the other side had sent that the closing side had not acknowledged."),
        opt("first_fin_peer_awaiting_reply", B, "The other side's last data was unanswered."),
        opt("first_fin_peer_zero_window_from_frame", I, "The other side's latest zero-window spell before the FIN: its first frame."),
        opt("first_fin_peer_zero_window_from_time", T, "Its time."),
        opt("first_fin_peer_zero_window_until_frame", I, "The frame that opened the window again (null while still zero)."),
        opt("first_fin_peer_zero_window_until_time", T, "Its time."),
        opt("first_fin_resent_in_a_row", I, "Segments the closing side had resent since it last sent new data."),
        opt("first_fin_peer_last_data_frame", I, "The other side's last segment with payload before the FIN."),
        opt("first_fin_peer_last_data_time", T, "Its time."),
        opt("first_rst_frame", I, "The connection's first RST."),
        opt("first_rst_time", T, "Its time."),
        opt("first_rst_by", S, "`client`, `server` or `unknown`."),
        opt("first_rst_peer_unacked_bytes", I, "As for the FIN."),
        opt("first_rst_peer_awaiting_reply", B, "As for the FIN."),
        opt("first_rst_peer_zero_window_from_frame", I, "As for the FIN."),
        opt("first_rst_peer_zero_window_from_time", T, "As for the FIN."),
        opt("first_rst_peer_zero_window_until_frame", I, "As for the FIN."),
        opt("first_rst_peer_zero_window_until_time", T, "As for the FIN."),
        opt("first_rst_resent_in_a_row", I, "As for the FIN."),
        opt("first_rst_peer_last_data_frame", I, "As for the FIN."),
        opt("first_rst_peer_last_data_time", T, "As for the FIN."),
        col("end_kind", S, "How the connection ended: `graceful` (FINs both ways), `reset`, `half_closed` (one FIN only), `open`."),
        opt("end_by", S, "Who began the end: `client`, `server`, `unknown` (null when `open`)."),
        col("syn_count", I, "SYNs the client sent with the attempt's ISN."),
        col("synack_count", I, "SYN-ACKs the server sent."),
        opt("connect_us", F, "The client's first SYN to the SYN-ACK it answered, µs."),
        opt("outcome", S, "`established`, `refused`, `unanswered`; null when the SYN was not captured."),
        opt("isn", I, "The client's initial sequence number."),
        opt("first_syn_frame", I, "The client's first SYN."),
        opt("first_syn_time", T, "Its time."),
        opt("retransmitted_syn_frame", I, "The first SYN sent again."),
        opt("retransmitted_syn_time", T, "Its time."),
        col("syns_before_answer", I, "SYNs sent up to the answer."),
        opt("answer_frame", I, "The SYN-ACK the client answered, or the RST refusing the attempt."),
        opt("answer_time", T, "Its time."),
        opt("ack_to_syn_frame", I, "A plain ACK answering the SYN (a TIME_WAIT of the previous connection rejected it)."),
        opt("ack_to_syn_time", T, "Its time."),
        opt("syn_options_mss", I32, "The SYN's MSS option."),
        opt("syn_options_window_scale", I32, "The SYN's window scale."),
        opt("syn_options_sack_permitted", B, "The SYN permitted SACK."),
        opt("syn_options_timestamp", I, "The SYN's TSval."),
        opt("synack_options_mss", I32, "The answered SYN-ACK's MSS option."),
        opt("synack_options_window_scale", I32, "Its window scale."),
        opt("synack_options_sack_permitted", B, "It permitted SACK."),
        opt("synack_options_timestamp", I, "Its TSval."),
        opt("resumed_by_frame", I, "The client resent this attempt's SYN after it was reset, and it went on as the next connection from this frame."),
        opt("resumed_by_time", T, "Its time."),
        opt("mysql_recognised_by", S, "How the connection was recognised as MySQL (`greeting`, `request_response_shape`, `unanswered_request`, `port`, `binlog_events`, `packet_run`: a run of packets in sequence in a capture joined mid-answer, `error_packet`: an ERR packet (code, SQLSTATE) at the start of the server's turn in a capture joined mid-request); null when it is not MySQL."),
        opt("mysql_server_version", S, "The server's version from its greeting."),
        opt("mysql_user", S, "The login's user."),
        opt("mysql_schema", S, "The login's schema."),
        opt("mysql_encrypted", B, "The session went on in TLS."),
        opt("mysql_unread_bytes", I, "Bytes after TLS began (or of a compression that could not be decoded)."),
        opt("mysql_transactions", I, "MySQL requests of the connection."),
        opt("mysql_errors", I, "Error responses of the connection."),
    ],
};

/// Every connection's first FIN and first RST: `first-reset --json`'s close objects, all of them.
pub const CLOSES: Dataset = Dataset {
    name: "closes",
    row: "a connection's first FIN or first RST, as `first-reset` judges it",
    columns: &[
        col("connection_id", I, "The connection's first frame (`connection_first_frame` in `first-reset --json`)."),
        col("connection_close", B, "The connection's close as `first-reset`'s `closes` lists it (the earlier of its first FIN and first RST); false for the later one."),
        col("frame", I, "Frame of the FIN or RST."),
        col("time", T, "Its time."),
        col("rel_time", F, "Seconds since frame 1 (Wireshark's relative time)."),
        col("client", S, "`ip:port`."),
        col("server", S, "`ip:port`."),
        col("client_ip", S, "The client's address."),
        col("client_port", I32, "The client's port."),
        col("server_ip", S, "The server's address."),
        col("server_port", I32, "The server's port."),
        col("initiator", S, "Who sent it: `client`, `server`, `unknown`."),
        col("flag", S, "`FIN` or `RST`."),
        col("reason", S, "What it was, in MySQL terms when the connection speaks MySQL, followed by the TCP facts."),
        col("abnormal", B, "Not a normal end of a session (as `first_abnormal`)."),
        opt("mysql_state", S, "The MySQL session's state at the close: `after_quit`, `idle`, `awaiting_response`, `in_resultset`, `in_response`, `handshake`, `awaiting_greeting`, `encrypted`, `unknown`, `replicating`."),
        col("peer_unacked_bytes", I, "Bytes the other side had sent that the closing side had not acknowledged."),
        col("peer_awaiting_reply", B, "The other side's last data was unanswered."),
        col("end_kind", S, "How the connection ended: `graceful`, `reset`, `half_closed`, `open`."),
        opt("end_by", S, "Who began the end (null when `open`)."),
    ],
};

/// The rate series of `rate --json` at the export's interval: all traffic and per server.
pub const RATES: Dataset = Dataset {
    name: "rates",
    row: "an interval of the rate series, of all traffic or of one server",
    columns: &[
        opt(
            "server",
            S,
            "The server endpoint `ip:port`; null for all traffic.",
        ),
        col("start", T, "The interval's start."),
        col(
            "interval_s",
            F,
            "The interval's length, seconds (`--interval`).",
        ),
        col(
            "covered_s",
            F,
            "The part of it the capture covers; the rates divide by it.",
        ),
        col("c2s_pps", F, "Packets/s client → server."),
        col("s2c_pps", F, "Packets/s server → client."),
        col("c2s_bps", F, "Bits/s client → server."),
        col("s2c_bps", F, "Bits/s server → client."),
        col("c2s_retrans", I, "Retransmitted segments client → server."),
        col("s2c_retrans", I, "Retransmitted segments server → client."),
    ],
};

/// The ceilings of `rate --json`: traffic pinned flat at a cap while load waited behind it.
pub const CEILINGS: Dataset = Dataset {
    name: "ceilings",
    row: "a ceiling `rate` found",
    columns: &[
        col(
            "kind",
            S,
            "`pps` (a packet-rate cap) or `bps` (a bit-rate cap).",
        ),
        col("direction", S, "`client_to_server` or `server_to_client`."),
        opt("server", S, "`ip:port`, or null for all traffic."),
        col("value", F, "The cap per second (packets or bits)."),
        col("start", T, "When the capped run began."),
        col("end", T, "When it ended."),
        col("other_value", F, "The other measure over the same span."),
        col("mean_packet_bytes", F, "The mean packet size."),
        col(
            "flatness_cv",
            F,
            "Coefficient of variation of the capped measure over 100 ms bins.",
        ),
        col(
            "evidence",
            S,
            "Why this is a cap and not steady load, sentences joined by `; `.",
        ),
    ],
};

/// Every dataset an export writes, in the order it writes them.
pub const DATASETS: [&Dataset; 5] = [&TRANSACTIONS, &CONNECTIONS, &CLOSES, &RATES, &CEILINGS];
