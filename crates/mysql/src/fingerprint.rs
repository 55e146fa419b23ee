//! Statement fingerprints in the style of pt-query-digest: statements that
//! differ only in literal values, case, spacing or comments share a fingerprint.

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

#[cfg(test)]
mod tests {
    use super::fingerprint;

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
