#!/bin/sh
# Delivery modes (paper 3.4): blocking, O_NONBLOCK, poll, SIGIO, AIO, timeout,
# AIO cancel; one reader per ring.
. ./lib.sh
load probes=kprobe:__x64_sys_getpid
for mode in block nonblock poll sigio aio timeout aio-cancel; do
	mgtest deliver $mode || fail "delivery $mode"
done
mgtest ebusy || fail "one reader"
unload
