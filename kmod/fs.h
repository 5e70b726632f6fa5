/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _MAGNET_FS_H
#define _MAGNET_FS_H

struct mg_cpu_buf;

#include <magnet/version.h>

/* The directory: may fail. The files: last of all, cannot fail. */
int mg_fs_init(void);
void mg_fs_publish(void);
void mg_fs_exit(void);
void mg_fs_buf_init(struct mg_cpu_buf *buf);

#endif /* _MAGNET_FS_H */
