// SPDX-License-Identifier: GPL-2.0
/*
 * mgtest: the guest-side test driver of the VM suite. Each subcommand fires
 * a known workload, reads the rings through the real debugfs files and
 * checks what came back against ground truth it knows. Exit 0 means every
 * check held; any failure says which and why, and exits 1.
 *
 *   mgtest getpid N              N getpid() calls: exactly N records for us
 *   mgtest args N                vfs_read args, retval and latency (needs
 *                                kprobe:vfs_read:3 and kretprobe:vfs_read:3)
 *   mgtest account N             no reader, tiny ring: written + lost = hits,
 *                                and every loss is reported in the stream
 *   mgtest overwrite N           overwrite mode keeps the newest records
 *   mgtest deliver MODE          block | poll | nonblock | sigio | aio |
 *                                timeout | aio-cancel | mmap
 *   mgtest mmap N                every ring read in place (cpu0's mixed
 *                                with read()) while N getpid fire: each
 *                                record whole, every hit read or reported
 *                                lost as the stats say; every misuse of
 *                                the mapping and the ioctl refused
 *   mgtest mmap-overwrite        an overwrite-mode ring cannot be mapped
 *   mgtest ebusy                 a second open of a cpu file fails
 *   mgtest hold MODE             block forever in read | poll | aio |
 *                                mmap (the mapping alone, fd closed)
 *   mgtest fire SECONDS          getpid as fast as possible (a load)
 *   mgtest fire-n N              exactly N getpid, nothing else
 *   mgtest setuid-fire UID N     as a set-uid program: real uid UID,
 *                                effective and saved 0; then fire-n N
 *   mgtest sock N                N TCP sends on 127.0.0.1: the sock handler
 *                                names both ends (needs tcp_sendmsg with
 *                                handler sock)
 *   mgtest capture N             captured write and read buffers (needs
 *                                kprobe:vfs_write:3:64@1 and
 *                                kretprobe:vfs_read:3:64@1)
 *
 * Wake-ups (t-17; the reader of cpu0 sits on CPU 1, the workload on CPU 0):
 *   mgtest halfwake overwrite|discard
 *                                a 64 KiB ring of 4 KiB records (needs
 *                                kprobe:ksys_write:3:4000@1 and the ring's
 *                                mode): a reader waiting for 100 (overwrite)
 *                                or 800 (discard) records, more than the
 *                                ring can hold, wakes at half the ring
 *   mgtest attr-limits           SET_READ_ATTR takes watermarks up to half
 *                                the ring (bytes) and half the ring / 40
 *                                (records), refuses one more with EINVAL
 *   mgtest aio-sync              a blocked read(4 KiB) and a queued AIO read
 *                                (64 KiB, watermark 16 KiB) of one file each
 *                                wake on their own condition (needs a
 *                                1 MiB ring, kprobe:__x64_sys_getpid:3)
 *   mgtest aio-cancel2           of two queued AIO reads, the second one
 *                                cancelled completes at once
 *   mgtest aio-order N           4 AIO reads of 4 KiB kept queued on one
 *                                file (each resubmitted as it completes,
 *                                one record satisfies a read) while N
 *                                getpid are fired: they complete in the
 *                                order submitted, the records forward in
 *                                it, none twice, every one there or
 *                                reported lost (needs
 *                                kprobe:__x64_sys_getpid:3)
 *   mgtest uring read|cancel|exit[-async]
 *                                io_uring: a 64 KiB IORING_OP_READ completes
 *                                with the records fired after it (read);
 *                                a read of an idle ring is cancelled by
 *                                IORING_OP_ASYNC_CANCEL (cancel) or by the
 *                                process exiting (exit), within seconds;
 *                                -async: submitted with IOSQE_ASYNC (io-wq)
 *
 * Reads (t-36; reader on CPU 1, workload on CPU 0, kprobe:__x64_sys_getpid;
 * a read is held up by another read() whose copy waits on a userfaultfd
 * page, where the kernel has userfaultfd):
 *   mgtest forever TIMEOUT_NS    a timeout_ns too far away to come never
 *                                elapses: a read and an AIO read waiting for
 *                                50 records return with the 50th, not at
 *                                once with the 5 there
 *   mgtest aio-deadline N        N queued AIO reads, each with one record
 *                                there, a 64 KiB watermark and a timeout
 *                                of 1, 2, ... N us, complete with it: no
 *                                timeout is lost however it falls against
 *                                the worker's arming of the ring
 *   mgtest nowait                reads that must not wait (io_uring's first
 *                                try, preadv2 and libaio with RWF_NOWAIT)
 *                                do not sleep while another read holds the
 *                                read lock; RWF_NOWAIT is EAGAIN on an empty
 *                                ring, takes the records of a full one
 *   mgtest aio-held cancel|destroy|exit
 *                                an AIO read being served, held up by
 *                                another read, completes with ECANCELED
 *                                within 5 s of io_cancel, io_destroy or its
 *                                submitter's exit, taking nothing; no
 *                                kworker spins (needs a 64 KiB overwrite-mode
 *                                ring)
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/io_uring.h>
#include <linux/userfaultfd.h>
#include <linux/magnet.h>

#include "sensor.h"

#define DIR_PATH	MG_SENSOR_DIR
#define MAX_CPUS	64
#define BUF_SIZE	(1 << 20)

static int ncpus;
static int self;	/* our tgid: calling getpid() later would fire the probe */
static int fds[MAX_CPUS];
static unsigned char *buf;

__attribute__((noreturn))
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "mgtest: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/*
 * CPU cpu's ring, found as the tools find it (debugfs, else /dev/magnet:
 * lib/sensor.h); -1 with errno set.
 */
static int open_ring(int cpu, int flags)
{
	char path[PATH_MAX], why[2 * PATH_MAX + 64];
	int fd = mg_sensor_open_cpu(DIR_PATH, cpu, O_RDONLY | O_CLOEXEC | flags, path,
				    sizeof(path), why, sizeof(why));

	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	return fd;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity(%d): %s", cpu, strerror(errno));
}

/* Probe id by "type\tsymbol" from the probes file; -1 if absent. */
static int probe_id(const char *type, const char *sym, unsigned long *hits)
{
	char line[512], t[32], s[256];
	unsigned long h, missed;
	unsigned int id, nargs;
	FILE *f = fopen(DIR_PATH "/probes", "r");

	if (!f)
		die("open probes: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%u\t%31s\t%255s\t%u\t%lu\t%lu", &id, t, s, &nargs, &h, &missed) == 6 &&
		    !strcmp(t, type) && !strcmp(s, sym)) {
			fclose(f);
			if (hits)
				*hits = h;
			return id;
		}
	}
	fclose(f);
	return -1;
}

/*
 * The type of the entry probes getpid, args and sock look for, and
 * getpid's function (t-27: fentry, on __do_sys_getpid: Debian's syscall
 * wrappers have no ftrace call site).
 */
static const char *entry_type(void)
{
	const char *t = getenv("MGTEST_ENTRY");

	return t && *t ? t : "kprobe";
}

static const char *getpid_symbol(void)
{
	const char *t = getenv("MGTEST_GETPID");

	return t && *t ? t : "__x64_sys_getpid";
}

static int need_probe(const char *type, const char *sym)
{
	int id = probe_id(type, sym, NULL);

	if (id < 0)
		die("probe %s:%s is not loaded", type, sym);
	return id;
}

struct stats {
	unsigned long written, bytes, lost_full, lost_too_big, lost_nesting, overwritten;
};

static void read_stats(struct stats *sum)
{
	char line[512];
	FILE *f = fopen(DIR_PATH "/stats", "r");
	struct stats s;
	unsigned int cpu;

	memset(sum, 0, sizeof(*sum));
	if (!f)
		die("open stats: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%u\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu", &cpu, &s.written, &s.bytes,
			   &s.lost_full, &s.lost_too_big, &s.lost_nesting, &s.overwritten) != 7)
			continue;
		sum->written += s.written;
		sum->bytes += s.bytes;
		sum->lost_full += s.lost_full;
		sum->lost_too_big += s.lost_too_big;
		sum->lost_nesting += s.lost_nesting;
		sum->overwritten += s.overwritten;
	}
	fclose(f);
}

static void open_all(int flags)
{
	self = getpid();	/* once, before the workload: it fires the probe */
	ncpus = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpus > MAX_CPUS)
		ncpus = MAX_CPUS;
	for (int c = 0; c < ncpus; c++) {
		fds[c] = open_ring(c, flags);
		if (fds[c] < 0)
			die("open cpu%d: %s", c, strerror(errno));
	}
}

/* What a drain saw, for the checks. */
struct seen {
	unsigned long records, ours, lost, tasks;
	struct magnet_lost lost_by;
	uint64_t last_ts[MAX_CPUS];
	int event;		/* count only this event id as ours */
	int event2;		/* ... and this one, if non-zero */
	int tgid;
	void (*each)(const struct magnet_record *rec, void *ctx);
	void *ctx;
};

static void check_chunk(int cpu, const unsigned char *p, long len, struct seen *s)
{
	long off = 0;

	while (off < len) {
		const struct magnet_record *rec = (const void *)(p + off);

		if (len - off < MAGNET_RECORD_HEADER || rec->size < MAGNET_RECORD_HEADER ||
		    rec->size % 8 || rec->size > len - off)
			die("cpu%d: malformed record at offset %ld (size %u)", cpu, off, rec->size);
		if ((int)rec->cpu != cpu)
			die("cpu%d: record says cpu %u", cpu, rec->cpu);
		if (rec->event_id == MAGNET_EVENT_PAD)
			die("cpu%d: padding reached user space", cpu);
		if (rec->event_id != MAGNET_EVENT_LOST && rec->timestamp < s->last_ts[cpu])
			die("cpu%d: timestamp went back %llu -> %llu", cpu,
			    (unsigned long long)s->last_ts[cpu], (unsigned long long)rec->timestamp);
		if (rec->event_id == MAGNET_EVENT_TASK) {
			/* Names the record after it: metadata, not an event. */
			if (rec->size != MAGNET_RECORD_HEADER + sizeof(struct magnet_task) ||
			    rec->flags)
				die("cpu%d: malformed TASK record at offset %ld", cpu, off);
			s->tasks++;
		} else if (rec->event_id == MAGNET_EVENT_LOST) {
			const struct magnet_lost *l = (const void *)rec->payload;

			s->lost_by.full += l->full;
			s->lost_by.too_big += l->too_big;
			s->lost_by.nesting += l->nesting;
			s->lost_by.overwritten += l->overwritten;
			s->lost += l->full + l->too_big + l->nesting + l->overwritten;
		} else {
			s->last_ts[cpu] = rec->timestamp;
			s->records++;
			if ((rec->event_id == s->event || (s->event2 && rec->event_id == s->event2)) &&
			    (int)rec->tgid == s->tgid) {
				s->ours++;
				if (s->each)
					s->each(rec, s->ctx);
			}
		}
		off += rec->size;
	}
}

/*
 * With a vfs_read probe loaded, every read of a ring writes records of its
 * own: a chunk made only of those means the ring holds nothing else.
 */
static int only_our_reads(const unsigned char *p, long len)
{
	for (long off = 0; off < len; off += ((const struct magnet_record *)(p + off))->size) {
		const struct magnet_record *rec = (const void *)(p + off);
		const uint64_t *a = (const void *)rec->payload;
		int ret = rec->flags & MAGNET_REC_RETURN;

		if (rec->event_id == MAGNET_EVENT_LOST || rec->event_id == MAGNET_EVENT_TASK)
			continue;
		if ((int)rec->tgid != self || MAGNET_REC_NARGS(rec->flags) != 3 ||
		    a[ret ? 3 : 1] != (uintptr_t)buf)
			return 0;
	}
	return 1;
}

/* Read everything that is there now, without blocking. */
static void drain_nonblock(struct seen *s)
{
	for (int c = 0; c < ncpus; c++) {
		int fl = fcntl(fds[c], F_GETFL);

		fcntl(fds[c], F_SETFL, fl | O_NONBLOCK);
		for (;;) {
			long n = read(fds[c], buf, BUF_SIZE);

			if (n < 0 && errno == EAGAIN)
				break;
			if (n < 0)
				die("read cpu%d: %s", c, strerror(errno));
			if (n == 0)
				die("read cpu%d: unexpected EOF", c);
			if (s)
				check_chunk(c, buf, n, s);
			if (only_our_reads(buf, n))
				break;
		}
		fcntl(fds[c], F_SETFL, fl);
	}
}

static void set_attr(int fd, uint64_t bytes, uint64_t records, uint64_t timeout_ns)
{
	struct magnet_read_attr a = {
		.watermark_bytes = bytes, .watermark_records = records, .timeout_ns = timeout_ns,
	};

	if (ioctl(fd, MAGNET_IOC_SET_READ_ATTR, &a))
		die("MAGNET_IOC_SET_READ_ATTR: %s", strerror(errno));
}

static int my_getpid(void)
{
	return syscall(SYS_getpid);
}

static void ck_pid(const struct magnet_record *rec, void *ctx)
{
	if ((int)rec->pid != (int)syscall(SYS_gettid))
		die("record pid %u, our tid %ld", rec->pid, syscall(SYS_gettid));
	if (rec->size != MAGNET_RECORD_HEADER || rec->flags)
		die("getpid kprobe record: size %u flags %#x", rec->size, rec->flags);
}

static int cmd_getpid(int n)
{
	struct seen s = { .event = need_probe(entry_type(), getpid_symbol()), .tgid = getpid(),
			  .each = ck_pid };

	open_all(0);
	drain_nonblock(NULL);
	for (int i = 0; i < n; i++) {
		pin(i % ncpus);		/* spread over CPUs: every ring gets some */
		my_getpid();
	}
	drain_nonblock(&s);
	if (s.ours != (unsigned long)n)
		die("fired %d getpid, got %lu records (lost %lu)", n, s.ours, s.lost);
	printf("getpid: %d fired, %lu records back, pid/tgid/cpu/timestamps right\n", n, s.ours);
	return 0;
}

struct args_ctx {
	int kprobe_id, kret_id;
	unsigned long entries, returns;
	uintptr_t buf;
	unsigned long next_size;
};

static void ck_args(const struct magnet_record *rec, void *ctx)
{
	struct args_ctx *a = ctx;
	const uint64_t *p = (const void *)rec->payload;
	unsigned int nargs = MAGNET_REC_NARGS(rec->flags);

	if (nargs != 3)
		die("vfs_read record with %u args", nargs);
	/* Our own reads of the rings are vfs_read too: only rbuf's count. */
	if (p[(rec->flags & MAGNET_REC_RETURN) ? 3 : 1] != a->buf)
		return;
	if (rec->flags & MAGNET_REC_RETURN) {
		/* retval, latency, then the entry args */
		if (p[2 + 1] != a->buf || p[2 + 2] == 0 || (int64_t)p[0] != (int64_t)p[2 + 2])
			die("kretprobe vfs_read: ret %lld buf %#llx count %llu (want buf %#lx, ret == count)",
			    (long long)p[0], (unsigned long long)p[3], (unsigned long long)p[4], a->buf);
		if (p[1] == 0 || p[1] > 10000000000ULL)
			die("kretprobe latency %llu ns is not plausible", (unsigned long long)p[1]);
		if (rec->abstract_id != p[2])
			die("abstract id %#llx is not arg0 %#llx", (unsigned long long)rec->abstract_id,
			    (unsigned long long)p[2]);
		a->returns++;
	} else {
		if (p[1] != a->buf)
			die("kprobe vfs_read buf arg %#llx, want %#lx", (unsigned long long)p[1], a->buf);
		if (p[2] != a->next_size)
			die("kprobe vfs_read count arg %llu, want %lu", (unsigned long long)p[2],
			    a->next_size);
		a->next_size++;
		a->entries++;
	}
}

static void each_args(const struct magnet_record *rec, void *ctx)
{
	ck_args(rec, ctx);
}

static int cmd_args(int n)
{
	static char rbuf[8192];
	struct args_ctx a = { .buf = (uintptr_t)rbuf, .next_size = 100 };
	struct seen s = { .tgid = getpid(), .each = each_args, .ctx = &a };
	int kp = need_probe(entry_type(), "vfs_read"), kr = need_probe("kretprobe", "vfs_read");
	int zero = open("/dev/zero", O_RDONLY);

	pin(0);
	open_all(0);
	drain_nonblock(NULL);
	for (int i = 0; i < n; i++)
		if (read(zero, rbuf, 100 + i) != 100 + i)
			die("read /dev/zero");
	/* Our own drain reads are vfs_read too, but on other buffers: sizes tell. */
	s.event = kp;
	s.event2 = kr;
	{
		long r = read(fds[0], buf, BUF_SIZE);	/* blocking is fine: records are there */

		if (r <= 0)
			die("read cpu0: %s", strerror(errno));
		check_chunk(0, buf, r, &s);
	}
	if (a.entries < (unsigned long)n || a.returns < (unsigned long)n)
		die("%d reads: %lu entry and %lu return records", n, a.entries, a.returns);
	printf("args: %d reads, entry args, return values and latencies right\n", n);
	return 0;
}

static int cmd_account(int n)
{
	int id = need_probe("kprobe", "__x64_sys_getpid");
	unsigned long hits;
	struct stats st;
	struct seen s = { .event = id, .tgid = getpid() };

	for (int i = 0; i < n; i++)
		my_getpid();
	read_stats(&st);
	if (probe_id("kprobe", "__x64_sys_getpid", &hits) < 0)
		die("no kprobe __x64_sys_getpid in probes");
	if (hits < (unsigned long)n)
		die("probe hits %lu < %d fired", hits, n);
	if (st.written + st.lost_full + st.lost_too_big + st.lost_nesting != hits)
		die("written %lu + lost %lu != hits %lu", st.written,
		    st.lost_full + st.lost_too_big + st.lost_nesting, hits);
	if (!st.lost_full)
		die("the ring never filled: make it smaller or fire more");
	/* Drain, then one more event carries every pending loss in front of it. */
	open_all(0);
	drain_nonblock(&s);
	for (int c = 0; c < ncpus; c++) {
		pin(c);
		my_getpid();
	}
	drain_nonblock(&s);
	probe_id("kprobe", "__x64_sys_getpid", &hits);
	read_stats(&st);
	if (s.records + s.lost != hits)
		die("stream: %lu records + %lu reported lost != %lu hits", s.records, s.lost, hits);
	if (s.lost != st.lost_full + st.lost_too_big + st.lost_nesting)
		die("stream reports %lu lost, stats %lu", s.lost, st.lost_full);
	printf("account: %lu hits = %lu written + %lu lost (full), all reported in-stream\n",
	       hits, st.written, st.lost_full);
	return 0;
}

static void each_ow(const struct magnet_record *rec, void *ctx)
{
	uint64_t *newest = ctx;

	if (rec->timestamp > *newest)
		*newest = rec->timestamp;
}

/*
 * Overwrite mode, getpid probe only (reading the rings fires nothing, so
 * the counts are exact): the newest record kept is our last getpid, and
 * records read + overwritten = written.
 */
static int cmd_overwrite(int n)
{
	int id = need_probe("kprobe", "__x64_sys_getpid");
	uint64_t newest = 0, before_last = 0;
	struct seen s = { .event = id, .tgid = getpid(), .each = each_ow, .ctx = &newest };
	struct stats st;

	pin(0);
	for (int i = 1; i <= n; i++) {
		if (i == n)
			before_last = now_ns();	/* CLOCK_MONOTONIC: the record clock */
		my_getpid();
	}
	open_all(0);
	drain_nonblock(&s);
	read_stats(&st);
	if (newest < before_last)
		die("newest record kept is from %llu, the last getpid was after %llu",
		    (unsigned long long)newest, (unsigned long long)before_last);
	if (!s.lost_by.overwritten)
		die("nothing was overwritten: fire more");
	if (s.records + s.lost_by.overwritten != st.written)
		die("records %lu + overwritten %lu != written %lu", s.records,
		    (unsigned long)s.lost_by.overwritten, st.written);
	printf("overwrite: kept the newest %lu of %lu, %llu overwritten and reported in-stream\n",
	       s.ours, st.written, (unsigned long long)s.lost_by.overwritten);
	return 0;
}

/* A child fires @n getpid on CPU 0 after @delay_ms. */
/* A ring read in place (MAPPED in the UAPI header). */
struct mapped {
	int fd;
	const unsigned char *base;
	uint64_t size, tail, commit;
	uint64_t held;		/* walked, to give back at the next advance */
	int read_since;		/* read() took records: tail moved on its own */
};

static int mmap_advance_raw(int fd, uint64_t tail, uint64_t release, uint64_t flags,
			    struct magnet_mmap_pos *p)
{
	memset(p, 0, sizeof(*p));
	p->tail = tail;
	p->release = release;
	p->flags = flags;
	return ioctl(fd, MAGNET_IOC_MMAP_ADVANCE, p);
}

/* Give back what was walked; learn what is there now. */
static void map_advance(struct mapped *m)
{
	struct magnet_mmap_pos p;

	if (mmap_advance_raw(m->fd, m->tail, m->held, 0, &p))
		die("MAGNET_IOC_MMAP_ADVANCE(%llu): %s", (unsigned long long)m->held,
		    strerror(errno));
	if (p.tail != m->tail + m->held && m->base && !m->read_since)
		die("tail %llu after giving back %llu from %llu", (unsigned long long)p.tail,
		    (unsigned long long)m->held, (unsigned long long)m->tail);
	if (p.commit - p.tail > p.size)
		die("tail %llu commit %llu in a ring of %llu", (unsigned long long)p.tail,
		    (unsigned long long)p.commit, (unsigned long long)p.size);
	m->tail = p.tail;
	m->commit = p.commit;
	m->size = p.size;
	m->held = 0;
	m->read_since = 0;
}

static void map_open(struct mapped *m, int fd)
{
	memset(m, 0, sizeof(*m));
	m->fd = fd;
	map_advance(m);
	m->base = mmap(NULL, m->size, PROT_READ, MAP_SHARED, fd, 0);
	if (m->base == MAP_FAILED)
		die("mmap of %llu bytes: %s", (unsigned long long)m->size, strerror(errno));
}

/* The record at a free-running position, checked to lie inside the ring. */
static const struct magnet_record *map_rec(const struct mapped *m, uint64_t pos)
{
	const struct magnet_record *r;

	if (!m->base)
		die("the ring is not mapped");
	r = (const void *)(m->base + (pos & (m->size - 1)));
	if (r->size < 8 || r->size % 8 || r->size > m->commit - pos ||
	    (pos & (m->size - 1)) + r->size > m->size)
		die("mapped record at %llu: size %u (commit %llu)", (unsigned long long)pos,
		    r->size, (unsigned long long)m->commit);
	return r;
}

/* Walk [tail, commit) in place: every record but padding is checked. */
static void map_walk(struct mapped *m, int cpu, struct seen *s)
{
	uint64_t pos = m->tail;

	while (pos != m->commit) {
		const struct magnet_record *r = map_rec(m, pos);

		if (r->event_id != MAGNET_EVENT_PAD && s)
			check_chunk(cpu, (const void *)r, r->size, s);
		pos += r->size;
	}
	m->held = pos - m->tail;
}

static void expect_errno(const char *what, int ret, int want)
{
	if (ret != -1 || errno != want)
		die("%s: %d (%s), want %s", what, ret, ret == -1 ? strerror(errno) : "success",
		    strerror(want));
}

static pid_t fire_later(int n, int delay_ms)
{
	pid_t pid = fork();

	if (pid == 0) {
		pin(0);
		usleep(delay_ms * 1000);
		for (int i = 0; i < n; i++)
			my_getpid();
		_exit(0);
	}
	return pid;
}

static volatile sig_atomic_t got_sigio;

static void on_sigio(int sig)
{
	got_sigio++;
}

static unsigned long count_getpid(const unsigned char *p, long len, int id)
{
	unsigned long n = 0;

	for (long off = 0; off < len; off += ((const struct magnet_record *)(p + off))->size)
		n += ((const struct magnet_record *)(p + off))->event_id == id;
	return n;
}

static int cmd_deliver(const char *mode)
{
	int id = need_probe("kprobe", "__x64_sys_getpid");
	int fd, want = 50;
	uint64_t t0, dt;
	long n = 0;
	pid_t child;

	pin(1 % sysconf(_SC_NPROCESSORS_CONF));	/* the reader sits apart from the writer */
	fd = open_ring(0, 0);
	if (fd < 0)
		die("open cpu0: %s", strerror(errno));
	/* Start empty. */
	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (read(fd, buf, BUF_SIZE) > 0)
		;
	fcntl(fd, F_SETFL, 0);
	set_attr(fd, 0, want, 0);
	t0 = now_ns();

	if (!strcmp(mode, "nonblock")) {
		fcntl(fd, F_SETFL, O_NONBLOCK);
		n = read(fd, buf, BUF_SIZE);
		if (n != -1 || errno != EAGAIN)
			die("empty O_NONBLOCK read: %ld (%s), want EAGAIN", n, strerror(errno));
		child = fire_later(want, 0);
		waitpid(child, NULL, 0);
		n = read(fd, buf, BUF_SIZE);
	} else if (!strcmp(mode, "block")) {
		child = fire_later(want, 300);
		n = read(fd, buf, BUF_SIZE);
		dt = now_ns() - t0;
		waitpid(child, NULL, 0);
		if (dt < 250000000ULL)
			die("blocking read returned after %llu ms, before the events", dt / 1000000);
	} else if (!strcmp(mode, "timeout")) {
		/* watermark 1000 never reached: the 200 ms timeout returns the 5 */
		set_attr(fd, 0, 1000, 200000000ULL);
		child = fire_later(5, 0);
		waitpid(child, NULL, 0);
		t0 = now_ns();
		n = read(fd, buf, BUF_SIZE);
		dt = now_ns() - t0;
		if (dt < 150000000ULL || dt > 5000000000ULL)
			die("timeout read returned after %llu ms, want about 200", dt / 1000000);
		want = 5;
	} else if (!strcmp(mode, "poll")) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 0) != 0)
			die("poll on an empty ring is ready");
		child = fire_later(want, 300);
		if (poll(&p, 1, 10000) != 1 || !(p.revents & POLLIN))
			die("poll did not report readiness");
		dt = now_ns() - t0;
		waitpid(child, NULL, 0);
		if (dt < 250000000ULL)
			die("poll returned early");
		n = read(fd, buf, BUF_SIZE);
	} else if (!strcmp(mode, "sigio")) {
		signal(SIGIO, on_sigio);
		fcntl(fd, F_SETOWN, getpid());
		fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK);
		child = fire_later(want, 200);
		while (!got_sigio && now_ns() - t0 < 10000000000ULL)
			usleep(1000);
		waitpid(child, NULL, 0);
		if (!got_sigio)
			die("no SIGIO within 10 s");
		n = read(fd, buf, BUF_SIZE);
	} else if (!strcmp(mode, "aio") || !strcmp(mode, "aio-cancel")) {
		io_context_t ctx = 0;
		struct iocb cb, *cbs[1] = { &cb };
		struct io_event ev;
		struct timespec ts = { 10, 0 };
		int r;

		if ((r = io_setup(4, &ctx)))
			die("io_setup: %s", strerror(-r));
		io_prep_pread(&cb, fd, buf, BUF_SIZE, 0);
		t0 = now_ns();
		if ((r = io_submit(ctx, 1, cbs)) != 1)
			die("io_submit: %d (%s)", r, strerror(-r));
		dt = now_ns() - t0;
		if (dt > 100000000ULL)
			die("io_submit blocked for %llu ms: not asynchronous", dt / 1000000);
		if (!strcmp(mode, "aio-cancel")) {
			r = io_cancel(ctx, &cb, &ev);
			if (r != -EINPROGRESS && r != 0)
				die("io_cancel: %d (%s)", r, strerror(-r));
			if (io_getevents(ctx, 1, 1, &ev, &ts) != 1)
				die("cancelled request never completed");
			if ((long)ev.res != -ECANCELED)
				die("cancelled request completed with %ld", (long)ev.res);
			io_destroy(ctx);
			printf("deliver aio-cancel: io_submit returned in %llu us, cancel completed with ECANCELED\n",
			       (unsigned long long)dt / 1000);
			return 0;
		}
		{
			struct timespec z = { 0, 0 };

			if (io_getevents(ctx, 0, 1, &ev, &z) != 0)
				die("AIO completed with no events fired");
		}
		child = fire_later(want, 200);
		r = io_getevents(ctx, 1, 1, &ev, &ts);
		waitpid(child, NULL, 0);
		if (r != 1)
			die("io_getevents: %d", r);
		n = (long)ev.res;
		io_destroy(ctx);
	} else if (!strcmp(mode, "mmap")) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct mapped m;

		map_open(&m, fd);
		if (m.commit != m.tail || poll(&p, 1, 0) != 0)
			die("mmap: an empty ring holds records or is ready");
		child = fire_later(want, 300);
		if (poll(&p, 1, 10000) != 1 || !(p.revents & POLLIN))
			die("poll of a mapped ring did not report readiness");
		dt = now_ns() - t0;
		waitpid(child, NULL, 0);
		if (dt < 250000000ULL)
			die("poll of a mapped ring returned early");
		map_advance(&m);
		/* In place, padding skipped: into buf for the common count below. */
		for (uint64_t pos = m.tail; pos != m.commit; pos += map_rec(&m, pos)->size) {
			const struct magnet_record *r = map_rec(&m, pos);

			if (r->event_id != MAGNET_EVENT_PAD) {
				memcpy(buf + n, r, r->size);
				n += r->size;
			}
		}
		map_walk(&m, 0, NULL);
		map_advance(&m);	/* checks the tail moved by what was walked */
	} else {
		die("unknown mode %s", mode);
	}
	if (n <= 0)
		die("%s: read returned %ld (%s)", mode, n, n < 0 ? strerror(errno) : "EOF");
	if ((long)count_getpid(buf, n, id) < want)
		die("%s: got %lu getpid records, want >= %d", mode, count_getpid(buf, n, id), want);
	printf("deliver %s: %lu records after %llu ms\n", mode, count_getpid(buf, n, id),
	       (unsigned long long)(now_ns() - t0) / 1000000);
	return 0;
}

/* Every way to misuse a mapping is refused, and consumes nothing. */
static void mmap_refusals(struct mapped *m)
{
	struct magnet_mmap_pos p;
	void *a;

	a = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	expect_errno("mmap MAP_SHARED PROT_WRITE of a read-only file", a == MAP_FAILED ? -1 : 0,
		     EACCES);
	a = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, m->fd, 0);
	expect_errno("mmap MAP_PRIVATE PROT_WRITE", a == MAP_FAILED ? -1 : 0, EPERM);
	a = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, m->fd, 0);
	expect_errno("mmap MAP_PRIVATE", a == MAP_FAILED ? -1 : 0, EINVAL);
	a = mmap(NULL, m->size, PROT_READ | PROT_EXEC, MAP_SHARED, m->fd, 0);
	expect_errno("mmap PROT_EXEC", a == MAP_FAILED ? -1 : 0, EPERM);
	a = mmap(NULL, 2 * m->size, PROT_READ, MAP_SHARED, m->fd, 0);
	expect_errno("mmap of twice the ring", a == MAP_FAILED ? -1 : 0, EINVAL);
	a = mmap(NULL, 4096, PROT_READ, MAP_SHARED, m->fd, 4096);
	expect_errno("mmap at offset 4096", a == MAP_FAILED ? -1 : 0, EINVAL);
	expect_errno("mprotect PROT_WRITE", mprotect((void *)m->base, m->size, PROT_READ | PROT_WRITE),
		     EACCES);
	expect_errno("advance with flags 1", mmap_advance_raw(m->fd, m->tail, 0, 1, &p), EINVAL);
	/* Not even a debugger's forced write reaches the ring. */
	{
		int mem = open("/proc/self/mem", O_RDWR);
		char x = 0;
		struct iovec l = { &x, 1 }, r = { (void *)m->base, 1 };
		ssize_t w;

		if (mem < 0)
			die("open /proc/self/mem: %s", strerror(errno));
		expect_errno("pwrite of /proc/self/mem into the mapping",
			     pwrite(mem, &x, 1, (off_t)(uintptr_t)m->base), EIO);
		close(mem);
		/* self: getpid() would fire. ENOSYS: no CROSS_MEMORY_ATTACH. */
		w = process_vm_writev(self, &l, 1, &r, 1, 0);
		if (w != -1 || errno != ENOSYS)
			expect_errno("process_vm_writev into the mapping", w, EFAULT);
	}

	/* Records to misuse: one past commit, one inside the first. */
	pin(0);
	for (int i = 0; i < 3; i++)
		my_getpid();
	pin(1 % ncpus);
	map_advance(m);
	if (m->commit == m->tail)
		die("3 getpid on cpu0 and nothing in its ring");
	expect_errno("giving back past commit",
		     mmap_advance_raw(m->fd, m->tail, m->commit - m->tail + 8, 0, &p), EINVAL);
	{
		uint64_t pos = m->tail;

		while (map_rec(m, pos)->event_id == MAGNET_EVENT_PAD)
			pos += map_rec(m, pos)->size;
		expect_errno("giving back half a record",
			     mmap_advance_raw(m->fd, m->tail, pos - m->tail + 8, 0, &p), EINVAL);
	}
	expect_errno("giving back from a tail that is not the ring's",
		     mmap_advance_raw(m->fd, m->tail + 8, 8, 0, &p), ESTALE);
	if (mmap_advance_raw(m->fd, m->tail, 0, 0, &p) || p.tail != m->tail || p.commit < m->commit)
		die("a refusal consumed: tail %llu -> %llu", (unsigned long long)m->tail,
		    (unsigned long long)p.tail);
	/*
	 * read() takes from the same tail: the records the mapped reader
	 * holds are gone, and giving them back again consumes nothing more.
	 */
	map_walk(m, 0, NULL);
	{
		uint64_t held = m->held, tail = m->tail;
		long got = read(m->fd, buf, BUF_SIZE);

		if (got <= 0)
			die("read() of the records a mapped reader holds: %ld (%s)", got,
			    got < 0 ? strerror(errno) : "EOF");
		expect_errno("giving back records read() took",
			     mmap_advance_raw(m->fd, tail, held, 0, &p), ESTALE);
		/* read() skips padding: the tail may move by more than it returned. */
		if (mmap_advance_raw(m->fd, tail, 0, 0, &p) || p.tail < tail + got)
			die("after read() of %ld bytes, tail %llu -> %llu", got,
			    (unsigned long long)tail, (unsigned long long)p.tail);
		m->held = 0;
		m->read_since = 1;
		map_advance(m);		/* where read() left the tail */
	}
}

/*
 * mgtest mmap N: every CPU's ring read in place (cpu0's mixed with read()
 * calls on the same file) while a child fires N getpid on CPU 0 in bursts
 * the ring cannot always hold: every record whole and in order, every hit
 * either read or reported lost in the stream, exactly as the stats say.
 */
static int cmd_mmap(int n)
{
	int id = need_probe("kprobe", "__x64_sys_getpid");
	struct mapped m[MAX_CPUS] = { 0 };
	struct seen s = { .event = id };
	unsigned long hits = 0, rounds = 0, reads = 0, idle;
	struct stats st;
	pid_t child;
	int status;

	open_all(O_NONBLOCK);	/* read() below must not wait */
	pin(1 % ncpus);
	for (int c = 0; c < ncpus; c++)
		map_open(&m[c], fds[c]);
	for (int c = 0; c < ncpus; c++) {	/* start empty */
		map_walk(&m[c], c, NULL);
		map_advance(&m[c]);
		map_walk(&m[c], c, NULL);
		map_advance(&m[c]);
	}
	mmap_refusals(&m[0]);
	for (int c = 0; c < ncpus; c++) {	/* empty again: the count starts */
		map_walk(&m[c], c, NULL);
		map_advance(&m[c]);
	}
	probe_id("kprobe", "__x64_sys_getpid", &hits);
	read_stats(&st);
	{
		unsigned long hits0 = hits, lost0 = st.lost_full + st.lost_too_big + st.lost_nesting;

		child = fork();
		if (child == 0) {
			pin(0);
			for (int i = 0; i < n; i++) {
				my_getpid();
				if (i % 5000 == 4999)
					usleep(2000);
			}
			_exit(0);
		}
		s.tgid = child;
		for (idle = 0; idle < 3;) {
			int any = 0;

			if (child > 0 && waitpid(child, &status, WNOHANG) == child)
				child = 0;

			for (int c = 0; c < ncpus; c++) {
				map_advance(&m[c]);
				if (c == 0 && ++rounds % 4 == 0) {
					/* read() takes from the same tail, whole records. */
					long got = read(fds[0], buf, 4096);

					if (got < 0 && errno != EAGAIN)
						die("read cpu0 between mapped reads: %s", strerror(errno));
					if (got > 0) {
						m[0].read_since = 1;
						check_chunk(0, buf, got, &s);
						reads++;
						any = 1;
					}
					continue;
				}
				any |= m[c].commit != m[c].tail;
				map_walk(&m[c], c, &s);
			}
			if (!child)
				idle = any ? 0 : idle + 1;
			if (!any)
				usleep(1000);
		}
		/* One more hit per CPU reports the losses still pending there. */
		for (int c = 0; c < ncpus; c++) {
			pin(c);
			my_getpid();
		}
		pin(1 % ncpus);
		for (int k = 0; k < 2; k++)
			for (int c = 0; c < ncpus; c++) {
				map_advance(&m[c]);
				map_walk(&m[c], c, &s);
			}
		for (int c = 0; c < ncpus; c++)
			map_advance(&m[c]);
		probe_id("kprobe", "__x64_sys_getpid", &hits);
		read_stats(&st);
		hits -= hits0;
		lost0 = st.lost_full + st.lost_too_big + st.lost_nesting - lost0;
		if (s.records + s.lost != hits)
			die("mapped: %lu records + %lu reported lost != %lu hits", s.records, s.lost, hits);
		if (s.lost != lost0)
			die("mapped: the stream reports %lu lost, stats %lu", s.lost, lost0);
		if (s.ours > (unsigned long)n || s.ours + s.lost < (unsigned long)n)
			die("mapped: %lu of the child's %d getpid read, %lu lost", s.ours, n, s.lost);
		if (!reads)
			die("no read() of cpu0 took records between mapped reads");
		printf("mmap: %lu hits = %lu records read in place or by %lu read()s + %lu reported lost (stats: %lu); %lu of %d ours\n",
		       hits, s.records, reads, s.lost, lost0, s.ours, n);
	}
	return 0;
}

/* Overwrite mode: its writers rewrite unread bytes, so no mapping. */
static int cmd_mmap_overwrite(void)
{
	struct magnet_mmap_pos p;
	int fd = open_ring(0, 0);
	void *a;

	if (fd < 0)
		die("open cpu0: %s", strerror(errno));
	a = mmap(NULL, 65536, PROT_READ, MAP_SHARED, fd, 0);
	expect_errno("mmap of an overwrite-mode ring", a == MAP_FAILED ? -1 : 0, EOPNOTSUPP);
	expect_errno("MAGNET_IOC_MMAP_ADVANCE on an overwrite-mode ring",
		     mmap_advance_raw(fd, 0, 0, 0, &p), EOPNOTSUPP);
	printf("mmap-overwrite: mmap and MAGNET_IOC_MMAP_ADVANCE refused with EOPNOTSUPP\n");
	return 0;
}

static int cmd_ebusy(void)
{
	int a = open_ring(0, 0), b;

	if (a < 0)
		die("first open: %s", strerror(errno));
	b = open_ring(0, 0);
	if (b >= 0 || errno != EBUSY)
		die("second open: %d (%s), want EBUSY", b, strerror(errno));
	close(a);
	b = open_ring(0, 0);
	if (b < 0)
		die("open after close: %s", strerror(errno));
	if (lseek(b, 0, SEEK_SET) != -1 || errno != ESPIPE)
		die("lseek on a data file did not fail with ESPIPE");
	{
		struct magnet_read_attr bad = { .flags = 1 };

		if (ioctl(b, MAGNET_IOC_SET_READ_ATTR, &bad) != -1 || errno != EINVAL)
			die("unknown flag accepted");
		bad.flags = 0;
		bad.watermark_bytes = 1ULL << 40;
		if (ioctl(b, MAGNET_IOC_SET_READ_ATTR, &bad) != -1 || errno != EINVAL)
			die("unreachable watermark accepted");
	}
	close(b);
	printf("ebusy: second reader refused, no seek, bad attributes refused\n");
	return 0;
}

static unsigned long ring_size(void)
{
	FILE *f = fopen("/sys/module/magnet/parameters/buf_size", "r");
	unsigned long v = 0;

	if (!f || fscanf(f, "%lu", &v) != 1)
		die("cannot read the ring size from /sys/module/magnet/parameters/buf_size");
	fclose(f);
	return v;
}

static int cmd_hold(const char *mode)
{
	int fd = open_ring(0, 0);

	if (fd < 0)
		die("open cpu0: %s", strerror(errno));
	/* The most records a reader may wait for: nothing fires that many meanwhile. */
	set_attr(fd, 0, ring_size() / 2 / MAGNET_RECORD_HEADER, 0);
	printf("holding %s\n", mode);
	fflush(stdout);
	if (!strcmp(mode, "read")) {
		long n = read(fd, buf, BUF_SIZE);

		printf("hold read returned %ld\n", n);
	} else if (!strcmp(mode, "poll")) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		poll(&p, 1, -1);
	} else if (!strcmp(mode, "mmap")) {
		struct mapped m;

		map_open(&m, fd);
		close(fd);	/* the mapping alone holds the file */
		for (;;)
			pause();
	} else if (!strcmp(mode, "aio")) {
		io_context_t ctx = 0;
		struct iocb cb, *cbs[1] = { &cb };
		struct io_event ev;

		io_setup(1, &ctx);
		io_prep_pread(&cb, fd, buf, BUF_SIZE, 0);
		if (io_submit(ctx, 1, cbs) != 1)
			die("io_submit");
		io_getevents(ctx, 1, 1, &ev, NULL);
	}
	return 0;
}

static int cmd_fire(int seconds)
{
	uint64_t end = now_ns() + seconds * 1000000000ULL;
	unsigned long n = 0;

	while (now_ns() < end)
		for (int i = 0; i < 1000; i++, n++)
			my_getpid();
	printf("fired %lu\n", n);
	return 0;
}

static int cmd_fire_n(int n)
{
	for (int i = 0; i < n; i++)
		my_getpid();
	printf("fired %d\n", n);	/* exactly n getpid calls, no more */
	return 0;
}

static int cmd_setuid_fire(uid_t uid, int n)
{
	if (setresuid(uid, 0, 0))
		die("setresuid(%u, 0, 0): %s", (unsigned int)uid, strerror(errno));
	return cmd_fire_n(n);
}

struct cap_ctx {
	uintptr_t wbuf, rbuf;
	unsigned long writes, reads;
	int wid, rid;
};

static unsigned char cap_pattern(unsigned long i, unsigned int k)
{
	return (unsigned char)(i * 7 + k * 13 + 1);
}

static void each_cap(const struct magnet_record *rec, void *ctx)
{
	struct cap_ctx *c = ctx;
	const uint64_t *p = (const void *)rec->payload;
	int ret = !!(rec->flags & MAGNET_REC_RETURN);
	const struct magnet_capture *cap = (const void *)(p + (ret ? 2 : 0) + 3);
	unsigned long i;

	if (!(rec->flags & MAGNET_REC_CAPTURE) || MAGNET_REC_NARGS(rec->flags) != 3)
		die("record without its capture (flags %#x)", rec->flags);
	if (rec->size != ((MAGNET_RECORD_HEADER + (ret ? 16 : 0) + 24 + 8 + 64 + 7) & ~7u))
		die("capture record size %u", rec->size);
	if (p[(ret ? 2 : 0) + 1] != (ret ? c->rbuf : c->wbuf))
		return;		/* not the workload's buffer */
	if (cap->len != 64 || cap->arg != 1)
		die("capture len %u arg %u, want 64@1", cap->len, cap->arg);
	i = ret ? c->reads++ : c->writes++;
	for (unsigned int k = 0; k < 64; k++)
		if (cap->data[k] != cap_pattern(i, k))
			die("%s %lu: captured byte %u is %#x, want %#x", ret ? "read" : "write", i, k,
			    cap->data[k], cap_pattern(i, k));
}

static int cmd_capture(int n)
{
	static unsigned char wbuf[64], rbuf[64];
	struct cap_ctx c = { .wbuf = (uintptr_t)wbuf, .rbuf = (uintptr_t)rbuf };
	struct seen s = { .tgid = getpid(), .each = each_cap, .ctx = &c };
	int pfd[2];

	s.event = need_probe("kprobe", "vfs_write");
	s.event2 = need_probe("kretprobe", "vfs_read");
	if (pipe(pfd))
		die("pipe");
	pin(0);
	open_all(0);
	drain_nonblock(NULL);
	for (int i = 0; i < n; i++) {
		for (unsigned int k = 0; k < 64; k++)
			wbuf[k] = cap_pattern(i, k);
		if (write(pfd[1], wbuf, 64) != 64 || read(pfd[0], rbuf, 64) != 64)
			die("pipe io");
	}
	drain_nonblock(&s);
	if (c.writes != (unsigned long)n || c.reads != (unsigned long)n)
		die("%d writes and reads: %lu write and %lu read captures", n, c.writes, c.reads);
	printf("capture: %d writes (at entry) and reads (at return) captured byte for byte\n", n);
	return 0;
}

struct sock_ctx {
	unsigned long seen;
	int port;
};

static void each_sock(const struct magnet_record *rec, void *ctx)
{
	const struct magnet_sock *ms = (const void *)rec->payload;
	struct sock_ctx *c = ctx;
	const unsigned char lo[4] = { 127, 0, 0, 1 };

	if (MAGNET_REC_HANDLER(rec->flags) != MAGNET_HANDLER_SOCK ||
	    rec->size != MAGNET_RECORD_HEADER + sizeof(*ms))
		die("sock record: flags %#x size %u", rec->flags, rec->size);
	if (ms->family != AF_INET || ms->protocol != IPPROTO_TCP || ms->state != 1 /* ESTABLISHED */)
		die("sock record: family %u proto %u state %u", ms->family, ms->protocol, ms->state);
	if (memcmp(ms->saddr, lo, 4) || memcmp(ms->daddr, lo, 4))
		die("sock record: not 127.0.0.1 on both ends");
	if (ntohs(ms->dport) != c->port || ms->size != 100)
		die("sock record: dport %u size %llu, want %d and 100", ntohs(ms->dport),
		    (unsigned long long)ms->size, c->port);
	c->seen++;
}

static int cmd_sock(int n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sock_ctx c = { 0 };
	struct seen s = { .event = need_probe(entry_type(), "tcp_sendmsg"), .tgid = getpid(),
			  .each = each_sock, .ctx = &c };
	socklen_t len = sizeof(sa);
	int lfd, cfd, afd;
	char msg[100] = { 0 }, rbuf[4096];

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len))
		die("listen on 127.0.0.1: %s", strerror(errno));
	c.port = ntohs(sa.sin_port);
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(cfd, (struct sockaddr *)&sa, sizeof(sa)) || (afd = accept(lfd, NULL, NULL)) < 0)
		die("connect: %s", strerror(errno));
	open_all(0);
	drain_nonblock(NULL);
	for (int i = 0; i < n; i++) {
		if (send(cfd, msg, sizeof(msg), 0) != sizeof(msg))
			die("send");
		if (recv(afd, rbuf, sizeof(msg), MSG_WAITALL) != sizeof(msg))
			die("recv");
	}
	drain_nonblock(&s);
	if (c.seen != (unsigned long)n)
		die("%d sends, %lu sock records", n, c.seen);
	printf("sock: %d TCP sends, each recorded as 127.0.0.1 -> 127.0.0.1:%d, 100 bytes\n", n,
	       c.port);
	return 0;
}

/* ---- wake-ups (t-17) ---- */

/* cpu0's ring as the buffers file tells it: its size, and mode and used bytes. */
static unsigned long ring0(char mode[32], unsigned long *used)
{
	char line[256], m[32];
	unsigned long size, u;
	unsigned int cpu;
	int reader;
	FILE *f = fopen(DIR_PATH "/buffers", "r");

	if (!f)
		die("open buffers: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%u\t%lu\t%31s\t%lu\t%d", &cpu, &size, m, &u, &reader) == 5 &&
		    cpu == 0) {
			fclose(f);
			if (mode)
				strcpy(mode, m);
			if (used)
				*used = u;
			return size;
		}
	}
	fclose(f);
	die("no cpu0 line in the buffers file");
	return 0;
}

/* cpu0's data file, emptied, read from CPU 1: apart from the workload on CPU 0. */
static int open_cpu0(void)
{
	int fd;

	self = getpid();
	ncpus = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpus < 2)
		die("needs 2 CPUs, has %d", ncpus);
	pin(1);
	fd = open_ring(0, 0);
	if (fd < 0)
		die("open cpu0: %s", strerror(errno));
	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (read(fd, buf, BUF_SIZE) > 0)
		;
	fcntl(fd, F_SETFL, 0);
	return fd;
}

static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
	timed_out = 1;
}

/* SIGALRM in @seconds, without SA_RESTART: a blocked read fails with EINTR. */
static void arm_alarm(unsigned int seconds)
{
	struct sigaction sa = { .sa_handler = on_alarm };

	sigaction(SIGALRM, &sa, NULL);
	timed_out = 0;
	alarm(seconds);
}

/* A thread's scheduler state ('S': asleep, 'D', 'R', ...), '?' if gone. */
static char task_state(pid_t pid, pid_t tid)
{
	char path[64], line[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	p = strrchr(line, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* Where a process sleeps in the kernel, for failure messages. */
static const char *wchan(pid_t pid)
{
	static char w[128];
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/wchan", pid);
	f = fopen(path, "r");
	w[0] = 0;
	if (f) {
		if (!fgets(w, sizeof(w), f))
			w[0] = 0;
		fclose(f);
	}
	return w[0] ? w : "?";
}

#define HW_LEN		4000	/* bytes per write, all captured (4000@1) */
#define HW_WRITES	200
/* A ksys_write:3:4000@1 record: header, 3 args, the capture header, 4000 bytes. */
#define HW_REC		((MAGNET_RECORD_HEADER + 3 * 8 + 8 + HW_LEN + 7) & ~7u)

/* Write i's buffer: i itself, then bytes that depend on i and the offset. */
static void hw_fill(unsigned char *p, uint32_t i)
{
	memcpy(p, &i, sizeof(i));
	for (unsigned int k = sizeof(i); k < HW_LEN; k++)
		p[k] = (unsigned char)(i * 31 + k);
}

/* A child on CPU 0 writes HW_WRITES buffers of HW_LEN bytes to /dev/null. */
static pid_t hw_writer(int delay_ms)
{
	static unsigned char wb[HW_LEN];
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		pin(0);
		usleep(delay_ms * 1000);
		for (uint32_t i = 0; i < HW_WRITES; i++) {
			hw_fill(wb, i);
			if (write(fd, wb, HW_LEN) != HW_LEN)
				_exit(2);
		}
		_exit(0);
	}
	return pid;
}

struct hw_ctx {
	unsigned long ours;
	uint32_t last;
};

static void each_hw(const struct magnet_record *rec, void *ctx)
{
	static unsigned char want[HW_LEN];
	struct hw_ctx *c = ctx;
	const uint64_t *a = (const void *)rec->payload;
	const struct magnet_capture *cap = (const void *)(a + 3);
	uint32_t i;

	if (rec->size != HW_REC || !(rec->flags & MAGNET_REC_CAPTURE) ||
	    MAGNET_REC_NARGS(rec->flags) != 3)
		die("ksys_write record: size %u flags %#x, want %u with 3 args and a capture",
		    rec->size, rec->flags, HW_REC);
	if (a[2] != HW_LEN || cap->len != HW_LEN || cap->arg != 1)
		die("ksys_write record: count %llu, capture %u@%u, want %u@1",
		    (unsigned long long)a[2], cap->len, cap->arg, HW_LEN);
	memcpy(&i, cap->data, sizeof(i));
	if (i >= HW_WRITES || (c->ours && i <= c->last))
		die("write %u after write %u: not one of ours, or out of order", i, c->last);
	hw_fill(want, i);
	if (memcmp(cap->data, want, HW_LEN))
		die("write %u: the captured bytes are not the written ones", i);
	c->last = i;
	c->ours++;
}

/*
 * A reader waits for more records than the ring can hold; the writer's
 * 4 KiB records fill it many times over. Every read condition holds at
 * half the ring: the reader must wake with at least that much.
 */
static int cmd_halfwake(const char *mode)
{
	int id = need_probe("kprobe", "ksys_write");
	int overwrite = !strcmp(mode, "overwrite");
	unsigned long want = overwrite ? 100 : 800, size, used;
	struct hw_ctx c = { 0 };
	struct seen s = { .event = id, .each = each_hw, .ctx = &c };
	char rmode[32];
	uint64_t t0, dt;
	pid_t child;
	long n;
	int fd, st;

	if (!overwrite && strcmp(mode, "discard"))
		die("unknown mode %s", mode);
	size = ring0(rmode, NULL);
	if (size != 65536 || strcmp(rmode, mode))
		die("needs a 64 KiB %s ring; cpu0's is %lu bytes, %s", mode, size, rmode);
	fd = open_cpu0();
	set_attr(fd, 0, want, 0);
	child = hw_writer(300);
	s.tgid = child;
	arm_alarm(10);
	t0 = now_ns();
	n = read(fd, buf, BUF_SIZE);
	dt = now_ns() - t0;
	alarm(0);
	if (n < 0 && errno == EINTR && timed_out) {
		ring0(NULL, &used);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		die("reader never woke: waited 10 s for %lu records while the %s ring held %lu of "
		    "its %lu bytes (%u-byte records: it never holds %lu)", want, mode, used, size,
		    HW_REC, want);
	}
	if (n <= 0)
		die("read: %ld (%s)", n, n < 0 ? strerror(errno) : "EOF");
	if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
		die("the writer failed (status %#x)", st);
	check_chunk(0, buf, n, &s);
	if ((unsigned long)n < size / 2 - MAGNET_RECORD_MAX)
		die("woke with %ld bytes: less than half the %lu-byte ring", n, size);
	if (!c.ours)
		die("none of the %ld bytes read are the writer's records", n);
	printf("halfwake %s: waiting for %lu records, woke %llu ms into the wait (writes from "
	       "300 ms) with %ld bytes (%lu of our %u-byte records, captured byte for byte) of a "
	       "%lu-byte ring\n", mode, want, (unsigned long long)dt / 1000000, n, c.ours, HW_REC,
	       size);
	close(fd);
	return 0;
}

/* SET_READ_ATTR: 0 if taken, else the errno. */
static int try_attr(int fd, uint64_t bytes, uint64_t records)
{
	struct magnet_read_attr a = { .watermark_bytes = bytes, .watermark_records = records };

	return ioctl(fd, MAGNET_IOC_SET_READ_ATTR, &a) ? errno : 0;
}

/* A watermark beyond half the ring could never be reached: refused. */
static int cmd_attr_limits(void)
{
	unsigned long size = ring0(NULL, NULL), half = size / 2;
	unsigned long maxrec = half / MAGNET_RECORD_HEADER;
	struct magnet_read_attr got;
	int fd = open_ring(0, 0), e;

	if (fd < 0)
		die("open cpu0: %s", strerror(errno));
	if ((e = try_attr(fd, half, 0)))
		die("watermark_bytes %lu (half the %lu-byte ring) refused: %s", half, size,
		    strerror(e));
	if ((e = try_attr(fd, half + 1, 0)) != EINVAL)
		die("watermark_bytes %lu (above half the %lu-byte ring) %s, want EINVAL", half + 1,
		    size, e ? strerror(e) : "accepted");
	if ((e = try_attr(fd, 0, maxrec)))
		die("watermark_records %lu (half the %lu-byte ring / %d) refused: %s", maxrec, size,
		    MAGNET_RECORD_HEADER, strerror(e));
	if ((e = try_attr(fd, 0, maxrec + 1)) != EINVAL)
		die("watermark_records %lu (above half the %lu-byte ring / %d) %s, want EINVAL",
		    maxrec + 1, size, MAGNET_RECORD_HEADER, e ? strerror(e) : "accepted");
	if (ioctl(fd, MAGNET_IOC_GET_READ_ATTR, &got))
		die("MAGNET_IOC_GET_READ_ATTR: %s", strerror(errno));
	if (got.watermark_records != maxrec || got.watermark_bytes || got.timeout_ns)
		die("after a refused SET_READ_ATTR the attributes are bytes %llu records %llu, want "
		    "those last set (0, %lu)", (unsigned long long)got.watermark_bytes,
		    (unsigned long long)got.watermark_records, maxrec);
	close(fd);
	printf("attr-limits: %lu-byte ring: watermark_bytes %lu and watermark_records %lu taken, "
	       "%lu and %lu refused with EINVAL\n", size, half, maxrec, half + 1, maxrec + 1);
	return 0;
}

struct sync_rd {
	int fd;
	pid_t tid;
	long n;
	int err;
	int done;
};

static unsigned char sync_buf[4096] __attribute__((aligned(8)));

static void *sync_reader(void *arg)
{
	struct sync_rd *r = arg;

	__atomic_store_n(&r->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	r->n = read(r->fd, sync_buf, sizeof(sync_buf));
	r->err = errno;
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

#define GP3_REC	(MAGNET_RECORD_HEADER + 3 * 8)	/* kprobe:__x64_sys_getpid:3 */

static void ck_gp3(const struct magnet_record *rec, void *ctx)
{
	if (rec->size != GP3_REC || MAGNET_REC_NARGS(rec->flags) != 3 || rec->pid != rec->tgid)
		die("getpid record: size %u flags %#x pid %u tgid %u, want %u bytes, 3 args, "
		    "our single thread", rec->size, rec->flags, rec->pid, rec->tgid, GP3_REC);
}

/*
 * A blocked read() of 4 KiB (its condition: min(16 KiB, 4 KiB) bytes) and
 * a queued AIO read of 64 KiB (16 KiB) on one open file, then ~6 KiB of
 * records: the read returns, the AIO read stays queued.
 */
static int cmd_aio_sync(void)
{
	int id = need_probe("kprobe", "__x64_sys_getpid"), fired = 100, fd, r;
	struct seen s = { .event = id, .each = ck_gp3 };
	struct sync_rd rd = { 0 };
	io_context_t ctx = 0;
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;
	struct timespec zero = { 0, 0 }, sec = { 1, 0 };
	unsigned long used;
	pthread_t th;
	uint64_t t0, dt;
	pid_t child;

	fd = open_cpu0();
	set_attr(fd, 16384, 0, 0);
	rd.fd = fd;
	if ((r = pthread_create(&th, NULL, sync_reader, &rd)))
		die("pthread_create: %s", strerror(r));
	/* Asleep in read(): its condition is armed. */
	for (t0 = now_ns(); !__atomic_load_n(&rd.tid, __ATOMIC_ACQUIRE) ||
	     task_state(self, rd.tid) != 'S'; usleep(10000))
		if (now_ns() - t0 > 5000000000ULL)
			die("the reading thread never went to sleep");
	usleep(100000);
	if (__atomic_load_n(&rd.done, __ATOMIC_ACQUIRE))
		die("read() of an empty ring returned %ld", rd.n);
	if ((r = io_setup(4, &ctx)))
		die("io_setup: %s", strerror(-r));
	io_prep_pread(&cb, fd, buf, 65536, 0);
	if ((r = io_submit(ctx, 1, cbs)) != 1)
		die("io_submit: %d (%s)", r, strerror(-r));
	usleep(300000);	/* the AIO worker arms the ring with its 16 KiB */
	if (io_getevents(ctx, 0, 1, &ev, &zero) != 0)
		die("the AIO read of an empty ring completed (%ld)", (long)ev.res);
	child = fire_later(fired, 0);
	waitpid(child, NULL, 0);
	s.tgid = child;
	t0 = now_ns();
	while (!__atomic_load_n(&rd.done, __ATOMIC_ACQUIRE) && now_ns() - t0 < 2000000000ULL)
		usleep(10000);
	if (!__atomic_load_n(&rd.done, __ATOMIC_ACQUIRE)) {
		ring0(NULL, &used);
		die("the blocked read(4096) did not return within 2 s though the ring holds %lu "
		    "bytes (%d records of %u): the queued AIO read's 16 KiB condition replaced its "
		    "own 4 KiB", used, fired, GP3_REC);
	}
	dt = now_ns() - t0;
	pthread_join(th, NULL);
	if (rd.n <= 0)
		die("read(): %ld (%s)", rd.n, rd.n < 0 ? strerror(rd.err) : "EOF");
	if (rd.n > 4096 || rd.n <= 4096 - GP3_REC)
		die("read(4096) returned %ld bytes with %d records of %u there", rd.n, fired,
		    GP3_REC);
	check_chunk(0, sync_buf, rd.n, &s);
	if (!s.ours)
		die("none of the %ld bytes read are our getpid records", rd.n);
	/* About 2 KiB are left: the AIO read's 16 KiB do not hold. */
	if (io_getevents(ctx, 0, 1, &ev, &zero) != 0)
		die("the AIO read completed (%ld) below its 16 KiB watermark", (long)ev.res);
	r = io_cancel(ctx, &cb, &ev);
	if (r != -EINPROGRESS && r != 0)
		die("io_cancel: %d (%s)", r, strerror(-r));
	if (io_getevents(ctx, 1, 1, &ev, &sec) != 1 || (long)ev.res != -ECANCELED)
		die("the cancelled AIO read did not complete with ECANCELED within 1 s");
	io_destroy(ctx);
	close(fd);
	printf("aio-sync: with a 16 KiB AIO read queued, the blocked read(4096) returned %ld bytes "
	       "(%lu of our records) %llu ms after %d records came; the AIO read waited on, and "
	       "was cancelled\n", rd.n, s.ours, (unsigned long long)dt / 1000000, fired);
	return 0;
}

/* Two AIO reads queued on an idle ring; the second one is cancelled first. */
static int cmd_aio_cancel2(void)
{
	static unsigned char b2[65536] __attribute__((aligned(8)));
	unsigned long size = ring0(NULL, NULL);
	io_context_t ctx = 0;
	struct iocb cb1, cb2, *cbs[2] = { &cb1, &cb2 };
	struct io_event ev;
	struct timespec zero = { 0, 0 }, sec = { 1, 0 };
	uint64_t t0, dt;
	int fd, r;

	fd = open_cpu0();
	/* Nothing an idle ring does meets it, not a stray record either. */
	set_attr(fd, 0, size / 2 / MAGNET_RECORD_HEADER, 0);
	if ((r = io_setup(4, &ctx)))
		die("io_setup: %s", strerror(-r));
	io_prep_pread(&cb1, fd, buf, 65536, 0);
	io_prep_pread(&cb2, fd, b2, 65536, 0);
	if ((r = io_submit(ctx, 2, cbs)) != 2)
		die("io_submit: %d (%s)", r, r < 0 ? strerror(-r) : "short");
	usleep(200000);
	if (io_getevents(ctx, 0, 1, &ev, &zero) != 0)
		die("an AIO read of an idle ring completed (%ld)", (long)ev.res);
	t0 = now_ns();
	r = io_cancel(ctx, &cb2, &ev);
	if (r != -EINPROGRESS && r != 0)
		die("io_cancel of the second read: %d (%s)", r, strerror(-r));
	r = io_getevents(ctx, 1, 1, &ev, &sec);
	dt = now_ns() - t0;
	if (r != 1)
		die("the cancelled second read did not complete within 1 s (the first one is "
		    "still queued in front of it)");
	if (ev.obj != &cb2 || (long)ev.res != -ECANCELED)
		die("the %s read completed with %ld, want the second one with ECANCELED",
		    ev.obj == &cb1 ? "first" : "unknown", (long)ev.res);
	if (io_getevents(ctx, 0, 1, &ev, &zero) != 0)
		die("the first read completed too (%ld)", (long)ev.res);
	r = io_cancel(ctx, &cb1, &ev);
	if (r != -EINPROGRESS && r != 0)
		die("io_cancel of the first read: %d (%s)", r, strerror(-r));
	if (io_getevents(ctx, 1, 1, &ev, &sec) != 1 || ev.obj != &cb1 ||
	    (long)ev.res != -ECANCELED)
		die("the cancelled first read did not complete with ECANCELED within 1 s");
	io_destroy(ctx);
	close(fd);
	printf("aio-cancel2: the second of two queued reads, cancelled, completed with ECANCELED "
	       "in %llu ms; the first waited on until cancelled too\n",
	       (unsigned long long)dt / 1000000);
	return 0;
}

/*
 * Several AIO reads queued on one file take the records in the order they
 * were submitted, and complete in it: a read resubmitted while the others
 * wait must not be served at once ahead of them, though records are there.
 */
#define ORDER_READS	4
#define ORDER_SIZE	4096

static int cmd_aio_order(int n)
{
	static unsigned char bufs[ORDER_READS][ORDER_SIZE] __attribute__((aligned(8)));
	int id = need_probe("kprobe", "__x64_sys_getpid");
	struct seen s = { .event = id, .each = ck_gp3 };
	struct iocb cbs[ORDER_READS], *cbp;
	struct timespec slice = { 0, 100000000 };
	unsigned long completions = 0, bytes = 0;
	unsigned int next = 0;	/* the read that must complete next */
	io_context_t ctx = 0;
	struct io_event evs[ORDER_READS];
	uint64_t quiet = 0;
	pid_t child;
	int fd, r, got, i, k, status;
	int exited = 0;

	fd = open_cpu0();
	set_attr(fd, 0, 1, 0);
	if ((r = io_setup(ORDER_READS, &ctx)))
		die("io_setup: %s", strerror(-r));
	child = fire_later(n, 200);
	s.tgid = child;
	for (k = 0; k < ORDER_READS; k++) {
		io_prep_pread(&cbs[k], fd, bufs[k], ORDER_SIZE, 0);
		cbp = &cbs[k];
		if ((r = io_submit(ctx, 1, &cbp)) != 1)
			die("io_submit: %d (%s)", r, r < 0 ? strerror(-r) : "short");
	}
	/* Until the child is gone and the ring stayed empty for 1 s. */
	while (!exited || now_ns() - quiet < 1000000000ULL) {
		if (!exited && waitpid(child, &status, WNOHANG) == child) {
			exited = 1;
			quiet = now_ns();
		}
		r = io_getevents(ctx, 1, ORDER_READS, evs, &slice);
		if (r < 0 && r != -EINTR)
			die("io_getevents: %s", strerror(-r));
		for (i = 0; i < r; i++) {
			struct iocb *cb = evs[i].obj;
			long res = (long)evs[i].res;

			k = cb - cbs;
			if (k < 0 || k >= ORDER_READS)
				die("a completion for an unknown iocb");
			if ((unsigned int)k != next % ORDER_READS)
				die("after %u reads in order, the read of iocb %d completed where "
				    "iocb %u's, submitted before it, was due", next, k,
				    next % ORDER_READS);
			if (res <= 0)
				die("read %u: %ld (%s)", next, res, res < 0 ? strerror(-res) : "EOF");
			check_chunk(0, bufs[k], res, &s);
			bytes += res;
			completions++;
			next++;
			quiet = now_ns();
			cbp = cb;
			if ((got = io_submit(ctx, 1, &cbp)) != 1)
				die("io_submit: %d (%s)", got, got < 0 ? strerror(-got) : "short");
		}
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		die("the firing child failed");
	for (k = 0; k < ORDER_READS; k++) {
		r = io_cancel(ctx, &cbs[k], &evs[0]);
		if (r != -EINPROGRESS && r != 0)
			die("io_cancel: %d (%s)", r, strerror(-r));
	}
	for (k = 0; k < ORDER_READS; k++) {
		struct timespec sec = { 1, 0 };

		if (io_getevents(ctx, 1, 1, evs, &sec) != 1)
			die("a cancelled read did not complete within 1 s");
		if ((long)evs[0].res > 0)
			check_chunk(0, ((struct iocb *)evs[0].obj)->u.c.buf, evs[0].res, &s);
	}
	io_destroy(ctx);
	close(fd);
	if (s.ours > (unsigned long)n)
		die("%lu of our records read, %d fired: some twice", s.ours, n);
	if (s.ours + s.lost < (unsigned long)n)
		die("%lu of our records read and %lu lost, %d fired: records went missing",
		    s.ours, s.lost, n);
	if (completions < 2 * ORDER_READS)
		die("only %lu reads completed: the queue was never exercised", completions);
	printf("aio-order: %lu reads of %d queued completed in the order submitted with %lu "
	       "bytes; %lu of %d records ours, %lu lost\n", completions, ORDER_READS, bytes,
	       s.ours, n, s.lost);
	return 0;
}

/* io_uring by its system calls: one ring, SQ and CQ mapped. */
struct uring {
	int fd;
	unsigned int *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static void uring_init(struct uring *u)
{
	struct io_uring_params p;
	size_t sq_len, cq_len;
	unsigned char *sq, *cq;
	int single;

	memset(&p, 0, sizeof(p));
	u->fd = syscall(__NR_io_uring_setup, 8, &p);
	if (u->fd < 0)
		die("io_uring_setup: %s", strerror(errno));
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	single = p.features & IORING_FEAT_SINGLE_MMAP;
	if (single && cq_len > sq_len)
		sq_len = cq_len;
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd,
		  IORING_OFF_SQ_RING);
	cq = single ? sq : mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
				u->fd, IORING_OFF_CQ_RING);
	u->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || u->sqes == MAP_FAILED)
		die("mmap io_uring: %s", strerror(errno));
	u->sq_tail = (void *)(sq + p.sq_off.tail);
	u->sq_mask = (void *)(sq + p.sq_off.ring_mask);
	u->sq_array = (void *)(sq + p.sq_off.array);
	u->cq_head = (void *)(cq + p.cq_off.head);
	u->cq_tail = (void *)(cq + p.cq_off.tail);
	u->cq_mask = (void *)(cq + p.cq_off.ring_mask);
	u->cqes = (void *)(cq + p.cq_off.cqes);
}

static void uring_submit(struct uring *u, const struct io_uring_sqe *sqe)
{
	unsigned int tail = *u->sq_tail, i = tail & *u->sq_mask;
	int r;

	u->sqes[i] = *sqe;
	u->sq_array[i] = i;
	__atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
	r = syscall(__NR_io_uring_enter, u->fd, 1, 0, 0, NULL, 0);
	if (r != 1)
		die("io_uring_enter: %d (%s)", r, r < 0 ? strerror(errno) : "not submitted");
}

/* The next completion, waiting up to @ms; 0 if none came. */
static int uring_reap(struct uring *u, struct io_uring_cqe *cqe, int ms)
{
	uint64_t end = now_ns() + ms * 1000000ULL;

	for (;;) {
		unsigned int head = *u->cq_head;

		if (head != __atomic_load_n(u->cq_tail, __ATOMIC_ACQUIRE)) {
			*cqe = u->cqes[head & *u->cq_mask];
			__atomic_store_n(u->cq_head, head + 1, __ATOMIC_RELEASE);
			return 1;
		}
		if (now_ns() >= end)
			return 0;
		/* Runs our task work: a poll that fired re-issues the read there. */
		syscall(__NR_io_uring_enter, u->fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
		usleep(5000);
	}
}

static void uring_prep_read(struct io_uring_sqe *sqe, int fd, void *p, unsigned int len,
			    int flags)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_READ;
	sqe->flags = flags;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)p;
	sqe->len = len;
	sqe->user_data = 1;
}

/* A 64 KiB IORING_OP_READ, then getpid records on CPU 0: it completes with them. */
static int uring_read(int flags)
{
	int id = need_probe("kprobe", "__x64_sys_getpid"), fired = 2000, fd;
	struct seen s = { .event = id, .each = ck_gp3 };
	struct io_uring_sqe sqe;
	struct io_uring_cqe cqe;
	struct uring u;
	uint64_t t0, dt;
	pid_t child;

	fd = open_cpu0();
	uring_init(&u);
	uring_prep_read(&sqe, fd, buf, 65536, flags);
	t0 = now_ns();
	uring_submit(&u, &sqe);
	dt = now_ns() - t0;
	if (dt > 1000000000ULL)
		die("io_uring_enter took %llu ms to submit a read of an empty ring",
		    (unsigned long long)dt / 1000000);
	usleep(200000);
	child = fire_later(fired, 0);
	s.tgid = child;
	if (!uring_reap(&u, &cqe, 10000))
		die("the io_uring read never completed (%d getpid fired on CPU 0)", fired);
	waitpid(child, NULL, 0);
	if (cqe.user_data != 1 || cqe.res <= 0 || cqe.res > 65536 || cqe.res % 8)
		die("io_uring read completed with %d (%s)", cqe.res,
		    cqe.res < 0 ? strerror(-cqe.res) : "bytes");
	check_chunk(0, buf, cqe.res, &s);
	if (count_getpid(buf, cqe.res, id) != s.records || !s.ours)
		die("io_uring read: %lu records, %lu of them getpid, %lu ours", s.records,
		    count_getpid(buf, cqe.res, id), s.ours);
	close(u.fd);
	close(fd);
	printf("uring read: a 64 KiB IORING_OP_READ%s completed with %d bytes: %lu of our %d "
	       "getpid records, valid\n", flags ? " (IOSQE_ASYNC)" : "", cqe.res, s.ours, fired);
	return 0;
}

/*
 * A read of an idle ring, then IORING_OP_ASYNC_CANCEL (@cancel) or none:
 * either way the process exits (which cancels what is left) within
 * seconds. It runs in a child that the parent reaps, or reports stuck.
 */
static int uring_cancel(int cancel, int flags)
{
	uint64_t t0;
	pid_t pid;
	int st;

	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		unsigned long size = ring0(NULL, NULL);
		int fd = open_cpu0(), rres = 1, cres = 1;
		struct io_uring_sqe sqe;
		struct io_uring_cqe cqe;
		struct uring u;

		/* Nothing an idle ring does meets it, not a stray record either. */
		set_attr(fd, 0, size / 2 / MAGNET_RECORD_HEADER, 0);
		uring_init(&u);
		uring_prep_read(&sqe, fd, buf, 65536, flags);
		uring_submit(&u, &sqe);
		if (uring_reap(&u, &cqe, 500))
			die("an io_uring read of an idle ring completed (%d)", cqe.res);
		if (!cancel)
			_exit(0);	/* with the read in flight */
		memset(&sqe, 0, sizeof(sqe));
		sqe.opcode = IORING_OP_ASYNC_CANCEL;
		sqe.fd = -1;
		sqe.addr = 1;		/* the read's user_data */
		sqe.user_data = 2;
		uring_submit(&u, &sqe);
		for (int i = 0; i < 2; i++) {
			if (!uring_reap(&u, &cqe, 5000))
				die("IORING_OP_ASYNC_CANCEL: no %s completion within 5 s",
				    rres == 1 ? "read" : "cancel");
			if (cqe.user_data == 1)
				rres = cqe.res;
			else
				cres = cqe.res;
		}
		if (rres != -ECANCELED && rres != -EINTR)
			die("the cancelled read completed with %d, want ECANCELED or EINTR", rres);
		if (cres != 0 && cres != -EALREADY)
			die("IORING_OP_ASYNC_CANCEL completed with %d (%s)", cres, strerror(-cres));
		printf("uring cancel: the read completed with %s, the cancel with %s\n",
		       rres == -ECANCELED ? "ECANCELED" : "EINTR", cres ? "EALREADY" : "0");
		_exit(0);
	}
	t0 = now_ns();
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_ns() - t0 > 10000000000ULL) {
			char state = task_state(pid, pid);
			char where[128];

			snprintf(where, sizeof(where), "%s", wchan(pid));
			kill(pid, SIGKILL);
			usleep(2000000);
			if (waitpid(pid, &st, WNOHANG) == 0)
				die("io_uring read could not be cancelled: the reader (pid %d) is "
				    "stuck %s for 10 s (state %c in %s) and SIGKILL cannot end it",
				    pid, cancel ? "after IORING_OP_ASYNC_CANCEL" : "exiting", state,
				    where);
			die("io_uring read could not be cancelled: the reader (pid %d) did not "
			    "finish in 10 s (state %c in %s)", pid, state, where);
		}
		usleep(20000);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("the io_uring reader failed (status %#x)", st);
	printf("uring %s: the reader of an idle ring, %s, exited in %llu ms\n",
	       cancel ? "cancel" : "exit",
	       cancel ? "its read cancelled" : "its read in flight",
	       (unsigned long long)(now_ns() - t0) / 1000000);
	return 0;
}

static int cmd_uring(const char *mode)
{
	int flags = strstr(mode, "-async") ? IOSQE_ASYNC : 0;

	if (!strncmp(mode, "read", 4))
		return uring_read(flags);
	if (!strncmp(mode, "cancel", 6))
		return uring_cancel(1, flags);
	if (!strncmp(mode, "exit", 4))
		return uring_cancel(0, flags);
	die("unknown mode %s", mode);
	return 1;
}

/* ---- reads: timeouts, not waiting, cancelling (t-36) ---- */

/* Fire @n getpid on CPU 0 now and wait for them: they are in cpu0's ring. */
static void fire_now(int n)
{
	pid_t child = fire_later(n, 0);
	int st;

	if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
		die("the firing child failed (status %#x)", st);
}

/*
 * A timeout_ns too far away ever to come (U64_MAX, the usual "forever";
 * U64_MAX - 1; 2^63) never elapses: with 5 records there and a watermark of
 * 50, a blocking read and an AIO read return when the 50th record comes,
 * not at once with the 5 (now + timeout must not wrap into the past).
 */
#define FOREVER_WANT	50
#define FOREVER_EARLY	5
#define FOREVER_LATE_MS	500

static int cmd_forever(uint64_t timeout)
{
	int id = need_probe("kprobe", "__x64_sys_getpid"), fd, r;
	struct magnet_read_attr got;
	io_context_t ctx = 0;
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;
	struct timespec wait = { 0, 300000000 }, sec10 = { 10, 0 };
	unsigned long nrec, arec;
	uint64_t t0, dt, adt;
	pid_t child;
	long n;

	fd = open_cpu0();
	set_attr(fd, 0, FOREVER_WANT, timeout);
	if (ioctl(fd, MAGNET_IOC_GET_READ_ATTR, &got))
		die("MAGNET_IOC_GET_READ_ATTR: %s", strerror(errno));
	if (got.timeout_ns != timeout || got.watermark_records != FOREVER_WANT)
		die("GET_READ_ATTR gives timeout_ns %llu, watermark_records %llu; %llu and %d were set",
		    (unsigned long long)got.timeout_ns, (unsigned long long)got.watermark_records,
		    (unsigned long long)timeout, FOREVER_WANT);

	/* A blocking read: 5 records there, the other 45 come 500 ms later. */
	fire_now(FOREVER_EARLY);
	child = fire_later(FOREVER_WANT - FOREVER_EARLY, FOREVER_LATE_MS);
	arm_alarm(10);
	t0 = now_ns();
	n = read(fd, buf, BUF_SIZE);
	dt = now_ns() - t0;
	alarm(0);
	waitpid(child, NULL, 0);
	if (n < 0)
		die("read with timeout_ns %llu: %s%s", (unsigned long long)timeout, strerror(errno),
		    timed_out ? " after 10 s: the 50th record did not end it" : "");
	nrec = count_getpid(buf, n, id);
	if (dt < (FOREVER_LATE_MS - 100) * 1000000ULL || nrec < FOREVER_WANT)
		die("a read waiting for %d records with timeout_ns %llu returned after %llu ms with "
		    "%lu (the %d there): the timeout expired at once", FOREVER_WANT,
		    (unsigned long long)timeout, (unsigned long long)dt / 1000000, nrec,
		    FOREVER_EARLY);

	/* An AIO read: queued with 5 records there, completed by the 50th. */
	fire_now(FOREVER_EARLY);
	if ((r = io_setup(1, &ctx)))
		die("io_setup: %s", strerror(-r));
	io_prep_pread(&cb, fd, buf, BUF_SIZE, 0);
	t0 = now_ns();
	if ((r = io_submit(ctx, 1, cbs)) != 1)
		die("io_submit: %d (%s)", r, r < 0 ? strerror(-r) : "short");
	if (io_getevents(ctx, 1, 1, &ev, &wait) != 0)
		die("an AIO read waiting for %d records with timeout_ns %llu completed at once with "
		    "%ld bytes (%lu records, the %d there): the timeout expired at once",
		    FOREVER_WANT, (unsigned long long)timeout, (long)ev.res,
		    (long)ev.res > 0 ? count_getpid(buf, ev.res, id) : 0, FOREVER_EARLY);
	fire_now(FOREVER_WANT - FOREVER_EARLY);
	if (io_getevents(ctx, 1, 1, &ev, &sec10) != 1)
		die("the AIO read did not complete within 10 s of its %dth record", FOREVER_WANT);
	adt = now_ns() - t0;
	if ((long)ev.res <= 0)
		die("the AIO read completed with %ld", (long)ev.res);
	arec = count_getpid(buf, ev.res, id);
	if (arec < FOREVER_WANT)
		die("the AIO read completed with %lu records, want %d", arec, FOREVER_WANT);
	io_destroy(ctx);
	close(fd);
	printf("forever: timeout_ns %llu never elapsed: a read waiting for %d records returned "
	       "after %llu ms with %lu, an AIO read after %llu ms with %lu (%d there from the "
	       "start)\n", (unsigned long long)timeout, FOREVER_WANT,
	       (unsigned long long)dt / 1000000, nrec, (unsigned long long)adt / 1000000, arec,
	       FOREVER_EARLY);
	return 0;
}

/*
 * A child on CPU 0 that calls getpid() once per byte it reads from @cmd and
 * answers each with a byte on @ack: one record, at a time we choose.
 */
static pid_t one_shot_firer(int cmd[2], int ack[2])
{
	pid_t pid;
	char c;

	if (pipe(cmd) || pipe(ack))
		die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid == 0) {
		pin(0);
		close(cmd[1]);
		close(ack[0]);
		while (read(cmd[0], &c, 1) == 1) {
			my_getpid();
			if (write(ack[1], &c, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(cmd[0]);
	close(ack[1]);
	return pid;
}

/*
 * A queued AIO read whose timeout elapses while the worker decides to
 * wait: with one record there and a watermark far above it, each read must
 * complete soon after its timeout, wherever the timeout falls. Read i
 * waits i us: the sweep crosses the worker's start-up delay (about 200 us
 * on Debian's 6.1 in TCG, 700 us on the debug kernel), where some timeouts
 * elapse between its arming of the ring and its setting of the timer.
 */
static int cmd_aio_deadline(int n)
{
	int id = need_probe("kprobe", "__x64_sys_getpid"), cmd[2], ack[2], fd, r, i;
	struct iocb cb, *cbs[1] = { &cb };
	struct timespec wait = { 2, 0 };
	uint64_t worst = 0, t0, dt, timeout;
	io_context_t ctx = 0;
	struct io_event ev;
	pid_t child;
	char c = 1;

	fd = open_cpu0();
	child = one_shot_firer(cmd, ack);
	if ((r = io_setup(1, &ctx)))
		die("io_setup: %s", strerror(-r));
	for (i = 0; i < n; i++) {
		timeout = (i + 1) * 1000ULL;
		set_attr(fd, 65536, 0, timeout);
		if (write(cmd[1], &c, 1) != 1 || read(ack[0], &c, 1) != 1)
			die("the firing child is gone");
		io_prep_pread(&cb, fd, buf, BUF_SIZE, 0);
		t0 = now_ns();
		if ((r = io_submit(ctx, 1, cbs)) != 1)
			die("io_submit: %d (%s)", r, r < 0 ? strerror(-r) : "short");
		if (io_getevents(ctx, 1, 1, &ev, &wait) != 1)
			die("read %d: an AIO read with timeout_ns %llu, one record there and a "
			    "watermark of 64 KiB, still queued 2 s later: its timeout was lost",
			    i, (unsigned long long)timeout);
		dt = now_ns() - t0;
		if ((long)ev.res <= 0 || !count_getpid(buf, ev.res, id))
			die("read %d: completed with %ld, no getpid record: want the one fired",
			    i, (long)ev.res);
		if (dt > worst)
			worst = dt;
	}
	close(cmd[1]);
	waitpid(child, NULL, 0);
	io_destroy(ctx);
	close(fd);
	printf("aio-deadline: %d AIO reads with timeouts of 1 to %d us each completed with "
	       "their one record, the slowest after %llu ms\n", n, n,
	       (unsigned long long)worst / 1000000);
	return 0;
}

/*
 * A thread of ours in read() of a data file, its copy to user memory
 * stopped on a userfaultfd page: it holds the file's read lock, for sure,
 * until hold_release() gives the page.
 */
struct holder {
	int fd, uffd, done, err;
	unsigned char *mem;
	size_t len, count;
	long n;
	pthread_t th;
};

static void *hold_reader(void *arg)
{
	struct holder *h = arg;

	h->n = read(h->fd, h->mem, h->count);
	h->err = errno;
	__atomic_store_n(&h->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The read is of @count bytes into @len of userfaultfd memory; 0 if the
 * kernel has no userfaultfd.
 */
static int hold_start(struct holder *h, int fd, size_t len, size_t count)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct pollfd p;
	struct uffd_msg msg;
	int r;

	memset(h, 0, sizeof(*h));
	h->uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (h->uffd < 0 && errno == ENOSYS)
		return 0;
	if (h->uffd < 0)
		die("userfaultfd: %s", strerror(errno));
	if (ioctl(h->uffd, UFFDIO_API, &api))
		die("UFFDIO_API: %s", strerror(errno));
	h->fd = fd;
	h->len = len;
	h->count = count;
	h->mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h->mem == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	reg.range.start = (uintptr_t)h->mem;
	reg.range.len = len;
	if (ioctl(h->uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER: %s", strerror(errno));
	if ((r = pthread_create(&h->th, NULL, hold_reader, h)))
		die("pthread_create: %s", strerror(r));
	p.fd = h->uffd;
	p.events = POLLIN;
	if (poll(&p, 1, 10000) != 1)
		die("the reading thread never reached its copy (read %s)",
		    __atomic_load_n(&h->done, __ATOMIC_ACQUIRE) ? "returned" : "waits");
	if (read(h->uffd, &msg, sizeof(msg)) != sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT)
		die("userfaultfd: no page fault message");
	return 1;
}

/* Give the page: the held read finishes; the bytes it read, or -1 and errno. */
static long hold_release(struct holder *h)
{
	struct uffdio_zeropage z = { .range = { (uintptr_t)h->mem, h->len } };

	if (ioctl(h->uffd, UFFDIO_ZEROPAGE, &z))
		die("UFFDIO_ZEROPAGE: %s", strerror(errno));
	pthread_join(h->th, NULL);
	close(h->uffd);
	errno = h->err;
	return h->n;
}

/* A call that must not sleep, made in a thread: the caller can see it hang. */
enum nowait_kind { NOWAIT_PREADV2, NOWAIT_LIBAIO, NOWAIT_URING };

struct nowait_call {
	enum nowait_kind kind;
	int fd, done, err, stay;
	pid_t tid;
	pthread_t th;
	long ret;
	uint64_t ns;
	io_context_t ctx;
	struct iocb cb;
	struct uring *u;
};

static unsigned char nowait_buf[65536] __attribute__((aligned(4096)));

static void *nowait_thread(void *arg)
{
	struct nowait_call *c = arg;
	struct iovec iov = { nowait_buf, sizeof(nowait_buf) };
	struct iocb *cbs[1] = { &c->cb };
	struct io_uring_sqe sqe;
	uint64_t t0;

	__atomic_store_n(&c->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	t0 = now_ns();
	switch (c->kind) {
	case NOWAIT_PREADV2:
		c->ret = preadv2(c->fd, &iov, 1, -1, RWF_NOWAIT);
		break;
	case NOWAIT_LIBAIO:
		io_prep_pread(&c->cb, c->fd, nowait_buf, sizeof(nowait_buf), 0);
		c->cb.aio_rw_flags = RWF_NOWAIT;
		c->ret = io_submit(c->ctx, 1, cbs);
		break;
	case NOWAIT_URING:
		uring_prep_read(&sqe, c->fd, nowait_buf, sizeof(nowait_buf), 0);
		uring_submit(c->u, &sqe);
		c->ret = 1;
		break;
	}
	c->err = errno;
	c->ns = now_ns() - t0;
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	/*
	 * io_uring retries the read in this thread's io-wq, and a thread's
	 * exit waits for its io-wq: stay until the read is done.
	 */
	while (__atomic_load_n(&c->stay, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

static void nowait_join(struct nowait_call *c)
{
	__atomic_store_n(&c->stay, 0, __ATOMIC_RELEASE);
	pthread_join(c->th, NULL);
}

static const char *nowait_name[] = {
	[NOWAIT_PREADV2] = "preadv2(RWF_NOWAIT)",
	[NOWAIT_LIBAIO] = "io_submit of an RWF_NOWAIT read",
	[NOWAIT_URING] = "io_uring_enter submitting an IORING_OP_READ (its first try is IOCB_NOWAIT)",
};

/*
 * Make the call; it must return within 2 s. Else say where it sleeps,
 * give the held page (which lets it go on) and fail.
 */
static void nowait_call(struct nowait_call *c, struct holder *h)
{
	uint64_t t0 = now_ns();
	int r;

	c->done = 0;
	c->tid = 0;
	c->stay = c->kind == NOWAIT_URING;
	if ((r = pthread_create(&c->th, NULL, nowait_thread, c)))
		die("pthread_create: %s", strerror(r));
	while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) && now_ns() - t0 < 2000000000ULL)
		usleep(10000);
	if (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
		pid_t tid = __atomic_load_n(&c->tid, __ATOMIC_ACQUIRE);
		char state = task_state(self, tid), where[128];

		snprintf(where, sizeof(where), "%s", wchan(tid));
		if (h)
			hold_release(h);
		nowait_join(c);
		die("%s did not return in 2 s%s (state %c in %s)", nowait_name[c->kind],
		    h ? " while another read held the file's read lock: it slept until the lock "
		    "was free" : "", state, where);
	}
	if (!c->stay)
		nowait_join(c);
}

/*
 * A read that must not wait never sleeps. While another read holds the
 * file's read lock (a thread's read() whose copy waits on a userfaultfd
 * page), with records there: io_uring's first try of a read (IOCB_NOWAIT)
 * returns, and the read completes once the lock is free; preadv2 and
 * libaio with RWF_NOWAIT are EAGAIN at once. With the lock free,
 * RWF_NOWAIT is EAGAIN on an empty ring and takes the records there.
 */
static int cmd_nowait(void)
{
	int id = need_probe("kprobe", "__x64_sys_getpid"), fd, r, held;
	struct nowait_call c = { 0 }, uc = { 0 };
	struct io_event ev;
	struct timespec sec5 = { 5, 0 };
	struct io_uring_cqe cqe;
	struct holder h;
	struct uring u;
	uint64_t pre_ns = 0, aio_ns = 0, uring_ns = 0;
	unsigned long used;
	long n;

	fd = open_cpu0();
	set_attr(fd, 0, 1, 0);
	c.fd = fd;
	/* A read of exactly the records there holds the lock; 20 more come behind it. */
	fire_now(20);
	ring0(NULL, &used);
	held = hold_start(&h, fd, 65536, used + MAGNET_RECORD_HEADER - 1);
	if (held) {
		fire_now(20);
		uring_init(&u);
		uc.fd = fd;
		uc.u = &u;
		uc.kind = NOWAIT_URING;
		nowait_call(&uc, &h);
		uring_ns = uc.ns;

		c.kind = NOWAIT_PREADV2;
		nowait_call(&c, &h);
		if (c.ret != -1 || c.err != EAGAIN)
			die("preadv2(RWF_NOWAIT) with the read lock held: %ld (%s), want EAGAIN",
			    c.ret, c.ret < 0 ? strerror(c.err) : "bytes");
		pre_ns = c.ns;

		if ((r = io_setup(1, &c.ctx)))
			die("io_setup: %s", strerror(-r));
		c.kind = NOWAIT_LIBAIO;
		nowait_call(&c, &h);
		if (c.ret != 1)
			die("io_submit of an RWF_NOWAIT read: %ld (%s)", c.ret,
			    c.ret < 0 ? strerror(-c.ret) : "short");
		if (io_getevents(c.ctx, 1, 1, &ev, &sec5) != 1 || (long)ev.res != -EAGAIN)
			die("an RWF_NOWAIT AIO read with the read lock held completed with %ld, "
			    "want EAGAIN", (long)ev.res);
		aio_ns = c.ns;
		io_destroy(c.ctx);

		if (__atomic_load_n(&h.done, __ATOMIC_ACQUIRE))
			die("the held read() returned before its page was given");
		n = hold_release(&h);
		if (n != (long)used)
			die("the held read(): %ld (%s), want the %lu bytes there when it began", n,
			    n < 0 ? strerror(errno) : "bytes", used);
		/* io_uring tries the read again, blocking, once the lock is free. */
		if (!uring_reap(&u, &cqe, 5000))
			die("the io_uring read did not complete within 5 s of the lock's release");
		if (cqe.res <= 0 || count_getpid(nowait_buf, cqe.res, id) != 20)
			die("the io_uring read completed with %d (%s), want the 20 records fired "
			    "behind the held read", cqe.res, cqe.res < 0 ? strerror(-cqe.res) : "bytes");
		nowait_join(&uc);
		close(u.fd);
	} else {
		/* Take the 20 records: the ring is empty, as below expects. */
		fcntl(fd, F_SETFL, O_NONBLOCK);
		while (read(fd, buf, BUF_SIZE) > 0)
			;
		fcntl(fd, F_SETFL, 0);
	}

	c.kind = NOWAIT_PREADV2;
	nowait_call(&c, NULL);
	if (c.ret != -1 || c.err != EAGAIN)
		die("preadv2(RWF_NOWAIT) of an empty ring: %ld (%s), want EAGAIN", c.ret,
		    c.ret < 0 ? strerror(c.err) : "bytes");
	fire_now(20);
	nowait_call(&c, NULL);
	if (c.ret <= 0 || count_getpid(nowait_buf, c.ret, id) != 20)
		die("preadv2(RWF_NOWAIT) of 20 records: %ld (%s)", c.ret,
		    c.ret < 0 ? strerror(c.err) : "bytes");
	close(fd);
	if (!held) {
		printf("nowait: RWF_NOWAIT: EAGAIN on an empty ring, 20 of 20 records when there; "
		       "no userfaultfd in this kernel: not tested with the read lock held\n");
		return 0;
	}
	printf("nowait: with the read lock held by a read() stopped in its copy and 20 records "
	       "there, io_uring's submission returned in %llu us (its read completed with the 20 "
	       "once the lock was free), preadv2(RWF_NOWAIT) was EAGAIN in %llu us, libaio's "
	       "in %llu us; with the lock free, RWF_NOWAIT was EAGAIN on an empty ring and took "
	       "20 of 20 records\n", (unsigned long long)uring_ns / 1000,
	       (unsigned long long)pre_ns / 1000, (unsigned long long)aio_ns / 1000);
	return 0;
}

/* CPU time of the kernel's kworker threads, in clock ticks. */
static unsigned long kworker_ticks(void)
{
	unsigned long sum = 0, ut, st;
	char path[300], line[512], *p;
	struct dirent *e;
	DIR *d = opendir("/proc");
	FILE *f;

	if (!d)
		die("opendir /proc: %s", strerror(errno));
	while ((e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		fclose(f);
		p = strrchr(line, ')');
		if (!strstr(line, "(kworker") || !p)
			continue;
		/* After the comm: state ppid pgrp session tty tpgid flags, 4 fault counts. */
		if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
			   &st) == 2)
			sum += ut + st;
	}
	closedir(d);
	return sum;
}

/* The kworkers' share of one CPU over @ms, in percent. */
static unsigned long kworker_busy(int ms)
{
	unsigned long t0 = kworker_ticks();

	usleep(ms * 1000);
	return (kworker_ticks() - t0) * 100 * 1000 / sysconf(_SC_CLK_TCK) / ms;
}

/*
 * An AIO read being served, that another read of the file holds up: the
 * AIO worker has taken it off the queue, its records are there, but a
 * read() of another thread holds the read lock (its copy stopped on a
 * userfaultfd page). Overwrite-mode writers voiding the read put the
 * worker in the same place (its try gives way, and comes back), but
 * cannot be provoked here: the guest's vCPUs take turns on one host
 * thread, and a 64 KiB copy always fits in one turn.
 *
 * The request must still complete with -ECANCELED within 5 s, having
 * taken nothing, when it is cancelled (io_cancel), its context destroyed
 * (io_destroy) or its submitter exits; no kworker spins meanwhile or after.
 */
#define HELD_FIRED	10

struct held {
	int fd;
	struct holder h;
	unsigned long used;	/* bytes the held read takes */
	io_context_t ctx;
	struct iocb cb;
	unsigned long busy;	/* the kworkers' %CPU while the read is held up */
};

/* Give the page (the held read ends), then fail. */
static void held_fail(struct held *hd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

static void held_fail(struct held *hd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!__atomic_load_n(&hd->h.done, __ATOMIC_ACQUIRE))
		hold_release(&hd->h);
	die("%s", msg);
}

/* The lock held by a read() stopped in its copy; 0 without userfaultfd. */
static int held_start(struct held *hd)
{
	char mode[32];

	if (ring0(mode, NULL) != 65536 || strcmp(mode, "overwrite"))
		die("needs a 64 KiB overwrite-mode ring; cpu0's is %s", mode);
	hd->fd = open_cpu0();
	set_attr(hd->fd, 0, 1, 0);
	/* A read of exactly what is there: it takes the lock, and no more. */
	fire_now(HELD_FIRED);
	ring0(NULL, &hd->used);
	return hold_start(&hd->h, hd->fd, 65536, hd->used + MAGNET_RECORD_HEADER - 1);
}

/* Queue a 64 KiB AIO read, give it records: the worker takes it, and is held up. */
static void held_submit(struct held *hd)
{
	struct iocb *cbs[1] = { &hd->cb };
	struct timespec zero = { 0, 0 };
	struct io_event ev;
	int r;

	if ((r = io_setup(1, &hd->ctx)))
		held_fail(hd, "io_setup: %s", strerror(-r));
	io_prep_pread(&hd->cb, hd->fd, buf, 65536, 0);
	if ((r = io_submit(hd->ctx, 1, cbs)) != 1)
		held_fail(hd, "io_submit: %d (%s)", r, r < 0 ? strerror(-r) : "short");
	fire_now(HELD_FIRED);
	hd->busy = kworker_busy(500);
	if (io_getevents(hd->ctx, 0, 1, &ev, &zero) != 0)
		held_fail(hd, "the AIO read completed (%ld) while another read held the lock",
			  (long)ev.res);
	if (hd->busy > 30)
		held_fail(hd, "the kworkers kept %lu%% of a CPU busy while the read lock was held",
			  hd->busy);
}

/*
 * Give the page: the held read returns what was there; then the records
 * fired behind it must all still be in the ring, not taken by the request
 * that completed without them.
 */
static void held_end(struct held *hd)
{
	int id = need_probe("kprobe", "__x64_sys_getpid");
	unsigned long n;
	long got;

	got = hold_release(&hd->h);
	if (got != (long)hd->used)
		die("the held read() took %ld bytes (%s), want the %lu there", got,
		    got < 0 ? strerror(errno) : "not", hd->used);
	usleep(300000);		/* time for a worker that would take them anyway */
	fcntl(hd->fd, F_SETFL, O_NONBLOCK);
	got = read(hd->fd, buf, BUF_SIZE);
	n = got > 0 ? count_getpid(buf, got, id) : 0;
	if (n != HELD_FIRED)
		die("%lu of the %d records fired for the AIO read are left in the ring (read: %ld, "
		    "%s): the request took them", n, HELD_FIRED, got,
		    got < 0 ? strerror(errno) : "bytes");
	close(hd->fd);
}

static void *destroy_thread(void *arg)
{
	io_destroy(*(io_context_t *)arg);
	return NULL;
}

static int cmd_aio_held(const char *mode)
{
	struct timespec sec5 = { 5, 0 };
	struct held hd = { 0 };
	struct io_event ev;
	unsigned long idle;
	uint64_t t0, dt;
	int r, st;

	if (!held_start(&hd)) {
		printf("aio-held %s: no userfaultfd in this kernel: a read cannot be held up, "
		       "not tested\n", mode);
		return 0;
	}
	if (!strcmp(mode, "cancel")) {
		held_submit(&hd);
		t0 = now_ns();
		r = io_cancel(hd.ctx, &hd.cb, &ev);
		if (r != -EINPROGRESS && r != 0)
			held_fail(&hd, "io_cancel: %d (%s)", r, strerror(-r));
		r = io_getevents(hd.ctx, 1, 1, &ev, &sec5);
		dt = now_ns() - t0;
		if (r != 1) {
			hold_release(&hd.h);
			r = io_getevents(hd.ctx, 1, 1, &ev, &sec5);
			die("the cancelled AIO read did not complete within 5 s; once the other read "
			    "let go of the lock it %s %ld", r == 1 ? "completed with" : "still had not "
			    "completed:", r == 1 ? (long)ev.res : (long)r);
		}
		if ((long)ev.res != -ECANCELED)
			held_fail(&hd, "the cancelled AIO read completed with %ld, want ECANCELED",
				  (long)ev.res);
		idle = kworker_busy(1000);
		io_destroy(hd.ctx);
	} else if (!strcmp(mode, "destroy")) {
		pthread_t th;

		held_submit(&hd);
		t0 = now_ns();
		if ((r = pthread_create(&th, NULL, destroy_thread, &hd.ctx)))
			held_fail(&hd, "pthread_create: %s", strerror(r));
		/* io_destroy() returns once the request has completed. */
		while (pthread_tryjoin_np(th, NULL) && now_ns() - t0 < 5000000000ULL)
			usleep(10000);
		dt = now_ns() - t0;
		if (dt >= 5000000000ULL) {
			hold_release(&hd.h);
			pthread_join(th, NULL);
			die("io_destroy did not return within 5 s; it did %llu ms after the other "
			    "read let go of the lock", (unsigned long long)(now_ns() - t0 - dt) / 1000000);
		}
		idle = kworker_busy(1000);
	} else if (!strcmp(mode, "exit")) {
		int go[2], ready[2];
		char c = 0;
		pid_t pid;

		/* The submitter is a child sharing the open file; the lock stays held here. */
		if (pipe(go) || pipe(ready))
			held_fail(&hd, "pipe: %s", strerror(errno));
		pid = fork();
		if (pid < 0)
			held_fail(&hd, "fork: %s", strerror(errno));
		if (pid == 0) {
			struct iocb *cbs[1] = { &hd.cb };

			if (io_setup(1, &hd.ctx))
				_exit(2);
			io_prep_pread(&hd.cb, hd.fd, buf, 65536, 0);
			if (io_submit(hd.ctx, 1, cbs) != 1)
				_exit(3);
			if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
				_exit(4);
			_exit(0);	/* with the read held up */
		}
		if (read(ready[0], &c, 1) != 1)
			held_fail(&hd, "the submitter failed");
		fire_now(HELD_FIRED);
		hd.busy = kworker_busy(500);
		t0 = now_ns();
		if (write(go[1], &c, 1) != 1)
			held_fail(&hd, "write: %s", strerror(errno));
		/* Its exit cancels the read, and waits for it (exit_aio). */
		while (!waitpid(pid, &st, WNOHANG) && now_ns() - t0 < 5000000000ULL)
			usleep(10000);
		dt = now_ns() - t0;
		if (dt >= 5000000000ULL)
			held_fail(&hd, "the submitter (pid %d) did not finish exiting within 5 s "
				  "(state %c in %s)", pid, task_state(pid, pid), wchan(pid));
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			held_fail(&hd, "the submitter failed (status %#x)", st);
		idle = kworker_busy(1000);
	} else {
		held_fail(&hd, "unknown mode %s", mode);
	}
	if (idle > 30)
		held_fail(&hd, "the kworkers kept %lu%% of a CPU busy after the read completed",
			  idle);
	held_end(&hd);
	printf("aio-held %s: a 64 KiB AIO read being served, held up by another read that holds "
	       "the lock (kworkers %lu%% busy meanwhile): %s in %llu ms, its %d records left in "
	       "the ring; kworkers %lu%% busy after\n", mode, hd.busy,
	       !strcmp(mode, "cancel") ? "io_cancel completed it with ECANCELED" :
	       !strcmp(mode, "destroy") ? "io_destroy returned" :
	       "its submitter exited (cancelling it)", (unsigned long long)dt / 1000000,
	       HELD_FIRED, idle);
	return 0;
}

int main(int argc, char **argv)
{
	buf = aligned_alloc(4096, BUF_SIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "getpid"))
		return cmd_getpid(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "args"))
		return cmd_args(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "account"))
		return cmd_account(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "overwrite"))
		return cmd_overwrite(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "deliver"))
		return cmd_deliver(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "mmap"))
		return cmd_mmap(atoi(argv[2]));
	if (argc >= 2 && !strcmp(argv[1], "mmap-overwrite"))
		return cmd_mmap_overwrite();
	if (argc >= 2 && !strcmp(argv[1], "ebusy"))
		return cmd_ebusy();
	if (argc >= 3 && !strcmp(argv[1], "hold"))
		return cmd_hold(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "fire"))
		return cmd_fire(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "fire-n"))
		return cmd_fire_n(atoi(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "setuid-fire"))
		return cmd_setuid_fire(atoi(argv[2]), atoi(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "sock"))
		return cmd_sock(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "capture"))
		return cmd_capture(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "halfwake"))
		return cmd_halfwake(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "attr-limits"))
		return cmd_attr_limits();
	if (argc >= 2 && !strcmp(argv[1], "aio-sync"))
		return cmd_aio_sync();
	if (argc >= 2 && !strcmp(argv[1], "aio-cancel2"))
		return cmd_aio_cancel2();
	if (argc >= 3 && !strcmp(argv[1], "aio-order"))
		return cmd_aio_order(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "uring"))
		return cmd_uring(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "aio-held"))
		return cmd_aio_held(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "nowait"))
		return cmd_nowait();
	if (argc >= 3 && !strcmp(argv[1], "forever"))
		return cmd_forever(strtoull(argv[2], NULL, 0));
	if (argc >= 3 && !strcmp(argv[1], "aio-deadline"))
		return cmd_aio_deadline(atoi(argv[2]));
	fprintf(stderr, "usage: mgtest getpid|args|account|overwrite|fire-n|capture|sock|mmap N | deliver MODE | ebusy | hold MODE | fire SECONDS\n"
		"       mgtest mmap-overwrite\n"
		"       mgtest halfwake overwrite|discard | attr-limits | aio-sync | aio-cancel2 | aio-order N |\n"
		"       mgtest uring read|cancel|exit[-async]\n"
		"       mgtest forever TIMEOUT_NS | nowait | aio-held cancel|destroy|exit | aio-deadline N\n");
	return 1;
}
