#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# tests/vm/net2-node.sh PEER - one node of tests/vm/net2.sh, in a
# --root host --node N guest (the host's dash, ping, python3): its name,
# MAC and address are the harness's, there is no route out; it serves its
# name on TCP port 7000 until both node PEER (over the LAN) and the host
# (10.0.2.2, through QEMU's forward on eth0) have connected; it pings
# node PEER and connects to it by name, and the peer names the address it
# saw. Each check prints "ok: ..." or "FAIL: ..."; exit 1 if any failed.
set -u
peer=${1:?usage: net2-node.sh PEER}
self=${MAGNET_VM_NODE:?not a --node guest}
port=7000
# The peer may boot a minute later on a busy machine.
limit=150
fails=0
ok() { echo "ok: node$self: $*"; }
bad() { echo "FAIL: node$self: $*"; fails=$((fails + 1)); }
is() { # GOT WANT WHAT
	if [ "$1" = "$2" ]; then ok "$3"; else bad "$3: got '$1', want '$2'"; fi
}
uptime_s() { cut -d. -f1 /proc/uptime; }
deadline=$(($(uptime_s) + limit))

is "$(hostname)" "node$self" "hostname"
is "$(cat /sys/class/net/eth1/address)" "$(printf '52:54:00:4d:00:%02x' "$self")" "eth1's MAC"
is "$(ip -4 -o addr show dev eth1 | awk '{ print $4 }')" "10.77.0.$self/24" "eth1's address"
is "$(ip route show default)" "" "no default route"
if ip route get 192.0.2.1 >/dev/null 2>&1; then
	bad "a route to 192.0.2.1: $(ip route get 192.0.2.1)"
else
	ok "no route out (192.0.2.1 unreachable)"
fi
is "$(getent hosts "node$peer" | awk '{ print $1 }')" "10.77.0.$peer" "node$peer in /etc/hosts"

# The server: each client gets "nodeSELF hello ADDRESS" (the address it
# came from); done once the peer and the host have been answered.
/usr/bin/python3 - "$self" "$peer" "$port" "$limit" >/tmp/server.out 2>&1 <<'EOF' &
import socket, sys
me, peer, port, limit = sys.argv[1:5]
want = {"10.77.0." + peer, "10.0.2.2"}
srv = socket.create_server(("0.0.0.0", int(port)))
srv.settimeout(int(limit))
while want:
    conn, (addr, _) = srv.accept()
    conn.sendall(("node%s hello %s\n" % (me, addr)).encode())
    conn.close()
    print("served", addr, flush=True)
    want.discard(addr)
EOF
server=$!

until ping -c 1 -W 1 "10.77.0.$peer" >/dev/null 2>&1; do
	[ "$(uptime_s)" -lt $deadline ] || break
done
out=$(ping -c 3 -i 0.2 -W 2 "node$peer" 2>&1)
if echo "$out" | grep -q '^3 packets transmitted, 3 received'; then
	ok "ping node$peer: $(echo "$out" | tail -n 1)"
else
	bad "ping node$peer: $out"
fi

# TCP by name; the peer's server may not listen yet.
got=
while [ "$(uptime_s)" -lt $deadline ]; do
	got=$(/usr/bin/python3 -c '
import socket, sys
with socket.create_connection((sys.argv[1], int(sys.argv[2])), 5) as s:
    print(s.makefile().readline().strip())' "node$peer" $port 2>/dev/null) && [ -n "$got" ] && break
	sleep 0.5
done
is "$got" "node$peer hello 10.77.0.$self" "TCP to node$peer:$port"

if wait $server; then
	ok "served node$peer and the host: $(tr '\n' ' ' </tmp/server.out)"
else
	bad "the server: $(cat /tmp/server.out)"
fi
echo "net2-node: node$self: $fails failure(s)"
[ $fails -eq 0 ]
