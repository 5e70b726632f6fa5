#!/bin/sh
# Remote clients authenticate with MUNGE: magnetd listening off loopback
# (192.0.2.1, an address of the guest's own lo: the guest has no NIC here,
# nothing leaves it), a munged of the test's own (munged.sh, Debian's,
# staged with its libraries) decoding for it. A TCP client on that address
# without a credential gets an ERR and nothing else, while records flow;
# a credential refused gets magnetd's reason (replayed, another service's,
# junk, expired); a credential for uid 65534 (munge -U, as root may) is uid 65534.
# magnet-cat and magnet-top run as uid 65534 (su) see over TCP, with the
# credential they mint, what they see on the Unix socket: every record of
# uid 65534's calls and none of root's, and its job but not root's.
. ./lib.sh

log=/tmp/t38-magnetd.log
conf=/tmp/t38.conf
md=/tmp/t38-munge
w=/tmp/t38
addr=192.0.2.1
cg=/sys/fs/cgroup
pid=
made_passwd=
made_group=

cleanup() {
	rc=$?
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	sh ./munged.sh stop $md
	ip addr del $addr/32 dev lo 2>/dev/null
	[ -n "$made_passwd" ] && rm -f /etc/passwd
	[ -n "$made_group" ] && rm -f /etc/group
	rmdir $cg/t38root $cg/t38user 2>/dev/null
	[ $rc = 0 ] || failed_log $log
}
trap cleanup EXIT

mkdir -p $w
load buf_size=4M
magnet-ctl probe add kprobe __x64_sys_getpid >/dev/null || fail "probe add"
sh ./munged.sh start $md || fail "munged did not start"
ip addr add $addr/32 dev lo || fail "cannot add $addr to lo"
cat >$conf <<EOF
listen = 0.0.0.0:8650
allow = $addr/32
munge_socket = $md/socket
EOF
magnetd -f -c $conf >$log 2>&1 &
pid=$!
magnetd_up $log

# Lines to magnetd at $addr; what it said within a second.
ask() { # line...
	{ printf '%s\n' "$@"; sleep 1; } | timeout 2 nc $addr 8650
}

cred_for() { # uid [payload]: a credential of that uid, minted as root may
	munge -S $md/socket -U "$1" -G "$1" -s "${2:-magnetd}" || fail "munge -U $1"
}

## No credential: an ERR (one per command, or one and the end), nothing
## else, while records flow.
mgtest fire 3 >/dev/null &
fire=$!
out=$(ask HELLO TOTALS PROBES 'SUBSCRIBE *' 'AGG tgid EVERY 100ms')
wait $fire
n=$(echo "$out" | grep -c .)
{ [ "$n" -ge 1 ] && [ "$n" -le 5 ]; } || fail "no credential: $n lines for 5 commands: $out"
echo "$out" | grep -v '^ERR ' && fail "no credential: a line that is no ERR: $out"
echo "$out" | head -n 1 | grep -qi auth || fail "no credential: the ERR does not say to authenticate: $out"
echo "no credential, 5 commands while getpid fires: $n lines, each an ERR: $(echo "$out" | head -n 1)"

## Refused, with magnetd's reason, and nothing served after it.
refused() { # what credential reason
	out=$(ask "AUTH MUNGE $2" TOTALS)
	case $(echo "$out" | head -n 1) in
	"ERR auth: $3"*) ;;
	*) fail "$1: $out" ;;
	esac
	# Then an ERR, or the connection closed (nothing else for it).
	n=$(echo "$out" | grep -c .)
	{ [ "$n" = 1 ] || { [ "$n" = 2 ] && echo "$out" | sed -n 2p | grep -q '^ERR'; }; } ||
		fail "$1: served after a refusal: $out"
	echo "$1: $(echo "$out" | head -n 1)"
}
cred=$(cred_for 65534)
out=$(ask "AUTH MUNGE $cred")
case $out in
"OK AUTH uid=65534 "*) ;;
*) fail "a credential for uid 65534: $out" ;;
esac
echo "a credential for uid 65534: $out"
refused "replayed" "$cred" "replayed credential"
refused "Slurm's payload" "$(cred_for 65534 slurm)" "credential not minted for magnetd"
refused "junk" "MUNGE:not base64!:" "not a MUNGE credential"
cred=$(munge -S $md/socket -t 1 -s magnetd)
sleep 2
refused "expired" "$cred" "expired credential"

## magnet-cat and magnet-top as uid 65534: over TCP (they mint their
## credential: magnetd is off loopback) as on the Unix socket.
if ! grep -q '^nobody:' /etc/passwd 2>/dev/null; then
	[ -e /etc/passwd ] || made_passwd=1
	echo 'nobody:x:65534:65534:nobody:/:/bin/sh' >>/etc/passwd
fi
if ! grep -q '^nogroup:' /etc/group 2>/dev/null; then
	[ -e /etc/group ] || made_group=1
	echo 'nogroup:x:65534:' >>/etc/group
fi
chmod 0777 $w
as_nobody() { su -p -s /bin/sh nobody -c "$*"; }

tcp="-s $addr:8650 --munge-socket $md/socket"
as_nobody "magnet-cat -j -t 15 'probe == __x64_sys_getpid' >$w/local.json 2>$w/local.err" &
c1=$!
as_nobody "magnet-cat -j -t 15 $tcp 'probe == __x64_sys_getpid' >$w/tcp.json 2>$w/tcp.err" &
c2=$!
sleep 3
sh -c "echo \$\$ >$w/rpid; exec mgtest fire-n 300" >/dev/null
as_nobody "echo \$\$ >$w/upid; exec mgtest fire-n 200" >/dev/null
wait $c1 || fail "magnet-cat as uid 65534, locally: $(cat $w/local.err)"
wait $c2 || fail "magnet-cat as uid 65534, over TCP: $(cat $w/tcp.err)"
# Each workload's process also calls getpid as su and sh start it (sh
# takes $$ at its start): at least 200, and the same on both connections.
rpid=$(cat $w/rpid) upid=$(cat $w/upid)
for v in local tcp; do
	mine=$(grep -c "\"tgid\":$upid," $w/$v.json)
	roots=$(grep -c "\"tgid\":$rpid," $w/$v.json)
	{ [ "$mine" -ge 200 ] && [ "$roots" = 0 ]; } ||
		fail "uid 65534's magnet-cat ($v): $mine of its 200 calls, $roots of root's 300 (want 0): $(cat $w/$v.err)"
	eval "mine_$v=$mine"
done
# shellcheck disable=SC2154 # set by the eval above
[ "$mine_local" = "$mine_tcp" ] ||
	fail "uid 65534's magnet-cat: $mine_local of its calls locally, $mine_tcp over TCP"
echo "uid 65534's magnet-cat, locally and over TCP with its credential: each $mine_tcp records of its process (200 calls and its start), 0 of root's 300"

mkdir -p $cg/t38root $cg/t38user
sh -c "echo \$\$ >$cg/t38root/cgroup.procs; exec mgtest fire 5" >/dev/null &
f1=$!
as_nobody "echo \$\$ >$w/upid2; sleep 1; exec mgtest fire 4" >/dev/null &
f2=$!
i=0
until [ -s $w/upid2 ]; do
	i=$((i + 1))
	[ $i -lt 50 ] || fail "uid 65534's workload did not start"
	sleep 0.1
done
cat $w/upid2 >$cg/t38user/cgroup.procs || fail "cannot move uid 65534's workload"
as_nobody "magnet-top -m -N -n 2 -d 1 >$w/top-local 2>&1" &
t1=$!
as_nobody "magnet-top -m -N -n 2 -d 1 $tcp >$w/top-tcp 2>&1" &
t2=$!
wait $t1 || fail "magnet-top as uid 65534, locally: $(cat $w/top-local)"
wait $t2 || fail "magnet-top as uid 65534, over TCP: $(cat $w/top-tcp)"
wait $f1 $f2
for v in local tcp; do
	grep -q /t38user $w/top-$v || fail "magnet-top ($v) as uid 65534 does not show its job: $(cat $w/top-$v)"
	grep -q /t38root $w/top-$v && fail "magnet-top ($v) as uid 65534 shows root's job: $(cat $w/top-$v)"
done
echo "uid 65534's magnet-top, locally and over TCP: its job /t38user, not root's /t38root"
