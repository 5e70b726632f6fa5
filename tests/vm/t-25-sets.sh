#!/bin/sh
# Named probe sets (magnet-ctl probe add set): udp-journey follows each UDP
# datagram from the socket through IP and the device queue and back up, one
# record per datagram per layer, the same skb on the send side; tcp-traffic
# and net-rx load and record; a set goes all or none; del set removes it.
. ./lib.sh
lo=$(cat /sys/class/net/lo/ifindex) || fail "no lo"
ip link set lo up
load
hits() { # probe name: its hit count in the probes file
	awk -F '\t' -v n="$1" '$3 == n { print $5 }' /sys/kernel/debug/magnet/probes
}

magnet-ctl probe add set udp-journey >/tmp/out || fail "add set udp-journey"
grep -qx "udp-journey: 6 probes" /tmp/out || fail "add set said: $(cat /tmp/out)"
[ "$(magnet-ctl probe list | grep -c '^[0-9]*: udp-journey/')" = 6 ] || fail "6 probes named udp-journey/: $(magnet-ctl probe list)"
s0=$(hits udp_sendmsg)
j=udp-journey
nltest skb-udp 20 100 128 $j/ip_send_skb:? $j/ip_finish_output2:out:"$lo":0:1 \
	$j/__dev_queue_xmit:out:"$lo":14:1 $j/ip_local_deliver:in:"$lo":0:1 \
	$j/udp_rcv:in:"$lo":-20:1 \
	same=$j/ip_send_skb,$j/ip_finish_output2,$j/__dev_queue_xmit >/tmp/out ||
	fail "udp-journey over lo: $(cat /tmp/out)"
cat /tmp/out
grep -q "skb: $j/ip_send_skb recorded 20 of 20 " /tmp/out || fail "ip_send_skb did not see every datagram"
s1=$(hits udp_sendmsg)
[ $((s1 - s0)) -ge 20 ] || fail "udp_sendmsg: $((s1 - s0)) hits for 20 datagrams"
echo "udp-journey: each of 20 datagrams recorded once at each of 5 skb layers, udp_sendmsg hit $((s1 - s0)) times"

# All or none: a member's name taken makes the whole set fail, undone.
magnet-ctl probe del set udp-journey || fail "del set udp-journey"
[ -z "$(magnet-ctl probe list)" ] || fail "left after del set: $(magnet-ctl probe list)"
magnet-ctl probe add kprobe ip_rcv name net-rx/tcp_v4_rcv >/dev/null || fail "add a squatter"
magnet-ctl probe add set net-rx 2>/tmp/err
[ $? = 2 ] || fail "add set net-rx with a member's name taken: want exit 2"
grep -q "tcp_v4_rcv" /tmp/err || fail "the refusal does not name the member: $(cat /tmp/err)"
[ "$(magnet-ctl probe list | grep -c "^[0-9]*: ")" = 1 ] || fail "a failed set left probes: $(magnet-ctl probe list)"
magnet-ctl probe del net-rx/tcp_v4_rcv || fail "del the squatter"
echo "net-rx with a member's name taken: refused, nothing left"

# tcp-traffic: connects, sends and reads of real TCP over lo.
magnet-ctl probe add set tcp-traffic >/dev/null || fail "add set tcp-traffic"
magnet-ctl probe add set net-rx >/dev/null || fail "add set net-rx"
c0=$(hits tcp_v4_connect) t0=$(hits tcp_sendmsg) r0=$(hits tcp_v4_rcv)
mgtest sock 20 || fail "tcp-traffic's tcp_sendmsg: sock records"
nltest skb-udp 5 100 128 net-rx/udp_rcv:in:"$lo":-20:1 \
	net-rx/ip_local_deliver:in:"$lo":0:1 >/dev/null || fail "net-rx: UDP over lo"
c1=$(hits tcp_v4_connect) t1=$(hits tcp_sendmsg) r1=$(hits tcp_v4_rcv)
if [ $((c1 - c0)) -lt 1 ] || [ $((t1 - t0)) -lt 20 ] || [ $((r1 - r0)) -lt 20 ]; then
	fail "tcp-traffic/net-rx hits: connects $((c1 - c0)), sends $((t1 - t0)), tcp_v4_rcv $((r1 - r0))"
fi
magnet-ctl probe sets -j | grep -q '"set":"net-rx"' || fail "probe sets -j"
magnet-ctl probe del set tcp-traffic || fail "del set tcp-traffic"
magnet-ctl probe del set net-rx || fail "del set net-rx"
[ -z "$(magnet-ctl probe list)" ] || fail "left: $(magnet-ctl probe list)"
echo "tcp-traffic and net-rx: connects $((c1 - c0)), sends $((t1 - t0)), tcp_v4_rcv $((r1 - r0))"
unload
