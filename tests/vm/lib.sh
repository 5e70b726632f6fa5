# Shared helpers of the VM tests (sourced; busybox sh).
# shellcheck shell=sh
fail() { echo "FAIL: $*"; dmesg | tail -n 20; exit 1; }

# shellcheck disable=SC2120 # the parameters are optional
load() { # module parameters...
	insmod /magnet/magnet.ko "$@" || fail "insmod magnet.ko $*"
}

unload() {
	rmmod magnet || fail "rmmod magnet"
}
