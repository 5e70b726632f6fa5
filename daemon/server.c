// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's server; see server.h and docs/protocol.md.
 *
 * Data path, per chunk the collection thread read:
 *
 *   chunk queue ─► index the records ─┬─► AGG clients: filter, count
 *                                     ├─► binary subscribers: filter,
 *                                     │   one "B <n>" frame per chunk
 *                                     └─► JSON subscribers: filter; each
 *                                         record encoded once, shared
 *
 * Output queues. Each client has a byte queue bounded by client_queue.
 * Data that does not fit is dropped for that client and counted (an AGG
 * report goes whole or not at all, its records counted as dropped); a
 * "D <n>" line goes out before its next data. Replies are never dropped:
 * instead, no line of a client is handled while its queue is at the bound
 * or over it. What it sent meanwhile waits: the rest of its last recv in
 * its input buffer, the rest in the socket (EPOLLIN off), until the queue
 * drains. So a queue holds at most client_queue plus one reply.
 *
 * Timeouts (docs/magnetd.md, "Clients"). Progress is a byte received
 * from the client or a byte of output it took (progress()). A client whose
 * queue reached its bound (it lost data, a report was skipped, or replies
 * are over the bound) and that takes no byte for client_timeout is cut
 * off. A client that makes no progress for idle_timeout is closed, unless
 * it is a SUBSCRIBE or AGG stream with nothing waiting for it (a quiet
 * stream cannot be told from one that does not read: it keeps its slot).
 *
 * Slots. max_clients connections, of which max_clients_per_user per local
 * uid (the owner of the client's socket, peer.h) or per remote address;
 * root is not counted per user and has root_reserve slots beyond
 * max_clients.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

#include "agg.h"
#include "chunkq.h"
#include "collect.h"
#include "expr.h"
#include "log.h"
#include "peer.h"
#include "print.h"
#include "probes.h"
#include "procinfo.h"
#include "prom.h"
#include "proto.h"
#include "record.h"
#include "sensor.h"
#include "server.h"
#include "stats.h"
#include "supermon.h"
#include "totals.h"
#include "tracewr.h"

#define RECV_BYTES		4096
#define MAX_EVENTS		64
#define PROCINFO_THREADS	8192
/* Re-read the probe table for an unknown event id at most this often. */
#define PROBES_REFRESH_NS	1000000000ULL
#define OBUF_MIN		16384
/* Chunks handled between two looks at the sockets and timers. */
#define BATCH_CHUNKS		16

enum { TAG_LISTEN = 1, TAG_QUEUE, TAG_TIMER, TAG_SIGNAL, TAG_CLIENT };

/* What an epoll event points to: its tag first. */
struct ev_src {
	int tag;
};

static struct ev_src src_queue = { TAG_QUEUE }, src_timer = { TAG_TIMER },
	src_signal = { TAG_SIGNAL };

/* A listening socket and the protocol its clients speak. */
struct listener {
	struct ev_src src;	/* TAG_LISTEN */
	int fd;
	enum mg_listen_kind kind;
};

#define MAX_LISTENERS	3
/* Jobs' cgroups are looked for (gone ones stop being exported) this often. */
#define JOBS_CHECK_NS	1000000000ULL

struct obuf {
	char *buf;
	size_t head, len, cap;	/* bytes buf[head, head + len) wait */
	size_t bound;		/* client_queue: grow past it only as needed */
};

/* Whom a connection counts against for max_clients_per_user. */
struct owner {
	bool local;		/* uid known: a socket of this host */
	uid_t uid;
	unsigned char addr[16];	/* else the peer's address (IPv4 mapped) */
};

struct client {
	struct ev_src src;	/* TAG_CLIENT */
	int fd;
	unsigned int idx;	/* in the server's list; dead: freed after the batch */
	bool dead;
	struct client *next_dead;
	char peer[96];		/* address, and uid if local: for the log */
	enum mg_listen_kind kind;	/* the protocol it speaks */
	struct owner who;
	struct mg_linebuf lb;
	char in[RECV_BYTES];	/* received, not yet taken into lines */
	size_t in_off, in_len;
	struct obuf out;
	bool reading;		/* EPOLLIN wanted: queue below the bound */
	bool writing;		/* EPOLLOUT wanted: output waits */
	bool closing;		/* QUIT: close once the output is out */
	__u64 written;		/* bytes the socket took from out, ever */
	__u64 taken;		/* of them, acknowledged by the client's TCP */
	__u64 active_ns;	/* mono ns of the last byte received or taken */
	__u64 full_since;	/* queue at its bound, no byte taken since (0: not) */

	/* SUBSCRIBE */
	struct mg_expr *filter;
	bool subscribed;
	enum mg_format format;
	__u64 pending_drop;	/* records dropped, not told yet */
	__u64 dropped;		/* all of them */

	/* AGG */
	struct mg_agg *agg;
	enum mg_agg_key agg_key;
	__u64 every_ns, agg_start, agg_next;
	__u64 agg_dropped;	/* daemon queue drops in this interval */
	__u64 agg_skipped;	/* reports not sent since the last one sent */

	/* Supermon: the client's category mask. */
	struct mg_supermon_client sm;
	/* Prometheus: the request line, answered at the blank line. */
	char http_line[512];
	bool http_line_seen;
};

/* A growable buffer behind a FILE, for the one print path (lib/print.c). */
struct membuf {
	char *buf;
	size_t len, cap;
};

struct mg_server {
	struct mg_config cfg;		/* a copy; probes not used here */
	struct mg_server_env env;
	int epfd, timer_fd;
	struct listener listeners[MAX_LISTENERS];
	unsigned int nlisteners;
	bool quit;
	__u64 start_ns;

	/*
	 * Live clients, dense (a closed one's place takes the last). Closed
	 * ones are freed after the epoll batch that may still name them.
	 */
	struct client **clients;
	unsigned int nclients, cap, nsubs, naggs;
	struct client *dead;

	/* The probe table, for filters, JSON names and AGG labels. */
	struct mg_probe_table probes;
	__u64 probes_read_ns;

	struct mg_procinfo *procs;
	__u64 now;			/* mono ns of the chunk being handled */

	/* Per chunk. */
	const struct magnet_record **recs;
	size_t nrecs, maxrecs;
	const struct magnet_record **pick;	/* a binary client's matches */
	size_t *json_off, *json_len;
	bool *json_done;
	struct membuf json;
	FILE *json_f;
	struct mg_print_opts popts;
	__u64 seen_queue_dropped;

	/* Counters since start, for TOTALS and the monitors (totals.h). */
	struct mg_totals *totals;
	__u64 totals_dropped;		/* queue_dropped counted into it */
	__u64 jobs_checked_ns;
	/* A reply rendered through a FILE (monitors), then queued. */
	struct membuf scratch;
	FILE *scratch_f;

	/* Counters for STATS. */
	__u64 sent, client_dropped, cut_off, idle_closed, refused;
};

/* ---------------------------------------------------------------- util */

static ssize_t membuf_write(void *cookie, const char *data, size_t n)
{
	struct membuf *m = cookie;

	if (m->len + n > m->cap) {
		size_t cap = m->cap ? m->cap : 65536;
		char *nb;

		while (cap < m->len + n)
			cap *= 2;
		nb = realloc(m->buf, cap);
		if (!nb)
			return -1;
		m->buf = nb;
		m->cap = cap;
	}
	memcpy(m->buf + m->len, data, n);
	m->len += n;
	return n;
}

/* One word of the protocol: bytes outside '!'..'~' and '%' as %XX. */
static size_t escape_word(char *dst, size_t size, const char *src)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	if (!*src) {
		snprintf(dst, size, "-");
		return 1;
	}
	for (; *src && o + 4 < size; src++) {
		unsigned char ch = *src;

		if (ch < '!' || ch > '~' || ch == '%') {
			dst[o++] = '%';
			dst[o++] = hex[ch >> 4];
			dst[o++] = hex[ch & 15];
		} else {
			dst[o++] = ch;
		}
	}
	dst[o] = '\0';
	return o;
}

static void refresh_probes(struct mg_server *s, bool force)
{
	struct mg_probe_table t = { 0 };
	size_t len;
	char *text;

	if (!force && s->now - s->probes_read_ns < PROBES_REFRESH_NS)
		return;
	s->probes_read_ns = s->now;
	text = mg_sensor_read(s->cfg.dir, "probes", &len);
	if (!text)
		return;		/* module away: keep the names we had */
	if (!mg_probes_parse(&t, text, len)) {
		mg_probes_free(&s->probes);
		s->probes = t;
	}
	free(text);
}

/* ------------------------------------------------------ output queues */

static size_t obuf_room(const struct mg_server *s, const struct client *c)
{
	return c->out.len >= s->cfg.client_queue ? 0 :
	       s->cfg.client_queue - c->out.len;
}

/* Make room for n more bytes (beyond the bound only for replies). */
static int obuf_reserve(struct obuf *o, size_t n)
{
	if (o->head + o->len + n <= o->cap)
		return 0;
	if (o->head) {
		memmove(o->buf, o->buf + o->head, o->len);
		o->head = 0;
		if (o->len + n <= o->cap)
			return 0;
	}
	{
		size_t cap = o->cap ? o->cap : OBUF_MIN, need = o->len + n;
		char *nb;

		while (cap < need)
			cap *= 2;
		/* A queue's memory is its bound, or one reply more. */
		if (o->bound && cap > o->bound)
			cap = need > o->bound ? need : o->bound;
		nb = realloc(o->buf, cap);
		if (!nb)
			return -ENOMEM;
		o->buf = nb;
		o->cap = cap;
	}
	return 0;
}

static int obuf_put(struct obuf *o, const void *data, size_t n)
{
	if (obuf_reserve(o, n))
		return -ENOMEM;
	memcpy(o->buf + o->head + o->len, data, n);
	o->len += n;
	return 0;
}

/* A reply or a table line: always queued (see the top of the file). */
__attribute__((format(printf, 2, 3)))
static void reply(struct client *c, const char *fmt, ...)
{
	char line[MG_PROTO_LINE_MAX + 64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	obuf_put(&c->out, line, n);
}

/* Before data: tell the client what it lost since last told. */
static bool tell_drops(struct mg_server *s, struct client *c)
{
	char line[40];
	int n;

	if (!c->pending_drop)
		return true;
	n = snprintf(line, sizeof(line), "D %llu\n",
		     (unsigned long long)c->pending_drop);
	if ((size_t)n > obuf_room(s, c))
		return false;
	obuf_put(&c->out, line, n);
	c->pending_drop = 0;
	return true;
}

/*
 * Whether the client took output since last looked at, and whether output
 * waits for it (in out, or in the socket). Taken means acknowledged by its
 * TCP: what the socket took from out, less what it still holds (SIOCOUTQ:
 * not sent, or not acknowledged). A client that stops reading stops
 * acknowledging once its own receive buffer is full, however much more
 * the daemon's socket buffer could take.
 */
static bool progress(struct client *c, __u64 now)
{
	int outq = 0;
	__u64 taken;

	if (ioctl(c->fd, SIOCOUTQ, &outq) < 0 || outq < 0)
		outq = 0;
	taken = c->written - (__u64)outq;
	if (taken != c->taken) {
		c->taken = taken;
		c->active_ns = now;
		c->full_since = 0;
	}
	return c->out.len || outq;
}

/* The queue reached its bound: data dropped, or replies over it. */
static void mark_full(struct client *c)
{
	if (!c->full_since) {
		__u64 now = mg_now_ns(CLOCK_MONOTONIC);

		progress(c, now);	/* what it took before does not count */
		c->full_since = now;
	}
}

static void drop_for(struct mg_server *s, struct client *c, __u64 records)
{
	if (!records)
		return;
	c->pending_drop += records;
	c->dropped += records;
	s->client_dropped += records;
	mark_full(c);
}

/* Data: queued only if it fits, after any D line. */
static bool put_data(struct mg_server *s, struct client *c, const void *data,
		     size_t n, __u64 records)
{
	if (!tell_drops(s, c) || n > obuf_room(s, c)) {
		drop_for(s, c, records);
		return false;
	}
	obuf_put(&c->out, data, n);
	s->sent += records;
	return true;
}

/* ------------------------------------------------------------ clients */

static void update_events(struct mg_server *s, struct client *c)
{
	struct epoll_event ev = { .data.ptr = &c->src };
	bool rd = !c->closing && c->out.len < s->cfg.client_queue;
	bool wr = c->out.len > 0;

	if (rd == c->reading && wr == c->writing)
		return;
	ev.events = (rd ? EPOLLIN : 0) | (wr ? EPOLLOUT : 0);
	epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	c->reading = rd;
	c->writing = wr;
}

static void end_subscription(struct mg_server *s, struct client *c)
{
	if (c->subscribed)
		s->nsubs--;
	c->subscribed = false;
	mg_expr_free(c->filter);
	c->filter = NULL;
}

static void end_agg(struct mg_server *s, struct client *c)
{
	if (c->agg)
		s->naggs--;
	mg_agg_free(c->agg);
	c->agg = NULL;
}

static void close_client(struct mg_server *s, struct client *c, const char *why)
{
	if (why)
		mg_log(LOG_NOTICE, "client %s: %s", c->peer, why);
	end_subscription(s, c);
	end_agg(s, c);
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	s->clients[c->idx] = s->clients[--s->nclients];
	s->clients[c->idx]->idx = c->idx;
	c->dead = true;
	c->next_dead = s->dead;
	s->dead = c;
}

static void bury_dead(struct mg_server *s)
{
	while (s->dead) {
		struct client *c = s->dead;

		s->dead = c->next_dead;
		free(c->out.buf);
		free(c);
	}
}

static void take_lines(struct mg_server *s, struct client *c);

/*
 * Send what the queue holds, and handle the input that waited for room;
 * false when the client is gone.
 */
static bool flush_client(struct mg_server *s, struct client *c)
{
	for (;;) {
		while (c->out.len) {
			ssize_t n = send(c->fd, c->out.buf + c->out.head,
					 c->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					break;
				close_client(s, c, NULL);
				return false;
			}
			c->out.head += n;
			c->out.len -= n;
			c->written += n;
		}
		/* Lines that waited for room; at most RECV_BYTES of them. */
		if (!c->in_len || c->closing ||
		    c->out.len >= s->cfg.client_queue)
			break;
		take_lines(s, c);
	}
	if (c->out.len >= s->cfg.client_queue)
		mark_full(c);	/* replies over the bound: it must read */
	if (!c->out.len) {
		c->out.head = 0;
		/* Give back a queue a burst grew; keep a small one. */
		if (c->out.cap > 4 * OBUF_MIN) {
			free(c->out.buf);
			c->out.buf = NULL;
			c->out.cap = 0;
		}
		if (c->closing) {
			close_client(s, c, NULL);
			return false;
		}
	}
	update_events(s, c);
	return true;
}

static bool allowed(const struct mg_server *s, const struct sockaddr *sa)
{
	unsigned int i;

	if (mg_sockaddr_is_loopback(sa))
		return true;
	for (i = 0; i < s->cfg.nallow; i++)
		if (mg_cidr_match(&s->cfg.allow[i], sa))
			return true;
	return false;
}

static void peer_name(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		snprintf(buf, len, "%s:%u", host, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		snprintf(buf, len, "[%s]:%u", host, port);
	} else {
		snprintf(buf, len, "?");
	}
}

/* Whom the connection fd, from ss, counts against (peer.h). */
static void owner_of(int fd, const struct sockaddr_storage *ss,
		     struct owner *o)
{
	struct sockaddr_storage local;
	socklen_t len = sizeof(local);

	memset(o, 0, sizeof(*o));
	if (!getsockname(fd, (struct sockaddr *)&local, &len) &&
	    !mg_peer_uid(MG_PEER_PROC_NET, (struct sockaddr *)&local,
			 (const struct sockaddr *)ss, &o->uid)) {
		o->local = true;
		return;
	}
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		o->addr[10] = o->addr[11] = 0xff;
		memcpy(&o->addr[12], &in->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		memcpy(o->addr, &in6->sin6_addr, 16);
	}
}

static bool same_owner(const struct owner *a, const struct owner *b)
{
	if (a->local != b->local)
		return false;
	return a->local ? a->uid == b->uid : !memcmp(a->addr, b->addr, 16);
}

/*
 * Why this owner may not have one more connection now (NULL: it may):
 * the reply it gets before the close.
 */
static const char *refusal(const struct mg_server *s, const struct owner *o,
			   char *log, size_t loglen)
{
	bool root = o->local && o->uid == 0;
	unsigned int k, mine = 0;

	if (s->nclients >= s->cfg.max_clients +
			   (root ? s->cfg.root_reserve : 0)) {
		snprintf(log, loglen, "%u clients already", s->nclients);
		return "ERR too many clients\n";
	}
	if (root)
		return NULL;
	for (k = 0; k < s->nclients; k++)
		mine += same_owner(&s->clients[k]->who, o);
	if (mine < s->cfg.max_clients_per_user)
		return NULL;
	snprintf(log, loglen, "%u clients of this %s already (max_clients_per_user)",
		 mine, o->local ? "user" : "address");
	return o->local ? "ERR too many clients of this user\n" :
			  "ERR too many clients from this address\n";
}

static void accept_clients(struct mg_server *s, const struct listener *l)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct epoll_event ev;
		struct client *c;
		struct owner who;
		const char *no;
		char peer[96], why[96];
		int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				mg_log(LOG_WARNING, "accept: %s", strerror(errno));
			return;
		}
		peer_name(&ss, peer, sizeof(peer));
		if (!allowed(s, (struct sockaddr *)&ss)) {
			s->refused++;
			mg_log(LOG_NOTICE, "refused %s: not in the allowlist", peer);
			close(fd);
			continue;
		}
		owner_of(fd, &ss, &who);
		if (who.local) {
			size_t l = strlen(peer);

			snprintf(peer + l, sizeof(peer) - l, " uid %u",
				 (unsigned int)who.uid);
		}
		no = refusal(s, &who, why, sizeof(why));
		if (no) {
			s->refused++;
			mg_log(LOG_NOTICE, "refused %s: %s", peer, why);
			/* Best effort: it is being closed anyway. */
			(void)!send(fd, no, strlen(no), MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		if (s->nclients == s->cap) {
			unsigned int cap = s->cap ? 2 * s->cap : 16;
			struct client **nl = realloc(s->clients, cap * sizeof(*nl));

			if (!nl) {
				close(fd);
				continue;
			}
			s->clients = nl;
			s->cap = cap;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->src.tag = TAG_CLIENT;
		c->fd = fd;
		c->idx = s->nclients;
		c->who = who;
		c->kind = l->kind;
		mg_supermon_client_init(&c->sm);
		c->out.bound = s->cfg.client_queue;
		c->active_ns = mg_now_ns(CLOCK_MONOTONIC);
		snprintf(c->peer, sizeof(c->peer), "%s", peer);
		mg_linebuf_init(&c->lb);
		c->reading = true;
		ev.events = EPOLLIN;
		ev.data.ptr = &c->src;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			free(c);
			continue;
		}
		{
			int one = 1;

			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		s->clients[s->nclients++] = c;
		mg_log(LOG_DEBUG, "client %s connected", peer);
	}
}

/* ------------------------------------------------------------- totals */

static void note_queue_drops(struct mg_server *s);

/*
 * Jobs whose cgroup directory is gone (or is another cgroup now) stop
 * being exported, at most once per JOBS_CHECK_NS. True if one went.
 */
static bool check_jobs(struct mg_server *s, const struct mg_totals_view *v)
{
	const char *root = mg_procinfo_cgroup_root(s->procs);
	bool gone = false;
	size_t i;

	if (!root || s->now - s->jobs_checked_ns < JOBS_CHECK_NS)
		return false;
	s->jobs_checked_ns = s->now;
	for (i = 0; i < v->njobs; i++) {
		const char *path = mg_procinfo_cgroup_path(s->procs,
							   v->jobs[i].cgroup);
		char full[4096 + MG_PROCINFO_PATH_MAX];
		struct stat st;

		if (!path)
			continue;
		snprintf(full, sizeof(full), "%s%s", root, path);
		if (stat(full, &st) ? errno == ENOENT :
				      st.st_ino != v->jobs[i].cgroup) {
			mg_totals_job_gone(s->totals, v->jobs[i].cgroup);
			gone = true;
		}
	}
	return gone;
}

static int by_id(const void *a, const void *b)
{
	const struct mg_totals_probe *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Probe names and types from the table; loaded probes not seen yet too. */
static int name_probes(struct mg_server *s, struct mg_totals_view *v,
		       bool up)
{
	size_t i, j, n = v->nprobes;
	struct mg_totals_probe *p;

	p = realloc(v->probes, (n + s->probes.n + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	v->probes = p;
	for (i = 0; i < n; i++) {
		snprintf(p[i].type, sizeof(p[i].type), "unknown");
		snprintf(p[i].name, sizeof(p[i].name), "event%u", p[i].id);
	}
	for (j = 0; up && j < s->probes.n; j++) {
		const struct mg_probe *t = &s->probes.v[j];
		struct mg_totals_probe *o = NULL;

		for (i = 0; i < n; i++)
			if (p[i].id == t->id)
				o = &p[i];
		if (!o) {
			o = &p[v->nprobes++];
			memset(o, 0, sizeof(*o));
			o->id = t->id;
		}
		o->loaded = true;
		snprintf(o->type, sizeof(o->type), "%s", t->type);
		snprintf(o->name, sizeof(o->name), "%s", t->target);
	}
	qsort(p, v->nprobes, sizeof(*p), by_id);
	return 0;
}

/* The totals now, with names: what TOTALS and the monitors show. */
static int totals_view(struct mg_server *s, struct mg_totals_view *v)
{
	bool up = mg_collect_up(s->env.collect);
	size_t i;
	int ret;

	s->now = mg_now_ns(CLOCK_MONOTONIC);
	note_queue_drops(s);
	ret = mg_totals_view(s->totals, v);
	if (!ret && check_jobs(s, v)) {
		mg_totals_view_free(v);
		ret = mg_totals_view(s->totals, v);
	}
	if (ret)
		return ret;
	if (up)
		refresh_probes(s, true);
	ret = name_probes(s, v, up);
	if (ret) {
		mg_totals_view_free(v);
		return ret;
	}
	gethostname(v->node.node, sizeof(v->node.node) - 1);
	v->node.now_ns = mg_now_ns(CLOCK_REALTIME);
	v->node.uptime_ns = s->now - s->start_ns;
	v->node.module_up = up;
	v->node.cpus = mg_collect_ncpus(s->env.collect);
	v->node.probes = up ? s->probes.n : 0;
	for (i = 0; i < v->njobs; i++) {
		const char *path = mg_procinfo_cgroup_path(s->procs,
							   v->jobs[i].cgroup);

		if (path)
			snprintf(v->jobs[i].path, sizeof(v->jobs[i].path), "%s",
				 path);
		else
			snprintf(v->jobs[i].path, sizeof(v->jobs[i].path),
				 "cgroup-%llu",
				 (unsigned long long)v->jobs[i].cgroup);
	}
	return 0;
}

static void count_totals(struct mg_server *s)
{
	size_t i;

	for (i = 0; i < s->nrecs; i++) {
		const struct magnet_record *r = s->recs[i];
		__u64 cgroup = 0;

		/* pid 0: the idle task or a LOST record, no job. */
		if (r->pid && r->event_id != MAGNET_EVENT_LOST)
			cgroup = mg_procinfo_get(s->procs, r->pid, s->now)->cgroup;
		mg_totals_add(s->totals, r, cgroup);
	}
}

/* A reply rendered by a monitor's code through a FILE, then queued. */
static FILE *scratch_begin(struct mg_server *s)
{
	fflush(s->scratch_f);
	clearerr(s->scratch_f);
	s->scratch.len = 0;
	return s->scratch_f;
}

static void scratch_queue(struct mg_server *s, struct client *c)
{
	fflush(s->scratch_f);
	obuf_put(&c->out, s->scratch.buf, s->scratch.len);
	s->scratch.len = 0;
}

/* ----------------------------------------------------------- commands */

static void cmd_hello(struct mg_server *s, struct client *c)
{
	struct mg_sensor_version v;
	char host[256] = "?";

	mg_collect_version(s->env.collect, &v);
	gethostname(host, sizeof(host) - 1);
	reply(c, "OK magnet %d node=%s cpus=%u clock=%s order=%s format=%u module=%s",
	      MG_PROTO_VERSION, host, mg_collect_ncpus(s->env.collect), v.clock,
	      __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "le" : "be",
	      v.format, mg_collect_up(s->env.collect) ? "up" : "down");
}

static void cmd_probes(struct mg_server *s, struct client *c)
{
	size_t i;

	if (!mg_collect_up(s->env.collect)) {
		reply(c, "OK 0 probes");
		return;
	}
	refresh_probes(s, true);
	reply(c, "OK %zu probes", s->probes.n);
	for (i = 0; i < s->probes.n; i++) {
		const struct mg_probe *p = &s->probes.v[i];
		char name[3 * 256 + 1], type[3 * 32 + 1];

		escape_word(name, sizeof(name), p->target);
		escape_word(type, sizeof(type), p->type);
		reply(c, "%u %s %s nargs=%u hits=%llu missed=%llu", p->id, type,
		      name, p->nargs, (unsigned long long)p->hits,
		      (unsigned long long)p->missed);
	}
}

static void cmd_stats(struct mg_server *s, struct client *c)
{
	unsigned int ncpus = mg_collect_ncpus(s->env.collect), i;
	struct mg_collect_cpu *cs = calloc(ncpus, sizeof(*cs));
	struct mg_tracewr_stats ts = { 0 };
	struct mg_kstats *ks = NULL;
	__u64 read = 0, bytes = 0, lost = 0, queued = 0;
	size_t nks = 0, len;
	char *text = NULL;

	if (!cs) {
		reply(c, "ERR out of memory");
		return;
	}
	mg_collect_cpu_stats(s->env.collect, cs);
	if (mg_collect_up(s->env.collect))
		text = mg_sensor_read(s->cfg.dir, "stats", &len);
	if (text && mg_stats_parse(text, len, &ks, &nks))
		nks = 0;
	free(text);
	for (i = 0; i < ncpus; i++) {
		read += cs[i].records;
		bytes += cs[i].bytes;
		lost += mg_lost_total(&cs[i].lost);
	}
	for (i = 0; i < s->nclients; i++)
		queued += s->clients[i]->out.len;
	if (s->env.trace)
		mg_tracewr_stats(s->env.trace, &ts);
	reply(c, "OK %u cpus uptime=%llu module=%s reloads=%u clients=%u subscribers=%u aggregators=%u read=%llu read_bytes=%llu read_lost=%llu queue_dropped=%llu sent=%llu client_dropped=%llu cut_off=%llu refused=%llu trace_files=%llu trace_bytes=%llu trace_dropped=%llu trace_errors=%llu idle_closed=%llu client_queued=%llu",
	      ncpus,
	      (unsigned long long)((mg_now_ns(CLOCK_MONOTONIC) - s->start_ns) / 1000000000ULL),
	      mg_collect_up(s->env.collect) ? "up" : "down",
	      mg_collect_reloads(s->env.collect), s->nclients, s->nsubs,
	      s->naggs, (unsigned long long)read, (unsigned long long)bytes,
	      (unsigned long long)lost,
	      (unsigned long long)atomic_load(s->env.queue_dropped),
	      (unsigned long long)s->sent,
	      (unsigned long long)s->client_dropped,
	      (unsigned long long)s->cut_off, (unsigned long long)s->refused,
	      (unsigned long long)ts.files, (unsigned long long)ts.bytes,
	      (unsigned long long)(ts.drop_records + ts.err_records),
	      (unsigned long long)ts.write_errors,
	      (unsigned long long)s->idle_closed, (unsigned long long)queued);
	for (i = 0; i < ncpus; i++) {
		const struct mg_kstats *k = mg_stats_find(ks, nks, i);
		struct mg_kstats zero = { .cpu = i };

		if (!k)
			k = &zero;
		reply(c, "cpu=%u written=%llu bytes=%llu lost_full=%llu lost_too_big=%llu lost_nesting=%llu overwritten=%llu read=%llu read_lost=%llu",
		      i, (unsigned long long)k->written,
		      (unsigned long long)k->bytes,
		      (unsigned long long)k->lost_full,
		      (unsigned long long)k->lost_too_big,
		      (unsigned long long)k->lost_nesting,
		      (unsigned long long)k->overwritten,
		      (unsigned long long)cs[i].records,
		      (unsigned long long)mg_lost_total(&cs[i].lost));
	}
	free(ks);
	free(cs);
}

static int lookup_probe(void *arg, const char *name, size_t len,
			unsigned int *id)
{
	const struct mg_server *s = arg;
	size_t i;

	for (i = 0; i < s->probes.n; i++) {
		const char *t = s->probes.v[i].target;

		if (strlen(t) == len && !memcmp(t, name, len)) {
			*id = s->probes.v[i].id;
			return 0;
		}
	}
	return -ENOENT;
}

static void cmd_subscribe(struct mg_server *s, struct client *c,
			  const struct mg_cmd *cmd)
{
	struct mg_expr_error err;
	struct mg_expr *e = NULL;
	int ret;

	refresh_probes(s, true);
	ret = mg_expr_parse(cmd->filter, cmd->filter_len, lookup_probe, s, &e,
			    &err);
	if (ret == -EINVAL) {
		reply(c, "ERR bad filter: %s", err.msg);
		return;
	}
	if (ret) {
		reply(c, "ERR out of memory");
		return;
	}
	end_subscription(s, c);
	c->filter = e;
	c->format = cmd->format;
	c->subscribed = true;
	s->nsubs++;
	reply(c, "OK subscribed format=%s", mg_proto_format_name(cmd->format));
}

static void cmd_agg(struct mg_server *s, struct client *c,
		    const struct mg_cmd *cmd)
{
	struct mg_agg *a = NULL;
	__u64 now = mg_now_ns(CLOCK_MONOTONIC);

	if (mg_agg_create(s->cfg.agg_entries, &a)) {
		reply(c, "ERR out of memory");
		return;
	}
	end_agg(s, c);
	c->agg = a;
	c->agg_key = cmd->agg_key;
	c->every_ns = cmd->interval_ns;
	c->agg_start = now;
	c->agg_next = now + cmd->interval_ns;
	c->agg_dropped = 0;
	s->naggs++;
	reply(c, "OK agg key=%s every=%llu", mg_proto_agg_key_name(cmd->agg_key),
	      (unsigned long long)cmd->interval_ns);
}

static void cmd_totals(struct mg_server *s, struct client *c)
{
	struct mg_totals_view v;
	char name[3 * MG_TOTALS_PATH_MAX + 1], type[3 * 16 + 1];
	size_t i;

	if (totals_view(s, &v)) {
		reply(c, "ERR out of memory");
		return;
	}
	reply(c, "OK %zu totals node=%s ts=%llu uptime=%llu module=%s cpus=%u records=%llu bytes=%llu kernel_lost=%llu daemon_dropped=%llu probes=%u jobs=%u",
	      v.nprobes + v.njobs + 1, v.node.node,
	      (unsigned long long)v.node.now_ns,
	      (unsigned long long)(v.node.uptime_ns / 1000000000ULL),
	      v.node.module_up ? "up" : "down", v.node.cpus,
	      (unsigned long long)v.node.records,
	      (unsigned long long)v.node.bytes,
	      (unsigned long long)v.node.kernel_lost,
	      (unsigned long long)v.node.daemon_dropped, v.node.probes,
	      v.node.jobs);
	for (i = 0; i < v.nprobes; i++) {
		const struct mg_totals_probe *p = &v.probes[i];

		escape_word(name, sizeof(name), p->name);
		escape_word(type, sizeof(type), p->type);
		reply(c, "probe %u %s %s events=%llu sock_bytes=%llu sock=%d loaded=%d",
		      p->id, type, name, (unsigned long long)p->events,
		      (unsigned long long)p->sock_bytes, p->sock, p->loaded);
	}
	for (i = 0; i <= v.njobs; i++) {
		const struct mg_totals_job *j = i < v.njobs ? &v.jobs[i] : &v.other;

		escape_word(name, sizeof(name), j->path);
		reply(c, "job %llu %s events=%llu sock_bytes=%llu exported=%d",
		      (unsigned long long)j->cgroup, name,
		      (unsigned long long)j->events,
		      (unsigned long long)j->sock_bytes, j->exported);
	}
	mg_totals_view_free(&v);
}

/* Prometheus: the request line, headers (ignored), then the response. */
static void prom_line(struct mg_server *s, struct client *c,
		      const char *line, size_t len)
{
	struct mg_totals_view v;

	if (!c->http_line_seen) {
		if (len >= sizeof(c->http_line))
			len = sizeof(c->http_line) - 1;
		memcpy(c->http_line, line, len);
		c->http_line[len] = '\0';
		c->http_line_seen = true;
		return;
	}
	if (len)
		return;		/* a header */
	if (totals_view(s, &v)) {
		static const char err[] = "HTTP/1.1 500 Internal Server Error\r\n"
			"Content-Length: 0\r\nConnection: close\r\n\r\n";

		obuf_put(&c->out, err, sizeof(err) - 1);
	} else {
		mg_prom_respond(scratch_begin(s), c->http_line, &v);
		scratch_queue(s, c);
		mg_totals_view_free(&v);
	}
	c->closing = true;
}

static void supermon_line(struct mg_server *s, struct client *c,
			  const char *line, size_t len)
{
	struct mg_totals_view v;

	if (totals_view(s, &v)) {
		reply(c, "(error \"out of memory\")");
		return;
	}
	if (mg_supermon_handle(scratch_begin(s), line, len, &c->sm, &v) == 1)
		c->closing = true;
	scratch_queue(s, c);
	mg_totals_view_free(&v);
}

static void handle_line(struct mg_server *s, struct client *c,
			const char *line, size_t len)
{
	struct mg_cmd cmd;

	if (c->closing)
		return;		/* lines after QUIT get no reply */
	if (c->kind == MG_LISTEN_PROMETHEUS) {
		prom_line(s, c, line, len);
		return;
	}
	if (c->kind == MG_LISTEN_SUPERMON) {
		supermon_line(s, c, line, len);
		return;
	}
	if (mg_proto_parse(line, len, &cmd)) {
		reply(c, "%s", cmd.error);
		return;
	}
	switch (cmd.kind) {
	case MG_CMD_HELLO:
		cmd_hello(s, c);
		break;
	case MG_CMD_PROBES:
		cmd_probes(s, c);
		break;
	case MG_CMD_STATS:
		cmd_stats(s, c);
		break;
	case MG_CMD_TOTALS:
		cmd_totals(s, c);
		break;
	case MG_CMD_SUBSCRIBE:
		cmd_subscribe(s, c, &cmd);
		break;
	case MG_CMD_AGG:
		cmd_agg(s, c, &cmd);
		break;
	case MG_CMD_UNSUBSCRIBE:
		end_subscription(s, c);
		end_agg(s, c);
			reply(c, "OK");
		break;
	case MG_CMD_QUIT:
		reply(c, "OK bye");
		c->closing = true;
		break;
	default:
		reply(c, "ERR unknown command");
		break;
	}
}

static void too_long(struct mg_server *s, struct client *c)
{
	switch (c->kind) {
	case MG_LISTEN_PROMETHEUS:
	{
		static const char err[] = "HTTP/1.1 431 Request Header Fields Too Large\r\n"
			"Content-Length: 0\r\nConnection: close\r\n\r\n";

		obuf_put(&c->out, err, sizeof(err) - 1);
		c->closing = true;
		break;
	}
	case MG_LISTEN_SUPERMON:
		mg_supermon_too_long(scratch_begin(s), MG_PROTO_LINE_MAX);
		scratch_queue(s, c);
		break;
	default:
		reply(c, "%s", MG_PROTO_ERR_TOO_LONG);
		break;
	}
}

/*
 * Handle the received lines while the output queue is under its bound;
 * the rest waits in c->in (see the top of the file).
 */
static void take_lines(struct mg_server *s, struct client *c)
{
	while (c->in_len && !c->closing && c->out.len < s->cfg.client_queue) {
		const char *data = c->in + c->in_off, *line;
		size_t left = c->in_len, llen;
		enum mg_line_status st;

		st = mg_linebuf_take(&c->lb, &data, &left, &line, &llen);
		c->in_off = data - c->in;
		c->in_len = left;
		if (st == MG_LINE_TOO_LONG)
			too_long(s, c);
		else if (st == MG_LINE_READY)
			handle_line(s, c, line, llen);
	}
	if (c->closing)
		c->in_len = 0;		/* lines after QUIT get no reply */
}

static void read_client(struct mg_server *s, struct client *c)
{
	if (!c->in_len) {
		ssize_t n;

		do
			n = recv(c->fd, c->in, sizeof(c->in), MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			/* An unterminated last line is ignored (docs/protocol.md). */
			close_client(s, c, NULL);
			return;
		}
		c->in_off = 0;
		c->in_len = n;
		c->active_ns = mg_now_ns(CLOCK_MONOTONIC);
	}
	take_lines(s, c);
	flush_client(s, c);
}

/* ---------------------------------------------------------- data path */

static int agg_key(void *arg, enum mg_agg_key kind,
		   const struct magnet_record *r, __u64 *key, char *label)
{
	struct mg_server *s = arg;
	const struct mg_proc *p;

	switch (kind) {
	case MG_AGG_PROBE:
		return 0;	/* labelled from the probe table at report time */
	case MG_AGG_TGID:
		p = mg_procinfo_get(s->procs, r->tgid, s->now);
		break;
	default:
		p = mg_procinfo_get(s->procs, r->pid, s->now);
		break;
	}
	switch (kind) {
	case MG_AGG_PID:
	case MG_AGG_TGID:
		if (p->alive)
			memcpy(label, p->comm, MG_AGG_LABEL_LEN);
		return 0;
	case MG_AGG_COMM:
		if (!p->alive)
			return -ESRCH;
		memcpy(label, p->comm, MG_AGG_LABEL_LEN);
		return 0;
	case MG_AGG_CGROUP:
		if (!p->cgroup)
			return -ESRCH;
		*key = p->cgroup;
		return 0;
	default:
		return -EINVAL;
	}
}

static bool wants(const struct client *c, const struct magnet_record *r)
{
	return r->event_id == MAGNET_EVENT_LOST || mg_expr_match(c->filter, r);
}

static void feed_agg(struct mg_server *s, struct client *c)
{
	size_t i;

	for (i = 0; i < s->nrecs; i++) {
		const struct magnet_record *r = s->recs[i];

		if (c->subscribed && !wants(c, r))
			continue;
		mg_agg_add_record(c->agg, c->agg_key, r, agg_key, s);
	}
}

static void feed_binary(struct mg_server *s, struct client *c)
{
	size_t i, n = 0, room, fit, bytes = 0, run;
	char hdr[32];
	int hl;

	for (i = 0; i < s->nrecs; i++)
		if (wants(c, s->recs[i]))
			s->pick[n++] = s->recs[i];
	if (!n)
		return;
	if (!tell_drops(s, c)) {
		drop_for(s, c, n);
		return;
	}
	/*
	 * What fits goes; the rest of the chunk is dropped for this client.
	 * The header is sized for the largest frame once, not per record.
	 */
	room = obuf_room(s, c);
	hl = snprintf(hdr, sizeof(hdr), "B %zu\n", (size_t)s->maxrecs * MAGNET_RECORD_MAX);
	for (fit = 0; fit < n; fit++) {
		if (hl + bytes + s->pick[fit]->size > room)
			break;
		bytes += s->pick[fit]->size;
	}
	if (fit) {
		hl = snprintf(hdr, sizeof(hdr), "B %zu\n", bytes);
		obuf_put(&c->out, hdr, hl);
		/* Matching records are mostly adjacent: copy them in runs. */
		for (i = 0; i < fit; i += run) {
			const char *p = (const char *)s->pick[i];
			size_t len = s->pick[i]->size;

			for (run = 1; i + run < fit &&
			     (const char *)s->pick[i + run] == p + len; run++)
				len += s->pick[i + run]->size;
			obuf_put(&c->out, p, len);
		}
		s->sent += fit;
	}
	drop_for(s, c, n - fit);
}

/* The JSON line of record i, encoded on first use. */
static bool json_of(struct mg_server *s, size_t i)
{
	size_t start;

	if (s->json_done[i])
		return s->json_len[i] > 0;
	s->json_done[i] = true;
	start = s->json.len;
	if (mg_print_record(s->json_f, &s->popts, s->recs[i]) ||
	    fflush(s->json_f)) {
		s->json.len = start;
		s->json_len[i] = 0;
		return false;
	}
	s->json_off[i] = start;
	s->json_len[i] = s->json.len - start;
	return true;
}

static void feed_json(struct mg_server *s)
{
	size_t i;
	unsigned int k;

	s->json.len = 0;
	memset(s->json_done, 0, s->nrecs * sizeof(*s->json_done));
	for (i = 0; i < s->nrecs; i++) {
		const struct magnet_record *r = s->recs[i];

		if (r->event_id >= MAGNET_EVENT_FIRST_DYNAMIC &&
		    !mg_probes_find(&s->probes, r->event_id))
			refresh_probes(s, false);	/* a new probe: name it */
		for (k = 0; k < s->nclients; k++) {
			struct client *c = s->clients[k];

			if (!c->subscribed || c->format != MG_FORMAT_JSON ||
			    !wants(c, r))
				continue;
			if (!json_of(s, i))
				continue;
			put_data(s, c, s->json.buf + s->json_off[i],
				 s->json_len[i], 1);
		}
	}
}

/* Records the collection thread could not queue: everyone is told. */
static void note_queue_drops(struct mg_server *s)
{
	__u64 now = atomic_load(s->env.queue_dropped);
	__u64 d = now - s->seen_queue_dropped;
	unsigned int k;

	if (!d)
		return;
	s->seen_queue_dropped = now;
	mg_totals_dropped(s->totals, d);
	for (k = 0; k < s->nclients; k++) {
		struct client *c = s->clients[k];

		if (c->subscribed) {
			c->pending_drop += d;
			c->dropped += d;
		}
		if (c->agg)
			c->agg_dropped += d;
	}
}

static int index_chunk(struct mg_server *s, const void *data, size_t len)
{
	const struct magnet_record *r;
	size_t off = 0;

	s->nrecs = 0;
	while (mg_record_next(data, len, &off, &r) == 1) {
		if (s->nrecs == s->maxrecs)
			return -E2BIG;	/* cannot happen: sized for the buffer */
		s->recs[s->nrecs++] = r;
	}
	return 0;
}

static void handle_chunk(struct mg_server *s, const void *data, size_t len)
{
	bool any_json = false;
	unsigned int k;

	note_queue_drops(s);
	s->now = mg_now_ns(CLOCK_MONOTONIC);
	index_chunk(s, data, len);
	count_totals(s);
	if (!s->nsubs && !s->naggs)
		return;
	for (k = 0; k < s->nclients; k++) {
		struct client *c = s->clients[k];

		if (c->agg)
			feed_agg(s, c);
		if (c->subscribed && c->format == MG_FORMAT_BINARY)
			feed_binary(s, c);
		any_json |= c->subscribed && c->format == MG_FORMAT_JSON;
	}
	if (any_json)
		feed_json(s);
}

/*
 * Take up to max queued chunks; true if more wait. Bounded, so a flood
 * never starves the sockets, the timers (reports, cut-offs) or signals.
 */
static bool drain_queue(struct mg_server *s, unsigned int max)
{
	const void *data;
	size_t len;
	__u32 cpu;

	while (max-- && !mg_chunkq_peek(s->env.queue, &cpu, &data, &len)) {
		handle_chunk(s, data, len);
		mg_chunkq_pop(s->env.queue);
	}
	note_queue_drops(s);
	return !mg_chunkq_peek(s->env.queue, &cpu, &data, &len);
}

/* ------------------------------------------------------------ reports */

static void agg_report(struct mg_server *s, struct client *c, __u64 now)
{
	unsigned int top = s->cfg.agg_top, n, i;
	struct mg_agg_entry *e = calloc(top ? top : 1, sizeof(*e));
	struct mg_agg_stats st;
	__u64 interval = now - c->agg_start;
	struct obuf tmp = { 0 };
	struct client fake = { 0 };

	if (!e)
		return;
	mg_agg_stats(c->agg, &st);
	n = mg_agg_top(c->agg, top, e);
	/* Build the report aside: it goes whole, or not at all. */
	fake.out = tmp;
	reply(&fake, "A %s %u ts=%llu interval=%llu events=%llu bytes=%llu keys=%u lost=%llu evicted=%llu evicted_events=%llu unkeyed=%llu dropped=%llu skipped=%llu",
	      mg_proto_agg_key_name(c->agg_key), n,
	      (unsigned long long)mg_now_ns(CLOCK_REALTIME),
	      (unsigned long long)interval, (unsigned long long)st.events,
	      (unsigned long long)st.bytes, st.used,
	      (unsigned long long)mg_lost_total(&st.lost),
	      (unsigned long long)st.evictions,
	      (unsigned long long)st.evicted_events,
	      (unsigned long long)st.unkeyed,
	      (unsigned long long)c->agg_dropped,
	      (unsigned long long)c->agg_skipped);
	for (i = 0; i < n; i++) {
		char value[64], label[3 * MG_PROCINFO_PATH_MAX + 1];
		const char *name = e[i].label;

		if (c->agg_key == MG_AGG_COMM) {
			escape_word(value, sizeof(value), e[i].label);
			name = "";
		} else {
			snprintf(value, sizeof(value), "%llu",
				 (unsigned long long)e[i].key);
		}
		if (c->agg_key == MG_AGG_PROBE) {
			const struct mg_probe *p = mg_probes_find(&s->probes, e[i].key);

			if (!p) {
				refresh_probes(s, false);
				p = mg_probes_find(&s->probes, e[i].key);
			}
			name = p ? p->target : "";
		} else if (c->agg_key == MG_AGG_CGROUP) {
			name = mg_procinfo_cgroup_path(s->procs, e[i].key);
			if (!name)
				name = "";
		}
		escape_word(label, sizeof(label), name);
		reply(&fake, "%s %llu %llu %.1f %s", value,
		      (unsigned long long)e[i].events,
		      (unsigned long long)e[i].bytes,
		      mg_agg_rate(e[i].events, interval), label);
	}
	tmp = fake.out;
	/* An empty queue takes a report of any size, as it takes a reply. */
	if (tell_drops(s, c) && (tmp.len <= obuf_room(s, c) || !c->out.len)) {
		obuf_put(&c->out, tmp.buf + tmp.head, tmp.len);
		c->agg_skipped = 0;
	} else {
		/*
		 * No room: the report's records are dropped for this client,
		 * told by a D line before its next report, which also counts
		 * the reports skipped. The client_timeout clock runs.
		 */
		drop_for(s, c, st.events + (c->subscribed ? 0 : c->agg_dropped));
		c->agg_skipped++;
	}
	free(tmp.buf);
	free(e);
	mg_agg_reset(c->agg);
	c->agg_dropped = 0;
	c->agg_start = now;
	while (c->agg_next <= now)
		c->agg_next += c->every_ns;
}

static void earliest(__u64 *next, __u64 due)
{
	if (due && (!*next || due < *next))
		*next = due;
}

/* Reports due, stalled and idle clients; the next deadline (0: none). */
static __u64 timers(struct mg_server *s)
{
	__u64 now = mg_now_ns(CLOCK_MONOTONIC), next = 0;
	__u64 timeout = s->cfg.client_timeout_ms * 1000000ULL;
	__u64 idle = s->cfg.idle_timeout_ms * 1000000ULL;
	unsigned int k;

	/* Backwards: closing moves the last client into this place. */
	for (k = s->nclients; k-- > 0;) {
		struct client *c = s->clients[k];
		bool stream = c->subscribed || c->agg;
		bool waits = progress(c, now);
		char why[160];

		if (c->full_since && now - c->full_since >= timeout) {
			snprintf(why, sizeof(why), "cut off: queue full, took no byte for %u ms (%llu records dropped for it)",
				 s->cfg.client_timeout_ms,
				 (unsigned long long)c->dropped);
			s->cut_off++;
			close_client(s, c, why);
			continue;
		}
		/* A stream with nothing to take cannot be judged: it stays. */
		if (idle && (waits || !stream) && now - c->active_ns >= idle) {
			if (waits) {
				snprintf(why, sizeof(why), "cut off: took no byte of its waiting output for %u ms",
					 s->cfg.idle_timeout_ms);
				s->cut_off++;
			} else {
				snprintf(why, sizeof(why), "closed: idle (sent nothing, nothing to take) for %u ms",
					 s->cfg.idle_timeout_ms);
				s->idle_closed++;
			}
			close_client(s, c, why);
			continue;
		}
		if (c->agg && c->agg_next <= now) {
			agg_report(s, c, now);
			if (!flush_client(s, c))
				continue;
		}
		/*
		 * Taking is seen when looked at: at a deadline, progress
		 * since the last look resets the clock rather than cut.
		 */
		if (c->agg)
			earliest(&next, c->agg_next);
		if (c->full_since)
			earliest(&next, c->full_since + timeout);
		if (idle && (waits || !stream))
			earliest(&next, c->active_ns + idle);
	}
	return next;
}

static void arm_timer(struct mg_server *s, __u64 deadline)
{
	struct itimerspec its = { 0 };

	if (deadline) {
		its.it_value.tv_sec = deadline / 1000000000ULL;
		its.it_value.tv_nsec = deadline % 1000000000ULL;
	}
	timerfd_settime(s->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* --------------------------------------------------------------- loop */

static void flush_all(struct mg_server *s)
{
	unsigned int k;

	for (k = s->nclients; k-- > 0;)
		if (s->clients[k]->out.len)
			flush_client(s, s->clients[k]);
}

int mg_server_run(struct mg_server *s, int sigfd, mg_server_signal_fn fn,
		  void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &src_signal };

	if (sigfd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, sigfd, &ev))
		return -errno;
	while (!s->quit) {
		struct epoll_event evs[MAX_EVENTS];
		int n, i;

		/* Never sleep with chunks queued; look at the sockets anyway. */
		bool more = drain_queue(s, BATCH_CHUNKS);

		flush_all(s);
		arm_timer(s, timers(s));
		n = epoll_wait(s->epfd, evs, MAX_EVENTS,
			       more || !mg_chunkq_arm(s->env.queue) ? 0 : -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			mg_log(LOG_ERR, "epoll_wait: %s", strerror(errno));
			return -errno;
		}
		for (i = 0; i < n && !s->quit; i++) {
			struct ev_src *src = evs[i].data.ptr;
			struct client *c;

			switch (src->tag) {
			case TAG_LISTEN:
				accept_clients(s, (struct listener *)src);
				break;
			case TAG_TIMER: {
				__u64 v;

				if (read(s->timer_fd, &v, sizeof(v)) < 0)
					break;
				break;
			}
			case TAG_SIGNAL: {
				struct signalfd_siginfo si;

				while (read(sigfd, &si, sizeof(si)) == sizeof(si))
					fn(arg, si.ssi_signo);
				break;
			}
			case TAG_CLIENT:
				c = (struct client *)src;
				if (c->dead)
					break;	/* closed earlier in this batch */
				if (evs[i].events & (EPOLLERR | EPOLLHUP) &&
				    !(evs[i].events & EPOLLIN)) {
					close_client(s, c, NULL);
					break;
				}
				if (evs[i].events & EPOLLOUT && !flush_client(s, c))
					break;
				if (evs[i].events & EPOLLIN)
					read_client(s, c);
				break;
			default:
				break;	/* TAG_QUEUE: drained at the top */
			}
		}
		bury_dead(s);
	}
	return 0;
}

void mg_server_quit(struct mg_server *s)
{
	s->quit = true;
}

void mg_server_drain(struct mg_server *s, unsigned int timeout_ms)
{
	__u64 end = mg_now_ns(CLOCK_MONOTONIC) + timeout_ms * 1000000ULL;
	unsigned int k;

	while (drain_queue(s, BATCH_CHUNKS))
		flush_all(s);
	for (;;) {
		bool pending = false;

		flush_all(s);
		bury_dead(s);
		for (k = 0; k < s->nclients; k++)
			pending |= s->clients[k]->out.len > 0;
		if (!pending || mg_now_ns(CLOCK_MONOTONIC) >= end)
			break;
		usleep(10000);
	}
}

void mg_server_reconfigure(struct mg_server *s, const struct mg_config *cfg)
{
	unsigned int k;

	for (k = 0; k < s->nclients; k++)
		s->clients[k]->out.bound = cfg->client_queue;
	memcpy(s->cfg.allow, cfg->allow, sizeof(cfg->allow));
	s->cfg.nallow = cfg->nallow;
	s->cfg.max_clients = cfg->max_clients;
	s->cfg.client_queue = cfg->client_queue;
	s->cfg.client_timeout_ms = cfg->client_timeout_ms;
	s->cfg.idle_timeout_ms = cfg->idle_timeout_ms;
	s->cfg.max_clients_per_user = cfg->max_clients_per_user;
	s->cfg.root_reserve = cfg->root_reserve;
	s->cfg.agg_top = cfg->agg_top;
}

int mg_server_listen(const struct sockaddr *addr, socklen_t len, char *err,
		     size_t errlen)
{
	int one = 1, fd;

	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, addr, len) || listen(fd, 128)) {
		int e = errno;

		snprintf(err, errlen, "cannot listen: %s", strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

int mg_server_add_listener(struct mg_server *s, int fd,
			   enum mg_listen_kind kind)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct listener *l;

	if (fd < 0)
		return -EBADF;
	if (s->nlisteners == MAX_LISTENERS) {
		close(fd);
		return -ENOSPC;
	}
	l = &s->listeners[s->nlisteners];
	l->src.tag = TAG_LISTEN;
	l->fd = fd;
	l->kind = kind;
	ev.data.ptr = &l->src;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		int e = errno;

		close(fd);
		return -e;
	}
	s->nlisteners++;
	return 0;
}

int mg_server_create(const struct mg_config *cfg, int listen_fd,
		     const struct mg_server_env *env, struct mg_server **out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct mg_server *s;
	size_t maxrecs = cfg->read_buffer / MAGNET_RECORD_HEADER + 1;
	int ret = -ENOMEM;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	s->cfg.nprobes = 0;	/* the strings belong to the caller */
	s->env = *env;
	s->epfd = s->timer_fd = -1;
	s->start_ns = mg_now_ns(CLOCK_MONOTONIC);
	s->maxrecs = maxrecs;
	s->recs = calloc(maxrecs, sizeof(*s->recs));
	s->pick = calloc(maxrecs, sizeof(*s->pick));
	s->json_off = calloc(maxrecs, sizeof(*s->json_off));
	s->json_len = calloc(maxrecs, sizeof(*s->json_len));
	s->json_done = calloc(maxrecs, sizeof(*s->json_done));
	if (!s->recs || !s->pick || !s->json_off ||
	    !s->json_len || !s->json_done)
		goto err;
	s->json_f = fopencookie(&s->json, "w", (cookie_io_functions_t){
					.write = membuf_write });
	s->scratch_f = fopencookie(&s->scratch, "w", (cookie_io_functions_t){
					.write = membuf_write });
	if (!s->json_f || !s->scratch_f)
		goto err;
	ret = mg_totals_create(cfg->export_jobs, &s->totals);
	if (ret)
		goto err;
	ret = mg_procinfo_create(PROCINFO_THREADS, NULL, NULL, &s->procs);
	if (ret)
		goto err;
	{
		struct mg_sensor_version v;
		struct mg_trace_info info;

		mg_collect_version(env->collect, &v);
		mg_sensor_trace_info(&info, &v, mg_collect_ncpus(env->collect),
				     NULL, 0);
		mg_print_opts_init(&s->popts, &info, &s->probes);
		s->popts.json = true;
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->epfd < 0 || s->timer_fd < 0) {
		ret = -errno;
		goto err;
	}
	ev.data.ptr = &src_timer;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->timer_fd, &ev))
		goto err_errno;
	ev.data.ptr = &src_queue;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, mg_chunkq_fd(env->queue), &ev))
		goto err_errno;
	s->now = s->start_ns;
	refresh_probes(s, true);
	/* The caller keeps listen_fd: a placeholder first, then added. */
	ret = mg_server_add_listener(s, dup(listen_fd), MG_LISTEN_MAGNET);
	if (ret)
		goto err;
	*out = s;
	return 0;

err_errno:
	ret = -errno;
err:
	mg_server_free(s);
	return ret;
}

void mg_server_free(struct mg_server *s)
{
	if (!s)
		return;
	while (s->nclients)
		close_client(s, s->clients[s->nclients - 1], NULL);
	bury_dead(s);
	if (s->json_f)
		fclose(s->json_f);
	free(s->json.buf);
	if (s->scratch_f)
		fclose(s->scratch_f);
	free(s->scratch.buf);
	mg_totals_free(s->totals);
	while (s->nlisteners)
		close(s->listeners[--s->nlisteners].fd);
	mg_procinfo_free(s->procs);
	mg_probes_free(&s->probes);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->timer_fd >= 0)
		close(s->timer_fd);
	free(s->clients);
	free(s->recs);
	free(s->pick);
	free(s->json_off);
	free(s->json_len);
	free(s->json_done);
	free(s);
}
