//! A transaction's response time, read the one way every report reads it: the request's first byte to
//! the response's last.

use pcapsleuth_mysql::{Outcome, Transaction};

use crate::timeline::plausible_response_time;

/// Request (first packet) to the last byte of the response: what the client waited for. Counted only for
/// requests [`Fate::Answered`](super::Fate::Answered): the others' last response byte is not the end of their response. `None`
/// when unanswered, or when the two timestamps cannot both be right ([`crate::plausible_response_time`]).
pub fn response_time_ns(t: &Transaction) -> Option<u64> {
    if !response_end_known(t) {
        return None;
    }
    t.last_response_ts_ns
        .and_then(|end| plausible_response_time(t.request_ts_ns as i64, end as i64))
}

/// Whether the last response byte `t` records is the end of its response: not when the capture ended
/// first, or when the rest of the response fell into bytes the capture does not hold.
#[inline]
pub fn response_end_known(t: &Transaction) -> bool {
    !matches!(t.outcome, Outcome::CaptureEnded | Outcome::GapLost)
}

/// Request (first byte) to the first response byte: the time to first byte, which every answered
/// request has, its response's end in the capture or not (what pt-query-digest calls a query's time).
/// `None` when no response byte came, or when the two timestamps cannot both be right.
pub fn first_byte_ns(t: &Transaction) -> Option<u64> {
    t.first_response_ts_ns
        .and_then(|first| plausible_response_time(t.request_ts_ns as i64, first as i64))
}
