#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# tests/cluster/check.py CHECK DIR [ARGS] - the ground truth of make
# cluster-check (tests/cluster/run), compared with what the monitors
# show. DIR holds the run's files: reports (every NETPAIR line the jobs
# printed: what each task sent and received), aggnet-nodeN.json (each
# node's AGG net sums, tests/cluster/aggnet.py), totals-nodeN.txt
# (magnetd's TOTALS and STATS, magnet-ctl probe list, /proc/net/netstat). Each check prints "ok: ..." or
# "FAIL: ...", measured against expected, and exits 1 if any failed.
#
#   check.py prom DIR PORT JOB...     Prometheus (its HTTP API on PORT):
#                                     each job's sock bytes across the
#                                     nodes, and per node
#   check.py aggnet DIR NODE JOB...   AGG net on NODE: each job's bytes
#                                     and packets per protocol, its peers,
#                                     and that nothing of its flows is
#                                     counted to another job
#   check.py same DIR NODE OLD JOB... NODE's AGG net sums of the jobs
#                                     are still those of OLD (a copy of
#                                     its aggnet json taken earlier)
#   check.py health DIR NODE          nothing lost on NODE: the kernel's
#                                     and magnetd's counts, AGG net's
#   check.py gmetad DIR XML INT UP DOWN
#                                     gmetad (its XML and interactive
#                                     ports): the cluster's hosts up and
#                                     down, magnet's metrics of each host up
#   check.py rrd DIR RRDS JOB...      each job's bytes in gmetad's RRD of
#                                     each node it ran on
#   check.py layout DIR JOB...        each task's cgroup is Slurm's
#   check.py lossy DIR JOB...         TCP retransmitted (the lossy LAN):
#                                     the jobs' TCP_INFO bytes_retrans > 0
#   check.py supermon DIR JOB...      each job's sock bytes per node in the
#                                     nodes' Supermon samples composed
#   check.py jobs DIR JOB...          magnet-jobs -m run on node1 over
#                                     every node (magnet-jobs.tsv): each
#                                     job's bytes per node, protocol and
#                                     peer host, and its peers exactly
#   check.py promql -                 the PromQL of a job's bytes (below)
#
# How a job is named: magnetd counts the tasks of a Slurm step as the
# step's series, with words (AGG net's J lines) or labels (Prometheus)
# slurm_job_id, slurm_step, slurm_node, uid, and slurm_stepd for the
# step's slurmstepd (docs/slurm.md). job_of() and per_job_query() are the
# one place that knows it.
import json
import os
import re
import socket
import subprocess
import sys
import urllib.parse
import urllib.request

fails = 0

# A task's cgroup as Slurm's cgroup/v2 plugin makes it.
TASK_RE = re.compile(r"^/system\.slice/(?:([^/]+)_)?slurmstepd\.scope/job_(\d+)/step_(\d+)/user/task_(\d+|special)$")


def words(label):
    """A job's label: its path, then Slurm's words (k=v)."""
    w = label.split(" ")
    return w[0], dict(x.split("=", 1) for x in w[1:] if "=" in x)


def job_of(label):
    """The Slurm job id of a series' label, or None (not a job's tasks)."""
    _, kv = words(label)
    if "slurm_job_id" not in kv or "slurm_stepd" in kv:
        return None
    return int(kv["slurm_job_id"])


def step_path(r):
    """The step's cgroup, the series of a task's records."""
    return r["cgroup"].split("/user/")[0]


def ok(msg):
    print("ok: " + msg)


def bad(msg):
    global fails
    fails += 1
    print("FAIL: " + msg)


def is_(got, want, what):
    if got == want:
        ok("%s: %s (expected %s)" % (what, got, want))
    else:
        bad("%s: %s, expected %s" % (what, got, want))


def reports(d):
    out = []
    with open(os.path.join(d, "reports")) as f:
        for line in f:
            if line.startswith("NETPAIR "):
                out.append(json.loads(line[8:]))
    return out


def job_reports(d, jobs):
    rs = [r for r in reports(d) if r["job"] in jobs]
    for j in jobs:
        n = sum(1 for r in rs if r["job"] == j)
        if n != 2:
            bad("job %d: %d task reports, expected 2" % (j, n))
    return rs


def peer_of(rs, r):
    return next(p for p in rs if p["job"] == r["job"] and p["rank"] != r["rank"])


def sent(r):
    """What a task's sends asked for: what the sock handler counts."""
    return r["tcp_sent"] + r["udp_sent_bytes"]


# --- Prometheus -------------------------------------------------------------

def prom_query(port, q):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": q}))
    with urllib.request.urlopen(url, timeout=10) as f:
        r = json.load(f)
    if r.get("status") != "success":
        raise SystemExit("prometheus: %s: %s" % (q, r))
    return r["data"]["result"]


def per_job_query(by):
    """PromQL: sock bytes per Slurm job (and BY), its tasks' own only."""
    return ('sum by (slurm_job_id%s) (magnet_job_sock_bytes_total{slurm_job_id!="", slurm_stepd=""})'
            % by)


def check_prom(d, port, jobs):
    rs = job_reports(d, jobs)
    q = per_job_query("")
    print("# PromQL: " + q)
    got = {int(s["metric"]["slurm_job_id"]): int(float(s["value"][1])) for s in prom_query(port, q)}
    for j in jobs:
        want = sum(sent(r) for r in rs if r["job"] == j)
        is_(got.get(j), want, "Prometheus: job %d's sock bytes across the nodes" % j)
    got = {(int(s["metric"]["slurm_job_id"]), s["metric"]["node"]): int(float(s["value"][1]))
           for s in prom_query(port, per_job_query(", node"))}
    for j in jobs:
        for node in sorted({r["node"] for r in rs if r["job"] == j}):
            mine = [r for r in rs if r["job"] == j and r["node"] == node]
            is_(got.get((j, node)), sum(sent(r) for r in mine),
                "Prometheus: job %d's sock bytes on %s" % (j, node))
            # The series: the step's, labelled as Slurm names it.
            series = prom_query(port, 'magnet_job_sock_bytes_total{node="%s", slurm_job_id="%d", slurm_stepd=""}'
                                % (node, j))
            labels = sorted("{%s}" % ", ".join("%s=%s" % (k, v) for k, v in sorted(x["metric"].items())
                                              if k not in ("__name__", "instance", "job"))
                            for x in series)
            r = mine[0]
            kv = {"cgroup": step_path(r), "node": node, "slurm_job_id": str(j), "slurm_step": str(r["step"]),
                  "uid": str(r["uid"])}
            m = re.match(r"^/system\.slice/([^/]+)_slurmstepd\.scope/", r["cgroup"])
            if m:
                kv["slurm_node"] = m.group(1)
            want = ["{%s}" % ", ".join("%s=%s" % (k, v) for k, v in sorted(kv.items()))]
            is_(labels, want, "Prometheus: job %d's series on %s" % (j, node))


def check_layout(d, jobs):
    """Each task's cgroup, as the task itself read it: Slurm's layout,
    its own task_N or the step's task_special (where Slurm 22.05 leaves
    the tasks it moved there first)."""
    for r in job_reports(d, jobs):
        m = TASK_RE.match(r["cgroup"])
        got = m.groups() if m else r["cgroup"]
        want = (r["node"], str(r["job"]), str(r["step"]), m.group(4) if m else "N")
        if m and m.group(4) not in ("special", str(r["rank"])):
            want = want[:3] + (str(r["rank"]),)
        is_(got, want, "Slurm's cgroup of job %d task %d on %s: %s (scope's node, job, step, task)"
            % (r["job"], r["rank"], r["node"], r["cgroup"]))


# --- AGG net ----------------------------------------------------------------

def load(path):
    with open(path) as f:
        return json.load(f)


def agg_job(agg, j):
    """A job's J sums (per protocol) and P sums (per protocol and peer)."""
    ids = [i for i, e in agg["jobs"].items() if job_of(e["label"]) == j]
    sums, peers = {}, {}
    for i in ids:
        for proto, v in agg["jobs"][i].items():
            if proto == "label":
                continue
            acc = sums.setdefault(proto, [0, 0, 0, 0])
            for k in range(4):
                acc[k] += v[k]
        for proto, pp in agg["peers"].get(i, {}).items():
            for peer, v in pp.items():
                acc = peers.setdefault(proto, {}).setdefault(peer, [0, 0, 0, 0])
                for k in range(4):
                    acc[k] += v[k]
    return ids, sums, peers


def flows(rs, r):
    """(proto, peer) keys of a task's flows as its node's AGG net names them."""
    p = peer_of(rs, r)
    udp = "%s:%d" % (r["peer"], r["port"] + p["rank"])
    return {("tcp", "%s:%d" % (r["peer"], r["tcp_peer_port"])), ("udp", udp)}


def check_aggnet(d, node, jobs):
    agg = load(os.path.join(d, "aggnet-%s.json" % node))
    rs = job_reports(d, jobs)
    for j in jobs:
        mine = [r for r in rs if r["job"] == j and r["node"] == node]
        if not mine:
            continue
        ids, sums, peers = agg_job(agg, j)
        labels = sorted(agg["jobs"][i]["label"] for i in ids)
        print("# %s: job %d's cgroups in AGG net: %s" % (node, j, ", ".join(labels) or "none"))
        tcp = sums.get("tcp", [0, 0, 0, 0])
        udp = sums.get("udp", [0, 0, 0, 0])
        retrans = sum(r.get("tcpi_bytes_retrans", 0) + peer_of(rs, r).get("tcpi_bytes_retrans", 0)
                      for r in mine)
        w_tx = sum(r["tcp_sent"] for r in mine)
        w_rx = sum(r["tcp_received"] for r in mine)
        if retrans:
            print("# %s job %d: TCP retransmitted %d bytes (TCP_INFO bytes_retrans, both ends); %d sent on "
                  "the wire (bytes_sent); AGG net's repeated bytes on the node: %s" %
                  (node, j, retrans, sum(r["tcpi_bytes_sent"] for r in mine), agg["header"].get("repeated_bytes")))
        is_(tcp[1], w_tx, "AGG net %s job %d: TCP payload bytes sent, each once" % (node, j))
        is_(tcp[3], w_rx, "AGG net %s job %d: TCP payload bytes received, each once" % (node, j))
        if tcp[3] < w_rx:
            print("# %s: %d bytes short (%.2f segments of 1448 bytes); the node's TcpExt "
                  "TCPBacklogCoalesce: %s (segments merged into one skb while the socket was "
                  "owned by its task: the probe sees the merged skb, whose IP header "
                  "counts the first segment only)" % (node, w_rx - tcp[3], (w_rx - tcp[3]) / 1448.0,
                                                       netstat(d, node, "TCPBacklogCoalesce")))
        is_(udp[:2], [sum(r["udp_sent"] for r in mine), sum(r["udp_sent_bytes"] for r in mine)],
            "AGG net %s job %d: UDP datagrams and bytes sent" % (node, j))
        is_(udp[2:], [sum(r["udp_received"] for r in mine), sum(r["udp_received_bytes"] for r in mine)],
            "AGG net %s job %d: UDP datagrams and bytes received" % (node, j))
        if udp[2] < sum(r["udp_received"] for r in mine):
            print("# %s: %s" % (node, probe_missed(d, node)))
        others = sorted(set(sums) - {"tcp", "udp"})
        is_(others, [], "AGG net %s job %d: no protocol but TCP and UDP" % (node, j))
        # Peers: exactly the nodes it talked to, with those very bytes.
        got = {}
        for proto, pp in peers.items():
            for peer, v in pp.items():
                if v[1] or v[3]:
                    got.setdefault(peer.rsplit(":", 1)[0], [0, 0])
                    got[peer.rsplit(":", 1)[0]][0] += v[1]
                    got[peer.rsplit(":", 1)[0]][1] += v[3]
        want = {}
        for r in mine:
            want.setdefault(r["peer"], [0, 0])
            want[r["peer"]][0] += r["tcp_sent"] + r["udp_sent_bytes"]
            want[r["peer"]][1] += r["tcp_received"] + r["udp_received_bytes"]
        is_(got, want, "AGG net %s job %d: peers {address: [bytes to, bytes from]}" % (node, j))
        # Its flows, whoever AGG net counted them to: all of it is this job's.
        keys = set()
        for r in mine:
            keys |= flows(rs, r)
        elsewhere = {}
        for i, pp in agg["peers"].items():
            if i in ids:
                continue
            for proto, peer in keys:
                v = pp.get(proto, {}).get(peer)
                if v and (v[1] or v[3]):
                    label = agg["jobs"].get(i, {}).get("label", "?")
                    elsewhere["%s %s %s" % (label, proto, peer)] = [v[1], v[3]]
        is_(elsewhere, {}, "AGG net %s job %d: bytes of its flows %s counted to other jobs"
            % (node, j, sorted(p for _, p in keys)))


def netstat(d, node, key):
    """A TcpExt counter of NODE (/proc/net/netstat, in totals-NODE.txt)."""
    with open(os.path.join(d, "totals-%s.txt" % node)) as f:
        rows = [line.split() for line in f if line.startswith("TcpExt:")]
    if len(rows) == 2 and key in rows[0]:
        return rows[1][rows[0].index(key)]
    return "?"


def probe_missed(d, node):
    """Each probe's missed calls, from magnet-ctl probe list."""
    with open(os.path.join(d, "totals-%s.txt" % node)) as f:
        text = f.read()
    return "probes: " + ", ".join("%s missed %s" % (p, missed)
                                  for p, _, _, missed in probe_counts(text))


def probe_counts(text):
    """(probe, hits, lost, missed) of each probe magnet-ctl probe list names."""
    probe = None
    for line in text.splitlines():
        m = re.match(r"^(\d+): (\S+) ", line)
        if m:
            probe = m.group(2)
        m = re.match(r"^\s+hits (\d+) .*\blost (\d+) missed (\d+)", line)
        if m and probe:
            yield probe, m.group(1), m.group(2), m.group(3)


def check_same(d, node, old, jobs):
    now = load(os.path.join(d, "aggnet-%s.json" % node))
    then = load(old)
    for j in jobs:
        is_(agg_job(now, j)[1:], agg_job(then, j)[1:],
            "AGG net %s job %d: its sums unchanged since %s" % (node, j, os.path.basename(old)))


# --- the lossy LAN ------------------------------------------------------------

def check_lossy(d, jobs):
    """The premise of "each TCP byte once": TCP did send bytes again."""
    rs = job_reports(d, jobs)
    n = sum(r.get("tcpi_bytes_retrans", 0) for r in rs)
    sent = sum(r.get("tcpi_bytes_sent", 0) for r in rs)
    if n > 0:
        ok("the lossy LAN: the jobs' TCP retransmitted %d of %d bytes on the wire (TCP_INFO)" % (n, sent))
    else:
        bad("the lossy LAN: the jobs' TCP retransmitted nothing (%d bytes on the wire): "
            "no retransmission was counted" % sent)


# --- magnet-jobs -------------------------------------------------------------

def stepd_traffic(d, node, j):
    """The net and peer lines of job J's slurmstepd series in NODE's TOTALS
    (totals-NODE.txt): {proto: [tx packets, tx bytes, rx packets, rx
    bytes]}, {peer: [tx bytes, rx bytes]}. slurmstepd talks to srun."""
    net, peers, ids = {}, {}, set()
    with open(os.path.join(d, "totals-%s.txt" % node)) as f:
        for line in f:
            w = line.split()
            if w[:1] == ["job"]:
                kv = dict(x.split("=", 1) for x in w[3:] if "=" in x)
                if kv.get("slurm_job_id") == str(j) and kv.get("slurm_stepd") == "1":
                    ids.add(w[1])
            elif w[:1] in (["net"], ["peer"]) and w[1] in ids:
                kv = dict(x.split("=", 1) for x in w[3:] if "=" in x)
                v = [int(kv.get(k, 0)) for k in ("tx_packets", "tx_bytes", "rx_packets", "rx_bytes")]
                if w[0] == "net":
                    acc = net.setdefault(w[2], [0, 0, 0, 0])
                    for k in range(4):
                        acc[k] += v[k]
                elif w[2] != "other" and (v[1] or v[3]):
                    acc = peers.setdefault(w[2], [0, 0])
                    acc[0] += v[1]
                    acc[1] += v[3]
    return net, peers


def check_jobs(d, jobs):
    """magnet-jobs -m (magnet-jobs.tsv): a job's TOTALS net and peer lines,
    from every node at once, grouped by its Slurm job id: its tasks'
    traffic, known, and its slurmstepd's, as the node's TOTALS says."""
    rs = job_reports(d, jobs)
    net, peers, nodes = {}, {}, {}
    with open(os.path.join(d, "magnet-jobs.tsv")) as f:
        for line in f:
            w = line.rstrip("\n").split("\t")
            if w[0] == "node":
                nodes[w[1]] = w[3]
            elif w[0] == "net" and w[1].startswith("slurm="):
                net[(int(w[1][6:]), w[2], w[3])] = [int(x) for x in w[4:8]]
            elif w[0] == "peer" and w[1].startswith("slurm="):
                v = [int(x) for x in w[5:9]]
                if v[1] or v[3]:
                    peers.setdefault((int(w[1][6:]), w[2]), {})[w[3]] = [v[1], v[3]]
    is_(sorted(n for n, state in nodes.items() if state != "error"), sorted({r["node"] for r in rs}),
        "magnet-jobs: the nodes it read")
    for j in jobs:
        for node in sorted({r["node"] for r in rs if r["job"] == j}):
            mine = [r for r in rs if r["job"] == j and r["node"] == node]
            s_net, s_peers = stepd_traffic(d, node, j)
            s_tcp = s_net.get("tcp", [0, 0, 0, 0])
            s_udp = s_net.get("udp", [0, 0, 0, 0])
            print("# magnet-jobs: job %d on %s: its slurmstepd's TCP bytes [sent, received] %s, UDP %s, "
                  "peers %s (TOTALS)" % (j, node, [s_tcp[1], s_tcp[3]], [s_udp[1], s_udp[3]], s_peers))
            tcp = net.get((j, node, "tcp"), [0, 0, 0, 0])
            udp = net.get((j, node, "udp"), [0, 0, 0, 0])
            is_([tcp[1], tcp[3]], [sum(r["tcp_sent"] for r in mine) + s_tcp[1],
                                   sum(r["tcp_received"] for r in mine) + s_tcp[3]],
                "magnet-jobs: job %d on %s: TCP payload bytes [sent, received], each once, "
                "tasks' and slurmstepd's" % (j, node))
            is_(udp, [sum(r["udp_sent"] for r in mine) + s_udp[0],
                      sum(r["udp_sent_bytes"] for r in mine) + s_udp[1],
                      sum(r["udp_received"] for r in mine) + s_udp[2],
                      sum(r["udp_received_bytes"] for r in mine) + s_udp[3]],
                "magnet-jobs: job %d on %s: UDP [datagrams, bytes] sent, received" % (j, node))
            want = {p: list(v) for p, v in s_peers.items()}
            for r in mine:
                w = want.setdefault(r["peer"], [0, 0])
                w[0] += r["tcp_sent"] + r["udp_sent_bytes"]
                w[1] += r["tcp_received"] + r["udp_received_bytes"]
            is_(peers.get((j, node), {}), want,
                "magnet-jobs: job %d on %s: peer hosts {address: [bytes to, bytes from]}" % (j, node))


# --- health -----------------------------------------------------------------

def check_health(d, node):
    with open(os.path.join(d, "totals-%s.txt" % node)) as f:
        text = f.read()
    m = re.search(r"^OK \d+ .*$", text, re.M)
    head = dict(kv.split("=", 1) for kv in m.group(0).split()[2:] if "=" in kv) if m else {}
    for k in ("kernel_lost", "daemon_dropped", "probe_missed", "net_seq_evictions",
              "net_seq_holes_dropped", "net_order_early", "net_order_late"):
        is_(head.get(k), "0", "%s: magnetd's TOTALS %s (records %s)" % (node, k, head.get("records")))
    for k in ("read_lost", "queue_dropped", "client_dropped"):
        m = re.search(r"\b%s=(\d+)" % k, text)
        is_(m.group(1) if m else None, "0", "%s: magnetd's STATS %s" % (node, k))
    # Each probe's calls the kprobes core skipped (a probe hit while
    # another probe's handler ran on the CPU: a softirq's packet in an
    # interrupt of one) and records the ring lost: their packets are in no
    # count.
    for probe, hits, lost, missed in probe_counts(text):
        is_((lost, missed), ("0", "0"),
            "%s: probe %s's lost and missed (of %s hits)" % (node, probe, hits))
    agg = load(os.path.join(d, "aggnet-%s.json" % node))
    h = agg["header"]
    for k in ("lost", "dropped", "skipped", "evicted_jobs", "evicted_peers", "unkeyed", "seq_evictions",
              "seq_holes_dropped", "order_early", "order_late"):
        is_(h.get(k), 0, "%s: AGG net %s over %d reports" % (node, k, agg["reports"]))
    is_(agg["drops"], 0, "%s: AGG net D lines" % node)


# --- Supermon ----------------------------------------------------------------

def check_supermon(d, jobs):
    """The nodes' samples composed (supermon.sexp): each job's sock bytes
    per node, the tasks' series (not slurmstepd's)."""
    rs = job_reports(d, jobs)
    with open(os.path.join(d, "supermon.sexp")) as f:
        text = f.read()
    got = {}
    for sample in text.split('(sample "')[1:]:
        node = sample.split('"', 1)[0]
        for entry in sample.split("(job ")[1:]:
            m = re.search(r"\(slurm_job_id (\d+)\)", entry)
            if not m or "(slurm_stepd 1)" in entry:
                continue
            key = (int(m.group(1)), node)
            got[key] = got.get(key, 0) + int(re.search(r"\(sock_bytes (\d+)\)", entry).group(1))
    for j in jobs:
        for node in sorted({r["node"] for r in rs if r["job"] == j}):
            want = sum(sent(r) for r in rs if r["job"] == j and r["node"] == node)
            is_(got.get((j, node)), want, "Supermon: job %d's sock_bytes in %s's sample" % (j, node))


# --- gmetad -----------------------------------------------------------------

def gmetad_xml(port, request=None):
    s = socket.create_connection(("127.0.0.1", port), 10)
    if request:
        s.sendall(request.encode() + b"\n")
    data = b"".join(iter(lambda: s.recv(65536), b""))
    s.close()
    return data.decode("iso-8859-1")


def check_gmetad(d, port, iport, up, down):
    xml = gmetad_xml(port)
    with open(os.path.join(d, "gmetad.xml"), "w") as f:
        f.write(xml)
    m = re.search(r'<CLUSTER NAME="magnet-cluster".*?</CLUSTER>', xml, re.S)
    if not m:
        bad("gmetad: no cluster magnet-cluster in its XML (%d bytes)" % len(xml))
        return
    # Its judgement of the hosts: the cluster's summary.
    summary = gmetad_xml(iport, "/magnet-cluster?filter=summary")
    hosts = re.search(r'<HOSTS UP="(\d+)" DOWN="(\d+)"[^>]*>', summary)
    if hosts:
        print("# gmetad: " + hosts.group(0))
    is_(hosts.groups() if hosts else None, (str(up), str(down)), "gmetad: the cluster's HOSTS UP, DOWN")
    for h in re.finditer(r'<HOST NAME="([^"]*)"[^>]*TN="(\d+)"[^>]*TMAX="(\d+)"[^>]*>(.*?)</HOST>',
                         m.group(0), re.S):
        name, tn, tmax, body = h.groups()
        vals = dict(re.findall(r'<METRIC NAME="(magnet_[^"]*)" VAL="([^"]*)"', body))
        alive = int(tn) < 4 * int(tmax)
        print("# gmetad: host %s TN=%s TMAX=%s (%s), %d magnet metrics" %
              (name, tn, tmax, "up" if alive else "down", len(vals)))
        if alive:
            is_(vals.get("magnet_up"), "1", "gmetad: %s's magnet_up" % name)
            rec = vals.get("magnet_records", "nan")
            if rec not in ("nan", "") and float(rec) > 0:
                ok("gmetad: %s's magnet_records %s" % (name, rec))
            else:
                bad("gmetad: %s's magnet_records %s" % (name, rec))


# --- gmetad's RRDs ----------------------------------------------------------

def metric_word(path):
    return re.sub(r"[^A-Za-z0-9_]+", "_", path.lstrip("/")) or "root"


def rrd_last(path):
    out = subprocess.run(["rrdtool", "fetch", path, "AVERAGE", "-s", "-300"],
                         capture_output=True, text=True).stdout
    v = None
    for line in out.splitlines():
        w = line.split()
        if len(w) == 2 and w[0].endswith(":") and "nan" not in w[1]:
            v = float(w[1])
    return v


def check_rrd(d, rrds, jobs):
    rs = job_reports(d, jobs)
    for j in jobs:
        for node in sorted({r["node"] for r in rs if r["job"] == j}):
            mine = [r for r in rs if r["job"] == j and r["node"] == node]
            paths = sorted({step_path(r) for r in mine})
            got = 0
            for p in paths:
                f = os.path.join(rrds, "magnet-cluster", node, "magnet_job_%s_bytes.rrd" % metric_word(p))
                v = rrd_last(f) if os.path.exists(f) else None
                if v is None:
                    got = None
                    print("# no value in %s" % f)
                    break
                got += v
            is_(got if got is None else int(got), sum(sent(r) for r in mine),
                "gmetad's RRD: job %d's bytes on %s (%s)" % (j, node, ", ".join(metric_word(p) for p in paths)))


def main():
    what, d = sys.argv[1], sys.argv[2]
    a = sys.argv[3:]
    if what == "prom":
        check_prom(d, int(a[0]), [int(x) for x in a[1:]])
    elif what == "aggnet":
        check_aggnet(d, a[0], [int(x) for x in a[1:]])
    elif what == "same":
        check_same(d, a[0], a[1], [int(x) for x in a[2:]])
    elif what == "health":
        check_health(d, a[0])
    elif what == "gmetad":
        check_gmetad(d, int(a[0]), int(a[1]), int(a[2]), int(a[3]))
    elif what == "rrd":
        check_rrd(d, a[0], [int(x) for x in a[1:]])
    elif what == "supermon":
        check_supermon(d, [int(x) for x in a])
    elif what == "layout":
        check_layout(d, [int(x) for x in a])
    elif what == "lossy":
        check_lossy(d, [int(x) for x in a])
    elif what == "jobs":
        check_jobs(d, [int(x) for x in a])
    elif what == "promql":
        print(per_job_query(""))
    else:
        raise SystemExit("check.py: unknown check " + what)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
