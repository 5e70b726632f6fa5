#!/bin/sh
# Wake-ups: half the ring satisfies every read condition (a record watermark
# the ring cannot hold, overwrite and discard mode), and watermarks beyond it
# are refused; a blocked read and a queued AIO read of one file each wake on
# their own condition; an AIO read cancelled behind another completes at
# once; AIO reads queued on one file take the records and complete in the
# order they were submitted; a queued AIO read's timeout ends its wait
# wherever it falls against the worker's arming of the ring; io_uring reads
# complete, and are cancelled by ASYNC_CANCEL or exit.
. ./lib.sh
load buf_size=65536 mode=overwrite probes=kprobe:ksys_write:3:4000@1
mgtest halfwake overwrite || fail "overwrite: a reader waiting for 100 records wakes at half the ring"
unload
load buf_size=65536 probes=kprobe:ksys_write:3:4000@1
mgtest halfwake discard || fail "discard: a reader waiting for 800 records wakes at half the ring"
mgtest attr-limits || fail "watermark limits of a 64 KiB ring"
unload
load probes=kprobe:__x64_sys_getpid:3
mgtest attr-limits || fail "watermark limits of a 1 MiB ring"
mgtest aio-sync || fail "a blocked read and a queued AIO read wake on their own conditions"
mgtest aio-cancel2 || fail "cancelling the second of two queued AIO reads"
mgtest aio-order 20000 || fail "queued AIO reads complete in the order submitted"
mgtest aio-deadline 2000 || fail "a queued AIO read's timeout was lost"
for mode in read read-async cancel cancel-async exit; do
	mgtest uring $mode || fail "io_uring $mode"
done
unload
