#!/bin/sh
# Exact attribution: 1000 processes in three cgroups make one probed call
# (one in seven renames itself and makes a second) and exit at once; read
# only afterwards, every record names its cgroup (header) and its command
# (TASK records), though none of the processes is left to look up.
. ./lib.sh
load probes=kprobe:__x64_sys_getppid
jobtest 1000 || fail "attribution of 1000 short-lived processes"
unload
