#!/bin/sh
# Reads (include/uapi/linux/magnet.h, READ CONDITION, NOT WAITING, AIO): a
# timeout_ns too far away ever to come (U64_MAX, the usual "forever";
# U64_MAX - 1; 2^63) never elapses, a read and an AIO read wait for their
# watermark; a read that must not wait (io_uring's first try, RWF_NOWAIT)
# does not sleep while another read holds the file; an AIO read being
# served and held up is cancelled by io_cancel, io_destroy or its
# submitter's exit, taking nothing. A read is held up by another whose
# copy waits on a userfaultfd page: a kernel without userfaultfd skips
# those parts, and says so.
. ./lib.sh
load probes=kprobe:__x64_sys_getpid
for t in 18446744073709551615 18446744073709551614 9223372036854775808; do
	mgtest forever $t || fail "timeout_ns $t: a read returned before its watermark"
done
mgtest nowait || fail "a read that must not wait slept, or did not read"
unload
load buf_size=65536 mode=overwrite probes=kprobe:__x64_sys_getpid
for how in cancel destroy exit; do
	mgtest aio-held $how || fail "an AIO read being served, held up: $how"
done
unload
