//! Statement fingerprints in the style of pt-query-digest: statements that
//! differ only in literal values, case, runs of whitespace or comments share a fingerprint.
//! As in pt-query-digest, whether there is a space matters: `id=1` and `id = 1` are two groups.
//!
//! Fingerprinting runs once per request, so it is on the hot path of `pcapsleuth mysql`. It is a
//! single pass over the bytes that writes the output as it goes, with no token list:
//!
//! * Most of a statement is words, single spaces and punctuation that come out unchanged apart
//!   from lowercasing. [`plain_run`] finds such a stretch with one table lookup per byte, and
//!   it is copied in one go.
//! * Everything else goes token by token through [`next_token`]: literals become `?`, whitespace
//!   and comments collapse to one space, non-ASCII words are lowercased with Unicode rules.
//! * After `IN`, `VALUES` or `VALUE`, [`literal_list_end`] looks ahead for a list of literal rows;
//!   if there is one it is printed as ` (?)` and skipped. Lookahead stops at the first token that
//!   does not fit a list, and no word fits, so it never reaches the next keyword: each byte is
//!   scanned a bounded number of times.
//!
//! The fast paths ([`plain_run`], [`list_token`], [`simple_row_end`], [`find_either`]) exist
//! because the work is dominated by data-dependent branches: a loop per byte class, or a check per
//! call site, predicts far better than one dispatch over every kind of token. Each fast path only
//! takes input whose result it can state exactly and leaves everything else to the general code.
//!
//! ASCII is classified through tables; other characters are decoded and classified with the
//! `char` methods the definition is stated in (`is_whitespace`, `is_alphanumeric`). Scanning bytes finds the same token boundaries
//! as scanning characters would: every delimiter looked for (quotes, backslash, backquote, `*/`,
//! newline) is ASCII, and the bytes of a multi-byte character are all >= 0x80, so they never match
//! one. The scan only stops inside a character in a quoted string (a backslash skips one byte),
//! and a string only ends at an ASCII quote, so tokens always start at character boundaries.

/// What a byte starts, for ASCII bytes. (`char::is_whitespace` and `char::is_alphanumeric` agree
/// with this on ASCII; a unit test checks it.)
const OTHER: u8 = 0;
/// A letter, `_` or `$`: starts a word. Words continue with letters, digits, `_` and `$`.
const WORD: u8 = 1;
/// A digit: starts a number, and continues a word.
const DIGIT: u8 = 2;
/// Tab, line feed, vertical tab, form feed, carriage return, space.
const SPACE: u8 = 3;
/// `'` or `"`.
const QUOTE: u8 = 4;
const BACKQUOTE: u8 = 5;
/// `/`: a comment if followed by `*`.
const SLASH: u8 = 6;
/// `-`: a comment if followed by `-`.
const DASH: u8 = 7;
const HASH: u8 = 8;
/// `.`: a number if followed by a digit.
const DOT: u8 = 9;
const QUESTION: u8 = 10;
/// A byte >= 0x80, starting a multi-byte character.
const NON_ASCII: u8 = 11;

const CLASS: [u8; 256] = {
    let mut t = [OTHER; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = match b {
            0x80..=0xFF => NON_ASCII,
            b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ' => SPACE,
            b'0'..=b'9' => DIGIT,
            b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'$' => WORD,
            b'\'' | b'"' => QUOTE,
            b'`' => BACKQUOTE,
            b'/' => SLASH,
            b'-' => DASH,
            b'#' => HASH,
            b'.' => DOT,
            b'?' => QUESTION,
            _ => OTHER,
        };
        i += 1;
    }
    t
};

fn class(b: u8) -> u8 {
    CLASS[usize::from(b)]
}

/// An ASCII letter, digit, `_` or `$`.
fn is_word_byte(b: u8) -> bool {
    matches!(class(b), WORD | DIGIT)
}

/// For [`plain_run`]: what the previous byte of a run was (a bit position in [`RUN`] masks).
const AFTER_SPACE: u8 = 0; // or the start of the run
const AFTER_WORD: u8 = 1;
const AFTER_PUNCT: u8 = 2;

/// In [`RUN`]: starts a word that may be `IN`, `VALUES` or `VALUE`.
const MAYBE_KEYWORD: u8 = 1 << 3;

/// End of the run of ASCII word bytes starting at `i`.
fn ascii_word_end(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(|&b| is_word_byte(b)) {
        i += 1;
    }
    i
}

/// For each byte: in bits 0..3, after which kinds of byte ([`AFTER_SPACE`], ...) it may continue a
/// plain run; in bits 4..6, what it is for the byte after it. A plain run is text the token loop
/// would copy unchanged except for ASCII lowercasing:
/// * letters, `_`, `$`, and digits inside a word (a digit starting a token is a number); but the
///   token loop must see `IN`/`VALUES`/`VALUE`, so a word starting with `i` or `v`
///   ([`MAYBE_KEYWORD`]) only starts in a run once it is known not to be one of them;
/// * ASCII punctuation that never starts anything special: not quotes, backquote, `?`, `.`
///   (`.5`), or `/`, `-`, `#` (comments); `(`, `,` and `)` are fine, as a run is never inside a
///   literal list (list keywords end runs);
/// * a single space (` ` only) after a word or punctuation; a run never ends with one.
const RUN: [u8; 256] = {
    const ANY: u8 = (1 << AFTER_SPACE) | (1 << AFTER_WORD) | (1 << AFTER_PUNCT);
    const IN_WORD: u8 = 1 << AFTER_WORD;
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 128 {
        let b = i as u8;
        t[i] = match b {
            b'i' | b'I' | b'v' | b'V' => IN_WORD | MAYBE_KEYWORD | (AFTER_WORD << 4),
            b'0'..=b'9' => IN_WORD | (AFTER_WORD << 4),
            b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'$' => ANY | (AFTER_WORD << 4),
            b' ' => (1 << AFTER_WORD) | (1 << AFTER_PUNCT) | (AFTER_SPACE << 4),
            _ if CLASS[i] == OTHER => ANY | (AFTER_PUNCT << 4),
            _ => 0,
        };
        i += 1;
    }
    t
};

/// Where a plain run (see [`RUN`]) ends, and why.
#[derive(Clone, Copy)]
struct Run {
    /// End of the run: what is copied (lowercased) to the output.
    end: usize,
    /// Where the scan stopped: the first byte that does not continue the run, or the length.
    stop: usize,
    /// What the byte before `stop` was ([`AFTER_SPACE`], ...).
    after: u8,
    /// The run ended in a word that runs into a quote or a non-ASCII character: that word was left
    /// to the token loop.
    backed_off: bool,
}

/// `Some(what it is for the next byte)` if the byte at `j` continues a plain run whose previous
/// byte was `after`.
#[inline(always)]
fn continues_run(bytes: &[u8], j: usize, after: u8) -> Option<u8> {
    let e = RUN[usize::from(*bytes.get(j)?)];
    // Where a word starts, one starting with `i` or `v` is plain unless it is a list keyword.
    let plain = (e >> after) & 1 != 0
        || (e & MAYBE_KEYWORD != 0 && list_keyword(&bytes[j..ascii_word_end(bytes, j)]).is_none());
    plain.then_some(e >> 4)
}

/// Whether a run that stopped at `stop` after `after` leaves its last word to the token loop: a
/// word running into a quote may be a literal prefix (`x'..'`, `_utf8mb4'..'`), and one running
/// into a non-ASCII character may go on (if it is alphanumeric).
fn backs_off(bytes: &[u8], stop: usize, after: u8) -> bool {
    after == AFTER_WORD && matches!(bytes.get(stop).map(|&b| class(b)), Some(QUOTE | NON_ASCII))
}

/// The plain run (see [`RUN`]) starting at `i`, which is 0 or directly follows a token
/// (`after_token`). Its end may be `i`.
fn plain_run(bytes: &[u8], i: usize, after_token: bool) -> Run {
    let mut j = i;
    // After a token, a space is a separator (if a token follows), and the next byte does not
    // continue that token (tokens are scanned to their end): like after punctuation.
    let mut after = if after_token {
        AFTER_PUNCT
    } else {
        AFTER_SPACE
    };
    while let Some(next) = continues_run(bytes, j, after) {
        after = next;
        j += 1;
    }
    let stop = j;
    let backed_off = backs_off(bytes, stop, after);
    if backed_off {
        while j > i && is_word_byte(bytes[j - 1]) {
            j -= 1;
        }
    }
    // A space is only plain between two tokens: whatever follows may be more whitespace or a
    // comment, so leave it to the token loop.
    if j > i && bytes[j - 1] == b' ' {
        j -= 1;
    }
    Run {
        end: j,
        stop,
        after,
        backed_off,
    }
}

/// What a token is, as far as printing and list folding are concerned.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Identifier or keyword (lowercased when printed; backquoted names keep their quotes), and
    /// whether it is all ASCII.
    Word {
        ascii: bool,
    },
    /// A number, quoted string, prefixed literal (`x'..'`, `_utf8mb4'..'`) or `?`: printed as `?`.
    Lit,
    Open,
    Comma,
    Close,
    /// Any other character, printed as is.
    Other,
}

#[derive(Clone, Copy)]
struct Token {
    kind: Kind,
    /// Byte range in the statement.
    start: usize,
    end: usize,
    /// Whitespace or a comment preceded it.
    spaced: bool,
}

/// The first token at or after `i`, skipping whitespace and comments; `None` at the end.
#[inline(always)]
fn next_token(sql: &str, mut i: usize) -> Option<Token> {
    let bytes = sql.as_bytes();
    let mut spaced = false;
    loop {
        let &b = bytes.get(i)?;
        let class = class(b);
        // Spaces and words are most of SQL: tested before the general `match`.
        let (kind, end) = if class == SPACE {
            spaced = true;
            i += 1;
            continue;
        } else if class == WORD {
            word(sql, i)
        } else {
            let next = bytes.get(i + 1).copied();
            match class {
                // Comments only separate tokens; unterminated ones run to the end.
                SLASH if next == Some(b'*') => {
                    spaced = true;
                    i = block_comment_end(bytes, i + 2);
                    continue;
                }
                DASH if next == Some(b'-') => {
                    spaced = true;
                    i = line_end(bytes, i);
                    continue;
                }
                HASH => {
                    spaced = true;
                    i = line_end(bytes, i);
                    continue;
                }
                QUOTE => (Kind::Lit, string_end(bytes, i)),
                BACKQUOTE => {
                    let end = backquote_end(bytes, i);
                    let ascii = bytes[i..end].is_ascii();
                    (Kind::Word { ascii }, end)
                }
                DIGIT => (Kind::Lit, word_end(sql, i, true).0),
                DOT if next.is_some_and(|d| d.is_ascii_digit()) => {
                    (Kind::Lit, word_end(sql, i, true).0)
                }
                QUESTION => (Kind::Lit, i + 1),
                NON_ASCII => {
                    let c = char_at(sql, i)?;
                    if c.is_whitespace() {
                        // Unicode whitespace (U+00A0, U+3000, ...) separates like a space.
                        spaced = true;
                        i += c.len_utf8();
                        continue;
                    }
                    if c.is_alphanumeric() {
                        word(sql, i)
                    } else {
                        (Kind::Other, i + c.len_utf8())
                    }
                }
                _ => {
                    let kind = match b {
                        b'(' => Kind::Open,
                        b',' => Kind::Comma,
                        b')' => Kind::Close,
                        _ => Kind::Other,
                    };
                    (kind, i + 1)
                }
            }
        };
        return Some(Token {
            kind,
            start: i,
            end,
            spaced,
        });
    }
}

fn char_at(sql: &str, i: usize) -> Option<char> {
    sql.get(i..)?.chars().next()
}

/// End of the word starting at `i`, and whether it is all ASCII. A number (`number`) also takes
/// `.` and a sign right after `e`/`E` (`1.5e-3`); its first byte is a digit or `.`, so a sign is
/// never first.
#[inline(always)]
fn word_end(sql: &str, mut i: usize, number: bool) -> (usize, bool) {
    let bytes = sql.as_bytes();
    let mut ascii = true;
    loop {
        // The common case first, as a tight loop: a run of ASCII word characters.
        i = ascii_word_end(bytes, i);
        let Some(&b) = bytes.get(i) else { break };
        if b >= 0x80 {
            match char_at(sql, i) {
                Some(c) if c.is_alphanumeric() => {
                    ascii = false;
                    i += c.len_utf8();
                }
                _ => break,
            }
        } else if number
            && (b == b'.'
                || (matches!(b, b'+' | b'-')
                    && i > 0
                    && matches!(bytes.get(i - 1), Some(b'e' | b'E'))))
        {
            i += 1;
        } else {
            break;
        }
    }
    (i, ascii)
}

/// The word starting at `start`, or, when it is a literal prefix immediately followed by a quote
/// (`x'..'`, `b'..'`, `n'..'`, `_utf8mb4'..'`), the whole prefixed literal.
fn word(sql: &str, start: usize) -> (Kind, usize) {
    let bytes = sql.as_bytes();
    let (end, ascii) = word_end(sql, start, false);
    let prefix = matches!(
        &bytes[start..end],
        [b'x' | b'X' | b'b' | b'B' | b'n' | b'N'] | [b'_', ..]
    );
    if prefix && matches!(bytes.get(end), Some(b'\'' | b'"')) {
        (Kind::Lit, string_end(bytes, end))
    } else {
        (Kind::Word { ascii }, end)
    }
}

/// Position after the quoted string opening at `open` (with `'` or `"`): a backslash escapes the
/// next byte, a doubled quote stands for itself. An unterminated string runs to the end.
fn string_end(bytes: &[u8], open: usize) -> usize {
    let quote = bytes[open];
    let mut i = open + 1;
    loop {
        i = find_either(bytes, i, quote, b'\\');
        match bytes.get(i) {
            None => return bytes.len(),
            Some(b'\\') => i += 2,
            Some(_) if bytes.get(i + 1) == Some(&quote) => i += 2,
            Some(_) => return i + 1,
        }
    }
}

/// Position of the first `a` or `b` at or after `i`, or the end. Long strings are common (row
/// values), so this is `memchr`'s vectorised search.
fn find_either(bytes: &[u8], i: usize, a: u8, b: u8) -> usize {
    let rest = bytes.get(i..).unwrap_or(&[]);
    memchr::memchr2(a, b, rest).map_or(bytes.len(), |k| i + k)
}

/// Position after the backquote closing the name opened at `open` (no escapes), or the end.
fn backquote_end(bytes: &[u8], open: usize) -> usize {
    bytes[open + 1..]
        .iter()
        .position(|&b| b == b'`')
        .map_or(bytes.len(), |k| open + 1 + k + 1)
}

/// Position after the `*/` closing a comment whose body starts at `i`, or the end.
fn block_comment_end(bytes: &[u8], mut i: usize) -> usize {
    while let Some(&b) = bytes.get(i) {
        if b == b'*' && bytes.get(i + 1) == Some(&b'/') {
            return i + 2;
        }
        i += 1;
    }
    bytes.len()
}

/// Position of the newline ending a line comment at `i` (the newline itself is whitespace), or the end.
fn line_end(bytes: &[u8], i: usize) -> usize {
    bytes[i..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |k| i + k)
}

/// `Some(is_in)` for the keywords after which a literal list is folded: `IN`, `VALUES`, `VALUE`.
fn list_keyword(w: &[u8]) -> Option<bool> {
    match w.len() {
        2 if w.eq_ignore_ascii_case(b"in") => Some(true),
        5 if w.eq_ignore_ascii_case(b"value") => Some(false),
        6 if w.eq_ignore_ascii_case(b"values") => Some(false),
        _ => None,
    }
}

/// End of the literal list after a list keyword ending at `i`: one row `( ? [, ?]* )` after `IN`,
/// rows separated by `,` after `VALUES`/`VALUE`. `None` if no row of literals follows.
fn literal_list_end(sql: &str, i: usize, is_in: bool) -> Option<usize> {
    let mut end = literal_row_end(sql, i)?;
    if !is_in {
        while let Some(comma) = list_token(sql, end).filter(|t| t.kind == Kind::Comma) {
            match literal_row_end(sql, comma.end) {
                Some(e) => end = e,
                None => break,
            }
        }
    }
    Some(end)
}

/// [`next_token`], with a shortcut for what lists of literals are mostly made of: numbers,
/// single-quoted strings, `,`, `)` and `(`, after plain spaces.
#[inline(always)]
fn list_token(sql: &str, i: usize) -> Option<Token> {
    let bytes = sql.as_bytes();
    let mut j = i;
    while bytes.get(j) == Some(&b' ') {
        j += 1;
    }
    let b = *bytes.get(j)?;
    let (kind, end) = if b.is_ascii_digit() {
        (Kind::Lit, word_end(sql, j, true).0)
    } else if b == b',' {
        (Kind::Comma, j + 1)
    } else if b == b')' {
        (Kind::Close, j + 1)
    } else if b == b'\'' {
        (Kind::Lit, string_end(bytes, j))
    } else if b == b'(' {
        (Kind::Open, j + 1)
    } else {
        return next_token(sql, i);
    };
    Some(Token {
        kind,
        start: j,
        end,
        spaced: j > i,
    })
}

/// Fast path for the commonest rows, `(1, 'abc', 22)`, from just after the `(`: integers and
/// single-quoted strings separated by commas, plain spaces around them, then `)`. `None` if the
/// row holds anything else: the general path then decides.
fn simple_row_end(bytes: &[u8], mut i: usize) -> Option<usize> {
    // After `(` or `,`: a literal must come next.
    let mut want_literal = true;
    // The previous byte was a digit: another one continues the integer.
    let mut in_number = false;
    loop {
        let b = *bytes.get(i)?;
        if b.is_ascii_digit() && (want_literal || in_number) {
            want_literal = false;
            in_number = true;
            i += 1;
        } else if b == b'\'' && want_literal {
            want_literal = false;
            i = string_end(bytes, i);
        } else if b == b' ' {
            in_number = false;
            i += 1;
        } else if b == b',' && !want_literal {
            want_literal = true;
            in_number = false;
            i += 1;
        } else if b == b')' && !want_literal {
            return Some(i + 1);
        } else {
            return None;
        }
    }
}

/// End of a row `( ? [, ?]* )` (of literals, whatever spacing or comments) starting at `i`.
fn literal_row_end(sql: &str, i: usize) -> Option<usize> {
    let open = list_token(sql, i).filter(|t| t.kind == Kind::Open)?;
    if let Some(end) = simple_row_end(sql.as_bytes(), open.end) {
        return Some(end);
    }
    let mut i = open.end;
    loop {
        let lit = list_token(sql, i).filter(|t| t.kind == Kind::Lit)?;
        let sep = list_token(sql, lit.end)?;
        match sep.kind {
            Kind::Comma => i = sep.end,
            Kind::Close => return Some(sep.end),
            _ => return None,
        }
    }
}

/// Fingerprint of a statement, pt-query-digest style: lowercased, whitespace
/// collapsed, comments stripped, literals (numbers, quoted strings, hex and bit
/// literals) replaced by `?`, and `IN (...)` lists and multi-row `VALUES` lists
/// of literals folded to a single `(?)`.
///
/// ```
/// use pcapsleuth_mysql::fingerprint;
/// assert_eq!(
///     fingerprint("INSERT INTO t (a, b) VALUES (1, 'x'), (2, \"y\") -- load"),
///     "insert into t (a, b) values (?)"
/// );
/// assert_eq!(fingerprint("select  *\nfrom `T` where x = 0x1F /* hint */ and y in(1,2)"),
///            "select * from `t` where x = ? and y in (?)");
/// ```
pub fn fingerprint(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len().min(4096));
    fingerprint_into(sql, &mut out);
    out
}

/// Writes the fingerprint of `sql` into `out` (cleared first). Same result as [`fingerprint`].
///
/// Lets a caller reuse one buffer and allocate only for fingerprints it has not seen yet.
///
/// ```
/// let mut fp = String::new();
/// pcapsleuth_mysql::fingerprint_into("SELECT c FROM sbtest1 WHERE id=50123", &mut fp);
/// assert_eq!(fp, "select c from sbtest1 where id=?");
/// ```
pub fn fingerprint_into(sql: &str, out: &mut String) {
    out.clear();
    let run = first_run(sql, out);
    fingerprint_rest(sql, run.end, out, false);
}

/// Prints the plain run that starts `sql` into `out`, and says where and how it ended.
fn first_run(sql: &str, out: &mut String) -> Run {
    let run = plain_run(sql.as_bytes(), 0, false);
    push_ascii_lowercase(out, sql.get(..run.end).unwrap_or(""));
    run
}

/// Goes on with a fingerprint from `i`, the end of a plain run, `out` holding the output so far,
/// after the output of a remembered head that is not in `out` if `after_head` (the head's output
/// is then not empty).
fn fingerprint_rest(sql: &str, mut i: usize, out: &mut String, after_head: bool) {
    let bytes = sql.as_bytes();
    loop {
        // Integers are the commonest literal: one right here, that ends where no number goes on,
        // is printed without the general tokenizer (which would find the same token).
        if let Some(end) = integer_end(bytes, i) {
            out.push('?');
            i = end;
        } else {
            let Some(t) = next_token(sql, i) else {
                break;
            };
            i = t.end;
            // Every token prints something, so an empty output means this is the first token.
            if t.spaced && (after_head || !out.is_empty()) {
                out.push(' ');
            }
            match t.kind {
                Kind::Lit => out.push('?'),
                Kind::Word { ascii: true } => {
                    let word = bytes.get(t.start..t.end).unwrap_or(&[]);
                    // Usually short: byte by byte beats a call to `memcpy`.
                    out.extend(word.iter().map(|&b| char::from(b.to_ascii_lowercase())));
                    if let Some(is_in) = list_keyword(word) {
                        if let Some(end) = literal_list_end(sql, i, is_in) {
                            out.push_str(" (?)");
                            i = end;
                        }
                    }
                }
                // Whole-word Unicode lowercasing: the final-sigma rule looks at the neighbouring
                // letters. (Never a list keyword: those are ASCII.)
                Kind::Word { ascii: false } => {
                    out.push_str(&sql.get(t.start..t.end).unwrap_or("").to_lowercase());
                }
                Kind::Open | Kind::Comma | Kind::Close | Kind::Other => {
                    out.push_str(sql.get(t.start..t.end).unwrap_or(""));
                }
            }
        }
        // A token was printed, so the run follows a token.
        let run_end = plain_run(bytes, i, true).end;
        if run_end > i {
            push_ascii_lowercase(out, sql.get(i..run_end).unwrap_or(""));
            i = run_end;
        }
    }
}

/// End of the integer starting at `i` (ASCII digits), if one does and the byte after it cannot
/// continue a number token (a letter, digit, `_`, `$`, `.` or a non-ASCII character could); else
/// `None`, for [`next_token`] to decide.
#[inline(always)]
fn integer_end(bytes: &[u8], i: usize) -> Option<usize> {
    if !bytes.get(i)?.is_ascii_digit() {
        return None;
    }
    let mut j = i + 1;
    while bytes.get(j).is_some_and(u8::is_ascii_digit) {
        j += 1;
    }
    match bytes.get(j) {
        None => Some(j),
        Some(&b) if class(b) == NON_ASCII || b == b'.' || is_word_byte(b) => None,
        Some(_) => Some(j),
    }
}

/// Fingerprints many statements, remembering the literal-free heads it has seen.
///
/// Statements of one kind repeat their text up to the first literal (`SELECT c FROM sbtest1 WHERE
/// id=`), and scanning that head is most of the work of [`fingerprint_into`]. A `Fingerprinter`
/// keeps up to [`Fingerprinter::HEADS`] such heads. When a statement starts with one and its next
/// byte ends the head's plain run in the same way, the run's output is copied instead of scanned:
/// the fingerprint is exactly [`fingerprint`]'s (a differential test checks it), only cheaper.
///
/// ```
/// let mut fp = pcapsleuth_mysql::Fingerprinter::default();
/// assert_eq!(fp.fingerprint("SELECT c FROM sbtest1 WHERE id=50123"), "select c from sbtest1 where id=?");
/// // The head is remembered: only `7 LIMIT 1` is scanned.
/// assert_eq!(fp.fingerprint("SELECT c FROM sbtest1 WHERE id=7 LIMIT 1"), "select c from sbtest1 where id=? limit ?");
/// ```
#[derive(Debug, Default, Clone)]
pub struct Fingerprinter {
    out: String,
    /// Heads by the hash of their first [`Fingerprinter::SHORTEST_HEAD`] bytes ([`slot`]): a
    /// statement finds the heads it may start with in one probe.
    slots: Vec<Vec<Head>>,
    heads: usize,
}

/// The first plain run of a statement, as [`Fingerprinter`] remembers it.
#[derive(Debug, Clone)]
struct Head {
    /// The statement's bytes before the byte the run stopped at ([`Run::stop`]).
    prefix: Box<[u8]>,
    /// [`Run::after`] and [`Run::backed_off`] at the stop.
    after: u8,
    backed_off: bool,
    /// The run's output: the statement up to [`Run::end`], lowercased.
    output: Box<str>,
    /// Its number, in the order heads were remembered ([`Fingerprinter::fingerprint_parts`]).
    id: u16,
}

impl Head {
    /// Whether the plain run of `sql` ends exactly as this head's: `sql` starts with its bytes,
    /// and the next byte stops the run and backs off as the head's did.
    #[inline(always)]
    fn fits(&self, sql: &[u8]) -> bool {
        let stop = self.prefix.len();
        sql.starts_with(&self.prefix)
            && continues_run(sql, stop, self.after).is_none()
            && backs_off(sql, stop, self.after) == self.backed_off
    }
}

/// The first of `heads` that `sql` fits ([`Head::fits`]), and its index. (A loop of its own:
/// through `Iterator::find`, the search was a call.)
#[inline(always)]
fn fitting<'a>(heads: &'a [Head], sql: &[u8]) -> Option<(usize, &'a Head)> {
    for (k, h) in heads.iter().enumerate() {
        if h.fits(sql) {
            return Some((k, h));
        }
    }
    None
}

/// Which of [`Fingerprinter::SLOTS`] slots the heads starting with `bytes`' first
/// [`Fingerprinter::SHORTEST_HEAD`] bytes go to; `None` if it is shorter.
#[inline(always)]
fn slot(bytes: &[u8]) -> Option<usize> {
    let key = bytes.get(..Fingerprinter::SHORTEST_HEAD)?;
    let mut h = 0u64;
    for c in key.chunks_exact(8) {
        let mut w = [0; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(26) ^ u64::from_le_bytes(w)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    Some((h >> (64 - Fingerprinter::SLOTS.trailing_zeros())) as usize)
}

impl Fingerprinter {
    /// At most this many heads are remembered (the first seen), so memory stays bounded: heads are
    /// at most [`Fingerprinter::LONGEST_HEAD`] bytes long.
    pub const HEADS: usize = 2048;
    /// At most this many heads share a slot, so a miss costs a bounded search.
    const SLOT_HEADS: usize = 8;
    const SLOTS: usize = 1024;
    /// Heads shorter than this are not remembered: scanning them costs little more than finding
    /// them. It is also the length of the slot key.
    pub const SHORTEST_HEAD: usize = 24;
    /// Heads longer than this are not remembered.
    pub const LONGEST_HEAD: usize = 512;

    /// The fingerprint of `sql`, as [`fingerprint`] gives it.
    pub fn fingerprint(&mut self, sql: &str) -> &str {
        self.fingerprint_in(sql, true);
        &self.out
    }

    /// The fingerprint of `sql`, as [`fingerprint`] gives it, in two parts: the remembered head it
    /// starts with, and the rest. With a head, `Some((id, output))`: the fingerprint is `output`
    /// followed by the rest. Ids are below [`Fingerprinter::HEADS`] and stand for the same head
    /// for the life of this `Fingerprinter` (heads are never forgotten), so two statements with the
    /// same head id have the same fingerprint exactly when their rests are the same: a caller can
    /// group statements by (head id, rest), comparing a few bytes instead of the whole fingerprint,
    /// and this skips copying the head's output. Without one (a statement that starts no
    /// remembered head, or the first of its head), `None`, and the rest is the whole fingerprint.
    ///
    /// ```
    /// let mut fp = pcapsleuth_mysql::Fingerprinter::default();
    /// // The first statement of a head: it is remembered.
    /// assert_eq!(fp.fingerprint_parts("SELECT c FROM sbtest1 WHERE id=50123"), (None, "select c from sbtest1 where id=?"));
    /// assert_eq!(
    ///     fp.fingerprint_parts("SELECT c FROM sbtest1 WHERE id=7 LIMIT 1"),
    ///     (Some((0, "select c from sbtest1 where id=")), "? limit ?")
    /// );
    /// assert_eq!(fp.fingerprint_parts("SELECT 1"), (None, "select ?")); // too short to remember
    /// ```
    #[inline]
    pub fn fingerprint_parts(&mut self, sql: &str) -> (Option<(usize, &str)>, &str) {
        let head = self
            .fingerprint_in(sql, false)
            .and_then(|(slot, k)| self.slots.get(slot)?.get(k))
            .map(|h| (usize::from(h.id), &*h.output));
        (head, &self.out)
    }

    /// Whether two rests given by [`Fingerprinter::fingerprint_parts`] are the same: for those who
    /// find a fingerprint by its head and rest, where a rest is short (often one byte, `?`) and
    /// compared without a call to `bcmp`.
    ///
    /// ```
    /// use pcapsleuth_mysql::Fingerprinter;
    /// assert!(Fingerprinter::same_rest(b"?", b"?"));
    /// assert!(!Fingerprinter::same_rest(b"? limit ?", b"? limit ?, ?"));
    /// ```
    #[inline(always)]
    pub fn same_rest(a: &[u8], b: &[u8]) -> bool {
        a.len() == b.len()
            && if a.len() <= 8 {
                a.iter().zip(b).all(|(x, y)| x == y)
            } else {
                a == b
            }
    }

    /// Writes the fingerprint of `sql` to `self.out`, without the output of the remembered head
    /// it starts with unless `whole`; that head's place (slot, index in it), if there is one.
    #[inline(always)]
    fn fingerprint_in(&mut self, sql: &str, whole: bool) -> Option<(usize, usize)> {
        let bytes = sql.as_bytes();
        let out = &mut self.out;
        out.clear();
        let Some(slot) = slot(bytes) else {
            fingerprint_into(sql, out);
            return None;
        };
        let Some((k, h)) = self.slots.get(slot).and_then(|heads| fitting(heads, bytes)) else {
            self.learn(sql, slot);
            return None;
        };
        if whole {
            out.push_str(&h.output);
        }
        // The run is ASCII, so its output is as long as it is.
        let i = h.output.len();
        // The commonest rest, an integer to the end (`WHERE id=42`), prints `?` as
        // `fingerprint_rest` would.
        if integer_end(bytes, i) == Some(bytes.len()) {
            out.push('?');
        } else {
            fingerprint_rest(sql, i, out, !whole && i > 0);
        }
        Some((slot, k))
    }

    /// Writes the fingerprint of `sql`, which starts no remembered head, to `self.out`, and
    /// remembers its head (whose slot is `slot`) if there is room.
    #[inline(never)]
    fn learn(&mut self, sql: &str, slot: usize) {
        let bytes = sql.as_bytes();
        let out = &mut self.out;
        let run = first_run(sql, out);
        if (Self::SHORTEST_HEAD..=Self::LONGEST_HEAD).contains(&run.stop)
            && self.heads < Self::HEADS
        {
            if self.slots.is_empty() {
                self.slots.resize_with(Self::SLOTS, Vec::new);
            }
            if let Some(heads) = self
                .slots
                .get_mut(slot)
                .filter(|h| h.len() < Self::SLOT_HEADS)
            {
                heads.push(Head {
                    prefix: bytes[..run.stop].into(),
                    after: run.after,
                    backed_off: run.backed_off,
                    output: out.as_str().into(),
                    // Below `HEADS`, which fits.
                    id: self.heads as u16,
                });
                self.heads += 1;
            }
        }
        fingerprint_rest(sql, run.end, out, false);
    }
}

fn push_ascii_lowercase(out: &mut String, s: &str) {
    let start = out.len();
    out.push_str(s);
    out[start..].make_ascii_lowercase();
}

#[cfg(test)]
mod tests {
    use super::{fingerprint, Fingerprinter, CLASS, DIGIT, NON_ASCII, SPACE, WORD};
    use std::collections::HashMap;

    /// A head's output and the rest put together are the fingerprint, whether the head is new,
    /// remembered, has an empty output (its last word ran into a quote), or the rest is an integer
    /// to the end, anything else or nothing; and an id always stands for the same output.
    #[test]
    fn fingerprint_parts_put_together_are_the_fingerprint() {
        let heads = [
            "SELECT c FROM sbtest1 WHERE id=",
            "select DISTINCT c from sbtest12 where k ",
            "abcdefghijklmnopqrstuvwxyz",
            "INSERT INTO orders (a, b, c) VALUES ",
            "SELECT * FROM users WHERE email=",
            "select",
        ];
        let tails = [
            "42",
            "7 LIMIT 1",
            "",
            " 'x'",
            "'q'",
            "  -- c\n 5",
            "é",
            "5.5",
            "12 ",
            "12\n",
            "1e5",
            "7é",
            " IN (1,2)",
            "(1, 'a'), (2, 'b')",
            "_utf8mb4'x'",
            "9x",
            "?",
        ];
        let mut f = Fingerprinter::default();
        let mut outputs: HashMap<usize, String> = HashMap::new();
        let mut with_head = 0;
        for _ in 0..2 {
            for h in heads {
                for t in tails {
                    let s = format!("{h}{t}");
                    let want = fingerprint(&s);
                    let (head, rest) = f.fingerprint_parts(&s);
                    let got = match head {
                        Some((id, output)) => {
                            with_head += 1;
                            let seen = outputs.entry(id).or_insert_with(|| output.to_string());
                            assert_eq!(seen, output, "input: {s:?}");
                            format!("{output}{rest}")
                        }
                        None => rest.to_string(),
                    };
                    assert_eq!(got, want, "input: {s:?}");
                    assert_eq!(f.fingerprint(&s), want, "input: {s:?}");
                }
            }
        }
        assert!(with_head > 100, "{with_head}");
        assert!(outputs.values().any(String::is_empty));
    }

    #[test]
    fn fingerprinter_copies_a_remembered_head_only_where_it_fits() {
        let mut f = Fingerprinter::default();
        assert_eq!(
            f.fingerprint("SELECT c FROM sbtest1 WHERE id=1"),
            "select c from sbtest1 where id=?"
        );
        assert_eq!(f.heads, 1);
        // Mark the remembered output (same length) to see where it is used.
        for head in f.slots.iter_mut().flatten() {
            head.output = head.output.to_uppercase().into();
        }
        assert_eq!(
            f.fingerprint("SELECT c FROM sbtest1 WHERE id=22 AND k=3"),
            "SELECT C FROM SBTEST1 WHERE ID=? and k=?"
        );
        // The next byte continues the run (`idx`), or the head is not all there: scanned afresh.
        assert_eq!(
            f.fingerprint("SELECT c FROM sbtest1 WHERE idx=2"),
            "select c from sbtest1 where idx=?"
        );
        assert_eq!(
            f.fingerprint("SELECT c FROM sbtest1 WHERE i"),
            "select c from sbtest1 where i"
        );
        // A different head in the same slot or not: remembered as well, up to the bounds.
        assert_eq!(
            f.fingerprint("SELECT c FROM sbtest1 WHERE k IN (1, 2)"),
            "select c from sbtest1 where k in (?)"
        );
        assert!(f.heads <= Fingerprinter::HEADS);
    }

    #[test]
    fn ascii_classes_match_char_methods() {
        for b in 0..=255u8 {
            let c = char::from(b);
            let class = CLASS[usize::from(b)];
            assert_eq!(class == NON_ASCII, b >= 0x80, "byte {b:#04x}");
            if b < 0x80 {
                assert_eq!(class == SPACE, c.is_whitespace(), "byte {b:#04x}");
                assert_eq!(class == DIGIT, c.is_ascii_digit(), "byte {b:#04x}");
                let word = c.is_alphanumeric() || c == '_' || c == '$';
                assert_eq!(matches!(class, WORD | DIGIT), word, "byte {b:#04x}");
            }
        }
    }

    #[test]
    fn literals_become_placeholders() {
        assert_eq!(
            fingerprint("SELECT * FROM t WHERE a = 5 AND b = 'x''y' AND c = \"q\\\"r\""),
            "select * from t where a = ? and b = ? and c = ?"
        );
        assert_eq!(
            fingerprint("select 1.5e-3, .5, x'AB', b'01', _utf8mb4'z'"),
            "select ?, ?, ?, ?, ?"
        );
    }

    #[test]
    fn identifiers_with_digits_are_kept() {
        assert_eq!(fingerprint("select c1 from t2"), "select c1 from t2");
    }

    #[test]
    fn comments_and_whitespace_vanish() {
        assert_eq!(
            fingerprint("  select /* a */ 1 # b\n -- c\n from dual  "),
            "select ? from dual"
        );
    }

    #[test]
    fn in_lists_and_values_rows_fold() {
        assert_eq!(
            fingerprint("select * from t where id in (1,2,3)"),
            "select * from t where id in (?)"
        );
        assert_eq!(
            fingerprint("insert into t values(1,2),(3,4),(5,6)"),
            "insert into t values (?)"
        );
        assert_eq!(
            fingerprint("select * from t where id in (select id from u)"),
            "select * from t where id in (select id from u)"
        );
    }

    #[test]
    fn unterminated_constructs_do_not_panic() {
        assert_eq!(fingerprint("select 'abc"), "select ?");
        assert_eq!(fingerprint("select /* x"), "select");
        assert_eq!(fingerprint("in ("), "in (");
        assert_eq!(fingerprint(""), "");
        assert_eq!(fingerprint("select `a"), "select `a");
    }
}
