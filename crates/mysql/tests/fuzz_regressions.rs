//! Inputs the `session` fuzz target found, kept as regression tests. The input
//! format is the fuzz target's (see fuzz/fuzz_targets/session.rs); each must
//! decode the same (transactions, session info, replication stream) whether its
//! chunks are fed whole or split into pieces.

include!("../fuzz/session_script.rs");

/// Decodes `data` whole and in pieces of 1 to 7 bytes, asserts they agree, and returns the whole
/// decode (nothing for an empty input).
fn check(data: &[u8]) -> Option<(Vec<Transaction>, SessionInfo, Option<ReplicationSummary>)> {
    let (&head, rest) = data.split_first()?;
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
        assert_eq!(
            whole.2, split.2,
            "replication stream differs with pieces of {piece}"
        );
    }
    Some(whole)
}

/// Found after ~125k executions: under the compressed protocol one segment can
/// carry two client commands; the second must see that the first already
/// resynchronised a hunting server, or it wrongly ended the first as GapLost
/// (bytewise feeding did not, so chunking changed the result).
#[test]
fn compressed_commands_in_one_segment_see_the_server_resync() {
    check(include_bytes!("data/fuzz/compressed-stale-server-hunt.bin"));
}

/// Found in the first 21 CPU-seconds of a long run: under the compressed protocol, where a server's
/// compressed packet begins is where the answer a request waits for began, but that was asked only at
/// the first byte of each input; a packet beginning inside a segment fed whole was missed, and fed in
/// pieces was not (the request had a first response frame only then).
#[test]
fn every_compressed_packet_start_of_the_server_is_where_an_answer_may_begin() {
    let (t, _, _) = check(include_bytes!(
        "data/fuzz/compressed-packet-start-mid-input.bin"
    ))
    .unwrap();
    assert!(t.iter().any(|t| t.first_response_frame == Some(123)));
}

/// Every input libFuzzer reduced from crashes is replayed too.
#[test]
fn all_fuzz_regression_inputs_are_chunking_invariant() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fuzz");
    for e in std::fs::read_dir(dir).unwrap() {
        check(&std::fs::read(e.unwrap().path()).unwrap());
    }
}

/// The seeds cut from real captures; the `repl-*` ones (repl-semisync.pcap's dump from its start, and
/// its event stream joined mid-way) must decode as a replication stream, so the fuzzer starts there.
#[test]
fn seeds_are_chunking_invariant() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/session");
    let mut streams = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let whole = check(&std::fs::read(&path).unwrap());
        let name = path.file_name().unwrap().to_string_lossy();
        if name.starts_with("repl-") {
            let repl = whole.and_then(|w| w.2);
            assert!(
                repl.as_ref().is_some_and(|r| r.events > 0),
                "{name}: no binlog events decoded: {repl:?}"
            );
            streams += 1;
        }
    }
    assert_eq!(streams, 2, "the two replication seeds");
}

/// The inputs of `../shared/fuzz-findings/mysql-session/` (read from there, never copied): the session
/// target's 7 rejections and their minimised forms. In each, a session hunting for a client packet
/// boundary meets a 2-byte COM_QUERY whose one payload byte is not text, e.g. `02 00 00 00 03 02`; the
/// query-attribute test read the byte after the packet, so the verdict depended on whether that byte had
/// arrived yet.
fn fuzz_finding(name: &str) -> Option<Vec<u8>> {
    let path = session_findings()?.join(name);
    Some(std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// `../shared/fuzz-findings/mysql-session` beside the repository, or `None` (the skip said).
fn session_findings() -> Option<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    pcapsleuth_testkit::shared::input(&root, "fuzz-findings/mysql-session")
}

macro_rules! fuzz_findings {
    ($($test:ident: $file:literal, $min:literal;)*) => {$(
        #[test]
        fn $test() {
            let (Some(crash), Some(min)) = (
                fuzz_finding(concat!("crash-", $file)),
                fuzz_finding(concat!("minimized/min-of-crash-", $min)),
            ) else {
                return;
            };
            check(&crash);
            check(&min);
        }
    )*};
}

fuzz_findings! {
    short_query_5f5ba1fd_decides_from_its_own_bytes: "5f5ba1fd9e3bfe5a1866cbace11e769e93431104", "5f5ba1fd";
    short_query_65d955df_decides_from_its_own_bytes: "65d955df64d84f3c8cdbf7a7029f57a4cfb57d0b", "65d955df";
    short_query_76075717_decides_from_its_own_bytes: "76075717c774b3b04fa4771fb17c00adebf4f5de", "76075717";
    short_query_8396218e_decides_from_its_own_bytes: "8396218e567602e4a37607bbe82598f9c3f9903b", "8396218e";
    short_query_af866edc_decides_from_its_own_bytes: "af866edc9503a2c7a718cca926ff44d7b101f045", "af866edc";
    short_query_f2e2431b_decides_from_its_own_bytes: "f2e2431bcd564b84b196def4f580ae8e96c54c0e", "f2e2431b";
    short_query_fdb32e3a_decides_from_its_own_bytes: "fdb32e3a30c9a6e16c4482b9bec14b61d7f90cd2", "fdb32e3a";
}

/// Every file of `../shared/fuzz-findings/mysql-session/` is one of the named cases above.
#[test]
fn every_shared_session_finding_has_a_named_test() {
    let Some(root) = session_findings() else {
        return;
    };
    let mut n = 0;
    for dir in [root.clone(), root.join("minimized")] {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                check(&std::fs::read(&p).unwrap());
                n += 1;
            }
        }
    }
    assert_eq!(
        n, 14,
        "new inputs in mysql-session/: give each a named test"
    );
}
