//! Differential test: the byte-level streaming [`pcapsleuth_mysql::fingerprint`] must produce exactly
//! what the original token-vector implementation produced, for every input. The original is kept
//! verbatim below as `reference_fingerprint` (only renamed, its doctest dropped).
//!
//! [`pcapsleuth_mysql::Fingerprinter`], which remembers statement heads, must in turn give exactly
//! what `fingerprint` gives, whatever statements came before.

use pcapsleuth_mysql::{fingerprint, fingerprint_into, Fingerprinter};
use proptest::prelude::*;

#[allow(clippy::all)]
mod reference {
    #[derive(Debug, Clone, PartialEq)]
    enum Tok<'a> {
        /// Identifier or keyword as written (lowercased when printed; backquoted names keep their quotes).
        Word(&'a str),
        /// A literal: number, quoted string, hex/bit literal or `?` placeholder.
        Lit,
        /// Any other character.
        Punct(char),
    }

    struct Token<'a> {
        tok: Tok<'a>,
        /// Whitespace or a comment preceded it.
        spaced: bool,
    }

    fn is_word_char(c: char) -> bool {
        c.is_alphanumeric() || c == '_' || c == '$'
    }

    /// Splits a statement into tokens, walking byte positions (always at character boundaries) and borrowing
    /// words from the input: one pass, no per-character or per-word allocation. Fingerprinting runs once per
    /// request, so this is on the hot path of `pcapsleuth mysql`.
    fn tokenize(sql: &str) -> Vec<Token<'_>> {
        let bytes = sql.as_bytes();
        // ASCII (nearly all SQL) is read byte by byte; other characters are decoded.
        let at = |k: usize| match bytes.get(k) {
            Some(&b) if b < 0x80 => Some(char::from(b)),
            Some(_) => sql.get(k..).and_then(|s| s.chars().next()),
            None => None,
        };
        let byte = |k: usize| bytes.get(k).copied();
        let mut out: Vec<Token<'_>> = Vec::with_capacity(32);
        let mut i = 0usize;
        let mut spaced = false;
        while let Some(c) = at(i) {
            let n = c.len_utf8();
            // Whitespace and comments only mark that tokens are separated.
            if c.is_whitespace() {
                spaced = true;
                i += n;
                continue;
            }
            if c == '/' && byte(i + 1) == Some(b'*') {
                i += 2;
                loop {
                    match at(i) {
                        None => break,
                        Some('*') if byte(i + 1) == Some(b'/') => {
                            i += 2;
                            break;
                        }
                        Some(d) => i += d.len_utf8(),
                    }
                }
                spaced = true;
                continue;
            }
            if c == '#' || (c == '-' && byte(i + 1) == Some(b'-')) {
                while let Some(d) = at(i) {
                    if d == '\n' {
                        break;
                    }
                    i += d.len_utf8();
                }
                spaced = true;
                continue;
            }
            let sp = std::mem::replace(&mut spaced, false);
            if c == '\'' || c == '"' {
                i += 1;
                while let Some(d) = at(i) {
                    if d == '\\' {
                        i += 1;
                        if let Some(e) = at(i) {
                            i += e.len_utf8();
                        }
                        continue;
                    }
                    if d == c {
                        if at(i + 1) == Some(c) {
                            i += 2; // doubled quote inside the string
                            continue;
                        }
                        break;
                    }
                    i += d.len_utf8();
                }
                i += 1;
                // x'..', b'..', n'..', _utf8mb4'..': the prefix belongs to the literal.
                let prefixed = !sp
                    && matches!(out.last(), Some(Token { tok: Tok::Word(w), .. })
                        if w.eq_ignore_ascii_case("x")
                            || w.eq_ignore_ascii_case("b")
                            || w.eq_ignore_ascii_case("n")
                            || w.starts_with('_'));
                if prefixed {
                    if let Some(last) = out.last_mut() {
                        last.tok = Tok::Lit;
                    }
                } else {
                    out.push(Token {
                        tok: Tok::Lit,
                        spaced: sp,
                    });
                }
                continue;
            }
            if c == '`' {
                let start = i;
                i += 1;
                while let Some(d) = at(i) {
                    i += d.len_utf8();
                    if d == '`' {
                        break;
                    }
                }
                out.push(Token {
                    tok: Tok::Word(sql.get(start..i.min(sql.len())).unwrap_or("")),
                    spaced: sp,
                });
                continue;
            }
            let number_start =
                c.is_ascii_digit() || (c == '.' && at(i + 1).is_some_and(|d| d.is_ascii_digit()));
            if number_start {
                while let Some(d) = at(i) {
                    let exp_sign =
                        (d == '+' || d == '-') && i > 0 && matches!(byte(i - 1), Some(b'e' | b'E'));
                    if is_word_char(d) || d == '.' || exp_sign {
                        i += d.len_utf8();
                    } else {
                        break;
                    }
                }
                out.push(Token {
                    tok: Tok::Lit,
                    spaced: sp,
                });
                continue;
            }
            if is_word_char(c) {
                let start = i;
                while let Some(d) = at(i).filter(|&d| is_word_char(d)) {
                    i += d.len_utf8();
                }
                out.push(Token {
                    tok: Tok::Word(sql.get(start..i).unwrap_or("")),
                    spaced: sp,
                });
                continue;
            }
            let tok = if c == '?' { Tok::Lit } else { Tok::Punct(c) };
            out.push(Token { tok, spaced: sp });
            i += n;
        }
        out
    }

    /// Length of a `( ? [, ?]* )` group starting at `i`, if there is one.
    fn lit_group(t: &[Token<'_>], i: usize) -> Option<usize> {
        if t.get(i)?.tok != Tok::Punct('(') {
            return None;
        }
        let mut k = i + 1;
        loop {
            if t.get(k)?.tok != Tok::Lit {
                return None;
            }
            k += 1;
            match t.get(k)?.tok {
                Tok::Punct(',') => k += 1,
                Tok::Punct(')') => return Some(k + 1 - i),
                _ => return None,
            }
        }
    }

    /// Fingerprint of a statement, pt-query-digest style: lowercased, whitespace
    /// collapsed, comments stripped, literals (numbers, quoted strings, hex and bit
    /// literals) replaced by `?`, and `IN (...)` lists and multi-row `VALUES` lists
    /// of literals folded to a single `(?)`.
    ///
    pub fn reference_fingerprint(sql: &str) -> String {
        let toks = tokenize(sql);
        let mut out = String::with_capacity(sql.len().min(4096));
        let mut i = 0usize;
        let mut first = true;
        let sep = |out: &mut String, spaced: bool, first: &mut bool| {
            if spaced && !*first {
                out.push(' ');
            }
            *first = false;
        };
        let lower = |out: &mut String, w: &str| {
            if w.is_ascii() {
                out.extend(w.bytes().map(|b| char::from(b.to_ascii_lowercase())));
            } else {
                out.push_str(&w.to_lowercase());
            }
        };
        while let Some(t) = toks.get(i) {
            match &t.tok {
                Tok::Word(w)
                    if w.eq_ignore_ascii_case("in")
                        || w.eq_ignore_ascii_case("values")
                        || w.eq_ignore_ascii_case("value") =>
                {
                    let is_in = w.eq_ignore_ascii_case("in");
                    let mut k = i + 1;
                    let mut folded = false;
                    while let Some(n) = lit_group(&toks, k) {
                        folded = true;
                        k += n;
                        // Only VALUES lists continue with `, (...)`.
                        if !is_in
                            && toks.get(k).is_some_and(|t| t.tok == Tok::Punct(','))
                            && lit_group(&toks, k + 1).is_some()
                        {
                            k += 1;
                            continue;
                        }
                        break;
                    }
                    sep(&mut out, t.spaced, &mut first);
                    lower(&mut out, w);
                    if folded {
                        out.push_str(" (?)");
                        i = k;
                    } else {
                        i += 1;
                    }
                }
                Tok::Word(w) => {
                    sep(&mut out, t.spaced, &mut first);
                    lower(&mut out, w);
                    i += 1;
                }
                Tok::Lit => {
                    sep(&mut out, t.spaced, &mut first);
                    out.push('?');
                    i += 1;
                }
                Tok::Punct(c) => {
                    sep(&mut out, t.spaced, &mut first);
                    out.push(*c);
                    i += 1;
                }
            }
        }
        out
    }
}

use reference::reference_fingerprint;

/// Pieces of SQL-ish text, chosen to hit every branch of the tokenizer and the list folding when
/// concatenated in random order (with and without separators between them).
#[rustfmt::skip]
const FRAGMENTS: &[&str] = &[
    // keywords, identifiers, prefixes
    "select", "SELECT", "IN", "in", "In", "iN", "values", "VALUES", "VALUE", "value", "Values", "from",
    "where", "x", "X", "b", "B", "n", "N", "_utf8mb4", "_", "_x", "$a", "a$", "t1", "sbtest1", "a_b$c",
    "id", "c", "inx", "valuesx", "xin", // near-keywords
    // backquotes
    "`a`", "`", "``", "`İΣ`", "`in`", "`x`", "`_a`",
    // numbers
    "1", "0", "42", "1.5e-3", ".5", "0x1F", "1e+5", "1E-", "2e", "e", "E", "-", "+", ".", "..", "5.", "1é",
    // strings
    "'", "\"", "''", "\"\"", "'a''b'", "'a\\'b'", "\\", "\"q\\\"r\"", "'é\\é'", "\"\\\"", "'\\",
    "x'AB'", "X'ab'", "b'01'", "B'1'", "n'z'", "N\"z\"", "_utf8mb4'z'", "_latin1\"q\"",
    // comments
    "/*", "*/", "/* c */", "/*/", "/**/", "--", "-- c\n", "-", "#", "# c\n", "/", "*",
    // whitespace, ASCII and Unicode
    "\n", " ", "  ", "\t", "\r", "\u{b}", "\u{c}", "\u{a0}", "\u{3000}", "\u{2028}", "\u{85}", "\u{1680}",
    "\u{1f}", "\u{0}", "\u{7f}",
    // placeholders and punctuation
    "?", "(", ")", ",", ";", "=", "<=", "!", "@", "@@", ":", "{", "}", "[", "]", "%", "^", "&", "|", "~",
    // non-ASCII letters, marks, digits and symbols
    "é", "É", "ß", "İ", "Σ", "ΣΑΣ", "aΣ", "Σa", "ǅ", "ﬁ", "中文", "١٢", "\u{301}", "€", "—", "\u{200b}", "😀",
    // structures that exercise folding
    "in (1,2,3)", "IN(?)", "in ( 'a' , x'1' )", "in ()", "in (1", "in (1,", "in (1 2)", "in ((1))",
    "values (1,'a'),(2,'b')", "VALUES(1),(2)", "values (1),", "value (?)", ",(3)", "(1)", "(?, ?)", "(a)",
    "( /* c */ 1 -- x\n )", "(1),(2)", "),(", "in (select 1)",
    // rows in the shapes the fast paths look for, and near misses
    "(1, 'abc', 22)", "( 1 , 2 )", "(1 2)", "('a'1)", "(1'a')", "('a' 'b')", "(12e3)", "(1.5)", "(-1)",
    "('a', \"b\")", "(1,)", "(,1)", "( )", "(1)(2)", "(1),(2),(3)", "('x',1),('y',2)", "(1\t)", "(\n1)",
    "('a\\'b', 'c''d')", "(007, 1a)",
    // strings long enough for the 8-bytes-at-a-time search, escapes and quotes at various offsets
    "'0123456789abcdef'", "'0123456\\'789abcdef'", "'01234567''89abcdef'", "'ééééééééé'",
    "'aaaaaaaaaaaaaaaaaaaa", "\"0123456789\\\"abcdef\"", "'abcdefg\\\\'", "'abcdefgh\\",
    // words that start like list keywords
    "id", "index", "v", "i", "inn", "vAlUeS", "value1", "in1", "i_n", "I", "V", "ins", "valu",
];

/// A quoted string (maybe unterminated) of random pieces, to move escapes and quotes around.
fn quoted() -> impl Strategy<Value = String> {
    let piece =
        proptest::sample::select(&["a", "0", " ", "é", "\\", "\\'", "''", "\"", "'", "\\\\"][..]);
    (
        proptest::sample::select(&["'", "\""][..]),
        proptest::collection::vec(piece, 0..24),
        any::<bool>(),
    )
        .prop_map(|(q, body, close)| {
            let mut s = q.to_string() + &body.concat();
            if close {
                s.push_str(q);
            }
            s
        })
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        20 => proptest::sample::select(FRAGMENTS).prop_map(str::to_string),
        3 => quoted(),
        2 => "[a-zA-Z_$][a-zA-Z0-9_$]{0,8}",
        2 => "[0-9.eExX+-]{1,6}",
        1 => any::<char>().prop_map(String::from),
    ]
}

fn statement() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        (
            fragment(),
            prop_oneof![3 => Just(""), 2 => Just(" "), 1 => Just("\n")],
        ),
        0..40,
    )
    .prop_map(|parts| parts.into_iter().map(|(f, s)| f + s).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20_000, ..ProptestConfig::default() })]

    #[test]
    fn fingerprint_matches_reference(s in statement()) {
        prop_assert_eq!(fingerprint(&s), reference_fingerprint(&s));
    }

    #[test]
    fn fingerprint_matches_reference_on_any_text(s in "\\PC{0,80}") {
        prop_assert_eq!(fingerprint(&s), reference_fingerprint(&s));
    }
}

/// A head long enough for [`Fingerprinter`] to remember: plain text (words, single spaces,
/// punctuation; near list keywords too), then maybe anything.
fn head() -> impl Strategy<Value = String> {
    (
        "[a-zA-Z_$ ,=()*<>]{20,40}",
        prop_oneof![2 => Just(String::new()), 1 => statement()],
    )
        .prop_map(|(plain, more)| plain + &more)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    /// Statements sharing a few heads, each followed by anything (literals, list keywords, word
    /// characters that continue the head's run, quotes that make its last word a literal prefix,
    /// non-ASCII letters, the end), through one `Fingerprinter`.
    #[test]
    fn fingerprinter_matches_fingerprint(
        heads in proptest::collection::vec(head(), 1..6),
        statements in proptest::collection::vec((0usize..6, statement()), 1..40),
    ) {
        let mut fingerprinter = Fingerprinter::default();
        for (k, tail) in statements {
            let s = heads[k % heads.len()].clone() + &tail;
            prop_assert_eq!(fingerprinter.fingerprint(&s), fingerprint(&s), "input: {:?}", s);
        }
    }
}

/// A cheap deterministic sweep on top of proptest: many more concatenations of the same fragments.
#[test]
fn fingerprint_matches_reference_deterministic_sweep() {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut s = String::new();
    let mut out = String::from("stale contents");
    let mut fingerprinter = Fingerprinter::default();
    let heads = [
        "SELECT c FROM sbtest1 WHERE id",
        "select DISTINCT c from sbtest12 where k ",
        "INSERT INTO orders (a, b, c) ",
        "update t set name=",
        "SELECT * FROM users WHERE email ",
    ];
    for _ in 0..200_000 {
        s.clear();
        if next() % 2 == 0 {
            s.push_str(heads[(next() % heads.len() as u64) as usize]);
        }
        let n = next() % 24;
        for _ in 0..n {
            s.push_str(FRAGMENTS[(next() % FRAGMENTS.len() as u64) as usize]);
            if next() % 3 == 0 {
                s.push(' ');
            }
        }
        let want = reference_fingerprint(&s);
        fingerprint_into(&s, &mut out);
        assert_eq!(out, want, "input: {s:?}");
        assert_eq!(fingerprinter.fingerprint(&s), want, "input: {s:?}");
    }
}

#[test]
fn fingerprint_into_clears_and_matches() {
    let mut out = String::from("leftover");
    for s in [
        "SELECT c FROM sbtest1 WHERE id=50123",
        "",
        "select * from t where id in (1,2,3,4,5)",
    ] {
        fingerprint_into(s, &mut out);
        assert_eq!(out, fingerprint(s));
        assert_eq!(out, reference_fingerprint(s));
    }
}
