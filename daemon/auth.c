// SPDX-License-Identifier: GPL-2.0
/* MUNGE credentials of TCP clients; see auth.h. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <munge.h>

#include "auth.h"
#include "mgmunge.h"

static char munge_socket[4096];

void mg_auth_munge_socket(const char *path)
{
	snprintf(munge_socket, sizeof(munge_socket), "%s", path ? path : "");
}

/*
 * MUNGE's armor: "MUNGE:", base64, ":". Checked here so that junk costs
 * no round trip to munged, and no byte of it reaches munged's log.
 */
static bool armored(const char *s, size_t len)
{
	size_t i;

	if (len < 8 || memcmp(s, "MUNGE:", 6) || s[len - 1] != ':')
		return false;
	for (i = 6; i < len - 1; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '='))
			return false;
	}
	return true;
}

/* munged's verdict as a reason for the client (and magnetd's log). */
static void explain(munge_err_t e, munge_ctx_t ctx, char *why, size_t whylen)
{
	const char *detail = ctx ? munge_ctx_strerror(ctx) : NULL;

	if (!detail)
		detail = munge_strerror(e);
	switch (e) {
	case EMUNGE_CRED_EXPIRED:
		snprintf(why, whylen, "expired credential (older than its time to live)");
		break;
	case EMUNGE_CRED_REWOUND:
		snprintf(why, whylen, "credential minted in the future (are the clocks apart?)");
		break;
	case EMUNGE_CRED_REPLAYED:
		snprintf(why, whylen, "replayed credential (each is taken once)");
		break;
	case EMUNGE_CRED_UNAUTHORIZED:
		snprintf(why, whylen, "credential restricted to another user");
		break;
	case EMUNGE_SOCKET:
		snprintf(why, whylen, "munged unreachable: %s", detail);
		break;
	case EMUNGE_CRED_INVALID:
		snprintf(why, whylen, "invalid credential (minted with another MUNGE key?)");
		break;
	case EMUNGE_BAD_CRED:
	case EMUNGE_BAD_VERSION:
	case EMUNGE_BAD_CIPHER:
	case EMUNGE_BAD_MAC:
	case EMUNGE_BAD_ZIP:
	case EMUNGE_BAD_REALM:
		snprintf(why, whylen, "invalid credential: %s", detail);
		break;
	default:
		snprintf(why, whylen, "munged: %s", detail);
		break;
	}
}

int mg_auth_munge(const char *cred, size_t len, uid_t *uid, gid_t *gid,
		  char *why, size_t whylen)
{
	char text[MG_MUNGE_CRED_MAX + 1];
	munge_ctx_t ctx = NULL;
	munge_err_t e;
	void *payload = NULL;
	int plen = 0, ret = -1;

	if (len > MG_MUNGE_CRED_MAX) {
		snprintf(why, whylen, "credential longer than %u bytes",
			 MG_MUNGE_CRED_MAX);
		return -1;
	}
	if (!armored(cred, len)) {
		snprintf(why, whylen, "not a MUNGE credential (MUNGE:<base64>:)");
		return -1;
	}
	memcpy(text, cred, len);
	text[len] = '\0';
	ctx = munge_ctx_create();
	if (!ctx) {
		snprintf(why, whylen, "munged: out of memory");
		return -1;
	}
	if (munge_socket[0]) {
		e = munge_ctx_set(ctx, MUNGE_OPT_SOCKET, munge_socket);
		if (e != EMUNGE_SUCCESS) {
			explain(e, ctx, why, whylen);
			goto out_ctx;
		}
	}
	e = munge_decode(text, ctx, &payload, &plen, uid, gid);
	if (e != EMUNGE_SUCCESS) {
		explain(e, ctx, why, whylen);
		goto out_payload;
	}
	if (plen != (int)MG_MUNGE_PAYLOAD_LEN ||
	    memcmp(payload, MG_MUNGE_PAYLOAD, MG_MUNGE_PAYLOAD_LEN)) {
		/* Another service's: valid on the key, not meant for us. */
		snprintf(why, whylen, "credential not minted for magnetd (its payload must be '%s')",
			 MG_MUNGE_PAYLOAD);
		goto out_payload;
	}
	ret = 0;
out_payload:
	free(payload);	/* libmunge's malloc, also on most failures */
out_ctx:
	munge_ctx_destroy(ctx);
	return ret;
}
