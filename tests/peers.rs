//! The captures other projects test their own MySQL and TCP readers with (`../shared/external/peers`: 72
//! captures from pcap2mysql-log, packetbeat, DeepFlow, Arkime, nDPI, Peafowl and Percona Toolkit, see its
//! README.md). Every fact each project's tests assert (`expect` in its `manifest.json`) is checked against
//! pcapsleuth's JSON, and the same captures against tshark's dissector: commands, errors and connections,
//! except where the manifest says tshark misreads the capture (`tshark_skip`).
//!
//! A difference the manifest judged a peer's or tshark's fault, or a difference of definition, is
//! `accepted`: it is forgiven only while pcapsleuth's answer is exactly the one judged, so each check
//! writes its differences in the manifest's words. Every disagreement of every capture is listed at once.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use pcapsleuth_testkit::oracle;
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    captures: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    file: String,
    #[allow(dead_code)]
    peer: String,
    /// Server ports tshark must be told are MySQL (`-d tcp.port==N,mysql`).
    mysql_ports: Vec<u16>,
    #[allow(dead_code)]
    exercises: String,
    expect: Expect,
    #[allow(dead_code)]
    peer_facts: String,
    /// tshark checks that do not apply, with the reason.
    #[serde(default)]
    tshark_skip: BTreeMap<String, String>,
    #[serde(default)]
    accepted: Vec<Accepted>,
}

/// The facts a peer asserts; README.md's table says what each key means. An unknown key fails the parse
/// rather than going unchecked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    commands: Option<BTreeMap<String, u64>>,
    errors: Option<BTreeMap<String, u64>>,
    error_messages: Option<Vec<String>>,
    sessions: Option<u64>,
    connections: Option<u64>,
    connections_with_data: Option<u64>,
    rows_total: Option<u64>,
    rows_total_min: Option<u64>,
    statements_contain: Option<Vec<String>>,
    verbs: Option<BTreeMap<String, u64>>,
    verbs_min: Option<BTreeMap<String, u64>>,
    rt: Option<Rt>,
    rt_incl_login: Option<Rt>,
    flows: Option<Vec<Flow>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rt {
    count: u64,
    sum: u64,
    max: u64,
    tol_us: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Flow {
    client: String,
    server: String,
    packets_total: Option<u64>,
    to_server_packets: Option<u64>,
    to_client_packets: Option<u64>,
    to_server_wire: Option<u64>,
    to_client_wire: Option<u64>,
    to_server_payload: Option<u64>,
    to_client_payload: Option<u64>,
    fin: Option<bool>,
    rst: Option<bool>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum Against {
    Peer,
    Tshark,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Accepted {
    against: Against,
    diff: String,
    #[allow(dead_code)]
    verdict: String,
    #[allow(dead_code)]
    why: String,
}

/// One fact on which pcapsleuth and a peer (or tshark) disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Disagreement {
    against: Against,
    /// The `expect` key or tshark check.
    key: &'static str,
    /// In the words of the manifest's `accepted[].diff`.
    diff: String,
}

/// The peers' manifest and the directory of their captures, or `None` (the skip said) without
/// `../shared`.
fn manifest() -> Option<(PathBuf, Manifest)> {
    let dir = common::shared("external/peers")?;
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the peers' captures sit beside the repo)",
            path.display()
        )
    });
    let m = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some((dir, m))
}

/// Python's repr of a {key: 'ours/theirs'} map, as the manifest writes differences.
fn pairs<K: std::fmt::Display, V: std::fmt::Display>(diffs: &[(K, V, V)]) -> String {
    let inner: Vec<String> = diffs
        .iter()
        .map(|(k, ours, theirs)| format!("'{k}': '{ours}/{theirs}'"))
        .collect();
    format!("{{{}}}", inner.join(", "))
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// A map of counts from a JSON object (`commands`, `errors`).
fn counts(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .map(|o| o.iter().map(|(k, n)| (k.clone(), u(n))).collect())
        .unwrap_or_default()
}

/// (count, sum, max) of an `rt_us` summary, whole microseconds.
fn rt_of(v: &Value) -> (u64, u64, u64) {
    let count = u(&v["count"]);
    let mean = v["mean"].as_f64().unwrap_or(0.0);
    let max = v["max"].as_f64().unwrap_or(0.0);
    (
        count,
        (count as f64 * mean).round() as u64,
        max.round() as u64,
    )
}

/// What tshark's dissector says about one capture: one run, shared by every check.
#[derive(Default)]
struct Tshark {
    /// Requests by command name; logins (Login Request) as COM_CONNECT.
    commands: BTreeMap<String, u64>,
    /// Error responses by code (MariaDB's progress reports, "error" 65535, left out).
    errors: BTreeMap<String, u64>,
    /// TCP conversations (`-z conv,tcp`).
    connections: u64,
    /// Login times: the login request to the server's first OK or ERR after it, microseconds.
    logins_us: Vec<u64>,
}

fn tshark(tool: &oracle::Tshark, file: &Path, ports: &[u16]) -> Tshark {
    let decode: Vec<String> = ports
        .iter()
        .flat_map(|p| ["-d".to_string(), format!("tcp.port=={p},mysql")])
        .collect();
    let mut args: Vec<&str> = vec!["-r", file.to_str().unwrap()];
    args.extend(decode.iter().map(String::as_str));
    args.extend([
        "-T",
        "fields",
        "-E",
        "occurrence=a",
        "-E",
        "separator=/t",
        "-e",
        "frame.time_epoch",
        "-e",
        "tcp.stream",
        "-e",
        "tcp.srcport",
        "-e",
        "mysql.command",
        "-e",
        "mysql.error_code",
        "-e",
        "mysql.login_request",
        "-e",
        "mysql.response_code",
        "-z",
        "conv,tcp",
    ]);
    let mut t = Tshark::default();
    let lines = cached(tool, file, &args);
    // Per stream: the open login (its time and the client's port).
    let mut login: HashMap<String, (f64, String)> = HashMap::new();
    for line in lines {
        if line.contains("<->") {
            t.connections += 1;
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let [ts, stream, port, commands, errors, logins, responses] = f[..] else {
            continue;
        };
        let Ok(ts) = ts.parse::<f64>() else {
            continue;
        };
        let values = |field: &str| -> Vec<String> {
            field
                .split(',')
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .collect()
        };
        for c in values(commands) {
            if let Ok(code) = c.parse::<u8>() {
                if code <= 0x21 {
                    let name = pcapsleuth::mysql::Command::from_byte(code).name();
                    *t.commands.entry(name.to_string()).or_default() += 1;
                }
            }
        }
        for e in values(errors) {
            if e != "65535" {
                *t.errors.entry(e).or_default() += 1;
            }
        }
        for _ in values(logins) {
            *t.commands.entry("COM_CONNECT".into()).or_default() += 1;
            login.insert(stream.to_string(), (ts, port.to_string()));
        }
        if let Some(first) = values(responses).first() {
            if let Some((start, client)) = login.get(stream) {
                if client != port && (first == "0x00" || first == "0xff") {
                    t.logins_us.push(((ts - start) * 1e6).round() as u64);
                    login.remove(stream);
                }
            }
        }
    }
    t
}

/// `tool.lines(args)`, remembered in the build's scratch directory under the hash of tshark's version,
/// the arguments and the capture's bytes: most of a run's time is tshark starting up, 72 times.
fn cached(tool: &oracle::Tshark, file: &Path, args: &[&str]) -> Vec<String> {
    use std::hash::{Hash, Hasher};
    static VERSION: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let version = VERSION.get_or_init(|| tool.lines(["-v"]).into_iter().take(1).collect());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    version.hash(&mut h);
    args.iter().skip(2).collect::<Vec<_>>().hash(&mut h);
    std::fs::read(file).unwrap().hash(&mut h);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("peers-tshark");
    let path = dir.join(format!("{:016x}.txt", h.finish()));
    if let Ok(text) = std::fs::read_to_string(&path) {
        return text.lines().map(str::to_owned).collect();
    }
    let lines = tool.lines(args);
    // Written whole, then renamed: a run interrupted half-way leaves no half answer behind.
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    if std::fs::create_dir_all(&dir).is_ok() && std::fs::write(&tmp, lines.join("\n")).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
    lines
}

/// pcapsleuth's answers for one capture, from the CLI's JSON.
struct Ours {
    mysql: Value,
    first_reset: Value,
    flows: Option<Value>,
}

fn ours(file: &Path, expect: &Expect) -> Ours {
    let p = file.to_str().unwrap();
    Ours {
        mysql: common::json(&["mysql", "--json", p]),
        first_reset: common::json(&["first-reset", "--json", p]),
        flows: (expect.flows.is_some() || expect.connections_with_data.is_some())
            .then(|| common::json(&["flows", "--json", p])),
    }
}

/// Every disagreement between pcapsleuth and the peer's `expect`.
fn against_peer(e: &Expect, o: &Ours) -> Vec<Disagreement> {
    let mut out = Vec::new();
    let mut differ = |key: &'static str, diff: String| {
        out.push(Disagreement {
            against: Against::Peer,
            key,
            diff,
        })
    };
    commands_and_errors(e, &o.mysql, &mut differ);
    sessions_and_connections(e, o, &mut differ);
    statements_against(e, &o.mysql, &mut differ);
    flows_against(e, o, &mut differ);
    if let Some(want) = &e.rt {
        // pt-query-digest times a query from its request to the first packet of its answer: our time to
        // first byte, over every answered request (those whose answer's end is not in the capture too).
        // On every other capture with an `rt`, each answer is one segment and the two are equal.
        let got = rt_of(&o.mysql["first_byte_us"]);
        if !rt_holds(got, want) {
            differ("rt", rt_diff(got, want));
        }
    }
    out
}

/// What a check found to differ: the `expect` key, and the difference in the manifest's words.
type Differ<'a> = dyn FnMut(&'static str, String) + 'a;

/// The peer's `commands`, `errors` and `error_messages` against `mysql --json`'s.
fn commands_and_errors(e: &Expect, m: &Value, differ: &mut Differ<'_>) {
    if let Some(want) = &e.commands {
        let got = counts(&m["commands"]);
        for (name, &n) in want {
            let ours = got.get(name).copied().unwrap_or(0);
            if ours != n {
                differ("commands", format!("{name} pcapsleuth {ours} peer {n}"));
            }
        }
    }
    if let Some(want) = &e.errors {
        let got = counts(&m["errors"]);
        if &got != want {
            differ("errors", format!("errors pcapsleuth {got:?} peer {want:?}"));
        }
    }
    let details = m["error_details"].as_array().cloned().unwrap_or_default();
    let messages: Vec<&str> = details
        .iter()
        .flat_map(|d| d["messages"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    match &e.error_messages {
        // The peer asserts there were no error responses at all.
        Some(want) if want.is_empty() && !messages.is_empty() => {
            differ(
                "error_messages",
                format!("error messages pcapsleuth {messages:?} peer none"),
            );
        }
        Some(want) => {
            for w in want {
                if !messages.contains(&w.as_str()) {
                    differ(
                        "error_messages",
                        format!("error message {w:?} missing; pcapsleuth has {messages:?}"),
                    );
                }
            }
        }
        None => {}
    }
}

/// The peer's `sessions`, `connections` and `connections_with_data`.
fn sessions_and_connections(e: &Expect, o: &Ours, differ: &mut Differ<'_>) {
    let m = &o.mysql;
    if let Some(n) = e.sessions {
        let ours = u(&m["sessions"]);
        if ours != n {
            differ("sessions", format!("sessions pcapsleuth {ours} peer {n}"));
        }
    }
    if let Some(n) = e.connections {
        let ours = u(&o.first_reset["connections"]);
        if ours != n {
            differ(
                "connections",
                format!("connections pcapsleuth {ours} peer {n}"),
            );
        }
    }
    let flows: Vec<Value> = o
        .flows
        .as_ref()
        .and_then(|f| f["connections"].as_array().cloned())
        .unwrap_or_default();
    if let Some(n) = e.connections_with_data {
        let ours = flows
            .iter()
            .filter(|c| {
                u(&c["to_server"]["payload_bytes"]) + u(&c["to_client"]["payload_bytes"]) > 0
            })
            .count() as u64;
        if ours != n {
            differ(
                "connections_with_data",
                format!("connections with data pcapsleuth {ours} peer {n}"),
            );
        }
    }
}

/// The peer's `rows_total(_min)`, `statements_contain` and `verbs(_min)` against `mysql --json`'s
/// statement groups.
fn statements_against(e: &Expect, m: &Value, differ: &mut Differ<'_>) {
    let statements = m["statements"].as_array().cloned().unwrap_or_default();
    let rows: u64 = statements.iter().map(|s| u(&s["rows"])).sum();
    if let Some(n) = e.rows_total {
        if rows != n {
            differ("rows_total", format!("rows pcapsleuth {rows} peer {n}"));
        }
    }
    if let Some(n) = e.rows_total_min {
        if rows < n {
            differ(
                "rows_total_min",
                format!("rows pcapsleuth {rows} peer at least {n}"),
            );
        }
    }
    let samples: Vec<String> = statements
        .iter()
        .filter_map(|s| s["sample"].as_str())
        .map(squash)
        .collect();
    for text in e.statements_contain.iter().flatten() {
        let text = squash(text);
        if !samples.iter().any(|s| s.starts_with(&text)) {
            differ(
                "statements_contain",
                format!("no statement starts with {text:?}"),
            );
        }
    }
    let mut verbs: BTreeMap<String, u64> = BTreeMap::new();
    for s in &statements {
        let verb = s["sample"]
            .as_str()
            .and_then(|t| t.split_whitespace().next())
            .unwrap_or("")
            .to_ascii_uppercase();
        *verbs.entry(verb).or_default() += u(&s["count"]);
    }
    for (key, want, exact) in [
        ("verbs", &e.verbs, true),
        ("verbs_min", &e.verbs_min, false),
    ] {
        for (verb, &n) in want.iter().flatten() {
            let ours = verbs.get(verb).copied().unwrap_or(0);
            if (exact && ours != n) || (!exact && ours < n) {
                differ(key, format!("{verb} pcapsleuth {ours} peer {n}"));
            }
        }
    }
}

/// The peer's per-flow counts (`flows`) against `flows --json`'s connections.
fn flows_against(e: &Expect, o: &Ours, differ: &mut Differ<'_>) {
    let flows: Vec<Value> = o
        .flows
        .as_ref()
        .and_then(|f| f["connections"].as_array().cloned())
        .unwrap_or_default();
    if let Some(f) = &e.flows {
        for want in f {
            let got = flows.iter().find(|c| {
                c["client"] == want.client.as_str() && c["server"] == want.server.as_str()
            });
            let name = format!("{}->{}", want.client, want.server);
            let Some(c) = got else {
                differ(
                    "flows",
                    format!("{name} not among pcapsleuth's connections"),
                );
                continue;
            };
            let (to_s, to_c) = (&c["to_server"], &c["to_client"]);
            let fields: [(&str, Value, Option<Value>); 9] = [
                (
                    "packets_total",
                    (u(&to_s["packets"]) + u(&to_c["packets"])).into(),
                    want.packets_total.map(Into::into),
                ),
                (
                    "to_server_packets",
                    to_s["packets"].clone(),
                    want.to_server_packets.map(Into::into),
                ),
                (
                    "to_client_packets",
                    to_c["packets"].clone(),
                    want.to_client_packets.map(Into::into),
                ),
                (
                    "to_server_wire",
                    to_s["wire_bytes"].clone(),
                    want.to_server_wire.map(Into::into),
                ),
                (
                    "to_client_wire",
                    to_c["wire_bytes"].clone(),
                    want.to_client_wire.map(Into::into),
                ),
                (
                    "to_server_payload",
                    to_s["payload_bytes"].clone(),
                    want.to_server_payload.map(Into::into),
                ),
                (
                    "to_client_payload",
                    to_c["payload_bytes"].clone(),
                    want.to_client_payload.map(Into::into),
                ),
                (
                    "fin",
                    (!c["first_fin"].is_null()).into(),
                    want.fin.map(Into::into),
                ),
                (
                    "rst",
                    (!c["first_rst"].is_null()).into(),
                    want.rst.map(Into::into),
                ),
            ];
            let python = |v: &Value| match v {
                Value::Bool(true) => "True".to_string(),
                Value::Bool(false) => "False".to_string(),
                v => v.to_string(),
            };
            let diffs: Vec<(&str, String, String)> = fields
                .iter()
                .filter_map(|(k, ours, theirs)| Some((k, ours, theirs.as_ref()?)))
                .filter(|(_, ours, theirs)| ours != theirs)
                .map(|(k, ours, theirs)| (*k, python(ours), python(theirs)))
                .collect();
            if !diffs.is_empty() {
                differ("flows", format!("{name} pcapsleuth/peer {}", pairs(&diffs)));
            }
        }
    }
}

fn rt_holds((count, sum, max): (u64, u64, u64), want: &Rt) -> bool {
    count == want.count
        && sum.abs_diff(want.sum) <= want.tol_us
        && max.abs_diff(want.max) <= want.tol_us
}

fn rt_diff((count, sum, max): (u64, u64, u64), want: &Rt) -> String {
    format!(
        "RT count/sum/max pcapsleuth {count}/{sum}/{max} us peer {}/{}/{} us",
        want.count, want.sum, want.max
    )
}

/// Every disagreement with tshark's dissector the manifest does not skip; and `rt_incl_login`, whose
/// login times come from tshark.
fn against_tshark(entry: &Entry, o: &Ours, t: &Tshark) -> Vec<Disagreement> {
    let mut out = Vec::new();
    let skip = |k: &str| entry.tshark_skip.contains_key(k);
    let m = &o.mysql;
    let compare =
        |key: &'static str, ours: &BTreeMap<String, u64>, theirs: &BTreeMap<String, u64>| {
            let mut names: Vec<&String> = ours.keys().chain(theirs.keys()).collect();
            names.sort();
            names.dedup();
            let diffs: Vec<(&String, u64, u64)> = names
                .into_iter()
                .map(|n| {
                    (
                        n,
                        ours.get(n).copied().unwrap_or(0),
                        theirs.get(n).copied().unwrap_or(0),
                    )
                })
                .filter(|(_, a, b)| a != b)
                .collect();
            (!diffs.is_empty()).then(|| Disagreement {
                against: Against::Tshark,
                key,
                diff: format!("{key} pcapsleuth/tshark {}", pairs(&diffs)),
            })
        };
    if !skip("commands") {
        // tshark names only the bytes up to 0x21; ours names every other byte COM_UNKNOWN.
        let ours: BTreeMap<String, u64> = counts(&m["commands"])
            .into_iter()
            .filter(|(name, _)| {
                (0..=0x21u8).any(|b| pcapsleuth::mysql::Command::from_byte(b).name() == name)
            })
            .collect();
        out.extend(compare("commands", &ours, &t.commands));
    }
    if !skip("errors") {
        out.extend(compare("errors", &counts(&m["errors"]), &t.errors));
    }
    if !skip("connections") {
        let ours = u(&o.first_reset["connections"]);
        if ours != t.connections {
            out.push(Disagreement {
                against: Against::Tshark,
                key: "connections",
                diff: format!("connections pcapsleuth/tshark {ours}/{}", t.connections),
            });
        }
    }
    if let Some(want) = &entry.expect.rt_incl_login {
        let (count, sum, max) = rt_of(&m["rt_us"]);
        let got = (
            count + t.logins_us.len() as u64,
            sum + t.logins_us.iter().sum::<u64>(),
            t.logins_us.iter().copied().fold(max, u64::max),
        );
        if !rt_holds(got, want) {
            out.push(Disagreement {
                against: Against::Peer,
                key: "rt_incl_login",
                diff: rt_diff(got, want),
            });
        }
    }
    out
}

/// Differences judged in this repository after the manifest (read-only shared data) was written:
/// (capture, against, the difference in the manifest's words, why). Forgiven like the manifest's
/// `accepted`, only while pcapsleuth's answer is exactly the one judged.
const ACCEPTED_HERE: &[(&str, Against, &str, &str)] = &[
    (
        "arkime/tcp_handshake_synthetic.pcap",
        Against::Peer,
        "connections pcapsleuth 16 peer 14",
        "a SYN with a new ISN on a 4-tuple is a new connection attempt and starts a new connection, as \
         tshark's streams do (40003 and 40013 each carry two attempts: 16 streams); Arkime keeps one \
         session per 4-tuple",
    ),
    (
        "percona-toolkit/tcpdump043.pcap",
        Against::Tshark,
        "commands pcapsleuth/tshark {'COM_CONNECT': '1/0'}",
        "frame 9: the server answers the client's 'hello, world!\\r\\n' (sent instead of a login) with \
         ERR 1156; as for connect-fail.pcap's ERR 1130 (accepted there as definitional), pcapsleuth \
         counts the refused attempt as one COM_CONNECT to carry the error, and tshark has no Login \
         Request frame to count",
    ),
];

#[test]
fn every_peer_expectation_and_tshark_check_holds() {
    let Some(tool) = oracle::tshark() else {
        return;
    };
    let Some((peers_dir, m)) = manifest() else {
        return;
    };
    assert_eq!(m.captures.len(), 72, "the manifest lists 72 captures");
    // tshark spends much of its start-up waiting rather than computing: more runs than cores at once.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(8)
        .build()
        .unwrap();
    let results: Vec<(String, Vec<Disagreement>)> = pool.install(|| {
        m.captures
            .par_iter()
            .map(|entry| {
                let file = peers_dir.join(&entry.file);
                let o = ours(&file, &entry.expect);
                let t = tshark(&tool, &file, &entry.mysql_ports);
                let mut all = against_peer(&entry.expect, &o);
                all.extend(against_tshark(entry, &o, &t));
                all.retain(|d| {
                    !entry
                        .accepted
                        .iter()
                        .any(|a| a.against == d.against && a.diff == d.diff)
                        && !ACCEPTED_HERE.iter().any(|&(f, against, diff, _)| {
                            f == entry.file && against == d.against && diff == d.diff
                        })
                });
                (entry.file.clone(), all)
            })
            .collect()
    });
    let mut report = String::new();
    for (file, disagreements) in &results {
        for d in disagreements {
            let _ = writeln!(report, "{file}: {} ({:?}): {}", d.key, d.against, d.diff);
        }
    }
    assert!(report.is_empty(), "peers' captures:\n{report}");
}
