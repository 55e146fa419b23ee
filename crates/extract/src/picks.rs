//! What the analyses pick for `extract`: the connections of abnormal closes and of findings
//! ([`Picks`]), and the comments an annotated extract writes on the frames they point at.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use pcapsleuth_analysis::{
    self as analysis, CloseReport, ConnectionResends, EngineOptions, Everything, FindingKind,
    FullReport, NamedConnection, Run, Scope, Statistics,
};
use pcapsleuth_capture::CaptureSet;
use pcapsleuth_flow::Endpoint;
use pcapsleuth_report as report;

use crate::selection::Connections;
use crate::{set_len, set_name, Error, Observer};

/// Which findings' packets to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindingKinds {
    /// Every finding's.
    All,
    /// Those of these kinds (and the members of these kinds in a group headed by another kind).
    Only(Vec<FindingKind>),
}

impl FindingKinds {
    fn contains(&self, kind: FindingKind) -> bool {
        match self {
            FindingKinds::All => true,
            FindingKinds::Only(kinds) => kinds.contains(&kind),
        }
    }
}

/// What `extract` asks of the analyses: the packets of abnormal closes and findings, comments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wanted {
    /// Keep every connection with an abnormal close (as `first-reset` judges closes).
    pub abnormal: bool,
    /// Keep every connection (or server endpoint, or frames) a finding names.
    pub findings: Option<FindingKinds>,
    /// Write pcapng whose packets carry comments: the findings on the frames they point at, abnormal
    /// closes, first retransmissions.
    pub annotate: bool,
}

impl Wanted {
    /// Whether the capture must be analysed before it is copied.
    pub fn needs_analysis(&self) -> bool {
        self.abnormal || self.findings.is_some() || self.annotate
    }
}

/// The comments an annotated extract writes, by original frame number.
pub(crate) type Comments = HashMap<u64, Vec<String>>;

/// The packets --abnormal and --findings picked: whole connections (by 4-tuple, within their frames),
/// server endpoints, single frames.
#[derive(Default)]
pub(crate) struct Picks {
    /// By the 4-tuple's endpoints in order (lower first): the frame spans of its picked connections.
    connections: HashMap<(Endpoint, Endpoint), Vec<(u64, u64)>>,
    endpoints: Vec<Endpoint>,
    frames: BTreeSet<u64>,
}

impl Picks {
    fn add_connection(&mut self, c: &NamedConnection) {
        let key = (c.client.min(c.server), c.client.max(c.server));
        self.connections
            .entry(key)
            .or_default()
            .push((c.first_frame, c.last_frame));
    }

    fn add(&mut self, scope: &Scope) {
        match scope {
            Scope::Capture => {}
            Scope::Connections(list) => list.iter().for_each(|c| self.add_connection(c)),
            Scope::Endpoint(e) => self.endpoints.push(*e),
            Scope::Frames(frames) => self.frames.extend(frames),
        }
    }

    /// Whether frame `frame` (a TCP segment from `src` to `dst`, or not TCP) is picked.
    pub(crate) fn keeps(&self, frame: u64, tcp: Option<(Endpoint, Endpoint)>) -> bool {
        if self.frames.contains(&frame) {
            return true;
        }
        let Some((src, dst)) = tcp else {
            return false;
        };
        if self.endpoints.iter().any(|e| src == *e || dst == *e) {
            return true;
        }
        self.connections
            .get(&(src.min(dst), src.max(dst)))
            .is_some_and(|spans| spans.iter().any(|&(a, b)| (a..=b).contains(&frame)))
    }
}

/// Reads the capture once with every analysis for what `wanted` asks: the connections --abnormal and
/// --findings pick, and the comments --annotate writes (by original frame). Returns the set opened
/// again for the pass that writes.
pub(crate) fn findings_pass(
    mut set: CaptureSet,
    files: &[PathBuf],
    wanted: &Wanted,
    connections: Option<Connections>,
    observer: &dyn Observer,
) -> Result<(CaptureSet, Option<Picks>, Comments), Error> {
    if set.inputs.iter().any(|i| i.stored_len().is_none()) {
        return Err(Error::Usage(
            "--abnormal, --findings and --annotate read the capture twice (once to find what to select and annotate); standard input and pipes are read once: save the capture to a file first".into()
        ));
    }
    observer.begin("finding what to extract in", &set_name(&set), set_len(&set));
    // The first retransmissions of the connections selected (all, when only --abnormal or --findings
    // select), for --annotate.
    let keep = move |client: Endpoint, server: Endpoint| {
        wanted.annotate && connections.is_none_or(|c| c.matches(client, server))
    };
    let run = analysis::analyze_set(
        &mut set,
        &EngineOptions::default(),
        || (Everything::default(), analysis::Resends::new(keep)),
        |done, total| observer.progress(done, total),
    );
    observer.end();
    let mut resends = Vec::new();
    let run = run.map(|(statistics, r)| {
        resends = r;
        statistics
    });
    let set = CaptureSet::open(files)?;
    let report = analysis::full_report(&run);
    let closes = analysis::first_reset(&run, usize::MAX);
    let abnormal: Vec<&CloseReport> = closes.closes.iter().filter(|c| c.abnormal).collect();
    let picks = picks(wanted, &run, &report, &abnormal);
    let comments = if wanted.annotate {
        comments(&run, &report, &resends, &abnormal)
    } else {
        Comments::new()
    };
    Ok((set, picks, comments))
}

/// The connections `--abnormal` picks and what `--findings` picks.
fn picks(
    wanted: &Wanted,
    run: &Run<Statistics>,
    report: &FullReport,
    abnormal: &[&CloseReport],
) -> Option<Picks> {
    let mut picks = None::<Picks>;
    if wanted.abnormal {
        let p = picks.get_or_insert_with(Picks::default);
        for c in abnormal {
            if let Some(conn) = run
                .connections
                .iter()
                .find(|k| k.first.frame == c.connection_first_frame)
            {
                p.add_connection(&NamedConnection {
                    client: conn.client,
                    server: conn.server,
                    first_frame: conn.first.frame,
                    last_frame: conn.last.frame,
                    reused: false,
                });
            }
        }
    }
    if let Some(kinds) = &wanted.findings {
        let p = picks.get_or_insert_with(Picks::default);
        for f in &report.findings {
            if kinds.contains(f.kind) {
                p.add(&f.scope);
            }
            // A finding heading a group of another kind (the first abnormal close and the closes like
            // it) stands for its members: `--findings=mid_response_close` takes them too.
            for m in &f.members {
                if let FindingKinds::Only(k) = kinds {
                    if k.contains(&m.kind) && !k.contains(&f.kind) {
                        p.add(&m.scope);
                    }
                }
            }
        }
    }
    picks
}

/// The comments of an annotated extract, by original frame: each finding's words on the frames it
/// points at, the first retransmissions, and each abnormal close (where its stall began, when no
/// finding said it).
fn comments(
    run: &Run<Statistics>,
    report: &FullReport,
    resends: &[ConnectionResends],
    abnormal: &[&CloseReport],
) -> Comments {
    let mut comments = Comments::new();
    // Wireshark shows comments as they are, and `tshark -V` or `capinfos` print them to a terminal.
    let mut say = |kind: FindingKind, frame: u64, text: &str| {
        let comment = format!(
            "pcapsleuth {kind} (frame {frame} of the original capture): {}",
            report::visible(text)
        );
        let list = comments.entry(frame).or_default();
        if !list.contains(&comment) {
            list.push(comment);
        }
    };
    for f in &report.findings {
        // A group's frames are each commented with their own member's words; the head's with its.
        let of_members: BTreeSet<u64> = f
            .members
            .iter()
            .flat_map(|m| m.frames.iter().copied())
            .collect();
        for &frame in f.frames.iter().filter(|x| !of_members.contains(x)) {
            say(f.kind, frame, &f.summary);
        }
        for m in &f.members {
            for &frame in &m.frames {
                say(m.kind, frame, &m.summary);
            }
            for (&frame, note) in &m.frame_notes {
                say(m.kind, frame, note);
            }
        }
        for (&frame, note) in &f.frame_notes {
            say(f.kind, frame, note);
        }
    }
    for (frame, note) in resends.iter().flat_map(|c| c.notes()) {
        say(FindingKind::Retransmissions, frame, &note);
    }
    // Where the stall that led to an abnormal close began, when no finding said it.
    let closes: BTreeSet<u64> = abnormal.iter().map(|c| c.frame).collect();
    for ev in run
        .connections
        .iter()
        .flat_map(|c| [c.first_fin, c.first_rst])
        .flatten()
        .filter(|ev| closes.contains(&ev.event.at.frame))
    {
        if let Some((frame, note)) = analysis::stall_start(&ev) {
            comments.entry(frame).or_insert_with(|| {
                vec![format!(
                    "pcapsleuth abnormal close (frame {frame} of the original capture): {}",
                    report::visible(&note)
                )]
            });
        }
    }
    for c in abnormal {
        let list = comments.entry(c.frame).or_default();
        if list.is_empty() {
            list.push(format!(
                "pcapsleuth abnormal close (frame {} of the original capture): {} by the {}: {}",
                c.frame,
                if c.flag == pcapsleuth_flow::CloseFlag::Rst {
                    "RST"
                } else {
                    "FIN"
                },
                role_word(c.initiator),
                report::visible(&c.reason)
            ));
        }
    }
    comments
}

fn role_word(r: pcapsleuth_flow::Role) -> &'static str {
    match r {
        pcapsleuth_flow::Role::Client => "client",
        pcapsleuth_flow::Role::Server => "server",
        _ => "unknown side",
    }
}
