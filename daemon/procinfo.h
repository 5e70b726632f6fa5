/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What records do not carry: a thread's comm and its cgroup (the job).
 * magnetd looks them up in /proc when it reads a record, which is within
 * the read latency of the event (100 ms by default), and caches them per
 * pid for MG_PROCINFO_TTL_NS, negative answers included, so a flood of
 * records costs one lookup per thread per TTL. A thread that exited before
 * its records were read cannot be resolved: callers count such records as
 * unkeyed, never guess.
 *
 * The cgroup id is the cgroup2 directory's inode number, which is the
 * kernel's cgroup id (kernfs node id on 64-bit), the same number the
 * module's cgroup filters and bpf_get_current_cgroup_id() use.
 */
#ifndef MAGNET_DAEMON_PROCINFO_H
#define MAGNET_DAEMON_PROCINFO_H

#include <stdbool.h>
#include <linux/types.h>

#define MG_PROCINFO_TTL_NS	1000000000ULL
#define MG_PROCINFO_PATH_MAX	256

struct mg_procinfo;

struct mg_proc {
	__u32 pid;
	bool alive;		/* found in /proc when looked up */
	char comm[16];
	__u64 cgroup;		/* 0: unknown (no cgroup2, or gone) */
};

/*
 * capacity: threads cached (a power of two); cgroup_root: where cgroup2 is
 * mounted, NULL to find it in /proc/self/mountinfo (none: cgroups stay
 * unknown). proc_root: "/proc" (tests may point elsewhere).
 */
int mg_procinfo_create(unsigned int capacity, const char *proc_root,
		       const char *cgroup_root, struct mg_procinfo **out);
void mg_procinfo_free(struct mg_procinfo *p);

/* The thread's entry, looked up now if not cached within the TTL. */
const struct mg_proc *mg_procinfo_get(struct mg_procinfo *p, __u32 pid,
				      __u64 now_ns);

/* Path under the cgroup root ("/" for the root) of a cgroup met, or NULL. */
const char *mg_procinfo_cgroup_path(const struct mg_procinfo *p, __u64 id);

/* The cgroup2 mount point in use, or NULL. */
const char *mg_procinfo_cgroup_root(const struct mg_procinfo *p);

#endif /* MAGNET_DAEMON_PROCINFO_H */
