#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tests/monitors, in the guest: magnetd stalled by stall-magnetd.sh goes on.
kill -CONT "$(cat /tmp/mon/magnetd.pid)"
