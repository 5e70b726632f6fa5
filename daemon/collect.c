// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's collection thread; see collect.h.
 *
 *   attach ──► run (poll: the rings or the aio eventfd; control) ──► detach
 *     ▲                                                       │
 *     └──── wait for the module (release, EOF, read error) ◄──┘
 *
 * Stop and release requests reach the thread through the control
 * eventfd; counters are atomics any thread may read.
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "collect.h"
#include "record.h"
#include "rings.h"

#define REAP_NS		(2000 * 1000000ULL)

enum { REQ_NONE, REQ_RELEASE, REQ_STOP };
enum why { WHY_STOP, WHY_RELEASE, WHY_GONE, WHY_NONE };

struct ring_file;

/* One of a ring's reads: its buffer, and the iocb while outstanding. */
struct read_slot {
	struct ring_file *f;
	bool busy;
	unsigned char *buf;
	struct iocb iocb;
};

struct ring_file {
	unsigned int cpu;
	int fd;
	unsigned int busy;		/* reads outstanding */
	struct read_slot slots[MG_COLLECT_READS];
	/* Mapped: the ring, and the span [tail, commit) it holds. */
	const unsigned char *map;
	__u64 map_size, tail, commit, held;
	size_t watermark;		/* the read condition's bytes */
};

struct cpu_counts {
	_Atomic __u64 records, bytes, full, too_big, nesting, overwritten, fair;
};

struct mg_collect {
	struct mg_collect_cfg cfg;
	char dir[PATH_MAX];
	mg_collect_sink sink;
	void *sink_arg;
	mg_collect_log log;
	void *log_arg;

	unsigned int nfiles;		/* cpuN files, fixed at start */
	unsigned int ncpus;		/* highest N + 1 */
	struct ring_file *files;
	struct cpu_counts *counts;	/* ncpus */
	io_context_t ctx;
	int aio_efd, ctl_efd;
	bool attached;
	bool mapped;			/* this attach reads the rings in place */
	struct pollfd *pfd;		/* mapped: ctl_efd, then the rings */
	ino_t dir_ino;			/* of the module load we read */
	ino_t sized_ino;		/* of the load whose rings we sized */
	_Atomic unsigned long ring_size;

	_Atomic int request;
	_Atomic bool up;
	_Atomic unsigned int reloads;
	pthread_mutex_t lock;		/* version */
	struct mg_sensor_version version;
	pthread_t thread;
	bool started, stopped;
};

__attribute__((format(printf, 3, 4)))
static void logf_(struct mg_collect *c, int prio, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!c->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->log(c->log_arg, prio, msg);
}

static int submit(struct mg_collect *c, struct read_slot *s)
{
	struct ring_file *f = s->f;
	struct iocb *iocbs[1] = { &s->iocb };
	int r;

	io_prep_pread(&s->iocb, f->fd, s->buf, c->cfg.read_buffer, 0);
	io_set_eventfd(&s->iocb, c->aio_efd);
	s->iocb.data = s;
	r = io_submit(c->ctx, 1, iocbs);
	if (r != 1)
		return r < 0 ? r : -EAGAIN;
	s->busy = true;
	f->busy++;
	return 0;
}

/*
 * Count the records of a read and hand the whole ones to the sink. A
 * ring's reads complete in the order they took its records (collect.h).
 */
static void deliver(struct mg_collect *c, struct ring_file *f,
		    const unsigned char *buf, size_t n)
{
	struct cpu_counts *k = &c->counts[f->cpu];
	const struct magnet_record *rec;
	struct magnet_lost lost = { 0 };
	__u64 events = 0, tasks = 0, fair = 0;
	size_t off = 0;
	int r;

	while ((r = mg_record_next(buf, n, &off, &rec)) == 1) {
		if (mg_record_is_lost(rec))
			mg_lost_add(&lost, mg_record_lost(rec));
		else if (mg_record_is_job_lost(rec))
			fair += mg_record_job_lost(rec);
		else if (mg_record_is_task(rec))
			tasks++;	/* TASK records are not events */
		else
			events++;
	}
	if (r < 0)	/* from a ring, a kernel bug: keep what is sound */
		logf_(c, LOG_ERR, "cpu%u: corrupt record at byte %zu of a read: %s; %zu bytes dropped",
		      f->cpu, off, mg_record_strerror(r), n - off);
	if (!off)
		return;
	/* Counted after: what STATS says was read, the sink has had. */
	c->sink(c->sink_arg, f->cpu, buf, off, events, tasks);
	atomic_fetch_add(&k->records, events);
	atomic_fetch_add(&k->bytes, off);
	atomic_fetch_add(&k->full, lost.full);
	atomic_fetch_add(&k->too_big, lost.too_big);
	atomic_fetch_add(&k->nesting, lost.nesting);
	atomic_fetch_add(&k->overwritten, lost.overwritten);
	atomic_fetch_add(&k->fair, fair);
}

static int read_attr(struct mg_collect *c, struct ring_file *f,
		     const char *buffers, char *err, size_t errlen)
{
	struct magnet_read_attr attr = {
		.watermark_bytes = c->cfg.watermark,
		.timeout_ns = c->cfg.latency_ms * 1000000ULL,
	};
	unsigned long size = mg_sensor_ring_size(buffers, f->cpu);

	/* The module refuses a watermark it could never reach. */
	if (size && attr.watermark_bytes > size / 2)
		attr.watermark_bytes = size / 2;
	/* No watermark at all: wake on every record. */
	if (!attr.watermark_bytes)
		attr.watermark_records = 1;
	if (ioctl(f->fd, MAGNET_IOC_SET_READ_ATTR, &attr)) {
		snprintf(err, errlen, "%s/cpu%u: setting the read condition: %s",
			 c->dir, f->cpu, strerror(errno));
		return -errno;
	}
	f->watermark = attr.watermark_bytes;
	return 0;
}

/* Mapped: give back what was delivered; learn what the ring holds now. */
static int map_advance(struct ring_file *f)
{
	struct magnet_mmap_pos pos = { .release = f->held, .tail = f->tail };

	if (ioctl(f->fd, MAGNET_IOC_MMAP_ADVANCE, &pos))
		return -errno;
	f->tail = pos.tail;
	f->commit = pos.commit;
	f->map_size = pos.size;
	f->held = 0;
	return 0;
}

/*
 * Map a ring. -EOPNOTSUPP: it cannot be (overwrite mode), read it with
 * AIO; other errors fill err.
 */
static int map_ring(struct mg_collect *c, struct ring_file *f, char *err, size_t errlen)
{
	void *m;
	int ret;

	f->tail = f->held = 0;
	ret = map_advance(f);
	if (ret == -EOPNOTSUPP)
		return ret;
	if (ret) {
		snprintf(err, errlen, "%s/cpu%u: MAGNET_IOC_MMAP_ADVANCE: %s (read = aio reads it without)",
			 c->dir, f->cpu, strerror(-ret));
		return ret;
	}
	m = mmap(NULL, f->map_size, PROT_READ, MAP_SHARED, f->fd, 0);
	if (m == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "%s/cpu%u: mmap of %llu bytes: %s", c->dir, f->cpu,
			 (unsigned long long)f->map_size, strerror(errno));
		return ret;
	}
	f->map = m;
	return 0;
}

/*
 * Mapped: hand on [tail, commit) in pieces of at most read_buffer bytes
 * of whole records, cut at padding and at the array's end, as AIO reads
 * of read_buffer bytes would have. false: a corrupt ring (a kernel bug).
 */
static bool map_deliver(struct mg_collect *c, struct ring_file *f)
{
	__u64 mask = f->map_size - 1, pos = f->tail, run = f->tail;

	while (pos != f->commit) {
		const struct magnet_record *rec = (const void *)(f->map + (pos & mask));
		__u32 rs = rec->size;

		if (rs < 8 || rs % 8 || rs > f->commit - pos || (pos & mask) + rs > f->map_size) {
			logf_(c, LOG_ERR, "cpu%u: corrupt record at ring position %llu (size %u)",
			      f->cpu, (unsigned long long)pos, rs);
			if (pos != run)
				deliver(c, f, f->map + (run & mask), pos - run);
			f->held = pos - f->tail;
			return false;
		}
		if (rec->event_id == MAGNET_EVENT_PAD || pos + rs - run > c->cfg.read_buffer) {
			if (pos != run)
				deliver(c, f, f->map + (run & mask), pos - run);
			run = rec->event_id == MAGNET_EVENT_PAD ? pos + rs : pos;
		}
		pos += rs;
		if (!(pos & mask)) {	/* the array's end: the next record is at 0 */
			if (pos != run)
				deliver(c, f, f->map + (run & mask), pos - run);
			run = pos;
		}
	}
	if (pos != run)
		deliver(c, f, f->map + (run & mask), pos - run);
	f->held = pos - f->tail;
	return true;
}

/*
 * Mapped: deliver what the ring holds if its read condition holds (@all:
 * if it holds anything), give it back, and again while the condition
 * holds; what is left waits for poll(). false: the ring is unusable.
 */
static bool map_drain(struct mg_collect *c, struct ring_file *f, bool all)
{
	for (;;) {
		int ret = map_advance(f);

		if (ret) {
			logf_(c, LOG_ERR, "cpu%u: giving back %llu bytes: %s", f->cpu,
			      (unsigned long long)f->held, strerror(-ret));
			return false;
		}
		if (f->commit == f->tail || (!all && f->commit - f->tail < f->watermark &&
					     f->commit - f->tail < f->map_size / 2))
			return true;
		if (!map_deliver(c, f)) {
			map_advance(f);	/* what was delivered is not read again */
			return false;
		}
		all = false;
	}
}

static void unmap_rings(struct mg_collect *c)
{
	unsigned int i;

	for (i = 0; i < c->nfiles; i++) {
		struct ring_file *f = &c->files[i];

		if (f->map)
			munmap((void *)f->map, f->map_size);
		f->map = NULL;
	}
}

static void close_files(struct mg_collect *c)
{
	unsigned int i;

	if (!c->files)
		return;		/* a start that failed before allocating them */
	unmap_rings(c);
	for (i = 0; i < c->nfiles; i++) {
		struct ring_file *f = &c->files[i];
		unsigned int k;

		if (f->fd >= 0)
			close(f->fd);
		f->fd = -1;
		f->busy = 0;
		for (k = 0; k < MG_COLLECT_READS; k++)
			f->slots[k].busy = false;
	}
	if (c->ctx) {
		io_destroy(c->ctx);
		c->ctx = 0;
	}
}

/* Open every ring and start reading. 0 or -errno with err filled. */
static int attach(struct mg_collect *c, char *err, size_t errlen)
{
	struct mg_sensor_version v;
	unsigned long ring_size = 0, size;
	char *buffers;
	struct stat st;
	unsigned int i;
	int ret;

	ret = mg_sensor_version(c->dir, &v);
	if (ret) {
		if (ret == -ENOENT && mg_sensor_loaded())
			snprintf(err, errlen, "%s/version not found: " MG_SENSOR_NO_DEBUGFS, c->dir);
		else if (ret == -ENOENT)
			snprintf(err, errlen, "magnet module not loaded: %s/version not found (modprobe magnet; is debugfs mounted?)",
				 c->dir);
		else if (ret == -EACCES || ret == -EPERM)
			snprintf(err, errlen, "%s: permission denied: run magnetd as root",
				 c->dir);
		else
			snprintf(err, errlen, "%s/version: %s", c->dir,
				 strerror(-ret));
		return ret;
	}
	if (v.format != MAGNET_FORMAT_VERSION) {
		snprintf(err, errlen, "%s/version: record format %u, this magnetd supports %d",
			 c->dir, v.format, MAGNET_FORMAT_VERSION);
		return -EPROTO;
	}
	if (stat(c->dir, &st))
		return -errno;
	ret = io_setup(c->nfiles * MG_COLLECT_READS, &c->ctx);
	if (ret) {
		snprintf(err, errlen, "io_setup: %s", strerror(-ret));
		c->ctx = 0;
		return ret;
	}
	buffers = mg_sensor_read(c->dir, "buffers", NULL);
	for (i = 0; i < c->nfiles; i++) {
		struct ring_file *f = &c->files[i];
		char path[PATH_MAX + 16];

		ret = mg_sensor_open_cpu(c->dir, f->cpu, O_RDONLY | O_CLOEXEC, path,
					 sizeof(path), err, errlen);
		if (ret < 0) {
			f->fd = -1;
			if (ret == -EBUSY)
				snprintf(err, errlen, "%s already has a reader (magnet-read or another magnetd?)",
					 path);
			else if (ret == -EACCES)
				snprintf(err, errlen, "%s: permission denied: run magnetd as root",
					 path);
			goto err_files;
		}
		f->fd = ret;
		ret = read_attr(c, f, buffers, err, errlen);
		if (ret)
			goto err_files;
		size = mg_sensor_ring_size(buffers, f->cpu);
		if (!i || size < ring_size)
			ring_size = size;
	}
	/* read = mapped: every ring in place, or (overwrite mode) none. */
	c->mapped = c->cfg.mapped;
	for (i = 0; i < c->nfiles && c->mapped; i++) {
		ret = map_ring(c, &c->files[i], err, errlen);
		if (ret == -EOPNOTSUPP) {
			logf_(c, LOG_NOTICE, "overwrite-mode rings cannot be mapped: reading them with AIO");
			c->mapped = false;
			unmap_rings(c);
		} else if (ret) {
			goto err_files;
		}
	}
	for (i = 0; i < c->nfiles && !c->mapped; i++) {
		unsigned int k;

		for (k = 0; k < MG_COLLECT_READS; k++) {
			ret = submit(c, &c->files[i].slots[k]);
			if (ret) {
				snprintf(err, errlen, "cpu%u: io_submit: %s",
					 c->files[i].cpu, strerror(-ret));
				goto err_reads;
			}
		}
	}
	free(buffers);
	pthread_mutex_lock(&c->lock);
	c->version = v;
	pthread_mutex_unlock(&c->lock);
	c->dir_ino = c->sized_ino = st.st_ino;
	atomic_store(&c->ring_size, ring_size);
	c->attached = true;
	atomic_store(&c->up, true);
	return 0;

err_reads:
	for (i = 0; i < c->nfiles; i++) {
		unsigned int k;

		for (k = MG_COLLECT_READS; k-- > 0;) {
			struct io_event ev;

			if (c->files[i].slots[k].busy)
				io_cancel(c->ctx, &c->files[i].slots[k].iocb, &ev);
		}
	}
err_files:
	free(buffers);
	close_files(c);
	return ret;
}

/* One completion. false: the ring is gone (EOF or an error). */
static bool complete(struct mg_collect *c, struct io_event *ev, bool resubmit)
{
	struct read_slot *s = ev->data;
	struct ring_file *f = s->f;
	long res = (long)ev->res;

	s->busy = false;
	f->busy--;
	if (res > 0) {
		deliver(c, f, s->buf, res);
	} else if (!res) {
		logf_(c, LOG_WARNING, "cpu%u: end of file: the module is going away", f->cpu);
		return false;
	} else if (res != -EINTR && res != -EAGAIN && res != -ECANCELED) {
		logf_(c, LOG_ERR, "cpu%u: read: %s", f->cpu, strerror(-res));
		return false;
	}
	if (resubmit) {
		int r = submit(c, s);

		if (r) {
			logf_(c, LOG_ERR, "cpu%u: io_submit: %s", f->cpu, strerror(-r));
			return false;
		}
	}
	return true;
}

/* Reap what completed, without waiting. false: a ring is gone. */
static bool reap(struct mg_collect *c, bool resubmit)
{
	struct io_event evs[64];
	struct timespec zero = { 0 };
	bool ok = true;
	int n, i;

	do {
		n = io_getevents(c->ctx, 0, 64, evs, &zero);
		for (i = 0; i < n; i++)
			ok &= complete(c, &evs[i], resubmit && ok);
	} while (n == 64);
	return ok;
}

/* What the other threads asked for: WHY_STOP, WHY_RELEASE or WHY_NONE. */
static enum why asked(struct mg_collect *c)
{
	int req = atomic_load(&c->request);

	return req == REQ_STOP ? WHY_STOP : req == REQ_RELEASE ? WHY_RELEASE : WHY_NONE;
}

/*
 * Mapped: deliver the rings whose read condition holds; poll for the
 * others (and the control eventfd); past the latency, take what they hold.
 */
static enum why run_mapped(struct mg_collect *c)
{
	long long latency = c->cfg.latency_ms ? (long long)c->cfg.latency_ms * 1000000 : -1;
	long long last = (long long)mg_now_ns(CLOCK_MONOTONIC);
	struct pollfd *p = c->pfd;
	unsigned int i;

	p[0].fd = c->ctl_efd;
	p[0].events = POLLIN;
	for (i = 0; i < c->nfiles; i++) {
		p[i + 1].fd = c->files[i].fd;
		p[i + 1].events = POLLIN;
		p[i + 1].revents = 0;
	}
	for (;;) {
		long long now = (long long)mg_now_ns(CLOCK_MONOTONIC);
		bool late = latency >= 0 && now - last >= latency;
		enum why why;
		int ms = -1;
		__u64 v;

		for (i = 0; i < c->nfiles; i++)
			if (!map_drain(c, &c->files[i], late || p[i + 1].revents))
				return WHY_GONE;
		if (late)
			last = now;
		if (latency >= 0)
			ms = (int)((last + latency - now) / 1000000) + 1;
		if (poll(p, c->nfiles + 1, ms) < 0) {
			if (errno != EINTR) {
				logf_(c, LOG_ERR, "poll: %s", strerror(errno));
				return WHY_GONE;
			}
			for (i = 0; i <= c->nfiles; i++)
				p[i].revents = 0;
		}
		if (p[0].revents && read(c->ctl_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			return WHY_GONE;
		why = asked(c);
		if (why != WHY_NONE)
			return why;
	}
}

static enum why run(struct mg_collect *c)
{
	struct pollfd p[2] = {
		{ .fd = c->aio_efd, .events = POLLIN },
		{ .fd = c->ctl_efd, .events = POLLIN },
	};

	if (c->mapped)
		return run_mapped(c);
	for (;;) {
		enum why why;
		__u64 v;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			logf_(c, LOG_ERR, "poll: %s", strerror(errno));
			return WHY_GONE;
		}
		if (p[0].revents) {
			if (read(c->aio_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				return WHY_GONE;
			if (!reap(c, true))
				return WHY_GONE;
		}
		why = asked(c);
		if (why != WHY_NONE)
			return why;
	}
}

static bool any_busy(const struct mg_collect *c)
{
	unsigned int i;

	for (i = 0; i < c->nfiles; i++)
		if (c->files[i].busy)
			return true;
	return false;
}

/* What a ring still holds, read without blocking. */
static void drain_nonblock(struct mg_collect *c, struct ring_file *f)
{
	int fl = fcntl(f->fd, F_GETFL);

	if (fl < 0 || fcntl(f->fd, F_SETFL, fl | O_NONBLOCK))
		return;
	for (;;) {
		ssize_t n = read(f->fd, f->slots[0].buf, c->cfg.read_buffer);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		deliver(c, f, f->slots[0].buf, n);
	}
}

/*
 * Cancel the reads and deliver what they held (a cancelled read may still
 * complete with records, which the kernel has then consumed), then what
 * the rings still hold: on a stop or a release nothing read is left
 * behind. Then close everything.
 */
static void detach(struct mg_collect *c)
{
	__u64 end = mg_now_ns(CLOCK_MONOTONIC) + REAP_NS;
	unsigned int i;

	if (c->mapped) {
		/* What the rings hold, delivered and given back. */
		for (i = 0; i < c->nfiles; i++)
			if (c->files[i].map)
				map_drain(c, &c->files[i], true);
		close_files(c);
		c->attached = false;
		atomic_store(&c->up, false);
		return;
	}

	for (i = 0; i < c->nfiles; i++) {
		struct ring_file *f = &c->files[i];
		unsigned int k;

		/* The last submitted first: none served behind a cancelled one. */
		for (k = MG_COLLECT_READS; k-- > 0;) {
			struct read_slot *s = &f->slots[k];
			struct io_event ev;

			if (s->busy && !io_cancel(c->ctx, &s->iocb, &ev))
				complete(c, &ev, false);
		}
	}
	while (any_busy(c) && mg_now_ns(CLOCK_MONOTONIC) < end) {
		struct pollfd p = { .fd = c->aio_efd, .events = POLLIN };
		__u64 v;

		if (poll(&p, 1, 100) > 0 &&
		    read(c->aio_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			break;
		reap(c, false);
	}
	for (i = 0; i < c->nfiles; i++) {
		if (c->files[i].busy)
			logf_(c, LOG_WARNING, "cpu%u: read could not be cancelled",
			      c->files[i].cpu);
		else if (c->files[i].fd >= 0)
			drain_nonblock(c, &c->files[i]);
	}
	/* A read that could not be cancelled must not outlive its buffer. */
	if (!any_busy(c))
		close_files(c);
	c->attached = false;
	atomic_store(&c->up, false);
}

/* Sleep up to ms on the control eventfd; true when asked to stop. */
static bool nap(struct mg_collect *c, int ms)
{
	struct pollfd p = { .fd = c->ctl_efd, .events = POLLIN };
	__u64 v;

	if (poll(&p, 1, ms) > 0 &&
	    read(c->ctl_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return false;
	return atomic_load(&c->request) == REQ_STOP;
}

/* The same load of the module as the one last read? */
static bool same_load(const struct mg_collect *c)
{
	struct stat st;

	return !stat(c->dir, &st) && st.st_ino == c->dir_ino;
}

/* Wait for a module to read again; false when asked to stop meanwhile. */
static bool wait_module(struct mg_collect *c, enum why why)
{
	__u64 start = mg_now_ns(CLOCK_MONOTONIC);
	char err[512] = "";
	bool said = false;

	if (why == WHY_RELEASE) {
		logf_(c, LOG_NOTICE, "released the rings: the module may be unloaded now; waiting for it to go away and come back");
		while (same_load(c) &&
		       mg_now_ns(CLOCK_MONOTONIC) - start < MG_COLLECT_RELEASE_NS) {
			if (atomic_load(&c->request) == REQ_RELEASE)
				atomic_store(&c->request, REQ_NONE);
			if (nap(c, MG_COLLECT_WAIT_MS))
				return false;
		}
		if (same_load(c))
			logf_(c, LOG_NOTICE, "the module was not unloaded within %llu s: reading its rings again",
			      MG_COLLECT_RELEASE_NS / 1000000000ULL);
	} else {
		logf_(c, LOG_WARNING, "lost the rings; waiting for the magnet module");
	}
	atomic_store(&c->request, REQ_NONE);
	for (;;) {
		char now[512];
		struct stat st;
		int grown = 0;

		/*
		 * A module that came back has its rings as loaded: grow them
		 * once per load, before they are read. Its directory comes
		 * before its files (probes= may take a second in between):
		 * until buffers is there, neither size nor read.
		 */
		if (!stat(c->dir, &st) && st.st_ino != c->sized_ino) {
			grown = mg_rings_grow(c->dir, c->cfg.ring_size, c->cfg.ring_memory,
					      c->log, c->log_arg);
			if (grown != -ENOENT)
				c->sized_ino = st.st_ino;
		}
		if (grown == -ENOENT)
			snprintf(now, sizeof(now), "the magnet module is still loading: %.400s/buffers not found",
				 c->dir);
		else if (!attach(c, now, sizeof(now)))
			break;
		/* Say each different reason once, not every 200 ms. */
		if (!said || strcmp(now, err)) {
			logf_(c, LOG_INFO, "waiting: %s", now);
			snprintf(err, sizeof(err), "%s", now);
			said = true;
		}
		if (nap(c, MG_COLLECT_WAIT_MS))
			return false;
		if (atomic_load(&c->request) == REQ_RELEASE)
			atomic_store(&c->request, REQ_NONE);
	}
	atomic_fetch_add(&c->reloads, 1);
	logf_(c, LOG_NOTICE, "reading the rings again (magnet %s, %u CPUs)",
	      c->version.release, c->nfiles);
	return true;
}

static void *collect_main(void *arg)
{
	struct mg_collect *c = arg;

	for (;;) {
		enum why why = run(c);

		detach(c);
		if (why == WHY_STOP || !wait_module(c, why))
			break;
	}
	return NULL;
}

int mg_collect_start(const struct mg_collect_cfg *cfg, mg_collect_sink sink,
		     void *sink_arg, mg_collect_log log, void *log_arg,
		     struct mg_collect **out, char *err, size_t errlen)
{
	unsigned int *cpus = NULL, n = 0, i;
	struct mg_collect *c;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cfg = *cfg;
	snprintf(c->dir, sizeof(c->dir), "%s", cfg->dir);
	c->cfg.dir = c->dir;
	c->sink = sink;
	c->sink_arg = sink_arg;
	c->log = log;
	c->log_arg = log_arg;
	c->aio_efd = c->ctl_efd = -1;
	pthread_mutex_init(&c->lock, NULL);

	ret = mg_sensor_cpus(c->dir, &cpus, &n);
	if (ret) {
		if (ret == -ENOENT)
			snprintf(err, errlen, "magnet module not loaded: no %s/cpuN files (modprobe magnet; is debugfs mounted on /sys/kernel/debug?)",
				 c->dir);
		else if (ret == -EACCES || ret == -EPERM)
			snprintf(err, errlen, "%s: permission denied: run magnetd as root",
				 c->dir);
		else
			snprintf(err, errlen, "%s: %s", c->dir, strerror(-ret));
		goto err_free;
	}
	c->ncpus = cpus[n - 1] + 1;
	c->files = calloc(n, sizeof(*c->files));
	c->counts = calloc(c->ncpus, sizeof(*c->counts));
	if (!c->files || !c->counts) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto err_free;
	}
	c->pfd = calloc(n + 1, sizeof(*c->pfd));
	if (!c->pfd) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto err_free;
	}
	c->nfiles = n;	/* only now: the cleanup walks files[0..nfiles) */
	for (i = 0; i < n; i++) {
		unsigned int k;

		c->files[i].cpu = cpus[i];
		c->files[i].fd = -1;
		for (k = 0; k < MG_COLLECT_READS; k++) {
			struct read_slot *s = &c->files[i].slots[k];

			s->f = &c->files[i];
			if (posix_memalign((void **)&s->buf, 4096,
					   cfg->read_buffer)) {
				ret = -ENOMEM;
				snprintf(err, errlen, "out of memory");
				goto err_free;
			}
		}
	}
	c->aio_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->ctl_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->aio_efd < 0 || c->ctl_efd < 0) {
		ret = -errno;
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		goto err_free;
	}
	ret = attach(c, err, errlen);
	if (ret)
		goto err_free;
	ret = -pthread_create(&c->thread, NULL, collect_main, c);
	if (ret) {
		snprintf(err, errlen, "cannot start the collection thread: %s",
			 strerror(-ret));
		detach(c);
		goto err_free;
	}
	pthread_setname_np(c->thread, "magnetd-collect");	/* for top -H, perf */
	c->started = true;
	free(cpus);
	*out = c;
	return 0;

err_free:
	free(cpus);
	mg_collect_free(c);
	return ret;
}

static void request(struct mg_collect *c, int req)
{
	__u64 one = 1;

	/* A stop is never downgraded to a release. */
	if (req == REQ_RELEASE) {
		int none = REQ_NONE;

		if (!atomic_compare_exchange_strong(&c->request, &none, req))
			return;
	} else {
		atomic_store(&c->request, req);
	}
	if (write(c->ctl_efd, &one, sizeof(one)) < 0)
		return;		/* a full counter: a wakeup is pending */
}

void mg_collect_release(struct mg_collect *c)
{
	request(c, REQ_RELEASE);
}

void mg_collect_stop(struct mg_collect *c)
{
	if (!c->started || c->stopped)
		return;
	request(c, REQ_STOP);
	pthread_join(c->thread, NULL);
	c->stopped = true;
}

void mg_collect_free(struct mg_collect *c)
{
	unsigned int i, k;

	if (!c)
		return;
	mg_collect_stop(c);
	close_files(c);
	if (c->files)
		for (i = 0; i < c->nfiles; i++)
			for (k = 0; k < MG_COLLECT_READS; k++)
				free(c->files[i].slots[k].buf);
	free(c->files);
	free(c->pfd);
	free(c->counts);
	if (c->aio_efd >= 0)
		close(c->aio_efd);
	if (c->ctl_efd >= 0)
		close(c->ctl_efd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

bool mg_collect_up(const struct mg_collect *c)
{
	return atomic_load(&c->up);
}

void mg_collect_rings(const struct mg_collect *c, unsigned long *size, unsigned int *grown)
{
	*size = atomic_load(&c->ring_size);
	*grown = mg_rings_resizes();
}

unsigned int mg_collect_reloads(const struct mg_collect *c)
{
	return atomic_load(&c->reloads);
}

unsigned int mg_collect_ncpus(const struct mg_collect *c)
{
	return c->ncpus;
}

void mg_collect_version(struct mg_collect *c, struct mg_sensor_version *v)
{
	pthread_mutex_lock(&c->lock);
	*v = c->version;
	pthread_mutex_unlock(&c->lock);
}

void mg_collect_cpu_stats(struct mg_collect *c, struct mg_collect_cpu *out)
{
	unsigned int i;

	for (i = 0; i < c->ncpus; i++) {
		struct cpu_counts *k = &c->counts[i];

		out[i].records = atomic_load(&k->records);
		out[i].bytes = atomic_load(&k->bytes);
		out[i].lost.full = atomic_load(&k->full);
		out[i].lost.too_big = atomic_load(&k->too_big);
		out[i].lost.nesting = atomic_load(&k->nesting);
		out[i].lost.overwritten = atomic_load(&k->overwritten);
		out[i].lost_fair = atomic_load(&k->fair);
	}
}
