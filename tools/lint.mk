# SPDX-License-Identifier: GPL-2.0
# make lint: the checks kernel maintainers run (tools/lint says what each
# does and why), one summary line each, failing on any finding; V=1 shows
# everything. Logs in $(BUILD)/lint/.
#   lint-sparse      sparse on the module through Kbuild (C=2)
#   lint-checkpatch  checkpatch.pl --strict on kmod/, samples/, include/
#   lint-shell       shellcheck on every shell script
#   lint-scan        scan-build over the user-space build ($(BUILD)/lint/scan)
LINT_CHECKS := sparse checkpatch shell scan
LINT_ENV = KDIR='$(KDIR)' BUILD='$(BUILD)' V='$(V)' MAKE='$(MAKE)'

# All four run even when one fails, then the result.
lint:
	$(Q)$(LINT_ENV) tools/lint $(LINT_CHECKS)

$(addprefix lint-,$(LINT_CHECKS)): lint-%:
	$(Q)$(LINT_ENV) tools/lint $*

.PHONY: lint $(addprefix lint-,$(LINT_CHECKS))
