//! Phase 2, tracking: one bucket's events fed, in capture order, to each flow's TCP tracker and MySQL
//! glue, and what they saw told to the bucket's analysis instance.

use hashbrown::HashTable;
use pcapsleuth_capture::Timestamp;
use pcapsleuth_flow::{
    CloseFlag, ConnectionState, FrameRef, PackedState, RoleBasis, SegmentClass, Side, TcpSegment,
};

use crate::events::{Analysis, CloseView, ConnectionView, EndView, EndedBy, SegmentView};
use crate::mysql::{
    Home, MysqlDepth, MysqlDetection, MysqlSessionFacts, MysqlTrack, PayloadHint, Told,
};

use super::event::PacketEvent;
use super::flow::{slot_of_key, view_of, FlowSlot, LiveFlow};
use super::options::EngineOptions;
use super::prefetch::prefetch_payload;
use super::scan::Scan;

/// How many events ahead phase 2 asks for payload bytes (see [`prefetch_payload`]).
const PREFETCH_DISTANCE: usize = 8;

/// Phase 2 state of one bucket: the flows whose 4-tuple hashes to it, across the whole run.
pub(super) struct Bucket<A: Analysis> {
    /// Each flow's slot number, by the [`FlowKey::stable_hash`] of its 4-tuple (the key itself is the
    /// slot's: a table of numbers takes a tenth of the memory of one of keys, for a lookup per flow and
    /// split, not per packet).
    index: HashTable<u32>,
    slots: Vec<FlowSlot<A::PerConnection>>,
    /// Connections ended by port reuse, concluded at the end with the rest.
    replaced: Vec<Concluded>,
    /// The allocation of the last flow put at rest, for the next one made live.
    spare: Option<Box<LiveFlow>>,
}

/// A connection the engine is done with, as the run's table takes it.
pub(super) struct Concluded {
    pub(super) tcp: PackedState,
    /// Its first packet's frame: connections are listed in this order (no two share a first packet).
    pub(super) first_frame: u64,
    /// The client side its own handshake names, if it does.
    pub(super) handshake_client: Option<(Side, RoleBasis)>,
    pub(super) mysql: Option<Box<MysqlSessionFacts>>,
    /// It ended because a new connection began on its 4-tuple.
    pub(super) replaced: bool,
}

impl Concluded {
    fn of(tcp: &ConnectionState, mysql: Option<Box<MysqlSessionFacts>>, end: EndedBy) -> Concluded {
        Concluded {
            tcp: tcp.packed(),
            first_frame: tcp.first().frame,
            handshake_client: tcp.handshake_client(),
            mysql,
            replaced: end == EndedBy::PortReuse,
        }
    }
}

/// Tells `analysis` what the MySQL glue tells of the connection `tcp`.
#[inline(always)]
fn tell<A: Analysis>(
    analysis: &mut A,
    state: &mut A::PerConnection,
    tcp: &ConnectionState,
    told: Told<'_>,
) {
    match told {
        Told::Transaction(t) => analysis.transaction(
            state,
            &ConnectionView::new(tcp, Some(t.client_side()), true),
            t,
        ),
        Told::Estimated(x) => analysis.estimated_exchange(
            state,
            &ConnectionView::new(tcp, Some(x.client_side), true),
            x,
        ),
    }
}

/// Tells `analysis` the transactions `mysql` completed on the connection `tcp`.
#[inline]
fn tell_transactions<A: Analysis>(
    mysql: &mut MysqlTrack,
    tcp: &ConnectionState,
    analysis: &mut A,
    state: &mut A::PerConnection,
) {
    mysql.drain(tcp, |told| tell(analysis, state, tcp, told));
}

/// Concludes the MySQL decoding of the connection `tcp`, telling `analysis` what its end completed.
fn conclude_mysql<A: Analysis>(
    mysql: MysqlTrack,
    tcp: &ConnectionState,
    files: &[&[u8]],
    analysis: &mut A,
    state: &mut A::PerConnection,
) -> Option<Box<MysqlSessionFacts>> {
    mysql
        .conclude(tcp, files, |told| tell(analysis, state, tcp, told))
        .map(Box::new)
}

impl<A: Analysis> Bucket<A> {
    pub(super) fn new() -> Self {
        Bucket {
            index: HashTable::new(),
            slots: Vec::new(),
            replaced: Vec::new(),
            spare: None,
        }
    }

    /// Feeds this bucket's events of the batch `scans` to its flows, telling `analysis` what they saw.
    #[inline(always)]
    pub(super) fn track(
        &mut self,
        b: usize,
        scans: &[Scan<'_>],
        bases: &[u64],
        files: &[&[u8]],
        opts: &EngineOptions,
        analysis: &mut A,
    ) {
        // Split-local flow id -> slot, resolved once per flow per split rather than hashed per packet. One
        // table for the batch, whose entries this bucket set are put back after each split: a table made
        // per split cost every bucket a pass over every flow of the split (most of them other buckets'),
        // work that grew with buckets x splits, i.e. with the square of the threads.
        let mut slots = SlotsOfSplit::default();
        // Only MySQL decoding reads payloads.
        let prefetch = opts.mysql != MysqlDetection::Off;
        for (scan, &base) in scans.iter().zip(bases) {
            let events = scan.buckets.blocks(b);
            if events.is_empty() {
                continue;
            }
            slots.next_split(scan.keys.len());
            let home = Home {
                files,
                input: scan.input,
            };
            let mut blocks = events.iter().peekable();
            while let Some(block) = blocks.next() {
                let next_block: &[PacketEvent] = blocks.peek().map_or(&[], |b| b.as_slice());
                for (pos, ev) in block.iter().enumerate() {
                    if prefetch {
                        prefetch_ahead(scan.bytes, block, next_block, pos);
                    }
                    // Borrowed, not copied per packet: only a new flow needs the key itself.
                    let key = &scan.keys[ev.flow as usize];
                    let at = FrameRef {
                        frame: base + u64::from(ev.frame_in_split) + 1,
                        ts: Timestamp(ev.ts),
                    };
                    let (slot, opened) = slots.resolve(ev.flow, || {
                        slot_of_key(&mut self.index, &mut self.slots, key, at, opts)
                    });
                    let seg = scan.segment_of(ev, key);
                    let packet = Packet {
                        at,
                        side: ev.side(),
                        wire_len: ev.wire_len,
                        hint: ev.payload_hint(),
                    };
                    self.feed(slot, opened, &seg, packet, home, files, opts, analysis);
                }
            }
        }
    }

    /// Feeds one segment to the flow of `slot` (`opened`: a flow new to the bucket): its TCP tracker, its
    /// MySQL glue, and the analysis, told of what they saw in the order an analysis expects (an opening
    /// before the segment's transactions, those before its closes, the segment itself last).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn feed(
        &mut self,
        slot: usize,
        mut opened: bool,
        seg: &TcpSegment<'_>,
        packet: Packet,
        home: Home<'_>,
        files: &[&[u8]],
        opts: &EngineOptions,
        analysis: &mut A,
    ) {
        let Packet {
            at,
            side,
            wire_len,
            hint,
        } = packet;
        let FlowSlot {
            flow: resting,
            state: flow_state,
        } = &mut self.slots[slot];
        let flow = resting.live(opts, &mut self.spare);
        let fed = flow.tracker.feed(side, seg, wire_len, at);
        if let Some(old) = fed.replaced.map(|b| *b) {
            let ended = end_by_port_reuse(flow, flow_state, &old, files, opts, analysis);
            self.replaced.push(ended);
            opened = true;
        }
        if fed.class == SegmentClass::Retransmission {
            flow.mysql.retransmission(at.ts.0);
        }
        // Without MySQL detection the decoder is decided "not MySQL" from the start, and its
        // `segment` does nothing: not called per packet.
        if opts.mysql != MysqlDetection::Off && flow.concluded.is_none() {
            flow.mysql
                .segment(flow.tracker.current(), side, seg, hint, at, home);
        }
        if opened {
            let view = view_of(flow.tracker.current(), &flow.mysql, flow.mysql_client);
            analysis.connection_opened(flow_state, &view);
        }
        if flow.concluded.is_none() {
            tell_transactions(
                &mut flow.mysql,
                flow.tracker.current(),
                analysis,
                flow_state,
            );
        }
        if seg.flags.fin() || seg.flags.rst() {
            tell_closes(flow, flow_state, side, at, analysis);
        }
        if flow.concluded.is_none() && flow.tracker.current().is_finished() {
            conclude_finished(flow, flow_state, files, analysis);
        }
        let view = view_of(flow.tracker.current(), &flow.mysql, flow.mysql_client);
        analysis.segment(
            flow_state,
            &view,
            &SegmentView {
                at,
                side,
                tcp: seg,
                wire_len,
                class: fed.class,
            },
        );
        // Only a connection that ended, or one that carried no payload or close to a decoder that is
        // not yet sure it is MySQL, can rest: the check is two loads on the path of every packet.
        if flow.concluded.is_some() || (seg.payload_len == 0 && flow.mysql.may_be_untouched()) {
            resting.rest(opts, &mut self.spare);
        }
    }

    /// The run is over: every connection still open ends with the capture, told to `analysis`.
    pub(super) fn conclude(
        self,
        files: &[&[u8]],
        opts: &EngineOptions,
        analysis: &mut A,
    ) -> Vec<Concluded> {
        let Bucket {
            index,
            slots,
            replaced,
            ..
        } = self;
        drop(index);
        let mut out = replaced;
        out.reserve(slots.len());
        for FlowSlot { flow, state } in slots {
            let slot = flow.into_live(opts);
            let view = view_of(slot.tracker.current(), &slot.mysql, slot.mysql_client);
            let (client, is_mysql) = (view.mysql_client(), view.is_mysql());
            let mut state = state;
            let tcp = slot.tracker.into_current();
            let facts = match slot.concluded {
                Some(facts) => facts,
                None => conclude_mysql(slot.mysql, &tcp, files, analysis, &mut state),
            };
            analysis.connection_ended(
                state,
                &ConnectionView::new(&tcp, client, is_mysql),
                &EndView {
                    by: EndedBy::CaptureEnd,
                    mysql: facts.as_deref(),
                },
            );
            out.push(Concluded::of(&tcp, facts, EndedBy::CaptureEnd));
        }
        out
    }
}

/// What the tracking takes of a packet event besides its segment.
#[derive(Clone, Copy)]
struct Packet {
    at: FrameRef,
    side: Side,
    wire_len: u32,
    hint: PayloadHint,
}

/// Which slot of the bucket each split-local flow id of the split being tracked has, resolved once per
/// flow and split; the ids resolved are put back after each split, so that the table serves the batch.
#[derive(Default)]
struct SlotsOfSplit {
    slot_of: Vec<u32>,
    resolved: Vec<u32>,
}

impl SlotsOfSplit {
    /// Ready for the next split, whose flows number `flows`.
    #[inline]
    fn next_split(&mut self, flows: usize) {
        for f in self.resolved.drain(..) {
            self.slot_of[f as usize] = u32::MAX;
        }
        if self.slot_of.len() < flows {
            self.slot_of.resize(flows, u32::MAX);
        }
    }

    /// The slot of split-local flow `flow`, and whether `find` opened it; `find` runs on its first event
    /// of the split.
    #[inline(always)]
    fn resolve(&mut self, flow: u32, find: impl FnOnce() -> (usize, bool)) -> (usize, bool) {
        match self.slot_of[flow as usize] {
            u32::MAX => {
                let (i, new) = find();
                self.slot_of[flow as usize] = i as u32;
                self.resolved.push(flow);
                (i, new)
            }
            i => (i as usize, false),
        }
    }
}

/// Asks for the payload of the event [`PREFETCH_DISTANCE`] places after `pos` (in `block` or the next),
/// fetched while this one is worked on, unless the scan told its shape: a MySQL exchange followed
/// undecoded does not read it.
#[inline(always)]
fn prefetch_ahead(bytes: &[u8], block: &[PacketEvent], next_block: &[PacketEvent], pos: usize) {
    let a = pos + PREFETCH_DISTANCE;
    let ahead = block.get(a).or_else(|| next_block.get(a - block.len()));
    if let Some(ahead) = ahead.filter(|e| !e.payload_hint().told()) {
        prefetch_payload(bytes, ahead.payload_at, ahead.payload_captured());
    }
}

/// A new connection began on the 4-tuple of `flow`, whose connection `old` ends: concludes it, tells
/// `analysis`, and gives `flow` a fresh MySQL glue. Returns the connection for the run's table. Rare:
/// kept out of the per-packet path.
#[inline(never)]
fn end_by_port_reuse<A: Analysis>(
    flow: &mut LiveFlow,
    flow_state: &mut A::PerConnection,
    old: &ConnectionState,
    files: &[&[u8]],
    opts: &EngineOptions,
    analysis: &mut A,
) -> Concluded {
    let track = std::mem::replace(
        &mut flow.mysql,
        MysqlTrack::new(opts.mysql, opts.mysql_depth, opts.tls_keys.as_ref()),
    );
    let mut state = std::mem::take(flow_state);
    let view = view_of(old, &track, flow.mysql_client);
    let (client, is_mysql) = (view.mysql_client(), view.is_mysql());
    let facts = match flow.concluded.take() {
        Some(facts) => facts,
        None => conclude_mysql(track, old, files, analysis, &mut state),
    };
    analysis.connection_ended(
        state,
        &ConnectionView::new(old, client, is_mysql),
        &EndView {
            by: EndedBy::PortReuse,
            mysql: facts.as_deref(),
        },
    );
    flow.mysql_client = None;
    Concluded::of(old, facts, EndedBy::PortReuse)
}

/// Tells `analysis` the first FIN and the first RST of `side` if this segment, at `at`, was it.
fn tell_closes<A: Analysis>(
    flow: &mut LiveFlow,
    flow_state: &mut A::PerConnection,
    side: Side,
    at: FrameRef,
    analysis: &mut A,
) {
    for flag in [CloseFlag::Fin, CloseFlag::Rst] {
        let Some(close) = flow
            .tracker
            .current()
            .first_close(side, flag)
            .filter(|c| c.at == at)
        else {
            continue;
        };
        let LiveFlow {
            tracker,
            mysql,
            mysql_client,
            ..
        } = &mut *flow;
        let view = view_of(tracker.current(), mysql, *mysql_client);
        let context = mysql.close_context(at.frame, side, flag);
        analysis.close(
            flow_state,
            &view,
            &CloseView {
                tcp: &close,
                mysql: context,
            },
        );
    }
}

/// The TCP connection of `flow` is over: concludes its MySQL decoding now (telling `analysis` what its
/// end completed) and keeps the facts until the connection is told ended.
fn conclude_finished<A: Analysis>(
    flow: &mut LiveFlow,
    flow_state: &mut A::PerConnection,
    files: &[&[u8]],
    analysis: &mut A,
) {
    let track = std::mem::replace(
        &mut flow.mysql,
        MysqlTrack::new(MysqlDetection::Off, MysqlDepth::Full, None),
    );
    let client = track.client();
    flow.concluded = Some(conclude_mysql(
        track,
        flow.tracker.current(),
        files,
        analysis,
        flow_state,
    ));
    flow.mysql_client = client;
}
