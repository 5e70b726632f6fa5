/* SPDX-License-Identifier: GPL-2.0 */
/*
 * magnet's kernel API: how another kernel module joins the sensor (paper
 * §3.5). Register an event, get its unique event id, log records through
 * the same filters, sampling and alarms as any probe, unregister.
 *
 *	static struct magnet_event *ev;
 *
 *	ev = magnet_event_register("mydrv_irq");	// in module init
 *	if (IS_ERR(ev))
 *		return PTR_ERR(ev);
 *	magnet_log(ev, (u64)dev, &stat, sizeof(stat));	// any context, NMI too
 *	magnet_event_unregister(ev);			// in module exit
 *
 * Records carry struct magnet_raw (include/uapi/linux/magnet.h). The event
 * shows up in magnet/probes and in magnet-ctl probe list as type custom;
 * user space may filter, sample, notify and disable it, but only the
 * module removes it. magnet cannot be unloaded while such a module is
 * loaded (it uses these symbols).
 */
#ifndef _MAGNET_KAPI_H
#define _MAGNET_KAPI_H

#include <linux/module.h>
#include <linux/types.h>

struct magnet_event;

struct magnet_event *__magnet_event_register(const char *name, struct module *owner);
#define magnet_event_register(name) __magnet_event_register(name, THIS_MODULE)
u16 magnet_event_id(const struct magnet_event *ev);
/*
 * 0: recorded. -ENODATA: filtered or sampled out, or the event is
 * disabled. -ENOSPC: the ring had no room (counted as lost). -E2BIG: more
 * than MAGNET_PAYLOAD_MAX - 8 bytes (counted as lost). -EAGAIN: not
 * recorded, counted as missed: called where RCU is not watching (the idle
 * loop), or from inside one of magnet's own handlers on this CPU.
 */
int magnet_log(struct magnet_event *ev, u64 abstract_id, const void *data, u32 len);
void magnet_event_unregister(struct magnet_event *ev);

#endif /* _MAGNET_KAPI_H */
