//! The end-to-end tests of the library and the binary, on real captures: one test binary, each file of
//! `tests/` a module of it (see `pcapsleuth_testkit::suite` for why). Run one file's tests with
//! `cargo test --test e2e golden::`, one test with its full name.

#[test]
fn every_test_file_is_listed_here() {
    pcapsleuth_testkit::suite::assert_lists_every_test_file(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e.rs"),
    );
}

#[path = "cli.rs"]
mod cli;
#[path = "compare.rs"]
mod compare;
#[path = "connects.rs"]
mod connects;
#[path = "decode_differential.rs"]
mod decode_differential;
#[path = "distributions.rs"]
mod distributions;
#[path = "export.rs"]
mod export;
#[path = "export_spark.rs"]
mod export_spark;
#[path = "extract.rs"]
mod extract;
#[path = "field_truth.rs"]
mod field_truth;
#[path = "formats.rs"]
mod formats;
#[path = "fuzz_findings.rs"]
mod fuzz_findings;
#[path = "golden.rs"]
mod golden;
#[path = "handoff.rs"]
mod handoff;
#[path = "html.rs"]
mod html;
#[path = "inputs.rs"]
mod inputs;
#[path = "library.rs"]
mod library;
#[path = "mysql_stories.rs"]
mod mysql_stories;
#[path = "never_harm.rs"]
mod never_harm;
#[path = "peers.rs"]
mod peers;
#[path = "pt_query_digest.rs"]
mod pt_query_digest;
#[path = "replication.rs"]
mod replication;
#[path = "segmentation.rs"]
mod segmentation;
#[path = "split_invariance.rs"]
mod split_invariance;
#[path = "timeline.rs"]
mod timeline;
#[path = "tshark_crosscheck.rs"]
mod tshark_crosscheck;
