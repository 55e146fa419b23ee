//! [`extract()`]: the packets a selection keeps, copied into a new capture.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use pcapsleuth_analysis::{self as analysis, EngineOptions};
use pcapsleuth_capture::{
    refuse_input_as_output, CaptureError, CaptureSet, Damage, PcapWriter, PcapngWriter, Timestamp,
};
use pcapsleuth_flow::Endpoint;

use crate::filter::{Filter, Seen};
use crate::picks::{findings_pass, Comments, Wanted};
use crate::selection::{Connections, Selection};
use crate::{rereadable, set_len, set_name, Error, Observer};

/// What [`extract()`] copies, and where to.
#[derive(Debug, Clone, Default)]
pub struct ExtractOptions {
    /// The packets kept: what every part of the selection and `wanted` keeps.
    pub selection: Selection,
    /// With [`Connections::Connection`]: only the connection on that 4-tuple that holds this frame
    /// (a reused 4-tuple holds several).
    pub at: Option<u64>,
    /// What the analyses pick (abnormal closes, findings) and whether the frames carry comments.
    pub wanted: Wanted,
    /// The capture written (beside itself under a temporary name, put in place when complete): pcap as
    /// the input was, pcapng with comments when [`Wanted::annotate`].
    pub output: PathBuf,
}

/// What [`extract()`] wrote.
#[derive(Debug)]
pub struct ExtractSummary {
    /// The capture as it was read for the copy (its files, their order, what was skipped).
    pub set: CaptureSet,
    /// Damage the reading survived.
    pub damage: Vec<Damage>,
    /// Packets written.
    pub packets: u64,
    /// The first and last frame written, in the original capture's numbering; `None`: none.
    pub span: Option<(u64, u64)>,
    /// Packets written with comments.
    pub annotated: u64,
    /// Records of a later pcapng section (another byte order, link type or timestamp unit) written as
    /// new packet blocks, on interfaces of their own, without their options.
    pub rewritten: u64,
    /// When nothing was kept: what each part of the selection matched on its own, with the likely
    /// mistake, one line each.
    pub nothing_matched: Vec<String>,
}

/// The capture `extract` writes: pcap as the input was, or pcapng with comments.
enum Writer {
    Pcap(PcapWriter),
    Pcapng(PcapngWriter),
}

/// Copies the packets `opts` selects from the capture `files` make (read as one capture, in time order:
/// see [`CaptureSet::open`]) into `opts.output`, records byte for byte. A selection of abnormal closes
/// or findings, or an annotated extract, reads the capture twice (an analysis pass first), as does a
/// 4-tuple, whose connections are delimited as the reports delimit them: such a capture cannot come
/// from a pipe. Refused before anything is read when the output is one of the inputs.
pub fn extract(
    files: &[PathBuf],
    opts: &ExtractOptions,
    observer: &dyn Observer,
) -> Result<ExtractSummary, Error> {
    let mut set = CaptureSet::open(files)?;
    refuse_input_as_output(&opts.output, set.identities())?;
    let mut filter = Filter {
        selection: opts.selection.clone(),
        picks: None,
    };
    let mut comments = HashMap::new();
    if opts.wanted.needs_analysis() {
        let connections = opts.selection.connections;
        let (again, picks, notes) = findings_pass(set, files, &opts.wanted, connections, observer)?;
        set = again;
        filter.picks = picks;
        comments = notes;
    }
    if let Some(Connections::Connection(a, b)) = opts.selection.connections {
        let (again, range) = connection_frames(set, files, (a, b), opts.at, observer)?;
        set = again;
        if let Some((first, last)) = range {
            let (lo, hi) = filter.selection.frames.unwrap_or((1, u64::MAX));
            filter.selection.frames = Some((lo.max(first), hi.min(last)));
        }
    }
    let mut summary = copy(set, &filter, &comments, opts, observer)?;
    if summary.span.is_none() {
        let again = rereadable(&summary.set);
        summary.nothing_matched = filter.nothing_matched(&summary.seen, || {
            again.then(|| mysql_servers(files)).flatten()
        });
    }
    Ok(summary.done)
}

/// A summary and what the selection matched, for the warning when nothing matched.
struct Copied {
    done: ExtractSummary,
    seen: Seen,
}

impl std::ops::Deref for Copied {
    type Target = ExtractSummary;
    fn deref(&self) -> &ExtractSummary {
        &self.done
    }
}

impl std::ops::DerefMut for Copied {
    fn deref_mut(&mut self) -> &mut ExtractSummary {
        &mut self.done
    }
}

/// The writing pass: every record `filter` keeps, with its comments when annotated.
fn copy(
    mut set: CaptureSet,
    filter: &Filter,
    comments: &Comments,
    opts: &ExtractOptions,
    observer: &dyn Observer,
) -> Result<Copied, Error> {
    let mut w = if opts.wanted.annotate {
        Writer::Pcapng(PcapngWriter::create(&opts.output, set.identities())?)
    } else {
        Writer::Pcap(PcapWriter::create_for_set(&opts.output, &set)?)
    };
    observer.begin("extracting from", &set_name(&set), set_len(&set));
    let (mut frame, mut first_ts) = (0u64, None);
    let (mut span, mut annotated) = (None::<(u64, u64)>, 0u64);
    let mut seen = Seen::default();
    let damage = set.pass(
        |_, rec| {
            frame += 1;
            let first = *first_ts.get_or_insert(rec.ts);
            seen.count = frame;
            seen.first_ts.get_or_insert(rec.ts);
            seen.last_ts = Some(seen.last_ts.map_or(rec.ts, |t: Timestamp| t.max(rec.ts)));
            if filter.keeps(frame, rec, first, &mut seen) {
                span = Some((span.map_or(frame, |s| s.0), frame));
                match &mut w {
                    Writer::Pcap(w) => w.write(rec)?,
                    Writer::Pcapng(w) => {
                        let notes: Vec<&str> = comments
                            .get(&frame)
                            .map(|c| c.iter().map(String::as_str).collect())
                            .unwrap_or_default();
                        annotated += u64::from(!notes.is_empty());
                        w.write(rec, &notes)?;
                    }
                }
            }
            Ok::<(), CaptureError>(())
        },
        |done, total| observer.progress(done, total),
    )?;
    observer.end();
    let (packets, rewritten) = match w {
        Writer::Pcap(w) => {
            let rewritten = w.rewritten();
            (w.finish()?, rewritten)
        }
        Writer::Pcapng(w) => (w.finish()?, 0),
    };
    Ok(Copied {
        done: ExtractSummary {
            set,
            damage,
            packets,
            span,
            annotated,
            rewritten,
            nothing_matched: Vec::new(),
        },
        seen,
    })
}

/// The frame range of the connection on the 4-tuple `a`-`b` that `--at` names, or of every connection
/// on it (with a warning when there are several): read from a first pass of the connection analysis over
/// `set`, so connections are delimited exactly as the reports delimit them. Returns the set opened
/// again for the pass that writes (or untouched, if it cannot be read twice).
fn connection_frames(
    mut set: CaptureSet,
    files: &[PathBuf],
    (a, b): (Endpoint, Endpoint),
    at: Option<u64>,
    observer: &dyn Observer,
) -> Result<(CaptureSet, Option<(u64, u64)>), Error> {
    if set.inputs.iter().any(|i| i.stored_len().is_none()) {
        if at.is_some() {
            return Err(Error::Usage(
                "--at reads the capture twice (once to delimit the connections); standard input and pipes are read once: save the capture to a file first".into()
            ));
        }
        observer.warning("standard input is read once, so connections that reused this 4-tuple are not told apart: all are extracted");
        return Ok((set, None));
    }
    let opts = EngineOptions {
        mysql: analysis::MysqlDetection::Off,
        ..EngineOptions::default()
    };
    observer.begin("finding connections in", &set_name(&set), set_len(&set));
    let analysis = analysis::analyze_set(
        &mut set,
        &opts,
        || (),
        |done, total| observer.progress(done, total),
    );
    observer.end();
    // Streams (compressed files) were read to their end: open everything again for the writing pass.
    let set = CaptureSet::open(files)?;
    let on_tuple: Vec<(u64, u64)> = analysis
        .connections
        .iter()
        .filter(|c| (c.client == a && c.server == b) || (c.client == b && c.server == a))
        .map(|c| (c.first.frame, c.last.frame))
        .collect();
    let spans = || {
        on_tuple
            .iter()
            .map(|(f, l)| format!("{f}-{l}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match at {
        Some(at) => match on_tuple.iter().find(|(f, l)| (*f..=*l).contains(&at)) {
            Some(&range) => Ok((set, Some(range))),
            None if on_tuple.is_empty() => Err(Error::Usage(format!(
                "--at {at}: no connection {a}-{b} in the capture"
            ))),
            None => Err(Error::Usage(format!(
                "--at {at}: no connection {a}-{b} holds frame {at} (its connections span frames {})",
                spans()
            ))),
        },
        None => {
            if on_tuple.len() > 1 {
                observer.warning(&format!(
                    "{} connections used {a}-{b} (frames {}); all of them are extracted: pick one with --at FRAME",
                    on_tuple.len(),
                    spans()
                ));
            }
            Ok((set, None))
        }
    }
}

/// The server endpoints of the capture's MySQL sessions, read in a pass of their own (for a warning);
/// `None` when the capture cannot be opened again.
fn mysql_servers(files: &[PathBuf]) -> Option<Vec<Endpoint>> {
    let mut set = CaptureSet::open(files).ok()?;
    let run = analysis::analyze_set(&mut set, &EngineOptions::default(), || (), |_, _| {});
    let servers: BTreeSet<Endpoint> = run
        .connections
        .iter()
        .zip(&run.mysql_sessions)
        .filter(|(_, m)| m.is_some())
        .map(|(c, _)| c.server)
        .collect();
    Some(servers.into_iter().collect())
}
