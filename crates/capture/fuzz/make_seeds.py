#!/usr/bin/env python3
"""Regenerates seeds/<target>/ from the repository's fixtures and shared/external/zeek-mysql.

Run from crates/capture/fuzz:  python3 make_seeds.py [ZEEK_MYSQL_DIR]
(ZEEK_MYSQL_DIR defaults to ../../../../shared/external/zeek-mysql, i.e. shared/ beside the clone).

Input layouts (see src/lib.rs):
  pcap_reader, pcapng_reader: 1 selector byte, then the bytes after the header the target prepends.
  split_invariance: selector byte (bit 7: pcapng), split-count byte (n = b % 16 + 1), then the body.
  raw_bytes: a whole (cut) capture file.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures")
ZEEK = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    HERE, "..", "..", "..", "..", "shared", "external", "zeek-mysql")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def pcap_records(body):
    """(header fields, data) of each whole record in a little-endian µs pcap body."""
    p = 0
    while p + 16 <= len(body):
        sec, frac, caplen, orig = struct.unpack_from("<IIII", body, p)
        if p + 16 + caplen > len(body):
            break
        yield (sec, frac, caplen, orig), body[p + 16:p + 16 + caplen]
        p += 16 + caplen


def pcap_body_be(body):
    return b"".join(struct.pack(">IIII", *h) + d for h, d in pcap_records(body))


def pcap_body_modified(body):
    # Kuznetzov's format: 8 more header bytes (ifindex u32, protocol u16, pkt_type u8, pad u8).
    return b"".join(struct.pack("<IIII", *h) + struct.pack("<IHBB", 2, 0x0800, 0, 0) + d
                    for h, d in pcap_records(body))


def pad4(b):
    return b + b"\0" * (-len(b) % 4)


def be_block(btype, payload):
    payload = pad4(payload)
    n = 12 + len(payload)
    return struct.pack(">II", btype, n) + payload + struct.pack(">I", n)


def pcapng_to_be(data):
    """A big-endian copy of a little-endian pcapng (SHB, IDB, EPB kept, options dropped)."""
    out = []
    p = 0
    while p + 12 <= len(data):
        btype, n = struct.unpack_from("<II", data, p)
        if n < 12 or p + n > len(data):
            break
        b = data[p:p + n]
        if btype == 0x0A0D0D0A:
            out.append(be_block(btype, struct.pack(">IHHq", 0x1A2B3C4D, 1, 0, -1)))
        elif btype == 1:
            link, _, snap = struct.unpack_from("<HHI", b, 8)
            out.append(be_block(1, struct.pack(">HHI", link, 0, snap)))
        elif btype == 6:
            ifid, hi, lo, cap, orig = struct.unpack_from("<IIIII", b, 8)
            out.append(be_block(6, struct.pack(">IIIII", ifid, hi, lo, cap, orig) + b[28:28 + cap]))
        p += n
    return b"".join(out)


def first_block_len(data):
    return struct.unpack_from("<I", data, 4)[0]


def main():
    err = read(os.path.join(FIXTURES, "err1146-storm.pcap"))
    stall = read(os.path.join(FIXTURES, "stream-stall.pcap"))
    snap80 = read(os.path.join(FIXTURES, "snaplen80.pcap"))
    cooked2 = read(os.path.join(FIXTURES, "any-cooked-v2.pcap"))
    cookedng = read(os.path.join(FIXTURES, "any-cooked.pcapng"))
    mysql = read(os.path.join(ZEEK, "mysql.pcap"))
    sha2ng = read(os.path.join(ZEEK, "caching_sha2_password-after-auth-switch.pcapng"))

    cookedng_after_shb = cookedng[first_block_len(cookedng):]
    cookedng_packets = cookedng_after_shb[first_block_len(cookedng_after_shb):]
    sha2ng_be = pcapng_to_be(sha2ng)
    sha2ng_be_after_shb = sha2ng_be[struct.unpack_from(">I", sha2ng_be, 4)[0]:]
    mysql_be_body = pcap_body_be(mysql[24:])
    mysql_be = bytes.fromhex("a1b2c3d400020004") + mysql[8:16] + struct.pack(">II", 65535, 1) + mysql_be_body

    seeds = {
        "pcap_reader": {
            "err1146-le-us": b"\x00" + err[24:24 + 4096],
            "stream-stall-le-ns": b"\x02" + stall[24:24 + 4096],
            "mysql-be-us": b"\x01" + mysql_be_body,
            "snaplen80-modified": b"\x04" + pcap_body_modified(snap80[24:24 + 4096]),
        },
        "pcapng_reader": {
            "any-cooked-idb-epbs": b"\x00" + cookedng_after_shb,
            "any-cooked-new-section": b"\x00" + cookedng,
            "any-cooked-epbs-tsresol-snap96": b"\x06" + cookedng_packets,
            "caching-sha2-be": b"\x01" + sha2ng_be_after_shb,
        },
        "split_invariance": {
            "err1146-pcap-16": b"\x00\x0f" + err[24:24 + 4096],
            "snaplen80-pcap-7": b"\x00\x06" + snap80[24:24 + 4096],
            "mysql-pcap-be-3": b"\x01\x02" + mysql_be_body,
            "any-cooked-ng-5": b"\x80\x04" + cookedng_after_shb,
            "any-cooked-ng-section-16": b"\x80\x0f" + cookedng,
            "caching-sha2-ng-be-10": b"\x81\x09" + sha2ng_be_after_shb,
        },
        "raw_bytes": {
            "any-cooked-v2.pcap": cooked2[:4096],
            "any-cooked.pcapng": cookedng,
            "err1146-storm-2k.pcap": err[:2048],
            "caching-sha2-be.pcapng": sha2ng_be,
            "mysql-be.pcap": mysql_be,
        },
    }
    for target, files in seeds.items():
        d = os.path.join(HERE, "seeds", target)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            assert len(data) < 64 * 1024, name
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
