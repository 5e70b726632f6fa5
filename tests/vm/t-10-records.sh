#!/bin/sh
# Records: exact counts, pid/tgid/cpu, monotonic timestamps, arguments,
# return values and latencies, against ground truth from mgtest.
. ./lib.sh
load probes=kprobe:__x64_sys_getpid,kprobe:vfs_read:3,kretprobe:vfs_read:3
mgtest getpid 1000 || fail "getpid records"
mgtest args 200 || fail "vfs_read arguments"
unload
