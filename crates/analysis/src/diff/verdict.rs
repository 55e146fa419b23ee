//! The verdict of a diff, in words: what changed from A to B, where the added time went, and the
//! direction of cause.
//!
//! The order of its reasoning matters, because one cause shows in several figures:
//!
//! 0. **A reader that stopped reading.** Zero windows the clients advertised, more in one run beyond
//!    the noise, whose time is a large share of the time that run's requests took beyond the other's:
//!    the server waited on the clients, so neither the server nor the path is blamed for that time (and
//!    the round trip to the clients, whose ACKs a full receive buffer holds back, is not read as the
//!    path). A smaller share is a line of its own, as are zero windows the server advertised.
//!    A median and a mean that moved apart (most requests faster, a tail far slower, or the reverse)
//!    come before any story of direction: those stories are told of one change, and this is two.
//! 1. **The path, seen at a server.** A capture at the server does not see the path in its response
//!    times; it sees it in the fastest think times (a response, then the client's next request at
//!    once: the round trip plus the client's turnaround) and in the handshakes' SYN-ACK to ACK. When
//!    those grew by much more than the server's own time, the path (or the clients) got slower.
//! 2. **The load.** Response times that improve while the request rate drops and the clients wait
//!    longer between a response and their next request are the server working less, not a faster
//!    server; times that grow while the rate rises and the clients wait less are the server working
//!    more.
//! 3. **Where the time went.** Otherwise the statements that changed say it: the same time added to
//!    every statement whatever its work (a delay outside query execution: the path), the time in one or
//!    a few statements (the server's work on them), or every statement by a similar factor (the server
//!    as a whole).
//! 4. **Errors, rates, connections, ceilings** that changed follow, each said when beyond the noise.

use crate::histogram::RtSummary;
use crate::mysql::statement_label;
use crate::thresholds::{
    DIFF_CONCENTRATED_GROUPS, DIFF_CONCENTRATED_SHARE, DIFF_FEW_REQUESTS, DIFF_HANDSHAKE_SHARE,
    DIFF_PATH_FACTOR, DIFF_PATH_RTT_MIN_SHARE, DIFF_PATH_RTT_MIN_US, DIFF_RT_CHANGE_SHARE,
    DIFF_SHARED_WORK, DIFF_THINK_FACTOR, DIFF_TWO_WAYS_MEAN, DIFF_UNIFORM_SPREAD,
    DIFF_ZERO_WINDOW_SHARE,
};
use crate::units::{count, duration_us as dur, percent, seconds, significant};

use super::model::{CapturePoint, Change, Compared, Diff, Matching, Pair, PathLeg, StatementDiff};
use super::significance::CountTest;

/// The longest statement text a verdict quotes (the tables and JSON give it whole).
const QUOTED_CHARS: usize = 90;

/// Which way response times moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Slower,
    Faster,
}

impl Direction {
    fn change(self) -> Change {
        match self {
            Direction::Slower => Change::Slower,
            Direction::Faster => Change::Faster,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Direction::Slower => "slower",
            Direction::Faster => "faster",
        }
    }
}

/// The verdict of `d` (every figure it reads is in `d`, so the JSON holds its evidence).
pub(crate) fn verdict(d: &Diff) -> String {
    let mut said: Vec<String> = Vec::new();
    // Runs whose requests are all in TLS, not decrypted: their records' timing is what there is.
    let encrypted = encrypted_runs(d);
    said.extend(encrypted.as_ref().map(|(s, _)| s.clone()));
    let direction = rt_direction(d);
    let windows = window_changes(d);
    // Runs that did different work (or one held at a cap) compare mixes, not one workload before and
    // after a change: every story of why the times moved would be told of the mix.
    let apart = different_work(d).or_else(|| one_run_capped(d));
    // Times that moved two ways have no one direction to explain.
    let two_ways = moved_two_ways(d).filter(|_| apart.is_none());
    let direction = direction.filter(|_| apart.is_none() && two_ways.is_none());
    // The clients' zero windows that hold much of the added time lead: the server and the path are
    // then not to blame for it, which the stories below would otherwise do.
    let held = direction.and_then(|dir| windows.iter().find(|w| w.holds(d, dir)).map(|w| (dir, w)));
    let mut rate_said = false;
    let mut path_said = encrypted.as_ref().is_some_and(|(_, path)| *path);
    if let Some(s) = &apart {
        said.push(s.clone());
    } else if let Some((dir, w)) = held {
        said.push(clients_held_the_time(d, dir, w));
    } else if let Some(s) = path_at_server(d) {
        // Told of the think times, not of a direction of response times: both stand.
        said.push(s);
        said.extend(two_ways.clone());
        rate_said = true;
        path_said = true;
    } else if let Some(s) = &two_ways {
        said.push(s.clone());
    } else if let Some((s, rate)) = load_changed(d, direction) {
        said.push(s);
        rate_said = rate;
    } else if let Some(dir) = direction {
        let (s, used_path) = where_the_time_went(d, dir);
        said.push(s);
        path_said = used_path;
    }
    said.extend(errors(d));
    said.extend(
        windows
            .iter()
            .filter(|w| held.is_none_or(|(_, h)| h.reader != w.reader))
            .map(|w| w.sentence(d)),
    );
    said.extend(new_and_gone(d));
    if !rate_said {
        said.extend(rate(d));
    }
    said.extend(transactions(d));
    if direction.is_none()
        && !said.is_empty()
        && apart.is_none()
        && two_ways.is_none()
        && encrypted.is_none()
    {
        said.push(match (d.rt_us.a.count, d.rt_us.b.count) {
            (0, 0) => "No answered request in either run to compare response times.".to_string(),
            (_, 0) | (0, _) => format!(
                "Response times not compared: {} has no answered request.",
                if d.rt_us.a.count == 0 { "A" } else { "B" }
            ),
            _ => tail_moved(d).unwrap_or_else(|| {
                format!(
                    "Response times unchanged within the runs' noise ({}).",
                    p50_and_mean(&d.rt_us.a, &d.rt_us.b)
                )
            }),
        });
    }
    if !path_said {
        said.extend(handshakes(d, &windows));
    }
    said.extend(connections(d));
    said.extend(ceilings(d));
    if said.is_empty() {
        if d.rt_us.a.count == 0 && d.rt_us.b.count == 0 {
            return "No answered MySQL request in either run: only connections and rates compared; \
                    none differs beyond the runs' noise."
                .to_string();
        }
        let figures = format!(
            "response times ({}), requests per second ({} -> {}/s)",
            p50_and_mean(&d.rt_us.a, &d.rt_us.b),
            significant(d.load.requests_per_s.a, 3),
            significant(d.load.requests_per_s.b, 3)
        );
        // Nothing passed its test: with few requests, or none of the same statements, that is no
        // sign the runs are alike, and the verdict says which it is.
        let m = &d.matched;
        let (na, nb) = (d.rt_us.a.count, d.rt_us.b.count);
        let few = na.min(nb) < DIFF_FEW_REQUESTS;
        let none_shared =
            m.statements_in_both == 0 && m.statements_only_a + m.statements_only_b > 0;
        if few || none_shared {
            let share = if none_shared {
                format!("The runs share no statement ({})", only_in_one(m))
            } else {
                format!(
                    "Statement groups in both runs: {} ({} only in A, {} only in B)",
                    count(m.statements_in_both as u64),
                    count(m.statements_only_a as u64),
                    count(m.statements_only_b as u64)
                )
            };
            let judged = if few {
                format!(
                    "with {} answered in A and {} in B, too few to tell a change from the runs' noise",
                    count(na),
                    count(nb)
                )
            } else {
                "so their response times and rates, which no test finds apart, compare different work"
                    .to_string()
            };
            return format!("{share}, {judged}: {figures}.");
        }
        return format!(
            "No difference beyond the runs' noise: {figures}, errors and connections alike."
        );
    }
    said.join(" ")
}

/// When one run's traffic was held at a cap (a ceiling) and the other's was not: the cap, and that the
/// capped run's response times include the wait at it, so no story of load, path or server explains the
/// change of times (the rate limit on against off); `None` when both or neither were capped.
fn one_run_capped(d: &Diff) -> Option<String> {
    let (run, other, c, rt) = match (d.ceilings.a.first(), d.ceilings.b.first()) {
        (Some(c), None) => ("A", "B", c, &d.rt_us.a),
        (None, Some(c)) => ("B", "A", c, &d.rt_us.b),
        _ => return None,
    };
    let way = match c.direction {
        pcapsleuth_mysql::Direction::ClientToServer => "client to server",
        pcapsleuth_mysql::Direction::ServerToClient => "server to client",
    };
    let times = if rt.count > 0 {
        format!(
            "{run}'s response times (p50 {}, mean {}) include the wait at the cap",
            dur(rt.p50),
            dur(rt.mean)
        )
    } else {
        format!("{run}'s requests waited at the cap")
    };
    Some(format!(
        "{run}'s traffic was held flat at a cap ({}, {way}, pinned at {} for {}, load waiting behind \
         it; {other}: no cap): {times}, so the runs' response times ({}) and rates ({} -> {}/s) compare \
         a capped run with one that was not, and the change is the cap's before any server's or clients'.",
        c.server.as_deref().unwrap_or("all traffic"),
        crate::units::rate(c.kind, c.value),
        seconds(c.end - c.start),
        p50_and_mean(&d.rt_us.a, &d.rt_us.b),
        significant(d.load.requests_per_s.a, 3),
        significant(d.load.requests_per_s.b, 3)
    ))
}

/// "16 groups only in A, 19 groups only in B": the statement groups of one run only.
fn only_in_one(m: &Matching) -> String {
    format!(
        "{} only in A, {} only in B",
        plural(m.statements_only_a as u64, "group", "groups"),
        plural(m.statements_only_b as u64, "group", "groups")
    )
}

/// "A and B ran different work: ..." when the statement groups both runs ran hold less than
/// [`DIFF_SHARED_WORK`] of either run's requests (each run's own statement groups, folded ones aside,
/// are the whole); `None` when they share enough for the runs to be one workload, or a run has none.
fn different_work(d: &Diff) -> Option<String> {
    let (mut a_all, mut b_all, mut a_shared, mut b_shared) = (0u64, 0u64, 0u64, 0u64);
    for s in &d.statements {
        let (a, b) = (
            s.a.as_ref().map_or(0, |x| x.count),
            s.b.as_ref().map_or(0, |x| x.count),
        );
        a_all += a;
        b_all += b;
        if s.a.is_some() && s.b.is_some() {
            a_shared += a;
            b_shared += b;
        }
    }
    if a_all == 0 || b_all == 0 {
        return None;
    }
    let (sa, sb) = (
        a_shared as f64 / a_all as f64,
        b_shared as f64 / b_all as f64,
    );
    if sa.min(sb) >= DIFF_SHARED_WORK {
        return None;
    }
    let m = &d.matched;
    let shared = if m.statements_in_both == 0 {
        format!("no statement in both ({})", only_in_one(m))
    } else {
        format!(
            "the statements both ran make {} of A's requests and {} of B's ({} in both, {} only in A, \
             {} only in B)",
            percent(sa),
            percent(sb),
            plural(m.statements_in_both as u64, "statement group", "statement groups"),
            count(m.statements_only_a as u64),
            count(m.statements_only_b as u64)
        )
    };
    Some(format!(
        "A and B ran different work: {shared}, so their response times ({}) and rates ({} -> {}/s) \
         compare two mixes, not one workload before and after a change.",
        p50_and_mean(&d.rt_us.a, &d.rt_us.b),
        significant(d.load.requests_per_s.a, 3),
        significant(d.load.requests_per_s.b, 3)
    ))
}

/// The end whose receive window closed: the one that stopped reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    /// The clients: the server's responses waited on them.
    Clients,
    /// The server: the clients' uploads waited on it.
    Server,
}

/// One of the two runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    A,
    B,
}

impl Run {
    fn name(self) -> &'static str {
        match self {
            Run::A => "A",
            Run::B => "B",
        }
    }

    fn other(self) -> Run {
        match self {
            Run::A => Run::B,
            Run::B => Run::A,
        }
    }

    fn of<T: Copy>(self, p: &Pair<T>) -> T {
        match self {
            Run::A => p.a,
            Run::B => p.b,
        }
    }
}

/// Zero windows of one end, more in one run than in the other beyond the noise (their count per
/// request, the conditional binomial test).
struct WindowChange<'a> {
    reader: Reader,
    /// The run with more of them.
    more_in: Run,
    /// Segments advertising a zero window, each run's.
    windows: &'a Pair<u64>,
    /// Seconds of zero window, each run's.
    seconds: &'a Pair<f64>,
    test: CountTest,
}

/// The ends whose zero windows changed beyond the noise: the clients' first.
fn window_changes(d: &Diff) -> Vec<WindowChange<'_>> {
    let p = &d.path;
    [
        (
            Reader::Clients,
            &p.client_zero_windows,
            &p.client_zero_window_s,
            p.client_zero_window_test,
        ),
        (
            Reader::Server,
            &p.server_zero_windows,
            &p.server_zero_window_s,
            p.server_zero_window_test,
        ),
    ]
    .into_iter()
    .filter_map(|(reader, windows, seconds, test)| {
        let test = test.filter(|t| t.significant)?;
        let more_in = if test.ratio > 1.0 { Run::B } else { Run::A };
        Some(WindowChange {
            reader,
            more_in,
            windows,
            seconds,
            test,
        })
    })
    .collect()
}

impl WindowChange<'_> {
    /// Seconds of zero window the run with more of them added over the other's.
    fn added_s(&self) -> f64 {
        (self.more_in.of(self.seconds) - self.more_in.other().of(self.seconds)).max(0.0)
    }

    /// Whether these are the clients' zero windows in the slower run, and their added time holds at
    /// least [`DIFF_ZERO_WINDOW_SHARE`] of the time that run's requests took beyond the other's speed.
    fn holds(&self, d: &Diff, dir: Direction) -> bool {
        let slower = match dir {
            Direction::Slower => Run::B,
            Direction::Faster => Run::A,
        };
        let added = added_s(d, dir);
        self.reader == Reader::Clients
            && self.more_in == slower
            && added > 0.0
            && self.added_s() >= DIFF_ZERO_WINDOW_SHARE * added
    }

    /// "B's clients stopped reading: they advertised a zero window 21 times for 1.4 s in total (A: none;
    /// 0 -> 0.175 per request, p 1.3e-5)".
    fn evidence(&self) -> String {
        let (more, less) = (self.more_in, self.more_in.other());
        let (who, they) = match self.reader {
            Reader::Clients => ("clients", "they"),
            Reader::Server => ("server", "it"),
        };
        let other = zero_windows_words(less, self.windows, self.seconds);
        let (a, b) = (self.test.a_per_request, self.test.b_per_request);
        format!(
            "{}'s {who} stopped reading: {they} advertised a zero window {} in total ({}: {other}; {} -> \
             {} per request, p {})",
            more.name(),
            zero_windows_words(more, self.windows, self.seconds),
            less.name(),
            significant(a, 3),
            significant(b, 3),
            p_text(self.test.p)
        )
    }

    /// The change said as a verdict line of its own, with what it means.
    fn sentence(&self, d: &Diff) -> String {
        let meaning = match self.reader {
            Reader::Clients => {
                "; the server waited on the clients then, not the other way round (a slow consumer, \
                 per-row work in the application, a full socket buffer)"
            }
            Reader::Server => {
                "; the clients' uploads (large INSERTs, LOAD DATA, big packets) waited on the server \
                 taking them in, not on the path"
            }
        };
        format!("{}{meaning}{}.", self.evidence(), self.acks_held_back(d))
    }

    /// The round trip to the end that stopped reading, when it grew beyond the noise: a receiver whose
    /// buffer is full holds its ACKs back, so this is not the path.
    fn acks_held_back(&self, d: &Diff) -> String {
        let (leg, c) = match self.reader {
            Reader::Clients => ("to the clients", &d.path.rtt_to_client_us),
            Reader::Server => ("to the server", &d.path.rtt_to_server_us),
        };
        let (slow, fast) = match self.more_in {
            Run::B => (&c.b, &c.a),
            Run::A => (&c.a, &c.b),
        };
        if !c.test.is_some_and(|t| t.significant) || slow.p50 <= fast.p50 {
            return String::new();
        }
        format!(
            "; {} ACKs came later with it (the round trip {leg} p50 {} -> {}): a receiver with a full \
             buffer holds them back, which is not the path",
            match self.reader {
                Reader::Clients => "their",
                Reader::Server => "its",
            },
            dur(c.a.p50),
            dur(c.b.p50)
        )
    }
}

/// Seconds B's requests took beyond A's speed (`Slower`), or A's beyond B's (`Faster`): the added time
/// of the statement groups that changed that way.
fn added_s(d: &Diff, dir: Direction) -> f64 {
    d.statements
        .iter()
        .filter(|s| s.change == dir.change())
        .map(|s| s.added_us.abs())
        .sum::<f64>()
        / 1e6
}

/// The headline when the clients' zero windows hold much of the added time: how much slower, the
/// statements the time went to, and that the server waited on the clients: not the server's time, nor
/// the path's.
fn clients_held_the_time(d: &Diff, dir: Direction, w: &WindowChange<'_>) -> String {
    let mut s = rt_headline(d, dir);
    let (changed, tested) = compared(d, dir);
    if !changed.is_empty() {
        concentrated(&mut s, dir, &changed, &tested);
    }
    let slower = w.more_in;
    let added = added_s(d, dir);
    s.push_str(&format!(
        ". {}, as much as {} of the {} {}'s requests took beyond {}'s speed: the server waited on the \
         clients, not the other way round; that time is the clients' (a slow consumer, per-row work in \
         the application, a full socket buffer), not the server's or the path's{}.",
        w.evidence(),
        percent((w.added_s() / added).min(1.0)),
        seconds(added),
        slower.name(),
        slower.other().name(),
        w.acks_held_back(d)
    ));
    if !d.load.rate_test.is_some_and(|t| t.significant) {
        s.push(' ');
        s.push_str(&requests_per_second(d));
    }
    s
}

/// Transactions whose time changed beyond the noise: how much, their rate, and the share of their time
/// spent waiting for the client (which says whether the change is the server's or the clients').
fn transactions(d: &Diff) -> Option<String> {
    let tx = &d.load.transaction_rt_us;
    let t = tx.test.filter(|t| t.significant)?;
    let word = if t.effect > 0.5 { "slower" } else { "faster" };
    let idle = &d.load.idle_in_transaction_share;
    let tps = &d.load.transactions_per_s;
    Some(format!(
        "Transactions got {word} (first statement to the answer to their COMMIT or ROLLBACK: {}; {} -> \
         {} per second), of which the client's silences between statements are {} -> {}.",
        p50_and_mean(&tx.a, &tx.b),
        significant(tps.a, 3),
        significant(tps.b, 3),
        percent(idle.a),
        percent(idle.b)
    ))
}

/// "p50 56.1 µs -> 2.31 ms, mean 115 µs -> 2.47 ms".
fn p50_and_mean(a: &RtSummary, b: &RtSummary) -> String {
    // A run without any has no median to show, not one of 0 µs.
    let one =
        |r: &RtSummary, run: &str| format!("p50 {}, mean {} in {run}", dur(r.p50), dur(r.mean));
    match (a.count, b.count) {
        (0, 0) => "none in either run".to_string(),
        (_, 0) => format!("{}; none in B", one(a, "A")),
        (0, _) => format!("none in A; {}", one(b, "B")),
        _ => format!(
            "p50 {} -> {}, mean {} -> {}",
            dur(a.p50),
            dur(b.p50),
            dur(a.mean),
            dur(b.mean)
        ),
    }
}

/// `` `select c from sbtest1 where id=?` ``, `` `[execute] select ...` ``, cut to [`QUOTED_CHARS`].
fn quoted(s: &StatementDiff) -> String {
    format!("`{}`", elide(&statement_label(&s.command, &s.fingerprint)))
}

/// "Response times moved two ways: ..." when the median moved one way beyond the runs' noise and the
/// mean the other by [`DIFF_TWO_WAYS_MEAN`] or more: most of B's requests faster and a few far slower
/// (retransmission timeouts, a lock wait, one huge statement), or the reverse. The stories of one
/// direction (less load, a slower path, a slower server) would each explain one half and contradict the
/// other, so none is told.
fn moved_two_ways(d: &Diff) -> Option<String> {
    let (a, b) = (&d.rt_us.a, &d.rt_us.b);
    if a.count.min(b.count) < DIFF_FEW_REQUESTS || a.p50 <= 0.0 || a.mean <= 0.0 {
        return None;
    }
    let t = d.rt_us.test.filter(|t| t.significant)?;
    let (p50, mean) = (b.p50 / a.p50, b.mean / a.mean);
    let figures = |x: f64, y: f64| format!("{} -> {}", dur(x), dur(y));
    // The p95 is cited beside the median only when it moved the same way: a tail may begin below it.
    let typical = if (b.p95 < a.p95) == (p50 < 1.0) && b.p95 != a.p95 {
        format!(
            "p50 {}, p95 {}",
            figures(a.p50, b.p50),
            figures(a.p95, b.p95)
        )
    } else {
        format!("p50 {}", figures(a.p50, b.p50))
    };
    // The tail's figure: the p99 or else the maximum, whichever moved the mean's way (none may have,
    // when the tail lies between them).
    let tail = |grew: bool| {
        [("p99", a.p99, b.p99), ("max", a.max, b.max)]
            .into_iter()
            .find(|&(_, x, y)| if grew { y > x } else { y < x })
            .map(|(name, x, y)| format!(" ({name} {})", figures(x, y)))
            .unwrap_or_default()
    };
    if t.effect < 0.5 && p50 < 1.0 && mean >= DIFF_TWO_WAYS_MEAN {
        Some(format!(
            "Response times moved two ways: most of B's requests were answered faster ({typical}), \
             while a few took far longer{}, so that the mean grew {}× ({}). The time B lost is in a tail of \
             slow requests, not in the typical one.",
            tail(true),
            significant(mean, 3),
            figures(a.mean, b.mean),
        ))
    } else if t.effect > 0.5 && p50 > 1.0 && mean <= 1.0 / DIFF_TWO_WAYS_MEAN {
        Some(format!(
            "Response times moved two ways: most of B's requests were answered slower ({typical}), \
             while A had a few that took far longer{}, so that B's mean is {} lower ({}). The time B \
             gained is A's tail of slow requests gone, not a faster typical request.",
            tail(false),
            percent(1.0 - mean),
            figures(a.mean, b.mean),
        ))
    } else {
        None
    }
}

/// Whether response times changed, and which way: the time B's requests spent beyond A's speed over
/// the statements that changed significantly, when it is a large enough share of B's time; else the
/// overall rank test.
fn rt_direction(d: &Diff) -> Option<Direction> {
    let added: f64 = d.statements.iter().map(|s| s.added_us).sum();
    let b_time = d.rt_us.b.mean * d.rt_us.b.count as f64;
    if b_time > 0.0 && added.abs() >= DIFF_RT_CHANGE_SHARE * b_time {
        return Some(if added > 0.0 {
            Direction::Slower
        } else {
            Direction::Faster
        });
    }
    match d.rt_us.test {
        Some(t) if t.significant && t.effect > 0.5 => Some(Direction::Slower),
        Some(t) if t.significant => Some(Direction::Faster),
        _ => None,
    }
}

/// "B is 41.2× slower at p50 (56.1 µs -> 2.31 ms; mean 115 µs -> 2.47 ms)", or by the mean when the
/// medians did not move the same way.
fn rt_headline(d: &Diff, dir: Direction) -> String {
    let (a, b) = (&d.rt_us.a, &d.rt_us.b);
    let ratio = |x: f64, y: f64| if x > 0.0 { y / x } else { f64::INFINITY };
    let p50 = ratio(a.p50, b.p50);
    let by_median = d.rt_us.test.is_some_and(|t| t.significant)
        && match dir {
            Direction::Slower => p50 >= 1.1,
            Direction::Faster => p50 <= 1.0 / 1.1,
        };
    if by_median {
        let k = if dir == Direction::Slower {
            p50
        } else {
            1.0 / p50
        };
        format!(
            "B is {}× {} at p50 ({} -> {}; mean {} -> {})",
            significant(k, 3),
            dir.word(),
            dur(a.p50),
            dur(b.p50),
            dur(a.mean),
            dur(b.mean)
        )
    } else {
        let mean = ratio(a.mean, b.mean);
        let how = if mean >= 1.0 {
            format!("{}× as long", significant(mean, 3))
        } else {
            format!("{} less time", percent(1.0 - mean))
        };
        // The statements compared moved one way and the requests as a whole the other: B ran another
        // mix of statements, and "B is slower" alone would contradict its own figures.
        let against = match dir {
            Direction::Slower => mean < 1.0,
            Direction::Faster => mean > 1.0,
        };
        if against {
            return format!(
                "The statements both runs ran are {} in B, though its requests took {how} on average, \
                 another mix of statements (mean {} -> {}; p50 {} -> {})",
                dir.word(),
                dur(a.mean),
                dur(b.mean),
                dur(a.p50),
                dur(b.p50)
            );
        }
        format!(
            "B is {}: its requests took {how} on average (mean {} -> {}; p50 {} -> {})",
            dir.word(),
            dur(a.mean),
            dur(b.mean),
            dur(a.p50),
            dur(b.p50)
        )
    }
}

/// A path that got slower, seen at a server: the fastest think times grew far more than the server's
/// own response time.
fn path_at_server(d: &Diff) -> Option<String> {
    let think = &d.load.think_time_us;
    if !think.test.is_some_and(|t| t.significant && t.effect > 0.5) {
        return None;
    }
    let floor = d.load.think_p10_us.b - d.load.think_p10_us.a;
    let own = d.rt_us.b.mean - d.rt_us.a.mean;
    if floor <= 0.0 || floor < DIFF_PATH_FACTOR * own.abs() {
        return None;
    }
    let ack = &d.path.synack_to_ack_us;
    // At the server, SYN-ACK to ACK is a round trip to the client with no think time in it. When both
    // runs have handshakes and theirs moved by less than half of `floor`, a longer route is ruled out,
    // and the round trip timed from ACKs is no evidence either: the ACKs that ride on the clients' next
    // requests come when those do. A queue on the path that holds back data but not the handshakes
    // (a bandwidth cap) is not ruled out: the capture cannot tell it from the clients' own time.
    let handshakes_deny = handshakes_rule_out(&ack.a, &ack.b, floor);
    let rtt = rtt_grew(d)
        .filter(|(leg, _)| *leg == "to the client")
        .filter(|_| !handshakes_deny);
    let handshakes_grew = grew(&ack.a, &ack.b);
    let path = rtt.is_some() || handshakes_grew;
    let who = if path {
        "The path between the server and its clients got slower"
    } else {
        "The clients (or the path to them) got slower to send their next request"
    };
    let mut s = format!(
        "{who}: seen at the server, the fastest tenth of the clients' next requests came {} later after a \
         response (p10 {} -> {})",
        dur(floor),
        dur(d.load.think_p10_us.a),
        dur(d.load.think_p10_us.b)
    );
    if let Some((_, c)) = rtt {
        s.push_str(&format!(
            " and the round trip to the clients (server data to the ACK that first covers it) went from {} \
             to {} at p50 ({})",
            dur(c.a.p50),
            dur(c.b.p50),
            samples(c)
        ));
    } else if handshakes_grew {
        s.push_str(&format!(
            " and the TCP handshakes' SYN-ACK to ACK took {} instead of {} ({})",
            dur(ack.b.p50),
            dur(ack.a.p50),
            medians_of(ack.a.count, ack.b.count)
        ));
    }
    let own = format!(
        "the server's own response time changed by {} at p50 ({} -> {})",
        dur(d.rt_us.b.p50 - d.rt_us.a.p50),
        dur(d.rt_us.a.p50),
        dur(d.rt_us.b.p50)
    );
    if handshakes_deny && !path {
        s.push_str(&format!(
            ", while the TCP handshakes' SYN-ACK to ACK, a round trip to the clients with nothing of \
             theirs in it, took {} instead of {} ({}), and {own}: no longer route, so either the clients \
             took about {} longer before their next request, or a queue on the path held their data back \
             (a bandwidth cap); a capture at the server cannot tell them apart.",
            dur(ack.b.p50),
            dur(ack.a.p50),
            medians_of(ack.a.count, ack.b.count),
            dur(floor)
        ));
    } else {
        s.push_str(&format!(
            ", while {own}: each answer reached the clients about {} later, which a capture at the server \
             does not see in its response times.",
            dur(floor)
        ));
    }
    s.push(' ');
    s.push_str(&requests_per_second(d));
    Some(s)
}

/// Whether both runs' handshakes (a bare round trip, `a` and `b`) rule out a longer route carrying
/// `added_us`: both have some, and their median moved by less than [`DIFF_HANDSHAKE_SHARE`] of it.
fn handshakes_rule_out(a: &RtSummary, b: &RtSummary, added_us: f64) -> bool {
    a.count > 0 && b.count > 0 && b.p50 - a.p50 < DIFF_HANDSHAKE_SHARE * added_us
}

/// Whether every value of `b` is above every value of `a`, and its median at least twice A's: a
/// handful of handshakes says little more, and this much it says for sure.
fn grew(a: &RtSummary, b: &RtSummary) -> bool {
    a.count > 0 && b.count > 0 && b.min > a.max && b.p50 >= 2.0 * a.p50
}

/// "Requests per second unchanged within the noise (810 -> 840/s)." or how they changed.
fn requests_per_second(d: &Diff) -> String {
    let r = &d.load.requests_per_s;
    match d.load.rate_test {
        Some(t) if t.significant && !t.ratio.is_finite() => format!(
            "B sent requests where A sent none (0 -> {}/s).",
            significant(r.b, 3)
        ),
        // "13.3× as many", not "1234% more".
        Some(t) if t.significant && t.ratio >= 2.0 => format!(
            "B sent {}× as many requests per second ({} -> {}/s).",
            significant(t.ratio, 3),
            significant(r.a, 3),
            significant(r.b, 3)
        ),
        Some(t) if t.significant => format!(
            "B sent {} {} requests per second ({} -> {}/s).",
            percent((t.ratio - 1.0).abs()),
            if t.ratio > 1.0 { "more" } else { "fewer" },
            significant(r.a, 3),
            significant(r.b, 3)
        ),
        _ => format!(
            "Requests per second unchanged within the noise ({} -> {}/s).",
            significant(r.a, 3),
            significant(r.b, 3)
        ),
    }
}

/// The clients offered less (or more) load and the response times followed: the headline, and whether
/// it said the rate.
fn load_changed(d: &Diff, dir: Option<Direction>) -> Option<(String, bool)> {
    let dir = dir?;
    let t = d.load.rate_test.filter(|t| t.significant)?;
    let think = &d.load.think_time_us;
    let think_ratio = if think.a.mean > 0.0 {
        think.b.mean / think.a.mean
    } else {
        1.0
    };
    let conns = &d.load.active_connections;
    let inflight = &d.load.in_flight;
    // A server "less busy" with more requests in flight (or busier with fewer) is not one: the load
    // story needs the requests in flight to have moved with the rate.
    let (less, more) = (
        t.ratio < 1.0
            && inflight.b < inflight.a
            && (think_ratio >= DIFF_THINK_FACTOR || conns.b < conns.a),
        t.ratio > 1.0
            && inflight.b > inflight.a
            && (think_ratio <= 1.0 / DIFF_THINK_FACTOR || conns.b > conns.a),
    );
    let r = &d.load.requests_per_s;
    let connections = if conns.a == conns.b {
        format!(
            "over the same {}",
            plural(conns.b, "connection", "connections")
        )
    } else {
        format!(
            "over {} (A: {})",
            plural(conns.b, "connection", "connections"),
            count(conns.a)
        )
    };
    // A run whose rate was held at a cap (a ceiling) did not offer the load it sent: its clients
    // waited on the cap, and a change of rate is not theirs to explain.
    if !d.ceilings.a.is_empty() || !d.ceilings.b.is_empty() {
        return None;
    }
    let think_words = format!(
        "mean think time {} -> {}",
        dur(think.a.mean),
        dur(think.b.mean)
    );
    // What made the load change: the clients' pauses, or how many of them there were.
    let (waiting_longer, waiting_less) = (
        if think_ratio >= DIFF_THINK_FACTOR {
            format!("waiting longer between a response and their next request ({think_words})")
        } else {
            format!("fewer of them at once ({think_words})")
        },
        if think_ratio <= 1.0 / DIFF_THINK_FACTOR {
            format!("waiting less between a response and their next request ({think_words})")
        } else {
            format!("more of them at once ({think_words})")
        },
    );
    match (dir, less, more) {
        (Direction::Faster, true, _) => Some((
            format!(
                "The clients offered less load, and the server's response times improved with it: B's \
                 clients sent {} requests/s instead of {} ({}) {connections}, {waiting_longer}, so {} \
                 requests were in flight on average instead of {}. The server answered faster ({}) because it was less busy, not because it got \
                 faster: the change is on the clients' side.",
                significant(r.b, 3),
                significant(r.a, 3),
                signed_percent(t.ratio - 1.0),
                significant(inflight.b, 3),
                significant(inflight.a, 3),
                p50_and_mean(&d.rt_us.a, &d.rt_us.b)
            ),
            true,
        )),
        (Direction::Slower, _, true) => Some((
            format!(
                "The clients offered more load, and the server's response times grew with it: B's clients \
                 sent {} requests/s instead of {} ({}) {connections}, {waiting_less}, so {} requests were in \
                 flight on average instead of {}; \
                 the server answered slower ({}).",
                significant(r.b, 3),
                significant(r.a, 3),
                signed_percent(t.ratio - 1.0),
                significant(inflight.b, 3),
                significant(inflight.a, 3),
                p50_and_mean(&d.rt_us.a, &d.rt_us.b)
            ),
            true,
        )),
        _ => None,
    }
}

/// "median of 4 in each run", "median of 4 in A and 6 in B".
fn medians_of(a: u64, b: u64) -> String {
    if a == b {
        format!("median of {} in each run", count(a))
    } else {
        format!("median of {} in A and {} in B", count(a), count(b))
    }
}

/// "2.12 ms to 2.29 ms", or one duration when both read the same.
fn range(lo: f64, hi: f64) -> String {
    if dur(lo) == dur(hi) {
        dur(lo)
    } else {
        format!("{} to {}", dur(lo), dur(hi))
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    crate::units::counted(n, one, many)
}

/// "+61%", "-94%".
fn signed_percent(change: f64) -> String {
    format!(
        "{}{}",
        if change >= 0.0 { "+" } else { "-" },
        percent(change.abs())
    )
}

/// The statement groups that changed `dir`'s way, and those tested at all (changed or not).
fn compared(d: &Diff, dir: Direction) -> (Vec<&StatementDiff>, Vec<&StatementDiff>) {
    let changed = d
        .statements
        .iter()
        .filter(|x| x.change == dir.change())
        .collect();
    let tested = d
        .statements
        .iter()
        .filter(|x| {
            matches!(
                x.change,
                Change::Slower | Change::Faster | Change::Unchanged
            )
        })
        .collect();
    (changed, tested)
}

/// Where B's added (or saved) time went: the headline and the statements; and whether it named the
/// path's handshakes.
fn where_the_time_went(d: &Diff, dir: Direction) -> (String, bool) {
    let mut s = rt_headline(d, dir);
    let (changed, tested) = compared(d, dir);
    let answered_b = |x: &&StatementDiff| x.b.as_ref().map_or(0, |b| b.answered);
    let tested_b: u64 = tested.iter().map(answered_b).sum();
    let changed_b: u64 = changed.iter().map(answered_b).sum();
    let deltas: Vec<(f64, f64)> = changed
        .iter()
        .filter_map(|x| {
            let (a, b) = (x.a.as_ref()?, x.b.as_ref()?);
            Some((
                b.rt_us.p50 - a.rt_us.p50,
                b.rt_us.p50 / a.rt_us.p50.max(1e-3),
            ))
        })
        .collect();
    let spread = |v: &mut dyn Iterator<Item = f64>| {
        let (lo, hi) = v.fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
            (lo.min(x.abs()), hi.max(x.abs()))
        });
        (lo, hi)
    };
    let (dlo, dhi) = spread(&mut deltas.iter().map(|x| x.0));
    let (rlo, rhi) = spread(&mut deltas.iter().map(|x| x.1));
    let broad = changed.len() >= 2 && tested_b > 0 && changed_b as f64 >= 0.8 * tested_b as f64;
    let additive = broad && dlo > 0.0 && dhi / dlo <= DIFF_UNIFORM_SPREAD;
    let multiplicative = broad && rlo > 0.0 && rhi / rlo <= DIFF_UNIFORM_SPREAD;
    let mut path_said = false;
    if additive && !multiplicative {
        path_said = same_time_added(&mut s, d, dir, (&changed, &tested), (dlo, dhi));
    } else if multiplicative {
        s.push_str(&format!(
            ": {} of {} statements compared got {} by a similar factor ({}-{}× at p50): the server as a \
             whole answered {}, where a change on the path would have added the same time to each.",
            count(changed.len() as u64),
            count(tested.len() as u64),
            dir.word(),
            significant(rlo, 3),
            significant(rhi, 3),
            dir.word()
        ));
    } else if !changed.is_empty() {
        if let Some(named) = concentrated(&mut s, dir, &changed, &tested) {
            s.push_str(&format!(
                ". The server's work on {} changed (data no longer in memory, a plan, locks): a change \
                 on the path would have {} every statement alike.",
                if named == 1 { "it" } else { "them" },
                if dir == Direction::Slower {
                    "slowed"
                } else {
                    "sped up"
                }
            ));
        } else {
            s.push('.');
        }
    } else {
        s.push('.');
    }
    // A rate that changed beyond the noise is said with the statements that moved it (`rate`).
    if !d.load.rate_test.is_some_and(|t| t.significant) {
        s.push(' ');
        s.push_str(&requests_per_second(d));
    }
    (s, path_said)
}

/// Every changed statement got slower (or faster) by about the same time, `dlo` to `dhi` µs at p50: said
/// of the statements and the connections, then what the path says of it; whether it named the path.
fn same_time_added(
    s: &mut String,
    d: &Diff,
    dir: Direction,
    (changed, tested): (&[&StatementDiff], &[&StatementDiff]),
    (dlo, dhi): (f64, f64),
) -> bool {
    let fastest = changed
        .iter()
        .filter_map(|x| Some((x, x.a.as_ref()?.rt_us.p50, x.b.as_ref()?.rt_us.p50)))
        .min_by(|x, y| x.1.total_cmp(&y.1));
    s.push_str(&format!(
        ": every statement got {} by about the same time, {} at p50 ({} of {} compared",
        dir.word(),
        range(dlo, dhi),
        count(changed.len() as u64),
        count(tested.len() as u64)
    ));
    if let Some((x, a, b)) = fastest {
        s.push_str(&format!("; {} {} -> {}", quoted(x), dur(a), dur(b)));
    }
    s.push(')');
    let m = &d.load.connection_medians_us;
    let everywhere = m.a.count > 0
        && m.b.count > 0
        && match dir {
            Direction::Slower => m.b.min > m.a.max,
            Direction::Faster => m.b.max < m.a.min,
        };
    if everywhere {
        s.push_str(&format!(
            ", on every connection (the medians of B's {}: {}; of A's: {})",
            plural(m.b.count, "connection", "connections"),
            range(m.b.min, m.b.max),
            range(m.a.min, m.a.max)
        ));
    }
    not_the_servers_query_time(s, d, dir, dlo)
}

/// The same time added to every request is not the server's query time: what the path's round trips say
/// of it (TCP's own timing when it grew by at least half `dlo`, the least time added to a statement, else
/// the handshakes); whether it named the path.
fn not_the_servers_query_time(s: &mut String, d: &Diff, dir: Direction, dlo: f64) -> bool {
    let mut path_said = false;
    let hs = &d.path.handshake_rtt_us;
    let client = d.runs.b.capture_point == CapturePoint::Client;
    // The round trip from TCP's own timing explains the added time when its leg grew beyond the
    // noise by at least half the smallest time added to a statement.
    // The handshakes are a bare round trip: when both runs have them and they did not grow by half
    // that time, no longer route carries it, whatever the ACKs that ride on the answers say.
    let handshakes_deny = handshakes_rule_out(&hs.a, &hs.b, dlo);
    let rtt = rtt_grew(d)
        .filter(|(_, c)| c.b.p50 - c.a.p50 >= 0.5 * dlo)
        .filter(|_| !handshakes_deny);
    let timed = rtt_timed(d);
    if dir == Direction::Slower && rtt.is_some() {
        if let Some((leg, c)) = rtt {
            path_said = true;
            s.push_str(&format!(
                ". The same time added to every request whatever its work is not the server's query \
                 time: the path's round trip {leg} grew from {} to {} (data to the ACK that first \
                 covers it, p50 of {}{}).",
                dur(c.a.p50),
                dur(c.b.p50),
                samples(c),
                if client { "; captured at the client" } else { "" }
            ));
        }
    } else if dir == Direction::Slower && !timed && grew(&hs.a, &hs.b) {
        path_said = true;
        s.push_str(&format!(
            ". The same time added to every request whatever its work is not the server's query time: \
             the path's round trip grew from {} to {} (TCP handshakes, SYN to ACK, {}{}).",
            dur(hs.a.p50),
            dur(hs.b.p50),
            medians_of(hs.a.count, hs.b.count),
            if client { "; captured at the client" } else { "" }
        ));
    } else if dir == Direction::Slower && handshakes_deny {
        path_said = true;
        s.push_str(&format!(
            ". The same time added to every request whatever its work lies outside the server's \
             query execution, and no longer route carries it: the TCP handshakes, a bare round trip, \
             took {} instead of {} ({}); a proxy in front of the server, the server's network stack, or \
             a queue on the path that holds data back (a bandwidth cap) holds it",
            dur(hs.b.p50),
            dur(hs.a.p50),
            medians_of(hs.a.count, hs.b.count)
        ));
        if let Some((leg, c)) = rtt_grew(d) {
            s.push_str(&format!(
                " (the round trip {leg} timed from TCP's ACKs grew with it, {} -> {} at p50, as those \
                 ACKs ride on the answers)",
                dur(c.a.p50),
                dur(c.b.p50)
            ));
        }
        s.push('.');
    } else if dir == Direction::Slower {
        s.push_str(
            ". The same time added to every request whatever its work lies outside the server's \
             query execution (the path, a proxy, or the server's network stack)",
        );
        if timed {
            path_said = true;
            let p = &d.path;
            s.push_str(&format!(
                "; the round trips from TCP's ACKs did not show it (p50 to the server {} -> {}, to \
                 the client {} -> {})",
                dur(p.rtt_to_server_us.a.p50),
                dur(p.rtt_to_server_us.b.p50),
                dur(p.rtt_to_client_us.a.p50),
                dur(p.rtt_to_client_us.b.p50)
            ));
        } else if hs.a.count > 0 && hs.b.count > 0 {
            path_said = true;
            s.push_str(&format!(
                "; the TCP handshakes did not show it ({} -> {})",
                dur(hs.a.p50),
                dur(hs.b.p50)
            ));
        }
        s.push('.');
    } else {
        s.push('.');
    }
    path_said
}

/// The changed time concentrated in a few statement groups: the ones that hold most of it, with their
/// share and times, and the count of statements that changed, did not, or went the other way; how many
/// it named when they hold [`DIFF_CONCENTRATED_SHARE`] of the time (the caller says what that means).
fn concentrated(
    s: &mut String,
    dir: Direction,
    changed: &[&StatementDiff],
    tested: &[&StatementDiff],
) -> Option<usize> {
    let unchanged = tested
        .iter()
        .filter(|x| x.change == Change::Unchanged)
        .count();
    let mut ranked = changed.to_vec();
    ranked.sort_by(|x, y| y.added_share.total_cmp(&x.added_share));
    let mut held = 0.0;
    let mut named = Vec::new();
    for x in ranked.iter().take(DIFF_CONCENTRATED_GROUPS) {
        named.push(*x);
        held += x.added_share;
        if held >= DIFF_CONCENTRATED_SHARE {
            break;
        }
    }
    let what = if dir == Direction::Slower {
        "added"
    } else {
        "saved"
    };
    let each: Vec<String> = named
        .iter()
        .map(|x| {
            let (a, b) = (x.a.as_ref(), x.b.as_ref());
            format!(
                "{} (p50 {} -> {}, mean {} -> {})",
                quoted(x),
                dur(a.map_or(0.0, |a| a.rt_us.p50)),
                dur(b.map_or(0.0, |b| b.rt_us.p50)),
                dur(a.map_or(0.0, |a| a.rt_us.mean)),
                dur(b.map_or(0.0, |b| b.rt_us.mean))
            )
        })
        .collect();
    let shares: Vec<String> = named.iter().map(|x| percent(x.added_share)).collect();
    s.push_str(&format!(
        "; {} of the {what} time is in {}",
        shares.join(" and "),
        each.join(" and ")
    ));
    let other_way = tested
        .iter()
        .filter(|x| !matches!(x.change, Change::Unchanged) && x.change != dir.change())
        .count();
    let opposite = if dir == Direction::Slower {
        "faster"
    } else {
        "slower"
    };
    s.push_str(&format!(
        " ({} of {} statements compared got {}, {} unchanged{})",
        count(changed.len() as u64),
        count(tested.len() as u64),
        dir.word(),
        count(unchanged as u64),
        if other_way > 0 {
            format!(", {} {opposite}", count(other_way as u64))
        } else {
            String::new()
        }
    ));
    (held >= DIFF_CONCENTRATED_SHARE).then_some(named.len())
}

/// Error codes new in B, gone, or more or fewer per second beyond the noise.
fn errors(d: &Diff) -> Vec<String> {
    let mut out = Vec::new();
    for e in &d.errors {
        let significant_change = e.rate_test.is_some_and(|t| t.significant);
        if !significant_change {
            continue;
        }
        let message = e
            .messages
            .first()
            .map_or_else(String::new, |m| format!(": {}", one_line(m)));
        let answering: Vec<String> = e
            .statements
            .iter()
            .take(3)
            .map(|s| {
                let label = statement_label(&s.command, &s.fingerprint);
                let n = match e.change {
                    "gone" => s.count.a,
                    _ => s.count.b,
                };
                format!("`{}` ({})", elide(&label), count(n))
            })
            .collect();
        let answering = if answering.is_empty() {
            String::new()
        } else {
            format!(", answering {}", answering.join(", "))
        };
        let code = if e.sql_state.is_empty() {
            format!("ERR {}", e.code)
        } else {
            format!("ERR {} ({})", e.code, e.sql_state)
        };
        out.push(match e.change {
            "new" => format!(
                "New in B: {code} × {}{message}{answering}.",
                count(e.count.b)
            ),
            "gone" => format!("Gone in B: {code} × {} in A{message}.", count(e.count.a)),
            change => {
                let r = e.rate_test.map_or((0.0, 0.0), |t| (t.a_per_s, t.b_per_s));
                format!(
                    "{} {code} in B: {} -> {} ({} -> {}/s){message}{answering}.",
                    if change == "more" { "More" } else { "Fewer" },
                    count(e.count.a),
                    count(e.count.b),
                    significant(r.0, 3),
                    significant(r.1, 3)
                )
            }
        });
    }
    out
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn elide(s: &str) -> String {
    if s.chars().count() <= QUOTED_CHARS {
        return s.to_string();
    }
    let mut c: String = s.chars().take(QUOTED_CHARS - 1).collect();
    c.push('…');
    c
}

/// Statement groups only in one run, with a rate beyond the noise: the three largest each way.
fn new_and_gone(d: &Diff) -> Vec<String> {
    let mut out = Vec::new();
    for (change, lead, of) in [
        (Change::New, "New statements in B", "B's"),
        (Change::Gone, "Statements gone in B", "A's"),
    ] {
        let mut found: Vec<&StatementDiff> = d
            .statements
            .iter()
            .filter(|s| s.change == change && s.rate_test.is_some_and(|t| t.significant))
            .collect();
        if found.is_empty() {
            continue;
        }
        let total = if change == Change::New {
            d.runs.b.requests
        } else {
            d.runs.a.requests
        };
        let n = |s: &StatementDiff| {
            if change == Change::New {
                s.b.as_ref().map_or(0, |x| x.count)
            } else {
                s.a.as_ref().map_or(0, |x| x.count)
            }
        };
        found.sort_by_key(|x| std::cmp::Reverse(n(x)));
        let each: Vec<String> = found
            .iter()
            .take(3)
            .map(|s| {
                format!(
                    "{} ({}, {} of {of} requests)",
                    quoted(s),
                    count(n(s)),
                    percent(n(s) as f64 / total.max(1) as f64)
                )
            })
            .collect();
        let more = if found.len() > 3 {
            format!(" and {} more", count(found.len() as u64 - 3))
        } else {
            String::new()
        };
        out.push(format!("{lead}: {}{more}.", each.join(", ")));
    }
    out
}

/// The request rate, when it changed beyond the noise and no headline said it: with the statements
/// whose rates moved most.
fn rate(d: &Diff) -> Option<String> {
    let t = d.load.rate_test.filter(|t| t.significant)?;
    let mut movers: Vec<(&StatementDiff, f64)> = d
        .statements
        .iter()
        .map(|s| {
            let a = s.a.as_ref().map_or(0.0, |x| x.per_s);
            let b = s.b.as_ref().map_or(0.0, |x| x.per_s);
            (s, b - a)
        })
        .filter(|(s, delta)| {
            s.rate_test.is_some_and(|r| r.significant) && (*delta > 0.0) == (t.ratio > 1.0)
        })
        .collect();
    movers.sort_by(|x, y| y.1.abs().total_cmp(&x.1.abs()));
    let mut s = requests_per_second(d);
    if !movers.is_empty() {
        s.pop();
        let each: Vec<String> = movers
            .iter()
            .take(2)
            .map(|(x, _)| {
                format!(
                    "{} ({} -> {}/s)",
                    quoted(x),
                    significant(x.a.as_ref().map_or(0.0, |v| v.per_s), 3),
                    significant(x.b.as_ref().map_or(0.0, |v| v.per_s), 3)
                )
            })
            .collect();
        s.push_str(&format!(", most of the change in {}.", each.join(" and ")));
    }
    Some(s)
}

/// The TCP handshakes' round trip, when it grew or shrank clearly and nothing above said it.
fn handshakes(d: &Diff, windows: &[WindowChange<'_>]) -> Option<String> {
    if rtt_timed(d) {
        return path_changed(d, windows);
    }
    let hs = &d.path.handshake_rtt_us;
    let changed = grew(&hs.a, &hs.b) || grew(&hs.b, &hs.a);
    changed.then(|| {
        format!(
            "The TCP handshakes' round trip (SYN to ACK) went from {} to {} ({}).",
            dur(hs.a.p50),
            dur(hs.b.p50),
            medians_of(hs.a.count, hs.b.count)
        )
    })
}

/// Whether both runs' round trips were timed from TCP's data and ACKs (each has a sample).
fn rtt_timed(d: &Diff) -> bool {
    let p = &d.path;
    p.rtt_to_server_us.a.count + p.rtt_to_client_us.a.count > 0
        && p.rtt_to_server_us.b.count + p.rtt_to_client_us.b.count > 0
}

/// The round trip that grew beyond the runs' noise (the rank test, with the diff's others), on the leg
/// that crosses the path where the capture point is known, else on either: its name and figures, the
/// leg whose median grew most first.
fn rtt_grew(d: &Diff) -> Option<(&'static str, &Compared<RtSummary>)> {
    rtt_moved(d)
        .into_iter()
        .filter(|(_, c)| c.b.p50 > c.a.p50 && c.test.is_some_and(|t| t.effect > 0.5))
        .max_by(|x, y| (x.1.b.p50 - x.1.a.p50).total_cmp(&(y.1.b.p50 - y.1.a.p50)))
}

/// The legs of the round trip whose change is beyond the noise, on the path's leg where it is known.
fn rtt_moved(d: &Diff) -> Vec<(&'static str, &Compared<RtSummary>)> {
    let p = &d.path;
    [
        (PathLeg::ToServer, "to the server", &p.rtt_to_server_us),
        (PathLeg::ToClient, "to the client", &p.rtt_to_client_us),
    ]
    .into_iter()
    .filter(|(leg, _, _)| p.path_leg.is_none_or(|l| l == *leg))
    .filter(|(_, _, c)| c.test.is_some_and(|t| t.significant))
    .map(|(_, w, c)| (w, c))
    .collect()
}

/// When no direction of the response times was found (the rank test weighs every request alike, so a
/// median that held hides a tail that moved) but the slowest requests moved: a share of one run's
/// requests above the p99 of both runs' together at least twice the other's, beyond the noise
/// ([`super::TailTest`]). What the slow requests have in common is for the statements' table and the
/// humps to say; this says that they exist.
fn tail_moved(d: &Diff) -> Option<String> {
    let t = d.rt_tail.filter(|t| t.significant)?;
    let (a, b) = (&d.rt_us.a, &d.rt_us.b);
    let word = if t.ratio > 1.0 { "slower" } else { "faster" };
    Some(format!(
        "Response times unchanged at the median within the runs' noise (p50 {} -> {}), but the \
         slowest requests got {word}: {} of B's answered requests ({}) took {} or longer (the p99 \
         of both runs' requests together), against {} of A's ({}; p {}); p99 {} -> {}, mean {} -> {}.",
        dur(a.p50),
        dur(b.p50),
        percent(t.b_share()),
        count(t.b_above),
        dur(t.threshold_us),
        percent(t.a_share()),
        count(t.a_above),
        p_text(t.p),
        dur(a.p99),
        dur(b.p99),
        dur(a.mean),
        dur(b.mean)
    ))
}

/// When neither run's requests could be read (their MySQL sessions are in TLS and were not
/// decrypted) but both have exchanges timed from their TLS records: those compared, said as what they
/// are. Most MySQL 8 captures are encrypted, and a before and after without the key logs still shows
/// whether the server's answers came later.
fn encrypted_runs(d: &Diff) -> Option<(String, bool)> {
    if d.rt_us.a.count > 0 || d.rt_us.b.count > 0 {
        return None;
    }
    let e = d
        .tls_estimated_us
        .as_ref()
        .filter(|e| e.a.count > 0 && e.b.count > 0)?;
    let (a, b) = (&e.a, &e.b);
    let moved = e
        .test
        .filter(|t| t.significant && a.p50 > 0.0 && b.p50 > 0.0)
        .map(|t| {
            if t.effect > 0.5 {
                Direction::Slower
            } else {
                Direction::Faster
            }
        });
    let judged = match moved {
        Some(dir) => {
            let r = b.p50 / a.p50;
            let factor = if dir == Direction::Slower { r } else { 1.0 / r };
            // The rank test's direction, said at p50 only when the median moved that way too.
            let how = if factor <= 1.0 {
                format!("{} by the rank test, not at p50", dir.word())
            } else if factor >= 2.0 {
                format!("{}× {} at p50", significant(factor, 3), dir.word())
            } else {
                format!("{} {} at p50", percent((r - 1.0).abs()), dir.word())
            };
            format!(
                "B's exchanges are {how} ({} -> {}; mean {} -> {}; {})",
                dur(a.p50),
                dur(b.p50),
                dur(a.mean),
                dur(b.mean),
                samples(e)
            )
        }
        None => format!(
            "B's exchanges took as long as A's within the runs' noise ({}; {})",
            p50_and_mean(a, b),
            samples(e)
        ),
    };
    let intro = format!(
        "Neither run's MySQL requests can be read: their sessions are encrypted (TLS) and were not \
         decrypted (a key log, --tls-keylog, or a pcapng with its secrets, would let them be). Timed \
         from the TLS records instead (an exchange: the client's records, then the server's until the \
         client's next; each session's login left out), {judged}"
    );
    // The path is the one cause the records can show: the round trip on the leg that crosses it.
    let added = b.p50 - a.p50;
    let ack = &d.path.synack_to_ack_us;
    let path = match (d.path.path_leg, rtt_grew(d)) {
        // At the client an exchange holds the round trip to the server: the path, when that grew by
        // about as much as the exchanges (within a factor of two either way).
        (Some(PathLeg::ToServer), Some((_, c)))
            if moved == Some(Direction::Slower)
                && c.b.p50 - c.a.p50 >= DIFF_HANDSHAKE_SHARE * added
                && c.b.p50 - c.a.p50 <= added / DIFF_HANDSHAKE_SHARE =>
        {
            Some(format!(
                "; the round trip to the server (client data to the ACK that first covers it) grew by \
                 about as much, from {} to {} at p50 ({}): the time added to the exchanges is on the \
                 path, not in the server's work.",
                dur(c.a.p50),
                dur(c.b.p50),
                samples(c)
            ))
        }
        // At the server it does not: a server that answered as fast while the round trip to the
        // clients grew (and the handshakes, a bare round trip, do not rule a longer route out).
        (Some(PathLeg::ToClient), Some((_, c)))
            if moved != Some(Direction::Slower)
                && !handshakes_rule_out(&ack.a, &ack.b, c.b.p50 - c.a.p50) =>
        {
            Some(format!(
                "; the round trip to the clients (server data to the ACK that first covers it) went \
                 from {} to {} at p50 ({}): each answer reached the clients later, on the path, which a \
                 capture at the server does not see in its exchanges.",
                dur(c.a.p50),
                dur(c.b.p50),
                samples(c)
            ))
        }
        _ => None,
    };
    Some(match path {
        Some(p) => (format!("{intro}{p}"), true),
        None => (
            format!(
                "{intro}. What the exchanges held (statements, errors) is not known, so no cause is \
                 named from them."
            ),
            false,
        ),
    })
}

/// "2,408 and 2,520 samples; Mann-Whitney p < 1e-15".
fn samples(c: &Compared<RtSummary>) -> String {
    let n = if c.a.count == c.b.count {
        format!("{} samples in each run", count(c.a.count))
    } else {
        format!("{} and {} samples", count(c.a.count), count(c.b.count))
    };
    match c.test {
        Some(t) => format!("{n}, rank test p {}", p_text(t.p)),
        None => n,
    }
}

/// A p-value in words: "< 1e-15", "3.2e-5", "0.004".
fn p_text(p: f64) -> String {
    if p < 1e-15 {
        "< 1e-15".to_string()
    } else if p < 0.001 {
        format!("{p:.1e}")
    } else {
        significant(p, 2)
    }
}

/// The path's changes beyond the runs' noise, when the time added to the requests did not already say
/// them: the round trip on the path's leg (rank test; its median moved by at least
/// [`DIFF_PATH_RTT_MIN_US`] and by [`DIFF_PATH_RTT_MIN_SHARE`] of A's, with the minimum moving the same
/// way, so that a server answering later, whose ACKs ride on its answers, is not read as the path), and
/// retransmissions and duplicate ACKs per second (the rate test). The leg to an end whose zero windows
/// changed is that end's (a full receive buffer holds its ACKs back), said with its zero windows.
fn path_changed(d: &Diff, windows: &[WindowChange<'_>]) -> Option<String> {
    let p = &d.path;
    let mut parts = Vec::new();
    let held_back = |leg: &str| {
        windows.iter().any(|w| match w.reader {
            Reader::Clients => leg == "to the client",
            Reader::Server => leg == "to the server",
        })
    };
    let mut not_the_path = Vec::new();
    for (leg, c) in rtt_moved(d).into_iter().filter(|(leg, _)| !held_back(leg)) {
        let (a, b) = (&c.a, &c.b);
        let moved = (b.p50 - a.p50).abs();
        let same_way = (b.p50 > a.p50) == (b.min > a.min) && b.min != a.min;
        if moved >= DIFF_PATH_RTT_MIN_US && moved >= DIFF_PATH_RTT_MIN_SHARE * a.p50 && same_way {
            let figures = format!(
                "the round trip {leg} went from {} to {} at p50 (min {} -> {}; {})",
                dur(a.p50),
                dur(b.p50),
                dur(a.min),
                dur(b.min),
                samples(c)
            );
            match windows_on_leg(d, leg, if b.p50 > a.p50 { Run::B } else { Run::A }) {
                Some(windows) => not_the_path.push(format!("{figures}, while {windows}")),
                None => parts.push(figures),
            }
        }
    }
    let resent = |r: &crate::path::ResendCounts| r.total();
    if p.resend_rate_test.is_some_and(|t| t.significant) {
        let kinds = |x: &crate::path::ResendCounts, y: &crate::path::ResendCounts| {
            let spurious = x.spurious + y.spurious;
            // A resend the receiver reports it had already (D-SACK) was not a loss: its ACK was late.
            let not_lost = if spurious > 0 {
                format!(
                    "; {} of them reported by the receiver as already received (D-SACK): late ACKs, not \
                     loss",
                    count(spurious)
                )
            } else {
                String::new()
            };
            format!(
                "{}, {}, {}, {}{not_lost}",
                plural(
                    x.fast_retransmit + y.fast_retransmit,
                    "fast retransmit",
                    "fast retransmits"
                ),
                plural(x.timeout + y.timeout, "timeout", "timeouts"),
                plural(
                    x.tail_loss_probe + y.tail_loss_probe,
                    "tail loss probe",
                    "tail loss probes"
                ),
                plural(x.other + y.other, "other", "others")
            )
        };
        parts.push(format!(
            "retransmissions went from {} to {} (B: {})",
            count(resent(&p.c2s_resends.a) + resent(&p.s2c_resends.a)),
            count(resent(&p.c2s_resends.b) + resent(&p.s2c_resends.b)),
            kinds(&p.c2s_resends.b, &p.s2c_resends.b)
        ));
    }
    if p.dup_ack_rate_test.is_some_and(|t| t.significant) {
        parts.push(format!(
            "duplicate ACKs went from {} to {}",
            count(p.dup_acks.a),
            count(p.dup_acks.b)
        ));
    }
    let mut said = Vec::new();
    if !parts.is_empty() {
        let s = parts.join("; ");
        if let Some(first) = s.get(..1) {
            said.push(format!("On the path, {}{}.", first.to_lowercase(), &s[1..]));
        }
    }
    for s in not_the_path {
        if let Some(first) = s.get(..1) {
            said.push(format!(
                "{}{}: a receiver whose buffer is full holds its ACKs back, so this is not read as the \
                 path.",
                first.to_uppercase(),
                &s[1..]
            ));
        }
    }
    (!said.is_empty()).then(|| said.join(" "))
}

/// When the end that ACKs on `leg` advertised zero windows in `later` (the run whose round trip on it is
/// longer), those zero windows in words ("the server advertised a zero window in B 378 times for 1.68 s
/// (A: 378 times for 610 ms)"): its ACKs may have waited on its own full buffer, not on the path.
fn windows_on_leg(d: &Diff, leg: &str, later: Run) -> Option<String> {
    let p = &d.path;
    let (who, n, secs) = if leg == "to the client" {
        (
            "the clients",
            &p.client_zero_windows,
            &p.client_zero_window_s,
        )
    } else {
        (
            "the server",
            &p.server_zero_windows,
            &p.server_zero_window_s,
        )
    };
    if later.of(n) == 0 {
        return None;
    }
    let other = later.other();
    Some(format!(
        "{who} advertised a zero window in {} {} ({}: {})",
        later.name(),
        zero_windows_words(later, n, secs),
        other.name(),
        zero_windows_words(other, n, secs)
    ))
}

/// `run`'s zero windows of one end in words: "21 times for 1.4 s", or "none".
fn zero_windows_words(run: Run, windows: &Pair<u64>, seconds_of: &Pair<f64>) -> String {
    match run.of(windows) {
        0 => "none".to_string(),
        n => format!(
            "{} for {}",
            plural(n, "time", "times"),
            seconds(run.of(seconds_of))
        ),
    }
}

/// Connections reset, abnormal closes, refused connects that differ.
fn connections(d: &Diff) -> Option<String> {
    let (a, b) = (&d.connections.a, &d.connections.b);
    let mut parts = Vec::new();
    for (what, x, y) in [
        ("abnormal closes", a.abnormal_closes, b.abnormal_closes),
        ("connections reset", a.resets, b.resets),
        ("connects refused", a.refused, b.refused),
        ("connects never answered", a.unanswered, b.unanswered),
        (
            "connects answered only after a resent SYN",
            a.delayed,
            b.delayed,
        ),
    ] {
        if x != y {
            parts.push(format!("{what} {} -> {}", count(x), count(y)));
        }
    }
    if parts.is_empty() {
        return None;
    }
    let first = b
        .first_abnormal
        .as_ref()
        .filter(|_| b.abnormal_closes > a.abnormal_closes)
        .map_or_else(String::new, |f| format!(" (B's first: {f})"));
    Some(format!("Connections: {}{first}.", parts.join(", ")))
}

/// Ceilings in one run only.
fn ceilings(d: &Diff) -> Option<String> {
    let (a, b) = (d.ceilings.a.len(), d.ceilings.b.len());
    (a != b).then(|| {
        format!(
            "Ceilings (a rate held flat at a cap with load waiting): {} in A, {} in B.",
            count(a as u64),
            count(b as u64)
        )
    })
}
