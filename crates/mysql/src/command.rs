//! The `COM_*` command bytes of the MySQL command phase.

use serde::{Deserialize, Serialize};

/// A client command (the first payload byte of a command-phase packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Command {
    /// `COM_SLEEP` (0x00): internal: a sleeping thread.
    Sleep,
    /// `COM_QUIT` (0x01): close the connection; no response.
    Quit,
    /// `COM_INIT_DB` (0x02): change the default schema.
    InitDb,
    /// `COM_QUERY` (0x03): text protocol query.
    Query,
    /// `COM_FIELD_LIST` (0x04): column definitions of a table (deprecated).
    FieldList,
    /// `COM_CREATE_DB` (0x05): create a schema (deprecated).
    CreateDb,
    /// `COM_DROP_DB` (0x06): drop a schema (deprecated).
    DropDb,
    /// `COM_REFRESH` (0x07): flush tables/logs (deprecated).
    Refresh,
    /// `COM_SHUTDOWN` (0x08): shut the server down (deprecated).
    Shutdown,
    /// `COM_STATISTICS` (0x09): human-readable server statistics.
    Statistics,
    /// `COM_PROCESS_INFO` (0x0a): process list (deprecated).
    ProcessInfo,
    /// `COM_CONNECT` (0x0b): internal; used here for the connection phase (HandshakeResponse to auth OK/ERR).
    Connect,
    /// `COM_PROCESS_KILL` (0x0c): kill a connection (deprecated).
    ProcessKill,
    /// `COM_DEBUG` (0x0d): dump debug info to the server log.
    Debug,
    /// `COM_PING` (0x0e): liveness check.
    Ping,
    /// `COM_TIME` (0x0f): internal.
    Time,
    /// `COM_DELAYED_INSERT` (0x10): internal.
    DelayedInsert,
    /// `COM_CHANGE_USER` (0x11): re-authenticate as another user.
    ChangeUser,
    /// `COM_BINLOG_DUMP` (0x12): replication: stream the binlog.
    BinlogDump,
    /// `COM_TABLE_DUMP` (0x13): replication (obsolete).
    TableDump,
    /// `COM_CONNECT_OUT` (0x14): internal.
    ConnectOut,
    /// `COM_REGISTER_SLAVE` (0x15): replication: register a replica.
    RegisterSlave,
    /// `COM_STMT_PREPARE` (0x16): prepare a statement.
    StmtPrepare,
    /// `COM_STMT_EXECUTE` (0x17): execute a prepared statement.
    StmtExecute,
    /// `COM_STMT_SEND_LONG_DATA` (0x18): send a parameter in pieces; no response.
    StmtSendLongData,
    /// `COM_STMT_CLOSE` (0x19): deallocate a prepared statement; no response.
    StmtClose,
    /// `COM_STMT_RESET` (0x1a): reset a prepared statement.
    StmtReset,
    /// `COM_SET_OPTION` (0x1b): set multi-statements on or off.
    SetOption,
    /// `COM_STMT_FETCH` (0x1c): fetch rows from a cursor.
    StmtFetch,
    /// `COM_DAEMON` (0x1d): internal.
    Daemon,
    /// `COM_BINLOG_DUMP_GTID` (0x1e): replication: stream the binlog from a GTID set.
    BinlogDumpGtid,
    /// `COM_RESET_CONNECTION` (0x1f): reset session state.
    ResetConnection,
    /// `COM_CLONE` (0x20): clone plugin.
    Clone,
    /// `COM_SUBSCRIBE_GROUP_REPLICATION_STREAM` (0x21): group replication.
    SubscribeGroupReplicationStream,
    /// A command byte no MySQL version defines.
    Unknown(u8),
}

impl Command {
    /// The command a request's first payload byte names; a byte no MySQL version defines is
    /// [`Command::Unknown`].
    pub fn from_byte(b: u8) -> Self {
        match b {
            0x00 => Command::Sleep,
            0x01 => Command::Quit,
            0x02 => Command::InitDb,
            0x03 => Command::Query,
            0x04 => Command::FieldList,
            0x05 => Command::CreateDb,
            0x06 => Command::DropDb,
            0x07 => Command::Refresh,
            0x08 => Command::Shutdown,
            0x09 => Command::Statistics,
            0x0a => Command::ProcessInfo,
            0x0b => Command::Connect,
            0x0c => Command::ProcessKill,
            0x0d => Command::Debug,
            0x0e => Command::Ping,
            0x0f => Command::Time,
            0x10 => Command::DelayedInsert,
            0x11 => Command::ChangeUser,
            0x12 => Command::BinlogDump,
            0x13 => Command::TableDump,
            0x14 => Command::ConnectOut,
            0x15 => Command::RegisterSlave,
            0x16 => Command::StmtPrepare,
            0x17 => Command::StmtExecute,
            0x18 => Command::StmtSendLongData,
            0x19 => Command::StmtClose,
            0x1a => Command::StmtReset,
            0x1b => Command::SetOption,
            0x1c => Command::StmtFetch,
            0x1d => Command::Daemon,
            0x1e => Command::BinlogDumpGtid,
            0x1f => Command::ResetConnection,
            0x20 => Command::Clone,
            0x21 => Command::SubscribeGroupReplicationStream,
            other => Command::Unknown(other),
        }
    }

    /// The byte that starts a request of this command (`0x03` for `COM_QUERY`); the inverse of
    /// [`Command::from_byte`].
    pub fn byte(&self) -> u8 {
        match self {
            Command::Sleep => 0x00,
            Command::Quit => 0x01,
            Command::InitDb => 0x02,
            Command::Query => 0x03,
            Command::FieldList => 0x04,
            Command::CreateDb => 0x05,
            Command::DropDb => 0x06,
            Command::Refresh => 0x07,
            Command::Shutdown => 0x08,
            Command::Statistics => 0x09,
            Command::ProcessInfo => 0x0a,
            Command::Connect => 0x0b,
            Command::ProcessKill => 0x0c,
            Command::Debug => 0x0d,
            Command::Ping => 0x0e,
            Command::Time => 0x0f,
            Command::DelayedInsert => 0x10,
            Command::ChangeUser => 0x11,
            Command::BinlogDump => 0x12,
            Command::TableDump => 0x13,
            Command::ConnectOut => 0x14,
            Command::RegisterSlave => 0x15,
            Command::StmtPrepare => 0x16,
            Command::StmtExecute => 0x17,
            Command::StmtSendLongData => 0x18,
            Command::StmtClose => 0x19,
            Command::StmtReset => 0x1a,
            Command::SetOption => 0x1b,
            Command::StmtFetch => 0x1c,
            Command::Daemon => 0x1d,
            Command::BinlogDumpGtid => 0x1e,
            Command::ResetConnection => 0x1f,
            Command::Clone => 0x20,
            Command::SubscribeGroupReplicationStream => 0x21,
            Command::Unknown(b) => *b,
        }
    }

    /// The protocol documentation's name, e.g. `"COM_QUERY"`; `"COM_UNKNOWN"` for unknown bytes.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Sleep => "COM_SLEEP",
            Command::Quit => "COM_QUIT",
            Command::InitDb => "COM_INIT_DB",
            Command::Query => "COM_QUERY",
            Command::FieldList => "COM_FIELD_LIST",
            Command::CreateDb => "COM_CREATE_DB",
            Command::DropDb => "COM_DROP_DB",
            Command::Refresh => "COM_REFRESH",
            Command::Shutdown => "COM_SHUTDOWN",
            Command::Statistics => "COM_STATISTICS",
            Command::ProcessInfo => "COM_PROCESS_INFO",
            Command::Connect => "COM_CONNECT",
            Command::ProcessKill => "COM_PROCESS_KILL",
            Command::Debug => "COM_DEBUG",
            Command::Ping => "COM_PING",
            Command::Time => "COM_TIME",
            Command::DelayedInsert => "COM_DELAYED_INSERT",
            Command::ChangeUser => "COM_CHANGE_USER",
            Command::BinlogDump => "COM_BINLOG_DUMP",
            Command::TableDump => "COM_TABLE_DUMP",
            Command::ConnectOut => "COM_CONNECT_OUT",
            Command::RegisterSlave => "COM_REGISTER_SLAVE",
            Command::StmtPrepare => "COM_STMT_PREPARE",
            Command::StmtExecute => "COM_STMT_EXECUTE",
            Command::StmtSendLongData => "COM_STMT_SEND_LONG_DATA",
            Command::StmtClose => "COM_STMT_CLOSE",
            Command::StmtReset => "COM_STMT_RESET",
            Command::SetOption => "COM_SET_OPTION",
            Command::StmtFetch => "COM_STMT_FETCH",
            Command::Daemon => "COM_DAEMON",
            Command::BinlogDumpGtid => "COM_BINLOG_DUMP_GTID",
            Command::ResetConnection => "COM_RESET_CONNECTION",
            Command::Clone => "COM_CLONE",
            Command::SubscribeGroupReplicationStream => "COM_SUBSCRIBE_GROUP_REPLICATION_STREAM",
            Command::Unknown(_) => "COM_UNKNOWN",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips() {
        for b in 0..=255u8 {
            assert_eq!(Command::from_byte(b).byte(), b);
        }
        assert_eq!(Command::from_byte(3).name(), "COM_QUERY");
        assert_eq!(Command::from_byte(0x1e).name(), "COM_BINLOG_DUMP_GTID");
        assert_eq!(Command::from_byte(0x99), Command::Unknown(0x99));
    }
}
