// SPDX-License-Identifier: GPL-2.0
/* A test's own munged; see munged.h. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "munged.h"
#include "testutil.h"

/* munged and mungekey are in /usr/sbin, which a user's PATH may lack. */
#define SBIN_PATH	"/usr/sbin:/sbin:/usr/bin:/bin"

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };

	nanosleep(&ts, NULL);
}

/* Run argv (argv[0] looked up in SBIN_PATH), its output to log: 0 or why. */
static int run(char *const argv[], const char *log)
{
	pid_t pid = fork();
	int st;

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		FILE *f = freopen(log, "a", stdout);

		if (f)
			dup2(fileno(f), 2);
		setenv("PATH", SBIN_PATH, 1);
		execvp(argv[0], argv);
		fprintf(stderr, "%s: %s (run tools/bootstrap: package munge)\n",
			argv[0], strerror(errno));
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *log_text(const struct tu_munged *m)
{
	static char text[4096];
	char path[128];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/out", m->dir);
	f = fopen(path, "r");
	n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
	text[n] = '\0';
	if (f)
		fclose(f);
	return text;
}

void tu_munged_start(struct tu_munged *m, const char *key)
{
	char out[128], pidf[128], seed[128], logf[128], arg[5][160];
	char *const md[] = { "munged", "--force", arg[0], arg[1], arg[2],
			     arg[3], arg[4], NULL };
	size_t len;
	char *text;

	memset(m, 0, sizeof(*m));
	strcpy(m->dir, "/tmp/magnet-munged.XXXXXX");
	ck_assert_ptr_ne(mkdtemp(m->dir), NULL);
	/* Clients of other uids (a test's uid 65534) reach the socket. */
	ck_assert_int_eq(chmod(m->dir, 0755), 0);
	snprintf(m->key, sizeof(m->key), "%s/key", m->dir);
	snprintf(m->socket, sizeof(m->socket), "%s/socket", m->dir);
	snprintf(out, sizeof(out), "%s/out", m->dir);
	snprintf(pidf, sizeof(pidf), "%s/pid", m->dir);
	snprintf(seed, sizeof(seed), "%s/seed", m->dir);
	snprintf(logf, sizeof(logf), "%s/log", m->dir);
	if (key) {
		text = tu_read_file(key, &len);
		tu_write_file(m->key, text, len);
		free(text);
		ck_assert_int_eq(chmod(m->key, 0600), 0);
	} else {
		char *const mk[] = { "mungekey", "-c", "-k", m->key, NULL };

		ck_assert_msg(!run(mk, out), "mungekey: %s", log_text(m));
	}
	snprintf(arg[0], sizeof(arg[0]), "--key-file=%s", m->key);
	snprintf(arg[1], sizeof(arg[1]), "--socket=%s", m->socket);
	snprintf(arg[2], sizeof(arg[2]), "--pid-file=%s", pidf);
	snprintf(arg[3], sizeof(arg[3]), "--seed-file=%s", seed);
	snprintf(arg[4], sizeof(arg[4]), "--log-file=%s", logf);
	/* It forks, and returns once its socket serves (or it failed). */
	ck_assert_msg(!run(md, out), "munged did not start: %s", log_text(m));
	text = tu_read_file(pidf, &len);
	text[len] = '\0';
	m->pid = atoi(text);
	free(text);
	ck_assert_int_gt(m->pid, 1);
}

/* Gone, or a zombie: munged forked away, its reaper is not us. */
static bool gone(pid_t pid)
{
	char path[64], state = 0;
	FILE *f;

	if (kill(pid, 0))
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 0;
	fclose(f);
	return state == 'Z';
}

/* munged's exit (its threads, its seed file) takes seconds under load. */
static void wait_gone(pid_t pid)
{
	int i;

	for (i = 0; i < 3000 && !gone(pid); i++)
		sleep_ms(10);
	ck_assert_msg(gone(pid), "munged %d did not stop", pid);
}

void tu_munged_kill(struct tu_munged *m)
{
	if (m->pid > 1 && !kill(m->pid, SIGKILL))
		wait_gone(m->pid);
	m->pid = 0;
}

void tu_munged_stop(struct tu_munged *m)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;

	if (m->pid > 1 && !kill(m->pid, SIGTERM))
		wait_gone(m->pid);
	m->pid = 0;
	if (!m->dir[0])
		return;
	d = opendir(m->dir);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", m->dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(m->dir);
	m->dir[0] = '\0';
}
