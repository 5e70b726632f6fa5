# SPDX-License-Identifier: GPL-2.0
#
# Man pages. docs/NAME.md is both the Markdown documentation and the
# source of the page NAME.SECTION (go-md2man; its first line is the
# "% TITLE SECTION" header), so every word is written once.
#   make man        $(MAN_PAGES)
#   make man-check  groff finds nothing to warn about in any page, and every
#                   option a program's --help lists, and every key
#                   magnetd.conf accepts, is in its page

MAN_NAMES := magnet.7 magnetd.8 magnetd.conf.5 magnet-ctl.8 \
	     magnet-read.1 magnet-dump.1 magnet-top.1 magnet-cat.1 magnet-jobs.1
MAN_PAGES := $(addprefix $(BUILD)/man/,$(MAN_NAMES))

man: $(MAN_PAGES)

define man_page
$(BUILD)/man/$(1): docs/$(basename $(1)).md man/md2man
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  GEN     $$@")
	$$(Q)man/md2man $$< $$@
endef
$(foreach p,$(MAN_NAMES),$(eval $(call man_page,$(p))))

# groff with tbl (as man(1) runs it) and without (as the issue states the
# check); either printing anything fails, naming the page and line.
man-check: man $(MAGNET_CTL) $(MAGNETD) $(MAGNET_TOOLS) $(MAGNET_CLIENT_BINS)
	@$(if $(Q),echo "  CHECK   man pages")
	$(Q)fail=0; for p in $(MAN_PAGES); do \
		out=$$( { groff -t -ww -z -man "$$p"; groff -ww -z -man "$$p"; } 2>&1 | sort -u); \
		[ -z "$$out" ] || { printf '%s:\n%s\n' "$$p" "$$out" >&2; fail=1; }; \
	done; exit $$fail
	$(Q)man/check-options $(BUILD)

.PHONY: man man-check
