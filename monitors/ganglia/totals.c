// SPDX-License-Identifier: GPL-2.0
/* The Ganglia module's TOTALS client; see totals.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "auth.h"
#include "totals.h"

#define REPLY_MAX	(16 << 20)	/* 4096 jobs and every probe fit */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* A protocol word back to its bytes (%XX, as docs/protocol.md writes them). */
static char *unescape(const char *w, size_t len)
{
	char *s = malloc(len + 1), *o = s;
	size_t i;

	if (!s)
		return NULL;
	for (i = 0; i < len; i++) {
		if (w[i] == '%' && i + 2 < len && hexval(w[i + 1]) >= 0 &&
		    hexval(w[i + 2]) >= 0) {
			*o++ = (char)(hexval(w[i + 1]) << 4 | hexval(w[i + 2]));
			i += 2;
		} else {
			*o++ = w[i];
		}
	}
	*o = '\0';
	return s;
}

/* key=value among the words of line (up to its end). */
static bool get(const char *line, const char *end, const char *key, double *v)
{
	size_t kl = strlen(key);
	const char *p = line;

	while (p < end) {
		const char *w = p;

		while (p < end && *p != ' ')
			p++;
		if ((size_t)(p - w) > kl && !memcmp(w, key, kl) && w[kl] == '=') {
			char *e;

			*v = strtod(w + kl + 1, &e);
			return e == p;
		}
		while (p < end && *p == ' ')
			p++;
	}
	return false;
}

/* The n-th word (0-based) of line: start and length. */
static bool word(const char *line, const char *end, int n, const char **w,
		 size_t *len)
{
	const char *p = line;

	for (;;) {
		while (p < end && *p == ' ')
			p++;
		if (p == end)
			return false;
		*w = p;
		while (p < end && *p != ' ')
			p++;
		if (!n--) {
			*len = p - *w;
			return true;
		}
	}
}

static int add(struct mgg_counter **v, size_t *n, const char *line,
	       const char *end, int name_word, char *why)
{
	struct mgg_counter *c, *nv;
	const char *w;
	size_t wl;
	double sock = 0;

	nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	c = &nv[*n];
	memset(c, 0, sizeof(*c));
	if (!word(line, end, name_word, &w, &wl) ||
	    !get(line, end, "events", &c->events) ||
	    !get(line, end, "sock_bytes", &c->sock_bytes)) {
		snprintf(why, 128, "bad TOTALS line: %.*s", (int)(end - line > 80 ? 80 : end - line), line);
		return -EINVAL;
	}
	if (get(line, end, "sock", &sock))
		c->sock = sock != 0;
	c->name = unescape(w, wl);
	if (!c->name)
		return -ENOMEM;
	(*n)++;
	return 0;
}

int mgg_parse(const char *text, size_t len, struct mgg_snapshot *s, char *why)
{
	const char *end = text + len, *p = text, *eol;
	double n;
	const char *w;
	size_t wl;
	long i;
	int ret;

	memset(s, 0, sizeof(*s));
	eol = memchr(p, '\n', end - p);
	if (!eol || strncmp(p, "OK ", 3) ||
	    !word(p, eol, 2, &w, &wl) || wl != 6 || memcmp(w, "totals", 6)) {
		snprintf(why, 128, "not a TOTALS reply: %.*s",
			 (int)((eol ? eol : end) - p > 80 ? 80 : (eol ? eol : end) - p), p);
		return -EINVAL;
	}
	n = strtod(p + 3, NULL);
	if (!get(p, eol, "ts", &s->ts) || !get(p, eol, "uptime", &s->uptime) ||
	    !get(p, eol, "records", &s->records) ||
	    !get(p, eol, "bytes", &s->bytes) ||
	    !get(p, eol, "kernel_lost", &s->kernel_lost) ||
	    !get(p, eol, "daemon_dropped", &s->daemon_dropped) ||
	    !get(p, eol, "probes", &s->probes)) {
		snprintf(why, 128, "TOTALS reply without its counters");
		return -EINVAL;
	}
	s->ts /= 1e9;
	s->module_up = strstr(p, " module=up ") && strstr(p, " module=up ") < eol;
	p = eol + 1;
	for (i = 0; i < (long)n; i++) {
		eol = memchr(p, '\n', end - p);
		if (!eol) {
			snprintf(why, 128, "TOTALS reply cut after %ld of %ld lines", i, (long)n);
			mgg_free(s);
			return -EINVAL;
		}
		if (!strncmp(p, "probe ", 6))
			ret = add(&s->probes_v, &s->nprobes, p, eol, 3, why);
		else if (!strncmp(p, "job ", 4))
			ret = add(&s->jobs_v, &s->njobs, p, eol, 2, why);
		else
			ret = 0;	/* a kind of line added later */
		if (ret) {
			if (ret == -ENOMEM)
				snprintf(why, 128, "out of memory");
			mgg_free(s);
			return ret;
		}
		p = eol + 1;
	}
	return 0;
}

void mgg_free(struct mgg_snapshot *s)
{
	size_t i;

	for (i = 0; i < s->nprobes; i++)
		free(s->probes_v[i].name);
	for (i = 0; i < s->njobs; i++)
		free(s->jobs_v[i].name);
	free(s->probes_v);
	free(s->jobs_v);
	s->probes_v = s->jobs_v = NULL;
	s->nprobes = s->njobs = 0;
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* Wait for events on fd until the deadline; 0, or -ETIMEDOUT. */
static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	long long left = deadline - now_ms();
	int n;

	if (left <= 0)
		return -ETIMEDOUT;
	do
		n = poll(&pfd, 1, (int)left);
	while (n < 0 && errno == EINTR);
	return n > 0 ? 0 : n == 0 ? -ETIMEDOUT : -errno;
}

/* Whole reply read: the OK line's count of lines all arrived. */
static bool complete(const char *buf, size_t len)
{
	const char *eol = memchr(buf, '\n', len);
	long n, seen = 0;
	size_t i;

	if (!eol)
		return false;
	if (strncmp(buf, "OK ", 3))
		return true;	/* an ERR line: one line */
	n = strtol(buf + 3, NULL, 10);
	for (i = eol - buf + 1; i < len; i++)
		seen += buf[i] == '\n';
	return seen >= n;
}

int mgg_fetch(const char *host, const char *port, int timeout_ms,
	      struct mgg_snapshot *s, char *why, size_t whylen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	long long deadline = now_ms() + timeout_ms;
	size_t len = 0, cap = 65536;
	char *buf = NULL, pwhy[128];
	int fd = -1, ret, err = 0;
	socklen_t el = sizeof(err);
	const char *step = "connect to";

	ret = getaddrinfo(host, port, &hints, &ai);
	if (ret) {
		snprintf(why, whylen, "%s:%s: %s", host, port, gai_strerror(ret));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
		ret = -errno;
		goto out;
	}
	ret = wait_fd(fd, POLLOUT, deadline);
	if (ret)
		goto out;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
		ret = -(err ? err : errno);
		goto out;
	}
	step = "authenticate to";
	ret = mgg_authenticate(fd, ai->ai_addr, deadline, why, whylen);
	if (ret)
		goto out;
	step = "send to";
	if (send(fd, "TOTALS\n", 7, MSG_NOSIGNAL) != 7) {
		ret = errno ? -errno : -EIO;
		goto out;
	}
	step = "read from";
	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	while (!len || !complete(buf, len)) {	/* nothing read yet: buf unset */
		ssize_t n;

		if (len == cap) {
			char *nb = cap < REPLY_MAX ? realloc(buf, cap * 2) : NULL;

			if (!nb) {
				ret = -EFBIG;
				goto out;
			}
			buf = nb;
			cap *= 2;
		}
		ret = wait_fd(fd, POLLIN, deadline);
		if (ret)
			goto out;
		n = recv(fd, buf + len, cap - len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			ret = n ? -errno : -ECONNRESET;
			goto out;
		}
		len += n;
	}
	ret = mgg_parse(buf, len, s, pwhy);
	if (ret)
		snprintf(why, whylen, "%s", pwhy);
out:
	if (ret && ret != -EINVAL)
		snprintf(why, whylen, "%s %s:%s: %s", step, host, port,
			 ret == -ETIMEDOUT ? "no answer in time" : strerror(-ret));
	if (fd >= 0)
		close(fd);
	free(buf);
	freeaddrinfo(ai);
	return ret;
}

const struct mgg_counter *mgg_find(const struct mgg_counter *v, size_t n,
				   const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

double mgg_rate(const struct mgg_snapshot *prev, const struct mgg_snapshot *cur,
		double before, double now)
{
	double dt;

	if (!prev || !cur || cur->uptime < prev->uptime || now < before ||
	    isnan(before) || isnan(now))
		return NAN;
	dt = cur->ts - prev->ts;
	return dt > 0 ? (now - before) / dt : NAN;
}

void mgg_metric_word(char *dst, size_t size, const char *name)
{
	size_t o = 0;
	bool sep = false;

	for (; *name && o + 1 < size; name++) {
		unsigned char c = *name;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9')) {
			if (sep && o)
				dst[o++] = '_';
			sep = false;
			if (o + 1 < size)
				dst[o++] = c;
		} else if (c == '_') {
			dst[o++] = c;
			sep = false;
		} else {
			sep = true;	/* runs of other bytes: one '_' */
		}
	}
	if (!o && size > 4) {
		strcpy(dst, "root");	/* "/" */
		return;
	}
	dst[o] = '\0';
}
