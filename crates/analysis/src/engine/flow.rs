//! A flow as phase 2 holds it: its current connection, followed (live) or at rest, and its slot in a
//! bucket.

use hashbrown::HashTable;
use pcapsleuth_flow::{ConnectionState, ConnectionTracker, FlowKey, FrameRef, PackedState, Side};

use crate::events::ConnectionView;
use crate::mysql::{MysqlDepth, MysqlDetection, MysqlSessionFacts, MysqlTrack};

use super::options::EngineOptions;

/// One flow's state in phase 2: its current connection, followed or at rest, and the analysis' state
/// for it.
pub(super) struct FlowSlot<C> {
    pub(super) flow: Flow,
    /// The analysis' state for the current connection.
    pub(super) state: C,
}

/// A flow's current connection, as phase 2 keeps it between its packets.
pub(super) enum Flow {
    /// Followed packet by packet: its TCP tracker and MySQL decoder in full.
    Live(Box<LiveFlow>),
    /// At rest in few bytes: a connection whose MySQL decoder was told nothing yet (seen only in its
    /// handshake and ACKs, as every attempt of a SYN flood) or is concluded (the connection ended). Its
    /// next packet makes it live again, exactly as it was: memory follows the connections that are
    /// followed, not every connection the capture began.
    Resting(RestingFlow),
}

/// A connection followed packet by packet.
pub(super) struct LiveFlow {
    pub(super) tracker: ConnectionTracker,
    pub(super) mysql: MysqlTrack,
    /// MySQL facts of the current connection, concluded as soon as it finished so that its decoder state
    /// is freed: memory follows open connections, not all connections ever seen.
    pub(super) concluded: Option<Option<Box<MysqlSessionFacts>>>,
    /// The client side MySQL named, kept when its decoder is concluded.
    pub(super) mysql_client: Option<Side>,
}

/// A connection at rest ([`Flow::Resting`]).
pub(super) struct RestingFlow {
    tcp: PackedState,
    mysql: RestingMysql,
}

/// The MySQL decoder of a connection at rest.
enum RestingMysql {
    /// As [`MysqlTrack::new`] made it, told only these retransmission times (in order).
    Untouched(Option<Box<[i64]>>),
    /// Concluded: the session's facts (`None`: not MySQL), and the client side MySQL named.
    Concluded(Option<Box<MysqlSessionFacts>>, Option<Side>),
}

impl Flow {
    /// A new flow's first connection, from its first packet `at`.
    fn new(key: FlowKey, at: FrameRef, opts: &EngineOptions) -> Flow {
        Flow::Live(Box::new(LiveFlow {
            tracker: ConnectionTracker::new(key, at),
            mysql: MysqlTrack::new(opts.mysql, opts.mysql_depth, opts.tls_keys.as_ref()),
            concluded: None,
            mysql_client: None,
        }))
    }

    /// The flow's 4-tuple.
    fn key(&self) -> FlowKey {
        match self {
            Flow::Live(live) => live.tracker.current().key(),
            Flow::Resting(rest) => rest.tcp.key(),
        }
    }

    /// The connection followed, made live if it was at rest (in `spare`'s allocation, if there is one).
    #[inline]
    pub(super) fn live(
        &mut self,
        opts: &EngineOptions,
        spare: &mut Option<Box<LiveFlow>>,
    ) -> &mut LiveFlow {
        if let Flow::Resting(_) = self {
            self.wake(opts, spare);
        }
        match self {
            Flow::Live(live) => live,
            Flow::Resting(_) => unreachable!("woken above"),
        }
    }

    #[inline(never)]
    fn wake(&mut self, opts: &EngineOptions, spare: &mut Option<Box<LiveFlow>>) {
        let Flow::Resting(rest) = self else { return };
        let tracker = ConnectionTracker::resume(rest.tcp.unpack());
        let (mysql, concluded, mysql_client) = match &mut rest.mysql {
            RestingMysql::Untouched(retransmissions) => {
                let mut mysql =
                    MysqlTrack::new(opts.mysql, opts.mysql_depth, opts.tls_keys.as_ref());
                for &ts in retransmissions.iter().flat_map(|r| r.iter()) {
                    mysql.retransmission(ts);
                }
                (mysql, None, None)
            }
            RestingMysql::Concluded(facts, client) => (
                MysqlTrack::new(MysqlDetection::Off, MysqlDepth::Full, None),
                Some(facts.take()),
                *client,
            ),
        };
        let live = LiveFlow {
            tracker,
            mysql,
            concluded,
            mysql_client,
        };
        *self = Flow::Live(match spare.take() {
            Some(mut b) => {
                *b = live;
                b
            }
            None => Box::new(live),
        });
    }

    /// Puts the connection at rest if nothing it holds is lost by it (see [`Flow::Resting`]), keeping
    /// its allocation in `spare`. A concluded decoder is not kept: after its conclusion it is one that
    /// decodes nothing, whose retransmission times nothing reads.
    #[inline(never)]
    pub(super) fn rest(&mut self, opts: &EngineOptions, spare: &mut Option<Box<LiveFlow>>) {
        let Flow::Live(live) = self else { return };
        let mysql = match &mut live.concluded {
            Some(facts) => RestingMysql::Concluded(facts.take(), live.mysql_client),
            None => match live.mysql.untouched(opts.mysql) {
                Some(r) if r.is_empty() => RestingMysql::Untouched(None),
                Some(r) => RestingMysql::Untouched(Some(r.iter().copied().collect())),
                None => return,
            },
        };
        let tcp = live.tracker.current().packed();
        // Every test run checks the packing on every connection of every capture it reads.
        debug_assert!(tcp.unpack() == *live.tracker.current());
        let resting = Flow::Resting(RestingFlow { tcp, mysql });
        if let Flow::Live(b) = std::mem::replace(self, resting) {
            if spare.is_none() {
                *spare = Some(b);
            }
        }
    }

    /// The connection, live, for its end.
    pub(super) fn into_live(self, opts: &EngineOptions) -> LiveFlow {
        let mut flow = self;
        let mut spare = None;
        flow.live(opts, &mut spare);
        match flow {
            Flow::Live(live) => *live,
            Flow::Resting(_) => unreachable!("made live above"),
        }
    }
}

/// A connection as an analysis sees it: its TCP state, and the client MySQL named (by the decoder
/// `mysql`, or kept in `concluded_client` when the decoder was concluded).
#[inline]
pub(super) fn view_of<'a>(
    tcp: &'a ConnectionState,
    mysql: &MysqlTrack,
    concluded_client: Option<Side>,
) -> ConnectionView<'a> {
    ConnectionView::new(
        tcp,
        mysql.client().or(concluded_client),
        mysql.is_mysql() || concluded_client.is_some(),
    )
}

/// The slot of the flow `key` (made for it, from its first packet `at`, if it has none), and whether it
/// was made now.
#[inline(never)]
pub(super) fn slot_of_key<C: Default>(
    index: &mut HashTable<u32>,
    slots: &mut Vec<FlowSlot<C>>,
    key: &FlowKey,
    at: FrameRef,
    opts: &EngineOptions,
) -> (usize, bool) {
    let hash = key.stable_hash();
    if let Some(&i) = index.find(hash, |&i| slots[i as usize].flow.key() == *key) {
        return (i as usize, false);
    }
    let i = slots.len();
    slots.push(FlowSlot {
        flow: Flow::new(*key, at, opts),
        state: C::default(),
    });
    // Fewer flows than packets, whose frame numbers are u64: never near u32::MAX in memory.
    index.insert_unique(hash, i as u32, |&j| {
        slots[j as usize].flow.key().stable_hash()
    });
    (i, true)
}
