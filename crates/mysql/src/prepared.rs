//! A prepared statement's runs: the values a `COM_STMT_EXECUTE` binds to the statement's `?` markers
//! (the binary protocol), and the statement with them in their places, as the server's own logs show a
//! run.
//!
//! The session keeps each execute's bytes after the statement id ([`crate::Transaction::execute`]).
//! What reads them comes from elsewhere on the connection: the statement's parameter count from its
//! `COM_STMT_PREPARE_OK` ([`crate::Outcome::Prepared`]), and the parameter types from the execute that
//! bound them, this one or an earlier one of the same statement. A caller following a connection keeps
//! both per statement; [`Execute::read`] takes the types bound so far and leaves those in force.
//!
//! ```
//! use pcapsleuth_mysql::prepared::{Execute, QueryAttributes};
//! use pcapsleuth_mysql::ExecuteBytes;
//!
//! // Flags 0, iteration count 1, no NULL, types bound (LONGLONG, VAR_STRING), then 42 and "it's".
//! let bytes = ExecuteBytes::new(
//!     b"\x00\x01\x00\x00\x00\x00\x01\x08\x00\xfd\x00\x2a\x00\x00\x00\x00\x00\x00\x00\x04it's",
//!     true,
//! );
//! let mut types = Vec::new();
//! let run = Execute::read(&bytes, 2, QueryAttributes::Off, &mut types)?;
//! assert_eq!(
//!     run.substitute("select c from t where id = ? and name = ?").as_deref(),
//!     Some(r"select c from t where id = 42 and name = 'it\'s'")
//! );
//! assert_eq!(types, [0x0008, 0x00fd]);
//! # Ok::<(), pcapsleuth_mysql::prepared::ExecuteError>(())
//! ```

use crate::wire::Reader;

/// A `COM_STMT_EXECUTE`'s bytes after its statement id (flags, iteration count, then the parameters:
/// NULL bitmap, types when bound, values), as far as the capture holds them; empty for other commands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExecuteBytes {
    bytes: Vec<u8>,
    whole: bool,
}

/// An execute's bytes are kept with their allocation for the next one only up to this capacity.
const KEEP_CAPACITY: usize = 4096;

impl ExecuteBytes {
    /// `bytes`, `whole` if they are all the request had after its statement id.
    pub fn new(bytes: &[u8], whole: bool) -> Self {
        ExecuteBytes {
            bytes: bytes.to_vec(),
            whole,
        }
    }

    /// The bytes held.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether they are the whole request after its statement id: not cut by the snap length, a gap or
    /// the decoder's cap on what it keeps of a request.
    pub fn is_whole(&self) -> bool {
        self.whole
    }

    /// Whether there are none (the request was no execute, or the capture holds nothing after its id).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Holds `bytes` instead, in this allocation.
    pub(crate) fn set(&mut self, bytes: &[u8], whole: bool) {
        self.bytes.clear();
        self.bytes.extend_from_slice(bytes);
        self.whole = whole;
    }

    /// Holds nothing; the allocation stays unless it is large (a long execute once must not keep its
    /// memory with the connection).
    pub(crate) fn clear(&mut self) {
        if self.bytes.capacity() > KEEP_CAPACITY {
            self.bytes = Vec::new();
        } else {
            self.bytes.clear();
        }
        self.whole = false;
    }
}

/// Whether the connection negotiated `CLIENT_QUERY_ATTRIBUTES` (MySQL 8.0.23 and later): an execute
/// then carries its parameter count, and each type it binds a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryAttributes {
    /// Negotiated: both capability sets have it.
    On,
    /// Not negotiated.
    Off,
    /// The login is not in the capture: the layout that reads the bytes to their end exactly is taken,
    /// if only one does.
    Unknown,
}

impl QueryAttributes {
    /// From the capabilities in force ([`crate::Session::capabilities`]), if the login was seen.
    pub fn from_capabilities(capabilities: Option<u32>) -> Self {
        match capabilities {
            Some(c) if c & crate::wire::capability::CLIENT_QUERY_ATTRIBUTES != 0 => Self::On,
            Some(_) => Self::Off,
            None => Self::Unknown,
        }
    }
}

/// Why an execute's values could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecuteError {
    /// The capture does not hold the whole request.
    Cut,
    /// The execute binds no types, and no earlier execute of its statement in the capture did.
    TypesUnknown,
    /// A parameter's type is none the binary protocol sends (its type byte).
    UnknownType(u8),
    /// The bytes do not read as the parameters of a statement with that many (or, the login not seen,
    /// read so with and without query attributes).
    Malformed,
}

impl std::fmt::Display for ExecuteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExecuteError::Cut => f.write_str("the capture holds the request only in part"),
            ExecuteError::TypesUnknown => {
                f.write_str("the parameters' types were bound before the capture began")
            }
            ExecuteError::UnknownType(t) => write!(f, "a parameter of unknown type {t:#04x}"),
            ExecuteError::Malformed => f.write_str("the parameters do not decode"),
        }
    }
}

impl std::error::Error for ExecuteError {}

/// One parameter's value as the client sent it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// SQL NULL (the NULL bitmap, or the type `MYSQL_TYPE_NULL`).
    Null,
    /// A signed integer (`TINY`, `SHORT`, `YEAR`, `INT24`, `LONG`, `LONGLONG`).
    Int(i64),
    /// An integer of a type with the unsigned flag.
    UInt(u64),
    /// `DOUBLE`, or a `FLOAT` widened as the server widens it.
    Double(f64),
    /// `DECIMAL`/`NEWDECIMAL`: the number as text.
    Decimal(&'a [u8]),
    /// The string types, blobs, `JSON`, `ENUM`, `SET`, `BIT`, `GEOMETRY`: the bytes.
    Bytes(&'a [u8]),
    /// `DATE`.
    Date {
        /// Year.
        year: u16,
        /// Month, 1-12 (0 in a zero date).
        month: u8,
        /// Day of the month.
        day: u8,
    },
    /// `DATETIME` or `TIMESTAMP`.
    DateTime {
        /// Year.
        year: u16,
        /// Month.
        month: u8,
        /// Day of the month.
        day: u8,
        /// Hour.
        hour: u8,
        /// Minute.
        minute: u8,
        /// Second.
        second: u8,
        /// Microseconds.
        micros: u32,
    },
    /// `TIME`: a duration, possibly negative.
    Time {
        /// Whether it is negative.
        negative: bool,
        /// Days.
        days: u32,
        /// Hours (0-23, beside the days).
        hours: u8,
        /// Minutes.
        minutes: u8,
        /// Seconds.
        seconds: u8,
        /// Microseconds.
        micros: u32,
    },
}

impl Value<'_> {
    /// Appends the value as an SQL literal, as the server writes a run's parameter into its logs:
    /// numbers bare, strings quoted with backslash escapes (bytes that are not UTF-8 as a hexadecimal
    /// literal), dates and times quoted. `false` (nothing appended) for a double that is no number
    /// (NaN, infinite), which no literal gives.
    pub fn write_sql(&self, out: &mut String) -> bool {
        use std::fmt::Write;
        match *self {
            Value::Null => out.push_str("NULL"),
            Value::Int(v) => {
                let _ = write!(out, "{v}");
            }
            Value::UInt(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Double(v) if v.is_finite() => {
                // The shortest text that reads back as the same double (`0.1`, `1e300`).
                let _ = write!(out, "{v:?}");
            }
            Value::Double(_) => return false,
            Value::Decimal(b) if is_number(b) => {
                // Checked: ASCII digits, signs, a point and an exponent.
                out.push_str(std::str::from_utf8(b).unwrap_or_default());
            }
            Value::Decimal(b) | Value::Bytes(b) => write_string(b, out),
            Value::Date { year, month, day } => {
                let _ = write!(out, "'{year:04}-{month:02}-{day:02}'");
            }
            Value::DateTime {
                year,
                month,
                day,
                hour,
                minute,
                second,
                micros,
            } => {
                let _ = write!(
                    out,
                    "'{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}"
                );
                if micros != 0 {
                    let _ = write!(out, ".{micros:06}");
                }
                out.push('\'');
            }
            Value::Time {
                negative,
                days,
                hours,
                minutes,
                seconds,
                micros,
            } => {
                let sign = if negative { "-" } else { "" };
                let h = u64::from(days) * 24 + u64::from(hours);
                let _ = write!(out, "'{sign}{h:02}:{minutes:02}:{seconds:02}");
                if micros != 0 {
                    let _ = write!(out, ".{micros:06}");
                }
                out.push('\'');
            }
        }
        true
    }
}

/// Whether `b` is a number as a `DECIMAL` parameter carries one: an optional sign, digits with at most
/// one point, an optional exponent.
fn is_number(b: &[u8]) -> bool {
    let b = b
        .strip_prefix(b"-")
        .or_else(|| b.strip_prefix(b"+"))
        .unwrap_or(b);
    let (mantissa, exponent) = match b.iter().position(|&c| c == b'e' || c == b'E') {
        Some(at) => (&b[..at], Some(&b[at + 1..])),
        None => (b, None),
    };
    let digits = mantissa.iter().filter(|c| c.is_ascii_digit()).count();
    let points = mantissa.iter().filter(|&&c| c == b'.').count();
    let mantissa_ok = digits > 0 && points <= 1 && digits + points == mantissa.len();
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e
            .strip_prefix(b"-")
            .or_else(|| e.strip_prefix(b"+"))
            .unwrap_or(e);
        !e.is_empty() && e.iter().all(u8::is_ascii_digit)
    });
    mantissa_ok && exponent_ok
}

/// A string literal of `b`: quoted with the escapes of the server's `escape_string_for_mysql` when it
/// is UTF-8, else a hexadecimal literal of its bytes.
fn write_string(b: &[u8], out: &mut String) {
    let Ok(s) = std::str::from_utf8(b) else {
        out.push_str("0x");
        for byte in b {
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        return;
    };
    out.reserve(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\0' => out.push_str("\\0"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '\u{1a}' => out.push_str("\\Z"),
            c => out.push(c),
        }
    }
    out.push('\'');
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// The flag of an execute whose client sends the parameter count even for a statement without
/// parameters (query attributes only).
const PARAMETER_COUNT_AVAILABLE: u8 = 0x08;

/// The unsigned flag of a parameter type (the high byte's top bit).
const UNSIGNED: u16 = 0x8000;

/// The values of one run of a prepared statement, in the order of its `?` markers.
#[derive(Debug, Clone, PartialEq)]
pub struct Execute<'a> {
    values: Vec<Value<'a>>,
}

impl<'a> Execute<'a> {
    /// Reads the values of an execute of a statement with `count` parameters. `types`: the types bound
    /// by the statement's earlier executes (empty if none was seen); when this one binds types, they
    /// replace them there. On an error `types` is left as it was.
    pub fn read(
        bytes: &'a ExecuteBytes,
        count: u16,
        attributes: QueryAttributes,
        types: &mut Vec<u16>,
    ) -> Result<Execute<'a>, ExecuteError> {
        if !bytes.is_whole() {
            return Err(ExecuteError::Cut);
        }
        let b = bytes.bytes();
        match attributes {
            QueryAttributes::On => read(b, count, true, types),
            QueryAttributes::Off => read(b, count, false, types),
            QueryAttributes::Unknown => {
                let (mut without, mut with) = (types.clone(), types.clone());
                match (
                    read(b, count, false, &mut without),
                    read(b, count, true, &mut with),
                ) {
                    (Ok(run), Err(_)) => {
                        *types = without;
                        Ok(run)
                    }
                    (Err(_), Ok(run)) => {
                        *types = with;
                        Ok(run)
                    }
                    (Err(e), Err(_)) => Err(e),
                    // Both read to the end: the same values (no parameters, nothing more), or it is
                    // not known which layout the client sent.
                    (Ok(run), Ok(other)) if run == other && without == with => {
                        *types = without;
                        Ok(run)
                    }
                    (Ok(_), Ok(_)) => Err(ExecuteError::Malformed),
                }
            }
        }
    }

    /// The values, in the order of the statement's `?` markers.
    pub fn values(&self) -> &[Value<'a>] {
        &self.values
    }

    /// `statement` with each `?` marker replaced by its value as an SQL literal ([`Value::write_sql`]);
    /// `None` when its markers are not as many as the values (the text was cut, or is not the
    /// statement's), or a value has no literal.
    pub fn substitute(&self, statement: &str) -> Option<String> {
        let mut out = String::with_capacity(statement.len() + 16 * self.values.len());
        let mut values = self.values.iter();
        let mut from = 0;
        for at in placeholders(statement) {
            out.push_str(statement.get(from..at)?);
            if !values.next()?.write_sql(&mut out) {
                return None;
            }
            from = at + 1;
        }
        if values.next().is_some() {
            return None;
        }
        out.push_str(statement.get(from..)?);
        Some(out)
    }
}

/// [`Execute::read`] with the layout known: `attributes`, whether a parameter count and names come.
fn read<'a>(
    b: &'a [u8],
    count: u16,
    attributes: bool,
    types: &mut Vec<u16>,
) -> Result<Execute<'a>, ExecuteError> {
    let malformed = ExecuteError::Malformed;
    let mut r = Reader::new(b);
    let flags = r.u8().ok_or(malformed)?;
    r.u32().ok_or(malformed)?;
    let sent = if count > 0 || (attributes && flags & PARAMETER_COUNT_AVAILABLE != 0) {
        if attributes {
            r.lenenc().ok_or(malformed)?
        } else {
            u64::from(count)
        }
    } else {
        0
    };
    // Query attributes follow the statement's parameters, never replace them.
    if sent < u64::from(count) {
        return Err(malformed);
    }
    if sent == 0 {
        return if r.remaining() == 0 {
            Ok(Execute { values: Vec::new() })
        } else {
            Err(malformed)
        };
    }
    // Bounded by the bytes: the bitmap alone takes a byte per 8 parameters.
    let n = usize::try_from(sent).map_err(|_| malformed)?;
    let bitmap = r.bytes(n.div_ceil(8)).ok_or(malformed)?;
    let bound = match r.u8().ok_or(malformed)? {
        0 => None,
        1 => {
            let mut now = Vec::with_capacity(n.min(r.remaining() / 2));
            for _ in 0..n {
                now.push(r.u16().ok_or(malformed)?);
                if attributes {
                    r.lenenc_bytes().ok_or(malformed)?;
                }
            }
            Some(now)
        }
        _ => return Err(malformed),
    };
    let in_force: &[u16] = match &bound {
        Some(now) => now,
        None if types.is_empty() => return Err(ExecuteError::TypesUnknown),
        None if types.len() != n => return Err(malformed),
        None => types,
    };
    let mut values = Vec::with_capacity(usize::from(count));
    for (i, &ty) in in_force.iter().enumerate() {
        let null = bitmap.get(i / 8).is_some_and(|m| m >> (i % 8) & 1 == 1);
        let v = if null {
            Value::Null
        } else {
            value(&mut r, ty)?
        };
        if i < usize::from(count) {
            values.push(v);
        }
    }
    if r.remaining() != 0 {
        return Err(malformed);
    }
    if let Some(now) = bound {
        *types = now;
    }
    Ok(Execute { values })
}

/// One value of type `ty` (its `MYSQL_TYPE_*` byte and the unsigned flag).
fn value<'a>(r: &mut Reader<'a>, ty: u16) -> Result<Value<'a>, ExecuteError> {
    let malformed = ExecuteError::Malformed;
    let unsigned = ty & UNSIGNED != 0;
    let [code, _] = ty.to_le_bytes();
    let int = |bytes: &[u8]| -> Value<'a> {
        let mut le = [0u8; 8];
        le[..bytes.len()].copy_from_slice(bytes);
        let u = u64::from_le_bytes(le);
        if unsigned {
            Value::UInt(u)
        } else {
            // Sign-extended from the value's width.
            let shift = 64 - 8 * bytes.len() as u32;
            Value::Int(((u << shift) as i64) >> shift)
        }
    };
    Ok(match code {
        // TINY
        0x01 => int(r.bytes(1).ok_or(malformed)?),
        // SHORT, YEAR
        0x02 | 0x0d => int(r.bytes(2).ok_or(malformed)?),
        // LONG, INT24
        0x03 | 0x09 => int(r.bytes(4).ok_or(malformed)?),
        // LONGLONG
        0x08 => int(r.bytes(8).ok_or(malformed)?),
        // FLOAT: the server widens it to a double.
        0x04 => Value::Double(f64::from(f32::from_bits(r.u32().ok_or(malformed)?))),
        0x05 => Value::Double(f64::from_bits(r.u64().ok_or(malformed)?)),
        0x06 => Value::Null,
        // DATE, NEWDATE: the time part, if sent, is not the date's.
        0x0a | 0x0e => match date_time(r)? {
            Value::DateTime {
                year, month, day, ..
            } => Value::Date { year, month, day },
            other => other,
        },
        // TIMESTAMP, DATETIME, TIMESTAMP2, DATETIME2
        0x07 | 0x0c | 0x11 | 0x12 => date_time(r)?,
        // TIME, TIME2
        0x0b | 0x13 => time(r)?,
        // DECIMAL, NEWDECIMAL
        0x00 | 0xf6 => Value::Decimal(r.lenenc_bytes().ok_or(malformed)?),
        // VARCHAR, BIT, VECTOR, JSON, ENUM, SET, the blobs, VAR_STRING, STRING, GEOMETRY
        0x0f | 0x10 | 0xf2 | 0xf5 | 0xf7..=0xff => Value::Bytes(r.lenenc_bytes().ok_or(malformed)?),
        other => return Err(ExecuteError::UnknownType(other)),
    })
}

/// A `DATETIME` in the binary protocol: its length (0, 4, 7 or 11), then the fields it holds.
fn date_time<'a>(r: &mut Reader<'a>) -> Result<Value<'a>, ExecuteError> {
    let malformed = ExecuteError::Malformed;
    let len = r.u8().ok_or(malformed)?;
    if !matches!(len, 0 | 4 | 7 | 11) {
        return Err(malformed);
    }
    let mut v = (0u16, 0u8, 0u8, 0u8, 0u8, 0u8, 0u32);
    if len >= 4 {
        v.0 = r.u16().ok_or(malformed)?;
        v.1 = r.u8().ok_or(malformed)?;
        v.2 = r.u8().ok_or(malformed)?;
    }
    if len >= 7 {
        v.3 = r.u8().ok_or(malformed)?;
        v.4 = r.u8().ok_or(malformed)?;
        v.5 = r.u8().ok_or(malformed)?;
    }
    if len == 11 {
        v.6 = r.u32().ok_or(malformed)?;
    }
    let (year, month, day, hour, minute, second, micros) = v;
    Ok(Value::DateTime {
        year,
        month,
        day,
        hour,
        minute,
        second,
        micros,
    })
}

/// A `TIME` in the binary protocol: its length (0, 8 or 12), then the fields it holds.
fn time<'a>(r: &mut Reader<'a>) -> Result<Value<'a>, ExecuteError> {
    let malformed = ExecuteError::Malformed;
    let len = r.u8().ok_or(malformed)?;
    let zero = Value::Time {
        negative: false,
        days: 0,
        hours: 0,
        minutes: 0,
        seconds: 0,
        micros: 0,
    };
    match len {
        0 => Ok(zero),
        8 | 12 => Ok(Value::Time {
            negative: r.u8().ok_or(malformed)? == 1,
            days: r.u32().ok_or(malformed)?,
            hours: r.u8().ok_or(malformed)?,
            minutes: r.u8().ok_or(malformed)?,
            seconds: r.u8().ok_or(malformed)?,
            micros: if len == 12 {
                r.u32().ok_or(malformed)?
            } else {
                0
            },
        }),
        _ => Err(malformed),
    }
}

/// Where the `?` markers of `sql` are: the byte offsets of those outside string literals, quoted
/// identifiers and comments (`#`, `-- `, `/* */`; the contents of `/*! */` are code to MySQL, and read
/// as such).
pub fn placeholders(sql: &str) -> impl Iterator<Item = usize> + '_ {
    let b = sql.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while let Some(&c) = b.get(i) {
            match c {
                b'?' => {
                    i += 1;
                    return Some(i - 1);
                }
                b'\'' | b'"' | b'`' => i = after_quoted(b, i + 1, c),
                b'#' => i = line_end(b, i + 1),
                b'-' if b.get(i + 1) == Some(&b'-') && b.get(i + 2).is_none_or(|&n| n <= b' ') => {
                    i = line_end(b, i + 2)
                }
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    if b.get(i + 2) == Some(&b'!') {
                        // An executable comment: its version number, then code.
                        i += 3;
                        while b.get(i).is_some_and(u8::is_ascii_digit) {
                            i += 1;
                        }
                    } else {
                        i = comment_end(b, i + 2);
                    }
                }
                _ => i += 1,
            }
        }
        None
    })
}

/// The offset after the quoted text (a string literal in `'` or `"`, an identifier in `` ` ``) whose
/// first byte after the opening `quote` is at `i`: the quote doubled stays inside, and so, in a string
/// literal, does any byte after a backslash. The end of `b` if it is never closed.
fn after_quoted(b: &[u8], mut i: usize, quote: u8) -> usize {
    let escapes = quote != b'`';
    while let Some(&c) = b.get(i) {
        if c == b'\\' && escapes {
            i += 2;
        } else if c == quote {
            if b.get(i + 1) == Some(&quote) {
                i += 2;
            } else {
                return i + 1;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

/// The offset of the line end at or after `i` (the end of `b` if none).
fn line_end(b: &[u8], i: usize) -> usize {
    b.get(i..)
        .and_then(|rest| rest.iter().position(|&c| c == b'\n'))
        .map_or(b.len(), |at| i + at)
}

/// The offset after the `*/` that closes the comment whose contents start at `i`.
fn comment_end(b: &[u8], i: usize) -> usize {
    b.get(i..)
        .and_then(|rest| rest.windows(2).position(|w| w == b"*/"))
        .map_or(b.len(), |at| i + at + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(b: &[u8]) -> ExecuteBytes {
        ExecuteBytes::new(b, true)
    }

    /// An execute's bytes after the statement id: flags 0, iteration count 1, then `params`.
    fn execute(params: &[u8]) -> ExecuteBytes {
        let mut b = vec![0, 1, 0, 0, 0];
        b.extend_from_slice(params);
        bytes(&b)
    }

    fn sql(v: Value<'_>) -> String {
        let mut s = String::new();
        assert!(v.write_sql(&mut s));
        s
    }

    #[test]
    fn placeholders_are_found_outside_literals_identifiers_and_comments() {
        let text =
            "select ?, '?', \"?\\\"?\", `a?``?`, 'it''s ?' -- ?\n, ? # ?\n/* ? */ /*!50000 ? */ ?";
        let at: Vec<usize> = placeholders(text).collect();
        assert_eq!(at.len(), 4, "{at:?}");
        assert!(at.iter().all(|&i| &text[i..=i] == "?"));
        // `--` without a space after it is no comment.
        assert_eq!(placeholders("select 1--?").count(), 1);
    }

    #[test]
    fn every_type_reads_and_writes_as_the_server_logs_it() {
        let cases: &[(u16, &[u8], &str)] = &[
            (0x01, b"\xff", "-1"),
            (0x8001, b"\xff", "255"),
            (0x02, b"\x00\x80", "-32768"),
            (0x0d, b"\xe8\x07", "2024"),
            (0x03, b"\xff\xff\xff\x7f", "2147483647"),
            (
                0x8008,
                b"\xff\xff\xff\xff\xff\xff\xff\xff",
                "18446744073709551615",
            ),
            (0x04, &0.5f32.to_bits().to_le_bytes(), "0.5"),
            (0x05, &0.1f64.to_bits().to_le_bytes(), "0.1"),
            (0xf6, b"\x06-12.50", "-12.50"),
            (0xf6, b"\x03a'b", r"'a\'b'"),
            (0xfd, b"\x06a\nb\\c\x00", r"'a\nb\\c\0'"),
            (0xfc, b"\x02\xff\xfe", "0xFFFE"),
            (0x0a, b"\x04\xe8\x07\x02\x1d", "'2024-02-29'"),
            (0x0a, b"\x07\xe8\x07\x02\x1d\x01\x02\x03", "'2024-02-29'"),
            (
                0x0c,
                b"\x07\xe8\x07\x02\x1d\x17\x3b\x3a",
                "'2024-02-29 23:59:58'",
            ),
            (
                0x07,
                b"\x0b\xe8\x07\x02\x1d\x17\x3b\x3a\x40\xe2\x01\x00",
                "'2024-02-29 23:59:58.123456'",
            ),
            (0x0c, b"\x00", "'0000-00-00 00:00:00'"),
            (0x0b, b"\x08\x01\x01\x00\x00\x00\x02\x03\x04", "'-26:03:04'"),
            (0x0b, b"\x00", "'00:00:00'"),
            (0x06, b"", "NULL"),
        ];
        for &(ty, value, want) in cases {
            let mut params = vec![0x00, 0x01];
            params.extend_from_slice(&ty.to_le_bytes());
            params.extend_from_slice(value);
            let b = execute(&params);
            let mut types = Vec::new();
            let run = Execute::read(&b, 1, QueryAttributes::Off, &mut types)
                .unwrap_or_else(|e| panic!("type {ty:#06x}: {e}"));
            assert_eq!(sql(run.values()[0]), want, "type {ty:#06x}");
            assert_eq!(types, [ty]);
        }
    }

    #[test]
    fn types_come_from_an_earlier_execute_and_nulls_from_the_bitmap() {
        let mut types = Vec::new();
        // Bound: LONG, STRING; the second is NULL.
        let first = execute(b"\x02\x01\x03\x00\xfe\x00\x07\x00\x00\x00");
        let run = Execute::read(&first, 2, QueryAttributes::Off, &mut types).expect("bound");
        assert_eq!(run.values(), [Value::Int(7), Value::Null]);
        // Not bound again: the same types; the first is NULL now.
        let second = execute(b"\x01\x00\x02ab");
        let run = Execute::read(&second, 2, QueryAttributes::Off, &mut types).expect("unbound");
        assert_eq!(run.values(), [Value::Null, Value::Bytes(b"ab")]);
        assert_eq!(
            run.substitute("insert into t values (?, ?)").as_deref(),
            Some("insert into t values (NULL, 'ab')")
        );
        // Never bound in the capture: not known.
        let mut none = Vec::new();
        assert_eq!(
            Execute::read(&second, 2, QueryAttributes::Off, &mut none),
            Err(ExecuteError::TypesUnknown)
        );
    }

    #[test]
    fn query_attributes_add_a_count_and_names_and_are_left_out_of_the_values() {
        // Count 2 (one parameter, one attribute named "a"), bound: LONGLONG "", VAR_STRING "a".
        let b =
            execute(b"\x02\x00\x01\x08\x00\x00\xfd\x00\x01a\x05\x00\x00\x00\x00\x00\x00\x00\x01x");
        let mut types = Vec::new();
        let run = Execute::read(&b, 1, QueryAttributes::On, &mut types).expect("attributes");
        assert_eq!(run.values(), [Value::Int(5)]);
        // The login not seen: only the layout with attributes reads to the end.
        let mut types = Vec::new();
        let run = Execute::read(&b, 1, QueryAttributes::Unknown, &mut types).expect("guessed");
        assert_eq!(run.values(), [Value::Int(5)]);
        assert_eq!(types.len(), 2);
    }

    #[test]
    fn a_cut_or_wrong_execute_is_refused_and_leaves_the_types() {
        let mut types = vec![0x03];
        let cut = ExecuteBytes::new(b"\x00\x01\x00\x00\x00\x00\x01\x08\x00", false);
        assert_eq!(
            Execute::read(&cut, 1, QueryAttributes::Off, &mut types),
            Err(ExecuteError::Cut)
        );
        // Bound LONGLONG, but only 4 bytes of it.
        let short = execute(b"\x00\x01\x08\x00\x01\x02\x03\x04");
        assert_eq!(
            Execute::read(&short, 1, QueryAttributes::Off, &mut types),
            Err(ExecuteError::Malformed)
        );
        let unknown = execute(b"\x00\x01\x14\x00\x01");
        assert_eq!(
            Execute::read(&unknown, 1, QueryAttributes::Off, &mut types),
            Err(ExecuteError::UnknownType(0x14))
        );
        assert_eq!(types, [0x03]);
        // Markers not as many as the values: no text.
        let one = execute(b"\x00\x00\x01\x00\x00\x00");
        let run = Execute::read(&one, 1, QueryAttributes::Off, &mut types).expect("one");
        assert_eq!(run.substitute("select 1"), None);
        assert_eq!(run.substitute("select ?, ?"), None);
        assert_eq!(
            run.substitute("select '?', ?").as_deref(),
            Some("select '?', 1")
        );
    }

    proptest::proptest! {
        /// Whatever the bytes, a read never panics, reads as many values as the statement has
        /// parameters, and leaves the types alone when it fails; its text exists only for a statement
        /// with as many markers.
        #[test]
        fn any_bytes_read_or_are_refused(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
            count in 0u16..6,
            statement in "[?' \"`#\n/*a-c-]{0,20}",
        ) {
            let b = ExecuteBytes::new(&bytes, true);
            for attributes in [QueryAttributes::Off, QueryAttributes::On, QueryAttributes::Unknown] {
                let mut types = vec![0x08];
                match Execute::read(&b, count, attributes, &mut types) {
                    Ok(run) => {
                        proptest::prop_assert_eq!(run.values().len(), usize::from(count));
                        if placeholders(&statement).count() != usize::from(count) {
                            proptest::prop_assert!(run.substitute(&statement).is_none());
                        }
                    }
                    Err(_) => proptest::prop_assert_eq!(types, vec![0x08]),
                }
            }
        }
    }

    #[test]
    fn a_run_without_parameters_has_no_values() {
        let b = execute(b"");
        for attributes in [QueryAttributes::Off, QueryAttributes::Unknown] {
            let run = Execute::read(&b, 0, attributes, &mut Vec::new()).expect("none");
            assert_eq!(run.substitute("select 1").as_deref(), Some("select 1"));
        }
    }
}
