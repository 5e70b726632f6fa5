// SPDX-License-Identifier: GPL-2.0
/*
 * mon-workload: the guest's half of tests/monitors. A line server (one
 * client at a time) that runs workloads of known size inside jobs, so the
 * host's tests can hold what Ganglia, Supermon and Prometheus show
 * against what happened.
 *
 * A job is a cgroup v2 directory /sys/fs/cgroup/JOB holding one worker
 * process, made at the job's first command and kept until "end JOB":
 * magnetd finds a record's job by looking its thread up in /proc, so the
 * thread must still be alive when the record is read. JOB is a path
 * under /sys/fs/cgroup (a/b/c: nested, made level by level), %XX for any
 * byte but NUL, so that a test can name jobs as a hostile user would:
 * control bytes, invalid UTF-8, markup, 4 KiB.
 *
 *   burst JOB N        the worker makes N getppid() calls     -> done N
 *   rate JOB R S       R getppid()/s for S s, paced; in the
 *                      background (R * S calls in all)        -> started N
 *   send JOB BYTES     one send() of BYTES on a loopback TCP
 *                      connection (one tcp_sendmsg of BYTES)  -> done BYTES
 *   end JOB            the worker exits, the cgroup goes      -> done
 *   run NAME           /magnet/tests/monitors/NAME.sh (only
 *                      [a-z-] names), its exit status         -> done STATUS
 *   quit               the server exits                       -> bye
 * Anything else gets "error <why>".
 *
 *   mon-workload PORT
 *
 * Prints MAGNET-NODE-READY once it listens (tests/monitors/lib.sh waits
 * for it).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define MAX_JOBS	32
#define CGROOT		"/sys/fs/cgroup"
#define SINK_PORT	7001
#define CMD_MAX	16384	/* a 4 KiB path, %XX for every byte */

struct job {
	char name[PATH_MAX];	/* under CGROOT, decoded */
	pid_t pid;
	int cmd, ack;		/* pipes to and from the worker */
};

static struct job jobs[MAX_JOBS];
static pid_t sink_pid;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void calls(unsigned long n)
{
	while (n--)
		syscall(SYS_getppid);
}

static void paced(unsigned long rate, unsigned long seconds)
{
	struct timespec start, t;
	unsigned long i, n = rate * seconds;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (i = 0; i < n; i++) {
		unsigned long long ns = start.tv_nsec + i * 1000000000ULL / rate;

		t.tv_sec = start.tv_sec + ns / 1000000000ULL;
		t.tv_nsec = ns % 1000000000ULL;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
			;
		syscall(SYS_getppid);
	}
}

static unsigned long long send_bytes(unsigned long long bytes)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(SINK_PORT),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char *buf = calloc(1, bytes ? bytes : 1);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;

	if (!buf || fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		die("sink");
	/* Blocking: one sendmsg, so one tcp_sendmsg of all the bytes. */
	n = send(fd, buf, bytes, 0);
	close(fd);
	free(buf);
	return n < 0 ? 0 : n;
}

/* The worker: in its cgroup, doing what the server's pipe says. */
static void worker(int cmd, int ack)
{
	FILE *in = fdopen(cmd, "r");
	char line[128], op;
	unsigned long long a, b;

	if (!in)
		die("fdopen");
	while (fgets(line, sizeof(line), in)) {
		int n = sscanf(line, "%c %llu %llu", &op, &a, &b);

		if (n >= 1 && op == 'b' && n == 2) {
			calls(a);
		} else if (op == 'r' && n == 3) {
			paced(a, b);
			continue;	/* in the background: no ack */
		} else if (op == 's' && n == 2) {
			a = send_bytes(a);
		} else {
			exit(0);
		}
		dprintf(ack, "%llu\n", a);
	}
	exit(0);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * A job's word to its path under CGROOT: %XX decoded; no NUL, no empty,
 * "." or ".." level; short enough that its cgroup.procs has a path.
 */
static bool job_name(const char *w, char *name, size_t size)
{
	size_t o = 0, level = 0;

	for (; *w; w++) {
		char c = *w;

		if (c == '%' && hexval(w[1]) >= 0 && hexval(w[2]) >= 0) {
			c = (char)(hexval(w[1]) << 4 | hexval(w[2]));
			w += 2;
			if (!c)
				return false;
		}
		if (o + 1 >= size)
			return false;
		name[o++] = c;
	}
	name[o] = '\0';
	if (!o || o + sizeof(CGROOT "//cgroup.procs") > PATH_MAX)
		return false;
	for (o = 0; ; o++) {
		if (name[o] && name[o] != '/')
			continue;
		if (o == level || (o - level == 1 && name[level] == '.') ||
		    (o - level == 2 && !strncmp(name + level, "..", 2)))
			return false;
		if (!name[o])
			return true;
		level = o + 1;
	}
}

/* CGROOT/name, level by level. */
static int mkdirs(const char *name, char *path, size_t size)
{
	size_t i, len = strlen(name);

	for (i = 0; i <= len; i++) {
		if (name[i] && name[i] != '/')
			continue;
		snprintf(path, size, CGROOT "/%.*s", (int)i, name);
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
	}
	return 0;
}

static struct job *job_of(const char *name, char *err, size_t errlen)
{
	struct job *j = NULL;
	char path[PATH_MAX + 64];
	int cmd[2], ack[2], i;

	for (i = 0; i < MAX_JOBS; i++) {
		if (jobs[i].pid && !strcmp(jobs[i].name, name))
			return &jobs[i];
		if (!jobs[i].pid && !j)
			j = &jobs[i];
	}
	if (!j) {
		snprintf(err, errlen, "error too many jobs");
		return NULL;
	}
	i = mkdirs(name, path, sizeof(path));
	if (i) {
		snprintf(err, errlen, "error mkdir %.200s: %s", path, strerror(-i));
		return NULL;
	}
	/* Close-on-exec: "run" scripts (magnetd) must not hold them. */
	if (pipe2(cmd, O_CLOEXEC) || pipe2(ack, O_CLOEXEC))
		die("pipe");
	j->pid = fork();
	if (j->pid < 0)
		die("fork");
	if (!j->pid) {
		char procs[PATH_MAX + 64];	/* name fits (job_name) */
		int fd;

		/* The other workers' pipes: their ends must close with them. */
		for (i = 0; i < MAX_JOBS; i++)
			if (jobs[i].pid && &jobs[i] != j) {
				close(jobs[i].cmd);
				close(jobs[i].ack);
			}
		snprintf(procs, sizeof(procs), CGROOT "/%s/cgroup.procs", name);
		fd = open(procs, O_WRONLY);
		if (fd < 0 || dprintf(fd, "%d\n", getpid()) < 0)
			die(procs);
		close(fd);
		close(cmd[1]);
		close(ack[0]);
		worker(cmd[0], ack[1]);
	}
	close(cmd[0]);
	close(ack[1]);
	j->cmd = cmd[1];
	j->ack = ack[0];
	snprintf(j->name, sizeof(j->name), "%s", name);
	return j;
}

/* Wait for the worker's ack line; its number. */
static unsigned long long acked(struct job *j)
{
	char buf[64];
	size_t len = 0;

	while (len < sizeof(buf) - 1) {
		ssize_t n = read(j->ack, buf + len, 1);

		if (n <= 0)
			die("worker gone");
		if (buf[len++] == '\n')
			break;
	}
	buf[len] = '\0';
	return strtoull(buf, NULL, 10);
}

static void end_job(struct job *j)
{
	char path[PATH_MAX + 64], *slash;

	close(j->cmd);
	close(j->ack);
	waitpid(j->pid, NULL, 0);
	/* Its levels, deepest first, while empty (others' stay). */
	snprintf(path, sizeof(path), CGROOT "/%s", j->name);
	do {
		if (rmdir(path))
			break;
		slash = strrchr(path, '/');
		*slash = '\0';
	} while (strcmp(path, CGROOT));
	memset(j, 0, sizeof(*j));
}

/* The words of line (at most max), each NUL-terminated in place. */
static int words(char *line, char **w, int max)
{
	char *save = NULL, *t;
	int n = 0;

	for (t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (n == max)
			return -1;
		w[n++] = t;
	}
	return n;
}

static bool count(const char *w, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(w, &end, 10);
	return *w >= '0' && *w <= '9' && !*end && !errno;
}

static void handle(char *line, char *out, size_t outlen, int *quit)
{
	static char name[PATH_MAX];
	unsigned long long a = 0, b = 0;
	struct job *j;
	char *w[4], *op;
	int n = words(line, w, 4);

	if (n < 1) {
		snprintf(out, outlen, "error usage: burst|rate|send|end|run|quit ...");
		return;
	}
	op = w[0];
	if ((n >= 3 && !count(w[2], &a)) || (n == 4 && !count(w[3], &b))) {
		snprintf(out, outlen, "error not a count");
		return;
	}
	if (n >= 2 && strcmp(op, "run") && !job_name(w[1], name, sizeof(name))) {
		snprintf(out, outlen, "error bad job name");
		return;
	}
	if (!strcmp(op, "quit")) {
		snprintf(out, outlen, "bye");
		*quit = 1;
		return;
	}
	if (n == 2 && !strcmp(op, "run")) {
		const char *script = w[1];
		char cmd[300];
		size_t i;
		int st;

		for (i = 0; script[i]; i++)
			if (!(script[i] == '-' || (script[i] >= 'a' && script[i] <= 'z')))
				break;
		if (script[i] || !i || i > 64) {
			snprintf(out, outlen, "error bad script name");
			return;
		}
		snprintf(cmd, sizeof(cmd), "sh /magnet/tests/monitors/%s.sh", script);
		st = system(cmd);
		snprintf(out, outlen, "done %d", WIFEXITED(st) ? WEXITSTATUS(st) : 128);
		return;
	}
	if (n < 2) {
		snprintf(out, outlen, "error usage: burst|rate|send|end JOB ...");
		return;
	}
	if (!strcmp(op, "end")) {
		for (j = jobs; j < jobs + MAX_JOBS; j++)
			if (j->pid && !strcmp(j->name, name))
				break;
		if (j == jobs + MAX_JOBS) {
			snprintf(out, outlen, "error no job %s", w[1]);
			return;
		}
		end_job(j);
		snprintf(out, outlen, "done");
		return;
	}
	if (!((!strcmp(op, "burst") && n == 3) || (!strcmp(op, "rate") && n == 4 && a) ||
	      (!strcmp(op, "send") && n == 3))) {
		snprintf(out, outlen, "error usage: burst JOB N | rate JOB R S | send JOB BYTES | end JOB");
		return;
	}
	j = job_of(name, out, outlen);
	if (!j)
		return;
	if (op[0] == 'r') {
		dprintf(j->cmd, "r %llu %llu\n", a, b);
		snprintf(out, outlen, "started %llu", a * b);
		return;
	}
	dprintf(j->cmd, "%c %llu\n", op[0], a);
	snprintf(out, outlen, "done %llu", acked(j));
}

static int listen_on(int port, in_addr_t addr)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(addr) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 16))
		die("bind");
	return fd;
}

/* Takes and drops whatever "send" sends (outside any job). */
static void sink(void)
{
	int lfd = listen_on(SINK_PORT, INADDR_LOOPBACK);
	static char buf[1 << 16];

	sink_pid = fork();
	if (sink_pid < 0)
		die("fork");
	if (sink_pid) {
		close(lfd);
		return;
	}
	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			continue;
		if (!fork()) {
			while (read(fd, buf, sizeof(buf)) > 0)
				;
			_exit(0);
		}
		close(fd);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}

int main(int argc, char **argv)
{
	int lfd, quit = 0, i;

	if (argc != 2) {
		fprintf(stderr, "usage: mon-workload PORT\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	sink();
	lfd = listen_on(atoi(argv[1]), INADDR_ANY);
	/* The host's lib.sh waits for this line: only now do we listen. */
	printf("MAGNET-NODE-READY\n");
	fflush(stdout);
	while (!quit) {
		FILE *f;
		static char line[CMD_MAX];
		char out[512];
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0)
			continue;
		/* Reads through stdio, replies straight to the socket. */
		f = fdopen(fd, "r");
		if (!f)
			die("fdopen");
		while (!quit && fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\r\n")] = '\0';
			handle(line, out, sizeof(out), &quit);
			dprintf(fd, "%s\n", out);
		}
		fclose(f);
	}
	for (i = 0; i < MAX_JOBS; i++)
		if (jobs[i].pid)
			end_job(&jobs[i]);
	kill(sink_pid, SIGTERM);
	waitpid(sink_pid, NULL, 0);
	return 0;
}
