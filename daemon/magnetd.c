// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd: the node's event server (docs/magnetd.md).
 *
 *   collection thread (collect.c)         server thread (server.c, main)
 *   reads of every cpuN ring ──sink─┬──► totals ◄──────── TOTALS, monitors
 *                                   ├──► chunk queue ──► clients:
 *                                   │                    SUBSCRIBE, AGG,
 *                                   └──► trace writer    HELLO, STATS...
 *                                        (tracewr.c)
 *
 * The sink never blocks: the chunk queue and the trace writer's queue
 * refuse what does not fit and the loss is counted, so a slow client, disk
 * or network can never hold the rings back. The sink counts the totals
 * itself; it queues a read for the server only when the server wants it
 * (mg_server_wants).
 */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include "auth.h"
#include "chunkq.h"
#include "collect.h"
#include "config.h"
#include "ctl.h"
#include "record.h"
#include "log.h"
#include "rings.h"
#include "notify.h"
#include "sensor.h"
#include "server.h"
#include "stats.h"
#include "totals.h"
#include "tracewr.h"

#define TRACE_PREFIX	"magnetd"
#define DRAIN_MS	2000

struct daemon {
	int argc;
	char **argv;
	struct mg_config cfg;
	struct mg_collect *collect;
	struct mg_chunkq *queue;
	struct mg_tracewr *trace;
	struct mg_server *server;
	_Atomic __u64 queue_dropped;
	_Atomic __u64 queue_drop_chunks;	/* TASK records may be in them */
	struct mg_totals *totals;
	_Atomic bool streaming;		/* the server wants every read */
	struct mg_server_env env;	/* what the sink and the server share */
	int ready_fd;		/* the parent waits on it (background start) */
};

/* Collection thread: hand a read on. Never blocks. */
static void sink(void *arg, __u32 cpu, const void *data, size_t len,
		 __u64 records, __u64 tasks)
{
	struct daemon *d = arg;

	if (d->trace)
		mg_tracewr_put(d->trace, cpu, data, len);	/* counts drops */
	if (!mg_server_wants(&d->env, data, len, tasks))
		return;
	if (mg_chunkq_put(d->queue, cpu, data, len)) {
		atomic_fetch_add(&d->queue_dropped, records);
		atomic_fetch_add(&d->queue_drop_chunks, 1);
	}
}

static void collect_log(void *arg, int prio, const char *msg)
{
	mg_log(prio, "%s", msg);
}

static void trace_log(void *arg, const char *msg)
{
	mg_log(LOG_ERR, "%s", msg);
}

/* Fail before or after going to the background: the parent says why. */
__attribute__((format(printf, 2, 3), noreturn))
static void fail(struct daemon *d, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mg_log(LOG_ERR, "%s", msg);
	if (d->ready_fd >= 0 && write(d->ready_fd, msg, strlen(msg)) < 0)
		_exit(1);
	mg_notify("STATUS=failed");
	exit(1);
}

/*
 * Background start: the parent stays until the child is serving or has
 * failed, so `magnetd` on a terminal (or an init script) gets the real
 * status and message.
 */
static void daemonize(struct daemon *d)
{
	int p[2], fd;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		fail(d, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		fail(d, "fork: %s", strerror(errno));
	if (pid > 0) {
		char msg[1024];
		ssize_t n;

		close(p[1]);
		n = read(p[0], msg, sizeof(msg) - 1);
		if (n > 0 && !memcmp(msg, "OK", 2))
			_exit(0);
		if (n > 0) {
			msg[n] = '\0';
			fprintf(stderr, "magnetd: %s\n", msg);
		} else {
			fprintf(stderr, "magnetd: failed to start (see the system log)\n");
		}
		_exit(1);
	}
	close(p[0]);
	d->ready_fd = p[1];
	setsid();
	if (chdir("/"))
		fail(d, "chdir /: %s", strerror(errno));
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
}

static void ready(struct daemon *d)
{
	char status[256];

	snprintf(status, sizeof(status),
		 "READY=1\nSTATUS=serving on %s, reading %u CPUs",
		 d->cfg.listen, mg_collect_ncpus(d->collect));
	mg_notify(status);
	if (d->ready_fd >= 0) {
		if (write(d->ready_fd, "OK", 2) < 0)
			mg_log(LOG_WARNING, "cannot tell the parent we are up");
		close(d->ready_fd);
		d->ready_fd = -1;
	}
}

/* "kprobe tcp_sendmsg handler sock" -> magnet-ctl probe add ... */
static void apply_probes(struct daemon *d)
{
	unsigned int i;

	for (i = 0; i < d->cfg.nprobes; i++) {
		char *copy = strdup(d->cfg.probes[i]), *argv[64], *w, *save;
		char *errbuf = NULL, *outbuf = NULL;
		size_t errlen = 0, outlen = 0;
		FILE *err, *out;
		int argc = 0, ret;

		if (!copy)
			fail(d, "out of memory");
		argv[argc++] = "probe";
		argv[argc++] = "add";
		for (w = strtok_r(copy, " \t", &save); w && argc < 63;
		     w = strtok_r(NULL, " \t", &save))
			argv[argc++] = w;
		argv[argc] = NULL;
		err = open_memstream(&errbuf, &errlen);
		out = open_memstream(&outbuf, &outlen);
		if (!err || !out)
			fail(d, "out of memory");
		ret = ctl_exec(argc, argv, out, err);	/* prints "ID NAME" */
		fclose(err);
		fclose(out);
		if (outlen && outbuf[outlen - 1] == '\n')
			outbuf[--outlen] = '\0';
		if (errlen && errbuf[errlen - 1] == '\n')
			errbuf[--errlen] = '\0';
		/* A probe left from an earlier run is what was asked for. */
		if (ret && !strstr(errbuf, "exists"))
			fail(d, "probe '%s': %s", d->cfg.probes[i],
			     errlen ? errbuf : "failed");
		if (ret)
			mg_log(LOG_NOTICE, "probe '%s': already there", d->cfg.probes[i]);
		else
			mg_log(LOG_INFO, "probe '%s' added: %s", d->cfg.probes[i], outbuf);
		free(errbuf);
		free(outbuf);
		free(copy);
	}
}

static void open_trace(struct daemon *d)
{
	struct mg_sensor_version v;
	struct mg_trace_info info;
	unsigned int *cpus, n;
	size_t probes_len = 0;
	char *probes, why[256];
	int ret, dirfd;

	if (!d->cfg.trace_dir[0])
		return;
	ret = mg_sensor_cpus(d->cfg.dir, &cpus, &n);
	if (ret)
		fail(d, "%s: no cpuN files: %s", d->cfg.dir, strerror(-ret));
	/* Trace files hold kernel addresses: a directory no one else controls. */
	dirfd = mg_tracewr_dir_open(d->cfg.trace_dir, why, sizeof(why));
	if (dirfd < 0)
		fail(d, "trace directory %s: %s", d->cfg.trace_dir, why);
	mg_sensor_version(d->cfg.dir, &v);
	probes = mg_sensor_read(d->cfg.dir, "probes", &probes_len);
	mg_sensor_trace_info(&info, &v, cpus[n - 1] + 1, probes, probes_len);
	free(cpus);
	ret = mg_tracewr_open(d->cfg.trace_dir, dirfd, TRACE_PREFIX, d->cfg.trace_size,
			      d->cfg.trace_queue, &info, d->cfg.dir, trace_log,
			      NULL, &d->trace);
	free(probes);
	if (ret)
		fail(d, "trace writer: %s", strerror(-ret));
}

/* The session's trailer: what was read per CPU, and the kernel's counts. */
static void close_trace(struct daemon *d)
{
	unsigned int ncpus = mg_collect_ncpus(d->collect), i;
	struct mg_collect_cpu *cs;
	struct mg_trailer tr = { 0 };
	struct mg_tracewr_stats st;
	struct mg_sensor_version v;
	struct mg_kstats *ks = NULL;
	size_t nks = 0, len;
	char *text;

	if (!d->trace)
		return;
	cs = calloc(ncpus, sizeof(*cs));
	mg_tracewr_stats(d->trace, &st);
	tr.cpu = calloc(ncpus, sizeof(*tr.cpu));
	if (!cs || !tr.cpu || st.drop_chunks || st.write_errors) {
		/*
		 * Chunks that never reached the files: the session's counts
		 * would not match them. The writer's own per-file trailer
		 * does (the losses are in the log and STATS).
		 */
		mg_tracewr_close(d->trace, NULL);
		goto out;
	}
	mg_collect_cpu_stats(d->collect, cs);
	mg_collect_version(d->collect, &v);
	text = mg_sensor_read(d->cfg.dir, "stats", &len);
	if (text && mg_stats_parse(text, len, &ks, &nks))
		nks = 0;
	free(text);
	for (i = 0; i < ncpus; i++) {
		struct mg_trailer_cpu *t = &tr.cpu[tr.ncpus];
		const struct mg_kstats *k = mg_stats_find(ks, nks, i);

		if (!cs[i].bytes && !k)
			continue;
		t->cpu = i;
		t->records = cs[i].records;
		t->bytes = cs[i].bytes;
		t->lost = cs[i].lost;
		/* Kernel counts are since its load: only for one load. */
		if (k && !mg_collect_reloads(d->collect)) {
			t->flags |= MG_TRAILER_KSTATS;
			t->kstats = *k;
		}
		tr.ncpus++;
	}
	{
		__u64 c1 = mg_trace_clock_now(v.clock);

		tr.stop_realtime_ns = mg_now_ns(CLOCK_REALTIME);
		tr.stop_clock_ns = c1 + (mg_trace_clock_now(v.clock) - c1) / 2;
	}
	if (mg_tracewr_close(d->trace, &tr))
		mg_log(LOG_WARNING, "the trace had write errors (see above)");
out:
	mg_tracewr_stats(d->trace, &st);
	mg_log(LOG_INFO, "trace: %llu files, %llu bytes, %llu records; dropped %llu (queue full) and %llu (disk errors)",
	       (unsigned long long)st.files, (unsigned long long)st.bytes,
	       (unsigned long long)st.records,
	       (unsigned long long)st.drop_records,
	       (unsigned long long)st.err_records);
	free(ks);
	free(tr.cpu);
	free(cs);
}

static void summary(struct daemon *d)
{
	unsigned int ncpus = mg_collect_ncpus(d->collect), i;
	struct mg_collect_cpu *cs = calloc(ncpus, sizeof(*cs));
	__u64 records = 0, lost = 0;

	if (!cs)
		return;
	mg_collect_cpu_stats(d->collect, cs);
	for (i = 0; i < ncpus; i++) {
		records += cs[i].records;
		lost += mg_lost_total(&cs[i].lost);
	}
	mg_log(LOG_INFO, "stopped: read %llu records (the kernel reported %llu lost); %llu not served (server queue full)",
	       (unsigned long long)records, (unsigned long long)lost,
	       (unsigned long long)atomic_load(&d->queue_dropped));
	free(cs);
}

static void reload(struct daemon *d)
{
	struct mg_config cur;
	char err[MG_CONFIG_ERR_MAX], keys[512];

	mg_notify("RELOADING=1");
	if (mg_config_load(&cur, d->argc, d->argv, err, sizeof(err)) ||
	    mg_config_check(&cur, err, sizeof(err))) {
		mg_log(LOG_ERR, "reload: %s; keeping the running configuration", err);
		mg_config_free(&cur);
		mg_notify("READY=1");
		return;
	}
	if (mg_config_restart_keys(&d->cfg, &cur, keys, sizeof(keys)))
		mg_log(LOG_WARNING, "reload: %s changed: takes effect at the next start",
		       keys);
	mg_server_reconfigure(d->server, &cur);
	mg_log_open(cur.log, d->cfg.foreground);
	/* Keep what is not applied: the running daemon's truth. */
	memcpy(d->cfg.allow, cur.allow, sizeof(cur.allow));
	d->cfg.nallow = cur.nallow;
	d->cfg.max_clients = cur.max_clients;
	d->cfg.client_queue = cur.client_queue;
	d->cfg.client_timeout_ms = cur.client_timeout_ms;
	d->cfg.idle_timeout_ms = cur.idle_timeout_ms;
	d->cfg.max_clients_per_user = cur.max_clients_per_user;
	d->cfg.root_reserve = cur.root_reserve;
	d->cfg.agg_top = cur.agg_top;
	d->cfg.log = cur.log;
	strcpy(d->cfg.munge_socket, cur.munge_socket);
	mg_auth_munge_socket(d->cfg.munge_socket);
	mg_config_free(&cur);
	mg_log(LOG_INFO, "reloaded the configuration");
	mg_notify("READY=1");
}

static void on_signal(void *arg, int sig)
{
	struct daemon *d = arg;

	switch (sig) {
	case SIGHUP:
		reload(d);
		break;
	case SIGUSR1:
		mg_collect_release(d->collect);
		break;
	default:
		mg_log(LOG_INFO, "%s: stopping", strsignal(sig));
		mg_server_quit(d->server);
		break;
	}
}

int main(int argc, char **argv)
{
	struct daemon d = { .argc = argc, .argv = argv, .ready_fd = -1 };
	struct mg_collect_cfg ccfg;
	struct mg_sensor_version v;
	char err[1024];
	sigset_t sigs;
	int ret, lfd, sfd, pfd = -1, mfd = -1, ufd = -1;
	const struct {
		const char *key, *what;
		const struct mg_listener *l;
		int *fd;
		enum mg_listen_kind kind;
	} monitors[] = {
		{ "prometheus", "Prometheus /metrics", &d.cfg.prometheus, &pfd,
		  MG_LISTEN_PROMETHEUS },
		{ "supermon", "Supermon's mon protocol", &d.cfg.supermon, &mfd,
		  MG_LISTEN_SUPERMON },
	};
	size_t i;

	/*
	 * Buffers of 128 KiB and more (client queues grow to client_queue)
	 * always get pages of their own, given back when freed: glibc's
	 * dynamic threshold would otherwise move them into the heap after
	 * the first such free, where the chains of their growth fragment it,
	 * and the daemon's peak would depend on the order clients came and
	 * went. Setting the threshold turns the dynamic one off.
	 */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	/*
	 * No transparent huge pages: kernels from 6.7 align larger anonymous
	 * mappings (malloc's thread heaps) on 2 MiB, and with THP "always"
	 * a heap holding a few KiB then faults in a whole huge page. The
	 * daemon's memory is small buffers under a bound (client_queue):
	 * on 6.12 its peak with 20 stalled clients grew 1.8 MB by THP alone.
	 * A kernel without the prctl (before 3.15) just keeps THP.
	 */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	ret = mg_config_load(&d.cfg, argc, argv, err, sizeof(err));
	if (ret == 1)
		return 0;
	if (ret) {
		fprintf(stderr, "magnetd: %s\n", err);
		mg_config_usage(stderr);
		return 1;
	}
	if (mg_config_check(&d.cfg, err, sizeof(err))) {
		fprintf(stderr, "magnetd: %s\n", err);
		return 1;
	}
	mg_log_open(d.cfg.log, d.cfg.foreground);
	mg_auth_munge_socket(d.cfg.munge_socket);

	/* What can be said on the terminal is checked before forking. */
	ret = mg_sensor_version(d.cfg.dir, &v);
	if (ret == -ENOENT && access("/sys/kernel/debug", X_OK) && errno == EACCES)
		ret = -EACCES;
	if (ret == -EACCES || ret == -EPERM)
		fail(&d, "%s: permission denied: magnetd must run as root (the rings are root-only debugfs files; probes need CAP_NET_ADMIN and CAP_SYS_ADMIN)",
		     d.cfg.dir);
	if (ret == -ENOENT && mg_sensor_loaded())
		fail(&d, "%s/version not found: " MG_SENSOR_NO_DEBUGFS, d.cfg.dir);
	if (ret == -ENOENT)
		fail(&d, "magnet module not loaded: %s/version not found (modprobe magnet, or insmod magnet.ko; debugfs must be mounted on /sys/kernel/debug)",
		     d.cfg.dir);
	if (ret)
		fail(&d, "%s/version: %s", d.cfg.dir, strerror(-ret));
	lfd = mg_server_listen((struct sockaddr *)&d.cfg.listen_addr,
			       d.cfg.listen_len, err, sizeof(err));
	if (lfd < 0)
		fail(&d, "%s: %s", d.cfg.listen, err);
	if (d.cfg.socket[0]) {
		ufd = mg_server_listen_unix(d.cfg.socket, err, sizeof(err));
		if (ufd < 0)
			fail(&d, "socket: %s", err);
	}
	/* The monitors' listeners, opt-in; bound before going to the
	 * background, so a taken port fails the start. */
	for (i = 0; i < sizeof(monitors) / sizeof(monitors[0]); i++) {
		const struct mg_listener *l = monitors[i].l;

		if (!l->len)
			continue;
		*monitors[i].fd = mg_server_listen((const struct sockaddr *)&l->addr,
						   l->len, err, sizeof(err));
		if (*monitors[i].fd < 0)
			fail(&d, "%s %s: %s", monitors[i].key, l->text, err);
	}
	/* Before its own probes write: only empty rings are grown. */
	mg_rings_grow(d.cfg.dir, d.cfg.ring_size, d.cfg.ring_memory, collect_log, NULL);
	apply_probes(&d);
	if (!d.cfg.foreground)
		daemonize(&d);

	/* Threads inherit the mask: signals arrive on the signalfd only. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0)
		fail(&d, "signalfd: %s", strerror(errno));

	ret = mg_chunkq_create(d.cfg.queue, &d.queue);
	if (ret)
		fail(&d, "queue of %zu bytes: %s", d.cfg.queue, strerror(-ret));
	ccfg = (struct mg_collect_cfg){
		.dir = d.cfg.dir,
		.read_buffer = d.cfg.read_buffer,
		.watermark = d.cfg.watermark,
		.latency_ms = d.cfg.latency_ms,
		.mapped = d.cfg.read == MG_READ_MAPPED,
		.ring_size = d.cfg.ring_size,
		.ring_memory = d.cfg.ring_memory,
	};
	ret = mg_totals_create(d.cfg.export_jobs, &d.totals);
	if (ret)
		fail(&d, "totals: %s", strerror(-ret));
	mg_totals_set_settle(d.totals, d.cfg.net_settle_ms * 1000000ULL);
	/* The trace is open, the totals and queue are there, before the first read. */
	open_trace(&d);
	d.env = (struct mg_server_env){
		.queue = d.queue,
		.trace = d.trace,
		.totals = d.totals,
		.streaming = &d.streaming,
		.queue_dropped = &d.queue_dropped,
		.queue_drop_chunks = &d.queue_drop_chunks,
	};
	ret = mg_collect_start(&ccfg, sink, &d, collect_log, NULL, &d.collect,
			       err, sizeof(err));
	if (ret)
		fail(&d, "%s", err);
	d.env.collect = d.collect;
	ret = mg_server_create(&d.cfg, lfd, &d.env, &d.server);
	if (ret)
		fail(&d, "server: %s", strerror(-ret));
	if (ufd >= 0) {
		ret = mg_server_add_listener(d.server, ufd, MG_LISTEN_MAGNET);
		if (ret)
			fail(&d, "socket %s: %s", d.cfg.socket, strerror(-ret));
		mg_log(LOG_INFO, "local clients on %s", d.cfg.socket);
	}
	for (i = 0; i < sizeof(monitors) / sizeof(monitors[0]); i++) {
		if (*monitors[i].fd < 0)
			continue;
		ret = mg_server_add_listener(d.server, *monitors[i].fd,
					     monitors[i].kind);
		if (ret)
			fail(&d, "%s %s: %s", monitors[i].key,
			     monitors[i].l->text, strerror(-ret));
		mg_log(LOG_INFO, "%s on %s", monitors[i].what,
		       monitors[i].l->text);
	}
	mg_log(LOG_INFO, "serving on %s; reading %u CPUs from %s%s%s",
	       d.cfg.listen, mg_collect_ncpus(d.collect), d.cfg.dir,
	       d.cfg.trace_dir[0] ? "; trace to " : "", d.cfg.trace_dir);
	ready(&d);

	ret = mg_server_run(d.server, sfd, on_signal, &d);

	mg_notify("STOPPING=1");
	mg_collect_stop(d.collect);	/* the last reads go to the sink */
	mg_server_drain(d.server, DRAIN_MS);
	close_trace(&d);
	summary(&d);
	mg_server_free(d.server);
	if (ufd >= 0)
		unlink(d.cfg.socket);	/* no client finds a dead socket */
	mg_collect_free(d.collect);
	mg_tracewr_free(d.trace);
	mg_chunkq_free(d.queue);
	mg_totals_free(d.totals);
	mg_config_free(&d.cfg);
	close(lfd);
	close(sfd);
	return ret ? 1 : 0;
}
