//! Builds the captures of the scale benchmark (`benches/scale.sh`): traffic whose size is in its count of
//! connections or statements rather than in its bytes, the shapes where time or memory could grow faster
//! than the capture:
//!
//! * `attempts N`: N connection attempts to one MySQL server, none answered (a SYN flood, a server that is
//!   down): N distinct 4-tuples, one SYN each, a microsecond apart;
//! * `closed N`: N short MySQL connections one after another (a service without a connection pool): each
//!   a handshake, the server's greeting, a login, one query answered with a one-row resultset,
//!   `COM_QUIT` and a FIN exchange;
//! * `statements N`: one MySQL connection carrying N distinct statements (no two alike once literals are
//!   replaced: generated or hostile SQL), each answered OK;
//! * `trickle N`: one MySQL connection asking `select 1` once a second for N seconds, each answered OK (a
//!   quiet server captured for days: the size is in the capture's duration, which per-interval series
//!   must not grow with).
//!
//! usage: cargo run --release --example make_scale_captures -- SHAPE N OUT.pcap
//!
//! Classic pcap, microsecond timestamps, Ethernet; checksums are left zero, as no reader checks them.

use std::io::{BufWriter, Write};

/// When the captures begin: 2023-11-14 22:13:20 UTC.
const START_US: u64 = 1_700_000_000_000_000;

const SYN: u8 = 0x02;
const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

/// A pcap file being written.
struct Pcap {
    out: BufWriter<std::fs::File>,
    records: u64,
}

impl Pcap {
    fn create(path: &str) -> std::io::Result<Pcap> {
        let mut out = BufWriter::with_capacity(4 << 20, std::fs::File::create(path)?);
        // Magic, version 2.4, no time zone, snap length 262144, Ethernet.
        out.write_all(&0xa1b2_c3d4u32.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&[0; 8])?;
        out.write_all(&262_144u32.to_le_bytes())?;
        out.write_all(&1u32.to_le_bytes())?;
        Ok(Pcap { out, records: 0 })
    }

    /// One IPv4 TCP segment at `us` (microseconds since the epoch).
    #[allow(clippy::too_many_arguments)]
    fn segment(
        &mut self,
        us: u64,
        (src, sport): ([u8; 4], u16),
        (dst, dport): ([u8; 4], u16),
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &[u8],
    ) -> std::io::Result<()> {
        let len = 14 + 20 + 20 + payload.len();
        let mut f = Vec::with_capacity(16 + len);
        f.extend_from_slice(&((us / 1_000_000) as u32).to_le_bytes());
        f.extend_from_slice(&((us % 1_000_000) as u32).to_le_bytes());
        f.extend_from_slice(&(len as u32).to_le_bytes());
        f.extend_from_slice(&(len as u32).to_le_bytes());
        // Ethernet: destination, source, IPv4.
        f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
        // IPv4: version 4, 20-byte header, total length, DF, TTL 64, TCP.
        f.extend_from_slice(&[0x45, 0]);
        f.extend_from_slice(&((len - 14) as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
        // TCP: ports, sequence and acknowledgment numbers, 20-byte header, flags, window 65535.
        f.extend_from_slice(&sport.to_be_bytes());
        f.extend_from_slice(&dport.to_be_bytes());
        f.extend_from_slice(&seq.to_be_bytes());
        f.extend_from_slice(&ack.to_be_bytes());
        f.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        f.extend_from_slice(payload);
        self.records += 1;
        self.out.write_all(&f)
    }

    fn finish(mut self) -> std::io::Result<u64> {
        self.out.flush()?;
        Ok(self.records)
    }
}

/// A MySQL packet: 3-byte length, sequence number, body.
fn mysql_packet(seq: u8, body: &[u8]) -> Vec<u8> {
    let mut p = (body.len() as u32).to_le_bytes()[..3].to_vec();
    p.push(seq);
    p.extend_from_slice(body);
    p
}

/// A length-encoded string of fewer than 251 bytes.
fn lenc(s: &[u8]) -> Vec<u8> {
    let mut v = vec![s.len() as u8];
    v.extend_from_slice(s);
    v
}

/// The server's greeting (protocol 10, MySQL 8.0.36, mysql_native_password).
fn greeting() -> Vec<u8> {
    let mut g = vec![0x0a];
    g.extend_from_slice(b"8.0.36\0");
    g.extend_from_slice(&42u32.to_le_bytes());
    g.extend_from_slice(b"abcdefgh\0");
    g.extend_from_slice(&0xf7ffu16.to_le_bytes());
    g.push(0x21);
    g.extend_from_slice(&2u16.to_le_bytes());
    g.extend_from_slice(&0xdfffu16.to_le_bytes());
    g.push(0x15);
    g.extend_from_slice(&[0; 10]);
    g.extend_from_slice(b"ijklmnopqrst\0mysql_native_password\0");
    mysql_packet(0, &g)
}

/// The client's login (HandshakeResponse41: user `root`, schema `test`).
fn login() -> Vec<u8> {
    let mut l = (0x000f_a685u32 | 0x8).to_le_bytes().to_vec();
    l.extend_from_slice(&16_777_216u32.to_le_bytes());
    l.push(0x21);
    l.extend_from_slice(&[0; 23]);
    l.extend_from_slice(b"root\0\x14");
    l.extend_from_slice(&[b'A'; 20]);
    l.extend_from_slice(b"test\0mysql_native_password\0");
    mysql_packet(1, &l)
}

const OK: &[u8] = &[0, 0, 0, 2, 0, 0, 0];

/// A resultset of one column and one row, numbered from 1.
fn resultset() -> Vec<u8> {
    let mut column = Vec::new();
    for s in [&b"def"[..], b"db", b"t", b"t", b"c0", b"c"] {
        column.extend_from_slice(&lenc(s));
    }
    column.push(0x0c);
    column.extend_from_slice(&33u16.to_le_bytes());
    column.extend_from_slice(&11u32.to_le_bytes());
    column.extend_from_slice(&[8, 0, 0, 0, 0, 0]);
    let eof = [0xfe, 0, 0, 2, 0];
    [
        mysql_packet(1, &[1]),
        mysql_packet(2, &column),
        mysql_packet(3, &eof),
        mysql_packet(4, &lenc(b"x")),
        mysql_packet(5, &eof),
    ]
    .concat()
}

/// One TCP connection's packets, one after another, `STEP_US` apart.
struct Conn<'a> {
    pcap: &'a mut Pcap,
    client: ([u8; 4], u16),
    server: ([u8; 4], u16),
    client_seq: u32,
    server_seq: u32,
    us: u64,
}

const STEP_US: u64 = 10;

impl<'a> Conn<'a> {
    /// A connection from `client` to [`SERVER`], its first segment after `us`.
    fn new(pcap: &'a mut Pcap, client: ([u8; 4], u16), us: u64) -> Self {
        Conn {
            pcap,
            client,
            server: SERVER,
            client_seq: 1000,
            server_seq: 5000,
            us,
        }
    }

    fn send(&mut self, from_client: bool, flags: u8, payload: &[u8]) -> std::io::Result<()> {
        self.us += STEP_US;
        let takes = payload.len() as u32 + u32::from(flags & (SYN | FIN) != 0);
        if from_client {
            self.pcap.segment(
                self.us,
                self.client,
                self.server,
                self.client_seq,
                self.server_seq,
                flags,
                payload,
            )?;
            self.client_seq = self.client_seq.wrapping_add(takes);
        } else {
            self.pcap.segment(
                self.us,
                self.server,
                self.client,
                self.server_seq,
                self.client_seq,
                flags,
                payload,
            )?;
            self.server_seq = self.server_seq.wrapping_add(takes);
        }
        Ok(())
    }

    fn handshake_and_login(&mut self) -> std::io::Result<()> {
        self.send(true, SYN, &[])?;
        self.send(false, SYN | ACK, &[])?;
        self.send(true, ACK, &[])?;
        self.send(false, PSH | ACK, &greeting())?;
        self.send(true, PSH | ACK, &login())?;
        self.send(false, PSH | ACK, &mysql_packet(2, OK))
    }
}

const SERVER: ([u8; 4], u16) = ([10, 255, 0, 1], 3306);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(shape), Some(n), Some(out)) = (args.get(1), args.get(2), args.get(3)) else {
        return Err(
            "usage: make_scale_captures attempts|closed|statements|trickle N OUT.pcap".into(),
        );
    };
    let n: u32 = n.parse()?;
    let mut pcap = Pcap::create(out)?;
    match shape.as_str() {
        "attempts" => {
            for i in 0..n {
                let client = (
                    (0x0a00_0000 + (i >> 14)).to_be_bytes(),
                    1024 + (i & 0x3fff) as u16,
                );
                pcap.segment(
                    START_US + u64::from(i),
                    client,
                    ([10, 1, 0, 1], 3306),
                    i.wrapping_mul(7919),
                    0,
                    SYN,
                    &[],
                )?;
            }
        }
        "closed" => {
            let mut us = START_US;
            for i in 0..n {
                let client = (
                    [10, (i >> 16) as u8, (i >> 8) as u8, i as u8],
                    40_000 + (i % 20_000) as u16,
                );
                let mut c = Conn::new(&mut pcap, client, us);
                c.handshake_and_login()?;
                let query = format!("\x03select * from t where id = {i}");
                c.send(true, PSH | ACK, &mysql_packet(0, query.as_bytes()))?;
                c.send(false, PSH | ACK, &resultset())?;
                c.send(true, PSH | ACK, &mysql_packet(0, &[0x01]))?;
                c.send(true, FIN | ACK, &[])?;
                c.send(false, FIN | ACK, &[])?;
                c.send(true, ACK, &[])?;
                us = c.us;
            }
        }
        "statements" => {
            let mut c = Conn::new(&mut pcap, ([10, 0, 0, 2], 40_000), START_US);
            c.handshake_and_login()?;
            let ok = mysql_packet(1, OK);
            for i in 0..n {
                let query = format!(
                    "\x03select c from tbl_{i:08}_{} where id = 1",
                    "pad".repeat(18)
                );
                c.send(true, PSH | ACK, &mysql_packet(0, query.as_bytes()))?;
                c.send(false, PSH | ACK, &ok)?;
            }
            c.send(true, PSH | ACK, &mysql_packet(0, &[0x01]))?;
            c.send(true, FIN | ACK, &[])?;
            c.send(false, FIN | ACK, &[])?;
            c.send(true, ACK, &[])?;
        }
        "trickle" => {
            let mut c = Conn::new(&mut pcap, ([10, 0, 0, 2], 40_000), START_US);
            c.handshake_and_login()?;
            let (query, ok) = (mysql_packet(0, b"\x03select 1"), mysql_packet(1, OK));
            for i in 1..=u64::from(n) {
                c.us = START_US + i * 1_000_000;
                c.send(true, PSH | ACK, &query)?;
                c.send(false, PSH | ACK, &ok)?;
            }
        }
        other => {
            return Err(
                format!("unknown shape {other:?}: attempts, closed, statements or trickle").into(),
            )
        }
    }
    let records = pcap.finish()?;
    eprintln!("wrote {out}: {records} packets ({shape} {n})");
    Ok(())
}
