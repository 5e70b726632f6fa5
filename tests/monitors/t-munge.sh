#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Remote clients of the node's magnetd authenticate with MUNGE: the node
# and this host run munged of their own with one key (lib.sh), and the
# node's magnetd sees this host's connections, forwarded by QEMU, from
# 10.0.2.2, not loopback. Without a credential a client gets an ERR and
# nothing else, records flowing or not; magnet-cat, which sees its
# server on loopback here, is refused unless -M, and with -M (a credential
# of this host's munged) streams records; a credential minted here for
# uid 65534 is uid 65534 there; refused, with magnetd's reason: a
# credential replayed, minted with another key, or minted for another
# service (Slurm's payload). (Expiry is t-38's, in one clock: the guest's
# runs its own time.)
set -euo pipefail
. tests/monitors/lib.sh

cat=$PWD/build/tools/magnet-cat
[[ -x $cat ]] || mon_fail "$cat not built (make)"
export PATH=$PATH:/usr/sbin

# Lines to magnetd on one connection; its reply lines, until it is quiet
# for 2 s (or closes).
ask() { # line...
	local fd line
	exec {fd}<>"/dev/tcp/127.0.0.1/$MON_MAGNETD_PORT" || return 1
	printf '%s\n' "$@" >&"$fd"
	while IFS= read -r -t 2 line <&"$fd"; do
		printf '%s\n' "${line%$'\r'}"
	done
	exec {fd}>&-
}

mon_boot

## No credential: an ERR (one per command, or one and the end), nothing
## else, while records flow.
mon_work rate a 100 4 >/dev/null
out=$(ask HELLO TOTALS PROBES 'SUBSCRIBE *' 'AGG tgid EVERY 100ms')
n=$(grep -c . <<<"$out" || true)
((n >= 1 && n <= 5)) || mon_fail "no credential: $n reply lines to 5 commands: $out"
grep -v '^ERR ' <<<"$out" && mon_fail "no credential: a line that is no ERR: $out"
grep -qi auth <<<"$(head -n 1 <<<"$out")" || mon_fail "no credential: the ERR does not say to authenticate: $out"
mon_log "no credential, 5 commands while records flow: $n lines, each an ERR: $(head -n 1 <<<"$out")"

## magnet-cat: here its server is on loopback, so no credential without -M.
rc=0
err=$("$cat" -s "127.0.0.1:$MON_MAGNETD_PORT" -n 1 2>&1 >/dev/null) || rc=$?
[[ $rc == 2 && $err == *"ERR "* ]] || mon_fail "magnet-cat without -M: exit $rc, $err"
mon_log "magnet-cat without -M: $err"
mon_work rate a 100 5 >/dev/null
out=$("$cat" -M --munge-socket "$MON_MUNGE_SOCKET" -s "127.0.0.1:$MON_MAGNETD_PORT" \
	-n 20 -t 30 'probe == __x64_sys_getppid' 2>"$MON_DIR/cat.err") ||
	mon_fail "magnet-cat -M: $(cat "$MON_DIR/cat.err")"
n=$(grep -c '__x64_sys_getppid' <<<"$out" || true)
[[ $n == 20 ]] || mon_fail "magnet-cat -M: $n records, want 20: $(cat "$MON_DIR/cat.err")"
mon_log "magnet-cat -M: 20 records; $(cat "$MON_DIR/cat.err")"

## The credential's uid is the minter's, from node to node.
cred=$(setpriv --reuid=65534 --regid=65534 --clear-groups munge -S "$MON_MUNGE_SOCKET" -s magnetd)
out=$(ask "AUTH MUNGE $cred")
[[ $out == "OK AUTH uid=65534 "* ]] || mon_fail "a credential of uid 65534: $out"
mon_log "minted here by uid 65534: $out"
cred=$(mon_munge_cred)
out=$(ask "AUTH MUNGE $cred")
[[ $out == "OK AUTH uid=$(id -u) "* ]] || mon_fail "a credential of uid $(id -u): $out"

## Refused, each with magnetd's reason, and nothing else served.
refused() { # what credential want
	local out
	out=$(ask "AUTH MUNGE $2" TOTALS)
	[[ $(head -n 1 <<<"$out") == "ERR auth: $3"* ]] || mon_fail "$1: $out"
	# Then an ERR, or the connection closed: nothing else for it.
	[[ $(wc -l <<<"$out") == 1 || ($(sed -n 2p <<<"$out") == ERR* && $(wc -l <<<"$out") == 2) ]] ||
		mon_fail "$1: TOTALS served after a refusal: $out"
	mon_log "$1: $(head -n 1 <<<"$out")"
}
refused "replayed" "$cred" "replayed credential"
refused "Slurm's payload" "$(munge -S "$MON_MUNGE_SOCKET" -s slurm)" "credential not minted for magnetd"
sh tests/vm/munged.sh start "$MON_DIR/other" || mon_fail "a second munged did not start"
mon_at_exit "sh tests/vm/munged.sh stop '$MON_DIR/other'"
refused "another key" "$(munge -S "$MON_DIR/other/socket" -s magnetd)" "invalid credential"
rc=0
err=$("$cat" -M --munge-socket "$MON_DIR/other/socket" -s "127.0.0.1:$MON_MAGNETD_PORT" -n 1 2>&1 >/dev/null) || rc=$?
[[ $rc == 2 && $err == *"refused MUNGE authentication: auth: invalid credential"* ]] ||
	mon_fail "magnet-cat -M, another key: exit $rc, $err"
mon_log "$err"
echo "ok - t-munge"
