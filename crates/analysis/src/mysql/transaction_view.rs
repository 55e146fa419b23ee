//! [`TransactionView`]: a MySQL request and what became of it, as the glue tells it to the analyses.

use std::collections::VecDeque;

use pcapsleuth_flow::{CloseFlag as TcpCloseFlag, Endpoint, FlowKey, Side};
use pcapsleuth_mysql::{CloseFlag, Direction, Outcome, SessionInfo, Transaction};

use crate::timeline::plausible_response_time;

use super::close_seen::CloseSeen;
use super::fate::Fate;
use super::response_time::response_time_ns;

/// A MySQL request and what became of it.
pub struct TransactionView<'a> {
    /// What the decoder read: the command and its statement, the frames and times of the request and of
    /// the first and last response bytes, rows, bytes, and the outcome (OK, ERR with code and message,
    /// a resultset, a close that cut it off, ...).
    pub transaction: &'a Transaction,
    /// The MySQL client's address and port.
    pub client: Endpoint,
    /// The MySQL server's address and port.
    pub server: Endpoint,
    /// The client's side of the connection.
    client_side: Side,
    /// The FINs and RSTs the connection has seen so far, with what the session was doing.
    closes: &'a [CloseSeen],
    /// The connection's recent retransmission times.
    retransmissions: &'a VecDeque<i64>,
    /// What became of the request (read once from its outcome: the analyses each ask).
    fate: Fate,
    /// What the session knew when the transaction was told.
    session: &'a SessionInfo,
}

impl<'a> TransactionView<'a> {
    pub(crate) fn new(
        transaction: &'a Transaction,
        client_side: Side,
        key: FlowKey,
        closes: &'a [CloseSeen],
        retransmissions: &'a VecDeque<i64>,
        session: &'a SessionInfo,
    ) -> Self {
        TransactionView {
            transaction,
            client: key.endpoint(client_side),
            server: key.endpoint(client_side.other()),
            client_side,
            closes,
            retransmissions,
            fate: Fate::of_transaction(transaction),
            session,
        }
    }

    /// What the session knew when the transaction was told (after the segment that completed it): the
    /// login's user and schema, as `COM_CHANGE_USER` and `COM_INIT_DB` changed them (a `USE` statement
    /// is not followed), the server's thread id and version from its greeting, the capabilities.
    pub fn session(&self) -> &'a SessionInfo {
        self.session
    }

    /// The client's side of the connection.
    pub(crate) fn client_side(&self) -> Side {
        self.client_side
    }

    /// What became of the request: every count sorts requests this one way.
    pub fn fate(&self) -> Fate {
        self.fate
    }

    /// From the request's first byte to the response's last, for a request [`Fate::Answered`] (`None`
    /// otherwise, or when the two timestamps cannot both be right).
    pub fn response_time_ns(&self) -> Option<u64> {
        response_time_ns(self.transaction).filter(|_| self.fate() == Fate::Answered)
    }

    /// How long a request cut off by a close waited, from its first byte to the close.
    pub fn waited_ns(&self) -> Option<u64> {
        let t = self.transaction;
        let (by, flag) = match t.outcome {
            Outcome::ClosedMidResponse { by, flag }
            | Outcome::ClosedBeforeResponse { by, flag } => (by, flag),
            _ => return None,
        };
        let side = match by {
            Direction::ClientToServer => self.client_side,
            Direction::ServerToClient => self.client_side.other(),
        };
        let flag = match flag {
            CloseFlag::Fin => TcpCloseFlag::Fin,
            CloseFlag::Rst => TcpCloseFlag::Rst,
        };
        let close = self
            .closes
            .iter()
            .find(|c| c.side == side && c.flag == flag)?;
        plausible_response_time(t.request_ts_ns as i64, close.ts_ns as i64)
    }

    /// Whether the connection retransmitted a segment between the request and the end of its response.
    pub fn retransmitted(&self) -> bool {
        let Some(rt) = self.response_time_ns() else {
            return false;
        };
        let start = self.transaction.request_ts_ns as i64;
        let end = start.saturating_add(rt as i64);
        self.retransmissions.iter().any(|&r| r >= start && r <= end)
    }

    /// The MySQL error code of an ERR response.
    pub fn error_code(&self) -> Option<u16> {
        match self.transaction.outcome {
            Outcome::Err { code, .. } => Some(code),
            _ => None,
        }
    }
}
