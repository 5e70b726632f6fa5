/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _MAGNET_FS_H
#define _MAGNET_FS_H

struct mg_cpu_buf;

#define MAGNET_RELEASE	"0.1.0"

int mg_fs_init(void);
void mg_fs_exit(void);
void mg_fs_wq_exit(void);
void mg_fs_buf_init(struct mg_cpu_buf *buf);
void mg_fs_buf_exit(struct mg_cpu_buf *buf);

#endif /* _MAGNET_FS_H */
