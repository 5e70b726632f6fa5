# SPDX-License-Identifier: GPL-2.0
# magnet-read (ring drainer) and magnet-dump (trace decoder), static.
MAGNET_TOOLS := $(BUILD)/tools/magnet-read $(BUILD)/tools/magnet-dump

$(BUILD)/tools/magnet-read: $(BUILD)/tools/magnet-read.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ -laio

$(BUILD)/tools/magnet-dump: $(BUILD)/tools/magnet-dump.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^

USER_BINS += $(MAGNET_TOOLS)
GUEST_FILES += $(BUILD)/tools/magnet-read:/magnet/bin/magnet-read \
	       $(BUILD)/tools/magnet-dump:/magnet/bin/magnet-dump
