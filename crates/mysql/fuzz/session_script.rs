// The `session` fuzz target's input format and its decoding, shared by the fuzz target
// (fuzz_targets/session.rs) and the regression tests that replay what it found
// (../tests/fuzz_regressions.rs), both of which `include!` this file.
//
// Input: byte 0 picks the start mode (and, for the fuzz target, the re-chunking size); then records of
// `op, len, bytes[len]`: op & 3 = 0/1 data, 2 gap (len * 97 bytes), 3 close; op & 4 = server
// direction; op & 8 = RST.

use pcapsleuth_mysql::{
    CloseFlag, Direction, Meta, ReplicationSummary, Session, SessionInfo, StartMode, Transaction,
};

enum Ev<'a> {
    Data(Direction, &'a [u8]),
    Gap(Direction, u64),
    Close(Direction, CloseFlag),
}

fn parse(data: &[u8]) -> Vec<Ev<'_>> {
    let mut evs = Vec::new();
    let mut i = 0;
    while i + 1 < data.len() {
        let op = data[i];
        let len = data[i + 1] as usize;
        i += 2;
        let dir = if op & 4 != 0 {
            Direction::ServerToClient
        } else {
            Direction::ClientToServer
        };
        match op & 3 {
            0 | 1 => {
                let end = (i + len).min(data.len());
                evs.push(Ev::Data(dir, &data[i..end]));
                i = end;
            }
            2 => evs.push(Ev::Gap(dir, len as u64 * 97)),
            _ => evs.push(Ev::Close(
                dir,
                if op & 8 != 0 {
                    CloseFlag::Rst
                } else {
                    CloseFlag::Fin
                },
            )),
        }
    }
    evs
}

fn run(
    mode: StartMode,
    evs: &[Ev<'_>],
    piece: usize,
) -> (Vec<Transaction>, SessionInfo, Option<ReplicationSummary>) {
    let mut s = Session::new(mode);
    let mut out = Vec::new();
    for (k, ev) in evs.iter().enumerate() {
        let m = Meta {
            ts_ns: k as u64,
            frame: k as u64 + 1,
        };
        match ev {
            Ev::Data(d, b) => {
                for c in b.chunks(piece.max(1)) {
                    s.feed(*d, c, m);
                }
            }
            Ev::Gap(d, n) => s.gap(*d, *n, m),
            Ev::Close(d, f) => {
                let _ = s.close(*d, *f, m);
            }
        }
        out.extend(s.drain());
    }
    s.finish();
    out.extend(s.drain());
    (out, s.info().clone(), s.replication().cloned())
}
