// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's clients: their output queues, their lines and the commands of
 * each protocol (docs/protocol.md; Prometheus and Supermon through
 * prom.c and supermon.c).
 *
 * Output queues. Each client has a byte queue bounded by client_queue.
 * Data that does not fit is dropped for that client and counted (an AGG
 * report goes whole or not at all, its records counted as dropped); a
 * "D <n>" line goes out as soon as there is room for it, and always before
 * the next data. Replies are never dropped:
 * instead, no line of a client is handled while its queue is at the bound
 * or over it. What it sent meanwhile waits: the rest of its last recv in
 * its input buffer, the rest in the socket (EPOLLIN off), until the queue
 * drains. So a queue holds at most client_queue plus one reply.
 *
 * Turns. A client's lines are handled LINES_PER_TURN at a time (empty
 * ones free); the rest wait in its input buffer for the next turn of the
 * loop (mg_client_continue), so one client's flood of cheap requests
 * never keeps the server from the collection queue or the other clients.
 * Prometheus and Supermon are answered from a view of the totals rebuilt
 * at most every MONITOR_VIEW_NS; an HTTP request has at most
 * HTTP_HEADERS_MAX header lines and HTTP_REQUEST_MAX bytes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "chunkq.h"
#include "collect.h"
#include "expr.h"
#include "prom.h"
#include "record.h"
#include "sensor.h"
#include "stats.h"
#include "supermon.h"
#include "tracewr.h"
#include "client.h"
#include "auth.h"
#include "fanout.h"
#include "log.h"
#include "server_int.h"

#define OBUF_MIN		16384
#define STREAM_KEEP		(256 * 1024)
#define LINES_PER_TURN		16
#define MONITOR_VIEW_NS		(100 * 1000000ULL)
#define HTTP_HEADERS_MAX	64
#define HTTP_REQUEST_MAX	8192

static void take_lines(struct mg_server *s, struct client *c);

ssize_t mg_membuf_write(void *cookie, const char *data, size_t n)
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
size_t mg_escape_word(char *dst, size_t size, const char *src)
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

size_t mg_client_room(const struct mg_server *s, const struct client *c)
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

int mg_obuf_put(struct obuf *o, const void *data, size_t n)
{
	if (!n)
		return 0;	/* an empty reply: o->buf may be NULL */
	if (obuf_reserve(o, n))
		return -ENOMEM;
	memcpy(o->buf + o->head + o->len, data, n);
	o->len += n;
	return 0;
}

/* A reply or a table line: always queued (see the top of the file). */
__attribute__((format(printf, 2, 3)))
void mg_client_reply(struct client *c, const char *fmt, ...)
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
	mg_obuf_put(&c->out, line, n);
}

/* What the client lost since last told, if room bytes take the line. */
static bool put_drops(struct client *c, size_t room)
{
	char line[40];
	int n;

	if (!c->pending_drop)
		return true;
	n = snprintf(line, sizeof(line), "D %llu\n",
		     (unsigned long long)c->pending_drop);
	if ((size_t)n > room)
		return false;
	mg_obuf_put(&c->out, line, n);
	c->pending_drop = 0;
	return true;
}

/* Before data: tell the client what it lost since last told. */
bool mg_client_tell_drops(struct mg_server *s, struct client *c)
{
	return put_drops(c, mg_client_room(s, c));
}

/*
 * Whether the client took output since last looked at, and whether output
 * waits for it (in out, or in the socket). Taken means acknowledged by its
 * TCP: what the socket took from out, less what it still holds (SIOCOUTQ:
 * not sent, or not acknowledged). A client that stops reading stops
 * acknowledging once its own receive buffer is full, however much more
 * the daemon's socket buffer could take. A Unix socket's SIOCOUTQ counts
 * the buffers' true size, more than their bytes: a write into it makes
 * taken smaller, and only a larger taken is the client's progress.
 */
bool mg_client_progress(struct client *c, __u64 now)
{
	int outq = 0;
	__u64 taken;

	if (ioctl(c->fd, SIOCOUTQ, &outq) < 0 || outq < 0)
		outq = 0;
	taken = c->written - (__u64)outq;
	if ((__s64)(taken - c->taken) > 0) {
		c->active_ns = now;
		c->full_since = 0;
	}
	c->taken = taken;
	return c->out.len || outq;
}

/* The queue reached its bound: data dropped, or replies over it. */
static void mark_full(struct client *c)
{
	if (!c->full_since) {
		__u64 now = mg_now_ns(CLOCK_MONOTONIC);

		mg_client_progress(c, now);	/* what it took before does not count */
		c->full_since = now;
	}
}

void mg_client_drop(struct mg_server *s, struct client *c, __u64 records)
{
	if (!records)
		return;
	c->pending_drop += records;
	c->dropped += records;
	s->client_dropped += records;
	mark_full(c);
}

/* Data: queued only if it fits, after any D line. */
bool mg_client_put_data(struct mg_server *s, struct client *c,
			const void *data, size_t n, __u64 records)
{
	if (!mg_client_tell_drops(s, c) || n > mg_client_room(s, c)) {
		mg_client_drop(s, c, records);
		return false;
	}
	mg_obuf_put(&c->out, data, n);
	s->sent += records;
	return true;
}

void mg_client_put_frame(struct client *c, const void *hdr, size_t hl,
			 const void *data, size_t len)
{
	if (!c->out.len) {
		struct iovec iov[2] = {
			{ .iov_base = (void *)hdr, .iov_len = hl },
			{ .iov_base = (void *)data, .iov_len = len },
		};
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
		ssize_t n;

		do
			n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		/* An error other than a full socket: the next flush meets it. */
		if (n > 0) {
			size_t sent = n, h = sent < hl ? sent : hl;

			c->written += sent;
			hdr = (const char *)hdr + h;
			hl -= h;
			data = (const char *)data + (sent - h);
			len -= sent - h;
		}
	}
	mg_obuf_put(&c->out, hdr, hl);
	mg_obuf_put(&c->out, data, len);
}

static void update_events(struct mg_server *s, struct client *c)
{
	struct epoll_event ev = { .data.ptr = &c->src };
	bool rd = !c->closing && c->out.len < s->cfg.client_queue;
	bool wr = c->out.len > 0;

	if (rd == c->reading && wr == c->writing)
		return;
	ev.events = (rd ? EPOLLIN : 0) | (wr ? EPOLLOUT : 0);
	epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	/* A request's clock stood while the server read nothing. */
	if (rd && !c->reading && c->request_since)
		c->request_since = mg_now_ns(CLOCK_MONOTONIC);
	c->reading = rd;
	c->writing = wr;
}

static void end_subscription(struct mg_server *s, struct client *c)
{
	if (c->subscribed) {
		s->nsubs--;
		mg_server_streams(s);
	}
	c->subscribed = false;
	mg_expr_free(c->filter);
	c->filter = NULL;
}

static void end_agg(struct mg_server *s, struct client *c)
{
	if (mg_client_aggregates(c)) {
		s->naggs--;
		mg_server_streams(s);
	}
	mg_agg_free(c->agg);
	c->agg = NULL;
	mg_netview_free(c->net);
	c->net = NULL;
}

void mg_client_close(struct mg_server *s, struct client *c, const char *why)
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

void mg_client_bury_dead(struct mg_server *s)
{
	while (s->dead) {
		struct client *c = s->dead;

		s->dead = c->next_dead;
		free(c->out.buf);
		free(c);
	}
}

/*
 * Send what the queue holds, and handle the input that waited for room;
 * false when the client is gone.
 */
bool mg_client_flush(struct mg_server *s, struct client *c)
{
	bool turn = false;

	for (;;) {
		while (c->out.len) {
			ssize_t n = send(c->fd, c->out.buf + c->out.head,
					 c->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					break;
				mg_client_close(s, c, NULL);
				return false;
			}
			c->out.head += n;
			c->out.len -= n;
			c->written += n;
		}
		/*
		 * Drops are told as soon as there is room, not only before
		 * the next data: after a burst, none may come.
		 */
		if (c->pending_drop && !c->closing && mg_client_tell_drops(s, c))
			continue;
		/* Lines that waited for room or for their turn: one turn. */
		if (turn || !c->in_len || c->closing ||
		    c->out.len >= s->cfg.client_queue)
			break;
		take_lines(s, c);
		turn = true;
	}
	if (c->out.len >= s->cfg.client_queue)
		mark_full(c);	/* replies over the bound: it must read */
	if (!c->out.len) {
		c->out.head = 0;
		/*
		 * Give back a queue a burst grew; keep a small one, and a
		 * stream's up to STREAM_KEEP (a chunk or two), which the
		 * next chunk would grow again (doubling from OBUF_MIN:
		 * copies, and fresh pages to fault).
		 */
		if (c->out.cap > (c->subscribed || mg_client_aggregates(c) ?
				  STREAM_KEEP : 4 * OBUF_MIN)) {
			free(c->out.buf);
			c->out.buf = NULL;
			c->out.cap = 0;
		}
		if (c->closing) {
			mg_client_close(s, c, NULL);
			return false;
		}
	}
	update_events(s, c);
	return true;
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
	mg_obuf_put(&c->out, s->scratch.buf, s->scratch.len);
	s->scratch.len = 0;
}

static void cmd_hello(struct mg_server *s, struct client *c)
{
	struct mg_sensor_version v;
	char host[256] = "?";

	mg_collect_version(s->env.collect, &v);
	gethostname(host, sizeof(host) - 1);
	mg_client_reply(c, "OK magnet %d node=%s cpus=%u clock=%s order=%s format=%u module=%s access=%s",
			MG_PROTO_VERSION, host, mg_collect_ncpus(s->env.collect), v.clock,
			__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "le" : "be",
			v.format, mg_collect_up(s->env.collect) ? "up" : "down",
			mg_access_name(c->access));
}

static void cmd_probes(struct mg_server *s, struct client *c)
{
	size_t i;

	if (!mg_collect_up(s->env.collect)) {
		mg_client_reply(c, "OK 0 probes");
		return;
	}
	mg_fanout_refresh_probes(s, true);
	mg_client_reply(c, "OK %zu probes", s->probes.n);
	for (i = 0; i < s->probes.n; i++) {
		const struct mg_probe *p = &s->probes.v[i];
		char name[3 * (MAGNET_NAME_MAX + 1)], type[3 * 32 + 1];
		char sym[3 * 256 + 1];

		mg_escape_word(name, sizeof(name), p->name);
		mg_escape_word(type, sizeof(type), p->type);
		mg_escape_word(sym, sizeof(sym), p->target);
		mg_client_reply(c, "%u %s %s nargs=%u hits=%llu missed=%llu symbol=%s",
				p->id, type, name, p->nargs,
				(unsigned long long)p->hits,
				(unsigned long long)p->missed, sym);
	}
}

static void cmd_stats(struct mg_server *s, struct client *c)
{
	unsigned int ncpus = mg_collect_ncpus(s->env.collect), i;
	struct mg_collect_cpu *cs = calloc(ncpus, sizeof(*cs));
	struct mg_tracewr_stats ts = { 0 };
	struct mg_cgmap_stats cg;
	struct mg_kstats *ks = NULL;
	__u64 read = 0, bytes = 0, lost = 0, queued = 0;
	unsigned long ring_size;
	unsigned int grown;
	size_t nks = 0, len;
	char *text = NULL;

	if (!cs) {
		mg_client_reply(c, "ERR out of memory");
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
		lost += mg_lost_total(&cs[i].lost) + cs[i].lost_fair;
	}
	for (i = 0; i < s->nclients; i++)
		queued += s->clients[i]->out.len;
	if (s->env.trace)
		mg_tracewr_stats(s->env.trace, &ts);
	mg_cgmap_stats(s->cgmap, &cg);
	mg_collect_rings(s->env.collect, &ring_size, &grown);
	mg_client_reply(c, "OK %u cpus uptime=%llu module=%s reloads=%u clients=%u subscribers=%u aggregators=%u read=%llu read_bytes=%llu read_lost=%llu queue_dropped=%llu queue_peak=%zu sent=%llu client_dropped=%llu cut_off=%llu refused=%llu trace_files=%llu trace_bytes=%llu trace_dropped=%llu trace_errors=%llu idle_closed=%llu client_queued=%llu cgroups=%u cgroup_bytes=%zu cgroups_evicted=%llu ring_size=%lu rings_grown=%u",
			ncpus,
			(unsigned long long)((mg_now_ns(CLOCK_MONOTONIC) - s->start_ns) / 1000000000ULL),
			mg_collect_up(s->env.collect) ? "up" : "down",
			mg_collect_reloads(s->env.collect), s->nclients, s->nsubs,
			s->naggs, (unsigned long long)read, (unsigned long long)bytes,
			(unsigned long long)lost,
			(unsigned long long)atomic_load(s->env.queue_dropped),
			mg_chunkq_peak(s->env.queue),
			(unsigned long long)s->sent,
			(unsigned long long)s->client_dropped,
			(unsigned long long)s->cut_off, (unsigned long long)s->refused,
			(unsigned long long)ts.files, (unsigned long long)ts.bytes,
			(unsigned long long)(ts.drop_records + ts.err_records),
			(unsigned long long)ts.write_errors,
			(unsigned long long)s->idle_closed, (unsigned long long)queued,
			cg.paths, cg.bytes, (unsigned long long)cg.evicted, ring_size, grown);
	for (i = 0; i < ncpus; i++) {
		const struct mg_kstats *k = mg_stats_find(ks, nks, i);
		struct mg_kstats zero = { .cpu = i };

		if (!k)
			k = &zero;
		mg_client_reply(c, "cpu=%u written=%llu bytes=%llu lost_full=%llu lost_too_big=%llu lost_nesting=%llu overwritten=%llu read=%llu read_lost=%llu",
				i, (unsigned long long)k->written,
				(unsigned long long)k->bytes,
				(unsigned long long)k->lost_full,
				(unsigned long long)k->lost_too_big,
				(unsigned long long)k->lost_nesting,
				(unsigned long long)k->overwritten,
				(unsigned long long)cs[i].records,
				(unsigned long long)(mg_lost_total(&cs[i].lost) + cs[i].lost_fair));
	}
	free(ks);
	free(cs);
}

static int lookup_probe(void *arg, const char *name, size_t len,
			unsigned int *id)
{
	const struct mg_server *s = arg;
	const struct mg_probe *p = mg_probes_find_name(&s->probes, name, len);

	if (!p)
		return -ENOENT;
	*id = p->id;
	return 0;
}

static void cmd_subscribe(struct mg_server *s, struct client *c,
			  const struct mg_cmd *cmd)
{
	struct mg_expr_error err;
	struct mg_expr *e = NULL;
	int ret;

	mg_fanout_refresh_probes(s, true);
	ret = mg_expr_parse(cmd->filter, cmd->filter_len, lookup_probe, s, &e,
			    &err);
	if (ret == -EINVAL) {
		mg_client_reply(c, "ERR bad filter: %s", err.msg);
		return;
	}
	if (ret) {
		mg_client_reply(c, "ERR out of memory");
		return;
	}
	end_subscription(s, c);
	c->filter = e;
	c->format = cmd->format;
	c->subscribed = true;
	s->nsubs++;
	mg_server_streams(s);	/* before the client hears OK */
	mg_client_reply(c, "OK subscribed format=%s", mg_proto_format_name(cmd->format));
	/* Between two chunks: what the mirror knows names what follows. */
	if (c->format == MG_FORMAT_BINARY)
		mg_fanout_replay_tasks(s, c);
}

static void cmd_agg(struct mg_server *s, struct client *c,
		    const struct mg_cmd *cmd)
{
	struct mg_netview *v = NULL;
	struct mg_agg *a = NULL;
	__u64 now = mg_now_ns(CLOCK_MONOTONIC);
	bool was = mg_client_aggregates(c);

	/* AGG net again: its tables are emptied (cheaply), not made anew. */
	if (cmd->agg_key == MG_AGG_NET && c->net) {
		v = c->net;
		c->net = NULL;
		mg_netview_reset(v);
	} else if (cmd->agg_key == MG_AGG_NET ?
		   mg_netview_create(s->cfg.agg_entries, &v) :
		   mg_agg_create(s->cfg.agg_entries, &a)) {
		mg_client_reply(c, "ERR out of memory");
		return;
	}
	mg_agg_free(c->agg);
	mg_netview_free(c->net);
	if (v)
		mg_netview_set_settle(v, s->cfg.net_settle_ms * 1000000ULL);
	c->agg = a;
	c->net = v;
	c->agg_key = cmd->agg_key;
	c->every_ns = cmd->interval_ns;
	c->agg_start = now;
	c->agg_next = now + cmd->interval_ns;
	c->agg_dropped = 0;
	if (!was) {
		s->naggs++;
		mg_server_streams(s);	/* before the client hears OK */
	}
	mg_client_reply(c, "OK agg key=%s every=%llu", mg_proto_agg_key_name(cmd->agg_key),
			(unsigned long long)cmd->interval_ns);
}

/*
 * Whose jobs c sees in TOTALS: TOTALS and ALL every job (and "other",
 * which holds everyone's); OWN its own (owners.h; a Slurm step's user's,
 * docs/slurm.md); NONE none.
 */
static bool job_visible(const struct client *c, const struct mg_totals_job *j,
			bool other)
{
	if (c->access >= MG_ACCESS_TOTALS)
		return true;
	return !other && c->uid_known && j->has_owner && j->owner == c->uid;
}

/* A job line's words after its path: a Slurm job's (slurm.h), or none. */
static const char *job_words(const struct mg_totals_job *j, char *buf,
			     size_t size)
{
	buf[0] = '\0';
	if (j->is_slurm)
		mg_slurm_words(&j->slurm, j->slurm_node,
			       j->has_owner ? j->owner : MG_SLURM_NONE, buf, size);
	return buf;
}

/* The lines of a job's traffic: a protocol's when it has one, every peer's. */
static size_t net_lines(const struct mg_totals_job *j)
{
	size_t i, n = 0;

	if (!j->has_net)
		return 0;
	for (i = 0; i < MG_TOTALS_PROTOS; i++)
		n += mg_totals_counts_any(&j->net.proto[i]);
	return n + j->net.npeers + 1;
}

#define COUNTS_FMT	"tx_packets=%llu tx_bytes=%llu rx_packets=%llu rx_bytes=%llu " \
			"tx_repeated_bytes=%llu rx_repeated_bytes=%llu"
#define COUNTS_ARGS(c)	(unsigned long long)(c)->tx_packets, \
			(unsigned long long)(c)->tx_bytes, \
			(unsigned long long)(c)->rx_packets, \
			(unsigned long long)(c)->rx_bytes, \
			(unsigned long long)(c)->tx_repeated_bytes, \
			(unsigned long long)(c)->rx_repeated_bytes

/* After a job's line: its traffic per protocol, per peer, then "other". */
static void net_reply(struct client *c, const struct mg_totals_job *j)
{
	unsigned long long id = j->cgroup;
	char addr[MG_TOTALS_PEER_NAME_MAX];
	size_t i;

	if (!j->has_net)
		return;
	for (i = 0; i < MG_TOTALS_PROTOS; i++)
		if (mg_totals_counts_any(&j->net.proto[i]))
			mg_client_reply(c, "net %llu %s " COUNTS_FMT, id,
					mg_totals_proto_name(i),
					COUNTS_ARGS(&j->net.proto[i]));
	for (i = 0; i < j->net.npeers; i++)
		mg_client_reply(c, "peer %llu %s " COUNTS_FMT, id,
				mg_totals_peer_name(&j->net.peers[i], addr, sizeof(addr)),
				COUNTS_ARGS(&j->net.peers[i].n));
	mg_client_reply(c, "peer %llu other " COUNTS_FMT " evictions=%llu", id,
			COUNTS_ARGS(&j->net.other.n),
			(unsigned long long)j->net.evictions);
}

static void cmd_totals(struct mg_server *s, struct client *c)
{
	struct mg_totals_view v;
	char name[3 * MG_TOTALS_PATH_MAX + 1], type[3 * 16 + 1];
	char sym[3 * MG_TOTALS_NAME_MAX + 1], words[MG_SLURM_WORDS_MAX];
	size_t i, shown = 0;

	if (mg_fanout_totals_view(s, &v)) {
		mg_client_reply(c, "ERR out of memory");
		return;
	}
	for (i = 0; i <= v.njobs; i++) {
		const struct mg_totals_job *j = i < v.njobs ? &v.jobs[i] : &v.other;

		if (job_visible(c, j, i == v.njobs))
			shown += 1 + net_lines(j);
	}
	mg_client_reply(c, "OK %zu totals node=%s ts=%llu uptime=%llu module=%s cpus=%u records=%llu bytes=%llu kernel_lost=%llu daemon_dropped=%llu probes=%u jobs=%u net_packets=%llu net_bytes=%llu net_unkeyed=%llu net_repeated_bytes=%llu net_seq_evictions=%llu net_seq_holes_dropped=%llu net_order_early=%llu net_order_late=%llu probe_missed=%llu",
			v.nprobes + shown, v.node.node,
			(unsigned long long)v.node.now_ns,
			(unsigned long long)(v.node.uptime_ns / 1000000000ULL),
			v.node.module_up ? "up" : "down", v.node.cpus,
			(unsigned long long)v.node.records,
			(unsigned long long)v.node.bytes,
			(unsigned long long)v.node.kernel_lost,
			(unsigned long long)v.node.daemon_dropped, v.node.probes,
			v.node.jobs, (unsigned long long)v.node.net_packets,
			(unsigned long long)v.node.net_bytes,
			(unsigned long long)v.node.net_unkeyed,
			(unsigned long long)v.node.net_repeated_bytes,
			(unsigned long long)v.node.net_seq_evictions,
			(unsigned long long)v.node.net_seq_holes_dropped,
			(unsigned long long)v.node.net_order_early,
			(unsigned long long)v.node.net_order_late,
			(unsigned long long)v.node.probe_missed);
	for (i = 0; i < v.nprobes; i++) {
		const struct mg_totals_probe *p = &v.probes[i];

		mg_escape_word(name, sizeof(name), p->name);
		mg_escape_word(type, sizeof(type), p->type);
		mg_escape_word(sym, sizeof(sym), p->symbol);
		mg_client_reply(c, "probe %u %s %s events=%llu sock_bytes=%llu sock=%d loaded=%d symbol=%s missed=%llu",
				p->id, type, name, (unsigned long long)p->events,
				(unsigned long long)p->sock_bytes, p->sock, p->loaded,
				sym, (unsigned long long)p->missed);
	}
	for (i = 0; i <= v.njobs; i++) {
		const struct mg_totals_job *j = i < v.njobs ? &v.jobs[i] : &v.other;

		if (!job_visible(c, j, i == v.njobs))
			continue;
		mg_escape_word(name, sizeof(name), j->path);
		mg_client_reply(c, "job %llu %s events=%llu sock_bytes=%llu exported=%d intr=%llu lost_fair=%llu%s",
				(unsigned long long)j->cgroup, name,
				(unsigned long long)j->events,
				(unsigned long long)j->sock_bytes, j->exported,
				(unsigned long long)j->intr_events,
				(unsigned long long)j->lost_fair,
				job_words(j, words, sizeof(words)));
		net_reply(c, j);
	}
	mg_totals_view_free(&v);
}

/* The view the monitors are answered from: MONITOR_VIEW_NS old at most. */
static const struct mg_totals_view *monitor_view(struct mg_server *s)
{
	__u64 now = mg_now_ns(CLOCK_MONOTONIC);
	struct mg_totals_view v;

	if (s->mon_view_ok && now - s->mon_view_ns < MONITOR_VIEW_NS)
		return &s->mon_view;
	if (mg_fanout_totals_view(s, &v))
		return NULL;
	mg_totals_view_free(&s->mon_view);
	s->mon_view = v;
	s->mon_view_ns = now;
	s->mon_view_ok = true;
	return &s->mon_view;
}

static void http_error(struct client *c, const char *status)
{
	char msg[160];
	int n = snprintf(msg, sizeof(msg), "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
			 status);

	mg_obuf_put(&c->out, msg, n);
	c->closing = true;
	c->request_since = 0;
}

/* Prometheus: the request line, headers (ignored), then the response. */
static void prom_line(struct mg_server *s, struct client *c,
		      const char *line, size_t len)
{
	const struct mg_totals_view *v;

	c->http_bytes += len + 1;
	if (!c->http_line_seen) {
		if (len >= sizeof(c->http_line))
			len = sizeof(c->http_line) - 1;
		memcpy(c->http_line, line, len);
		c->http_line[len] = '\0';
		c->http_line_seen = true;
		return;
	}
	if (len) {		/* a header */
		if (++c->http_headers > HTTP_HEADERS_MAX ||
		    c->http_bytes > HTTP_REQUEST_MAX)
			http_error(c, "431 Request Header Fields Too Large");
		return;
	}
	v = monitor_view(s);
	if (!v) {
		http_error(c, "500 Internal Server Error");
		return;
	}
	mg_prom_respond(scratch_begin(s), c->http_line, v);
	scratch_queue(s, c);
	c->closing = true;
	c->request_since = 0;
}

static void supermon_line(struct mg_server *s, struct client *c,
			  const char *line, size_t len)
{
	const struct mg_totals_view *v = NULL;

	if (mg_supermon_wants_view(line, len)) {
		v = monitor_view(s);
		if (!v) {
			mg_client_reply(c, "(error \"out of memory\")");
			return;
		}
	}
	if (mg_supermon_handle(scratch_begin(s), line, len, &c->sm, v) == 1)
		c->closing = true;
	scratch_queue(s, c);
}

/*
 * AUTH MUNGE: the uid and gid munged vouches for, judged as a Unix
 * client's (its groups from /etc/group). One try per connection: munged
 * is asked on this thread, and a hung munged costs seconds a try.
 */
static void cmd_auth(struct mg_server *s, struct client *c, const struct mg_cmd *cmd)
{
	gid_t groups[64];
	char why[256];
	size_t n;
	uid_t uid;
	gid_t gid;

	if (c->uid_known) {
		mg_client_reply(c, "ERR auth: already known as uid %u", (unsigned int)c->uid);
		return;
	}
	if (c->auth_tried) {
		mg_client_reply(c, "ERR auth: one AUTH per connection");
		c->closing = c->must_auth;
		return;
	}
	c->auth_tried = true;
	if (mg_auth_munge(cmd->cred, cmd->cred_len, &uid, &gid, why, sizeof(why))) {
		mg_log(LOG_NOTICE, "client %s: AUTH refused: %s", c->peer, why);
		mg_client_reply(c, "ERR auth: %s", why);
		c->closing = c->must_auth;	/* nothing else for it */
		return;
	}
	n = mg_access_groups_of(uid, groups, sizeof(groups) / sizeof(groups[0]));
	c->access = mg_access_level(&s->rules, uid, gid, groups, n);
	c->uid = uid;
	c->uid_known = true;
	c->must_auth = false;
	mg_log(LOG_INFO, "client %s: uid %u by MUNGE, access %s", c->peer,
	       (unsigned int)uid, mg_access_name(c->access));
	mg_client_reply(c, "OK AUTH uid=%u access=%s", (unsigned int)uid,
			mg_access_name(c->access));
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
	if (mg_proto_parse(line, len, &cmd) && !c->must_auth) {
		mg_client_reply(c, "%s", cmd.error);
		return;
	}
	/* From another host: who it is first, or nothing (docs/security.md). */
	if (c->must_auth && cmd.kind != MG_CMD_QUIT && cmd.kind != MG_CMD_AUTH) {
		mg_client_reply(c, "ERR authentication required: a client from another host sends AUTH MUNGE <credential> first");
		c->closing = true;
		return;
	}
	if (c->access == MG_ACCESS_NONE &&
	    (cmd.kind == MG_CMD_SUBSCRIBE || cmd.kind == MG_CMD_AGG)) {
		mg_client_reply(c, "ERR not allowed: records go to known users only: connect to the Unix socket, or AUTH MUNGE");
		return;
	}
	/*
	 * A stream's drops are told before the reply that may end or replace
	 * it, whatever the room, as a reply is: none is told after it.
	 */
	if (cmd.kind == MG_CMD_SUBSCRIBE || cmd.kind == MG_CMD_AGG ||
	    cmd.kind == MG_CMD_UNSUBSCRIBE || cmd.kind == MG_CMD_QUIT)
		put_drops(c, SIZE_MAX);
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
			mg_client_reply(c, "OK");
		break;
	case MG_CMD_AUTH:
		cmd_auth(s, c, &cmd);
		break;
	case MG_CMD_QUIT:
		mg_client_reply(c, "OK bye");
		c->closing = true;
		break;
	default:
		mg_client_reply(c, "ERR unknown command");
		break;
	}
}

static void too_long(struct mg_server *s, struct client *c)
{
	switch (c->kind) {
	case MG_LISTEN_PROMETHEUS:
		http_error(c, "431 Request Header Fields Too Large");
		break;
	case MG_LISTEN_SUPERMON:
		mg_supermon_too_long(scratch_begin(s), MG_PROTO_LINE_MAX);
		scratch_queue(s, c);
		break;
	default:
		mg_client_reply(c, "%s", MG_PROTO_ERR_TOO_LONG);
		break;
	}
}

/*
 * Handle a turn of the received lines while the output queue is under its
 * bound; the rest waits in c->in (see the top of the file).
 */
static void take_lines(struct mg_server *s, struct client *c)
{
	unsigned int budget = LINES_PER_TURN;

	while (budget && c->in_len && !c->closing &&
	       c->out.len < s->cfg.client_queue) {
		const char *data = c->in + c->in_off, *line;
		size_t left = c->in_len, llen;
		enum mg_line_status st;

		st = mg_linebuf_take(&c->lb, &data, &left, &line, &llen);
		c->in_off = data - c->in;
		c->in_len = left;
		if (st == MG_LINE_TOO_LONG) {
			too_long(s, c);
			budget--;
		} else if (st == MG_LINE_READY) {
			/* A line's clock ends with it; HTTP's runs on. */
			if (c->kind != MG_LISTEN_PROMETHEUS)
				c->request_since = 0;
			handle_line(s, c, line, llen);
			budget -= llen > 0;
		}
	}
	if (c->closing)
		c->in_len = 0;		/* lines after QUIT get no reply */
	/* All taken: a line begun, or none (HTTP's clock runs from accept). */
	if (!c->in_len && !c->closing && c->kind != MG_LISTEN_PROMETHEUS) {
		if (!c->lb.len && !c->lb.skipping)
			c->request_since = 0;
		else if (!c->request_since)
			c->request_since = mg_now_ns(CLOCK_MONOTONIC);
	}
}

void mg_client_read(struct mg_server *s, struct client *c)
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
			mg_client_close(s, c, NULL);
			return;
		}
		c->in_off = 0;
		c->in_len = n;
		c->active_ns = mg_now_ns(CLOCK_MONOTONIC);
	}
	mg_client_flush(s, c);		/* a turn of lines, and their replies */
}

bool mg_client_continue(struct mg_server *s, struct client *c)
{
	if (!c->in_len || c->closing || c->out.len >= s->cfg.client_queue)
		return false;
	if (!mg_client_flush(s, c))
		return false;
	return c->in_len && !c->closing && c->out.len < s->cfg.client_queue;
}
