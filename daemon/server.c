// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's server: the event loop, the listeners and the timers; see
 * server.h and docs/protocol.md. One thread, one epoll set: listening
 * sockets (accepted here), the chunk queue (fanout.c hands the records
 * out), the clients (client.c: their queues and commands), a timerfd for
 * AGG reports and the timeouts, and the signalfd.
 *
 * Slots. max_clients connections, of which max_clients_per_user per local
 * uid (the owner of the client's socket, peer.h) or per remote address;
 * root is not counted per user and has root_reserve slots beyond
 * max_clients.
 *
 * Timeouts (docs/magnetd.md, "Clients"). Progress is a byte received
 * from the client or a byte of output it took (mg_client_progress()). A
 * client whose queue reached its bound (it lost data, a report was
 * skipped, or replies are over the bound) and that takes no byte for
 * client_timeout is cut off. A client that makes no progress for
 * idle_timeout is closed, unless it is a SUBSCRIBE or AGG stream with
 * nothing waiting for it (a quiet stream cannot be told from one that
 * does not read: it keeps its slot).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <netinet/tcp.h>

#include "chunkq.h"
#include "collect.h"
#include "peer.h"
#include "sensor.h"
#include "client.h"
#include "fanout.h"
#include "log.h"
#include "server_int.h"

#define MAX_EVENTS		64
/* Chunks handled between two looks at the sockets and timers. */
#define BATCH_CHUNKS		16
/*
 * With no subscriber and no aggregating client, the collection thread
 * queues only the reads that hold TASK records (the totals it counts
 * itself), and those only keep the names a new subscriber is replayed. So
 * a chunk that wakes the server waits up to GATHER_NS, or until
 * GATHER_BYTES are queued, for the ones after it: a few wakeups a second
 * while tasks come and go in bulk, not one per read.
 */
#define GATHER_NS		(100 * 1000000ULL)
#define GATHER_BYTES		((size_t)1 << 20)

static struct ev_src src_queue = { TAG_QUEUE }, src_timer = { TAG_TIMER },
	src_signal = { TAG_SIGNAL };

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
		struct sockaddr_storage ss = { 0 };	/* accept4() fills it */
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

static void earliest(__u64 *next, __u64 due)
{
	if (due && (!*next || due < *next))
		*next = due;
}

/* Bytes the client sent that the server has not read yet. */
static bool input_waits(const struct client *c)
{
	int n = 0;

	return !ioctl(c->fd, FIONREAD, &n) && n > 0;
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
		bool stream = c->subscribed || mg_client_aggregates(c);
		bool waits = mg_client_progress(c, now);
		char why[160];

		if (c->full_since && now - c->full_since >= timeout) {
			snprintf(why, sizeof(why), "cut off: queue full, took no byte for %u ms (%llu records dropped for it)",
				 s->cfg.client_timeout_ms,
				 (unsigned long long)c->dropped);
			s->cut_off++;
			mg_client_close(s, c, why);
			continue;
		}
		/*
		 * A command already in the socket (a busy loop has not read
		 * it yet) is not idleness.
		 */
		if (idle && !waits && now - c->active_ns >= idle &&
		    input_waits(c))
			c->active_ns = now;
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
			mg_client_close(s, c, why);
			continue;
		}
		if (mg_client_aggregates(c) && c->agg_next <= now) {
			mg_fanout_agg_report(s, c, now);
			if (!mg_client_flush(s, c))
				continue;
		}
		/*
		 * Taking is seen when looked at: at a deadline, progress
		 * since the last look resets the clock rather than cut.
		 */
		if (mg_client_aggregates(c))
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

static void flush_all(struct mg_server *s)
{
	unsigned int k;

	for (k = s->nclients; k-- > 0;)
		if (s->clients[k]->out.len || s->clients[k]->pending_drop)
			mg_client_flush(s, s->clients[k]);
}

/* Only TASK records come now (mg_server_wants): chunks may wait. */
static bool totals_only(const struct mg_server *s)
{
	return !s->nsubs && !s->naggs;
}

bool mg_server_wants(const struct mg_server_env *env, const void *data,
		     size_t len, __u64 tasks)
{
	mg_totals_add_read(env->totals, data, len);
	return tasks || atomic_load_explicit(env->streaming, memory_order_acquire);
}

/*
 * A client began or ended a subscription or an aggregation. Told before
 * its OK goes out, so every read after the OK comes to the server.
 */
void mg_server_streams(struct mg_server *s)
{
	atomic_store_explicit(s->env.streaming, !totals_only(s),
			      memory_order_release);
}

/*
 * Whether to leave the queued chunks for now: a batch began (the first
 * chunk after the queue was empty) less than GATHER_NS ago, and is small.
 */
static bool gathering(struct mg_server *s)
{
	__u64 now;

	if (!totals_only(s) || !mg_chunkq_used(s->env.queue)) {
		s->gather_until = 0;
		return false;
	}
	now = mg_now_ns(CLOCK_MONOTONIC);
	if (!s->gather_until)
		s->gather_until = now + GATHER_NS;
	return now < s->gather_until &&
	       mg_chunkq_used(s->env.queue) < GATHER_BYTES;
}

/* epoll's timeout while gathering: the batch's end, or 0 if it is full. */
static int gather_ms(struct mg_server *s)
{
	__u64 now = mg_now_ns(CLOCK_MONOTONIC);

	if (!mg_chunkq_arm_batch(s->env.queue, GATHER_BYTES) ||
	    now >= s->gather_until)
		return 0;
	return (int)((s->gather_until - now + 999999) / 1000000);
}

int mg_server_run(struct mg_server *s, int sigfd, mg_server_signal_fn fn,
		  void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &src_signal };

	if (sigfd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, sigfd, &ev))
		return -errno;
	while (!s->quit) {
		struct epoll_event evs[MAX_EVENTS];
		int n, i, ms;

		if (gathering(s)) {
			ms = gather_ms(s);
		} else {
			/* Never sleep with chunks queued; look at the sockets anyway. */
			bool more = mg_fanout_drain(s, BATCH_CHUNKS);

			if (!more)
				s->gather_until = 0;
			ms = more || !mg_chunkq_arm(s->env.queue) ? 0 : -1;
		}
		flush_all(s);
		arm_timer(s, timers(s));
		n = epoll_wait(s->epfd, evs, MAX_EVENTS, ms);
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
			case TAG_CGMAP:
				mg_cgmap_poll(s->cgmap);
				break;
			case TAG_CLIENT:
				c = (struct client *)src;
				if (c->dead)
					break;	/* closed earlier in this batch */
				if (evs[i].events & (EPOLLERR | EPOLLHUP) &&
				    !(evs[i].events & EPOLLIN)) {
					mg_client_close(s, c, NULL);
					break;
				}
				if (evs[i].events & EPOLLOUT && !mg_client_flush(s, c))
					break;
				if (evs[i].events & EPOLLIN)
					mg_client_read(s, c);
				break;
			default:
				break;	/* TAG_QUEUE: drained at the top */
			}
		}
		mg_client_bury_dead(s);
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

	while (mg_fanout_drain(s, BATCH_CHUNKS))
		flush_all(s);
	for (;;) {
		bool pending = false;

		flush_all(s);
		mg_client_bury_dead(s);
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

	if (!env->totals || !env->streaming)
		return -EINVAL;
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
					.write = mg_membuf_write });
	s->scratch_f = fopencookie(&s->scratch, "w", (cookie_io_functions_t){
					.write = mg_membuf_write });
	if (!s->json_f || !s->scratch_f)
		goto err;
	s->totals = env->totals;
	ret = mg_cgmap_open(NULL, MG_CGMAP_INOTIFY, &s->cgmap);
	if (ret)
		goto err;
	s->tasks = mg_tasks_new();
	s->rec_task = calloc(maxrecs, sizeof(*s->rec_task));
	s->task_copy = calloc(maxrecs, sizeof(*s->task_copy));
	if (!s->tasks || !s->rec_task || !s->task_copy) {
		ret = -ENOMEM;
		goto err;
	}
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
	/* cgroups made are mapped at once, before a short job is removed. */
	s->cgmap_src.tag = TAG_CGMAP;
	ev.data.ptr = &s->cgmap_src;
	if (mg_cgmap_fd(s->cgmap) >= 0 &&
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, mg_cgmap_fd(s->cgmap), &ev))
		goto err_errno;
	s->now = s->start_ns;
	mg_fanout_refresh_probes(s, true);
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
		mg_client_close(s, s->clients[s->nclients - 1], NULL);
	mg_client_bury_dead(s);
	if (s->json_f)
		fclose(s->json_f);
	free(s->json.buf);
	if (s->scratch_f)
		fclose(s->scratch_f);
	free(s->scratch.buf);
	while (s->nlisteners)
		close(s->listeners[--s->nlisteners].fd);
	mg_cgmap_free(s->cgmap);
	mg_tasks_free(s->tasks);
	free(s->rec_task);
	free(s->task_copy);
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
