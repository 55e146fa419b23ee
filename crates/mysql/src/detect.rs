//! Recognising MySQL from a few bytes: the server greeting on an unknown port,
//! and client command packets when a capture starts mid-connection or after a gap.

use crate::wire::{self, le_u24};

/// Answer of a check that may need more bytes than it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Yes,
    No,
    NeedMore,
}

fn is_text_start(b: u8) -> bool {
    b.is_ascii_graphic() || matches!(b, b' ' | b'\t' | b'\r' | b'\n') || b >= 0x80
}

/// Is `w` (starting at a candidate packet header) a plausible client command
/// packet? Looks at the header, the command byte and, for text commands, the
/// first byte of text; exact lengths are required for fixed-size commands.
pub(crate) fn client_command_at(w: &[u8]) -> Verdict {
    let (Some(len), Some(&seq)) = (le_u24(w), w.get(3)) else {
        return Verdict::NeedMore;
    };
    if seq != 0 || len == 0 {
        return Verdict::No;
    }
    let Some(&cmd) = w.get(4) else {
        return Verdict::NeedMore;
    };
    let next = w.get(5).copied();
    let text = |min: u32| -> Verdict {
        if len < min {
            return Verdict::No;
        }
        match next {
            None => Verdict::NeedMore,
            Some(b) if is_text_start(b) => Verdict::Yes,
            Some(_) => Verdict::No,
        }
    };
    let exact = |n: u32| if len == n { Verdict::Yes } else { Verdict::No };
    let at_least = |n: u32| if len >= n { Verdict::Yes } else { Verdict::No };
    match cmd {
        // COM_QUIT, COM_STATISTICS, COM_PROCESS_INFO, COM_DEBUG, COM_PING, COM_RESET_CONNECTION
        0x01 | 0x09 | 0x0a | 0x0d | 0x0e | 0x1f => exact(1),
        // COM_QUERY: text, or a query-attribute prefix (count, set count 1). Only the
        // packet's own bytes may decide: what follows its end is another packet, which
        // may or may not have arrived yet, so reading it would make the answer depend on
        // how TCP cut the stream.
        0x03 => {
            if len < 2 {
                return Verdict::No;
            }
            let body = w.get(5..).unwrap_or(&[]);
            let body = body.get(..body.len().min(len as usize - 1)).unwrap_or(&[]);
            match body {
                [] => Verdict::NeedMore,
                [b, ..] if is_text_start(*b) => Verdict::Yes,
                [_] if len >= 3 => Verdict::NeedMore,
                _ if wire::looks_like_attribute_prefix(body) => Verdict::Yes,
                _ => Verdict::No,
            }
        }
        // COM_INIT_DB, COM_FIELD_LIST, COM_CREATE_DB, COM_DROP_DB, COM_STMT_PREPARE, COM_CHANGE_USER
        0x02 | 0x04 | 0x05 | 0x06 | 0x16 | 0x11 => text(2),
        0x07 => exact(2), // COM_REFRESH
        0x08 => {
            if len <= 2 {
                Verdict::Yes
            } else {
                Verdict::No
            }
        } // COM_SHUTDOWN
        0x0c | 0x19 | 0x1a => exact(5), // COM_PROCESS_KILL, COM_STMT_CLOSE, COM_STMT_RESET
        0x1b => exact(3), // COM_SET_OPTION
        0x1c => exact(9), // COM_STMT_FETCH
        0x17 => at_least(10), // COM_STMT_EXECUTE
        0x18 => at_least(7), // COM_STMT_SEND_LONG_DATA
        0x12 => at_least(11), // COM_BINLOG_DUMP
        0x1e => at_least(19), // COM_BINLOG_DUMP_GTID
        0x15 => at_least(18), // COM_REGISTER_SLAVE
        _ => Verdict::No,
    }
}

/// Do these bytes, the first a server sent on a connection, look like a MySQL
/// server greeting? Accepts protocol 10 handshakes (a printable version string,
/// then connection id, scramble and capability flags) and the ERR_Packet a
/// server sends instead when it refuses the connection outright (e.g. 1130
/// "Host is not allowed to connect", 1040 "Too many connections").
pub fn looks_like_greeting(server_first_bytes: &[u8]) -> bool {
    let b = server_first_bytes;
    let (Some(len), Some(&seq)) = (le_u24(b), b.get(3)) else {
        return false;
    };
    if seq != 0 || !(5..=2048).contains(&len) {
        return false;
    }
    let payload = b.get(4..).unwrap_or(&[]);
    let payload = payload
        .get(..(len as usize).min(payload.len()))
        .unwrap_or(&[]);
    match payload.first() {
        Some(&10) => {
            let version_and_rest = payload.get(1..).unwrap_or(&[]);
            let Some(nul) = version_and_rest.iter().position(|&c| c == 0) else {
                // Cut by the snap length before the version's NUL: judge the version prefix captured.
                let cut_short = b.len() < 4 + len as usize;
                return cut_short
                    && len >= 20
                    && version_and_rest.len() >= 3
                    && version_and_rest.first().is_some_and(u8::is_ascii_digit)
                    && version_and_rest
                        .iter()
                        .all(|c| c.is_ascii_graphic() || *c == b' ');
            };
            let version = version_and_rest.get(..nul).unwrap_or(&[]);
            // "5.0.54", "8.0.36", "5.5.5-10.6.12-MariaDB": starts with a digit, all printable.
            let plausible_version = (1..=64).contains(&version.len())
                && version.first().is_some_and(u8::is_ascii_digit)
                && version.iter().all(|c| c.is_ascii_graphic() || *c == b' ');
            // Protocol 10 needs id (4) + scramble (8) + filler (1) + capabilities (2) after the version.
            plausible_version && (len as usize) >= 1 + nul + 1 + 15
        }
        Some(&0xFF) => {
            let code = payload.get(1..3).map(|c| u16::from_le_bytes([c[0], c[1]]));
            let msg = payload.get(3..).unwrap_or(&[]);
            code.is_some_and(|c| (1000..5000).contains(&c))
                && !msg.is_empty()
                && msg
                    .iter()
                    .all(|c| c.is_ascii_graphic() || *c == b' ' || *c >= 0x80)
        }
        _ => false,
    }
}

/// Do these client bytes start with a MySQL command packet (sequence id 0, a
/// known `COM_*` byte with a plausible length)? When the whole packet is
/// present, COM_QUERY text must also look like text, which makes a false
/// positive on other protocols unlikely.
pub fn looks_like_client_command(client_bytes: &[u8]) -> bool {
    if client_command_at(client_bytes) != Verdict::Yes {
        return false;
    }
    let len = le_u24(client_bytes).unwrap_or(0) as usize;
    let Some(payload) = client_bytes.get(4..4 + len) else {
        // Only part of the packet is here: the header check has to do.
        return true;
    };
    match payload.first() {
        Some(0x03) | Some(0x16) => {
            let body = payload.get(1..).unwrap_or(&[]);
            let text = if wire::looks_like_attribute_prefix(body) {
                match wire::split_query_attributes(body) {
                    Some((_, t)) => t,
                    None => return false,
                }
            } else {
                body
            };
            let sample = text.get(..text.len().min(256)).unwrap_or(&[]);
            !sample.is_empty() && sample.iter().all(|&c| is_text_start(c))
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Greeting of the classic Wireshark sample (zeek-mysql/mysql.pcap, stream 0, first server segment).
    const MYSQL_5_0_GREETING: &str = "340000000a352e302e3534005e0000003e7e24347574682c002ca2210200000000000000000000000000003e36313249575a3e6668575800";

    pub(crate) fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn a_real_greeting_is_recognised_even_when_cut_short() {
        let g = hex(MYSQL_5_0_GREETING);
        assert!(looks_like_greeting(&g));
        assert!(looks_like_greeting(&g[..30]));
        // A snap length of 80 leaves ~14 bytes: the header, protocol 10 and the start of the version.
        assert!(looks_like_greeting(&g[..10]));
        // Too little of the version to judge.
        assert!(!looks_like_greeting(&g[..7]));
    }

    #[test]
    fn http_and_tls_are_not_greetings_nor_commands() {
        assert!(!looks_like_greeting(b"HTTP/1.1 200 OK\r\n\r\n"));
        assert!(!looks_like_greeting(
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"
        ));
        assert!(!looks_like_client_command(b"GET / HTTP/1.1\r\n"));
        assert!(!looks_like_client_command(
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"
        ));
    }

    #[test]
    fn refusal_err_greeting_is_recognised() {
        let mut p = vec![0xFF];
        p.extend_from_slice(&1130u16.to_le_bytes());
        p.extend_from_slice(b"Host '10.0.0.1' is not allowed to connect to this MySQL server");
        let mut b = vec![p.len() as u8, 0, 0, 0];
        b.extend(p);
        assert!(looks_like_greeting(&b));
    }

    /// `02 00 00 00 03 02`: a 2-byte COM_QUERY whose one byte is not text, from the
    /// fuzz finding `min-of-crash-f2e2431b`. Whatever follows it is the next packet
    /// and must not change the verdict.
    #[test]
    fn a_short_query_is_judged_by_its_own_bytes() {
        let short = [0x02, 0, 0, 0, 0x03, 0x02];
        assert_eq!(client_command_at(&short), Verdict::No);
        assert_eq!(
            client_command_at(&[&short[..], &[0x01]].concat()),
            Verdict::No
        );
        // With a third byte the packet itself can hold the attribute prefix (count 2, set count 1).
        let attrs = [0x03, 0, 0, 0, 0x03, 0x02, 0x01];
        assert_eq!(client_command_at(&attrs[..6]), Verdict::NeedMore);
        assert_eq!(client_command_at(&attrs), Verdict::Yes);
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]
        /// The boundary search asks again with more bytes only after `NeedMore`, so a
        /// verdict given on a prefix must be the verdict on every extension of it;
        /// otherwise where TCP cut the stream would change what is decoded. And only
        /// the packet's own bytes count: once it is whole, what follows is irrelevant.
        #[test]
        fn client_command_verdicts_depend_only_on_the_packets_own_bytes(
            head in prop_oneof![
                (prop_oneof![0u8..4, 0u8..12], prop_oneof![Just(0x03), 0u8..0x20])
                    .prop_map(|(len, cmd)| vec![len, 0, 0, 0, cmd]),
                proptest::collection::vec(any::<u8>(), 0..5),
            ],
            // Small values often, so that lengths, sequence ids and attribute counts line up.
            body in proptest::collection::vec(prop_oneof![0u8..4, any::<u8>()], 0..16),
            after in proptest::collection::vec(any::<u8>(), 0..16),
        ) {
            let w: Vec<u8> = [head, body].concat();
            let whole = client_command_at(&w);
            for cut in 0..w.len() {
                let v = client_command_at(&w[..cut]);
                prop_assert!(v == Verdict::NeedMore || v == whole, "{:?} at {}", v, cut);
            }
            if let Some(len) = le_u24(&w).filter(|&l| w.len() >= 4 + l as usize) {
                let packet = &w[..4 + len as usize];
                prop_assert_eq!(client_command_at(&[packet, &after[..]].concat()), client_command_at(packet));
            }
        }
    }

    #[test]
    fn client_commands_are_recognised() {
        // COM_QUERY "select @@version_comment limit 1" from mysql.pcap stream 0.
        let q = hex("210000000373656c65637420404076657273696f6e5f636f6d6d656e74206c696d69742031");
        assert!(looks_like_client_command(&q));
        assert!(looks_like_client_command(b"\x01\x00\x00\x00\x0e"));
        assert!(!looks_like_client_command(b"\x02\x00\x00\x00\x0e\x00"));
        assert!(!looks_like_client_command(b"\x01\x00\x00\x01\x0e"));
        assert!(looks_like_client_command(
            b"\x0b\x00\x00\x00\x03\x00\x01select 1"
        ));
    }
}
