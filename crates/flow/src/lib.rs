//! Packet decoding and TCP connection tracking.
//!
//! [`decode`] turns a record's bytes into a [`TcpSegment`] (Ethernet with VLAN tags, Linux cooked v1/v2,
//! raw IP, BSD loopback; IPv4 and IPv6; through VXLAN, Geneve, GRE/ERSPAN, IP-in-IP and MPLS tunnels to the
//! packet they carry). [`FlowKey`] names a 4-tuple without direction.
//! [`ConnectionTracker`] follows one 4-tuple through its connections and concludes each into a
//! [`Connection`]: roles, handshake RTT, per-direction counters, and how it closed.
//! [`StreamReassembler`] turns one direction's segments into ordered bytes, with gaps where the capture
//! lost some, for a protocol decoder. [`IpReassembler`] puts IP fragments ([`Decoded::Fragment`]) back
//! together into the datagrams they were cut from, as the receiving host's stack does.
//!
//! Following every connection of a capture, as the engine of `pcapsleuth-analysis` does in parallel:
//!
//! ```
//! use std::collections::HashMap;
//! use pcapsleuth_capture::Capture;
//! use pcapsleuth_flow::{decode, CloseFlag, ConnectionTracker, Decoded, FlowKey, FrameRef, Role};
//!
//! let cap = Capture::open(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/server-closes.pcap"))?;
//! let mut trackers = HashMap::new();
//! let (mut reader, mut frame) = (cap.reader_all(), 0);
//! while let Some(record) = reader.next_record() {
//!     frame += 1;
//!     let Decoded::Tcp(seg) = decode(record.link, record.data) else { continue };
//!     let (key, side) = FlowKey::of(seg.src_endpoint(), seg.dst_endpoint());
//!     let at = FrameRef { frame, ts: record.ts };
//!     let tracker = trackers.entry(key).or_insert_with(|| ConnectionTracker::new(key, at));
//!     // A SYN that starts a new connection on the 4-tuple hands back the one it ended, in
//!     // `Fed::replaced` (none in this capture).
//!     tracker.feed(side, &seg, record.orig_len, at);
//! }
//! let mut closes: Vec<_> = trackers
//!     .into_values()
//!     .map(|t| {
//!         let state = t.into_current();
//!         let client = state.handshake_client(); // from the SYN
//!         let close = state.finish(client).close().unwrap();
//!         (close.event.at.frame, close.by, close.event.flag)
//!     })
//!     .collect();
//! closes.sort();
//! // The server closed both sessions: a FIN when it was killed, a RST at wait_timeout.
//! assert_eq!(closes, [(13, Role::Server, CloseFlag::Fin), (29, Role::Server, CloseFlag::Rst)]);
//! # Ok::<(), pcapsleuth_capture::CaptureError>(())
//! ```

#![deny(missing_docs)]

mod decode;
mod fields;
mod fragments;
mod frame;
mod handshake;
mod key;
mod packed;
mod packing;
mod reassembly;
mod tcp;
mod tunnel;

pub use decode::{decode, decode_general, decode_segment, Decoded, NotTcp, TcpFlags, TcpSegment};
pub use fragments::{
    IpFragment, IpReassembler, NotReassembled, Reassembled, ReassemblyFacts, ReassemblyFailure,
    UnreassembledDatagram, IPV4_TIMEOUT_NS, IPV6_TIMEOUT_NS, REASSEMBLY_MEMORY,
};
pub use frame::FrameRef;
pub use handshake::{AttemptOutcome, Handshake, SynOptions};
pub use key::{Endpoint, FlowBuildHasher, FlowHasher, FlowKey, Side};
pub use packed::{
    ConnectionTable, Iter as ConnectionTableIter, PackedState, CONNECTIONS_KEPT_UNPACKED,
};
pub use reassembly::{StreamEvent, StreamReassembler, MAX_HELD_BYTES};
pub use tcp::{
    server_side_by_port, CloseEvent, CloseFlag, ClosedBy, Connection, ConnectionEnd,
    ConnectionState, ConnectionTracker, DirectionStats, Fed, Role, RoleBasis, SegmentClass,
    TtlRange, ZeroWindowSpell, TTL_SAMPLES,
};
