//! Replays a connection dumped as text lines `C <hex>` / `S <hex>` (one TCP
//! segment's payload per line, client or server, in capture order: the shape of
//! `tshark -q -z follow,tcp,raw,N` output) and prints what the decoder makes of it.
//!
//! Extra lines: `CG <n>` / `SG <n>` for `n` missing bytes (a gap, e.g. cut by the
//! snap length), `CF` / `SF` for a FIN and `CR` / `SR` for a RST from that side.
//!
//! `cargo run -p pcapsleuth-mysql --example replay -- FILE [midstream]`

use pcapsleuth_mysql::{CloseFlag, Direction, Meta, Session, StartMode};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: replay FILE [midstream]");
        std::process::exit(2);
    };
    let mode = match args.next().as_deref() {
        Some("midstream") => StartMode::MidStream,
        _ => StartMode::Handshake,
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });
    let mut s = Session::new(mode);
    for (i, line) in text.lines().enumerate() {
        let frame = i as u64 + 1;
        let m = Meta {
            ts_ns: frame,
            frame,
        };
        let (tag, arg) = line.split_once(' ').unwrap_or((line, ""));
        let dir = match tag.get(..1) {
            Some("C") => Direction::ClientToServer,
            Some("S") => Direction::ServerToClient,
            _ => continue,
        };
        match tag.get(1..) {
            Some("") => {
                let bytes: Vec<u8> = (0..arg.len() / 2)
                    .filter_map(|k| u8::from_str_radix(arg.get(2 * k..2 * k + 2)?, 16).ok())
                    .collect();
                s.feed(dir, &bytes, m);
            }
            Some("G") => s.gap(dir, arg.trim().parse().unwrap_or(0), m),
            Some("F") => {
                s.close(dir, CloseFlag::Fin, m);
            }
            Some("R") => {
                s.close(dir, CloseFlag::Rst, m);
            }
            _ => continue,
        }
        s.drain().for_each(print);
    }
    s.finish();
    s.drain().for_each(print);
    let i = s.info();
    println!(
        "info: version={:?} conn={:?} user={:?} schema={:?} plugin={:?}/{:?} sha2={:?} {:?} {:?}",
        i.server_version,
        i.connection_id,
        i.user,
        i.schema,
        i.auth_plugin,
        i.client_auth_plugin,
        i.caching_sha2,
        i.encryption,
        i.compression
    );
    println!("counters: {:?}", i.counters);
}

fn print(t: pcapsleuth_mysql::Transaction) {
    let stmt: String = t.statement.unwrap_or_default().chars().take(70).collect();
    println!(
        "#{:<4} {:<18} {:<72} -> {:?} rows={} resp_frames={:?}..{:?}",
        t.request_frame,
        t.command.name(),
        stmt,
        t.outcome,
        t.rows,
        t.first_response_frame,
        t.last_response_frame
    );
}
