// SPDX-License-Identifier: GPL-2.0
/*
 * bpf-ring.bpf.c: the bench's libbpf peer (bench/bpf-ring.c loads it). A
 * kprobe or fentry program that writes magnet's own probe record (struct
 * magnet_record, __u64 args[nargs], struct magnet_capture and its bytes
 * copied from the user buffer in argument 1) into one BPF ring buffer with
 * bpf_ringbuf_reserve/submit, and counts per CPU its hits and the records
 * a failed reserve lost (ring full).
 *
 * nargs and cap_len are read-only data the loader sets before loading: the
 * verifier then knows the record's size as a constant, as reserve wants.
 */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <linux/magnet.h>

char LICENSE[] SEC("license") = "GPL";

const volatile struct {
	__u32 nargs;		/* 0 or 3 */
	__u32 cap_len;		/* bytes of argument 1 to capture, 0: none */
	__u32 wakeup;		/* 0: the ring's default (wake the consumer
				 * when it has caught up); else wake it only
				 * once this many bytes wait, as magnet's
				 * watermark (its poll timeout is the latency)
				 */
} cfg;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);	/* the loader sets the size */
} ring SEC(".maps");

enum { HITS, LOST, NCOUNTS };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NCOUNTS);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

/* An id >= MAGNET_EVENT_FIRST_DYNAMIC, as a probe's. */
#define BENCH_EVENT_ID	MAGNET_EVENT_FIRST_DYNAMIC

static __always_inline void count(__u32 what)
{
	__u64 *c = bpf_map_lookup_elem(&counts, &what);

	if (c)
		(*c)++;
}

static __always_inline int emit(__u64 a0, __u64 a1, __u64 a2)
{
	__u32 nargs = cfg.nargs, cap = cfg.cap_len;
	__u32 size = MAGNET_RECORD_HEADER + nargs * 8;
	struct magnet_record *r;
	struct magnet_capture *c;
	__u64 *args, id;

	if (cap)
		size += sizeof(*c) + cap;
	size = (size + 7) & ~7U;
	count(HITS);
	r = bpf_ringbuf_reserve(&ring, size, 0);
	if (!r) {
		count(LOST);
		return 0;
	}
	id = bpf_get_current_pid_tgid();
	r->size = size;
	r->event_id = BENCH_EVENT_ID;
	r->flags = nargs << MAGNET_REC_NARGS_SHIFT | (cap ? MAGNET_REC_CAPTURE : 0);
	r->cpu = bpf_get_smp_processor_id();
	r->cgroup = (__u32)bpf_get_current_cgroup_id();
	r->abstract_id = a0;
	r->timestamp = bpf_ktime_get_ns();	/* ktime_get_mono_fast_ns */
	r->pid = (__u32)id;
	r->tgid = id >> 32;
	args = (__u64 *)r->payload;
	if (nargs) {
		args[0] = a0;
		args[1] = a1;
		args[2] = a2;
	}
	if (cap) {
		c = (struct magnet_capture *)(r->payload + nargs * 8);
		c->arg = 1;
		/* unreadable: len 0, the bytes zeroed, as magnet */
		c->len = bpf_probe_read_user(c->data, cap, (void *)a1) ? 0 : cap;
	}
	if (!cfg.wakeup)
		bpf_ringbuf_submit(r, 0);
	else if (bpf_ringbuf_query(&ring, BPF_RB_AVAIL_DATA) + size >= cfg.wakeup)
		bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	else
		bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("kprobe")
int kp(struct pt_regs *ctx)
{
	return emit(PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx));
}

/* fentry sees the function's own arguments: one program per arity. */
SEC("fentry")
int BPF_PROG(fe0)
{
	return emit(0, 0, 0);
}

SEC("fentry")
int BPF_PROG(fe3, __u64 a0, __u64 a1, __u64 a2)
{
	return emit(a0, a1, a2);
}
