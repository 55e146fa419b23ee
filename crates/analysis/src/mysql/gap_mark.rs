//! The decoder's mark of bytes missing inside a statement's text.

/// The statement text before the decoder's mark of bytes missing inside it (` /* gap: N bytes */`, at its
/// end), or `None` when the text is whole.
#[inline]
pub(crate) fn cut_text(sql: &str) -> Option<&str> {
    // Nearly every statement is whole and does not end in `/`: one byte tells, before the suffix is
    // compared (this runs once per request).
    if sql.as_bytes().last() != Some(&b'/') {
        return None;
    }
    cut_text_ending_in_slash(sql)
}

/// [`cut_text`] of a statement ending in `/`: out of line, so that the test for the common case inlines.
#[inline(never)]
fn cut_text_ending_in_slash(sql: &str) -> Option<&str> {
    let head = sql.strip_suffix(" bytes */")?;
    let at = head.rfind(" /* gap: ")?;
    let n = head.get(at + " /* gap: ".len()..)?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| &sql[..at])
}
