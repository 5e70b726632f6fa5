// SPDX-License-Identifier: GPL-2.0
/*
 * asuser UID COMMAND [ARG...]: run COMMAND as uid and gid UID, with no
 * supplementary groups: another user of a shared node, for the tests (the
 * guest has no su, no passwd, no user namespace tricks needed).
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char *end;
	unsigned long id;

	if (argc < 3) {
		fprintf(stderr, "usage: asuser UID COMMAND [ARG...]\n");
		return 2;
	}
	errno = 0;
	id = strtoul(argv[1], &end, 10);
	if (errno || *end || end == argv[1] || id >= (uid_t)-1) {
		fprintf(stderr, "asuser: bad uid '%s'\n", argv[1]);
		return 2;
	}
	if (setgroups(0, NULL) || setresgid(id, id, id) || setresuid(id, id, id)) {
		fprintf(stderr, "asuser: cannot become uid %lu: %s\n", id, strerror(errno));
		return 2;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "asuser: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
