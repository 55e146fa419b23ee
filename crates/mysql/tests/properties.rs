//! Properties: untrusted bytes never panic, and chunking never changes the result.

mod common;
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
