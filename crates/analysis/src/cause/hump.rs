//! The cause of a slow hump of response times: a server timeout that answers with an error (ERR 1205 at
//! innodb_lock_wait_timeout, ERR 3024 at max_execution_time, ERR 1969 at max_statement_time) when that
//! error answered most of the hump.
//!
//! It infers from the hump's traits as `rt.rs` summarizes them ([`HumpFacts`]) and never collects them.

use crate::humps::HumpError;
use crate::thresholds::HUMP_ERRORS_MAKE;
use crate::units;

use super::errors::error_meaning;
use super::model::{one_line, Cause, CauseError, CauseKind, Confidence, Sender, Setting};
use super::wait::{narrow_hump, round_wait, wait_words};

/// What the cause of a slow hump of response times is judged from.
pub(crate) struct HumpFacts<'a> {
    /// Its median response time, ns.
    pub(crate) center_ns: i64,
    /// p75/p25 of its response times.
    pub(crate) spread: f64,
    /// Its requests.
    pub(crate) count: u64,
    /// The error codes that answered its requests, most first.
    pub(crate) errors: &'a [HumpError],
    /// Its statement (fingerprint), when one holds most of it.
    pub(crate) statement: Option<&'a str>,
    /// Its earliest request answered by its main error code, as (request frame, response frame).
    pub(crate) first_error: Option<(u64, Option<u64>)>,
}

/// The cause of a slow hump, when its requests were stopped by a timeout of the server's that answers
/// with an error (ERR 1205 at innodb_lock_wait_timeout, ERR 3024 at max_execution_time, ERR 1969 at
/// max_statement_time) and that error answered most of them; `None` otherwise (a hump of successes, or
/// of errors no timer sends, is described by its traits, not given a cause).
pub(crate) fn of_hump(h: &HumpFacts<'_>) -> Option<Cause> {
    let e = h.errors.first().filter(|e| e.share >= HUMP_ERRORS_MAKE)?;
    let meaning = error_meaning(e.code)?;
    let setting = meaning.setting.filter(|s| {
        matches!(
            s,
            Setting::InnodbLockWaitTimeout | Setting::MaxExecutionTime | Setting::MaxStatementTime
        )
    })?;
    let narrow = narrow_hump(h.spread);
    let round = round_wait(h.center_ns).filter(|_| narrow);
    let what = match h.statement {
        Some(q) => format!("`{}`", one_line(q, 80)),
        None => "requests".to_string(),
    };
    let (waited, took) = match setting {
        Setting::InnodbLockWaitTimeout => ("for a row lock", "waited"),
        _ => ("running", "took"),
    };
    let (default, unit) = match setting {
        Setting::InnodbLockWaitTimeout => ("default 50 s", "s"),
        Setting::MaxExecutionTime => ("milliseconds; default 0: off", "ms"),
        _ => ("seconds; default 0: off", "s"),
    };
    let here = match (round, unit) {
        (Some(w), "s") => format!("{} s here; {default}", w.seconds),
        (Some(w), _) => format!("{} ms here; {default}", w.seconds * 1000),
        (None, _) if narrow => format!(
            "about {} here, less what the statements did before they began to wait; {default}",
            wait_words(h.center_ns)
        ),
        (None, _) => default.to_string(),
    };
    let mut c = Cause::new(
        CauseKind::StatementTimeout,
        Confidence::Certain,
        format!(
            "a timeout: {} ({here}): {} {took} {} (median) {waited} and got ERR {} `{}` ({})",
            setting.name(),
            if e.count == h.count {
                format!("all {} of the hump's requests", units::count(h.count))
            } else {
                format!(
                    "{} of the hump's {}",
                    units::count(e.count),
                    units::counted(h.count, "request", "requests")
                )
            },
            wait_words(h.center_ns),
            e.code,
            one_line(&e.message, 100),
            meaning.name,
        ),
    );
    let frames: Vec<u64> = h
        .first_error
        .map(|(q, r)| std::iter::once(q).chain(r).collect())
        .unwrap_or_default();
    c = c.with(
        format!(
            "ERR {} answered {} of the hump's {} ({}), {} of the capture's answered ERR {}{}",
            e.code,
            units::count(e.count),
            units::counted(h.count, "request", "requests"),
            what,
            units::percent(e.of_code),
            e.code,
            match h.first_error {
                Some((q, Some(r))) => format!("; the first: request frame {q}, ERR frame {r}"),
                Some((q, None)) => format!("; the first: request frame {q}"),
                None => String::new(),
            }
        ),
        &frames,
    );
    c = c.with(
        match round {
            Some(w) => format!(
                "their median wait, {}, is a whole number of seconds ({} s), and the middle half of the hump \
                 spans {:.1}%: a timer's wait, the same for every request",
                wait_words(h.center_ns),
                w.seconds,
                (h.spread - 1.0) * 100.0
            ),
            None if narrow => format!(
                "the middle half of the hump spans {:.1}% around its median, {}: one wait for every \
                 request, a timer's",
                (h.spread - 1.0) * 100.0,
                wait_words(h.center_ns)
            ),
            None => format!(
                "the hump is broad (its middle half spans {:.2}×): the waits differ from request to request",
                h.spread
            ),
        },
        &[],
    );
    c.sender = Sender::Server;
    c.setting = Some(setting);
    c.wait_s = Some(h.center_ns as f64 / 1e9);
    c.error = Some(CauseError {
        code: e.code,
        sql_state: e.sql_state.clone(),
        name: Some(meaning.name),
        meaning: Some(meaning.meaning),
        message: e.message.clone(),
        frame: h.first_error.and_then(|(_, r)| r).unwrap_or(0),
    });
    Some(c)
}
