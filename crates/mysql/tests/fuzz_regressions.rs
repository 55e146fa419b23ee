//! Inputs the `session` fuzz target found, kept as regression tests. The input
//! format is the fuzz target's (see fuzz/fuzz_targets/session.rs); each must
//! decode the same whether its chunks are fed whole or split into pieces.

use pcapsleuth_mysql::{CloseFlag, Direction, Meta, Session, SessionInfo, StartMode, Transaction};

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

fn run(mode: StartMode, evs: &[Ev<'_>], piece: usize) -> (Vec<Transaction>, SessionInfo) {
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
    (out, s.info().clone())
}

fn check(data: &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let mode = if head & 1 == 0 {
        StartMode::Handshake
    } else {
        StartMode::MidStream
    };
    let evs = parse(rest);
    let whole = run(mode, &evs, usize::MAX);
    for piece in 1..=7 {
        let split = run(mode, &evs, piece);
        assert_eq!(
            whole.0, split.0,
            "transactions differ with pieces of {piece}"
        );
        assert_eq!(
            whole.1, split.1,
            "session info differs with pieces of {piece}"
        );
    }
}

/// Found after ~125k executions: under the compressed protocol one segment can
/// carry two client commands; the second must see that the first already
/// resynchronised a hunting server, or it wrongly ended the first as GapLost
/// (bytewise feeding did not, so chunking changed the result).
#[test]
fn compressed_commands_in_one_segment_see_the_server_resync() {
    check(include_bytes!("data/fuzz/compressed-stale-server-hunt.bin"));
}

/// Every input libFuzzer reduced from crashes is replayed too.
#[test]
fn all_fuzz_regression_inputs_are_chunking_invariant() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fuzz");
    for e in std::fs::read_dir(dir).unwrap() {
        check(&std::fs::read(e.unwrap().path()).unwrap());
    }
}

#[test]
fn seeds_are_chunking_invariant() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/session");
    for e in std::fs::read_dir(dir).unwrap() {
        check(&std::fs::read(e.unwrap().path()).unwrap());
    }
}
