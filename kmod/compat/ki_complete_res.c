// SPDX-License-Identifier: GPL-2.0
/* 5.16: ki_complete(iocb, res), no res2. */
#include <linux/fs.h>
static void done(struct kiocb *iocb, long res) { }
struct kiocb mg_probe = { .ki_complete = done };
