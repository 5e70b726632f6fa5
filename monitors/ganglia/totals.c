// SPDX-License-Identifier: GPL-2.0
/* The Ganglia module's TOTALS client; see totals.h. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/un.h>

#include "auth.h"
#include "totals.h"

#define HEAD_MAX	65536	/* the first line, its end included, fits */
#define QUOTE_MAX	72	/* of a bad line quoted in a message, escaped */
#define RETRY_MS	1000	/* after a failure: 1, 2, 4 ... 32 s */
#define RETRY_SHIFT_MAX	5

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

/* A byte gmond and gmetad both pass through as XML allows. */
static bool plain(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && !strchr("%<>&\"'", c);
}

/* As many whole escaped bytes of s (len) as fit in room; bytes written. */
static size_t escape_span(char *dst, size_t room, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (plain(c)) {
			if (o + 1 > room)
				break;
			dst[o++] = c;
		} else {
			if (o + 3 > room)
				break;
			dst[o++] = '%';
			dst[o++] = hex[c >> 4];
			dst[o++] = hex[c & 15];
		}
	}
	return o;
}

void mgg_safe_name(char *dst, size_t size, const char *name)
{
	size_t len = strlen(name), need = 0, from = 0, o = 0, i;

	if (size < 4) {
		if (size)
			dst[0] = '\0';
		return;
	}
	for (i = 0; i < len; i++)
		need += plain(name[i]) ? 1 : 3;
	if (need > size - 1) {
		/* Its end names it best (a job's leaf); "..." says it is cut. */
		memcpy(dst, "...", 3);
		o = 3;
		while (need > size - 1 - o)
			need -= plain(name[from++]) ? 1 : 3;
	}
	o += escape_span(dst + o, size - 1 - o, name + from, len - from);
	dst[o] = '\0';
}

/* The start of a bad line, printable, for a message. */
static const char *quote(char *dst, size_t size, const char *s, size_t len)
{
	size_t o = escape_span(dst, size - 1, s, len);

	dst[o] = '\0';
	return dst;
}

/* The next word of [*p, end), spaces apart; false when none is left. */
static bool next_word(const char **p, const char *end, const char **w,
		      size_t *len)
{
	const char *q = *p;

	while (q < end && *q == ' ')
		q++;
	if (q == end)
		return false;
	*w = q;
	while (q < end && *q != ' ')
		q++;
	*len = q - *w;
	*p = q;
	return true;
}

/* The n-th word (0-based) of [line, end). */
static bool word(const char *line, const char *end, int n, const char **w,
		 size_t *len)
{
	const char *p = line;

	while (next_word(&p, end, w, len))
		if (!n--)
			return true;
	return false;
}

static bool has_word(const char *line, const char *end, const char *want)
{
	const char *p = line, *w;
	size_t len, wl = strlen(want);

	while (next_word(&p, end, &w, &len))
		if (len == wl && !memcmp(w, want, len))
			return true;
	return false;
}

static bool starts(const char *line, const char *end, const char *prefix)
{
	size_t pl = strlen(prefix);

	return (size_t)(end - line) >= pl && !memcmp(line, prefix, pl);
}

/*
 * A counter as magnetd writes it: decimal digits (no sign, exponent, NaN
 * or inf), at most 2^64 - 1. Only the digits of w are read.
 */
static bool number(const char *w, size_t len, double *v)
{
	unsigned long long n = 0;
	size_t i;

	if (!len || len > 20)
		return false;
	for (i = 0; i < len; i++) {
		unsigned int d = (unsigned char)w[i] - '0';

		if (d > 9 || n > (ULLONG_MAX - d) / 10)
			return false;
		n = n * 10 + d;
	}
	*v = (double)n;
	return true;
}

/* key=value among the words of [line, end): 1, 0 when absent, -1 when no counter. */
static int get(const char *line, const char *end, const char *key, double *v)
{
	size_t kl = strlen(key), len;
	const char *p = line, *w;

	while (next_word(&p, end, &w, &len))
		if (len > kl && !memcmp(w, key, kl) && w[kl] == '=')
			return number(w + kl + 1, len - kl - 1, v) ? 1 : -1;
	return 0;
}

/* A protocol word back to its bytes (%XX, as docs/protocol.md writes them). */
static int unescape(const char *w, size_t len, char **name)
{
	char *s = malloc(len + 1), *o = s;
	size_t i;

	if (!s)
		return -ENOMEM;
	for (i = 0; i < len; i++) {
		if (w[i] == '%' && len - i > 2 && hexval(w[i + 1]) >= 0 &&
		    hexval(w[i + 2]) >= 0) {
			*o = (char)(hexval(w[i + 1]) << 4 | hexval(w[i + 2]));
			i += 2;
		} else {
			*o = w[i];
		}
		if (!*o++) {	/* no name holds a NUL */
			free(s);
			return -EINVAL;
		}
	}
	*o = '\0';
	*name = s;
	return 0;
}

/* The value of key=VALUE among the words, if all of it is in chars (or a number). */
static int word_value(const char *line, const char *end, const char *key,
		      const char *chars, char *out, size_t size)
{
	size_t kl = strlen(key), len, i;
	const char *p = line, *w;

	while (next_word(&p, end, &w, &len)) {
		if (len <= kl || memcmp(w, key, kl) || w[kl] != '=')
			continue;
		w += kl + 1;
		len -= kl + 1;
		if (!len || len >= size)
			return -1;
		for (i = 0; i < len; i++)
			if (!w[i] || !strchr(chars, w[i]))
				return -1;
		memcpy(out, w, len);
		out[len] = '\0';
		return 1;
	}
	return 0;
}

#define DIGITS		"0123456789"
#define ALNUM		DIGITS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

/*
 * A job line's Slurm words (docs/protocol.md, TOTALS) as a gmond string,
 * into c->slurm: 0 (none, or made), -1 malformed, -ENOMEM.
 */
static int slurm_of(const char *line, const char *end, struct mgg_counter *c)
{
	char job[24], step[32] = "", stepd[4], node[68] = "", uid[24] = "";
	char s[MGG_SLURM_MAX * 2];
	int has_step, has_node, has_uid, has_stepd;

	switch (word_value(line, end, "slurm_job_id", DIGITS, job, sizeof(job))) {
	case 0:
		return 0;
	case -1:
		return -1;
	}
	has_step = word_value(line, end, "slurm_step", ALNUM "+", step, sizeof(step));
	has_stepd = word_value(line, end, "slurm_stepd", "1", stepd, sizeof(stepd));
	has_node = word_value(line, end, "slurm_node", ALNUM "._-", node, sizeof(node));
	has_uid = word_value(line, end, "uid", DIGITS, uid, sizeof(uid));
	if (has_step < 0 || has_stepd < 0 || has_node < 0 || has_uid < 0 ||
	    strlen(job) > 10 || strlen(uid) > 10 || strlen(step) > 22)
		return -1;
	snprintf(s, sizeof(s), "%s%s%s%s", job, has_step ? "." : "",
		 has_step ? step : "", has_stepd ? "/slurmstepd" : "");
	/* The node only where it fits: the job and its user come first. */
	if (has_node && strlen(s) + 6 + strlen(node) + (has_uid ? 5 + strlen(uid) : 0) <
	    MGG_SLURM_MAX)
		snprintf(s + strlen(s), sizeof(s) - strlen(s), " node=%s", node);
	if (has_uid)
		snprintf(s + strlen(s), sizeof(s) - strlen(s), " uid=%s", uid);
	c->slurm = strdup(s);
	return c->slurm ? 0 : -ENOMEM;
}

static int add(struct mgg_counter **v, size_t *n, const char *line,
	       const char *end, int name_word, char *why)
{
	struct mgg_counter c = { 0 }, *nv;
	double sock = 0;
	const char *w;
	size_t wl;
	int ret;
	char q[QUOTE_MAX + 1];

	if (!word(line, end, name_word, &w, &wl) ||
	    get(line, end, "events", &c.events) != 1 ||
	    get(line, end, "sock_bytes", &c.sock_bytes) != 1 ||
	    get(line, end, "sock", &sock) < 0)
		goto bad_line;
	ret = unescape(w, wl, &c.name);
	if (ret == -EINVAL)
		goto bad_line;
	if (ret)
		return ret;
	c.sock = sock != 0;
	ret = slurm_of(line, end, &c);
	if (ret) {
		free(c.name);
		if (ret == -1)
			goto bad_line;
		return ret;
	}
	nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv) {
		free(c.name);
		free(c.slurm);
		return -ENOMEM;
	}
	*v = nv;
	nv[(*n)++] = c;
	return 0;

bad_line:
	snprintf(why, 128, "bad TOTALS line: %s", quote(q, sizeof(q), line, end - line));
	return -EINVAL;
}

/*
 * A job's "net <cgroup> <proto> ... tx_bytes= ... rx_bytes=" line, after
 * its job's line (job, whose line is [job_line, jend)): its bytes added
 * to the job's. 0, or -EINVAL with why.
 */
static int add_net(struct mgg_counter *job, const char *job_line, const char *jend,
		   const char *line, const char *end, char *why)
{
	const char *w, *jw;
	double tx, rx;
	size_t wl, jwl;
	char q[QUOTE_MAX + 1];

	if (!job || !job_line || !word(line, end, 1, &w, &wl) ||
	    !word(job_line, jend, 1, &jw, &jwl) || wl != jwl || memcmp(w, jw, wl) ||
	    get(line, end, "tx_bytes", &tx) != 1 || get(line, end, "rx_bytes", &rx) != 1) {
		snprintf(why, 128, "bad TOTALS line: %s", quote(q, sizeof(q), line, end - line));
		return -EINVAL;
	}
	job->net_tx_bytes += tx;
	job->net_rx_bytes += rx;
	return 0;
}

int mgg_parse(const char *text, size_t len, struct mgg_snapshot *s, char *why)
{
	const char *job_line = NULL, *job_end = NULL;
	const char *end = text + len, *p = text, *eol, *w;
	char q[QUOTE_MAX + 1];
	double n;
	size_t wl;
	long i;
	int ret;

	memset(s, 0, sizeof(*s));
	eol = memchr(p, '\n', len);
	if (!eol || !starts(p, eol, "OK ") || !word(p, eol, 2, &w, &wl) ||
	    wl != 6 || memcmp(w, "totals", 6)) {
		snprintf(why, 128, "not a TOTALS reply: %s",
			 quote(q, sizeof(q), p, (eol ? eol : end) - p));
		return -EINVAL;
	}
	if (!word(p, eol, 1, &w, &wl) || !number(w, wl, &n) || n > MGG_LINES_MAX) {
		snprintf(why, 128, "TOTALS reply with a bad line count: %s",
			 quote(q, sizeof(q), p, eol - p));
		return -EINVAL;
	}
	if (get(p, eol, "ts", &s->ts) != 1 || get(p, eol, "uptime", &s->uptime) != 1 ||
	    get(p, eol, "records", &s->records) != 1 ||
	    get(p, eol, "bytes", &s->bytes) != 1 ||
	    get(p, eol, "kernel_lost", &s->kernel_lost) != 1 ||
	    get(p, eol, "daemon_dropped", &s->daemon_dropped) != 1 ||
	    get(p, eol, "probes", &s->probes) != 1) {
		snprintf(why, 128, "TOTALS reply without its counters: %s",
			 quote(q, sizeof(q), p, eol - p));
		return -EINVAL;
	}
	s->ts /= 1e9;
	s->module_up = has_word(p, eol, "module=up");
	p = eol + 1;
	for (i = 0; i < (long)n; i++) {
		eol = memchr(p, '\n', end - p);
		if (!eol) {
			snprintf(why, 128, "TOTALS reply cut after %ld of %ld lines", i, (long)n);
			mgg_free(s);
			return -EINVAL;
		}
		if (starts(p, eol, "probe "))
			ret = add(&s->probes_v, &s->nprobes, p, eol, 3, why);
		else if (starts(p, eol, "job "))
			ret = add(&s->jobs_v, &s->njobs, p, eol, 2, why);
		else if (starts(p, eol, "net "))
			ret = add_net(s->njobs ? &s->jobs_v[s->njobs - 1] : NULL,
				      job_line, job_end, p, eol, why);
		else
			ret = 0;	/* a kind of line added later */
		if (ret) {
			if (ret == -ENOMEM)
				snprintf(why, 128, "out of memory");
			mgg_free(s);
			return ret;
		}
		if (starts(p, eol, "job ")) {
			job_line = p;
			job_end = eol;
		}
		p = eol + 1;
	}
	if (p != end) {
		snprintf(why, 128, "TOTALS reply longer than its %ld lines", (long)n);
		mgg_free(s);
		return -EINVAL;
	}
	return 0;
}

void mgg_free(struct mgg_snapshot *s)
{
	size_t i;

	/* add() reads Slurm's words on any line: a probe line may have them. */
	for (i = 0; i < s->nprobes; i++) {
		free(s->probes_v[i].name);
		free(s->probes_v[i].slurm);
	}
	for (i = 0; i < s->njobs; i++) {
		free(s->jobs_v[i].name);
		free(s->jobs_v[i].slurm);
	}
	free(s->probes_v);
	free(s->jobs_v);
	s->probes_v = s->jobs_v = NULL;
	s->nprobes = s->njobs = 0;
}

long mgg_rx_more(struct mgg_rx *rx, const char *buf, size_t len, char *why)
{
	char q[QUOTE_MAX + 1];

	while (rx->scanned < len) {
		const char *nl = memchr(buf + rx->scanned, '\n', len - rx->scanned);
		const char *w;
		size_t wl;
		double n;

		if (!nl) {
			rx->scanned = len;
			break;
		}
		rx->scanned = nl - buf + 1;
		if (!rx->head && rx->scanned > HEAD_MAX)
			break;		/* as if it had not come yet */
		if (rx->head) {
			rx->lines++;
		} else if (!starts(buf, nl, "OK ")) {
			return rx->scanned;	/* an ERR line: one line */
		} else if (!word(buf, nl, 1, &w, &wl) || !number(w, wl, &n) ||
			   n > MGG_LINES_MAX) {
			snprintf(why, 128, "a reply of a bad line count: %s",
				 quote(q, sizeof(q), buf, nl - buf));
			return -EINVAL;
		} else {
			rx->head = true;
			rx->want = (long)n;
		}
		if (rx->lines == rx->want)
			return rx->scanned;
	}
	if (!rx->head && len >= HEAD_MAX) {
		snprintf(why, 128, "no end of line in the first %d bytes", HEAD_MAX);
		return -EINVAL;
	}
	return 0;
}

long long mgg_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

int mgg_wait_fd(int fd, short events, long long deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	long long left;
	int n;

	do {
		left = deadline - mgg_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)left);
	} while (n < 0 && errno == EINTR);
	return n > 0 ? 0 : n == 0 ? -ETIMEDOUT : -errno;
}

int mgg_link_init(struct mgg_link *l, const char *host, const char *port,
		  int timeout_ms, char *why, size_t whylen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int ret;

	memset(l, 0, sizeof(*l));
	ret = getaddrinfo(host, port, &hints, &ai);
	if (ret) {
		snprintf(why, whylen, "%s:%s: %s", host, port, gai_strerror(ret));
		return -EINVAL;
	}
	memcpy(&l->addr, ai->ai_addr, ai->ai_addrlen);
	l->addrlen = ai->ai_addrlen;
	freeaddrinfo(ai);
	snprintf(l->where, sizeof(l->where), "%s:%s", host, port);
	l->timeout_ms = timeout_ms;
	return 0;
}

int mgg_link_init_unix(struct mgg_link *l, const char *path, int timeout_ms,
		       char *why, size_t whylen)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)&l->addr;

	memset(l, 0, sizeof(*l));
	if (path[0] != '/' || strlen(path) >= sizeof(sun->sun_path)) {
		snprintf(why, whylen, "'%s' is not an absolute path of at most %zu bytes",
			 path, sizeof(sun->sun_path) - 1);
		return -EINVAL;
	}
	sun->sun_family = AF_UNIX;
	strcpy(sun->sun_path, path);
	l->addrlen = sizeof(*sun);
	snprintf(l->where, sizeof(l->where), "%s", path);
	l->timeout_ms = timeout_ms;
	return 0;
}

/*
 * A stream socket connected to l's address by the deadline (never
 * blocking past it): the fd, or a negative errno.
 */
static int connect_by(const struct mgg_link *l, long long deadline)
{
	int fd, ret, err = 0;
	socklen_t el = sizeof(err);

	fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)&l->addr, l->addrlen) &&
	    errno != EINPROGRESS) {
		ret = -errno;
		goto fail;
	}
	ret = mgg_wait_fd(fd, POLLOUT, deadline);
	if (ret)
		goto fail;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
		ret = err ? -err : -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return ret;
}

/* One TOTALS exchange, all of it within l->timeout_ms. */
static int exchange(const struct mgg_link *l, struct mgg_snapshot *s,
		    char *why, size_t whylen)
{
	long long deadline = mgg_now_ms() + l->timeout_ms;
	struct mgg_rx rx = { 0 };
	size_t len = 0, cap = 65536;
	char *buf = NULL, detail[256] = "";
	const char *step = "connect to";
	long whole;
	ssize_t n;
	int fd, ret;

	fd = connect_by(l, deadline);
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	step = "authenticate to";
	ret = mgg_authenticate(fd, (const struct sockaddr *)&l->addr, deadline,
			       detail, sizeof(detail));
	if (ret == -ETIMEDOUT && !detail[0])
		snprintf(detail, sizeof(detail), "no answer in time (%d ms)", l->timeout_ms);
	if (ret)
		goto out;
	step = "send to";
	n = send(fd, "TOTALS\n", 7, MSG_NOSIGNAL);
	if (n != 7) {
		ret = n < 0 ? -errno : -EIO;
		goto out;
	}
	step = "read from";
	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	while (!(whole = mgg_rx_more(&rx, buf, len, detail))) {
		if (len == cap) {
			char *nb = cap < MGG_REPLY_MAX ? realloc(buf, cap * 2) : NULL;

			if (!nb) {
				ret = cap < MGG_REPLY_MAX ? -ENOMEM : -EFBIG;
				snprintf(detail, sizeof(detail), "%s",
					 ret == -EFBIG ? "reply larger than 32 MiB" : "out of memory");
				goto out;
			}
			buf = nb;
			cap *= 2;
		}
		ret = mgg_wait_fd(fd, POLLIN, deadline);
		if (ret) {
			snprintf(detail, sizeof(detail), "no whole reply in %d ms (%zu bytes)",
				 l->timeout_ms, len);
			goto out;
		}
		n = recv(fd, buf + len, cap - len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			ret = -errno;
			goto out;
		}
		if (!n) {
			ret = -ECONNRESET;
			snprintf(detail, sizeof(detail), "closed after %zu bytes, the reply unfinished", len);
			goto out;
		}
		len += n;
	}
	if (whole < 0) {
		ret = -EINVAL;
		goto out;
	}
	step = "reply from";
	ret = mgg_parse(buf, whole, s, detail);
out:
	if (ret)
		snprintf(why, whylen, "%s %s: %s", step, l->where,
			 detail[0] ? detail : strerror(-ret));
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

int mgg_link_fetch(struct mgg_link *l, struct mgg_snapshot *s, char *why,
		   size_t whylen)
{
	int ret;

	if (l->next_ms && mgg_now_ms() < l->next_ms)
		return 0;
	ret = exchange(l, s, why, whylen);
	if (!ret) {
		l->failures = 0;
		l->next_ms = 0;
		return 1;
	}
	/* From the failure's end: the wait is not spent within the fetch. */
	l->next_ms = mgg_now_ms() + ((long long)RETRY_MS <<
		(l->failures < RETRY_SHIFT_MAX ? l->failures : RETRY_SHIFT_MAX));
	l->failures++;
	return ret;
}

const char *mgg_job_name(const struct mgg_counter *c)
{
	return c->slurm ? c->slurm : c->name;
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
