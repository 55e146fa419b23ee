//! Where TCP cut a stream into segments must not change what pcapsleuth reads from it.

mod common;

use std::path::Path;

use pcapsleuth::analysis::units::duration_us;

/// The fuzz finding's pair (`../shared/fuzz-findings/segmentation/`): one byte stream joined mid-stream,
/// once in one segment and once in two. A 2-byte COM_QUERY whose byte is not text is no place to start
/// decoding, however the stream was cut; both give the COM_PING that follows it and nothing else.
#[test]
fn the_fuzz_findings_segmentation_pair_gives_identical_reports() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fuzz-findings/segmentation");
    let outputs: Vec<(String, serde_json::Value)> = ["one-segment.pcap", "two-segments.pcap"]
        .iter()
        .map(|f| {
            let p = dir.join(f);
            let p = p.to_str().unwrap();
            let text = std::process::Command::new(common::bin())
                .args(["mysql", "--mysql-port", "3306", p])
                .output()
                .unwrap();
            assert!(text.status.success(), "{p}");
            let mut json = common::json(&["mysql", "--mysql-port", "3306", "--json", p]);
            // The capture's span is not the stream's: the second file holds one packet more.
            let span = json.as_object_mut().unwrap().remove("span_s").unwrap();
            let span = duration_us(span.as_f64().unwrap() * 1e6);
            let text = String::from_utf8(text.stdout).unwrap();
            (text.replace(&format!(" in {span}"), ""), json)
        })
        .collect();
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0].1["commands"], serde_json::json!({"COM_PING": 1}));
}
