# Guest-side test programs of the VM suite (static: the initramfs has no loader).
$(BUILD)/tests/vm/mgtest: $(BUILD)/tests/vm/mgtest.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^ -laio
USER_BINS += $(BUILD)/tests/vm/mgtest
GUEST_FILES += $(BUILD)/tests/vm/mgtest:/magnet/bin/mgtest

$(BUILD)/tests/vm/nltest: $(BUILD)/tests/vm/nltest.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^
USER_BINS += $(BUILD)/tests/vm/nltest
GUEST_FILES += $(BUILD)/tests/vm/nltest:/magnet/bin/nltest

$(BUILD)/tests/vm/mdtest: $(BUILD)/tests/vm/mdtest.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^
USER_BINS += $(BUILD)/tests/vm/mdtest
GUEST_FILES += $(BUILD)/tests/vm/mdtest:/magnet/bin/mdtest

$(BUILD)/tests/vm/jobtest: $(BUILD)/tests/vm/jobtest.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^
USER_BINS += $(BUILD)/tests/vm/jobtest
GUEST_FILES += $(BUILD)/tests/vm/jobtest:/magnet/bin/jobtest

$(BUILD)/tests/vm/fairtest: $(BUILD)/tests/vm/fairtest.o $(LIBMAGNET)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^
USER_BINS += $(BUILD)/tests/vm/fairtest
GUEST_FILES += $(BUILD)/tests/vm/fairtest:/magnet/bin/fairtest

$(BUILD)/tests/vm/pktsend: $(BUILD)/tests/vm/pktsend.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^
USER_BINS += $(BUILD)/tests/vm/pktsend
GUEST_FILES += $(BUILD)/tests/vm/pktsend:/magnet/bin/pktsend

$(BUILD)/tests/vm/nettest: $(BUILD)/tests/vm/nettest.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^
USER_BINS += $(BUILD)/tests/vm/nettest
GUEST_FILES += $(BUILD)/tests/vm/nettest:/magnet/bin/nettest

$(BUILD)/tests/vm/twtest: $(BUILD)/tests/vm/twtest.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^
USER_BINS += $(BUILD)/tests/vm/twtest
GUEST_FILES += $(BUILD)/tests/vm/twtest:/magnet/bin/twtest

$(BUILD)/tests/vm/cgchurn: $(BUILD)/tests/vm/cgchurn.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^
USER_BINS += $(BUILD)/tests/vm/cgchurn
GUEST_FILES += $(BUILD)/tests/vm/cgchurn:/magnet/bin/cgchurn

# tests/monitors: the guest's workload server (the host's tests drive it).
$(BUILD)/tests/monitors/mon-workload: $(BUILD)/tests/monitors/workload.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^
USER_BINS += $(BUILD)/tests/monitors/mon-workload
GUEST_FILES += $(BUILD)/tests/monitors/mon-workload:/magnet/bin/mon-workload \
	tests/monitors/node.sh:/magnet/tests/monitors/node.sh \
	tests/monitors/start-magnetd.sh:/magnet/tests/monitors/start-magnetd.sh \
	tests/monitors/stop-magnetd.sh:/magnet/tests/monitors/stop-magnetd.sh \
	tests/monitors/stall-magnetd.sh:/magnet/tests/monitors/stall-magnetd.sh \
	tests/monitors/resume-magnetd.sh:/magnet/tests/monitors/resume-magnetd.sh

$(BUILD)/tests/vm/asuser: $(BUILD)/tests/vm/asuser.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^
USER_BINS += $(BUILD)/tests/vm/asuser
GUEST_FILES += $(BUILD)/tests/vm/asuser:/magnet/bin/asuser

$(BUILD)/tests/vm/swtest: $(BUILD)/tests/vm/swtest.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS_STATIC) -o $@ $^
USER_BINS += $(BUILD)/tests/vm/swtest
GUEST_FILES += $(BUILD)/tests/vm/swtest:/magnet/bin/swtest
