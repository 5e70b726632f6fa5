#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# magnet-dump -p: a trace of known packets (gen-pcap: IPv4 and IPv6, UDP and
# TCP, one cut short, Ethernet, loopback and MAC-less frames, around TASK,
# LOST, data-layer and generic records) written as pcapng and classic pcap,
# read back by the real tshark and tcpdump: every packet, in order, with
# its addresses, ports, payload, lengths, time, interface, direction and
# comment as gen-pcap worked them out. Run by `make unit`; MAGNET_BUILD
# names the build dir. tshark and tcpdump are required (tools/bootstrap
# installs them): without them this test fails, it does not skip.
set -u

B=${MAGNET_BUILD:-build}
DUMP=$B/tools/magnet-dump
GEN=$B/tests/unit/gen-pcap
T=$(mktemp -d "${TMPDIR:-/tmp}/magnet-t-pcap.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
pass=0

fail() {
	echo "t-pcap: FAIL: $*" >&2
	for f in "$T"/*.err; do
		[ -s "$f" ] && { echo "--- $f" >&2; head -20 "$f" >&2; }
	done
	exit 1
}

ok() {
	pass=$((pass + 1))
	echo "t-pcap: ok $pass - $*"
}

# run WANT_STATUS NAME CMD...: CMD's stdout in $T/NAME.out, stderr .err
run() {
	want=$1 name=$2
	shift 2
	"$@" >"$T/$name.out" 2>"$T/$name.err"
	st=$?
	[ "$st" -eq "$want" ] || fail "$name: exit $st, want $want: $*"
}

for f in "$DUMP" "$GEN"; do
	[ -x "$f" ] || fail "$f not built"
done
for p in tshark tcpdump capinfos; do
	command -v $p >/dev/null 2>&1 ||
		fail "$p is not installed: this test reads magnet-dump's captures with the real tshark, capinfos and tcpdump (tools/bootstrap installs them: apt-get install tshark tcpdump)"
done

# The fields gen-pcap gives, in its order (its columns 1-16).
FIELDS="frame.time_epoch frame.cap_len frame.len frame.interface_id
	frame.packet_flags_direction ip.src ip.dst ipv6.src ipv6.dst
	udp.srcport udp.dstport tcp.srcport tcp.dstport udp.payload tcp.payload
	frame.comment"
# tshark_fields FILE OUT: one tab-separated line per packet. tshark must
# read the file without a word on stderr (a bad block length is an error
# there) but for its warning about running as root.
tshark_fields() {
	args=
	for f in $FIELDS; do args="$args -e $f"; done
	# shellcheck disable=SC2086
	tshark -r "$1" -T fields -E separator=/t $args >"$2" 2>"$T/tshark.err" ||
		fail "tshark -r $1: exit $?"
	grep -v '^Running as user "root"' "$T/tshark.err" >"$T/tshark-real.err"
	[ ! -s "$T/tshark-real.err" ] || fail "tshark -r $1 complained"
	rm -f "$T/tshark.err" "$T/tshark-real.err"
}

# tcpdump_lines FILE|- OUT: "TIME PROTO SRC.PORT > DST.PORT: <tab>HEX" per
# packet, from tcpdump -xx (every byte of the frame, link header included).
tcpdump_lines() {
	tcpdump -r "$1" -nn -tt --time-stamp-precision=nano -xx >"$T/tcpdump.raw" 2>"$T/tcpdump.err" ||
		fail "tcpdump -r $1: exit $?"
	awk '/^\t0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) hex = hex $i; next }
	     { if (n++) print head "\t" hex; hex = ""
	       i = index($0, ": "); head = substr($0, 1, i + 1) }
	     END { if (n) print head "\t" hex }' "$T/tcpdump.raw" >"$2"
	rm -f "$T/tcpdump.err"
}

# --- pcapng, all packets.
run 0 gen "$GEN" "$T/trace"
mv "$T/gen.out" "$T/want"
npk=$(wc -l <"$T/want")
[ "$npk" -eq 7 ] || fail "gen-pcap made $npk packets, the test expects 7"
run 0 ng "$DUMP" -p "$T/all.pcapng" "$T/trace"
[ ! -s "$T/ng.out" ] || fail "magnet-dump -p FILE wrote to stdout"
grep -qx "magnet-dump: $T/all.pcapng: 7 packets; not written: 1 non-skb, 1 data-layer, 0 link-layer; LOST records: 1 (5 records lost)" "$T/ng.err" ||
	fail "summary: $(cat "$T/ng.err")"
grep -q "warning: Ethernet and raw IP packets in one file" "$T/ng.err" ||
	fail "no warning about two link types for tcpdump"
ok "pcapng written, 7 packets, the others counted (1 non-skb, 1 data layer, 1 LOST)"

run 0 capinfos capinfos -t -c -E "$T/all.pcapng"
grep -q 'File type: *Wireshark/... - pcapng' "$T/capinfos.out" || fail "capinfos: $(cat "$T/capinfos.out")"
grep -q 'Number of packets: *7$' "$T/capinfos.out" || fail "capinfos count"
grep -q 'File encapsulation: *Per packet' "$T/capinfos.out" || fail "capinfos: not two encapsulations"
ok "capinfos: pcapng, 7 packets, per-packet encapsulation"

tshark_fields "$T/all.pcapng" "$T/got"
cut -f1-16 "$T/want" >"$T/want16"
cmp -s "$T/want16" "$T/got" ||
	fail "tshark differs from gen-pcap: $(diff "$T/want16" "$T/got")"
ok "tshark: times, lengths, interfaces, directions, addresses, ports, payloads, comments of all 7"

# The same through a pipe, as an operator runs it.
"$DUMP" -p - "$T/trace" 2>"$T/pipe.err" | tshark -r - -T fields -e frame.comment >"$T/pipe.out" 2>/dev/null
cut -f16 "$T/want" | cmp -s - "$T/pipe.out" || fail "magnet-dump -p - | tshark -r -: $(cat "$T/pipe.out")"
grep -q "^magnet-dump: output: 7 packets;" "$T/pipe.err" || fail "pipe summary: $(cat "$T/pipe.err")"
ok "magnet-dump -p - | tshark -r - gives the same packets"

# Interfaces: one per (link type, ifindex), nanosecond resolution.
run 0 ifs tshark -r "$T/all.pcapng" -T fields -e frame.interface_id -e frame.interface_name -e frame.interface_description -e frame.encap_type
sort -u "$T/ifs.out" >"$T/ifs.sorted"
printf '%s\n' \
	"0	ifindex2	magnet skb records, ifindex 2, raw IP	7" \
	"1	ifindex3	magnet skb records, ifindex 3, Ethernet	1" \
	"2	ifindex1	magnet skb records, ifindex 1, Ethernet	1" \
	"3	ifindex5	magnet skb records, ifindex 5, raw IP	7" \
	"4	ifindex2	magnet skb records, ifindex 2, Ethernet	1" >"$T/ifs.want"
cmp -s "$T/ifs.want" "$T/ifs.sorted" || fail "interfaces: $(diff "$T/ifs.want" "$T/ifs.sorted")"
ok "5 interfaces: raw IP for the network layer and a MAC-less frame, Ethernet for the others"

# Follow one skb through the layers by its comment.
run 0 follow tshark -r "$T/all.pcapng" -Y 'frame.comment contains "skb=0xffff888003a1c000"' -T fields -e frame.comment
[ "$(wc -l <"$T/follow.out")" -eq 2 ] || fail "following skb: $(cat "$T/follow.out")"
grep -q '^probe=ip_output(16) .* layer=network ' "$T/follow.out" || fail "follow: $(cat "$T/follow.out")"
grep -q '^probe=dev_queue_xmit(19) .* layer=link ' "$T/follow.out" || fail "follow: $(cat "$T/follow.out")"
ok "a display filter on the comment follows one skb from ip_output to dev_queue_xmit"

# --- tcpdump reads one link type per file: one layer, selected by probe.
awk -F'\t' '$16 ~ /^probe=(ip_output|ip6_output)\(/ { print $18 "\t" $17 }' "$T/want" >"$T/want-net"
"$DUMP" -p - -e ip_output -e ip6_output "$T/trace" 2>"$T/net.err" >"$T/net.pcapng" || fail "magnet-dump -e"
grep -q "warning:" "$T/net.err" && fail "warning for one link type: $(cat "$T/net.err")"
"$DUMP" -p - -e ip_output -e ip6_output "$T/trace" 2>/dev/null | tcpdump_lines - "$T/tcpdump-net"
[ -s "$T/want-net" ] || fail "no network-layer packets to compare"
cmp -s "$T/want-net" "$T/tcpdump-net" || fail "tcpdump (network layer): $(diff "$T/want-net" "$T/tcpdump-net")"
awk -F'\t' '$16 ~ /^probe=dev_queue_xmit\(/ { print $18 "\t" $17 }' "$T/want" >"$T/want-link"
run 0 link "$DUMP" -p "$T/link.pcapng" -e dev_queue_xmit "$T/trace"
tcpdump_lines "$T/link.pcapng" "$T/tcpdump-link"
cmp -s "$T/want-link" "$T/tcpdump-link" || fail "tcpdump (link layer): $(diff "$T/want-link" "$T/tcpdump-link")"
ok "tcpdump: times, addresses, ports and every byte of each layer's packets ($(wc -l <"$T/want-net") + $(wc -l <"$T/want-link"))"

# tcpdump on both layers at once stops at the second link type: the
# warning above is about a real limit.
tcpdump -r "$T/all.pcapng" -nn >/dev/null 2>"$T/mixed.err" && fail "tcpdump read Ethernet and raw IP in one file"
grep -q "different from the type of the first interface" "$T/mixed.err" || fail "tcpdump: $(cat "$T/mixed.err")"
rm -f "$T/mixed.err"
ok "tcpdump refuses mixed link types, as magnet-dump warns"

# -c selects as in text.
run 0 cpu1 "$DUMP" -p "$T/cpu1.pcapng" -c 1 "$T/trace"
tshark_fields "$T/cpu1.pcapng" "$T/got-cpu1"
awk -F'\t' '$16 ~ / cpu=1 /' "$T/want" | cut -f1-3,6-16 >"$T/want-cpu1"
cut -f1-3,6-16 "$T/got-cpu1" | cmp -s "$T/want-cpu1" - || fail "-c 1: $(cat "$T/got-cpu1")"
ok "-c 1 writes CPU 1's $(wc -l <"$T/want-cpu1") packets"

# --- classic pcap: LINKTYPE_RAW, network layer only.
run 0 gen-c "$GEN" -c "$T/trace-c"
cmp -s "$T/trace" "$T/trace-c" || fail "gen-pcap -c wrote another trace"
mv "$T/gen-c.out" "$T/want-c"
run 0 classic "$DUMP" -p "$T/net.pcap" --pcap-classic "$T/trace"
grep -qx "magnet-dump: $T/net.pcap: 3 packets; not written: 1 non-skb, 1 data-layer, 4 link-layer; LOST records: 1 (5 records lost)" "$T/classic.err" ||
	fail "classic summary: $(cat "$T/classic.err")"
run 0 capinfos-c capinfos -t -c -E -i "$T/net.pcap"
grep -q 'File type: *Wireshark/tcpdump/... - nanosecond pcap' "$T/capinfos-c.out" || fail "capinfos: $(cat "$T/capinfos-c.out")"
grep -q 'File encapsulation: *Raw IP' "$T/capinfos-c.out" || fail "capinfos: not raw IP"
grep -q 'Number of packets: *3$' "$T/capinfos-c.out" || fail "capinfos count"
tshark_fields "$T/net.pcap" "$T/got-c"
cut -f1-16 "$T/want-c" | cmp -s - "$T/got-c" || fail "classic, tshark: $(cut -f1-16 "$T/want-c" | diff - "$T/got-c")"
awk -F'\t' '{ print $18 "\t" $17 }' "$T/want-c" >"$T/want-c-tcpdump"
tcpdump_lines "$T/net.pcap" "$T/tcpdump-c"
cmp -s "$T/want-c-tcpdump" "$T/tcpdump-c" || fail "classic, tcpdump: $(diff "$T/want-c-tcpdump" "$T/tcpdump-c")"
ok "classic pcap: the 3 network-layer packets, read by tshark and tcpdump, the cut one with its full length"

# --- a trace without skb records: valid empty captures.
run 0 gen-e "$GEN" -e "$T/empty"
[ ! -s "$T/gen-e.out" ] || fail "gen-pcap -e expects packets"
for fmt in ng classic; do
	if [ $fmt = ng ]; then opt=; else opt=--pcap-classic; fi
	# shellcheck disable=SC2086
	run 0 empty-$fmt "$DUMP" -p "$T/empty.$fmt" $opt "$T/empty"
	grep -q ": 0 packets; not written: 1 non-skb, 0 data-layer, 0 link-layer; LOST records: 1 (5 records lost)$" "$T/empty-$fmt.err" ||
		fail "empty $fmt summary: $(cat "$T/empty-$fmt.err")"
	run 0 empty-capinfos capinfos -c "$T/empty.$fmt"
	grep -q 'Number of packets: *0$' "$T/empty-capinfos.out" || fail "capinfos empty $fmt"
	tshark_fields "$T/empty.$fmt" "$T/got-empty"
	[ ! -s "$T/got-empty" ] || fail "tshark found packets in empty $fmt"
	tcpdump -r "$T/empty.$fmt" >"$T/tcpdump-empty.out" 2>"$T/tcpdump-empty.err" || fail "tcpdump -r empty $fmt"
	[ ! -s "$T/tcpdump-empty.out" ] || fail "tcpdump found packets in empty $fmt"
	rm -f "$T/tcpdump-empty.err"
done
ok "no skb records: empty pcapng and pcap that tshark, capinfos and tcpdump read"

# --- pcapng's structure, block by block, where python3 is.
if command -v python3 >/dev/null 2>&1; then
	python3 - "$T/all.pcapng" "$T/empty.ng" <<'EOF' || fail "pcapng structure"
import struct, sys
for path in sys.argv[1:]:
    b = open(path, "rb").read()
    off, kinds = 0, []
    while off < len(b):
        t, n = struct.unpack_from("=II", b, off)
        assert n % 4 == 0 and n >= 12 and off + n <= len(b), (path, off, n)
        assert struct.unpack_from("=I", b, off + n - 4)[0] == n, (path, off)
        kinds.append(t)
        off += n
    assert off == len(b), path
    assert kinds[0] == 0x0a0d0d0a and kinds.count(0x0a0d0d0a) == 1, kinds
    assert struct.unpack_from("=I", b, 8)[0] == 0x1a2b3c4d
    assert 1 in kinds, "no interface"
EOF
	ok "pcapng blocks: total lengths equal at both ends, 32-bit multiples, one SHB"
fi

# --- errors.
run 1 e-classic "$DUMP" --pcap-classic "$T/trace"
grep -q "needs -p" "$T/e-classic.err" || fail "--pcap-classic alone: $(cat "$T/e-classic.err")"
for o in -j -w -s -H; do
	run 1 e-combo "$DUMP" -p "$T/x" $o "$T/trace"
	grep -q "not with -j, -w, -s or -H" "$T/e-combo.err" || fail "-p $o: $(cat "$T/e-combo.err")"
done
[ ! -e "$T/x" ] || fail "a usage error created the output file"
run 1 e-event "$DUMP" -p "$T/x" -e nosuchprobe "$T/trace"
[ ! -e "$T/x" ] || fail "-e error created the output file"
run 2 e-open "$DUMP" -p "$T/no/such/dir/x" "$T/trace"
grep -q "^magnet-dump: $T/no/such/dir/x: No such file or directory$" "$T/e-open.err" || fail "open: $(cat "$T/e-open.err")"
if [ -w /dev/full ]; then
	run 2 e-full "$DUMP" -p /dev/full "$T/trace"
	grep -q "^magnet-dump: writing /dev/full: No space left on device$" "$T/e-full.err" || fail "/dev/full: $(cat "$T/e-full.err")"
fi
run 1 e-usage "$DUMP" -p
ok "usage errors exit 1 before creating the file; unwritable output exits 2 with its reason"

echo "t-pcap: $pass passed"
