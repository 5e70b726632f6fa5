// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl's entry point: everything, the options included, is
 * ctl_exec()'s (lib/ctl/exec.c, in libmagnetctl.a), so that the program
 * and a daemon running the same command lines in-process cannot differ.
 *
 *   magnet-ctl [-j | -m] OBJECT COMMAND [ARGUMENTS]
 */
#include <stdio.h>

#include "ctl.h"

int main(int argc, char **argv)
{
	/*
	 * The unit test builds this file as magnet_ctl_main() and points
	 * ctl_outf and ctl_errf at its buffers first; in the program they are
	 * NULL here.
	 */
	FILE *out = ctl_outf ? ctl_outf : stdout;
	FILE *err = ctl_errf ? ctl_errf : stderr;

	if (argc < 1)		/* execve() with no argv[0] */
		return ctl_exec(0, argv, out, err);
	return ctl_exec(argc - 1, argv + 1, out, err);
}
