#!/bin/sh
# The "sock" named handler answers the seeds' question per record: which
# process sends how much to which host and port; only where the kernel's BTF
# says the first argument is a struct sock *, and never dereferenced blindly.
. ./lib.sh
load
nltest add-sock tcp_sendmsg || fail "add tcp_sendmsg with the sock handler"
mgtest sock 50 || fail "sock records"
insmod /magnet/magnet_sample.ko || fail "insmod magnet_sample.ko"
nltest sock-check || fail "sock handler type check and bogus sockets"
rmmod magnet_sample || fail "rmmod magnet_sample"
unload
