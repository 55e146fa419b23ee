//! The end-to-end tests of the library and the binary, on real captures: one test binary, each file of
//! `tests/` a module of it (see `pcapsleuth_testkit::suite` for why). Run one file's tests with
//! `cargo test --test e2e golden::`, one test with its full name.

// The helpers every file uses, once (each file says `use crate::common;`).
mod common;

#[test]
fn every_test_file_is_listed_here() {
    pcapsleuth_testkit::suite::assert_lists_every_test_file(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e.rs"),
    );
}

mod causes;
mod cli;
mod closes_depth;
mod compare;
mod compare_endings;
mod connects;
mod damaged_inputs;
mod decode_differential;
mod diff;
mod distributions;
mod export;
mod export_spark;
mod extract;
mod field_truth;
mod formats;
mod fuzz_findings;
mod golden;
mod handoff;
mod hostile_outputs;
mod hostile_text;
mod html;
mod hump_causes;
mod inputs;
mod interrupt;
mod ip_fragments;
mod library;
mod load;
mod mysql_stories;
mod never_harm;
mod path;
mod peers;
mod per_server;
mod phases;
mod pt_query_digest;
mod replication;
mod segmentation;
mod slowlog;
mod split_invariance;
mod timeline;
mod tls;
mod tshark_crosscheck;
