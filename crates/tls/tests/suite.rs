//! This package's tests, one test binary: each file of `tests/` a module of it (see
//! `pcapsleuth_testkit::suite` for why). Run one file's tests with `cargo test --test suite NAME::`.

#[test]
fn every_test_file_is_listed_here() {
    pcapsleuth_testkit::suite::assert_lists_every_test_file(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite.rs"),
    );
}

mod properties;
mod rfc8448;
