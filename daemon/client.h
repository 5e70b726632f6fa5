/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One connection of magnetd's server: its bounded output queue, its
 * input lines, its protocol's commands (client.c).
 */
#ifndef MAGNET_DAEMON_CLIENT_H
#define MAGNET_DAEMON_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "access.h"
#include "agg.h"
#include "netview.h"
#include "proto.h"
#include "server.h"
#include "supermon.h"

#define RECV_BYTES		4096

enum { TAG_LISTEN = 1, TAG_QUEUE, TAG_TIMER, TAG_SIGNAL, TAG_CLIENT, TAG_CGMAP };

/* What an epoll event points to: its tag first. */
struct ev_src {
	int tag;
};

struct mg_server;
struct mg_expr;

struct obuf {
	char *buf;
	size_t head, len, cap;	/* bytes buf[head, head + len) wait */
	size_t bound;		/* client_queue: grow past it only as needed */
};

/* Whom a connection counts against for max_clients_per_user. */
struct owner {
	bool local;		/* uid known: a socket of this host */
	bool privileged;	/* root, access_all, access_totals (server.c) */
	uid_t uid;
	unsigned char addr[16];	/* else the peer's address (IPv4 mapped) */
};

/* A growable buffer behind a FILE, for the one print path (lib/print.c). */
struct membuf {
	char *buf;
	size_t len, cap;
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
	/*
	 * What it may see (access.h): from SO_PEERCRED on the Unix socket,
	 * or AUTH; a TCP client is anonymous (NONE) until then, and one from
	 * another host may send nothing else first (must_auth).
	 */
	enum mg_access access;
	bool uid_known;
	uid_t uid;
	bool must_auth;
	bool auth_tried;	/* AUTH: one try per connection */
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
	__u64 request_since;	/* an unfinished request began (0: none) */

	/* SUBSCRIBE */
	struct mg_expr *filter;
	bool subscribed;
	enum mg_format format;
	__u64 pending_drop;	/* records dropped, not told yet */
	__u64 dropped;		/* all of them */

	/* AGG: a table by agg_key, or for AGG net the traffic view */
	struct mg_agg *agg;
	struct mg_netview *net;
	enum mg_agg_key agg_key;
	__u64 every_ns, agg_start, agg_next;
	__u64 agg_dropped;	/* daemon queue drops in this interval */
	__u64 agg_skipped;	/* reports not sent since the last one sent */

	/* Supermon: the client's category mask. */
	struct mg_supermon_client sm;
	/* Prometheus: the request line, answered at the blank line. */
	char http_line[512];
	bool http_line_seen;
	unsigned int http_headers;	/* header lines so far */
	size_t http_bytes;		/* bytes of the request so far */
};

static inline bool mg_client_aggregates(const struct client *c)
{
	return c->agg || c->net;
}

/* fopencookie's write for a struct membuf. */
ssize_t mg_membuf_write(void *cookie, const char *data, size_t n);
/* One word of the protocol: bytes outside '!'..'~' and '%' as %XX. */
size_t mg_escape_word(char *dst, size_t size, const char *src);

/* Room left in c's queue before its bound. */
size_t mg_client_room(const struct mg_server *s, const struct client *c);
int mg_obuf_put(struct obuf *o, const void *data, size_t n);
/* A reply or a table line: always queued. */
__attribute__((format(printf, 2, 3)))
void mg_client_reply(struct client *c, const char *fmt, ...);
/* Before data: the "D <n>" line, if due; false if it did not fit. */
bool mg_client_tell_drops(struct mg_server *s, struct client *c);
/* Took output since last looked? Also: is output waiting for it. */
bool mg_client_progress(struct client *c, __u64 now);
void mg_client_drop(struct mg_server *s, struct client *c, __u64 records);
/* Data (never a reply): queued whole, or dropped and counted. */
bool mg_client_put_data(struct mg_server *s, struct client *c,
			const void *data, size_t n, __u64 records);
/*
 * A frame of a stream, its header then its data, that fits the queue:
 * sent at once when nothing waits before it, so that what the socket
 * takes is never copied into the queue; the rest is queued.
 */
void mg_client_put_frame(struct client *c, const void *hdr, size_t hl,
			 const void *data, size_t len);

void mg_client_close(struct mg_server *s, struct client *c, const char *why);
/* Free the clients closed during this epoll batch. */
void mg_client_bury_dead(struct mg_server *s);
/* Write what the socket takes; false if the client was closed. */
bool mg_client_flush(struct mg_server *s, struct client *c);
/* Receive, and handle a turn of lines while the queue has room. */
void mg_client_read(struct mg_server *s, struct client *c);
/*
 * The next turn of c if its received lines wait (its last turn's budget
 * ran out); true if some still wait.
 */
bool mg_client_continue(struct mg_server *s, struct client *c);

#endif /* MAGNET_DAEMON_CLIENT_H */
