// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's clients: their output queues, their lines and the commands of
 * each protocol (docs/protocol.md; Prometheus and Supermon through
 * prom.c and supermon.c).
 *
 * Output queues. Each client has a byte queue bounded by client_queue.
 * Data that does not fit is dropped for that client and counted (an AGG
 * report goes whole or not at all, its records counted as dropped); a
 * "D <n>" line goes out before its next data. Replies are never dropped:
 * instead, no line of a client is handled while its queue is at the bound
 * or over it. What it sent meanwhile waits: the rest of its last recv in
 * its input buffer, the rest in the socket (EPOLLIN off), until the queue
 * drains. So a queue holds at most client_queue plus one reply.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "collect.h"
#include "expr.h"
#include "prom.h"
#include "record.h"
#include "sensor.h"
#include "stats.h"
#include "supermon.h"
#include "tracewr.h"
#include "client.h"
#include "fanout.h"
#include "log.h"
#include "server_int.h"

#define OBUF_MIN		16384
#define STREAM_KEEP		(256 * 1024)

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

/* Before data: tell the client what it lost since last told. */
bool mg_client_tell_drops(struct mg_server *s, struct client *c)
{
	char line[40];
	int n;

	if (!c->pending_drop)
		return true;
	n = snprintf(line, sizeof(line), "D %llu\n",
		     (unsigned long long)c->pending_drop);
	if ((size_t)n > mg_client_room(s, c))
		return false;
	mg_obuf_put(&c->out, line, n);
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
bool mg_client_progress(struct client *c, __u64 now)
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
	mg_client_reply(c, "OK magnet %d node=%s cpus=%u clock=%s order=%s format=%u module=%s",
			MG_PROTO_VERSION, host, mg_collect_ncpus(s->env.collect), v.clock,
			__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "le" : "be",
			v.format, mg_collect_up(s->env.collect) ? "up" : "down");
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
		char name[3 * 256 + 1], type[3 * 32 + 1];

		mg_escape_word(name, sizeof(name), p->target);
		mg_escape_word(type, sizeof(type), p->type);
		mg_client_reply(c, "%u %s %s nargs=%u hits=%llu missed=%llu", p->id, type,
				name, p->nargs, (unsigned long long)p->hits,
				(unsigned long long)p->missed);
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
		lost += mg_lost_total(&cs[i].lost);
	}
	for (i = 0; i < s->nclients; i++)
		queued += s->clients[i]->out.len;
	if (s->env.trace)
		mg_tracewr_stats(s->env.trace, &ts);
	mg_cgmap_stats(s->cgmap, &cg);
	mg_client_reply(c, "OK %u cpus uptime=%llu module=%s reloads=%u clients=%u subscribers=%u aggregators=%u read=%llu read_bytes=%llu read_lost=%llu queue_dropped=%llu sent=%llu client_dropped=%llu cut_off=%llu refused=%llu trace_files=%llu trace_bytes=%llu trace_dropped=%llu trace_errors=%llu idle_closed=%llu client_queued=%llu cgroups=%u cgroup_bytes=%zu cgroups_evicted=%llu",
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
			(unsigned long long)s->idle_closed, (unsigned long long)queued,
			cg.paths, cg.bytes, (unsigned long long)cg.evicted);
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

	if (cmd->agg_key == MG_AGG_NET ? mg_netview_create(s->cfg.agg_entries, &v) :
	    mg_agg_create(s->cfg.agg_entries, &a)) {
		mg_client_reply(c, "ERR out of memory");
		return;
	}
	end_agg(s, c);
	c->agg = a;
	c->net = v;
	c->agg_key = cmd->agg_key;
	c->every_ns = cmd->interval_ns;
	c->agg_start = now;
	c->agg_next = now + cmd->interval_ns;
	c->agg_dropped = 0;
	s->naggs++;
	mg_server_streams(s);	/* before the client hears OK */
	mg_client_reply(c, "OK agg key=%s every=%llu", mg_proto_agg_key_name(cmd->agg_key),
			(unsigned long long)cmd->interval_ns);
}

static void cmd_totals(struct mg_server *s, struct client *c)
{
	struct mg_totals_view v;
	char name[3 * MG_TOTALS_PATH_MAX + 1], type[3 * 16 + 1];
	size_t i;

	if (mg_fanout_totals_view(s, &v)) {
		mg_client_reply(c, "ERR out of memory");
		return;
	}
	mg_client_reply(c, "OK %zu totals node=%s ts=%llu uptime=%llu module=%s cpus=%u records=%llu bytes=%llu kernel_lost=%llu daemon_dropped=%llu probes=%u jobs=%u",
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

		mg_escape_word(name, sizeof(name), p->name);
		mg_escape_word(type, sizeof(type), p->type);
		mg_client_reply(c, "probe %u %s %s events=%llu sock_bytes=%llu sock=%d loaded=%d",
				p->id, type, name, (unsigned long long)p->events,
				(unsigned long long)p->sock_bytes, p->sock, p->loaded);
	}
	for (i = 0; i <= v.njobs; i++) {
		const struct mg_totals_job *j = i < v.njobs ? &v.jobs[i] : &v.other;

		mg_escape_word(name, sizeof(name), j->path);
		mg_client_reply(c, "job %llu %s events=%llu sock_bytes=%llu exported=%d intr=%llu lost_fair=%llu",
				(unsigned long long)j->cgroup, name,
				(unsigned long long)j->events,
				(unsigned long long)j->sock_bytes, j->exported,
				(unsigned long long)j->intr_events,
				(unsigned long long)j->lost_fair);
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
	if (mg_fanout_totals_view(s, &v)) {
		static const char err[] = "HTTP/1.1 500 Internal Server Error\r\n"
			"Content-Length: 0\r\nConnection: close\r\n\r\n";

		mg_obuf_put(&c->out, err, sizeof(err) - 1);
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

	if (mg_fanout_totals_view(s, &v)) {
		mg_client_reply(c, "(error \"out of memory\")");
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
		mg_client_reply(c, "%s", cmd.error);
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
			mg_client_reply(c, "OK");
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
	{
		static const char err[] = "HTTP/1.1 431 Request Header Fields Too Large\r\n"
			"Content-Length: 0\r\nConnection: close\r\n\r\n";

		mg_obuf_put(&c->out, err, sizeof(err) - 1);
		c->closing = true;
		break;
	}
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
	take_lines(s, c);
	mg_client_flush(s, c);
}
