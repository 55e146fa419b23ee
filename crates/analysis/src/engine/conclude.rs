//! The end of a run: the connections still open concluded, and the run's facts gathered.

use pcapsleuth_capture::{Capture, Damage, Order};
use pcapsleuth_flow::{server_side_by_port, ConnectionTable, Endpoint, RoleBasis, Side};
use rayon::prelude::*;

use crate::events::Analysis;
use crate::facts::{CaptureFacts, Stopped};
use crate::mysql::MysqlSessionFacts;

use super::pass::{Pass, Source};
use super::track::Concluded;
use super::Run;

/// Concludes the connections still open (as at the capture's end) and gathers the run: the capture's
/// facts, its connections, the analysis instances merged.
pub(super) fn conclude_run<A: Analysis>(
    run: Pass<'_, A>,
    release: Vec<(&Capture, u64, u64)>,
    sources: &[Source<'_>],
) -> Run<A> {
    let (opts, phases) = (run.opts, run.phases);
    let end_clock = phases.start();
    let end_tasks = phases.tasks();
    let stopped = run.stopped.then_some(Stopped {
        frames_read: run.frames,
    });
    let Pass {
        buckets,
        mapped,
        analyses,
        mut analysis,
        unmerged,
        counts,
        first_ts,
        last_ts,
        mut damage,
        times,
        files,
        fragments,
        ..
    } = run;
    let ((), concluded) = rayon::join(
        || {
            // The last batch's instance, beside the conclusions.
            if let Some(last_batch) = unmerged {
                analysis.merge(last_batch);
            }
            release
                .par_iter()
                .for_each(|(cap, from, to)| cap.release(*from, *to));
        },
        || {
            // Instances per piece of the work rayon shares out, merged as a tree.
            buckets
                .into_par_iter()
                .fold(
                    || (analyses(), Vec::new()),
                    |(mut analysis, mut states), b| {
                        states.extend(end_tasks.time(|| b.conclude(&mapped, opts, &mut analysis)));
                        (analysis, states)
                    },
                )
                .reduce_with(|(mut a, mut states), (b, more)| {
                    a.merge(b);
                    states.extend(more);
                    (a, states)
                })
        },
    );
    let mut states = Vec::new();
    if let Some((concluded_analysis, s)) = concluded {
        analysis.merge(concluded_analysis);
        states = s;
    }
    for (input, source) in sources.iter().enumerate() {
        if let Source::Mapped(cap) = source {
            damage.extend(cap.growth().map(|d| d.in_input(input)));
        }
    }
    // Garbage across a stream's windows is one damage, said once with its total.
    let damage = Damage::coalesced(damage);
    let (connections, mut mysql_sessions) = conclude(states);
    phases.end(end_clock, end_tasks.into_times());
    // Only now is it known which timestamps belong to the capture's body: analyses keep only it in their
    // time series when they finish.
    let timeline = times.finish();
    // Datagrams still waiting for fragments at the end: given up at the timeout if the capture went on
    // past it, else cut off by the capture's end.
    let ip_fragments = fragments.finish(timeline.body_last.or(last_ts));
    // The waits of requests open at the end run to the body's last packet, not to a timestamp outside it.
    if let Some(last) = timeline.body_last {
        for u in mysql_sessions
            .iter_mut()
            .flatten()
            .flat_map(|m| m.unanswered.iter_mut())
        {
            u.capture_ended(last.0);
        }
    }
    let format = match &files[..] {
        [one] => one.format.clone(),
        many => format!("{} files", many.len()),
    };
    Run {
        capture: CaptureFacts {
            format,
            file_bytes: files.iter().map(|f| f.bytes).sum(),
            counts,
            first_ts,
            last_ts,
            timeline,
            ip_fragments,
            damage,
            order: Order::Single,
            files,
            stopped,
        },
        connections,
        mysql_sessions,
        mysql_detection: opts.mysql,
        output: analysis,
    }
}

/// Concludes every connection into the run's table, in order of first packet, deciding roles: from its
/// own handshake; else from an endpoint that accepted a handshake elsewhere in the capture; else from
/// ports.
pub(super) fn conclude(
    mut states: Vec<Concluded>,
) -> (ConnectionTable, Vec<Option<Box<MysqlSessionFacts>>>) {
    let listeners: std::collections::HashSet<Endpoint> = states
        .iter()
        .filter_map(|c| {
            c.handshake_client
                .map(|(client, _)| c.tcp.key().endpoint(client.other()))
        })
        .collect();
    // Every packet belongs to one connection, so first frames are distinct and the order is total.
    states.sort_unstable_by_key(|c| c.first_frame);
    debug_assert!(states
        .windows(2)
        .all(|w| w[0].first_frame < w[1].first_frame));
    let mut table = ConnectionTable::with_capacity(states.len());
    let mut sessions = Vec::with_capacity(states.len());
    for c in states.iter().filter(|c| c.replaced) {
        table.note_reused(c.tcp.key());
    }
    for c in states {
        let key = c.tcp.key();
        let client = c.handshake_client.or_else(|| {
            let lo_listens = listeners.contains(&key.lo);
            let hi_listens = listeners.contains(&key.hi);
            match (lo_listens, hi_listens) {
                (true, false) => Some((Side::Hi, RoleBasis::KnownListener)),
                (false, true) => Some((Side::Lo, RoleBasis::KnownListener)),
                _ => Some((server_side_by_port(&key).other(), RoleBasis::Port)),
            }
        });
        table.push(c.tcp, client);
        sessions.push(c.mysql);
    }
    (table, sessions)
}
