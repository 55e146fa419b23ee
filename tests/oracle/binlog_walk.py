#!/usr/bin/env python3
"""An independent walk of the MySQL/MariaDB connections in a capture: the oracle for tests/replication.rs.

Written from the protocol documentation (MySQL internals: client/server protocol, replication protocol,
binlog event header; MariaDB KB: semi-sync, COM_BINLOG_DUMP), sharing no code with pcapsleuth.
Python standard library only.

    binlog_walk.py CAPTURE.pcap [--binlog-events EVENTS.txt] [--status STATUS.txt] [--from-frame N]

Reads a classic pcap (Ethernet, IPv4, TCP; the lab's captures), reassembles each TCP direction by sequence
number (a retransmitted byte keeps the frame that first carried it), splits both directions into MySQL
packets, and prints one JSON document:

* `requests`: every client command outside replication streams (a packet with sequence id 0; after a
  dump, the replica's semi-sync ACKs are not commands), by name, and the response time of each answered
  one (first byte of the request to the last server byte before the client's next command);
* `replication`: one object per connection that sent COM_BINLOG_DUMP / COM_BINLOG_DUMP_GTID: the dump's
  file, position and frame, every event (type, size, end position) from the server's packets that follow
  the dump, the semi-sync ACK requests (the 0xEF magic and flag 0x01 before an event) and the replica's
  ACKs (0xEF, 8-byte position, file name), each ACK matched to the event whose file and end position it
  names, with its latency (last byte of that event to the ACK), and event lag (capture time of the
  event's last byte minus its header timestamp; not for the log's bookkeeping events nor artificial ones);
* with --binlog-events (tab-separated `SHOW BINLOG EVENTS` rows), the check that every event that is not
  artificial names an (end position, type) of the primary's binary log and that every row of the log
  after the dump's start was streamed: `binlog_check`;
* with --status (the primary's `SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync%'` after the capture), its own count
  of ACK requests (`Rpl_semi_sync_master_net_waits`) and of ACKs read (`..._get_ack`) beside the walk's;
* with --from-frame N, the replication streams as a capture that starts at frame N shows them (events
  whose packet starts in frame N or later; ACKs from frame N on); what such a capture cannot know (the
  dump request and its file, position, GTID mode) is null.
"""

import bisect
import json
import re
import struct
import sys

COMMANDS = {
    0x00: "COM_SLEEP", 0x01: "COM_QUIT", 0x02: "COM_INIT_DB", 0x03: "COM_QUERY", 0x04: "COM_FIELD_LIST",
    0x05: "COM_CREATE_DB", 0x06: "COM_DROP_DB", 0x07: "COM_REFRESH", 0x08: "COM_SHUTDOWN",
    0x09: "COM_STATISTICS", 0x0a: "COM_PROCESS_INFO", 0x0b: "COM_CONNECT", 0x0c: "COM_PROCESS_KILL",
    0x0d: "COM_DEBUG", 0x0e: "COM_PING", 0x0f: "COM_TIME", 0x10: "COM_DELAYED_INSERT",
    0x11: "COM_CHANGE_USER", 0x12: "COM_BINLOG_DUMP", 0x13: "COM_TABLE_DUMP", 0x14: "COM_CONNECT_OUT",
    0x15: "COM_REGISTER_SLAVE", 0x16: "COM_STMT_PREPARE", 0x17: "COM_STMT_EXECUTE",
    0x18: "COM_STMT_SEND_LONG_DATA", 0x19: "COM_STMT_CLOSE", 0x1a: "COM_STMT_RESET", 0x1b: "COM_SET_OPTION",
    0x1c: "COM_STMT_FETCH", 0x1d: "COM_DAEMON", 0x1e: "COM_BINLOG_DUMP_GTID", 0x1f: "COM_RESET_CONNECTION",
}
NO_RESPONSE = {0x01, 0x18, 0x19}  # COM_QUIT, COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE
BINLOG_DUMP, BINLOG_DUMP_GTID = 0x12, 0x1E

# Binlog event type codes (MySQL's Log_event_type; MariaDB's above 159), and the names that
# SHOW BINLOG EVENTS gives them in MariaDB 10.11.
EVENT_TYPES = {
    1: ("START_V3", "Start_v3"), 2: ("QUERY", "Query"), 3: ("STOP", "Stop"), 4: ("ROTATE", "Rotate"),
    5: ("INTVAR", "Intvar"), 6: ("LOAD", "Load"), 8: ("CREATE_FILE", "Create_file"),
    9: ("APPEND_BLOCK", "Append_block"), 10: ("EXEC_LOAD", "Exec_load"), 11: ("DELETE_FILE", "Delete_file"),
    12: ("NEW_LOAD", "New_load"), 13: ("RAND", "RAND"), 14: ("USER_VAR", "User var"),
    15: ("FORMAT_DESCRIPTION", "Format_desc"), 16: ("XID", "Xid"),
    17: ("BEGIN_LOAD_QUERY", "Begin_load_query"), 18: ("EXECUTE_LOAD_QUERY", "Execute_load_query"),
    19: ("TABLE_MAP", "Table_map"), 23: ("WRITE_ROWS_V1", "Write_rows_v1"),
    24: ("UPDATE_ROWS_V1", "Update_rows_v1"), 25: ("DELETE_ROWS_V1", "Delete_rows_v1"),
    26: ("INCIDENT", "Incident"), 27: ("HEARTBEAT", "Heartbeat"), 28: ("IGNORABLE", "Ignorable"),
    29: ("ROWS_QUERY", "Rows_query"), 30: ("WRITE_ROWS", "Write_rows"), 31: ("UPDATE_ROWS", "Update_rows"),
    32: ("DELETE_ROWS", "Delete_rows"), 33: ("GTID", "Gtid"), 34: ("ANONYMOUS_GTID", "Anonymous_Gtid"),
    35: ("PREVIOUS_GTIDS", "Previous_gtids"), 36: ("TRANSACTION_CONTEXT", "Transaction_context"),
    37: ("VIEW_CHANGE", "View_change"), 38: ("XA_PREPARE", "XA_prepare"),
    39: ("PARTIAL_UPDATE_ROWS", "Partial_update_rows"), 40: ("TRANSACTION_PAYLOAD", "Transaction_payload"),
    41: ("HEARTBEAT_V2", "Heartbeat_v2"),
    160: ("ANNOTATE_ROWS", "Annotate_rows"), 161: ("BINLOG_CHECKPOINT", "Binlog_checkpoint"),
    162: ("GTID", "Gtid"), 163: ("GTID_LIST", "Gtid_list"), 164: ("START_ENCRYPTION", "Start_encryption"),
    165: ("QUERY_COMPRESSED", "Query_compressed"), 166: ("WRITE_ROWS_COMPRESSED_V1", "Write_rows_compressed_v1"),
    167: ("UPDATE_ROWS_COMPRESSED_V1", "Update_rows_compressed_v1"),
    168: ("DELETE_ROWS_COMPRESSED_V1", "Delete_rows_compressed_v1"),
    169: ("WRITE_ROWS_COMPRESSED", "Write_rows_compressed"),
    170: ("UPDATE_ROWS_COMPRESSED", "Update_rows_compressed"),
    171: ("DELETE_ROWS_COMPRESSED", "Delete_rows_compressed"),
}
QUERY_EVENT, ROTATE_EVENT, FORMAT_DESCRIPTION_EVENT, XID_EVENT, HEARTBEAT_EVENT = 2, 4, 15, 16, 27
LOG_EVENT_ARTIFICIAL_F = 0x20
# The log's own bookkeeping (format description, rotate, stop, heartbeats, GTID lists, checkpoints,
# encryption start): their timestamps are not a transaction's, so lag leaves them out.
BOOKKEEPING = {15, 4, 3, 27, 41, 35, 161, 163, 164}
SEMI_SYNC_MAGIC, SEMI_SYNC_NEED_ACK = 0xEF, 0x01


def type_name(t):
    return EVENT_TYPES.get(t, ("UNKNOWN_%d" % t, None))[0]


def read_pcap(path):
    """Yields (frame number, time in ns, link-layer bytes) of a classic pcap."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    formats = {b"\xd4\xc3\xb2\xa1": ("<", 1000), b"\xa1\xb2\xc3\xd4": (">", 1000),
               b"\x4d\x3c\xb2\xa1": ("<", 1), b"\xa1\xb2\x3c\x4d": (">", 1)}
    if magic not in formats:
        sys.exit("%s: not a classic pcap" % path)
    endian, to_ns = formats[magic]
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype != 1:
        sys.exit("%s: link type %d; this oracle reads Ethernet only" % (path, linktype))
    off, frame = 24, 0
    while off + 16 <= len(data):
        sec, frac, caplen, _wire = struct.unpack(endian + "IIII", data[off:off + 16])
        frame += 1
        yield frame, sec * 1_000_000_000 + frac * to_ns, data[off + 16:off + 16 + caplen]
        off += 16 + caplen


def tcp_segments(path):
    """Yields (frame, ns, (src, sport, dst, dport), seq, flags, payload) for IPv4 TCP over Ethernet."""
    for frame, ns, pkt in read_pcap(path):
        if len(pkt) < 14:
            continue
        etype, off = struct.unpack(">H", pkt[12:14])[0], 14
        while etype == 0x8100:
            etype, off = struct.unpack(">H", pkt[off + 2:off + 4])[0], off + 4
        if etype != 0x0800:
            continue
        ihl = (pkt[off] & 0x0F) * 4
        total = struct.unpack(">H", pkt[off + 2:off + 4])[0]
        if pkt[off + 9] != 6:
            continue
        src, dst = pkt[off + 12:off + 16], pkt[off + 16:off + 20]
        t = off + ihl
        sport, dport, seq = struct.unpack(">HHI", pkt[t:t + 8])
        doff = (pkt[t + 12] >> 4) * 4
        flags = pkt[t + 13]
        payload = pkt[t + doff:off + total]
        ip = lambda a: "%d.%d.%d.%d" % tuple(a)
        yield frame, ns, (ip(src), sport, ip(dst), dport), seq, flags, payload


class Direction:
    """One direction's byte stream, each byte with the frame (and time) that first carried it."""

    def __init__(self):
        self.isn = None
        self.data = bytearray()
        self.have = bytearray()
        self.frames = []  # per byte: index into self.carriers
        self.carriers = []  # (frame, ns)
        self.fin = None  # (frame, ns)
        self.rst = None

    def add(self, frame, ns, seq, flags, payload):
        if flags & 0x02:  # SYN: the next byte is ISN + 1
            self.isn = (seq + 1) & 0xFFFFFFFF
        if self.isn is None:
            self.isn = seq  # joined mid-connection: the first byte seen is offset 0
        if flags & 0x01 and self.fin is None:
            self.fin = (frame, ns)
        if flags & 0x04 and self.rst is None:
            self.rst = (frame, ns)
        if not payload:
            return
        start = (seq - self.isn) & 0xFFFFFFFF
        end = start + len(payload)
        if end > len(self.data):
            grow = end - len(self.data)
            self.data.extend(bytes(grow))
            self.have.extend(bytes(grow))
            self.frames.extend([0] * grow)
        self.carriers.append((frame, ns))
        c = len(self.carriers) - 1
        if 1 not in self.have[start:end]:  # nothing of it seen before (nearly always): in one go
            self.have[start:end] = b"\x01" * len(payload)
            self.data[start:end] = payload
            self.frames[start:end] = [c] * len(payload)
            return
        for i in range(len(payload)):
            if not self.have[start + i]:
                self.have[start + i] = 1
                self.data[start + i] = payload[i]
                self.frames[start + i] = c

    def carrier(self, offset):
        return self.carriers[self.frames[offset]]

    def contiguous(self):
        """Length of the gap-free prefix."""
        i = self.have.find(0)
        return len(self.have) if i < 0 else i


def mysql_packets(d, start=0):
    """MySQL packets of a direction from `start`: (offset, seq, payload, first (frame, ns), last (frame, ns)).
    A payload of 0xFFFFFF bytes continues in the next packet; the pieces are joined."""
    out, off, n = [], start, d.contiguous()
    while off + 4 <= n:
        length = d.data[off] | d.data[off + 1] << 8 | d.data[off + 2] << 16
        seq = d.data[off + 3]
        first, payload, pos = off, bytearray(), off
        while True:
            if pos + 4 + length > n:
                return out, first  # incomplete: the rest is in flight
            payload += d.data[pos + 4:pos + 4 + length]
            pos += 4 + length
            if length < 0xFFFFFF or pos + 4 > n:
                break
            length = d.data[pos] | d.data[pos + 1] << 8 | d.data[pos + 2] << 16
        out.append((first, seq, bytes(payload), d.carrier(first), d.carrier(pos - 1)))
        off = pos
    return out, off


def nearest_rank(values, q):
    """Nearest-rank percentile: the ceil(q * n)-th smallest (pcapsleuth's histograms use the same rank)."""
    if not values:
        return 0
    s = sorted(values)
    k = -(-int(q * 1_000_000) * len(s) // 1_000_000)  # ceil(q * n) in integers
    return s[min(max(k, 1), len(s)) - 1]


def summary_ns(values):
    if not values:
        return {"count": 0}
    return {"count": len(values), "mean": sum(values) // len(values), "p50": nearest_rank(values, 0.50),
            "p95": nearest_rank(values, 0.95), "p99": nearest_rank(values, 0.99), "max": max(values),
            "min": min(values)}


def walk_replication(c2s, s2c, packets, dump_index):
    """The replication stream of a connection whose client packet `dump_index` is the dump request."""
    _, _, dump, (dump_frame, dump_ns), _ = packets[dump_index]
    if dump[0] == BINLOG_DUMP:
        start_pos, dump_flags, server_id = struct.unpack("<IHI", dump[1:11])
        start_file = dump[11:].decode("latin-1")
    else:  # COM_BINLOG_DUMP_GTID: flags, server id, name length, name, 8-byte position, GTID set
        dump_flags, server_id, name_len = struct.unpack("<HII", dump[1:11])
        start_file = dump[11:11 + name_len].decode("latin-1")
        start_pos = struct.unpack("<Q", dump[11 + name_len:19 + name_len])[0]
    earlier_queries = [p[2][1:].decode("latin-1") for p in packets[:dump_index] if p[1] == 0 and p[2][:1] == b"\x03"]
    semi_sync = any(re.search(r"@rpl_semi_sync_(slave|replica)\s*=\s*1", q) for q in earlier_queries)
    gtid = dump[0] == BINLOG_DUMP_GTID or any(re.search(r"@slave_connect_state\s*=", q) for q in earlier_queries)

    # The server's packets after the dump request are the stream (a replica waits for each answer before
    # its next command, so nothing else of the server's comes after it).
    first_after = next((i for i in range(s2c.contiguous()) if s2c.carrier(i)[0] > dump_frame), None)
    events = []
    end_packet, checksum_len, file_name, rotates = None, None, start_file, []
    trailing = 0
    if first_after is not None:
        stream, stop = mysql_packets(s2c, first_after)
        trailing = s2c.contiguous() - stop
        for _, _, p, first, last in stream:
            if p[0] != 0x00:
                end_packet = {"0xfe": "EOF", "0xff": "ERR"}.get("0x%02x" % p[0], "0x%02x" % p[0])
                break
            body, need_ack = p[1:], False
            if semi_sync:
                assert body[0] == SEMI_SYNC_MAGIC, "semi-sync packet without 0xEF magic"
                need_ack = body[1] == SEMI_SYNC_NEED_ACK
                body = body[2:]
            ts, etype, _sid, size, log_pos, flags = struct.unpack("<IBIIIH", body[:19])
            assert size == len(body), "event size %d in a packet of %d" % (size, len(body))
            if etype == FORMAT_DESCRIPTION_EVENT:
                checksum_len = 4 if body[size - 5] == 1 else 0  # FDE: checksum algorithm byte, then CRC32
            if etype == ROTATE_EVENT:
                rotates.append((len(events), body))
            text = None
            if etype == QUERY_EVENT:
                db_len = body[19 + 8]
                vars_len = struct.unpack("<H", body[19 + 11:19 + 13])[0]
                text = body[19 + 13 + vars_len + db_len + 1:]
            events.append({"type": etype, "name": type_name(etype), "size": size, "log_pos": log_pos,
                           "ts": ts, "flags": flags, "first_frame": first[0], "frame": last[0], "end_ns": last[1],
                           "need_ack": need_ack, "query": text})
    # Rotate names come before the first format description says whether events carry a checksum.
    cs = checksum_len or 0
    for i, body in rotates:
        events[i]["file"] = body[19 + 8:len(body) - cs].decode("latin-1")
    for e in events:
        if e["type"] == ROTATE_EVENT:
            file_name = e["file"]
        e["in_file"] = file_name
        if e["query"] is not None:
            e["query"] = bytes(e["query"][:len(e["query"]) - cs]).decode("latin-1")

    acks = []
    for _, seq, p, first, last in packets[dump_index + 1:]:
        if seq == 0 and p[:1] == bytes([SEMI_SYNC_MAGIC]) and len(p) >= 9:
            acks.append({"frame": last[0], "ns": last[1], "pos": struct.unpack("<Q", p[1:9])[0],
                         "file": p[9:].decode("latin-1")})
    return {
        "server_id": server_id, "dump_flags": dump_flags, "dump_frame": dump_frame, "start_file": start_file,
        "start_position": start_pos, "gtid": gtid, "semi_sync": semi_sync, "checksum": cs > 0,
        "end_packet": end_packet, "trailing_partial_bytes": trailing, "event_list": events, "ack_list": acks,
    }


def summarise(raw, closes, from_frame):
    """The report of one stream as a capture starting at `from_frame` shows it: the events whose packet
    starts in a frame it holds, the ACKs it holds, matched by (file, end position)."""
    events = [e for e in raw["event_list"] if e["first_frame"] >= from_frame]
    # Requests in the order asked; an ACK names one of them, and releases the earlier ones too (the
    # primary waits until the replica has a position at least as far).
    pending = [e for e in events if e["need_ack"]]
    close = closes[0] if closes else None  # (frame, ns, by, flag)
    latencies, unmatched, acks, before_close, covered = [], 0, 0, 0, 0
    for a in raw["ack_list"]:
        if a["frame"] < from_frame:
            continue
        acks += 1
        if close is None or a["frame"] < close[0]:
            before_close += 1
        i = next((i for i, e in enumerate(pending) if (e["in_file"], e["log_pos"]) == (a["file"], a["pos"])), None)
        if i is None:
            unmatched += 1
            continue
        e = pending[i]
        covered += i
        del pending[:i + 1]
        e["acked_ns"] = a["ns"]
        latencies.append(a["ns"] - e["end_ns"])
    by_type, lag_ns = {}, []
    for e in events:
        by_type[e["name"]] = by_type.get(e["name"], 0) + 1
        if e["ts"] and not e["flags"] & LOG_EVENT_ARTIFICIAL_F and e["type"] not in BOOKKEEPING:
            lag_ns.append(max(0, e["end_ns"] - e["ts"] * 1_000_000_000))
    transactions = sum(1 for e in events if e["type"] == XID_EVENT or
                       (e["type"] == QUERY_EVENT and e["query"].strip().upper() == "COMMIT"))
    # At the connection's first FIN or RST: the oldest ACK asked for and not yet given.
    waiting = None
    if close is not None:
        asked = [e for e in events if e["need_ack"] and e["end_ns"] < close[1] and
                 e.get("acked_ns", close[1] + 1) > close[1]]
        if asked:
            waiting = {"file": asked[0]["in_file"], "position": asked[0]["log_pos"], "frame": asked[0]["frame"],
                       "waited_ns": close[1] - asked[0]["end_ns"]}
    seen_dump = raw["dump_frame"] >= from_frame
    return {
        "dump_frame": raw["dump_frame"] if seen_dump else None,
        "first_event_frame": events[0]["first_frame"] if events else None,
        "start_file": raw["start_file"] if seen_dump else None,
        "start_position": raw["start_position"] if seen_dump else None,
        "gtid": raw["gtid"] if seen_dump else None,
        "server_id": raw["server_id"] if seen_dump else None,
        "dump_flags": raw["dump_flags"], "semi_sync": raw["semi_sync"], "checksum": raw["checksum"],
        "events": len(events), "events_by_type": by_type, "bytes": sum(e["size"] for e in events),
        "transactions": transactions, "acks_requested": sum(1 for e in events if e["need_ack"]),
        "acks": acks, "acks_before_close": before_close, "acks_unmatched": unmatched,
        "acks_covered": covered, "acks_missing": len(pending), "ack_latency_ns": summary_ns(latencies), "lag_ns": summary_ns(lag_ns),
        "stalls_over_10ms": [e["frame"] for e in events if "acked_ns" in e and
                             e["acked_ns"] - e["end_ns"] > 10_000_000],
        "end_packet": raw["end_packet"], "trailing_partial_bytes": raw["trailing_partial_bytes"],
        "closes": [{"frame": c[0], "by": c[2], "flag": c[3]} for c in closes],
        "waiting_for_ack_at_close": waiting,
        "stream_events": [(e["in_file"], e["log_pos"], e["type"], e["flags"]) for e in events],
    }


BINLOG_SEND_ANNOTATE_ROWS_EVENT = 0x02  # MariaDB dump flag: without it the primary leaves Annotate_rows out


def binlog_check(streams, path):
    """Every streamed event that is not artificial is a row of SHOW BINLOG EVENTS (same end position and
    type), and every row after the first stream's start position was streamed by some stream (Annotate_rows
    only if the dumps asked for them)."""
    rows = {}
    annotate = all(r["dump_flags"] & BINLOG_SEND_ANNOTATE_ROWS_EVENT for r in streams)
    for line in open(path, encoding="utf-8", errors="replace"):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 5 and f[1].isdigit():
            if f[2] == "Annotate_rows" and not annotate:
                continue
            rows[(f[0], int(f[4]))] = f[2]
    names = {code: show for code, (_, show) in EVENT_TYPES.items() if show}
    seen, problems = set(), []
    for r in streams:
        for file_name, log_pos, etype, flags in r["stream_events"]:
            if flags & LOG_EVENT_ARTIFICIAL_F or log_pos == 0 or etype == HEARTBEAT_EVENT:
                continue
            key = (file_name, log_pos)
            if rows.get(key) != names.get(etype):
                problems.append("streamed %s at %s:%d, binlog has %s" % (type_name(etype), file_name, log_pos,
                                                                         rows.get(key)))
            seen.add(key)
    first = streams[0]
    missing = [k for k in rows if k not in seen and not (first["start_position"] and k[1] <= first["start_position"])]
    return {"rows": len(rows), "streamed_rows": len(seen), "missing": len(missing), "problems": problems[:10]}


def status_check(streams, path):
    """The primary's own counters (SHOW GLOBAL STATUS, cumulative since its start, which was just before the
    capture): ACK requests sent, and ACKs it read (those that arrived before it closed the connection)."""
    status = {}
    for line in open(path):
        f = line.split()
        if len(f) == 2 and f[0].startswith("Rpl_semi_sync_master_"):
            status[f[0]] = int(f[1]) if f[1].isdigit() else f[1]
    return {
        "net_waits": status.get("Rpl_semi_sync_master_net_waits"),
        "acks_requested": sum(r["acks_requested"] for r in streams),
        "get_ack": status.get("Rpl_semi_sync_master_get_ack"),
        "acks_read": sum(r["acks_before_close"] if r["closes"] and r["closes"][0]["by"] == "primary" else r["acks"]
                         for r in streams),
    }


def option(argv, name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default


def main(argv):
    path = argv[1]
    events_file, status_file = option(argv, "--binlog-events"), option(argv, "--status")
    from_frame = int(option(argv, "--from-frame", "1"))
    conns = {}
    for frame, ns, (src, sport, dst, dport), seq, flags, payload in tcp_segments(path):
        a, b = (src, sport), (dst, dport)
        key = (a, b) if (a, b) in conns or (b, a) not in conns else (b, a)
        c = conns.setdefault(key, {"dirs": {}})
        if flags & 0x12 == 0x02:
            c["client"] = a
        c["dirs"].setdefault(a, Direction()).add(frame, ns, seq, flags, payload)

    commands, rts, replication = {}, [], []
    for key, c in conns.items():
        client = c.get("client", key[0])
        server = key[1] if client == key[0] else key[0]
        c2s, s2c = c["dirs"].get(client), c["dirs"].get(server)
        if c2s is None or s2c is None:
            continue
        packets, _ = mysql_packets(c2s)
        dump_index = next((i for i, p in enumerate(packets)
                           if p[1] == 0 and p[2][:1] in (bytes([BINLOG_DUMP]), bytes([BINLOG_DUMP_GTID]))), None)
        carriers = sorted(s2c.carriers)
        requests = [p for i, p in enumerate(packets) if p[1] == 0 and p[2] and (dump_index is None or i <= dump_index)]
        for i, (_, _, p, (frame, ns), _) in enumerate(requests):
            name = COMMANDS.get(p[0], "COM_0x%02x" % p[0])
            commands[name] = commands.get(name, 0) + 1
            if p[0] in NO_RESPONSE or (dump_index is not None and i == len(requests) - 1):
                continue
            nxt = requests[i + 1][3][0] if i + 1 < len(requests) else float("inf")
            k = bisect.bisect_left(carriers, (nxt, 0)) - 1  # the server's last data frame before `nxt`
            if k >= 0 and carriers[k][0] > frame:
                rts.append(carriers[k][1] - ns)
        if dump_index is not None:
            closes = sorted((getattr(d, kind)[0], getattr(d, kind)[1], who, kind.upper())
                            for who, d in (("replica", c2s), ("primary", s2c)) for kind in ("fin", "rst")
                            if getattr(d, kind))
            r = summarise(walk_replication(c2s, s2c, packets, dump_index), closes, from_frame)
            r["client"] = "%s:%d" % client
            r["server"] = "%s:%d" % server
            replication.append(r)
    replication.sort(key=lambda r: r["dump_frame"] or r["first_event_frame"] or 0)
    out = {"requests": {"commands": commands, "rt_ns": summary_ns(rts)}, "replication": replication}
    if events_file:
        out["binlog_check"] = binlog_check(replication, events_file)
    if status_file:
        out["status_check"] = status_check(replication, status_file)
    for r in replication:
        del r["stream_events"]
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv)
