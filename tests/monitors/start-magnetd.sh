#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tests/monitors, in the guest: start magnetd (node.sh's configuration),
# return once it serves. mon-workload runs it for "run start-magnetd".
PATH=/magnet/bin:$PATH
magnetd -f -c /tmp/mon/magnetd.conf >>/tmp/mon/magnetd.log 2>&1 &
echo $! >/tmp/mon/magnetd.pid
i=0
until mdtest cmd HELLO >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -ge 100 ] || ! kill -0 "$(cat /tmp/mon/magnetd.pid)" 2>/dev/null; then
		cat /tmp/mon/magnetd.log
		exit 1
	fi
	sleep 0.1
done
