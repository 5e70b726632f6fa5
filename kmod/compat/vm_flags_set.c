// SPDX-License-Identifier: GPL-2.0
/* 6.3: vm_flags is read-only; vm_flags_set() and vm_flags_clear() write it. */
#include <linux/mm.h>
void mg_probe(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_DONTEXPAND);
	vm_flags_clear(vma, VM_MAYWRITE);
}
