/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who may see what (docs/security.md). The kernel side is root-only;
 * magnetd serves a shared node's users, so it decides per client, from the
 * client's uid (SO_PEERCRED on the Unix socket, a MUNGE credential over
 * TCP) and the owners the TASK records give each thread:
 *
 *   ALL     root, and the users and groups of access_all: every record
 *           as read, every job.
 *   TOTALS  the users and groups of access_totals (the monitors): every
 *           job's totals; records only their own, as OWN.
 *   OWN     any other known uid: records of its own threads (real and
 *           effective uid both its own, not written in interrupt context),
 *           kernel addresses in them hashed; only its own jobs.
 *   NONE    a client whose uid is not known (TCP without a credential,
 *           loopback included): node-level totals and the probe list.
 */
#ifndef MAGNET_DAEMON_ACCESS_H
#define MAGNET_DAEMON_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum mg_access { MG_ACCESS_NONE, MG_ACCESS_OWN, MG_ACCESS_TOTALS, MG_ACCESS_ALL };

#define MG_ACCESS_SET_MAX	64

/* Users and groups, from a list such as "ganglia, 990, @magnet, @123". */
struct mg_access_set {
	uid_t uids[MG_ACCESS_SET_MAX];
	gid_t gids[MG_ACCESS_SET_MAX];
	unsigned int nuids, ngids;
};

struct mg_access_rules {
	struct mg_access_set all, totals;
};

/* Test hooks: where names are looked up (a static magnetd has no NSS). */
extern const char *mg_access_passwd_path, *mg_access_group_path;

/*
 * Parse a list (comma- or blank-separated). Names are looked up in
 * /etc/passwd and /etc/group; a name that is not there is an error,
 * unless lenient (the built-in defaults name a group and a user that a
 * node may not have: they then grant nothing). 0, or -EINVAL with err.
 */
int mg_access_parse(const char *text, bool lenient, struct mg_access_set *set,
		    char *err, size_t errlen);

/* The level of uid with primary gid and supplementary groups. */
enum mg_access mg_access_level(const struct mg_access_rules *r, uid_t uid,
			       gid_t gid, const gid_t *groups, size_t ngroups);

/*
 * uid's supplementary groups from /etc/group (for a MUNGE client, which
 * brings only uid and gid). Returns how many were stored (at most max).
 */
size_t mg_access_groups_of(uid_t uid, gid_t *groups, size_t max);

const char *mg_access_name(enum mg_access a);

/*
 * What an OWN client is shown of a 64-bit value that may be a kernel
 * address: values in the kernel's half (below the error-pointer range)
 * are replaced by a keyed hash under 2^47, the same for the same value
 * while magnetd runs, so flows still correlate; others pass.
 */
void mg_access_key_init(void);
unsigned long long mg_access_scrub(unsigned long long v);

#endif /* MAGNET_DAEMON_ACCESS_H */
