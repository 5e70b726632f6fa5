/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Slurm's jobs by their cgroups: a cgroup v2 path (as lib/cgmap.h gives
 * it, under the cgroup2 mount) to the Slurm job, step and task it is, when
 * it is exactly where Slurm's cgroup plugin puts one (docs/slurm.md):
 *
 *   cgroup/v2 (Slurm 22.05 on):
 *     /system.slice/slurmstepd.scope/job_J/step_S/user/task_T
 *     /system.slice/NODE_slurmstepd.scope/...   (several slurmd on a host)
 *     .../job_J/step_S/slurm                   slurmstepd itself
 *   cgroup/v1's layout, where it is the cgroup2 tree's:
 *     /slurm/uid_U/job_J/step_S/task_T          (/slurm_NODE/... likewise)
 *
 * S is a step number, batch, extern or interactive, with +N for a
 * heterogeneous step's component; T a task number (at most 0xfffffffd:
 * the two above are task_special's and no task's here), or special (v2's
 * task_special, processes Slurm adds to a step).
 *
 * Strict. Only these roots count, and every directory from the root to
 * the task must be exactly Slurm's: numbers are decimal as Slurm prints
 * them (no sign, no leading zero, within Slurm's ranges, no overflow),
 * names exact. Below the root only root makes cgroups, except in the
 * directories Slurm gives the job's user (v2's task_T, v1's step_S): a
 * cgroup the user makes there is the user's own subtree inside that task
 * (or step), whatever it is called, so it counts as the task (step) it is
 * in. A directory named job_42 anywhere else (a user's delegated subtree)
 * is no job.
 */
#ifndef MAGNET_LIB_SLURM_H
#define MAGNET_LIB_SLURM_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* No step (the job's own cgroup), task, uid or het component. */
#define MG_SLURM_NONE		0xffffffffU
/* Step ids as Slurm numbers them (slurm.h); numbered steps are below. */
#define MG_SLURM_STEP_MAX	0xfffffff0U
#define MG_SLURM_EXTERN		0xfffffffcU
#define MG_SLURM_BATCH		0xfffffffbU
#define MG_SLURM_INTERACTIVE	0xfffffffaU
/* v2's task_special; numbered tasks are below it (and NONE). */
#define MG_SLURM_TASK_SPECIAL	0xfffffffeU
#define MG_SLURM_TASK_MAX	0xfffffffdU
/* A node's name in a scope or prefix: 1 to this many bytes. */
#define MG_SLURM_NODE_MAX	64
/* mg_slurm_name(): "4294967295.interactive+4294967294/slurmstepd". */
#define MG_SLURM_NAME_MAX	48

/* What the cgroup is of its job. */
enum mg_slurm_part {
	MG_SLURM_JOB,		/* job_J itself */
	/* step_S; v2: and its user/; v1: anything below it but a task */
	MG_SLURM_STEP,
	MG_SLURM_TASK,		/* a task's, or a cgroup below one */
	MG_SLURM_STEPD,		/* v2's step_S/slurm: slurmstepd's */
};

struct mg_slurm {
	__u32 job;
	__u32 step;		/* MG_SLURM_NONE for the job's own */
	__u32 het;		/* heterogeneous component, or NONE */
	__u32 task;		/* MG_SLURM_TASK only, else NONE */
	__u32 uid;		/* from the path (v1's uid_U), or NONE */
	__u8 part;		/* enum mg_slurm_part */
	__u8 node_off, node_len;	/* the node's name in the path; len 0: none */
	__u16 series_len;	/* the path's first bytes: its series' cgroup */
	__u16 step_len;		/* and its step's directory (0: the job's own) */
};

/*
 * Parse path (len bytes, starting with '/'). True with *s filled when it
 * is a Slurm job's cgroup; false (s untouched) for anything else.
 *
 * series_len names the cgroup whose series the cgroup's records count in
 * (a step is the unit Slurm accounts): for a task (and v2's user/, and
 * anything below v1's step_S), its step's directory; for the job's own
 * cgroup, slurmstepd's and a step's, the cgroup itself.
 */
bool mg_slurm_parse(const char *path, size_t len, struct mg_slurm *s);

/*
 * The step as Slurm writes it after "JOB.": "0", "batch", "extern",
 * "interactive", "0+1"; "" for the job's own cgroup. Into buf (at least
 * 24 bytes); returns buf.
 */
const char *mg_slurm_step(const struct mg_slurm *s, char *buf, size_t size);

/*
 * The series' name: "42.0" (Slurm's step id), "42.batch", "42" (the job's
 * own cgroup), "42.0/slurmstepd". Into buf (MG_SLURM_NAME_MAX); returns buf.
 */
const char *mg_slurm_name(const struct mg_slurm *s, char *buf, size_t size);

/* The node's name in path (which s was parsed from), "" if none; returns buf. */
const char *mg_slurm_node(const struct mg_slurm *s, const char *path,
			  char buf[MG_SLURM_NODE_MAX]);

/*
 * The words magnetd's line protocol adds after a Slurm job's path
 * (docs/protocol.md): " slurm_job_id=42 slurm_step=0", " slurm_stepd=1"
 * for slurmstepd's, " slurm_node=NODE" unless node is "" (mg_slurm_node),
 * " uid=UID" unless uid is MG_SLURM_NONE. Printable ASCII, no '%' or
 * space inside a word (a node's name is letters, digits, '-', '.', '_').
 * Into buf (MG_SLURM_WORDS_MAX); returns buf.
 */
#define MG_SLURM_WORDS_MAX	(128 + MG_SLURM_NODE_MAX)
const char *mg_slurm_words(const struct mg_slurm *s, const char *node,
			   __u32 uid, char *buf, size_t size);

#endif /* MAGNET_LIB_SLURM_H */
