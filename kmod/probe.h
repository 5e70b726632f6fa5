/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _MAGNET_PROBE_H
#define _MAGNET_PROBE_H

struct seq_file;

int mg_probes_add_list(const char *spec);
void mg_probes_exit(void);
int mg_probes_show(struct seq_file *m, void *v);

#endif /* _MAGNET_PROBE_H */
