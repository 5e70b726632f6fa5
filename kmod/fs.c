// SPDX-License-Identifier: GPL-2.0
/*
 * magnetfs: the files of the rings.
 *
 * magnet/cpuN in debugfs are the data files (consumed by reading, one
 * reader each); version, probes, stats, buffers and jobs are read-only
 * control files. The read condition, delivery modes and file formats are
 * specified in the UAPI header, include/uapi/linux/magnet.h.
 *
 * The data files are also character devices, /dev/magnet/cpuN: under
 * lockdown (Secure Boot) debugfs refuses to open a file that has an ioctl
 * or mmap, which the data files have; the control files it still opens.
 * Both are the same file: one file_operations, one reader slot per CPU,
 * whichever name opened it. One region of minors (minor = CPU) rather than
 * misc devices: those have 64 (5.10) or 128 (6.1) dynamic minors for the
 * whole system, fewer than a big node's CPUs.
 *
 * The data files are created with debugfs_create_file_unsafe(): 6.1's
 * debugfs proxy forwards neither read_iter (needed for real AIO) nor
 * fasync. The open proxy still pins the module (fops->owner) while a file
 * is open, so module exit, which removes the files, never runs while any
 * data-file method can; open() itself is bracketed with debugfs_file_get().
 * The character devices pin it the same way (chrdev_open() takes the
 * cdev's owner).
 *
 * Delivery: writers queue the buffer's irq_work (see ring_core.c,
 * WAKE-UPS); it wakes blocked readers and pollers, sends SIGIO, and kicks
 * the AIO worker, which copies into the submitter's memory with
 * kthread_use_mm() and completes the request.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/aio.h>
#include <linux/cdev.h>
#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/vmalloc.h>
#include <asm/tsc.h>
#include "buffer.h"
#include "compat.h"
#include "fs.h"
#include "probe.h"

#define MG_BOUNCE_SIZE	(64UL << 10)

static struct dentry *mg_dir;
static dev_t mg_devt;		/* minor = CPU */
static struct cdev mg_cdev;
static bool mg_cdev_added;
/*
 * AIO completions copy into the reader's memory. The wake-up that kicks
 * them runs on the traced CPU (irq_work), and a per-CPU workqueue would
 * run the copy there too, competing with the very load being traced:
 * unbound, so the scheduler puts it where there is room, and high
 * priority, so a full ring drains before it overflows.
 */
static struct workqueue_struct *mg_aio_wq;

struct mg_aio_req {
	struct list_head node;
	struct kiocb *iocb;
	struct iov_iter iter;		/* a copy: the caller's iovec is gone */
	const void *iov_copy;
	struct mm_struct *mm;
	size_t count;
	u64 deadline;
	bool queued;
	bool cancelled;
};

static const struct magnet_read_attr mg_default_attr = {
	.watermark_records = 1,
};

static struct mg_ring *mg_reader_ring(struct mg_cpu_buf *buf)
{
	/* The ring is replaced only while no reader is attached. */
	return rcu_dereference_protected(buf->ring, atomic_read(&buf->reader));
}

/* See READ CONDITION in the UAPI header. */
static bool mg_ready(struct mg_cpu_buf *buf, struct mg_ring *rb, size_t count, u64 deadline)
{
	u64 wb = min_t(u64, READ_ONCE(buf->attr.watermark_bytes), count);
	u64 wr = READ_ONCE(buf->attr.watermark_records);
	unsigned long bytes = mg_ring_avail_bytes(rb);

	if (!bytes)
		return false;
	if (mg_ring_half_full(rb))
		return true;
	if (wb && bytes >= wb)
		return true;
	if (wr && mg_ring_avail_records(rb) >= wr)
		return true;
	if (!wb && !wr)
		return true;
	return deadline && ktime_get_ns() >= deadline;
}

/*
 * When a read that begins now times out, in ktime_get_ns() time; 0: never.
 * One that would end beyond KTIME_MAX never does: U64_MAX, the usual
 * "forever", would otherwise wrap now + timeout and expire at once.
 */
static u64 mg_deadline(const struct mg_cpu_buf *buf)
{
	u64 timeout = READ_ONCE(buf->attr.timeout_ns);
	u64 now = ktime_get_ns();

	if (!timeout || timeout > (u64)KTIME_MAX - now)
		return 0;
	return now + timeout;
}

static u64 mg_min_nonzero(u64 a, u64 b)
{
	return !a ? b : !b ? a : min(a, b);
}

/*
 * Ask the writers for a notify once the read condition holds. The ring has
 * one armed condition and one notify, which wakes every waiter of the file
 * (a blocked read, poll, SIGIO, queued AIO reads); each re-checks its own
 * condition and re-arms before sleeping again (mg_wait_ready). While armed,
 * a new condition is merged with the armed one (the smaller of each
 * watermark: true whenever either is), so no waiter's condition replaces a
 * laxer one it does not know about. A merge with a condition a writer has
 * just disarmed only costs a spurious wake-up.
 */
static void mg_arm(struct mg_cpu_buf *buf, struct mg_ring *rb, size_t count, u64 deadline)
{
	u64 wb = min_t(u64, READ_ONCE(buf->attr.watermark_bytes), count);
	u64 wr = READ_ONCE(buf->attr.watermark_records);
	unsigned long flags;

	if ((!wb && !wr) || (deadline && ktime_get_ns() >= deadline)) {
		wb = 0;
		wr = 1;		/* any record will do now */
	}
	spin_lock_irqsave(&buf->arm_lock, flags);
	if (READ_ONCE(rb->wake_armed)) {
		wb = mg_min_nonzero(wb, rb->wake_bytes);
		wr = mg_min_nonzero(wr, rb->wake_records);
	}
	WRITE_ONCE(rb->wake_bytes, wb);
	WRITE_ONCE(rb->wake_records, wr);
	mg_ring_arm(rb);
	spin_unlock_irqrestore(&buf->arm_lock, flags);
}

/*
 * The wait condition of a blocked reader: re-armed each time it is about to
 * sleep, since a notify is one-shot and the condition may have become
 * false again after it (overwrite mode drops records, another reader of
 * the same file consumed them).
 */
static bool mg_wait_ready(struct mg_cpu_buf *buf, struct mg_ring *rb, size_t count, u64 deadline)
{
	if (mg_ready(buf, rb, count, deadline))
		return true;
	mg_arm(buf, rb, count, deadline);
	return mg_ready(buf, rb, count, deadline);
}

static unsigned long mg_copy_iter(void *ctx, const void *src, unsigned long len)
{
	return len - copy_to_iter(src, len, ctx);
}

/* Copy whole records into @iter. Caller holds read_lock. */
static long mg_consume(struct mg_cpu_buf *buf, struct iov_iter *iter)
{
	struct mg_ring *rb = mg_reader_ring(buf);
	struct mg_reader rd = {
		.copy = mg_copy_iter,
		.ctx = iter,
		.bounce = buf->bounce,
		.bounce_size = MG_BOUNCE_SIZE,
	};
	long total = 0, ret;

	do {
		ret = mg_ring_consume(rb, &rd, iov_iter_count(iter));
		if (ret > 0)
			total += ret;
	} while (ret > 0 && rb->mode == MG_RING_OVERWRITE &&
		 iov_iter_count(iter) >= MAGNET_RECORD_HEADER);
	if (READ_ONCE(buf->fasync))
		mg_arm(buf, rb, SIZE_MAX, 0);	/* SIGIO again at the next crossing */
	return total ? total : ret;
}

/*
 * One consume under read_lock. A read that must not sleep (IOCB_NOWAIT) only
 * tries the lock: another read of the file holds it as long as its copy to
 * user memory takes, page faults included.
 */
static long mg_consume_once(struct mg_cpu_buf *buf, struct iov_iter *iter, bool nowait)
{
	long ret;

	if (!nowait)
		mutex_lock(&buf->read_lock);
	else if (!mutex_trylock(&buf->read_lock))
		return -EAGAIN;
	ret = mg_consume(buf, iter);
	mutex_unlock(&buf->read_lock);
	return ret;
}

/*
 * -EAGAIN from the ring (overwrite mode, writers kept voiding the read):
 * drop the lock, let others run, and try again unless a signal is pending.
 */
static long mg_consume_locked(struct mg_cpu_buf *buf, struct iov_iter *iter)
{
	long ret;

	for (;;) {
		ret = mg_consume_once(buf, iter, false);
		if (ret != -EAGAIN)
			return ret;
		if (signal_pending(current))
			return -ERESTARTSYS;
		cond_resched();
	}
}

static void mg_aio_free(struct mg_aio_req *req)
{
	kfree(req->iov_copy);
	mmdrop(req->mm);
	kfree(req);
}

/*
 * One try that never waits, in the AIO worker, where no signal comes: the
 * read lock held by another read (its copy may take a page fault's time)
 * or overwrite-mode writers voiding the read give -EAGAIN back to
 * mg_aio_work(), where a cancel is seen. The submitter's mm is held only
 * for the try, so that its exit runs exit_aio(), which cancels.
 */
static long mg_aio_copy(struct mg_cpu_buf *buf, struct mg_aio_req *req)
{
	long ret;

	if (!mmget_not_zero(req->mm))
		return -ECANCELED;	/* the submitter exited: exit_aio() cancels */
	kthread_use_mm(req->mm);
	ret = mg_consume_once(buf, &req->iter, true);
	kthread_unuse_mm(req->mm);
	/*
	 * If the submitter exited meanwhile, this is the last reference:
	 * __mmput() runs exit_aio(), which waits for this very request.
	 */
	mmput_async(req->mm);
	return ret;
}

/* Takes the first cancelled request off the queue, if any. */
static struct mg_aio_req *mg_aio_take_cancelled(struct mg_cpu_buf *buf)
{
	struct mg_aio_req *req;

	lockdep_assert_held(&buf->aio_lock);
	list_for_each_entry(req, &buf->aio_pending, node) {
		if (req->cancelled) {
			list_del(&req->node);
			req->queued = false;
			return req;
		}
	}
	return NULL;
}

/*
 * A request leaves aio_active only once completed: one submitted after
 * that may be served at once (mg_aio_read()), and still comes after it.
 */
static void mg_aio_complete(struct mg_cpu_buf *buf, struct mg_aio_req *req, long ret)
{
	mg_ki_complete(req->iocb, ret);
	mg_aio_free(req);
	spin_lock_irq(&buf->aio_lock);
	buf->aio_active--;
	spin_unlock_irq(&buf->aio_lock);
}

/*
 * Completes queued AIO reads: cancelled ones at once, wherever they are in
 * the queue; the others oldest first, as their condition holds, each
 * completion posted before the next request takes any record. The ring
 * is looked up afresh while a request is queued: a queued request pins the
 * file, and so the ring; once the last one completes, the file may be
 * released and the ring replaced.
 */
static void mg_aio_work(struct work_struct *work)
{
	struct mg_cpu_buf *buf = container_of(to_delayed_work(work), struct mg_cpu_buf, aio_work);
	struct mg_aio_req *req;
	struct mg_ring *rb;
	long ret;

	for (;;) {
		spin_lock_irq(&buf->aio_lock);
		req = mg_aio_take_cancelled(buf);
		if (req) {
			spin_unlock_irq(&buf->aio_lock);
			mg_aio_complete(buf, req, -ECANCELED);
			continue;
		}
		req = list_first_entry_or_null(&buf->aio_pending, struct mg_aio_req, node);
		if (!req) {
			spin_unlock_irq(&buf->aio_lock);
			return;
		}
		rb = mg_reader_ring(buf);
		if (!mg_ready(buf, rb, req->count, req->deadline)) {
			size_t count = req->count;
			u64 deadline = req->deadline, now;

			spin_unlock_irq(&buf->aio_lock);
			/*
			 * Only this work completes requests (a work item never
			 * runs twice at once), so @req stays queued and pins
			 * the file and its ring. A cancel meanwhile kicks the
			 * work at once; queue_delayed_work() leaves that kick
			 * alone, where mod_delayed_work() would defer it.
			 *
			 * The clock is read before arming. Past the deadline
			 * then, mg_arm() sees it past too and arms for any
			 * record: the next writer kicks. Before it, the
			 * deadline may pass while arming, and the armed
			 * watermark may never come: the timer ends the wait.
			 */
			now = ktime_get_ns();
			if (mg_wait_ready(buf, rb, count, deadline))
				continue;	/* a writer beat the arming */
			if (deadline && now < deadline)
				queue_delayed_work(mg_aio_wq, &buf->aio_work,
						   nsecs_to_jiffies(deadline - now) + 1);
			return;
		}
		list_del(&req->node);
		req->queued = false;
		spin_unlock_irq(&buf->aio_lock);

		ret = mg_aio_copy(buf, req);
		if (!ret || ret == -EAGAIN) {
			/*
			 * Nothing taken: a synchronous read took the records
			 * first (wait on), or it holds the lock, or writers
			 * voided the read. Back to the head of the queue, where
			 * a cancel finds it.
			 */
			spin_lock_irq(&buf->aio_lock);
			list_add(&req->node, &buf->aio_pending);
			req->queued = true;
			spin_unlock_irq(&buf->aio_lock);
			if (!ret)
				continue;
			/* A tick for the other read to end, not a spinning worker. */
			queue_delayed_work(mg_aio_wq, &buf->aio_work, 1);
			return;
		}
		mg_aio_complete(buf, req, ret);
	}
}

/* Called by the AIO core under its context lock: only flag and kick. */
static int mg_aio_cancel(struct kiocb *iocb)
{
	struct mg_cpu_buf *buf = iocb->ki_filp->private_data;
	struct mg_aio_req *req = iocb->private;
	unsigned long flags;

	spin_lock_irqsave(&buf->aio_lock, flags);
	req->cancelled = true;
	spin_unlock_irqrestore(&buf->aio_lock, flags);
	mod_delayed_work(mg_aio_wq, &buf->aio_work, 0);
	return 0;
}

static ssize_t mg_aio_read(struct mg_cpu_buf *buf, struct kiocb *iocb, struct iov_iter *to,
			   u64 deadline)
{
	struct mg_ring *rb = mg_reader_ring(buf);
	size_t count = iov_iter_count(to);
	struct mg_aio_req *req;
	long ret;

	/*
	 * At once only behind no other request: several queued reads take the
	 * records in the order they were submitted, and complete in it.
	 */
	if (!READ_ONCE(buf->aio_active) && mg_ready(buf, rb, count, deadline)) {
		/*
		 * One try that waits for no other read of the file: if one
		 * holds the lock, or writers void the try, it is queued.
		 */
		ret = mg_consume_once(buf, to, true);
		if (ret && ret != -EAGAIN)
			return ret;	/* completed at once */
	}
	if (iocb->ki_flags & IOCB_NOWAIT)
		return -EAGAIN;
	req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req)
		return -ENOMEM;
	req->iov_copy = dup_iter(&req->iter, to, GFP_KERNEL);
	if (!req->iov_copy && (iter_is_iovec(to) || iov_iter_is_kvec(to) || iov_iter_is_bvec(to))) {
		kfree(req);
		return -ENOMEM;
	}
	req->mm = current->mm;
	mmgrab(req->mm);
	req->iocb = iocb;
	req->count = count;
	req->deadline = deadline;
	iocb->private = req;
	kiocb_set_cancel_fn(iocb, mg_aio_cancel);	/* a libaio request: see mg_is_libaio() */

	spin_lock_irq(&buf->aio_lock);
	if (req->cancelled) {
		spin_unlock_irq(&buf->aio_lock);
		mg_aio_free(req);
		return -ECANCELED;
	}
	list_add_tail(&req->node, &buf->aio_pending);
	req->queued = true;
	buf->aio_active++;
	spin_unlock_irq(&buf->aio_lock);
	/* The worker re-checks, arms the ring and sets the timeout. */
	mod_delayed_work(mg_aio_wq, &buf->aio_work, 0);
	return -EIOCBQUEUED;
}

/*
 * Only libaio requests can be queued here: io_cancel() reaches them through
 * kiocb_set_cancel_fn(). Other asynchronous submitters (io_uring) cannot
 * cancel a request a driver holds, so they are served like a synchronous
 * read in their own context (io_uring runs blocking reads in its io-wq
 * workers, which it signals to cancel). Kernels without IOCB_AIO_RW cannot
 * tell them apart: every request is served synchronously there.
 */
static bool mg_is_libaio(const struct kiocb *iocb)
{
#ifdef IOCB_AIO_RW
	return iocb->ki_flags & IOCB_AIO_RW;
#else
	return false;
#endif
}

static ssize_t mg_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct file *filp = iocb->ki_filp;
	struct mg_cpu_buf *buf = filp->private_data;
	struct mg_ring *rb = mg_reader_ring(buf);
	bool nowait = iocb->ki_flags & IOCB_NOWAIT;
	bool nonblock = (filp->f_flags & O_NONBLOCK) || nowait;
	size_t count = iov_iter_count(to);
	u64 deadline = mg_deadline(buf), now;
	long ret;

	if (!count)
		return 0;
	if (!is_sync_kiocb(iocb) && mg_is_libaio(iocb))
		return mg_aio_read(buf, iocb, to, deadline);
	for (;;) {
		if (mg_ready(buf, rb, count, deadline) || (nonblock && mg_ring_avail_bytes(rb))) {
			/*
			 * O_NONBLOCK waits for a read in progress, as a pipe's
			 * reader does; IOCB_NOWAIT (RWF_NOWAIT, io_uring's inline
			 * try) never sleeps: one try, EAGAIN if it is busy.
			 */
			ret = nowait ? mg_consume_once(buf, to, true) : mg_consume_locked(buf, to);
			if (ret)
				return ret;
		}
		if (nonblock)
			return -EAGAIN;
		now = ktime_get_ns();
		if (deadline && now < deadline) {
			long left = nsecs_to_jiffies(deadline - now) + 1;

			ret = wait_event_interruptible_timeout(buf->wait,
							       mg_wait_ready(buf, rb, count,
									     deadline),
							       left);
		} else {
			ret = wait_event_interruptible(buf->wait,
						       mg_wait_ready(buf, rb, count, deadline));
		}
		if (ret < 0)
			return -ERESTARTSYS;
	}
}

static __poll_t mg_poll(struct file *filp, poll_table *wait)
{
	struct mg_cpu_buf *buf = filp->private_data;
	struct mg_ring *rb = mg_reader_ring(buf);

	poll_wait(filp, &buf->wait, wait);
	return mg_wait_ready(buf, rb, SIZE_MAX, 0) ? EPOLLIN | EPOLLRDNORM : 0;
}

static int mg_fasync(int fd, struct file *filp, int on)
{
	struct mg_cpu_buf *buf = filp->private_data;
	int ret = fasync_helper(fd, filp, on, &buf->fasync);

	if (on && ret >= 0)
		mg_arm(buf, mg_reader_ring(buf), SIZE_MAX, 0);
	return ret;
}

/* See MAPPED in the UAPI header. */
static long mg_mmap_advance(struct mg_cpu_buf *buf, struct magnet_mmap_pos __user *upos)
{
	struct mg_ring *rb = mg_reader_ring(buf);
	struct magnet_mmap_pos pos;
	unsigned long tail;
	long ret;

	if (copy_from_user(&pos, upos, sizeof(pos)))
		return -EFAULT;
	if (pos.flags)
		return -EINVAL;
	if (rb->mode != MG_RING_DISCARD)
		return -EOPNOTSUPP;
	mutex_lock(&buf->read_lock);
	ret = mg_ring_advance(rb, pos.tail, pos.release);
	pos.commit = mg_ring_peek(rb, &tail);
	mutex_unlock(&buf->read_lock);
	if (ret < 0)
		return ret;
	if (READ_ONCE(buf->fasync))
		mg_arm(buf, rb, SIZE_MAX, 0);	/* SIGIO again at the next crossing */
	pos.tail = tail;
	pos.size = rb->size;
	return copy_to_user(upos, &pos, sizeof(pos)) ? -EFAULT : 0;
}

static vm_fault_t mg_mmap_fault(struct vm_fault *vmf)
{
	struct mg_cpu_buf *buf = vmf->vma->vm_file->private_data;
	struct mg_ring *rb = mg_reader_ring(buf);
	struct page *page;

	if (vmf->pgoff >= rb->size >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	page = vmalloc_to_page(rb->data + (vmf->pgoff << PAGE_SHIFT));
	if (!page)
		return VM_FAULT_SIGBUS;
	get_page(page);
	vmf->page = page;
	return 0;
}

static const struct vm_operations_struct mg_mmap_ops = {
	.fault = mg_mmap_fault,
};

/*
 * The ring's pages, read-only, where writers keep writing: the vma holds
 * the file, and an open file keeps the ring (no resize with a reader).
 */
static int mg_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct mg_cpu_buf *buf = filp->private_data;
	struct mg_ring *rb = mg_reader_ring(buf);

	if (rb->mode != MG_RING_DISCARD)
		return -EOPNOTSUPP;
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	/* MAP_SHARED: the kernel clears VM_SHARED on a read-only file. */
	if (!(vma->vm_flags & VM_MAYSHARE) || vma->vm_pgoff ||
	    vma->vm_end - vma->vm_start > rb->size)
		return -EINVAL;
	vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &mg_mmap_ops;
	return 0;
}

static long mg_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct mg_cpu_buf *buf = filp->private_data;
	struct magnet_read_attr attr;

	switch (cmd) {
	case MAGNET_IOC_SET_READ_ATTR:
		if (copy_from_user(&attr, (void __user *)arg, sizeof(attr)))
			return -EFAULT;
		if (attr.flags)
			return -EINVAL;		/* no flags defined yet */
		/* Either could never be reached: half the ring satisfies any read. */
		if (attr.watermark_bytes > mg_reader_ring(buf)->size / 2 ||
		    attr.watermark_records > mg_reader_ring(buf)->size / 2 / MAGNET_RECORD_HEADER)
			return -EINVAL;
		mutex_lock(&buf->read_lock);
		buf->attr = attr;
		mutex_unlock(&buf->read_lock);
		return 0;
	case MAGNET_IOC_GET_READ_ATTR:
		attr = buf->attr;
		return copy_to_user((void __user *)arg, &attr, sizeof(attr)) ? -EFAULT : 0;
	case MAGNET_IOC_MMAP_ADVANCE:
		return mg_mmap_advance(buf, (struct magnet_mmap_pos __user *)arg);
	default:
		return -ENOTTY;
	}
}

static int mg_open_buf(struct mg_cpu_buf *buf, struct inode *inode, struct file *filp)
{
	if (atomic_cmpxchg(&buf->reader, 0, 1))
		return -EBUSY;	/* one reader per ring: reads consume */
	buf->bounce = vmalloc(MG_BOUNCE_SIZE);
	if (!buf->bounce) {
		atomic_set(&buf->reader, 0);
		return -ENOMEM;
	}
	buf->attr = mg_default_attr;
	mg_buffer_forget_tasks(buf);	/* this reader has seen no TASK record */
	filp->private_data = buf;
	filp->f_mode |= FMODE_NOWAIT;	/* reads honour IOCB_NOWAIT: RWF_NOWAIT is accepted */
	return stream_open(inode, filp);
}

/* debugfs/magnet/cpuN or /dev/magnet/cpuN: the same ring either way. */
static int mg_open(struct inode *inode, struct file *filp)
{
	unsigned int cpu = iminor(inode);
	int ret;

	if (S_ISCHR(inode->i_mode)) {
		/* A node made by hand may name a CPU that has no ring. */
		if (cpu >= nr_cpu_ids || !cpu_possible(cpu))
			return -ENXIO;
		return mg_open_buf(mg_bufs[cpu], inode, filp);
	}
	ret = debugfs_file_get(filp->f_path.dentry);
	if (ret)
		return ret;
	ret = mg_open_buf(inode->i_private, inode, filp);
	debugfs_file_put(filp->f_path.dentry);
	return ret;
}

static int mg_release(struct inode *inode, struct file *filp)
{
	struct mg_cpu_buf *buf = filp->private_data;

	fasync_helper(-1, filp, 0, &buf->fasync);
	WRITE_ONCE(mg_reader_ring(buf)->wake_armed, 0);
	/* AIO requests pin the file: none can be pending here. */
	WARN_ON_ONCE(!list_empty(&buf->aio_pending));
	vfree(buf->bounce);
	buf->bounce = NULL;
	/*
	 * All of the above is done before the next open may take the ring:
	 * pairs with the fully ordered atomic_cmpxchg() in mg_open().
	 */
	atomic_set_release(&buf->reader, 0);
	return 0;
}

static const struct file_operations mg_data_fops = {
	.owner = THIS_MODULE,
	.open = mg_open,
	.release = mg_release,
	.read_iter = mg_read_iter,
	.poll = mg_poll,
	.fasync = mg_fasync,
	.unlocked_ioctl = mg_ioctl,
	.mmap = mg_mmap,
	.compat_ioctl = compat_ptr_ioctl,	/* the ioctls' structs have one layout */
	.llseek = MG_NO_LLSEEK,
};

/*
 * Runs from the irq_work: in hard interrupt context (on PREEMPT_RT in the
 * per-CPU irq_work thread), never inside a probe.
 */
static void mg_wake(struct irq_work *work)
{
	struct mg_cpu_buf *buf = container_of(work, struct mg_cpu_buf, wake_work);

	wake_up_interruptible_poll(&buf->wait, EPOLLIN | EPOLLRDNORM);
	kill_fasync(&buf->fasync, SIGIO, POLL_IN);
	if (!list_empty_careful(&buf->aio_pending))
		mod_delayed_work(mg_aio_wq, &buf->aio_work, 0);
}

void mg_fs_buf_init(struct mg_cpu_buf *buf)
{
	atomic_set(&buf->reader, 0);
	mutex_init(&buf->read_lock);
	init_waitqueue_head(&buf->wait);
	init_irq_work(&buf->wake_work, mg_wake);
	spin_lock_init(&buf->aio_lock);
	spin_lock_init(&buf->arm_lock);
	INIT_LIST_HEAD(&buf->aio_pending);
	INIT_DELAYED_WORK(&buf->aio_work, mg_aio_work);
	buf->attr = mg_default_attr;
}

/* ---- control files ---- */

static int mg_version_show(struct seq_file *m, void *v)
{
	seq_printf(m, "magnet %s\nformat %u\nclock %s\ncpus %u\ntsc_khz %u\n", MAGNET_RELEASE,
		   MAGNET_FORMAT_VERSION, mg_clock == MG_CLOCK_TSC ? "tsc" : "mono",
		   num_possible_cpus(), tsc_khz);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mg_version);

static int mg_stats_show(struct seq_file *m, void *v)
{
	struct mg_ring_stats st;
	unsigned int cpu;

	seq_puts(m,
		 "cpu\twritten\tbytes\tlost_full\tlost_too_big\tlost_nesting\toverwritten\tdiscarded\tlost_fair\n");
	for_each_possible_cpu(cpu) {
		mg_buffer_stats(mg_bufs[cpu], &st);
		seq_printf(m, "%u\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\n", cpu, st.written,
			   st.bytes, st.lost_full, st.lost_too_big, st.lost_nesting, st.overwritten,
			   st.discarded, mg_fair_lost(&mg_bufs[cpu]->fair));
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mg_stats);

static int mg_buffers_show(struct seq_file *m, void *v)
{
	unsigned int cpu;

	seq_puts(m, "cpu\tsize\tmode\tused\treader\tfair\n");
	for_each_possible_cpu(cpu) {
		struct mg_cpu_buf *buf = mg_bufs[cpu];
		struct mg_ring *rb;

		rcu_read_lock_sched();
		rb = rcu_dereference_sched(buf->ring);
		seq_printf(m, "%u\t%lu\t%s\t%lu\t%d\t%u\n", cpu, rb->size,
			   rb->mode == MG_RING_OVERWRITE ? "overwrite" : "discard",
			   mg_ring_avail_bytes(rb), atomic_read(&buf->reader), mg_fair_get_fill());
		rcu_read_unlock_sched();
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mg_buffers);

static int mg_probes_open(struct inode *inode, struct file *file)
{
	return single_open(file, mg_probes_show, NULL);
}

static const struct file_operations mg_probes_fops = {
	.owner = THIS_MODULE,
	.open = mg_probes_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

/* /dev/magnet/cpuN, root's and read-only as the debugfs files are. */
static char *mg_devnode(MG_DEVNODE_CONST struct device *dev, umode_t *mode)
{
	if (mode)
		*mode = 0400;
	return kasprintf(GFP_KERNEL, KBUILD_MODNAME "/%s", dev_name(dev));
}

static struct class mg_class = {
	.name = KBUILD_MODNAME,
	.devnode = mg_devnode,
};

/*
 * The directory, the device numbers and class (and the AIO workqueue)
 * first: this is what fails when debugfs is off, absent, or already has a
 * "magnet". The files come last, from mg_fs_publish(), once nothing else
 * in the module's init can fail: a file opened during a load that then
 * fails would keep the module's text in use after it is freed.
 */
int mg_fs_init(void)
{
	int ret;

	mg_aio_wq = alloc_workqueue("magnet_aio", WQ_UNBOUND | WQ_HIGHPRI, 0);
	if (!mg_aio_wq)
		return -ENOMEM;
	mg_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	if (IS_ERR(mg_dir)) {
		ret = PTR_ERR(mg_dir);
		pr_err("cannot create /sys/kernel/debug/%s (%d): debugfs is %s\n", KBUILD_MODNAME,
		       ret, ret == -EEXIST ? "already used by that name" :
		       ret == -EPERM ? "disabled (debugfs=off)" : "not available");
		mg_dir = NULL;
		goto err_dir;
	}
	ret = alloc_chrdev_region(&mg_devt, 0, nr_cpu_ids, KBUILD_MODNAME);
	if (ret) {
		pr_err("cannot allocate %u character device numbers (%d)\n", nr_cpu_ids, ret);
		goto err_chrdev;
	}
	ret = class_register(&mg_class);
	if (ret) {
		pr_err("cannot register the device class %s (%d)\n", KBUILD_MODNAME, ret);
		goto err_class;
	}
	cdev_init(&mg_cdev, &mg_data_fops);
	mg_cdev.owner = THIS_MODULE;
	return 0;

err_class:
	unregister_chrdev_region(mg_devt, nr_cpu_ids);
err_chrdev:
	debugfs_remove(mg_dir);
	mg_dir = NULL;
err_dir:
	destroy_workqueue(mg_aio_wq);
	mg_aio_wq = NULL;
	return ret;
}

static void mg_fs_create(const char *name, void *data, const struct file_operations *fops,
			 bool proxied, struct dentry **dentry)
{
	struct dentry *d = proxied ? debugfs_create_file(name, 0400, mg_dir, data, fops) :
			   debugfs_create_file_unsafe(name, 0400, mg_dir, data, fops);

	/* Only ENOMEM is left here: the directory is ours and empty. */
	if (IS_ERR(d))
		pr_warn("cannot create debugfs file %s (%ld)\n", name, PTR_ERR(d));
	if (dentry)
		*dentry = d;
}

void mg_fs_publish(void)
{
	char name[16];
	unsigned int cpu;
	int ret;

	mg_fs_create("version", NULL, &mg_version_fops, true, NULL);
	mg_fs_create("probes", NULL, &mg_probes_fops, true, NULL);
	mg_fs_create("stats", NULL, &mg_stats_fops, true, NULL);
	mg_fs_create("buffers", NULL, &mg_buffers_fops, true, NULL);
	mg_fs_create("jobs", NULL, &mg_jobs_fops, true, NULL);
	for_each_possible_cpu(cpu) {
		snprintf(name, sizeof(name), "cpu%u", cpu);
		mg_fs_create(name, mg_bufs[cpu], &mg_data_fops, false, &mg_bufs[cpu]->dentry);
	}
	/*
	 * The devices, as the debugfs files, for every possible CPU, once:
	 * a ring outlives its CPU going offline. Only ENOMEM fails here; the
	 * debugfs files then still serve where lockdown is off.
	 */
	ret = cdev_add(&mg_cdev, mg_devt, nr_cpu_ids);
	if (ret) {
		pr_warn("cannot add the character devices (%d): no /dev/%s\n", ret,
			KBUILD_MODNAME);
		return;
	}
	mg_cdev_added = true;
	for_each_possible_cpu(cpu) {
		struct device *dev = device_create(&mg_class, NULL, MKDEV(MAJOR(mg_devt), cpu),
						   NULL, "cpu%u", cpu);

		if (IS_ERR(dev))
			pr_warn("cannot create /dev/%s/cpu%u (%ld)\n", KBUILD_MODNAME, cpu,
				PTR_ERR(dev));
	}
}

/*
 * Runs with no file open (each pins the module), after the probes are gone:
 * no AIO request is queued and no writer kicks the work any more.
 */
void mg_fs_exit(void)
{
	unsigned int cpu;

	if (mg_cdev_added) {
		/* device_destroy() passes over a device that failed to appear. */
		for_each_possible_cpu(cpu)
			device_destroy(&mg_class, MKDEV(MAJOR(mg_devt), cpu));
		cdev_del(&mg_cdev);
		mg_cdev_added = false;
	}
	class_unregister(&mg_class);
	unregister_chrdev_region(mg_devt, nr_cpu_ids);
	debugfs_remove(mg_dir);
	mg_dir = NULL;
	for_each_possible_cpu(cpu) {
		cancel_delayed_work_sync(&mg_bufs[cpu]->aio_work);
		WARN_ON_ONCE(!list_empty(&mg_bufs[cpu]->aio_pending));
	}
	destroy_workqueue(mg_aio_wq);
	mg_aio_wq = NULL;
}
