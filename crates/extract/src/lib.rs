//! New captures cut from a capture, records copied byte for byte (original link type and timestamps):
//!
//! * [`extract()`] writes the packets a [`Selection`] keeps (connections by port, endpoint or 4-tuple,
//!   frames, a time range, and what the analyses pick: abnormal closes, findings), as pcap, or as
//!   pcapng whose packets carry the findings as comments;
//! * [`split()`] cuts a capture into pieces of N packets or N megabytes, put in place together.
//!
//! Frames are numbered as the reports number them (Wireshark's, from 1, across every file read). Both
//! take the capture's files (a set read as one capture: see [`CaptureSet`]) and an options struct, tell
//! an [`Observer`] how far they are and what they noticed, and return a summary of what they wrote.
//! Outputs appear only when complete: a temporary file renamed, a staging directory put in place.
//! Neither ever writes to an input.
//!
//! This crate never decides what to print: the command-line tool words the summaries.

#![deny(missing_docs)]

mod extract;
mod filter;
mod picks;
mod selection;
mod split;

use pcapsleuth_capture::{CaptureError, CaptureSet};

pub use extract::{extract, ExtractOptions, ExtractSummary};
pub use picks::{FindingKinds, Wanted};
pub use selection::{Connections, Selection, TimeBound, TimeRange};
pub use split::{is_piece_name, split, Existing, PieceSize, SplitOptions, SplitSummary};

/// Why an extract or a split could not be done.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What was asked cannot be done with these inputs (a selection naming a frame no connection holds,
    /// a capture that must be read twice coming from a pipe, an output directory holding an earlier
    /// split): the command-line tool's exit code 2. The text names the command-line options.
    #[error("{0}")]
    Usage(String),
    /// The capture could not be read, or an output could not be written.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A file-system step around the outputs failed (what was being done, and why).
    #[error("{what}")]
    Io {
        /// What was being done: `creating out/`.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.into();
        move |source| Error::Io { what, source }
    }
}

/// What a long run tells while it works: how far it is (for a progress line) and what it noticed
/// (warnings and notes, one line each, without a prefix). Every method has a default that does
/// nothing; `()` is the observer that listens to nothing.
pub trait Observer: Sync {
    /// A pass over `len` bytes of `name` (a file's path, or "12 files") begins; `doing` says what it
    /// does ("extracting from").
    fn begin(&self, _doing: &str, _name: &str, _len: u64) {}
    /// `done` of `total` bytes are read. Called often, from any thread.
    fn progress(&self, _done: u64, _total: u64) {}
    /// The pass is over.
    fn end(&self) {}
    /// Something worth knowing that changes nothing ("removed a staging directory left by a split that
    /// was killed").
    fn note(&self, _text: &str) {}
    /// Something that may make the result differ from what was meant.
    fn warning(&self, _text: &str) {}
}

impl Observer for () {}

/// "big.pcap" or "12 files", for progress lines.
fn set_name(set: &CaptureSet) -> String {
    match &set.inputs[..] {
        [one] => one.path().display().to_string(),
        many => format!("{} files", many.len()),
    }
}

/// The bytes of the set as stored (what is known: pipes have no length).
fn set_len(set: &CaptureSet) -> u64 {
    set.inputs.iter().filter_map(|i| i.stored_len()).sum()
}

/// Whether every input can be read again (none is a pipe or standard input).
fn rereadable(set: &CaptureSet) -> bool {
    set.inputs.iter().all(|i| i.stored_len().is_some())
}
