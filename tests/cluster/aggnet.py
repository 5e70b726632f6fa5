#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# tests/cluster/aggnet.py OUT - a node's traffic per job and peer since it
# started: a client of magnetd's Unix socket (as root: every job) that
# asks AGG net EVERY 1s (docs/protocol.md) and adds up every report, J
# lines per job and protocol, P lines per job, protocol and peer (its
# address and port), with each report header's counts. After each report
# it writes the sums to OUT (JSON, replaced whole by a rename):
#
#   {"reports": N, "header": {"packets": ..., "lost": ..., ...},
#    "jobs": {"ID": {"label": "/path words...", "tcp": [txp, txb, rxp, rxb], ...}},
#    "peers": {"ID": {"tcp": {"10.77.0.2:7101": [txp, txb, rxp, rxb]}, ...}},
#    "drops": D}
#
# A job's label is its J line's last words (the cgroup path, and what
# magnetd adds after it).
import json
import os
import socket
import sys

SOCK = "/run/magnet/magnetd.sock"


def lines(f):
    for raw in f:
        yield raw.decode("ascii", "replace").rstrip("\n")


def add(acc, vals):
    for i, v in enumerate(vals):
        acc[i] += v


def main():
    out = sys.argv[1]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(SOCK)
    s.sendall(b"AGG net EVERY 1s\n")
    f = s.makefile("rb")
    it = lines(f)
    ok = next(it)
    if not ok.startswith("OK agg key=net"):
        raise SystemExit("aggnet: magnetd answered: " + ok)
    state = {"reports": 0, "header": {}, "jobs": {}, "peers": {}, "drops": 0}
    for line in it:
        w = line.split()
        if not w:
            continue
        if w[0] == "D":
            state["drops"] += int(w[1])
            continue
        if w[0] != "A" or w[1] != "net":
            continue
        n = int(w[2])
        for kv in w[3:]:
            k, v = kv.split("=", 1)
            if k not in ("ts", "interval", "jobs", "peers"):
                state["header"][k] = state["header"].get(k, 0) + int(v)
        for _ in range(n):
            e = next(it).split(" ")
            if e[0] == "J":
                job, proto = e[1], e[2]
                j = state["jobs"].setdefault(job, {"label": " ".join(e[7:])})
                add(j.setdefault(proto, [0, 0, 0, 0]), [int(x) for x in e[3:7]])
            elif e[0] == "P":
                job, proto, peer = e[1], e[2], e[3]
                p = state["peers"].setdefault(job, {}).setdefault(proto, {})
                add(p.setdefault(peer, [0, 0, 0, 0]), [int(x) for x in e[4:8]])
        state["reports"] += 1
        tmp = out + ".tmp"
        with open(tmp, "w") as o:
            json.dump(state, o, sort_keys=True)
        os.rename(tmp, out)
    raise SystemExit("aggnet: magnetd closed the connection")


if __name__ == "__main__":
    main()
