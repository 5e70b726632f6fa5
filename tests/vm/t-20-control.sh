#!/bin/sh
# The generic-netlink control plane, driven with raw netlink (nltest):
# filters and sampling against ground truth (exact counts), alarms on the
# multicast group, extended-ACK refusals, permissions, 10,000 malformed
# messages, the kernel API of custom modules; alarms refused to an
# unprivileged process, ids not reused at once, counters across resizes.
. ./lib.sh
load
nltest errors || fail "refusals"
nltest filters || fail "filters"
nltest sampling || fail "sampling"
nltest alarms || fail "alarms"
nltest alarm-perm || fail "unprivileged alarm group"
nltest ids || fail "probe ids"
nltest resize || fail "counters across resizes"
nltest perm || fail "permissions"
nltest fuzz 10000 || fail "fuzz"
insmod /magnet/magnet_sample.ko || fail "insmod magnet_sample.ko"
nltest kapi || fail "kernel API"
nltest kapi-len || fail "kernel API lengths"
rmmod magnet 2>/dev/null && fail "magnet unloaded under a module that uses its API"
rmmod magnet_sample || fail "rmmod magnet_sample"
grep -q magnet_sample /sys/kernel/debug/magnet/probes && fail "the sample's event outlived its module"
unload
