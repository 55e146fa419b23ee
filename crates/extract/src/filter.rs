//! Whether a packet is kept: what the caller selects and what the analyses picked, together
//! ([`Filter`]), and what each part matched on its own ([`Seen`]), for the warning when nothing matched.

use std::collections::HashMap;

use pcapsleuth_analysis::units;
use pcapsleuth_capture::{Record, Timestamp};
use pcapsleuth_flow::{decode, Decoded, Endpoint};

use crate::picks::Picks;
use crate::selection::{Selection, TimeBound, TimeRange};

/// A [`Selection`] and what the analyses picked (`--abnormal`, `--findings`): a packet is kept when all
/// of them keep it.
pub(crate) struct Filter {
    pub(crate) selection: Selection,
    pub(crate) picks: Option<Picks>,
}

/// What each part of a selection matched on its own, and what the capture held: for the warning when
/// a selection matched nothing.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) frames: bool,
    time: bool,
    connections: bool,
    picks: bool,
    /// Frames read, and the first and last packet times.
    pub(crate) count: u64,
    pub(crate) first_ts: Option<Timestamp>,
    pub(crate) last_ts: Option<Timestamp>,
    /// The TCP endpoints of IP datagrams sent in fragments, by (source, destination, IP ID), learned
    /// from each one's first fragment: the fragments after it carry no ports, and go where it goes.
    datagrams: HashMap<(std::net::IpAddr, std::net::IpAddr, u32), (Endpoint, Endpoint)>,
}

/// Datagrams whose endpoints [`Seen::datagrams`] keeps at once: a datagram's fragments travel
/// together, so forgetting them all now and then loses none but those in flight.
const DATAGRAMS_KEPT: usize = 1 << 16;

impl Seen {
    /// The TCP endpoints of a fragment's datagram: from its own TCP header for the first fragment
    /// (noted for the others), else from the first's when it came before.
    fn datagram_endpoints(
        &mut self,
        f: &pcapsleuth_flow::IpFragment<'_>,
    ) -> Option<(Endpoint, Endpoint)> {
        const TCP: u8 = 6;
        let key = (f.src, f.dst, f.id);
        if f.protocol != TCP {
            return None;
        }
        if f.offset == 0 {
            let port =
                |at: usize| Some(u16::from_be_bytes([*f.data.get(at)?, *f.data.get(at + 1)?]));
            let ends = (
                Endpoint {
                    ip: f.src,
                    port: port(0)?,
                },
                Endpoint {
                    ip: f.dst,
                    port: port(2)?,
                },
            );
            if self.datagrams.len() >= DATAGRAMS_KEPT {
                self.datagrams.clear();
            }
            self.datagrams.insert(key, ends);
            return Some(ends);
        }
        self.datagrams.get(&key).copied()
    }
}

impl Filter {
    /// Whether to keep frame `frame` (`first_ts`: the capture's first packet, for relative times); notes
    /// in `seen` what each part of the selection matched on its own.
    pub(crate) fn keeps(
        &self,
        frame: u64,
        rec: &Record<'_>,
        first_ts: Timestamp,
        seen: &mut Seen,
    ) -> bool {
        let in_frames = self
            .selection
            .frames
            .is_none_or(|(a, b)| (a..=b).contains(&frame));
        let in_time = self
            .selection
            .time
            .as_ref()
            .is_none_or(|TimeRange { from, to, .. }| {
                let at = |bound: TimeBound| match bound {
                    TimeBound::Relative(ns) => first_ts.0.saturating_add(ns),
                    TimeBound::Absolute(t) => t.0,
                };
                !(from.is_some_and(|f| rec.ts.0 < at(f)) || to.is_some_and(|t| rec.ts.0 >= at(t)))
            });
        seen.frames |= in_frames;
        seen.time |= in_time;
        let in_range = in_frames && in_time;
        if self.selection.connections.is_none() && self.picks.is_none() {
            return in_range;
        }
        // Decoding is what costs: done for the frames in range, and for the others only until the
        // connections and picks have matched something (what the warning needs when nothing matched).
        let curious = (self.selection.connections.is_some() && !seen.connections)
            || (self.picks.is_some() && !seen.picks);
        if !in_range && !curious {
            return false;
        }
        let tcp = match decode(rec.link, rec.data) {
            Decoded::Tcp(seg) => Some((seg.src_endpoint(), seg.dst_endpoint())),
            // A fragment of a TCP datagram belongs to the connection its first fragment names (one
            // that came after the others in the capture leaves those out: rare, and said nowhere).
            Decoded::Fragment(f) => seen.datagram_endpoints(&f),
            _ => None,
        };
        let picked = self.picks.as_ref().is_none_or(|p| p.keeps(frame, tcp));
        let connected = match (self.selection.connections, tcp) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(c), Some((src, dst))) => c.matches(src, dst),
        };
        seen.picks |= picked;
        seen.connections |= connected;
        in_range && picked && connected
    }

    /// The one-line warnings for a selection that matched nothing: each part that matched nothing on
    /// its own, with the likely mistake (`mysql`: where MySQL was found, when the capture could be read
    /// again to find it), or, when each matched something, that they matched nothing together.
    pub(crate) fn nothing_matched(
        &self,
        seen: &Seen,
        mysql: impl FnOnce() -> Option<Vec<Endpoint>>,
    ) -> Vec<String> {
        let mut said = Vec::new();
        let mut given = Vec::new();
        if let Some((a, b)) = self.selection.frames {
            let arg = match (a, b) {
                (a, u64::MAX) => format!("--frames {a}-"),
                (a, b) if a == b => format!("--frames {a}"),
                (a, b) => format!("--frames {a}-{b}"),
            };
            if !seen.frames {
                said.push(format!(
                    "{arg} matched nothing: the capture has {} (numbered from 1)",
                    units::counted(seen.count, "frame", "frames")
                ));
            }
            given.push(arg);
        }
        if let Some(TimeRange { given: arg, .. }) = &self.selection.time {
            let arg = format!("--time {arg}");
            if !seen.time {
                said.push(match (seen.first_ts, seen.last_ts) {
                    (Some(first), Some(last)) => format!(
                        "{arg} matched nothing: the capture runs from {} to {} (0 to {:.6} s after its first packet; FROM is included, TO is not)",
                        units::utc_us(first.0.div_euclid(1000)),
                        units::utc_us(last.0.div_euclid(1000)),
                        (last.0 - first.0) as f64 / 1e9
                    ),
                    _ => format!("{arg} matched nothing: the capture is empty"),
                });
            }
            given.push(arg);
        }
        if let Some(c) = self.selection.connections {
            if !seen.connections {
                let found = match mysql() {
                    None => "`pcapsleuth flows` lists the capture's connections and their ports".to_string(),
                    Some(servers) if servers.is_empty() => {
                        "no MySQL was found in the capture: `pcapsleuth flows` lists its connections and their ports".to_string()
                    }
                    Some(servers) => format!(
                        "MySQL was found on {}{}",
                        servers
                            .iter()
                            .take(4)
                            .map(Endpoint::to_string)
                            .collect::<Vec<_>>()
                            .join(", "),
                        if servers.len() > 4 {
                            format!(" and {} more", servers.len() - 4)
                        } else {
                            String::new()
                        }
                    ),
                };
                said.push(format!("{} matched nothing; {found}", c.option()));
            }
            given.push(c.option());
        }
        if self.picks.is_some() {
            given.push("--abnormal/--findings".into());
        }
        if said.is_empty() && given.len() > 1 {
            said.push(format!(
                "{} each matched packets, but no packet matched all of them",
                given.join(", ")
            ));
        }
        said
    }
}
