//! A finding: one thing worth a user's attention, with its evidence. Every analysis that reports things
//! to look at says them as findings; `pcapsleuth report` ranks them.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use pcapsleuth_flow::Endpoint;
use serde::Serialize;

/// One thing worth a user's attention.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// 1 (look first) to 4 (for the record).
    pub severity: u8,
    /// What kind of thing it is.
    pub kind: FindingKind,
    /// What was found, in one line.
    pub summary: String,
    /// The facts behind it: frames, times, values.
    pub evidence: Vec<String>,
    /// Wireshark frame numbers to look at.
    pub frames: Vec<u64>,
    /// Why, as a hypothesis with its evidence (a close's, an incident's, a hump's), when one is named;
    /// `null` otherwise.
    pub cause: Option<crate::cause::Cause>,
    /// Which packets it is about: the connections it names, a server endpoint, frames (not in JSON:
    /// `wireshark_filter` and `extract_command` say it).
    #[serde(skip)]
    pub scope: Scope,
    /// A Wireshark display filter selecting its connections' packets (4-tuples, no `tcp.stream`, so
    /// that it holds in any file cut from the capture); `null` when it is about the whole capture.
    pub wireshark_filter: Option<String>,
    /// The `pcapsleuth extract` command that cuts those packets out of the capture, annotated; `null`
    /// when it is about the whole capture or the capture was read from standard input.
    pub extract_command: Option<String>,
    /// How many occurrences it stands for: 1, or the size of the group it heads (closes of one kind, by one
    /// side, on one server, each within `thresholds::CLOSE_GROUP_GAP_S` (10 s) of
    /// the previous).
    pub count: u64,
    /// When it stands for several: the first and the last of them, in seconds after the capture's first
    /// packet; `null` for one.
    pub span: Option<Span>,
    /// The findings it stands for, each as it would read alone (its own evidence, frames, filter and
    /// extract command), in time order; empty when it stands alone and repeats nothing.
    pub members: Vec<Finding>,
    /// What to say on particular frames besides [`Finding::frames`], by frame (Wireshark's number in the
    /// capture read): an error response and its request, the start of a zero window that led to a close.
    /// `extract --annotate` writes them as packet comments; not in JSON (the frames are in the reports
    /// the finding comes from).
    #[serde(skip)]
    pub frame_notes: BTreeMap<u64, String>,
}

/// A stretch of the capture a group of findings spans, in seconds after its first packet.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Span {
    /// The first member's time.
    pub first_s: f64,
    /// The last member's time.
    pub last_s: f64,
}

/// What kind of thing a finding is (snake_case in JSON: `first_abnormal_close`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// The first connection that closed abnormally (`first-reset`'s answer).
    FirstAbnormalClose,
    /// Clients that gave up waiting for a server's greeting.
    GreetingWait,
    /// SYNs dropped or answered late (a full listen queue, a TIME_WAIT, loss).
    SynDrops,
    /// Connection attempts refused (nothing listened) or never answered.
    ConnectRefused,
    /// Connections accepted late (greeted long after their handshake).
    LateAccept,
    /// A close that cut a MySQL request off.
    MidResponseClose,
    /// Requests still waiting, far longer than usual, when the capture ended.
    UnansweredAtEnd,
    /// Traffic pinned flat at a packet-rate or bit-rate cap.
    Ceiling,
    /// MySQL error responses.
    Errors,
    /// Response times in two or more humps.
    RtMultimodal,
    /// A slow hump of response times made by error responses or with a known cause (a timeout): the
    /// hump, the errors that make it and why, in one.
    SlowHump,
    /// A semi-sync primary waiting for its replica's ACKs.
    SemiSyncAckStalls,
    /// Transactions that spent most of their time waiting for their clients' next statement.
    IdleInTransaction,
    /// Retransmissions.
    Retransmissions,
    /// Damage in the capture: corrupt records, wild timestamps.
    CaptureDamage,
}

impl FindingKind {
    /// Every kind, in declaration order.
    pub const ALL: [FindingKind; 15] = [
        FindingKind::FirstAbnormalClose,
        FindingKind::GreetingWait,
        FindingKind::SynDrops,
        FindingKind::ConnectRefused,
        FindingKind::LateAccept,
        FindingKind::MidResponseClose,
        FindingKind::UnansweredAtEnd,
        FindingKind::Ceiling,
        FindingKind::Errors,
        FindingKind::RtMultimodal,
        FindingKind::SlowHump,
        FindingKind::SemiSyncAckStalls,
        FindingKind::IdleInTransaction,
        FindingKind::Retransmissions,
        FindingKind::CaptureDamage,
    ];

    /// Its name, as JSON and the text report give it.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::CaptureDamage => "capture_damage",
            FindingKind::Ceiling => "ceiling",
            FindingKind::ConnectRefused => "connect_refused",
            FindingKind::Errors => "errors",
            FindingKind::FirstAbnormalClose => "first_abnormal_close",
            FindingKind::GreetingWait => "greeting_wait",
            FindingKind::IdleInTransaction => "idle_in_transaction",
            FindingKind::LateAccept => "late_accept",
            FindingKind::MidResponseClose => "mid_response_close",
            FindingKind::Retransmissions => "retransmissions",
            FindingKind::RtMultimodal => "rt_multimodal",
            FindingKind::SlowHump => "slow_hump",
            FindingKind::SemiSyncAckStalls => "semi_sync_ack_stalls",
            FindingKind::SynDrops => "syn_drops",
            FindingKind::UnansweredAtEnd => "unanswered_at_end",
        }
    }
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A connection a finding names: its endpoints and the frames it spans (Wireshark's numbers), so that
/// a 4-tuple reused by several connections still names one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NamedConnection {
    /// The client's endpoint.
    pub client: Endpoint,
    /// The server's endpoint.
    pub server: Endpoint,
    /// The connection's first frame.
    pub first_frame: u64,
    /// The connection's last frame.
    pub last_frame: u64,
    /// Other connections of the capture used the same 4-tuple (a reused port): the display filter then
    /// also names the frames, which only the original capture numbers so.
    pub reused: bool,
}

impl NamedConnection {
    /// A display filter for exactly its packets: its 4-tuple either way ([`connection_filter`]), and its
    /// frames when the 4-tuple was reused.
    pub fn filter(&self) -> String {
        let tuple = connection_filter(&self.client, &self.server);
        if self.reused {
            format!(
                "({tuple}) && frame.number>={} && frame.number<={}",
                self.first_frame, self.last_frame
            )
        } else {
            tuple
        }
    }
}

/// Names the connections of `conns` for findings ([`NamedConnection`]): marked `reused` when another
/// connection of `conns` used the same 4-tuple.
pub(crate) fn connection_namer(
    conns: &pcapsleuth_flow::ConnectionTable,
) -> impl Fn(pcapsleuth_flow::Connection) -> NamedConnection + '_ {
    move |c| NamedConnection {
        client: c.client,
        server: c.server,
        first_frame: c.first.frame,
        last_frame: c.last.frame,
        reused: conns.reused(c.client, c.server),
    }
}

/// Which packets a finding is about, for the hand-off to Wireshark and `pcapsleuth extract`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Scope {
    /// Nothing narrower than the whole capture.
    #[default]
    Capture,
    /// These connections (at least one).
    Connections(Vec<NamedConnection>),
    /// Every packet to or from this endpoint (a server whose traffic the finding is about).
    Endpoint(Endpoint),
    /// These frames (at least one), not a connection's.
    Frames(Vec<u64>),
}

/// How many connections a display filter lists one by one; a finding naming more is given a filter on
/// their server endpoints (when they are few), since a filter of thousands of clauses helps nobody.
pub const FILTER_MAX_CONNECTIONS: usize = 8;

/// `ip` or `ipv6`: the Wireshark protocol of an address.
fn ip_proto(ip: &IpAddr) -> &'static str {
    if ip.is_ipv4() {
        "ip"
    } else {
        "ipv6"
    }
}

/// A display filter for exactly the packets of the TCP connection between `a` and `b`, either way
/// (`tcp.stream`-free: stream numbers change with the file, 4-tuples do not).
pub fn connection_filter(a: &Endpoint, b: &Endpoint) -> String {
    let way = |s: &Endpoint, d: &Endpoint| {
        format!(
            "{p}.src=={} && tcp.srcport=={} && {q}.dst=={} && tcp.dstport=={}",
            s.ip,
            s.port,
            d.ip,
            d.port,
            p = ip_proto(&s.ip),
            q = ip_proto(&d.ip)
        )
    };
    format!("({}) || ({})", way(a, b), way(b, a))
}

/// A display filter for every TCP packet to or from `e`.
pub fn endpoint_filter(e: &Endpoint) -> String {
    let p = ip_proto(&e.ip);
    format!(
        "({p}.src=={ip} && tcp.srcport=={port}) || ({p}.dst=={ip} && tcp.dstport=={port})",
        ip = e.ip,
        port = e.port
    )
}

impl Scope {
    /// A Wireshark display filter selecting the scope's packets: each connection exactly (up to
    /// [`FILTER_MAX_CONNECTIONS`], else their server endpoints if there are that few), an endpoint's
    /// packets, or the frames by number. `None` for the whole capture.
    pub fn wireshark_filter(&self) -> Option<String> {
        let any = |clauses: Vec<String>| match &clauses[..] {
            [] => None,
            [one] => Some(one.clone()),
            _ => Some(
                clauses
                    .iter()
                    .map(|c| format!("({c})"))
                    .collect::<Vec<_>>()
                    .join(" || "),
            ),
        };
        match self {
            Scope::Capture => None,
            Scope::Connections(list) if list.len() <= FILTER_MAX_CONNECTIONS => {
                any(list.iter().map(NamedConnection::filter).collect())
            }
            Scope::Connections(list) => {
                let servers: BTreeSet<Endpoint> = list.iter().map(|c| c.server).collect();
                if servers.len() > FILTER_MAX_CONNECTIONS {
                    return None;
                }
                any(servers.iter().map(endpoint_filter).collect())
            }
            Scope::Endpoint(e) => Some(endpoint_filter(e)),
            Scope::Frames(frames) => match &frames[..] {
                [] => None,
                [one] => Some(format!("frame.number=={one}")),
                many => Some(format!(
                    "frame.number in {{{}}}",
                    // Commas: Wireshark 4.0 refuses a set separated by spaces alone (3.6 took both).
                    many.iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                )),
            },
        }
    }

    /// The `pcapsleuth extract` command cutting the scope's packets out of `files` (the capture's
    /// files as given), annotated with the findings: one connection by its 4-tuple and first frame
    /// (`--conn C-S --at F`), several by the finding's kind (`--findings=KIND`), an endpoint with
    /// `--flow`, frames with `--frames`. `None` for the whole capture, or when the capture was read from
    /// standard input (there is nothing to read again).
    pub fn extract_command(&self, kind: FindingKind, files: &[&str]) -> Option<String> {
        if files.is_empty() || files.contains(&"-") {
            return None;
        }
        let (selection, name) = match self {
            Scope::Capture => return None,
            Scope::Connections(list) => match &list[..] {
                [] => return None,
                [c] => (
                    format!(
                        "--conn {} --at {}",
                        shell_word(&format!("{}-{}", c.client, c.server)),
                        c.first_frame
                    ),
                    format!("{kind}-{}", c.first_frame),
                ),
                _ => (format!("--findings={kind}"), kind.to_string()),
            },
            Scope::Endpoint(e) => (
                format!("--flow {}", shell_word(&e.to_string())),
                format!("{kind}-{}", e.to_string().replace([':', '[', ']'], "_")),
            ),
            Scope::Frames(frames) => match (frames.iter().min(), frames.iter().max()) {
                (Some(a), Some(b)) if a == b => (format!("--frames {a}"), format!("{kind}-{a}")),
                (Some(a), Some(b)) => (format!("--frames {a}-{b}"), format!("{kind}-{a}")),
                _ => return None,
            },
        };
        let files: Vec<String> = files.iter().map(|f| file_word(f)).collect();
        Some(format!(
            "pcapsleuth extract {} {selection} --annotate -o {}",
            files.join(" "),
            shell_word(&format!("{name}.pcapng"))
        ))
    }
}

/// `s` as one word for a shell: as it is when it holds only safe characters; in single quotes when it
/// holds others; as `$'...'` (ANSI-C quoting: bash, zsh, ksh, POSIX.1-2024 sh) with `\xNN`/`\uNNNN`
/// escapes when it holds a control or bidirectional character ([`crate::units::is_hazard`]), so that the
/// command, pasted, names the same file while the text that shows it holds no raw control.
fn shell_word(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:,=@%+".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else if s.chars().any(crate::units::is_hazard) {
        let mut out = String::from("$'");
        for c in s.chars() {
            match c {
                '\\' | '\'' => {
                    out.push('\\');
                    out.push(c);
                }
                c if crate::units::is_hazard(c) && (c as u32) < 0x80 => {
                    out.push_str(&format!("\\x{:02x}", c as u32));
                }
                c if crate::units::is_hazard(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('\'');
        out
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A capture's path as one shell word that no command reads as an option: `./-x.pcap` for `-x.pcap`.
fn file_word(path: &str) -> String {
    if path.starts_with('-') {
        shell_word(&format!("./{path}"))
    } else {
        shell_word(path)
    }
}

impl Finding {
    /// A finding of nothing yet, to fill in with struct-update syntax (`..Finding::blank()`): the whole
    /// capture in scope, no hand-off yet, standing alone (count 1, no members).
    pub(crate) fn blank() -> Finding {
        Finding {
            severity: 4,
            kind: FindingKind::CaptureDamage,
            summary: String::new(),
            evidence: vec![],
            frames: vec![],
            cause: None,
            scope: Scope::Capture,
            wireshark_filter: None,
            extract_command: None,
            count: 1,
            span: None,
            members: vec![],
            frame_notes: BTreeMap::new(),
        }
    }

    /// Fills in [`Finding::wireshark_filter`] and [`Finding::extract_command`] from its scope, for a
    /// capture read from `files`.
    pub fn hand_off(&mut self, files: &[&str]) {
        self.wireshark_filter = self.scope.wireshark_filter();
        self.extract_command = self.scope.extract_command(self.kind, files);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Endpoint {
        s.parse().unwrap()
    }

    #[test]
    fn one_connection_is_selected_both_ways_and_cut_out_by_its_first_frame() {
        let scope = Scope::Connections(vec![NamedConnection {
            client: e("10.0.0.5:50508"),
            server: e("10.0.0.1:3306"),
            first_frame: 12,
            last_frame: 99,
            reused: false,
        }]);
        assert_eq!(
            scope.wireshark_filter().unwrap(),
            "(ip.src==10.0.0.5 && tcp.srcport==50508 && ip.dst==10.0.0.1 && tcp.dstport==3306) || \
             (ip.src==10.0.0.1 && tcp.srcport==3306 && ip.dst==10.0.0.5 && tcp.dstport==50508)"
        );
        assert_eq!(
            scope
                .extract_command(
                    FindingKind::FirstAbnormalClose,
                    &["big dir/it's.pcap", "b.pcap"]
                )
                .unwrap(),
            r"pcapsleuth extract 'big dir/it'\''s.pcap' b.pcap --conn 10.0.0.5:50508-10.0.0.1:3306 --at 12 --annotate -o first_abnormal_close-12.pcapng"
        );
        assert_eq!(
            scope.extract_command(FindingKind::FirstAbnormalClose, &["-"]),
            None
        );
    }

    #[test]
    fn file_names_stay_one_word_that_is_no_option_and_holds_no_raw_control() {
        let scope = Scope::Frames(vec![7]);
        let command = |file: &str| {
            scope
                .extract_command(FindingKind::CaptureDamage, &[file])
                .unwrap()
        };
        let files = |file: &str| {
            command(file)
                .strip_prefix("pcapsleuth extract ")
                .and_then(|rest| {
                    rest.strip_suffix(" --frames 7 --annotate -o capture_damage-7.pcapng")
                })
                .unwrap()
                .to_string()
        };
        assert_eq!(files("-x.pcap"), "./-x.pcap");
        assert_eq!(files("--help"), "./--help");
        assert_eq!(files("-it's here.pcap"), r"'./-it'\''s here.pcap'");
        assert_eq!(files("/data/a b.pcap"), "'/data/a b.pcap'");
        assert_eq!(files("\"q\".pcap"), "'\"q\".pcap'");
        assert_eq!(
            files("x\u{1b}]0;t\u{7}\u{202e}'\\.pcap"),
            r"$'x\x1b]0;t\x07\u202e\'\\.pcap'"
        );
        assert!(!command("a\nb\u{9b}.pcap")
            .chars()
            .any(crate::units::is_hazard));
    }

    #[test]
    fn ipv6_endpoints_frames_and_many_connections() {
        assert_eq!(
            endpoint_filter(&e("[fd00::1]:3306")),
            "(ipv6.src==fd00::1 && tcp.srcport==3306) || (ipv6.dst==fd00::1 && tcp.dstport==3306)"
        );
        assert_eq!(
            Scope::Frames(vec![7, 3]).wireshark_filter().unwrap(),
            "frame.number in {7,3}"
        );
        let many: Vec<NamedConnection> = (0..20)
            .map(|i| NamedConnection {
                client: e(&format!("10.0.0.5:{}", 40000 + i)),
                server: e("10.0.0.1:3306"),
                first_frame: i,
                last_frame: i + 1,
                reused: false,
            })
            .collect();
        let scope = Scope::Connections(many);
        assert_eq!(
            scope.wireshark_filter().unwrap(),
            endpoint_filter(&e("10.0.0.1:3306"))
        );
        assert_eq!(
            scope
                .extract_command(FindingKind::Errors, &["x.pcap"])
                .unwrap(),
            "pcapsleuth extract x.pcap --findings=errors --annotate -o errors.pcapng"
        );
        assert_eq!(Scope::Capture.wireshark_filter(), None);
    }
}
