// SPDX-License-Identifier: GPL-2.0
/*
 * mdtest: the VM suite's magnetd client. It speaks the protocol of
 * docs/protocol.md over a real TCP connection to a real magnetd and checks
 * what comes back against ground truth it makes itself (its own children
 * call getpid() an exact number of times). Exit 0 means every check held;
 * a failure says which and why, and exits 1.
 *
 *   mdtest cmd LINE...           send each LINE, print each reply (tables
 *                                whole) on stdout
 *   mdtest account N             a binary subscriber, filtered on a child's
 *                                tgid: records + kernel LOST + D drops == N,
 *                                and records == N
 *   mdtest fanout S N            S JSON subscribers and one that never
 *                                reads: each of the S gets all N records of
 *                                the child, the stalled one is cut off
 *   mdtest agg CGA CGB NA NB     two children in cgroups CGA and CGB (paths
 *                                under /sys/fs/cgroup) fire NA and NB and
 *                                exit, and CGB is removed, before the
 *                                daemon reads a record: AGG tgid and AGG
 *                                cgroup count exactly that, named by the
 *                                TASK records and the records' cgroup
 *   mdtest stalled               connect, SUBSCRIBE, never read (until
 *                                killed); prints "subscribed"
 *   mdtest send N                a workload: N sends of 100 bytes over TCP
 *                                on 127.0.0.1 (the demo's network job)
 *   mdtest hog MAX KIND...       open up to MAX connections, of the KINDs in
 *                                turn: idle (one HELLO, then nothing), agg
 *                                (AGG pid EVERY 10ms), sub (SUBSCRIBE), pipe
 *                                (small socket buffers; PROBES over and
 *                                over until the daemon takes no more); none
 *                                reads after its first reply. Stops at the first refusal; prints
 *                                "held N" and the refusal, then holds them
 *                                all until killed
 *   mdtest pipeline C N          C clients each pipeline N commands
 *                                (PROBES and HELLO in turn) and read them
 *                                slowly: every reply comes, in order
 *   mdtest wait-stat KEY N SECS  poll STATS until KEY >= N (fail after
 *                                SECS); prints how long it took
 *   mdtest names N               with a kprobe and a kretprobe on
 *                                __x64_sys_getpid: PROBES names them apart
 *                                (symbol= the same), and a subscriber to
 *                                each name gets exactly the child's N
 *                                records of that probe, named so in JSON;
 *                                TOTALS names them apart too
 *   mdtest burst N               a JSON subscriber reads nothing while the
 *                                child fires N (more than its queue holds),
 *                                then reads: records + LOST + D lines == N,
 *                                with no record after the burst to carry
 *                                the last D line
 *   mdtest comm N                three children named "OK", "ERR" and
 *                                "D 1", in cgroups of those names, fire N
 *                                each: AGG comm and AGG cgroup count them
 *                                exactly, every report line is framed as
 *                                docs/protocol.md says (no entry line reads
 *                                as a reply), and TOTALS has the jobs
 *   mdtest http PATH             GET PATH (a Prometheus listener): the
 *                                response
 *   mdtest mon REQ...            Supermon requests: each reply line
 *   mdtest hold N                N connections that send nothing, held
 *                                until killed; prints "held N"
 *   mdtest slow-http SECS        an HTTP request a byte every 500 ms:
 *                                when the daemon closed it (fails if not
 *                                within SECS)
 *   mdtest flood KIND SECS       cheap requests as fast as the daemon
 *                                takes them: nl (blank Supermon lines),
 *                                sample (Supermon S), aggnet (AGG net)
 *   mdtest drain SECS            a subscriber reading everything
 *
 * cmd prints each reply, with the table lines of PROBES, STATS and TOTALS,
 * and for AGG its first report that counted something.
 *
 * The probe must be a kprobe on __x64_sys_getpid (added by the caller).
 * It connects to magnetd's Unix socket, /run/magnet/magnetd.sock (the
 * kernel tells magnetd who it is), or to MDTEST_ADDR: a socket path or
 * HOST:PORT (TCP: anonymous unless AUTH). MDTEST_UID=N runs the command as
 * that uid (and gid N): another user's connections.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <linux/magnet.h>

#define TIMEOUT_NS	(60ULL * 1000000000ULL)

struct conn {
	int fd;
	char buf[1 << 19];	/* a binary frame is up to a read buffer */
	size_t len;
	bool eof;
};

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("mdtest: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* rcvbuf, mss: SO_RCVBUF, TCP_MAXSEG (0: the default). */
static void conn_open_bufs(struct conn *c, int rcvbuf, int mss)
{
	const char *addr = getenv("MDTEST_ADDR");
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(8650) };
	char host[64] = "127.0.0.1";

	if (!addr || addr[0] == '/') {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s",
			 addr ? addr : "/run/magnet/magnetd.sock");
		memset(c, 0, sizeof(*c));
		c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		/* No receive buffer of its own: magnetd's send buffer holds. */
		if (c->fd >= 0 && rcvbuf)
			setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
		if (c->fd < 0 || connect(c->fd, (void *)&sun, sizeof(sun)))
			die("connect %s: %s", sun.sun_path, strerror(errno));
		return;
	}
	if (addr) {
		const char *colon = strrchr(addr, ':');

		if (!colon || colon - addr >= (long)sizeof(host))
			die("MDTEST_ADDR: want HOST:PORT");
		memcpy(host, addr, colon - addr);
		host[colon - addr] = '\0';
		sin.sin_port = htons(atoi(colon + 1));
	}
	inet_pton(AF_INET, host, &sin.sin_addr);
	memset(c, 0, sizeof(*c));
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/*
	 * Before connect, so the first window advertised is already small,
	 * and the daemon's end learns the MSS (its send buffer is sized by
	 * it).
	 */
	if (c->fd >= 0 && mss)
		setsockopt(c->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof(mss));
	if (c->fd >= 0 && rcvbuf)
		setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (c->fd < 0 || connect(c->fd, (void *)&sin, sizeof(sin)))
		die("connect %s:%u: %s", host, ntohs(sin.sin_port), strerror(errno));
}

static void conn_open_rcvbuf(struct conn *c, int rcvbuf)
{
	conn_open_bufs(c, rcvbuf, 0);
}

static void conn_open(struct conn *c)
{
	conn_open_bufs(c, 0, 0);
}

/*
 * The line and its newline in one write: a daemon that refuses the
 * connection closes it at once, and a second write would meet its reset.
 * False, errno set, if the write failed.
 */
static bool conn_try_send(struct conn *c, const char *line)
{
	struct iovec iov[2] = { { (void *)line, strlen(line) }, { "\n", 1 } };

	return writev(c->fd, iov, 2) == (ssize_t)(iov[0].iov_len + 1);
}

static void conn_send(struct conn *c, const char *line)
{
	if (!conn_try_send(c, line))
		die("send: %s", strerror(errno));
}

/* Read more; false at EOF. */
static bool fill(struct conn *c, int timeout_ms)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	ssize_t n;

	if (c->len == sizeof(c->buf))
		die("a line longer than %zu bytes", sizeof(c->buf));
	if (poll(&p, 1, timeout_ms) <= 0)
		return true;
	n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
	if (n <= 0) {
		c->eof = true;
		return false;
	}
	c->len += n;
	return true;
}

static void take(struct conn *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

/* The next line into out (NUL-terminated, no '\n'); false at EOF. */
static bool get_line(struct conn *c, char *out, size_t size)
{
	uint64_t end = now_ns() + TIMEOUT_NS;

	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);

		if (nl) {
			size_t n = nl - c->buf;

			if (n >= size)
				die("line of %zu bytes", n);
			memcpy(out, c->buf, n);
			out[n] = '\0';
			take(c, n + 1);
			return true;
		}
			if (c->eof || !fill(c, 100))
			return false;
		if (now_ns() > end)
			die("no line within %llu s", TIMEOUT_NS / 1000000000ULL);
	}
}

/* Send a command, expect "OK..." (returned in out). */
static void command(struct conn *c, const char *line, char *out, size_t size)
{
	conn_send(c, line);
	if (!get_line(c, out, size))
		die("'%s': connection closed", line);
	if (strncmp(out, "OK", 2))
		die("'%s': %s", line, out);
}

static int cmd_cmd(int argc, char **argv)
{
	struct conn c;
	char line[8192];

	conn_open(&c);
	for (int i = 0; i < argc; i++) {
		unsigned long n;
		char word[32];

		conn_send(&c, argv[i]);
		if (!get_line(&c, line, sizeof(line)))
			die("'%s': connection closed", argv[i]);
		puts(line);
		/* "OK <n> probes|cpus|totals": n table lines follow. */
		if (sscanf(line, "OK %lu %31s", &n, word) == 2 &&
		    (!strcmp(word, "probes") || !strcmp(word, "cpus") ||
		     !strcmp(word, "totals")))
			while (n-- && get_line(&c, line, sizeof(line)))
				puts(line);
		/* "OK agg": the first report with entries (of the next 20). */
		for (int k = 0, agg = !strncmp(line, "OK agg", 6); agg && k < 20; k++) {
			if (!get_line(&c, line, sizeof(line)))
				die("AGG: connection closed");
			puts(line);
			if (sscanf(line, "A %31s %lu", word, &n) != 2)
				die("AGG: not a report: %s", line);
			if (!n)
				continue;
			while (n-- && get_line(&c, line, sizeof(line)))
				puts(line);
			break;
		}
	}
	close(c.fd);
	return 0;
}

/* A child that fires n getpid() once told to, and then waits. */
struct child {
	pid_t pid;
	int go[2];
};

/* The comm the next child takes before it fires (NULL: mdtest's). */
static const char *child_comm;

static void child_start(struct child *ch, int n, const char *cgroup,
			unsigned int linger_ms)
{
	if (pipe(ch->go))
		die("pipe");
	ch->pid = fork();
	if (ch->pid < 0)
		die("fork");
	if (!ch->pid) {
		char c;

		close(ch->go[1]);
		if (child_comm && prctl(PR_SET_NAME, child_comm))
			_exit(2);
		if (read(ch->go[0], &c, 1) != 1)
			_exit(2);
		for (int i = 0; i < n; i++)
			syscall(SYS_getpid);
		usleep(linger_ms * 1000);
		_exit(0);
	}
	close(ch->go[0]);
	/* The parent moves it: the child must make no getpid() but its n. */
	if (cgroup) {
		char path[512];
		FILE *f;

		snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/cgroup.procs", cgroup);
		f = fopen(path, "w");
		if (!f || fprintf(f, "%d\n", ch->pid) < 0 || fclose(f))
			die("moving %d into %s", ch->pid, path);
	}
}

static void child_go(struct child *ch)
{
	if (write(ch->go[1], "x", 1) != 1)
		die("cannot start the child");
	close(ch->go[1]);
}

static void child_wait(struct child *ch)
{
	int st;

	if (waitpid(ch->pid, &st, 0) != ch->pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("child %d failed", ch->pid);
}

/* Binary frames: count the child's records, LOST totals, D drops. */
struct tally {
	uint64_t records, other, lost, dropped;
	/* TASK records (not events; always sent), those naming the child. */
	uint64_t tasks, named;
};

static void read_binary(struct conn *c, pid_t tgid, struct tally *t, uint64_t want)
{
	uint64_t end = now_ns() + TIMEOUT_NS;
	char line[256];

	while (t->records + t->lost + t->dropped < want) {
		unsigned long n;

		if (now_ns() > end)
			die("binary: %llu records, %llu lost, %llu dropped after %llu s; want %llu",
			    (unsigned long long)t->records, (unsigned long long)t->lost,
			    (unsigned long long)t->dropped, TIMEOUT_NS / 1000000000ULL,
			    (unsigned long long)want);
		if (!get_line(c, line, sizeof(line)))
			die("binary: connection closed");
		if (sscanf(line, "D %lu", &n) == 1) {
			t->dropped += n;
			continue;
		}
		if (sscanf(line, "B %lu", &n) != 1)
			die("binary: unexpected line '%s'", line);
		while (c->len < n)
			if (!fill(c, 1000) && c->len < n)
				die("binary: frame cut short");
		for (size_t off = 0; off < n;) {
			struct magnet_record r;

			memcpy(&r, c->buf + off, sizeof(r));
			if (r.size < MAGNET_RECORD_HEADER || r.size % 8 || off + r.size > n)
				die("binary: bad record size %u at %zu of %lu", r.size, off, n);
			if (r.event_id == MAGNET_EVENT_LOST) {
				struct magnet_lost l;

				memcpy(&l, c->buf + off + MAGNET_RECORD_HEADER, sizeof(l));
				t->lost += l.full + l.too_big + l.nesting + l.overwritten;
			} else if (r.event_id == MAGNET_EVENT_TASK) {
				struct magnet_task k;

				memcpy(&k, c->buf + off + MAGNET_RECORD_HEADER, sizeof(k));
				t->tasks++;
				t->named += r.pid == (uint32_t)tgid &&
					    !strncmp(k.comm, "mdtest", sizeof(k.comm));
			} else if (r.tgid == (uint32_t)tgid) {
				t->records++;
			} else {
				t->other++;
			}
			off += r.size;
		}
		take(c, n);
	}
}

static int cmd_account(int n)
{
	struct tally t = { 0 };
	struct child ch;
	char line[512];
	struct conn c;

	child_start(&ch, n, NULL, 0);
	conn_open(&c);
	snprintf(line, sizeof(line), "SUBSCRIBE tgid == %d FORMAT binary", ch.pid);
	command(&c, line, line, sizeof(line));
	child_go(&ch);
	read_binary(&c, ch.pid, &t, n);		/* while it fires */
	child_wait(&ch);
	printf("account: fired %d, delivered %llu, kernel lost %llu, daemon dropped %llu, other tgids %llu; TASK records %llu, naming the child %llu\n",
	       n, (unsigned long long)t.records, (unsigned long long)t.lost,
	       (unsigned long long)t.dropped, (unsigned long long)t.other,
	       (unsigned long long)t.tasks, (unsigned long long)t.named);
	if (!t.named)
		die("no TASK record named the child 'mdtest'");
	if (t.other)
		die("the filter let %llu other records through", (unsigned long long)t.other);
	if (t.records + t.lost + t.dropped != (uint64_t)n)
		die("accounting: %llu + %llu + %llu != %d", (unsigned long long)t.records,
		    (unsigned long long)t.lost, (unsigned long long)t.dropped, n);
	if (t.records != (uint64_t)n)
		die("records lost with a ring large enough: %llu of %d",
		    (unsigned long long)t.records, n);
	/* Nothing more may come: the count is exact, not at least. */
	if (fill(&c, 500) && c.len)
		die("%zu bytes after the last expected record", c.len);
	close(c.fd);
	return 0;
}

static int stat_value(const char *key, unsigned long long *v);

/*
 * S binary subscribers on the child's tgid, and one JSON subscriber to
 * everything that never reads. The readers' records (40 bytes each) fit
 * their queues, so each must get all of them however slowly it reads; the
 * stalled one's JSON overflows its queue and must be cut off, which STATS
 * says before the stalled one reads a byte (a read would be progress).
 */
static int cmd_fanout(int s, int n)
{
	struct conn *cs = calloc(s + 1, sizeof(*cs));
	unsigned long long cut0, cut = 0;
	char line[512];
	struct child ch;
	uint64_t end;

	if (!cs)
		die("out of memory");
	/* The stalled one may be cut off as soon as it subscribes. */
	if (stat_value("cut_off", &cut0))
		die("STATS before the subscribers");
	child_start(&ch, n, NULL, 0);
	conn_open_rcvbuf(&cs[s], 4096);
	command(&cs[s], "SUBSCRIBE", line, sizeof(line));
	for (int i = 0; i < s; i++) {
		conn_open(&cs[i]);
		snprintf(line, sizeof(line), "SUBSCRIBE tgid == %d FORMAT binary", ch.pid);
		command(&cs[i], line, line, sizeof(line));
	}
	child_go(&ch);
	for (int i = 0; i < s; i++) {
		struct tally t = { 0 };

		read_binary(&cs[i], ch.pid, &t, n);
		if (!t.named)
			die("fanout: subscriber %d: no TASK record named the child", i);
		if (t.records != (uint64_t)n || t.other)
			die("fanout: subscriber %d got %llu of %d records (lost %llu, dropped %llu, other %llu)",
			    i, (unsigned long long)t.records, n, (unsigned long long)t.lost,
			    (unsigned long long)t.dropped, (unsigned long long)t.other);
	}
	child_wait(&ch);
	printf("fanout: %d subscribers got all %d records each\n", s, n);

	/*
	 * Now overflow the stalled one (its queue, and the socket buffers
	 * the kernel may grow to megabytes): a flood from another process,
	 * which the readers' filter leaves out.
	 */
	{
		pid_t flood = fork();

		if (flood < 0)
			die("fork");
		if (!flood) {
			uint64_t stop = now_ns() + 3000000000ULL;

			while (now_ns() < stop)
				for (int i = 0; i < 1000; i++)
					syscall(SYS_getpid);
			_exit(0);
		}
		waitpid(flood, NULL, 0);
	}
	/*
	 * Still not reading until the daemon says it cut the client off
	 * (its timeout is 1 s here): a read now would be the client taking
	 * bytes, which rightly keeps it.
	 */
	end = now_ns() + TIMEOUT_NS;
	for (;;) {
		int r = stat_value("cut_off", &cut);

		if (!r && cut > cut0)
			break;
		if (now_ns() > end)
			die("the stalled subscriber was never cut off (%s: cut_off=%llu, %llu before)",
			    r ? "STATS failed last" : "STATS", cut, cut0);
		usleep(100000);
	}
	/* Then what it holds, and the end of the stream. */
	for (;;) {
		struct pollfd p = { .fd = cs[s].fd, .events = POLLIN };
		char buf[65536];
		ssize_t r;

		if (now_ns() > end)
			die("the stalled subscriber's connection was cut off but never ended");
		if (poll(&p, 1, 1000) <= 0)
			continue;
		r = read(cs[s].fd, buf, sizeof(buf));
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			break;
		if (r < 0)
			die("stalled: read: %s", strerror(errno));
	}
	printf("fanout: the stalled subscriber was cut off\n");
	return 0;
}

static int cmd_agg(const char *cga, const char *cgb, int na, int nb)
{
	uint64_t keys[2], counts[2] = { 0 }, cgk[2], cgc[2] = { 0 };
	char labels[2][256], cglabels[2][256], path[512], idname[64], line[512];
	struct child a, b;
	struct conn ct, cc;
	struct stat st;

	/* Gone at once: names come from the records, not from /proc. */
	child_start(&a, na, cga, 0);
	child_start(&b, nb, cgb, 0);
	keys[0] = a.pid;
	keys[1] = b.pid;
	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", cga);
	if (stat(path, &st))
		die("%s: %s", path, strerror(errno));
	cgk[0] = st.st_ino;
	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", cgb);
	if (stat(path, &st))
		die("%s: %s", path, strerror(errno));
	cgk[1] = st.st_ino;

	conn_open(&ct);
	conn_open(&cc);
	/* Only the two children: the filter applies to AGG too. */
	snprintf(line, sizeof(line), "SUBSCRIBE tgid == %d || tgid == %d", a.pid, b.pid);
	command(&ct, line, line, sizeof(line));
	command(&ct, "AGG tgid EVERY 200ms", line, sizeof(line));
	snprintf(line, sizeof(line), "SUBSCRIBE tgid == %d || tgid == %d", a.pid, b.pid);
	command(&cc, line, line, sizeof(line));
	command(&cc, "AGG cgroup EVERY 200ms", line, sizeof(line));
	child_go(&a);
	child_go(&b);
	child_wait(&a);
	child_wait(&b);
	/* CGB goes too: its records still name it by its path. */
	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", cgb);
	if (rmdir(path))
		die("rmdir %s: %s", path, strerror(errno));

	/* Reports and JSON records interleave; agg_collect skips records. */
	{
		struct conn *cx[2] = { &ct, &cc };
		uint64_t *kx[2] = { keys, cgk }, *nx[2] = { counts, cgc };
		char (*lx[2])[256] = { labels, cglabels };

		for (int i = 0; i < 2; i++) {
			uint64_t end = now_ns() + TIMEOUT_NS, total = 0;

			while (total < (uint64_t)(na + nb)) {
				unsigned long long n, v, ev, bytes;
				char key[32], label[256];
				double rate;

				if (now_ns() > end)
					die("agg %s: counted %llu of %d", i ? "cgroup" : "tgid",
					    (unsigned long long)total, na + nb);
				if (!get_line(cx[i], line, sizeof(line)))
					die("agg: connection closed");
				/*
				 * A subscribed record, or records of it dropped
				 * while the other connection was being read:
				 * AGG counts before output, drops do not matter.
				 */
				if (line[0] == '{' || line[0] == 'D')
					continue;
				if (sscanf(line, "A %31s %llu", key, &n) != 2)
					die("agg: unexpected line '%s'", line);
				if (strstr(line, " unkeyed=") && !strstr(line, " unkeyed=0 "))
					die("agg: records not keyed: %s", line);
				while (n) {
					if (!get_line(cx[i], line, sizeof(line)))
						die("agg: connection closed");
					if (line[0] == '{' || line[0] == 'D')
						continue;
					n--;
					if (sscanf(line, "E %llu %llu %llu %lf %255s", &v, &ev, &bytes,
						   &rate, label) != 5)
						die("agg: bad entry '%s'", line);
					for (int k = 0; k < 2; k++)
						if (kx[i][k] == v) {
							nx[i][k] += ev;
							total += ev;
							snprintf(lx[i][k], 256, "%s", label);
						}
				}
			}
		}
	}
	printf("agg tgid: %d=%llu (%s) %d=%llu (%s)\n", a.pid, (unsigned long long)counts[0],
	       labels[0], b.pid, (unsigned long long)counts[1], labels[1]);
	printf("agg cgroup: %llu=%llu (%s) %llu=%llu (%s)\n", (unsigned long long)cgk[0],
	       (unsigned long long)cgc[0], cglabels[0], (unsigned long long)cgk[1],
	       (unsigned long long)cgc[1], cglabels[1]);
	if (counts[0] != (uint64_t)na || counts[1] != (uint64_t)nb)
		die("agg tgid: want %d and %d", na, nb);
	if (cgc[0] != (uint64_t)na || cgc[1] != (uint64_t)nb)
		die("agg cgroup: want %d and %d", na, nb);
	snprintf(path, sizeof(path), "/%s", cga);
	if (strcmp(cglabels[0], path))
		die("agg cgroup: label '%s', want '%s'", cglabels[0], path);
	/*
	 * jobB was removed after its children exited: magnetd names it by
	 * path if it saw the directory (inotify) before the rmdir, which a
	 * slow kernel may not let it, else by its id; the counts are exact
	 * either way.
	 */
	snprintf(path, sizeof(path), "/%s", cgb);
	snprintf(idname, sizeof(idname), "cgroup:%llu", (unsigned long long)cgk[1]);
	if (strcmp(cglabels[1], path) && strcmp(cglabels[1], idname))
		die("agg cgroup: label '%s', want '%s' or '%s' (removed)", cglabels[1], path,
		    idname);
	if (strcmp(labels[0], "mdtest") || strcmp(labels[1], "mdtest"))
		die("agg tgid: labels '%s' '%s', want the comm 'mdtest'", labels[0],
		    labels[1]);
	return 0;
}

static int cmd_stalled(void)
{
	char line[256];
	struct conn c;

	conn_open(&c);
	command(&c, "SUBSCRIBE", line, sizeof(line));
	puts("subscribed");
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}

static int cmd_send(int n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	char msg[100] = { 0 };
	int lfd, cfd, afd;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len))
		die("listen on 127.0.0.1: %s", strerror(errno));
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	if (cfd < 0 || connect(cfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (afd = accept(lfd, NULL, NULL)) < 0)
		die("connect: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (send(cfd, msg, sizeof(msg), 0) != sizeof(msg) ||
		    recv(afd, msg, sizeof(msg), MSG_WAITALL) != sizeof(msg))
			die("send/recv: %s", strerror(errno));
	return 0;
}

/* ---- client slots and timeouts (t-31) ---- */

static int stat_value(const char *key, unsigned long long *v)
{
	char line[8192], want[64];
	struct conn c;
	const char *p;

	conn_open(&c);
	conn_send(&c, "STATS");
	if (!get_line(&c, line, sizeof(line)) || strncmp(line, "OK ", 3)) {
		close(c.fd);
		return -1;
	}
	close(c.fd);
	snprintf(want, sizeof(want), " %s=", key);
	p = strstr(line, want);
	if (!p)
		die("STATS has no %s: %s", key, line);
	*v = strtoull(p + strlen(want), NULL, 10);
	return 0;
}

static int cmd_wait_stat(const char *key, unsigned long long n, int secs)
{
	uint64_t t0 = now_ns(), end = t0 + secs * 1000000000ULL;
	unsigned long long v = 0;

	while (stat_value(key, &v) || v < n) {
		if (now_ns() > end)
			die("STATS %s=%llu after %d s; want %llu", key, v, secs, n);
		usleep(50000);
	}
	printf("%s=%llu after %llu ms\n", key, v,
	       (unsigned long long)((now_ns() - t0) / 1000000));
	return 0;
}

/*
 * Write line over and over on every fd (non-blocking), 64 KiB each (the
 * replies to that many commands fill any socket buffer and the daemon's
 * queue many times over), whole lines only, until every fd took its share
 * or none took a byte for 10 s: the daemon stopped reading them, their
 * replies having filled the socket buffers, then the daemon's queues. A
 * slow daemon (TCG, the debug kernel) is given the time it takes: a line
 * left half sent would look like a request never finished.
 */
static int stuff(int *fds, int n, const char *line)
{
	static char block[65536];
	size_t ll = strlen(line), len = sizeof(block) / ll * ll, *sent;
	int quiet = 0, done = 0;

	sent = calloc(n, sizeof(*sent));
	if (!sent)
		die("out of memory");
	for (size_t i = 0; i < len; i += ll)
		memcpy(block + i, line, ll);
	while (done < n && quiet < 1000) {
		bool any = false;

		for (int i = 0; i < n; i++) {
			ssize_t w;

			if (sent[i] == len)
				continue;
			w = send(fds[i], block + sent[i], len - sent[i],
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0) {
				sent[i] += w;
				done += sent[i] == len;
				any = true;
			} else if (errno != EAGAIN && errno != EWOULDBLOCK) {
				die("pipelining: %s", strerror(errno));
			}
		}
		if (any) {
			quiet = 0;
		} else {
			usleep(10000);
			quiet++;
		}
	}
	free(sent);
	return done;
}

static int cmd_hog(int max, int nkinds, char **kinds)
{
	struct conn *cs = calloc(max, sizeof(*cs));
	int *pipes = calloc(max, sizeof(int)), npipes = 0, held = 0;
	char line[512], refusal[512] = "none";

	if (!cs || !pipes)
		die("out of memory");
	for (int i = 0; i < max; i++) {
		const char *kind = kinds[i % nkinds];
		const char *cmd = !strcmp(kind, "agg") ? "AGG pid EVERY 10ms" :
				  !strcmp(kind, "sub") ? "SUBSCRIBE" : "HELLO";

		if (strcmp(kind, "idle") && strcmp(kind, "agg") &&
		    strcmp(kind, "sub") && strcmp(kind, "pipe"))
			die("hog: unknown kind '%s'", kind);
		/*
		 * Over TCP, a pipeliner's socket buffers are small (its
		 * receive buffer, and through its MSS the daemon's send
		 * buffer): the daemon's own queue fills after a few KiB. Over
		 * the Unix socket, magnetd's send buffer (unix_sndbuf) fills
		 * first.
		 */
		if (!strcmp(kind, "pipe"))
			conn_open_bufs(&cs[i], 4096, 536);
		else
			conn_open(&cs[i]);
		/*
		 * A refused connection gets its ERR before any reply, and is
		 * closed: the command may meet the close, the ERR still came.
		 */
		if (!conn_try_send(&cs[i], cmd) && errno != EPIPE &&
		    errno != ECONNRESET)
			die("hog: send: %s", strerror(errno));
		if (!get_line(&cs[i], line, sizeof(line)))
			die("hog: connection %d closed without a word", i);
		if (strncmp(line, "OK", 2)) {
			snprintf(refusal, sizeof(refusal), "%s", line);
			close(cs[i].fd);
			break;
		}
		held++;
		if (!strcmp(kind, "pipe"))
			pipes[npipes++] = cs[i].fd;
	}
	if (npipes)
		printf("pipelined: %d of %d took all their commands\n",
		       stuff(pipes, npipes, "PROBES\n"), npipes);
	printf("held %d\nrefused: %s\n", held, refusal);
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}

/*
 * One pipelining client (a process): a child writes n commands, PROBES and
 * HELLO in turn, while this one waits, then reads: every reply, in order.
 */
static void pipeline_client(int k, int n)
{
	static struct conn c;
	unsigned long probes = 0;
	char line[8192];
	pid_t w;

	conn_open_rcvbuf(&c, 4096);
	w = fork();
	if (w < 0)
		die("fork");
	if (!w) {
		for (int i = 0; i < n; i++)
			conn_send(&c, i % 2 ? "HELLO" : "PROBES");
		_exit(0);
	}
	/* Let the daemon's queue fill, and the commands wait, first. */
	usleep(500000);
	for (int i = 0; i < n; i++) {
		unsigned long m;
		char word[32];

		if (!get_line(&c, line, sizeof(line)))
			die("pipeline %d: reply %d of %d missing", k, i, n);
		if (i % 2) {
			if (strncmp(line, "OK magnet 2 ", 12))
				die("pipeline %d: reply %d: '%s', want HELLO's", k, i, line);
			continue;
		}
		if (sscanf(line, "OK %lu %31s", &m, word) != 2 || strcmp(word, "probes"))
			die("pipeline %d: reply %d: '%s', want PROBES'", k, i, line);
		if (i && m != probes)
			die("pipeline %d: %lu probes, then %lu", k, probes, m);
		probes = m;
		while (m-- && get_line(&c, line, sizeof(line)))
			;
	}
	waitpid(w, NULL, 0);
}

static int cmd_pipeline(int nc, int n)
{
	pid_t *pids = calloc(nc, sizeof(*pids));

	if (!pids)
		die("out of memory");
	for (int k = 0; k < nc; k++) {
		pids[k] = fork();
		if (pids[k] < 0)
			die("fork");
		if (!pids[k]) {
			pipeline_client(k, n);
			_exit(0);
		}
	}
	for (int k = 0; k < nc; k++) {
		int st;

		if (waitpid(pids[k], &st, 0) != pids[k] || !WIFEXITED(st) || WEXITSTATUS(st))
			die("pipeline client %d failed", k);
	}
	free(pids);
	printf("pipeline: %d clients got all %d replies each, in order\n", nc, n);
	return 0;
}

/* ---- the monitors' listeners, slow requests, floods (t-31) ---- */

/* GET path over MDTEST_ADDR: the response on stdout; 1 if none came. */
static int cmd_http(const char *path)
{
	char req[512], buf[65536];
	struct conn c;
	ssize_t n;
	int got = 0;

	conn_open(&c);
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: node\r\n\r\n", path);
	if (write(c.fd, req, strlen(req)) != (ssize_t)strlen(req))
		die("http: send: %s", strerror(errno));
	while ((n = read(c.fd, buf, sizeof(buf))) > 0) {
		fwrite(buf, 1, n, stdout);
		got = 1;
	}
	if (!got)
		puts("(closed)");
	return !got;
}

/* Supermon requests over MDTEST_ADDR: each one's reply line on stdout. */
static int cmd_mon(int argc, char **argv)
{
	static char line[1 << 18];
	struct conn c;

	conn_open(&c);
	for (int i = 0; i < argc; i++) {
		if (!conn_try_send(&c, argv[i]) || !get_line(&c, line, sizeof(line))) {
			puts("(closed)");
			return 1;
		}
		puts(line);
	}
	return 0;
}

/* n connections to MDTEST_ADDR that send nothing; held until killed. */
static int cmd_hold(int n)
{
	struct conn *cs = calloc(n, sizeof(*cs));

	if (!cs)
		die("out of memory");
	for (int i = 0; i < n; i++)
		conn_open(&cs[i]);
	printf("held %d\n", n);
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}

/*
 * An HTTP request a byte every 500 ms, for up to secs: prints how long
 * the daemon took to close the connection; 1 if it never did.
 */
static int cmd_slow_http(int secs)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nX-Slow: "
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
	uint64_t t0 = now_ns(), end = t0 + secs * 1000000000ULL;
	struct conn c;
	size_t i = 0;

	conn_open(&c);
	while (now_ns() < end) {
		struct pollfd p = { .fd = c.fd, .events = POLLIN };
		char buf[512];

		if (i < sizeof(req) - 1 &&
		    send(c.fd, req + i++, 1, MSG_NOSIGNAL) != 1)
			break;
		if (poll(&p, 1, 500) == 1) {
			ssize_t n = read(c.fd, buf, sizeof(buf) - 1);

			if (n > 0) {
				buf[n] = '\0';
				printf("got: %.*s\n", (int)strcspn(buf, "\r\n"), buf);
				continue;
			}
			break;
		}
	}
	if (now_ns() >= end) {
		printf("not closed after %d s\n", secs);
		return 1;
	}
	printf("closed after %llu ms\n",
	       (unsigned long long)((now_ns() - t0) / 1000000));
	return 0;
}

/*
 * Cheap requests for secs over MDTEST_ADDR: nl (blank lines, to a
 * Supermon listener), sample ("S", reading the replies), aggnet ("AGG net
 * EVERY 1s" to the client port, reading the replies). Prints how many.
 */
static int cmd_flood(const char *kind, int secs)
{
	static char block[4096], sink[1 << 16];
	uint64_t end = now_ns() + secs * 1000000000ULL;
	unsigned long long sent = 0;
	const char *line = !strcmp(kind, "nl") ? "\n" :
			   !strcmp(kind, "sample") ? "S\n" :
			   !strcmp(kind, "aggnet") ? "AGG net EVERY 1s\n" : NULL;
	size_t ll, k;
	struct conn c;

	if (!line)
		die("flood: unknown kind '%s'", kind);
	ll = strlen(line);
	for (k = 0; k + ll <= sizeof(block); k += ll)
		memcpy(block + k, line, ll);
	conn_open(&c);
	while (now_ns() < end) {
		ssize_t w = send(c.fd, block, k, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0)
			sent += w / ll;
		else if (errno != EAGAIN && errno != EWOULDBLOCK)
			die("flood: send: %s", strerror(errno));
		while (recv(c.fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
		if (w <= 0)
			usleep(1000);
	}
	printf("flood %s: %llu requests in %d s\n", kind, sent, secs);
	return 0;
}

/*
 * A subscriber that reads everything for secs: prints the bytes and the
 * records the daemon told it it dropped (D lines).
 */
static int cmd_drain(int secs)
{
	uint64_t end = now_ns() + secs * 1000000000ULL;
	unsigned long long bytes = 0;
	static char buf[1 << 16];
	char line[256];
	struct conn c;

	conn_open(&c);
	command(&c, "SUBSCRIBE", line, sizeof(line));
	while (now_ns() < end) {
		struct pollfd p = { .fd = c.fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 100) != 1)
			continue;
		n = read(c.fd, buf, sizeof(buf));
		if (n <= 0)
			die("drain: connection closed");
		bytes += n;
	}
	printf("drain: %llu bytes in %d s\n", bytes, secs);
	return 0;
}

/* ---- the protocol as documented ---- */

/* The id in the PROBES line "<id> <type> <name> ... symbol=<symbol>". */
static unsigned int probe_id(const char *type, const char *name, const char *symbol)
{
	char line[8192], want[600], sym[300];
	unsigned long n, id = 0;
	struct conn c;

	conn_open(&c);
	command(&c, "PROBES", line, sizeof(line));
	if (sscanf(line, "OK %lu probes", &n) != 1)
		die("PROBES: %s", line);
	snprintf(want, sizeof(want), " %s %s ", type, name);
	snprintf(sym, sizeof(sym), " symbol=%s", symbol);
	while (n-- && get_line(&c, line, sizeof(line))) {
		const char *s = strstr(line, " symbol=");

		if (strstr(line, want) == strchr(line, ' ')) {
			if (!s || strcmp(s, sym))
				die("PROBES: '%s', want%s", line, sym);
			id = strtoul(line, NULL, 10);
		}
	}
	close(c.fd);
	if (!id)
		die("PROBES has no%s", want);
	return id;
}

/* JSON records on c until n of want came (others: fail); then no more. */
static void json_records(struct conn *c, const char *want, int n, const char *what)
{
	uint64_t end = now_ns() + TIMEOUT_NS;
	char line[8192];
	int got = 0;

	while (got < n) {
		if (now_ns() > end || !get_line(c, line, sizeof(line)))
			die("%s: %d of %d records", what, got, n);
		if (!strstr(line, want))
			die("%s: %s, want %s", what, line, want);
		got++;
	}
	if (fill(c, 500) && c->len)
		die("%s: more than %d records: %.*s", what, n, (int)c->len, c->buf);
}

static int cmd_names(int n)
{
	unsigned int kid = probe_id("kprobe", "__x64_sys_getpid", "__x64_sys_getpid");
	unsigned int rid = probe_id("kretprobe", "__x64_sys_getpid%25return", "__x64_sys_getpid");
	char line[512], want[256];
	struct conn ck, cr;
	struct child ch;

	child_start(&ch, n, NULL, 0);
	conn_open(&ck);
	conn_open(&cr);
	snprintf(line, sizeof(line), "SUBSCRIBE probe == __x64_sys_getpid && tgid == %d", ch.pid);
	command(&ck, line, line, sizeof(line));
	snprintf(line, sizeof(line), "SUBSCRIBE probe == \"__x64_sys_getpid%%return\" && tgid == %d",
		 ch.pid);
	command(&cr, line, line, sizeof(line));
	child_go(&ch);
	child_wait(&ch);
	snprintf(want, sizeof(want),
		 "\"id\":%u,\"event\":\"__x64_sys_getpid\",\"symbol\":\"__x64_sys_getpid\",\"type\":\"kprobe\"",
		 kid);
	json_records(&ck, want, n, "names: the kprobe's subscriber");
	snprintf(want, sizeof(want),
		 "\"id\":%u,\"event\":\"__x64_sys_getpid%%return\",\"symbol\":\"__x64_sys_getpid\",\"type\":\"kretprobe\"",
		 rid);
	json_records(&cr, want, n, "names: the kretprobe's subscriber");
	/* TOTALS names them so too (what the monitors show). */
	{
		unsigned long nt;
		int seen = 0;

		command(&ck, "TOTALS", line, sizeof(line));
		if (sscanf(line, "OK %lu totals ", &nt) != 1)
			die("TOTALS: %s", line);
		while (nt--) {
			if (!get_line(&ck, line, sizeof(line)))
				die("TOTALS: connection closed");
			snprintf(want, sizeof(want), "probe %u kprobe __x64_sys_getpid ", kid);
			if (!strncmp(line, want, strlen(want)))
				seen += !!strstr(line, " symbol=__x64_sys_getpid");
			snprintf(want, sizeof(want), "probe %u kretprobe __x64_sys_getpid%%25return ",
				 rid);
			if (!strncmp(line, want, strlen(want)))
				seen += !!strstr(line, " symbol=__x64_sys_getpid");
		}
		if (seen != 2)
			die("TOTALS: %d of the 2 probes named apart, symbol= their function", seen);
	}
	printf("names: kprobe %u and kretprobe %u on __x64_sys_getpid, %d records each by name; TOTALS names them apart\n",
	       kid, rid, n);
	close(ck.fd);
	close(cr.fd);
	return 0;
}

static int cmd_burst(int n)
{
	static const char *const reasons[] = { "\"full\":", "\"too_big\":",
					       "\"nesting\":", "\"overwritten\":" };
	unsigned long long records = 0, lost = 0, told = 0, d, before, after, qb, qa;
	char line[8192];
	struct child ch;
	struct conn c;
	const char *p;

	/* D lines tell the daemon's own drops too (queue_dropped). */
	if (stat_value("client_dropped", &before) || stat_value("queue_dropped", &qb))
		die("STATS");
	child_start(&ch, n, NULL, 0);
	conn_open_bufs(&c, 4096, 536);
	snprintf(line, sizeof(line), "SUBSCRIBE tgid == %d", ch.pid);
	command(&c, line, line, sizeof(line));
	child_go(&ch);
	child_wait(&ch);
	/* Everything, until 3 s without a byte: the burst is long over. */
	for (;;) {
		char *nl = memchr(c.buf, '\n', c.len);

		if (!nl) {
			size_t had = c.len;

			if (!fill(&c, 3000) || c.len == had)
				break;
			continue;
		}
		*nl = '\0';
		if (sscanf(c.buf, "D %llu", &d) == 1) {
			told += d;
		} else if (strstr(c.buf, "\"event\":\"lost\"")) {
			for (int k = 0; k < 4; k++) {
				p = strstr(c.buf, reasons[k]);
				if (p)
					lost += strtoull(p + strlen(reasons[k]), NULL, 10);
			}
		} else if (c.buf[0] == '{') {
			records++;
		} else {
			die("burst: unexpected line '%s'", c.buf);
		}
		take(&c, nl + 1 - c.buf);
	}
	if (stat_value("client_dropped", &after) || stat_value("queue_dropped", &qa))
		die("STATS");
	printf("burst: fired %d, received %llu, kernel lost %llu, D lines %llu; client_dropped %llu, queue_dropped %llu\n",
	       n, records, lost, told, after - before, qa - qb);
	if (!told)
		die("burst: nothing was dropped: a larger burst is needed");
	if (told != after - before + qa - qb)
		die("burst: D lines told %llu of the %llu records dropped for this client",
		    told, after - before + qa - qb);
	if (records + lost + told != (unsigned long long)n)
		die("burst: %llu + %llu + %llu != %d", records, lost, told, n);
	close(c.fd);
	return 0;
}

/* One report's lines, framed as the protocol says; sums by value. */
static void comm_report(struct conn *c, const char *const *values, uint64_t *sum,
			uint64_t *total)
{
	char line[8192], value[256];
	unsigned long long n, ev;

	if (!get_line(c, line, sizeof(line)))
		die("comm: connection closed");
	if (line[0] == '{' || !strncmp(line, "D ", 2))
		return;		/* a record, or records dropped: not counted */
	if (sscanf(line, "A %*s %llu ", &n) != 1)
		die("comm: a line that is neither data nor expected: '%s'", line);
	while (n--) {
		if (!get_line(c, line, sizeof(line)))
			die("comm: connection closed in a report");
		if (sscanf(line, "E %255s %llu ", value, &ev) != 2)
			die("comm: an entry line not framed 'E <value> ...': '%s'", line);
		for (int k = 0; k < 3; k++)
			if (!strcmp(value, values[k])) {
				sum[k] += ev;
				*total += ev;
			}
	}
}

static int cmd_comm(int n)
{
	static const char *const names[] = { "OK", "ERR", "D 1" };
	static const char *const comms[] = { "OK", "ERR", "D%201" };
	uint64_t cs[3] = { 0 }, gs[3] = { 0 }, ct = 0, gt = 0, end;
	char line[8192], path[256], filter[256];
	const char *cgv[3];
	char cgs[3][32];
	struct child ch[3];
	struct conn ca, cg, t;
	unsigned long nt;
	struct stat st;
	int jobs = 0;

	for (int k = 0; k < 3; k++) {
		snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", names[k]);
		if (mkdir(path, 0755) && errno != EEXIST)
			die("mkdir %s: %s", path, strerror(errno));
		if (stat(path, &st))
			die("%s: %s", path, strerror(errno));
		snprintf(cgs[k], sizeof(cgs[k]), "%llu", (unsigned long long)(uint32_t)st.st_ino);
		cgv[k] = cgs[k];
		child_comm = names[k];
		child_start(&ch[k], n, names[k], 0);
	}
	child_comm = NULL;
	snprintf(filter, sizeof(filter), "SUBSCRIBE tgid == %d || tgid == %d || tgid == %d",
		 ch[0].pid, ch[1].pid, ch[2].pid);
	conn_open(&ca);
	conn_open(&cg);
	command(&ca, filter, line, sizeof(line));
	command(&ca, "AGG comm EVERY 200ms", line, sizeof(line));
	command(&cg, filter, line, sizeof(line));
	command(&cg, "AGG cgroup EVERY 200ms", line, sizeof(line));
	for (int k = 0; k < 3; k++)
		child_go(&ch[k]);
	for (int k = 0; k < 3; k++)
		child_wait(&ch[k]);
	end = now_ns() + TIMEOUT_NS;
	while (ct < 3ULL * n || gt < 3ULL * n) {
		if (now_ns() > end)
			die("comm: counted %llu and %llu of %d", (unsigned long long)ct,
			    (unsigned long long)gt, 3 * n);
		if (ct < 3ULL * n)
			comm_report(&ca, comms, cs, &ct);
		if (gt < 3ULL * n)
			comm_report(&cg, cgv, gs, &gt);
	}
	for (int k = 0; k < 3; k++)
		if (cs[k] != (uint64_t)n || gs[k] != (uint64_t)n)
			die("comm: '%s': comm %llu, cgroup %llu; want %d", names[k],
			    (unsigned long long)cs[k], (unsigned long long)gs[k], n);
	/* TOTALS: the jobs by path, one escaped word after the cgroup id. */
	conn_open(&t);
	command(&t, "TOTALS", line, sizeof(line));
	if (sscanf(line, "OK %lu totals ", &nt) != 1)
		die("TOTALS: %s", line);
	while (nt--) {
		if (!get_line(&t, line, sizeof(line)))
			die("TOTALS: connection closed");
		if (strncmp(line, "probe ", 6) && strncmp(line, "job ", 4))
			die("TOTALS: a table line '%s'", line);
		for (int k = 0; k < 3; k++) {
			char want[128];

			snprintf(want, sizeof(want), "job %s /%s events=%d ", cgs[k], comms[k], n);
			jobs += !strncmp(line, want, strlen(want));
		}
	}
	if (jobs != 3)
		die("TOTALS: %d of the 3 jobs /OK, /ERR, /D%%201 with %d events", jobs, n);
	printf("comm: threads and jobs named OK, ERR and 'D 1': %d records each, framed and counted\n", n);
	close(t.fd);
	close(ca.fd);
	close(cg.fd);
	for (int k = 0; k < 3; k++) {
		snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", names[k]);
		rmdir(path);
	}
	return 0;
}

/* MDTEST_UID: be another user (a test runs as root). */
static void become(void)
{
	const char *u = getenv("MDTEST_UID");
	uid_t uid;

	if (!u)
		return;
	uid = atoi(u);
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		die("cannot become uid %u: %s", uid, strerror(errno));
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	become();
	if (argc >= 4 && !strcmp(argv[1], "hog"))
		return cmd_hog(atoi(argv[2]), argc - 3, argv + 3);
	if (argc == 4 && !strcmp(argv[1], "pipeline"))
		return cmd_pipeline(atoi(argv[2]), atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "wait-stat"))
		return cmd_wait_stat(argv[2], strtoull(argv[3], NULL, 10), atoi(argv[4]));
	if (argc >= 3 && !strcmp(argv[1], "cmd"))
		return cmd_cmd(argc - 2, argv + 2);
	if (argc == 3 && !strcmp(argv[1], "account"))
		return cmd_account(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "fanout"))
		return cmd_fanout(atoi(argv[2]), atoi(argv[3]));
	if (argc == 6 && !strcmp(argv[1], "agg"))
		return cmd_agg(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
	if (argc == 2 && !strcmp(argv[1], "stalled"))
		return cmd_stalled();
	if (argc == 3 && !strcmp(argv[1], "send"))
		return cmd_send(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "http"))
		return cmd_http(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "mon"))
		return cmd_mon(argc - 2, argv + 2);
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return cmd_hold(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "slow-http"))
		return cmd_slow_http(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "flood"))
		return cmd_flood(argv[2], atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "drain"))
		return cmd_drain(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "names"))
		return cmd_names(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "burst"))
		return cmd_burst(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "comm"))
		return cmd_comm(atoi(argv[2]));
	fprintf(stderr, "usage: mdtest cmd LINE... | account N | fanout S N | agg CGA CGB NA NB | stalled | send N |\n"
		"       hog MAX KIND... | pipeline C N | wait-stat KEY N SECS | http PATH | mon REQ... | hold N |\n"
		"       slow-http SECS | flood KIND SECS | drain SECS | names N | burst N | comm N\n");
	return 1;
}
