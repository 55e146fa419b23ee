//! Specifications checked against real conversations from Zeek's MySQL traces
//! (see tests/data/README.md for where each comes from).

use crate::common;
use common::*;
use pcapsleuth_mysql::{
    wire, CachingSha2Auth, Command, Encryption, Outcome, SessionPhase, StartMode,
};

fn names(t: &[pcapsleuth_mysql::Transaction]) -> Vec<&'static str> {
    t.iter().map(|t| t.command.name()).collect()
}

#[test]
fn mysql_5_0_session_from_the_wireshark_sample_decodes_fully() {
    // mysql.pcap stream 0: MySQL 5.0.54, classic EOF framing.
    let (t, s) = play(StartMode::Handshake, &load("mysql.pcap.0"));
    assert_eq!(t.len(), 18);
    assert_eq!(t[0].command, Command::Connect);
    assert!(matches!(t[0].outcome, Outcome::Ok { .. }));
    assert_eq!(
        t[1].statement.as_deref(),
        Some("select @@version_comment limit 1")
    );
    assert_eq!(t[1].outcome, Outcome::ResultSet { rows: 1 });
    assert_eq!(
        (
            t[1].request_frame,
            t[1].first_response_frame,
            t[1].last_response_frame
        ),
        (4, Some(5), Some(5))
    );
    assert_eq!(t[3].command, Command::InitDb);
    assert_eq!(t[4].statement.as_deref(), Some("show databases"));
    assert_eq!(t[4].rows, 2);
    assert_eq!(t[6].command, Command::FieldList);
    assert_eq!(
        t[6].outcome,
        Outcome::ResultSet { rows: 4 },
        "four field definitions of table agent"
    );
    assert_eq!(
        t[8].outcome,
        Outcome::Ok {
            affected_rows: 1,
            last_insert_id: 1,
            status_flags: 2,
            warnings: 0
        }
    );
    assert_eq!(t[10].statement.as_deref(), Some("select * from foo"));
    assert_eq!(t[10].rows, 2);
    assert_eq!(t[17].command, Command::Quit);
    assert_eq!(t[17].outcome, Outcome::NoResponseExpected);
    let i = s.info();
    assert_eq!(i.server_version.as_deref(), Some("5.0.54"));
    assert_eq!(i.connection_id, Some(94));
    assert_eq!(i.user.as_deref(), Some("tfoerste"));
    assert_eq!(i.schema.as_deref(), Some("test"), "from COM_INIT_DB");
    assert_eq!(
        i.counters.malformed_packets + i.counters.sequence_anomalies + i.counters.skipped_bytes,
        0
    );
}

#[test]
fn caching_sha2_full_auth_then_deprecate_eof_resultsets() {
    // caching_sha2_password.pcap stream 1: MySQL 8.0.32, 0x01 0x04 full auth, CLIENT_DEPRECATE_EOF.
    let (t, s) = play(StartMode::Handshake, &load("caching_sha2_password.pcap.1"));
    assert_eq!(
        names(&t),
        [
            "COM_CONNECT",
            "COM_QUERY",
            "COM_QUERY",
            "COM_FIELD_LIST",
            "COM_QUERY",
            "COM_QUIT"
        ]
    );
    assert!(matches!(t[0].outcome, Outcome::Ok { .. }));
    assert_eq!(
        t[1].outcome,
        Outcome::ResultSet { rows: 5 },
        "show databases"
    );
    assert_eq!(
        t[3].outcome,
        Outcome::ResultSet { rows: 1 },
        "COM_FIELD_LIST t"
    );
    assert_eq!(
        s.info().caching_sha2,
        Some(CachingSha2Auth::FullAuthRequired)
    );
    assert_eq!(
        s.info().auth_plugin.as_deref(),
        Some("caching_sha2_password")
    );
}

#[test]
fn change_user_failure_is_an_err_transaction_and_keeps_the_old_user() {
    // change-user-error.pcap stream 0: MySQL 8.4.2, COM_CHANGE_USER root2 denied.
    let (t, s) = play(StartMode::Handshake, &load("change-user-error.pcap.0"));
    assert_eq!(names(&t), ["COM_CONNECT", "COM_PING", "COM_CHANGE_USER"]);
    assert_eq!(t[2].statement.as_deref(), Some("root2"));
    match &t[2].outcome {
        Outcome::Err {
            code,
            sql_state,
            message,
        } => {
            assert_eq!((*code, sql_state.as_str()), (1045, "28000"));
            assert!(message.starts_with("Access denied for user 'root2'"));
        }
        o => panic!("{o:?}"),
    }
    assert_eq!(s.info().user.as_deref(), Some("root"));
}

#[test]
fn query_attributes_are_stripped_from_the_statement() {
    // query-attr.pcap stream 0: MySQL 8.0.29 with CLIENT_QUERY_ATTRIBUTES.
    let (t, _) = play(StartMode::Handshake, &load("query-attr.pcap.0"));
    let q: Vec<_> = t.iter().filter_map(|t| t.statement.as_deref()).collect();
    assert_eq!(
        q,
        [
            "select @@version_comment limit 1",
            "select now()",
            "select now()"
        ]
    );
    // mysql-9.0.0-query-attributes.pcap: attributes of non-string types.
    let (t, _) = play(
        StartMode::Handshake,
        &load("mysql-9.0.0-query-attributes.pcap.0"),
    );
    assert_eq!(t[2].statement.as_deref(), Some("SELECT version()"));
    assert_eq!(t[2].outcome, Outcome::ResultSet { rows: 1 });
}

#[test]
fn refused_host_gives_an_err_connect_transaction() {
    // auth.pcap stream 0: the server answers the SYN with ERR 1130 instead of a greeting.
    let (t, _) = play(StartMode::Handshake, &load("auth.pcap.0"));
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].command, Command::Connect);
    assert!(matches!(&t[0].outcome, Outcome::Err { code: 1130, .. }));
}

#[test]
fn auth_switch_to_sha256_password_and_login_failure() {
    // mysql8-navicat-login-failed.pcap: AuthSwitchRequest to sha256_password, then ERR 1045.
    let (t, s) = play(
        StartMode::Handshake,
        &load("mysql8-navicat-login-failed.pcap.0"),
    );
    assert_eq!(t.len(), 1);
    assert!(matches!(&t[0].outcome, Outcome::Err { code: 1045, .. }));
    assert_eq!(s.info().auth_plugin.as_deref(), Some("sha256_password"));
    assert_eq!(s.info().user.as_deref(), Some("dsm1"));
}

#[test]
fn ssl_request_stops_decoding_cleanly() {
    // tls-12-amazon-rds.pcap: greeting, SSLRequest, then TLS records.
    let evs = load("tls-12-amazon-rds.pcap.0");
    let mut s = pcapsleuth_mysql::Session::new(StartMode::Handshake);
    for (i, e) in evs.iter().enumerate() {
        if let Ev::Data(d, b) = e {
            s.feed(*d, b, meta(i as u64 + 1));
        }
    }
    assert_eq!(s.info().encryption, Encryption::Tls);
    assert_eq!(s.info().server_version.as_deref(), Some("8.0.28"));
    let c = s.info().counters;
    assert!(c.undecoded_bytes > 0);
    assert_eq!(
        c.malformed_packets + c.unsolicited_server_packets + c.unexpected_client_packets,
        0
    );
    let ctx = s.close(S, pcapsleuth_mysql::CloseFlag::Fin, meta(99));
    assert_eq!(ctx.phase, SessionPhase::Encrypted);
    // The login happened (tshark's Login Request, the SSLRequest), encrypted from there on.
    let t: Vec<_> = s.drain().collect();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].command, Command::Connect);
    assert_eq!(t[0].request_frame, 2);
    assert_eq!(t[0].outcome, Outcome::Encrypted);
}

#[test]
fn an_ssl_request_hands_the_tls_bytes_over() {
    // tls-12-amazon-rds.pcap: greeting, SSLRequest, then the TLS handshake; a TLS layer takes the bytes
    // from the ClientHello on, and the session, told they are decrypted, reads the login that follows.
    let evs = load("tls-12-amazon-rds.pcap.0");
    let mut s = pcapsleuth_mysql::Session::new(StartMode::Handshake);
    let mut tls_bytes = 0;
    for (i, e) in evs.iter().enumerate() {
        if let Ev::Data(d, b) = e {
            s.feed(*d, b, meta(i as u64 + 1));
            if s.info().encryption == Encryption::Tls && tls_bytes == 0 {
                // Taken after the SSLRequest's segment: nothing fed yet after it.
                let kept = s.take_tls_bytes().unwrap();
                assert!(kept.pieces.is_empty());
                tls_bytes = 1;
            }
        }
    }
    assert!(s.take_tls_bytes().is_none(), "taken once");
    let undecoded = s.info().counters.undecoded_bytes;
    assert!(undecoded > 0, "counted as before");

    // Fed whole, the bytes after the SSLRequest are kept for the TLS layer, in order.
    let mut s = pcapsleuth_mysql::Session::new(StartMode::Handshake);
    for (i, e) in evs.iter().enumerate() {
        if let Ev::Data(d, b) = e {
            s.feed(*d, b, meta(i as u64 + 1));
        }
    }
    let kept = s.take_tls_bytes().unwrap();
    let (d, m, first) = &kept.pieces[0];
    assert_eq!((*d, m.frame), (C, 3));
    assert_eq!(first[..3], [0x16, 0x03, 0x01], "a ClientHello record");
    let total: usize = kept.pieces.iter().map(|(_, _, b)| b.len()).sum();
    assert_eq!(total as u64, undecoded);
    assert_eq!(kept.dropped, [0, 0]);

    // Decrypted, the login (CLIENT_SSL still set in its capabilities) is read in the clear.
    s.resume_decrypted();
    assert_eq!(s.info().encryption, Encryption::TlsDecrypted);
    assert_eq!(s.info().counters.undecoded_bytes, 0);
    let _ = s.drain().count();
    let login = [
        &[0x20u8, 0, 0, 2][..],
        &(wire::capability::CLIENT_PROTOCOL_41
            | wire::capability::CLIENT_SSL
            | wire::capability::CLIENT_SECURE_CONNECTION)
            .to_le_bytes(),
        &[0, 0, 0, 1, 33],
        &[0; 23],
        b"u\0",
        &[0],
    ]
    .concat();
    let mut login = login;
    login[0] = (login.len() - 4) as u8;
    s.feed(C, &login, meta(100));
    s.feed(S, &[7, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0], meta(101));
    let t: Vec<_> = s.drain().collect();
    assert_eq!(t.len(), 1);
    assert_eq!((t[0].command, t[0].request_frame), (Command::Connect, 100));
    assert!(
        matches!(t[0].outcome, Outcome::Ok { .. }),
        "{:?}",
        t[0].outcome
    );
    assert_eq!(s.info().user.as_deref(), Some("u"));
}

#[test]
fn joining_mid_stream_finds_the_next_command() {
    // selects_with_new_proto.pcap without its first 4 segments (handshake and the first query).
    let evs = load("selects_with_new_proto.pcap.0");
    let (t, s) = play(StartMode::MidStream, &evs[4..]);
    assert_eq!(
        names(&t),
        ["COM_QUERY", "COM_QUERY", "COM_QUERY", "COM_QUIT"]
    );
    assert_eq!(t[0].statement.as_deref(), Some("show databases"));
    assert_eq!(t[1].outcome, Outcome::ResultSet { rows: 78 });
    assert_eq!(t[2].outcome, Outcome::ResultSet { rows: 33 });
    assert_eq!(s.info().counters.malformed_packets, 0);
}

#[test]
fn real_conversations_are_chunking_invariant() {
    for name in [
        "mysql.pcap.0",
        "caching_sha2_password.pcap.1",
        "change-user-error.pcap.0",
        "query-attr.pcap.0",
        "selects_with_new_proto.pcap.0",
        "snaplen80.pcap.0",
        "caching_sha2_password.pcap.0",
    ] {
        let evs = load(name);
        let (whole, _) = play(StartMode::Handshake, &evs);
        let (bytewise, _) = play_chunked(StartMode::Handshake, &evs, &mut |_| 1);
        let (odd, _) = play_chunked(StartMode::Handshake, &evs, &mut |k| [3, 1, 7, 2, 13][k % 5]);
        assert_eq!(whole, bytewise, "{name}");
        assert_eq!(whole, odd, "{name}");
        let (mid_whole, _) = play(StartMode::MidStream, &evs);
        let (mid_bytes, _) = play_chunked(StartMode::MidStream, &evs, &mut |_| 1);
        assert_eq!(mid_whole, mid_bytes, "{name} mid-stream");
    }
}

#[test]
fn snaplen_80_login_is_followed_and_the_first_prepare_decoded() {
    // fixtures/snaplen80.pcap stream 0 (first 190 segments): MariaDB 10.11 and
    // sysbench, 14 bytes of MySQL payload kept per segment, the rest a gap.
    // The truncated greeting and HandshakeResponse once left the session
    // waiting for a greeting and lost the first COM_STMT_PREPARE of each session.
    let (t, s) = play(StartMode::Handshake, &load("snaplen80.pcap.0"));
    assert_eq!(t[0].command, Command::Connect);
    assert!(matches!(t[0].outcome, Outcome::Ok { .. }));
    let prepares: Vec<_> = t
        .iter()
        .filter(|t| t.command == Command::StmtPrepare)
        .collect();
    assert_eq!(prepares.len(), 42);
    assert_eq!(t[1].command, Command::StmtPrepare);
    assert!(t[1].statement.as_deref().unwrap().starts_with("SELECT c "));
    for (k, p) in prepares.iter().enumerate() {
        // COM_STMT_PREPARE_OK's first 10 bytes are kept: id and counts are known.
        assert!(
            matches!(p.outcome, Outcome::Prepared { statement_id, .. } if statement_id == k as u32 + 1),
            "{k}: {:?}",
            p.outcome
        );
    }
    let execs: Vec<_> = t
        .iter()
        .filter(|t| t.command == Command::StmtExecute)
        .collect();
    assert!(execs.len() >= 5);
    // BEGIN's OK fits in the kept bytes; a SELECT's rows fall into the gap, so
    // how its resultset ended is unknown (but it started: a response time exists).
    assert_eq!(execs[0].statement.as_deref(), Some("BEGIN"));
    assert!(matches!(execs[0].outcome, Outcome::Ok { .. }));
    // The last one's answer too: the client acknowledged its bytes, which the snap length cut, before
    // the excerpt ends.
    for e in &execs[1..] {
        assert!(e.statement.as_deref().unwrap().starts_with("SELECT"));
        assert_eq!(e.outcome, Outcome::GapLost);
        assert!(e.first_response_frame.is_some());
    }
    let i = s.info();
    assert_eq!(i.protocol_version, Some(10));
    assert_eq!(i.server_version, None, "cut before the version's NUL");
    assert!(i.client_capabilities.is_some());
    assert_eq!(
        i.counters.malformed_packets + i.counters.unexpected_client_packets,
        0
    );
}

#[test]
fn login_abandoned_with_a_fin_ends_with_the_servers_err_1158() {
    // caching_sha2_password.pcap stream 0: full authentication requested, the
    // client sends FIN instead of its password, the server answers ERR 1158
    // (tshark frame 10; Zeek: "login root F - Got an error reading communication
    // packets"), then the client's RST.
    let (t, s) = play(StartMode::Handshake, &load("caching_sha2_password.pcap.0"));
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].command, Command::Connect);
    assert!(
        matches!(&t[0].outcome, Outcome::Err { code: 1158, message, .. }
            if message == "Got an error reading communication packets"),
        "{:?}",
        t[0].outcome
    );
    assert_eq!(
        s.info().caching_sha2,
        Some(CachingSha2Auth::FullAuthRequired)
    );
    assert_eq!(s.info().counters.unsolicited_errors, 0);
}
