#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# tests/cluster/netpair.py PORT SPEC SERVER - one task of a two-task
# Slurm step (srun -N2 -n2) that exchanges a known traffic with the other
# task over the cluster's LAN, then prints exactly what it did, as one
# line:
#
#   NETPAIR {"job": 1, "step": 0, "rank": 0, "node": "node1", ...}
#
# SPEC is TCP1,TCP0,N0xS0,N1xS1: rank 1 connects to rank 0 (TCP, PORT on
# SERVER, rank 0's node) and sends TCP1 bytes; rank 0 sends TCP0 bytes
# back; rank 0 sends N0 UDP datagrams of S0 bytes to rank 1 (UDP, from
# PORT to PORT + 1: each rank binds PORT + rank, so that both may share a
# node), then a 1-byte marker on TCP; rank 1 sends N1 datagrams of S1
# bytes, then its marker. The markers are part of the TCP bytes each side
# reports. Every send is blocking and whole: magnet's sock handler counts
# a send's size argument, which is then what went out. TCP_INFO's
# bytes_sent and bytes_retrans say what crossed the wire, retransmissions
# included.
#
# "cgroup" is the task's cgroup v2 path when it reports ("started_in"
# when it started: slurmstepd moves a task from user/task_special to its
# own user/task_N once it runs).
#
# Then the task holds its sockets open until /tmp/cluster-release-PORT
# exists (or 600 s pass): its cgroup, and so its series in magnetd's
# views, stays while the host compares them with this report.
import json
import os
import socket
import struct
import sys
import time

CHUNK = 65536
HOLD = 600


def own_cgroup():
    with open("/proc/self/cgroup") as f:
        return f.read().strip().split("::", 1)[-1]


def tcp_info(sock):
    # struct tcp_info (linux/tcp.h) as of 4.19: bytes_sent (data octets
    # out, retransmissions included) at 200, bytes_retrans at 208,
    # bytes_received at 128, total_retrans at 100.
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 232)
    if len(raw) < 216:
        return {}
    return {
        "tcpi_bytes_sent": struct.unpack_from("<Q", raw, 200)[0],
        "tcpi_bytes_retrans": struct.unpack_from("<Q", raw, 208)[0],
        "tcpi_bytes_received": struct.unpack_from("<Q", raw, 128)[0],
        "tcpi_total_retrans": struct.unpack_from("<I", raw, 100)[0],
    }


def send_exact(sock, n):
    buf = b"x" * CHUNK
    left = n
    while left:
        k = min(left, CHUNK)
        sock.sendall(buf[:k])
        left -= k
    return n


def recv_exact(sock, n):
    got = 0
    while got < n:
        b = sock.recv(min(CHUNK, n - got))
        if not b:
            raise SystemExit("netpair: the peer closed after %d of %d bytes" % (got, n))
        got += len(b)
    return got


def udp_send(udp, peer, port, count, size):
    payload = b"u" * size
    for i in range(count):
        if udp.sendto(payload, (peer, port)) != size:
            raise SystemExit("netpair: a short UDP send")
        # Paced: the receiver's queue never fills, so what the kernel
        # queued to its socket is what it reads.
        if i % 8 == 7:
            time.sleep(0.005)
    return count, count * size


def udp_receive(udp, tcp):
    """Datagrams until the peer's TCP marker, then what is still queued."""
    count = nbytes = 0
    udp.setblocking(False)
    tcp.setblocking(False)
    marker = False
    quiet_until = None
    while True:
        try:
            d = udp.recv(65536)
            count += 1
            nbytes += len(d)
            continue
        except BlockingIOError:
            pass
        if not marker:
            try:
                b = tcp.recv(1)
                if not b:
                    raise SystemExit("netpair: the peer closed before its UDP marker")
                marker = True
                quiet_until = time.monotonic() + 0.5
            except BlockingIOError:
                pass
        elif time.monotonic() > quiet_until:
            break
        time.sleep(0.002)
    tcp.setblocking(True)
    udp.setblocking(True)
    return count, nbytes


def main():
    port = int(sys.argv[1])
    tcp1, tcp0, u0, u1 = sys.argv[2].split(",")
    tcp1, tcp0 = int(tcp1), int(tcp0)
    n0, s0 = (int(x) for x in u0.split("x"))
    n1, s1 = (int(x) for x in u1.split("x"))
    rank = int(os.environ["SLURM_PROCID"])
    server = sys.argv[3]
    me = socket.gethostname()
    started_in = own_cgroup()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    udp.bind(("0.0.0.0", port + rank))
    if rank == 0:
        lsn = socket.create_server(("0.0.0.0", port))
        tcp, (peer, _) = lsn.accept()
        lsn.close()
    else:
        deadline = time.monotonic() + 120
        while True:
            try:
                tcp = socket.create_connection((server, port))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        peer = tcp.getpeername()[0]
    r = {"tcp_sent": 0, "tcp_received": 0, "udp_sent": 0, "udp_sent_bytes": 0,
         "udp_received": 0, "udp_received_bytes": 0}
    if rank == 0:
        r["tcp_received"] += recv_exact(tcp, tcp1)
        r["tcp_sent"] += send_exact(tcp, tcp0)
        r["udp_sent"], r["udp_sent_bytes"] = udp_send(udp, peer, port + 1, n0, s0)
        r["tcp_sent"] += send_exact(tcp, 1)
        r["udp_received"], r["udp_received_bytes"] = udp_receive(udp, tcp)
        r["tcp_received"] += 1
    else:
        r["tcp_sent"] += send_exact(tcp, tcp1)
        r["tcp_received"] += recv_exact(tcp, tcp0)
        r["udp_received"], r["udp_received_bytes"] = udp_receive(udp, tcp)
        r["tcp_received"] += 1
        r["udp_sent"], r["udp_sent_bytes"] = udp_send(udp, peer, port, n1, s1)
        r["tcp_sent"] += send_exact(tcp, 1)
    # Both markers are in: nothing more crosses until the release.
    time.sleep(0.5)
    r.update(tcp_info(tcp))
    out = {"job": int(os.environ["SLURM_JOB_ID"]), "step": int(os.environ["SLURM_STEP_ID"]),
           "rank": rank, "node": me, "peer": peer, "port": port, "uid": os.getuid(),
           "cgroup": own_cgroup(), "started_in": started_in, "pid": os.getpid(),
           "tcp_local_port": tcp.getsockname()[1], "tcp_peer_port": tcp.getpeername()[1]}
    out.update(r)
    print("NETPAIR " + json.dumps(out, sort_keys=True), flush=True)
    release = "/tmp/cluster-release-%d" % port
    deadline = time.monotonic() + HOLD
    while not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.2)
    tcp.close()
    udp.close()


if __name__ == "__main__":
    main()
