//! Exchanges estimated from record timing, for a connection whose records cannot be read: a request/
//! response protocol (MySQL is one) sends a burst of client records, then a burst of server records, so
//! each client burst that follows server records begins a new exchange, and the previous one ended with
//! its last server record. Only records that can hold application data count (after the handshake, of
//! type application_data, longer than what protection alone adds plus [`MIN_MESSAGE`]).

use crate::origin::{At, Sender};

/// The shortest application message counted, in bytes of plaintext: a MySQL packet header. A shorter
/// record is a TLS 1.3 alert (2 bytes) or padding, not a request or a response.
pub const MIN_MESSAGE: usize = 4;

/// How an estimated exchange ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExchangeEnd {
    /// The client sent its next request: the response was over.
    NextRequest,
    /// The connection closed (FIN or RST) while the exchange was the last one.
    Close,
    /// The capture ended.
    CaptureEnd,
}

/// One request and its response as record timing shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EstimatedExchange {
    /// Its place among the connection's exchanges after the handshake: 0 is the first, which for MySQL is
    /// the login (its HandshakeResponse and the server's answer).
    pub index: u64,
    /// The first byte of the first client record.
    pub request: At,
    /// Client records of the request.
    pub request_records: u32,
    /// Their bytes on the wire (headers included).
    pub request_bytes: u64,
    /// The segment that completed the first server record, if any came.
    pub response_first: Option<At>,
    /// The segment that completed the last server record before the exchange ended.
    pub response_end: Option<At>,
    /// Server records of the response.
    pub response_records: u64,
    /// Their bytes on the wire.
    pub response_bytes: u64,
    /// What ended it.
    pub ended: ExchangeEnd,
}

impl EstimatedExchange {
    /// From the request's first byte to the response's last, for an exchange ended by the next request
    /// (a response is known to be over only then); `None` otherwise, or when the clock went backwards.
    pub fn response_time_ns(&self) -> Option<u64> {
        match (self.ended, self.response_end) {
            (ExchangeEnd::NextRequest, Some(end)) => end.ts_ns.checked_sub(self.request.ts_ns),
            _ => None,
        }
    }
}

/// Follows one connection's records after its handshake.
#[derive(Debug, Default)]
pub(crate) struct Estimator {
    open: Option<EstimatedExchange>,
    next_index: u64,
    /// Exchanges ended, not yet taken.
    pub(crate) done: Vec<EstimatedExchange>,
    /// Server records that came with no exchange open (tickets after the handshake, a notice).
    pub(crate) unsolicited: u64,
    closed: bool,
}

impl Estimator {
    /// A record that can hold application data, from `sender`: `first` is where its first byte came,
    /// `last` the segment that completed it, `bytes` its length on the wire.
    pub(crate) fn record(&mut self, sender: Sender, first: At, last: At, bytes: u64) {
        if self.closed {
            return;
        }
        match sender {
            Sender::Client => match &mut self.open {
                Some(x) if x.response_records == 0 => {
                    x.request_records = x.request_records.saturating_add(1);
                    x.request_bytes += bytes;
                }
                open => {
                    if let Some(mut x) = open.take() {
                        x.ended = ExchangeEnd::NextRequest;
                        self.done.push(x);
                    }
                    *open = Some(EstimatedExchange {
                        index: self.next_index,
                        request: first,
                        request_records: 1,
                        request_bytes: bytes,
                        response_first: None,
                        response_end: None,
                        response_records: 0,
                        response_bytes: 0,
                        ended: ExchangeEnd::CaptureEnd,
                    });
                    self.next_index += 1;
                }
            },
            Sender::Server => match &mut self.open {
                Some(x) => {
                    x.response_first.get_or_insert(last);
                    x.response_end = Some(last);
                    x.response_records += 1;
                    x.response_bytes += bytes;
                }
                None => self.unsolicited += 1,
            },
        }
    }

    /// The connection closed, or the capture ended: the open exchange ends so.
    pub(crate) fn end(&mut self, how: ExchangeEnd) {
        if let Some(mut x) = self.open.take() {
            x.ended = how;
            self.done.push(x);
        }
        self.closed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> At {
        At {
            ts_ns: ms * 1_000_000,
            frame: ms,
        }
    }

    #[test]
    fn bursts_make_exchanges() {
        let mut e = Estimator::default();
        e.record(Sender::Server, at(1), at(1), 100); // a ticket before any request
        e.record(Sender::Client, at(2), at(2), 60); // the login
        e.record(Sender::Server, at(3), at(3), 40);
        e.record(Sender::Client, at(10), at(10), 50); // a query in two records
        e.record(Sender::Client, at(10), at(11), 50);
        e.record(Sender::Server, at(14), at(14), 1000);
        e.record(Sender::Server, at(15), at(17), 1000);
        e.record(Sender::Client, at(30), at(30), 30); // the last request, cut by a close
        e.record(Sender::Server, at(31), at(31), 16000);
        e.end(ExchangeEnd::Close);
        e.record(Sender::Client, at(40), at(40), 30);
        assert_eq!(e.unsolicited, 1);
        let rts: Vec<_> = e.done.iter().map(|x| x.response_time_ns()).collect();
        assert_eq!(rts, vec![Some(1_000_000), Some(7_000_000), None]);
        assert_eq!(e.done[1].request_records, 2);
        assert_eq!(e.done[1].response_first, Some(at(14)));
        assert_eq!(e.done[2].ended, ExchangeEnd::Close);
        assert_eq!(
            e.done.iter().map(|x| x.index).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
    }
}
