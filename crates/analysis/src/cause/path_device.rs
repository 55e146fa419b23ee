//! Causes that two capture points show and one cannot: a device between them that closed both sides of a
//! connection, or a FIN or RST that arrived in an end's name though that end never sent it.
//!
//! It infers from the facts `compare_ends.rs` gathers from both captures and never matches them itself.

use pcapsleuth_flow::{CloseFlag, Role};

use crate::reasons::role_name;
use crate::units;

use super::model::{Cause, CauseKind, Confidence, Sender, Setting};
use super::wait::{round_wait, wait_words};

/// What says that a device between two capture points closed a connection on both sides.
pub(crate) struct DeviceCloseFacts<'a> {
    /// The close the client received in its server side's name: (flag, client frame).
    pub(crate) to_client: (CloseFlag, u64),
    /// The close the server received in its client side's name: (flag, server frame).
    pub(crate) to_server: (CloseFlag, u64),
    /// The RST or FIN the server received that the client never sent, if any: (flag, server frame).
    pub(crate) never_sent_by_client: Option<(CloseFlag, u64)>,
    /// How far apart the two closes were on the aligned clocks, ns.
    pub(crate) apart_ns: i64,
    /// How far off the alignment may be, ns.
    pub(crate) uncertainty_ns: i64,
    /// The request the close cut off, and how long it had waited at the client point (ns): (words,
    /// request frame at the client, wait).
    pub(crate) request: Option<(&'a str, u64, i64)>,
    /// The endpoint the client talked to, and the one the server saw the connection come from, when they
    /// differ from the ends' own (a proxy's addresses).
    pub(crate) proxy: Option<(pcapsleuth_flow::Endpoint, pcapsleuth_flow::Endpoint)>,
}

/// Neither end closed: a device in between closed both sides.
pub(crate) fn device_closed_both(f: &DeviceCloseFacts<'_>) -> Cause {
    let timer = f
        .request
        .and_then(|(_, _, w)| round_wait(w).map(|r| (w, r)));
    let between = match f.proxy {
        Some((to, from)) => format!(
            "a device in between (the client talks to {to}, the server sees the connection from {from})"
        ),
        None => "a device in between".to_string(),
    };
    let summary = match (f.request, timer) {
        (Some((what, _, w)), Some((_, r))) => format!(
            "neither end closed: {between} closed both sides after {what} had waited {}; a close at a round \
             wait is a timer's: the device's timeout ({} s: HAProxy's `timeout server`, a load balancer's \
             idle or request timeout)",
            wait_words(w),
            r.seconds
        ),
        (Some((what, _, w)), None) => format!(
            "neither end closed: {between} closed both sides after {what} had waited {}",
            wait_words(w)
        ),
        (None, _) => format!("neither end closed: {between} closed both sides"),
    };
    let mut c = Cause::new(CauseKind::PathDevice, Confidence::Likely, summary)
        .with(
            format!(
                "the client received a {} in its server side's name (client frame {}) that the server never \
                 sent: the server capture has no FIN or RST of the server's on the connection before it",
                f.to_client.0.name(),
                f.to_client.1
            ),
            &[f.to_client.1],
        )
        .with(
            format!(
                "the server received a {} in its client side's name (server frame {}) {} from it on the \
                 aligned clocks (± {}): at the same moment",
                f.to_server.0.name(),
                f.to_server.1,
                units::duration_us(f.apart_ns as f64 / 1e3),
                units::duration_us(f.uncertainty_ns as f64 / 1e3)
            ),
            &[f.to_server.1],
        );
    if let Some((flag, frame)) = f.never_sent_by_client {
        c = c.with(
            format!(
                "the client never sent the {} the server received in its name (server frame {frame})",
                flag.name()
            ),
            &[frame],
        );
    }
    if let Some((what, frame, w)) = f.request {
        c = c.with(
            format!(
                "{what} (client frame {frame}) was answered at neither point: cut off after {}",
                wait_words(w)
            ),
            &[frame],
        );
        c.waited(w);
    }
    c.sender = Sender::Path;
    if timer.is_some() {
        c.setting = Some(Setting::ProxyTimeout);
    }
    c
}

/// What says that a FIN or RST that arrived at one capture point in the name of a side was not sent by
/// it: the point at that side shows no such packet leaving it.
pub(crate) struct NotSentFacts<'a> {
    /// FIN or RST.
    pub(crate) flag: CloseFlag,
    /// The side whose name it bears, and its endpoint there.
    pub(crate) by: (Role, pcapsleuth_flow::Endpoint),
    /// The point it arrived at ("client", "server") and its frame there.
    pub(crate) arrived_at: (&'a str, u64),
    /// How long the capture at the sender's side ran past it, ns.
    pub(crate) ran_after_ns: i64,
    /// The closes that capture does show of that side: (flag, frame there).
    pub(crate) own: Vec<(CloseFlag, u64)>,
    /// The request it came right after, at the point it arrived at: (words, frame, ns between them), and
    /// whether the other point has that request.
    pub(crate) after_request: Option<(&'a str, u64, i64, bool)>,
}

/// A FIN or RST that exists only at the point it arrived at: a device on the path sent it.
pub(crate) fn close_not_sent(f: &NotSentFacts<'_>) -> Cause {
    let (role, endpoint) = f.by;
    let other = if f.arrived_at.0 == "client" {
        "server"
    } else {
        "client"
    };
    let answering = match f.after_request {
        Some((what, _, gap, false)) => format!(
            ", {} after {what}, which never reached the {other} point: a firewall that rejects with a \
             reset, or a device that dropped the request and answered it",
            units::seconds(gap as f64 / 1e9)
        ),
        _ => String::new(),
    };
    let mut c = Cause::new(
        CauseKind::PathDevice,
        Confidence::Likely,
        format!(
            "this {} from {endpoint} exists only at the {} point: the {} never sent it; likely a device on \
             the path (a firewall, a load balancer, a NAT) sent it in the {}'s name{answering}",
            f.flag.name(),
            f.arrived_at.0,
            role_name(role),
            role_name(role)
        ),
    )
    .with(
        format!(
            "the {} arrived at the {} point (frame {}); the {} capture, which follows the connection and ran \
             {} past it, has no {} from the {}{}",
            f.flag.name(),
            f.arrived_at.0,
            f.arrived_at.1,
            role_name(role),
            units::seconds(f.ran_after_ns as f64 / 1e9),
            f.flag.name(),
            role_name(role),
            if f.own.is_empty() {
                String::new()
            } else {
                format!(
                    " (it shows the {}'s {})",
                    role_name(role),
                    f.own
                        .iter()
                        .map(|(flag, frame)| format!("{} in frame {frame}", flag.name()))
                        .collect::<Vec<_>>()
                        .join(" and ")
                )
            }
        ),
        &[f.arrived_at.1],
    );
    if let Some((what, frame, gap, reached)) = f.after_request {
        c = c.with(
            format!(
                "it came {} after {what} (frame {frame}){}",
                units::seconds(gap as f64 / 1e9),
                if reached {
                    String::new()
                } else {
                    format!(", which the {other} capture does not have")
                }
            ),
            &[frame],
        );
    }
    c.sender = Sender::Path;
    c
}
