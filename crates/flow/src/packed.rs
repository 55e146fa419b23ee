//! Connections at rest, in few bytes.
//!
//! A connection's tracking state ([`ConnectionState`]) takes about 1.2 KB in memory, most of it options
//! that are empty for most connections: the closes, resends and zero windows of both sides, the handshake's
//! packets. A capture holds millions of connections that wait for nothing (a SYN flood's attempts, the
//! connections of a connect storm once closed), so what follows them keeps each at rest in a lossless,
//! compact form ([`PackedState`]: about 40 bytes for an attempt seen from its SYN, about 110 for a whole
//! short connection), and unpacks it when another packet comes. [`ConnectionTable`] holds a run's
//! concluded connections the same way, each read back as a [`Connection`] when asked for. The encoding is
//! `packing`'s.

use serde::{Serialize, Serializer};
use std::collections::HashSet;

use crate::key::{Endpoint, FlowKey, Side};
use crate::packing::Unpacker;
use crate::tcp::{Connection, ConnectionState, RoleBasis};

/// A connection's tracking state in few bytes ([`ConnectionState::packed`]); [`PackedState::unpack`]
/// gives it back, equal in every field.
#[derive(Clone, PartialEq, Eq)]
pub struct PackedState(Box<[u8]>);

impl PackedState {
    /// The state packed.
    pub fn unpack(&self) -> ConnectionState {
        ConnectionState::unpack(&self.0)
    }

    /// The connection's 4-tuple, read without unpacking the rest.
    pub fn key(&self) -> FlowKey {
        Unpacker::new(&self.0).key()
    }

    /// The frame of the connection's first packet, read without unpacking the rest.
    pub fn first_frame(&self) -> u64 {
        let mut u = Unpacker::new(&self.0);
        u.key();
        u.u64()
    }

    /// Bytes the packed state takes (beside the box that holds them).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it takes no bytes (never: a state holds at least its key).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for PackedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.unpack().fmt(f)
    }
}

impl ConnectionState {
    /// The state packed in few bytes (see [`PackedState`]).
    pub fn packed(&self) -> PackedState {
        let mut out = Vec::with_capacity(96);
        self.pack(&mut out);
        PackedState(out.into_boxed_slice())
    }
}

/// How a connection's roles were decided, beside its packed state: which side is the client, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Roles(Option<(Side, RoleBasis)>);

/// Tables of at most this many connections keep them read back ([`Connection`], 656 bytes each: at
/// most 43 MB), so that reports that walk them many times do not unpack them each time; larger ones keep
/// them packed.
pub const CONNECTIONS_KEPT_UNPACKED: usize = 1 << 16;

/// Every connection of a run, in order of first packet, with its roles, read back as a [`Connection`]
/// when asked for. A table made for more than [`CONNECTIONS_KEPT_UNPACKED`] connections keeps each packed
/// ([`PackedState`]): a run of a million connections holds about 100 MB here rather than 660.
///
/// ```
/// use pcapsleuth_capture::Timestamp;
/// use pcapsleuth_flow::{ConnectionTable, ConnectionTracker, Endpoint, FlowKey, FrameRef, RoleBasis, Side};
///
/// let (client, server): (Endpoint, Endpoint) = ("10.0.0.2:50000".parse()?, "10.0.0.1:3306".parse()?);
/// let (key, client_side) = FlowKey::of(client, server);
/// let at = FrameRef { frame: 1, ts: Timestamp(1_700_000_000_000_000_000) };
/// let state = ConnectionTracker::new(key, at).into_current();
/// let mut table = ConnectionTable::default();
/// table.push(state.packed(), Some((client_side, RoleBasis::Port)));
/// let c = table.get(0).expect("one connection");
/// assert_eq!((c.client, c.server, c.first.frame), (client, server, 1));
/// assert_eq!(table.iter().count(), 1);
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone)]
pub struct ConnectionTable {
    rows: Rows,
    /// The 4-tuples that carried more than one connection (a port reused).
    reused: HashSet<FlowKey>,
}

/// The connections of a table, read back or packed.
#[derive(Debug, Clone)]
enum Rows {
    Unpacked(Vec<Connection>),
    Packed(Vec<(PackedState, Roles)>),
}

impl Default for ConnectionTable {
    fn default() -> Self {
        ConnectionTable::with_capacity(0)
    }
}

/// Tables are equal when their connections are (and the 4-tuples they were told reused), however kept.
impl PartialEq for ConnectionTable {
    fn eq(&self, o: &Self) -> bool {
        self.len() == o.len() && self.reused == o.reused && self.iter().eq(o.iter())
    }
}

impl ConnectionTable {
    /// An empty table for `n` connections: kept read back up to [`CONNECTIONS_KEPT_UNPACKED`], else
    /// packed (whatever is pushed later).
    pub fn with_capacity(n: usize) -> Self {
        ConnectionTable {
            rows: if n <= CONNECTIONS_KEPT_UNPACKED {
                Rows::Unpacked(Vec::with_capacity(n))
            } else {
                Rows::Packed(Vec::with_capacity(n))
            },
            reused: HashSet::new(),
        }
    }

    /// Notes that the 4-tuple `key` carried more than one connection (a connection on it ended because
    /// a new one began: [`crate::Fed::replaced`]).
    pub fn note_reused(&mut self, key: FlowKey) {
        self.reused.insert(key);
    }

    /// Whether the 4-tuple of `client` and `server` carried more than one connection of the table (as
    /// the table was told: [`ConnectionTable::note_reused`]).
    pub fn reused(&self, client: Endpoint, server: Endpoint) -> bool {
        !self.reused.is_empty() && self.reused.contains(&FlowKey::of(client, server).0)
    }

    /// Adds a connection: its packed state, and its client side with how it was decided (`None`: not
    /// known, the flow key's lower endpoint is named the client).
    pub fn push(&mut self, state: PackedState, client: Option<(Side, RoleBasis)>) {
        match &mut self.rows {
            Rows::Unpacked(rows) => rows.push(state.unpack().finish(client)),
            Rows::Packed(rows) => rows.push((state, Roles(client))),
        }
    }

    /// How many connections.
    pub fn len(&self) -> usize {
        match &self.rows {
            Rows::Unpacked(rows) => rows.len(),
            Rows::Packed(rows) => rows.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`th connection (in order of first packet).
    pub fn get(&self, i: usize) -> Option<Connection> {
        match &self.rows {
            Rows::Unpacked(rows) => rows.get(i).copied(),
            Rows::Packed(rows) => rows.get(i).map(|(s, r)| s.unpack().finish(r.0)),
        }
    }

    /// The `i`th connection (in order of first packet).
    ///
    /// # Panics
    ///
    /// If `i` is not below [`ConnectionTable::len`], as indexing a slice does.
    pub fn at(&self, i: usize) -> Connection {
        match &self.rows {
            Rows::Unpacked(rows) => rows[i],
            Rows::Packed(rows) => {
                let (s, r) = &rows[i];
                s.unpack().finish(r.0)
            }
        }
    }

    /// The connection whose first packet is frame `frame`, found by its order (no two connections
    /// share a first packet).
    pub fn by_first_frame(&self, frame: u64) -> Option<Connection> {
        let i = match &self.rows {
            Rows::Unpacked(rows) => rows.binary_search_by_key(&frame, |c| c.first.frame),
            Rows::Packed(rows) => rows.binary_search_by_key(&frame, |(s, _)| s.first_frame()),
        };
        self.get(i.ok()?)
    }

    /// Every connection, in order of first packet.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            rows: match &self.rows {
                Rows::Unpacked(rows) => RowsIter::Unpacked(rows.iter()),
                Rows::Packed(rows) => RowsIter::Packed(rows.iter()),
            },
        }
    }
}

/// The connections of a [`ConnectionTable`], each read back as it comes.
#[derive(Clone)]
pub struct Iter<'a> {
    rows: RowsIter<'a>,
}

#[derive(Clone)]
enum RowsIter<'a> {
    Unpacked(std::slice::Iter<'a, Connection>),
    Packed(std::slice::Iter<'a, (PackedState, Roles)>),
}

fn read((s, r): &(PackedState, Roles)) -> Connection {
    s.unpack().finish(r.0)
}

impl Iterator for Iter<'_> {
    type Item = Connection;

    fn next(&mut self) -> Option<Connection> {
        match &mut self.rows {
            RowsIter::Unpacked(i) => i.next().copied(),
            RowsIter::Packed(i) => i.next().map(read),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.rows {
            RowsIter::Unpacked(i) => i.size_hint(),
            RowsIter::Packed(i) => i.size_hint(),
        }
    }

    fn nth(&mut self, n: usize) -> Option<Connection> {
        match &mut self.rows {
            RowsIter::Unpacked(i) => i.nth(n).copied(),
            RowsIter::Packed(i) => i.nth(n).map(read),
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Connection> {
        match &mut self.rows {
            RowsIter::Unpacked(i) => i.next_back().copied(),
            RowsIter::Packed(i) => i.next_back().map(read),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a ConnectionTable {
    type Item = Connection;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// A JSON array of the connections, written one by one (none is held beside the table).
impl Serialize for ConnectionTable {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::FrameRef;
    use pcapsleuth_capture::Timestamp;

    /// A table kept packed and one kept read back give the same connections, and compare equal.
    #[test]
    fn packed_and_unpacked_tables_read_the_same() {
        use crate::tcp::ConnectionTracker;
        let server: Endpoint = "10.0.0.1:3306".parse().unwrap();
        let states: Vec<(PackedState, Option<(Side, RoleBasis)>)> = (0..50u16)
            .map(|i| {
                let client: Endpoint = format!("10.0.{}.2:{}", i % 7, 40000 + i).parse().unwrap();
                let (key, side) = FlowKey::of(client, server);
                let at = FrameRef {
                    frame: u64::from(i) * 3 + 1,
                    ts: Timestamp(1_700_000_000_000_000_000 + i64::from(i)),
                };
                let roles = (i % 3 != 0).then_some((side, RoleBasis::Port));
                (
                    ConnectionTracker::new(key, at).into_current().packed(),
                    roles,
                )
            })
            .collect();
        let mut small = ConnectionTable::with_capacity(states.len());
        let mut large = ConnectionTable::with_capacity(CONNECTIONS_KEPT_UNPACKED + 1);
        for (s, r) in &states {
            small.push(s.clone(), *r);
            large.push(s.clone(), *r);
        }
        assert!(matches!(small.rows, Rows::Unpacked(_)) && matches!(large.rows, Rows::Packed(_)));
        assert!(small == large);
        assert!(small.iter().eq(large.iter()));
        assert!(small.iter().rev().eq(large.iter().rev()));
        for i in [0, 7, 49] {
            assert_eq!(small.at(i), large.at(i));
            let frame = small.at(i).first.frame;
            assert_eq!(large.by_first_frame(frame), Some(small.at(i)));
        }
        assert_eq!((small.get(50), large.by_first_frame(2)), (None, None));
    }
}
