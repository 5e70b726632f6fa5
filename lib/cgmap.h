/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Job names: a record's header cgroup (the low 32 bits of the cgroup v2 id,
 * the st_ino of the cgroup's directory under the cgroup2 mount; see JOBS in
 * include/uapi/linux/magnet.h) to the cgroup's path under the mount, "/"
 * for the root.
 *
 * Learning paths. The map walks the tree once at open. With inotify
 * (IN_CREATE and IN_DELETE on every directory of the tree; cgroupfs
 * reports mkdir and rmdir to the parent like any file system) a cgroup is
 * mapped as soon as mg_cgmap_poll() sees it made, which names jobs that
 * live less than a rescan, and its removal is seen at once; a lookup that
 * misses reads the pending events first. An id the map
 * does not hold is looked up by itself on cgroupfs (open_by_handle_at: its
 * id is its file handle; needs CAP_DAC_READ_SEARCH), exactly and without a
 * walk; elsewhere (no handles: another file system, the capability missing)
 * it starts a new walk, at most once per MG_CGMAP_RESCAN_NS: until then the
 * miss costs a hash lookup and nothing else. A cgroup removed before the
 * map ever saw it has no path: mg_cgmap_name() calls it "cgroup:<id>", an
 * exact job without a path.
 *
 * Bounds. Any user may make and remove cgroups in a subtree delegated to
 * it, as fast and with paths as long as it likes, so what the map holds is
 * bounded, whoever makes them:
 * - A removed cgroup is kept (its records may still be read), its watch
 *   dropped, but only the MG_CGMAP_GONE_MAX most recently removed or named.
 * - Entries are at most MG_CGMAP_MAX and their paths MG_CGMAP_MAX_BYTES
 *   (strlen + 1 each): over either, removed cgroups go first (least
 *   recently removed or named), then live cgroups no lookup named (or
 *   found the series of: mg_cgmap_series) for the longest. A live cgroup
 *   dropped so is looked up again by its handle when named: the answer
 *   stays exact. Without handles live cgroups are never dropped (a walk
 *   would be the only way back): then only removed ones go.
 * Every drop for a bound is counted (evicted).
 */
#ifndef MAGNET_LIB_CGMAP_H
#define MAGNET_LIB_CGMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "slurm.h"

#define MG_CGMAP_RESCAN_NS	100000000ULL	/* 100 ms */
/* Entries kept at most, removed cgroups included. */
#define MG_CGMAP_MAX		16384
/* Their paths' bytes (strlen + 1 each) at most. */
#define MG_CGMAP_MAX_BYTES	(4U << 20)
/* Removed cgroups kept at most. */
#define MG_CGMAP_GONE_MAX	1024
/* "cgroup:" and a u32. */
#define MG_CGMAP_NAME_MIN	18

/* mg_cgmap_open flags. */
#define MG_CGMAP_INOTIFY	(1U << 0)	/* watch the tree */
#define MG_CGMAP_NO_HANDLES	(1U << 1)	/* walks only (for tests) */

struct mg_cgmap;

/*
 * root: the cgroup2 mount, or NULL to find it in /proc/self/mountinfo (no
 * cgroup2 mounted: a map that knows no path, every id is "cgroup:<id>").
 * Walks the tree once. 0 with *out set; -EINVAL (root not a directory),
 * -ENOMEM. Failing to set up inotify or handles is not an error (rescans
 * remain).
 */
int mg_cgmap_open(const char *root, unsigned int flags, struct mg_cgmap **out);
void mg_cgmap_free(struct mg_cgmap *m);

/* The mount in use, or NULL. */
const char *mg_cgmap_root(const struct mg_cgmap *m);

/*
 * The path of cgroup id (relative to the root, "/" for the root), or NULL
 * if the map does not know it even after inotify's pending events, a
 * lookup by handle or a rescan (made only if the last one is
 * MG_CGMAP_RESCAN_NS before now_ns, CLOCK_MONOTONIC). A lookup makes the
 * cgroup the most recently named. The string stays valid until the next
 * call on the map.
 */
const char *mg_cgmap_path(struct mg_cgmap *m, __u32 id, __u64 now_ns);

/* The path, or "cgroup:<id>" written into buf (size >= MG_CGMAP_NAME_MIN). */
const char *mg_cgmap_name(struct mg_cgmap *m, __u32 id, __u64 now_ns,
			  char *buf, size_t size);

/*
 * Slurm's jobs (lib/slurm.h). A path is parsed once, when the map learns
 * it, and a Slurm job's cgroup is given the id of its series' cgroup
 * then: a task's step (its directory, looked up in the map or by a stat),
 * any other cgroup itself. The series is kept with the path: it is there
 * whenever the path is, removed cgroups included.
 */
struct mg_cgmap_job {
	const char *path;		/* as mg_cgmap_path() */
	const struct mg_slurm *slurm;	/* NULL: not a Slurm job's cgroup */
	__u32 series;			/* the cgroup its records count in */
	__u32 step;			/* a Slurm step's cgroup: its directory's id; 0 */
};

/*
 * What the map knows of id, looked up as mg_cgmap_path() does: false
 * when it has no path. Valid until the next call on the map.
 */
bool mg_cgmap_job(struct mg_cgmap *m, __u32 id, __u64 now_ns,
		  struct mg_cgmap_job *out);

/*
 * The series id's records count in, from what the map holds, cheap
 * enough for every record: id itself unless the map knows id as a Slurm
 * task's (or other cgroup counted in a series not its own). No lookup by
 * handle or walk; a miss reads inotify's pending events only when armed
 * (mg_cgmap_arm), once. A hit makes the cgroup the most recently named.
 */
__u32 mg_cgmap_series(struct mg_cgmap *m, __u32 id);

/*
 * Records are to be looked up that may name cgroups made since the last
 * mg_cgmap_poll (a new chunk of them): the next mg_cgmap_series that
 * misses polls first, once. Costs nothing until a miss.
 */
void mg_cgmap_arm(struct mg_cgmap *m);

/*
 * Whether cgroup id exists now, by a stat of its path (false for one the
 * map has no path of, or knows removed): for dropping jobs that ended.
 */
bool mg_cgmap_alive(struct mg_cgmap *m, __u32 id);

/* The inotify descriptor (readable when cgroups were made), or -1. */
int mg_cgmap_fd(const struct mg_cgmap *m);

/* Map the cgroups inotify reported made, note those removed; never blocks. */
void mg_cgmap_poll(struct mg_cgmap *m);

/* Counters, for tests and STATS. */
struct mg_cgmap_stats {
	unsigned int paths;	/* ids mapped now, removed cgroups included */
	unsigned int gone;	/* of them, removed cgroups */
	unsigned int watches;	/* directories watched */
	size_t bytes;		/* their paths' bytes (strlen + 1 each) */
	bool handles;		/* ids looked up by handle */
	__u64 rescans;		/* walks of the tree, the first included */
	__u64 polls;		/* reads of the inotify descriptor (polls) */
	__u64 created;		/* cgroups mapped through inotify */
	__u64 removed;		/* cgroups seen removed */
	__u64 resolved;		/* ids found by handle */
	__u64 evicted;		/* entries dropped for the bounds */
	__u64 evicted_live;	/* of them, live cgroups */
};

void mg_cgmap_stats(const struct mg_cgmap *m, struct mg_cgmap_stats *st);

#endif /* MAGNET_LIB_CGMAP_H */
