#!/bin/sh
# No reader, small ring: written + lost = hits exactly, every loss reported
# in the stream; overwrite mode keeps the newest records.
. ./lib.sh
load buf_size=65536 probes=kprobe:__x64_sys_getpid
mgtest account 20000 || fail "discard accounting"
unload
load buf_size=65536 mode=overwrite probes=kprobe:__x64_sys_getpid
mgtest overwrite 20000 || fail "overwrite mode"
unload
