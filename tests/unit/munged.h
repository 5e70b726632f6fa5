/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A real munged of a test's own (Debian's munge package): its own key,
 * socket, pid, seed and log files in a fresh directory, never the
 * system's. Check assertions fail the test when munged, mungekey or the
 * directory cannot be had.
 */
#ifndef MAGNET_TESTS_MUNGED_H
#define MAGNET_TESTS_MUNGED_H

#include <sys/types.h>

struct tu_munged {
	char dir[64];
	char key[128];		/* the key file */
	char socket[128];	/* where clients reach it */
	pid_t pid;		/* the daemon (it forks away from us) */
};

/*
 * Start one with key (a key file to copy; NULL: a new key from
 * mungekey). Returns once its socket serves.
 */
void tu_munged_start(struct tu_munged *m, const char *key);

/* Stop it (its socket goes away) and remove its directory. */
void tu_munged_stop(struct tu_munged *m);

/* Kill it (SIGKILL: its socket stays, as after a crash); no removal. */
void tu_munged_kill(struct tu_munged *m);

#endif /* MAGNET_TESTS_MUNGED_H */
