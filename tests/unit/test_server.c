// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/server.c on the host, without the module: a real server thread on
 * 127.0.0.1, fed fabricated records through the chunk queue the
 * collection thread would fill (collect.h is stubbed below), and real
 * client sockets. What the VM test (tests/vm/t-31-magnetd-slots.sh)
 * checks against a real magnetd, here fast and under ASan:
 *
 * - an idle client is closed after idle_timeout; one that sends commands,
 *   a SUBSCRIBE stream and an AGG stream that read are not;
 * - a client that pipelines commands and reads nothing is cut off after
 *   client_timeout, and the server's heap stays within the documented
 *   bound (client_queue plus one reply per client) while such clients
 *   wait;
 * - pipelined commands read slowly get every reply, in order: input that
 *   waits for room in the output queue is kept, not lost;
 * - an AGG client that does not read: its skipped reports are dropped
 *   records, told by a D line and skipped= in the next report, and it is
 *   cut off after client_timeout;
 * - a subscriber that reads nothing on the Unix socket is cut off
 *   client_timeout after its first drop, while its send buffer still
 *   takes what the server writes;
 * - a stream whose output waits (its queue not full) and that takes
 *   nothing is cut off after idle_timeout; one that reads stays, and so
 *   does a subscription that is sent nothing;
 * - max_clients_per_user per uid (other users made with setresuid when
 *   run as root), root_reserve for root only;
 * - records of threads that never existed in /proc are attributed
 *   exactly: job by the header's cgroup, name by the TASK records;
 * - the Prometheus and Supermon listeners have slots of their own, and
 *   root a reserve on each: many users filling the client port leave
 *   them working;
 * - request_timeout: HTTP requests and lines sent a byte at a time are
 *   cut off; too many HTTP headers get 431;
 * - floods of cheap requests (newlines, samples, AGG net) beside 4096
 *   jobs leave another client's HELLO answered at once;
 * - out of descriptors, the server does not spin on its listener;
 * - Slurm's jobs, in cgroups made as slurmd makes them on the host's
 *   cgroup2 mount: a step's user is never root (slurmstepd's) while its
 *   user is unknown; a task the map cannot name yet (no handles, its
 *   directory unreadable) is asked again, and joins its step, user and
 *   all, once it can be; a task shown alone (its step had no room in a
 *   full job table) ends its series when it joins: the step's Prometheus
 *   counter never counts again what was shown under the task's.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "chunkq.h"
#include "collect.h"
#include "config.h"
#include "record.h"
#include "sensor.h"
#include "server.h"
#include "totals.h"
#include "testutil.h"

#define NPROBES		60	/* a PROBES reply of about 4 KiB */

/* ---- collect.h, stubbed: two CPUs, the module up ------------------------ */

struct mg_collect {
	int unused;
};

bool mg_collect_up(const struct mg_collect *c)
{
	return true;
}

static _Atomic unsigned int stub_reloads;

unsigned int mg_collect_reloads(const struct mg_collect *c)
{
	return atomic_load(&stub_reloads);
}

unsigned int mg_collect_ncpus(const struct mg_collect *c)
{
	return 2;
}

void mg_collect_version(struct mg_collect *c, struct mg_sensor_version *v)
{
	memset(v, 0, sizeof(*v));
	strcpy(v->release, "test");
	strcpy(v->clock, "mono");
	v->format = MAGNET_FORMAT_VERSION;
	v->cpus = 2;
}

void mg_collect_cpu_stats(struct mg_collect *c, struct mg_collect_cpu *out)
{
	memset(out, 0, 2 * sizeof(*out));
}

void mg_collect_rings(const struct mg_collect *c, unsigned long *size, unsigned int *grown)
{
	*size = 4 << 20;
	*grown = 1;
}

/* ---- the server, on a thread of its own --------------------------------- */

static struct {
	struct mg_config cfg;
	struct mg_collect collect;
	struct mg_chunkq *queue;
	_Atomic __u64 queue_dropped, queue_drop_chunks;
	struct mg_totals *totals;
	_Atomic bool streaming;
	struct mg_server_env env;
	struct mg_server *s;
	int lfd, sig[2];
	unsigned int port, prom, mon;	/* the listeners' ports */
	char dir[64];
	char sock[96];	/* the Unix socket */
	pthread_t thread;
	bool running;
} fx;

static void on_signal(void *arg, int sig)
{
	mg_server_quit(arg);
}

static void *server_main(void *arg)
{
	mg_server_run(fx.s, fx.sig[0], on_signal, fx.s);
	return NULL;
}

/* Defaults of the tests; each changes what it tests, then calls start(). */
static void setup(void)
{
	mg_config_defaults(&fx.cfg);
	fx.cfg.client_queue = 64 * 1024;
	fx.cfg.client_timeout_ms = 5000;
	fx.cfg.idle_timeout_ms = 0;
	fx.cfg.read_buffer = 64 * 1024;
	fx.cfg.agg_top = 65536;
}

/* A monitor's listener on 127.0.0.1 (the server owns it); its port. */
static unsigned int add_listener(enum mg_listen_kind kind)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	char err[256];
	int fd = mg_server_listen((struct sockaddr *)&sin, sizeof(sin), err,
				  sizeof(err));

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	ck_assert_int_eq(mg_server_add_listener(fx.s, fd, kind), 0);
	return ntohs(sin.sin_port);
}

static void start(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	char err[256], path[128];
	FILE *f;
	int i;

	strcpy(fx.dir, "/tmp/magnet-test-server.XXXXXX");
	ck_assert_ptr_ne(mkdtemp(fx.dir), NULL);
	chmod(fx.dir, 0755);	/* other uids connect to the socket in it */
	snprintf(path, sizeof(path), "%s/probes", fx.dir);
	f = fopen(path, "w");
	ck_assert_ptr_ne(f, NULL);
	/*
	 * The last two: a kprobe and a kretprobe on one function. Probe
	 * 16 + i missed i hits: TOTALS sums them, 0 + 1 + ... + 59.
	 */
	for (i = 0; i < NPROBES - 2; i++)
		fprintf(f, "%d\tkprobe\tsome_kernel_function_%d\t3\t%d\t%d\t-\tsome_kernel_function_%d\n",
			16 + i, i, 1000 * i, i, i);
	fprintf(f, "%d\tkprobe\tshared_fn\t3\t%d\t%d\t-\tshared_fn\n", 16 + i, 1000 * i, i);
	i++;
	fprintf(f, "%d\tkretprobe\tshared_fn\t3\t%d\t%d\t-\tshared_fn%%return\n",
		16 + i, 1000 * i, i);
	fclose(f);
	snprintf(fx.cfg.dir, sizeof(fx.cfg.dir), "%s", fx.dir);

	fx.lfd = mg_server_listen((struct sockaddr *)&sin, sizeof(sin), err,
				  sizeof(err));
	ck_assert_int_ge(fx.lfd, 0);
	ck_assert_int_eq(getsockname(fx.lfd, (struct sockaddr *)&sin, &len), 0);
	fx.port = ntohs(sin.sin_port);
	ck_assert_int_eq(mg_chunkq_create(4 << 20, &fx.queue), 0);
	ck_assert_int_eq(pipe2(fx.sig, O_NONBLOCK | O_CLOEXEC), 0);
	ck_assert_int_eq(mg_totals_create(fx.cfg.export_jobs, &fx.totals), 0);
	fx.env = (struct mg_server_env){
		.collect = &fx.collect,
		.queue = fx.queue,
		.totals = fx.totals,
		.streaming = &fx.streaming,
		.queue_dropped = &fx.queue_dropped,
		.queue_drop_chunks = &fx.queue_drop_chunks,
	};
	ck_assert_int_eq(mg_server_create(&fx.cfg, fx.lfd, &fx.env, &fx.s), 0);
	snprintf(fx.sock, sizeof(fx.sock), "%s/magnetd.sock", fx.dir);
	i = mg_server_listen_unix(fx.sock, err, sizeof(err));
	ck_assert_msg(i >= 0, "%s", err);
	ck_assert_int_eq(mg_server_add_listener(fx.s, i, MG_LISTEN_MAGNET), 0);
	fx.prom = add_listener(MG_LISTEN_PROMETHEUS);
	fx.mon = add_listener(MG_LISTEN_SUPERMON);
	ck_assert_int_eq(pthread_create(&fx.thread, NULL, server_main, NULL), 0);
	fx.running = true;
}

static void teardown(void)
{
	char path[128];

	if (fx.running) {
		struct signalfd_siginfo si = { .ssi_signo = SIGTERM };

		ck_assert_int_eq(write(fx.sig[1], &si, sizeof(si)), sizeof(si));
		pthread_join(fx.thread, NULL);
		mg_server_free(fx.s);
		mg_chunkq_free(fx.queue);
		mg_totals_free(fx.totals);
		close(fx.lfd);
		close(fx.sig[0]);
		close(fx.sig[1]);
		fx.running = false;
	}
	if (fx.dir[0]) {
		snprintf(path, sizeof(path), "%s/probes", fx.dir);
		unlink(path);
		unlink(fx.sock);
		rmdir(fx.dir);
		fx.dir[0] = '\0';
	}
}

/*
 * A read, handed on as magnetd's collection thread does (magnetd.c, sink):
 * counted in the totals, queued if the server wants it. 0, or the queue's
 * refusal.
 */
static int feed(__u32 cpu, const void *data, size_t len)
{
	const struct magnet_record *r;
	__u64 tasks = 0;
	size_t off = 0;

	while ((r = mg_record_step(data, len, &off)))
		tasks += mg_record_is_task(r);
	if (!mg_server_wants(&fx.env, data, len, tasks))
		return 0;
	return mg_chunkq_put(fx.queue, cpu, data, len);
}

/* ---- clients ------------------------------------------------------------ */

static __u64 now_ms(void)
{
	return mg_now_ns(CLOCK_MONOTONIC) / 1000000;
}

struct cl {
	int fd;
	char buf[1 << 16];
	size_t head, len;	/* buf[head, head + len) unread */
};

/*
 * A connection to the server. A small rcvbuf is a client that reads
 * little; with it the MSS is small too, and so the server's send buffer
 * (sized by it): a client that stops reading fills the server's queue
 * after a few KiB, not after the megabytes loopback buffers take.
 */
/*
 * A client on the Unix socket, as euid uid (SO_PEERCRED gives the euid
 * at connect): root's sees everything, as the tests below expect.
 */
static int connect_unix_as(uid_t uid)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", fx.sock);
	if (uid)
		ck_assert_int_eq(setresuid(-1, uid, -1), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	if (uid)
		ck_assert_int_eq(setresuid(-1, 0, -1), 0);
	return fd;
}

/* rcvbuf 0: root on the Unix socket; else TCP (anonymous) with that buffer. */
static int connect_fd(int rcvbuf)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(fx.port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd;

	if (!rcvbuf)
		return connect_unix_as(0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	if (rcvbuf) {
		int mss = 536;

		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
		setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof(mss));
	}
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

/*
 * Root on the Unix socket, reading through a small buffer: a client that
 * may see records and soon stops taking them (Unix sockets have no
 * receive buffer of their own: the server's send buffer is the one).
 */
static int connect_fd_small(int bytes)
{
	int fd = connect_unix_as(0);

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
	return fd;
}

static struct cl *cl_new(int fd)
{
	struct cl *c = calloc(1, sizeof(*c));

	ck_assert_ptr_ne(c, NULL);
	c->fd = fd;
	return c;
}

static void cl_free(struct cl *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static void cl_send(struct cl *c, const char *text)
{
	size_t len = strlen(text);

	ck_assert_int_eq(send(c->fd, text, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* The next line (without '\n') into out; false at EOF, reset or timeout. */
static bool cl_line(struct cl *c, char *out, size_t size, int timeout_ms)
{
	__u64 end = now_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(c->buf + c->head, '\n', c->len);
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		ssize_t n;
		int left;

		if (nl) {
			size_t l = nl - (c->buf + c->head);

			ck_assert_uint_lt(l, size);
			memcpy(out, c->buf + c->head, l);
			out[l] = '\0';
			c->head += l + 1;
			c->len -= l + 1;
			return true;
		}
		memmove(c->buf, c->buf + c->head, c->len);
		c->head = 0;
		ck_assert_uint_lt(c->len, sizeof(c->buf));
		/* Past the end (or timeout 0): one look that does not wait. */
		left = (int)(end - now_ms());
		if (poll(&p, 1, left > 0 ? left : 0) <= 0)
			return false;
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
		if (n <= 0)
			return false;
		c->len += n;
	}
}

/* Send a command, expect a reply starting with want. */
static void cl_expect(struct cl *c, const char *cmd, const char *want)
{
	char line[4200];

	cl_send(c, cmd);
	ck_assert_msg(cl_line(c, line, sizeof(line), 5000), "no reply to %s", cmd);
	ck_assert_msg(!strncmp(line, want, strlen(want)), "%s: got '%s', want '%s...'",
		      cmd, line, want);
}

/*
 * Whether the server closed the connection within timeout_ms, found
 * without reading a byte (POLLRDHUP: the FIN; POLLHUP/POLLERR: a reset).
 * A FIN behind data the client does not read never arrives: for a client
 * that reads nothing, STATS tells.
 */
static bool closed_within(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	return poll(&p, 1, timeout_ms) == 1;
}

/* A STATS key's value, asked on a connection of its own. */
static unsigned long long stat_of(const char *key)
{
	struct cl *c = cl_new(connect_fd(0));
	char line[4200], want[64];
	const char *p;
	unsigned long long v;

	cl_send(c, "STATS\n");
	ck_assert(cl_line(c, line, sizeof(line), 5000));
	snprintf(want, sizeof(want), " %s=", key);
	p = strstr(line, want);
	ck_assert_msg(p, "no %s in '%s'", key, line);
	v = strtoull(p + strlen(want), NULL, 10);
	cl_free(c);
	return v;
}

/* Read what comes for ms; false at EOF. */
static bool drain(struct cl *c, int ms)
{
	__u64 end = now_ms() + ms;
	char line[4200];

	do {
		if (!cl_line(c, line, sizeof(line), (int)(end - now_ms())) &&
		    closed_within(c->fd, 0))
			return false;
	} while (now_ms() < end);
	return true;
}

/*
 * Write line over and over on every fd until none takes more for 200 ms
 * (the server stopped reading them all); the least any fd took.
 */
static size_t stuff(int *fds, int nfds, const char *line)
{
	static char block[65536];
	size_t ll = strlen(line), n = sizeof(block) / ll, least = SIZE_MAX;
	size_t total[64] = { 0 };
	int i, quiet = 0;

	ck_assert_int_le(nfds, 64);
	for (size_t k = 0; k < n; k++)
		memcpy(block + k * ll, line, ll);
	while (quiet < 20) {
		bool any = false;

		for (i = 0; i < nfds; i++) {
			ssize_t w = send(fds[i], block, n * ll,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w > 0) {
				total[i] += w;
				any = true;
			} else {
				ck_assert(errno == EAGAIN || errno == EWOULDBLOCK);
			}
		}
		if (any) {
			quiet = 0;
		} else {
			usleep(10000);
			quiet++;
		}
	}
	for (i = 0; i < nfds; i++)
		if (total[i] < least)
			least = total[i];
	return least;
}

/* ---- idle_timeout ------------------------------------------------------- */

START_TEST(idle_closed)
{
	struct cl *idle, *talker, *sub, *agg;
	char line[4200];
	__u64 t0, end;
	bool cut;

	fx.cfg.idle_timeout_ms = 400;
	start();
	t0 = now_ms();
	idle = cl_new(connect_fd(0));
	talker = cl_new(connect_fd(0));
	sub = cl_new(connect_fd(0));
	agg = cl_new(connect_fd(0));
	cl_expect(sub, "SUBSCRIBE\n", "OK subscribed");
	cl_expect(agg, "AGG probe EVERY 100ms\n", "OK agg");

	/* The talker sends a command every 100 ms; the streams read. */
	end = t0 + 1500;
	cut = false;
	while (now_ms() < end || !cut) {
		ck_assert_msg(now_ms() < end + 1000,
			      "the idle client is still connected");
		cl_expect(talker, "HELLO\n", "OK magnet 2");
		while (cl_line(agg, line, sizeof(line), 0))
			ck_assert_msg(line[0] != 'D', "%s", line);
		if (!cut && closed_within(idle->fd, 0)) {
			__u64 at = now_ms() - t0;

			fprintf(stderr, "idle: closed after %llu ms (idle_timeout %u ms)\n",
				(unsigned long long)at, fx.cfg.idle_timeout_ms);
			ck_assert_msg(at >= 350, "idle client closed after %llu ms",
				      (unsigned long long)at);
			cut = true;
		}
		usleep(100000);
	}
	ck_assert(!closed_within(talker->fd, 0));
	ck_assert(!closed_within(sub->fd, 0));
	ck_assert(!closed_within(agg->fd, 0));
	/* A stream that went back to commands is judged by idle_timeout. */
	cl_expect(sub, "UNSUBSCRIBE\n", "OK");
	end = now_ms() + 2000;
	while (!closed_within(sub->fd, 0)) {
		ck_assert_msg(now_ms() < end, "the unsubscribed client stays");
		cl_expect(talker, "HELLO\n", "OK magnet 2");
		while (cl_line(agg, line, sizeof(line), 0))	/* it still reads */
			;
		usleep(100000);
	}
	ck_assert(!closed_within(agg->fd, 0));
	ck_assert_uint_eq(stat_of("idle_closed"), 2);
	ck_assert_uint_eq(stat_of("cut_off"), 0);
	cl_free(idle);
	cl_free(talker);
	cl_free(sub);
	cl_free(agg);
}
END_TEST

/* ---- client_timeout and the output bound -------------------------------- */

/* Read and drop until the peer's FIN or RST, within timeout_ms. */
static bool read_to_end(int fd, int timeout_ms)
{
	static char buf[65536];
	__u64 end = now_ms() + timeout_ms;

	while (now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, (int)(end - now_ms())) != 1)
			return false;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return false;
	}
	return false;
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

START_TEST(pipeliners_bounded_and_cut)
{
	enum { N = 8 };
	int fds[N];
	size_t before, during, bound;
	__u64 t0;
	int i;

	fx.cfg.client_timeout_ms = 1500;
	start();
	/* Settle the server's own allocations (probe table, first STATS). */
	ck_assert_uint_eq(stat_of("cut_off"), 0);
	before = heap_in_use();
	for (i = 0; i < N; i++)
		fds[i] = connect_fd(4096);
	/* Commands, while the server takes them. */
	ck_assert_uint_gt(stuff(fds, N, "PROBES\n"), 64 * 1024);
	t0 = now_ms();
	during = heap_in_use();
	/* Per client: its queue, one reply over it (NPROBES lines), 64K. */
	bound = N * (fx.cfg.client_queue + (NPROBES + 1) * 64 + 65536);
#ifdef __SANITIZE_ADDRESS__	/* whose allocator mallinfo2 does not see */
	(void)before;
	(void)during;
	(void)bound;
#else
	fprintf(stderr, "pipeliners: heap %zu -> %zu bytes with %d clients waiting (bound %zu)\n",
		before, during, N, bound);
	ck_assert_uint_le(during - before, bound);
#endif
	/*
	 * The server counts each cut-off. The client sees its connection end
	 * only once it reads: the FIN waits behind the replies sent before
	 * the close (an RST comes at once only if the server had unread
	 * input from it, which it usually has, not always).
	 */
	for (i = 0; i < 300 && stat_of("cut_off") < N; i++)
		usleep(100000);
	ck_assert_uint_eq(stat_of("cut_off"), N);
	for (i = 0; i < N; i++) {
		ck_assert_msg(read_to_end(fds[i], 10000),
			      "pipeliner %d counted as cut off, but not closed", i);
		close(fds[i]);
	}
	fprintf(stderr, "pipeliners: all cut off %llu ms after the server stopped reading them (client_timeout %u ms)\n",
		(unsigned long long)(now_ms() - t0), fx.cfg.client_timeout_ms);
	ck_assert_uint_eq(stat_of("cut_off"), N);
}
END_TEST

struct writer {
	int fd;
	unsigned int n;
};

static void *write_commands(void *arg)
{
	struct writer *w = arg;
	unsigned int i;

	for (i = 0; i < w->n; i++) {
		const char *cmd = i % 2 ? "HELLO\n" : "PROBES\n";

		if (send(w->fd, cmd, strlen(cmd), MSG_NOSIGNAL) != (ssize_t)strlen(cmd))
			break;
	}
	return NULL;
}

START_TEST(pipelined_replies_all_in_order)
{
	struct writer w = { .n = 4000 };
	struct cl *c;
	pthread_t th;
	char line[4200];
	unsigned int i, j;

	start();
	c = cl_new(connect_fd(4096));
	w.fd = c->fd;
	ck_assert_int_eq(pthread_create(&th, NULL, write_commands, &w), 0);
	/* Let the queue fill, and the input wait, before reading. */
	usleep(300000);
	for (i = 0; i < w.n; i++) {
		ck_assert_msg(cl_line(c, line, sizeof(line), 5000),
			      "reply %u of %u missing", i, w.n);
		if (i % 2) {
			ck_assert_msg(!strncmp(line, "OK magnet 2 ", 12), "%u: %s", i, line);
			continue;
		}
		ck_assert_msg(!strcmp(line, "OK 60 probes"), "%u: %s", i, line);
		for (j = 0; j < NPROBES; j++)
			ck_assert(cl_line(c, line, sizeof(line), 5000));
	}
	pthread_join(th, NULL);
	ck_assert_uint_eq(stat_of("cut_off"), 0);
	cl_free(c);
}
END_TEST

/* ---- AGG: skipped reports ------------------------------------------------ */

static atomic_bool feeding;

/* The collection thread's part: chunks of records of many pids. */
static void *feed_pids(void *arg)
{
	static char chunk[32768];
	__u64 ts = 1, seq = 0;

	while (atomic_load(&feeding)) {
		size_t off = 0;

		while (off + MAGNET_RECORD_HEADER <= sizeof(chunk)) {
			struct mg_record_hdr h = {
				.event_id = 16, .cpu = 0, .timestamp = ts++,
				/* Beyond pid_max: never a live process. */
				.pid = 5000000 + seq % 2000,
				.tgid = 5000000 + seq % 2000,
			};
			ssize_t n = mg_record_encode_kprobe(chunk + off,
							   sizeof(chunk) - off,
							   &h, NULL, 0);

			ck_assert_int_gt(n, 0);
			off += n;
			seq++;
		}
		if (feed(0, chunk, off))
			atomic_fetch_add(&fx.queue_dropped, 1);
		usleep(5000);
	}
	return NULL;
}

START_TEST(agg_skipped_reports)
{
	struct cl *c, *reader;
	unsigned long long d = 0, skipped = 0;
	pthread_t th;
	char line[4200];
	__u64 end;

	fx.cfg.client_timeout_ms = 4000;
	start();
	c = cl_new(connect_fd_small(4096));
	reader = cl_new(connect_fd(0));
	cl_expect(c, "AGG pid EVERY 20ms\n", "OK agg key=pid");
	cl_expect(reader, "AGG pid EVERY 20ms\n", "OK agg key=pid");
	atomic_store(&feeding, true);
	ck_assert_int_eq(pthread_create(&th, NULL, feed_pids, NULL), 0);

	/* c reads nothing for a while; reader keeps up. */
	end = now_ms() + 2500;
	while (now_ms() < end)
		while (cl_line(reader, line, sizeof(line), 10))
			;
	/* Now c reads: a D line, then a report that counts the skipped. */
	end = now_ms() + 10000;
	for (unsigned int n = 0; now_ms() < end && !skipped; n++) {
		const char *p;

		if (n % 256 == 0)
			ck_assert(drain(reader, 5));
		ck_assert(cl_line(c, line, sizeof(line), 5000));
		if (sscanf(line, "D %llu", &d) == 1)
			ck_assert_uint_gt(d, 0);
		if (line[0] == 'A' && (p = strstr(line, " skipped=")))
			skipped = strtoull(p + 9, NULL, 10);
	}
	fprintf(stderr, "agg: the stalled aggregator was told D %llu, skipped=%llu\n",
		d, skipped);
	ck_assert_uint_gt(d, 0);
	ck_assert_uint_gt(skipped, 0);
	ck_assert_uint_ge(stat_of("client_dropped"), d);

	/* Reading nothing again: cut off, while the reader stays. */
	end = now_ms();
	while (stat_of("cut_off") < 1) {
		ck_assert_msg(now_ms() - end < 15000, "the aggregator was not cut off");
		ck_assert(drain(reader, 20));
	}
	fprintf(stderr, "agg: the stalled aggregator was cut off %llu ms after it stopped reading (client_timeout %u ms)\n",
		(unsigned long long)(now_ms() - end), fx.cfg.client_timeout_ms);
	ck_assert(!drain(c, 1000));	/* its end: all it was sent, then EOF */
	ck_assert(drain(reader, 20));
	atomic_store(&feeding, false);
	pthread_join(th, NULL);
	ck_assert_uint_eq(stat_of("cut_off"), 1);
	cl_free(c);
	cl_free(reader);
}
END_TEST

START_TEST(stalled_stream_idle)
{
	struct cl *stalled, *reader, *quiet;
	char line[4200];
	__u64 t0;

	/* Queues that do not fill in this test: only idle_timeout acts. */
	fx.cfg.client_queue = 16 << 20;
	fx.cfg.client_timeout_ms = 60000;
	fx.cfg.idle_timeout_ms = 1000;
	fx.cfg.unix_sndbuf = 4096;	/* the stalled one fills it soon */
	start();
	stalled = cl_new(connect_fd_small(4096));
	reader = cl_new(connect_fd(0));
	quiet = cl_new(connect_fd(0));
	cl_expect(stalled, "AGG probe EVERY 10ms\n", "OK agg");
	cl_expect(reader, "AGG probe EVERY 10ms\n", "OK agg");
	cl_expect(quiet, "SUBSCRIBE pid == 1\n", "OK subscribed");
	t0 = now_ms();
	while (stat_of("cut_off") < 1) {
		ck_assert_msg(now_ms() - t0 < 20000, "the stalled aggregator stays");
		ck_assert(drain(reader, 20));
	}
	fprintf(stderr, "stalled stream: cut off %llu ms after it stopped reading (idle_timeout %u ms)\n",
		(unsigned long long)(now_ms() - t0), fx.cfg.idle_timeout_ms);
	ck_assert_uint_ge(now_ms() - t0, 1000);
	ck_assert(drain(reader, 1500));
	ck_assert(!closed_within(quiet->fd, 0));
	ck_assert(!cl_line(quiet, line, sizeof(line), 0));
	ck_assert_uint_eq(stat_of("cut_off"), 1);
	ck_assert_uint_eq(stat_of("idle_closed"), 0);
	cl_free(stalled);
	cl_free(reader);
	cl_free(quiet);
}
END_TEST

/* ---- max_clients_per_user, root_reserve --------------------------------- */

static int connect_port(unsigned int port);

/* n connections to port made by uid (a child that drops to it), handed over. */
static void connect_as_port(uid_t uid, unsigned int port, int n, int *fds)
{
	int sp[2], i;
	pid_t pid;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		close(sp[0]);
		if (geteuid() != uid &&
		    (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
		     setresuid(uid, uid, uid)))
			_exit(2);
		for (i = 0; i < n; i++) {
			int fd = connect_port(port);
			char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
			struct iovec iov = { .iov_base = "x", .iov_len = 1 };
			struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
					     .msg_control = cbuf,
					     .msg_controllen = sizeof(cbuf) };
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &fd, sizeof(int));
			if (sendmsg(sp[1], &mh, 0) != 1)
				_exit(3);
			close(fd);
		}
		_exit(0);
	}
	close(sp[1]);
	for (i = 0; i < n; i++) {
		char cbuf[CMSG_SPACE(sizeof(int))], x;
		struct iovec iov = { .iov_base = &x, .iov_len = 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };

		ck_assert_int_eq(recvmsg(sp[0], &mh, 0), 1);
		memcpy(&fds[i], CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(int));
	}
	close(sp[0]);
	{
		int st;

		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		ck_assert(WIFEXITED(st) && !WEXITSTATUS(st));
	}
}

static void connect_as(uid_t uid, int n, int *fds)
{
	connect_as_port(uid, fx.port, n, fds);
}

/* HELLO on fd: "OK" when served, else the refusal's text. */
static void hello(int fd, char *out, size_t size)
{
	struct cl *c = cl_new(fd);

	send(fd, "HELLO\n", 6, MSG_NOSIGNAL);
	if (!cl_line(c, out, size, 5000))
		snprintf(out, size, "(closed)");
	else if (!strncmp(out, "OK magnet", 9))
		strcpy(out, "OK");
	c->fd = -1;
	free(c);
}

static void expect_hellos(int *fds, int n, const char *want)
{
	char line[256];
	int i;

	for (i = 0; i < n; i++) {
		hello(fds[i], line, sizeof(line));
		ck_assert_msg(!strcmp(line, want), "connection %d: '%s', want '%s'",
			      i, line, want);
	}
}

START_TEST(per_user_limit)
{
	int a[4], b[3], cc[1], r[3], i;
	bool root = geteuid() == 0;

	fx.cfg.max_clients = 6;
	fx.cfg.max_clients_per_user = 3;
	fx.cfg.root_reserve = 2;
	start();
	/* One user: 3, and the 4th is told why. Root, if we are, is not it. */
	connect_as(root ? 65534 : geteuid(), 4, a);
	expect_hellos(a, 3, "OK");
	expect_hellos(a + 3, 1, "ERR too many clients of this user");
	if (!root) {
		for (i = 0; i < 4; i++)
			close(a[i]);
		return;
	}
	/* Another user: its own 3, which fill max_clients. */
	connect_as(65533, 3, b);
	expect_hellos(b, 3, "OK");
	connect_as(65532, 1, cc);
	expect_hellos(cc, 1, "ERR too many clients");
	close(cc[0]);
	/* Root: not limited per user, and 2 more beyond max_clients. */
	for (i = 0; i < 3; i++)
		r[i] = connect_fd(0);
	expect_hellos(r, 2, "OK");
	expect_hellos(r + 2, 1, "ERR too many clients");
	/* A user's slot freed is anyone's. */
	for (i = 0; i < 3; i++)
		close(r[i]);
	close(a[0]);
	usleep(200000);
	connect_as(65532, 1, cc);
	expect_hellos(cc, 1, "OK");
	for (i = 1; i < 4; i++)
		close(a[i]);
	for (i = 0; i < 3; i++)
		close(b[i]);
	close(cc[0]);
	usleep(200000);
	ck_assert_uint_eq(stat_of("refused"), 3);
}
END_TEST

/* ---- slots per listener, request deadlines, floods, EMFILE -------------- */

/* A connection to one of the listeners (fx.port, fx.prom, fx.mon). */
static int connect_port(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

/* GET /metrics on fd: the status line ("(closed)" if none). */
static void scrape(int fd, char *out, size_t size)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	struct cl *c = cl_new(fd);

	send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL);
	if (!cl_line(c, out, size, 5000))
		snprintf(out, size, "(closed)");
	out[strcspn(out, "\r")] = '\0';
	cl_free(c);
}

/* A Supermon sample on fd: its first word ("(closed)" if none). */
static void sample(int fd, char *out, size_t size)
{
	struct cl *c = cl_new(fd);
	char line[65536];

	send(fd, "S\n", 2, MSG_NOSIGNAL);
	if (!cl_line(c, line, sizeof(line), 5000))
		snprintf(out, size, "(closed)");
	else
		snprintf(out, size, "%.*s", (int)strcspn(line, " "), line);
	cl_free(c);
}

/*
 * Many unprivileged users (as a user namespace's uids would be) fill the
 * client port: none of them gets more than its slots, and an unprivileged
 * Prometheus scrape and Supermon sample still get in (slots of their own),
 * and root too (its reserve). Clients that fill the Prometheus listener
 * leave root's scrape working.
 */
START_TEST(listener_slots)
{
	int a[2], b[2], cc[1], p[3], m[1], r[2], i;
	char line[256];

	if (geteuid()) {
		fprintf(stderr, "listener_slots: needs root (other users)\n");
		return;
	}
	fx.cfg.max_clients = 4;
	fx.cfg.max_clients_per_user = 2;
	fx.cfg.prometheus_clients = 2;
	fx.cfg.supermon_clients = 2;
	fx.cfg.root_reserve = 1;
	start();
	connect_as(65534, 2, a);
	connect_as(65533, 2, b);
	expect_hellos(a, 2, "OK");
	expect_hellos(b, 2, "OK");
	connect_as(65532, 1, cc);
	expect_hellos(cc, 1, "ERR too many clients");
	close(cc[0]);
	/* The monitors' listeners: a user with no connection, and root. */
	connect_as_port(65532, fx.prom, 1, p);
	scrape(p[0], line, sizeof(line));
	ck_assert_str_eq(line, "HTTP/1.1 200 OK");
	connect_as_port(65532, fx.mon, 1, m);
	sample(m[0], line, sizeof(line));
	ck_assert_str_eq(line, "(sample");
	r[0] = connect_port(fx.port);
	expect_hellos(r, 1, "OK");
	close(r[0]);
	/* Two slow HTTP clients fill the Prometheus listener. */
	connect_as_port(65531, fx.prom, 3, p);
	usleep(100000);
	scrape(p[2], line, sizeof(line));
	ck_assert_str_eq(line, "HTTP/1.1 503 Service Unavailable");
	r[0] = connect_port(fx.prom);
	r[1] = connect_port(fx.prom);
	scrape(r[0], line, sizeof(line));
	ck_assert_str_eq(line, "HTTP/1.1 200 OK");
	usleep(100000);
	scrape(r[1], line, sizeof(line));	/* root's reserve is 1 */
	ck_assert_msg(!strcmp(line, "HTTP/1.1 503 Service Unavailable") ||
		      !strcmp(line, "(closed)"), "%s", line);
	for (i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
		close(p[i]);
	}
}
END_TEST

/* Closed within [lo, hi] ms of t0, or fail; read and drop what comes. */
static __u64 closed_between(int fd, __u64 t0, unsigned int lo, unsigned int hi,
			    const char *what)
{
	__u64 at;

	ck_assert_msg(read_to_end(fd, hi + 500), "%s: not closed", what);
	at = now_ms() - t0;
	fprintf(stderr, "%s: closed after %llu ms\n", what, (unsigned long long)at);
	ck_assert_msg(at >= lo && at <= hi, "%s: closed after %llu ms, want %u to %u",
		      what, (unsigned long long)at, lo, hi);
	return at;
}

/* A byte now and then: an HTTP request or a line, cut off in time. */
struct trickle {
	int fd;
	const char *text;
};

static void *trickle(void *arg)
{
	const struct trickle *t = arg;
	const char *p;

	for (p = t->text; *p; p++) {
		if (send(t->fd, p, 1, MSG_NOSIGNAL) != 1)
			break;
		usleep(150000);
	}
	return NULL;
}

/*
 * request_timeout: an HTTP request sent a byte at a time (each byte is
 * progress, so idle_timeout never acts) is cut off with a 408, one that
 * never starts too; a protocol line dribbled likewise; whole lines now
 * and then are not. Too many headers: 431.
 */
START_TEST(request_deadline)
{
	struct trickle slow_http, slow_line;
	pthread_t th[2];
	int http, line_fd, quiet, idle;
	struct cl *talker, *c;
	char line[256], big[200 * 8 + 64];
	__u64 t0;
	int i, n;

	fx.cfg.request_timeout_ms = 1000;
	fx.cfg.idle_timeout_ms = 60000;
	start();
	t0 = now_ms();
	http = connect_port(fx.prom);
	quiet = connect_port(fx.prom);
	line_fd = connect_port(fx.port);
	idle = connect_port(fx.port);
	talker = cl_new(connect_port(fx.port));
	slow_http = (struct trickle){ http,
		"GET /metrics HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n" };
	slow_line = (struct trickle){ line_fd,
		"HELLOHELLOHELLOHELLOHELLOHELLOHELLOHELLO\n" };
	ck_assert_int_eq(pthread_create(&th[0], NULL, trickle, &slow_http), 0);
	ck_assert_int_eq(pthread_create(&th[1], NULL, trickle, &slow_line), 0);
	closed_between(quiet, t0, 900, 1600, "HTTP, no request");
	closed_between(http, t0, 900, 1600, "HTTP, a byte every 150 ms");
	closed_between(line_fd, t0, 900, 1600, "a line, a byte every 150 ms");
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	/* Whole lines now and then, or none: not this rule's. */
	for (i = 0; i < 4; i++) {
		cl_expect(talker, "HELLO\n", "OK magnet 2");
		usleep(300000);
	}
	ck_assert(!closed_within(idle, 0));
	ck_assert_uint_eq(stat_of("cut_off"), 3);
	/* Too many headers. */
	n = snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\n");
	for (i = 0; i < 100; i++)
		n += snprintf(big + n, sizeof(big) - n, "X-%03d: 1\r\n", i);
	n += snprintf(big + n, sizeof(big) - n, "\r\n");
	c = cl_new(connect_port(fx.prom));
	ck_assert_int_eq(send(c->fd, big, n, MSG_NOSIGNAL), n);
	ck_assert(cl_line(c, line, sizeof(line), 5000));
	ck_assert_str_eq(line, "HTTP/1.1 431 Request Header Fields Too Large\r");
	cl_free(c);
	close(idle);
	cl_free(talker);
}
END_TEST

/*
 * Each line is judged from its own first byte: lines that each end in
 * 300 ms, sent so that one is always begun (a read ends inside the next)
 * for 4 times request_timeout, are all answered.
 */
START_TEST(request_clock_per_line)
{
	static const char *const parts[] = { "HEL", "LO\nHEL", "LO\nHEL",
					     "LO\nHEL", "LO\nHEL", "LO\n" };
	struct cl *c;
	unsigned int i;

	fx.cfg.request_timeout_ms = 500;
	start();
	c = cl_new(connect_fd(0));
	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		if (i)
			usleep(300000);
		cl_send(c, parts[i]);
	}
	for (i = 0; i < 5; i++) {
		char line[256];

		ck_assert_msg(cl_line(c, line, sizeof(line), 2000), "HELLO %u: no reply", i);
		ck_assert_msg(!strncmp(line, "OK magnet 2", 11), "HELLO %u: '%s'", i, line);
	}
	ck_assert_uint_eq(stat_of("cut_off"), 0);
	cl_free(c);
}
END_TEST

/*
 * A line begun, then the client's queue over its bound (an AGG report
 * bigger than the queue, taken whole by the empty queue) and the server
 * reads no more of it: the rest of the line waits unread, the server's
 * delay. The client is judged by client_timeout (queue full), not by
 * request_timeout.
 */
START_TEST(request_clock_stands_while_full)
{
	struct cl *c;
	pthread_t th;
	__u64 t0;

	fx.cfg.client_queue = 1024;
	fx.cfg.unix_sndbuf = 4096;
	fx.cfg.client_timeout_ms = 2500;
	fx.cfg.request_timeout_ms = 800;
	start();
	c = cl_new(connect_fd_small(4096));
	cl_expect(c, "AGG pid EVERY 20ms\n", "OK agg key=pid");
	ck_assert_int_eq(send(c->fd, "HEL", 3, MSG_NOSIGNAL), 3);
	usleep(100000);			/* taken: a line begun */
	t0 = now_ms();
	atomic_store(&feeding, true);
	ck_assert_int_eq(pthread_create(&th, NULL, feed_pids, NULL), 0);
	usleep(300000);			/* reports of 2000 pids: over the bound */
	ck_assert_int_eq(send(c->fd, "LO\n", 3, MSG_NOSIGNAL), 3);
	/* Cut off, and when, without reading a byte of c (that is progress). */
	while (!stat_of("cut_off")) {
		ck_assert_msg(now_ms() - t0 < 8000, "not cut off");
		usleep(50000);
	}
	t0 = now_ms() - t0;
	fprintf(stderr, "a line's end unread behind a full queue: cut off after %llu ms\n",
		(unsigned long long)t0);
	ck_assert_msg(t0 >= 2500, "cut off after %llu ms: request_timeout (800 ms) judged the server's delay",
		      (unsigned long long)t0);
	ck_assert(read_to_end(c->fd, 5000));
	atomic_store(&feeding, false);
	pthread_join(th, NULL);
	ck_assert_uint_eq(stat_of("cut_off"), 1);
	cl_free(c);
}
END_TEST

/* Cheap requests in bulk: newlines, samples, AGG net, without reading. */
static void *flood(void *arg)
{
	static char nl[65536], ss[65536];
	const char *what = arg;
	int fd, k;

	memset(nl, '\n', sizeof(nl));
	for (k = 0; k + 1 < (int)sizeof(ss); k += 2)
		memcpy(ss + k, "S\n", 2);
	fd = connect_port(!strcmp(what, "agg") ? fx.port : fx.mon);
	for (k = 0; k < 4; k++) {
		if (!strcmp(what, "nl"))
			send(fd, nl, sizeof(nl), MSG_NOSIGNAL);
		else if (!strcmp(what, "S"))
			send(fd, ss, sizeof(ss), MSG_NOSIGNAL | MSG_DONTWAIT);
		else
			for (int j = 0; j < 200; j++)
				send(fd, "AGG net EVERY 1s\n", 17, MSG_NOSIGNAL);
	}
	return (void *)(long)fd;
}

/*
 * 4096 jobs in the totals, and clients flooding cheap requests (256 KiB
 * of newlines and of samples on Supermon, AGG net 800 times): another
 * client's HELLO is answered at once, and the flood's requests cost
 * little (each newline does not build a view of 4096 jobs).
 */
START_TEST(request_flood)
{
	static const char *const kinds[] = { "nl", "S", "agg" };
	pthread_t th[3];
	struct cl *c;
	__u64 t0, worst = 0;
	unsigned int i;

	start();
	for (i = 1; i <= MG_TOTALS_JOBS; i++) {
		static char rec[256];
		struct mg_record_hdr h = { .event_id = 16, .cgroup = 1000 + i,
					   .pid = 1, .tgid = 1 };

		ck_assert_int_gt(mg_record_encode_kprobe(rec, sizeof(rec), &h, NULL, 0), 0);
		mg_totals_add(fx.totals, (const void *)rec);
	}
	c = cl_new(connect_port(fx.port));
	cl_expect(c, "HELLO\n", "OK magnet 2");
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, flood, (void *)kinds[i]), 0);
	for (i = 0; i < 40; i++) {
		t0 = now_ms();
		cl_expect(c, "HELLO\n", "OK magnet 2");
		if (now_ms() - t0 > worst)
			worst = now_ms() - t0;
		usleep(20000);
	}
	fprintf(stderr, "request flood: HELLO answered within %llu ms\n",
		(unsigned long long)worst);
	ck_assert_uint_lt(worst, 300);
	for (i = 0; i < 3; i++) {
		void *fd;

		pthread_join(th[i], &fd);
		close((int)(long)fd);
	}
	cl_free(c);
}
END_TEST

/* CPU time of the process (the server thread, mostly), in ms. */
static __u64 cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000ULL +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/*
 * Out of descriptors: accept() fails, the listener stays readable. The
 * server does not spin on it, and serves the client once descriptors are
 * free again.
 */
START_TEST(emfile_no_spin)
{
	struct rlimit rl;
	int fds[64], nfd = 0, fd, spare;
	__u64 cpu, t0;
	char line[256];

	start();
	spare = dup(0);
	ck_assert_int_ge(spare, 0);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = spare + 8;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	while ((fd = dup(0)) >= 0)
		fds[nfd++] = fd;
	ck_assert_int_eq(errno, EMFILE);
	close(spare);			/* one for the client's socket */
	fd = connect_port(fx.port);
	usleep(200000);
	cpu = cpu_ms();
	t0 = now_ms();
	usleep(1000000);
	cpu = cpu_ms() - cpu;
	fprintf(stderr, "EMFILE: %llu ms of CPU in %llu ms\n",
		(unsigned long long)cpu, (unsigned long long)(now_ms() - t0));
	ck_assert_uint_lt(cpu, 200);
	while (nfd)
		close(fds[--nfd]);
	hello(fd, line, sizeof(line));
	ck_assert_str_eq(line, "OK");
	close(fd);
}
END_TEST

/* TOTALS: counters since start over every record, named from the table. */
START_TEST(totals_command)
{
	static char chunk[8192];
	struct cl *c;
	char line[4096];
	size_t off = 0;
	unsigned int i, n;
	bool seen_other = false;

	start();
	for (i = 0; i < 10; i++) {
		struct mg_record_hdr h = {
			.event_id = i < 7 ? 16 : 17, .timestamp = i + 1,
			.pid = getpid(), .tgid = getpid(),
		};
		struct magnet_sock so = { .family = AF_INET, .size = 1000 };
		ssize_t r = i < 7 ?
			mg_record_encode_kprobe(chunk + off, sizeof(chunk) - off,
						&h, NULL, 0) :
			mg_record_encode_sock(chunk + off, sizeof(chunk) - off,
					      &h, &so);

		ck_assert_int_gt(r, 0);
		off += r;
	}
	{
		struct mg_record_hdr h = { .timestamp = 11 };
		struct magnet_lost l = { .full = 4, .overwritten = 1 };
		ssize_t r = mg_record_encode_lost(chunk + off, sizeof(chunk) - off,
						  &h, &l);

		ck_assert_int_gt(r, 0);
		off += r;
	}
	ck_assert_int_eq(feed(0, chunk, off), 0);

	c = cl_new(connect_fd(0));
	for (i = 0;; i++) {
		ck_assert_uint_lt(i, 200);
		cl_send(c, "TOTALS\n");
		ck_assert(cl_line(c, line, sizeof(line), 2000));
		ck_assert_msg(sscanf(line, "OK %u totals ", &n) == 1, "%s", line);
		if (strstr(line, " records=10 "))
			break;
		while (n--)
			ck_assert(cl_line(c, line, sizeof(line), 2000));
		usleep(10000);
	}
	ck_assert_msg(strstr(line, " module=up cpus=2 ") &&
		      strstr(line, " kernel_lost=5 daemon_dropped=0 probes=60 ") &&
		      strstr(line, " probe_missed=1770"),
		      "%s", line);
	/* 60 loaded probes, then the jobs, "other" last. */
	ck_assert_uint_ge(n, 61);
	for (i = 0; i < n; i++) {
		ck_assert(cl_line(c, line, sizeof(line), 2000));
		if (i == 0)
			ck_assert_str_eq(line, "probe 16 kprobe some_kernel_function_0 events=7 sock_bytes=0 sock=0 loaded=1 symbol=some_kernel_function_0 missed=0");
		if (i == 1)
			ck_assert_str_eq(line, "probe 17 kprobe some_kernel_function_1 events=3 sock_bytes=3000 sock=1 loaded=1 symbol=some_kernel_function_1 missed=1");
		if (i == 2)
			ck_assert_str_eq(line, "probe 18 kprobe some_kernel_function_2 events=0 sock_bytes=0 sock=0 loaded=1 symbol=some_kernel_function_2 missed=2");
		if (i >= 60)
			ck_assert_msg(!strncmp(line, "job ", 4), "%s", line);
		if (i == n - 1) {
			ck_assert_msg(!strncmp(line, "job 0 other events=", 19), "%s", line);
			seen_other = true;
		}
	}
	ck_assert(seen_other);
	cl_expect(c, "TOTALS x\n", "ERR TOTALS takes no arguments");
	cl_free(c);
}
END_TEST

/*
 * The collection thread's side: every read counted in the totals; queued
 * for the server only while a client subscribes or aggregates (from
 * before its OK), or for its TASK records.
 */
static unsigned int counted_events;

static bool wanted(const void *data, size_t len, unsigned int events,
		   __u64 tasks)
{
	counted_events += events;
	return mg_server_wants(&fx.env, data, len, tasks);
}

START_TEST(reads_queued_when_wanted)
{
	static char events[4096], task[4096];
	struct mg_record_hdr h = { .event_id = 16, .timestamp = 1,
				   .pid = getpid(), .tgid = getpid() };
	struct cl *sub, *agg, *c;
	size_t elen = 0, tlen;
	char line[4096];
	unsigned int i, n;
	ssize_t r;
	__u64 end;

	for (i = 0; i < 5; i++) {
		r = mg_record_encode_kprobe(events + elen, sizeof(events) - elen,
					    &h, NULL, 0);
		ck_assert_int_gt(r, 0);
		elen += r;
	}
	r = mg_record_encode_task(task, sizeof(task), &h, "worker");
	ck_assert_int_gt(r, 0);
	tlen = r;
	r = mg_record_encode_kprobe(task + tlen, sizeof(task) - tlen, &h, NULL, 0);
	ck_assert_int_gt(r, 0);
	tlen += r;

	start();
	ck_assert(!wanted(events, elen, 5, 0));
	ck_assert(wanted(task, tlen, 1, 1));

	sub = cl_new(connect_fd(0));
	cl_expect(sub, "SUBSCRIBE\n", "OK subscribed");
	ck_assert(wanted(events, elen, 5, 0));
	cl_expect(sub, "UNSUBSCRIBE\n", "OK");
	ck_assert(!wanted(events, elen, 5, 0));
	agg = cl_new(connect_fd(0));
	cl_expect(agg, "AGG probe EVERY 1s\n", "OK agg");
	ck_assert(wanted(events, elen, 5, 0));
	cl_free(agg);	/* gone: the server hears it on its own time */
	end = now_ms() + 2000;
	while (wanted(events, elen, 5, 0)) {
		ck_assert_msg(now_ms() < end, "a gone aggregator still wants reads");
		usleep(1000);
	}

	/* Every read counted, queued or not (TASK records are not events). */
	c = cl_new(connect_fd(0));
	cl_send(c, "TOTALS\n");
	ck_assert(cl_line(c, line, sizeof(line), 2000));
	ck_assert_msg(sscanf(line, "OK %u totals ", &n) == 1, "%s", line);
	ck_assert_msg(strstr(line, " records="), "%s", line);
	ck_assert_uint_eq(strtoull(strstr(line, " records=") + 9, NULL, 10), counted_events);
	cl_free(c);
	cl_free(sub);
}
END_TEST

/* ---- attribution: the record's cgroup, the TASK records' comm ----------- */

/* Pids above the largest pid_max (2^22): no /proc entry, ever. */
#define GHOST_A		4194400U	/* slot 32 */
#define GHOST_B		4194401U	/* slot 33 */
#define GHOST_C		4194402U	/* never named */
#define GONE_CG		4294967280U	/* a cgroup no walk finds */

static size_t put_rec(char *chunk, size_t off, __u32 cpu, __u32 pid,
		      __u32 cg, bool intr, const char *task_comm)
{
	struct mg_record_hdr h = { .event_id = 16, .cpu = cpu, .cgroup = cg,
				   .abstract_id = cg, .timestamp = off + 1,
				   .pid = pid, .tgid = pid, .intr = intr };
	ssize_t r = task_comm ?
		mg_record_encode_task(chunk + off, 8192 - off, &h, task_comm) :
		mg_record_encode_kprobe(chunk + off, 8192 - off, &h, NULL, 0);

	ck_assert_int_gt(r, 0);
	return off + r;
}

/* The entry line of value in the next AGG report with events, or "". */
static void agg_report(struct cl *c, char lines[][256], unsigned int *n,
		       char *hdr, size_t hdrlen)
{
	unsigned int i, k;

	for (i = 0; i < 100; i++) {
		ck_assert(cl_line(c, hdr, hdrlen, 2000));
		ck_assert_msg(sscanf(hdr, "A %*s %u ", &k) == 1, "%s", hdr);
		*n = k;
		for (k = 0; k < *n; k++)
			ck_assert(cl_line(c, lines[k], 256, 2000));
		if (*n)
			return;
	}
	ck_abort_msg("no AGG report with entries");
}

static bool has_line(char lines[][256], unsigned int n, const char *want)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!strncmp(lines[i], want, strlen(want)))
			return true;
	return false;
}

/* Exactly n bytes from the connection, after what cl_line buffered. */
static void cl_bytes(struct cl *c, void *out, size_t n)
{
	size_t got = n < c->len ? n : c->len;

	memcpy(out, c->buf + c->head, got);
	c->head += got;
	c->len -= got;
	while (got < n) {
		ssize_t r = recv(c->fd, (char *)out + got, n - got, 0);

		ck_assert_int_gt(r, 0);
		got += r;
	}
}

/* ---- AGG net: packets by their socket's job, and peers ------------------- */

/* The next TCP segment's sequence number: each one's bytes new, unless set back. */
static __u32 next_seq = 1;

/* An IPv4 packet with a UDP or TCP header, payload bytes after it. */
static size_t put_pkt(char *chunk, size_t off, __u64 job, int dir, int proto,
		      const char *src, const char *dst, unsigned int sport,
		      unsigned int dport, unsigned int payload)
{
	struct mg_record_hdr h = { .event_id = 16, .cpu = 0, .cgroup = 1,
				   .timestamp = off + 1, .pid = 1, .tgid = 1 };
	unsigned int l4 = proto == IPPROTO_TCP ? 20 : 8, total = 20 + l4 + payload;
	unsigned char b[48] = { 0x45, 0, total >> 8, total & 255, [8] = 64, [9] = proto };
	struct magnet_skb k = { .len = total, .caplen = 20 + l4, .ifindex = 1,
				.protocol = htons(0x0800), .direction = dir,
				.layer = MAGNET_SKB_LAYER_NETWORK, .sk_cgroup = job };
	__u32 seq = next_seq;
	ssize_t r;

	ck_assert_int_eq(inet_pton(AF_INET, src, b + 12), 1);
	ck_assert_int_eq(inet_pton(AF_INET, dst, b + 16), 1);
	b[20] = sport >> 8, b[21] = sport & 255, b[22] = dport >> 8, b[23] = dport & 255;
	if (proto == IPPROTO_TCP) {
		b[24] = seq >> 24, b[25] = seq >> 16, b[26] = seq >> 8, b[27] = seq;
		b[32] = 5 << 4;
		next_seq = seq + payload;
	}
	r = mg_record_encode_skb(chunk + off, 8192 - off, &h, &k, b, 48);
	ck_assert_int_gt(r, 0);
	return off + r;
}

/*
 * Two jobs and a socketless packet: J lines per job and protocol, P lines
 * per flow (peer, then the local end last), exact bytes (a TCP segment
 * sent again: a packet, its bytes repeated); the header's sums; a
 * packet without IP header unkeyed; records of other handlers not
 * counted. TOTALS: the same traffic under the sockets' jobs, not the
 * header's cgroup. The TCP packets are counted as read (net_settle 0):
 * test_netview's tcp_rings holds them.
 */
START_TEST(agg_net)
{
	static char chunk[8192];
	char lines[64][256], hdr[512], line[4096];
	struct mg_record_hdr h = { .event_id = 16, .pid = 1, .tgid = 1 };
	struct magnet_skb raw = { .len = 60, .direction = MAGNET_SKB_DIR_OUT };
	struct cl *c, *t;
	unsigned int n, i, seen;
	size_t off = 0;

	fx.cfg.net_settle_ms = 0;
	start();
	c = cl_new(connect_fd(0));
	cl_expect(c, "AGG net EVERY 100ms\n", "OK agg key=net every=100000000");
	off = put_pkt(chunk, off, GONE_CG, MAGNET_SKB_DIR_OUT, IPPROTO_TCP,
		      "127.0.0.1", "127.0.0.2", 40000, 5001, 1000);
	off = put_pkt(chunk, off, GONE_CG, MAGNET_SKB_DIR_OUT, IPPROTO_TCP,
		      "127.0.0.1", "127.0.0.2", 40000, 5001, 500);
	next_seq -= 500;	/* sent again */
	off = put_pkt(chunk, off, GONE_CG, MAGNET_SKB_DIR_OUT, IPPROTO_TCP,
		      "127.0.0.1", "127.0.0.2", 40000, 5001, 500);
	off = put_pkt(chunk, off, GONE_CG, MAGNET_SKB_DIR_IN, IPPROTO_TCP,
		      "127.0.0.2", "127.0.0.1", 5001, 40000, 42);
	off = put_pkt(chunk, off, GONE_CG, MAGNET_SKB_DIR_OUT, IPPROTO_UDP,
		      "127.0.0.1", "127.0.0.3", 40001, 5002, 300);
	off = put_pkt(chunk, off, 7, MAGNET_SKB_DIR_IN, IPPROTO_TCP,
		      "127.0.0.1", "127.0.0.2", 40000, 5001, 1500);
	off = put_pkt(chunk, off, 0, MAGNET_SKB_DIR_OUT, IPPROTO_TCP,
		      "127.0.0.2", "127.0.0.1", 5001, 40000, 0);
	ck_assert_int_gt(mg_record_encode_skb(chunk + off, 8192 - off, &h, &raw, NULL, 0), 0);
	off += mg_record_skb_size(0);
	off = put_rec(chunk, off, 0, 1, 1, false, NULL);
	ck_assert_int_eq(feed(0, chunk, off), 0);

	agg_report(c, lines, &n, hdr, sizeof(hdr));
	ck_assert_msg(strstr(hdr, "A net 8 ") && strstr(hdr, " packets=7 bytes=3342 jobs=4 peers=4 lost=0 evicted_jobs=0 evicted_job_bytes=0 evicted_peers=0 evicted_peer_bytes=0 unkeyed=1 ") &&
		      strstr(hdr, " repeated_bytes=500 seq_evictions=0"),
		      "%s", hdr);
	ck_assert_str_eq(lines[0], "J 4294967280 tcp 3 1500 1 42 cgroup:4294967280");
	ck_assert_str_eq(lines[1], "J 7 tcp 0 0 1 1500 cgroup:7");
	ck_assert_str_eq(lines[2], "J 4294967280 udp 1 300 0 0 cgroup:4294967280");
	ck_assert_str_eq(lines[3], "J 0 tcp 1 0 0 0 -");
	/* Each flow's local end last: job 7's is the other end of 4294967280's. */
	ck_assert_str_eq(lines[4], "P 4294967280 tcp 127.0.0.2:5001 3 1500 1 42 127.0.0.1:40000");
	ck_assert_str_eq(lines[5], "P 7 tcp 127.0.0.1:40000 0 0 1 1500 127.0.0.2:5001");
	ck_assert_str_eq(lines[6], "P 4294967280 udp 127.0.0.3:5002 1 300 0 0 127.0.0.1:40001");
	ck_assert_str_eq(lines[7], "P 0 tcp 127.0.0.1:40000 1 0 0 0 127.0.0.2:5001");
	/* AGG net again: its tables reused, empty; still one aggregator. */
	cl_expect(c, "AGG net EVERY 100ms\n", "OK agg key=net");
	ck_assert_uint_eq(stat_of("aggregators"), 1);
	off = put_pkt(chunk, 0, 7, MAGNET_SKB_DIR_IN, IPPROTO_TCP,
		      "127.0.0.1", "127.0.0.2", 40000, 5001, 10);
	ck_assert_int_eq(feed(0, chunk, off), 0);
	agg_report(c, lines, &n, hdr, sizeof(hdr));
	ck_assert_msg(strstr(hdr, "A net 2 ") && strstr(hdr, " packets=1 bytes=10 jobs=1 peers=1 ") &&
		      strstr(hdr, " repeated_bytes=0 "),
		      "%s", hdr);
	ck_assert_str_eq(lines[0], "J 7 tcp 0 0 1 10 cgroup:7");

	/*
	 * TOTALS: the packets since start under their sockets' jobs, not the
	 * header's cgroup (1 for all above, 0 here: a softirq's). Jobs 7 and
	 * 4294967280 are cgroups no walk finds: gone, and their series with
	 * them; the root cgroup's (1) stays.
	 */
	off = put_pkt(chunk, 0, 1, MAGNET_SKB_DIR_IN, IPPROTO_UDP,
		      "10.9.9.9", "127.0.0.1", 53, 40003, 77);
	((struct magnet_record *)chunk)->cgroup = 0;
	ck_assert_int_eq(feed(0, chunk, off), 0);
	agg_report(c, lines, &n, hdr, sizeof(hdr));
	t = cl_new(connect_fd(0));
	cl_send(t, "TOTALS\n");
	ck_assert(cl_line(t, line, sizeof(line), 2000));
	ck_assert_msg(sscanf(line, "OK %u totals ", &n) == 1 &&
		      strstr(line, " net_packets=9 net_bytes=3429 net_unkeyed=1 net_repeated_bytes=500 net_seq_evictions=0 net_seq_holes_dropped=0 net_order_early=0 net_order_late="),
		      "%s", line);
	for (i = 0, seen = 0; i < n; i++) {
		static const char *const want[] = {
			"net 1 udp tx_packets=0 tx_bytes=0 rx_packets=1 rx_bytes=77 tx_repeated_bytes=0 rx_repeated_bytes=0",
			"peer 1 10.9.9.9 tx_packets=0 tx_bytes=0 rx_packets=1 rx_bytes=77 tx_repeated_bytes=0 rx_repeated_bytes=0",
			"peer 1 other tx_packets=0 tx_bytes=0 rx_packets=0 rx_bytes=0 tx_repeated_bytes=0 rx_repeated_bytes=0 evictions=0",
			"net 0 tcp tx_packets=1 tx_bytes=0 rx_packets=0 rx_bytes=0 tx_repeated_bytes=0 rx_repeated_bytes=0",
			"peer 0 127.0.0.1 tx_packets=1 tx_bytes=0 rx_packets=0 rx_bytes=0 tx_repeated_bytes=0 rx_repeated_bytes=0",
		};
		unsigned int k;

		ck_assert(cl_line(t, line, sizeof(line), 2000));
		for (k = 0; k < sizeof(want) / sizeof(want[0]); k++)
			seen |= !strcmp(line, want[k]) << k;
		if (!strncmp(line, "job 1 ", 6))
			ck_assert_msg(strstr(line, " events=9 "), "%s", line);
		ck_assert_msg(strncmp(line, "net 1 tcp", 9), "%s", line);
	}
	ck_assert_uint_eq(seen, 0x1f);
	cl_free(t);
	cl_free(c);
}
END_TEST

/* A record, or with owner (uid, euid) the TASK record naming its thread. */
static size_t put_owned(char *chunk, size_t off, __u32 pid, __u32 cg,
			__u64 abstract, bool intr, const char *comm, __u32 uid,
			__u32 euid)
{
	struct mg_record_hdr h = { .event_id = 16, .cgroup = cg,
				   .abstract_id = abstract, .timestamp = off + 1,
				   .pid = pid, .tgid = pid, .intr = intr };
	__u64 args[2] = { 0xffff888000000040ULL, 7 };
	ssize_t r = comm ?
		mg_record_encode_task_as(chunk + off, 8192 - off, &h, comm, uid, euid) :
		mg_record_encode_kprobe(chunk + off, 8192 - off, &h, args, 2);

	ck_assert_int_gt(r, 0);
	return off + r;
}

/* The value of "key":"..." in a JSON line. */
static void json_str(const char *line, const char *key, char *out, size_t size)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(line, pat);
	ck_assert_msg(p, "no %s in %s", key, line);
	p += strlen(pat);
	ck_assert_uint_lt(strcspn(p, "\""), size);
	snprintf(out, size, "%.*s", (int)strcspn(p, "\""), p);
}

/*
 * A shared node: threads of root, of uid 65534, and a set-uid one of
 * 65534 write records. uid 65534 on the Unix socket gets its own records
 * only (not the set-uid thread's, not those written in interrupt context
 * on its behalf), kernel addresses in them hashed alike; its binary
 * stream names only its own threads; its TOTALS lists only its own job.
 * Root gets everything as read. A TCP client is anonymous: no records.
 */
START_TEST(access_by_uid)
{
	static char chunk[8192];
	struct cl *root, *user, *anon, *bin;
	char line[4096], v[64], ua[64], ub[64], mnt[4096] = "", cgdir[4200];
	unsigned int i, n, total, cg = 2000;
	size_t off = 0;
	struct stat st;
	FILE *f;

	/* The user's job: a live cgroup if one can be made (TOTALS lists live jobs). */
	f = fopen("/proc/self/mountinfo", "re");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " - cgroup2 ") &&
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1)
			break;
	fclose(f);
	snprintf(cgdir, sizeof(cgdir), "%s/mg-test-access-%d", mnt, (int)getpid());
	if (mnt[0] && !mkdir(cgdir, 0755) && !stat(cgdir, &st))
		cg = (__u32)st.st_ino;
	else
		fprintf(stderr, "access_by_uid: no cgroup made, TOTALS unchecked\n");
	start();
	root = cl_new(connect_unix_as(0));
	user = cl_new(connect_unix_as(65534));
	bin = cl_new(connect_unix_as(65534));
	anon = cl_new(connect_fd(4096));
	cl_send(user, "HELLO\n");
	ck_assert(cl_line(user, line, sizeof(line), 2000));
	ck_assert_msg(strstr(line, " access=own"), "%s", line);
	cl_send(anon, "HELLO\n");
	ck_assert(cl_line(anon, line, sizeof(line), 2000));
	ck_assert_msg(strstr(line, " access=none"), "%s", line);
	cl_expect(anon, "SUBSCRIBE\n", "ERR not allowed");
	cl_expect(anon, "AGG pid EVERY 100ms\n", "ERR not allowed");
	cl_expect(root, "SUBSCRIBE FORMAT json\n", "OK subscribed");
	cl_expect(user, "SUBSCRIBE FORMAT json\n", "OK subscribed");
	cl_expect(bin, "SUBSCRIBE FORMAT binary\n", "OK subscribed");

	off = put_owned(chunk, off, 100, 1, 0, false, "rootd", 0, 0);
	off = put_owned(chunk, off, 100, 1, 0xffff888012345678ULL, false, NULL, 0, 0);
	off = put_owned(chunk, off, 200, cg, 0, false, "job", 65534, 65534);
	off = put_owned(chunk, off, 200, cg, 0xffff888012345678ULL, false, NULL, 0, 0);
	off = put_owned(chunk, off, 200, cg, 0xffff888012345678ULL, false, NULL, 0, 0);
	off = put_owned(chunk, off, 200, cg, 42, false, NULL, 0, 0);
	off = put_owned(chunk, off, 200, cg, 43, true, NULL, 0, 0);
	off = put_owned(chunk, off, 300, cg, 0, false, "passwd", 65534, 0);
	off = put_owned(chunk, off, 300, cg, 44, false, NULL, 0, 0);
	ck_assert_int_eq(feed(0, chunk, off), 0);

	for (i = 0; i < 6; i++) {
		ck_assert_msg(cl_line(root, line, sizeof(line), 2000), "root: %u", i);
		if (i == 0) {
			json_str(line, "abstract", v, sizeof(v));
			ck_assert_str_eq(v, "0xffff888012345678");
		}
	}
	for (i = 0; i < 3; i++) {
		ck_assert_msg(cl_line(user, line, sizeof(line), 2000), "user: %u", i);
		ck_assert_msg(strstr(line, "\"pid\":200,") && strstr(line, "\"comm\":\"job\""),
			      "%s", line);
		ck_assert_msg(!strstr(line, "0xffff"), "a kernel address: %s", line);
		json_str(line, "abstract", i == 0 ? ua : i == 1 ? ub : v, 64);
	}
	ck_assert_str_eq(ua, ub);	/* the same address, the same hash */
	ck_assert_str_ne(ua, "0xffff888012345678");
	ck_assert_str_eq(v, "0x2a");	/* not an address: as it is */
	ck_assert_msg(!cl_line(user, line, sizeof(line), 300), "more: %s", line);

	/* Binary: its TASK record and its 3 records, nothing of others'. */
	ck_assert(cl_line(bin, line, sizeof(line), 2000));
	ck_assert_int_eq(sscanf(line, "B %u", &n), 1);
	{
		static union { char b[8192]; __u64 align; } u;
		const struct magnet_record *r;
		size_t o = 0;

		ck_assert_uint_le(n, sizeof(u.b));
		cl_bytes(bin, u.b, n);
		total = 0;
		while ((r = mg_record_step(u.b, n, &o))) {
			ck_assert_uint_eq(r->pid, 200);
			ck_assert_msg(r->abstract_id < (1ULL << 47), "%llx",
				      (unsigned long long)r->abstract_id);
			total++;
		}
		ck_assert_uint_eq(total, 4);
	}

	/* TOTALS: its own job, not root's, not "other". */
	cl_send(user, "TOTALS\n");
	ck_assert(cl_line(user, line, sizeof(line), 2000));
	ck_assert_int_eq(sscanf(line, "OK %u totals ", &n), 1);
	for (i = 0, total = 0; i < n; i++) {
		ck_assert(cl_line(user, line, sizeof(line), 2000));
		if (!strncmp(line, "job ", 4)) {
			ck_assert_msg(strtoul(line + 4, NULL, 10) == cg, "%s", line);
			total++;
		}
	}
	ck_assert_uint_eq(total, cg != 2000);
	if (cg != 2000)
		rmdir(cgdir);
	cl_free(root);
	cl_free(user);
	cl_free(bin);
	cl_free(anon);
}
END_TEST

/*
 * Records of threads that never existed in /proc, of a cgroup that exists
 * (made under the host's cgroup2 mount when it is writable, else its
 * root) and of one that no walk finds: AGG comm, cgroup and pid, TOTALS'
 * job lines and a binary subscriber joining later all name them exactly
 * from the header's cgroup and the TASK records of the record's CPU.
 */
START_TEST(attribution)
{
	static char chunk[8192];
	struct cl *ac, *ag, *ap, *t, *sub;
	char lines[64][256], hdr[512], line[4096], want[512], mnt[4096] = "";
	char cgdir[4200] = "", rel[64] = "/";
	unsigned int n, i, cg;
	size_t off = 0, len;
	struct stat st;
	FILE *f;

	ck_assert(access("/proc/4194400", F_OK) && access("/proc/4194402", F_OK));
	f = fopen("/proc/self/mountinfo", "re");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " - cgroup2 ") &&
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1)
			break;
	fclose(f);
	if (!mnt[0]) {
		fprintf(stderr, "attribution: no cgroup2 mount, skipped\n");
		return;
	}
	snprintf(cgdir, sizeof(cgdir), "%s/mg-test-server-%d", mnt, (int)getpid());
	if (!mkdir(cgdir, 0755))
		snprintf(rel, sizeof(rel), "/mg-test-server-%d", (int)getpid());
	else
		snprintf(cgdir, sizeof(cgdir), "%s", mnt);
	ck_assert_int_eq(stat(cgdir, &st), 0);
	cg = (__u32)st.st_ino;

	start();
	ac = cl_new(connect_fd(0));
	ag = cl_new(connect_fd(0));
	ap = cl_new(connect_fd(0));
	cl_expect(ac, "AGG comm EVERY 100ms\n", "OK agg key=comm");
	cl_expect(ag, "AGG cgroup EVERY 100ms\n", "OK agg key=cgroup");
	cl_expect(ap, "AGG pid EVERY 100ms\n", "OK agg key=pid");

	/* CPU 0: A named, 3 records and one in interrupt context; B named, 2. */
	off = put_rec(chunk, off, 0, GHOST_A, cg, false, "ghost-a");
	for (i = 0; i < 3; i++)
		off = put_rec(chunk, off, 0, GHOST_A, cg, false, NULL);
	off = put_rec(chunk, off, 0, GHOST_A, cg, true, NULL);
	off = put_rec(chunk, off, 0, GHOST_B, GONE_CG, false, "ghost-b");
	off = put_rec(chunk, off, 0, GHOST_B, GONE_CG, false, NULL);
	off = put_rec(chunk, off, 0, GHOST_B, GONE_CG, false, NULL);
	/* C never named; one of its records of no known job (cgroup 0). */
	off = put_rec(chunk, off, 0, GHOST_C, cg, false, NULL);
	off = put_rec(chunk, off, 0, GHOST_C, 0, false, NULL);
	ck_assert_int_eq(feed(0, chunk, off), 0);
	/* CPU 1: A again, but no TASK record named it on this CPU. */
	len = put_rec(chunk, 0, 1, GHOST_A, cg, false, NULL);
	ck_assert_int_eq(feed(1, chunk, len), 0);

	agg_report(ac, lines, &n, hdr, sizeof(hdr));
	ck_assert_msg(strstr(hdr, " events=9 ") && strstr(hdr, " unkeyed=0 "), "%s", hdr);
	ck_assert_uint_eq(n, 3);
	ck_assert_msg(has_line(lines, n, "E ghost-a 4 "), "%s", lines[0]);
	ck_assert(has_line(lines, n, "E ghost-b 2 "));
	ck_assert(has_line(lines, n, "E %00 3 "));
	for (i = 0; i < n; i++)
		if (!strncmp(lines[i], "E %00 ", 6))
			ck_assert_msg(strstr(lines[i], " unknown"), "%s", lines[i]);

	agg_report(ag, lines, &n, hdr, sizeof(hdr));
	ck_assert_msg(strstr(hdr, " events=8 ") && strstr(hdr, " unkeyed=1 "), "%s", hdr);
	ck_assert_uint_eq(n, 2);
	snprintf(want, sizeof(want), "E %u 6 ", cg);
	ck_assert_msg(!strncmp(lines[0], want, strlen(want)) &&
		      !strcmp(strrchr(lines[0], ' ') + 1, rel), "%s", lines[0]);
	ck_assert_msg(!strncmp(lines[1], "E 4294967280 2 ", 15) &&
		      strstr(lines[1], " cgroup:4294967280"), "%s", lines[1]);

	agg_report(ap, lines, &n, hdr, sizeof(hdr));
	ck_assert_uint_eq(n, 3);
	ck_assert(has_line(lines, n, "E 4194400 5 "));
	for (i = 0; i < n; i++) {
		const char *label = strrchr(lines[i], ' ') + 1;

		if (!strncmp(lines[i], "E 4194400 ", 10))
			ck_assert_str_eq(label, "ghost-a");
		else if (!strncmp(lines[i], "E 4194401 ", 10))
			ck_assert_str_eq(label, "ghost-b");
		else
			ck_assert_msg(!strcmp(label, "-"), "%s", lines[i]);
	}

	/* TOTALS: the live job by its path, intr apart; cgroup 0 in other. */
	t = cl_new(connect_fd(0));
	cl_send(t, "TOTALS\n");
	ck_assert(cl_line(t, line, sizeof(line), 2000));
	ck_assert_msg(sscanf(line, "OK %u totals ", &n) == 1 &&
		      strstr(line, " records=9 "), "%s", line);
	snprintf(want, sizeof(want), "job %u %s events=6 sock_bytes=0 exported=1 intr=1 lost_fair=0",
		 cg, rel);
	for (i = 0; i < n; i++) {
		ck_assert(cl_line(t, line, sizeof(line), 2000));
		if (!strncmp(line, "job ", 4) && strncmp(line, "job 0 ", 6) &&
		    strncmp(line, "job 4294967280 ", 15))
			ck_assert_str_eq(line, want);
		if (!strncmp(line, "job 0 ", 6))
			ck_assert_str_eq(line, "job 0 other events=1 sock_bytes=0 exported=1 intr=0 lost_fair=0");
	}
	cl_free(t);

	/* A binary subscriber joining now is told who CPU 0's threads are. */
	sub = cl_new(connect_fd(0));
	cl_expect(sub, "SUBSCRIBE FORMAT binary\n", "OK subscribed format=binary");
	ck_assert(cl_line(sub, line, sizeof(line), 2000));
	ck_assert_str_eq(line, "B 128");
	{
		union { char b[128]; __u64 align; } u;
		const struct magnet_record *r = (const void *)u.b;
		char comm[17];

		cl_bytes(sub, u.b, 128);
		ck_assert(mg_record_is_task(r));
		ck_assert_uint_eq(r->pid, GHOST_A);
		ck_assert_uint_eq(r->cgroup, cg);
		ck_assert_str_eq(mg_record_task_comm(r, comm), "ghost-a");
		r = (const void *)(u.b + 64);
		ck_assert(mg_record_is_task(r));
		ck_assert_uint_eq(r->pid, GHOST_B);
		ck_assert_uint_eq(r->cpu, 0);
		ck_assert_uint_eq(r->abstract_id, GONE_CG);
		ck_assert_str_eq(mg_record_task_comm(r, comm), "ghost-b");
	}
	cl_free(sub);
	cl_free(ac);
	cl_free(ag);
	cl_free(ap);
	if (strcmp(rel, "/"))
		ck_assert_int_eq(rmdir(cgdir), 0);
}
END_TEST

/*
 * Names are never stale: after chunks were dropped (a TASK record may have
 * gone with them) or the module was reloaded (new streams), a thread the
 * mirror knew is unknown (%00) until a TASK record names it again.
 */
START_TEST(names_reset)
{
	static char chunk[8192];
	char lines[64][256], hdr[512];
	struct cl *ac;
	unsigned int n, round;
	size_t len;

	start();
	ac = cl_new(connect_fd(0));
	cl_expect(ac, "AGG comm EVERY 100ms\n", "OK agg key=comm");
	len = put_rec(chunk, 0, 0, GHOST_A, 1, false, "ghost-a");
	len = put_rec(chunk, len, 0, GHOST_A, 1, false, NULL);
	ck_assert_int_eq(feed(0, chunk, len), 0);
	agg_report(ac, lines, &n, hdr, sizeof(hdr));
	ck_assert_uint_eq(n, 1);
	ck_assert_msg(!strncmp(lines[0], "E ghost-a 1 ", 12), "%s", lines[0]);

	for (round = 0; round < 2; round++) {
		/* Still known: named by the mirror. */
		len = put_rec(chunk, 0, 0, GHOST_A, 1, false, NULL);
		ck_assert_int_eq(feed(0, chunk, len), 0);
		agg_report(ac, lines, &n, hdr, sizeof(hdr));
		ck_assert_msg(n == 1 && !strncmp(lines[0], "E ghost-a 1 ", 12), "%s", lines[0]);
		if (round == 0)
			atomic_fetch_add(&fx.queue_drop_chunks, 1);
		else
			atomic_fetch_add(&stub_reloads, 1);
		ck_assert_int_eq(feed(0, chunk, len), 0);
		agg_report(ac, lines, &n, hdr, sizeof(hdr));
		ck_assert_msg(n == 1 && !strncmp(lines[0], "E %00 1 ", 8), "round %u: %s",
			      round, lines[0]);
		/* Named again by the stream. */
		len = put_rec(chunk, 0, 0, GHOST_A, 1, false, "ghost-a");
		len = put_rec(chunk, len, 0, GHOST_A, 1, false, NULL);
		ck_assert_int_eq(feed(0, chunk, len), 0);
		agg_report(ac, lines, &n, hdr, sizeof(hdr));
		ck_assert_msg(n == 1 && !strncmp(lines[0], "E ghost-a 1 ", 12), "%s", lines[0]);
	}
	atomic_store(&stub_reloads, 0);
	cl_free(ac);
}
END_TEST

/* ---- probes by name: a kprobe and a kretprobe on one function ----------- */

/* The next line, which must come within 2 s. */
static void cl_want_line(struct cl *c, char *line, size_t size)
{
	ck_assert_msg(cl_line(c, line, size, 2000), "no line");
}

/*
 * PROBES, TOTALS, filters, AGG labels and JSON records name a probe by its
 * name, unique; the symbol is a field of its own. shared_fn has a kprobe
 * (id 74, "shared_fn") and a kretprobe (id 75, "shared_fn%return").
 */
START_TEST(probe_names)
{
	static char chunk[4096];
	struct cl *c, *sk, *sr, *ag;
	char line[4200], lines[64][256], hdr[512];
	struct mg_record_hdr h = { .cpu = 0, .timestamp = 1, .pid = 7, .tgid = 7 };
	unsigned int n, i;
	size_t off = 0;

	start();
	c = cl_new(connect_fd(0));
	cl_send(c, "PROBES\n");
	cl_want_line(c, line, sizeof(line));
	ck_assert_str_eq(line, "OK 60 probes");
	for (i = 0; i < NPROBES; i++) {
		cl_want_line(c, line, sizeof(line));
		if (i == 0)
			ck_assert_str_eq(line, "16 kprobe some_kernel_function_0 nargs=3 hits=0 missed=0 symbol=some_kernel_function_0");
	}
	ck_assert_str_eq(line, "75 kretprobe shared_fn%25return nargs=3 hits=59000 missed=59 symbol=shared_fn");

	/* Each name selects its probe, and only it. */
	sk = cl_new(connect_fd(0));
	sr = cl_new(connect_fd(0));
	ag = cl_new(connect_fd(0));
	cl_expect(sk, "SUBSCRIBE probe == shared_fn\n", "OK subscribed");
	cl_expect(sr, "SUBSCRIBE probe == \"shared_fn%return\"\n", "OK subscribed");
	cl_expect(c, "SUBSCRIBE probe == \"shared_fn%25return\"\n",
		  "ERR bad filter: unknown probe 'shared_fn%25return' at column 9");
	cl_expect(ag, "AGG probe EVERY 100ms\n", "OK agg key=probe");
	h.event_id = 74;
	off += mg_record_encode_kprobe(chunk + off, sizeof(chunk) - off, &h, NULL, 0);
	h.event_id = 75;
	h.timestamp = 2;
	off += mg_record_encode_kretprobe(chunk + off, sizeof(chunk) - off, &h, 5, 100, NULL, 0);
	h.event_id = 16;
	h.timestamp = 3;
	off += mg_record_encode_kprobe(chunk + off, sizeof(chunk) - off, &h, NULL, 0);
	ck_assert_int_eq(feed(0, chunk, off), 0);

	cl_want_line(sk, line, sizeof(line));
	ck_assert_msg(strstr(line, "\"id\":74,\"event\":\"shared_fn\",\"symbol\":\"shared_fn\",\"type\":\"kprobe\""),
		      "%s", line);
	cl_want_line(sr, line, sizeof(line));
	ck_assert_msg(strstr(line, "\"id\":75,\"event\":\"shared_fn%return\",\"symbol\":\"shared_fn\",\"type\":\"kretprobe\""),
		      "%s", line);
	ck_assert(!cl_line(sk, line, sizeof(line), 300));
	ck_assert(!cl_line(sr, line, sizeof(line), 10));

	agg_report(ag, lines, &n, hdr, sizeof(hdr));
	ck_assert_uint_eq(n, 3);
	for (i = 0; i < n; i++) {
		const char *label = strrchr(lines[i], ' ') + 1;

		if (!strncmp(lines[i], "E 74 1 ", 7))
			ck_assert_str_eq(label, "shared_fn");
		else if (!strncmp(lines[i], "E 75 1 ", 7))
			ck_assert_str_eq(label, "shared_fn%25return");
		else
			ck_assert_msg(!strncmp(lines[i], "E 16 1 ", 7), "%s", lines[i]);
	}

	cl_send(c, "TOTALS\n");
	cl_want_line(c, line, sizeof(line));
	ck_assert_int_eq(sscanf(line, "OK %u totals ", &n), 1);
	for (i = 0; i < n; i++) {
		cl_want_line(c, line, sizeof(line));
		if (!strncmp(line, "probe 75 ", 9))
			ck_assert_str_eq(line, "probe 75 kretprobe shared_fn%25return events=1 sock_bytes=0 sock=0 loaded=1 symbol=shared_fn missed=59");
		if (!strncmp(line, "probe 74 ", 9))
			ck_assert_str_eq(line, "probe 74 kprobe shared_fn events=1 sock_bytes=0 sock=0 loaded=1 symbol=shared_fn missed=58");
	}
	cl_free(c);
	cl_free(sk);
	cl_free(sr);
	cl_free(ag);
}
END_TEST

/* ---- drops told when no record follows ---------------------------------- */

/*
 * A subscriber that reads nothing during a burst loses records, and learns
 * of every one: once it reads, its D lines add up to what the server
 * dropped for it, with no record after the burst to carry them. Records
 * and D lines add up to the burst.
 */
/*
 * A subscriber (cmd) on the Unix socket whose socket takes 4 KiB at a
 * time, its queue client_queue bytes.
 */
static struct cl *small_subscriber(size_t client_queue, const char *cmd)
{
	struct cl *c;

	fx.cfg.client_queue = client_queue;
	fx.cfg.client_timeout_ms = 60000;
	fx.cfg.unix_sndbuf = 4096;
	start();
	c = cl_new(connect_fd_small(4096));
	cl_expect(c, cmd, "OK subscribed");
	return c;
}

/* Records of timestamps *ts + 1, + 2, ... filling size bytes of chunk. */
static size_t put_numbered(char *chunk, size_t size, __u64 *ts)
{
	size_t off = 0;

	while (off + MAGNET_RECORD_HEADER <= size) {
		struct mg_record_hdr h = { .event_id = 16, .timestamp = ++*ts,
					   .pid = 9, .tgid = 9 };

		off += mg_record_encode_kprobe(chunk + off, size - off, &h, NULL, 0);
	}
	return off;
}

START_TEST(drops_told_after_burst)
{
	static char chunk[32768];
	__u64 fed = 0, got = 0, told = 0, d, end;
	struct cl *c = small_subscriber(16384, "SUBSCRIBE\n");
	char line[4200];
	unsigned int k;

	for (k = 0; k < 20; k++) {
		__u64 before = fed;
		size_t off = put_numbered(chunk, sizeof(chunk), &fed);

		if (feed(0, chunk, off))
			atomic_fetch_add(&fx.queue_dropped, fed - before);	/* told as drops too */
	}
	/* The server has handled the burst: every record sent or dropped. */
	end = now_ms() + 10000;
	while (stat_of("sent") + stat_of("client_dropped") + atomic_load(&fx.queue_dropped) < fed)
		ck_assert_msg(now_ms() < end, "the burst was not handled");
	ck_assert_uint_gt(stat_of("client_dropped"), 0);

	/*
	 * Now it reads, and nothing more comes from the rings; its
	 * UNSUBSCRIBE is taken once its queue has room: every D line comes
	 * before the OK, and nothing after it.
	 */
	cl_send(c, "UNSUBSCRIBE\n");
	for (;;) {
		ck_assert_msg(cl_line(c, line, sizeof(line), 2000), "no OK");
		if (!strcmp(line, "OK"))
			break;
		if (line[0] == '{')
			got++;
		else if (sscanf(line, "D %llu", (unsigned long long *)&d) == 1)
			told += d;
		else
			ck_abort_msg("unexpected line '%s'", line);
	}
	ck_assert(!cl_line(c, line, sizeof(line), 300));
	fprintf(stderr, "drops: %llu records fed, %llu received, D lines %llu, client_dropped %llu\n",
		(unsigned long long)fed, (unsigned long long)got,
		(unsigned long long)told, stat_of("client_dropped"));
	ck_assert_uint_eq(told, stat_of("client_dropped") + atomic_load(&fx.queue_dropped));
	ck_assert_uint_eq(got + told, fed);
	cl_free(c);
}
END_TEST

/*
 * A JSON subscriber that reads nothing, on a Unix socket whose send buffer
 * still takes what the server writes: writing into the buffer is not the
 * client taking anything (SIOCOUTQ counts the buffers' true size there,
 * and grows by more than the bytes written). It is cut off client_timeout
 * after its queue first overflowed, not once the buffer is full too.
 */
START_TEST(stalled_cut_off_while_buffer_takes)
{
	static char chunk[8192];
	__u64 ts = 0, first = 0, t0;
	struct cl *c;

	fx.cfg.client_queue = 4096;
	fx.cfg.client_timeout_ms = 1000;
	fx.cfg.unix_sndbuf = 1 << 20;	/* 4 KiB more every 20 ms: seconds to fill */
	start();
	c = cl_new(connect_fd_small(4096));
	cl_expect(c, "SUBSCRIBE\n", "OK subscribed");
	t0 = now_ms();
	while (stat_of("cut_off") < 1) {
		ck_assert_msg(now_ms() - t0 < 20000, "the stalled subscriber was not cut off");
		ck_assert_int_eq(feed(0, chunk, put_numbered(chunk, sizeof(chunk), &ts)), 0);
		if (!first && stat_of("client_dropped"))
			first = now_ms();
		usleep(20000);
	}
	fprintf(stderr, "stalled on a Unix socket: cut off %llu ms after its first drop (client_timeout %u ms)\n",
		(unsigned long long)(now_ms() - first), fx.cfg.client_timeout_ms);
	ck_assert_uint_gt(first, 0);
	ck_assert_uint_lt(now_ms() - first, 3000);
	cl_free(c);
}
END_TEST

/*
 * Binary frames to a subscriber whose socket takes a few KiB at a time: a
 * frame goes straight from the chunk as far as the socket takes it, the
 * rest is queued, and the frames after it wait behind it: every frame
 * whole, every record once, in order.
 */
START_TEST(frames_in_order_through_small_socket)
{
	static char chunk[32768], got[32768];
	__u64 fed = 0, seen = 0;
	struct cl *c = small_subscriber(4 << 20, "SUBSCRIBE FORMAT binary\n");
	char line[64];
	unsigned int k, len;

	/* Frames of 32, 16 and 10 KiB in turn. */
	for (k = 0; k < 40; k++)
		ck_assert_int_eq(feed(0, chunk, put_numbered(chunk, sizeof(chunk) / (1 + k % 3),
							     &fed)), 0);
	while (seen < fed) {
		const struct magnet_record *r;
		size_t off = 0;

		ck_assert_msg(cl_line(c, line, sizeof(line), 5000), "%llu of %llu records",
			      (unsigned long long)seen, (unsigned long long)fed);
		ck_assert_msg(sscanf(line, "B %u", &len) == 1 && len <= sizeof(got), "%s", line);
		cl_bytes(c, got, len);
		while ((r = mg_record_step(got, len, &off)))
			ck_assert_uint_eq(r->timestamp, ++seen);
		ck_assert_uint_eq(off, len);
	}
	ck_assert_uint_eq(stat_of("client_dropped"), 0);
	ck_assert(!cl_line(c, line, sizeof(line), 200));
	cl_free(c);
}
END_TEST

/* ---- framing: names that read like replies ------------------------------ */

/*
 * Threads named OK, ERR and "D 1": their AGG comm entries start with E,
 * so no line but a reply starts with OK or ERR, and a label is one word.
 */
START_TEST(framing_names)
{
	static const char *const comms[] = { "OK", "ERR", "D 1", "A", "{x" };
	static const char *const want[] = { "E OK 1 ", "E ERR 1 ", "E D%201 1 ",
					    "E A 1 ", "E {x 1 " };
	static char chunk[8192];
	char lines[64][256], hdr[512];
	struct cl *ac;
	unsigned int n, i, k;
	size_t off = 0;

	start();
	ac = cl_new(connect_fd(0));
	cl_expect(ac, "AGG comm EVERY 100ms\n", "OK agg key=comm");
	for (i = 0; i < 5; i++) {
		off = put_rec(chunk, off, 0, GHOST_A + i, 1, false, comms[i]);
		off = put_rec(chunk, off, 0, GHOST_A + i, 1, false, NULL);
	}
	ck_assert_int_eq(feed(0, chunk, off), 0);
	agg_report(ac, lines, &n, hdr, sizeof(hdr));
	ck_assert_uint_eq(n, 5);
	for (i = 0; i < n; i++) {
		ck_assert_msg(!strncmp(lines[i], "E ", 2), "%s", lines[i]);
		for (k = 0; k < 5; k++)
			if (!strncmp(lines[i], want[k], strlen(want[k])))
				break;
		ck_assert_msg(k < 5, "%s", lines[i]);
	}
	cl_free(ac);
}
END_TEST

/* ---- Slurm's jobs --------------------------------------------------------- */

/*
 * job_J in Slurm's scope on the host's cgroup2 mount (its slice and scope
 * made if missing): set up and removed by the runner, whatever the tests
 * did; each test makes a step of its own in it.
 */
static struct {
	char mnt[PATH_MAX];		/* "" no writable cgroup2 mount */
	char slice[PATH_MAX + 16], scope[PATH_MAX + 48], job[PATH_MAX + 64];
	char rel[128];			/* the job's path under the mount */
	unsigned int id;
	bool made_slice, made_scope;
} sl;

static void slurm_setup(void)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");

	sl.mnt[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " - cgroup2 ") &&
		    sscanf(line, "%*s %*s %*s %*s %4095s", sl.mnt) == 1)
			break;
	fclose(f);
	if (!sl.mnt[0])
		return;
	sl.id = 3000000 + (unsigned int)getpid();
	snprintf(sl.slice, sizeof(sl.slice), "%s/system.slice", sl.mnt);
	snprintf(sl.scope, sizeof(sl.scope), "%s/slurmstepd.scope", sl.slice);
	snprintf(sl.job, sizeof(sl.job), "%s/job_%u", sl.scope, sl.id);
	snprintf(sl.rel, sizeof(sl.rel), "/system.slice/slurmstepd.scope/job_%u", sl.id);
	sl.made_slice = !mkdir(sl.slice, 0755);
	sl.made_scope = !mkdir(sl.scope, 0755);
	if (mkdir(sl.job, 0755))
		sl.mnt[0] = '\0';
}

static int rmdir_one(const char *path, const struct stat *sb, int flag,
		     struct FTW *ftw)
{
	if (flag == FTW_DP)
		rmdir(path);
	return 0;
}

static void slurm_teardown(void)
{
	if (!sl.mnt[0])
		return;
	nftw(sl.job, rmdir_one, 16, FTW_DEPTH | FTW_PHYS);
	if (sl.made_scope)
		rmdir(sl.scope);
	if (sl.made_slice)
		rmdir(sl.slice);
}

/* Make rel below the job; its cgroup id. */
static __u32 slurm_mk(const char *rel)
{
	char path[PATH_MAX + 256];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", sl.job, rel);
	ck_assert_msg(!mkdir(path, 0755), "mkdir %s: %s", path, strerror(errno));
	ck_assert_int_eq(stat(path, &st), 0);
	return (__u32)st.st_ino;
}

/*
 * TOTALS as uid (0: root) on the Unix socket: the node's records, and
 * the line of job id ("" if none).
 */
static __u64 totals_job(uid_t uid, __u32 id, char *out, size_t size)
{
	struct cl *c = cl_new(connect_unix_as(uid));
	char line[4200], want[32];
	unsigned int n, i;
	__u64 records;

	cl_send(c, "TOTALS\n");
	ck_assert(cl_line(c, line, sizeof(line), 5000));
	ck_assert_msg(sscanf(line, "OK %u totals ", &n) == 1 &&
		      strstr(line, " records="), "%s", line);
	records = strtoull(strstr(line, " records=") + 9, NULL, 10);
	snprintf(want, sizeof(want), "job %u ", id);
	out[0] = '\0';
	for (i = 0; i < n; i++) {
		ck_assert(cl_line(c, line, sizeof(line), 5000));
		if (!strncmp(line, want, strlen(want)))
			snprintf(out, size, "%s", line);
	}
	cl_free(c);
	return records;
}

/* TOTALS until the node counted records (the reads were queued). */
static void totals_wait(__u64 records)
{
	char line[8];
	unsigned int i;

	for (i = 0; totals_job(0, 0, line, sizeof(line)) != records; i++) {
		ck_assert_msg(i < 200, "TOTALS never counted %llu records",
			      (unsigned long long)records);
		usleep(10000);
	}
}

/* A whole /metrics response (malloc'd). */
static char *prom_page(void)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	int fd = connect_port(fx.prom);
	size_t len = 0, cap = 1 << 16;
	char *text = malloc(cap);
	ssize_t n;

	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL), sizeof(req) - 1);
	while ((n = recv(fd, text + len, cap - 1 - len, 0)) > 0) {
		len += n;
		if (len == cap - 1) {
			cap *= 2;
			text = realloc(text, cap);
			ck_assert_ptr_nonnull(text);
		}
	}
	close(fd);
	text[len] = '\0';
	ck_assert_msg(!strncmp(text, "HTTP/1.1 200 OK", 15), "%.80s", text);
	return text;
}

/* A /metrics response with line want (the monitors' view may be 100 ms old). */
static char *prom_page_with(const char *want)
{
	unsigned int i;
	char *text;

	for (i = 0;; i++) {
		text = prom_page();
		if (strstr(text, want))
			return text;
		ck_assert_msg(i < 50, "no %s in %.2000s", want,
			      strstr(text, "\nmagnet_job_events_total"));
		free(text);
		usleep(20000);
	}
}

/* magnet_job_events_total of the series of cgroup path rel; -1 none. */
static long long events_of(const char *text, const char *rel)
{
	char want[256];
	const char *p;

	snprintf(want, sizeof(want), "\nmagnet_job_events_total{cgroup=\"%s\"", rel);
	for (p = strstr(text, want); p; p = strstr(p + 1, want)) {
		p += strlen(want);
		if (*p == ',' || *p == '}')
			return strtoll(strchr(p, '}') + 2, NULL, 10);
	}
	return -1;
}

/*
 * n records of thread pid in cgroup cg, its TASK record first if comm;
 * back once the server handled them (binary subscriber sub got them).
 */
static void feed_thread(struct cl *sub, __u32 pid, __u32 cg, const char *comm,
			__u32 uid, unsigned int n)
{
	static char chunk[8192];
	char line[64];
	size_t off = 0;
	unsigned int len;

	if (comm)
		off = put_owned(chunk, off, pid, cg, 0, false, comm, uid, uid);
	while (n--)
		off = put_owned(chunk, off, pid, cg, 0, false, NULL, 0, 0);
	ck_assert_int_eq(feed(0, chunk, off), 0);
	ck_assert(cl_line(sub, line, sizeof(line), 5000));
	ck_assert_msg(sscanf(line, "B %u", &len) == 1 && len == off, "%s", line);
	cl_bytes(sub, chunk, len);
}

/* The server, and a binary subscriber (feed_thread's). */
static struct cl *slurm_start(void)
{
	struct cl *sub;

	start();
	sub = cl_new(connect_fd(0));
	cl_expect(sub, "SUBSCRIBE FORMAT binary\n", "OK subscribed");
	return sub;
}

/*
 * A step whose slurmstepd (root) wrote records before any of its user's
 * threads: no uid while the user is unknown, in TOTALS and Prometheus
 * (never uid 0, which would show the step as root's and later change);
 * then the user's, for the step and its slurmstepd, in both, and the
 * user's own TOTALS lists them.
 */
START_TEST(slurm_user_not_root)
{
	char line[4200], want[512];
	__u32 step, stepd, task;
	struct cl *sub;
	char *text;

	if (!sl.mnt[0] || geteuid()) {
		fprintf(stderr, "slurm_user_not_root: no cgroup2 mount of ours, skipped\n");
		return;
	}
	step = slurm_mk("/step_0");
	slurm_mk("/step_0/user");
	task = slurm_mk("/step_0/user/task_0");
	stepd = slurm_mk("/step_0/slurm");
	sub = slurm_start();
	feed_thread(sub, GHOST_A, stepd, "slurmstepd", 0, 10);
	totals_wait(10);
	totals_job(0, stepd, line, sizeof(line));
	snprintf(want, sizeof(want), "job %u %s/step_0/slurm events=10 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=%u slurm_step=0 slurm_stepd=1",
		 stepd, sl.rel, sl.id);
	ck_assert_str_eq(line, want);
	snprintf(want, sizeof(want), "\nmagnet_job_events_total{cgroup=\"%s/step_0/slurm\",slurm_job_id=\"%u\",slurm_step=\"0\",slurm_stepd=\"1\"} 10\n",
		 sl.rel, sl.id);
	text = prom_page_with(want);
	ck_assert_msg(!strstr(text, "uid=\"0\""), "%.2000s", strstr(text, "uid=\"0\""));
	free(text);
	totals_job(65534, stepd, line, sizeof(line));
	ck_assert_str_eq(line, "");

	feed_thread(sub, GHOST_B, task, "task", 65534, 20);
	totals_wait(30);
	totals_job(0, step, line, sizeof(line));
	snprintf(want, sizeof(want), "job %u %s/step_0 events=20 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=%u slurm_step=0 uid=65534",
		 step, sl.rel, sl.id);
	ck_assert_str_eq(line, want);
	totals_job(65534, stepd, line, sizeof(line));
	ck_assert_msg(strstr(line, " slurm_stepd=1 uid=65534"), "%s", line);
	totals_job(65534, step, line, sizeof(line));
	ck_assert_str_eq(line, want);
	snprintf(want, sizeof(want), "\nmagnet_job_events_total{cgroup=\"%s/step_0\",slurm_job_id=\"%u\",slurm_step=\"0\",uid=\"65534\"} 20\n",
		 sl.rel, sl.id);
	text = prom_page_with(want);
	ck_assert_msg(!strstr(text, "uid=\"0\""), "%.2000s", strstr(text, "uid=\"0\""));
	free(text);
	cl_free(sub);
}
END_TEST

/* This thread's (and the server's, made after it) search and read overrides. */
static void dac_caps(bool on)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	__u32 bits = 1U << CAP_DAC_OVERRIDE | 1U << CAP_DAC_READ_SEARCH;

	ck_assert_int_eq(syscall(SYS_capget, &h, d), 0);
	d[0].effective = on ? d[0].effective | bits : d[0].effective & ~bits;
	ck_assert_int_eq(syscall(SYS_capset, &h, d), 0);
}

/*
 * A task's cgroup the map cannot name when its TASK record and records
 * come: no handles (CAP_DAC_READ_SEARCH dropped) and its directory
 * unreadable (the job's user's, mode 0700, CAP_DAC_OVERRIDE dropped). It
 * is asked again at each view, not counted alone for good; once its
 * directory is readable it joins its step, all its records there, and the
 * step has the user its TASK record named.
 */
START_TEST(slurm_task_named_later)
{
	char path[PATH_MAX + 256], line[4200], want[512];
	__u32 step, task;
	struct cl *sub;
	unsigned int i;

	if (!sl.mnt[0] || geteuid()) {
		fprintf(stderr, "slurm_task_named_later: no cgroup2 mount of ours, skipped\n");
		return;
	}
	step = slurm_mk("/step_1");
	slurm_mk("/step_1/user");
	task = slurm_mk("/step_1/user/task_0");
	snprintf(path, sizeof(path), "%s/step_1/user/task_0", sl.job);
	ck_assert_int_eq(chown(path, 65534, 65534), 0);
	ck_assert_int_eq(chmod(path, 0700), 0);
	dac_caps(false);
	sub = slurm_start();
	totals_job(0, task, line, sizeof(line));	/* jobs checked now */
	feed_thread(sub, GHOST_A, task, "task", 65534, 10);
	totals_wait(10);
	totals_job(0, task, line, sizeof(line));
	ck_assert_msg(strstr(line, " cgroup:"), "named: %s", line);

	ck_assert_int_eq(chmod(path, 0755), 0);
	feed_thread(sub, GHOST_A, task, NULL, 0, 5);
	snprintf(want, sizeof(want), "job %u %s/step_1 events=15 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=%u slurm_step=1 uid=65534",
		 step, sl.rel, sl.id);
	for (i = 0;; i++) {
		totals_job(0, step, line, sizeof(line));
		if (!strcmp(line, want))
			break;
		ck_assert_msg(i < 100, "want '%s', have '%s'", want, line);
		usleep(50000);
	}
	totals_job(0, task, line, sizeof(line));
	ck_assert_msg(!line[0], "the task alone: %s", line);
	totals_job(65534, step, line, sizeof(line));
	ck_assert_str_eq(line, want);
	dac_caps(true);
	cl_free(sub);
}
END_TEST

/*
 * A task shown alone: met when the job table is full (its step has no
 * room), Prometheus scrapes its series. When room is made (the other
 * jobs' cgroups are gone) it joins its step: the step's counter starts
 * at 0, not at the task's counts Prometheus saw, and goes on from there;
 * TOTALS has all of them under the step.
 */
START_TEST(slurm_shown_task_ends)
{
	char rel_task[256], rel_step[256], line[4200], want[512];
	__u32 step, task, k;
	struct cl *sub;
	unsigned int i;
	long long v;
	char *text;

	if (!sl.mnt[0] || geteuid()) {
		fprintf(stderr, "slurm_shown_task_ends: no cgroup2 mount of ours, skipped\n");
		return;
	}
	step = slurm_mk("/step_2");
	slurm_mk("/step_2/user");
	task = slurm_mk("/step_2/user/task_0");
	snprintf(rel_step, sizeof(rel_step), "%s/step_2", sl.rel);
	snprintf(rel_task, sizeof(rel_task), "%s/step_2/user/task_0", sl.rel);
	sub = slurm_start();
	totals_job(0, task, line, sizeof(line));	/* jobs checked now */
	feed_thread(sub, GHOST_A, task, "task", 65534, 10);
	/* The rest of the table: cgroups no map knows, gone at the next check. */
	for (k = 1; k < MG_TOTALS_JOBS; k++) {
		static char rec[256];
		struct mg_record_hdr h = { .event_id = 16, .cgroup = 4200000000U + k,
					   .pid = 1, .tgid = 1 };

		ck_assert_int_gt(mg_record_encode_kprobe(rec, sizeof(rec), &h, NULL, 0), 0);
		mg_totals_add(fx.totals, (const void *)rec);
	}
	text = prom_page();
	ck_assert_int_eq(events_of(text, rel_task), 10);
	ck_assert_int_eq(events_of(text, rel_step), -1);
	free(text);

	for (i = 0;; i++) {
		ck_assert_msg(i < 100, "the step's series never came");
		usleep(50000);
		text = prom_page();
		v = events_of(text, rel_step);
		if (v >= 0)
			break;
		free(text);
	}
	ck_assert_msg(v == 0, "the step's series starts at %lld", v);
	ck_assert_int_eq(events_of(text, rel_task), -1);
	free(text);
	feed_thread(sub, GHOST_A, task, NULL, 0, 5);
	for (i = 0;; i++) {
		ck_assert_msg(i < 100, "the step's series never counted on");
		usleep(50000);
		text = prom_page();
		v = events_of(text, rel_step);
		free(text);
		if (v)
			break;
	}
	ck_assert_int_eq(v, 5);
	totals_job(0, step, line, sizeof(line));
	snprintf(want, sizeof(want), "job %u %s events=15 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=%u slurm_step=2 uid=65534",
		 step, rel_step, sl.id);
	ck_assert_str_eq(line, want);
	cl_free(sub);
}
END_TEST

/* read(2) calls of the server's thread so far (the thread not this one). */
static unsigned long long server_reads(void)
{
	char path[64], line[128];
	unsigned long long v = 0;
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	FILE *f;
	long tid = syscall(SYS_gettid), other = 0;

	ck_assert_ptr_nonnull(dir);
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.' && atol(d->d_name) != tid) {
			ck_assert_msg(!other, "more than one other thread");
			other = atol(d->d_name);
		}
	closedir(dir);
	snprintf(path, sizeof(path), "/proc/self/task/%ld/io", other);
	f = fopen(path, "re");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		sscanf(line, "syscr: %llu", &v);
	fclose(f);
	return v;
}

/*
 * Chunks whose records' cgroups need no lookup: the server reads no
 * inotify event for them (at most the queue's wakeup, once a chunk).
 */
START_TEST(chunks_no_inotify_reads)
{
	static char chunk[8192];
	unsigned long long r0, r1;
	struct cl *sub;
	unsigned int i, len;
	char line[64];
	size_t off;

	start();
	sub = cl_new(connect_fd(0));
	cl_expect(sub, "SUBSCRIBE FORMAT binary\n", "OK subscribed");
	r0 = server_reads();
	for (i = 0; i < 300; i++) {
		off = put_rec(chunk, 0, 0, GHOST_A, 1, false, NULL);
		off = put_rec(chunk, off, 0, GHOST_A, 1, false, NULL);
		ck_assert_int_eq(feed(0, chunk, off), 0);
		ck_assert(cl_line(sub, line, sizeof(line), 5000));
		ck_assert_msg(sscanf(line, "B %u", &len) == 1 && len == off, "%s", line);
		cl_bytes(sub, chunk, len);
	}
	r1 = server_reads();
	fprintf(stderr, "300 chunks: %llu reads by the server\n", r1 - r0);
	ck_assert_uint_le(r1 - r0, 300 + 10);
	cl_free(sub);
}
END_TEST

static Suite *server_suite(void)
{
	Suite *s = suite_create("server");
	TCase *tc = tcase_create("server");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, idle_closed);
	tcase_add_test(tc, pipeliners_bounded_and_cut);
	tcase_add_test(tc, pipelined_replies_all_in_order);
	tcase_add_test(tc, agg_skipped_reports);
	tcase_add_test(tc, stalled_stream_idle);
	tcase_add_test(tc, per_user_limit);
	tcase_add_test(tc, listener_slots);
	tcase_add_test(tc, request_deadline);
	tcase_add_test(tc, request_clock_stands_while_full);
	tcase_add_test(tc, request_clock_per_line);
	tcase_add_test(tc, request_flood);
	tcase_add_test(tc, emfile_no_spin);
	tcase_add_test(tc, totals_command);
	tcase_add_test(tc, reads_queued_when_wanted);
	tcase_add_test(tc, attribution);
	tcase_add_test(tc, access_by_uid);
	tcase_add_test(tc, agg_net);
	tcase_add_test(tc, names_reset);
	tcase_add_test(tc, probe_names);
	tcase_add_test(tc, drops_told_after_burst);
	tcase_add_test(tc, frames_in_order_through_small_socket);
	tcase_add_test(tc, stalled_cut_off_while_buffer_takes);
	tcase_add_test(tc, framing_names);
	tcase_add_test(tc, chunks_no_inotify_reads);
	suite_add_tcase(s, tc);
	tc = tcase_create("slurm");
	tcase_add_unchecked_fixture(tc, slurm_setup, slurm_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, slurm_user_not_root);
	tcase_add_test(tc, slurm_task_named_later);
	tcase_add_test(tc, slurm_shown_task_ends);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return tu_run(server_suite());
}
