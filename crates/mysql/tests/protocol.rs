//! Protocol behaviour specified with hand-built packets.

use crate::common;
use common::*;
use pcapsleuth_mysql::{
    CloseFlag, Command, Compression, ExchangeShape, Outcome, PieceShape, ServerStatus, Session,
    SessionPhase, SqlState, StartMode,
};

const MORE: u16 = 0x0008;

/// A protocol-10 greeting with the given capability flags.
fn greeting(caps: u32) -> Vec<u8> {
    let mut p = vec![10];
    p.extend_from_slice(b"8.0.36\0");
    p.extend_from_slice(&42u32.to_le_bytes());
    p.extend_from_slice(b"abcdefgh\0");
    p.extend_from_slice(&(caps as u16).to_le_bytes());
    p.push(0xff);
    p.extend_from_slice(&2u16.to_le_bytes());
    p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    p.push(21);
    p.extend_from_slice(&[0; 10]);
    p.extend_from_slice(b"ijklmnopqrst\0");
    p.extend_from_slice(b"mysql_native_password\0");
    packet(0, &p)
}

/// HandshakeResponse41 for user "app", schema "shop".
fn handshake_response(caps: u32) -> Vec<u8> {
    let mut p = caps.to_le_bytes().to_vec();
    p.extend_from_slice(&(1u32 << 24).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(b"app\0");
    p.push(20);
    p.extend_from_slice(&[7; 20]);
    p.extend_from_slice(b"shop\0");
    p.extend_from_slice(b"mysql_native_password\0");
    packet(1, &p)
}

const BASE_CAPS: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0000_0008; // PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH, CONNECT_WITH_DB
const DEPRECATE_EOF: u32 = 1 << 24;
const COMPRESS: u32 = 1 << 5;

fn login(caps: u32) -> Vec<Ev> {
    vec![
        Ev::Data(S, greeting(caps)),
        Ev::Data(C, handshake_response(caps)),
        Ev::Data(S, packet(2, &ok(0, 2))),
    ]
}

fn query(sql: &str) -> Ev {
    Ev::Data(C, command(0x03, sql.as_bytes()))
}

#[test]
fn login_records_user_schema_and_yields_a_connect_transaction() {
    let (t, s) = play(StartMode::Handshake, &login(BASE_CAPS));
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].command, Command::Connect);
    assert_eq!(
        (t[0].request_frame, t[0].first_response_frame),
        (2, Some(3))
    );
    let i = s.info();
    assert_eq!(
        (i.user.as_deref(), i.schema.as_deref()),
        (Some("app"), Some("shop"))
    );
    assert_eq!(i.server_version.as_deref(), Some("8.0.36"));
    assert_eq!(i.connection_id, Some(42));
}

/// Percona's tcpdump043: the client answers the greeting with 15 bytes that are no login ("hello,
/// world!\r\n" reads as the header of a 7 MB packet), and the server says ERR 1156 "Got packets out of
/// order" (without SQLSTATE): the login attempt ends with that error. A client that sends nothing and is
/// refused (1043 "Bad handshake") has its attempt timed from the greeting.
#[test]
fn a_server_err_refusing_a_malformed_login_ends_the_login_attempt() {
    let mut refused = vec![0xFF];
    refused.extend_from_slice(&1156u16.to_le_bytes());
    refused.extend_from_slice(b"Got packets out of order");
    let evs = vec![
        Ev::Data(S, greeting(BASE_CAPS)),
        Ev::Data(C, b"hello, world!\r\n".to_vec()),
        Ev::Data(S, packet(1, &refused)),
    ];
    let (t, s) = play(StartMode::Handshake, &evs);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].command, Command::Connect);
    assert_eq!(
        (t[0].request_frame, t[0].first_response_frame),
        (2, Some(3))
    );
    match &t[0].outcome {
        Outcome::Err {
            code,
            sql_state,
            message,
        } => assert_eq!(
            (*code, sql_state.as_str(), message.as_str()),
            (1156, "", "Got packets out of order")
        ),
        o => panic!("{o:?}"),
    }
    assert_eq!(s.info().counters.unsolicited_errors, 0);
    // The connection never left its connection phase: the server's close comes during the login.
    assert_eq!(s.phase(), SessionPhase::Handshake);
    let (bytewise, _) = play_chunked(StartMode::Handshake, &evs, &mut |_| 1);
    assert_eq!(t, bytewise);

    let silent = vec![
        Ev::Data(S, greeting(BASE_CAPS)),
        Ev::Data(S, packet(1, &err(1043, "08S01", "Bad handshake"))),
    ];
    let (t, _) = play(StartMode::Handshake, &silent);
    assert_eq!(t.len(), 1);
    assert!(matches!(t[0].outcome, Outcome::Err { code: 1043, .. }));
    assert_eq!(t[0].request_frame, 1, "from the greeting");
}

#[test]
fn deprecate_eof_resultset_counts_rows_and_ends_on_ok_fe() {
    let mut evs = login(BASE_CAPS | DEPRECATE_EOF);
    evs.push(query("select a from t"));
    evs.push(Ev::Data(
        S,
        deprecated_eof_resultset(1, &["a"], &[&["1"], &["2"], &["3"]], 2),
    ));
    let (t, s) = play(StartMode::Handshake, &evs);
    assert_eq!(t[1].outcome, Outcome::ResultSet { rows: 3 });
    assert_eq!(s.info().counters.malformed_packets, 0);
}

#[test]
fn empty_resultset_under_deprecate_eof_ends_right_after_the_definitions() {
    let evs = vec![
        query("select a from t where 0"),
        Ev::Data(S, deprecated_eof_resultset(1, &["a"], &[], 2)),
    ];
    let (t, _) = play(StartMode::MidStream, &evs);
    assert_eq!(t[0].outcome, Outcome::ResultSet { rows: 0 });
    assert_eq!(t[0].last_response_frame, Some(2));
}

#[test]
fn multiple_resultsets_are_one_transaction_with_rows_summed() {
    let mut server = classic_resultset(1, &["a"], &[&["1"], &["2"]], 2 | MORE);
    // The second resultset continues the sequence ids: 1 + (1 + 1 + 1 + 2 + 1) = 7.
    server.extend(classic_resultset(7, &["b"], &[&["x"]], 2 | MORE));
    server.extend(packet(12, &ok(0, 2))); // CALL's final OK
    let evs = vec![query("call p()"), Ev::Data(S, server)];
    let (t, s) = play(StartMode::MidStream, &evs);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].outcome, Outcome::ResultSet { rows: 3 });
    assert_eq!(s.info().counters.sequence_anomalies, 0);
}

/// The flags of a response's terminators are kept (those of several resultsets together): what
/// says a statement used no index (`SERVER_QUERY_NO_INDEX_USED`, 0x20) or no good one (0x10); an OK's
/// own flags and warnings; nothing for an ERR.
#[test]
fn responses_keep_the_status_flags_they_ended_with() {
    let mut server = classic_resultset(1, &["a"], &[&["1"]], 2 | 0x20 | MORE);
    // 1 + (1 + 1 + 1 + 1 + 1) = 6: the second resultset's first sequence id.
    server.extend(classic_resultset(6, &["b"], &[&["x"]], 2 | MORE));
    server.extend(packet(11, &ok(0, 2 | 0x10)));
    let mut warned = ok(1, 2);
    warned[5] = 3; // the warning count's low byte
    let evs = vec![
        query("call p()"),
        Ev::Data(S, server),
        query("insert into t values (1)"),
        Ev::Data(S, packet(1, &warned)),
        query("select * from nosuch"),
        Ev::Data(
            S,
            packet(1, &err(1146, "42S02", "Table 'nosuch' doesn't exist")),
        ),
    ];
    let (t, _) = play(StartMode::MidStream, &evs);
    let call = t[0].server_status.unwrap();
    assert_eq!(
        call,
        ServerStatus {
            flags: 2 | 0x20 | 0x10,
            warnings: 0
        }
    );
    assert!(call.no_index_used() && call.no_good_index_used());
    assert_eq!(
        t[1].server_status,
        Some(ServerStatus {
            flags: 2,
            warnings: 3
        })
    );
    assert_eq!(t[2].server_status, None);
}

#[test]
fn ok_with_more_results_then_a_resultset() {
    let mut server = packet(1, &ok(1, 2 | MORE));
    server.extend(classic_resultset(2, &["a"], &[&["1"]], 2));
    let (t, _) = play(
        StartMode::MidStream,
        &[
            query("insert into t values (1); select a from t"),
            Ev::Data(S, server),
        ],
    );
    assert_eq!(t[0].outcome, Outcome::ResultSet { rows: 1 });
}

#[test]
fn a_long_row_starting_with_0xfe_is_a_row_not_a_terminator() {
    // First value longer than 2^24 bytes: lenenc prefix 0xFE, packet continued.
    let big = 0x0100_0000usize + 4;
    let mut row = vec![0xFE];
    row.extend_from_slice(&(big as u64).to_le_bytes());
    row.resize(9 + big, b'x');
    let mut server = packets(1, &[&[1], &coldef("blob"), &eof(2)]);
    // Split the row payload into 0xFFFFFF + rest physical packets.
    server.extend(packet(4, &row[..0xFF_FFFF]));
    server.extend(packet(5, &row[0xFF_FFFF..]));
    server.extend(packet(6, &eof(2)));
    let (t, s) = play(
        StartMode::MidStream,
        &[query("select blob from t"), Ev::Data(S, server)],
    );
    assert_eq!(t[0].outcome, Outcome::ResultSet { rows: 1 });
    assert!(t[0].response_bytes > big as u64);
    assert_eq!(s.info().counters.sequence_anomalies, 0);
}

#[test]
fn err_response_keeps_code_sqlstate_and_message() {
    let evs = vec![
        query("select * from nope"),
        Ev::Data(
            S,
            packet(1, &err(1146, "42S02", "Table 'x.nope' doesn't exist")),
        ),
    ];
    let (t, _) = play(StartMode::MidStream, &evs);
    assert_eq!(
        t[0].outcome,
        Outcome::Err {
            code: 1146,
            sql_state: SqlState::from_wire(b"42S02"),
            message: "Table 'x.nope' doesn't exist".into()
        }
    );
}

#[test]
fn err_in_the_middle_of_rows_ends_the_resultset() {
    let mut server = packets(1, &[&[1], &coldef("a"), &eof(2), &text_row(&["1"])]);
    server.extend(packet(
        5,
        &err(1317, "70100", "Query execution was interrupted"),
    ));
    let (t, _) = play(
        StartMode::MidStream,
        &[query("select sleep(100)"), Ev::Data(S, server)],
    );
    assert!(matches!(t[0].outcome, Outcome::Err { code: 1317, .. }));
    assert_eq!(t[0].rows, 1);
}

fn prepare_ok(id: u32, cols: u16, params: u16) -> Vec<u8> {
    let mut p = vec![0];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&cols.to_le_bytes());
    p.extend_from_slice(&params.to_le_bytes());
    p.extend_from_slice(&[0, 0, 0]);
    p
}

#[test]
fn prepared_statements_show_their_sql_on_execute_fetch_and_close() {
    let sql = "select a from t where id = ?";
    let mut prep = packets(
        1,
        &[
            &prepare_ok(7, 1, 1),
            &coldef("?"),
            &eof(2),
            &coldef("a"),
            &eof(2),
        ],
    );
    let exec_body = [7, 0, 0, 0, 0x01, 1, 0, 0, 0, 0, 1, 3, 0, 1, 0, 0, 0]; // cursor, one LONG param
    let fetch_body = [7, 0, 0, 0, 100, 0, 0, 0];
    let mut evs = login(BASE_CAPS);
    evs.push(Ev::Data(C, command(0x16, sql.as_bytes())));
    evs.push(Ev::Data(S, std::mem::take(&mut prep)));
    evs.push(Ev::Data(C, command(0x17, &exec_body)));
    // Cursor opened: definitions then an EOF carrying SERVER_STATUS_CURSOR_EXISTS.
    evs.push(Ev::Data(
        S,
        packets(1, &[&[1], &coldef("a"), &eof(0x0040 | 2)]),
    ));
    evs.push(Ev::Data(C, command(0x1c, &fetch_body)));
    evs.push(Ev::Data(
        S,
        packets(
            1,
            &[&[0, 0, 1, 0, 0, 0], &[0, 0, 2, 0, 0, 0], &eof(0x0080 | 2)],
        ),
    ));
    evs.push(Ev::Data(C, command(0x19, &[7, 0, 0, 0])));
    evs.push(Ev::Data(C, command(0x17, &[7, 0, 0, 0, 0, 1, 0, 0, 0])));
    evs.push(Ev::Data(
        S,
        packet(1, &err(1243, "HY000", "Unknown prepared statement handler")),
    ));
    let (t, s) = play(StartMode::Handshake, &evs);
    assert_eq!(
        t.iter().map(|t| t.command.name()).collect::<Vec<_>>(),
        [
            "COM_CONNECT",
            "COM_STMT_PREPARE",
            "COM_STMT_EXECUTE",
            "COM_STMT_FETCH",
            "COM_STMT_CLOSE",
            "COM_STMT_EXECUTE"
        ]
    );
    assert_eq!(
        t[1].outcome,
        Outcome::Prepared {
            statement_id: 7,
            params: 1,
            columns: 1
        }
    );
    assert_eq!(t[2].statement.as_deref(), Some(sql));
    assert_eq!(
        t[2].outcome,
        Outcome::ResultSet { rows: 0 },
        "rows come later through the cursor"
    );
    assert_eq!(t[3].statement.as_deref(), Some(sql));
    assert_eq!(t[3].outcome, Outcome::ResultSet { rows: 2 });
    assert_eq!(t[4].outcome, Outcome::NoResponseExpected);
    assert_eq!(t[5].statement, None, "closed statements are forgotten");
    assert_eq!(s.info().counters.unsolicited_server_packets, 0);
}

#[test]
fn prepare_under_deprecate_eof_ends_after_the_last_definition() {
    let mut evs = login(BASE_CAPS | DEPRECATE_EOF);
    evs.push(Ev::Data(C, command(0x16, b"select ?")));
    evs.push(Ev::Data(
        S,
        packets(1, &[&prepare_ok(1, 1, 1), &coldef("?"), &coldef("?")]),
    ));
    evs.push(query("select 1"));
    evs.push(Ev::Data(
        S,
        deprecated_eof_resultset(1, &["1"], &[&["1"]], 2),
    ));
    let (t, s) = play(StartMode::Handshake, &evs);
    assert_eq!(
        t[1].outcome,
        Outcome::Prepared {
            statement_id: 1,
            params: 1,
            columns: 1
        }
    );
    assert_eq!(t[2].outcome, Outcome::ResultSet { rows: 1 });
    assert_eq!(s.info().counters.unsolicited_server_packets, 0);
}

#[test]
fn local_infile_exchange_is_one_transaction() {
    let mut file = packet(2, &[b'x'; 100]);
    file.extend(packet(3, b""));
    let evs = vec![
        query("load data local infile '/tmp/f' into table t"),
        Ev::Data(S, packet(1, b"\xfb/tmp/f")),
        Ev::Data(C, file),
        Ev::Data(S, packet(4, &ok(100, 2))),
        query("select 1"),
        Ev::Data(S, classic_resultset(1, &["1"], &[&["1"]], 2)),
    ];
    let (t, s) = play(StartMode::MidStream, &evs);
    assert_eq!(t.len(), 2);
    assert_eq!(
        t[0].outcome,
        Outcome::LocalInfile {
            file_bytes: 100,
            affected_rows: 100
        }
    );
    assert_eq!(t[1].outcome, Outcome::ResultSet { rows: 1 });
    assert_eq!(s.info().counters.unexpected_client_packets, 0);
}

#[test]
fn commands_with_simple_answers() {
    let evs = vec![
        Ev::Data(C, command(0x0e, b"")),
        Ev::Data(S, packet(1, &ok(0, 2))),
        Ev::Data(C, command(0x1b, &[1, 0])),
        Ev::Data(S, packet(1, &eof(2))),
        Ev::Data(C, command(0x09, b"")),
        Ev::Data(S, packet(1, b"Uptime: 5  Threads: 1")),
        Ev::Data(C, command(0x0c, &77u32.to_le_bytes())),
        Ev::Data(S, packet(1, &err(1094, "HY000", "Unknown thread id: 77"))),
        Ev::Data(C, command(0x1f, b"")),
        Ev::Data(S, packet(1, &ok(0, 2))),
        Ev::Data(C, command(0x01, b"")),
    ];
    let (t, s) = play(StartMode::MidStream, &evs);
    let got: Vec<_> = t
        .iter()
        .map(|t| (t.command.name(), matches!(t.outcome, Outcome::Ok { .. })))
        .collect();
    assert_eq!(
        got,
        [
            ("COM_PING", true),
            ("COM_SET_OPTION", true),
            ("COM_STATISTICS", true),
            ("COM_PROCESS_KILL", false),
            ("COM_RESET_CONNECTION", true),
            ("COM_QUIT", false)
        ]
    );
    assert_eq!(t[3].statement.as_deref(), Some("77"));
    assert_eq!(s.phase(), SessionPhase::AfterQuit);
}

#[test]
fn server_fin_mid_resultset_reports_the_statement_and_rows_so_far() {
    let mut s = Session::new(StartMode::MidStream);
    s.feed(C, &command(0x03, b"select * from big"), meta(1));
    s.feed(
        S,
        &packets(
            1,
            &[
                &[1],
                &coldef("a"),
                &eof(2),
                &text_row(&["1"]),
                &text_row(&["2"]),
            ],
        ),
        meta(2),
    );
    let ctx = s.close(S, CloseFlag::Fin, meta(3));
    assert!(matches!(
        ctx.phase,
        SessionPhase::InResultset { rows: 2, .. }
    ));
    let p = ctx.pending.unwrap();
    assert_eq!(p.statement.as_deref(), Some("select * from big"));
    assert_eq!((p.request_frame, p.rows), (1, 2));
    let t: Vec<_> = s.drain().collect();
    assert_eq!(
        t[0].outcome,
        Outcome::ClosedMidResponse {
            by: S,
            flag: CloseFlag::Fin
        }
    );
}

#[test]
fn client_rst_before_any_response_and_capture_end() {
    let mut s = Session::new(StartMode::MidStream);
    s.feed(C, &command(0x03, b"select 1"), meta(1));
    let ctx = s.close(C, CloseFlag::Rst, meta(2));
    assert_eq!(ctx.phase, SessionPhase::AwaitingResponse);
    assert_eq!(
        s.drain().next().unwrap().outcome,
        Outcome::ClosedBeforeResponse {
            by: C,
            flag: CloseFlag::Rst
        }
    );
    s.feed(C, &command(0x03, b"select 2"), meta(3));
    s.finish();
    assert_eq!(s.drain().next().unwrap().outcome, Outcome::CaptureEnded);
}

/// A command the client was still sending when the capture ended (a rotated file's last request, a
/// large INSERT) or when the connection closed was made: it counts, waiting, its statement marked as
/// missing its tail, however its bytes were split.
#[test]
fn a_command_still_being_sent_at_the_end_or_the_close_counts() {
    let mut insert = b"insert into t values ".to_vec();
    insert.resize(20_000, b'x');
    let whole = command(0x03, &insert);
    let sent = whole[..8_000].to_vec();
    let mut at_end = login(BASE_CAPS);
    at_end.push(Ev::Data(C, sent.clone()));
    let mut at_close = at_end.clone();
    at_close.push(Ev::Close(C, CloseFlag::Rst));
    for (evs, want) in [
        (at_end, Outcome::CaptureEnded),
        (
            at_close,
            Outcome::ClosedBeforeResponse {
                by: C,
                flag: CloseFlag::Rst,
            },
        ),
    ] {
        let (t, _) = play(StartMode::Handshake, &evs);
        assert_eq!(names_of(&t), ["COM_CONNECT", "COM_QUERY"]);
        assert_eq!(t[1].outcome, want);
        assert_eq!(t[1].request_frame, 4);
        assert_eq!(t[1].gap_bytes, (whole.len() - sent.len()) as u64);
        let statement = t[1].statement.as_deref().unwrap_or("");
        assert!(
            statement.starts_with("insert into t values xxx"),
            "{statement}"
        );
        assert!(
            statement.ends_with(&format!("/* gap: {} bytes */", whole.len() - sent.len())),
            "{statement}"
        );
        let (bytewise, _) = play_chunked(StartMode::Handshake, &evs, &mut |_| 1);
        assert_eq!(t, bytewise);
    }
    // Only a header's first bytes: nothing says which command it was.
    let mut evs = login(BASE_CAPS);
    evs.push(Ev::Data(C, whole[..3].to_vec()));
    let (t, _) = play(StartMode::Handshake, &evs);
    assert_eq!(names_of(&t), ["COM_CONNECT"]);
}

/// A capture that began between the greeting and the login (a rotated file): the session starts at the
/// client's login, which counts and is read as usual (user, schema), the greeting's facts unknown.
#[test]
fn a_session_joined_at_its_login_reads_the_login() {
    let evs = vec![
        Ev::Data(C, handshake_response(BASE_CAPS)),
        Ev::Data(S, packet(2, &ok(0, 2))),
        query("select 1"),
        Ev::Data(S, packet(1, &ok(0, 2))),
    ];
    let (t, s) = play(StartMode::Login, &evs);
    assert_eq!(names_of(&t), ["COM_CONNECT", "COM_QUERY"]);
    assert!(matches!(t[0].outcome, Outcome::Ok { .. }));
    assert!(matches!(t[1].outcome, Outcome::Ok { .. }));
    assert_eq!(s.info().user.as_deref(), Some("app"));
    assert_eq!(s.info().server_version, None);
    let (bytewise, _) = play_chunked(StartMode::Login, &evs, &mut |_| 1);
    assert_eq!(t, bytewise);
}

#[test]
fn unsolicited_err_before_close_is_recorded() {
    // MySQL 8.0.24+ tells an idle client why it is being disconnected.
    let (t, s) = play(
        StartMode::MidStream,
        &[
            query("select 1"),
            Ev::Data(S, classic_resultset(1, &["1"], &[&["1"]], 2)),
            Ev::Data(
                S,
                packet(
                    0,
                    &err(
                        4031,
                        "HY000",
                        "The client was disconnected by the server because of inactivity.",
                    ),
                ),
            ),
        ],
    );
    assert_eq!(t.len(), 1);
    assert_eq!(s.info().counters.unsolicited_errors, 1);
    assert_eq!(
        s.info().last_unsolicited_error.as_ref().map(|e| e.code),
        Some(4031)
    );
}

#[test]
fn long_statements_are_capped_with_a_marker() {
    let sql = format!("select '{}'", "y".repeat(40_000));
    let (t, _) = play(
        StartMode::MidStream,
        &[query(&sql), Ev::Data(S, packet(1, &ok(0, 2)))],
    );
    let st = t[0].statement.as_deref().unwrap();
    assert!(st.len() < 17_000);
    assert!(st.ends_with(&format!("/* truncated: {} bytes */", sql.len())));
}

#[test]
fn a_gap_inside_a_row_keeps_the_framing_and_the_row_count() {
    let rows: Vec<Vec<u8>> = (0..3).map(|_| text_row(&[&"z".repeat(200)])).collect();
    let all = packets(
        1,
        &[
            &[1],
            &coldef("a"),
            &eof(2),
            &rows[0],
            &rows[1],
            &rows[2],
            &eof(2),
        ],
    );
    let row2_start = all.len() - (204 * 2 + 9);
    // Lose 100 bytes in the middle of the second row.
    let evs = vec![
        query("select a from t"),
        Ev::Data(S, all[..row2_start + 50].to_vec()),
        Ev::Gap(S, 100),
        Ev::Data(S, all[row2_start + 150..].to_vec()),
    ];
    let (t, s) = play(StartMode::MidStream, &evs);
    assert_eq!(t[0].outcome, Outcome::ResultSet { rows: 3 });
    assert_eq!(t[0].gap_bytes, 100);
    assert_eq!(s.info().counters.resyncs, 0);
}

#[test]
fn a_gap_across_packets_loses_the_response_and_resyncs_on_the_next_command() {
    let all = classic_resultset(1, &["a"], &[&["1"], &["2"], &["3"]], 2);
    let evs = vec![
        query("select a from t"),
        Ev::Data(S, all[..20].to_vec()),
        Ev::Gap(S, 40),
        Ev::Data(S, all[60..].to_vec()),
        query("select 2"),
        Ev::Data(S, classic_resultset(1, &["2"], &[&["2"]], 2)),
    ];
    let (t, s) = play(StartMode::MidStream, &evs);
    assert_eq!(t[0].outcome, Outcome::GapLost);
    assert_eq!(t[1].statement.as_deref(), Some("select 2"));
    assert_eq!(t[1].outcome, Outcome::ResultSet { rows: 1 });
    assert_eq!(s.info().counters.resyncs, 1);
}

/// Percona's tcpdump015: the capture lost what the server sent before a query (answers to requests it
/// also lost), and its next bytes are where the query's answer begins (a column count with sequence id
/// 1, or an ERR): the answer is read whole and timed, not given up as lost. Where the gap could have held
/// the answer's start (it began before the gap, or the next packet could be the 257th of a long one),
/// the request stays lost.
#[test]
fn a_server_gap_before_any_of_the_answer_leaves_the_answer_readable() {
    let rs = classic_resultset(1, &["a"], &[&["1"], &["2"], &["3"]], 2);
    let mut refused = packet(1, &err(1146, "42S02", "Table 'x.t' doesn't exist"));
    refused.extend(packet(1, &ok(0, 2)));
    for (answer, want) in [
        (rs.clone(), Outcome::ResultSet { rows: 3 }),
        (
            packet(1, &err(1146, "42S02", "Table 'x.t' doesn't exist")),
            Outcome::Err {
                code: 1146,
                sql_state: SqlState::from_wire(b"42S02"),
                message: "Table 'x.t' doesn't exist".into(),
            },
        ),
    ] {
        for gap in [40, 5000] {
            let evs = vec![
                query("select a from t"),
                Ev::Gap(S, gap),
                Ev::Data(S, answer.clone()),
                query("select 2"),
                Ev::Data(S, packet(1, &ok(0, 2))),
            ];
            let (t, _) = play(StartMode::MidStream, &evs);
            assert_eq!(t[0].outcome, want, "{gap}");
            assert_eq!(
                (t[0].first_response_frame, t[0].gap_bytes),
                (Some(3), 0),
                "{gap}"
            );
            assert!(matches!(t[1].outcome, Outcome::Ok { .. }));
        }
    }
    // An OK after a short gap begins the answer; after a long one it could be a binary row whose
    // sequence id wrapped around.
    for (gap, answered) in [(40, true), (5000, false)] {
        let evs = vec![
            query("update t set a = 1"),
            Ev::Gap(S, gap),
            Ev::Data(S, packet(1, &ok(1, 2))),
        ];
        let (t, _) = play(StartMode::MidStream, &evs);
        assert_eq!(
            matches!(t[0].outcome, Outcome::Ok { .. }),
            answered,
            "{gap}"
        );
    }
    // The answer began before the gap: its later packets are no start.
    let evs = vec![
        query("select a from t"),
        Ev::Data(S, rs[..9].to_vec()),
        Ev::Gap(S, 40),
        Ev::Data(S, rs[49..].to_vec()),
        query("select 2"),
        Ev::Data(S, packet(1, &ok(0, 2))),
    ];
    let (t, _) = play(StartMode::MidStream, &evs);
    assert_eq!(t[0].outcome, Outcome::GapLost);
}

#[test]
fn a_client_gap_is_followed_by_a_hunt_for_the_next_command() {
    let mut client = command(0x03, b"select 'lost in the gap'");
    let cut = client.len();
    client.extend(command(0x03, b"select 'found'"));
    let evs = vec![
        // A first exchange shows the connection is not compressed: six bytes of a command
        // are then enough to know it started.
        query("select 'first'"),
        Ev::Data(S, packet(1, &ok(0, 2))),
        Ev::Data(C, client[..6].to_vec()),
        Ev::Gap(C, (cut - 6 + 3) as u64),
        Ev::Data(C, client[cut + 3..].to_vec()), // starts mid-header of the next command: not found
        query("select 'next'"),
        Ev::Data(S, packet(1, &ok(0, 2))),
    ];
    let (t, s) = play(StartMode::MidStream, &evs);
    let st: Vec<_> = t
        .iter()
        .map(|t| t.statement.clone().unwrap_or_default())
        .collect();
    assert_eq!(t.len(), 3, "{st:?}");
    assert!(st[1].starts_with("s") && st[1].contains("/* gap"), "{st:?}");
    assert_eq!(st[2], "select 'next'");
    assert!(s.info().counters.skipped_bytes > 0);
}

#[test]
fn compressed_protocol_is_inflated_after_auth() {
    let mut evs = login(BASE_CAPS | COMPRESS);
    evs.push(Ev::Data(
        C,
        compressed(0, &command(0x03, b"select a from t"), false),
    ));
    let rs = classic_resultset(1, &["a"], &[&["1"], &["2"]], 2);
    // The resultset in two compressed packets, split mid-packet.
    evs.push(Ev::Data(S, compressed(0, &rs[..30], true)));
    evs.push(Ev::Data(S, compressed(1, &rs[30..], true)));
    let (t, s) = play(StartMode::Handshake, &evs);
    assert_eq!(s.info().compression, Compression::Zlib);
    assert_eq!(t[1].statement.as_deref(), Some("select a from t"));
    assert_eq!(t[1].outcome, Outcome::ResultSet { rows: 2 });
    assert_eq!(s.info().counters.decompression_errors, 0);
    let (bytewise, _) = play_chunked(StartMode::Handshake, &evs, &mut |_| 1);
    assert_eq!(t, bytewise);
}

/// pcap2mysql-log's error.pcap and compressed-data-missing.pcap: a long INSERT, its ERR and a big
/// resultset, each in compressed packets that inflate far past 16 KiB (the sizes that once lost the tail
/// of the inflater's window, and every packet after it).
#[test]
fn compressed_packets_inflating_past_16_kib_lose_nothing() {
    for size in [20_000usize, 40_000, 60_000, 200_000] {
        let mut sql = b"INSERT INTO demo.lots VALUES ".to_vec();
        while sql.len() < size {
            sql.extend_from_slice(format!("({}, 'lorem ipsum'), ", sql.len()).as_bytes());
        }
        let mut evs = login(BASE_CAPS | COMPRESS);
        evs.push(Ev::Data(C, compressed(0, &command(0x03, &sql), true)));
        evs.push(Ev::Data(
            S,
            compressed(
                0,
                &packet(1, &err(1064, "42000", "You have an error")),
                true,
            ),
        ));
        evs.push(Ev::Data(
            C,
            compressed(0, &command(0x03, b"select v from t"), false),
        ));
        let row = "x".repeat(200);
        let rows: Vec<Vec<&str>> = (0..size / 200).map(|_| vec![row.as_str()]).collect();
        let rows: Vec<&[&str]> = rows.iter().map(Vec::as_slice).collect();
        evs.push(Ev::Data(
            S,
            compressed(0, &classic_resultset(1, &["v"], &rows, 2), true),
        ));
        evs.push(Ev::Data(C, compressed(0, &command(0x01, b""), true)));
        let (t, s) = play(StartMode::Handshake, &evs);
        assert_eq!(
            t.iter().map(|t| t.command.name()).collect::<Vec<_>>(),
            ["COM_CONNECT", "COM_QUERY", "COM_QUERY", "COM_QUIT"],
            "{size}"
        );
        assert!(matches!(t[1].outcome, Outcome::Err { code: 1064, .. }));
        assert_eq!(t[1].last_response_frame, Some(5), "{size}");
        assert_eq!(
            t[2].outcome,
            Outcome::ResultSet {
                rows: rows.len() as u64
            }
        );
        assert_eq!(t[2].last_response_frame, Some(7), "{size}");
        assert_eq!(s.info().counters.decompression_errors, 0);
        assert_eq!(s.info().counters.malformed_packets, 0);
        let (in_segments, _) = play_chunked(StartMode::Handshake, &evs, &mut |_| 1448);
        assert_eq!(t, in_segments, "{size}");
    }
}

/// A session joined after its login: nothing says the compressed protocol was negotiated but the
/// first command itself, stored (short) or deflated (long).
#[test]
fn compressed_sessions_are_recognised_mid_stream() {
    let long = format!(
        "SELECT * FROM `process` WHERE `process`.`deleted_at` IS NULL AND id IN ({})",
        (0..40)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let rs = classic_resultset(1, &["a"], &[&["1"], &["2"], &["3"]], 2);
    let evs = vec![
        Ev::Data(C, compressed(0, &command(0x03, b"use `test`"), false)),
        Ev::Data(S, compressed(1, &packet(1, &ok(0, 2)), false)),
        Ev::Data(C, compressed(0, &command(0x03, long.as_bytes()), true)),
        Ev::Data(S, compressed(1, &rs, true)),
        Ev::Data(C, compressed(0, &command(0x01, b""), false)),
    ];
    let (t, s) = play(StartMode::MidStream, &evs);
    assert_eq!(s.info().compression, Compression::Zlib);
    assert_eq!(
        t.iter().map(|t| t.command.name()).collect::<Vec<_>>(),
        ["COM_QUERY", "COM_QUERY", "COM_QUIT"]
    );
    assert_eq!(t[0].statement.as_deref(), Some("use `test`"));
    assert!(matches!(t[0].outcome, Outcome::Ok { .. }));
    assert_eq!(t[1].statement.as_deref(), Some(long.as_str()));
    assert_eq!(t[1].outcome, Outcome::ResultSet { rows: 3 });
    let c = s.info().counters;
    assert_eq!(
        c.skipped_bytes + c.malformed_packets + c.decompression_errors,
        0
    );
    let (bytewise, _) = play_chunked(StartMode::MidStream, &evs, &mut |_| 1);
    assert_eq!(t, bytewise);
    // The first client bytes decide: here no compressed command (a 2-byte COM_QUERY that is not one
    // either), so the connection is plain, and a compressed-looking header later on ("03 02 01 00 00 00
    // 0e": 66 KB inflating to 900 KB) does not hold up the COM_PING right after it, however the bytes
    // were cut (../shared/fuzz-findings/segmentation).
    let evs = [
        Ev::Data(C, b"\x02\x00\x00\x00\x03\x02\x01\x00\x00\x00\x0e".to_vec()),
        Ev::Data(S, packet(1, &ok(0, 2))),
    ];
    for size in [1, 2, 6, 11] {
        let (t, s) = play_chunked(StartMode::MidStream, &evs, &mut |_| size);
        assert_eq!(
            t.iter().map(|t| t.command.name()).collect::<Vec<_>>(),
            ["COM_PING"],
            "{size}"
        );
        assert_eq!(s.info().compression, Compression::None);
    }
    // A plain session joined mid-stream stays plain.
    let (t, s) = play(
        StartMode::MidStream,
        &[query("select 1"), Ev::Data(S, packet(1, &ok(0, 2)))],
    );
    assert_eq!((t.len(), s.info().compression), (1, Compression::None));
}

/// A gap in a compressed server stream: the server side finds the next compressed packet by itself
/// (its inflated start is a run of packets), so the rest of the resultset is read.
#[test]
fn a_compressed_server_stream_resynchronises_after_a_gap() {
    let rows: Vec<Vec<String>> = (0..60).map(|i| vec![format!("row {i:03}")]).collect();
    let rows: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| r.iter().map(String::as_str).collect())
        .collect();
    let rows: Vec<&[&str]> = rows.iter().map(Vec::as_slice).collect();
    let rs = classic_resultset(1, &["v"], &rows, 2);
    // The resultset in three compressed packets cut at packet boundaries; the second is lost.
    let cut = |n: usize| {
        let mut at = 0;
        for _ in 0..n {
            at += 4 + u32::from_le_bytes([rs[at], rs[at + 1], rs[at + 2], 0]) as usize;
        }
        at
    };
    let (a, b) = (cut(20), cut(40));
    let parts = [
        compressed(1, &rs[..a], true),
        compressed(2, &rs[a..b], true),
        compressed(3, &rs[b..], true),
    ];
    let mut evs = login(BASE_CAPS | COMPRESS);
    evs.push(Ev::Data(
        C,
        compressed(0, &command(0x03, b"select v from t"), false),
    ));
    evs.push(Ev::Data(S, parts[0].clone()));
    evs.push(Ev::Gap(S, parts[1].len() as u64));
    evs.push(Ev::Data(S, parts[2].clone()));
    evs.push(Ev::Data(
        C,
        compressed(0, &command(0x03, b"select 2"), false),
    ));
    evs.push(Ev::Data(S, compressed(1, &packet(1, &ok(0, 2)), false)));
    let (t, s) = play(StartMode::Handshake, &evs);
    assert_eq!(t[1].outcome, Outcome::GapLost);
    assert_eq!(t[1].last_response_frame, Some(7), "read on after the gap");
    assert_eq!(t[2].statement.as_deref(), Some("select 2"));
    assert!(matches!(t[2].outcome, Outcome::Ok { .. }));
    // Found right at the next compressed packet: nothing skipped.
    assert_eq!(s.info().counters.skipped_bytes, 0);
    let (bytewise, _) = play_chunked(StartMode::Handshake, &evs, &mut |_| 1);
    assert_eq!(t, bytewise);
}

#[test]
fn pipelined_no_response_commands_keep_request_order() {
    let evs = vec![
        query("select 1"),
        Ev::Data(C, command(0x19, &[9, 0, 0, 0])), // COM_STMT_CLOSE while the query is open
        Ev::Data(S, classic_resultset(1, &["1"], &[&["1"]], 2)),
    ];
    let (t, _) = play(StartMode::MidStream, &evs);
    assert_eq!(
        t.iter().map(|t| t.command.name()).collect::<Vec<_>>(),
        ["COM_QUERY", "COM_STMT_CLOSE"]
    );
}

#[test]
fn a_large_resultset_is_walked_not_buffered() {
    // 200k rows fed in 1460-byte segments; only headers and prefixes are kept.
    let row = packet(0, &text_row(&["0123456789abcdef"]));
    let mut server = packets(1, &[&[1], &coldef("a"), &eof(2)]);
    for i in 0..200_000u32 {
        let mut r = row.clone();
        r[3] = (4 + i) as u8;
        server.extend(r);
    }
    server.extend(packet((4 + 200_000u32) as u8, &eof(2)));
    let mut s = Session::new(StartMode::MidStream);
    s.feed(C, &command(0x03, b"select a from big"), meta(1));
    for (i, seg) in server.chunks(1460).enumerate() {
        s.feed(S, seg, meta(2 + i as u64));
    }
    let t: Vec<_> = s.drain().collect();
    assert_eq!(t[0].outcome, Outcome::ResultSet { rows: 200_000 });
    assert_eq!(t[0].response_bytes, server.len() as u64);
    assert_eq!(s.info().counters.sequence_anomalies, 0);
}

/// One segment cut by the snap length: `keep` bytes captured, the rest a gap.
fn snapped(dir: pcapsleuth_mysql::Direction, bytes: &[u8], keep: usize) -> Vec<Ev> {
    let keep = keep.min(bytes.len());
    let mut v = vec![Ev::Data(dir, bytes[..keep].to_vec())];
    if keep < bytes.len() {
        v.push(Ev::Gap(dir, (bytes.len() - keep) as u64));
    }
    v
}

#[test]
fn a_login_cut_by_the_snap_length_still_leads_to_the_command_phase() {
    // Regression (fixtures/snaplen80.pcap, hand-built here): with ~14 bytes kept
    // per segment, the greeting and the HandshakeResponse were unparseable, the
    // session stayed waiting for a greeting and the first command after the
    // login was lost.
    let caps = BASE_CAPS | DEPRECATE_EOF;
    for keep in [5, 10, 14, 20, 26, 30, 38, 40] {
        let mut evs = snapped(S, &greeting(caps), keep);
        evs.extend(snapped(C, &handshake_response(caps), keep));
        evs.extend(snapped(S, &packet(2, &ok(0, 2)), keep));
        evs.push(query("select 1"));
        evs.push(Ev::Data(
            S,
            deprecated_eof_resultset(1, &["1"], &[&["1"]], 2),
        ));
        let (t, s) = play(StartMode::Handshake, &evs);
        assert_eq!(
            names_of(&t),
            ["COM_CONNECT", "COM_QUERY"],
            "keep {keep}: {t:?}"
        );
        assert!(matches!(t[0].outcome, Outcome::Ok { .. }), "keep {keep}");
        assert_eq!(t[1].statement.as_deref(), Some("select 1"));
        assert_eq!(t[1].outcome, Outcome::ResultSet { rows: 1 }, "keep {keep}");
        let i = s.info();
        assert_eq!(i.protocol_version, Some(10));
        // What was kept is recorded, what was cut stays unknown.
        let version_kept = keep >= 4 + 1 + 7;
        assert_eq!(i.server_version.is_some(), version_kept, "keep {keep}");
        assert_eq!(
            i.connection_id.is_some(),
            keep >= 4 + 1 + 7 + 4,
            "keep {keep}"
        );
        // Flags are taken only when both halves were kept.
        assert_eq!(
            i.server_capabilities.is_some(),
            keep >= 4 + 28,
            "keep {keep}"
        );
        assert_eq!(i.client_capabilities.is_some(), keep >= 8, "keep {keep}");
        // A user name is taken only when its NUL was kept.
        let user_kept = keep >= 4 + 32 + 4;
        assert_eq!(i.user.as_deref(), user_kept.then_some("app"), "keep {keep}");
        assert_eq!(i.counters.malformed_packets, 0, "keep {keep}");
        assert_eq!(i.counters.unexpected_client_packets, 0, "keep {keep}");
    }
}

#[test]
fn a_greeting_whose_payload_is_entirely_cut_still_opens_the_login() {
    let mut evs = snapped(S, &greeting(BASE_CAPS), 4);
    evs.extend(snapped(C, &handshake_response(BASE_CAPS), 14));
    evs.push(Ev::Data(S, packet(2, &ok(0, 2))));
    evs.push(query("select 1"));
    let (t, s) = play(StartMode::Handshake, &evs);
    assert_eq!(names_of(&t), ["COM_CONNECT", "COM_QUERY"]);
    assert_eq!(s.info().protocol_version, None);
    // A whole greeting that does not parse is still malformed.
    let (t, s) = play(
        StartMode::Handshake,
        &[Ev::Data(S, packet(0, &[10, b'8', b'.'])), query("select 1")],
    );
    assert_eq!(s.info().counters.malformed_packets, 1);
    assert_eq!(t.len(), 0);
}

#[test]
fn a_prepare_ok_cut_by_a_gap_across_the_definitions_is_still_prepared() {
    // Regression (fixtures/snaplen80.pcap, hand-built here): the first 10 bytes
    // of COM_STMT_PREPARE_OK carry the statement id and the counts; the gap
    // that follows swallows the definitions. Outcome and statement are known.
    let sql = "select c from t where id = ?";
    let resp = packets(
        1,
        &[
            &prepare_ok(5, 1, 1),
            &coldef("?"),
            &eof(2),
            &coldef("c"),
            &eof(2),
        ],
    );
    let mut exec = vec![5, 0, 0, 0, 0, 1, 0, 0, 0];
    exec.extend_from_slice(&[0, 1, 3, 0]);
    let mut evs = vec![Ev::Data(C, command(0x16, sql.as_bytes()))];
    evs.extend(snapped(S, &resp, 14));
    evs.push(Ev::Data(C, command(0x17, &exec)));
    evs.push(Ev::Data(S, packet(1, &ok(1, 2))));
    // A prepare answered by a cut ERR keeps its code.
    evs.push(Ev::Data(C, command(0x16, b"selec")));
    evs.extend(snapped(
        S,
        &[
            packet(1, &err(1064, "42000", "You have an error")),
            packet(2, &ok(0, 2)),
        ]
        .concat(),
        12,
    ));
    evs.push(query("select 1"));
    let (t, s) = play(StartMode::MidStream, &evs);
    assert_eq!(
        t[0].outcome,
        Outcome::Prepared {
            statement_id: 5,
            params: 1,
            columns: 1
        }
    );
    assert_eq!(t[1].command, Command::StmtExecute);
    assert_eq!(t[1].statement.as_deref(), Some(sql));
    assert!(matches!(
        t[1].outcome,
        Outcome::Ok {
            affected_rows: 1,
            ..
        }
    ));
    assert!(
        matches!(t[2].outcome, Outcome::Err { code: 1064, .. }),
        "{:?}",
        t[2]
    );
    assert_eq!(s.info().counters.malformed_packets, 0);
}

#[test]
fn a_client_fin_is_a_half_close_and_the_server_may_still_answer() {
    // Regression (zeek-mysql/caching_sha2_password.pcap stream 0, hand-built
    // here): the client gives up during caching_sha2 full authentication and
    // sends FIN; the server then answers the login with ERR 1158.
    let mut evs = vec![
        Ev::Data(S, greeting(BASE_CAPS)),
        Ev::Data(C, handshake_response(BASE_CAPS)),
        Ev::Data(S, packet(2, &[0x01, 0x04])),
        Ev::Close(C, CloseFlag::Fin),
        Ev::Data(
            S,
            packet(
                3,
                &err(1158, "08S01", "Got an error reading communication packets"),
            ),
        ),
        Ev::Close(C, CloseFlag::Rst),
    ];
    let (t, _) = play(StartMode::Handshake, &evs);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].command, Command::Connect);
    assert!(matches!(&t[0].outcome, Outcome::Err { code: 1158, .. }));

    // Unanswered: the server's close, a RST or the end of the capture ends the
    // request as closed by the client's FIN, as before.
    evs.truncate(3);
    for end in [
        Some(Ev::Close(S, CloseFlag::Fin)),
        Some(Ev::Close(C, CloseFlag::Rst)),
        None,
    ] {
        let mut e = evs.clone();
        e.push(Ev::Close(C, CloseFlag::Fin));
        e.extend(end);
        let (t, _) = play(StartMode::Handshake, &e);
        assert_eq!(
            t[0].outcome,
            Outcome::ClosedMidResponse {
                by: C,
                flag: CloseFlag::Fin
            }
        );
    }
    let mut s = Session::new(StartMode::MidStream);
    s.feed(C, &command(0x03, b"select sleep(10)"), meta(1));
    let ctx = s.close(C, CloseFlag::Fin, meta(2));
    assert_eq!(ctx.phase, SessionPhase::AwaitingResponse);
    assert_eq!(s.drain().count(), 0, "still open after the client's FIN");
    s.feed(S, &packet(1, &ok(0, 2)), meta(3));
    let t: Vec<_> = s.drain().collect();
    assert!(matches!(t[0].outcome, Outcome::Ok { .. }));
}

fn names_of(t: &[pcapsleuth_mysql::Transaction]) -> Vec<&'static str> {
    t.iter().map(|t| t.command.name()).collect()
}

/// MariaDB's progress report during a long statement (seen in fixtures/local-infile.pcap as "Stage: 1 of
/// 2 'End bulk insert'"): an ERR_Packet with code 0xFFFF that is not an error; the OK that follows ends the
/// request.
#[test]
fn mariadb_progress_report_is_not_an_error() {
    let mut progress = vec![0xFF, 0xFF, 0xFF, 0x01, 0x01, 0x02, 0xE8, 0x03, 0x00];
    progress.extend_from_slice(b"\x0fEnd bulk insert");
    let evs = vec![
        query("load data local infile '/tmp/x.csv' into table t"),
        Ev::Data(S, packet(1, &progress)),
        Ev::Data(S, packet(2, &ok(3, 0x0002))),
    ];
    let (t, s) = play(StartMode::MidStream, &evs);
    assert_eq!(t.len(), 1);
    assert!(
        matches!(
            t[0].outcome,
            Outcome::Ok {
                affected_rows: 3,
                ..
            }
        ),
        "{:?}",
        t[0].outcome
    );
    assert_eq!(s.info().counters.progress_reports, 1);
}

/// Transactions read where they lie (`completed`, then `clear_completed`, as the analyses read them)
/// are those `drain` hands out: the strings a session keeps from the transactions it completed, and
/// writes the next texts into, never show an old text, nor a text too large to be kept.
#[test]
fn transactions_read_in_place_equal_those_drained() {
    let long = format!("select '{}'", "x".repeat(3000));
    let long_message = "m".repeat(600);
    let mut evs = vec![
        query("select * from nope"),
        Ev::Data(
            S,
            packet(1, &err(1146, "42S02", "Table 'x.nope' doesn't exist")),
        ),
        query("select 1"),
        Ev::Data(S, classic_resultset(1, &["1"], &[&["1"]], 0)),
        query("do 1"),
        Ev::Data(S, packet(1, &ok(0, 0))),
        query(&long),
        Ev::Data(S, packet(1, &err(1064, "42000", &long_message))),
        query("select * from nope2"),
        Ev::Data(
            S,
            packet(1, &err(1146, "42S02", "Table 'x.nope2' doesn't exist")),
        ),
        query("select 2"),
        Ev::Data(S, packet(1, &err(1317, "70100", "short"))),
        query("x"),
        Ev::Data(S, packet(1, &ok(0, 0))),
    ];
    // Two requests pipelined, both answered in one segment: two transactions complete at once.
    let mut pipelined = command(0x03, b"select 3");
    pipelined.extend(command(0x03, b"select * from gone"));
    evs.push(Ev::Data(C, pipelined));
    let mut answers = classic_resultset(1, &["3"], &[&["3"]], 0);
    answers.extend(packet(
        1,
        &err(1146, "42S02", "Table 'x.gone' doesn't exist"),
    ));
    evs.push(Ev::Data(S, answers));
    evs.push(query("select 4"));
    evs.push(Ev::Data(S, packet(1, &err(1146, "42S02", "again"))));
    let (drained, _) = play(StartMode::MidStream, &evs);

    let mut s = Session::new(StartMode::MidStream);
    let mut read = Vec::new();
    for (i, ev) in evs.iter().enumerate() {
        if let Ev::Data(d, bytes) = ev {
            s.feed(*d, bytes, meta(i as u64 + 1));
        }
        read.extend(s.completed().iter().cloned());
        s.clear_completed();
    }
    s.finish();
    read.extend(s.completed().iter().cloned());
    assert_eq!(read.len(), 10);
    assert_eq!(read, drained);
    assert_eq!(read[3].statement.as_deref(), Some(long.as_str()));
    // (A message is kept up to MySQL's cap of 512 bytes.)
    assert!(
        matches!(&read[3].outcome, Outcome::Err { message, .. } if *message == long_message[..512])
    );
    assert_eq!(read[6].statement.as_deref(), Some("x"));
}

/// A caller may pass over an exchange only where the session is at rest: between exchanges of the command
/// phase, not within one, nor where the bytes it would skip could change how later ones decode.
#[test]
fn a_session_is_at_rest_between_exchanges_only() {
    // The events fed, completed transactions drained as a caller does, the capture not ended.
    let fed = |mode: StartMode, evs: &[Ev]| {
        let mut s = Session::new(mode);
        for (i, ev) in evs.iter().enumerate() {
            if let Ev::Data(d, bytes) = ev {
                s.feed(*d, bytes, meta(i as u64 + 1));
                s.drain().for_each(drop);
            }
        }
        s
    };
    let at_rest = |mode: StartMode, evs: &[Ev]| fed(mode, evs).at_rest();
    let mut evs = login(BASE_CAPS);
    assert!(at_rest(StartMode::Handshake, &evs), "after the login's OK");
    assert!(
        !at_rest(StartMode::Handshake, &evs[..2]),
        "during the login"
    );
    evs.push(query("select 1"));
    assert!(
        !at_rest(StartMode::Handshake, &evs),
        "a request waits for its answer"
    );
    evs.push(Ev::Data(
        S,
        packets(
            1,
            &[
                &[1],
                b"\x03def\x00\x00\x00\x01a\x00\x0c\x3f\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00",
            ],
        ),
    ));
    evs.push(Ev::Data(S, packet(3, &eof(2))));
    assert!(!at_rest(StartMode::Handshake, &evs), "rows still to come");
    evs.push(Ev::Data(S, packets(4, &[b"\x011", &eof(2)])));
    assert!(at_rest(StartMode::Handshake, &evs), "the resultset ended");
    // A packet of the client cut short: its rest would be read as a request.
    evs.push(Ev::Data(C, command(0x03, b"select 2")[..6].to_vec()));
    assert!(!at_rest(StartMode::Handshake, &evs), "half a request");
    // The compressed protocol frames packets otherwise.
    assert!(!at_rest(StartMode::Handshake, &login(BASE_CAPS | COMPRESS)));
    // Joined mid-stream, nothing known of the session yet.
    assert!(!at_rest(
        StartMode::MidStream,
        &[Ev::Data(S, packet(1, &ok(0, 2)))]
    ));
}

/// What [`ExchangeShape::plain`] promises, against the decoder itself: on random responses to COM_QUERY
/// and COM_PING, made of packets a response may hold (and some it may not), fed whole or in random
/// pieces, each with its [`PieceShape`] as the engine feeds segments, an exchange judged plain leaves a
/// session that was at rest at rest, with exactly one transaction completed, answered, an error exactly
/// when the shape says so.
#[test]
fn a_plain_exchange_decodes_to_one_answer_and_rest() {
    const DEF: &[u8] =
        b"\x03def\x00\x00\x00\x01a\x00\x0c\x3f\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00";
    let alphabet: Vec<Vec<u8>> = vec![
        ok(0, 2),
        ok(0, MORE | 2),
        b"\xff\x7a\x04#42S02Table 't' doesn't exist".to_vec(),
        b"\xff\xff\xff\x01\x00\x02".to_vec(), // a progress report
        b"\xff\x01".to_vec(),                 // an ERR too short
        eof(2),
        eof(MORE | 2),
        eof(0x40 | 2), // a cursor
        ok_fe(2),
        ok_fe(MORE | 2),
        b"\xfe\x00\xfc\x00\x00\x08\x00".to_vec(), // 7 bytes: read as an OK, MORE set
        vec![1],
        vec![2],
        vec![1, 2, 3],
        DEF.to_vec(),
        b"\x011".to_vec(),
        b"\xff\x01\x02".to_vec(),
        vec![],
        b"\xfb/tmp/f".to_vec(),
        vec![0xfe], // a 4.0 EOF: a cursor's end after the definitions
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut plain = 0;
    let cases = 60_000;
    for case in 0..cases {
        let caps = if next(2) == 0 {
            BASE_CAPS
        } else {
            BASE_CAPS | DEPRECATE_EOF
        };
        let mut s = Session::new(StartMode::Handshake);
        for (i, ev) in login(caps).iter().enumerate() {
            if let Ev::Data(d, b) = ev {
                s.feed(*d, b, meta(i as u64 + 1));
            }
        }
        // A statement prepared, for the COM_STMT_EXECUTEs below.
        s.feed(C, &command(0x16, b"select 1"), meta(4));
        s.feed(S, &packet(1, &prepare_ok(1, 0, 0)), meta(5));
        s.drain().for_each(drop);
        assert!(s.at_rest());
        let request = match next(7) {
            0 => command(0x0e, b""),
            1 => command(0x03, b"SET @slave_connect_state='0-1-2'"),
            // The prepared statement run without a cursor, asking for one (any of the three kinds), or
            // with the flag a parameter count sets (MySQL 8.0.26).
            2 => {
                let flags = [0u8, 1, 2, 4, 8][next(5)];
                command(0x17, &[1, 0, 0, 0, flags, 1, 0, 0, 0])
            }
            _ => command(0x03, b"select 1"),
        };
        // Mostly the responses a server sends, sometimes any packets of the alphabet.
        let picks: Vec<usize> = match next(3) {
            0 => vec![0],
            1 => {
                let rows = next(4);
                let mut v = vec![11, 14, [5, 19][next(2)]];
                v.extend(std::iter::repeat_n(15, rows));
                v.push([5, 8, 2, 6][next(4)]);
                v
            }
            _ => (0..1 + next(7)).map(|_| next(alphabet.len())).collect(),
        };
        let mut server = Vec::new();
        for (i, &k) in picks.iter().enumerate() {
            server.extend(packet(1 + i as u8, &alphabet[k]));
        }
        // Fed as the engine feeds it: whole segments, whose shapes its scan told, or any cut.
        let mut x = ExchangeShape::new(s.capabilities());
        x.client_shaped(&request, PieceShape::of(&request));
        let whole = next(4) == 0;
        let mut rest = &server[..];
        while !rest.is_empty() {
            let n = if whole {
                rest.len()
            } else {
                (1 + next(24)).min(rest.len())
            };
            x.server_shaped(&rest[..n], PieceShape::of(&rest[..n]));
            rest = &rest[n..];
        }
        let Some(verdict) = x.plain() else {
            continue;
        };
        plain += 1;
        let before = s.info().clone();
        s.feed(C, &request, meta(6));
        s.feed(S, &server, meta(7));
        let done: Vec<_> = s.drain().collect();
        // Nothing the session knows changed but the bytes it counts (what passing over counts).
        let mut after = s.info().clone();
        after.counters.client_bytes = before.counters.client_bytes;
        after.counters.server_bytes = before.counters.server_bytes;
        assert_eq!(after, before, "case {case}: {picks:?}");
        assert!(s.at_rest(), "case {case}: not at rest after {picks:?}");
        assert_eq!(done.len(), 1, "case {case}: {picks:?}");
        let error = matches!(done[0].outcome, Outcome::Err { .. });
        assert!(
            !matches!(
                done[0].outcome,
                Outcome::ClosedMidResponse { .. }
                    | Outcome::ClosedBeforeResponse { .. }
                    | Outcome::CaptureEnded
                    | Outcome::GapLost
                    | Outcome::Encrypted
                    | Outcome::NoResponseExpected
                    | Outcome::ReplicationStream
                    | Outcome::LocalInfile { .. }
            ),
            "case {case}: {:?} after {picks:?}",
            done[0].outcome
        );
        assert_eq!(error, verdict.error, "case {case}: {picks:?}");
        assert_eq!(verdict.statement, done[0].statement_id, "case {case}");
        if let Some(id) = verdict.statement {
            // What the caller reads of the statement is what its run shows.
            assert_eq!(done[0].statement.as_deref(), s.prepared(id), "case {case}");
            assert_eq!(s.prepared(1), Some("select 1"), "case {case}");
        }
    }
    // (About one in six: the pieces often cut a packet the verdict needs whole.)
    assert!(plain * 10 > cases, "{plain} of {cases} judged plain");
}

/// The request's last byte: its command packet's end, or the last LOCAL INFILE packet the client sent
/// after the server asked for the file (the response began before it: frame 2).
#[test]
fn a_local_infile_request_ends_with_the_files_last_packet() {
    let mut file = packet(2, &[b'x'; 100]);
    file.extend(packet(3, b""));
    let evs = vec![
        query("load data local infile '/tmp/f' into table t"),
        Ev::Data(S, packet(1, b"\xfb/tmp/f")),
        Ev::Data(C, file),
        Ev::Data(S, packet(4, &ok(100, 2))),
        query("select 1"),
        Ev::Data(S, classic_resultset(1, &["1"], &[&["1"]], 2)),
    ];
    for chunk in [usize::MAX, 1, 7] {
        let (t, _) = play_chunked(StartMode::MidStream, &evs, &mut |_| chunk);
        let frames = |x: &pcapsleuth_mysql::Transaction| {
            (
                x.request_frame,
                x.last_request_frame,
                x.first_response_frame,
                x.last_response_frame,
            )
        };
        assert_eq!(frames(&t[0]), (1, 3, Some(2), Some(4)), "chunk {chunk}");
        assert_eq!(t[0].last_request_ts_ns, meta(3).ts_ns);
        assert_eq!(frames(&t[1]), (5, 5, Some(6), Some(6)), "chunk {chunk}");
    }
}

/// A request of more than 16 MB is sent as a full packet and a continuation: it ends with the
/// continuation's last byte.
#[test]
fn a_request_over_16_mib_ends_with_its_continuation_packet() {
    let full = 0xFF_FFFF;
    let mut first = vec![0xFF, 0xFF, 0xFF, 0, 0x03];
    first.extend(b"insert into t values ('");
    first.resize(4 + full, b'x');
    let evs = vec![
        Ev::Data(C, first),
        Ev::Data(C, packet(1, b"')")),
        Ev::Data(S, packet(2, &ok(1, 2))),
    ];
    let (t, _) = play(StartMode::MidStream, &evs);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].command, Command::Query);
    assert_eq!((t[0].request_frame, t[0].last_request_frame), (1, 2));
    assert_eq!(t[0].request_bytes, (full + 2 + 8) as u64);
    assert_eq!(t[0].first_response_frame, Some(3));
}

/// Under the compressed protocol, a server packet whose start is all the capture holds (too little to
/// inflate any of it) is where the answer began: the request was answered, its end not seen.
#[test]
fn a_compressed_answer_begins_at_its_compressed_packet_even_when_nothing_of_it_inflates() {
    let mut evs = login(BASE_CAPS | COMPRESS);
    evs.push(Ev::Data(
        C,
        compressed(0, &command(0x03, b"show databases"), false),
    ));
    let rs = classic_resultset(1, &["Database"], &[&["information_schema"], &["mysql"]], 2);
    let answer = compressed(0, &rs, true);
    // 12 bytes: the 7-byte header and the first 5 of the zlib stream.
    evs.push(Ev::Data(S, answer[..12].to_vec()));
    let (t, _) = play(StartMode::Handshake, &evs);
    let q = &t[1];
    assert_eq!(q.statement.as_deref(), Some("show databases"));
    assert_eq!(q.first_response_frame, Some(5));
    assert_eq!(q.outcome, Outcome::CaptureEnded);
    // The whole answer: the same first byte, and the end.
    evs.pop();
    evs.push(Ev::Data(S, answer));
    let (t, _) = play(StartMode::Handshake, &evs);
    assert_eq!(t[1].first_response_frame, Some(5));
    assert_eq!(t[1].outcome, Outcome::ResultSet { rows: 2 });
}
