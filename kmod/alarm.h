/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _MAGNET_ALARM_H
#define _MAGNET_ALARM_H

#include <linux/types.h>

/* One notification of a NOTIFY probe's hit, queued from probe context. */
struct mg_alarm {
	u16 probe_id;
	u32 cpu;
	u32 pid;
	u32 tgid;
	u64 timestamp;
	u64 abstract_id;
	int ready;
};

int mg_alarm_init(void);
void mg_alarm_exit(void);
void mg_alarm_flush(void);
bool mg_alarm_queue(u16 probe_id, u64 abstract_id, u64 ts);

#endif /* _MAGNET_ALARM_H */
