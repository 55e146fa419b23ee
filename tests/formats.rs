//! The same packets in other file formats give the same reports: nanosecond pcap and pcapng, written by
//! editcap (Wireshark's own converter) from a real capture.

use crate::common;

use pcapsleuth_testkit::oracle::{self, Oracle, Tool};

fn convert(editcap: &Tool, fixture: &str, format: &str) -> std::path::PathBuf {
    let out = common::scratch("formats", &format!("{format}-{fixture}"));
    let src = common::fixture(fixture);
    editcap.stdout(["-F", format, src.to_str().unwrap(), out.to_str().unwrap()]);
    out
}

#[test]
fn nanosecond_pcap_and_pcapng_give_the_same_reports() {
    let Some(editcap) = oracle::require(Oracle::Editcap) else {
        return;
    };
    for fixture in ["stream-stall.pcap", "ipv6.pcap"] {
        let original = common::fixture(fixture);
        for format in ["nsecpcap", "pcapng"] {
            let converted = convert(&editcap, fixture, format);
            for command in [
                &["first-reset", "--json"][..],
                &["mysql", "--json"][..],
                &["report", "--json"][..],
            ] {
                let run = |p: &std::path::Path| {
                    let mut args = command.to_vec();
                    args.push(p.to_str().unwrap());
                    common::json(&args)
                };
                // Findings name their file in `extract_command`: the same command, on the other file.
                let converted_report = run(&converted)
                    .to_string()
                    .replace(converted.to_str().unwrap(), original.to_str().unwrap());
                let converted_report: serde_json::Value =
                    serde_json::from_str(&converted_report).unwrap();
                assert_eq!(
                    run(&original),
                    converted_report,
                    "{fixture} as {format}: {command:?}"
                );
            }
            let flows = |p: &std::path::Path| {
                common::json(&["flows", "--json", p.to_str().unwrap()])["connections"].clone()
            };
            assert_eq!(
                flows(&original),
                flows(&converted),
                "{fixture} as {format}: flows"
            );
        }
    }
}
