#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# tests/vm/hostroot-guest.sh TOKEN - the guest half of tests/vm/hostroot.sh,
# run in a --root host guest by the host's own sh: Debian's programs
# straight from the host's /usr, as on a node. Each check prints "ok: ..."
# or "FAIL: ..."; exit 1 if any failed. What it writes outside /tmp and
# /run carries TOKEN, so that the host can tell it never reached its files.
set -u
token=${1:?usage: hostroot-guest.sh TOKEN}
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# is GOT WANT WHAT
is() {
	if [ "$1" = "$2" ]; then ok "$3"; else bad "$3: got '$1', want '$2'"; fi
}

# The root, and who runs this.
is "${MAGNET_VM_ROOT:-}" host "MAGNET_VM_ROOT=host"
is "$(stat -f -c %T /)" overlayfs "/ is an overlay"
is "$(readlink /proc/$$/exe)" /usr/bin/dash "this script runs in the host's dash"
is "$(hostname) $(cat /etc/hostname)" "magnet-vm magnet-vm" "hostname and /etc/hostname"
is "$(grep -c '^10\.77\.0\.[0-9]*[[:space:]]node[0-9]*$' /etc/hosts)" 32 \
	"/etc/hosts names the LAN's 32 nodes"

# --file reaches the host root (/etc), /tmp and /magnet.
for f in "/etc/magnet-hostroot-$token" /tmp/f /magnet/f; do
	is "$(cat "$f" 2>/dev/null)" "file $token" "--file to $f"
done

# Writes land in the overlay's upper layer (the host checks they never
# reach it).
echo "$token" >"/usr/local/hostroot-$token"
echo "# $token" >>/etc/hosts
is "$(cat "/usr/local/hostroot-$token") $(tail -n 1 /etc/hosts)" "$token # $token" \
	"writes to /usr/local and /etc/hosts"
is "$(find /run -mindepth 1 -maxdepth 1 | sort | tr '\n' ' ')" "/run/lock /run/magnet-vm " \
	"a fresh /run"

# The host's users and groups (busybox's guest has no /etc/passwd).
is "$(getent passwd munge | cut -d: -f1) $(getent group nogroup | cut -d: -f1)" \
	"munge nogroup" "getent passwd munge, group nogroup"

# Debian's MUNGE as its package runs it: user munge, its own key (made
# here, never the host's), /run/munge made as systemd would.
if runuser -u munge -- mungekey --create --force &&
	install -d -o munge -g munge -m 0755 /run/munge &&
	runuser -u munge -- munged; then
	cred=$(munge -n -s "hello $token" | unmunge 2>&1)
	if echo "$cred" | grep -q '^STATUS: *Success (0)$' &&
		echo "$cred" | grep -q '^ENCODE_HOST: *magnet-vm' &&
		echo "$cred" | grep -q "^hello $token\$"; then
		ok "munged (user munge) decodes munge's credential: $(echo "$cred" | grep '^UID:')"
	else
		bad "munge | unmunge: $cred"
	fi
	kill "$(cat /run/munge/munged.pid)"
else
	bad "munged did not start: $(cat /var/log/munge/munged.log 2>/dev/null)"
fi

# Python with its standard library.
want=$(printf %s "$token" | sha256sum | cut -d' ' -f1)
got=$(/usr/bin/python3 -c 'import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest())' "$token")
is "$got" "$want" "python3 $(/usr/bin/python3 -c 'import platform; print(platform.python_version())')"

# gmond as a daemon (it drops to user nobody) serving its XML: the host
# heard on 127.0.0.1 is named by /etc/hosts.
cat >/tmp/gmond.conf <<CONF
globals {
  daemonize = yes
  setuid = yes
  user = nobody
  debug_level = 0
  host_dmax = 0
  cleanup_threshold = 300
  send_metadata_interval = 5
}
cluster { name = "hostroot-$token" }
udp_send_channel { host = 127.0.0.1  port = 8649  ttl = 1 }
udp_recv_channel { bind = 127.0.0.1  port = 8649 }
tcp_accept_channel { bind = 127.0.0.1  port = 8649 }
modules { module { name = "core_metrics" } }
collection_group {
  collect_once = yes
  time_threshold = 20
  metric { name = "heartbeat" }
}
CONF
if gmond -c /tmp/gmond.conf -p /run/gmond.pid; then
	xml=
	i=0
	while [ $i -lt 50 ]; do
		xml=$(/usr/bin/python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 8649), 5)
print(b"".join(iter(lambda: s.recv(65536), b"")).decode())' 2>/dev/null) &&
			echo "$xml" | grep -q '<HOST NAME="localhost" IP="127.0.0.1"' && break
		i=$((i + 1))
		sleep 0.2
	done
	user=$(stat -c %U "/proc/$(cat /run/gmond.pid)")
	if echo "$xml" | grep -q "<CLUSTER NAME=\"hostroot-$token\"" &&
		echo "$xml" | grep -q '<HOST NAME="localhost" IP="127.0.0.1"' && [ "$user" = nobody ]; then
		ok "$(gmond --version) runs as $user and serves its XML"
	else
		bad "gmond (user ${user:-?}): $xml"
	fi
	kill "$(cat /run/gmond.pid)"
else
	bad "gmond did not start"
fi

# The project's module, loaded by Debian's insmod; and a Debian module
# by modprobe from the host's /lib/modules.
if insmod /magnet/magnet.ko; then
	v=$(cat /sys/kernel/debug/magnet/version)
	if rmmod magnet; then
		ok "insmod /magnet/magnet.ko ($(echo "$v" | head -n 1)), rmmod"
	else
		bad "rmmod magnet"
	fi
else
	bad "insmod /magnet/magnet.ko"
fi
if modprobe dummy && grep -q '^dummy ' /proc/modules; then
	if modprobe -r dummy; then
		ok "modprobe dummy from /lib/modules/$(uname -r)"
	else
		bad "modprobe -r dummy"
	fi
else
	bad "modprobe dummy"
fi

echo "hostroot-guest: $fails failure(s)"
[ $fails -eq 0 ]
