// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-read: drain every cpuN ring of magnet into one trace file.
 *
 * Several AIO reads stay outstanding per CPU file (-r), so a single thread
 * waits on all rings at once and each read completes when the kernel's
 * read condition (watermarks, timeout) holds: the paper's reader design.
 * The module serves the reads of one file in the order they were
 * submitted, and they complete in it (UAPI header, AIO): while this thread
 * writes out one read, the next ones already drain the ring, so a flood
 * of large records does not have to wait for the whole round trip (wake
 * up, write, submit again) with the ring filling. On regular files (-d on
 * a directory of synthetic streams) libaio completes the reads inside
 * io_submit, which the same loop handles, one read at a time (a regular
 * file's next offset depends on the previous read).
 *
 * With -m the rings are read where they lie (UAPI header, MAPPED): each
 * is mapped read-only, and its records go from the mapping straight into
 * the trace file, with no copy into a buffer of ours and no AIO; poll()
 * waits when every ring is empty.
 *
 * Opening the rings makes the module forget the threads it named, so a
 * trace holds the TASK records that name each of its records' threads
 * (lib/tasks.h): readers of the file need nothing else.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libaio.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "record.h"
#include "sensor.h"
#include "stats.h"
#include "trace.h"

#define PROG		"magnet-read"
#define MIN_BUF		(2 * MAGNET_RECORD_MAX)
#define MAX_READS	64
/* -m: the most written from the mapping before it is given back. */
#define MAP_PIECE	(64 * 1024)
/* How long one wait may last, so signals and -t are noticed promptly. */
#define WAIT_SLICE_NS	(100 * 1000000LL)
/* How long to wait for cancelled reads before giving up on them. */
#define REAP_NS		(2000 * 1000000LL)

struct cpu_file;

/* One read of a CPU file: its buffer, and the iocb while outstanding. */
struct read_slot {
	struct cpu_file *c;
	bool busy;		/* the iocb is outstanding */
	unsigned char *buf;
	struct iocb iocb;
};

struct cpu_file {
	unsigned int cpu;
	int fd;
	bool is_reg;		/* a regular file: reads need an offset */
	unsigned int busy;	/* reads outstanding */
	bool done;		/* EOF, or stopped for good */
	unsigned int nslots;	/* reads kept outstanding: -r, 1 on regular files */
	struct read_slot *slots;
	const unsigned char *map;	/* -m: the ring, mapped read-only */
	__u64 map_size, tail, commit, held;
	__u64 offset;		/* input offset of the next read (regular files) */
	__u64 records;		/* events: LOST, TASK excluded (as the kernel's written) */
	__u64 tasks;		/* TASK records */
	__u64 bytes;
	struct magnet_lost lost;
	__u64 lost_fair;	/* JOB_LOST records' (per job: UAPI FAIRNESS) */
};

struct reader {
	const char *dir;
	bool default_dir;
	int out;
	bool out_ok;
	size_t bufsize;
	unsigned int reads;		/* -r: reads in flight per ring */
	bool mapped;			/* -m: read the rings in place */
	struct magnet_read_attr attr;
	bool watermark_set;		/* -w given: do not adapt it */
	long long limit_records;	/* -n, 0 = none */
	long long deadline_ns;		/* CLOCK_MONOTONIC, 0 = none */
	struct cpu_file *cpus;
	unsigned int ncpus;		/* files opened */
	unsigned int max_cpu;
	io_context_t ctx;
	__u64 total_records;		/* probe events, for -n */
	bool failed;			/* stop now, exit 2 */
	bool corrupt;			/* a CPU sent bad records: exit 2 */
	struct mg_sensor_version version;	/* none: 0s, clock "mono" */
	struct mg_probe_watch *names;	/* the probe table written so far */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* -h asks for it (stdout, 0); anything else is a usage error. */
__attribute__((noreturn))
static void usage(int status)
{
	fprintf(status ? stderr : stdout,
"usage: " PROG " -o FILE [-d DIR] [-b BYTES] [-r READS | -m] [-w BYTES] [-c RECORDS]\n"
"                   [-T MS] [-t SECONDS] [-n RECORDS]\n"
"  -o FILE     trace file to write, \"-\" for stdout\n"
"  -d DIR      magnet directory (default " MG_SENSOR_DIR ")\n"
"  -b BYTES    size of one read (default 256K, at least %d)\n"
"  -r READS    reads in flight per CPU, each of -b bytes (default 4, at\n"
"              most %d; 1 on files that are no ring)\n"
"  -m          map each ring read-only and write its records from there:\n"
"              no AIO, no copy but the write (discard-mode rings only;\n"
"              -b and -r do not apply)\n"
"  -w BYTES    read condition: byte watermark (default 64K or half a\n"
"              smaller ring, 0 = off)\n"
"  -c RECORDS  read condition: record watermark (default 0 = off)\n"
"  -T MS       read condition: timeout in ms (default 100, 0 = off)\n"
"  -t SECONDS  stop after this many seconds\n"
"  -n RECORDS  stop once at least RECORDS event records (LOST and TASK\n"
"              records not counted) were read; the read that crosses the\n"
"              count is kept whole, so a few more may be written (records\n"
"              the kernel handed over are never dropped)\n"
"Stops on SIGINT/SIGTERM, -t, -n, or when every file reaches EOF.\n"
"Sizes take a K, M or G suffix (powers of 1024).\n", MIN_BUF, MAX_READS);
	exit(status);
}

static void vmsg(const char *fmt, va_list ap)
{
	fputs(PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

__attribute__((format(printf, 1, 2)))
static void msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	exit(2);
}

static int parse_size(const char *s, unsigned long long *v)
{
	unsigned long long n;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'G': case 'g':
		n *= 1024;
		/* fall through */
	case 'M': case 'm':
		n *= 1024;
		/* fall through */
	case 'K': case 'k':
		n *= 1024;
		end++;
		break;
	}
	if (*end)
		return -1;
	*v = n;
	return 0;
}

static const char *dir_hint(const struct reader *rd)
{
	return rd->default_dir ?
	       ": is magnet.ko loaded and debugfs mounted?" : "";
}

/* Find the cpuN files; N need not be contiguous. */
static void scan_dir(struct reader *rd)
{
	unsigned int *cpus, n, i;
	int ret = mg_sensor_cpus(rd->dir, &cpus, &n);

	/* -ENOENT stands for both a missing directory and one without cpuN. */
	if (ret == -ENOENT && !access(rd->dir, F_OK))
		die("no cpuN files in %s%s", rd->dir, dir_hint(rd));
	if (ret == -ENOENT)
		die("%s not found%s", rd->dir, dir_hint(rd));
	if (ret == -EACCES || ret == -EPERM)
		die("%s: permission denied: run as root", rd->dir);
	if (ret == -ENOMEM)
		die("out of memory");
	if (ret)
		die("%s: %s", rd->dir, strerror(-ret));
	rd->cpus = calloc(n, sizeof(*rd->cpus));
	if (!rd->cpus)
		die("out of memory");
	for (i = 0; i < n; i++) {
		rd->cpus[i].cpu = cpus[i];
		rd->cpus[i].fd = -1;
	}
	rd->ncpus = n;
	rd->max_cpu = cpus[n - 1];
	free(cpus);
}

/* magnet/version: refuse a record format this build does not know. */
static void check_version(struct reader *rd)
{
	/* Without a readable version file: clock mono, format unchecked. */
	if (mg_sensor_version(rd->dir, &rd->version)) {
		/* The rings came from /dev/magnet (mg_sensor_cpus). */
		if (access(rd->dir, F_OK))
			msg("%s/version not found: " MG_SENSOR_NO_DEBUGFS "; reading the rings from "
			    MG_SENSOR_DEV_DIR ", as clock mono, without probe names", rd->dir);
		return;
	}
	/* 0: the file names no format, which is not a mismatch. */
	if (rd->version.format && rd->version.format != MAGNET_FORMAT_VERSION)
		die("%s/version: record format %u, this " PROG " supports %d",
		    rd->dir, rd->version.format, MAGNET_FORMAT_VERSION);
}

static void open_cpus(struct reader *rd)
{
	char *buffers = mg_sensor_read(rd->dir, "buffers", NULL);
	unsigned int i, k;

	for (i = 0; i < rd->ncpus; i++) {
		struct cpu_file *c = &rd->cpus[i];
		struct magnet_read_attr attr;
		char path[PATH_MAX], why[2 * PATH_MAX + 64];
		unsigned long size;
		struct stat st;

		c->fd = mg_sensor_open_cpu(rd->dir, c->cpu, O_RDONLY | O_CLOEXEC, path,
					   sizeof(path), why, sizeof(why));
		if (c->fd < 0) {
			if (c->fd == -EBUSY)
				die("cpu%u already has a reader", c->cpu);
			if (c->fd == -EACCES)
				die("%s: permission denied: run as root", path);
			die("%s", why);
		}
		if (fstat(c->fd, &st))
			die("%s: %s", path, strerror(errno));
		c->is_reg = S_ISREG(st.st_mode);

		/*
		 * The module refuses a byte watermark above half the ring
		 * (it could never be reached); the default adapts to small
		 * rings, an explicit -w does not.
		 */
		attr = rd->attr;
		size = mg_sensor_ring_size(buffers, c->cpu);
		if (size && attr.watermark_bytes > size / 2) {
			if (rd->watermark_set)
				die("cpu%u: -w %llu is more than half the ring (%lu bytes)",
				    c->cpu, (unsigned long long)attr.watermark_bytes, size);
			attr.watermark_bytes = size / 2;
		}
		/*
		 * Several reads in flight only on a ring: libaio reads other
		 * files (regular files, FIFOs) inside io_submit.
		 */
		c->nslots = rd->reads;
		if (ioctl(c->fd, MAGNET_IOC_SET_READ_ATTR, &attr)) {
			/* Regular files stand in for rings in tests. */
			if (errno != ENOTTY)
				die("%s: setting the read condition: %s", path,
				    strerror(errno));
			if (!c->is_reg)
				msg("%s: no read-condition ioctl, using the kernel's defaults",
				    path);
			c->nslots = 1;
		}
		if (rd->mapped)
			continue;	/* no read buffers: the ring is mapped */
		c->slots = calloc(c->nslots, sizeof(*c->slots));
		if (!c->slots)
			die("out of memory");
		for (k = 0; k < c->nslots; k++) {
			c->slots[k].c = c;
			if (posix_memalign((void **)&c->slots[k].buf, 4096,
					   rd->bufsize))
				die("out of memory");
		}
	}
	free(buffers);
}

static void open_output(struct reader *rd, const char *path)
{
	if (!strcmp(path, "-")) {
		if (isatty(STDOUT_FILENO)) {
			msg("refusing to write a binary trace to a terminal");
			usage(1);
		}
		rd->out = STDOUT_FILENO;
	} else {
		/* 0600: abstract ids and args are kernel addresses. */
		rd->out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			       0600);
		if (rd->out < 0)
			die("%s: %s", path, strerror(errno));
	}
	rd->out_ok = true;
}

static void write_header(struct reader *rd)
{
	struct mg_trace_info info;
	size_t probes_len = 0;
	char *probes;
	int err;

	probes = mg_sensor_read(rd->dir, "probes", &probes_len);
	mg_sensor_trace_info(&info, &rd->version, rd->max_cpu + 1, probes,
			     probes_len);
	err = mg_trace_write_header(rd->out, &info);
	rd->names = mg_probe_watch_new(probes, info.probes_len);
	free(probes);
	if (err)
		die("writing the trace header: %s", strerror(-err));
	if (!rd->names)
		die("out of memory");
}

/*
 * A probe added since the header was written (magnet-ctl probe add): read
 * magnet/probes again and write its line in a PRBS chunk before the first
 * chunk with its records, so the trace names them. Once per id.
 */
static void write_new_probes(struct reader *rd, const void *data, size_t len)
{
	size_t plen = 0, added, tlen;
	const char *text;
	char *probes;
	int err;

	if (!mg_probe_watch_need(rd->names, data, len))
		return;
	probes = mg_sensor_read(rd->dir, "probes", &plen);
	err = mg_probe_watch_update(rd->names, probes, probes ? plen : 0,
				    data, len, &added);
	free(probes);
	if (err)	/* names are best effort: asked again next chunk */
		return;
	text = mg_probe_watch_text(rd->names, &tlen);
	if (added == tlen)
		return;
	err = mg_trace_write_probes(rd->out, text + added, tlen - added);
	if (err) {
		msg("writing the trace: %s", strerror(-err));
		rd->out_ok = false;
		rd->failed = true;
	}
}

static int submit(struct reader *rd, struct read_slot *s)
{
	struct cpu_file *c = s->c;
	struct iocb *iocbs[1] = { &s->iocb };
	int r;

	io_prep_pread(&s->iocb, c->fd, s->buf, rd->bufsize, c->offset);
	s->iocb.data = s;
	r = io_submit(rd->ctx, 1, iocbs);
	if (r != 1) {
		msg("cpu%u: io_submit: %s", c->cpu,
		    strerror(r < 0 ? -r : EAGAIN));
		c->done = true;
		rd->failed = true;
		return -1;
	}
	s->busy = true;
	c->busy++;
	return 0;
}

/* Count the records of a completed read and append the whole ones. */
static void consume(struct reader *rd, struct cpu_file *c,
		    const unsigned char *buf, size_t n)
{
	const struct magnet_record *rec;
	size_t off = 0, whole;
	int r, err;

	while ((r = mg_record_next(buf, n, &off, &rec)) == 1) {
		/*
		 * TASK records are no events: not in records (nor in the
		 * kernel's written), nor in -n, which is about what probes saw.
		 */
		if (mg_record_is_lost(rec)) {
			mg_lost_add(&c->lost, mg_record_lost(rec));
		} else if (mg_record_is_job_lost(rec)) {
			c->lost_fair += mg_record_job_lost(rec);
		} else if (mg_record_is_task(rec)) {
			c->tasks++;
		} else {
			c->records++;
			rd->total_records++;
		}
	}
	whole = off;
	if (r == -MG_REC_TRUNCATED && c->is_reg) {
		/*
		 * A regular file's read can end inside a record, which the
		 * next read starts again at. No whole record at all means
		 * the file itself ends inside one.
		 */
		if (!whole) {
			msg("cpu%u: file ends inside a record; %zu bytes ignored",
			    c->cpu, n);
			c->done = true;
			return;
		}
	} else if (r < 0) {
		/*
		 * Keep the bytes as read, so the bad record can be examined
		 * with magnet-dump; past it no boundary can be trusted.
		 */
		msg("cpu%u: corrupt record at input offset %llu: %s; no longer reading this CPU",
		    c->cpu, (unsigned long long)(c->offset + off),
		    mg_record_strerror(r));
		whole = n;
		c->done = true;
		rd->corrupt = true;
	}
	c->offset += whole;
	c->bytes += whole;
	if (!rd->out_ok)
		return;
	write_new_probes(rd, buf, whole);
	if (!rd->out_ok)
		return;
	err = mg_trace_write_chunk(rd->out, c->cpu, buf, whole);
	if (err) {
		msg("writing the trace: %s", strerror(-err));
		rd->out_ok = false;
		rd->failed = true;
	}
}

static bool stop_requested(const struct reader *rd);

/* -m: give back what was written; learn what the ring holds now. */
static int map_advance(struct reader *rd, struct cpu_file *c)
{
	struct magnet_mmap_pos pos = { .release = c->held, .tail = c->tail };

	if (ioctl(c->fd, MAGNET_IOC_MMAP_ADVANCE, &pos)) {
		if (errno == ENOTTY || errno == EOPNOTSUPP)
			die("cpu%u: -m: %s", c->cpu, errno == ENOTTY ?
			    "not a ring of the module (read it without -m)" :
			    "an overwrite-mode ring cannot be mapped (read it without -m)");
		msg("cpu%u: giving back %llu bytes: %s", c->cpu,
		    (unsigned long long)c->held, strerror(errno));
		c->done = true;
		rd->failed = true;
		return -1;
	}
	c->tail = pos.tail;
	c->commit = pos.commit;
	c->map_size = pos.size;
	c->held = 0;
	return 0;
}

static void map_cpus(struct reader *rd)
{
	unsigned int i;

	for (i = 0; i < rd->ncpus; i++) {
		struct cpu_file *c = &rd->cpus[i];
		void *m;

		if (map_advance(rd, c))
			die("cpu%u: cannot read it in place", c->cpu);
		m = mmap(NULL, c->map_size, PROT_READ, MAP_SHARED, c->fd, 0);
		if (m == MAP_FAILED)
			die("cpu%u: mmap of %llu bytes: %s", c->cpu,
			    (unsigned long long)c->map_size, strerror(errno));
		c->map = m;
	}
}

/*
 * -m: one span, [tail, commit), from the mapping to the trace, in chunks
 * of at most MAP_PIECE bytes, each given back once written: the writers
 * get the room back while the rest is written, as they do when AIO
 * copies a read out. held is what is written (or padding) but not yet
 * given back.
 */
static void map_write(struct reader *rd, struct cpu_file *c)
{
	__u64 mask = c->map_size - 1, end = c->commit;
	__u64 pos = c->tail, run = c->tail, kept = c->tail;

	/* One chunk per run of records between padding, the array's end, MAP_PIECE. */
	while (pos != end) {
		const struct magnet_record *rec = (const void *)(c->map + (pos & mask));
		bool pad = rec->event_id == MAGNET_EVENT_PAD;

		if (rec->size < 8 || rec->size % 8 || rec->size > end - pos ||
		    (pos & mask) + rec->size > c->map_size) {
			msg("cpu%u: corrupt record at ring position %llu (size %u); no longer reading this CPU",
			    c->cpu, (unsigned long long)pos, rec->size);
			c->done = true;
			rd->corrupt = true;
			break;
		}
		if (!pad && pos != run && pos + rec->size - run > MAP_PIECE) {
			consume(rd, c, c->map + (run & mask), pos - run);
			if (rd->out_ok)
				kept = pos;
			run = pos;
		}
		if (pad || !((pos + rec->size) & mask)) {
			__u64 stop = pad ? pos : pos + rec->size;

			if (stop != run)
				consume(rd, c, c->map + (run & mask), stop - run);
			if (rd->out_ok)
				kept = pos + rec->size;
			run = pos + rec->size;
		}
		pos += rec->size;
		/* A chunk written: its room back to the writers now. */
		if (kept - c->tail >= MAP_PIECE) {
			c->held = kept - c->tail;
			if (map_advance(rd, c))
				return;
		}
	}
	if (pos != run && !c->done) {
		consume(rd, c, c->map + (run & mask), pos - run);
		if (rd->out_ok)
			kept = pos;
	}
	c->held = kept - c->tail;
}

/*
 * -m: write what the ring holds if its read condition holds (@all: if it
 * holds anything), give it back, and again while the condition holds.
 * What is left is below the condition: poll() waits for it, which the
 * records still held would satisfy at once, so none are.
 */
static void map_drain(struct reader *rd, struct cpu_file *c, bool all)
{
	__u64 want = rd->attr.watermark_bytes;

	if (want > c->map_size / 2)
		want = c->map_size / 2;
	while (!map_advance(rd, c) && c->commit != c->tail && !c->done &&
	       (all || c->commit - c->tail >= want) && !stop_requested(rd)) {
		map_write(rd, c);
		all = false;
	}
}

/*
 * -m: drain the rings whose read condition holds, poll for the others;
 * past the timeout (-T), take whatever they hold.
 */
static void run_mapped(struct reader *rd)
{
	struct pollfd *pfd = calloc(rd->ncpus, sizeof(*pfd));
	long long timeout_ms = rd->attr.timeout_ns ? (long long)(rd->attr.timeout_ns / 1000000) : -1;
	long long last = (long long)mg_now_ns(CLOCK_MONOTONIC);
	unsigned int i;

	if (!pfd)
		die("out of memory");
	map_cpus(rd);
	for (i = 0; i < rd->ncpus; i++) {
		pfd[i].fd = rd->cpus[i].fd;
		pfd[i].events = POLLIN;
	}
	while (!stop_requested(rd)) {
		long long now = (long long)mg_now_ns(CLOCK_MONOTONIC);
		bool late = timeout_ms >= 0 && now - last >= timeout_ms * 1000000;
		long long ms = WAIT_SLICE_NS / 1000000;

		for (i = 0; i < rd->ncpus && !stop_requested(rd); i++) {
			if (!rd->cpus[i].done)
				map_drain(rd, &rd->cpus[i], late || pfd[i].revents);
			if (rd->cpus[i].done)
				pfd[i].fd = -1;	/* its records would keep poll() ready */
		}
		if (late)
			last = now;
		if (timeout_ms >= 0) {
			long long left = (last + timeout_ms * 1000000 - now) / 1000000;

			if (left < ms)
				ms = left > 0 ? left : 0;
		}
		if (rd->deadline_ns) {
			long long left = (rd->deadline_ns - now) / 1000000;

			if (left < ms)
				ms = left > 0 ? left : 0;
		}
		if (stop_requested(rd))
			break;
		if (poll(pfd, rd->ncpus, ms) < 0) {
			if (errno != EINTR) {
				msg("poll: %s", strerror(errno));
				rd->failed = true;
			}
			for (i = 0; i < rd->ncpus; i++)
				pfd[i].revents = 0;
		}
	}
	/* What was written is given back: no later reader reads it again. */
	for (i = 0; i < rd->ncpus; i++)
		if (rd->cpus[i].held)
			map_advance(rd, &rd->cpus[i]);
	free(pfd);
}

/*
 * Handle one completion; resubmit unless stopping. Completions of one CPU
 * come in the order their reads took the records (see the top), which is
 * the order they are written in.
 */
static void complete(struct reader *rd, struct io_event *ev, bool stopping)
{
	struct read_slot *s = ev->data;
	struct cpu_file *c = s->c;
	long res = (long)ev->res;

	s->busy = false;
	c->busy--;
	if (res > 0) {
		consume(rd, c, s->buf, res);
	} else if (!res) {
		c->done = true;		/* EOF: end of file, or module unloaded */
	} else if (res == -EINTR || res == -EAGAIN || res == -ECANCELED) {
		/* Interrupted or cancelled with nothing read: just retry. */
	} else if (res == -EINVAL) {
		if (!c->done)
			msg("cpu%u: read buffer of %zu bytes too small for a record",
			    c->cpu, rd->bufsize);
		c->done = true;
		rd->failed = true;
	} else {
		if (!c->done)
			msg("cpu%u: read: %s", c->cpu, strerror(-res));
		c->done = true;
		rd->failed = true;
	}
	/*
	 * No new read once stopping: it would only consume records past
	 * -n, and on a blocking file (not a ring) could not be interrupted.
	 */
	if (!stopping && !c->done && !stop_requested(rd))
		submit(rd, s);
}

static bool all_done(const struct reader *rd)
{
	unsigned int i;

	for (i = 0; i < rd->ncpus; i++)
		if (!rd->cpus[i].done || rd->cpus[i].busy)
			return false;
	return true;
}

static bool any_busy(const struct reader *rd)
{
	unsigned int i;

	for (i = 0; i < rd->ncpus; i++)
		if (rd->cpus[i].busy)
			return true;
	return false;
}

/* A reason to stop other than every file being at EOF. */
static bool stop_requested(const struct reader *rd)
{
	if (stop_signal || rd->failed)
		return true;
	if (rd->limit_records && rd->total_records >= (__u64)rd->limit_records)
		return true;
	return rd->deadline_ns &&
	       (long long)mg_now_ns(CLOCK_MONOTONIC) >= rd->deadline_ns;
}

static bool should_stop(const struct reader *rd)
{
	return stop_requested(rd) || all_done(rd);
}

/* Wait up to max_ns for completions and handle them. */
static void wait_events(struct reader *rd, long long max_ns, bool stopping)
{
	struct io_event evs[64];
	struct timespec ts = {
		.tv_sec = max_ns / 1000000000LL,
		.tv_nsec = max_ns % 1000000000LL,
	};
	int n, i;

	n = io_getevents(rd->ctx, 1, 64, evs, &ts);
	if (n < 0) {
		if (n != -EINTR) {
			msg("io_getevents: %s", strerror(-n));
			rd->failed = true;
		}
		return;
	}
	for (i = 0; i < n; i++)
		complete(rd, &evs[i], stopping);
}

static void run(struct reader *rd)
{
	unsigned int i;

	for (i = 0; i < rd->ncpus && !rd->failed; i++) {
		struct cpu_file *c = &rd->cpus[i];
		unsigned int k;

		/* Not past an error or EOF (c->done) of an earlier one. */
		for (k = 0; k < c->nslots && !c->done && !rd->failed; k++)
			submit(rd, &c->slots[k]);
	}
	while (!should_stop(rd)) {
		long long slice = WAIT_SLICE_NS;

		if (rd->deadline_ns) {
			long long left = rd->deadline_ns -
					 (long long)mg_now_ns(CLOCK_MONOTONIC);

			if (left < slice)
				slice = left > 0 ? left : 0;
		}
		wait_events(rd, slice, false);
	}
}

/*
 * Cancel the outstanding reads and collect them. A cancelled read may
 * still complete with records, which the kernel has then consumed: they
 * are written like any other.
 */
static void shutdown_reads(struct reader *rd)
{
	long long end = (long long)mg_now_ns(CLOCK_MONOTONIC) + REAP_NS;
	unsigned int i;

	for (i = 0; i < rd->ncpus; i++) {
		struct cpu_file *c = &rd->cpus[i];
		unsigned int k;

		/*
		 * Last submitted first: a read the module serves meanwhile
		 * then has no cancelled read in front of it.
		 */
		for (k = c->nslots; k-- > 0;) {
			struct read_slot *s = &c->slots[k];
			struct io_event ev;

			if (!s->busy)
				continue;
			/* 0: done, with the result in ev (older kernels). */
			if (!io_cancel(rd->ctx, &s->iocb, &ev))
				complete(rd, &ev, true);
		}
	}
	while (any_busy(rd)) {
		long long left = end - (long long)mg_now_ns(CLOCK_MONOTONIC);

		if (left <= 0)
			break;
		wait_events(rd, left < WAIT_SLICE_NS ? left : WAIT_SLICE_NS,
			    true);
	}
	for (i = 0; i < rd->ncpus; i++)
		if (rd->cpus[i].busy)
			msg("cpu%u: %u read(s) could not be cancelled; exit will wait for them",
			    rd->cpus[i].cpu, rd->cpus[i].busy);
}

static void finish(struct reader *rd)
{
	struct mg_kstats *ks = NULL;
	struct mg_trailer tr = { 0 };
	size_t nks = 0, len;
	char *stats;
	unsigned int i;
	__u64 c1, c2;

	stats = mg_sensor_read(rd->dir, "stats", &len);
	if (stats && mg_stats_parse(stats, len, &ks, &nks))
		msg("%s/stats: cannot parse; kernel counters not recorded",
		    rd->dir);
	free(stats);

	tr.ncpus = rd->ncpus;
	tr.cpu = calloc(rd->ncpus, sizeof(*tr.cpu));
	if (!tr.cpu)
		die("out of memory");
	c1 = mg_trace_clock_now(rd->version.clock);
	tr.stop_realtime_ns = mg_now_ns(CLOCK_REALTIME);
	c2 = mg_trace_clock_now(rd->version.clock);
	tr.stop_clock_ns = c1 + (c2 - c1) / 2;

	for (i = 0; i < rd->ncpus; i++) {
		const struct cpu_file *c = &rd->cpus[i];
		struct mg_trailer_cpu *t = &tr.cpu[i];
		const struct mg_kstats *k = mg_stats_find(ks, nks, c->cpu);

		t->cpu = c->cpu;
		t->records = c->records;
		t->bytes = c->bytes;
		t->lost = c->lost;
		if (k) {
			t->flags |= MG_TRAILER_KSTATS;
			t->kstats = *k;
		}
		fprintf(stderr, "cpu%u: records %llu bytes %llu lost full=%llu too_big=%llu nesting=%llu overwritten=%llu tasks=%llu fair=%llu",
			c->cpu, (unsigned long long)c->records,
			(unsigned long long)c->bytes,
			(unsigned long long)c->lost.full,
			(unsigned long long)c->lost.too_big,
			(unsigned long long)c->lost.nesting,
			(unsigned long long)c->lost.overwritten,
			(unsigned long long)c->tasks,
			(unsigned long long)c->lost_fair);
		if (k)
			fprintf(stderr, " | kernel written=%llu bytes=%llu full=%llu too_big=%llu nesting=%llu overwritten=%llu",
				(unsigned long long)k->written,
				(unsigned long long)k->bytes,
				(unsigned long long)k->lost_full,
				(unsigned long long)k->lost_too_big,
				(unsigned long long)k->lost_nesting,
				(unsigned long long)k->overwritten);
		fputc('\n', stderr);
	}
	if (rd->out_ok) {
		int err = mg_trace_write_trailer(rd->out, &tr);

		if (!err && rd->out != STDOUT_FILENO && fsync(rd->out) &&
		    errno != EINVAL)
			err = -errno;
		if (err) {
			msg("writing the trace trailer: %s", strerror(-err));
			rd->failed = true;
		}
	}
	if (rd->out >= 0 && close(rd->out)) {
		msg("closing the trace: %s", strerror(errno));
		rd->failed = true;
	}
	free(tr.cpu);
	free(ks);
}

int main(int argc, char **argv)
{
	struct reader rd = {
		.dir = MG_SENSOR_DIR,
		.default_dir = true,
		.out = -1,
		.bufsize = 256 * 1024,
		.reads = 4,
		.attr = {
			.watermark_bytes = 64 * 1024,
			.watermark_records = 0,
			.timeout_ns = 100 * 1000000ULL,
		},
	};
	unsigned long long v;
	const char *out = NULL;
	struct sigaction sa;
	int opt, r;

	bool sized = false;

	while ((opt = getopt(argc, argv, "o:d:b:r:mw:c:T:t:n:h")) != -1) {
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 'd':
			rd.dir = optarg;
			rd.default_dir = false;
			break;
		case 'b':
			if (parse_size(optarg, &v) || v < MIN_BUF || v > (1ULL << 30))
				usage(1);
			rd.bufsize = v;
			sized = true;
			break;
		case 'r':
			if (parse_size(optarg, &v) || !v || v > MAX_READS)
				usage(1);
			rd.reads = v;
			sized = true;
			break;
		case 'm':
			rd.mapped = true;
			break;
		case 'w':
			if (parse_size(optarg, &v))
				usage(1);
			rd.attr.watermark_bytes = v;
			rd.watermark_set = true;
			break;
		case 'c':
			if (parse_size(optarg, &v))
				usage(1);
			rd.attr.watermark_records = v;
			break;
		case 'T':
			if (parse_size(optarg, &v) || v > ULLONG_MAX / 1000000)
				usage(1);
			rd.attr.timeout_ns = v * 1000000ULL;
			break;
		case 't':
			if (parse_size(optarg, &v) || !v || v > 1000000000ULL)
				usage(1);
			rd.deadline_ns = v * 1000000000LL;
			break;
		case 'n':
			if (parse_size(optarg, &v) || !v || v > LLONG_MAX)
				usage(1);
			rd.limit_records = v;
			break;
		case 'h':
			usage(0);
		default:
			usage(1);
		}
	}
	if (!out || optind != argc)
		usage(1);
	if (rd.mapped && sized) {
		fprintf(stderr, PROG ": -m reads the rings in place: -b and -r do not apply\n");
		usage(1);
	}

	scan_dir(&rd);
	check_version(&rd);
	open_output(&rd, out);
	open_cpus(&rd);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: wake io_getevents */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);	/* a closed pipe is a write error */

	if (rd.mapped) {
		write_header(&rd);
		if (rd.deadline_ns)
			rd.deadline_ns += (long long)mg_now_ns(CLOCK_MONOTONIC);
		run_mapped(&rd);
		finish(&rd);
		mg_probe_watch_free(rd.names);
		return rd.failed || rd.corrupt ? 2 : 0;
	}
	r = io_setup(rd.ncpus * rd.reads, &rd.ctx);
	if (r < 0)
		die("io_setup: %s%s", strerror(-r),
		    r == -EAGAIN ? " (raise /proc/sys/fs/aio-max-nr)" : "");
	write_header(&rd);
	if (rd.deadline_ns)
		rd.deadline_ns += (long long)mg_now_ns(CLOCK_MONOTONIC);

	run(&rd);
	shutdown_reads(&rd);
	finish(&rd);
	/* Buffers of reads still in flight belong to the kernel. */
	if (!any_busy(&rd)) {
		unsigned int i;

		io_destroy(rd.ctx);
		for (i = 0; i < rd.ncpus; i++) {
			unsigned int k;

			close(rd.cpus[i].fd);
			for (k = 0; k < rd.cpus[i].nslots; k++)
				free(rd.cpus[i].slots[k].buf);
			free(rd.cpus[i].slots);
		}
		free(rd.cpus);
	}
	mg_probe_watch_free(rd.names);
	return rd.failed || rd.corrupt ? 2 : 0;
}
