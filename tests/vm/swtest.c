// SPDX-License-Identifier: GPL-2.0
/*
 * swtest: two tasks that hand a token back and forth on one CPU, and the
 * kernel's own count of their task switches (tests/vm/t-42-tracepoint.sh).
 *
 *   swtest N
 *
 * Two children, named swping and swpong, pinned to CPU 0, pass a byte
 * over two pipes N times each way: every pass blocks the passer in read()
 * until the other answers. Once both have exited and switched out for the
 * last time, and before they are reaped, their switch counts are read from
 * /proc/PID/status (the kernel counts every switch out of a task, where
 * prev != next, in nvcsw or nivcsw, as sched_switch fires), and one line
 * per child is printed:
 *   NAME PID VOLUNTARY NONVOLUNTARY
 * Every switch of theirs happens between their fork and their death, so a
 * tracer that was on before swtest started has seen exactly that many.
 * Exit 0, or a message and 1.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "swtest: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Pass the token N times: read from in, write to out (ping writes first). */
static void child(const char *name, int in, int out, long n, int first)
{
	cpu_set_t cpus;
	char c = 'x';
	long i;

	prctl(PR_SET_NAME, name);
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus))
		die("sched_setaffinity");
	for (i = 0; i < n; i++) {
		if (first && write(out, &c, 1) != 1)
			die("write");
		if (read(in, &c, 1) != 1)
			die("read");
		if (!first && write(out, &c, 1) != 1)
			die("write");
	}
	_exit(0);
}

/*
 * waitid() returns at exit_notify(), before the child's last switch out
 * (do_task_dead()), which is counted too. finish_task_switch() drops a dead
 * task's stack right after that switch, and /proc/PID/syscall reads
 * "-1 0x0 0x0" for a task without a stack: wait for that.
 */
static void wait_switched_out(pid_t pid)
{
	char path[64], line[128];
	int tries;

	snprintf(path, sizeof(path), "/proc/%d/syscall", pid);
	for (tries = 0; tries < 10000; tries++) {
		FILE *f = fopen(path, "r");

		if (!f)
			die(path);
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		fclose(f);
		if (!strcmp(line, "-1 0x0 0x0\n"))
			return;
		usleep(1000);
	}
	fprintf(stderr, "swtest: %s still reads \"%.*s\" after 10 s: not switched out\n", path,
		(int)strcspn(line, "\n"), line);
	exit(1);
}

static void counts(pid_t pid, long *vol, long *invol)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		die(path);
	*vol = *invol = -1;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "voluntary_ctxt_switches: %ld", vol);
		sscanf(line, "nonvoluntary_ctxt_switches: %ld", invol);
	}
	fclose(f);
	if (*vol < 0 || *invol < 0) {
		fprintf(stderr, "swtest: no switch counts in %s\n", path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	static const char *const names[2] = { "swping", "swpong" };
	int ab[2], ba[2], i;
	pid_t pid[2];
	long n;

	if (argc != 2 || (n = strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: swtest N\n");
		return 1;
	}
	if (pipe(ab) || pipe(ba))
		die("pipe");
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			die("fork");
		if (!pid[i]) {
			if (i == 0)
				child(names[0], ba[0], ab[1], n, 1);
			child(names[1], ab[0], ba[1], n, 0);
		}
	}
	close(ab[0]), close(ab[1]), close(ba[0]), close(ba[1]);
	for (i = 0; i < 2; i++) {
		siginfo_t si = { 0 };
		long vol, invol;

		/* Dead but not reaped: its counts are still there. */
		if (waitid(P_PID, pid[i], &si, WEXITED | WNOWAIT))
			die("waitid");
		if (si.si_code != CLD_EXITED || si.si_status) {
			fprintf(stderr, "swtest: %s failed (code %d status %d)\n", names[i],
				si.si_code, si.si_status);
			return 1;
		}
		wait_switched_out(pid[i]);
		counts(pid[i], &vol, &invol);
		printf("%s %d %ld %ld\n", names[i], pid[i], vol, invol);
	}
	for (i = 0; i < 2; i++)
		waitpid(pid[i], NULL, 0);
	return 0;
}
