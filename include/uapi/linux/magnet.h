/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * magnet: Monitoring Apparatus for General kerNel-Event Tracing.
 *
 * This header is the contract between magnet.ko and user space. It is the
 * specification: everything a reader needs to decode the rings is here.
 *
 * FILES (debugfs, normally mounted at /sys/kernel/debug)
 * ------------------------------------------------------
 *
 *   magnet/cpuN     Data file of CPU N's ring, mode 0400. Reads consume. Not
 *                   seekable. One reader at a time: a second open() gets
 *                   EBUSY. A read returns whole records only, never a torn
 *                   one; a buffer too small for the next record gets EINVAL
 *                   (a buffer of MAGNET_RECORD_MAX bytes always suffices).
 *                   Supports blocking read, O_NONBLOCK (EAGAIN), poll/epoll,
 *                   SIGIO (O_ASYNC/fcntl F_SETSIG), and true AIO (io_submit
 *                   returns at once; the request completes when the read
 *                   condition below holds, and is cancellable).
 *   magnet/version  "magnet <release>\nformat <MAGNET_FORMAT_VERSION>\n"
 *                   "clock <mono|tsc>\ncpus <possible CPU count>\n"
 *                   "tsc_khz <TSC frequency, 0 if unknown>\n"
 *   magnet/probes   One line per probe, tab-separated:
 *                   id type target nargs hits missed [LEN@ARG]
 *                   (type is kprobe or kretprobe; target is SYMBOL or
 *                   SYMBOL+OFFSET; missed is the kprobes core's count of
 *                   hits it skipped, e.g. by recursion or too many
 *                   kretprobe instances in flight; the last column is there
 *                   only for probes that capture memory).
 *   magnet/stats    A header line, then one line per CPU, tab-separated:
 *                   cpu written bytes lost_full lost_too_big lost_nesting
 *                   overwritten
 *                   (written and bytes count event records, not LOST
 *                   records; every hit of a probe is exactly one of
 *                   written, lost_full, lost_too_big or lost_nesting).
 *   magnet/buffers  A header line, then one line per CPU, tab-separated:
 *                   cpu size mode used reader
 *                   (mode is discard or overwrite, used the committed bytes
 *                   not yet consumed, reader 1 while a reader is attached).
 *
 * All control files are read-only, mode 0400, and not consumed by reading.
 *
 * READ CONDITION
 * --------------
 *
 * Set per open file with MAGNET_IOC_SET_READ_ATTR. A read (or an AIO read,
 * or poll readiness) is satisfied when
 *
 *     available bytes   >= min(watermark_bytes, read size)   (if non-zero)
 *  or available records >= watermark_records                  (if non-zero)
 *  or timeout_ns has elapsed since the read began and at least one record is
 *     available                                               (if non-zero)
 *
 * If both watermarks are zero, one available record satisfies the read. The
 * defaults are watermark_records = 1, the others 0. Poll ignores the timeout
 * (poll has its own). A read interrupted by a signal returns EINTR (or
 * restarts, per SA_RESTART); it never loses records.
 * MAGNET_IOC_SET_READ_ATTR fails with EINVAL for unknown flags and for a
 * watermark_bytes above half the ring (it could never be reached).
 *
 * AIO: a request that cannot complete at once returns from io_submit and
 * completes when the condition holds; io_cancel (and io_destroy or exit,
 * which cancel) completes it with -ECANCELED, having consumed nothing.
 *
 * LIFETIME: an open data or control file holds a reference on the module,
 * so rmmod fails with EBUSY while any reader (blocked, polling, with AIO
 * pending or idle) has one open; the rings, the readers and their data are
 * untouched by the attempt. Close the readers, then unload.
 *
 * EVENT RECORD
 * ------------
 *
 * A data file is a stream of records. Every record is 8-byte aligned and
 * starts with this 40-byte header, in the CPU's byte order:
 *
 *   offset size field
 *        0    4 size         whole record in bytes, header included; a
 *                            multiple of 8, 40 <= size <= MAGNET_RECORD_MAX
 *        4    2 event_id     MAGNET_EVENT_LOST, or a probe's id (>= 16)
 *        6    2 flags        MAGNET_REC_* below; undefined bits are 0
 *        8    4 cpu          CPU the event happened on (no 64-CPU limit)
 *       12    4 reserved     zero
 *       16    8 abstract_id  event-specific; for probes, the first function
 *                            argument (usually the object acted on: a
 *                            socket, a file, an skb), captured at entry
 *       24    8 timestamp    ns, clock named in magnet/version (see CLOCK)
 *       32    4 pid          thread id of the current task (0 in idle/irq
 *                            of the idle task)
 *       36    4 tgid         process id of the current task
 *       40      payload      size - 40 bytes, see PAYLOADS
 *
 * ORDER: within one CPU's stream, records are in timestamp order (the ring
 * stamps a record inside its reservation), so readers may merge the CPU
 * streams by timestamp; record.cpu always equals N for cpuN.
 *
 * CLOCK
 * -----
 *
 * mono (default): ktime_get_mono_fast_ns(), CLOCK_MONOTONIC in ns. It is
 * NMI-safe and comparable across CPUs, so readers may merge CPU streams by
 * timestamp. tsc (module parameter clock=tsc): the raw time-stamp counter
 * as the paper's MAGNET used, cheapest to read; comparable across CPUs only
 * where the TSC is synchronised (constant_tsc, nonstop_tsc on current x86);
 * magnet/version gives tsc_khz to convert. Kretprobe latencies are ns in
 * both modes.
 *
 * PAYLOADS
 * --------
 *
 * Probe records (flags carry the layout, so a decoder needs no probe table):
 *   kprobe:     __u64 args[nargs]
 *               [struct magnet_capture; __u8 data[capture length]]
 *   kretprobe:  __s64 retval; __u64 latency_ns; __u64 args[nargs]
 *               [struct magnet_capture; __u8 data[capture length]]
 *               (MAGNET_REC_RETURN set; args captured at function entry,
 *               latency from entry to return on the same task)
 *   nargs = MAGNET_REC_NARGS(flags), 0..6; args are the first nargs
 *   function arguments per the kernel's calling convention.
 *   The capture is there when MAGNET_REC_CAPTURE is set: bytes copied from
 *   the address in argument magnet_capture.arg (at return, for a
 *   kretprobe); magnet_capture.len is the probe's capture length, or 0 if
 *   the memory could not be read without faulting (the data bytes are then
 *   zero). The record size is exactly 40 + the layout above rounded up to
 *   8; the alignment bytes are zero.
 *
 * MAGNET_EVENT_LOST: struct magnet_lost, size 72, flags 0, abstract_id,
 *   pid and tgid 0, cpu the ring's CPU, timestamp that of the record that
 *   follows it (or of the moment it was made). Records lost on this CPU since the
 *   previous record of the stream, by reason. The ring writes it in front of
 *   the first record that fits after a loss (reasons full, too_big,
 *   nesting); the reader inserts it in front of the first record it returns
 *   after the writer overwrote unread records (reason overwritten). Losses
 *   are never silent: the sum over a stream's LOST records, plus losses
 *   not yet followed by a record, equals the CPU's counters in stats.
 *
 * Event ids 0..15 are reserved; 0 is the ring's internal padding and never
 * reaches a reader.
 */
#ifndef _UAPI_LINUX_MAGNET_H
#define _UAPI_LINUX_MAGNET_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define MAGNET_FORMAT_VERSION	1

struct magnet_record {
	__u32 size;
	__u16 event_id;
	__u16 flags;
	__u32 cpu;
	__u32 reserved;
	__u64 abstract_id;
	__u64 timestamp;
	__u32 pid;
	__u32 tgid;
	__u8 payload[];
};

#define MAGNET_RECORD_HEADER	40
#define MAGNET_PAYLOAD_MAX	4096
#define MAGNET_RECORD_MAX	(MAGNET_RECORD_HEADER + MAGNET_PAYLOAD_MAX)
#define MAGNET_RECORD_ALIGN	8

enum magnet_reserved_event {
	MAGNET_EVENT_PAD = 0,
	MAGNET_EVENT_LOST = 1,
	MAGNET_EVENT_FIRST_DYNAMIC = 16,
	MAGNET_EVENT_MAX = 0xffff,
};

/* Record flags. */
#define MAGNET_REC_RETURN		(1U << 0)	/* kretprobe layout */
#define MAGNET_REC_CAPTURE		(1U << 1)	/* a capture follows the args */
#define MAGNET_REC_NARGS_SHIFT		4
#define MAGNET_REC_NARGS_MASK		(0xfU << MAGNET_REC_NARGS_SHIFT)
#define MAGNET_REC_NARGS(flags)	\
	(((flags) & MAGNET_REC_NARGS_MASK) >> MAGNET_REC_NARGS_SHIFT)
#define MAGNET_ARGS_MAX			6

struct magnet_capture {
	__u32 len;		/* bytes captured; 0 if unreadable */
	__u32 arg;		/* the argument that held the address */
	__u8 data[];		/* the probe's capture length, always */
};

struct magnet_lost {
	__u64 full;		/* discard mode: no room in the ring */
	__u64 too_big;		/* larger than MAGNET_RECORD_MAX or the ring */
	__u64 nesting;		/* more nested writers than the ring allows */
	__u64 overwritten;	/* overwrite mode: replaced before read */
};

/* Read condition of one open data file; see READ CONDITION above. */
struct magnet_read_attr {
	__u64 watermark_bytes;
	__u64 watermark_records;
	__u64 timeout_ns;
	__u64 flags;		/* none defined; must be 0 */
};

#define MAGNET_IOC_MAGIC		0xb4
#define MAGNET_IOC_SET_READ_ATTR	_IOW(MAGNET_IOC_MAGIC, 1, struct magnet_read_attr)
#define MAGNET_IOC_GET_READ_ATTR	_IOR(MAGNET_IOC_MAGIC, 2, struct magnet_read_attr)

#endif /* _UAPI_LINUX_MAGNET_H */
