//! What a MySQL session was, once its connection ended: the facts the run keeps of it.

use serde::Serialize;

use super::recognition::RecognisedBy;
use super::tls::TlsSessionFacts;
use crate::replication::ReplicationStream;

use super::close_seen::CloseSeenFacts;
use super::counts::RequestCounts;
use super::fate::UnansweredRequest;
use super::incident::Incident;

/// MySQL facts about one connection, kept with it for `first-reset` and `flows`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MysqlSessionFacts {
    /// What showed that the connection speaks MySQL.
    pub recognised_by: RecognisedBy,
    /// The server's version string from its greeting (e.g. `10.11.19-MariaDB-0+deb12u1`), when captured.
    pub server_version: Option<String>,
    /// The user name from the login (or the last `COM_CHANGE_USER`), when captured.
    pub user: Option<String>,
    /// The default schema from the login, `COM_INIT_DB` or `COM_CHANGE_USER`, when captured.
    pub schema: Option<String>,
    /// Whether the session went on in TLS and was not decrypted (its requests cannot be read).
    pub encrypted: bool,
    /// Bytes after TLS began (or of a compression that cannot be decoded): fed, not read. Of a TLS
    /// session decrypted, none (the records that failed are in `tls`).
    pub unread_bytes: u64,
    /// The TLS the session went on in after its SSLRequest; null for a session in the clear.
    pub tls: Option<TlsSessionFacts>,
    /// Requests decoded on the connection, each with what became of it (answered or not).
    pub transactions: u64,
    /// Of them, those answered by an error response.
    pub errors: u64,
    /// What the session was doing at each FIN or RST, in capture order (for `first-reset`; not in JSON).
    #[serde(skip)]
    pub closes: Vec<CloseSeenFacts>,
    /// Requests still waiting for their response when the capture ended.
    #[serde(skip)]
    pub unanswered: Vec<UnansweredRequest>,
    /// The session's requests that expect a response (logins aside), by fate: what `unknowns` says of
    /// every run, whatever analysis it ran.
    #[serde(skip)]
    pub requests: RequestCounts,
    /// The session's requests whose statement text the capture holds only in part.
    #[serde(skip)]
    pub statements_cut: u64,
    /// Closes that cut a request off (at most one per request).
    #[serde(skip)]
    pub incidents: Vec<Incident>,
    /// The replication stream the connection carried, if it did.
    #[serde(skip)]
    pub replication: Option<Box<ReplicationStream>>,
}
