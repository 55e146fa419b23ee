#!/usr/bin/env python3
"""Writes seeds/records: RFC 8448 3's records in the `records` target's input format (see README.md)."""
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
TRACE = os.path.join(HERE, "..", "tests", "rfc8448.rs")


def records():
    """The trace's records, by constant name, from the crate's RFC 8448 test."""
    text = open(TRACE).read()
    out = {}
    for name, body in re.findall(r'const (\w+): &str = "([^"]*)";', text):
        out[name] = bytes.fromhex(re.sub(r"[^0-9a-fA-F]", "", body))
    return out


def data(sender, payload):
    """Data records of at most 255 bytes each."""
    out = b""
    for i in range(0, len(payload), 255):
        chunk = payload[i:i + 255]
        out += bytes([sender, len(chunk)]) + chunk
    return out


def main():
    r = records()
    order = [(0, "CLIENT_HELLO"), (1, "SERVER_HELLO"), (1, "SERVER_FLIGHT"), (0, "CLIENT_FINISHED"),
             (1, "NEW_SESSION_TICKET"), (0, "CLIENT_DATA"), (1, "SERVER_DATA")]
    trace = b"".join(data(s, r[n]) for s, n in order)
    close = bytes([4, 0])
    seeds = {
        "rfc8448-keys-whole": bytes([1]) + trace + close,
        "rfc8448-keys-chunks-of-3": bytes([1 | (2 << 1)]) + trace,
        "rfc8448-no-keys": bytes([0]) + trace + close,
        # The ticket lost (a gap across records), then the server's data record found by its number.
        "rfc8448-lost-record": bytes([1]) + b"".join(data(s, r[n]) for s, n in order[:4])
        + bytes([1 | 2, 8]) + data(0, r["CLIENT_DATA"]) + data(1, r["SERVER_DATA"]),
        # A gap inside the server's data record: its framing holds.
        "rfc8448-gap-in-record": bytes([1]) + b"".join(data(s, r[n]) for s, n in order[:6])
        + data(1, r["SERVER_DATA"][:20]) + bytes([1 | 2, 1]) + data(1, r["SERVER_DATA"][51:]),
    }
    os.makedirs(os.path.join(HERE, "seeds", "records"), exist_ok=True)
    for name, body in seeds.items():
        with open(os.path.join(HERE, "seeds", "records", name), "wb") as f:
            f.write(body)


if __name__ == "__main__":
    main()
