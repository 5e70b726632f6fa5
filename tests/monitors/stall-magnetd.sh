#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tests/monitors, in the guest: stall magnetd (SIGSTOP): its port still
# takes connections (the kernel's backlog), nothing answers.
# resume-magnetd.sh lets it go on.
kill -STOP "$(cat /tmp/mon/magnetd.pid)"
