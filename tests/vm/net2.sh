#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/vm/net2.sh [RUN-OPTION...] - two guests on one LAN
# (make vm-check-net2): node1 and node2 boot at once, --root host, on the
# same --lan, each with a forward of its TCP port 7000 to the host. Each
# (tests/vm/net2-node.sh) checks its name, MAC and address, that it has no
# route out, pings the other and connects to it by name over the LAN. Here:
# the host reaches each node's port through its forward and the node names
# the host's address (10.0.2.2); the LAN's multicast group is joined on
# the loopback only, no other interface; both guests pass.
# RUN-OPTIONs go to both tests/vm/run calls.
#
# NET2_BASE (default from the PID): the LAN's UDP port; the forwards are
# NET2_BASE+1 and +2.
#
# Exit status: 0 all good, 1 otherwise.

set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
base=${NET2_BASE:-$((20000 + $$ % 4000 * 4))}
group=239.255.77.1
limit=240
failures=0

fail() { echo "net2: FAIL: $*" >&2; failures=$((failures + 1)); }

tmp=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait
	rm -rf "$tmp"
}
trap cleanup EXIT

t0=$SECONDS
for n in 1 2; do
	"$REPO/tests/vm/run" --root host --node $n --lan "$base" --forward $((base + n)):7000 \
		-v --timeout $((limit + 60)) "$@" -- sh /magnet/tests/vm/net2-node.sh $((3 - n)) \
		>"$tmp/node$n.out" 2>&1 &
	pids+=($!)
done

# The host's side: each node's port through its forward.
hello() { # port
	# shellcheck disable=SC2016 # expanded by the inner bash
	timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && head -n 1 <&3' _ "$1" 2>/dev/null
}
maddr=
for n in 1 2; do
	got=
	while ((SECONDS - t0 < limit)) && kill -0 "${pids[n - 1]}" 2>/dev/null; do
		got=$(hello $((base + n))) && [[ -n $got ]] && break
		sleep 1
	done
	[[ $got == "node$n hello 10.0.2.2" ]] ||
		fail "127.0.0.1:$((base + n)), node$n's forward, answered '$got', want 'node$n hello 10.0.2.2'"
	echo "# host: 127.0.0.1:$((base + n)) answered: $got ($((SECONDS - t0)) s)"
	# While the nodes run: who joined the LAN's group, where.
	[[ -n $maddr ]] || maddr=$(ip maddr show | awk -v g="$group" '
		/^[0-9]+:/ { dev = $2 } $2 == g { print dev }' | sort -u | tr '\n' ' ')
done
[[ $maddr == "lo " ]] || fail "the LAN's group $group is joined on '$maddr', want only 'lo'"

for n in 1 2; do
	rc=0
	wait "${pids[n - 1]}" || rc=$?
	grep -v '<!' "$tmp/node$n.out" | sed "s/^/# node$n: /"
	[[ $rc == 0 ]] || fail "node$n failed (exit $rc)"
	oks=$(grep -c '^ok: ' "$tmp/node$n.out" || true)
	[[ $oks == 9 ]] || fail "node$n: $oks checks passed, want 9"
done
pids=()

if ((failures)); then
	echo "net2: $failures failure(s)" >&2
	exit 1
fi
echo "net2: node1 and node2 on LAN port $base: ping, TCP both ways, the host through each forward: ok ($((SECONDS - t0)) s)"
