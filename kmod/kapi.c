// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel API of include/magnet/kapi.h: a module's event is a probe of
 * type custom, so filters, sampling, alarms and counters work unchanged.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <magnet/kapi.h>
#include "buffer.h"
#include "probe.h"

struct magnet_event *__magnet_event_register(const char *name, struct module *owner)
{
	struct mg_probe_spec s = {
		.type = MAGNET_PROBE_CUSTOM,
		.handler = MAGNET_HANDLER_RAW,
		.symbol = name,
		.name = name,
		.owner = owner,
	};
	struct mg_probe *p;

	mutex_lock(&mg_probes_lock);
	p = mg_probe_add(&s, NULL);
	mutex_unlock(&mg_probes_lock);
	if (!IS_ERR(p))
		pr_info("event '%s' (id %u) registered by %s\n", p->name, p->id,
			owner ? owner->name : "the kernel");
	return (struct magnet_event *)p;
}
EXPORT_SYMBOL_GPL(__magnet_event_register);

u16 magnet_event_id(const struct magnet_event *ev)
{
	return ((const struct mg_probe *)ev)->id;
}
EXPORT_SYMBOL_GPL(magnet_event_id);

int magnet_log(struct magnet_event *ev, u64 abstract_id, const void *data, u32 len)
{
	struct mg_probe *p = (struct mg_probe *)ev;
	struct magnet_record *rec;
	struct magnet_raw *raw;
	unsigned int busy;
	struct mg_ring *rb;
	int ret = 0;

	/*
	 * Everything, the flags too, inside the preemption-off section that
	 * magnet_event_unregister() waits for: @ev may be going away. Where
	 * RCU is not watching, that wait would not cover us: nothing is done.
	 */
	preempt_disable_notrace();
	busy = mg_handler_enter(p);
	if (!busy) {
		ret = -EAGAIN;
		goto out_enable;
	}
	if (READ_ONCE(p->flags) & MAGNET_PROBE_F_DISABLED) {
		ret = -ENODATA;
		goto out;
	}
	if (!mg_probe_pass(p, abstract_id)) {
		ret = -ENODATA;
		goto out;
	}
	/* Checked before any sum: sizeof(*raw) + len must not wrap. */
	if (unlikely(len > MAGNET_PAYLOAD_MAX - sizeof(*raw))) {
		struct mg_ring *cur = rcu_dereference_sched(mg_bufs[smp_processor_id()]->ring);

		mg_ring_lose(cur, MG_LOST_TOO_BIG);
		this_cpu_inc(p->pc->lost);
		ret = -E2BIG;
		goto out;
	}
	rec = magnet_reserve(&rb, p->id, MAGNET_HANDLER_RAW << MAGNET_REC_HANDLER_SHIFT |
			     (in_task() ? 0 : MAGNET_REC_INTR), abstract_id, sizeof(*raw) + len);
	if (!rec) {
		this_cpu_inc(p->pc->lost);
		ret = -ENOSPC;
		goto out;
	}
	raw = (struct magnet_raw *)rec->payload;
	raw->len = len;
	raw->reserved = 0;
	memcpy(raw->data, data, len);
	mg_probe_done(p, rb, rec);
out:
	mg_handler_leave(busy);
out_enable:
	preempt_enable_notrace();
	return ret;
}
EXPORT_SYMBOL_GPL(magnet_log);
NOKPROBE_SYMBOL(magnet_log);

void magnet_event_unregister(struct magnet_event *ev)
{
	struct mg_probe *p = (struct mg_probe *)ev;

	if (IS_ERR_OR_NULL(ev))
		return;
	mutex_lock(&mg_probes_lock);
	mg_probe_del(p);	/* waits for magnet_log() calls in flight */
	mutex_unlock(&mg_probes_lock);
}
EXPORT_SYMBOL_GPL(magnet_event_unregister);
