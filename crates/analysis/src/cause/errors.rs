//! What a MySQL error code means, for the codes that explain a close or a failed request, and the
//! setting behind each.
//!
//! A table only: it never judges whether an error caused anything.

use super::model::Setting;

/// What a known MySQL error code means, and the setting behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorMeaning {
    /// The server's name for it (`ER_CON_COUNT_ERROR`).
    pub name: &'static str,
    /// What it means, in words.
    pub meaning: &'static str,
    /// The setting behind it, when one is.
    pub setting: Option<Setting>,
}

/// What the error `code` means, for the codes that explain a close or a failed request (MySQL's and
/// MariaDB's numbers; `None` for the others, whose message says what they are).
pub fn error_meaning(code: u16) -> Option<ErrorMeaning> {
    let m = |name, meaning, setting| {
        Some(ErrorMeaning {
            name,
            meaning,
            setting,
        })
    };
    use Setting::*;
    match code {
        1040 => m(
            "ER_CON_COUNT_ERROR",
            "the server had max_connections connections already and refused this one",
            Some(MaxConnections),
        ),
        1043 => m(
            "ER_HANDSHAKE_ERROR",
            "the server could not read the login (bad handshake)",
            None,
        ),
        1044 => m(
            "ER_DBACCESS_DENIED_ERROR",
            "the user may not use the schema asked for",
            None,
        ),
        1045 => m(
            "ER_ACCESS_DENIED_ERROR",
            "the login was refused: wrong user, password or client host",
            None,
        ),
        1049 => m(
            "ER_BAD_DB_ERROR",
            "the schema asked for does not exist",
            None,
        ),
        1053 => m(
            "ER_SERVER_SHUTDOWN",
            "the server was shutting down",
            None,
        ),
        1129 => m(
            "ER_HOST_IS_BLOCKED",
            "the client host is blocked after too many connection errors (max_connect_errors; FLUSH HOSTS \
             unblocks it)",
            Some(MaxConnectErrors),
        ),
        1130 => m(
            "ER_HOST_NOT_PRIVILEGED",
            "no account may log in from the client host",
            None,
        ),
        1152 | 1184 => m(
            if code == 1152 {
                "ER_ABORTING_CONNECTION"
            } else {
                "ER_NEW_ABORTING_CONNECTION"
            },
            "the server aborted the connection",
            None,
        ),
        1153 => m(
            "ER_NET_PACKET_TOO_LARGE",
            "the request was larger than the server's max_allowed_packet: the server refused it unread and \
             closed the connection",
            Some(MaxAllowedPacket),
        ),
        1156 => m(
            "ER_NET_PACKETS_OUT_OF_ORDER",
            "the server read packets out of order (bytes that were no MySQL login or command)",
            None,
        ),
        1158 => m(
            "ER_NET_READ_ERROR",
            "the server could not read from the connection",
            None,
        ),
        1159 => m(
            "ER_NET_READ_INTERRUPTED",
            "the server timed out reading the request (net_read_timeout)",
            Some(NetReadTimeout),
        ),
        1160 => m(
            "ER_NET_ERROR_ON_WRITE",
            "the server could not write to the connection",
            None,
        ),
        1161 => m(
            "ER_NET_WRITE_INTERRUPTED",
            "the server timed out writing to the client (net_write_timeout)",
            Some(NetWriteTimeout),
        ),
        1203 => m(
            "ER_TOO_MANY_USER_CONNECTIONS",
            "the user had max_user_connections connections already",
            Some(MaxUserConnections),
        ),
        1205 => m(
            "ER_LOCK_WAIT_TIMEOUT",
            "the statement waited innodb_lock_wait_timeout for a row lock and gave up",
            Some(InnodbLockWaitTimeout),
        ),
        1213 => m(
            "ER_LOCK_DEADLOCK",
            "InnoDB found a deadlock and rolled this transaction back",
            None,
        ),
        1226 => m(
            "ER_USER_LIMIT_REACHED",
            "the user exceeded a resource limit (max_questions, max_updates, max_connections_per_hour)",
            None,
        ),
        1317 => m(
            "ER_QUERY_INTERRUPTED",
            "the statement was interrupted (KILL QUERY, or the connection was killed)",
            None,
        ),
        1927 => m(
            "ER_CONNECTION_KILLED",
            "the connection was killed (KILL CONNECTION)",
            None,
        ),
        1969 => m(
            "ER_STATEMENT_TIMEOUT",
            "the statement ran longer than max_statement_time and was interrupted",
            Some(MaxStatementTime),
        ),
        3024 => m(
            "ER_QUERY_TIMEOUT",
            "the statement ran longer than max_execution_time and was interrupted",
            Some(MaxExecutionTime),
        ),
        4031 => m(
            "ER_CLIENT_INTERACTION_TIMEOUT",
            "the server disconnected the session after wait_timeout (or interactive_timeout) of inactivity",
            Some(WaitTimeout),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_errors_that_explain_closes_name_their_setting() {
        assert_eq!(
            error_meaning(1040).and_then(|m| m.setting),
            Some(Setting::MaxConnections)
        );
        assert_eq!(
            error_meaning(1153).and_then(|m| m.setting),
            Some(Setting::MaxAllowedPacket)
        );
        assert_eq!(
            error_meaning(4031).map(|m| m.name),
            Some("ER_CLIENT_INTERACTION_TIMEOUT")
        );
        assert_eq!(error_meaning(1146), None, "its message says what it is");
    }
}
