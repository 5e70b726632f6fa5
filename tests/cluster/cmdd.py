#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# tests/cluster/cmdd.py PORT TOKENFILE - a node's command loop: how the
# host drives a node after it booted. It listens on PORT, which the host
# reaches through the node's --forward (QEMU's user network: the
# connection comes from 10.0.2.2, and only such connections are served).
# A request is two lines, the run's secret token (TOKENFILE, made by the
# host for this run) and a shell command line; the reply is the command's
# output (stdout and stderr) and a last line "@rc N", its exit status.
# Each request runs in a thread of its own, so a long one does not hold
# the others. The command "quit" answers "@rc 0" and ends the loop.
import hmac
import socket
import subprocess
import sys
import threading

HOST_ADDR = "10.0.2.2"
TIMEOUT = 900


def serve(conn, token, done):
    with conn:
        f = conn.makefile("rb")
        given = f.readline().rstrip(b"\n")
        cmd = f.readline().rstrip(b"\n").decode()
        if not hmac.compare_digest(given, token):
            conn.sendall(b"cmdd: bad token\n@rc 126\n")
            return
        if cmd == "quit":
            conn.sendall(b"@rc 0\n")
            done.set()
            return
        try:
            p = subprocess.run(["/bin/sh", "-c", cmd], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=TIMEOUT)
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = (e.stdout or b"") + b"cmdd: timed out\n", 124
        if out and not out.endswith(b"\n"):
            out += b"\n"
        conn.sendall(out + b"@rc %d\n" % (rc if rc >= 0 else 128 - rc))


def main():
    port = int(sys.argv[1])
    with open(sys.argv[2], "rb") as f:
        token = f.read().strip()
    srv = socket.create_server(("0.0.0.0", port))
    srv.settimeout(0.5)
    done = threading.Event()
    print("cmdd: listening on %d" % port, flush=True)
    while not done.is_set():
        try:
            conn, (addr, _) = srv.accept()
        except socket.timeout:
            continue
        if addr != HOST_ADDR:
            conn.close()
            continue
        conn.settimeout(None)
        threading.Thread(target=serve, args=(conn, token, done), daemon=True).start()


if __name__ == "__main__":
    main()
