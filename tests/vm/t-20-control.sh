#!/bin/sh
# The generic-netlink control plane, driven with raw netlink (nltest):
# filters and sampling against ground truth (exact counts), alarms on the
# multicast group, extended-ACK refusals, permissions, 10,000 malformed
# messages, the kernel API of custom modules.
. ./lib.sh
load
nltest errors || fail "refusals"
nltest filters || fail "filters"
nltest sampling || fail "sampling"
nltest alarms || fail "alarms"
nltest perm || fail "permissions"
nltest fuzz 10000 || fail "fuzz"
insmod /magnet/magnet_sample.ko || fail "insmod magnet_sample.ko"
nltest kapi || fail "kernel API"
rmmod magnet 2>/dev/null && fail "magnet unloaded under a module that uses its API"
rmmod magnet_sample || fail "rmmod magnet_sample"
grep -q magnet_sample /sys/kernel/debug/magnet/probes && fail "the sample's event outlived its module"
unload
