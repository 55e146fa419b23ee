//! Reads arbitrary bytes as the parameters of a run of a prepared statement (`COM_STMT_EXECUTE`) and
//! puts them into an arbitrary statement: nothing panics or loops; a run read has as many values as
//! the statement has parameters; its text exists exactly when the statement has as many `?` markers
//! (outside literals and comments), and then holds the statement's text between them.
//!
//! Input: byte 0: bits 0-1 the query attributes (off, on, unknown), bit 2 the bytes are whole; byte 1:
//! the parameter count; byte 2: the statement's length `n`; then `n` bytes of statement (lossy UTF-8);
//! the rest is the execute's bytes after its statement id. They are read twice: the second time with
//! the types the first bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pcapsleuth_mysql::prepared::{placeholders, Execute, QueryAttributes};
use pcapsleuth_mysql::ExecuteBytes;

fuzz_target!(|data: &[u8]| {
    let (Some(&mode), Some(&count), Some(&n)) = (data.first(), data.get(1), data.get(2)) else {
        return;
    };
    let attributes = match mode & 3 {
        0 => QueryAttributes::Off,
        1 => QueryAttributes::On,
        _ => QueryAttributes::Unknown,
    };
    let rest = &data[3..];
    let n = usize::from(n).min(rest.len());
    let statement = String::from_utf8_lossy(&rest[..n]);
    let bytes = ExecuteBytes::new(&rest[n..], mode & 4 != 0);
    let mut types = Vec::new();
    for _ in 0..2 {
        let before = types.clone();
        match Execute::read(&bytes, u16::from(count), attributes, &mut types) {
            Ok(run) => {
                assert_eq!(run.values().len(), usize::from(count));
                let markers = placeholders(&statement).count();
                let text = run.substitute(&statement);
                if markers != usize::from(count) {
                    assert!(text.is_none());
                }
                if let Some(text) = text {
                    // The text between the markers is kept, in order.
                    let mut at = 0;
                    let mut from = 0;
                    for m in placeholders(&statement) {
                        let piece = &statement[from..m];
                        let found = text[at..].find(piece).expect("a piece of the statement");
                        at += found + piece.len();
                        from = m + 1;
                    }
                    assert!(text.ends_with(&statement[from..]));
                }
            }
            Err(_) => assert_eq!(types, before, "a failed read leaves the types"),
        }
    }
});
