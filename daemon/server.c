// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's server: the event loop, the listeners and the timers; see
 * server.h and docs/protocol.md. One thread, one epoll set: listening
 * sockets (accepted here), the chunk queue (fanout.c hands the records
 * out), the clients (client.c: their queues and commands), a timerfd for
 * AGG reports and the timeouts, and the signalfd.
 *
 * Slots. Each listener has its own: max_clients on the client port,
 * prometheus_clients and supermon_clients on the monitors' listeners, so
 * clients of one cannot keep another's out. Of them, an unprivileged
 * client takes at most max_clients_per_user over every listener, counted
 * per local uid (the owner of the client's socket, peer.h) or per remote
 * address; all unprivileged users together never take more than the
 * listener's slots (a user namespace's many uids included). A privileged
 * client (client_privileged) is not counted per user and has
 * root_reserve slots on each listener beyond them. A refusal that needs
 * no uid is made before looking for one (the look reads /proc/net/tcp),
 * and refusals are logged at most once per RATELOG_NS.
 *
 * Timeouts (docs/magnetd.md, "Clients"). Progress is a byte received
 * from the client or a byte of output it took (mg_client_progress()). A
 * client whose queue reached its bound (it lost data, a report was
 * skipped, or replies are over the bound) and that takes no byte for
 * client_timeout is cut off. A client that makes no progress for
 * idle_timeout is closed, unless it is a SUBSCRIBE or AGG stream with
 * nothing waiting for it (a quiet stream cannot be told from one that
 * does not read: it keeps its slot, within its user's, and TCP keepalive
 * closes it if its host goes away). A request begun must be whole within
 * request_timeout: a line, or for HTTP the whole request from the
 * connection on, so that a byte now and then holds no slot; the clock
 * stands while the server does not read the client (its queue is full).
 *
 * Out of descriptors (EMFILE, ENFILE), the listeners are not watched for
 * ACCEPT_PAUSE_NS: the connections wait in the backlog, and the loop does
 * not spin on a listener accept() cannot empty.
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
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
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
/* Connections accepted per listener per turn of the loop. */
#define ACCEPT_BATCH		16
#define ACCEPT_PAUSE_NS		(250 * 1000000ULL)
/* Refusals and accept errors: one log line per this, with a count. */
#define RATELOG_NS		(10 * 1000000000ULL)
/* Descriptors besides the clients': rings, trace files, cgroups, logs. */
#define FD_MARGIN		128

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

/*
 * A Unix socket's client: the kernel says who it is (SO_PEERCRED: its
 * credentials when it connected) and which groups it had then
 * (SO_PEERGROUPS), which is what access_all and access_totals name.
 */
static int unix_peer(struct mg_server *s, int fd, struct owner *o,
		     enum mg_access *access, char *peer, size_t peerlen)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	size_t ngroups = 0;

	memset(o, 0, sizeof(*o));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen))
		return -errno;
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len))
		ngroups = len / sizeof(groups[0]);
	/* More groups than fit: judged by uid and gid alone (fewer rights). */
	o->local = true;
	o->uid = cred.uid;
	*access = mg_access_level(&s->rules, cred.uid, cred.gid, groups, ngroups);
	o->privileged = *access >= MG_ACCESS_TOTALS;
	snprintf(peer, peerlen, "unix pid %d", (int)cred.pid);
	return 0;
}

/*
 * Not counted per user, and has root_reserve on every listener: root,
 * and the clients access_all and access_totals name (the monitors), by
 * the uid the kernel gave (SO_PEERCRED, or /proc/net/tcp for a local TCP
 * client: slots only; what a TCP client may see needs AUTH).
 */
static bool tcp_privileged(const struct mg_server *s, uid_t uid)
{
	gid_t groups[64];
	size_t n = uid ? mg_access_groups_of(uid, groups, 64) : 0;

	return mg_access_level(&s->rules, uid, (gid_t)-1, groups, n) >=
	       MG_ACCESS_TOTALS;
}

static bool client_privileged(const struct owner *who)
{
	return who->local && who->privileged;
}

static bool same_owner(const struct owner *a, const struct owner *b)
{
	if (a->local != b->local)
		return false;
	return a->local ? a->uid == b->uid : !memcmp(a->addr, b->addr, 16);
}

/* A listener's slots (unprivileged clients'). */
static unsigned int slots_of(const struct mg_server *s,
			     enum mg_listen_kind kind)
{
	switch (kind) {
	case MG_LISTEN_PROMETHEUS:
		return s->cfg.prometheus_clients;
	case MG_LISTEN_SUPERMON:
		return s->cfg.supermon_clients;
	default:
		return s->cfg.max_clients;
	}
}

static unsigned int clients_of(const struct mg_server *s,
			       enum mg_listen_kind kind)
{
	unsigned int k, n = 0;

	for (k = 0; k < s->nclients; k++)
		n += s->clients[k]->kind == kind;
	return n;
}

/*
 * Why this owner may not have one more connection on a listener of kind,
 * whose used slots are taken (NULL: it may): what it is told.
 */
static const char *refusal(const struct mg_server *s, const struct owner *o,
			   enum mg_listen_kind kind, unsigned int used,
			   char *log, size_t loglen)
{
	bool priv = client_privileged(o);
	unsigned int k, mine = 0;

	if (used >= slots_of(s, kind) + (priv ? s->cfg.root_reserve : 0)) {
		snprintf(log, loglen, "%u clients already", used);
		return "too many clients";
	}
	if (priv)
		return NULL;
	for (k = 0; k < s->nclients; k++)
		mine += same_owner(&s->clients[k]->who, o);
	if (mine < s->cfg.max_clients_per_user)
		return NULL;
	snprintf(log, loglen, "%u clients of this %s already (max_clients_per_user)",
		 mine, o->local ? "user" : "address");
	return o->local ? "too many clients of this user" :
			  "too many clients from this address";
}

/* Whether to log now; *skipped: the lines not logged since the last. */
static bool ratelog(struct ratelog *r, unsigned long *skipped)
{
	__u64 now = mg_now_ns(CLOCK_MONOTONIC);

	if (r->next_ns && now < r->next_ns) {
		r->skipped++;
		return false;
	}
	*skipped = r->skipped;
	r->skipped = 0;
	r->next_ns = now + RATELOG_NS;
	return true;
}

/* Refused: counted, logged (rated), told why in its protocol, closed. */
static void refuse(struct mg_server *s, int fd, enum mg_listen_kind kind,
		   const char *peer, const char *why, const char *told)
{
	unsigned long skipped;
	char msg[256];
	int n = 0;

	s->refused++;
	if (ratelog(&s->refused_log, &skipped)) {
		if (skipped)
			mg_log(LOG_NOTICE, "refused %s: %s (%lu more refused in the %llu s before, not logged)",
			       peer, why, skipped, RATELOG_NS / 1000000000ULL);
		else
			mg_log(LOG_NOTICE, "refused %s: %s", peer, why);
	}
	if (told && kind == MG_LISTEN_PROMETHEUS)
		n = snprintf(msg, sizeof(msg), "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\nConnection: close\r\n\r\nmagnetd: %s\n",
			     strlen(told) + 10, told);
	else if (told && kind == MG_LISTEN_SUPERMON)
		n = snprintf(msg, sizeof(msg), "(error \"%s\")\n", told);
	else if (told)
		n = snprintf(msg, sizeof(msg), "ERR %s\n", told);
	/* Best effort: it is being closed anyway. */
	if (n > 0)
		(void)!send(fd, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

static void watch_listeners(struct mg_server *s, bool on)
{
	unsigned int i;

	for (i = 0; i < s->nlisteners; i++) {
		struct epoll_event ev = { .events = on ? EPOLLIN : 0,
					  .data.ptr = &s->listeners[i].src };

		epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->listeners[i].fd, &ev);
	}
}

/* accept() failed for want of descriptors: stop looking for a while. */
static void pause_accepting(struct mg_server *s, int err)
{
	unsigned long skipped;

	s->accept_paused_until = mg_now_ns(CLOCK_MONOTONIC) + ACCEPT_PAUSE_NS;
	watch_listeners(s, false);
	if (!ratelog(&s->accept_log, &skipped))
		return;
	if (skipped)
		mg_log(LOG_WARNING, "accept: %s: not accepting for %llu ms (%lu times more in the %llu s before; raise LimitNOFILE, or lower the client slots)",
		       strerror(err), ACCEPT_PAUSE_NS / 1000000ULL, skipped,
		       RATELOG_NS / 1000000000ULL);
	else
		mg_log(LOG_WARNING, "accept: %s: not accepting for %llu ms (raise LimitNOFILE, or lower the client slots)",
		       strerror(err), ACCEPT_PAUSE_NS / 1000000ULL);
}

/* Keepalive: a quiet connection whose host went away is closed. */
static void tune_socket(int fd)
{
	int one = 1, idle = 60, intvl = 10, cnt = 6;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

static void accept_clients(struct mg_server *s, const struct listener *l)
{
	unsigned int turn;

	for (turn = 0; turn < ACCEPT_BATCH; turn++) {
		struct sockaddr_storage ss = { 0 };	/* accept4() fills it */
		socklen_t sl = sizeof(ss);
		struct epoll_event ev;
		struct client *c;
		struct owner who;
		enum mg_access access = MG_ACCESS_NONE;
		bool must_auth = false;
		const char *no;
		unsigned int used;
		char peer[96], why[96];
		int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			unsigned long skipped;

			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				pause_accepting(s, errno);
			else if (errno != EAGAIN && errno != EWOULDBLOCK &&
				 ratelog(&s->accept_log, &skipped))
				mg_log(LOG_WARNING, "accept: %s", strerror(errno));
			return;
		}
		if (l->unix_sock) {
			if (unix_peer(s, fd, &who, &access, peer, sizeof(peer))) {
				close(fd);
				continue;
			}
		} else {
			peer_name(&ss, peer, sizeof(peer));
			if (!allowed(s, (struct sockaddr *)&ss)) {
				refuse(s, fd, l->kind, peer, "not in the allowlist", NULL);
				continue;
			}
		}
		/* Full even for a privileged client: whose it is is not looked for. */
		used = clients_of(s, l->kind);
		if (used >= slots_of(s, l->kind) + s->cfg.root_reserve) {
			snprintf(why, sizeof(why), "%u clients already", used);
			refuse(s, fd, l->kind, peer, why, "too many clients");
			continue;
		}
		if (!l->unix_sock) {
			owner_of(fd, &ss, &who);
			if (who.local)
				who.privileged = tcp_privileged(s, who.uid);
			/*
			 * TCP proves no identity (the owner found above only
			 * counts slots): anonymous until AUTH, and from another
			 * host nothing but AUTH. The monitors' listeners serve
			 * the totals only, to whoever the allowlist lets in.
			 */
			if (l->kind != MG_LISTEN_MAGNET)
				access = MG_ACCESS_TOTALS;
			else
				must_auth = !mg_sockaddr_is_loopback((struct sockaddr *)&ss);
		}
		if (who.local) {
			size_t l = strlen(peer);

			snprintf(peer + l, sizeof(peer) - l, " uid %u",
				 (unsigned int)who.uid);
		}
		no = refusal(s, &who, l->kind, used, why, sizeof(why));
		if (no) {
			refuse(s, fd, l->kind, peer, why, no);
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
		c->access = access;
		c->uid_known = l->unix_sock;
		c->uid = who.uid;
		c->must_auth = must_auth;
		c->kind = l->kind;
		mg_supermon_client_init(&c->sm);
		c->out.bound = s->cfg.client_queue;
		c->active_ns = mg_now_ns(CLOCK_MONOTONIC);
		snprintf(c->peer, sizeof(c->peer), "%s", peer);
		mg_linebuf_init(&c->lb);
		c->reading = true;
		/* HTTP: the whole request within request_timeout of now. */
		if (c->kind == MG_LISTEN_PROMETHEUS)
			c->request_since = c->active_ns;
		ev.events = EPOLLIN;
		ev.data.ptr = &c->src;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			free(c);
			continue;
		}
		if (!l->unix_sock) {
			tune_socket(fd);
		} else {
			/*
			 * A Unix stream socket's send buffer is the whole pipe
			 * (no receive buffer, no window): as loopback TCP's
			 * grows, so a subscriber keeps up as well over both.
			 */
			int sndbuf = s->cfg.unix_sndbuf;	/* root may pass wmem_max */

			if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)))
				setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
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
	__u64 request = s->cfg.request_timeout_ms * 1000000ULL;
	unsigned int k;

	if (s->accept_paused_until && now >= s->accept_paused_until) {
		s->accept_paused_until = 0;
		watch_listeners(s, true);
	}
	earliest(&next, s->accept_paused_until);

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
		 * A request begun and not whole in time. Received lines that
		 * wait for room in the queue, and the rest of a line left in
		 * the socket while the queue is full (not read), are the
		 * server's delay, not the client's: the clock starts again
		 * once the server reads (update_events()), and client_timeout
		 * judges a full queue meanwhile.
		 */
		if (request && c->request_since && !c->in_len && c->reading &&
		    now - c->request_since >= request) {
			static const char late[] = "HTTP/1.1 408 Request Timeout\r\n"
				"Content-Length: 0\r\nConnection: close\r\n\r\n";

			if (c->kind == MG_LISTEN_PROMETHEUS)
				(void)!send(c->fd, late, sizeof(late) - 1,
					    MSG_NOSIGNAL | MSG_DONTWAIT);
			snprintf(why, sizeof(why), "cut off: request not whole within %u ms",
				 s->cfg.request_timeout_ms);
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
		if (request && c->request_since && !c->in_len && c->reading)
			earliest(&next, c->request_since + request);
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

/*
 * The records' queue more than half full: its chunks before the next
 * client's turn. A request left for later only waits; a chunk the queue
 * cannot take is lost, so a flood of requests must not hold them up.
 */
static void drain_if_filling(struct mg_server *s)
{
	if (mg_chunkq_used(s->env.queue) > mg_chunkq_size(s->env.queue) / 2)
		mg_fanout_drain(s, BATCH_CHUNKS);
}

/* The next turn of each client with lines left; true if more wait. */
static bool continue_turns(struct mg_server *s)
{
	bool more = false;
	unsigned int k;

	/* Backwards: closing moves the last client into this place. */
	for (k = s->nclients; k-- > 0;) {
		more |= mg_client_continue(s, s->clients[k]);
		drain_if_filling(s);
	}
	return more;
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
		/* Lines left by a client's turn: the next turn, soon. */
		if (continue_turns(s))
			ms = 0;
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
				drain_if_filling(s);
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

/*
 * access_all and access_totals as the user and group files say now (the
 * configuration checked the names it was given; the defaults may name a
 * group or user this node has not: they grant nothing). Clients keep the
 * level they were given when they connected.
 */
static void set_rules(struct mg_server *s, const struct mg_config *cfg)
{
	char err[256];

	if (mg_access_parse(cfg->access_all, true, &s->rules.all, err, sizeof(err)))
		mg_log(LOG_WARNING, "access_all: %s: nobody but root sees all", err);
	if (mg_access_parse(cfg->access_totals, true, &s->rules.totals, err, sizeof(err)))
		mg_log(LOG_WARNING, "access_totals: %s", err);
}

/*
 * The descriptors the slots may take: the soft limit is raised to them
 * if the hard one allows, else a warning, rather than EMFILE unannounced.
 */
static void check_fd_limit(const struct mg_server *s)
{
	const struct mg_config *c = &s->cfg;
	rlim_t need = (rlim_t)c->max_clients + c->prometheus_clients +
		      c->supermon_clients + MAX_LISTENERS * c->root_reserve +
		      FD_MARGIN + 8 * mg_collect_ncpus(s->env.collect);
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need)
		return;
	if (rl.rlim_max >= need) {
		rl.rlim_cur = need;
		if (!setrlimit(RLIMIT_NOFILE, &rl))
			return;
	}
	mg_log(LOG_WARNING, "%llu file descriptors allowed (LimitNOFILE, ulimit -n), %llu wanted for the client slots: connections will wait when they run out",
	       (unsigned long long)rl.rlim_max, (unsigned long long)need);
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
	s->cfg.prometheus_clients = cfg->prometheus_clients;
	s->cfg.supermon_clients = cfg->supermon_clients;
	s->cfg.request_timeout_ms = cfg->request_timeout_ms;
	s->cfg.agg_top = cfg->agg_top;
	set_rules(s, cfg);
	check_fd_limit(s);
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

/*
 * The Unix socket local clients connect to: every user may connect (the
 * socket is 0666), and each is served what its uid may see. Its directory
 * is made if missing (0755); a stale socket of an earlier run is
 * replaced, a live one or anything else at path is not.
 */
int mg_server_listen_unix(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[sizeof(sun.sun_path)], *slash;
	struct stat st;
	int fd, e;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "%s: path too long for a socket", path);
		return -ENAMETOOLONG;
	}
	strcpy(sun.sun_path, path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (!mkdir(dir, 0755)) {
			chmod(dir, 0755);	/* every user reaches the socket: not umask's */
		} else if (errno != EEXIST) {
			e = errno;
			snprintf(err, errlen, "cannot make %s: %s", dir, strerror(e));
			return -e;
		}
	}
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket", path);
			return -EEXIST;
		}
		/* Someone answers there: a running magnetd's, not to be taken. */
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && !connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
			close(fd);
			snprintf(err, errlen, "%s: another magnetd serves there", path);
			return -EADDRINUSE;
		}
		if (fd >= 0)
			close(fd);
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "socket: %s", strerror(e));
		return -e;
	}
	/* Who may see what is decided per client, not by the file's mode. */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) || chmod(path, 0666) ||
	    listen(fd, 128)) {
		e = errno;
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

int mg_server_add_listener(struct mg_server *s, int fd,
			   enum mg_listen_kind kind)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct sockaddr_storage ss = { 0 };
	socklen_t sl = sizeof(ss);
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
	l->unix_sock = !getsockname(fd, (struct sockaddr *)&ss, &sl) &&
		       ss.ss_family == AF_UNIX;
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
	set_rules(s, cfg);
	mg_access_key_init();
	s->env = *env;
	s->epfd = s->timer_fd = -1;
	s->start_ns = mg_now_ns(CLOCK_MONOTONIC);
	s->maxrecs = maxrecs;
	s->recs = calloc(maxrecs, sizeof(*s->recs));
	s->pick = calloc(maxrecs, sizeof(*s->pick));
	s->pick_idx = calloc(maxrecs, sizeof(*s->pick_idx));
	s->json_lines[0] = calloc(maxrecs, sizeof(*s->json_lines[0]));
	s->json_lines[1] = calloc(maxrecs, sizeof(*s->json_lines[1]));
	s->scrubbed = malloc(MAGNET_RECORD_MAX);
	s->owners = mg_owners_new();
	if (!s->recs || !s->pick || !s->pick_idx || !s->json_lines[0] ||
	    !s->json_lines[1] || !s->scrubbed || !s->owners)
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
	check_fd_limit(s);
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
	mg_totals_view_free(&s->mon_view);
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
	free(s->pick_idx);
	free(s->json_lines[0]);
	free(s->json_lines[1]);
	free(s->scrubbed);
	mg_owners_free(s->owners);
	free(s);
}
