#!/bin/sh
# A shared node: uid 65534 with the default client (magnet-cat, no -s: the
# Unix socket) streams while root and uid 65534 each make a known number
# of probed calls in a job of their own. uid 65534 gets every record of its
# own calls and none of root's, no abstract id or argument that is a
# kernel address; its AGG and TOTALS name its job and not root's. Root's
# client gets both, addresses as they are. A TCP client without a
# credential is anonymous: no records. A set-uid thread (real uid 65534,
# effective 0) is not uid 65534's.
. ./lib.sh

log=/tmp/t39-magnetd.log
w=/tmp/t39
cg=/sys/fs/cgroup
pid=

cleanup() {
	rc=$?
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rmdir $cg/t39root $cg/t39user 2>/dev/null
	[ $rc = 0 ] || failed_log $log
}
trap cleanup EXIT

mkdir -p $w $cg/t39root $cg/t39user
load buf_size=4M
magnet-ctl probe add kprobe __x64_sys_getpid args 2 >/dev/null || fail "probe add"
magnetd -f >$log 2>&1 &
pid=$!
i=0
until [ -S /run/magnet/magnetd.sock ] && mdtest cmd HELLO >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "magnetd did not come up: $(cat $log)"
	sleep 0.1
done
[ "$(stat -c %a /run/magnet/magnetd.sock)" = 666 ] ||
	fail "socket mode $(stat -c %a /run/magnet/magnetd.sock), want 666"

# Who each is, as HELLO says.
asuser 65534 mdtest cmd HELLO | grep -q " access=own$" ||
	fail "uid 65534's HELLO: $(asuser 65534 mdtest cmd HELLO)"
mdtest cmd HELLO | grep -q " access=all$" || fail "root's HELLO: $(mdtest cmd HELLO)"
out=$(MDTEST_ADDR=127.0.0.1:8650 mdtest cmd HELLO 'SUBSCRIBE *' 'AGG pid')
echo "$out" | grep -q " access=none$" || fail "anonymous TCP HELLO: $out"
[ "$(echo "$out" | grep -c '^ERR not allowed')" = 2 ] || fail "anonymous TCP: $out"

# Workloads: each moves itself into its job, then becomes its user.
work() { # job uid n
	sh -c "echo \$\$ >$cg/$1/cgroup.procs && exec asuser $2 mgtest fire-n $3" >/dev/null
}
asuser 65534 magnet-cat -j -t 8 'probe == __x64_sys_getpid' >$w/user.json 2>$w/user.err &
c1=$!
magnet-cat -j -t 8 'probe == __x64_sys_getpid' >$w/root.json 2>$w/root.err &
c2=$!
sleep 1
work t39root 0 3000 &
r=$!
work t39user 65534 2000 &
u=$!
# A set-uid thread: real uid 65534, effective 0 (setresuid(65534, 0, 0)).
sh -c "echo \$\$ >$cg/t39user/cgroup.procs && exec mgtest setuid-fire 65534 500" >/dev/null ||
	fail "setuid-fire"
wait $r $u
wait $c1 || fail "uid 65534's magnet-cat: $(cat $w/user.err)"
wait $c2 || fail "root's magnet-cat: $(cat $w/root.err)"
cgu=$(stat -c %i $cg/t39user)
cgr=$(stat -c %i $cg/t39root)
mine=$(grep -c "\"cgroup\":$cgu," $w/user.json)
roots=$(grep -c "\"cgroup\":$cgr," $w/user.json)
kaddr=$(grep -c '"0xff' $w/user.json)
# Its 2000 calls, and those of sh and asuser before the exec (a few).
{ [ "$mine" -ge 2000 ] && [ "$mine" -lt 2100 ] && [ "$roots" = 0 ] && [ "$kaddr" = 0 ]; } ||
	fail "uid 65534 got $mine of its 2000 calls (+ its start), $roots of root's 3000, $kaddr kernel addresses: $(grep -m 1 '"0xff' $w/user.json)"
seteuid=$(grep -c '"comm":"mgtest"' $w/user.json)
[ "$seteuid" = 2000 ] || fail "uid 65534 got $seteuid records of mgtest, want its 2000 (none of the set-uid 500)"
rmine=$(grep -c "\"cgroup\":$cgu," $w/root.json)
rroot=$(grep -c "\"cgroup\":$cgr," $w/root.json)
raddr=$(grep -c '"abstract":"0xff' $w/root.json)
{ [ "$rroot" -ge 3000 ] && [ "$rmine" -ge 2500 ] && [ "$raddr" -ge 5500 ]; } ||
	fail "root got $rroot of root's, $rmine of the job's 2500, $raddr abstract ids as addresses"
echo "uid 65534: $mine records of its job (2000 calls and its start), 0 of root's 3000, 0 of its set-uid thread's 500, no kernel address; root: $rroot + $rmine, $raddr addresses as they are"

# AGG and TOTALS as uid 65534: its job, not root's.
( sleep 1; work t39user 65534 300; work t39root 0 300 ) &
wl=$!
asuser 65534 mdtest cmd 'AGG cgroup EVERY 500ms' >$w/agg || fail "AGG as uid 65534"
wait $wl
grep -q "^E $cgu .* /t39user$" $w/agg || fail "uid 65534's AGG cgroup lacks its job: $(cat $w/agg)"
grep -q "t39root" $w/agg && fail "uid 65534's AGG cgroup names root's job: $(cat $w/agg)"
asuser 65534 mdtest cmd TOTALS >$w/totals || fail "TOTALS as uid 65534"
grep -q "^job $cgu /t39user " $w/totals || fail "uid 65534's TOTALS lacks its job: $(cat $w/totals)"
grep -q "t39root\|^job 0 other" $w/totals && fail "uid 65534's TOTALS names root's job or other: $(cat $w/totals)"
mdtest cmd TOTALS | grep -q "^job $cgr /t39root " || fail "root's TOTALS lacks root's job"
echo "uid 65534's AGG and TOTALS: /t39user only; root's TOTALS: both"
