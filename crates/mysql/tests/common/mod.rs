//! Helpers shared by the integration tests: packet builders and conversation replay.
#![allow(dead_code)]

use pcapsleuth_mysql::{CloseFlag, Direction, Meta, Session, StartMode, Transaction};

pub const C: Direction = Direction::ClientToServer;
pub const S: Direction = Direction::ServerToClient;

pub fn meta(frame: u64) -> Meta {
    Meta {
        ts_ns: frame * 1_000_000,
        frame,
    }
}

/// One MySQL packet: 3-byte length, sequence id, payload.
pub fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    v.push(seq);
    v.extend_from_slice(payload);
    v
}

/// Several packets with consecutive sequence ids starting at `seq`.
pub fn packets(seq: u8, payloads: &[&[u8]]) -> Vec<u8> {
    let mut v = Vec::new();
    for (i, p) in payloads.iter().enumerate() {
        v.extend(packet(seq.wrapping_add(i as u8), p));
    }
    v
}

pub fn command(cmd: u8, body: &[u8]) -> Vec<u8> {
    let mut p = vec![cmd];
    p.extend_from_slice(body);
    packet(0, &p)
}

pub fn ok(affected: u8, status: u16) -> Vec<u8> {
    let mut p = vec![0x00, affected, 0];
    p.extend_from_slice(&status.to_le_bytes());
    p.extend_from_slice(&[0, 0]);
    p
}

pub fn eof(status: u16) -> Vec<u8> {
    let mut p = vec![0xFE, 0, 0];
    p.extend_from_slice(&status.to_le_bytes());
    p
}

/// OK_Packet with a 0xFE header: the resultset terminator under CLIENT_DEPRECATE_EOF.
pub fn ok_fe(status: u16) -> Vec<u8> {
    let mut p = vec![0xFE, 0, 0];
    p.extend_from_slice(&status.to_le_bytes());
    p.extend_from_slice(&[0, 0]);
    p
}

pub fn err(code: u16, state: &str, msg: &str) -> Vec<u8> {
    let mut p = vec![0xFF];
    p.extend_from_slice(&code.to_le_bytes());
    p.push(b'#');
    p.extend_from_slice(state.as_bytes());
    p.extend_from_slice(msg.as_bytes());
    p
}

pub fn coldef(name: &str) -> Vec<u8> {
    let mut p = b"\x03def\x00\x00\x00".to_vec();
    p.push(name.len() as u8);
    p.extend_from_slice(name.as_bytes());
    p.extend_from_slice(b"\x00\x0c\x21\x00\x0f\x00\x00\x00\xfd\x00\x00\x1f\x00\x00");
    p
}

pub fn text_row(values: &[&str]) -> Vec<u8> {
    let mut p = Vec::new();
    for v in values {
        p.push(v.len() as u8);
        p.extend_from_slice(v.as_bytes());
    }
    p
}

/// A whole text resultset with classic EOF framing, sequence ids from `seq`.
pub fn classic_resultset(seq: u8, cols: &[&str], rows: &[&[&str]], final_status: u16) -> Vec<u8> {
    let mut ps: Vec<Vec<u8>> = vec![vec![cols.len() as u8]];
    ps.extend(cols.iter().map(|c| coldef(c)));
    ps.push(eof(0x0002));
    ps.extend(rows.iter().map(|r| text_row(r)));
    ps.push(eof(final_status));
    let refs: Vec<&[u8]> = ps.iter().map(|p| p.as_slice()).collect();
    packets(seq, &refs)
}

/// Same under CLIENT_DEPRECATE_EOF: no EOF after the definitions, OK(0xFE) at the end.
pub fn deprecated_eof_resultset(
    seq: u8,
    cols: &[&str],
    rows: &[&[&str]],
    final_status: u16,
) -> Vec<u8> {
    let mut ps: Vec<Vec<u8>> = vec![vec![cols.len() as u8]];
    ps.extend(cols.iter().map(|c| coldef(c)));
    ps.extend(rows.iter().map(|r| text_row(r)));
    ps.push(ok_fe(final_status));
    let refs: Vec<&[u8]> = ps.iter().map(|p| p.as_slice()).collect();
    packets(seq, &refs)
}

/// A compressed-protocol packet (CLIENT_COMPRESS) carrying `inner`: deflated, or stored as is.
pub fn compressed(seq: u8, inner: &[u8], deflate: bool) -> Vec<u8> {
    let (body, ulen) = if deflate {
        (
            miniz_oxide::deflate::compress_to_vec_zlib(inner, 6),
            inner.len(),
        )
    } else {
        (inner.to_vec(), 0)
    };
    let mut v = (body.len() as u32).to_le_bytes()[..3].to_vec();
    v.push(seq);
    v.extend_from_slice(&(ulen as u32).to_le_bytes()[..3]);
    v.extend(body);
    v
}

/// A step of a conversation.
#[derive(Debug, Clone)]
pub enum Ev {
    Data(Direction, Vec<u8>),
    Gap(Direction, u64),
    Close(Direction, CloseFlag),
}

/// Reads a `tests/data` conversation: `C <hex>` / `S <hex>` lines (segment
/// payloads), `CG <n>` / `SG <n>` (n bytes missing, e.g. cut by the snap
/// length), `CF` / `SF` (FIN) and `CR` / `SR` (RST) from that side.
pub fn load(name: &str) -> Vec<Ev> {
    let path = format!("{}/tests/data/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect(&path);
    text.lines()
        .filter_map(|l| {
            let (tag, h) = l.split_once(' ').unwrap_or((l, ""));
            let dir = match tag.get(..1)? {
                "C" => C,
                "S" => S,
                _ => return None,
            };
            match tag.get(1..)? {
                "" => Some(Ev::Data(
                    dir,
                    (0..h.len() / 2)
                        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
                        .collect(),
                )),
                "G" => Some(Ev::Gap(dir, h.trim().parse().unwrap())),
                "F" => Some(Ev::Close(dir, CloseFlag::Fin)),
                "R" => Some(Ev::Close(dir, CloseFlag::Rst)),
                _ => None,
            }
        })
        .collect()
}

/// Plays events into a fresh session; each data event is split into pieces of
/// `chunk(i)` bytes. All pieces of one event share the event's frame number.
pub fn play_chunked(
    mode: StartMode,
    evs: &[Ev],
    chunk: &mut dyn FnMut(usize) -> usize,
) -> (Vec<Transaction>, Session) {
    let mut s = Session::new(mode);
    let mut out = Vec::new();
    for (i, ev) in evs.iter().enumerate() {
        let m = meta(i as u64 + 1);
        match ev {
            Ev::Data(d, bytes) => {
                let mut rest = bytes.as_slice();
                let mut k = 0;
                while !rest.is_empty() {
                    let n = chunk(k).clamp(1, rest.len());
                    s.feed(*d, &rest[..n], m);
                    rest = &rest[n..];
                    k += 1;
                }
            }
            Ev::Gap(d, n) => s.gap(*d, *n, m),
            Ev::Close(d, f) => {
                s.close(*d, *f, m);
            }
        }
        out.extend(s.drain());
    }
    s.finish();
    out.extend(s.drain());
    (out, s)
}

pub fn play(mode: StartMode, evs: &[Ev]) -> (Vec<Transaction>, Session) {
    play_chunked(mode, evs, &mut |_| usize::MAX)
}
