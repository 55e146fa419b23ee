//! The road into Wireshark: every finding of `pcapsleuth report` carries a display filter and the
//! `pcapsleuth extract` command that cuts its packets out; `extract --abnormal`, `--findings` and
//! `--annotate` (pcapng packet comments). tshark is the judge: its display filter on the original capture
//! selects exactly the packets the command writes, and it finds the comments with `frame.comment`.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pcapsleuth_testkit::oracle::{self, Oracle, Tool, Tshark};
use serde_json::Value;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn run(args: &[&str]) -> Output {
    let o = Command::new(common::bin()).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Every packet's time (`frame.time_epoch`) of `file`, for the frames `filter` selects.
fn times(tshark: &Tshark, file: &Path, filter: &str) -> Vec<String> {
    let mut args = vec!["-r", s(file), "-T", "fields", "-e", "frame.time_epoch"];
    if !filter.is_empty() {
        args.extend(["-Y", filter]);
    }
    tshark.lines(args)
}

/// [`times`] for each of `filters` on `file`, in one tshark pass: a Lua tap per filter (`Listener`, whose
/// filter is a display filter, compiled and matched as `-Y`'s is) prints each frame it selects: a
/// capture has up to five findings, and each pass is tshark's start-up and a full dissection. A tshark
/// without Lua (the script's first line
/// missing) gets the filters one pass each.
fn times_of_each(tshark: &Tshark, file: &Path, filters: &[String], dir: &Path) -> Vec<Vec<String>> {
    const SCRIPT: &str = r#"
local args = { ... }
local time_epoch = Field.new("frame.time_epoch")
local n = 0
for filter in io.lines(args[1]) do
  n = n + 1
  local i = n
  local tap = Listener.new("frame", filter)
  function tap.packet()
    io.write(i, "\t", tostring(time_epoch().value), "\n")
  end
end
io.write("filters\t", n, "\n")
"#;
    if filters.is_empty() {
        return Vec::new();
    }
    let script = dir.join("times_of_each.lua");
    let list = dir.join("filters.txt");
    std::fs::write(&script, SCRIPT).unwrap();
    std::fs::write(&list, filters.join("\n") + "\n").unwrap();
    let lua = format!("lua_script:{}", s(&script));
    let lua_args = format!("lua_script1:{}", s(&list));
    let lines = tshark.lines(["-q", "-r", s(file), "-X", &lua, "-X", &lua_args]);
    let listening = format!("filters\t{}", filters.len());
    if lines.first() != Some(&listening) {
        return filters.iter().map(|f| times(tshark, file, f)).collect();
    }
    let mut out = vec![Vec::new(); filters.len()];
    for line in &lines[1..] {
        let (i, time) = line.split_once('\t').unwrap();
        out[i.parse::<usize>().unwrap() - 1].push(time.to_string());
    }
    out
}

/// [`times`] of every frame of each of `files`, in one tshark pass. The files are read as the sections of
/// one pcapng stream, one after another (a pcap file first converted to pcapng by editcap, which reads it
/// with tshark's own reader), and tshark numbers each frame's section (`frame.section_number`, from 1):
/// only the files' bytes are put together, no packet is touched; each tshark run is mostly its start-up.
fn times_in_each(
    tshark: &Tshark,
    editcap: &Tool,
    files: &[PathBuf],
    dir: &Path,
) -> Vec<Vec<String>> {
    let mut stream = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let bytes = std::fs::read(file).unwrap();
        if bytes.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
            stream.extend_from_slice(&bytes);
        } else {
            let converted = dir.join(format!("section-{i}.pcapng"));
            editcap.stdout(["-F", "pcapng", s(file), s(&converted)]);
            stream.extend_from_slice(&std::fs::read(&converted).unwrap());
        }
    }
    let all = dir.join("sections.pcapng");
    std::fs::write(&all, stream).unwrap();
    let mut out = vec![Vec::new(); files.len()];
    for line in tshark.lines([
        "-r",
        s(&all),
        "-T",
        "fields",
        "-e",
        "frame.section_number",
        "-e",
        "frame.time_epoch",
    ]) {
        let (section, time) = line.split_once('\t').unwrap();
        let section: usize = section.parse().unwrap();
        assert!(
            (1..=files.len()).contains(&section),
            "section {section} of {} files: {line}",
            files.len()
        );
        out[section - 1].push(time.to_string());
    }
    out
}

/// The findings of `report --json` on `input`.
fn findings(input: &Path) -> Vec<Value> {
    let o = Command::new(common::bin())
        .args(["report", "--json", s(input)])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    v["findings"].as_array().cloned().unwrap_or_default()
}

/// Runs a finding's `extract_command` (words split at spaces, as a shell would: the captures' paths
/// have none, and a single-quoted word, an IPv6 endpoint, none inside) with the output put in `dir`;
/// returns the output.
fn run_extract_command(command: &str, dir: &Path) -> PathBuf {
    let words: Vec<&str> = command.split(' ').map(|w| w.trim_matches('\'')).collect();
    assert_eq!(words[..2], ["pcapsleuth", "extract"], "{command}");
    let o_at = words.iter().position(|w| *w == "-o").unwrap();
    let out = dir.join(words[o_at + 1]);
    let mut args: Vec<&str> = words[1..o_at].to_vec();
    args.extend(["-o", s(&out)]);
    run(&args);
    out
}

/// On every real capture, each finding that names connections or a server endpoint: tshark's display
/// filter on the original capture selects exactly the packets the finding's extract command writes
/// (ICMP errors quoting them aside).
#[test]
fn each_findings_filter_selects_exactly_what_its_extract_command_cuts_out() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let Some(editcap) = oracle::require(Oracle::Editcap) else {
        return;
    };
    let dir = scratch();
    // Per finding with a filter and a command: the capture, its kind, filter, command, what the
    // command wrote and the times of the frames tshark's filter selects in the capture.
    let cuts = std::sync::Mutex::new(Vec::new());
    common::each_in_parallel(common::real_captures(), |input| {
        // Extracts are named after their finding (first_abnormal_close-1.pcapng, ...): a directory per
        // capture, as captures are checked side by side.
        let dir = dir.path().join(input.file_name().unwrap());
        std::fs::create_dir_all(&dir).unwrap();
        let mut found = Vec::new();
        for f in findings(&input) {
            let kind = f["kind"].as_str().unwrap().to_string();
            let (Some(filter), Some(command)) = (
                f["wireshark_filter"].as_str(),
                f["extract_command"].as_str(),
            ) else {
                assert!(
                    f["wireshark_filter"].is_null() == f["extract_command"].is_null()
                        || f["extract_command"].is_null(),
                    "{}: {f}",
                    input.display()
                );
                continue;
            };
            assert!(command.contains(s(&input)), "{command}");
            if command.contains("--frames") {
                continue;
            }
            let out = run_extract_command(command, &dir);
            found.push((kind, filter.to_string(), command.to_string(), out));
        }
        // tshark also matches ICMP errors that quote the connection's packets (a port unreachable
        // to a SYN): worth seeing in Wireshark, but not the connection's own, which extract copies.
        let filters: Vec<String> = found
            .iter()
            .map(|(_, filter, _, _)| format!("({filter}) && !icmp && !icmpv6"))
            .collect();
        let wants = times_of_each(&tshark, &input, &filters, &dir);
        let mut cuts = cuts.lock().unwrap();
        for ((kind, filter, command, out), want) in found.into_iter().zip(wants) {
            cuts.push((input.clone(), kind, filter, command, out, want));
        }
    });
    let cuts = cuts.into_inner().unwrap();
    // What each command wrote, as tshark reads it: every extract of every capture in one pass.
    let outs: Vec<PathBuf> = cuts.iter().map(|c| c.4.clone()).collect();
    let written = times_in_each(&tshark, &editcap, &outs, dir.path());
    let mut checked = BTreeSet::new();
    // IP fragments: tshark's TCP filter matches the frame that completed a datagram only, and not
    // through a tunnel's fragments; extract keeps every fragment of a TCP datagram it selects (Wireshark
    // needs them all to put it back together). The fragments are compared apart.
    let mut fragments_of = std::collections::BTreeMap::new();
    for ((input, kind, filter, command, _, mut want), mut cut) in cuts.into_iter().zip(written) {
        let fragments: &BTreeSet<String> = fragments_of.entry(input.clone()).or_insert_with(|| {
            times(&tshark, &input, "ip.flags.mf==1 || ip.frag_offset>0")
                .into_iter()
                .collect()
        });
        if !fragments.is_empty() {
            let before = cut.len();
            cut.retain(|t| !fragments.contains(t));
            want.retain(|t| !fragments.contains(t));
            if input.ends_with("ipfrag-router.pcap") {
                // Its one connection's 14 datagrams, 3 fragments each: every frame at a fragment's
                // time is in the extract (times are not unique: a count of frames, not of times).
                let all = times(&tshark, &input, "");
                let at_fragments = all.iter().filter(|t| fragments.contains(*t)).count();
                assert!(at_fragments >= 42);
                assert_eq!(
                    before - cut.len(),
                    at_fragments,
                    "{}: {command}",
                    input.display()
                );
            }
        }
        assert!(
            !cut.is_empty(),
            "{}: {command} wrote nothing",
            input.display()
        );
        // Listed connections (or one endpoint) are selected exactly; a finding naming more
        // connections than a filter lists gets their servers' endpoints, a superset.
        let exact = !command.contains("--findings")
            || filter.contains(" && ip.dst==")
            || filter.contains(" && ipv6.dst==");
        if exact {
            assert_eq!(
                cut,
                want,
                "{}: {kind}: `{filter}` vs `{command}`",
                input.display()
            );
        } else {
            let want: BTreeSet<&String> = want.iter().collect();
            assert!(
                cut.iter().all(|t| want.contains(t)),
                "{}: {kind}",
                input.display()
            );
        }
        checked.insert(kind);
    }
    // The captures hold findings of these kinds, at least.
    for kind in [
        "first_abnormal_close",
        "mid_response_close",
        "errors",
        "retransmissions",
    ] {
        assert!(checked.contains(kind), "no {kind} checked: {checked:?}");
    }
}

/// `server-closes.pcap`: the server closed two connections, the first while `select sleep(10)` was
/// unanswered. The report's text gives each finding its filter and command.
#[test]
fn the_text_report_gives_each_connection_finding_its_filter_and_command() {
    let input = common::fixture("server-closes.pcap");
    let text = common::text(&["report", s(&input)]);
    // The lines fit 120 columns: the filter is wrapped at its spaces (white space inside a display filter
    // is only a separator), the command with a shell's line continuation.
    assert!(text.lines().all(|l| l.chars().count() <= 120), "{text}");
    let filter = "Wireshark: (ip.src==10.77.1.2 && tcp.srcport==54116 && ip.dst==10.77.0.1 && tcp.dstport==3306) || (ip.src==10.77.0.1 && tcp.srcport==3306 && ip.dst==10.77.1.2 && tcp.dstport==54116) extract:";
    // Once: the close that cut `select sleep(10)` off is the first abnormal close, not said again as a
    // mid_response_close finding.
    assert_eq!(common::flat(&text).matches(filter).count(), 1, "{text}");
    assert!(!text.contains("[mid_response_close]"), "{text}");
    // What a shell runs when the command's lines are pasted: each " \" joins a line to the next.
    let mut command = String::new();
    for line in text
        .split("     extract: ")
        .nth(1)
        .unwrap_or_default()
        .lines()
    {
        match line.strip_suffix(" \\") {
            Some(part) => command = format!("{command}{} ", part.trim()),
            None => {
                command.push_str(line.trim());
                break;
            }
        }
    }
    assert_eq!(
        command,
        format!(
            "pcapsleuth extract {} --conn 10.77.1.2:54116-10.77.0.1:3306 --at 1 --annotate -o first_abnormal_close-1.pcapng",
            s(&input)
        ),
        "{text}"
    );
}

/// The comments tshark finds in an extract: `(frame, comment)`.
fn comments(tshark: &Tshark, file: &Path) -> Vec<(u64, String)> {
    tshark
        .lines([
            "-r",
            s(file),
            "-Y",
            "frame.comment",
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=|",
            "-e",
            "frame.number",
            "-e",
            "frame.comment",
        ])
        .iter()
        .flat_map(|l| {
            let (n, c) = l.split_once('\t').unwrap();
            let n: u64 = n.parse().unwrap();
            c.split('|')
                .map(move |c| (n, c.to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `--abnormal` writes every connection with an abnormal close, and only them (first-reset's); with
/// `--annotate` the closes and the frames the findings point at carry comments naming their original
/// frame, and an extract frame's time is its original frame's.
#[test]
fn abnormal_connections_annotated_open_in_tshark_with_their_comments() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let dir = scratch();
    for name in [
        "server-closes.pcap",
        "stream-stall.pcap",
        "client-hang.pcap",
    ] {
        let input = common::fixture(name);
        let fr = common::json(&["first-reset", "--json", "--limit", "100000", s(&input)]);
        let abnormal: Vec<&Value> = fr["closes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["abnormal"] == true)
            .collect();
        assert!(!abnormal.is_empty(), "{name}");
        let filter = abnormal
            .iter()
            .map(|c| {
                let (a, b) = (c["client"].as_str().unwrap(), c["server"].as_str().unwrap());
                let (ca, cp) = a.rsplit_once(':').unwrap();
                let (sa, sp) = b.rsplit_once(':').unwrap();
                format!("(ip.addr=={ca} && tcp.port=={cp} && ip.addr=={sa} && tcp.port=={sp})")
            })
            .collect::<Vec<_>>()
            .join(" || ");
        let out = dir.path().join(format!("{name}.pcapng"));
        let o = run(&[
            "extract",
            s(&input),
            "--abnormal",
            "--annotate",
            "-o",
            s(&out),
        ]);
        let said = String::from_utf8_lossy(&o.stderr);
        assert!(said.contains("of the original capture"), "{said}");
        // The selected frames and every frame of the input, in one pass ("frame" selects every frame).
        let [selected, original]: [Vec<String>; 2] =
            times_of_each(&tshark, &input, &[filter, "frame".to_string()], dir.path())
                .try_into()
                .unwrap();
        let extracted = times(&tshark, &out, "");
        assert_eq!(extracted, selected, "{name}");

        let found = comments(&tshark, &out);
        assert!(!found.is_empty(), "{name}: no comments");
        for (frame, comment) in &found {
            assert!(comment.starts_with("pcapsleuth "), "{comment}");
            let at = comment.find("(frame ").unwrap() + "(frame ".len();
            let original_frame: usize = comment[at..].split(' ').next().unwrap().parse().unwrap();
            assert_eq!(
                extracted[*frame as usize - 1],
                original[original_frame - 1],
                "{name}: extract frame {frame}: {comment}"
            );
        }
        // Every abnormal close is commented.
        for c in &abnormal {
            let f = c["frame"].as_u64().unwrap();
            assert!(
                found
                    .iter()
                    .any(|(_, t)| t.contains(&format!("(frame {f} of the original capture)"))),
                "{name}: close frame {f} not commented: {found:?}"
            );
        }
    }
}

/// `--findings=KIND` takes only that kind's findings; an unknown kind is refused with the list.
#[test]
fn findings_of_one_kind_and_unknown_kinds() {
    let input = common::fixture("server-closes.pcap");
    let dir = scratch();
    let out = dir.path().join("mid.pcap");
    let o = run(&[
        "extract",
        s(&input),
        "--findings=mid_response_close",
        "-o",
        s(&out),
    ]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("wrote "),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let all = common::json(&["flows", "--json", s(&out)]);
    assert_eq!(
        all["connections"].as_array().map(Vec::len),
        Some(1),
        "{all}"
    );
    let bad = Command::new(common::bin())
        .args(["extract", s(&input), "--findings=nonsense", "-o", s(&out)])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("mid_response_close"));
}

/// `bw-cap.pcap`: the client gave up on its three `select * from big.sbtest1` within half a second (two
/// FINs and an RST, each mid-resultset on 10.77.0.1:3306). The report says it once: the first abnormal
/// close (frame 10142) heads them, "and 2 more like it", instead of repeating itself as three more
/// `mid_response_close` findings; its JSON keeps each close as a member with its own filter and extract
/// command, and `extract --findings=mid_response_close` still takes the three connections.
#[test]
fn closes_like_the_first_abnormal_one_are_said_once_with_their_count() {
    let input = common::fixture("bw-cap.pcap");
    let all = findings(&input);
    let kinds: Vec<&str> = all.iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == "first_abnormal_close")
            .count(),
        1
    );
    assert!(!kinds.contains(&"mid_response_close"), "{kinds:?}");
    let head = &all[0];
    assert_eq!(head["kind"], "first_abnormal_close");
    assert_eq!(head["count"], 3);
    let summary = head["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("first abnormal close at frame 10142 "),
        "{summary}"
    );
    assert!(summary.contains("and 2 more like it"), "{summary}");
    let members = head["members"].as_array().unwrap();
    let closes: Vec<u64> = members
        .iter()
        .map(|m| m["frames"][1].as_u64().unwrap())
        .collect();
    assert_eq!(closes, [10142, 10653, 11195]);
    for m in members {
        assert_eq!(m["kind"], "mid_response_close");
        assert!(
            m["wireshark_filter"]
                .as_str()
                .is_some_and(|f| f.contains("ip.dst==")),
            "{m}"
        );
        assert!(
            m["extract_command"]
                .as_str()
                .is_some_and(|c| c.contains("--conn")),
            "{m}"
        );
    }
    let span = &head["span"];
    assert!(span["first_s"].as_f64().unwrap() < span["last_s"].as_f64().unwrap());
    // Wireshark's filter covers the three connections.
    let filter = head["wireshark_filter"].as_str().unwrap();
    for port in ["55584", "55586", "55588"] {
        assert!(filter.contains(port), "{filter}");
    }

    let dir = scratch();
    let out = dir.path().join("mid.pcap");
    run(&[
        "extract",
        s(&input),
        "--findings=mid_response_close",
        "-o",
        s(&out),
    ]);
    let flows = common::json(&["flows", "--json", s(&out)]);
    assert_eq!(
        flows["connections"].as_array().map(Vec::len),
        Some(3),
        "{flows}"
    );
}

/// `proxy-cut.pcap`: a proxy (socat on 10.77.0.1:6033) resets one connection in the middle of a
/// resultset, and the application then resets its 23 other connections, each waiting for `select
/// sleep(20)`, within 2.3 s. The report says it in two findings, not 24: the proxy's cut first, then the
/// clients' resets as one finding with their count; the cut is not said again among them. tshark counts
/// the resets and says which one is the proxy's.
#[test]
fn a_proxy_cut_and_the_pool_reset_after_it_are_two_findings() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let input = common::fixture("proxy-cut.pcap");
    let resets: Vec<(u64, String, f64)> = tshark
        .lines([
            "-r",
            s(&input),
            "-Y",
            "tcp.flags.reset==1",
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "tcp.srcport",
            "-e",
            "frame.time_relative",
        ])
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[0].parse().unwrap(),
                f[1].to_string(),
                f[2].parse().unwrap(),
            )
        })
        .collect();
    // The proxy's reset is the first, and its only one; every other is a client's.
    let (cut, from_proxy, _) = &resets[0];
    assert_eq!(from_proxy, "6033");
    let pool: Vec<&(u64, String, f64)> = resets[1..].iter().collect();
    assert!(pool.iter().all(|r| r.1 != "6033"), "{resets:?}");
    assert!(pool.len() > 10, "{resets:?}");

    let all = findings(&input);
    let kinds: Vec<&str> = all.iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["first_abnormal_close", "mid_response_close"]);
    let head = &all[0];
    assert_eq!(head["frames"][0], *cut, "{head}");
    assert_eq!(head["count"], 1, "{head}");
    let summary = head["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(&format!("first abnormal close at frame {cut} ("))
            && summary.contains("server RST mid-resultset of `select * from big.sbtest1`"),
        "{summary}"
    );
    let report = common::json(&["report", "--json", s(&input)]);
    let first = &report["first_reset"]["first_abnormal"];
    assert_eq!(first["frame"], *cut);
    assert_eq!(first["initiator"], "server");
    assert_eq!(first["flag"], "RST");

    // The pool's resets: one finding, counted, spanning the first to the last client RST.
    let group = &all[1];
    assert_eq!(group["count"], pool.len() as u64, "{group}");
    let members = group["members"].as_array().unwrap();
    let closes: Vec<u64> = members
        .iter()
        .map(|m| m["frames"][1].as_u64().unwrap())
        .collect();
    assert_eq!(closes, pool.iter().map(|r| r.0).collect::<Vec<_>>());
    assert!(members.iter().all(|m| {
        let said = m["summary"].as_str().unwrap();
        said.starts_with("client RST") && said.contains("`select sleep(20)`")
    }));
    let span = &group["span"];
    let close_enough = |a: &Value, b: f64| (a.as_f64().unwrap() - b).abs() < 1e-6;
    assert!(close_enough(&span["first_s"], pool[0].2), "{span}");
    assert!(
        close_enough(&span["last_s"], pool[pool.len() - 1].2),
        "{span}"
    );
    let summary = group["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(&format!("{} client RSTs", pool.len()))
            && summary.contains("on 10.77.0.1:6033"),
        "{summary}"
    );
    // Said once: the proxy's cut is nowhere in the group.
    assert!(
        !group["frames"].as_array().unwrap().iter().any(|f| f == cut),
        "{group}"
    );

    // The text: two numbered findings, the group's first few closes listed and the rest by frame.
    let text = common::text(&["report", s(&input)]);
    let numbered: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.split_once(". [")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
        })
        .collect();
    assert_eq!(numbered.len(), 2, "{text}");
    assert_eq!(text.matches("     close frame ").count(), 3, "{text}");
    assert_eq!(text.matches(&format!("frame {cut} ")).count(), 1, "{text}");
}

/// Checks that each comment of the extract `out` of `input` names, as "(frame N of the original
/// capture)", a frame of `input` with the extract frame's time; returns `(original frame, comment)`.
fn original_frames(tshark: &Tshark, input: &Path, out: &Path) -> Vec<(u64, String)> {
    let original = times(tshark, input, "");
    let extracted = times(tshark, out, "");
    comments(tshark, out)
        .into_iter()
        .map(|(frame, comment)| {
            assert!(comment.starts_with("pcapsleuth "), "{comment}");
            let at = comment.find("(frame ").unwrap() + "(frame ".len();
            let n: u64 = comment[at..].split(' ').next().unwrap().parse().unwrap();
            assert_eq!(
                extracted[frame as usize - 1],
                original[n as usize - 1],
                "{}: extract frame {frame}: {comment}",
                input.display()
            );
            (n, comment)
        })
        .collect()
}

/// The frame numbers tshark's display filter `filter` selects in `file`.
fn frames(tshark: &Tshark, file: &Path, filter: &str) -> BTreeSet<u64> {
    tshark
        .lines([
            "-r",
            s(file),
            "-Y",
            filter,
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .iter()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// err1146-storm.pcap holds 3149 ERR 1146 responses (fixtures/README.md). `mysql --json` keeps the
/// first three as examples (request and response frames, as tshark numbers them), and an annotated
/// extract of the errors finding comments exactly those six frames, not the 6000 of the storm.
#[test]
fn error_responses_and_their_requests_are_annotated_a_few_per_code() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let input = common::fixture("err1146-storm.pcap");
    let errors: Vec<u64> = frames(&tshark, &input, "mysql.error_code==1146")
        .into_iter()
        .collect();
    assert_eq!(errors.len(), 3149);
    let queries = frames(&tshark, &input, "mysql.query");

    let m = common::json(&["mysql", "--json", s(&input)]);
    let detail = &m["error_details"][0];
    assert_eq!(detail["code"], 1146);
    let examples = detail["examples"].as_array().unwrap();
    assert_eq!(examples.len(), 3, "{detail}");
    let responses: Vec<u64> = examples
        .iter()
        .map(|x| x["response_frame"].as_u64().unwrap())
        .collect();
    assert_eq!(responses, errors[..3]);
    let requests: BTreeSet<u64> = examples
        .iter()
        .map(|x| x["request_frame"].as_u64().unwrap())
        .collect();
    assert!(requests.is_subset(&queries), "{requests:?}");
    for x in examples {
        let sql = x["statement"].as_str().unwrap();
        assert!(sql.starts_with("SELECT c FROM sbtest"), "{sql}");
        assert!(
            x["message"].as_str().unwrap().contains("doesn't exist"),
            "{x}"
        );
    }
    let text = common::text(&["mysql", s(&input)]);
    assert!(
        text.contains(&format!(
            "      first: request frame {}, response frame {}, ",
            examples[0]["request_frame"], responses[0]
        )),
        "{text}"
    );

    let dir = scratch();
    let out = dir.path().join("errors.pcapng");
    run(&[
        "extract",
        s(&input),
        "--findings=errors",
        "--annotate",
        "-o",
        s(&out),
    ]);
    let found = original_frames(&tshark, &input, &out);
    let commented: BTreeSet<u64> = found.iter().map(|(n, _)| *n).collect();
    let expected: BTreeSet<u64> = requests.iter().chain(&responses).copied().collect();
    assert_eq!(commented, expected, "{found:?}");
    for (n, comment) in &found {
        assert!(comment.starts_with("pcapsleuth errors "), "{comment}");
        assert!(comment.contains("ERR 1146 (42S02)"), "{comment}");
        assert!(comment.contains("3,149 ERR 1146"), "{comment}");
        if responses.contains(n) {
            assert!(comment.contains("doesn't exist"), "{comment}");
        }
    }
}

/// path-lost.pcap: the server's last three segments were resent into a dead path (fixtures/README.md),
/// and stream-stall.pcap's server RST followed the client's zero window. An annotated extract of the
/// abnormal connections comments the resends (the first five each way per connection, all of them
/// segments tshark calls retransmissions) and where the zero window began (a segment tshark calls
/// `tcp.analysis.zero_window`), each with its frame in the original capture.
#[test]
fn retransmissions_and_the_start_of_a_stall_are_annotated() {
    let Some(tshark) = oracle::tshark() else {
        return;
    };
    let dir = scratch();
    for name in ["path-lost.pcap", "stream-stall.pcap"] {
        let input = common::fixture(name);
        let out = dir.path().join(format!("{name}.pcapng"));
        run(&[
            "extract",
            s(&input),
            "--abnormal",
            "--annotate",
            "-o",
            s(&out),
        ]);
        let found = original_frames(&tshark, &input, &out);
        let resent = frames(
            &tshark,
            &input,
            "tcp.analysis.retransmission || tcp.analysis.fast_retransmission",
        );
        let resends: Vec<&(u64, String)> = found
            .iter()
            .filter(|(_, c)| c.starts_with("pcapsleuth retransmissions "))
            .collect();
        assert!(!resends.is_empty(), "{name}: {found:?}");
        for (n, comment) in &resends {
            assert!(
                resent.contains(n),
                "{name}: frame {n} is no retransmission: {comment}"
            );
            assert!(
                comment.contains("retransmitted segment from the "),
                "{comment}"
            );
        }
        // At most five each way per connection: the comments say "resend K of N" with K <= 5.
        for (_, comment) in &resends {
            let k: u32 = comment
                .split("resend ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .unwrap()
                .parse()
                .unwrap();
            assert!((1..=5).contains(&k), "{comment}");
        }
        if name == "path-lost.pcap" {
            let n: Vec<u64> = resends.iter().map(|(n, _)| *n).collect();
            assert_eq!(n, [27, 28, 29]);
        } else {
            assert!(
                resends.len() < resent.len(),
                "{name}: every resend commented"
            );
            let zero = frames(&tshark, &input, "tcp.analysis.zero_window");
            let stalls: Vec<&(u64, String)> = found
                .iter()
                .filter(|(_, c)| c.contains("advertises a zero window here"))
                .collect();
            assert!(!stalls.is_empty(), "{name}: {found:?}");
            for (n, comment) in stalls {
                assert!(zero.contains(n), "{name}: frame {n}: {comment}");
            }
        }
    }
}
