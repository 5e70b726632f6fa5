#!/bin/sh
# The "sock" named handler answers the seeds' question per record: which
# process sends how much to which host and port.
. ./lib.sh
load
nltest add-sock tcp_sendmsg || fail "add tcp_sendmsg with the sock handler"
mgtest sock 50 || fail "sock records"
unload
