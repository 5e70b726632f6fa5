/* SPDX-License-Identifier: GPL-2.0 */
/* The release of magnet, module and tools alike: one definition. */
#ifndef _MAGNET_VERSION_H
#define _MAGNET_VERSION_H

#define MAGNET_RELEASE	"0.2.0"

#endif /* _MAGNET_VERSION_H */
