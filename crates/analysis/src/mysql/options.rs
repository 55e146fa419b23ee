//! What the MySQL glue is asked to do: which connections are decoded as MySQL, and how deeply.

/// Which connections are decoded as MySQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MysqlDetection {
    /// Recognised from the greeting or the request/response shape, on any port.
    #[default]
    Auto,
    /// Connections with this server port are MySQL (and others are still recognised automatically).
    Port(u16),
    /// No MySQL decoding.
    Off,
}

/// How much of each MySQL session the engine decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MysqlDepth {
    /// Every exchange: every transaction is told to the analyses, every count is exact.
    #[default]
    Full,
    /// What judging closes needs (`first-reset`, `flows`): the login, the exchange each close falls in,
    /// what the end of the capture finds open, and every exchange that is not plain; a plain exchange (one
    /// request that depends on no state and leaves none, its response whole:
    /// [`pcapsleuth_mysql::ExchangeShape`]; for a prepared statement's run, its text not cut) met while
    /// the session is at rest ([`Session::at_rest`](pcapsleuth_mysql::Session::at_rest)) is counted as the decoder would count it (a request
    /// answered, an error if it ended in ERR), not decoded. The run is the run of [`MysqlDepth::Full`],
    /// every connection and every fact of its session (closes, requests left unanswered, counts,
    /// encryption, user and schema): a test compares them on every capture we have. Only the analyses are
    /// told fewer transactions, those decoded. Inputs read as streams (compressed, a pipe) are decoded in
    /// full: passing over an exchange keeps where its bytes lie in a mapped file, to decode them after all
    /// if it turns out not to be plain.
    Closes,
}
