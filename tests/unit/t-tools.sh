#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# End to end: synthetic rings as regular files in a directory -> magnet-read
# -d -> trace file -> magnet-dump, checked against what gen-stream says the
# merged output must be. Also: the read side on a FIFO (not seekable, reads
# block like a ring's) stopped by SIGINT, corrupt input and traces, usage
# and runtime errors. Run by `make unit`; MAGNET_BUILD names the build dir.
set -u

B=${MAGNET_BUILD:-build}
READ=$B/tools/magnet-read
DUMP=$B/tools/magnet-dump
GEN=$B/tests/unit/gen-stream
T=$(mktemp -d "${TMPDIR:-/tmp}/magnet-t-tools.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
pass=0

fail() {
	echo "t-tools: FAIL: $*" >&2
	for f in "$T"/*.err; do
		[ -s "$f" ] && { echo "--- $f" >&2; head -20 "$f" >&2; }
	done
	exit 1
}

ok() {
	pass=$((pass + 1))
	echo "t-tools: ok $pass - $*"
}

# run WANT_STATUS NAME CMD...: CMD's stdout in $T/NAME.out, stderr .err
run() {
	want=$1 name=$2
	shift 2
	"$@" >"$T/$name.out" 2>"$T/$name.err"
	st=$?
	[ "$st" -eq "$want" ] || fail "$name: exit $st, want $want: $*"
}

for f in "$READ" "$DUMP" "$GEN"; do
	[ -x "$f" ] || fail "$f not built"
done

# gen-stream prints TASK records' lines too (magnet-dump -T); without -T
# they are not printed.
notask() {
	awk '$3 != "TASK"' "$1"
}
# Who wrote a record ends its line: [intr ]comm=COMM cgroup=N.
WHO=' (intr )?comm=[^ ]+ cgroup=[0-9]+$'

# --- The main round trip: 2 CPUs, 20000 records each (~1.2 MiB a file,
# so reads end inside records and many chunks are written), LOST records.
run 0 gen "$GEN" -d "$T/ring" -C 0,1 -n 20000 -s 1 -L 97 -J "$T/truth.jsonl"
mv "$T/gen.out" "$T/expected-all.txt"
notask "$T/expected-all.txt" >"$T/expected.txt"
run 0 read "$READ" -d "$T/ring" -o "$T/trace"
ok "magnet-read -d on regular files exits 0"
# Regular files get one read at a time whatever -r says: the same records.
run 0 readr "$READ" -d "$T/ring" -r 8 -o "$T/trace-r8"
run 0 dumpr "$DUMP" "$T/trace-r8"
cmp -s "$T/expected.txt" "$T/dumpr.out" || fail "magnet-read -r 8 on regular files: records differ"

run 0 dump "$DUMP" "$T/trace"
cmp -s "$T/expected.txt" "$T/dump.out" ||
	fail "dump differs from expected: $(diff "$T/expected.txt" "$T/dump.out" | head -5)"
[ ! -s "$T/dump.err" ] || fail "dump wrote to stderr: $(cat "$T/dump.err")"
ok "merged text output matches the generator's ($(wc -l <"$T/dump.out") lines)"

# Who wrote each record: the comm the generator's TASK records give (the
# cmp above checks every line's comm and cgroup); some unknown after a
# lost TASK record, "?" itself escaped; -T adds the TASK lines.
run 0 dumpt "$DUMP" -T "$T/trace"
cmp -s "$T/expected-all.txt" "$T/dumpt.out" ||
	fail "dump -T differs from expected: $(diff "$T/expected-all.txt" "$T/dumpt.out" | head -5)"
ntask=$(awk '$3 == "TASK"' "$T/dumpt.out" | wc -l)
nunk=$(grep -c ' comm=? cgroup=[0-9]*$' "$T/dump.out")
[ "$ntask" -gt 1000 ] || fail "only $ntask TASK lines"
[ "$nunk" -gt 50 ] || fail "only $nunk records of unknown threads"
[ "$(grep -v -c -E "$WHO| LOST " "$T/dump.out")" -eq 0 ] || fail "lines without comm and cgroup"
grep -q -E ' 0/0 .* comm=swapper/[01] cgroup=1$' "$T/dump.out" || fail "no idle task (pid 0) named"
grep -q -E ' intr comm=[^ ]+ cgroup=[0-9]+$' "$T/dump.out" || fail "no intr record"
grep -q ' comm=\\x3f cgroup=' "$T/dump.out" || fail "no thread named \"?\""
grep -q ' comm=nginx:\\x20worker cgroup=' "$T/dump.out" || fail "a comm with a space is not one word"
grep -q -E '^[0-9.]+ [01] TASK [0-9]+/[0-9]+ comm=[^ ]+ cgroup=[0-9]+ cgroup_id=[0-9]{10,}$' "$T/dumpt.out" ||
	fail "no TASK line of a cgroup id with a high half"
# Unknown only right after a LOST record of its CPU: its TASK record was
# lost (the next record of the thread tries again).
awk '/ comm=\? cgroup=[0-9]+$/ && prev[$2] != "LOST" { print NR; exit 1 }
     { prev[$2] = $3 }' "$T/dumpt.out" >"$T/unk.err" ||
	fail "an unknown comm with no LOST record before it, line $(cat "$T/unk.err")"
ok "every record names its thread ($ntask TASK lines, $nunk unknown after lost TASK records)"

# Order, independently of the generator: timestamps never go back; equal
# ones come in CPU order.
awk '{ split($1, t, "."); ts = t[1] * 1e9 + t[2]
       if (NR > 1 && (ts < pts || (ts == pts && $2 < pcpu))) { print NR; exit 1 }
       pts = ts; pcpu = $2 }' "$T/dump.out" >"$T/order.err" ||
	fail "out of order at line $(cat "$T/order.err")"
ok "merged by timestamp, ties by CPU"

# Capture records: present in every form the generator makes (short, long
# and cut at 64 bytes, unreadable), on kprobes and kretprobes; the text is
# checked byte for byte by the cmp above.
ncap=$(grep -c ' cap=[0-9]*@arg[0-5] "' "$T/dump.out")
[ "$ncap" -gt 1000 ] || fail "only $ncap capture records"
grep -q -E ' sock_sendmsg\(25\) .* cap=4000@arg5 ".*"\.\.\.'"$WHO" "$T/dump.out" || fail "no 4000-byte capture"
grep -q ' read_done(22) .* ret=-\{0,1\}[0-9]* lat=[0-9]*ns cap=7@arg1 "' "$T/dump.out" || fail "no kretprobe capture"
grep -q -E ' cap=0@arg[0-5] ""'"$WHO" "$T/dump.out" || fail "no unreadable capture"
grep -q -E ' cap=1@arg1 "\\x[0-9a-f][0-9a-f]"'"$WHO" "$T/dump.out" || fail "no escaped binary byte"
[ "$(grep -c ' cap=' "$T/dump.out")" -eq "$ncap" ] || fail "malformed cap= fields"
ok "capture records printed ($ncap), long ones cut at 64 bytes, unreadable ones empty"

# Named handlers: sock records (IPv4, IPv6 in brackets, no inet socket;
# tcp, udp, other protocols by number) and a module's raw records; also
# checked byte for byte by the cmp above.
nsock=$(grep -c ' tcp_cleanup_rbuf(26) abstract=0x[0-9a-f]* sock ' "$T/dump.out")
[ "$nsock" -gt 1000 ] || fail "only $nsock sock records"
grep -q -E ' sock tcp [0-9.]+:[0-9]+ -> [0-9.]+:[0-9]+ size=[0-9]+ state=[A-Z_0-9]+\([0-9]+\)'"$WHO" "$T/dump.out" || fail "no IPv4 tcp sock record"
grep -q -E ' sock udp \[[0-9a-f:]+\]:[0-9]+ -> \[[0-9a-f:]+\]:[0-9]+ size=[0-9]+ state=' "$T/dump.out" || fail "no IPv6 udp sock record"
grep -q -E ' sock (icmp|icmpv6|ipproto[0-9]+) ' "$T/dump.out" || fail "no sock record of another protocol"
grep -q -E ' sock - size=[0-9]+ state=[A-Za-z_0-9]+\([0-9]+\)'"$WHO" "$T/dump.out" || fail "no sock record without an inet family"
grep -q -E ' state=unknown\([0-9]*\)'"$WHO" "$T/dump.out" || fail "no sock record of an unknown state"
nraw=$(grep -c ' mymod_request(27) abstract=0x[0-9a-f]* raw len=[0-9]* "' "$T/dump.out")
[ "$nraw" -gt 1000 ] || fail "only $nraw raw records"
grep -q -E ' raw len=0 ""'"$WHO" "$T/dump.out" || fail "no empty raw record"
grep -q -E ' raw len=[0-9]* ".*"\.\.\.'"$WHO" "$T/dump.out" || fail "no raw record cut at 64 bytes"
nprobe=$(awk '$3 != "LOST"' "$T/dump.out" | wc -l)
[ "$(grep -c ' args=\[' "$T/dump.out")" -eq $((nprobe - nsock - nraw)) ] ||
	fail "sock or raw records printed with args"
ok "sock records ($nsock) and raw records ($nraw) printed"

n0=$(awk '$2 == 0 && $3 != "LOST"' "$T/dump.out" | wc -l)
n1=$(awk '$2 == 1 && $3 != "LOST"' "$T/dump.out" | wc -l)
nl=$(grep -c ' LOST full=' "$T/dump.out")
[ "$nl" -gt 0 ] || fail "no LOST lines"
t0=$(awk '$2 == 0 && $3 == "TASK"' "$T/dumpt.out" | wc -l)
t1=$(awk '$2 == 1 && $3 == "TASK"' "$T/dumpt.out" | wc -l)
# Records as the kernel counts them (written): events only, TASK apart.
grep -q "^cpu0: records $n0 .* tasks=$t0 " "$T/read.err" || fail "read summary for cpu0 (want $n0, TASK $t0): $(cat "$T/read.err")"
grep -q "^cpu1: records $n1 .* tasks=$t1 " "$T/read.err" || fail "read summary for cpu1 (want $n1, TASK $t1)"
grep -q "| kernel written=$n0 " "$T/read.err" || fail "kernel stats not reported"
ok "magnet-read summary counts records ($n0 + $n1, TASK $t0 + $t1) and LOST ($nl records)"

# --- JSON lines.
run 0 json "$DUMP" -j "$T/trace"
[ "$(wc -l <"$T/json.out")" -eq "$(wc -l <"$T/dump.out")" ] || fail "JSON line count"
[ "$(grep -c '"event":"lost"' "$T/json.out")" -eq "$nl" ] || fail "JSON lost count"
# Each line one object with the fields in the documented order.
cap='(,"capture":\{"arg":[0-5],"len":[0-9]+,"hex":"([0-9a-f][0-9a-f])*"\})?'
sock='("symbol":"[^"]*","type":"kprobe","abstract":"0x[0-9a-f]+","sock":\{("family":null|"family":"inet6?","proto":"(tcp|udp|icmp|icmpv6|ipproto[0-9]+)","src":"[0-9a-f.:]+","sport":[0-9]+,"dst":"[0-9a-f.:]+","dport":[0-9]+),"size":[0-9]+,"state":[0-9]+\})'
raw='("symbol":"[^"]*","type":"custom","abstract":"0x[0-9a-f]+","raw":\{"len":[0-9]+,"hex":"([0-9a-f][0-9a-f])*"\})'
who='"comm":(null|"([^"\\]|\\.)*"),"cgroup":[0-9]+,"intr":(true|false),'
bad=$(grep -v -c -E '^\{"ts":[0-9]+,"cpu":[0-9]+,"pid":[0-9]+,"tgid":[0-9]+,('"$who"')?"id":[0-9]+,"event":"[^"]*",(("symbol":"[^"]*","type":"kprobe","abstract":"0x[0-9a-f]+","args":\[("0x[0-9a-f]+"(,"0x[0-9a-f]+")*)?\]'"$cap"')|'"$sock"'|'"$raw"'|("symbol":"[^"]*","type":"kretprobe","abstract":"0x[0-9a-f]+","args":\[("0x[0-9a-f]+"(,"0x[0-9a-f]+")*)?\],"ret":-?[0-9]+,"lat_ns":[0-9]+'"$cap"')|("full":[0-9]+,"too_big":[0-9]+,"nesting":[0-9]+,"overwritten":[0-9]+))\}$' "$T/json.out")
[ "$(grep -c '"capture":' "$T/json.out")" -eq "$ncap" ] || fail "JSON capture count"
[ "$(grep -c '"sock":{' "$T/json.out")" -eq "$nsock" ] || fail "JSON sock count"
[ "$(grep -c '"raw":{' "$T/json.out")" -eq "$nraw" ] || fail "JSON raw count"
grep -q '"capture":{"arg":5,"len":4000,"hex":"[0-9a-f]\{8000\}"}}$' "$T/json.out" || fail "JSON: no full 4000-byte capture"
[ "$bad" -eq 0 ] || fail "$bad JSON lines do not match the schema"
[ "$(grep -c -E '"tgid":[0-9]+,'"$who" "$T/json.out")" -eq $((n0 + n1)) ] || fail "JSON records without comm, cgroup, intr"
run 0 jsont "$DUMP" -T -j "$T/trace"
[ "$(grep -c -E '^\{"ts":[0-9]+,"cpu":[0-9]+,"pid":[0-9]+,"tgid":[0-9]+,"comm":"([^"\\]|\\.)*","cgroup":[0-9]+,"cgroup_id":[0-9]+,"uid":(null|[0-9]+),"euid":(null|[0-9]+),"id":2,"event":"task","type":"task"\}$' "$T/jsont.out")" -eq "$ntask" ] ||
	fail "JSON TASK lines do not match the schema"
ok "JSON lines match the documented schema"
if command -v python3 >/dev/null 2>&1; then
	# Also: each capture's (and raw record's) hex has len bytes, and its
	# first 64, escaped per docs/magnet-dump.md, are what the text line
	# shows; sock objects say what the text says.
	python3 -c '
import ipaddress, json, re, sys
def esc(b):
    s = ""
    for c in b:
        if c in (0x22, 0x5c): s += "\\" + chr(c)
        elif 0x20 <= c < 0x7f: s += chr(c)
        else: s += "\\x%02x" % c
    return s
n = caps = socks = raws = 0
for line, text in zip(open(sys.argv[1]), open(sys.argv[2])):
    o = json.loads(line)
    assert isinstance(o["ts"], int) and isinstance(o["cpu"], int)
    n += 1
    # Who wrote it ends the line; the payload comes before.
    text = re.sub(r" (intr )?comm=[^ ]+ cgroup=[0-9]+\n$", "\n", text)
    s = o.get("sock")
    if s is not None:
        if s["family"] is None:
            want = " sock - size=%d state=" % s["size"]
        else:
            v = 4 if s["family"] == "inet" else 6
            assert ipaddress.ip_address(s["src"]).version == v, line
            assert ipaddress.ip_address(s["dst"]).version == v, line
            ep = "%s:%d" if v == 4 else "[%s]:%d"
            want = " sock %s %s -> %s size=%d state=" % (s["proto"],
                ep % (s["src"], s["sport"]), ep % (s["dst"], s["dport"]), s["size"])
        assert want in text and text.endswith("(%d)\n" % s["state"]), (text, want)
        socks += 1
        continue
    r = o.get("raw")
    if r is not None:
        data = bytes.fromhex(r["hex"])
        assert len(data) == r["len"] and o["type"] == "custom", line
        want = " raw len=%d \"%s\"%s\n" % (r["len"], esc(data[:64]),
                                          "..." if len(data) > 64 else "")
        assert text.endswith(want), (text, want)
        raws += 1
        continue
    c = o.get("capture")
    if c is None:
        assert " cap=" not in text, text
        continue
    data = bytes.fromhex(c["hex"])
    assert len(data) == c["len"], line
    want = " cap=%d@arg%d \"%s\"%s\n" % (c["len"], c["arg"], esc(data[:64]),
                                       "..." if len(data) > 64 else "")
    assert text.endswith(want), (text, want)
    caps += 1
print(n, caps, socks, raws)' "$T/json.out" "$T/dump.out" >"$T/py.out" 2>"$T/py.err" || fail "python3 json: $(tail -3 "$T/py.err")"
	ok "JSON parses with python3 (objects, captures, socks, raws: $(cat "$T/py.out")); they agree with the text"
	# comm, cgroup and intr of every record (and TASK line) are the
	# generator's truth; JSON holds bytes that are not UTF-8 as U+00XX.
	python3 -c '
import json, sys
def dec(h):
    if h is None: return None
    b = bytes.fromhex(h); s = ""; i = 0
    while i < len(b):
        for n in (4, 3, 2, 1):
            try: s += b[i:i + n].decode("utf-8"); i += n; break
            except UnicodeDecodeError: pass
        else: s += chr(b[i]); i += 1
    return s
n = named = unk = tasks = 0
for line, want in zip(open(sys.argv[1]), open(sys.argv[2])):
    o, w = json.loads(line), json.loads(want)
    n += 1
    if w.get("lost"):
        assert o["event"] == "lost", (line, want); continue
    assert o["pid"] == w["pid"] and o["cgroup"] == w["cgroup"], (line, want)
    assert o["comm"] == dec(w["comm_hex"]), (line, want)
    if w.get("task"):
        assert o["type"] == "task" and o["cgroup_id"] == w["cgroup_id"], (line, want)
        tasks += 1; continue
    assert o["intr"] is w["intr"], (line, want)
    if o["comm"] is None: unk += 1
    else: named += 1
assert n == sum(1 for _ in open(sys.argv[2])), n
print(n, named, unk, tasks)' "$T/jsont.out" "$T/truth.jsonl" >"$T/pyt.out" 2>"$T/pyt.err" || fail "python3 truth: $(tail -3 "$T/pyt.err")"
	ok "JSON comm, cgroup, intr match the generator's truth (lines, named, unknown, TASK: $(cat "$T/pyt.out"))"
else
	echo "t-tools: skip - python3 not installed, JSON checked by pattern only"
fi

# --- Filters and stats.
run 0 c1 "$DUMP" -c 1 "$T/trace"
[ "$(awk '$2 != 1' "$T/c1.out" | wc -l)" -eq 0 ] || fail "-c 1 let other CPUs through"
[ "$(awk '$3 != "LOST"' "$T/c1.out" | wc -l)" -eq "$n1" ] || fail "-c 1 count"
# A symbol selects its kprobe and kretprobe, a name one probe.
run 0 ename "$DUMP" -e tcp_sendmsg "$T/trace"
want=$(grep -c -E ' tcp_sendmsg(%return)?\((16|17)\) | LOST ' "$T/dump.out")
[ "$(wc -l <"$T/ename.out")" -eq "$want" ] || fail "-e tcp_sendmsg: $(wc -l <"$T/ename.out") lines, want $want"
run 0 eret "$DUMP" -e 'tcp_sendmsg%return' -e read_done "$T/trace"
want=$(grep -c -E ' (tcp_sendmsg%return\(17\)|read_done\(22\)) | LOST ' "$T/dump.out")
[ "$(wc -l <"$T/eret.out")" -eq "$want" ] || fail "-e tcp_sendmsg%return -e read_done: $(wc -l <"$T/eret.out") lines, want $want"
run 0 eid "$DUMP" -e 19 -e 20 -c 0 "$T/trace"
want=$(awk '$2 == 0 && ($4 ~ /\((19|20)\)$/ || $3 == "LOST")' "$T/dump.out" | wc -l)
[ "$(wc -l <"$T/eid.out")" -eq "$want" ] || fail "-e 19 -e 20 -c 0"
run 0 ecustom "$DUMP" -e mymod_request "$T/trace"
[ "$(wc -l <"$T/ecustom.out")" -eq $((nraw + nl)) ] || fail "-e mymod_request (a custom event)"
run 0 etask "$DUMP" -T -e tcp_sendmsg -c 1 "$T/trace"
want=$(awk '$2 == 1' "$T/dumpt.out" | grep -c -E ' tcp_sendmsg(%return)?\((16|17)\) | LOST | TASK ')
[ "$(wc -l <"$T/etask.out")" -eq "$want" ] || fail "-T -e tcp_sendmsg -c 1: $(wc -l <"$T/etask.out") lines, want $want"
# Filtered out records still name threads: same comm as unfiltered.
awk '$2 == 1' "$T/dump.out" | grep -E ' tcp_sendmsg(%return)?\(1[67]\) ' >"$T/etask.want"
grep -E ' tcp_sendmsg(%return)?\(1[67]\) ' "$T/etask.out" | cmp -s - "$T/etask.want" ||
	fail "-e changed the comm of records"
run 1 ebad "$DUMP" -e no_such_probe "$T/trace"
grep -q 'no probe named "no_such_probe"' "$T/ebad.err" || fail "-e unknown name message"
ok "-c and -e filters (by name and id; LOST, and with -T TASK, always shown)"

run 0 stats "$DUMP" --stats "$T/trace"
grep -q "^0	$n0	" "$T/stats.out" || fail "--stats cpu0"
grep -q "^all	$((n0 + n1))	$nl	" "$T/stats.out" || fail "--stats total"
u0=$(awk '$2 == 0' "$T/dump.out" | grep -c ' comm=? cgroup=[0-9]*$')
grep -q -E "^0	$n0	([0-9]+	){5}$t0	$u0	0$" "$T/stats.out" || fail "--stats cpu0 task_records $t0, unnamed $u0: $(grep '^0	' "$T/stats.out")"
grep -q -E "^all	([0-9]+	){6}$ntask	$nunk	0$" "$T/stats.out" || fail "--stats all task_records, unnamed"
grep -q "^16	tcp_sendmsg	kprobe	" "$T/stats.out" || fail "--stats per event"
grep -q "^26	tcp_cleanup_rbuf	kprobe	$nsock$" "$T/stats.out" || fail "--stats sock event"
grep -q "^27	mymod_request	custom	$nraw$" "$T/stats.out" || fail "--stats custom event"
grep -q "^kernel\|read_records" "$T/stats.out" || fail "--stats trailer section"
ok "--stats counts per CPU (TASK records and unnamed records apart), per event and the trailer"

run 0 hdr "$DUMP" -H "$T/trace"
grep -q "^cpus 2, clock mono" "$T/hdr.out" || fail "-H"
grep -q "	vfs_write	6$" "$T/hdr.out" || fail "-H probe table"
grep -q "	sock_sendmsg	6	4000@5$" "$T/hdr.out" || fail "-H capture column"
grep -q "^  27	custom	mymod_request	0$" "$T/hdr.out" || fail "-H custom event"
grep -q "tsc_khz" "$T/hdr.out" && fail "-H: a mono trace stores no tsc_khz"
run 0 wall "$DUMP" -w "$T/trace"
head -1 "$T/wall.out" | grep -q -E '^[0-9]+\.[0-9]{9} [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{9}Z 1 ' ||
	fail "-w: $(head -1 "$T/wall.out")"
ok "-H header and -w wall-clock times"

# --- tsc clock: magnet-read keeps tsc_khz from version, and -w converts
# cycles with it (2 GHz: wall-clock ns advance at half the cycle count).
run 0 gen5 "$GEN" -d "$T/tsc" -C 0,3 -n 2000 -s 5 -c tsc -k 2000000
run 0 read7 "$READ" -d "$T/tsc" -o "$T/trace7"
run 0 dump7 "$DUMP" "$T/trace7"
notask "$T/gen5.out" | cmp -s - "$T/dump7.out" || fail "tsc: dump differs from expected"
run 0 hdr7 "$DUMP" -H "$T/trace7"
grep -q "^cpus 4, clock tsc, tsc_khz 2000000$" "$T/hdr7.out" || fail "tsc -H: $(grep cpus "$T/hdr7.out")"
run 0 wall7 "$DUMP" -w "$T/trace7"
[ "$(wc -l <"$T/wall7.out")" -eq 4000 ] || fail "tsc -w line count"
bad=$(grep -v -c -E '^[0-9]+ [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{9}Z [03] ' "$T/wall7.out")
[ "$bad" -eq 0 ] || fail "tsc -w: $bad lines without a wall-clock time"
awk '{ split(substr($2, 12, 18), t, ":"); w = (t[1] * 3600 + t[2] * 60 + t[3]) * 1e9
       if (NR > 1) { d = (w - pw) - ($1 - pts) / 2; if (d < -1.5 || d > 1.5) { print NR ": " d; exit 1 } }
       pw = w; pts = $1 }' "$T/wall7.out" >"$T/wall7.err" || fail "tsc -w: $(cat "$T/wall7.err")"
run 0 wallj7 "$DUMP" -w -j "$T/trace7"
grep -c '"wall":"' "$T/wallj7.out" | grep -q '^4000$' || fail "tsc -w -j"
# Without a frequency (tsc_khz 0: unknown to the kernel), -w is refused.
run 0 gen6 "$GEN" -d "$T/tsc0" -C 0 -n 10 -s 6 -c tsc -k 0
run 0 read8 "$READ" -d "$T/tsc0" -o "$T/trace8"
run 1 wall8 "$DUMP" -w "$T/trace8"
grep -q "needs the TSC frequency" "$T/wall8.err" || fail "tsc without tsc_khz: $(cat "$T/wall8.err")"
run 0 dump8 "$DUMP" "$T/trace8"
notask "$T/gen6.out" | cmp -s - "$T/dump8.out" || fail "tsc_khz 0: dump differs"
ok "tsc traces: tsc_khz kept in the header, -w converts cycles, refused without it"

# --- Output to stdout, small buffers (many chunks), -n.
run 0 stdout "$READ" -d "$T/ring" -b 8272 -o -
mv "$T/stdout.out" "$T/trace2"
run 0 dump2 "$DUMP" "$T/trace2"
cmp -s "$T/expected.txt" "$T/dump2.out" || fail "-o - -b 8272 round trip"
ok "-o - with minimum buffers gives the same records"

run 0 limit "$READ" -d "$T/ring" -b 16K -n 1000 -o "$T/trace3"
run 0 dump3 "$DUMP" "$T/trace3"
got=$(awk '$3 != "LOST"' "$T/dump3.out" | wc -l)
# At least 1000; at most what two CPUs' 16K reads can hold past it.
if [ "$got" -lt 1000 ] || [ "$got" -gt $((1000 + 2 * 16384 / 40)) ]; then
	fail "-n 1000 read $got records"
fi
ok "-n 1000 stops at or just after 1000 records ($got)"

# --- Sparse CPU numbers, a partial record at the end of an input.
run 0 gen2 "$GEN" -d "$T/sparse" -C 2,5 -n 300 -s 2
head -c $(($(wc -c <"$T/sparse/cpu5") - 20)) "$T/sparse/cpu5" >"$T/cut" &&
	mv "$T/cut" "$T/sparse/cpu5"
run 0 read4 "$READ" -d "$T/sparse" -o "$T/trace4"
grep -q "cpu5: file ends inside a record" "$T/read4.err" || fail "partial record warning"
run 0 dump4 "$DUMP" "$T/trace4"
[ "$(wc -l <"$T/dump4.out")" -eq 599 ] || fail "sparse: $(wc -l <"$T/dump4.out") lines, want 599"
# Expected: everything but cpu5's last record.
notask "$T/gen2.out" >"$T/gen2.events"
last5=$(awk '$2 == 5 { n = NR } END { print n }' "$T/gen2.events")
awk -v skip="$last5" 'NR != skip' "$T/gen2.events" >"$T/exp4"
cmp -s "$T/exp4" "$T/dump4.out" || fail "sparse CPUs: dump differs from expected"
run 0 hdr4 "$DUMP" -H "$T/trace4"
grep -q "^cpus 6," "$T/hdr4.out" || fail "cpus 2,5 should give a 6-CPU header"
ok "CPUs 2 and 5 only; trailing partial record dropped with a warning"

# --- Corrupt traces: everything valid first, then the offset, exit 2.
hlen=$(sed -n 's/.*header length \([0-9]*\)$/\1/p' "$T/hdr.out")
[ -n "$hlen" ] || fail "no header length in -H"
size=$(wc -c <"$T/trace")
head -c $((size - 1000)) "$T/trace" >"$T/cut.trace"
run 2 cut "$DUMP" "$T/cut.trace"
grep -q -E "^magnet-dump: $T/cut.trace: corrupt chunk at offset [0-9]+: chunk length [0-9]+ runs past the end" "$T/cut.err" ||
	fail "truncated trace message: $(cat "$T/cut.err")"
[ "$(wc -l <"$T/cut.out")" -gt 30000 ] || fail "truncated trace printed too little"
# First record's size (offset hlen + 16) set to 12.
cp "$T/trace" "$T/bad.trace"
printf '\014\000\000\000' | dd of="$T/bad.trace" bs=1 seek=$((hlen + 16)) conv=notrunc 2>/dev/null
run 2 bad "$DUMP" "$T/bad.trace"
grep -q "^magnet-dump: $T/bad.trace: corrupt record at offset $((hlen + 16)): cpu [01]: record size smaller than the 40-byte header" "$T/bad.err" ||
	fail "corrupt record message: $(cat "$T/bad.err")"
[ "$(wc -l <"$T/bad.out")" -ge 19000 ] || fail "corrupt record: other CPU's records not printed"
printf 'XXXX' | dd of="$T/bad.trace" bs=1 seek=0 conv=notrunc 2>/dev/null
run 2 magic "$DUMP" "$T/bad.trace"
grep -q "corrupt header at offset 0: bad magic" "$T/magic.err" || fail "bad magic message"
# A trace cut at a chunk boundary (reader killed): warning, exit 0.
head -c "$hlen" "$T/trace" >"$T/empty.trace"
run 0 empty "$DUMP" "$T/empty.trace"
grep -q "warning: no trailer" "$T/empty.err" || fail "no-trailer warning"
ok "corrupt/truncated traces: offset and reason, exit 2; no trailer: warning"

# --- Corrupt input: kept as read, reported, exit 2.
run 0 gen3 "$GEN" -d "$T/badring" -C 0 -n 100 -s 3
printf '\377\377\377\377' | dd of="$T/badring/cpu0" bs=1 seek=0 conv=notrunc 2>/dev/null
run 2 read5 "$READ" -d "$T/badring" -o "$T/trace5"
grep -q "cpu0: corrupt record at input offset 0: record size not a multiple of 8" "$T/read5.err" ||
	fail "corrupt input message: $(cat "$T/read5.err")"
run 2 dump5 "$DUMP" "$T/trace5"
grep -q "corrupt record at offset" "$T/dump5.err" || fail "corrupt input not kept in the trace"
ok "corrupt input: reported, bytes kept, exit 2"

# --- A FIFO stands in for a ring: not seekable, no ioctl, reads block.
# SIGINT must interrupt the blocked read and still write the trailer.
mkdir "$T/fifo"
mkfifo "$T/fifo/cpu0"
run 0 gen4 "$GEN" -d "$T/fifodata" -C 0 -n 200 -s 4
cp "$T/fifodata/probes" "$T/fifo/"
exec 3<>"$T/fifo/cpu0"		# a writer, so opening and reading block
cat "$T/fifodata/cpu0" >&3
"$READ" -d "$T/fifo" -o "$T/trace6" >"$T/read6.out" 2>"$T/read6.err" &
pid=$!
i=0
# Wait until the records are in the trace, i.e. the reader is blocked in
# its next read, then interrupt it.
want=$(($(wc -c <"$T/fifodata/cpu0") + 16))
while [ "$i" -lt 100 ] && [ "$(wc -c 2>/dev/null <"$T/trace6" || echo 0)" -lt "$want" ]; do
	sleep 0.1
	i=$((i + 1))
done
sleep 0.2
kill -INT "$pid"
wait "$pid"
st=$?
exec 3>&-
[ "$st" -eq 0 ] || fail "magnet-read on a FIFO after SIGINT: exit $st"
grep -q "^cpu0: records 200 .* tasks=$(grep -c ' TASK ' "$T/gen4.out") fair=0$" "$T/read6.err" || fail "FIFO summary: $(cat "$T/read6.err")"
grep -q "no read-condition ioctl" "$T/read6.err" || fail "FIFO: ENOTTY on a non-regular file should warn"
run 0 dump6 "$DUMP" "$T/trace6"
notask "$T/gen4.out" | cmp -s - "$T/dump6.out" || fail "FIFO round trip"
[ ! -s "$T/dump6.err" ] || fail "FIFO trace has no trailer: $(cat "$T/dump6.err")"
ok "blocking non-seekable input stopped by SIGINT: all records and the trailer"

# --- Probes added while magnet-read runs (magnet-ctl probe add). cpu0 is
# a FIFO again, fed two streams in turn (each less than a pipe holds, so
# no read ends inside a record); the probes file holds ids 16-20 when the
# header is written, 16-26 before the first stream (27, a custom event,
# is gone), all of them before the second. magnet-read reads it
# again at the first chunk with an id it lacks, once per id: the trace
# names 16-26 in both streams, and 27 stays unknown in both.
mkdir "$T/late"
mkfifo "$T/late/cpu0"
run 0 gen7a "$GEN" -d "$T/late7a" -C 0 -n 300 -s 7
run 0 gen7b "$GEN" -d "$T/late7b" -C 0 -n 300 -s 8
awk '$1 <= 20' "$T/late7a/probes" >"$T/late/probes"
awk '$1 <= 26' "$T/late7a/probes" >"$T/probes.2"
cp "$T/late7a/version" "$T/late/"
exec 3<>"$T/late/cpu0"
"$READ" -d "$T/late" -o "$T/trace7" >"$T/read7.out" 2>"$T/read7.err" &
pid=$!
# wait_lines N: until magnet-dump sees N records in the growing trace.
wait_lines() {
	i=0
	while [ "$i" -lt 100 ] && [ "$("$DUMP" "$T/trace7" 2>/dev/null | wc -l)" -lt "$1" ]; do
		sleep 0.1
		i=$((i + 1))
	done
}
i=0
while [ "$i" -lt 100 ] && [ ! -s "$T/trace7" ]; do
	sleep 0.1
	i=$((i + 1))
done
[ -s "$T/trace7" ] || fail "magnet-read wrote no header"
mv "$T/probes.2" "$T/late/probes"
cat "$T/late7a/cpu0" >&3
na=$(notask "$T/gen7a.out" | wc -l)
wait_lines "$na"
cp "$T/late7a/probes" "$T/late/probes.new"
mv "$T/late/probes.new" "$T/late/probes"
cat "$T/late7b/cpu0" >&3
wait_lines $((na + $(notask "$T/gen7b.out" | wc -l)))
sleep 0.2
kill -INT "$pid"
wait "$pid"
st=$?
exec 3>&-
[ "$st" -eq 0 ] || fail "magnet-read with probes added: exit $st: $(cat "$T/read7.err")"
run 0 dump7 "$DUMP" "$T/trace7"
{ notask "$T/gen7a.out"; notask "$T/gen7b.out"; } | awk '{ print $4 }' |
	sed 's/^mymod_request(27)$/unknown(27)/' >"$T/names7.want"
awk '{ print $4 }' "$T/dump7.out" >"$T/names7.got"
cmp -s "$T/names7.want" "$T/names7.got" ||
	fail "names of probes added during the read: $(diff "$T/names7.want" "$T/names7.got" | head -5)"
head -n "$na" "$T/names7.got" | grep -q 'ksys_write(21)' || fail "no record of a probe added later"
head -n "$na" "$T/names7.got" | grep -q 'unknown(27)' || fail "27 not asked for in the first stream"
run 0 stats7 "$DUMP" --stats "$T/trace7"
grep unknown "$T/stats7.out" | grep -v -q -w 27 && fail "--stats: $(grep unknown "$T/stats7.out")"
ok "probes added during magnet-read named ($(grep -c -v 'unknown(27)' "$T/names7.got") records), an id missing from the table looked up once"

# --- A crafted trace (gen-stream -X): terminal escapes, controls, C1 and
# bytes that are not UTF-8 in its hostname, release, clock and probe
# names. Text shows them escaped, as docs/magnet-dump.md says, so nothing
# reaches the terminal; JSON stays valid. Its start is 2^63 ns after its
# first record: -w must not overflow (UBSan in make unit's second run).
# inert FILE: only tabs, newlines and printable UTF-8 in FILE.
inert() {
	LC_ALL=C tr -d '\t\n' <"$1" | LC_ALL=C grep -q '[[:cntrl:]]' &&
		fail "$1: control bytes: $(LC_ALL=C grep -n '[[:cntrl:]]' "$1" | head -3 | od -c | head -5)"
	LC_ALL=C grep -q "$(printf '\302[\200-\237]')" "$1" && fail "$1: a C1 control"
	iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1 || fail "$1: not UTF-8"
}
run 0 hgen "$GEN" -X "$T/hostile.trace"
run 0 htext "$DUMP" "$T/hostile.trace"
run 0 hhdr "$DUMP" -H "$T/hostile.trace"
run 0 hstats "$DUMP" --stats "$T/hostile.trace"
run 0 hwall "$DUMP" -w "$T/hostile.trace"
run 0 hjson "$DUMP" -j "$T/hostile.trace"
for f in htext hhdr hstats hwall hjson; do
	inert "$T/$f.out"
done
e16='evil\x1b]0;owned\x07\x1b[2J'
e17='bad\xff\xc0\xafutf8\xed\xa0\x80\xe2\x82'
e18=$(printf 'q"uo\\\\te\\x0d\\x7f caf\303\251\342\200\250')
grep -q -F "100/100 $e16(16) abstract=0x0 args=[0x7]" "$T/htext.out" || fail "escaped name 16: $(head -1 "$T/htext.out")"
grep -q -F "100/100 $e17(17) abstract=" "$T/htext.out" || fail "escaped name 17"
grep -q -F "100/100 $e18(18) abstract=" "$T/htext.out" || fail "escaped name 18: $(tail -1 "$T/htext.out")"
grep -q -x -F 'host host\x1b[31mred\xff\x9b1m, kernel 6.1\x0d\x1b[Kfake\xc2\x85' "$T/hhdr.out" ||
	fail "-H host line: $(sed -n 2p "$T/hhdr.out")"
grep -q -x -F 'cpus 1, clock mono\x1b[5m' "$T/hhdr.out" || fail "-H clock"
grep -q -x -F "  17	kret\xc2\x9b31m	$e17	0" "$T/hhdr.out" || fail "-H probe 17"
grep -q -x -F "18	$e18	custom	1" "$T/hstats.out" || fail "--stats event 18"
[ "$(grep -c ' 0 100/100 ' "$T/hwall.out")" -eq 3 ] || fail "-w on the crafted trace"
if command -v python3 >/dev/null 2>&1; then
	python3 -c '
import json, sys
want = {16: "evil\x1b]0;owned\x07\x1b[2J",
        17: "bad\xff\xc0\xafutf8\xed\xa0\x80\xe2\x82",
        18: "q\"uo\\te\r\x7f caf\xe9\u2028"}
n = 0
for line in open(sys.argv[1], encoding="utf-8", errors="strict"):
    o = json.loads(line)
    assert o["event"] == want[o["id"]], (o["event"], want[o["id"]])
    n += 1
assert n == 3' "$T/hjson.out" 2>"$T/hpy.err" || fail "crafted trace's JSON: $(tail -3 "$T/hpy.err")"
fi
ok "a crafted trace's strings: escaped in text, -H and --stats; JSON valid, bad bytes as \\u00XX"

# --- A probe table as large as it can be: one line per event id, the
# records' own probes last (where a scan of the table finds them last).
# The records print as with the small table. One line more is no table
# the module writes, nor a million: magnet-dump says so and decodes
# nothing. The time it takes is bench/dump-probes's business.
run 0 gen9 "$GEN" -d "$T/bigp" -C 0,1 -n 2000 -s 9
{
	awk 'BEGIN { for (i = 65535; i >= 28; i--) printf "%d\tkprobe\tf%d\t1\t0\t0\n", i, i
		     for (i = 0; i < 16; i++) printf "%d\tkprobe\tf%d\t1\t0\t0\n", i, i }'
	cat "$T/bigp/probes"
} >"$T/bigp.probes"
[ "$(wc -l <"$T/bigp.probes")" -eq 65536 ] || fail "the big table is not one line per id"
mv "$T/bigp.probes" "$T/bigp/probes"
run 0 read9 "$READ" -d "$T/bigp" -o "$T/trace9"
run 0 dump9 "$DUMP" "$T/trace9"
notask "$T/gen9.out" | cmp -s - "$T/dump9.out" ||
	fail "a table of every id: $(notask "$T/gen9.out" | diff - "$T/dump9.out" | head -5)"
run 0 hdr9 "$DUMP" -H "$T/trace9"
grep -q -x 'probes 65536' "$T/hdr9.out" || fail "-H of a table of every id: $(grep '^probes' "$T/hdr9.out")"
printf '28\tkprobe\tagain\t1\t0\t0\n' >>"$T/bigp/probes"
run 0 read10 "$READ" -d "$T/bigp" -o "$T/trace10"
run 2 dump10 "$DUMP" "$T/trace10"
grep -q -x "magnet-dump: $T/trace10: corrupt header at offset 224: probe table of more than 65536 probe lines (one per event id)" "$T/dump10.err" ||
	fail "a table of 65537 lines: $(cat "$T/dump10.err")"
[ ! -s "$T/dump10.out" ] || fail "a refused header printed records"
awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "%d\tkprobe\tf\t1\t0\t0\n", 28 + i % 65508 }' >"$T/bigp/probes"
run 0 read11 "$READ" -d "$T/bigp" -o "$T/trace11"
run 2 dump11 "$DUMP" "$T/trace11"
grep -q "corrupt header at offset 224: probe table of more than 65536 probe lines" "$T/dump11.err" ||
	fail "a table of a million lines: $(cat "$T/dump11.err")"
ok "a table of every event id names records as a small one; one line more, or a million, refused"

# --- Usage and runtime errors.
run 1 u1 "$READ"
grep -q "^usage: magnet-read" "$T/u1.err" || fail "usage text"
run 1 u2 "$READ" -o "$T/x" -b 100
run 1 u3 "$READ" -o "$T/x" -n 0
run 1 u4 "$READ" -o "$T/x" extra
run 1 u7 "$READ" -o "$T/x" -r 0
run 1 u8 "$READ" -o "$T/x" -r 65
run 1 u5 "$DUMP"
run 1 u6 "$DUMP" -c 9 "$T/trace"
run 2 e1 "$READ" -d "$T/nonexistent" -o "$T/x"
grep -q "$T/nonexistent not found" "$T/e1.err" || fail "missing dir message"
mkdir "$T/emptydir"
run 2 e2 "$READ" -d "$T/emptydir" -o "$T/x"
grep -q "no cpuN files in" "$T/e2.err" || fail "no cpu files message"
run 2 e3 "$READ" -d "$T/ring" -o "$T/nonexistent/x"
run 2 e4 "$DUMP" "$T/nonexistent"
grep -q "No such file" "$T/e4.err" || fail "dump missing file"
# magnet/buffers says cpu2's ring is 64 KiB: an explicit -w above half of
# it is refused (the module would say EINVAL); the default adapts.
printf 'cpu\tsize\tmode\tused\treader\n2\t65536\tdiscard\t0\t0\n5\t1048576\tdiscard\t0\t0\n' \
	>"$T/sparse/buffers"
run 2 e6 "$READ" -d "$T/sparse" -w 64K -o "$T/x"
grep -q "cpu2: -w 65536 is more than half the ring (65536 bytes)" "$T/e6.err" || fail "-w vs ring size: $(cat "$T/e6.err")"
run 0 e7 "$READ" -d "$T/sparse" -w 32K -o "$T/x"
run 0 e8 "$READ" -d "$T/sparse" -o "$T/x"
echo "format 99" >"$T/ring/version"
run 2 e5 "$READ" -d "$T/ring" -o "$T/x"
grep -q "record format 99" "$T/e5.err" || fail "version mismatch message"
ok "usage errors exit 1, runtime errors exit 2 with a message"

# Asked for, the usage is no error: stdout, exit 0, nothing on stderr. Both
# clients are built beside the tools (test_client runs them). run() sets
# $name, hence $tool.
for prog in "$READ" "$DUMP" "$B/tools/magnet-top" "$B/tools/magnet-cat"; do
	tool=${prog##*/}
	[ -x "$prog" ] || fail "$prog not built"
	for h in -h --help; do
		[ "$tool" = magnet-read ] && [ "$h" = --help ] && continue
		run 0 "help-$tool$h" "$prog" "$h"
		grep -q "^usage: $tool" "$T/help-$tool$h.out" || fail "$tool $h: no usage on stdout"
		[ ! -s "$T/help-$tool$h.err" ] || fail "$tool $h wrote to stderr"
	done
	run 1 "bad-$tool" "$prog" -Z
	grep -q "^usage: $tool" "$T/bad-$tool.err" || fail "$tool -Z: no usage on stderr"
done
ok "-h and --help print the usage to stdout and exit 0; a bad option exits 1"

echo "t-tools: all $pass passed"
