/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _MAGNET_NETLINK_H
#define _MAGNET_NETLINK_H

struct mg_alarm;

int mg_netlink_init(void);
void mg_netlink_exit(void);
void mg_netlink_alarm(const struct mg_alarm *a);

#endif /* _MAGNET_NETLINK_H */
