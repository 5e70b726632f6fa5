// SPDX-License-Identifier: GPL-2.0
/*
 * mgclient: see mgclient.h. The protocol is docs/protocol.md; the
 * comments here say only what the document leaves to a client.
 *
 * This half is the transport: addresses, message framing, %XX, the
 * programs' helpers and the connection. The parsers of the replies' texts
 * are mgreply.c.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "escape.h"
#include "mgc_int.h"
#include "mgclient.h"
#include "util.h"

/* First receive buffer; it doubles up to MGC_BUF_MAX for large messages. */
#define MGC_BUF_MIN		(256U << 10)
#define MGC_BUF_MAX		(MGC_FRAME_MAX + 2 * MGC_LINE_MAX)
/* How long a send may wait for room in the socket. */
#define MGC_SEND_TIMEOUT_MS	10000
/* An argument of ours that is wrong: why, and -EINVAL. */
__attribute__((format(printf, 3, 4)))
static int bad(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwhy(why, whylen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int mgc_parse_u64(const char *s, size_t len, __u64 *v)
{
	__u64 n = 0;
	size_t i;

	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		unsigned int d = (unsigned char)s[i] - '0';

		if (d > 9 || n > (UINT64_MAX - d) / 10)
			return -EINVAL;
		n = n * 10 + d;
	}
	*v = n;
	return 0;
}

int mgc_parse_ms(const char *s, long long *ms)
{
	const char *dot = strchr(s, '.');
	size_t il = dot ? (size_t)(dot - s) : strlen(s);
	size_t fl = dot ? strlen(dot + 1) : 0, i;
	__u64 ip, fp = 0;

	if (mgc_parse_u64(s, il, &ip) || ip > 1000000000ULL ||
	    (dot && (mgc_parse_u64(dot + 1, fl, &fp) || fl > 3)))
		return -EINVAL;
	for (i = fl; i < 3; i++)
		fp *= 10;
	*ms = ip * 1000 + fp;
	return 0;
}

int mgc_opt_count(const char *prog, char opt, const char *arg, __u64 *v)
{
	if (mgc_parse_u64(arg, strlen(arg), v) || !*v) {
		fprintf(stderr, "%s: -%c needs a count from 1, not '%s'\n",
			prog, opt, arg);
		return -EINVAL;
	}
	return 0;
}

/* ---- for the programs ---- */

long long mgc_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void mgc_catch_signals(const int *sigs, void (*handler)(int),
		       sigset_t *waitmask)
{
	struct sigaction sa = { .sa_handler = handler };
	sigset_t block;
	size_t i;

	sigemptyset(&block);
	for (i = 0; sigs[i]; i++)
		sigaddset(&block, sigs[i]);
	sigprocmask(SIG_BLOCK, &block, waitmask);
	for (i = 0; sigs[i]; i++)
		sigaction(sigs[i], &sa, NULL);
}

/* ---- addresses ---- */

static int copy_part(char *dst, size_t dstlen, const char *s, size_t len)
{
	if (len >= dstlen)
		return -1;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return 0;
}

int mgc_split_addr(const char *spec, char *host, size_t hostlen,
		   char *port, size_t portlen, char *why, size_t whylen)
{
	const char *h = MGC_DEFAULT_HOST, *p = MGC_DEFAULT_PORT, *colon;
	size_t hl = strlen(h), pl = strlen(p);
	__u64 pv;

	if (spec && *spec == '[') {
		const char *close = strchr(spec, ']');

		if (!close)
			return bad(why, whylen, "missing ']' after the IPv6 address");
		h = spec + 1;
		hl = close - h;
		if (!hl)
			return bad(why, whylen, "empty address in '[]'");
		if (close[1] == ':') {
			p = close + 2;
			pl = strlen(p);
		} else if (close[1]) {
			return bad(why, whylen, "expected ':PORT' after ']'");
		}
	} else if (spec && *spec) {
		colon = strchr(spec, ':');
		if (colon && strchr(colon + 1, ':')) {
			/* Two colons: a bare IPv6 address, no port. */
			h = spec;
			hl = strlen(spec);
		} else if (colon) {
			if (colon > spec) {
				h = spec;
				hl = colon - spec;
			}
			p = colon + 1;
			pl = strlen(p);
		} else {
			h = spec;
			hl = strlen(spec);
		}
	}
	if (mgc_parse_u64(p, pl, &pv) || pv < 1 || pv > 65535)
		return bad(why, whylen, "port must be a number from 1 to 65535");
	if (copy_part(host, hostlen, h, hl) || copy_part(port, portlen, p, pl))
		return bad(why, whylen, "address too long");
	return 0;
}

/* ---- messages ---- */

/* The '\n' ending the line at p, within the line limit. */
static int find_line(const char *p, size_t len, const char **nl,
		     char *why, size_t whylen)
{
	size_t scan = len > MGC_LINE_MAX ? MGC_LINE_MAX + 1 : len;

	*nl = memchr(p, '\n', scan);
	if (*nl)
		return 1;
	if (len > MGC_LINE_MAX) {
		fail(why, whylen, "line longer than %u bytes", MGC_LINE_MAX);
		return -EMSGSIZE;
	}
	return 0;
}

/* Does the line start with word w, followed by a blank or its end? */
static bool starts_word(const char *s, size_t len, const char *w)
{
	size_t wl = strlen(w);

	return len >= wl && !memcmp(s, w, wl) && (len == wl || is_blank(s[wl]));
}

/* The count word of "B <n>" and "D <n>": exactly two words. */
static int count_line(const char *s, size_t len, __u64 *n)
{
	const char *p = s + 1, *end = s + len, *w, *x;
	size_t wl, xl;

	if (!next_word(&p, end, &w, &wl) || mgc_parse_u64(w, wl, n) ||
	    next_word(&p, end, &x, &xl))
		return -1;
	return 0;
}

ssize_t mgc_frame(const char *buf, size_t len, struct mgc_msg *m,
		  char *why, size_t whylen)
{
	char ex[4 * MGC_EXCERPT + 8];
	const char *nl, *p, *end = buf + len, *w;
	size_t wl, ll, i;
	__u64 lines = 0;
	int r;

	r = find_line(buf, len, &nl, why, whylen);
	if (r <= 0)
		return r;
	ll = nl - buf;
	memset(m, 0, sizeof(*m));
	m->text = buf;
	m->line_len = ll;
	m->all = buf;
	m->body = nl + 1;
	if (starts_word(buf, ll, "OK")) {
		m->kind = MGC_MSG_OK;
		/* A table's OK says how many lines follow: "OK <n> ...". */
		p = buf + 2;
		if (next_word(&p, nl, &w, &wl) && !mgc_parse_u64(w, wl, &lines)) {
			if (lines > MGC_TABLE_MAX) {
				fail(why, whylen, "table of %llu lines (more than %u): '%s'",
				     (unsigned long long)lines, MGC_TABLE_MAX,
				     excerpt(ex, sizeof(ex), buf, ll));
				return -EMSGSIZE;
			}
		}
	} else if (starts_word(buf, ll, "ERR")) {
		m->kind = MGC_MSG_ERR;
	} else if (starts_word(buf, ll, "B")) {
		m->kind = MGC_MSG_FRAME;
		if (count_line(buf, ll, &m->n))
			return fail(why, whylen, "malformed frame header '%s'",
				    excerpt(ex, sizeof(ex), buf, ll));
		if (m->n > MGC_FRAME_MAX) {
			fail(why, whylen, "frame of %llu bytes (more than %u)",
			     (unsigned long long)m->n, MGC_FRAME_MAX);
			return -EMSGSIZE;
		}
		if ((size_t)(end - m->body) < m->n)
			return 0;
		m->body_len = m->n;
		m->all_len = m->body + m->n - buf;
		return m->all_len;
	} else if (starts_word(buf, ll, "D")) {
		m->kind = MGC_MSG_DROP;
		if (count_line(buf, ll, &m->n))
			return fail(why, whylen, "malformed drop line '%s'",
				    excerpt(ex, sizeof(ex), buf, ll));
	} else if (starts_word(buf, ll, "A")) {
		m->kind = MGC_MSG_AGG;
		/* "A <key> <n> ...": the third word counts the entry lines. */
		p = buf + 1;
		if (!next_word(&p, nl, &w, &wl) || !next_word(&p, nl, &w, &wl) ||
		    mgc_parse_u64(w, wl, &lines))
			return fail(why, whylen, "malformed AGG report header '%s'",
				    excerpt(ex, sizeof(ex), buf, ll));
		if (lines > MGC_TABLE_MAX) {
			fail(why, whylen, "AGG report of %llu entries (more than %u)",
			     (unsigned long long)lines, MGC_TABLE_MAX);
			return -EMSGSIZE;
		}
	} else {
		m->kind = MGC_MSG_LINE;
	}

	m->n = m->kind == MGC_MSG_DROP ? m->n : lines;
	p = nl + 1;
	for (i = 0; i < lines; i++) {
		r = find_line(p, end - p, &nl, why, whylen);
		if (r <= 0)
			return r;
		p = nl + 1;
	}
	m->body_len = p - m->body;
	m->all_len = p - buf;
	return m->all_len;
}

/* ---- text helpers ---- */

ssize_t mgc_unescape(const char *in, size_t len, char *out, size_t outlen)
{
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		char c = in[i];

		if (c == '%') {
			int hi, lo;

			if (len - i < 3)
				return -EINVAL;
			hi = mg_hexval(in[i + 1]);
			lo = mg_hexval(in[i + 2]);
			if (hi < 0 || lo < 0 || (!hi && !lo))
				return -EINVAL;
			c = hi << 4 | lo;
			i += 2;
		} else if (!c) {
			return -EINVAL;
		}
		if (o + 1 >= outlen)
			return -ENOSPC;
		out[o++] = c;
	}
	if (o >= outlen)
		return -ENOSPC;
	out[o] = '\0';
	return o;
}

const char *mgc_escape(char *buf, size_t len, const char *s)
{
	return mg_escape(buf, len, s, MG_ESC_SPACE);
}

const char *mgc_quote(char *buf, size_t size, const char *s, size_t len,
		      bool cut)
{
	static const char dots[] = "...";

	if (size <= sizeof(dots)) {
		if (size)
			buf[0] = '\0';
		return buf;
	}
	/* Room for the dots, whichever way it ends. */
	if (mg_escape_mem(buf, size - sizeof(dots) + 1, s, len, 0) < len || cut)
		strcat(buf, dots);
	return buf;
}

/* ---- a connection ---- */

/* Why the connection's last call failed, for the caller to print. */
__attribute__((format(printf, 2, 3)))
static void conn_err(struct mgc_conn *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Wait for events on fd, up to timeout_ms (-1: forever). poll()'s result. */
static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };

	return poll(&pfd, 1, timeout_ms);
}

/* Connect one address, waiting up to timeout_ms. 0 or -errno. */
static int connect_one(int fd, const struct addrinfo *ai, int timeout_ms)
{
	socklen_t sl = sizeof(int);
	int e = 0, r;

	if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	r = wait_fd(fd, POLLOUT, timeout_ms);
	if (r < 0)
		return -errno;
	if (!r)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl))
		return -errno;
	return -e;
}

static enum mga_munge munge_mode = MGA_MUNGE_AUTO;
static const char *munge_socket;

void mgc_set_munge(enum mga_munge mode, const char *socket)
{
	munge_mode = mode;
	munge_socket = socket;
}

/* AUTH MUNGE first, where wanted (docs/protocol.md). 0 or -errno. */
static int authenticate(struct mgc_conn *c, int timeout_ms)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	char why[MGC_ERR_MAX - 64], *cmd;
	struct mgc_msg m = { 0 };
	int r;

	if (getpeername(c->fd, (struct sockaddr *)&peer, &len)) {
		r = -errno;
		conn_err(c, "%s: %s", c->server, strerror(-r));
		return r;
	}
	if (!mga_wanted(munge_mode, (struct sockaddr *)&peer))
		return 0;
	if (mga_munge_command(munge_socket, &cmd, why, sizeof(why))) {
		conn_err(c, "cannot authenticate to %s: %s", c->server, why);
		return -EACCES;
	}
	r = mgc_command(c, cmd, &m, timeout_ms);
	free(cmd);
	if (r == 1 && mga_reply(m.text, m.line_len, why, sizeof(why))) {
		conn_err(c, "%s refused MUNGE authentication: %s", c->server, why);
		return -EACCES;
	}
	if (!r)
		conn_err(c, "%s closed the connection before replying to AUTH",
			 c->server);
	return r == 1 ? 0 : r ? r : -ECONNRESET;
}

/* magnetd's Unix socket at path: who we are needs no AUTH there. */
static int connect_unix(struct mgc_conn *c, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int e;

	snprintf(c->server, sizeof(c->server), "%s", path);
	if (strlen(path) >= sizeof(sun.sun_path)) {
		conn_err(c, "bad address '%s': too long for a socket path", path);
		return -EINVAL;
	}
	strcpy(sun.sun_path, path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		e = -errno;
	else if (connect(c->fd, (struct sockaddr *)&sun, sizeof(sun)))
		e = -errno;
	else
		return 0;
	conn_err(c, "cannot connect to %s: %s%s", path, strerror(-e),
		 e == -ENOENT || e == -ECONNREFUSED ? " (is magnetd running?)" :
		 e == -EAGAIN ? " (magnetd is not accepting: too busy?)" : "");
	return e;
}

int mgc_connect(struct mgc_conn *c, const char *spec, int timeout_ms)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV,
	}, *res, *ai;
	char host[MGC_SERVER_MAX - 10], port[8], why[128];
	int e = -ECONNREFUSED, r, one = 1;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (spec[0] == '/')
		return connect_unix(c, spec);
	if (mgc_split_addr(spec, host, sizeof(host), port, sizeof(port),
			   why, sizeof(why))) {
		conn_err(c, "bad address '%s': %s", spec, why);
		return -EINVAL;
	}
	snprintf(c->server, sizeof(c->server),
		 strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
	r = getaddrinfo(host, port, &hints, &res);
	if (r) {
		conn_err(c, "cannot resolve '%s': %s", host,
			 r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
		return -EHOSTUNREACH;
	}
	/* Every address in turn, as getaddrinfo(3) advises; the last error. */
	for (ai = res; ai; ai = ai->ai_next) {
		c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
			       SOCK_CLOEXEC, ai->ai_protocol);
		if (c->fd < 0) {
			e = -errno;
			continue;
		}
		e = connect_one(c->fd, ai, timeout_ms);
		if (!e)
			break;
		close(c->fd);
		c->fd = -1;
	}
	freeaddrinfo(res);
	if (e) {
		conn_err(c, "cannot connect to %s: %s%s",
			 c->server, strerror(-e),
			 e == -ECONNREFUSED ? " (is magnetd running?)" : "");
		return e;
	}
	/* Commands are small and each waits for its reply: no Nagle delay. */
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return authenticate(c, timeout_ms);
}

void mgc_close(struct mgc_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	free(c->frame);
	c->fd = -1;
	c->buf = NULL;
	c->frame = NULL;
	c->cap = c->off = c->len = c->frame_cap = 0;
}

int mgc_send(struct mgc_conn *c, const char *lines)
{
	size_t len = strlen(lines), done = 0;
	long long deadline = mono_ms() + MGC_SEND_TIMEOUT_MS;

	while (done < len) {
		ssize_t n = send(c->fd, lines + done, len - done, MSG_NOSIGNAL);
		long long left;

		if (n > 0) {
			done += n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN) {
			int e = errno;

			conn_err(c, "sending to %s: %s",
				 c->server, strerror(e));
			return -e;
		}
		left = deadline - mono_ms();
		if (left <= 0 || wait_fd(c->fd, POLLOUT, left) == 0) {
			conn_err(c, "sending to %s: timed out (the server reads nothing)",
				 c->server);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

/*
 * Where the data goes when compacted: at 0, or, when a frame's header has
 * come, where its body lands 8-byte aligned, so that mgc_next hands the
 * records out in place rather than copy them. Only a hint: mgc_frame
 * checks the header.
 */
static size_t body_shift(const char *p, size_t len)
{
	const char *nl;

	if (len < 3 || p[0] != 'B' || p[1] != ' ')
		return 0;
	nl = memchr(p, '\n', len < 32 ? len : 32);
	return nl ? (8 - (size_t)(nl + 1 - p) % 8) % 8 : 0;
}

ssize_t mgc_fill(struct mgc_conn *c)
{
	size_t to;
	ssize_t n;

	if (c->eof)
		return 0;
	/* Pointers handed out by mgc_next are void from here: compact. */
	to = body_shift(c->buf + c->off, c->len);
	if (c->off != to) {
		memmove(c->buf + to, c->buf + c->off, c->len);
		c->off = to;
	}
	if (c->off + c->len == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : MGC_BUF_MIN;
		char *b;

		if (c->cap >= MGC_BUF_MAX) {
			conn_err(c, "protocol error from %s: a message of more than %u bytes",
				 c->server, MGC_BUF_MAX);
			return -EMSGSIZE;
		}
		if (cap > MGC_BUF_MAX)
			cap = MGC_BUF_MAX;
		b = realloc(c->buf, cap);
		if (!b) {
			conn_err(c, "out of memory");
			return -ENOMEM;
		}
		c->buf = b;
		c->cap = cap;
	}
	n = recv(c->fd, c->buf + c->off + c->len, c->cap - c->off - c->len, 0);
	if (n > 0) {
		c->len += n;
		return n;
	}
	if (!n) {
		c->eof = true;
		return 0;
	}
	if (errno == EAGAIN || errno == EINTR)
		return -EAGAIN;
	n = -errno;
	conn_err(c, "reading from %s: %s", c->server,
		 strerror(-n));
	return n;
}

int mgc_next(struct mgc_conn *c, struct mgc_msg *m)
{
	char why[MGC_ERR_MAX - 64];
	ssize_t r;

	if (!c->len)
		return 0;
	r = mgc_frame(c->buf + c->off, c->len, m, why, sizeof(why));
	if (r < 0) {
		conn_err(c, "protocol error from %s: %s",
			 c->server, why);
		return r;
	}
	if (!r) {
		if (!c->eof)
			return 0;
		conn_err(c, "%s closed the connection in the middle of a message",
			 c->server);
		return -EPROTO;
	}
	c->off += r;
	c->len -= r;
	/* Records are read in place, which needs 8-byte alignment. */
	if (m->kind == MGC_MSG_FRAME && m->body_len && (uintptr_t)m->body % 8) {
		if (c->frame_cap < m->body_len) {
			size_t cap = (m->body_len + 7) & ~(size_t)7;
			__u64 *f = realloc(c->frame, cap);

			if (!f) {
				conn_err(c, "out of memory");
				return -ENOMEM;
			}
			c->frame = f;
			c->frame_cap = cap;
		}
		memcpy(c->frame, m->body, m->body_len);
		m->body = (const char *)c->frame;
	}
	return 1;
}

int mgc_recv(struct mgc_conn *c, struct mgc_msg *m, int timeout_ms)
{
	long long deadline = timeout_ms < 0 ? 0 : mono_ms() + timeout_ms;

	for (;;) {
		ssize_t n;
		int r = mgc_next(c, m), left = -1;

		if (r)
			return r;
		if (c->eof) {
			conn_err(c, "%s closed the connection",
				 c->server);
			return 0;
		}
		if (timeout_ms >= 0) {
			long long l = deadline - mono_ms();

			left = l < 0 ? 0 : l;
		}
		r = wait_fd(c->fd, POLLIN, left);
		if (r < 0) {
			r = -errno;
			conn_err(c, "waiting for %s: %s",
				 c->server, strerror(-r));
			return r;
		}
		if (!r) {
			conn_err(c, "no reply from %s within %d ms", c->server,
				 timeout_ms);
			return -ETIMEDOUT;
		}
		n = mgc_fill(c);
		if (n < 0 && n != -EAGAIN)
			return n;
	}
}

int mgc_command(struct mgc_conn *c, const char *cmd, struct mgc_msg *m,
		int timeout_ms)
{
	char line[MGC_CMD_MAX + 2];
	int r;

	if (strlen(cmd) > MGC_CMD_MAX || strchr(cmd, '\n')) {
		conn_err(c, "command longer than %u bytes or with a newline",
			 MGC_CMD_MAX);
		return -EINVAL;
	}
	snprintf(line, sizeof(line), "%s\n", cmd);
	r = mgc_send(c, line);
	if (r) {
		/*
		 * A server that refuses a connection says why and closes
		 * ("ERR too many clients"): that reply may be waiting even
		 * though the send failed, and is the better message.
		 */
		char err[MGC_ERR_MAX];
		struct mgc_msg em;

		memcpy(err, c->err, sizeof(err));
		while (mgc_fill(c) > 0)
			;
		if (mgc_next(c, &em) == 1 && em.kind == MGC_MSG_ERR) {
			*m = em;
			return 1;
		}
		memcpy(c->err, err, sizeof(err));
		return r;
	}
	r = mgc_recv(c, m, timeout_ms);
	if (r == 1 && m->kind != MGC_MSG_OK && m->kind != MGC_MSG_ERR) {
		char ex[4 * MGC_EXCERPT + 8];

		conn_err(c, "protocol error from %s: '%s' before the reply to %s",
			 c->server, excerpt(ex, sizeof(ex), m->text, m->line_len),
			 cmd);
		return -EPROTO;
	}
	return r;
}
