// SPDX-License-Identifier: GPL-2.0
/*
 * The sensor directory; see sensor.h.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif
#include <linux/magnet.h>

#include "sensor.h"

char *mg_sensor_read(const char *dir, const char *name, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char path[PATH_MAX], *buf;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	while (buf) {
		ssize_t n;

		if (len + 1 == cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				err = ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		if (!n)
			break;
		len += n;
	}
	close(fd);
	if (!buf || err) {
		free(buf);
		errno = buf ? err : ENOMEM;
		return NULL;
	}
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
}

int mg_sensor_version(const char *dir, struct mg_sensor_version *v)
{
	char *text = mg_sensor_read(dir, "version", NULL), *line, *save;

	memset(v, 0, sizeof(*v));
	snprintf(v->clock, sizeof(v->clock), "mono");
	if (!text)
		return -errno;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned int n;
		char word[32];

		if (sscanf(line, "magnet %31s", word) == 1)
			snprintf(v->release, sizeof(v->release), "%s", word);
		else if (sscanf(line, "format %u", &n) == 1)
			v->format = n;
		else if (sscanf(line, "clock %15s", word) == 1)
			snprintf(v->clock, sizeof(v->clock), "%.15s", word);
		else if (sscanf(line, "cpus %u", &n) == 1)
			v->cpus = n;
		else if (sscanf(line, "tsc_khz %u", &n) == 1)
			v->tsc_khz = n;
	}
	free(text);
	return 0;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return (x > y) - (x < y);
}

int mg_sensor_cpus(const char *dir, unsigned int **cpus, unsigned int *np)
{
	unsigned int n = 0, cap = 0, *v = NULL;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d && errno == ENOENT) {
		/* debugfs not mounted: the devices list the same CPUs. */
		d = opendir(MG_SENSOR_DEV_DIR);
		if (!d)
			errno = ENOENT;
	}
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		const char *p = de->d_name;
		unsigned long c;
		char *end;

		if (strncmp(p, "cpu", 3) || !isdigit((unsigned char)p[3]))
			continue;
		errno = 0;
		c = strtoul(p + 3, &end, 10);
		if (*end || errno || c >= MG_TRACE_MAX_CPUS)
			continue;
		if (n == cap) {
			unsigned int *nv;

			cap = cap ? 2 * cap : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = c;
	}
	closedir(d);
	if (!n) {
		free(v);
		return -ENOENT;
	}
	qsort(v, n, sizeof(*v), cmp_uint);
	*cpus = v;
	*np = n;
	return 0;
}

int mg_sensor_open_cpu(const char *dir, unsigned int cpu, int flags, char *path,
		       size_t size, char *err, size_t errlen)
{
	char first[PATH_MAX + 16];
	int fd, e;

	snprintf(path, size, "%s/cpu%u", dir, cpu);
	fd = open(path, flags);
	if (fd >= 0)
		return fd;
	e = errno;
	snprintf(err, errlen, "%s: %s", path, strerror(e));
	if (e != EPERM && e != ENOENT)
		return -e;
	snprintf(first, sizeof(first), "%s", path);
	snprintf(path, size, "%s/cpu%u", MG_SENSOR_DEV_DIR, cpu);
	fd = open(path, flags);
	if (fd >= 0)
		return fd;
	if (errno != ENOENT) {
		/* The ring is there: its EBUSY, EACCES... are what counts. */
		e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	snprintf(err, errlen, "%s: %s%s; %s: %s", first, strerror(e),
		 e == EPERM ? " (kernel lockdown?)" : "", path, strerror(ENOENT));
	snprintf(path, size, "%s", first);
	return -e;
}

bool mg_sensor_loaded(void)
{
	return !access(MG_SENSOR_DEV_DIR, F_OK);
}

unsigned long mg_sensor_ring_size(const char *buffers, unsigned int cpu)
{
	const char *line;

	for (line = buffers; line && *line; line = strchr(line, '\n')) {
		unsigned long size;
		unsigned int n;

		if (*line == '\n')
			line++;
		if (sscanf(line, "%u\t%lu", &n, &size) == 2 && n == cpu)
			return size;
	}
	return 0;
}

__u64 mg_now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

__u64 mg_trace_clock_now(const char *clock)
{
#if defined(__x86_64__) || defined(__i386__)
	if (!strcmp(clock, "tsc"))
		return __rdtsc();
#endif
	return mg_now_ns(CLOCK_MONOTONIC);
}

void mg_sensor_trace_info(struct mg_trace_info *info,
			  const struct mg_sensor_version *v, __u32 ncpus,
			  const char *probes, size_t probes_len)
{
	struct utsname uts;
	__u64 c1, c2;

	memset(info, 0, sizeof(*info));
	info->probes = probes;
	info->probes_len = probes ? probes_len : 0;
	info->ncpus = ncpus;
	info->record_version = MAGNET_FORMAT_VERSION;
	snprintf(info->clock, sizeof(info->clock), "%s", v->clock);
	/*
	 * Only a tsc trace needs the frequency; a mono trace keeps the field
	 * 0, so it stays readable by readers from before the field existed.
	 */
	if (!strcmp(v->clock, "tsc"))
		info->tsc_khz = v->tsc_khz;
	gethostname(info->hostname, sizeof(info->hostname) - 1);
	if (!uname(&uts))
		snprintf(info->release, sizeof(info->release), "%s", uts.release);
	/* Bracket the wall-clock sample to pair it with the trace clock. */
	c1 = mg_trace_clock_now(v->clock);
	info->start_realtime_ns = mg_now_ns(CLOCK_REALTIME);
	c2 = mg_trace_clock_now(v->clock);
	info->start_clock_ns = c1 + (c2 - c1) / 2;
}
