//! The hint the engine's scan may give the MySQL glue about a segment's payload.
//!
//! Where MySQL exchanges are followed undecoded ([`MysqlDepth::Closes`]), the glue needs to know what a
//! payload is to an exchange (a plain query, an OK, a whole resultset, ...) without reading its bytes a
//! second time. The scan has just read them, so it asks [`PayloadHint::of`] there, and the engine carries
//! the answer, opaque, in its packet event to the tracking phase, which hands it back to
//! [`MysqlTrack::segment`](super::MysqlTrack::segment). The engine knows only that a hint is a few bits
//! and whether one was told; what it means is the glue's.

use pcapsleuth_mysql::PieceShape;

use super::{MysqlDepth, MysqlDetection};

/// What the scan tells the MySQL glue of a segment's payload: its [`PieceShape`], in
/// [`PayloadHint::BITS`] bits so that it fits beside a packet event's other facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PayloadHint(PieceShape);

impl PayloadHint {
    /// How many bits a hint takes ([`PayloadHint::bits`]).
    pub(crate) const BITS: u8 = 3;

    /// No hint: the glue reads the bytes.
    pub(crate) const NONE: PayloadHint = PayloadHint(PieceShape::Unknown);

    /// Whether a run with this detection and depth wants hints: only where MySQL exchanges are
    /// followed undecoded.
    #[inline]
    pub(crate) fn wanted(detection: MysqlDetection, depth: MysqlDepth) -> bool {
        depth == MysqlDepth::Closes && detection != MysqlDetection::Off
    }

    /// The hint for `payload`, a segment's whole payload.
    #[inline]
    pub(crate) fn of(payload: &[u8]) -> PayloadHint {
        PayloadHint(PieceShape::of(payload))
    }

    /// The hint from the bits [`PayloadHint::bits`] gave.
    #[inline]
    pub(crate) fn from_bits(bits: u8) -> PayloadHint {
        PayloadHint(PieceShape::from_bits(bits))
    }

    /// The hint in [`PayloadHint::BITS`] bits; zero is [`PayloadHint::NONE`].
    #[inline]
    pub(crate) fn bits(self) -> u8 {
        self.0.bits()
    }

    /// Whether the scan told anything (the glue then need not read the payload).
    #[inline]
    pub(crate) fn told(self) -> bool {
        self.0 != PieceShape::Unknown
    }

    /// The payload's shape to a MySQL exchange.
    #[inline]
    pub(crate) fn shape(self) -> PieceShape {
        self.0
    }
}
