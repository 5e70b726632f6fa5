// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's ring sizing; see rings.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "ctl.h"
#include "rings.h"
#include "sensor.h"

#define RING_MIN	((size_t)MAGNET_BUFFER_SIZE_MIN_KIB << 10)
#define RING_MAX	((size_t)MAGNET_BUFFER_SIZE_MAX_MIB << 20)

static _Atomic unsigned int resizes;

struct rings {
	unsigned int cpus;
	size_t smallest;	/* ring size of the smallest ring */
	size_t used;		/* unread bytes, all rings */
	unsigned int readers;
};

__attribute__((format(printf, 4, 5)))
static void say(mg_rings_log log, void *arg, int prio, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log(arg, prio, msg);
}

/* dir/buffers: "cpu size mode used reader fair", a header line first. */
static int read_rings(const char *dir, struct rings *r)
{
	char *text = mg_sensor_read(dir, "buffers", NULL), *line, *save;

	memset(r, 0, sizeof(*r));
	if (!text)
		return errno ? -errno : -EIO;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long size, used;
		unsigned int cpu;
		char mode[16];
		int reader;

		if (sscanf(line, "%u %lu %15s %lu %d", &cpu, &size, mode, &used, &reader) != 5)
			continue;
		if (!r->cpus || size < r->smallest)
			r->smallest = size;
		r->used += used;
		r->readers += reader > 0;
		r->cpus++;
	}
	free(text);
	return r->cpus ? 0 : -ENODATA;
}

/* The records the module threw away in resizes so far, all CPUs. */
static unsigned long long discarded(const char *dir)
{
	char *text = mg_sensor_read(dir, "stats", NULL), *line, *save;
	unsigned long long sum = 0, d;
	unsigned int cpu;

	if (!text)
		return 0;
	/* cpu written bytes lost_full lost_too_big lost_nesting overwritten discarded ... */
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (sscanf(line, "%u %*u %*u %*u %*u %*u %*u %llu", &cpu, &d) == 2)
			sum += d;
	free(text);
	return sum;
}

static size_t memory_cap(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	size_t cap;

	if (pages <= 0 || page <= 0)
		return RING_MIN;
	cap = (size_t)pages * (size_t)page / MG_RINGS_MEMORY_DIVISOR;
	/* Whole MiB: what the log says is what was meant. */
	return cap > (1UL << 20) ? cap & ~((1UL << 20) - 1) : cap;
}

/* magnet-ctl buffer set size N, its error message in err. */
static int set_size(size_t size, char *err, size_t errlen)
{
	char arg[32], *argv[] = { "buffer", "set", "size", arg, NULL };
	char *errbuf = NULL;
	size_t elen = 0;
	FILE *out = fopen("/dev/null", "w"), *ef = open_memstream(&errbuf, &elen);
	int ret = -ENOMEM;

	snprintf(arg, sizeof(arg), "%zu", size);
	if (out && ef)
		ret = ctl_exec(4, argv, out, ef) ? -EIO : 0;
	if (ef)
		fclose(ef);
	if (out)
		fclose(out);
	while (elen && errbuf[elen - 1] == '\n')
		errbuf[--elen] = '\0';
	snprintf(err, errlen, "%s", elen ? errbuf : "out of memory");
	free(errbuf);
	return ret;
}

int mg_rings_grow(const char *dir, size_t want, size_t cap, mg_rings_log log, void *arg)
{
	char now[32], wanted[32], goal[32], capped[32], err[256];
	unsigned long long before;
	size_t target;
	struct rings r;
	int ret;

	if (!want)
		return 0;
	ret = read_rings(dir, &r);
	if (ret)
		return ret;
	if (!cap)
		cap = memory_cap();
	target = want < RING_MAX ? want : RING_MAX;
	while (target > RING_MIN && target * r.cpus > cap)
		target /= 2;
	if (r.smallest >= target && r.smallest >= want)
		return 0;
	ctl_format_size(now, sizeof(now), r.smallest);
	ctl_format_size(wanted, sizeof(wanted), want);
	ctl_format_size(goal, sizeof(goal), target);
	ctl_format_size(capped, sizeof(capped), cap);
	if (r.smallest >= target) {
		say(log, arg, LOG_NOTICE,
		    "rings kept at %s per CPU: ring_size %s on %u CPUs would take more than ring_memory (%s)",
		    now, wanted, r.cpus, capped);
		return 0;
	}
	if (r.readers) {
		say(log, arg, LOG_NOTICE, "rings kept at %s per CPU: another reader holds them", now);
		return 0;
	}
	if (r.used) {
		say(log, arg, LOG_NOTICE,
		    "rings kept at %s per CPU: they hold %zu bytes of records not read yet, which a resize would throw away (size them before the probes write: the module's buf_size=, or magnet-ctl buffer set size)",
		    now, r.used);
		return 0;
	}
	before = discarded(dir);
	ret = set_size(target, err, sizeof(err));
	if (ret) {
		say(log, arg, LOG_WARNING, "rings kept at %s per CPU: growing them to %s: %s",
		    now, goal, err);
		return ret;
	}
	atomic_fetch_add(&resizes, 1);
	before = discarded(dir) - before;
	if (before)
		snprintf(err, sizeof(err), ": %llu records written meanwhile were thrown away (the kernel's discarded count)",
			 before);
	else
		err[0] = '\0';
	say(log, arg, before ? LOG_WARNING : LOG_INFO,
	    "rings grown from %s to %s per CPU (%u CPUs; ring_size %s, ring_memory %s)%s",
	    now, goal, r.cpus, wanted, capped, err);
	return 1;
}

unsigned int mg_rings_resizes(void)
{
	return atomic_load(&resizes);
}
