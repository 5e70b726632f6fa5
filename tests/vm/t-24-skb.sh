#!/bin/sh
# The "skb" named handler follows a packet through the stack: UDP datagrams
# over lo, recorded on the send path (ip_output, ip_finish_output2,
# __dev_queue_xmit) and the receive path (ip_rcv, udp_rcv), each record
# checked against the datagram sent: headers, payload bytes, len, device,
# direction, the same skb across layers. Also paged (large datagram) and
# frag_list (IP fragments reassembled) packets, and the refusals.
. ./lib.sh
lo=$(cat /sys/class/net/lo/ifindex) || fail "no lo"
ip link set lo up
load
nltest skb-check || fail "skb handler refusals"
magnet-ctl probe add kprobe ip_rcv capture 64@0 handler skb 2>/tmp/err
[ $? = 2 ] || fail "magnet-ctl: handler skb with capture @ARG: want the kernel's refusal (exit 2)"
grep -q CAPTURE_ARG /tmp/err || fail "refusal lacks the kernel's message: $(cat /tmp/err)"

add() { # symbol capture
	magnet-ctl probe add kprobe "$1" handler skb ${2:+capture "$2"} >/dev/null ||
		fail "magnet-ctl probe add kprobe $1 handler skb capture $2"
}
del() {
	for p; do magnet-ctl probe del "$p" || fail "probe del $p"; done
}

# Send: ip_output has no device yet (it sets skb->dev), the later layers do;
# the IP header is at skb->data until the link header is pushed before it.
# Receive: __netif_rx (loopback_xmit hands the skb to it, link header
# pulled, skb_iif not yet set; netif_rx before 5.18) and ip_rcv have the
# IP header at skb->data, udp_rcv after it.
rx=__netif_rx
awk '$3 == "__netif_rx" { f = 1 } END { exit !f }' /proc/kallsyms || rx=netif_rx
for p in ip_output ip_finish_output2 __dev_queue_xmit "$rx" ip_rcv udp_rcv; do add $p 128; done
magnet-ctl probe show ip_output | grep -q "capture 128 handler skb" ||
	fail "probe show: $(magnet-ctl probe show ip_output)"
nltest skb-udp 20 100 128 ip_output:out:0:0:1 ip_finish_output2:out:"$lo":0:1 \
	__dev_queue_xmit:out:"$lo":14:1 $rx:in:"$lo":0:1 ip_rcv:in:"$lo":0:1 \
	udp_rcv:in:"$lo":-20:1 \
	same=ip_output,ip_finish_output2,__dev_queue_xmit || fail "UDP over lo, capture 128"

# Filters apply before the record: a tgid no datagram is sent from.
magnet-ctl filter add ip_output tgid 1 >/dev/null || fail "filter add"
nltest skb-udp 5 100 128 ip_output:out:0:0:0 udp_rcv:in:"$lo":-20:1 || fail "filtered"
del ip_output ip_finish_output2 __dev_queue_xmit $rx ip_rcv udp_rcv

# Metadata only (no capture): 56-byte records.
add ip_rcv
nltest skb-udp 5 100 0 ip_rcv:in:"$lo":0:1 || fail "capture 0"
del ip_rcv

# A 20000-byte datagram is paged on lo (SG, larger than one allocation): only
# the headers are linear, the payload sits in page fragments.
add ip_output 4072
add udp_rcv 4072
nltest skb-udp 5 20000 4072 ip_output:out:0:0:1 udp_rcv:in:"$lo":-20:1 \
	same=ip_output,udp_rcv || fail "paged datagram"

# MTU 1500: ip_output sees one skb whose frag_list holds the rest of the
# datagram; udp_rcv sees the fragments reassembled, also as a frag_list.
ip link set lo mtu 1500 || fail "lo mtu 1500"
nltest skb-udp 5 3000 4072 ip_output:out:0:0:1 udp_rcv:in:"$lo":-20:1 ||
	{ ip link set lo mtu 65536; fail "fragmented datagram"; }
ip link set lo mtu 65536
del ip_output udp_rcv

# User space's own validation (lib/record.c) accepts what the module writes:
# magnet-read checks every record it drains, magnet-dump again. ping's echo
# requests and replies go out and come in over lo: 6 of each.
add ip_output 100
add ip_rcv 100
ping -c 3 127.0.0.1 >/dev/null || fail "ping 127.0.0.1"
magnet-read -o /tmp/skb.trace -t 1 2>/tmp/err || fail "magnet-read: $(cat /tmp/err)"
magnet-dump /tmp/skb.trace >/tmp/skb.txt 2>/tmp/err || fail "magnet-dump: $(cat /tmp/err)"
for p in ip_output ip_rcv; do
	n=$(grep -c " $p(" /tmp/skb.txt)
	[ "$n" -ge 6 ] || fail "magnet-dump shows $n $p records, want at least 6: $(head -n 5 /tmp/skb.txt)"
	echo "magnet-read and magnet-dump took $n $p records"
done
del ip_output ip_rcv
unload
