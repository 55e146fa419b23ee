//! Statement fingerprints in the style of pt-query-digest: statements that
//! differ only in literal values, case, spacing or comments share a fingerprint.

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// Identifier or keyword, lowercased (backquoted names keep their quotes).
    Word(String),
    /// A literal: number, quoted string, hex/bit literal or `?` placeholder.
    Lit,
    /// Any other character.
    Punct(char),
}

struct Token {
    tok: Tok,
    /// Whitespace or a comment preceded it.
    spaced: bool,
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

fn tokenize(sql: &str) -> Vec<Token> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out: Vec<Token> = Vec::new();
    let mut i = 0usize;
    let mut spaced = false;
    let at = |k: usize| chars.get(k).copied();
    while let Some(c) = at(i) {
        // Whitespace and comments only mark that tokens are separated.
        if c.is_whitespace() {
            spaced = true;
            i += 1;
            continue;
        }
        if c == '/' && at(i + 1) == Some('*') {
            i += 2;
            while let Some(d) = at(i) {
                if d == '*' && at(i + 1) == Some('/') {
                    i += 1;
                    break;
                }
                i += 1;
            }
            i += 1;
            spaced = true;
            continue;
        }
        if c == '#' || (c == '-' && at(i + 1) == Some('-')) {
            while let Some(d) = at(i) {
                if d == '\n' {
                    break;
                }
                i += 1;
            }
            spaced = true;
            continue;
        }
        let sp = std::mem::replace(&mut spaced, false);
        if c == '\'' || c == '"' {
            i += 1;
            while let Some(d) = at(i) {
                if d == '\\' {
                    i += 2;
                    continue;
                }
                if d == c {
                    if at(i + 1) == Some(c) {
                        i += 2; // doubled quote inside the string
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            i += 1;
            // x'..', b'..', n'..', _utf8mb4'..': the prefix belongs to the literal.
            let prefixed = !sp
                && matches!(out.last(), Some(Token { tok: Tok::Word(w), .. })
                    if w == "x" || w == "b" || w == "n" || w.starts_with('_'));
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
                i += 1;
                if d == '`' {
                    break;
                }
            }
            let w: String = chars
                .get(start..i.min(chars.len()))
                .unwrap_or(&[])
                .iter()
                .collect();
            out.push(Token {
                tok: Tok::Word(w.to_lowercase()),
                spaced: sp,
            });
            continue;
        }
        let number_start =
            c.is_ascii_digit() || (c == '.' && at(i + 1).is_some_and(|d| d.is_ascii_digit()));
        if number_start {
            while let Some(d) = at(i) {
                let exp_sign =
                    (d == '+' || d == '-') && matches!(at(i.wrapping_sub(1)), Some('e' | 'E'));
                if is_word_char(d) || d == '.' || exp_sign {
                    i += 1;
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
            while at(i).is_some_and(is_word_char) {
                i += 1;
            }
            let w: String = chars.get(start..i).unwrap_or(&[]).iter().collect();
            out.push(Token {
                tok: Tok::Word(w.to_lowercase()),
                spaced: sp,
            });
            continue;
        }
        let tok = if c == '?' { Tok::Lit } else { Tok::Punct(c) };
        out.push(Token { tok, spaced: sp });
        i += 1;
    }
    out
}

/// Length of a `( ? [, ?]* )` group starting at `i`, if there is one.
fn lit_group(t: &[Token], i: usize) -> Option<usize> {
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
    let push = |out: &mut String, spaced: bool, s: &str, first: &mut bool| {
        if spaced && !*first {
            out.push(' ');
        }
        out.push_str(s);
        *first = false;
    };
    while let Some(t) = toks.get(i) {
        match &t.tok {
            Tok::Word(w) if w == "in" || w == "values" || w == "value" => {
                let mut k = i + 1;
                let mut folded = false;
                while let Some(n) = lit_group(&toks, k) {
                    folded = true;
                    k += n;
                    // Only VALUES lists continue with `, (...)`.
                    if w != "in"
                        && toks.get(k).is_some_and(|t| t.tok == Tok::Punct(','))
                        && lit_group(&toks, k + 1).is_some()
                    {
                        k += 1;
                        continue;
                    }
                    break;
                }
                push(&mut out, t.spaced, w, &mut first);
                if folded {
                    out.push_str(" (?)");
                    i = k;
                } else {
                    i += 1;
                }
            }
            Tok::Word(w) => {
                push(&mut out, t.spaced, w, &mut first);
                i += 1;
            }
            Tok::Lit => {
                push(&mut out, t.spaced, "?", &mut first);
                i += 1;
            }
            Tok::Punct(c) => {
                let mut b = [0u8; 4];
                push(&mut out, t.spaced, c.encode_utf8(&mut b), &mut first);
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
