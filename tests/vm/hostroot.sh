#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/vm/hostroot.sh [RUN-OPTION...] - tests/vm/run --root host, in one
# boot (make vm-check-hostroot): the guest runs the host's installed
# system, read-only, writable in its own memory. In the guest
# (tests/vm/hostroot-guest.sh, by the host's dash): / is an overlay;
# hostname and /etc/hosts are the harness's; --file reaches /etc, /tmp and
# /magnet; /run is fresh; writes to /usr/local and /etc/hosts work; the
# host's users resolve; Debian's munged runs as user munge with a key of
# its own and decodes munge's credential; python3 runs with its standard
# library; gmond daemonizes as nobody and serves its XML; magnet.ko loads
# with Debian's insmod and a Debian module with modprobe. Here: every
# check passed, and what the guest wrote never reached the host's files.
# RUN-OPTIONs go to tests/vm/run (e.g. --kroot DIR).
#
# Exit status: 0 all good, 1 otherwise.

set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
failures=0

fail() { echo "hostroot: FAIL: $*" >&2; failures=$((failures + 1)); }

token=$$-$RANDOM
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "file $token" >"$tmp/f"
hosts_before=$(sha256sum /etc/hosts)

rc=0
"$REPO/tests/vm/run" --root host -v --timeout 300 "$@" \
	--file "$tmp/f:/etc/magnet-hostroot-$token" --file "$tmp/f:/tmp/f" \
	--file "$tmp/f:/magnet/f" -- sh /magnet/tests/vm/hostroot-guest.sh "$token" \
	>"$tmp/out" 2>&1 || rc=$?
grep -v '<!' "$tmp/out" | sed 's/^/# /'
[[ $rc == 0 ]] || fail "the guest's checks failed (exit $rc)"
grep -q '^FAIL: ' "$tmp/out" && fail "$(grep -c '^FAIL: ' "$tmp/out") guest check(s) failed"
# As many checks as hostroot-guest.sh makes: none skipped unnoticed.
oks=$(grep -c '^ok: ' "$tmp/out" || true)
[[ $oks == 16 ]] || fail "$oks guest checks passed, want 16"

# The guest wrote these, in its overlay only.
for f in "/usr/local/hostroot-$token" "/etc/magnet-hostroot-$token"; do
	[[ ! -e $f ]] || fail "$f, written in the guest, is on the host"
done
[[ $(sha256sum /etc/hosts) == "$hosts_before" ]] ||
	fail "/etc/hosts changed on the host while the guest wrote its own"

if ((failures)); then
	echo "hostroot: $failures failure(s)" >&2
	exit 1
fi
echo "hostroot: $oks checks in a --root host guest, the host's files untouched: ok" \
	"($(sed -n 's/^vm: command started at guest uptime \([0-9.]*\)s.*/COMMAND at guest uptime \1 s/p' "$tmp/out"))"
