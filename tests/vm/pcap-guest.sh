#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The guest's half of tests/vm/host-pcap.sh (runs INSIDE the VM, busybox
# sh; not a t-*.sh: the suite does not run it, the host does):
#
#   sh /magnet/tests/vm/pcap-guest.sh CAPLEN PROBE,... FLOW...
#
# Loads magnet, adds a kprobe with the skb handler and capture CAPLEN on
# each PROBE, sends each FLOW with pktsend from a cgroup of its own
# (FLOW = udp|tcp,SRC,SPORT,DST,DPORT,PAYLOAD,..., or eth,PORT,PAYLOAD:
# received from the host on eth0, see eth_flow), drains the rings with
# magnet-read and exports the trace with magnet-dump: all.pcapng (every
# probe), all.pcap (--pcap-classic), and PROBE.pcapng and PROBE.pcap (one
# probe each: one link type, for tcpdump). Prints what the host cannot know as
# "PCAP-INFO KEY=VALUE" lines (the cgroup's id, lo's ifindex, each flow's
# pid), magnet-dump's summaries as "PCAP-SUMMARY FILE: ...", and every file
# base64-encoded between "PCAP-BEGIN NAME SHA256" and "PCAP-END NAME" (the
# host has tshark and tcpdump; the guest has neither). Fails, as the suite
# would, on a kernel problem line in dmesg and (debug kernel) on a leak of
# magnet's that kmemleak finds. Exit 0, or a FAIL line and 1.
cd "$(dirname "$0")" || exit 1
. ./lib.sh
[ $# -ge 3 ] || fail "usage: pcap-guest.sh CAPLEN PROBE,... FLOW..."
caplen=$1 probes=$(echo "$2" | tr , ' ')
shift 2
out=/tmp/pcap
mkdir -p $out || fail "mkdir $out"

ip link set lo up || fail "lo up"
echo "PCAP-INFO kernel=$(uname -r)"
echo "PCAP-INFO lo=$(cat /sys/class/net/lo/ifindex)"
case " $* " in *" eth,"*)
	# eth0 (tests/vm/run --forward) carries the eth flows and nothing
	# else: no IPv6 on it (router solicitations, MLD), and the gateway's
	# MAC known both ways before the probes (no ARP among the packets).
	[ -e /sys/class/net/eth0 ] || fail "an eth flow without eth0 (tests/vm/run --forward)"
	echo 1 >/proc/sys/net/ipv6/conf/eth0/disable_ipv6 || fail "no IPv6 on eth0"
	ping -c 1 -W 5 10.0.2.2 >/dev/null 2>&1
	gw=$(ip neigh show 10.0.2.2 dev eth0 | sed -n 's/.* lladdr \([0-9a-f:]*\).*/\1/p')
	[ -n "$gw" ] || fail "no ARP reply from 10.0.2.2: $(ip neigh show)"
	arp -i eth0 -s 10.0.2.2 "$gw" || fail "arp -s 10.0.2.2 $gw"
	echo "PCAP-INFO eth0=$(cat /sys/class/net/eth0/ifindex)"
	echo "PCAP-INFO eth0mac=$(cat /sys/class/net/eth0/address)"
	echo "PCAP-INFO gwmac=$gw"
	;;
esac
load
for p in $probes; do
	magnet-ctl probe add kprobe "$p" handler skb capture "$caplen" >/dev/null ||
		fail "magnet-ctl probe add kprobe $p handler skb capture $caplen"
done
magnet-ctl probe list >$out/probes.txt || fail "probe list"

# The senders' cgroup: its id (low 32 bits) is the inode of its directory.
cg=/sys/fs/cgroup/pcap
mkdir $cg || fail "mkdir $cg"
echo $$ >$cg/cgroup.procs || fail "into $cg"
echo "PCAP-INFO cgroup=$(stat -c %i $cg)"

# eth,PORT,PAYLOAD: the host connects to PORT through QEMU's forward (from
# 10.0.2.2) once it reads "PCAP-READY PORT", sends PAYLOAD and closes;
# busybox nc receives it.
eth_flow() { # PORT PAYLOAD
	timeout 120 nc -l -p "$1" >$out/eth.got &
	pid=$!
	hexport=$(printf ':%04X ' "$1")
	i=0
	until cat /proc/net/tcp /proc/net/tcp6 | grep -q "$hexport.* 0A "; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "nc does not listen on port $1"
		sleep 0.1
	done
	echo "PCAP-READY $1"
	wait $pid || fail "nc -l -p $1: nothing came in 120 s"
	printf '%s' "$2" | cmp -s - $out/eth.got || fail "eth: nc received '$(cat $out/eth.got)'"
	rm $out/eth.got
}

n=0
for f; do
	n=$((n + 1))
	case $f in
	eth,*)
		f=${f#eth,}
		eth_flow "${f%%,*}" "${f#*,}"
		;;
	*)
		# shellcheck disable=SC2086 # the flow's words, split on commas
		(IFS=,; exec pktsend $f) &
		pid=$!
		wait $pid || fail "pktsend $f"
		;;
	esac
	echo "PCAP-INFO flow$n=$pid"
done
# Back to the root cgroup: the one above is removed below.
echo $$ >/sys/fs/cgroup/cgroup.procs || fail "back to the root cgroup"
# (busybox timeout's watcher sees nc gone within a second, then exits)
i=0
until rmdir $cg 2>/dev/null; do
	i=$((i + 1))
	[ $i -le 50 ] || fail "rmdir $cg: still holds $(cat $cg/cgroup.procs)"
	sleep 0.1
done

magnet-read -o $out/trace -t 1 2>$out/err || fail "magnet-read: $(cat $out/err)"
for p in $probes; do magnet-ctl probe del "$p" || fail "probe del $p"; done
unload

dump() { # OUT ARGS...
	o=$1
	shift
	magnet-dump -p "$out/$o" "$@" $out/trace 2>$out/err || fail "magnet-dump -p $o $*: $(cat $out/err)"
	sed "s|^magnet-dump: $out/|PCAP-SUMMARY |" $out/err
}
dump all.pcapng
dump all.pcap --pcap-classic
for p in $probes; do
	dump "$p.pcapng" -e "$p"
	dump "$p.pcap" --pcap-classic -e "$p"
done

# As the suite judges its tests: no kernel problem line in dmesg (the
# whole boot is this test's), and on a kernel with kmemleak no leak of
# magnet's.
PROBLEM_RE=$(awk '!/^[[:space:]]*(#|$)/ { printf "%s%s", sep, $0; sep = "|" }' ./kernel-problems)
if dmesg | grep -E "$PROBLEM_RE" >$out/err; then
	fail "kernel problems in dmesg: $(cat $out/err)"
fi
if [ -e /sys/kernel/debug/kmemleak ]; then
	sh ./kmemleak || fail "kmemleak: magnet leaked"
fi

for f in "$out"/*; do
	[ "$f" = $out/err ] && continue
	name=${f#"$out/"}
	echo "PCAP-BEGIN $name $(sha256sum <"$f" | cut -d' ' -f1)"
	base64 "$f"
	echo "PCAP-END $name"
done
