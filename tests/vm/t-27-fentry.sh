#!/bin/sh
# fentry probes: function entry through an ftrace_ops of the probe's own.
# The same records as a kprobe's (exact counts, pid/tgid, arguments, the
# sock handler), hooked by ftrace and not by kprobes, armed and disarmed,
# next to a kprobe on the same function, the control plane's refusals, and
# a probe that recurses into itself: its extra calls count as missed.
. ./lib.sh
TR=/sys/kernel/tracing

# ftrace hooks the function; kprobes knows nothing of it. getpid() is
# __do_sys_getpid: Debian's __x64_sys_* wrappers have no ftrace call site
# (kprobes take them, fentry refuses them: tested below).
hooked() { # function: ftrace calls an ops at its entry
	grep -q "^$1 " $TR/enabled_functions
}

load probes=fentry:__do_sys_getpid,fentry:vfs_read:3,kretprobe:vfs_read:3
awk -F'\t' '$2 == "fentry" && $3 == "__do_sys_getpid"' /sys/kernel/debug/magnet/probes | grep -q . ||
	fail "magnet/probes: $(cat /sys/kernel/debug/magnet/probes)"
hooked __do_sys_getpid || fail "not in enabled_functions: $(cat $TR/enabled_functions)"
if grep -q "__do_sys_getpid" /sys/kernel/debug/kprobes/list; then
	fail "an fentry probe went through kprobes: $(cat /sys/kernel/debug/kprobes/list)"
fi
MGTEST_ENTRY=fentry MGTEST_GETPID=__do_sys_getpid mgtest getpid 1000 || fail "getpid records of an fentry probe"
MGTEST_ENTRY=fentry mgtest args 200 || fail "vfs_read arguments of an fentry probe"
unload
hooked __do_sys_getpid && fail "still hooked after rmmod: $(cat $TR/enabled_functions)"

load
# The control plane: type fentry, its refusals, each with its message.
magnet-ctl probe add fentry __do_sys_getpid args 1 >/dev/null || fail "probe add fentry"
magnet-ctl -j probe list | grep -q '"type":"fentry"' || fail "JSON list: $(magnet-ctl -j probe list)"
# refused STATUS MESSAGE FUNCTION: "probe add fentry FUNCTION" exits with
# STATUS (1 usage, 2 the kernel's refusal) and says MESSAGE.
refused() {
	magnet-ctl probe add fentry "$3" 2>/tmp/err
	rc=$?
	[ $rc = "$1" ] || fail "probe add fentry $3: exit $rc, want $1"
	grep -q "$2" /tmp/err || fail "probe add fentry $3: $(cat /tmp/err), want '$2'"
}
refused 1 "takes no +OFFSET" vfs_read+4
refused 2 "not a pattern" 'vfs_*'
refused 2 "no traceable function" no_such_function_xyz
refused 2 "no traceable function" mg_probe_pass	# magnet's record path: no call sites
refused 2 "no traceable function" __x64_sys_getpid	# nor have Debian's syscall wrappers
refused 2 "name exists" __do_sys_getpid

# Next to a kprobe on the same function, both see every call of a job
# (magnet-ctl's libnl calls getpid too: the filters leave it out).
magnet-ctl probe add kprobe __do_sys_getpid name kp-getpid >/dev/null || fail "kprobe next to it"
mkdir -p /sys/fs/cgroup/fentry
for p in __do_sys_getpid kp-getpid; do
	magnet-ctl filter add $p cgroup /sys/fs/cgroup/fentry >/dev/null || fail "filter add $p"
done
fire() { # N: exactly N getpid calls in the job
	sh -c 'echo $$ > /sys/fs/cgroup/fentry/cgroup.procs; exec mgtest fire-n "$1"' sh "$1" >/dev/null ||
		fail "mgtest fire-n $1"
}
r0=$(counter __do_sys_getpid recorded) k0=$(counter kp-getpid recorded)
fire 500
r1=$(counter __do_sys_getpid recorded) k1=$(counter kp-getpid recorded)
[ "$((r1 - r0)) $((k1 - k0))" = "500 500" ] ||
	fail "fentry recorded $((r1 - r0)), kprobe $((k1 - k0)) of 500 calls"
magnet-ctl probe del kp-getpid || fail "probe del kp-getpid"

# Disabled: the function leaves ftrace and nothing is counted; enabled again.
magnet-ctl probe disable __do_sys_getpid || fail "probe disable"
hooked __do_sys_getpid && fail "disabled but hooked: $(cat $TR/enabled_functions)"
h0=$(counter __do_sys_getpid hits)
fire 300
[ "$(counter __do_sys_getpid hits)" = "$h0" ] || fail "a disabled fentry probe counted hits"
magnet-ctl probe enable __do_sys_getpid || fail "probe enable"
hooked __do_sys_getpid || fail "enabled but not hooked"
fire 300
[ $(($(counter __do_sys_getpid recorded) - r1)) = 300 ] ||
	fail "enabled again: recorded $(($(counter __do_sys_getpid recorded) - r1)), want 300"
magnet-ctl probe del __do_sys_getpid || fail "probe del"
hooked __do_sys_getpid && fail "deleted but hooked"

# The sock handler on an fentry probe.
magnet-ctl probe add fentry tcp_sendmsg handler sock >/dev/null || fail "fentry tcp_sendmsg handler sock"
MGTEST_ENTRY=fentry mgtest sock 50 || fail "sock records of an fentry probe"
magnet-ctl probe del tcp_sendmsg || fail "del tcp_sendmsg"

# Recursion: each vfs_read record copies 8 bytes at its struct file * with
# copy_from_kernel_nofault(); a probe there that captures too calls itself.
# ftrace lets one nested call through per context (for an interrupt that
# arrives before preempt_count says so), the next is missed: each of dd's
# 400 reads costs the inner probe at least one miss, and never a lockup.
grep -qx "copy_from_kernel_nofault" $TR/available_filter_functions ||
	fail "copy_from_kernel_nofault is not traceable on $(uname -r)"
magnet-ctl probe add fentry vfs_read capture 8@0 >/dev/null || fail "vfs_read capture 8@0"
magnet-ctl probe add fentry copy_from_kernel_nofault capture 8@0 >/dev/null ||
	fail "fentry on the capture's copy"
m0=$(counter copy_from_kernel_nofault missed) r0=$(counter vfs_read recorded)
dd if=/dev/zero of=/dev/null bs=1 count=400 2>/dev/null || fail "dd"
m1=$(counter copy_from_kernel_nofault missed) r1=$(counter vfs_read recorded)
[ $((r1 - r0)) -ge 400 ] || fail "recursion: vfs_read recorded $((r1 - r0)) for 400 reads"
[ $((m1 - m0)) -ge 400 ] || fail "recursion: $((m1 - m0)) missed for 400 reads, want >= 400"
awk -F'\t' -v m="$m1" '$3 == "copy_from_kernel_nofault" && $6 >= m' /sys/kernel/debug/magnet/probes |
	grep -q . || fail "magnet/probes does not show the misses: $(cat /sys/kernel/debug/magnet/probes)"
echo "fentry: recursion: $((m1 - m0)) missed, $((r1 - r0)) vfs_read records for 400 reads"
unload
hooked copy_from_kernel_nofault && fail "still hooked after rmmod"
echo "fentry: records, refusals, arming, kprobe alongside, sock handler, recursion"
