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
 *                                timeout | aio-cancel
 *   mgtest ebusy                 a second open of a cpu file fails
 *   mgtest hold MODE             block forever in read | poll | aio
 *   mgtest fire SECONDS          getpid as fast as possible (a load)
 *   mgtest fire-n N              exactly N getpid, nothing else
 *   mgtest sock N                N TCP sends on 127.0.0.1: the sock handler
 *                                names both ends (needs tcp_sendmsg with
 *                                handler sock)
 *   mgtest capture N             captured write and read buffers (needs
 *                                kprobe:vfs_write:3:64@1 and
 *                                kretprobe:vfs_read:3:64@1)
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <arpa/inet.h>
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
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/magnet.h>

#define DIR_PATH	"/sys/kernel/debug/magnet"
#define MAX_CPUS	64
#define BUF_SIZE	(1 << 20)

static int ncpus;
static int self;	/* our tgid: calling getpid() later would fire the probe */
static int fds[MAX_CPUS];
static unsigned char *buf;

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
	char path[64];

	self = getpid();	/* once, before the workload: it fires the probe */
	ncpus = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpus > MAX_CPUS)
		ncpus = MAX_CPUS;
	for (int c = 0; c < ncpus; c++) {
		snprintf(path, sizeof(path), DIR_PATH "/cpu%d", c);
		fds[c] = open(path, O_RDONLY | flags);
		if (fds[c] < 0)
			die("open %s: %s", path, strerror(errno));
	}
}

/* What a drain saw, for the checks. */
struct seen {
	unsigned long records, ours, lost;
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
		if (rec->event_id == MAGNET_EVENT_LOST) {
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

		if (rec->event_id == MAGNET_EVENT_LOST)
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
	struct seen s = { .event = need_probe("kprobe", "__x64_sys_getpid"), .tgid = getpid(),
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
	int kp = need_probe("kprobe", "vfs_read"), kr = need_probe("kretprobe", "vfs_read");
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
	probe_id("kprobe", "__x64_sys_getpid", &hits);
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
	fd = open(DIR_PATH "/cpu0", O_RDONLY);
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

static int cmd_ebusy(void)
{
	int a = open(DIR_PATH "/cpu0", O_RDONLY), b;

	if (a < 0)
		die("first open: %s", strerror(errno));
	b = open(DIR_PATH "/cpu0", O_RDONLY);
	if (b >= 0 || errno != EBUSY)
		die("second open: %d (%s), want EBUSY", b, strerror(errno));
	close(a);
	b = open(DIR_PATH "/cpu0", O_RDONLY);
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
	int fd = open(DIR_PATH "/cpu0", O_RDONLY);

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
	struct seen s = { .event = need_probe("kprobe", "tcp_sendmsg"), .tgid = getpid(),
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
	if (argc >= 2 && !strcmp(argv[1], "ebusy"))
		return cmd_ebusy();
	if (argc >= 3 && !strcmp(argv[1], "hold"))
		return cmd_hold(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "fire"))
		return cmd_fire(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "fire-n"))
		return cmd_fire_n(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "sock"))
		return cmd_sock(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "capture"))
		return cmd_capture(atoi(argv[2]));
	fprintf(stderr, "usage: mgtest getpid|args|account|overwrite|fire-n|capture|sock N | deliver MODE | ebusy | hold MODE | fire SECONDS\n");
	return 1;
}
