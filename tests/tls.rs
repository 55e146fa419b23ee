//! MySQL in TLS (fixtures/tls/, recorded with the lab: MariaDB with TLS, PyMySQL writing an NSS key log;
//! fixtures/README.md says what is in them). With the key log, or with the secrets embedded in a pcapng,
//! every session decodes to what tshark decrypts: the same commands at the same frames, the same error,
//! the same first abnormal close. Without keys, each session still tells its version, suite and
//! handshake, and response times estimated from its records, which are checked against the decrypted
//! truth.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common;

use pcapsleuth::analysis::{
    self, Analysis, CaptureFacts, ConnectionView, EngineOptions, EstimatedExchangeView, Run,
    TlsKeys, TransactionView,
};
use pcapsleuth::capture::CaptureSet;
use pcapsleuth::flow::{CloseFlag, Role};
use pcapsleuth::mysql::Command;
use pcapsleuth::tls::KeyLog;
use pcapsleuth_testkit::oracle;

/// The five variants: TLS 1.3 with each of its three suites, TLS 1.2 with AES-GCM and ChaCha20.
const VARIANTS: [&str; 5] = [
    "tls13-aes256",
    "tls13-aes128",
    "tls13-chacha",
    "tls12-aes128gcm",
    "tls12-chacha",
];

fn tls_fixture(name: &str) -> PathBuf {
    common::fixture("tls").join(name)
}

/// What a run saw: every transaction (request frame, command, error code, response time) and every
/// exchange estimated from TLS records (request frame, response time).
#[derive(Default)]
struct Seen {
    transactions: Vec<(u64, Command, Option<u16>, Option<u64>)>,
    estimated: Vec<(u64, u64, Option<u64>)>,
}

impl Analysis for Seen {
    type PerConnection = ();
    type Output = Seen;

    fn transaction(&mut self, _: &mut (), _: &ConnectionView<'_>, t: &TransactionView<'_>) {
        let x = t.transaction;
        self.transactions.push((
            x.request_frame,
            x.command,
            t.error_code(),
            t.response_time_ns(),
        ));
    }

    fn estimated_exchange(
        &mut self,
        _: &mut (),
        _: &ConnectionView<'_>,
        x: &EstimatedExchangeView<'_>,
    ) {
        self.estimated.push((
            x.exchange.request.frame,
            x.exchange.index,
            x.response_time_ns(),
        ));
    }

    fn merge(&mut self, o: Self) {
        self.transactions.extend(o.transactions);
        self.estimated.extend(o.estimated);
    }

    fn finish(mut self, _: &CaptureFacts) -> Seen {
        self.transactions.sort_by_key(|t| t.0);
        self.estimated.sort();
        self
    }
}

fn keys(path: &Path) -> Arc<KeyLog> {
    Arc::new(KeyLog::parse(&std::fs::read(path).unwrap()))
}

/// A run over `capture` with the key log `keys` (if any) and `splits` splits.
fn run(capture: &Path, keys: Option<Arc<KeyLog>>, splits: Option<usize>) -> Run<Seen> {
    let mut set = CaptureSet::open(&[capture.to_path_buf()]).unwrap();
    let opts = EngineOptions {
        tls_keys: keys,
        splits,
        ..EngineOptions::default()
    };
    analysis::analyze_set(&mut set, &opts, Seen::default, |_, _| {})
}

/// A decrypted view: (frame, command byte) of every request, and (frame, code) of every error.
type View = (BTreeSet<(u64, u8)>, BTreeSet<(u64, u16)>);

/// tshark's decrypted view.
fn tshark_view(tshark: &oracle::Tshark, capture: &Path, keys: Option<&Path>) -> View {
    let mut args = vec!["-r".to_string(), capture.display().to_string()];
    if let Some(k) = keys {
        args.extend(["-o".into(), format!("tls.keylog_file:{}", k.display())]);
    }
    args.extend(
        [
            "-d",
            "tcp.port==3306,mysql",
            "-Y",
            "mysql.command || mysql.error_code",
            "-T",
            "fields",
            "-E",
            "occurrence=f",
            "-e",
            "frame.number",
            "-e",
            "mysql.command",
            "-e",
            "mysql.error_code",
        ]
        .map(String::from),
    );
    let (mut commands, mut errors) = (BTreeSet::new(), BTreeSet::new());
    for line in tshark.lines(&args) {
        let f: Vec<&str> = line.split('\t').collect();
        let frame: u64 = f[0].parse().unwrap();
        if let Some(c) = f.get(1).filter(|c| !c.is_empty()) {
            commands.insert((frame, c.parse().unwrap()));
        }
        if let Some(e) = f.get(2).filter(|e| !e.is_empty()) {
            errors.insert((frame, e.parse().unwrap()));
        }
    }
    (commands, errors)
}

/// Ours, in tshark's terms: (request frame, command byte) of every request but the logins.
fn our_commands(seen: &Seen) -> BTreeSet<(u64, u8)> {
    seen.transactions
        .iter()
        .filter(|t| t.1 != Command::Connect)
        .map(|t| (t.0, t.1.byte()))
        .collect()
}

/// Runs the binary, returning its output whatever its exit code.
fn binary(args: &[&str]) -> std::process::Output {
    std::process::Command::new(common::bin())
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn every_variant_decodes_as_tshark_decrypts_it_by_key_log_and_by_embedded_secrets() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    for name in VARIANTS {
        let pcap = tls_fixture(&format!("{name}.pcap"));
        let key_log = tls_fixture(&format!("{name}.keys"));
        let (t_commands, t_errors) = tshark_view(&tshark, &pcap, Some(&key_log));
        // What the lab recorded (fixtures/README.md): 18 COM_QUERY, 1 COM_QUIT, 1 ERR 1146.
        assert_eq!(t_commands.iter().filter(|c| c.1 == 3).count(), 18, "{name}");
        assert_eq!(t_commands.iter().filter(|c| c.1 == 1).count(), 1, "{name}");
        assert_eq!(
            t_errors.iter().map(|e| e.1).collect::<Vec<_>>(),
            [1146],
            "{name}"
        );
        let by_log = run(&pcap, Some(keys(&key_log)), None);
        let dsb = tls_fixture(&format!("{name}.dsb.pcapng"));
        let by_dsb = run(&dsb, None, None);
        for (how, r) in [("key log", &by_log), ("embedded secrets", &by_dsb)] {
            let commands = our_commands(&r.output);
            assert_eq!(commands, t_commands, "{name} by {how}: requests");
            let errors: Vec<(u16, u64)> = r
                .output
                .transactions
                .iter()
                .filter_map(|t| Some((t.2?, t.0)))
                .collect();
            assert_eq!(errors.len(), 1, "{name} by {how}");
            assert_eq!(errors[0].0, 1146, "{name} by {how}");
            // tshark names the ERR's frame; it answers the request right before it.
            let err_frame = t_errors.iter().next().unwrap().0;
            let request = commands.range(..(err_frame, 0)).next_back().unwrap().0;
            assert_eq!(
                errors[0].1, request,
                "{name} by {how}: the request the ERR answered"
            );
            let u = analysis::unknowns(r);
            let e = u.encrypted.as_ref();
            let expected_undecrypted = u64::from(name == "tls13-aes256");
            assert_eq!(
                e.map_or(0, |e| e.sessions),
                expected_undecrypted,
                "{name} by {how}"
            );
            assert_eq!(e.map_or(0, |e| e.records_failed), 0, "{name} by {how}");
        }
        // tshark itself reads the embedded secrets the same.
        assert_eq!(tshark_view(&tshark, &dsb, None).0, t_commands, "{name}");
    }
}

#[test]
fn decrypted_the_killed_stream_is_the_first_abnormal_close() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    for name in VARIANTS {
        let pcap = tls_fixture(&format!("{name}.pcap"));
        let r = run(
            &pcap,
            Some(keys(&tls_fixture(&format!("{name}.keys")))),
            None,
        );
        let first = analysis::first_reset(&r, 20)
            .first_abnormal
            .unwrap_or_else(|| panic!("{name}: no abnormal close"));
        // The server's FIN of the second session (tcp.stream 1), which KILL CONNECTION sent mid-resultset.
        let fin = tshark.lines([
            "-r",
            pcap.to_str().unwrap(),
            "-Y",
            "tcp.stream==1 && tcp.srcport==3306 && tcp.flags.fin==1",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ]);
        assert_eq!(first.frame.to_string(), fin[0], "{name}");
        assert_eq!(
            (first.initiator, first.flag),
            (Role::Server, CloseFlag::Fin),
            "{name}"
        );
        assert!(
            first
                .reason
                .contains("mid-resultset of `select * from big.sbtest1 limit 30000`"),
            "{name}: {}",
            first.reason
        );
        // PyMySQL read 2,679 to 2,846 rows before the close (the client's logs).
        let rows: u64 = first
            .reason
            .split(" after ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .map(|n| n.replace(',', "").parse().unwrap())
            .unwrap();
        assert!((2_679..=2_846).contains(&rows), "{name}: {rows} rows");
        // The normal end of the first session (COM_QUIT, then FINs) is not abnormal.
        let report = analysis::first_reset(&r, 20);
        let fin = report.first_fin.unwrap();
        assert!(!fin.abnormal, "{name}: {}", fin.reason);
    }
}

#[test]
fn without_keys_each_session_gives_its_version_suite_and_handshake() {
    let m = common::json(&[
        "mysql",
        "--json",
        tls_fixture("tls12-chacha.pcap").to_str().unwrap(),
    ]);
    let tls = &m["tls"];
    assert_eq!(tls["sessions"], 2);
    assert_eq!(tls["decrypted"], 0);
    assert_eq!(tls["not_decrypted"]["no_key_log"], 2);
    assert_eq!(tls["versions"]["TLS 1.2"], 2);
    assert_eq!(
        tls["cipher_suites"]["TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"],
        2
    );
    assert_eq!(tls["handshake_us"]["count"], 2);
    assert_eq!(m["connect"]["tls_handshake_us"]["count"], 2);
    // The logins' SYN-ACKs and greetings are timed; their answers cannot be read.
    assert_eq!(m["connect"]["greeting_us"]["count"], 2);
    assert_eq!(m["connect"]["login_us"]["count"], 0);
    let listed = tls["listed"].as_array().unwrap();
    assert_eq!(listed[0]["frame"], 1);
    assert_eq!(listed[0]["keys"], "no_key_log");
    assert_eq!(listed[0]["version"], "TLS 1.2");
    assert_eq!(listed[0]["client_hello_frame"], 8);
    assert_eq!(m["commands"]["COM_QUERY"], serde_json::Value::Null);
    assert_eq!(m["unknowns"]["encrypted"]["sessions"], 2);
    assert_eq!(
        m["unknowns"]["encrypted"]["connections"][0]["why"],
        "no_key_log"
    );
}

/// The estimate against the truth: on the same capture, each exchange estimated from the records of a
/// session without keys is the request the key log decrypts at the same frame, and its response time
/// that request's.
#[test]
fn response_times_estimated_from_records_match_the_decrypted_ones() {
    for name in VARIANTS {
        let pcap = tls_fixture(&format!("{name}.pcap"));
        let blind = run(&pcap, None, None);
        let keyed = run(
            &pcap,
            Some(keys(&tls_fixture(&format!("{name}.keys")))),
            None,
        );
        let decoded: std::collections::BTreeMap<u64, (Command, Option<u64>)> = keyed
            .output
            .transactions
            .iter()
            .map(|t| (t.0, (t.1, t.3)))
            .collect();
        // Sessions the key log does not hold stay estimated in the keyed run too: no truth for them.
        let no_truth: BTreeSet<u64> = keyed.output.estimated.iter().map(|x| x.0).collect();
        let mut timed = 0;
        for &(frame, index, rt) in &blind.output.estimated {
            if no_truth.contains(&frame) {
                continue;
            }
            let (command, truth) = decoded
                .get(&frame)
                .copied()
                .unwrap_or_else(|| panic!("{name}: exchange at frame {frame} is no request"));
            if index == 0 {
                assert_eq!(command, Command::Connect, "{name}: the first is the login");
                continue;
            }
            match (rt, truth) {
                (Some(est), Some(truth)) => {
                    assert_eq!(est, truth, "{name}: frame {frame}");
                    timed += 1;
                }
                (None, _) => {
                    // Not timed: the COM_QUIT (no answer) and the query cut by the kill.
                    assert!(
                        command == Command::Quit || truth.is_none(),
                        "{name}: frame {frame} {command:?}"
                    );
                }
                (Some(_), None) => panic!("{name}: frame {frame} timed, not answered"),
            }
        }
        // Of session 1's 16 queries and session 2's first, all; session 3 (tls13-aes256) has no keys.
        assert_eq!(timed, 17, "{name}");
    }
}

#[test]
fn a_record_that_does_not_authenticate_is_counted_and_never_decoded() {
    // The ERR 1146's record, one bit flipped in its ciphertext, in a copy of the capture.
    let name = "tls13-aes128";
    let pcap = tls_fixture(&format!("{name}.pcap"));
    let mut bytes = std::fs::read(&pcap).unwrap();
    let keyed = run(
        &pcap,
        Some(keys(&tls_fixture(&format!("{name}.keys")))),
        None,
    );
    let err_request = keyed
        .output
        .transactions
        .iter()
        .find(|t| t.2 == Some(1146))
        .unwrap()
        .0;
    // The frame after the request carries the ERR (fixtures/README.md: request 46, ERR 48: the next data
    // frame of the server). Flip the last byte of that frame's record, its tag.
    let frame = frame_offsets(&bytes);
    let (at, len) = frame[(err_request + 2 - 1) as usize];
    bytes[at + len - 1] ^= 0x80;
    let damaged = common::scratch("tls", "damaged-err.pcap");
    std::fs::write(&damaged, &bytes).unwrap();
    let r = run(
        &damaged,
        Some(keys(&tls_fixture(&format!("{name}.keys")))),
        None,
    );
    assert!(
        r.output.transactions.iter().all(|t| t.2.is_none()),
        "no error decoded from a record that did not authenticate"
    );
    let u = analysis::unknowns(&r);
    let e = u.encrypted.unwrap();
    assert_eq!((e.sessions, e.records_failed, e.decrypted), (0, 1, 2));
    assert!(
        u.notes.iter().any(|n| n.contains("1 TLS record")),
        "{:?}",
        u.notes
    );
    // The rest of the session still decodes: the request after it is answered.
    let after = r
        .output
        .transactions
        .iter()
        .find(|t| t.0 > err_request && t.1 == Command::Query)
        .unwrap();
    assert!(after.3.is_some());
}

/// (offset, captured length) of each frame's data in a classic pcap, in order.
fn frame_offsets(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut p = 24;
    while p + 16 <= bytes.len() {
        let caplen = u32::from_le_bytes(bytes[p + 8..p + 12].try_into().unwrap()) as usize;
        out.push((p + 16, caplen));
        p += 16 + caplen;
    }
    out
}

#[test]
fn a_session_missing_from_the_key_log_is_said_and_its_login_counted_once() {
    let pcap = tls_fixture("tls13-aes256.pcap");
    let r = run(&pcap, Some(keys(&tls_fixture("tls13-aes256.keys"))), None);
    let logins = r
        .output
        .transactions
        .iter()
        .filter(|t| t.1 == Command::Connect)
        .count();
    assert_eq!(logins, 3, "one login per session, decrypted or not");
    let u = analysis::unknowns(&r);
    let e = u.encrypted.unwrap();
    assert_eq!((e.sessions, e.decrypted), (1, 2));
    assert_eq!(e.connections[0].client, "10.77.1.2:34562");
    assert_eq!(e.connections[0].why, Some(TlsKeys::NotInKeyLog));
    // Its two requests are estimated from its records: `select 3` timed, COM_QUIT not.
    assert_eq!(r.output.estimated.len(), 3);
    let session3 = r.mysql_sessions[2].as_ref().unwrap();
    assert!(session3.encrypted);
    let tls = session3.tls.as_ref().unwrap();
    assert_eq!(
        (tls.version.as_deref(), tls.decrypted),
        (Some("TLS 1.3"), false)
    );
    let decrypted = r.mysql_sessions[0].as_ref().unwrap();
    assert!(!decrypted.encrypted);
    assert_eq!(decrypted.user.as_deref(), Some("sb"));
    assert!(matches!(
        r.output.transactions[0],
        (_, Command::Connect, None, Some(_))
    ));
}

#[test]
fn a_key_log_that_is_not_one_is_bad_input() {
    let o = binary(&[
        "mysql",
        tls_fixture("tls13-aes128.pcap").to_str().unwrap(),
        "--tls-keylog",
        common::fixture("README.md").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a TLS key log"));
    let o = binary(&[
        "mysql",
        tls_fixture("tls13-aes128.pcap").to_str().unwrap(),
        "--tls-keylog",
        "/nonexistent/keys.log",
    ]);
    assert_eq!(o.status.code(), Some(2));
}
