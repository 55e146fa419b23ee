//! Where bytes came from: which end of the connection sent them ([`Sender`]) and the segment that
//! carried them ([`At`]), the vocabulary the connection and the estimate of its exchanges share.

/// Which end of the connection sent the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sender {
    /// The TLS client (the MySQL client).
    Client,
    /// The TLS server.
    Server,
}

impl Sender {
    pub(crate) fn index(self) -> usize {
        match self {
            Sender::Client => 0,
            Sender::Server => 1,
        }
    }

    pub(crate) fn of(index: usize) -> Sender {
        if index == 0 {
            Sender::Client
        } else {
            Sender::Server
        }
    }
}

/// Where bytes were captured: the time and frame of the segment that carried them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct At {
    /// Capture time, nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// The frame (1-based, as Wireshark numbers them).
    pub frame: u64,
}
