/* SPDX-License-Identifier: GPL-2.0 */
/*
 * magnetd's server: one thread, one epoll loop, serving the protocol of
 * docs/protocol.md to every client. It takes the collection thread's
 * chunks from the chunk queue, filters and encodes each record once per
 * format, and appends it to every interested client's bounded output
 * queue; a client that cannot keep up loses records for itself only
 * (counted, told with a "D <n>" line) and is cut off when it takes
 * nothing for the client timeout. AGG tables are per client and fixed in
 * size.
 */
#ifndef MAGNET_DAEMON_SERVER_H
#define MAGNET_DAEMON_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <linux/types.h>

#include "config.h"

struct mg_collect;
struct mg_chunkq;
struct mg_tracewr;
struct mg_server;

/*
 * What the server reports on besides its own state. The collection
 * thread counts every read into totals, and queues a read for the server
 * thread only while *streaming (the server keeps it: a client subscribes
 * or aggregates), or when it holds TASK records (the names the server
 * replays to a new subscriber): see mg_server_wants.
 */
struct mg_server_env {
	struct mg_collect *collect;
	struct mg_chunkq *queue;
	struct mg_tracewr *trace;		/* NULL without --trace */
	struct mg_totals *totals;
	_Atomic bool *streaming;
	_Atomic __u64 *queue_dropped;		/* records the queue refused */
	_Atomic __u64 *queue_drop_chunks;	/* chunks it refused; NULL:
						 * none is ever refused */
};

/* Collection thread: count a read; whether the server thread wants it. */
bool mg_server_wants(const struct mg_server_env *env, const void *data,
		     size_t len, __u64 tasks);

/*
 * Called on the server thread for a signalfd event (the server reads the
 * siginfo); the handler may call mg_server_quit or mg_server_reconfigure.
 */
typedef void (*mg_server_signal_fn)(void *arg, int sig);

/* cfg is copied (allowlist and limits); listen_fd is a listening socket. */
int mg_server_create(const struct mg_config *cfg, int listen_fd,
		     const struct mg_server_env *env, struct mg_server **out);

/* The protocols a listener's clients speak. */
enum mg_listen_kind {
	MG_LISTEN_MAGNET,	/* docs/protocol.md */
	MG_LISTEN_PROMETHEUS,	/* GET /metrics, docs/prometheus.md */
	MG_LISTEN_SUPERMON,	/* mon's protocol, docs/supermon.md */
};

/*
 * Another listening socket, whose clients speak kind's protocol: same
 * allowlist, slots and timeouts as the client port. The server owns fd
 * from now on (also on failure).
 */
int mg_server_add_listener(struct mg_server *s, int fd,
			   enum mg_listen_kind kind);
void mg_server_free(struct mg_server *s);

/* Run until mg_server_quit; sigfd (-1: none) is watched for signals. */
int mg_server_run(struct mg_server *s, int sigfd, mg_server_signal_fn fn,
		  void *arg);
void mg_server_quit(struct mg_server *s);

/*
 * A reloaded configuration: allowlist, client limits, client queue and
 * timeout, agg_top apply at once (existing clients keep their queues).
 */
void mg_server_reconfigure(struct mg_server *s, const struct mg_config *cfg);

/*
 * Hand what is left in the chunk queue to the clients and flush their
 * output for up to timeout_ms (SIGTERM: subscribers get what was read).
 */
void mg_server_drain(struct mg_server *s, unsigned int timeout_ms);

/* Open the Unix socket for local clients at path (made 0666). */
int mg_server_listen_unix(const char *path, char *err, size_t errlen);

/* Open a listening TCP socket on addr (SO_REUSEADDR, non-blocking). */
int mg_server_listen(const struct sockaddr *addr, socklen_t len, char *err,
		     size_t errlen);

#endif /* MAGNET_DAEMON_SERVER_H */
