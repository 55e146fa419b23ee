//! What the tools write from hostile or unusual inputs: valid captures from a pcapng file of several
//! sections, outputs that are whole or absent (plots, export's staging, split's set of pieces), names
//! that cannot collide, commands that cannot be misread.

use crate::common;
use crate::hostile_text::adversary;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pcapsleuth::capture::{Capture, LinkType};

fn run(args: &[&str]) -> Output {
    Command::new(common::bin()).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every record of a capture as read: link type, timestamp, wire length, captured bytes.
fn records(path: &Path) -> Vec<(LinkType, i64, u32, Vec<u8>)> {
    let cap = Capture::open(path).unwrap();
    let mut reader = cap.reader_all();
    let mut out = Vec::new();
    while let Some(r) = reader.next_record() {
        out.push((r.link, r.ts.0, r.orig_len, r.data.to_vec()));
    }
    assert!(
        reader.damage().is_empty(),
        "{}: {:?}",
        path.display(),
        reader.damage()
    );
    out
}

/// A pcapng file whose second section is big-endian, or has another link type (raw IP after
/// Ethernet): `extract` and `split` write captures whose every packet reads back with its own link type,
/// timestamp and bytes (a copy after the first section's header labelled the second section's packets
/// Ethernet, or put big-endian blocks in a little-endian section).
#[test]
fn a_pcapng_of_several_sections_is_extracted_and_split_into_valid_captures() {
    for name in [
        "extract_multisection_endian.pcapng",
        "extract_multisection_linktype.pcapng",
    ] {
        let Some(input) = adversary(name) else {
            return;
        };
        let original = records(&input);
        assert!(original.len() > 20, "{name}");
        let out = common::scratch("sections", &format!("extract-{name}"));
        let o = run(&["extract", s(&input), "--port", "3306", "-o", s(&out)]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("later pcapng section"),
            "{}",
            stderr(&o)
        );
        assert_eq!(records(&out), original, "{name}: extract");
        let dir = common::scratch("sections", &format!("split-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        let o = run(&["split", s(&input), "--packets", "5", "-o", s(&dir)]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let mut pieces: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        pieces.sort();
        let from_pieces: Vec<_> = pieces.iter().flat_map(|p| records(p)).collect();
        assert_eq!(from_pieces, original, "{name}: split");
        // tshark reads them back as it reads the original: link types, sources, times, lengths.
        let Some(tshark) = pcapsleuth_testkit::oracle::tshark() else {
            return;
        };
        let fields = |path: &Path| {
            tshark.lines([
                "-r",
                s(path),
                "-T",
                "fields",
                "-e",
                "frame.encap_type",
                "-e",
                "ip.src",
                "-e",
                "frame.time_epoch",
                "-e",
                "frame.len",
            ])
        };
        let expected = fields(&input);
        assert_eq!(
            fields(&out),
            expected,
            "{name}: extract, as tshark reads it"
        );
        let split: Vec<String> = pieces.iter().flat_map(|p| fields(p)).collect();
        assert_eq!(split, expected, "{name}: split, as tshark reads it");
    }
}
