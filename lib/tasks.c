// SPDX-License-Identifier: GPL-2.0
/*
 * A mirror of the module's per-CPU task slots (lib/tasks.h): the slot a
 * TASK record fills is the one the module filled when it wrote it, so a
 * record whose pid its slot does not hold was never named, and no guess
 * is made.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "tasks.h"

struct mg_task_slot {
	bool named;
	struct mg_task task;
};

struct mg_tasks {
	unsigned int ncpus;
	struct mg_task_slot **cpu;	/* [ncpus][MAGNET_TASK_SLOTS], lazily */
};

struct mg_tasks *mg_tasks_new(void)
{
	return calloc(1, sizeof(struct mg_tasks));
}

void mg_tasks_free(struct mg_tasks *t)
{
	unsigned int i;

	if (!t)
		return;
	for (i = 0; i < t->ncpus; i++)
		free(t->cpu[i]);
	free(t->cpu);
	free(t);
}

static struct mg_task_slot *slots_of(struct mg_tasks *t, __u32 cpu)
{
	if (cpu >= t->ncpus) {
		unsigned int n = cpu + 1;
		struct mg_task_slot **p = realloc(t->cpu, n * sizeof(*p));

		if (!p)
			return NULL;
		memset(p + t->ncpus, 0, (n - t->ncpus) * sizeof(*p));
		t->cpu = p;
		t->ncpus = n;
	}
	if (!t->cpu[cpu])
		t->cpu[cpu] = calloc(MAGNET_TASK_SLOTS, sizeof(struct mg_task_slot));
	return t->cpu[cpu];
}

int mg_tasks_feed(struct mg_tasks *t, const struct magnet_record *r)
{
	struct mg_task_slot *slots, *s;

	if (mg_record_is_lost(r) && mg_record_lost(r)->overwritten) {
		/* A TASK record may have gone with them (UAPI: TASK RECORDS). */
		if (r->cpu < t->ncpus && t->cpu[r->cpu])
			memset(t->cpu[r->cpu], 0, MAGNET_TASK_SLOTS * sizeof(struct mg_task_slot));
		return 0;
	}
	if (!mg_record_is_task(r))
		return 0;
	slots = slots_of(t, r->cpu);
	if (!slots) {
		errno = ENOMEM;
		return -1;
	}
	s = &slots[r->pid % MAGNET_TASK_SLOTS];
	s->named = true;
	s->task.pid = r->pid;
	s->task.tgid = r->tgid;
	s->task.cgroup = r->abstract_id;
	mg_record_task_comm(r, s->task.comm);
	mg_record_task_uids(r, &s->task.uid, &s->task.euid);
	return 1;
}

const struct mg_task *mg_tasks_of(const struct mg_tasks *t,
				  const struct magnet_record *r)
{
	const struct mg_task_slot *s;

	if (r->cpu >= t->ncpus || !t->cpu[r->cpu])
		return NULL;
	s = &t->cpu[r->cpu][r->pid % MAGNET_TASK_SLOTS];
	if (!s->named || s->task.pid != r->pid)
		return NULL;
	return &s->task;
}

int mg_tasks_replay(const struct mg_tasks *t, __u64 timestamp,
		    int (*fn)(const struct magnet_record *r, void *arg), void *arg)
{
	__u64 buf[(MAGNET_RECORD_HEADER + sizeof(struct magnet_task)) / 8];
	unsigned int cpu, i;
	int ret;

	for (cpu = 0; cpu < t->ncpus; cpu++) {
		if (!t->cpu[cpu])
			continue;
		for (i = 0; i < MAGNET_TASK_SLOTS; i++) {
			const struct mg_task_slot *s = &t->cpu[cpu][i];
			struct mg_record_hdr h = {
				.cpu = cpu,
				.cgroup = (__u32)s->task.cgroup,
				.abstract_id = s->task.cgroup,
				.timestamp = timestamp,
				.pid = s->task.pid,
				.tgid = s->task.tgid,
			};

			if (!s->named)
				continue;
			mg_record_encode_task_as(buf, sizeof(buf), &h, s->task.comm,
						 s->task.uid, s->task.euid);
			ret = fn((const struct magnet_record *)buf, arg);
			if (ret)
				return ret;
		}
	}
	return 0;
}
