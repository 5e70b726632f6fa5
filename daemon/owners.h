/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whose job is a cgroup: learnt from the TASK records (each names a
 * thread's cgroup and uids). A job belongs to the one non-root uid whose
 * threads were seen in it; root's threads do not change that (a job's
 * cgroup often holds a root helper, e.g. slurmstepd), a second user's make
 * it nobody's (MG_OWNER_MIXED). A job where only root was seen is root's.
 * A cgroup seen removed is forgotten (its id may be another's one day).
 * Bounded: past MG_OWNERS_MAX cgroups the table starts again empty (its
 * jobs are learnt again as their threads are named again).
 */
#ifndef MAGNET_DAEMON_OWNERS_H
#define MAGNET_DAEMON_OWNERS_H

#include <stdbool.h>
#include <linux/types.h>

#define MG_OWNERS_MAX	65536
#define MG_OWNER_NONE	((__u32)-1)	/* never seen (or uids unknown) */
#define MG_OWNER_MIXED	((__u32)-2)	/* several users' */

struct mg_owners;

struct mg_owners *mg_owners_new(void);
void mg_owners_free(struct mg_owners *o);
/*
 * A thread of uid was seen in cgroup (its low 32 bits, as records give);
 * uid MG_OWNER_MIXED: threads of several users (another cgroup's, folded
 * into this one's).
 */
void mg_owners_note(struct mg_owners *o, __u32 cgroup, __u32 uid);
/* The cgroup is gone: what was seen of it too. */
void mg_owners_forget(struct mg_owners *o, __u32 cgroup);
/* The job's owner, MG_OWNER_NONE or MG_OWNER_MIXED. */
__u32 mg_owners_of(const struct mg_owners *o, __u32 cgroup);
/* How many times the table started again (for STATS). */
unsigned long long mg_owners_resets(const struct mg_owners *o);

#endif /* MAGNET_DAEMON_OWNERS_H */
