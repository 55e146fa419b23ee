//! Properties: untrusted bytes never panic, and chunking never changes the result.

use crate::common;
use common::*;
use pcapsleuth_mysql::{CloseFlag, StartMode};
use proptest::prelude::*;

fn any_dir() -> impl Strategy<Value = pcapsleuth_mysql::Direction> {
    prop_oneof![Just(C), Just(S)]
}

fn any_event() -> impl Strategy<Value = Ev> {
    prop_oneof![
        8 => (any_dir(), proptest::collection::vec(any::<u8>(), 0..300)).prop_map(|(d, b)| Ev::Data(d, b)),
        1 => (any_dir(), 0u64..100_000).prop_map(|(d, n)| Ev::Gap(d, n)),
        1 => (any_dir(), prop_oneof![Just(CloseFlag::Fin), Just(CloseFlag::Rst)]).prop_map(|(d, f)| Ev::Close(d, f)),
    ]
}

/// Plausible MySQL traffic with noise: commands, resultsets, OKs, ERRs, garbage.
fn mysql_ish_event() -> impl Strategy<Value = Ev> {
    let sql = "[a-z ]{1,30}";
    prop_oneof![
        3 => sql.prop_map(|q| Ev::Data(C, command(0x03, q.as_bytes()))),
        1 => (0u8..0x22, proptest::collection::vec(any::<u8>(), 0..12)).prop_map(|(c, b)| Ev::Data(C, command(c, &b))),
        2 => (1usize..4, 0usize..5, any::<bool>(), any::<bool>()).prop_map(|(cols, rows, classic, more)| {
            let names: Vec<String> = (0..cols).map(|i| format!("c{i}")).collect();
            let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
            let row: Vec<&str> = vec!["v"; cols];
            let rows: Vec<&[&str]> = vec![row.as_slice(); rows];
            let status = if more { 0x000A } else { 2 };
            Ev::Data(S, if classic { classic_resultset(1, &names, &rows, status) } else { deprecated_eof_resultset(1, &names, &rows, status) })
        }),
        2 => Just(Ev::Data(S, packet(1, &ok(1, 2)))),
        1 => Just(Ev::Data(S, packet(1, &err(1064, "42000", "You have an error")))),
        1 => (any_dir(), proptest::collection::vec(any::<u8>(), 1..40)).prop_map(|(d, b)| Ev::Data(d, b)),
        1 => (any_dir(), 1u64..300).prop_map(|(d, n)| Ev::Gap(d, n)),
    ]
}

fn chunker(sizes: Vec<usize>) -> impl FnMut(usize) -> usize {
    move |k| sizes.get(k % sizes.len().max(1)).copied().unwrap_or(1)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_in_any_chunking(
        evs in proptest::collection::vec(any_event(), 0..40),
        sizes in proptest::collection::vec(1usize..64, 1..8),
        handshake in any::<bool>(),
    ) {
        let mode = if handshake { StartMode::Handshake } else { StartMode::MidStream };
        let _ = play_chunked(mode, &evs, &mut chunker(sizes));
    }

    #[test]
    fn arbitrary_bytes_are_chunking_invariant(
        evs in proptest::collection::vec(any_event(), 0..40),
        sizes in proptest::collection::vec(1usize..64, 1..8),
        handshake in any::<bool>(),
    ) {
        let mode = if handshake { StartMode::Handshake } else { StartMode::MidStream };
        let (whole, s1) = play(mode, &evs);
        let (chunked, s2) = play_chunked(mode, &evs, &mut chunker(sizes));
        prop_assert_eq!(whole, chunked);
        prop_assert_eq!(s1.info(), s2.info());
        prop_assert_eq!(s1.replication(), s2.replication());
    }

    #[test]
    fn mysql_like_traffic_is_chunking_invariant(
        evs in proptest::collection::vec(mysql_ish_event(), 0..40),
        sizes in proptest::collection::vec(1usize..16, 1..8),
    ) {
        let (whole, s1) = play(StartMode::MidStream, &evs);
        let (bytewise, s2) = play_chunked(StartMode::MidStream, &evs, &mut |_| 1);
        let (chunked, s3) = play_chunked(StartMode::MidStream, &evs, &mut chunker(sizes));
        prop_assert_eq!(&whole, &bytewise);
        prop_assert_eq!(&whole, &chunked);
        prop_assert_eq!(s1.info(), s2.info());
        prop_assert_eq!(s1.info(), s3.info());
        prop_assert_eq!(s1.replication(), s2.replication());
        prop_assert_eq!(s1.replication(), s3.replication());
    }

    #[test]
    fn fingerprint_never_panics(s in "\\PC{0,200}") {
        let _ = pcapsleuth_mysql::fingerprint(&s);
    }

    #[test]
    fn detectors_never_panic(b in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = pcapsleuth_mysql::looks_like_greeting(&b);
        let _ = pcapsleuth_mysql::looks_like_client_command(&b);
        let _ = pcapsleuth_mysql::looks_like_binlog_events(&b);
    }
}

/// What a connection's first turns may begin with: the shapes MySQL is recognised from (a greeting, a
/// login, plain and compressed commands, answers, binlog events, semi-sync ACKs), and bytes that are
/// none of them.
fn recognisable_start() -> impl Strategy<Value = Vec<u8>> {
    let mut greeting = vec![10];
    greeting.extend_from_slice(b"8.0.36\0");
    greeting.extend_from_slice(&[7, 0, 0, 0]);
    greeting.extend_from_slice(b"abcdefgh\0");
    greeting.extend_from_slice(&[0xff, 0xf7, 0x21, 0x02, 0, 0xff, 0xdf, 21]);
    greeting.extend_from_slice(&[0; 10]);
    greeting.extend_from_slice(b"ijklmnopqrst\0mysql_native_password\0");
    let mut login = 0x000a_a685u32.to_le_bytes().to_vec();
    login.extend_from_slice(&[0, 0, 0, 1, 0x21]);
    login.extend_from_slice(&[0; 23]);
    login.extend_from_slice(b"root\0\x14");
    login.extend_from_slice(&[0x5a; 20]);
    let ssl_request = {
        let mut r = 0x000a_ae85u32.to_le_bytes().to_vec();
        r.extend_from_slice(&[0, 0, 0, 1, 0x21]);
        r.extend_from_slice(&[0; 23]);
        r
    };
    // A QUERY event in a semi-sync packet asking for its ACK, then the next event's packet.
    let event = |seq: u8| {
        let mut p = vec![0x00, 0xEF, 0x01];
        let body = b"\x00\x00\x00\x00\x00\x00\x00\x00BEGIN";
        p.extend_from_slice(&1_700_000_000u32.to_le_bytes());
        p.push(2);
        p.extend_from_slice(&1u32.to_le_bytes());
        p.extend_from_slice(&(19 + body.len() as u32).to_le_bytes());
        p.extend_from_slice(&4_000u32.to_le_bytes());
        p.extend_from_slice(&0u16.to_le_bytes());
        p.extend_from_slice(body);
        packet(seq, &p)
    };
    let mut ack = vec![0xEF];
    ack.extend_from_slice(&4_000u64.to_le_bytes());
    ack.extend_from_slice(b"binlog.000001");
    let shapes = vec![
        packet(0, &greeting),
        packet(
            0,
            &err(1130, "HY000", "Host '10.0.0.1' is not allowed to connect"),
        ),
        packet(1, &login),
        packet(1, &ssl_request),
        [packet(1, &ssl_request), vec![0x16, 0x03, 0x01, 0x02, 0x00]].concat(),
        command(0x03, b"select * from t where id = 1"),
        command(0x0e, b""),
        command(0x16, b"select ?"),
        compressed(0, &command(0x03, b"select 1"), false),
        compressed(0, &command(0x03, &[b'x'; 120]), true),
        packet(1, &ok(1, 2)),
        packet(2, &ok(0, 2)),
        [event(7), event(8)].concat(),
        [packet(0, &ack), packet(0, &ack)].concat(),
    ];
    (
        prop_oneof![
            4 => proptest::sample::select(shapes),
            1 => proptest::collection::vec(any::<u8>(), 0..64),
        ],
        proptest::collection::vec((0usize..80, any::<u8>()), 0..2),
        proptest::collection::vec(any::<u8>(), 0..8),
    )
        .prop_map(|(mut b, changes, tail)| {
            for (at, v) in changes {
                if let Some(x) = b.get_mut(at) {
                    *x = v;
                }
            }
            b.extend(tail);
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// The checks MySQL is recognised by answer on a prefix of a turn only what the whole turn would
    /// give, however long it turns out to be: where TCP cut the stream (and so how many bytes were at
    /// hand when a check was asked) never changes what is recognised. On the final bytes they always
    /// answer.
    #[test]
    fn recognition_verdicts_on_a_prefix_are_the_whole_turns(b in recognisable_start(), seq in 1u8..3) {
        use pcapsleuth_mysql::{
            binlog_event_verdict, client_command_verdict, greeting_verdict, login_verdict,
            response_verdict, semi_sync_acks_verdict, Extent, Verdict,
        };
        let response = move |w: &[u8], e: Extent| response_verdict(w, seq, e);
        type Check<'a> = &'a dyn Fn(&[u8], Extent) -> Verdict;
        let checks: [(&str, Check); 6] = [
            ("greeting", &greeting_verdict),
            ("login", &login_verdict),
            ("command", &client_command_verdict),
            ("response", &response),
            ("binlog event", &binlog_event_verdict),
            ("semi-sync ACKs", &semi_sync_acks_verdict),
        ];
        for (name, check) in checks {
            for end in 0..=b.len() {
                let whole = check(&b[..end], Extent::Final);
                prop_assert_ne!(whole, Verdict::NeedMore, "{} on {:?}", name, &b[..end]);
                for cut in 0..=end {
                    let v = check(&b[..cut], Extent::Growing);
                    prop_assert!(
                        v == Verdict::NeedMore || v == whole,
                        "{}: {:?} on {} of {:?} bytes, {:?} on all {}",
                        name, v, cut, &b[..end], whole, end
                    );
                }
            }
        }
    }
}
