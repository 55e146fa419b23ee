//! Shared helpers of the end-to-end tests: where the real captures are, and how to run the binary.
//! The tools the tests compare against (tshark, ...) are asked for through `pcapsleuth_testkit::oracle`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The captures (`.pcap`, `.pcapng`) directly in `dir`; none when it is not there.
fn captures_in(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    entries
        .map(|e| e.path())
        .filter(|p| {
            let ext = p.extension().and_then(|s| s.to_str()).unwrap_or("");
            ext == "pcap" || ext == "pcapng"
        })
        .collect()
}

/// The captures recorded for this project (fixtures/) and the external ones others recorded
/// (../shared/external/zeek-mysql, beside the checkout in CI; their absence is a skip said once per test).
pub fn real_captures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = captures_in(&root.join("fixtures"));
    if let Some(zeek) = shared("external/zeek-mysql") {
        out.extend(captures_in(&zeek));
    }
    out.sort();
    assert!(
        out.len() >= 5,
        "expected the fixtures and ../shared/external captures, found {out:?}"
    );
    out
}

/// The peers' captures (`../shared/external/peers/*/`: pcap2mysql-log, packetbeat, DeepFlow, Arkime, nDPI,
/// Peafowl, Percona Toolkit), sorted; none when `../shared` is not beside the repository (a skip, said).
pub fn peer_captures() -> Vec<PathBuf> {
    let Some(root) = shared("external/peers") else {
        return Vec::new();
    };
    let dirs = std::fs::read_dir(root).into_iter().flatten().flatten();
    let mut out: Vec<PathBuf> = dirs.flat_map(|d| captures_in(&d.path())).collect();
    out.sort();
    out
}

/// Whether `../shared` is beside the repository (CI has it; a fresh clone alone does not): tests that
/// count what they check expect less without it, having said what they skipped.
pub fn shared_present() -> bool {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .is_dir()
}

/// `../shared/REL` beside the repository, or `None` with the skip said and recorded (a failure in CI):
/// see [`pcapsleuth_testkit::shared::input`].
#[track_caller]
pub fn shared(rel: &str) -> Option<PathBuf> {
    pcapsleuth_testkit::shared::input(Path::new(env!("CARGO_MANIFEST_DIR")), rel)
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pcapsleuth")
}

/// Runs the binary with `args`, asserts success, and returns its stdout.
fn stdout(args: &[&str]) -> Vec<u8> {
    let o = Command::new(bin()).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// Runs the binary with `args`, asserts success, and parses its stdout as JSON.
pub fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_slice(&stdout(args)).unwrap()
}

/// Runs the binary with `args`, asserts success, and returns its stdout as text.
pub fn text(args: &[&str]) -> String {
    String::from_utf8_lossy(&stdout(args)).into_owned()
}

/// Runs the binary with `args` and `bytes` written to its standard input through a pipe (fed from a
/// thread, as a live `tcpdump -w -` would), and returns what it printed.
pub fn piped(args: &[&str], bytes: Vec<u8>) -> Output {
    use std::io::Write;
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || stdin.write_all(&bytes));
    let o = child.wait_with_output().unwrap();
    feeder.join().unwrap().unwrap();
    o
}

/// The files of fixtures/rotated (a set `tcpdump -C 1` wrote; fixtures/README.md), in their order.
pub fn rotated_set() -> Vec<PathBuf> {
    [
        "rotated.pcap",
        "rotated.pcap1",
        "rotated.pcap2",
        "rotated.pcap3",
    ]
    .iter()
    .map(|n| fixture("rotated").join(n))
    .collect()
}

/// The pcap files of a set concatenated by hand: the first header, then every file's records.
pub fn concatenated(files: &[PathBuf]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let bytes = std::fs::read(f).unwrap();
        out.extend_from_slice(if i == 0 { &bytes } else { &bytes[24..] });
    }
    out
}

/// A path for a test's scratch file `name`, in a directory of this test process under the target
/// directory (`target/tmp/e2e-PID/AREA/`), never in the system's temporary directory, which a run would
/// fill (~100 MB a run). The first call of a process removes the directories of earlier processes that
/// are gone, so they do not pile up either.
pub fn scratch(area: &str, name: &str) -> PathBuf {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
    SWEPT.call_once(|| {
        for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("e2e-")) else {
                continue;
            };
            let gone = !Path::new("/proc").join(pid).exists();
            if gone && pid != std::process::id().to_string() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    });
    let dir = root.join(format!("e2e-{}", std::process::id())).join(area);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Text with its line breaks and runs of spaces made single spaces: a report's sentences as they read,
/// wherever the text width wrapped them.
pub fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs `check` on every item, on as many threads as the machine has cores. The tests that walk every
/// real capture with an outside tool (tshark dissects each capture in full) are the suite's longest; run
/// one capture after another, each would keep one core busy for minutes after the harness's other tests
/// were done. A panic fails the test once every item was checked, with the first panic's message (the
/// others are printed as they happen).
pub fn each_in_parallel<T: Send>(items: Vec<T>, check: impl Fn(T) + Sync) {
    let queue = std::sync::Mutex::new(items.into_iter());
    let next = || queue.lock().unwrap_or_else(|e| e.into_inner()).next();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    while let Some(item) = next() {
                        check(item);
                    }
                })
            })
            .collect();
        let mut first_panic = None;
        for w in workers {
            if let Err(p) = w.join() {
                first_panic.get_or_insert(p);
            }
        }
        if let Some(p) = first_panic {
            std::panic::resume_unwind(p);
        }
    });
}

/// tshark's dissection of a real capture, one pass shared by the tests that compare every real capture
/// with it (tshark_crosscheck's TCP facts, connects' handshakes, mysql_stories' MySQL counts): one pass
/// where each would make its own, as tshark's dissection is most of these tests' time. The pass prints [`TsharkPass::FIELDS`] for every frame, port 6033
/// and 3307 decoded as MySQL (the proxy and replica captures), then the TCP conversation table
/// (`-z conv,tcp`). A test selects its frames from the rows as its display filter did.
pub struct TsharkPass {
    lines: Vec<String>,
    /// The rows of the TCP conversation table: one per conversation.
    pub tcp_conversations: usize,
}

impl TsharkPass {
    /// The fields of a row, in order; [`TsharkPass::col`] finds one. A field with several values (a
    /// frame with two TCP headers, several MySQL packets) lists them comma-separated.
    pub const FIELDS: [&'static str; 22] = [
        "frame.number",
        "frame.time_epoch",
        "frame.protocols",
        "ip.src",
        "ipv6.src",
        "tcp.srcport",
        "ip.dst",
        "ipv6.dst",
        "tcp.dstport",
        "tcp.flags",
        "tcp.flags.syn",
        "tcp.flags.fin",
        "tcp.flags.reset",
        "tcp.seq",
        "tcp.seq_raw",
        "tcp.ack_raw",
        "tcp.len",
        "tcp.analysis.retransmission",
        "tcp.analysis.out_of_order",
        "tcp.analysis.zero_window",
        "mysql.command",
        "mysql.error_code",
    ];

    /// The column of `field` in a row (a panic names a field the pass does not print).
    pub fn col(field: &str) -> usize {
        Self::FIELDS
            .iter()
            .position(|f| *f == field)
            .unwrap_or_else(|| panic!("the shared tshark pass does not print {field}"))
    }

    /// Every frame's row, in capture order.
    pub fn rows(&self) -> impl Iterator<Item = Vec<&str>> {
        self.lines.iter().map(|l| l.split('\t').collect())
    }

    fn of(tshark: &pcapsleuth_testkit::oracle::Tshark, path: &Path) -> TsharkPass {
        let mut args = vec![
            "-r",
            path.to_str().unwrap(),
            "-d",
            "tcp.port==6033,mysql",
            "-d",
            "tcp.port==3307,mysql",
            "-T",
            "fields",
        ];
        for f in Self::FIELDS {
            args.extend(["-e", f]);
        }
        args.extend(["-z", "conv,tcp"]);
        let mut pass = TsharkPass {
            lines: Vec::new(),
            tcp_conversations: 0,
        };
        for line in tshark.lines(args) {
            if line.contains("<->") {
                pass.tcp_conversations += 1;
                continue;
            }
            let mut cols = line.split('\t');
            let frame = cols.next().map(str::parse::<u64>);
            // The conversation table's header and rules are not frames.
            if matches!(frame, Some(Ok(_))) && cols.count() + 1 == Self::FIELDS.len() {
                pass.lines.push(line);
            }
        }
        pass
    }
}

/// The shared tshark pass over `path` ([`TsharkPass`]): made by the first test that asks for it (a test
/// asking while it is made waits for it), kept for the test process.
pub fn tshark_pass(
    tshark: &pcapsleuth_testkit::oracle::Tshark,
    path: &Path,
) -> std::sync::Arc<TsharkPass> {
    use std::sync::{Arc, Mutex, OnceLock};
    type Cell = Arc<OnceLock<Arc<TsharkPass>>>;
    static PASSES: Mutex<std::collections::BTreeMap<PathBuf, Cell>> =
        Mutex::new(std::collections::BTreeMap::new());
    let cell = PASSES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(path.to_path_buf())
        .or_default()
        .clone();
    cell.get_or_init(|| Arc::new(TsharkPass::of(tshark, path)))
        .clone()
}
