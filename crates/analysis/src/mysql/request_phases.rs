//! Where a request's time went: the upload, the server, the download.

use pcapsleuth_mysql::Transaction;
use serde::Serialize;

use crate::timeline::plausible_response_time;

use super::fate::Fate;
use super::response_time::response_end_known;

/// Where a request's time went: the upload (first to last request byte), the server (last request
/// byte to first response byte) and the download (first to last response byte).
///
/// The three add up to the response time. When the server began to answer before the request's last
/// byte (LOCAL INFILE asks for the file before it comes; an early ERR such as 1153 answers a request
/// still being sent), they would overlap, and are cut: the upload ends at the response's last byte at
/// the latest, the time after it is the server's, and the download is 0 (what the server sent came
/// while the client was still sending).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestPhases {
    /// First to last request byte, ns.
    pub upload_ns: u64,
    /// Last request byte to first response byte, ns.
    pub server_ns: u64,
    /// First to last response byte, ns; `None` when the response's end is not in the capture (the
    /// capture ended first, or the rest fell into bytes it does not hold).
    pub download_ns: Option<u64>,
}

impl RequestPhases {
    /// The phases of a request some of whose response came (`None` when none did, or when its
    /// timestamps cannot all be right). Timestamps a little out of order (interfaces timestamped
    /// apart) count as simultaneous.
    pub fn of(t: &Transaction) -> Option<RequestPhases> {
        let first = t.first_response_ts_ns?;
        let (upload_ns, server_ns, download_ns) = split_phases(
            t.request_ts_ns,
            t.last_request_ts_ns,
            first,
            t.last_response_ts_ns.unwrap_or(first),
        )?;
        Some(RequestPhases {
            upload_ns,
            server_ns,
            download_ns: response_end_known(t).then_some(download_ns),
        })
    }
}

/// Upload, server and download of a request sent from `r0` to `r1` and answered from `s0` to `s1`
/// (ns since the epoch), as [`RequestPhases`] defines them; `None` when the request and the response
/// cannot both be right ([`plausible_response_time`]).
fn split_phases(r0: u64, r1: u64, s0: u64, s1: u64) -> Option<(u64, u64, u64)> {
    plausible_response_time(r0 as i64, s1.max(s0) as i64)?;
    let s0 = s0.max(r0);
    let s1 = s1.max(s0);
    let r1 = r1.max(r0);
    let upload_end = r1.min(s1);
    let (server, download) = if s0 >= r1 {
        (s0 - r1, s1 - s0)
    } else {
        (s1 - upload_end, 0)
    };
    Some((upload_end - r0, server, download))
}

/// One listed request's phases ([`RequestPhases`]) and bytes, microseconds: the `phases` of an
/// incident or of a slow request in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ListedPhases {
    /// First to last request byte (those sent, for a request cut off while it was being sent).
    pub upload_us: f64,
    /// Last request byte to first response byte; `None` when no response byte came.
    pub server_us: Option<f64>,
    /// First to last response byte seen; `None` when no response byte came.
    pub download_us: Option<f64>,
    /// Whether the download ran to the response's end; `false` when a close cut it off or the capture
    /// holds no end of it (the download is then what came before).
    pub download_complete: bool,
    /// Request bytes on the wire (MySQL packets, headers included).
    pub request_bytes: u64,
    /// Response bytes on the wire (as far as they came).
    pub response_bytes: u64,
}

impl ListedPhases {
    /// The phases of a request sent from `r0` to `r1`, answered from `s` (first and last response
    /// byte) when any of its response came; `None` when its timestamps cannot all be right.
    pub(super) fn new(
        (r0, r1): (u64, u64),
        s: Option<(u64, u64)>,
        download_complete: bool,
        (request_bytes, response_bytes): (u64, u64),
    ) -> Option<ListedPhases> {
        let us = |ns: u64| ns as f64 / 1e3;
        let (upload_us, server_us, download_us) = match s {
            Some((s0, s1)) => {
                let (u, sv, d) = split_phases(r0, r1, s0, s1)?;
                (us(u), Some(us(sv)), Some(us(d)))
            }
            None => (us(r1.saturating_sub(r0)), None, None),
        };
        Some(ListedPhases {
            upload_us,
            server_us,
            download_us,
            download_complete: download_complete && s.is_some(),
            request_bytes,
            response_bytes,
        })
    }

    /// The phases of a request the decoder completed.
    pub fn of(t: &Transaction) -> Option<ListedPhases> {
        let s = t
            .first_response_ts_ns
            .map(|f| (f, t.last_response_ts_ns.unwrap_or(f)));
        let complete = response_end_known(t) && Fate::of(&t.outcome) == Fate::Answered;
        ListedPhases::new(
            (t.request_ts_ns, t.last_request_ts_ns),
            s,
            complete,
            (t.request_bytes, t.response_bytes),
        )
    }
}
