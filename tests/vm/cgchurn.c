// SPDX-License-Identifier: GPL-2.0
/*
 * cgchurn: what a user may do in a cgroup subtree delegated to it
 * (t-40-cgmap): make and remove cgroups in a loop, with paths as long as
 * the kernel takes.
 *
 *   cgchurn [-u UID] [-b B] DIR LEN N
 *
 * As UID (and gid UID, no supplementary groups) when given: below DIR,
 * directories of 250-byte names until the path is at least LEN bytes long
 * (those there already are used), then N mkdir and rmdir of 250-byte
 * names there, B at a time (default 1): B made, then those B removed, as
 * a batch system's jobs come and go. Prints "path=" that directory, then
 * N, the churned paths' length and the time taken.
 * Exit 0 when every mkdir and rmdir succeeded.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#define NAME_LEN	250

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "cgchurn: %s %s: %s\n", what, arg, strerror(errno));
	exit(1);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void long_name(char *buf, char c)
{
	memset(buf, c, NAME_LEN);
	buf[NAME_LEN] = '\0';
}

/* The j-th of a batch: "J-zzz...", NAME_LEN bytes. */
static void batch_name(char *buf, unsigned long j)
{
	char tag[24];
	size_t n = snprintf(tag, sizeof(tag), "%lu-", j);

	long_name(buf, 'z');
	memcpy(buf, tag, n);
}

int main(int argc, char **argv)
{
	char path[8192], name[NAME_LEN + 1];
	unsigned long n, i, j, batch = 1;
	size_t len;
	double t0;
	char c = 'a';
	int opt, fd;
	long uid = -1;

	while ((opt = getopt(argc, argv, "u:b:")) != -1) {
		if (opt == 'u')
			uid = strtol(optarg, NULL, 10);
		else if (opt == 'b' && (batch = strtoul(optarg, NULL, 10)) > 0)
			continue;
		else
			goto usage;
	}
	if (argc - optind != 3)
		goto usage;
	len = strtoul(argv[optind + 1], NULL, 10);
	n = strtoul(argv[optind + 2], NULL, 10);
	if (uid >= 0 && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
		die("dropping privileges to", optarg);
	snprintf(path, sizeof(path), "%s", argv[optind]);
	while (strlen(path) < len) {
		size_t l = strlen(path);

		if (l + 1 + NAME_LEN >= sizeof(path))
			break;
		long_name(name, c++);
		snprintf(path + l, sizeof(path) - l, "/%s", name);
		if (mkdir(path, 0755) && errno != EEXIST)
			die("mkdir", path);
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		die("open", path);
	printf("path=%s\n", path);
	fflush(stdout);
	long_name(name, 'z');
	t0 = mono_s();
	for (i = 0; i < n; i += batch) {
		for (j = 0; j < batch && i + j < n; j++) {
			batch_name(name, j);
			if (mkdirat(fd, name, 0755))
				die("mkdir in", path);
		}
		for (j = 0; j < batch && i + j < n; j++) {
			batch_name(name, j);
			if (unlinkat(fd, name, AT_REMOVEDIR))
				die("rmdir in", path);
		}
	}
	printf("churned %lu cgroups of %zu-byte paths in %.1f s\n", n,
	       strlen(path) + 1 + NAME_LEN, mono_s() - t0);
	return 0;
usage:
	fprintf(stderr, "usage: cgchurn [-u UID] [-b B] DIR LEN N\n");
	return 2;
}
