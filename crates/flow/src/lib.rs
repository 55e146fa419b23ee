//! Packet decoding and TCP connection tracking.
//!
//! [`decode`] turns a record's bytes into a [`TcpSegment`] (Ethernet with VLAN tags, Linux cooked v1/v2,
//! raw IP, BSD loopback; IPv4 and IPv6; through VXLAN, Geneve, GRE/ERSPAN, IP-in-IP and MPLS tunnels to the
//! packet they carry). [`FlowKey`] names a 4-tuple without direction.
//! [`ConnectionTracker`] follows one 4-tuple through its connections and concludes each into a
//! [`Connection`]: roles, handshake RTT, per-direction counters, and how it closed.
//!
//! ```
//! use pcapsleuth_flow::{decode, Decoded};
//! use pcapsleuth_capture::LinkType;
//! assert!(matches!(decode(LinkType::Ethernet, &[0u8; 10]), Decoded::Undecodable));
//! ```

mod decode;
mod fields;
mod frame;
mod handshake;
mod key;
mod reassembly;
mod tcp;
mod tunnel;

pub use decode::{decode, decode_general, Decoded, TcpFlags, TcpSegment};
pub use frame::FrameRef;
pub use handshake::{AttemptOutcome, Handshake, SynOptions};
pub use key::{Endpoint, FlowBuildHasher, FlowHasher, FlowKey, Side};
pub use reassembly::{StreamEvent, StreamReassembler, MAX_HELD_BYTES};
pub use tcp::{
    server_side_by_port, CloseEvent, CloseFlag, ClosedBy, Connection, ConnectionEnd,
    ConnectionState, ConnectionTracker, DirectionStats, Fed, Role, RoleBasis, SegmentClass,
    ZeroWindowSpell,
};
