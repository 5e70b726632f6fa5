/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Job names: a record's header cgroup (the low 32 bits of the cgroup v2 id,
 * the st_ino of the cgroup's directory under the cgroup2 mount; see JOBS in
 * include/uapi/linux/magnet.h) to the cgroup's path under the mount, "/"
 * for the root.
 *
 * The map is built by walking the tree. An id it does not hold starts a
 * new walk, at most once per MG_CGMAP_RESCAN_NS: until then the miss costs
 * a hash lookup and nothing else. Paths of cgroups that were removed stay
 * (ids are not reused before 2^32 cgroups were made), so a job that ended
 * before its records were read is still named. With inotify (IN_CREATE on
 * every directory of the tree; cgroupfs reports mkdir like any file system)
 * a cgroup is mapped as soon as mg_cgmap_poll() sees it made, which names
 * jobs that live less than a rescan. A cgroup removed before the map ever
 * saw it has no path: mg_cgmap_name() calls it "cgroup:<id>", an exact job
 * without a path.
 */
#ifndef MAGNET_LIB_CGMAP_H
#define MAGNET_LIB_CGMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define MG_CGMAP_RESCAN_NS	100000000ULL	/* 100 ms */
/* Paths kept at most; past it, those of removed cgroups go at a rescan. */
#define MG_CGMAP_MAX		65536
/* "cgroup:" and a u32. */
#define MG_CGMAP_NAME_MIN	18

/* mg_cgmap_open flags. */
#define MG_CGMAP_INOTIFY	(1U << 0)	/* watch the tree for mkdir */

struct mg_cgmap;

/*
 * root: the cgroup2 mount, or NULL to find it in /proc/self/mountinfo (no
 * cgroup2 mounted: a map that knows no path, every id is "cgroup:<id>").
 * Walks the tree once. 0 with *out set; -EINVAL (root not a directory),
 * -ENOMEM. Failing to set up inotify is not an error (rescans remain).
 */
int mg_cgmap_open(const char *root, unsigned int flags, struct mg_cgmap **out);
void mg_cgmap_free(struct mg_cgmap *m);

/* The mount in use, or NULL. */
const char *mg_cgmap_root(const struct mg_cgmap *m);

/*
 * The path of cgroup id (relative to the root, "/" for the root), or NULL
 * if the map does not know it even after a rescan, which is made only if
 * the last one is MG_CGMAP_RESCAN_NS before now_ns (CLOCK_MONOTONIC). The
 * string stays valid until the next call that may rescan or poll.
 */
const char *mg_cgmap_path(struct mg_cgmap *m, __u32 id, __u64 now_ns);

/* The path, or "cgroup:<id>" written into buf (size >= MG_CGMAP_NAME_MIN). */
const char *mg_cgmap_name(struct mg_cgmap *m, __u32 id, __u64 now_ns,
			  char *buf, size_t size);

/*
 * Whether cgroup id exists now, by a stat of its path (false for one the
 * map has no path of): for dropping jobs that ended.
 */
bool mg_cgmap_alive(struct mg_cgmap *m, __u32 id);

/* The inotify descriptor (readable when cgroups were made), or -1. */
int mg_cgmap_fd(const struct mg_cgmap *m);

/* Map the cgroups inotify reported made; never blocks. */
void mg_cgmap_poll(struct mg_cgmap *m);

/* Counters, for tests and STATS. */
struct mg_cgmap_stats {
	unsigned int paths;	/* ids mapped now */
	unsigned int watches;	/* directories watched */
	__u64 rescans;		/* walks of the tree, the first included */
	__u64 created;		/* cgroups mapped through inotify */
};

void mg_cgmap_stats(const struct mg_cgmap *m, struct mg_cgmap_stats *st);

#endif /* MAGNET_LIB_CGMAP_H */
