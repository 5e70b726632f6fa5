#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tests/monitors, in the guest: stop magnetd (SIGTERM) and wait for it.
pid=$(cat /tmp/mon/magnetd.pid) || exit 1
kill -TERM "$pid" || exit 1
i=0
# Gone, or a zombie: its parent (a script that has exited) is not ours.
while [ -e "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 100 ] || exit 1
	sleep 0.1
done
