#!/bin/sh
# Tracepoint probes: the kernel's stable events, named SUBSYSTEM:EVENT.
# Raw arguments (raw_syscalls:sys_enter: the syscall number of each of a
# job's N getpid calls), the switch handler on sched:sched_switch against
# the kernel's own count of two pinned tasks' switches, the skb handler on
# net:net_dev_queue and net:netif_receive_skb against known datagrams,
# arming, filters, probes= at load, the refusals, deletion and unload
# while the tracepoints fire.
. ./lib.sh
TR=/sys/kernel/tracing
D=/sys/kernel/debug/magnet
lo=$(cat /sys/class/net/lo/ifindex) || fail "no lo"
ip link set lo up

# probes= at load: the type, the target, every argument by default.
load probes=tracepoint:sched:sched_switch,tracepoint:raw_syscalls:sys_enter:1
awk -F'\t' '$2 == "tracepoint" && $3 == "sched:sched_switch" && $8 == "sched:sched_switch"' $D/probes |
	grep -q . || fail "magnet/probes: $(cat $D/probes)"
nargs=$(awk -F'\t' '$3 == "sched:sched_switch" { print $4 }' $D/probes)
case $(uname -r) in
5.*) want=3 ;;	# preempt, prev, next
*) want=4 ;;	# and prev_state (5.18)
esac
[ "$nargs" = $want ] || fail "sched_switch records $nargs arguments, want $want"
awk -F'\t' '$3 == "raw_syscalls:sys_enter" && $4 == 1' $D/probes | grep -q . ||
	fail "tracepoint:raw_syscalls:sys_enter:1: $(cat $D/probes)"
sleep 0.2
[ "$(counter sched:sched_switch recorded)" -gt 0 ] || fail "sched_switch recorded nothing"
unload
if insmod /magnet/magnet.ko probes=tracepoint:sched:no_such_event 2>/dev/null; then
	fail "probes= with an unknown event loaded"
fi
dmesg | grep -q "probe 'tracepoint:sched:no_such_event': no such event" ||
	fail "no message for an unknown event: $(dmesg | tail -n 3)"

load buf_size=4M
# The refusals, each with its message: STATUS (1 usage, 2 the kernel's) MESSAGE ARGS...
refused() {
	st=$1 msg=$2
	shift 2
	magnet-ctl probe add tracepoint "$@" 2>/tmp/err >/dev/null
	rc=$?
	[ $rc = "$st" ] || fail "probe add tracepoint $*: exit $rc, want $st ($(cat /tmp/err))"
	grep -q "$msg" /tmp/err || fail "probe add tracepoint $*: $(cat /tmp/err), want '$msg'"
}
refused 1 "expected SUBSYSTEM:EVENT" sched_switch
refused 1 "takes no +OFFSET" sched:sched_switch+4
refused 2 "no such event" sched:no_such_event
refused 2 "no such event" net:sched_switch			# the wrong subsystem
refused 2 "handler switch takes the tracepoint sched:sched_switch" sched:sched_wakeup handler switch
refused 2 "handler sock takes a kprobe or fentry" net:net_dev_queue handler sock
refused 2 "needs a function or tracepoint with a struct sk_buff" sched:sched_switch handler skb
refused 2 "fewer arguments" net:net_dev_queue args 2
refused 2 "an argument the tracepoint has" net:net_dev_queue args 1 capture 8@3
if [ -d $TR/events/syscalls ]; then
	refused 2 "no tracepoint" syscalls:sys_enter_getpid
fi
grep -q tracepoint $D/probes && fail "a refused tracepoint probe stayed: $(cat $D/probes)"

# Raw arguments: sys_enter(regs, id), id a long. A job's N getpid calls are
# N records whose second argument is getpid's number (39 on x86_64).
mkdir -p /sys/fs/cgroup/tp
# (added disarmed: armed once the filter is on, or magnet-ctl's own calls count)
magnet-ctl probe add tracepoint raw_syscalls:sys_enter name tp-sys disabled >/dev/null ||
	fail "add sys_enter"
magnet-ctl probe show tp-sys | grep -q "tracepoint raw_syscalls:sys_enter" ||
	fail "probe show: $(magnet-ctl probe show tp-sys)"
magnet-ctl -j probe list | grep -q '"type":"tracepoint"' || fail "JSON list: $(magnet-ctl -j probe list)"
magnet-ctl filter add tp-sys cgroup /sys/fs/cgroup/tp >/dev/null || fail "filter add tp-sys"
magnet-ctl probe enable tp-sys || fail "enable tp-sys"
sh -c 'echo $$ > /sys/fs/cgroup/tp/cgroup.procs; exec mgtest fire-n 300' >/dev/null || fail "fire-n"
magnet-read -o /tmp/sys.mgt -t 1 2>/tmp/err || fail "magnet-read: $(cat /tmp/err)"
magnet-dump -j -e tp-sys /tmp/sys.mgt >/tmp/sys.json || fail "magnet-dump"
n=$(grep -c '"args":\["0x[0-9a-f]*","0x27"\]' /tmp/sys.json)
[ "$n" = 300 ] || fail "sys_enter: $n getpid records of 300: $(head -n 3 /tmp/sys.json)"
echo "tracepoint: raw_syscalls:sys_enter: 300 of 300 getpid calls, id 39 in argument 1"

# Disarmed: nothing counted; armed again. Deleted.
magnet-ctl probe disable tp-sys || fail "disable"
h0=$(counter tp-sys hits)
sh -c 'echo $$ > /sys/fs/cgroup/tp/cgroup.procs; exec mgtest fire-n 100' >/dev/null || fail "fire-n"
[ "$(counter tp-sys hits)" = "$h0" ] || fail "a disabled tracepoint probe counted hits"
magnet-ctl probe enable tp-sys || fail "enable"
r0=$(counter tp-sys recorded)
sh -c 'echo $$ > /sys/fs/cgroup/tp/cgroup.procs; exec mgtest fire-n 100' >/dev/null || fail "fire-n"
r1=$(counter tp-sys recorded)
# (every syscall of the job: its 100 getpid calls and the rest)
[ $((r1 - r0)) -ge 100 ] || fail "enabled again: $((r1 - r0)) recorded for 100 getpid calls"
magnet-ctl probe del tp-sys || fail "del tp-sys"

# The switch handler against the kernel's own counts: every switch out of
# swping and swpong is one record with it as prev (the voluntary ones not
# preempted, with a sleeping state), and as many with it as next.
magnet-ctl probe add tracepoint sched:sched_switch handler switch name tp-switch >/dev/null ||
	fail "add sched_switch handler switch"
magnet-read -o /tmp/sw.mgt 2>/tmp/sw.err &
rpid=$!
written /tmp/sw.mgt /tmp/sw.err "magnet-read wrote no header"
swtest 500 >/tmp/sw.out || fail "swtest"
sleep 0.5
kill -INT $rpid
wait $rpid || fail "magnet-read: $(cat /tmp/sw.err)"
grep -q "lost full=0 too_big=0 nesting=0" /tmp/sw.err || fail "records lost: $(cat /tmp/sw.err)"
magnet-dump -j -e tp-switch /tmp/sw.mgt >/tmp/sw.json || fail "magnet-dump"
while read -r name pid vol invol; do
	awk -v pid="$pid" -v name="$name" '
	function num(k,  m) { if (!match($0, "\"" k "\":[0-9]+")) return -1
		m = substr($0, RSTART, RLENGTH); sub(/.*:/, "", m); return m + 0 }
	num("prev_pid") == pid {
		out++
		if (index($0, "\"preempt\":false") && num("prev_state") != 0) vol++
		# (swtest until the child names itself)
		if (!index($0, "\"prev_comm\":\"" name "\"") && !index($0, "\"prev_comm\":\"swtest\"")) badcomm++
		if (num("pid") != pid) badhdr++
	}
	num("next_pid") == pid { in_++
		if (!index($0, "\"next_comm\":\"" name "\"") && !index($0, "\"next_comm\":\"swtest\"")) badcomm++
	}
	END { print out + 0, vol + 0, in_ + 0, badcomm + 0, badhdr + 0 }' /tmp/sw.json >/tmp/sw.count
	read -r out v in_ badcomm badhdr </tmp/sw.count
	echo "tracepoint: sched_switch: $name: out $out (kernel: $((vol + invol))), voluntary $v ($vol), in $in_"
	[ "$out" = $((vol + invol)) ] || fail "$name: $out switches out recorded, the kernel counted $vol + $invol"
	[ "$v" = "$vol" ] || fail "$name: $v voluntary switches recorded, the kernel counted $vol"
	[ "$in_" = "$out" ] || fail "$name: switched in $in_ times, out $out"
	[ "$badcomm $badhdr" = "0 0" ] || fail "$name: $badcomm wrong comms, $badhdr wrong header pids"
	# On one CPU the token moves only while its holder is switched out: at
	# least once per pass (voluntary or not: preempted by the task it
	# woke, as on PREEMPT_RT).
	[ "$out" -ge 500 ] || fail "$name: only $out switches out for 500 passes"
done </tmp/sw.out
[ "$(wc -l </tmp/sw.out)" = 2 ] || fail "swtest: $(cat /tmp/sw.out)"

# Deleted while it fires on every CPU: the unregistration waits for them.
sh -c 'while :; do :; done' &
spin=$!
magnet-ctl probe del tp-switch || fail "del tp-switch"
kill $spin

# Packets: the skb handler on the network tracepoints, UDP over lo. Sent:
# net_dev_queue sees the link header pushed (IP 14 bytes in); received:
# netif_receive_skb sees it pulled, the IP header at skb->data.
magnet-ctl probe add tracepoint net:net_dev_queue handler skb capture 128 name tp-xmit >/dev/null ||
	fail "add net_dev_queue"
magnet-ctl probe add tracepoint net:netif_receive_skb handler skb capture 128 name tp-recv >/dev/null ||
	fail "add netif_receive_skb"
nltest skb-udp 20 100 128 tp-xmit:out:"$lo":14:1 tp-recv:in:"$lo":0:1 ||
	fail "UDP over lo on the net tracepoints"
echo "tracepoint: net:net_dev_queue and net:netif_receive_skb: 20 datagrams each, checked"

# The tracepoint sets: all or none, named SET/SUBSYSTEM:EVENT.
magnet-ctl probe add set net-dev >/dev/null || fail "probe add set net-dev"
magnet-ctl probe add set sched >/dev/null || fail "probe add set sched"
for p in net-dev/net:net_dev_queue net-dev/net:netif_receive_skb sched/sched:sched_switch; do
	magnet-ctl probe show "$p" | grep -q "tracepoint" || fail "set member $p: $(magnet-ctl probe show "$p")"
done
magnet-ctl probe show sched/sched:sched_switch | grep -q "handler switch" ||
	fail "sched: $(magnet-ctl probe show sched/sched:sched_switch)"
magnet-ctl probe del set net-dev || fail "probe del set net-dev"
magnet-ctl probe del set sched || fail "probe del set sched"

# Unload with tracepoint probes armed and firing (one wait for all).
magnet-ctl probe add tracepoint sched:sched_switch >/dev/null || fail "add sched_switch"
sh -c 'while :; do :; done' &
spin=$!
unload
kill $spin
echo "tracepoint: arguments, switch and skb handlers, refusals, arming, deletion, unload"
