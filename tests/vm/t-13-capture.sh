#!/bin/sh
# Memory capture: a kprobe copies a write's buffer at entry, a kretprobe a
# read's buffer at return, byte for byte.
. ./lib.sh
load probes=kprobe:vfs_write:3:64@1,kretprobe:vfs_read:3:64@1
grep -q '64@1' /sys/kernel/debug/magnet/probes || fail "probes file lacks the capture column"
mgtest capture 300 || fail "capture"
unload
