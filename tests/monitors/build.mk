# SPDX-License-Identifier: GPL-2.0
# tests/monitors: host-side programs of the monitor tests (make
# monitors-check). sfsexp is a shared library in Debian: linked so.
$(BUILD)/tests/monitors/supermon-client: $(BUILD)/tests/monitors/supermon-client.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ -lsexp

USER_BINS += $(BUILD)/tests/monitors/supermon-client
