//! Every detector threshold in one place, with the reason for its value.

/// Resolution of the series the ceiling detector reads, whatever `--interval` prints: fine enough that
/// Poisson noise of organic load shows (300 packets a bin vary by ~6%), coarse enough that a shaper's
/// token-bucket bursts average out.
pub const CEILING_BIN_NS: i64 = 100_000_000;

/// A bin is "at the ceiling" when within this fraction of the sustained top level. HTB and cloud NIC
/// policers hold a rate to well under 1% per 100 ms; organic load at a few hundred packets a bin does not
/// stay within ±3% for long.
pub const CEILING_BAND: f64 = 0.03;

/// The top level is the highest median over a window this many bins long (2 s): a sustained level, not a
/// burst.
pub const CEILING_LEVEL_WINDOW_BINS: usize = 20;

/// A ceiling must hold at least this long (2 s) to be called one whatever its rate: at a high rate the
/// Poisson noise of organic load (1% at 10,000 packets a bin) stays inside the band, so flatness alone
/// says little, and only a long run does.
pub const CEILING_MIN_RUN_BINS: usize = 20;

/// ... but a run needs only as many bins as make its flatness unlikely by chance
/// ([`CEILING_CHANCE`]), and no fewer than this (1 s): a short capture (a 2 s client capture of a
/// 1,000 packets/s shaper: 19 whole bins) shows its cap as plainly as a long one, while a shaper's
/// token-bucket burst or one RTO stall lasts well under a second.
pub const CEILING_MIN_RUN_FLOOR_BINS: usize = 10;

/// The chance that a run of bins is this flat by chance: every bin within [`CEILING_BAND`] of the level
/// when the packets of a bin vary as a Poisson count at that level would (organic load of independent
/// requests varies at least that much; a closed loop may vary less, which is why a ceiling also needs
/// evidence that load waited behind it). One in a million: a capture offers the detector a few
/// thousand runs (directions, measures, servers, positions), so noise is called a cap about once in a
/// few hundred captures at most, where evidence is also demanded. At 100 packets a bin (1,000
/// packets/s) a bin lands in the band with probability 0.27 and 11 bins are needed; at 1,000 a bin,
/// 0.66 and 34 bins, so the 2 s of [`CEILING_MIN_RUN_BINS`] applies.
pub const CEILING_CHANCE: f64 = 1e-6;

/// Isolated bins off the level inside a run (a shaper's burst, a pause of the sender) are tolerated up to
/// this share of the run.
pub const CEILING_MAX_MISSES: f64 = 0.10;

/// Below these rates a flat line is idleness, not a cap (per second).
pub const CEILING_MIN_PPS: f64 = 50.0;
pub const CEILING_MIN_BPS: f64 = 100_000.0;

/// Evidence that load was held back: retransmitted segments in the capped direction during the run, as a
/// share of its packets (drops at a policer or a full shaper queue).
pub const EVIDENCE_RETRANS_SHARE: f64 = 0.001;

/// Evidence that requests queued: mean response time during the run at least this many times the path's
/// round trip (the median handshake RTT of the connections) and at least [`EVIDENCE_RT_MIN_NS`]. A point
/// select answered in 0.1 ms on a 0.05 ms path is not queueing; 4 ms is.
pub const EVIDENCE_RT_FACTOR: f64 = 10.0;
pub const EVIDENCE_RT_MIN_NS: f64 = 1_000_000.0;

/// When both the packet rate and the bit rate are flat, the flatter one is the cap; when they are equally
/// flat (constant packet size), packets smaller than this on average mean a packet-rate cap.
pub const SMALL_PACKET_BYTES: f64 = 1000.0;

/// Two coefficients of variation closer than this count as equally flat.
pub const CV_TIE: f64 = 0.002;

// ---- The capture's timeline (crate::timeline) ----

/// A silence longer than this (30 days) separates the capture's body from timestamps that do not belong
/// to it. Legitimate captures pause for hours, a weekend, a holiday; a zeroed or corrupt timestamp lands
/// years or decades away (a random 32-bit second is 68 years from the middle of its range on average), and
/// a clock that jumped from an unsynchronised VM or broken capture hardware lands weeks to years away.
pub const WILD_GAP_NS: i64 = 30 * 86_400 * 1_000_000_000;

/// Timestamps before 1990-01-01 are wild when any timestamp is in the plausible era: no capture of MySQL
/// traffic is that old (MySQL appeared in 1995), but a clock that was never set or a zeroed field reads
/// 1970.
pub const WILD_BEFORE_NS: i64 = 631_152_000 * 1_000_000_000;

/// Timestamps after 2106-02-07 06:28:15 UTC, the last second a classic pcap record can hold, are wild
/// likewise: only a pcapng resolution or offset gone wrong reaches them (often the limit of the
/// nanosecond clock itself, in 2262).
pub const WILD_AFTER_NS: i64 = u32::MAX as i64 * 1_000_000_000;

/// A record timestamped more than a second before the previous one means the capture's clock stepped
/// back (NTP, a VM resumed): interfaces of one host, timestamped apart by the kernel, disagree by
/// microseconds to milliseconds. Also the most a response may precede its request and still be taken
/// as answered at once.
pub const CLOCK_STEP_BACK_NS: i64 = 1_000_000_000;

/// Wild runs and clock steps listed by frame; beyond these only their count (the rest are in the file).
pub const TIMELINE_LISTED: usize = 10;

// ---- Response-time modes (crate::modes) ----

/// Step of the evaluation grid on the ln axis (1%): as fine as the histogram's own bins, and at least
/// twice finer than the narrowest kernel (`H_MIN`), so peaks and valleys are located to within 1%.
pub(crate) const GRID_STEP: f64 = 0.01;
/// Base kernel width (sigma on the ln axis) is `H_REF * n^(-1/5)`: 0.104 at 200 samples, 0.061 at
/// 3,000, 0.026 at 200,000. Narrow enough to separate thread-pool steps 0.6 s / 0.9 s (ln distance 0.41,
/// each hump ~0.1 wide) from a few thousand samples; wide enough that 200 samples of a smooth
/// distribution do not break into bumps (those the significance test below does not already reject).
pub(crate) const H_REF: f64 = 0.3;
/// Narrowest base kernel: 2% on the ln axis, twice the grid step; finer structure than that is below
/// the resolution a capture's timestamps and the 1% bins give anyway.
pub(crate) const H_MIN: f64 = 0.02;
/// Widest base kernel (reached only below ~8 samples, where no mode can pass `MIN_COUNT` twice anyway).
pub(crate) const H_MAX: f64 = 0.2;
/// The adaptive widening `sqrt(g / pilot)` is capped at this factor: enough to blur the sparse far
/// tails of an exponential or a log-normal sampled 200 times (gaps of 0.2–0.7 in ln between the
/// extreme samples), while a small genuine hump far from the main one (an RTO at 200 ms next to a few
/// ms) stays far narrower than the distance between them.
pub(crate) const MAX_WIDEN: f64 = 5.0;
/// Timestamps in classic pcap files have a resolution of 1 µs, so response times are multiples of
/// 1,000 ns: near 20 µs that is a comb with teeth 5% apart. The kernel is never narrower than one tick,
/// `RES_NS / x`, so the comb is smoothed away instead of becoming modes.
pub(crate) const RES_NS: f64 = 1_000.0;
/// No kernel wider than this (sigma on the ln axis, a factor e): reached only by sub-µs values through
/// the `RES_NS` floor, which cannot be resolved into modes anyway.
pub(crate) const H_CAP: f64 = 1.0;
/// Kernels are cut at this many sigmas (the Gaussian is 3e-4 of its peak there).
pub(crate) const KERNEL_CUTOFF: f64 = 4.0;
/// Two neighbouring peaks stay separate modes only when the valley between them is below this fraction
/// of the smaller peak's density: a 1:1 mixture of two equal Gaussians has a valley at 50–60% of its
/// peaks exactly when it is visibly two humps (separation ~2.5–3 sigma); shallower dips are skew,
/// shoulders or noise.
pub(crate) const VALLEY_RATIO_MAX: f64 = 0.55;
/// The dip must also be significant: counts within one local kernel width of the smaller peak (`p`) and
/// of the valley (`v`) must give `z = (p - v) / sqrt(p + v) >= Z_MIN`. The highest wiggle and the
/// lowest dip among the dozens a smooth distribution sampled 200 times shows reach z ~2.5–3 routinely
/// (measured: 2.5 split 5–10% of 200-sample exponentials and log-normals), 4 practically never (none
/// of 300 seeds each of log-normals with sigma up to 1.5, exponentials, normals, gammas, uniforms and
/// Paretos for n = 200..20,000), while true humps of a few hundred samples give z of 6 and more.
pub(crate) const Z_MIN: f64 = 4.0;
/// A near-empty valley (density below this fraction of the smaller peak) ...
pub(crate) const DEEP_RATIO: f64 = 0.1;
/// ... needs less evidence: `z >= 2.6` is 7 samples with nothing around them, the small far hump of a
/// retransmission timeout in a modest capture. Scattered tail samples do not form such a gap, because
/// the adaptive kernel has already blurred them together.
pub(crate) const Z_DEEP: f64 = 2.6;
/// A mode holds at least this many samples: fewer cannot be told from stray outliers.
pub(crate) const MIN_COUNT: u64 = 5;
/// ... and at least this share of all samples: below one request in a thousand a hump does not change
/// what the distribution means to a user. The retransmission-timeout hump (0.3%) passes.
pub(crate) const MIN_SHARE: f64 = 0.001;
/// An empty stretch of the response-time axis separates two modes when at least this many samples lie
/// on each side of it: the thread-pool staircase has 10 requests on its second step; fewer than 8
/// in a group are a handful of outliers.
pub(crate) const GAP_MIN_COUNT: u64 = 8;
/// ... the stretch spans at least this ratio (its edges 25% apart): closer groups are the ripples of one
/// hump (and the 1% bins, timestamp ticks and statement mixes make such ripples) ...
pub(crate) const GAP_MIN_RATIO: f64 = 1.25;
/// ... and at least this many timestamp ticks (`RES_NS`): at a few microseconds, adjacent tick values are
/// 25% apart and the empty ticks between them say nothing ...
pub(crate) const GAP_MIN_TICKS: f64 = 4.0;
/// ... and it is this many times wider (on the ln axis) than the span of the `GAP_MIN_COUNT` samples
/// nearest to it on each side. Under a smooth density, `GAP_MIN_COUNT` consecutive samples occupy about
/// `GAP_MIN_COUNT - 1` mean spacings, so an empty stretch 3 times their span is about 21 spacings long,
/// which a density without a gap leaves empty with odds near e^-21; in a thinning tail the samples beyond
/// the stretch are spread as widely as it, and it does not count.
pub(crate) const GAP_SPAN_FACTOR: f64 = 3.0;

// ---- What a hump's requests have in common (crate::humps) ----

/// Requests kept per bin of a response-time distribution (32, the earliest by frame) to name a hump's
/// connections and clients: a timeout's hump (a few dozen errors within a bin or two) is then named whole,
/// and a bin costs at most a few kilobytes (a distribution has a few thousand bins at most).
pub(crate) const HUMP_MEMBERS_PER_BIN: usize = 32;
/// Server endpoints whose requests are counted apart (16, the lowest endpoints): a capture holds a few
/// servers; past them, the rest are counted together and their share said.
pub(crate) const HUMP_SERVERS_KEPT: usize = 16;
/// Error codes, commands, servers, connections and clients listed per hump (the most frequent first).
pub(crate) const HUMP_LISTED: usize = 5;
/// A command is listed for a hump when it holds at least this share of it (5%), as statements are.
pub(crate) const HUMP_TRAIT_MIN_SHARE: f64 = 0.05;
/// An error code makes a hump when it answered at least half of its requests (50%): the hump is then
/// those errors' response time, and their cause is the hump's.
pub const HUMP_ERRORS_MAKE: f64 = 0.5;
/// ... and `report` puts the hump and that code's errors into one finding when the hump also holds at
/// least half (50%) of the code's answered errors: otherwise most of them are elsewhere and have their
/// own finding.
pub const HUMP_ERRORS_ABSORBED: f64 = 0.5;
/// A hump is narrow (one wait for all its requests: a timer's) when its middle half spans at most 5%
/// (p75/p25 <= 1.05). A timer fires at its time plus a few milliseconds of scheduling: 20 lock waits at
/// innodb_lock_wait_timeout=1 on a busy 2-core host took 1.0003-1.0087 s (p75/p25 about 1.002); the
/// histogram's bins are 0.8% wide; service times and queueing spread wider (point selects on the same
/// host: 1.9-2.3×). A narrow hump is said to be at a round duration when its median is a whole number of
/// seconds within `ROUND_WAIT_TOLERANCE_NS` (see `crate::cause::round_wait`): timeouts are set in whole
/// seconds. A hump is named a timeout only when an error a timer sends answered most of it (ERR 1205,
/// 3024, 1969): a narrow hump of successes at a round duration is a sleep, a semi-sync or GET_LOCK wait,
/// or a staircase of service times (a thread pool serving 0.3 s requests N at a time puts humps at 0.3,
/// 0.6, 0.9 s ...), which its traits describe without naming a cause.
pub const HUMP_NARROW_SPREAD: f64 = 1.05;

// ---- Connection attempts and greetings (crate::connects, crate::closes) ----

/// A MySQL greeting this long after the handshake means the server accepted the connection late. A
/// server greets within a millisecond of accepting (tens of ms when it must start a thread); 100 ms is
/// far above that and far below the waits a stalled accept loop or a full accept queue cause (the
/// client's SYN-ACK retransmission steps of 1 s and more).
pub const LATE_GREETING_NS: u64 = 100_000_000;

/// A client that closes a connection to a server that speaks first (MySQL) after waiting this long for
/// the greeting gave up on it (a connect timeout): abnormal. Health checks that only open and close a
/// connection do so within milliseconds.
pub const GREETING_WAIT_ABNORMAL_NS: i64 = 1_000_000_000;

/// A semi-sync ACK slower than this (10 ms) is a stall: every commit waiting on it waited that long, which
/// is far more than a primary's own commit work (tens to hundreds of µs) or a LAN round trip. The same
/// bound tells a primary that waited in vain from an ACK merely in flight when a connection closed.
pub const ACK_STALL_NS: u64 = 10_000_000;

/// Stalls listed with their frames in a stream's report (the count covers all of them).
pub const ACK_STALLS_LISTED: usize = 10;

// ---- Requests unanswered at the end of the capture (crate::findings) ----

/// A request still waiting when the capture ended is a finding when it had waited at least this many
/// times the 99th percentile of the answered requests: a request merely in flight when the capture stopped
/// has waited less than a typical response; ten times the slowest percent is no longer "in flight".
pub const UNANSWERED_FAR_FACTOR: f64 = 10.0;
/// ... and at least this long (seconds): on a fast server ten times the p99 is a few milliseconds, and a
/// request that waited that long when the capture was stopped says nothing.
pub const UNANSWERED_MIN_WAIT_S: f64 = 1.0;

// ---- The why of a close, from TCP facts (crate::closes) ----

/// A peer's zero window is named as what preceded a close when it lasted at least this long (1 s): a
/// reader that stops for a second has stopped reading (a busy one reopens its window within
/// milliseconds), and servers' write timeouts (MySQL's net_write_timeout, 60 s by default) count in seconds.
pub const WHY_ZERO_WINDOW_NS: i64 = 1_000_000_000;
/// The closing side's resends of the same unacknowledged data are named from this many (2): one resend is
/// ordinary loss; two in a row without an acknowledgement is a path or a peer that stopped answering.
pub const WHY_RESENT_IN_A_ROW: u32 = 2;
/// A peer's silence before the other side hung up is named from this long (1 s): idle timeouts
/// (wait_timeout, proxies' idle limits) count in seconds; an answer and a close within a second are one
/// exchange.
pub const WHY_SILENCE_NS: i64 = 1_000_000_000;

// ---- Causes (crate::cause) ----

/// A wait is a timer's (a timeout) when it is a whole number of seconds within this (20 ms): MySQL's
/// timeouts (wait_timeout, net_write_timeout, net_read_timeout, connect_timeout,
/// innodb_lock_wait_timeout) are whole seconds, and so are most clients' and proxies'; a timer fires
/// within a few milliseconds of its time on a live host, and a capture point a LAN away adds well under
/// a millisecond. A wait that is not a timer's lands within it of a whole second 4% of the time, so a
/// round wait alone only makes a cause likely where the state also fits the setting.
pub const ROUND_WAIT_TOLERANCE_NS: i64 = 20_000_000;
/// ... and at least this long (1 s): the shortest timeout one sets in whole seconds; below it every
/// wait is near "0 s".
pub const ROUND_WAIT_MIN_NS: i64 = 1_000_000_000;

/// A wait that this many closes alike share (3: by one side, with one flag, of one server, within
/// `CLOSE_GROUP_GAP_S` of each other, each within `ROUND_WAIT_TOLERANCE_NS` of it) is a timer's even when it
/// is no whole number of seconds (a proxy's 2.5 s, a pool's 1,500 ms): two may agree by chance, three
/// closes of unrelated causes agreeing to 20 ms do not.
pub const SHARED_WAIT_CLOSES: usize = 3;

/// An error the server sent is what preceded a close when it came at most this long (1 s) before it,
/// with nothing else from the server between: a server closes right after the ERR that says why
/// (1040, 1153, 4031: microseconds), and a client that gives up on an error does so in its next steps.
pub const ERROR_BEFORE_CLOSE_NS: i64 = 1_000_000_000;

/// An address's usual IP TTL is learned from at least this many of its packets (3) before a FIN or RST
/// bearing it is judged by its TTL: a host sends every packet of its connections with one initial TTL,
/// and one path gives them one TTL at a capture point, so a handful shows it; fewer could be the odd
/// packet.
pub const TTL_MIN_PACKETS: u64 = 3;

// ---- Two capture points (crate::compare) ----

/// When requests are matched by payload on a pair of connections, a client request takes the next
/// unmatched server request with its payload within this many: far more than the requests one capture
/// can miss in a row where the other has them (a capture started or stopped a moment apart, a proxy's own
/// health checks), few enough that a repeated statement is not matched with a copy sent much later.
pub const COMPARE_PAYLOAD_LOOKAHEAD: usize = 64;

/// A payload carried by more server connections than this (a ping, `SELECT 1`, a driver's session setup)
/// is not used to find a client connection's partner: it would make every connection a candidate, and
/// aligning each is what costs. Rarer payloads (a statement with its literals) point at the few that matter.
pub const COMPARE_COMMON_PAYLOAD_CONNECTIONS: usize = 64;

/// Server connections aligned with a client connection's requests to find its partner: the true one is
/// among the best few by shared rare payloads; each more costs an alignment of the whole connection.
pub const COMPARE_CANDIDATE_CONNECTIONS: usize = 4;

/// Time windows across the matched pairs when a clock drift must be fitted (the middles of each window's
/// offset bounds): enough points for a slope to be seen, each window still holding many pairs and so a
/// fast request and a fast response to bound it from both sides.
pub const COMPARE_CLOCK_WINDOWS: usize = 8;

/// A response with no retransmission seen is notable as late when its way back took at least this long
/// (200 ms, Linux's minimum retransmission timeout: a segment lost where neither capture saw it, resent
/// after a timeout) ...
pub const COMPARE_LATE_MIN_NS: i64 = 200_000_000;

/// ... and at least this many times the median response path: a shaped or busy path makes every response
/// slow, and then only the exceptions are notable.
pub const COMPARE_LATE_FACTOR: f64 = 10.0;

/// The verdict says the path (or the server) took the time when its share of the client's time is at least
/// this: two thirds, a clear majority that a change on that side alone would remove; between a third and
/// two thirds it says they shared it.
pub const COMPARE_PATH_SHARE: f64 = 2.0 / 3.0;

/// A FIN or RST seen arriving at one point was sent by the side it names when that side's point shows
/// it leaving at most this long (1 ms) after it arrived, beyond the clocks' uncertainty: the two points
/// timestamp at different places (a NIC, a bridge), which can put a packet's two sightings a little out
/// of order; a close that was never sent is not there at all.
pub const COMPARE_CLOSE_SLACK_NS: i64 = 1_000_000;
/// A FIN or RST that left a point is said never to have reached the other only when the other capture
/// went on at least this long (1 s) after it: a lost FIN is resent within a second (RTO at least 200 ms,
/// doubling), so one still missing after a second was not just late.
pub const COMPARE_CLOSE_ARRIVAL_NS: i64 = 1_000_000_000;
/// A device between the points closes both sides "at the same moment" when the two closes, on the aligned
/// clocks, are at most the clocks' uncertainty plus this (5 ms) or the path's p99 (what it adds to a
/// round trip), the larger, apart: its two packets reach the two points within one trip through the path
/// between them, and a client and a server that each close on their own coincide that closely only by
/// chance.
pub const COMPARE_SAME_MOMENT_MIN_NS: i64 = 5_000_000;

// ---- Grouping findings (crate::findings) ----

/// Closes that cut MySQL work off, of one kind (what was cut off), by one side, on one server, are one
/// finding when each came within this many seconds (10 s) of the previous one: a proxy, a pool or a
/// client that gives up does it to its connections within a second or two (one cause, many closes), and
/// closes minutes apart are separate events worth their own line.
pub const CLOSE_GROUP_GAP_S: f64 = 10.0;

/// A group's members listed one by one in its text (all of them are in its JSON `members`).
pub const GROUP_LISTED: usize = 3;

/// `extract --annotate` comments the error responses (and their requests) of this many error codes, the
/// most frequent: the examples `mysql` keeps of each (`ERROR_EXAMPLES`, 3), not every one of a storm of
/// thousands, which would bury the frames worth reading.
pub const ANNOTATED_ERROR_CODES: usize = 5;

/// `extract --annotate` comments this many retransmitted segments each way per connection (the first):
/// where a connection began to lose data, not each of a thousand resends.
pub const ANNOTATED_RESENDS: usize = 5;

/// `extract --annotate` comments the retransmissions of at most this many connections (those that
/// began first): a bound on memory whatever the capture holds.
pub const ANNOTATED_RESEND_CONNECTIONS: usize = 4096;

// ---- Two runs compared (crate::diff) ----

/// The family-wise level of the rank tests of one diff (Holm's correction over the overall response
/// time, every statement group and the think time): one diff makes dozens of comparisons, and a verdict
/// that names a statement must not be the one chance pick among them.
pub const DIFF_LEVEL: f64 = 0.01;

/// The least shift of a distribution that is called a difference, as the probability of superiority's
/// distance from 0.5 (0.56 is Vargha and Delaney's "small" effect): with a million requests a side a
/// 1% shift is significant, and no one should chase it.
pub const DIFF_MIN_EFFECT: f64 = 0.06;

/// The level of the rate tests (requests and errors per second): each rate is reported on its own, so a
/// strict level keeps their many comparisons from calling noise.
pub const DIFF_RATE_LEVEL: f64 = 0.001;

/// The least change of a rate that is called one (20%): runs of one workload recorded minutes apart
/// differ by a few percent in what they sent.
pub const DIFF_MIN_RATE_CHANGE: f64 = 0.20;

/// A statement group is tested only with at least this many answered requests in each run: fewer
/// cannot show a difference at the level above, and their table row says "too few".
pub const DIFF_MIN_TESTED: u64 = 8;

/// A connection's median response time is counted (to say whether a change shows on every connection)
/// when it answered at least this many requests.
pub const DIFF_CONNECTION_MIN_REQUESTS: u64 = 10;

/// Response times changed when the time B's requests spent beyond A's speed (or saved), over the
/// statements that changed significantly, is at least this share of B's time: less is within what one
/// run differs from the next.
pub const DIFF_RT_CHANGE_SHARE: f64 = 0.10;

/// Statements "got slower by about the same time" when the largest and the smallest change of their
/// medians are within this factor: a constant added to every request (a path's delay) moves a 24 µs
/// COMMIT and a 100 µs range select by the same time, where a slower server multiplies them.
pub const DIFF_UNIFORM_SPREAD: f64 = 1.5;

/// The added time is "in" a few statements when at most [`DIFF_CONCENTRATED_GROUPS`] of them hold at
/// least this share of it.
pub const DIFF_CONCENTRATED_SHARE: f64 = 0.8;

/// See [`DIFF_CONCENTRATED_SHARE`].
pub const DIFF_CONCENTRATED_GROUPS: usize = 3;

/// The clients offered less (or more) load when their mean think time (a response to their next
/// request) grew (or shrank) by at least this factor together with a significant change of the request
/// rate.
pub const DIFF_THINK_FACTOR: f64 = 1.5;

/// Seen at a server, the path's round trip (the fastest tenth of think times: a response, then the
/// client's next request at once) grew when its change is at least this many times the change of the
/// server's own mean response time: then the path, not the server, holds most of what changed.
pub const DIFF_PATH_FACTOR: f64 = 2.0;

/// Seen at a server, the clients' next requests came later by some time: a slower path would slow the
/// TCP handshakes' SYN-ACK to ACK (a bare round trip to the client) by as much. When both runs have
/// handshakes and their median moved by less than this share of that time, the path is ruled out.
pub const DIFF_HANDSHAKE_SHARE: f64 = 0.5;

/// Below this many answered requests in a run, a diff in which no test found a change says the runs
/// were too small to tell, not that they are alike: the rank test of a handful of response times
/// cannot reach its threshold after Holm's correction, whatever they are.
pub const DIFF_FEW_REQUESTS: u64 = 20;

/// Response times moved two ways when the median moved one way beyond the noise and the mean the
/// other by at least this factor: most requests got faster while a tail got far slower (or the
/// reverse), and no single story of load, path or server is told of both.
pub const DIFF_TWO_WAYS_MEAN: f64 = 1.5;

/// The tail of the response times both runs' requests share: the quantile of A's and B's requests
/// together above which each run's share is compared ([`crate::diff::tail_test`]). A median can stay
/// put while the slowest requests move: a rank test, which weighs every request alike, then says
/// nothing, and a DBA looks at the p99.
pub const DIFF_TAIL_QUANTILE: f64 = 0.99;

/// The slowest requests moved when one run's share above [`DIFF_TAIL_QUANTILE`] of both is at least
/// this many times the other's (with the count test's level): a tail twice as thick.
pub const DIFF_TAIL_FACTOR: f64 = 2.0;

/// Two runs are one workload before and after a change when the statement groups both ran hold at
/// least this share of each run's requests; below it, a diff compares two mixes, and says so instead
/// of explaining their difference by a change of load, path or server.
pub const DIFF_SHARED_WORK: f64 = 0.5;

/// A capture was taken at the client (or at the server) when its TCP handshakes' SYN to SYN-ACK (or
/// SYN-ACK to ACK) holds at least this share of their round trip (medians): the half that crossed the
/// path. On a local network both halves are microseconds and the point is not told.
pub const DIFF_HANDSHAKE_HALF: f64 = 0.8;

/// `report` says that transactions wait for their clients when the ended transactions spent at least this
/// share of their time idle (a response given, the client's next statement not yet sent): beyond it the
/// server holds locks and snapshots mostly for clients that are doing something else.
pub const IDLE_IN_TRANSACTION_SHARE: f64 = 0.5;

/// ... and the idle time adds up to at least this many seconds: a few transactions that waited a
/// millisecond are no story.
pub const IDLE_IN_TRANSACTION_MIN_S: f64 = 0.1;

/// The idle time inside transactions is the path's more than the client's when the median TCP handshake
/// round trip is at least this share of the median silence: seen at a server, every silence holds a round
/// trip, and a silence not much longer than one is a client that answered at once over a slow path.
pub const IDLE_IN_TRANSACTION_PATH_SHARE: f64 = 0.8;

// ---- The path over time (crate::path) ----

/// Segments kept per direction of a connection awaiting their ACK, to time the round trip (32, about
/// half a kilobyte): a request/response connection has one or two in flight; a bulk transfer more, whose
/// oldest are then forgotten (their ACKs give no sample, the newest still do).
pub const OUTSTANDING_KEPT: usize = 32;

/// The least retransmission timeout a sender uses (200 ms, Linux's `TCP_RTO_MIN`; RFC 6298 says 1 s,
/// which most stacks lower): a resend after a silence this long, or the sender's own timeout from its
/// round trips when that is longer, is a timeout's.
pub const RTO_MIN_NS: i64 = 200_000_000;

/// ... the silence needs only this share of the timeout (80%): the capture point sees the original and
/// the resend a path's trip apart from where the timer ran, and the timeout estimated from the samples
/// at the capture point is an estimate.
pub const RTO_SILENCE_SHARE: f64 = 0.8;

/// A tail loss probe (RFC 8985) is sent two smoothed round trips after the last segment when nothing was
/// acknowledged ...
pub const TLP_SILENCE_ROUND_TRIPS: f64 = 2.0;

/// ... and never sooner than Linux's floor for it (10 ms) minus the capture point's uncertainty: 8 ms.
pub const TLP_MIN_NS: i64 = 8_000_000;

/// A zero-window spell counts its time in at most this many printed intervals, its first (10,000: hours
/// at a second, ten seconds at a millisecond): a stall of days at a fine interval would otherwise cost a
/// row per interval.
pub const ZERO_WINDOW_INTERVALS_KEPT: i64 = 10_000;

/// The smallest change of the path's median round trip (µs) a diff's verdict names, beside the rank test:
/// with thousands of ACKs a few microseconds of scheduling are "significant", and not a path change.
pub const DIFF_PATH_RTT_MIN_US: f64 = 100.0;

/// The smallest change of the path's median round trip, as a share of A's, a diff's verdict names.
pub const DIFF_PATH_RTT_MIN_SHARE: f64 = 0.5;

/// A diff's verdict puts the clients' zero windows first (the server waited on them) when the
/// zero-window time they added is at least this share of the time B's requests took beyond A's speed:
/// a closed window stops the server's response mid-flight, so that time is inside the response times,
/// and a quarter of them is a story of its own, not a footnote.
pub const DIFF_ZERO_WINDOW_SHARE: f64 = 0.25;

/// A rate series keeps at most this many printed intervals, counted over all traffic and every server
/// (each cell about 100 bytes, and about 450 more where the path was timed): past it, intervals double in
/// width until the series fits ([`crate::widening`]). 32,768 is 4.5 hours of one server at one second (its
/// rows and all traffic's), or half an hour of 16 servers: more rows than anyone reads, and memory stays
/// near 20 MB whatever the capture's duration.
pub const RATE_INTERVALS_KEPT: usize = 32_768;

/// The ceiling detector's series keeps at most this many bins of [`CEILING_BIN_NS`], counted as
/// [`RATE_INTERVALS_KEPT`] (about 90 bytes each, and 8 bytes a bin between them while ceilings are looked
/// for): 3.6 hours of one server, 25 minutes of 16 servers. Past it,
/// its bins double in width, and the report says at which width ceilings were looked for.
pub const CEILING_BINS_KEPT: usize = 262_144;

/// Response-time rows per interval keep at most this many (server, interval) distributions, over the
/// MySQL, TCP and login series together (each about 150 bytes): past it, intervals double in width.
/// 65,536 is 18 hours of one server at one second.
pub const RT_INTERVALS_KEPT: usize = 65_536;
