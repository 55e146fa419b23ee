//! One entry of the slow log, as MySQL 5.7 and 8.0 write it with `log_slow_extra`: its header lines,
//! the statement made safe for the log's line format, and the times in the log's forms.

/// Added to a connection's first frame for its `Id` when the capture holds no thread id for it: ids from
/// 2^32 are no server's (thread ids are 32-bit), as pt-query-digest numbers the connections it reads
/// from tcpdump without one.
pub(crate) const NO_THREAD_ID: u64 = 1 << 32;

/// What an entry says, measured on the wire.
pub(crate) struct Fields<'a> {
    /// The response's last byte, in µs since the epoch: when the server would have logged it.
    pub end_us: u64,
    /// The request's first byte, µs since the epoch.
    pub start_us: u64,
    /// `end_us - start_us`.
    pub query_us: u64,
    /// The login's user, if the capture holds the login.
    pub user: Option<&'a str>,
    /// The client's address.
    pub ip: &'a str,
    /// The server's thread id from its greeting, else [`NO_THREAD_ID`] plus the connection's first
    /// frame.
    pub id: u64,
    /// Rows of the resultsets.
    pub rows_sent: u64,
    /// The error code of an ERR response, else 0.
    pub errno: u16,
    /// Request bytes (MySQL packets with their headers).
    pub bytes_received: u64,
    /// Response bytes.
    pub bytes_sent: u64,
    /// `affected_rows` of an OK response.
    pub rows_affected: Option<u64>,
}

/// Appends the header lines of an entry: `# Time:`, `# User@Host:`, `# Query_time:` with the fields
/// of `log_slow_extra` the capture knows. (Numbers are written by hand, not through `fmt`: this runs
/// once per statement, and `fmt` was a third of the export's time.)
pub(crate) fn write_head(f: &Fields<'_>, times: &mut Times, out: &mut Vec<u8>) {
    let end = times.iso8601(f.end_us);
    out.extend_from_slice(b"# Time: ");
    out.extend_from_slice(&end);
    out.extend_from_slice(b"\n# User@Host: ");
    match f.user.filter(|u| !u.is_empty()) {
        Some(user) => {
            write_user(user, out);
            out.push(b'[');
            write_user(user, out);
        }
        // No user known (the login is not in the capture, or was anonymous): blank, as a space,
        // where the server writes an empty account name (`[] @ ...`), which pt-query-digest cannot
        // read the host and address after.
        None => out.extend_from_slice(b" ["),
    }
    // The host name is what the server resolved, which the wire does not carry: empty, as a server
    // with `skip_name_resolve` writes it.
    out.extend_from_slice(b"] @  [");
    out.extend_from_slice(f.ip.as_bytes());
    out.extend_from_slice(b"]  Id: ");
    // `%5u`.
    for _ in digits(f.id)..5 {
        out.push(b' ');
    }
    push_u64(out, f.id);
    out.extend_from_slice(b"\n# Query_time: ");
    write_seconds(f.query_us, out);
    out.extend_from_slice(b"  Lock_time: 0.000000 Rows_sent: ");
    push_u64(out, f.rows_sent);
    out.extend_from_slice(b"  Rows_examined: 0 Thread_id: ");
    push_u64(out, f.id);
    out.extend_from_slice(b" Errno: ");
    push_u64(out, u64::from(f.errno));
    out.extend_from_slice(b" Bytes_received: ");
    push_u64(out, f.bytes_received);
    out.extend_from_slice(b" Bytes_sent: ");
    push_u64(out, f.bytes_sent);
    out.extend_from_slice(b" Start: ");
    out.extend_from_slice(&times.iso8601(f.start_us));
    out.extend_from_slice(b" End: ");
    out.extend_from_slice(&end);
    if let Some(n) = f.rows_affected {
        out.extend_from_slice(b" Rows_affected: ");
        push_u64(out, n);
    }
    out.push(b'\n');
}

/// Appends `SET timestamp=...;` (the request's second) and the statement, ended by `;` and a line end.
pub(crate) fn write_tail(start_us: u64, statement: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"SET timestamp=");
    push_u64(out, start_us / 1_000_000);
    out.extend_from_slice(b";\n");
    write_statement(statement, out);
    out.extend_from_slice(b";\n");
}

/// The decimal digits of `n`.
fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// The two digits of each number below 100.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Appends `n` in decimal (two digits at a step).
fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = n as usize * 2;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        buf[at] = b'0' + n as u8;
    }
    out.extend_from_slice(&buf[at..]);
}

/// Writes `n` into `out` in decimal, zero-padded to its length (the low digits when it is longer).
fn put_padded(out: &mut [u8], mut n: u64) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// A user name as the `User@Host` line can hold it: control characters, brackets and backslashes,
/// which would end the line or the name for a reader, as `\xNN`.
fn write_user(user: &str, out: &mut Vec<u8>) {
    for c in user.chars() {
        let mut b = [0u8; 4];
        let bytes = c.encode_utf8(&mut b).as_bytes();
        if c.is_control() || matches!(c, '[' | ']' | '\\') {
            for &byte in bytes {
                out.extend_from_slice(b"\\x");
                out.push(HEX[usize::from(byte >> 4)]);
                out.push(HEX[usize::from(byte & 0x0f)]);
            }
        } else {
            out.extend_from_slice(bytes);
        }
    }
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// The SQL lexer's state while a statement is written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lex {
    Code,
    /// Inside a string literal quoted by this byte.
    Quoted(u8),
    /// Inside a backtick-quoted identifier.
    Identifier,
    /// Inside a `#` or `-- ` comment.
    LineComment,
    /// Inside a `/* */` comment.
    BlockComment,
}

/// Appends a statement so that no line of it begins with `#`. A reader of the log takes a line that
/// begins with `#` for a header, and `;` at a line's end followed by one for the end of an entry
/// (pt-query-digest and mysqldumpslow split the log at `;\n#`): a statement holding
/// `;\n# Time: ...` would otherwise forge entries. So a line break inside a string literal is written
/// as its escape (`\n`, `\r`: the same string for the server, unless `NO_BACKSLASH_ESCAPES`), and a
/// line elsewhere (code, a comment, a quoted identifier) that begins with `#` gets a space before it
/// (for code and comments the same statement; a quoted identifier holding a line break followed by
/// `#` is the one place the text changes).
pub(crate) fn write_statement(sql: &str, out: &mut Vec<u8>) {
    let b = sql.as_bytes();
    if reads_as_header(sql) {
        out.push(b' ');
    }
    // Most statements are one line: nothing to look at.
    if memchr::memchr2(b'\n', b'\r', b).is_none() {
        out.extend_from_slice(b);
        return;
    }
    let mut state = Lex::Code;
    let mut from = 0;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let next = b.get(i + 1).copied();
        match state {
            Lex::Quoted(q) => match c {
                b'\\' if matches!(next, Some(b'\n' | b'\r')) => {
                    // `\` before a line break escapes it into itself: written as its escape.
                    out.extend_from_slice(b.get(from..i).unwrap_or_default());
                    out.extend_from_slice(if next == Some(b'\n') { b"\\n" } else { b"\\r" });
                    i += 2;
                    from = i;
                    continue;
                }
                b'\\' => {
                    i += 2;
                    continue;
                }
                b'\n' | b'\r' => {
                    out.extend_from_slice(b.get(from..i).unwrap_or_default());
                    out.extend_from_slice(if c == b'\n' { b"\\n" } else { b"\\r" });
                    i += 1;
                    from = i;
                    continue;
                }
                _ if c == q && next == Some(q) => {
                    i += 2;
                    continue;
                }
                _ if c == q => state = Lex::Code,
                _ => {}
            },
            Lex::Code => match c {
                b'\'' | b'"' => state = Lex::Quoted(c),
                b'`' => state = Lex::Identifier,
                b'#' => state = Lex::LineComment,
                b'-' if next == Some(b'-') && b.get(i + 2).is_none_or(|&n| n <= b' ') => {
                    state = Lex::LineComment;
                }
                b'/' if next == Some(b'*') && b.get(i + 2) != Some(&b'!') => {
                    state = Lex::BlockComment;
                    i += 2;
                    continue;
                }
                _ => {}
            },
            Lex::Identifier => {
                if c == b'`' {
                    if next == Some(b'`') {
                        i += 2;
                        continue;
                    }
                    state = Lex::Code;
                }
            }
            Lex::LineComment => {
                if c == b'\n' {
                    state = Lex::Code;
                }
            }
            Lex::BlockComment => {
                if c == b'*' && next == Some(b'/') {
                    state = Lex::Code;
                    i += 2;
                    continue;
                }
            }
        }
        if matches!(c, b'\n' | b'\r') && next == Some(b'#') {
            out.extend_from_slice(b.get(from..=i).unwrap_or_default());
            out.push(b' ');
            from = i + 1;
        }
        i += 1;
    }
    out.extend_from_slice(b.get(from..).unwrap_or_default());
}

/// Whether a reader would take the statement's first line for a line of the entry's header, not the
/// statement: one that begins with `#`, `use ` (the schema's line) or `SET timestamp=`, `SET
/// insert_id=`, `SET last_insert_id=` (pt-query-digest then drops a `USE` statement, or takes the
/// next entry's header for its text). Such a statement is written with a space before it: the same
/// statement for the server, and the text of its entry for the reader.
fn reads_as_header(sql: &str) -> bool {
    let starts = |prefix: &str| {
        sql.get(..prefix.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(prefix))
    };
    let after_set = sql
        .get(3..)
        .filter(|_| starts("set"))
        .map(|rest| rest.trim_start_matches([' ', '\t']));
    sql.starts_with('#')
        || (starts("use")
            && sql
                .get(3..)
                .is_some_and(|r| r.starts_with([' ', '\t', '`'])))
        || after_set.is_some_and(|rest| {
            ["timestamp", "insert_id", "last_insert_id"]
                .iter()
                .any(|v| {
                    rest.get(..v.len())
                        .is_some_and(|s| s.eq_ignore_ascii_case(v))
                })
        })
}

/// Appends `µs` as seconds with six decimals (`0.000237`), as `%.6f` of MySQL's microseconds.
fn write_seconds(us: u64, out: &mut Vec<u8>) {
    push_u64(out, us / 1_000_000);
    let mut frac = *b".000000";
    put_padded(&mut frac[1..], us % 1_000_000);
    out.extend_from_slice(&frac);
}

/// The length of [`iso8601`]'s text.
const ISO8601_BYTES: usize = 27;

/// The timestamp text of the last second written: entries come thousands a second, and the date and
/// time of day are worked out once for each.
#[derive(Default)]
pub(crate) struct Times {
    second: Option<u64>,
    text: [u8; ISO8601_BYTES],
}

impl Times {
    /// [`iso8601`] of `us`.
    fn iso8601(&mut self, us: u64) -> [u8; ISO8601_BYTES] {
        let second = us / 1_000_000;
        if self.second != Some(second) {
            iso8601(us, &mut self.text);
            self.second = Some(second);
        } else {
            put_padded(&mut self.text[20..26], us % 1_000_000);
        }
        self.text
    }
}

/// `µs` since the epoch as MySQL's ISO 8601 UTC timestamp: `2024-05-10T17:45:09.474988Z`: the
/// reports' UTC instant (`2024-05-10 17:45:09.474988 UTC`) in that form (a capture's nanoseconds since
/// the epoch reach 2262: four digits of year).
fn iso8601(us: u64, out: &mut [u8; ISO8601_BYTES]) {
    let utc = pcapsleuth_analysis::units::utc_us(i64::try_from(us).unwrap_or(i64::MAX));
    let b = utc.as_bytes();
    *out = *b"0000-00-00T00:00:00.000000Z";
    if let (Some(date), Some(time)) = (b.get(..10), b.get(11..26)) {
        out[..10].copy_from_slice(date);
        out[11..26].copy_from_slice(time);
    }
}

/// The schema a `USE` statement (a `COM_QUERY`) selects, if `sql` is one: `use db`, `USE \`my db\``.
pub(crate) fn used_schema(sql: &str) -> Option<String> {
    let s = sql.trim_start();
    let keyword = s.get(..3)?;
    if !keyword.eq_ignore_ascii_case("use") {
        return None;
    }
    let rest = s.get(3..)?;
    if !rest.starts_with(|c: char| c.is_ascii_whitespace() || c == '`') {
        return None;
    }
    let rest = rest.trim_start();
    let (name, after) = if let Some(quoted) = rest.strip_prefix('`') {
        let mut name = String::new();
        let mut chars = quoted.char_indices();
        loop {
            let (at, c) = chars.next()?;
            if c == '`' {
                if quoted.get(at + 1..)?.starts_with('`') {
                    chars.next();
                    name.push('`');
                } else {
                    break (name, quoted.get(at + 1..)?);
                }
            } else {
                name.push(c);
            }
        }
    } else {
        let end = rest
            .find(|c: char| c.is_ascii_whitespace() || c == ';')
            .unwrap_or(rest.len());
        (rest.get(..end)?.to_string(), rest.get(end..)?)
    };
    let after = after.trim_start().trim_start_matches(';').trim();
    (!name.is_empty() && after.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(sql: &str) -> String {
        let mut s = Vec::new();
        write_statement(sql, &mut s);
        String::from_utf8(s).expect("text")
    }

    #[test]
    fn times_are_written_as_mysql_writes_them() {
        let mut t = [0u8; ISO8601_BYTES];
        iso8601(1_715_363_109_474_988, &mut t);
        assert_eq!(&t, b"2024-05-10T17:45:09.474988Z");
        iso8601(951_782_400_000_001, &mut t);
        assert_eq!(&t, b"2000-02-29T00:00:00.000001Z");
        let mut times = Times::default();
        for us in [
            951_782_400_000_001,
            951_782_400_999_999,
            951_782_401_000_000,
            1_715_363_109_474_988,
        ] {
            iso8601(us, &mut t);
            assert_eq!(times.iso8601(us), t);
        }
        let mut s = Vec::new();
        write_seconds(1_000_237, &mut s);
        write_seconds(0, &mut s);
        assert_eq!(s, b"1.0002370.000000");
        s.clear();
        for n in [0, 7, 10, 99, 100, 12345, 99999, 100000, u64::MAX] {
            push_u64(&mut s, n);
            s.push(b' ');
        }
        assert_eq!(s, b"0 7 10 99 100 12345 99999 100000 18446744073709551615 ");
    }

    #[test]
    fn no_line_of_a_statement_begins_with_a_hash() {
        // Code and comments: a space before the `#` (the same statement for the server).
        assert_eq!(
            statement("select 1;\n# Time: 2024-01-01T00:00:00Z\nselect 2"),
            "select 1;\n # Time: 2024-01-01T00:00:00Z\nselect 2"
        );
        assert_eq!(statement("# c\nselect 1"), " # c\nselect 1");
        // A first line a reader takes for a header: a space before it.
        assert_eq!(statement("use `test`"), " use `test`");
        assert_eq!(statement("SET timestamp=1"), " SET timestamp=1");
        assert_eq!(statement("set  insert_id = 5"), " set  insert_id = 5");
        assert_eq!(statement("user()"), "user()");
        assert_eq!(statement("set names utf8"), "set names utf8");
        assert_eq!(
            statement("select /* a;\n# b */ 1"),
            "select /* a;\n # b */ 1"
        );
        // Inside a string literal: the line break as its escape (the same string).
        assert_eq!(
            statement("select 'a;\n# Time: x', \"b\r\n#\""),
            r#"select 'a;\n# Time: x', "b\r\n#""#
        );
        assert_eq!(statement("select 'a\\\n#'"), r"select 'a\n#'");
        // Quotes inside literals, escaped or doubled, do not end them.
        assert_eq!(
            statement("select 'it''s\n#', 'x\\'\n#'"),
            r"select 'it''s\n#', 'x\'\n#'"
        );
        // A line break elsewhere is kept.
        assert_eq!(statement("select 1\nfrom t"), "select 1\nfrom t");
        assert_eq!(statement("select `a\n#b`"), "select `a\n #b`");
    }

    #[test]
    fn user_names_cannot_end_their_line_or_their_brackets() {
        let mut s = Vec::new();
        write_user("a]\n# Time:[b\\", &mut s);
        assert_eq!(s, br"a\x5D\x0A# Time:\x5Bb\x5C");
    }

    #[test]
    fn use_statements_name_their_schema() {
        assert_eq!(used_schema("use sbtest").as_deref(), Some("sbtest"));
        assert_eq!(
            used_schema("  USE `my ``db`` x` ;").as_deref(),
            Some("my `db` x")
        );
        assert_eq!(used_schema("use`a`").as_deref(), Some("a"));
        assert_eq!(used_schema("user_defined()"), None);
        assert_eq!(used_schema("use a b"), None);
        assert_eq!(used_schema("use"), None);
    }
}
