//! Why: the cause of an abnormal close, of a request cut off, of a slow hump, named as a hypothesis with
//! the evidence it rests on, in the terms a DBA or SRE acts on (a server setting that timed out, the error
//! the server sent, a pool that reused a connection the server had closed, a device on the path that sent
//! the packet).
//!
//! A [`Cause`] is what every report says about it: `first-reset`, `flows`, `mysql`'s incidents, `report`'s
//! findings and its HTML page print its [`Cause::summary`] and [`Cause::evidence`] as they are, and give it
//! whole in JSON as a `cause` object beside the older `reason`. The sentences are written here and nowhere
//! else (`Cause::new` and the functions of this module), so that the same close reads the same in each
//! report; the thresholds that decide them are in `thresholds.rs`, each with its reason.
//!
//! The model apart from the inference, so that the types sit below everything that infers or reports:
//!
//! * `model.rs`: [`Cause`] and the types it is made of; it infers nothing.
//! * `errors.rs`: what a MySQL error code means ([`error_meaning`]); `wait.rs`: a timer's waits
//!   ([`round_wait`], [`wait_words`]).
//! * The inference, by story: `close.rs` (why a connection closed), `hump.rs` (why a hump of response
//!   times is slow), `path_device.rs` (a device between two capture points that closed or forged).
//!
//! A cause is never a verdict: its [`Confidence`] says how far the capture proves it, and its evidence says
//! from which packets.
//!
//! ```
//! use pcapsleuth_analysis::cause::{round_wait, Confidence, Setting};
//!
//! // A close 3.0004 s after the request it cut off: a wait at a whole number of seconds, a timer's.
//! let w = round_wait(3_000_400_000).unwrap();
//! assert_eq!(w.seconds, 3);
//! assert!(round_wait(1_225_246_000).is_none());
//! assert_eq!(Setting::NetWriteTimeout.name(), "net_write_timeout");
//! assert!(Confidence::Certain > Confidence::Possible);
//! ```

mod close;
mod errors;
mod hump;
mod model;
mod path_device;
mod wait;

pub(crate) use close::{of_close, ttl_fits, CloseFacts};
pub use errors::{error_meaning, ErrorMeaning};
pub(crate) use hump::{of_hump, HumpFacts};
pub(crate) use model::WaitKind;
pub use model::{Cause, CauseError, CauseKind, Confidence, Evidence, Sender, Setting, TtlMismatch};
pub(crate) use path_device::{close_not_sent, device_closed_both, DeviceCloseFacts, NotSentFacts};
pub(crate) use wait::narrow_hump;
pub use wait::{round_wait, wait_words, RoundWait};
