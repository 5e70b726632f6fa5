#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/vm/host-pcap.sh [RUN-OPTION...]: magnet-dump's packet captures of
# packets the kernel really sent, read by the real tshark and tcpdump.
#
# One boot (tests/vm/run RUN-OPTION... -- sh tests/vm/pcap-guest.sh): in
# the guest, pktsend sends known packets over lo (IPv4 and IPv6, UDP
# datagrams and a TCP connection each, known addresses, ports and
# payloads) from a cgroup of its own, magnet records them with the skb
# handler at every layer they cross (ip_output ... udp_rcv, ip6_output ...
# tcp_v6_rcv), magnet-read drains the rings and magnet-dump writes
# all.pcapng, all.pcap (--pcap-classic) and one pcapng per probe. The files
# come out base64-encoded on the console (the guest has neither tshark nor
# tcpdump), checked against their SHA-256, and here:
#
# - tshark reads all.pcapng: every packet is one of those sent; each UDP
#   datagram and each TCP payload segment appears once at each probe on
#   its path, in order, with its addresses, ports, payload, lengths,
#   interface and direction, and a comment naming the probe (by the id
#   magnet-ctl gave it), the sender's pid, tgid, comm and cgroup (or, on
#   the softirq probes, ksoftirqd, whose softirq it may be), the device,
#   the layer, skb->len as that function sees it, and "intr" exactly in
#   softirq; each TCP connection's handshake and FINs, and the very same
#   segments at every probe;
# - tcpdump reads each probe's pcapng (one link type each) and all.pcap:
#   the same packets as tshark, time, addresses, ports, every byte;
# - the classic pcap holds the same packets as the pcapng; the host's own
#   magnet-dump, given the guest's trace, writes the same bytes.
#
# Run by `make vm-check` after the suite (and `make check-debug` on the
# debug kernel: RUN-OPTIONs pick its kernel and module). tshark, tcpdump
# and capinfos are required (tools/bootstrap installs them). Output: "ok N
# - ..." lines, then "host-pcap: N passed", or a FAIL line and exit 1.
# HOST_PCAP_KEEP=1 keeps the scratch directory; HOST_PCAP_CONSOLE=FILE
# checks a console log saved before instead of booting (to see a check
# fail on purpose, edit a copy).
set -u -o pipefail
if [[ -n ${HOST_PCAP_CONSOLE:-} ]]; then
	HOST_PCAP_CONSOLE=$(realpath -e "$HOST_PCAP_CONSOLE") || exit 1
fi
cd "$(dirname "$0")/../.." || exit 1

B=${MAGNET_BUILD:-build}
T=$(mktemp -d "${TMPDIR:-/tmp}/magnet-host-pcap.XXXXXX") || exit 1
cleanup() {
	if [[ ${HOST_PCAP_KEEP:-0} == 1 ]]; then echo "# kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
pass=0

fail() {
	echo "host-pcap: FAIL: $*"
	exit 1
}
ok() {
	pass=$((pass + 1))
	echo "ok $pass - $*"
}

# --- what is sent: probes and flows --------------------------------------
CAPLEN=128
# PROBE FAMILY DIR IFINDEX HOFF CONTEXT: the packets of FAMILY (4, 6 or 46;
# u or t: only UDP or only TCP) pass PROBE in direction DIR on device
# IFINDEX (lo, or 0: no device yet); skb->len there is the IP packet's
# length minus HOFF (-14: the link header is in front; 20 or 40: the IP
# header was pulled); CONTEXT is the context of a packet the sender's
# syscall sends: task (no "intr"), or softirq (receive: "intr", and the
# task is the interrupted sender or ksoftirqd).
PROBES=(
	"ip_output 4 out 0 0 task"
	"ip_finish_output2 4 out lo 0 task"
	"__dev_queue_xmit 46 out lo -14 task"
	"__netif_rx 46 in lo 0 task"
	"ip_rcv 4 in lo 0 softirq"
	"udp_rcv 4u in lo 20 softirq"
	"tcp_v4_rcv 4t in lo 20 softirq"
	"ip6_output 6 out 0 0 task"
	"ip6_finish_output2 6 out lo 0 task"
	"ipv6_rcv 6 in lo 0 softirq"
	"udpv6_rcv 6u in lo 40 softirq"
	"tcp_v6_rcv 6t in lo 40 softirq"
)
# PROTO,SRC,SPORT,DST,DPORT,PAYLOAD...: pktsend's arguments. 127/8 is all
# local: distinct addresses show source and destination apart.
FLOWS=(
	"udp,127.0.0.2,40001,127.0.0.3,40002,magnet-udp4-one,magnet-udp4-two-2,magnet-udp4-three-33"
	"tcp,127.0.0.4,40003,127.0.0.5,40004,magnet-tcp4-one,magnet-tcp4-two-2,magnet-tcp4-three-33"
	"udp,::1,40005,::1,40006,magnet-udp6-one,magnet-udp6-two-2"
	"tcp,::1,40007,::1,40008,magnet-tcp6-one,magnet-tcp6-two-2"
)
# And packets that come in through a NIC: the host connects to
# 127.0.0.1:HOST_PCAP_PORT, which QEMU forwards (from 10.0.2.2) to the
# guest's ETH_PORT on eth0 (virtio-net), sends ETH_PAYLOAD and closes.
# napi_gro_receive sees those frames before the IP header is set: link
# layer, Ethernet. They also pass tcp_v4_rcv (not ip_rcv: GRO hands them
# on in a list, to ip_list_rcv), and the guest's replies ip_output,
# ip_finish_output2 and __dev_queue_xmit.
ETH_PORT=7001
ETH_PAYLOAD=magnet-eth4-from-the-host
HOST_PCAP_PORT=${HOST_PCAP_PORT:-17601}
FLOWS+=("eth,$ETH_PORT,$ETH_PAYLOAD")
PROBES+=("napi_gro_receive e in eth0 14 softirq")

for p in tshark tcpdump capinfos; do
	command -v $p >/dev/null 2>&1 ||
		fail "$p is not installed: this test reads magnet-dump's captures with the real tshark, capinfos and tcpdump (tools/bootstrap installs them)"
done
[[ -x $B/tools/magnet-dump ]] || fail "$B/tools/magnet-dump not built (make user)"

probe_names=
for p in "${PROBES[@]}"; do probe_names=$probe_names${probe_names:+,}${p%% *}; done

# --- the guest ---------------------------------------------------------
if [[ -n ${HOST_PCAP_CONSOLE:-} ]]; then
	cp "$HOST_PCAP_CONSOLE" "$T/console" || fail "no $HOST_PCAP_CONSOLE"
else
	# The console as the suite shows it, the base64 left out.
	{
		tests/vm/run --timeout "${HOST_PCAP_TIMEOUT:-600}" \
			--forward "$HOST_PCAP_PORT:$ETH_PORT" "$@" -- \
			sh /magnet/tests/vm/pcap-guest.sh "$CAPLEN" "$probe_names" "${FLOWS[@]}"
		echo $? >"$T/rc"
	} 2>&1 | tee "$T/console" |
		awk '/^PCAP-BEGIN / { print "# " $0 " (base64)"; skip = 1; next }
		     /^PCAP-END / { skip = 0 } !skip { print "# " $0; fflush() }' &
	vm=$!
	# The eth flow, once the guest listens (tee may not have made the file yet).
	until grep -qs "^PCAP-READY $ETH_PORT" "$T/console"; do
		kill -0 $vm 2>/dev/null || break
		sleep 0.1
	done
	if grep -q "^PCAP-READY $ETH_PORT" "$T/console"; then
		exec {fd}<>"/dev/tcp/127.0.0.1/$HOST_PCAP_PORT" ||
			fail "cannot connect to 127.0.0.1:$HOST_PCAP_PORT (QEMU's forward to the guest's $ETH_PORT)"
		printf '%s' "$ETH_PAYLOAD" >&"$fd"
		exec {fd}>&-
	fi
	wait $vm
	rc=$(cat "$T/rc" 2>/dev/null)
	[[ $rc == 0 ]] || fail "the guest's half failed (tests/vm/run: exit ${rc:-unknown})"
fi

# Files: between the markers, checked against the guest's SHA-256 (a
# kernel message on the console amid the base64 would show here).
mkdir "$T/f"
awk -v dir="$T/f" '/^PCAP-BEGIN / { f = dir "/" $2 ".b64"; print $3 > (dir "/" $2 ".sha"); next }
	/^PCAP-END / { f = ""; next } f != "" { print > f }' "$T/console"
nfiles=0
for b in "$T"/f/*.b64; do
	[[ -e $b ]] || fail "no file in the guest's output"
	f=${b%.b64}
	base64 -d "$b" >"$f" 2>/dev/null || fail "${f##*/}: bad base64"
	[[ $(sha256sum <"$f" | cut -d' ' -f1) == "$(cat "$f.sha")" ]] ||
		fail "${f##*/}: SHA-256 differs from the guest's"
	nfiles=$((nfiles + 1))
done
want_files=$((2 * ${#PROBES[@]} + 4)) # + all.pcapng all.pcap trace probes.txt
((nfiles == want_files)) || fail "$nfiles files from the guest, want $want_files"
F=$T/f
info() { sed -n "s/^PCAP-INFO $1=//p" "$T/console" | tr -d '\r'; }
lo=$(info lo) cg=$(info cgroup) eth0=$(info eth0) eth0mac=$(info eth0mac) gwmac=$(info gwmac)
[[ $lo =~ ^[0-9]+$ && $cg =~ ^[0-9]+$ && $eth0 =~ ^[0-9]+$ ]] ||
	fail "no lo or eth0 ifindex or cgroup id from the guest"
[[ $eth0mac =~ ^[0-9a-f:]{17}$ && $gwmac =~ ^[0-9a-f:]{17}$ ]] || fail "no MAC addresses from the guest"
ok "${nfiles} files out of the guest ($(info kernel)), SHA-256 as the guest computed them"

# --- magnet-dump's summaries: all packets, nothing lost --------------------
summary() { sed -n "s/^PCAP-SUMMARY $1: \([0-9]\)/\1/p" "$T/console" | tr -d '\r'; }
re='^([0-9]+) packets; not written: 0 non-skb, 0 data-layer, ([0-9]+) link-layer; LOST records: 0 \(0 records lost\)$'
[[ $(summary all.pcapng) =~ $re && ${BASH_REMATCH[2]} == 0 ]] || fail "magnet-dump all.pcapng: $(summary all.pcapng)"
total=${BASH_REMATCH[1]}
[[ $(summary all.pcap) =~ $re ]] || fail "magnet-dump all.pcap: $(summary all.pcap)"
nclassic=${BASH_REMATCH[1]} nlink=${BASH_REMATCH[2]}
((nlink > 0 && nclassic + nlink == total)) ||
	fail "all.pcap: $nclassic packets and $nlink link-layer ones left out, all.pcapng $total"
grep -q "^PCAP-SUMMARY all.pcapng: warning: Ethernet and raw IP packets in one file" "$T/console" ||
	fail "magnet-dump did not warn about two link types in all.pcapng"
ok "magnet-dump wrote $total packets to all.pcapng (warning: Ethernet and raw IP), $nclassic to all.pcap ($nlink link-layer left out): no record lost"

# --- tshark on all.pcapng ----------------------------------------------
FIELDS="frame.interface_name frame.encap_type frame.cap_len frame.len
	frame.packet_flags_direction ip.src ip.dst ipv6.src ipv6.dst
	udp.srcport udp.dstport tcp.srcport tcp.dstport tcp.flags tcp.seq_raw
	tcp.ack_raw tcp.len udp.payload tcp.payload frame.time_epoch frame.comment
	eth.src eth.dst eth.type"
tshark_fields() { # FILE OUT: tab-separated, no complaint on stderr
	local args=() f
	for f in $FIELDS; do args+=(-e "$f"); done
	tshark -r "$1" -T fields -E separator=/t "${args[@]}" >"$2" 2>"$T/tshark.err" ||
		fail "tshark -r ${1##*/}: exit $?: $(cat "$T/tshark.err")"
	if grep -v '^Running as user "root"' "$T/tshark.err" | grep -q .; then
		fail "tshark -r ${1##*/} complained: $(cat "$T/tshark.err")"
	fi
}
tshark_fields "$F/all.pcapng" "$T/all.tsv"
n=$(wc -l <"$T/all.tsv")
((n == total)) || fail "tshark reads $n packets in all.pcapng, magnet-dump wrote $total"
capinfos -t -c -E "$F/all.pcapng" >"$T/capinfos" 2>&1 || fail "capinfos: $(cat "$T/capinfos")"
if ! grep -q 'File type: *Wireshark/... - pcapng' "$T/capinfos" ||
	! grep -q "Number of packets: *$total\$" "$T/capinfos"; then
	fail "capinfos: $(cat "$T/capinfos")"
fi
ok "tshark and capinfos read all.pcapng: pcapng, $total packets"

# Each flow's pid, and the probes' ids, as the guest saw them.
declare -A PID ID
i=0
for fl in "${FLOWS[@]}"; do
	i=$((i + 1))
	IFS=, read -r proto port sport _ <<<"$fl"
	[[ $proto == eth ]] && sport=$port # the guest's port: the host's is QEMU's
	PID[$sport]=$(info "flow$i")
	[[ ${PID[$sport]} =~ ^[0-9]+$ ]] || fail "no pid for flow $i"
done
while read -r id name _; do ID[$name]=${id%:}; done < <(grep -E '^[0-9]+: ' "$F/probes.txt")

# norm TSV: one line per packet, what the checks compare:
#   PROBE FLOWPORT SRC:SPORT>DST:DPORT PROTO FLAGS SEQ ACK TCPLEN PAYLOAD
#   caplen= len= dir= if= WHO ifindex= layer= skblen= CTX
# FLOWPORT is the flow's source port (the sender's); WHO is "pid=P,
# tgid=P,comm=C,cgroup=G" as in the comment, or "who=sender" when it is
# the flow's sender in the test's cgroup, or "who=ksoftirqd" for
# ksoftirqd/CPU (the cpu= of the same comment) in the root cgroup; CTX
# "intr" or "task". The comment's other fields are checked here: the probe
# is named with its id, ts is a time, cpu a number, skb an address, dir
# and ifindex agree with the packet's direction flag and interface; a
# failed check makes the line start with "BAD".
norm() {
	local ids pids
	ids=$(for k in "${!ID[@]}"; do printf '%s=%s ' "$k" "${ID[$k]}"; done)
	pids=$(for k in "${!PID[@]}"; do printf '%s=%s ' "$k" "${PID[$k]}"; done)
	awk -F'\t' -v ids="$ids" -v pids="$pids" -v cg="$cg" '
	BEGIN {
		n = split(ids, a, " "); for (i = 1; i <= n; i++) { split(a[i], kv, "="); id[kv[1]] = kv[2] }
		n = split(pids, a, " "); for (i = 1; i <= n; i++) { split(a[i], kv, "="); pid[kv[1]] = kv[2] }
	}
	{
		bad = ""
		src = $6 $8; dst = $7 $9
		if ($10 != "") { proto = "udp"; sp = $10; dp = $11; pay = $18 }
		else if ($12 != "") { proto = "tcp"; sp = $12; dp = $13; pay = $19 }
		else { proto = "other"; sp = dp = "-"; pay = "" }
		if (pay == "") pay = "-"
		flow = (sp in pid) ? sp : (dp in pid) ? dp : "none"
		delete c; c["intr"] = "task"
		n = split($21, w, " ")
		for (i = 1; i <= n; i++) {
			if (w[i] == "intr") { c["intr"] = "intr"; continue }
			j = index(w[i], "="); c[substr(w[i], 1, j - 1)] = substr(w[i], j + 1)
		}
		pr = c["probe"]; sub(/\(.*/, "", pr)
		if (c["probe"] != pr "(" id[pr] ")") bad = bad " probe-id"
		if (c["ts"] !~ /^[0-9]+\.[0-9]+$/) bad = bad " ts"
		if (c["cpu"] !~ /^[0-9]+$/) bad = bad " cpu"
		if (c["skb"] !~ /^0x[0-9a-f]+$/) bad = bad " skb"
		if ($1 != "ifindex" c["ifindex"]) bad = bad " interface"
		if ((c["dir"] == "in") != ($5 == "0x00000001") || (c["dir"] == "out") != ($5 == "0x00000002")) bad = bad " direction"
		who = "pid=" c["pid"] ",tgid=" c["tgid"] ",comm=" c["comm"] ",cgroup=" c["cgroup"]
		if (flow != "none" && c["pid"] == pid[flow] && c["tgid"] == pid[flow] &&
		    c["comm"] == "pktsend" && c["cgroup"] == cg)
			who = "who=sender"
		else if (c["comm"] == "ksoftirqd/" c["cpu"] && c["pid"] == c["tgid"] && c["cgroup"] == 1)
			who = "who=ksoftirqd"
		print (bad != "" ? "BAD" bad " " : "") pr, flow, src ":" sp ">" dst ":" dp, proto,
			($14 == "" ? "-" : $14), ($15 == "" ? "-" : $15), ($16 == "" ? "-" : $16),
			($17 == "" ? "-" : $17), pay, "caplen=" $3, "len=" $4, "dir=" c["dir"],
			"if=" c["ifindex"], who, "layer=" c["layer"], "skblen=" c["len"], c["intr"], $2
	}' "$1"
}
norm "$T/all.tsv" >"$T/all.norm"
if grep -q '^BAD' "$T/all.norm"; then
	fail "comments that disagree with their packets: $(grep '^BAD' "$T/all.norm" | head -n 3)"
fi
ok "every comment names its probe by magnet-ctl's id, and agrees with its packet's interface and direction"
if awk '$2 == "none"' "$T/all.norm" | grep -q .; then
	fail "packets of no flow sent: $(awk '$2 == "none"' "$T/all.norm" | head -n 3)"
fi
awk -F'\t' 'NR > 1 && $20 < prev { exit 1 } { prev = $20 }' "$T/all.tsv" ||
	fail "all.pcapng is not in time order"
ok "every packet is one of the test's, in time order"

hex() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }

# want_line PROBE FAMILY DIR IFINDEX HOFF CONTEXT  FLOWPORT SRC SPORT DST
# DPORT PROTO IPLEN PAYLOAD: the normalized line of a packet the sender's
# syscall sent (a datagram, a TCP payload segment), flags and sequence
# numbers left out ("~").
want_line() {
	local probe=$1 dir=$3 ifx=$4 hoff=$5 ctx=$6 fp=$7 src=$8 sp=$9 dst=${10} dp=${11} proto=${12} iplen=${13} pay=${14}
	[[ $ifx == lo ]] && ifx=$lo
	[[ $ctx == softirq ]] && ctx=intr
	echo "$probe $fp $src:$sp>$dst:$dp $proto ~ ~ ~ ~ $(hex "$pay") caplen=$iplen len=$iplen dir=$dir if=$ifx who=sender layer=network skblen=$((iplen - hoff)) $ctx 7"
}
# The sender may be preempted by ksoftirqd on a softirq probe: then that
# is who the record names (and only there).
# PROBE FLOWPORT [retx]: its datagrams / payload segments, flags etc. masked;
# with retx, a retransmission (the same sequence number and length) once.
got_lines() {
	awk -v p="$1" -v f="$2" -v retx="${3:-}" '$1 == p && $2 == f && $9 != "-" {
		if (retx && seen[$3 " " $6 " " $8]++) next
		if ($17 == "intr" && $14 == "who=ksoftirqd") $14 = "who=sender"
		$5 = $6 = $7 = $8 = "~"; print }' "$T/all.norm"
}

# --- per flow and probe: the datagrams and payload segments --------------
nwant=0
for fl in "${FLOWS[@]}"; do
	IFS=, read -r proto src sp dst dp pays <<<"$fl"
	[[ $proto == eth ]] && continue # below
	IFS=, read -r -a pay <<<"$pays"
	if [[ $src == *:* ]]; then fam=6 iph=40; else fam=4 iph=20; fi
	if [[ $proto == udp ]]; then l4=8; else l4=32; fi # TCP: timestamps option
	: >"$T/want" && : >"$T/got"
	for pr in "${PROBES[@]}"; do
		read -r name pfam _ <<<"$pr"
		[[ $pfam == *$fam* ]] || continue
		[[ $pfam == *[ut]* && $pfam != *${proto:0:1}* ]] && continue
		for p in "${pay[@]}"; do
			# shellcheck disable=SC2086 # the probe's words
			want_line $pr "$sp" "$src" "$sp" "$dst" "$dp" "$proto" $((iph + l4 + ${#p})) "$p" >>"$T/want"
			nwant=$((nwant + 1))
		done
		got_lines "$name" "$sp" >>"$T/got"
	done
	[[ -s $T/want ]] || fail "nothing expected of $fl"
	diff "$T/want" "$T/got" >"$T/diff" ||
		fail "$proto $src:$sp > $dst:$dp, want (<) and tshark's (>): $(head -n 20 "$T/diff")"
done
ok "tshark: each of $nwant datagram and payload segment records once, in order, at every probe on its path: addresses, ports, payload, lengths, device, direction, pid/tgid/comm/cgroup, layer, skb->len, intr"

# --- TCP: the connection, the same segments at every probe ------------
# segs PROBE SRC:SPORT>DST:DPORT FLAGS-RE: how many such segments PROBE saw
# (FIN is the flags' lowest bit). A retransmission has the same sequence
# number: it is the same segment (a slow guest makes QEMU's TCP resend its
# FIN, with a newer ack).
segs() { awk -v a="$2" -v re="$3" '$1 == a && $2 ~ re { print $3 }' "$T/seg.$1" | sort -u | wc -l; }
for fl in "${FLOWS[@]}"; do
	IFS=, read -r proto src sp dst dp _ <<<"$fl"
	[[ $proto == tcp ]] || continue
	if [[ $src == *:* ]]; then fam=6; else fam=4; fi
	first=
	for pr in "${PROBES[@]}"; do
		read -r name pfam _ <<<"$pr"
		[[ $pfam == *$fam* && $pfam != *u* ]] || continue
		# SRC:SPORT>DST:DPORT FLAGS SEQ ACK LEN of every segment, sorted.
		awk -v p="$name" -v f="$sp" '$1 == p && $2 == f { print $3, $5, $6, $7, $8 }' "$T/all.norm" |
			sort >"$T/seg.$name"
		[[ $(segs "$name" "$src:$sp>$dst:$dp" '^0x0002$') == 1 &&
			$(segs "$name" "$dst:$dp>$src:$sp" '^0x0012$') == 1 ]] ||
			fail "$name: not one SYN and one SYN-ACK of $src:$sp > $dst:$dp: $(cat "$T/seg.$name")"
		[[ $(segs "$name" "$src:$sp>$dst:$dp" '[13579bdf]$') == 1 &&
			$(segs "$name" "$dst:$dp>$src:$sp" '[13579bdf]$') == 1 ]] ||
			fail "$name: not one FIN each way: $(cat "$T/seg.$name")"
		if [[ -z $first ]]; then
			first=$name
		else
			diff "$T/seg.$first" "$T/seg.$name" >"$T/diff" ||
				fail "TCP $src:$sp: $first (<) and $name (>) saw other segments: $(cat "$T/diff")"
		fi
	done
	ok "TCP $src:$sp > $dst:$dp: one SYN, one SYN-ACK, a FIN each way, the same $(wc -l <"$T/seg.$first") segments (flags, seq, ack, length) at every probe"
done

# --- the eth flow: a NIC's packets ---------------------------------------
# napi_gro_receive: Ethernet frames from QEMU's gateway to the guest's MAC.
awk -F'\t' -v gw="$gwmac" -v me="$eth0mac" 'index($21, "probe=napi_gro_receive(") == 1 {
	n++; if ($2 != 1 || $22 != gw || $23 != me || $24 != "0x0800") { print; exit 1 } }
	END { if (!n) { print "none"; exit 1 } }' "$T/all.tsv" >"$T/bad" ||
	fail "napi_gro_receive: not an Ethernet frame $gwmac > $eth0mac, IPv4: $(cat "$T/bad")"
if awk -F'\t' '$2 != 7 && index($21, "probe=napi_gro_receive(") != 1' "$T/all.tsv" | grep -q .; then
	fail "Ethernet packets from other probes than napi_gro_receive"
fi
# QEMU's source port, from the SYN.
sp=$(awk -v d="10.0.2.15:$ETH_PORT" '$1 == "napi_gro_receive" && $5 == "0x0002" &&
	index($3, ">" d) && length($3) == index($3, ">" d) + length(d) {
	sub(/>.*/, "", $3); sub(/.*:/, "", $3); print $3 }' "$T/all.norm")
[[ $sp =~ ^[0-9]+$ ]] || fail "no SYN to 10.0.2.15:$ETH_PORT at napi_gro_receive"
# The payload segment at each layer: on the softirq of the NIC, no task
# of ours (who is whatever was interrupted). QEMU's TCP (slirp) sends no
# options: 40 bytes of headers.
iplen=$((40 + ${#ETH_PAYLOAD}))
epay=$(hex "$ETH_PAYLOAD")
{
	echo "napi_gro_receive $ETH_PORT 10.0.2.2:$sp>10.0.2.15:$ETH_PORT tcp ~ ~ ~ ~ $epay caplen=$((iplen + 14)) len=$((iplen + 14)) dir=in if=$eth0 who=any layer=link skblen=$iplen intr 1"
	echo "tcp_v4_rcv $ETH_PORT 10.0.2.2:$sp>10.0.2.15:$ETH_PORT tcp ~ ~ ~ ~ $epay caplen=$iplen len=$iplen dir=in if=$eth0 who=any layer=network skblen=$((iplen - 20)) intr 7"
} >"$T/want"
for p in napi_gro_receive tcp_v4_rcv; do
	got_lines $p "$ETH_PORT" retx | awk '{ $14 = "who=any"; print }'
done >"$T/got"
diff "$T/want" "$T/got" >"$T/diff" ||
	fail "eth: 10.0.2.2:$sp > 10.0.2.15:$ETH_PORT, want (<) and tshark's (>): $(head -n 20 "$T/diff")"
# The connection: the same segments in at both receive probes, the same
# out at each send probe; one SYN in, one SYN-ACK out, a FIN each way.
for p in napi_gro_receive tcp_v4_rcv ip_output ip_finish_output2 __dev_queue_xmit; do
	awk -v p="$p" -v f="$ETH_PORT" '$1 == p && $2 == f { print $3, $5, $6, $7, $8 }' "$T/all.norm" |
		sort >"$T/seg.$p"
done
a="10.0.2.2:$sp>10.0.2.15:$ETH_PORT" b="10.0.2.15:$ETH_PORT>10.0.2.2:$sp"
diff "$T/seg.napi_gro_receive" "$T/seg.tcp_v4_rcv" >"$T/diff" ||
	fail "eth: napi_gro_receive (<) and tcp_v4_rcv (>) saw other segments: $(cat "$T/diff")"
for p in ip_finish_output2 __dev_queue_xmit; do
	diff "$T/seg.ip_output" "$T/seg.$p" >"$T/diff" ||
		fail "eth: ip_output (<) and $p (>) saw other segments: $(cat "$T/diff")"
done
if grep -v "^$a " "$T/seg.napi_gro_receive" | grep -q . || grep -v "^$b " "$T/seg.ip_output" | grep -q . ||
	[[ $(segs napi_gro_receive "$a" '^0x0002$') != 1 || $(segs ip_output "$b" '^0x0012$') != 1 ||
		$(segs napi_gro_receive "$a" '[13579bdf]$') != 1 || $(segs ip_output "$b" '[13579bdf]$') != 1 ]]; then
	fail "eth: in: $(cat "$T/seg.napi_gro_receive"); out: $(cat "$T/seg.ip_output")"
fi
ok "eth0: the host's payload once at napi_gro_receive (Ethernet, $gwmac > $eth0mac, link layer) and tcp_v4_rcv; the same $(wc -l <"$T/seg.napi_gro_receive") segments in at both, $(wc -l <"$T/seg.ip_output") out at each send probe"

# --- tcpdump: each probe's pcapng and pcap, then all.pcap --------------
# tcp_lines FILE OUT [FAILS]: "TIME SRC SPORT DST DPORT LENGTH PAYLOAD
# BYTES" of each packet from tcpdump -xx alone (the payload is the last
# LENGTH bytes tcpdump counts; BYTES all it dumps, in hex). tcpdump must
# succeed, or with FAILS, fail after its packets with that message.
tcp_lines() {
	if tcpdump -r "$1" -nn -tt --time-stamp-precision=nano -xx >"$T/tcpdump.out" 2>"$T/tcpdump.err"; then
		[[ -z ${3:-} ]] || fail "tcpdump -r ${1##*/} succeeded, want: $3"
	else
		if [[ -z ${3:-} ]] || ! grep -qF "$3" "$T/tcpdump.err"; then
			fail "tcpdump -r ${1##*/}: $(cat "$T/tcpdump.err")"
		fi
	fi
	awk 'function out() {
		if (head == "") return
		split(head, h, " "); s = h[3]; d = h[5]; sub(/:$/, "", d)
		sp = s; sub(/.*\./, "", sp); sub(/\.[0-9]+$/, "", s)
		dp = d; sub(/.*\./, "", dp); sub(/\.[0-9]+$/, "", d)
		if (!match(head, /length [0-9]+$/)) { print "BAD no length: " head; return }
		l = substr(head, RSTART + 7)
		pay = l > 0 ? substr(hex, length(hex) - 2 * l + 1) : "-"
		print h[1], s, sp, d, dp, l, pay, hex
	}
	/^\t0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) hex = hex $i; next }
	{ out(); head = $0; hex = "" }
	END { out() }' "$T/tcpdump.out" >"$2"
}
# tshark_bytes FILE OUT N: each packet's bytes in hex, as tshark reads
# them (N packets).
tshark_bytes() {
	tshark -r "$1" -T json -x 2>/dev/null |
		awk '/"frame_raw": \[/ { getline; gsub(/[ ",]/, ""); print }' >"$2"
	[[ $(wc -l <"$2") == "$3" ]] || fail "tshark -x: not $3 packets in ${1##*/}"
}
# The same from tshark's fields (TSV as tshark_fields writes, then the
# bytes: field 25).
tsv_lines() { # TSV OUT
	awk -F'\t' '{ s = $6 $8; d = $7 $9
		if ($10 != "") { sp = $10; dp = $11; pay = $18; l = length(pay) / 2 }
		else { sp = $12; dp = $13; pay = $19; l = $17 }
		print $20, s, sp, d, dp, l, (pay == "" ? "-" : pay), $25 }' "$1" >"$2"
}
tshark_bytes "$F/all.pcapng" "$T/all.bytes" "$total"
paste "$T/all.tsv" "$T/all.bytes" >"$T/all.tsvb"
# libpcap 1.10 reads a pcapng only as long as its interfaces have the
# first one's link type, and even then not two raw IP interfaces: it
# compares the first's type as a DLT (DLT_RAW, 12) with the next one's
# LINKTYPE_RAW (101). So a probe that saw packets on two devices (lo and
# eth0, raw IP) stops tcpdump at the first packet of the second; each
# probe's classic pcap (one link type, no interfaces) has them all.
RAW2="an interface has a type 101 different from the type of the first interface"
npk=0 nng=0 nstop=0
for pr in "${PROBES[@]}"; do
	name=${pr%% *}
	awk -F'\t' -v p="$name" 'index($21, "probe=" p "(") == 1' "$T/all.tsvb" >"$T/tsv.$name"
	tsv_lines "$T/tsv.$name" "$T/ts.$name"
	[[ -s $T/ts.$name ]] || fail "no packet of $name in all.pcapng"
	# Its packets up to the first of another interface.
	awk -F'\t' 'NR == 1 { i = $1 } $1 != i { exit } { print NR }' "$T/tsv.$name" >"$T/first"
	nfirst=$(wc -l <"$T/first")
	if ((nfirst == $(wc -l <"$T/ts.$name"))); then
		tcp_lines "$F/$name.pcapng" "$T/td.$name"
		diff "$T/ts.$name" "$T/td.$name" >"$T/diff" ||
			fail "tcpdump -r $name.pcapng (>) and tshark on all.pcapng (<) differ: $(head -n 20 "$T/diff")"
		nng=$((nng + $(wc -l <"$T/td.$name")))
	else
		tcp_lines "$F/$name.pcapng" "$T/td.$name" "$RAW2"
		head -n "$nfirst" "$T/ts.$name" | diff - "$T/td.$name" >"$T/diff" ||
			fail "tcpdump -r $name.pcapng (>) and tshark's first interface (<) differ: $(head -n 20 "$T/diff")"
		nstop=$((nstop + 1))
	fi
	if awk -F'\t' '$2 != 7 { exit 1 }' "$T/tsv.$name"; then
		tcp_lines "$F/$name.pcap" "$T/tdc.$name"
		diff "$T/ts.$name" "$T/tdc.$name" >"$T/diff" ||
			fail "tcpdump -r $name.pcap (>) and tshark on all.pcapng (<) differ: $(head -n 20 "$T/diff")"
		npk=$((npk + $(wc -l <"$T/tdc.$name")))
	else # link layer: none in a classic pcap, all counted
		n=$(wc -l <"$T/ts.$name")
		[[ -s $T/td.$name && $nfirst == "$n" ]] || fail "$name: link-layer packets tcpdump did not read"
		npk=$((npk + n))
		[[ $(summary "$name.pcap") == "0 packets; not written: 0 non-skb, 0 data-layer, $n link-layer; LOST records: 0 (0 records lost)" ]] ||
			fail "magnet-dump $name.pcap: $(summary "$name.pcap"), want its $n link-layer packets counted"
	fi
done
((npk == total)) || fail "tcpdump read $npk packets in the probes' files, all.pcapng has $total"
ok "tcpdump reads each probe's classic pcap, and its pcapng ($nng packets; $nstop stop at a second raw IP interface, as libpcap 1.10 does, after the first's): every one of the $npk packets as tshark in all.pcapng, time, addresses, ports, payload, every byte"
# The mixed file (Ethernet and raw IP, several devices): tcpdump stops at
# its second interface, tshark read it all.
tcpdump -r "$F/all.pcapng" -nn >/dev/null 2>"$T/tcpdump.err" &&
	fail "tcpdump read all.pcapng whole (Ethernet and raw IP interfaces)"
grep -q "different from the type of the first interface" "$T/tcpdump.err" ||
	fail "tcpdump -r all.pcapng: $(cat "$T/tcpdump.err")"
ok "tcpdump stops in all.pcapng at its second interface ($(sed -n 's/^tcpdump: pcap_loop: //p' "$T/tcpdump.err")); tshark reads it all"

capinfos -t -c -E "$F/all.pcap" >"$T/capinfos" 2>&1 || fail "capinfos all.pcap: $(cat "$T/capinfos")"
if ! grep -q 'File type: *Wireshark/tcpdump/... - nanosecond pcap' "$T/capinfos" ||
	! grep -q 'File encapsulation: *Raw IP' "$T/capinfos" ||
	! grep -q "Number of packets: *$nclassic\$" "$T/capinfos"; then
	fail "capinfos all.pcap: $(cat "$T/capinfos")"
fi
# all.pcapng's network-layer packets (the link layer's are napi_gro_receive's).
awk -F'\t' '$2 == 7' "$T/all.tsvb" >"$T/net.tsvb"
[[ $(wc -l <"$T/net.tsvb") == "$nclassic" ]] || fail "all.pcapng has not $nclassic raw IP packets"
tshark_fields "$F/all.pcap" "$T/classic.tsv"
# Classic pcap has no interfaces, directions or comments.
cut -f2-4,6-20 "$T/net.tsvb" | diff - <(cut -f2-4,6-20 "$T/classic.tsv") >"$T/diff" ||
	fail "tshark: all.pcap (>) differs from all.pcapng (<): $(head -n 20 "$T/diff")"
tsv_lines "$T/net.tsvb" "$T/ts.net"
tshark_bytes "$F/all.pcap" "$T/classic.bytes" "$nclassic"
cut -f25 "$T/net.tsvb" | cmp -s - "$T/classic.bytes" || fail "tshark: the bytes of all.pcap differ from all.pcapng's"
tcp_lines "$F/all.pcap" "$T/td.classic"
diff "$T/ts.net" "$T/td.classic" >"$T/diff" ||
	fail "tcpdump -r all.pcap (>) and tshark on all.pcapng (<) differ: $(head -n 20 "$T/diff")"
ok "all.pcap (classic, nanosecond, raw IP): all.pcapng's $nclassic network-layer packets, read by capinfos, tshark and tcpdump"

# --- the host's magnet-dump on the guest's trace: the same bytes ---------
for f in all.pcapng all.pcap; do
	opt=()
	[[ $f == *.pcap ]] && opt=(--pcap-classic)
	"$B/tools/magnet-dump" -p "$T/host.$f" "${opt[@]}" "$F/trace" 2>"$T/dump.err" ||
		fail "host magnet-dump: $(cat "$T/dump.err")"
	cmp -s "$F/$f" "$T/host.$f" || fail "the host's magnet-dump writes another $f from the guest's trace"
done
ok "the host's magnet-dump writes the same all.pcapng and all.pcap from the guest's trace"

echo "host-pcap: $pass passed"
