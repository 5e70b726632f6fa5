#!/bin/sh
# Reads (include/uapi/linux/magnet.h, READ CONDITION): a timeout_ns too far
# away ever to come (U64_MAX, the usual "forever"; U64_MAX - 1; 2^63) never
# elapses, a read and an AIO read wait for their watermark.
. ./lib.sh
load probes=kprobe:__x64_sys_getpid
for t in 18446744073709551615 18446744073709551614 9223372036854775808; do
	mgtest forever $t || fail "timeout_ns $t: a read returned before its watermark"
done
unload
