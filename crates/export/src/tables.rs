//! The datasets written at the end of a run, from what the run concluded: `connections` and `closes`
//! (from the run's connections, their MySQL facts and `first-reset`'s judgement of each close), `rates`
//! and `ceilings` (from the rate report).

use std::borrow::Cow;
use std::path::Path;

use pcapsleuth_analysis::{every_close, CloseRecord, MysqlSessionFacts, RateReport, Run};
use pcapsleuth_capture::Timestamp;
use pcapsleuth_flow::{
    ClosedBy, Connection, ConnectionEnd, DirectionStats, Endpoint, FrameRef, Role, SynOptions,
};
use serde::Serialize;

use crate::buffers::{int, ColumnRows, Nullable, Texts, Times};
use crate::columns::{ColumnType, Dataset, CEILINGS, CLOSES, CONNECTIONS, RATES};
use crate::part::{Part, Syncs};
use crate::{ExportError, Partition};

/// A value of one column of one row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell<'a> {
    Null,
    Int64(i64),
    Int32(i32),
    Float64(f64),
    Boolean(bool),
    Text(Cow<'a, str>),
    /// Nanoseconds since the epoch.
    Time(i64),
}

impl<'a> Cell<'a> {
    fn text(s: impl Into<Cow<'a, str>>) -> Self {
        Cell::Text(s.into())
    }

    fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> Cell<'a>) -> Self {
        v.map_or(Cell::Null, f)
    }
}

/// One column's buffer.
enum Buffer {
    Int64(Nullable<i64>),
    Int32(Nullable<i32>),
    Float64(Nullable<f64>),
    Boolean(Nullable<bool>),
    Text(Texts),
    Time(Times),
}

impl Buffer {
    fn of(ty: ColumnType) -> Buffer {
        match ty {
            ColumnType::Int64 => Buffer::Int64(Nullable::default()),
            ColumnType::Int32 => Buffer::Int32(Nullable::default()),
            ColumnType::Float64 => Buffer::Float64(Nullable::default()),
            ColumnType::Boolean => Buffer::Boolean(Nullable::default()),
            ColumnType::String => Buffer::Text(Texts::default()),
            ColumnType::Timestamp => Buffer::Time(Times::default()),
        }
    }

    /// Appends `cell`; `false` if it is not of the column's type.
    fn push(&mut self, cell: &Cell<'_>) -> bool {
        match (self, cell) {
            (Buffer::Int64(b), Cell::Int64(v)) => b.push(Some(*v)),
            (Buffer::Int64(b), Cell::Null) => b.push(None),
            (Buffer::Int32(b), Cell::Int32(v)) => b.push(Some(*v)),
            (Buffer::Int32(b), Cell::Null) => b.push(None),
            (Buffer::Float64(b), Cell::Float64(v)) => b.push(Some(*v)),
            (Buffer::Float64(b), Cell::Null) => b.push(None),
            (Buffer::Boolean(b), Cell::Boolean(v)) => b.push(Some(*v)),
            (Buffer::Boolean(b), Cell::Null) => b.push(None),
            (Buffer::Text(b), Cell::Text(v)) => b.push(v),
            (Buffer::Text(b), Cell::Null) => b.push_opt(None),
            (Buffer::Time(b), Cell::Time(v)) => b.push(Some(*v)),
            (Buffer::Time(b), Cell::Null) => b.push(None),
            _ => return false,
        }
        true
    }

    fn rows(&mut self) -> &mut dyn ColumnRows {
        match self {
            Buffer::Int64(b) => b,
            Buffer::Int32(b) => b,
            Buffer::Float64(b) => b,
            Buffer::Boolean(b) => b,
            Buffer::Text(b) => b,
            Buffer::Time(b) => b,
        }
    }
}

/// Rows of an end-of-run dataset buffered per column and written in batches into one file.
struct Table {
    dataset: &'static Dataset,
    buffers: Vec<Buffer>,
    rows: usize,
    part: Part,
    written: u64,
}

/// Rows per batch of an end-of-run dataset.
const TABLE_BATCH_ROWS: usize = 64 * 1024;

impl Table {
    fn create(
        dataset: &'static Dataset,
        dir: &Path,
        partition: &Partition,
    ) -> Result<Table, ExportError> {
        std::fs::create_dir_all(dir).map_err(|e| ExportError::io(dir, e))?;
        let keys: Vec<&str> = partition.labels().iter().map(|l| l.key()).collect();
        let schema = dataset
            .schema(&keys)
            .map_err(|e| ExportError::parquet(dir, e))?;
        let mut constants = vec![partition.capture().to_string()];
        constants.extend(partition.labels().iter().map(|l| l.value().to_string()));
        Ok(Table {
            dataset,
            part: Part::create(dir, 0, &schema, &constants)?,
            buffers: dataset.columns.iter().map(|c| Buffer::of(c.ty)).collect(),
            rows: 0,
            written: 0,
        })
    }

    /// Appends a row: one cell per column of the dataset, in order.
    fn row(&mut self, cells: &[Cell<'_>]) -> Result<(), ExportError> {
        let columns = self.dataset.columns;
        if cells.len() != columns.len() {
            return Err(ExportError::Schema {
                dataset: self.dataset.name,
                column: format!("{} cells for {} columns", cells.len(), columns.len()),
            });
        }
        for ((b, c), col) in self.buffers.iter_mut().zip(cells).zip(columns) {
            if !b.push(c) || (!col.nullable && *c == Cell::Null) {
                return Err(ExportError::Schema {
                    dataset: self.dataset.name,
                    column: format!("{}: {c:?}", col.name),
                });
            }
        }
        self.rows += 1;
        if self.rows >= TABLE_BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        if self.rows == 0 {
            return Ok(());
        }
        let n = std::mem::take(&mut self.rows);
        let mut columns: Vec<&mut dyn ColumnRows> =
            self.buffers.iter_mut().map(Buffer::rows).collect();
        self.written += n as u64;
        self.part.write(n, &mut columns)
    }

    /// Writes what is left and closes the file (`syncs` waits for its sync); returns the rows
    /// written.
    fn finish(mut self, syncs: &Syncs) -> Result<u64, ExportError> {
        self.flush()?;
        self.part.close(syncs)?;
        Ok(self.written)
    }
}

/// A serde enum's name as the JSON reports write it (`"syn_ack"`, `"client"`).
fn json_name<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

fn time(t: Timestamp) -> Cell<'static> {
    Cell::Time(t.0)
}

/// `_frame` and `_time` of an optional frame.
fn frame_cells(f: Option<FrameRef>) -> [Cell<'static>; 2] {
    match f {
        Some(f) => [Cell::Int64(int(f.frame)), time(f.ts)],
        None => [Cell::Null, Cell::Null],
    }
}

fn endpoint_cells(client: Endpoint, server: Endpoint) -> [Cell<'static>; 6] {
    [
        Cell::text(client.to_string()),
        Cell::text(server.to_string()),
        Cell::text(client.ip.to_string()),
        Cell::Int32(i32::from(client.port)),
        Cell::text(server.ip.to_string()),
        Cell::Int32(i32::from(server.port)),
    ]
}

fn direction_cells(d: &DirectionStats) -> Vec<Cell<'static>> {
    let mut v = vec![
        Cell::Int64(int(d.packets)),
        Cell::Int64(int(d.payload_bytes)),
        Cell::Int64(int(d.wire_bytes)),
        Cell::Int64(int(d.retransmissions)),
        Cell::Int64(int(d.out_of_order)),
        Cell::Int64(int(d.zero_windows)),
        Cell::Int64(int(d.truncated)),
    ];
    v.extend(frame_cells(d.first_data));
    v
}

fn close_cells(c: Option<ClosedBy>) -> Vec<Cell<'static>> {
    let Some(c) = c else {
        return vec![Cell::Null; 12];
    };
    let e = c.event;
    let mut v = frame_cells(Some(e.at)).to_vec();
    v.push(Cell::text(json_name(&c.by)));
    v.push(Cell::Int64(int(e.peer_unacked_bytes)));
    v.push(Cell::Boolean(e.peer_awaiting_reply));
    v.extend(frame_cells(e.peer_zero_window.map(|z| z.from)));
    v.extend(frame_cells(e.peer_zero_window.and_then(|z| z.until)));
    v.push(Cell::Int64(i64::from(e.resent_in_a_row)));
    v.extend(frame_cells(e.peer_last_data));
    v
}

fn end_cells(end: ConnectionEnd) -> [Cell<'static>; 2] {
    let (kind, by): (&str, Option<Role>) = match end {
        ConnectionEnd::Graceful(r) => ("graceful", Some(r)),
        ConnectionEnd::Reset(r) => ("reset", Some(r)),
        ConnectionEnd::HalfClosed(r) => ("half_closed", Some(r)),
        ConnectionEnd::Open => ("open", None),
    };
    [
        Cell::text(kind),
        Cell::opt(by, |r| Cell::text(json_name(&r))),
    ]
}

fn syn_option_cells(o: Option<SynOptions>) -> [Cell<'static>; 4] {
    match o {
        Some(o) => [
            Cell::opt(o.mss, |m| Cell::Int32(i32::from(m))),
            Cell::opt(o.window_scale, |w| Cell::Int32(i32::from(w))),
            Cell::Boolean(o.sack_permitted),
            Cell::opt(o.timestamp, |t| Cell::Int64(i64::from(t))),
        ],
        None => [Cell::Null, Cell::Null, Cell::Null, Cell::Null],
    }
}

fn mysql_cells(m: Option<&MysqlSessionFacts>) -> Vec<Cell<'_>> {
    let Some(m) = m else {
        return vec![Cell::Null; 8];
    };
    vec![
        Cell::text(json_name(&m.recognised_by)),
        Cell::opt(m.server_version.as_deref(), Cell::text),
        Cell::opt(m.user.as_deref(), Cell::text),
        Cell::opt(m.schema.as_deref(), Cell::text),
        Cell::Boolean(m.encrypted),
        Cell::Int64(int(m.unread_bytes)),
        Cell::Int64(int(m.transactions)),
        Cell::Int64(int(m.errors)),
    ]
}

/// One row of `connections`, in [`CONNECTIONS`]'s order.
fn connection_row<'a>(c: &'a Connection, m: Option<&'a MysqlSessionFacts>) -> Vec<Cell<'a>> {
    let h = &c.handshake;
    let mut row = vec![Cell::Int64(int(c.first.frame))];
    row.extend(endpoint_cells(c.client, c.server));
    row.push(Cell::Boolean(c.roles_known));
    row.push(Cell::opt(c.role_basis, |b| Cell::text(json_name(&b))));
    row.extend(frame_cells(Some(c.first)));
    row.extend(frame_cells(Some(c.last)));
    row.push(Cell::opt(c.handshake_rtt_ns, Cell::Int64));
    row.extend(direction_cells(&c.to_server));
    row.extend(direction_cells(&c.to_client));
    row.extend(close_cells(c.first_fin));
    row.extend(close_cells(c.first_rst));
    row.extend(end_cells(c.end));
    row.push(Cell::Int64(i64::from(h.syn_count)));
    row.push(Cell::Int64(i64::from(h.synack_count)));
    row.push(Cell::opt(h.connect_ns, |n| Cell::Float64(n as f64 / 1e3)));
    row.push(Cell::opt(h.outcome, |o| Cell::text(json_name(&o))));
    row.push(Cell::opt(h.isn, |i| Cell::Int64(i64::from(i))));
    row.extend(frame_cells(h.first_syn));
    row.extend(frame_cells(h.retransmitted_syn));
    row.push(Cell::Int64(i64::from(h.syns_before_answer)));
    row.extend(frame_cells(h.answer));
    row.extend(frame_cells(h.ack_to_syn));
    row.extend(syn_option_cells(h.syn_options));
    row.extend(syn_option_cells(h.synack_options));
    row.extend(frame_cells(h.resumed_by));
    row.extend(mysql_cells(m));
    row
}

/// One row of `closes`, in [`CLOSES`]'s order.
fn close_row<'a>(r: &'a CloseRecord, conn: &'a Connection) -> Vec<Cell<'a>> {
    let c = &r.close;
    let mut row = vec![
        Cell::Int64(int(c.connection_first_frame)),
        Cell::Boolean(r.connection_close),
        Cell::Int64(int(c.frame)),
        // The report's `time` is a float: the close's own timestamp is exact.
        Cell::Null,
        Cell::Float64(c.rel_time),
    ];
    row.extend(endpoint_cells(conn.client, conn.server));
    row.extend([
        Cell::text(json_name(&c.initiator)),
        Cell::text(json_name(&c.flag)),
        Cell::text(c.reason.as_str()),
        Cell::Boolean(c.abnormal),
        Cell::opt(c.mysql_state, |s| Cell::text(json_name(&s))),
        Cell::Int64(int(c.peer_unacked_bytes)),
        Cell::Boolean(c.peer_awaiting_reply),
    ]);
    row.extend(end_cells(c.end));
    row
}

/// Rows written per dataset.
pub(crate) type Written = Vec<(&'static str, u64)>;

/// Writes `connections` and `closes` from `run` into `dir(dataset)`.
pub(crate) fn write_connections<O>(
    run: &Run<O>,
    dir: impl Fn(&str) -> std::path::PathBuf,
    partition: &Partition,
    syncs: &Syncs,
) -> Result<Written, ExportError> {
    let mut t = Table::create(&CONNECTIONS, &dir(CONNECTIONS.name), partition)?;
    for (i, c) in run.connections.iter().enumerate() {
        let m = run.mysql_sessions.get(i).and_then(Option::as_deref);
        t.row(&connection_row(&c, m))?;
    }
    let connections = t.finish(syncs)?;
    // Each close's own timestamp, from its connection (the report carries it as float seconds).
    let mut t = Table::create(&CLOSES, &dir(CLOSES.name), partition)?;
    for r in every_close(run) {
        let Some(conn) = run
            .connections
            .by_first_frame(r.close.connection_first_frame)
        else {
            continue;
        };
        let at = [conn.first_fin, conn.first_rst]
            .into_iter()
            .flatten()
            .find(|e| e.event.at.frame == r.close.frame)
            .map(|e| e.event.at.ts);
        let mut row = close_row(&r, &conn);
        row[3] = Cell::opt(at, time);
        t.row(&row)?;
    }
    let closes = t.finish(syncs)?;
    Ok(vec![(CONNECTIONS.name, connections), (CLOSES.name, closes)])
}

/// Nanoseconds of an interval start the rate report gives in float seconds: starts lie on the grid
/// of `interval_ns` from the epoch, so the nearest grid point is the exact start.
fn on_grid(start_s: f64, interval_ns: i64) -> i64 {
    let i = interval_ns.max(1);
    ((start_s * 1e9 / i as f64).round() as i64).saturating_mul(i)
}

/// Writes `rates` and `ceilings` from the rate report `r` (series at `interval_ns`).
pub(crate) fn write_rates(
    r: &RateReport,
    interval_ns: i64,
    dir: impl Fn(&str) -> std::path::PathBuf,
    partition: &Partition,
    syncs: &Syncs,
) -> Result<Written, ExportError> {
    let mut t = Table::create(&RATES, &dir(RATES.name), partition)?;
    let scopes = std::iter::once((None, &r.total)).chain(
        r.servers
            .iter()
            .map(|(s, series)| (Some(s.as_str()), series)),
    );
    for (server, series) in scopes {
        for p in series {
            t.row(&[
                Cell::opt(server, Cell::text),
                Cell::Time(on_grid(p.start, interval_ns)),
                Cell::Float64(r.interval_s),
                Cell::Float64(p.covered_s),
                Cell::Float64(p.c2s_pps),
                Cell::Float64(p.s2c_pps),
                Cell::Float64(p.c2s_bps),
                Cell::Float64(p.s2c_bps),
                Cell::Int64(int(p.c2s_retrans)),
                Cell::Int64(int(p.s2c_retrans)),
            ])?;
        }
    }
    let rates = t.finish(syncs)?;
    let mut t = Table::create(&CEILINGS, &dir(CEILINGS.name), partition)?;
    // Ceilings are found on 100 ms bins from the epoch: their ends are on that grid.
    let bin = 100_000_000;
    for c in &r.ceilings {
        t.row(&[
            Cell::text(json_name(&c.kind)),
            Cell::text(json_name(&c.direction)),
            Cell::opt(c.server.as_deref(), Cell::text),
            Cell::Float64(c.value),
            Cell::Time(on_grid(c.start, bin)),
            Cell::Time(on_grid(c.end, bin)),
            Cell::Float64(c.other_value),
            Cell::Float64(c.mean_packet_bytes),
            Cell::Float64(c.flatness_cv),
            Cell::text(c.evidence.join("; ")),
        ])?;
    }
    let ceilings = t.finish(syncs)?;
    Ok(vec![(RATES.name, rates), (CEILINGS.name, ceilings)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_points_are_recovered_from_float_seconds() {
        let ns = 1_795_339_223_600_000_000i64;
        assert_eq!(on_grid(ns as f64 / 1e9, 100_000_000), ns);
        let s = 1_795_339_223_000_000_000i64;
        assert_eq!(on_grid(s as f64 / 1e9, 1_000_000_000), s);
    }
}
