/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who wrote a record: the command name from the stream's TASK records.
 *
 * The module names a task in a CPU's stream just before that task's first
 * record there, and again whenever its own per-CPU memory of MAGNET_TASK_SLOTS
 * tasks (indexed by pid modulo that) lost it. A reader that mirrors that
 * memory, a TASK record replacing the slot of its pid on its CPU, therefore
 * knows the task of every record that follows, with bounded memory: see
 * TASK RECORDS in include/uapi/linux/magnet.h. Feed it every record of each
 * CPU's stream in stream order (streams of different CPUs may interleave).
 */
#ifndef MAGNET_LIB_TASKS_H
#define MAGNET_LIB_TASKS_H

#include <stdbool.h>
#include <linux/magnet.h>

struct mg_task {
	__u32 pid;
	__u32 tgid;
	__u64 cgroup;		/* the full cgroup v2 id when it was named */
	char comm[17];		/* NUL-terminated */
	__u32 uid, euid;	/* its owner; MG_UID_UNKNOWN: not known */
};

struct mg_tasks;

/* NULL on allocation failure. */
struct mg_tasks *mg_tasks_new(void);
void mg_tasks_free(struct mg_tasks *t);

/*
 * Take in one record. A TASK record replaces its slot and returns true;
 * a LOST record reporting overwritten records empties its CPU's slots (a
 * TASK record may have been overwritten); any record but TASK returns
 * false. -1 (errno ENOMEM) if a new CPU's table could not be allocated.
 */
int mg_tasks_feed(struct mg_tasks *t, const struct magnet_record *r);

/* The task that wrote r (its CPU, its pid), or NULL if none was named. */
const struct mg_task *mg_tasks_of(const struct mg_tasks *t,
				  const struct magnet_record *r);

/*
 * What the tables hold, as TASK records: for a new trace file or a new
 * subscriber, so that it can name the records that follow on its own.
 * Calls fn for every named task of every CPU; stops at fn's first
 * non-zero return and returns it, else 0. timestamp goes into each record.
 */
int mg_tasks_replay(const struct mg_tasks *t, __u64 timestamp,
		    int (*fn)(const struct magnet_record *r, void *arg), void *arg);

#endif /* MAGNET_LIB_TASKS_H */
