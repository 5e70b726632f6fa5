/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What both ends of `AUTH MUNGE <credential>` (docs/protocol.md) agree on:
 * the payload every credential for magnetd carries, so that one minted for
 * another service (Slurm's, on the same MUNGE key) is refused, and the
 * longest armored credential taken.
 */
#ifndef MAGNET_LIB_MGMUNGE_H
#define MAGNET_LIB_MGMUNGE_H

#define MG_MUNGE_PAYLOAD	"magnetd"
#define MG_MUNGE_PAYLOAD_LEN	(sizeof(MG_MUNGE_PAYLOAD) - 1)
/*
 * "MUNGE:<base64>:". Payload "magnetd" makes about 170 bytes with munged's
 * defaults, and 250 with its largest MAC: a credential over this is junk.
 */
#define MG_MUNGE_CRED_MAX	1024

#endif /* MAGNET_LIB_MGMUNGE_H */
