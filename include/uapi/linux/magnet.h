/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * magnet: Monitoring Apparatus for General kerNel-Event Tracing.
 *
 * This header is the contract between magnet.ko and user space. It is the
 * specification: everything a reader needs to decode the rings is here.
 *
 * FILES (debugfs, normally mounted at /sys/kernel/debug)
 * ------------------------------------------------------
 *
 *   magnet/cpuN     Data file of CPU N's ring, mode 0400. Reads consume. Not
 *                   seekable. One reader at a time: a second open() gets
 *                   EBUSY. A read returns whole records only, never a torn
 *                   one; a buffer too small for the next record gets EINVAL
 *                   (a buffer of MAGNET_RECORD_MAX bytes always suffices).
 *                   Supports blocking read, O_NONBLOCK (EAGAIN), poll/epoll,
 *                   SIGIO (O_ASYNC/fcntl F_SETSIG), a read-only mmap of
 *                   the ring (MAPPED below), and true AIO (io_submit
 *                   returns at once; the request completes when the read
 *                   condition below holds, and is cancellable). io_uring
 *                   reads are served like blocking reads, in io_uring's
 *                   own workers (RWF_NOWAIT: EAGAIN), and are cancelled
 *                   the way io_uring cancels any blocking read: only
 *                   libaio can cancel a request a driver holds. (io_uring
 *                   retries a short read of a regular file, which debugfs
 *                   files are, until its buffer is full or the next record
 *                   does not fit: size the buffer for the latency wanted.)
 *   magnet/version  "magnet <release>\nformat <MAGNET_FORMAT_VERSION>\n"
 *                   "clock <mono|tsc>\ncpus <possible CPU count>\n"
 *                   "tsc_khz <TSC frequency, 0 if unknown>\n"
 *   magnet/probes   One line per probe, tab-separated:
 *                   id type target nargs hits missed [LEN@ARG]
 *                   (type is kprobe, kretprobe, fentry, tracepoint or
 *                   custom; target is SYMBOL, SYMBOL+OFFSET or, for a
 *                   tracepoint, SUBSYSTEM:EVENT; missed counts calls the
 *                   probe skipped: the kprobes core's count (recursion, too
 *                   many kretprobe instances in flight), and, for every
 *                   type, calls made where RCU is not watching (the idle
 *                   loop) or by magnet's own record path (see PROBE
 *                   TYPES); the last column is there only for probes
 *                   that capture memory).
 *   magnet/stats    A header line, then one line per CPU, tab-separated:
 *                   cpu written bytes lost_full lost_too_big lost_nesting
 *                   overwritten discarded lost_fair
 *                   (written and bytes count event records, not LOST
 *                   records; every hit of a probe is exactly one of
 *                   written, lost_full, lost_too_big, lost_nesting or
 *                   lost_fair (see FAIRNESS);
 *                   discarded counts written records that a resize threw
 *                   away unread. Counters never decrease, resizes
 *                   included. Columns may be added at the end.)
 *   magnet/buffers  A header line, then one line per CPU, tab-separated:
 *                   cpu size mode used reader fair
 *                   (mode is discard or overwrite, used the committed bytes
 *                   not yet consumed, reader 1 while a reader is attached,
 *                   fair the fairness threshold in percent, 0: off; see
 *                   FAIRNESS).
 *   magnet/jobs     A header line, then one line per job each CPU's
 *                   fairness table holds, tab-separated:
 *                   cpu cgroup written lost_fair pending lost_ring
 *                   (cgroup is the job's whole cgroup v2 id, 0 the shared
 *                   job, listed only once it has a count; written its
 *                   event records; lost_fair its
 *                   records the fairness rule dropped, pending those of
 *                   them no JOB_LOST record reported yet; lost_ring its
 *                   records the ring itself lost: full, too big,
 *                   nesting, reported by LOST records without a job. A
 *                   job's counts start at 0 when it takes a slot. See
 *                   FAIRNESS.)
 *
 * All control files are read-only, mode 0400, and not consumed by reading.
 *
 * Under kernel lockdown in integrity mode (e.g. Secure Boot), debugfs
 * refuses to open files that have an ioctl or are not read-only: the
 * cpuN files cannot be opened there (EPERM), the control files can, and
 * the netlink control plane works as usual. The same rings are character
 * devices, /dev/magnet/cpuN (minor N, mode 0400, root's), at every
 * lockdown level: one file behind both names, with everything above and
 * one reader between them.
 *
 * READ CONDITION
 * --------------
 *
 * Set per open file with MAGNET_IOC_SET_READ_ATTR. A read (or an AIO read,
 * or poll readiness) is satisfied when
 *
 *     available bytes   >= min(watermark_bytes, read size)   (if non-zero)
 *  or available records >= watermark_records                  (if non-zero)
 *  or timeout_ns has elapsed since the read began and at least one record is
 *     available                                               (if non-zero)
 *
 *  or available bytes   >= half the ring                     (always)
 *
 * If both watermarks are zero, one available record satisfies the read. The
 * defaults are watermark_records = 1, the others 0. A timeout_ns that would
 * end after the clock (CLOCK_MONOTONIC) passes 2^63 - 1 ns, such as U64_MAX
 * for "forever" or anything from 2^63 up, never elapses: the read waits for
 * its watermarks (MAGNET_IOC_GET_READ_ATTR returns the value as set). Poll
 * ignores the timeout (poll has its own). A read interrupted by a signal
 * returns EINTR (or restarts, per SA_RESTART); it never loses records. Half
 * the ring is the most a reader can wait for: a record count may never be
 * reached (one large record overwrites many small ones; a discard-mode ring
 * holds only so many), bytes always are. MAGNET_IOC_SET_READ_ATTR fails
 * with EINVAL for unknown flags, a watermark_bytes above half the ring, and
 * a watermark_records above half the ring / MAGNET_RECORD_HEADER (neither
 * could ever be reached). A blocked reader, poll, SIGIO and queued AIO
 * reads of the same file each wait for their own condition.
 *
 * NOT WAITING: an O_NONBLOCK read takes what is there or fails with EAGAIN,
 * without waiting for the condition; like a pipe's reader, it may still
 * wait for another read of the same file (another thread's, the AIO
 * worker's) to finish copying, and it tries again while overwrite-mode
 * writers void its copy (they overwrite the records it is copying). A read
 * with RWF_NOWAIT (preadv2, libaio's aio_rw_flags, io_uring; io_uring's
 * own first try of every read is such a read) never sleeps: EAGAIN also
 * while another read is in progress, and when writers voided its one try.
 *
 * AIO: a request that cannot complete at once returns from io_submit and
 * completes when the condition holds; io_cancel (and io_destroy or exit,
 * which cancel) completes it with -ECANCELED, having consumed nothing.
 * This holds for a request being served too: one that another read of the
 * file holds up (while it copies), or whose read overwrite-mode writers
 * keep voiding, is tried again a tick later, and a cancel meanwhile
 * completes it (read() waits, and tries again until a signal).
 * Several requests may be queued on one file, so that the ring is drained
 * while the reader handles a completed one: they are served in the order
 * they were submitted, each when its own condition holds, and one
 * submitted behind others waits for them even if records are there. The
 * requests of one submitting thread thus take consecutive runs of whole
 * records and complete in the order they were submitted (io_getevents
 * returns them so); a cancelled one takes nothing, the next one goes on.
 *
 * MAPPED (zero copy): a discard-mode ring can also be read where it lies.
 * mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0) on an open data file maps
 * the ring's byte array read-only (len at most the ring's size: take the
 * size MAGNET_IOC_MMAP_ADVANCE returns, or magnet/buffers'). Positions are
 * free-running byte counts: the record at position p starts at offset
 * p & (size - 1) and never crosses the end of the array. Padding records
 * (event id 0) fill the end of the array and may also stand anywhere
 * else: skip each by its size. The reader loops:
 *
 *     ioctl(fd, MAGNET_IOC_MMAP_ADVANCE, &pos)   in: release, tail
 *     walk the records from pos.tail to pos.commit where they lie
 *     pos.release = the bytes walked (whole records, padding included)
 *
 * The ioctl gives back release bytes counted from tail, which must be the
 * ring's tail (the one the last call returned), else ESTALE: so a retried
 * call, or one made after read() or AIO on the same file took the records
 * (they take from the same tail), consumes nothing. They must end on a
 * record boundary at or below commit, else EINVAL, nothing consumed. Then
 * it returns the new tail and commit (and the ring's size); release 0 just
 * looks. The bytes in [tail, commit) are whole, final records that no
 * writer touches until they are given back; LOST and TASK records are in
 * the stream as read() returns it. Records held count as available: give
 * them back before polling (or sleeping on SIGIO) for the READ CONDITION.
 * Nothing is copied; while the reader holds records, writers have that much
 * less room, which is the reader's own choice of batch. EIO means the ring
 * is corrupt (a kernel bug). Refused: an overwrite-mode ring (EOPNOTSUPP
 * for mmap and the ioctl: its writers rewrite unread bytes at any time), a
 * writable or executable mapping (EPERM; the kernel's mmap itself gives
 * EACCES for PROT_WRITE with MAP_SHARED on the read-only file), MAP_PRIVATE,
 * a mapping larger than the ring or at an offset (EINVAL). A mapping holds
 * the file, and the reader slot, even after close(fd): the ring is neither
 * resized nor freed under it, and no one else can read it until munmap.
 *
 * LIFETIME: an open data or control file holds a reference on the module,
 * so rmmod fails with EBUSY while any reader (blocked, polling, with AIO
 * pending or idle) has one open; the rings, the readers and their data are
 * untouched by the attempt. Close the readers, then unload.
 *
 * EVENT RECORD
 * ------------
 *
 * A data file is a stream of records. Every record is 8-byte aligned and
 * starts with this 40-byte header, in the CPU's byte order:
 *
 *   offset size field
 *        0    4 size         whole record in bytes, header included; a
 *                            multiple of 8, 40 <= size <= MAGNET_RECORD_MAX
 *        4    2 event_id     MAGNET_EVENT_LOST, _TASK, _JOB_LOST, or a
 *                            probe's id (>= 16)
 *        6    2 flags        MAGNET_REC_* below; undefined bits are 0
 *        8    4 cpu          CPU the event happened on (no 64-CPU limit)
 *       12    4 cgroup       low 32 bits of the task's cgroup v2 id, see JOBS
 *       16    8 abstract_id  event-specific; for probes, the first function
 *                            argument (usually the object acted on: a
 *                            socket, a file, an skb), captured at entry
 *       24    8 timestamp    ns, clock named in magnet/version (see CLOCK)
 *       32    4 pid          thread id of the current task (0 in idle/irq
 *                            of the idle task)
 *       36    4 tgid         process id of the current task
 *       40      payload      size - 40 bytes, see PAYLOADS
 *
 * JOBS: cgroup is the low half of the cgroup v2 id of the task that wrote
 * the record, read when the record is written, so a task that exits or
 * moves a microsecond later is still attributed exactly. The id is the
 * kernel's cgroup_id(), the inode number of the cgroup's directory in the
 * cgroup2 file system (st_ino), and what bpf_get_current_cgroup_id() and
 * magnet's cgroup filters use. On 64-bit kernels its high half is a
 * generation that stays 0 until 2^32 cgroups have been created since boot,
 * and the low half is unique among live cgroups at any time: a reader maps
 * it to a path by the inode numbers under the cgroup2 mount. TASK records
 * carry the whole id. 1 is the root cgroup; 0 only in LOST records, in
 * JOB_LOST records of the shared job (FAIRNESS) and in format 2 streams
 * (unknown).
 *
 * MAGNET_REC_INTR in flags: the probed code ran in interrupt context
 * (hard or soft interrupt, NMI), whatever the probe's own mechanism: a
 * kprobe that traps (an offset, or a function ftrace cannot trace) runs
 * its handler inside the trap's NMI-like entry, yet its records of code
 * running in a syscall are not flagged. Its pid, tgid and cgroup are those of the
 * task that was interrupted, which need not be the event's cause (packet
 * reception runs in softirq on whatever task the CPU was running): what
 * job caused such an event is not knowable at that point.
 *
 * ORDER: within one CPU's stream, records are in timestamp order (the ring
 * stamps a record inside its reservation), so readers may merge the CPU
 * streams by timestamp; record.cpu always equals N for cpuN.
 *
 * CLOCK
 * -----
 *
 * mono (default): ktime_get_mono_fast_ns(), CLOCK_MONOTONIC in ns. It is
 * NMI-safe and comparable across CPUs, so readers may merge CPU streams by
 * timestamp. tsc (module parameter clock=tsc): the raw time-stamp counter
 * as the paper's MAGNET used, cheapest to read; comparable across CPUs only
 * where the TSC is synchronised (constant_tsc, nonstop_tsc on current x86);
 * magnet/version gives tsc_khz to convert. Kretprobe latencies are ns in
 * both modes.
 *
 * PAYLOADS
 * --------
 *
 * Probe records (flags carry the layout, so a decoder needs no probe table):
 *   kprobe, fentry:
 *               __u64 args[nargs]
 *               [struct magnet_capture; __u8 data[capture length]]
 *   kretprobe:  __s64 retval; __u64 latency_ns; __u64 args[nargs]
 *               [struct magnet_capture; __u8 data[capture length]]
 *               (MAGNET_REC_RETURN set; args captured at function entry,
 *               latency from entry to return on the same task)
 *   nargs = MAGNET_REC_NARGS(flags), 0..6; args are the first nargs
 *   function arguments per the kernel's calling convention.
 *   The capture is there when MAGNET_REC_CAPTURE is set: bytes copied from
 *   the address in argument magnet_capture.arg (at return, for a
 *   kretprobe); magnet_capture.len is the probe's capture length, or 0 if
 *   the memory could not be read without faulting (the data bytes are then
 *   zero). The record size is exactly 40 + the layout above rounded up to
 *   8; the alignment bytes are zero.
 *
 * MAGNET_EVENT_LOST: struct magnet_lost, size 72, flags 0, abstract_id,
 *   pid and tgid 0, cpu the ring's CPU, timestamp that of the record that
 *   follows it (or of the moment it was made). Records lost on this CPU since the
 *   previous record of the stream, by reason. The ring writes it in front of
 *   the first record that fits after a loss (reasons full, too_big,
 *   nesting); the reader inserts it in front of the first record it returns
 *   after the writer overwrote unread records (reason overwritten). A
 *   resize (BUFFER_SET) hands the losses no reader was told of to the new
 *   ring, whose first record's LOST record reports them, any reason
 *   included: losses not yet reported, LOST records left unread, and
 *   overwritten records an overwrite-mode reader had not been told of
 *   (the unread events themselves count as discarded); JOB_LOST records
 *   left unread go back to their jobs' pending losses, which the jobs'
 *   next records in the new ring report again. Losses
 *   are never silent: the sum over a stream's LOST records, plus losses
 *   not yet followed by a record, equals the CPU's counters in stats.
 *
 * MAGNET_EVENT_JOB_LOST: struct magnet_job_lost, size 48, flags 0; cgroup
 *   the low half of the job's cgroup v2 id, abstract_id the whole id (0:
 *   the shared job), pid and tgid 0, cpu the ring's CPU, timestamp that
 *   of the record that follows it. Records of that one job the fairness
 *   rule dropped on this CPU since the job's previous JOB_LOST record. See
 *   FAIRNESS.
 *
 * MAGNET_EVENT_TASK: struct magnet_task, size 64 (56 before format 5:
 *   no uids), flags 0; pid, tgid and
 *   cgroup those of the task named, abstract_id its whole cgroup v2 id,
 *   cpu the ring's CPU, the timestamp of the record that follows it. See
 *   TASK RECORDS.
 *
 * Event ids 0..15 are reserved; 0 is the ring's internal padding and never
 * reaches a reader.
 *
 * TASK RECORDS
 * ------------
 *
 * A TASK record gives the command name (comm) of a thread and its owner:
 * its real and effective uid, as the initial user namespace sees them (a
 * reader that serves several users decides by them who may see the
 * thread's records; see magnetd's docs/security.md). Each CPU's ring
 * remembers the last MAGNET_TASK_SLOTS threads it named, one per slot,
 * slot = pid % MAGNET_TASK_SLOTS, and writes a TASK record just before a
 * record of a thread its slot does not hold under the same name: the
 * thread's first record in that CPU's stream, its first after it renamed
 * itself (exec, PR_SET_NAME) or changed a uid (setuid, setresuid), and
 * its first after the ring forgot it: a reader opened the file (every
 * slot), the rings were resized (every slot), another thread took the
 * slot, or (overwrite mode) its TASK record was overwritten. The TASK
 * record and the record it names are written together or not at all (a
 * full ring loses the record, counted once, and fills no slot).
 *
 * So a reader that keeps, per CPU, the last TASK record of each slot
 * (MAGNET_TASK_SLOTS or any multiple of it per CPU), and empties a CPU's
 * slots at a LOST record that reports overwritten records, knows the name
 * of every record's thread exactly, however briefly it lived. (Overwrite
 * mode pushes a TASK record out only with the record after it, so the
 * LOST record always comes first.) Only a record written before this
 * reader opened the file whose TASK record another reader consumed, or
 * one following an overwrite whose TASK record went with it, can find its
 * slot not holding its pid: its name is then unknown, never guessed; its
 * cgroup is always known.
 *
 * TASK records, like LOST records, are not events: they are not counted
 * in stats (written, bytes, overwritten), in a probe's hits, nor by the
 * read condition's record watermark. The task's name as of
 * the TASK record is the name of every following record of that pid in
 * that CPU's stream, up to the next TASK record of that pid.
 *
 * FAIRNESS
 * --------
 *
 * One job that calls a probed function in a tight loop must not take the
 * ring from every other job on its CPU. So, per CPU, magnet counts the
 * bytes each job writes, and when the ring is under pressure a job that
 * has written more than its fair share loses its further records first.
 *
 * Job: the writer's cgroup v2 id (JOBS). Records written in interrupt
 * context (MAGNET_REC_INTR: their cause is not known) belong to one
 * shared job, id 0, as do jobs the CPU's table has no room for (below).
 *
 * Window: each ring size's worth of bytes written to a CPU's ring is a
 * window (no clock: the rule follows the traffic). A job's use is its
 * bytes in the current window plus its bytes of the previous window
 * times the part of the current window still to come: a sliding window
 * one ring long. Bytes are those of its records and of the TASK and
 * JOB_LOST records written with them. Active jobs: those that wrote, or
 * were refused, in the current or the previous window.
 *
 * The rule: with a threshold F (percent of the ring; 0: off) and the ring
 * in discard mode, before a record is reserved, if the ring's unread
 * bytes (reserved, not yet consumed) exceed F % of its size, at least two
 * jobs are active, and the writer's job has a use above size / active
 * jobs (its fair share), the record is lost. (The fill is looked at each
 * time another sixteenth of the ring has been written, and again before
 * any record is refused: the ring may reach F % plus a sixteenth before
 * the rule holds anyone back, never less.) A lost record is counted in
 * the CPU's lost_fair (stats) and in the job's (magnet/jobs,
 * MAGNET_CMD_JOBS_GET), and reported in band. So above F % only the jobs under their share
 * write, and they keep finding room as long as they alone do not fill
 * the rest of the ring. A job alone on its CPU (no other job active in
 * the two windows) is never held back: one job sees exactly the ring's
 * behaviour without the rule, as does any ring never filled past F %.
 * Overwrite mode (a flight recorder keeps the newest) never applies it.
 *
 * Parameters: F is MAGNET_BUFFER_A_FAIR_FILL (BUFFER_SET, BUFFER_GET) and
 * the module parameter fair= (0644), one value for every ring, 0 to 99,
 * default MAGNET_FAIR_FILL_DEFAULT (50: the point where every reader is
 * woken anyway, READ CONDITION). fair=0 switches the rule off; the
 * table still counts every job (magnet/jobs) and still reports losses
 * made before.
 *
 * JOB_LOST records: a job's losses not yet reported are written as one
 * JOB_LOST record naming the job in front of its next record on that CPU
 * that fits (and its TASK record; all in one reservation), or, once its
 * table slot has gone to another job, in front of the next record of any
 * task there. Until then they are pending (magnet/jobs, JOBS_GET); a ring
 * in overwrite mode writes none (its writers may overwrite them), so
 * they wait. Losses are never silent: per CPU, the sum of the stream's
 * JOB_LOST records plus the jobs' pending counts equals lost_fair in
 * stats, and per job likewise while it keeps its slot.
 *
 * Table: per CPU, MAGNET_FAIR_SLOTS slots, looked up by a hash of the id
 * and at most MAGNET_FAIR_PROBES neighbours (a bounded cost per record,
 * whatever the number of jobs). A slot whose job has written nothing in
 * the current and the previous window may be taken by another job (its
 * counts in magnet/jobs then go; its pending losses are reported as
 * above). A job that finds neither its slot nor one to take counts as the
 * shared job on that CPU until one frees up. A job's counts are exact:
 * only task-context writers of the CPU use the table, one at a time, and
 * the shared job's counters are interrupt-safe. The window's bytes and
 * the count of active jobs, which only steer the rule, may miss a record
 * that an interrupt writes while the window turns over.
 *
 * GENERIC NETLINK CONTROL PLANE
 * -----------------------------
 *
 * Family MAGNET_GENL_NAME ("magnet"), version MAGNET_GENL_VERSION, in the
 * initial network namespace only. Every command, dumps included, needs
 * CAP_NET_ADMIN (GENL_ADMIN_PERM) and CAP_SYS_ADMIN (probes see all of the
 * kernel): EPERM otherwise; joining the alarm group needs both too (see
 * WHO MAY DO WHAT; on kernels older than 6.1.y's multicast-flags backport,
 * only CAP_NET_ADMIN can be asked for). Commands are serialised.
 *
 * Attributes are validated strictly: unknown attributes, wrong types or
 * lengths, and unknown flag bits are rejected with EINVAL, values outside
 * an attribute's range with ERANGE, unknown commands with EOPNOTSUPP, and
 * every refusal carries an extended-ACK message saying why (and, where it
 * applies, which attribute). The whole policy applies to every request,
 * attributes its command ignores included: one marked "never in a
 * request" below is refused (EINVAL) in any. A command sent with
 * NLM_F_DUMP that has no dump, or without it that is only a dump, gets
 * EOPNOTSUPP.
 *
 * Every request is NLM_F_REQUEST; NLM_F_ACK, optional, asks for an ACK
 * after the reply, if any (a refusal is always sent). A reply is a message
 * of the request's own command. A reply larger than a netlink page (a
 * probe with very many CPU filters on a very large machine) fails with
 * EMSGSIZE. Trees below list each attribute as NAME: TYPE, then its limits
 * and meaning. Where the architecture needs it, a 64-bit attribute of a
 * reply is preceded by a padding attribute that aligns it, to be skipped:
 * MAGNET_PSTAT_A_PAD, MAGNET_CSTAT_A_PAD or MAGNET_ALARM_A_PAD in those
 * nests, type 0 elsewhere.
 *
 * A request that acts on one probe names it in the MAGNET_A_PROBE nest,
 * written "ID or NAME" below: it contains one of
 *     MAGNET_PROBE_A_ID: NLA_U16, 16 and up
 *     MAGNET_PROBE_A_NAME: NLA_NUL_STRING, maxlen MAGNET_NAME_MAX
 * (given both, the first probe that matches either). Errors: EINVAL
 * without MAGNET_A_PROBE or with neither; ENOENT no such probe.
 *
 * MAGNET_CMD_PROBE_ADD
 * --------------------
 *
 * Insert a probe. NLM_F_REQUEST, NLM_F_ACK optional. The request:
 *     MAGNET_A_PROBE: NLA_NESTED
 *         MAGNET_PROBE_A_TYPE: NLA_U8, enum magnet_probe_type, KPROBE,
 *             KRETPROBE, FENTRY or TRACEPOINT (required; see PROBE TYPES)
 *         MAGNET_PROBE_A_SYMBOL: NLA_NUL_STRING, maxlen KSYM_NAME_LEN - 1,
 *             the function, or a tracepoint's SUBSYSTEM:EVENT (required)
 *         MAGNET_PROBE_A_OFFSET: NLA_U32, kprobes only, default 0
 *         MAGNET_PROBE_A_NAME: NLA_NUL_STRING, 1 to MAGNET_NAME_MAX bytes,
 *             unique, no control byte (0x00-0x1f, 0x7f); default "SYMBOL[+OFF]" for a kprobe,
 *             "SYMBOL%return" for a kretprobe, "SYMBOL" for an fentry
 *         MAGNET_PROBE_A_NARGS: NLA_U8, 0..MAGNET_ARGS_MAX (6): arguments
 *             to record, default 0 (a tracepoint: all it has, at most 6)
 *         MAGNET_PROBE_A_CAPTURE_LEN: NLA_U16, 1..MAGNET_PAYLOAD_MAX: bytes
 *             to copy, default 0 (no capture)
 *         MAGNET_PROBE_A_CAPTURE_ARG: NLA_U8, 0..MAGNET_ARGS_MAX - 1: the
 *             argument holding the address; given with CAPTURE_LEN, and
 *             only with it
 *         MAGNET_PROBE_A_HANDLER: NLA_NUL_STRING, maxlen 15: "generic"
 *             (default) or a named handler, "sock", "skb" or "switch"
 *             (see HANDLERS)
 *         MAGNET_PROBE_A_FLAGS: NLA_U32, MAGNET_PROBE_F_*, default 0
 *     ID, SAMPLE_EVERY and SAMPLE_INTERVAL_NS are refused (EINVAL): ids
 *     are assigned, sampling is set with SAMPLE_SET.
 * The kernel replies with:
 *     MAGNET_A_PROBE: NLA_NESTED
 *         MAGNET_PROBE_A_ID: NLA_U16, the event id of its records
 *         MAGNET_PROBE_A_NAME: NLA_NUL_STRING
 * Errors: ENOENT no such symbol (fentry: no traceable function of that
 * name); EADDRNOTAVAIL a kprobe or kretprobe on the idle loop (see PROBE
 * TYPES); EINVAL refused by kprobes or a bad combination (the message says
 * which: MAGNET_A_PROBE, TYPE or SYMBOL missing, an offset on a kretprobe
 * or an fentry, a glob in an fentry's symbol, arguments and capture that
 * do not fit one record, ...); EOPNOTSUPP an fentry on a kernel without
 * CONFIG_DYNAMIC_FTRACE, or a kprobe on an instruction kprobes cannot
 * single-step (x86: a jump or call through memory);
 * EILSEQ the offset is not on an instruction boundary; EBUSY the address
 * has another kind of probe; EEXIST name taken; ENOSPC no event id left.
 *
 * Event ids: a removed probe's id is handed out again only after every
 * other id of the 16..65535 range has been (cyclic allocation), so unread
 * records of a removed probe are not taken for a new probe's.
 *
 * MAGNET_CMD_PROBE_DEL
 * --------------------
 *
 * Remove a probe (and its filters). NLM_F_REQUEST, NLM_F_ACK optional:
 *     MAGNET_A_PROBE: NLA_NESTED
 *         ID or NAME
 * No reply but the ACK. Errors: ENOENT; EPERM for an event a kernel
 * module registered (it removes its own).
 *
 * MAGNET_CMD_PROBE_GET
 * --------------------
 *
 * One probe (doit): NLM_F_REQUEST, NLM_F_ACK optional, with
 *     MAGNET_A_PROBE: NLA_NESTED
 *         ID or NAME
 * and the kernel replies with one message. All probes (dump):
 * NLM_F_REQUEST | NLM_F_DUMP, no attributes needed; the kernel returns
 * several messages (NLM_F_MULTI), one per probe, each carrying first
 *     MAGNET_A_GENERATION: NLA_U32 (never in a request)
 * and sets NLM_F_DUMP_INTR if the probe set changed while it ran: start
 * again. Every reply message contains the following tree:
 *     MAGNET_A_PROBE: NLA_NESTED
 *         MAGNET_PROBE_A_ID: NLA_U16
 *         MAGNET_PROBE_A_NAME: NLA_NUL_STRING
 *         MAGNET_PROBE_A_TYPE: NLA_U8, enum magnet_probe_type
 *         MAGNET_PROBE_A_SYMBOL: NLA_NUL_STRING
 *         MAGNET_PROBE_A_OFFSET: NLA_U32
 *         MAGNET_PROBE_A_NARGS: NLA_U8
 *         MAGNET_PROBE_A_CAPTURE_LEN: NLA_U16, 0: no capture
 *         MAGNET_PROBE_A_CAPTURE_ARG: NLA_U8
 *         MAGNET_PROBE_A_HANDLER: NLA_NUL_STRING, "generic", "sock",
 *             "skb", "switch" or "raw"
 *         MAGNET_PROBE_A_FLAGS: NLA_U32, MAGNET_PROBE_F_*
 *         MAGNET_PROBE_A_SAMPLE_EVERY: NLA_U32
 *         MAGNET_PROBE_A_SAMPLE_INTERVAL_NS: NLA_U64
 *         MAGNET_PROBE_A_FILTERS: NLA_NESTED (never in a request)
 *             MAGNET_A_FILTER: NLA_NESTED, one per filter
 *                 MAGNET_FILTER_A_ID: NLA_U32
 *                 MAGNET_FILTER_A_KIND: NLA_U8, enum magnet_filter_kind
 *                 MAGNET_FILTER_A_ACTION: NLA_U8,
 *                     enum magnet_filter_action
 *                 then, for a CPU filter:
 *                 MAGNET_FILTER_A_CPUS: NLA_BINARY, the bitmap as in
 *                     FILTER_ADD, one u64 word per 64 CPU ids of the
 *                     machine, rounded up
 *                 or, for the other kinds:
 *                 MAGNET_FILTER_A_VALUE: NLA_U64
 *         MAGNET_PROBE_A_STATS: NLA_NESTED (never in a request)
 *             MAGNET_PSTAT_A_HITS: NLA_U64
 *             MAGNET_PSTAT_A_FILTERED: NLA_U64
 *             MAGNET_PSTAT_A_SAMPLED: NLA_U64
 *             MAGNET_PSTAT_A_RECORDED: NLA_U64
 *             MAGNET_PSTAT_A_LOST: NLA_U64
 *             MAGNET_PSTAT_A_MISSED: NLA_U64
 *             MAGNET_PSTAT_A_ALARMS: NLA_U64
 *             MAGNET_PSTAT_A_ALARMS_DROPPED: NLA_U64
 * Errors (doit): ENOENT.
 *
 * MAGNET_CMD_PROBE_SET
 * --------------------
 *
 * Set a probe's flags. NLM_F_REQUEST, NLM_F_ACK optional:
 *     MAGNET_A_PROBE: NLA_NESTED
 *         ID or NAME
 *         MAGNET_PROBE_A_FLAGS: NLA_U32, MAGNET_PROBE_F_* (required)
 * FLAGS replaces the whole word (read it with PROBE_GET to change one
 * bit). MAGNET_PROBE_F_DISABLED keeps the probe registered but disarmed
 * (an fentry probe keeps its function but leaves ftrace: nothing runs);
 * MAGNET_PROBE_F_NOTIFY sends alarms. No reply but the ACK. Errors:
 * EINVAL without FLAGS; ENOENT; the kprobes core's or ftrace's, if it
 * cannot arm or disarm the probe.
 *
 * MAGNET_CMD_FILTER_ADD
 * ---------------------
 *
 * Add a filter to a probe. NLM_F_REQUEST, NLM_F_ACK optional:
 *     MAGNET_A_PROBE: NLA_NESTED
 *         ID or NAME
 *     MAGNET_A_FILTER: NLA_NESTED (required)
 *         MAGNET_FILTER_A_KIND: NLA_U8, enum magnet_filter_kind (required)
 *         MAGNET_FILTER_A_ACTION: NLA_U8, enum magnet_filter_action
 *             (required)
 *         then, for KIND MAGNET_FILTER_CPU only:
 *         MAGNET_FILTER_A_CPUS: NLA_BINARY, maxlen 1024, a CPU bitmap:
 *             u64 words, CPU n is bit n % 64 of word n / 64; a multiple of
 *             8 bytes; bits past the machine's CPUs are ignored, and it
 *             must name one of them
 *         or, for the other kinds only:
 *         MAGNET_FILTER_A_VALUE: NLA_U64: tgid, abstract id or cgroup id
 *             (the cgroup2 directory's inode number)
 *     MAGNET_FILTER_A_ID is refused (EINVAL): ids are assigned.
 * The kernel replies with:
 *     MAGNET_A_FILTER: NLA_NESTED
 *         MAGNET_FILTER_A_ID: NLA_U32, numbered per probe from 1
 * Up to MAGNET_FILTERS_MAX per probe (ENOSPC beyond). Errors: EINVAL for
 * a missing MAGNET_A_FILTER, KIND or ACTION, or the wrong one of CPUS and
 * VALUE; ENOENT.
 * Semantics: a hit is recorded iff it matches no EXCLUDE filter and, for
 * every kind that has INCLUDE filters, at least one of them (OR within a
 * kind, AND across kinds). A cgroup filter matches the cgroup and every
 * cgroup below it (a job and its steps).
 *
 * MAGNET_CMD_FILTER_DEL
 * ---------------------
 *
 * Remove a filter. NLM_F_REQUEST, NLM_F_ACK optional:
 *     MAGNET_A_PROBE: NLA_NESTED
 *         ID or NAME
 *     MAGNET_A_FILTER: NLA_NESTED (required)
 *         MAGNET_FILTER_A_ID: NLA_U32, 1 and up (required)
 * No reply but the ACK. Errors: EINVAL without the filter's ID; ENOENT no
 * such probe, or no filter of this id on it.
 *
 * MAGNET_CMD_SAMPLE_SET
 * ---------------------
 *
 * Set a probe's sampling. NLM_F_REQUEST, NLM_F_ACK optional:
 *     MAGNET_A_PROBE: NLA_NESTED
 *         ID or NAME
 *         MAGNET_PROBE_A_SAMPLE_EVERY: NLA_U32
 *         MAGNET_PROBE_A_SAMPLE_INTERVAL_NS: NLA_U64
 *     SAMPLE_EVERY and/or SAMPLE_INTERVAL_NS: the one not given keeps its
 *     value.
 * Of the hits that pass the filters, record one in SAMPLE_EVERY (per CPU;
 * 0 or 1: all) and at most one per SAMPLE_INTERVAL_NS (across CPUs; 0: no
 * limit; the first hit after the command passes). No reply but the ACK.
 * Errors: EINVAL with neither; ENOENT.
 *
 * MAGNET_CMD_BUFFER_GET
 * ---------------------
 *
 * The rings' geometry. NLM_F_REQUEST, NLM_F_ACK optional, no attributes
 * needed. The kernel replies with:
 *     MAGNET_A_BUFFER: NLA_NESTED
 *         MAGNET_BUFFER_A_SIZE: NLA_U64, bytes per CPU
 *         MAGNET_BUFFER_A_MODE: NLA_U8, enum magnet_buffer_mode
 *         MAGNET_BUFFER_A_CPUS: NLA_U32, the possible CPUs, one ring each
 *             (never in a request)
 *         MAGNET_BUFFER_A_FAIR_FILL: NLA_U8, the fairness threshold in
 *             percent, 0: off (FAIRNESS)
 *
 * MAGNET_CMD_BUFFER_SET
 * ---------------------
 *
 * Replace the rings. NLM_F_REQUEST, NLM_F_ACK optional:
 *     MAGNET_A_BUFFER: NLA_NESTED (required)
 *         MAGNET_BUFFER_A_SIZE: NLA_U64, bytes per CPU, a power of two
 *             from MAGNET_BUFFER_SIZE_MIN to _MAX (EINVAL otherwise)
 *         MAGNET_BUFFER_A_MODE: NLA_U8, enum magnet_buffer_mode
 *         MAGNET_BUFFER_A_FAIR_FILL: NLA_U8, 0..MAGNET_FAIR_FILL_MAX
 *             (ERANGE above): the fairness threshold, 0 switches the rule
 *             off (FAIRNESS)
 *     One not given keeps its value; the same size and mode change
 *     nothing. FAIR_FILL alone takes effect at once, readers attached or
 *     not, and keeps the rings and their records; with a new size or
 *     mode it takes effect only if the rings were replaced.
 * No reply but the ACK. Errors: EBUSY while a reader is attached to any
 * ring, ENOMEM if the rings cannot be allocated or would take more than
 * half of memory (the old ones stay). A resize throws away unread records
 * (counted as discarded); losses not yet reported in a LOST record are
 * reported by the new ring's first record.
 *
 * MAGNET_CMD_STATS_GET
 * --------------------
 *
 * The rings' counters, those of magnet/stats. May only be called via
 * NLM_F_REQUEST | NLM_F_DUMP, no attributes needed. The kernel returns
 * several messages (NLM_F_MULTI), one per possible CPU, containing:
 *     MAGNET_A_CPU_STATS: NLA_NESTED (never in a request)
 *         MAGNET_CSTAT_A_CPU: NLA_U32
 *         MAGNET_CSTAT_A_WRITTEN: NLA_U64
 *         MAGNET_CSTAT_A_BYTES: NLA_U64
 *         MAGNET_CSTAT_A_LOST_FULL: NLA_U64
 *         MAGNET_CSTAT_A_LOST_TOO_BIG: NLA_U64
 *         MAGNET_CSTAT_A_LOST_NESTING: NLA_U64
 *         MAGNET_CSTAT_A_OVERWRITTEN: NLA_U64
 *         MAGNET_CSTAT_A_DISCARDED: NLA_U64
 *         MAGNET_CSTAT_A_LOST_FAIR: NLA_U64
 * Per-probe counters come with MAGNET_CMD_PROBE_GET, per-job ones with
 * MAGNET_CMD_JOBS_GET.
 *
 * MAGNET_CMD_JOBS_GET
 * -------------------
 *
 * The fairness tables, those of magnet/jobs (FAIRNESS). May only be
 * called via NLM_F_REQUEST | NLM_F_DUMP, no attributes needed. The kernel
 * returns one message (NLM_F_MULTI) per job per CPU, containing:
 *     MAGNET_A_JOB: NLA_NESTED (never in a request)
 *         MAGNET_JOB_A_CPU: NLA_U32
 *         MAGNET_JOB_A_CGROUP: NLA_U64, the job's cgroup v2 id, 0: the
 *             shared job
 *         MAGNET_JOB_A_WRITTEN: NLA_U64, its event records
 *         MAGNET_JOB_A_LOST_FAIR: NLA_U64, dropped by the rule
 *         MAGNET_JOB_A_PENDING: NLA_U64, of those, not yet reported in a
 *             JOB_LOST record
 *         MAGNET_JOB_A_LOST_RING: NLA_U64, lost by the ring itself (full,
 *             too big, nesting)
 * The counts are read while writers run: each is exact as of some moment,
 * not all of them as of one. A job may appear under several CPUs.
 *
 * MAGNET_CMD_ALARM
 * ----------------
 *
 * Never a request (EOPNOTSUPP); sent to multicast group
 * MAGNET_GENL_MCGRP_ALARM ("alarm") for each hit of a NOTIFY probe that
 * passes its filters and sampling, at most MAGNET_ALARM_RATE per second
 * per CPU (the rest are counted in MAGNET_PSTAT_A_ALARMS_DROPPED). Each
 * message contains:
 *     MAGNET_A_ALARM: NLA_NESTED (never in a request)
 *         MAGNET_ALARM_A_PROBE_ID: NLA_U16
 *         MAGNET_ALARM_A_CPU: NLA_U32
 *         MAGNET_ALARM_A_PID: NLA_U32
 *         MAGNET_ALARM_A_TGID: NLA_U32
 *         MAGNET_ALARM_A_TIMESTAMP: NLA_U64, the record clock
 *         MAGNET_ALARM_A_ABSTRACT_ID: NLA_U64
 *
 * PROBE TYPES
 * -----------
 *
 * KPROBE: a kprobe at SYMBOL+OFFSET; any instruction kprobes accepts. At
 *   the entry of a function ftrace can trace it goes through ftrace's call
 *   site; elsewhere it traps (int3), and is never jump-optimized, so that
 *   MAGNET_REC_INTR tells the truth (a jump-optimized kprobe inside an
 *   NMI could not be told from a trap in a syscall).
 * KRETPROBE: at the function's return (entry arguments, retval, latency).
 * FENTRY: at function entry through ftrace's own call site in the
 *   function, with an ftrace_ops of the probe's own (as the kernel's fprobe
 *   does): the records are a kprobe's at offset 0, for less work per hit
 *   (no kprobe lookup, only the argument registers saved on x86_64). Only
 *   functions ftrace can trace (tracefs available_filter_functions; ENOENT
 *   otherwise); no offset; the symbol is a name, never a glob (EINVAL).
 *   A name that several static functions share covers all of them, as
 *   ftrace's set_ftrace_filter does.
 * Every type: a hit where RCU is not watching (the idle loop after
 *   ct_idle_enter(), as arch_cpu_idle and default_idle run; early entry
 *   code) is not recorded and counts as the probe's missed: the rings and
 *   filter sets are freed after RCU grace periods, which do not wait for
 *   such a CPU. On the idle loop itself (the kernel's .cpuidle.text and
 *   arch_cpu_idle) kprobes and kretprobes are refused (EADDRNOTAVAIL): the
 *   kernel's kprobes core walks RCU-protected lists there before any
 *   handler runs (later kernels make that code noinstr, which kprobes
 *   refuses itself); an fentry probe there is taken, and counts missed.
 *   Nor is a hit in magnet's own work: a probed function that
 *   the record path calls (its nofault copies, irq_work_queue) reached
 *   while one of magnet's handlers runs on that CPU at the same interrupt
 *   level; an interrupt or NMI that arrives meanwhile is recorded.
 * TRACEPOINT: a tracepoint of the kernel itself (not of a module), named
 *   SUBSYSTEM:EVENT as tracefs lists it (events/sched/sched_switch is
 *   sched:sched_switch): the kernel's stable event interface, there
 *   whatever a version renames or inlines. Attached with
 *   tracepoint_probe_register(), as BPF's raw tracepoints are: the
 *   record holds the tracepoint's raw arguments (NARGS of them, by
 *   default all it has up to MAGNET_ARGS_MAX; integers narrower than 64
 *   bits zero- or sign-extended as their type says), and the abstract id
 *   is the first. The argument list comes from the kernel's BTF (the
 *   btf_trace_EVENT types of CONFIG_BPF_EVENTS); without it, NARGS must
 *   be given and is trusted (too many record whatever the registers and
 *   the caller's stack slot hold), and narrow integers keep whatever
 *   their registers' upper bits held. ENOENT: no such event; EINVAL: an
 *   event that is no tracepoint (syscalls:*, events that kprobe_events
 *   or uprobe_events made); EOPNOTSUPP: a module's tracepoint, a kernel
 *   without CONFIG_EVENT_TRACING or with kCFI (CONFIG_CFI_CLANG, which
 *   type-checks tracepoint probes); EPERM: lockdown=confidentiality,
 *   where the kernel sets up no tracing and no event list. No offset;
 *   handlers "generic", "skb" (the first struct sk_buff * argument:
 *   net:net_dev_queue, net:netif_receive_skb, ...) and "switch"
 *   (sched:sched_switch).
 * CUSTOM: an event a kernel module registers (include/magnet/kapi.h); not
 *   created over netlink.
 *
 * HANDLERS
 * --------
 *
 * "generic": the record layout of PAYLOADS above.
 * "raw": not selectable; events of kernel modules (include/magnet/kapi.h)
 *   carry struct magnet_raw, MAGNET_REC_HANDLER(flags) == MAGNET_HANDLER_RAW.
 * "sock": function entry only (a kprobe without offset, or an fentry), for
 *   functions whose first
 *   argument is a struct sock * (e.g. tcp_sendmsg, udp_sendmsg,
 *   tcp_cleanup_rbuf): the payload is struct magnet_sock,
 *   MAGNET_REC_HANDLER(flags) == MAGNET_HANDLER_SOCK, and the abstract id
 *   is the socket's address. Which job sends what to which host, per
 *   record. PROBE_ADD checks the function's parameters in the kernel's
 *   BTF (/sys/kernel/btf/vmlinux in init's mount namespace, whatever the
 *   caller's; read at the first sock or skb PROBE_ADD of a load and kept,
 *   in part, until unload): EINVAL unless the first is a struct
 *   sock *, EOPNOTSUPP on a kernel without BTF. magnet_sock.size is the
 *   third argument where BTF says it is an integer, else 0. The socket is
 *   read without faulting: one that cannot be read gives family 0. A
 *   timewait or request sock (state TCP_TIME_WAIT or TCP_NEW_SYN_RECV:
 *   a smaller object than a socket) gives what it has: family, state,
 *   addresses and ports, protocol 0.
 * "skb": function entry only (a kprobe without offset, or an fentry;
 *   EINVAL for a kretprobe or an offset) or a tracepoint, for functions
 *   and tracepoints that take a struct sk_buff *: one record per
 *   packet as the function sees it, payload struct magnet_skb,
 *   MAGNET_REC_HANDLER(flags) == MAGNET_HANDLER_SKB (no other flag but
 *   MAGNET_REC_INTR). PROBE_ADD finds the FIRST parameter whose type is
 *   struct sk_buff * in the kernel's BTF, among the first MAGNET_ARGS_MAX
 *   (dev_queue_xmit(skb, ...), ip_output(net, sk, skb),
 *   udp_queue_rcv_skb(sk, skb)): EINVAL with an extended ACK if there is
 *   none, EOPNOTSUPP without BTF. The abstract id is the skb's address, so
 *   one packet can be followed from layer to layer while it stays the same
 *   skb (on lo, from ip_output down to udp_rcv: loopback hands the sent skb
 *   to the receive path); filters and sampling see that id.
 *   MAGNET_PROBE_A_CAPTURE_LEN (absent: 0, metadata only; at most 4072)
 *   is the bytes of packet data per record; the record is always
 *   MAGNET_RECORD_HEADER + 24 + the capture length rounded up to 8 bytes
 *   long. NARGS and CAPTURE_ARG are refused (EINVAL): the handler picks
 *   its argument itself. (magnet/probes has no LEN@ARG column for it;
 *   PROBE_GET reports CAPTURE_LEN.)
 *   len is skb->len (the bytes from skb->data to the end, paged parts
 *   included); ifindex skb->dev's (0: no device yet, e.g. at ip_output
 *   entry, or not readable); protocol skb->protocol as set so far (0
 *   before ip_output on the IPv4 send path).
 *   direction: IN when the packet came in through an interface: skb_iif
 *   is set (from __netif_receive_skb_core() on; a forwarded packet stays
 *   IN on its way out), or, earlier on the receive path (netif_rx,
 *   backlog, GRO), the link header was pulled (the mac header lies before
 *   skb->data) and no socket owns the skb. Else OUT when a socket owns it
 *   (skb->sk: sent by this host, kernel sockets' replies included). Else
 *   UNKNOWN (e.g. a driver before eth_type_trans(), ARP built without a
 *   socket).
 *   sk_cgroup: the job the packet belongs to, the full cgroup v2 id of
 *   its socket: the function's first struct sock * parameter if BTF names
 *   one and it is not NULL (tcp_rcv_established(sk, skb),
 *   __udp_enqueue_schedule_skb(sk, skb), ip_output(net, sk, skb)), else
 *   skb->sk. A socket's cgroup is the one its maker was in when it was
 *   made (accepted sockets: the listener's), as the kernel's cgroup-bpf
 *   ingress/egress hooks see it. The record header's pid and cgroup are
 *   the running task's, which on the receive path (softirq) is any task,
 *   on lo usually the sender. 0: no socket, or one without cgroup data
 *   (request and timewait socks: SYN-ACKs, timewait ACKs), or unreadable;
 *   always 0 on a kernel without CONFIG_SOCK_CGROUP_DATA (selected by
 *   CGROUP_BPF, CGROUP_NET_PRIO or CGROUP_NET_CLASSID; Debian's has it).
 *   layer and data: from the network header if it is set (6.1 has no
 *   "unset" mark for it: offset 0 from skb->head counts as unset), else
 *   from the link (mac) header if set, else from skb->data; the header may
 *   lie before skb->data (ip_rcv's callees, after a pull) or after it (the
 *   IP header at __dev_queue_xmit, behind the link header). caplen is
 *   min(capture length, the packet's bytes from that header to its end),
 *   copied from the linear part, then the page fragments, then the
 *   frag_list's skbs (IP fragments reassembled, one level); bytes past
 *   caplen are zero. Everything is read without faulting, in any
 *   context: an skb that cannot be read gives len 0, caplen 0, layer
 *   DATA; a part that cannot be read ends the capture there (caplen
 *   shorter); an skb whose lengths disagree gives its fields but no data.
 *
 * "switch": tracepoint sched:sched_switch only (EINVAL elsewhere; the
 *   kernel's BTF must describe it, else EOPNOTSUPP): struct
 *   magnet_switch, MAGNET_REC_HANDLER(flags) == MAGNET_HANDLER_SWITCH
 *   (no other flag but MAGNET_REC_INTR). One record per task switch:
 *   prev and next (pid, tgid, comm), the state prev leaves in (the
 *   tracepoint's prev_state argument where the kernel passes one, from
 *   5.18 on, else prev's state when the tracepoint runs), whether prev
 *   was preempted, and next's job (cgroup v2 id). NARGS and captures are
 *   refused. Each switch where prev != next is one hit, so a task's
 *   switches out are its voluntary plus involuntary context switches
 *   (/proc/PID/status); from 5.18 on, those with preempt 0 and a
 *   prev_state other than 0 are exactly the voluntary ones (before,
 *   a task that had a signal pending is already TASK_RUNNING when the
 *   tracepoint reads its state, and counted voluntary).
 *
 * WHO MAY DO WHAT
 * ---------------
 *
 * magnet shows what every process on the node does, and abstract ids are
 * usually kernel addresses: nothing of it reaches an unprivileged user.
 *
 *   netlink family    every command and dump: CAP_NET_ADMIN and
 *                     CAP_SYS_ADMIN in the initial user namespace (the
 *                     family is not available in other network
 *                     namespaces). Alarm group: the same, checked when
 *                     the socket joins.
 *   debugfs files     mode 0400, owner root; debugfs itself is mounted
 *                     0700 by default. Opening cpuN also needs the one
 *                     reader slot (EBUSY).
 *   module parameters /sys/module/magnet/parameters: buf_size, mode and
 *                     fair 0644 (root writes, anyone reads the ring size,
 *                     mode and fairness threshold), clock 0444, probes
 *                     0400 (it names what is probed).
 *   kernel API        modules only (include/magnet/kapi.h).
 *   magnetd           reads as root and serves each client what its
 *                     uid may see (docs/security.md): root and granted
 *                     users everything; any other user only the records
 *                     of its own threads (by the uids in their TASK
 *                     records), kernel addresses hashed, and its own
 *                     jobs; a client that proves no uid (TCP without a
 *                     MUNGE credential) no records.
 */
#ifndef _UAPI_LINUX_MAGNET_H
#define _UAPI_LINUX_MAGNET_H

#include <linux/types.h>
#include <linux/ioctl.h>

/*
 * 2: the ioctl numbers moved out of GPIO's range, magnet/stats and
 * MAGNET_CMD_STATS_GET gained "discarded". The record layout is that of 1.
 * 3: the header's reserved word is the task's cgroup; TASK records name
 * tasks; MAGNET_REC_INTR. A version 2 stream is a valid version 3 stream
 * without them (cgroup 0: unknown).
 * 4: JOB_LOST records (FAIRNESS); magnet/stats and MAGNET_CMD_STATS_GET
 * gained lost_fair. A version 3 stream is a valid version 4 stream
 * without them.
 * 5: TASK records carry the task's uid and euid (struct magnet_task grew
 * from 16 to 24 bytes). Readers take a 56-byte TASK record as one whose
 * uids are unknown.
 */
#define MAGNET_FORMAT_VERSION	5

struct magnet_record {
	__u32 size;
	__u16 event_id;
	__u16 flags;
	__u32 cpu;
	__u32 cgroup;		/* low 32 bits of the task's cgroup v2 id */
	__u64 abstract_id;
	__u64 timestamp;
	__u32 pid;
	__u32 tgid;
	__u8 payload[];
};

#define MAGNET_RECORD_HEADER	40
#define MAGNET_PAYLOAD_MAX	4096
#define MAGNET_RECORD_MAX	(MAGNET_RECORD_HEADER + MAGNET_PAYLOAD_MAX)
#define MAGNET_RECORD_ALIGN	8

enum magnet_reserved_event {
	MAGNET_EVENT_PAD = 0,
	MAGNET_EVENT_LOST = 1,
	MAGNET_EVENT_TASK = 2,
	MAGNET_EVENT_JOB_LOST = 3,
	MAGNET_EVENT_FIRST_DYNAMIC = 16,
	MAGNET_EVENT_MAX = 0xffff,
};

/* Record flags. */
#define MAGNET_REC_RETURN		(1U << 0)	/* kretprobe layout */
#define MAGNET_REC_CAPTURE		(1U << 1)	/* a capture follows the args */
#define MAGNET_REC_INTR			(1U << 2)	/* written in interrupt context */
#define MAGNET_REC_NARGS_SHIFT		4
#define MAGNET_REC_NARGS_MASK		(0xfU << MAGNET_REC_NARGS_SHIFT)
#define MAGNET_REC_NARGS(flags)	\
	(((flags) & MAGNET_REC_NARGS_MASK) >> MAGNET_REC_NARGS_SHIFT)
/* A named handler's own layout (0: generic, the layout above). */
#define MAGNET_REC_HANDLER_SHIFT	8
#define MAGNET_REC_HANDLER_MASK		(0xfU << MAGNET_REC_HANDLER_SHIFT)
#define MAGNET_REC_HANDLER(flags) \
	(((flags) & MAGNET_REC_HANDLER_MASK) >> MAGNET_REC_HANDLER_SHIFT)

enum magnet_handler {
	MAGNET_HANDLER_GENERIC = 0,
	MAGNET_HANDLER_SOCK = 1,
	MAGNET_HANDLER_RAW = 2,		/* events logged by kernel modules */
	MAGNET_HANDLER_SKB = 3,		/* packets: struct magnet_skb */
	MAGNET_HANDLER_SWITCH = 4,	/* task switches: struct magnet_switch */
};

/* Per CPU, the module remembers this many named tasks, by pid modulo it. */
#define MAGNET_TASK_SLOTS	64

/* Payload of a TASK record: the name and owner of the header's pid. */
struct magnet_task {
	char comm[16];		/* NUL-padded; not terminated if 16 long */
	__u32 uid;		/* real uid (5; initial user namespace) */
	__u32 euid;		/* effective uid (5) */
};

/* A format 3 or 4 TASK record's payload: comm only (uids unknown). */
#define MAGNET_TASK_V3_SIZE	16

/* Payload of an event a kernel module logs with magnet_log(). */
struct magnet_raw {
	__u32 len;		/* bytes of data; the record pads to 8 */
	__u32 reserved;		/* zero */
	__u8 data[];
};

/* Payload of the "sock" handler; addresses and ports in network order. */
struct magnet_sock {
	__u16 family;		/* AF_INET or AF_INET6 (0: not an inet socket) */
	__u8 protocol;		/* IPPROTO_TCP, IPPROTO_UDP, ... */
	__u8 state;		/* the socket's state (TCP_ESTABLISHED, ...) */
	__be16 sport;
	__be16 dport;
	__u8 saddr[16];		/* IPv4 in the first 4 bytes */
	__u8 daddr[16];
	__u64 size;		/* the third argument (bytes, for sendmsg) */
};

/*
 * Payload of the "skb" handler: one packet as a function saw it. data holds
 * the probe's capture length rounded up to 8: caplen bytes of the packet
 * from the header layer names, then zeros. See HANDLERS for the rules.
 */
struct magnet_skb {
	__u32 len;		/* skb->len: the packet's bytes from skb->data */
	__u32 caplen;		/* bytes of the packet in data */
	__u32 ifindex;		/* skb->dev's ifindex; 0: no device yet */
	__be16 protocol;	/* skb->protocol: ETH_P_IP, ETH_P_IPV6, ... */
	__u8 direction;		/* enum magnet_skb_direction */
	__u8 layer;		/* enum magnet_skb_layer: where data starts */
	__u64 sk_cgroup;	/* the socket's cgroup v2 id (the job); 0: none */
	__u8 data[];
};

/*
 * Payload of the "switch" handler (tracepoint sched:sched_switch): one
 * task switch on the record's CPU. The header's pid, tgid and cgroup are
 * prev's (the tracepoint runs in prev's context), its abstract id is
 * next_pid.
 */
struct magnet_switch {
	__u32 prev_pid;
	__u32 prev_tgid;
	__u32 next_pid;
	__u32 next_tgid;
	/* the state prev leaves in: 0 runnable, else the kernel's TASK_* bits */
	__u32 prev_state;	/* (1 INTERRUPTIBLE, 2 UNINTERRUPTIBLE, ...) */
	__u8 preempt;		/* 1: prev was preempted (runnable, "R+") */
	__u8 reserved[3];	/* zero */
	__u64 next_cgroup;	/* next's cgroup v2 id: the job that runs now */
	char prev_comm[16];	/* NUL-padded; not terminated if 16 long */
	char next_comm[16];
};

enum magnet_skb_direction {
	MAGNET_SKB_DIR_UNKNOWN = 0,
	MAGNET_SKB_DIR_OUT = 1,		/* being sent by this host */
	MAGNET_SKB_DIR_IN = 2,		/* received on an interface */
};

enum magnet_skb_layer {
	MAGNET_SKB_LAYER_DATA = 0,	/* skb->data: no header offset set yet */
	MAGNET_SKB_LAYER_NETWORK = 1,	/* the network (IP) header */
	MAGNET_SKB_LAYER_LINK = 2,	/* the link (MAC) header */
};

#define MAGNET_ARGS_MAX			6

struct magnet_capture {
	__u32 len;		/* bytes captured; 0 if unreadable */
	__u32 arg;		/* the argument that held the address */
	__u8 data[];		/* the probe's capture length, always */
};

struct magnet_lost {
	__u64 full;		/* discard mode: no room in the ring */
	__u64 too_big;		/* larger than MAGNET_RECORD_MAX or the ring */
	__u64 nesting;		/* more nested writers than the ring allows */
	__u64 overwritten;	/* overwrite mode: replaced before read */
};

/* Payload of a JOB_LOST record: one job's losses; see FAIRNESS. */
struct magnet_job_lost {
	__u64 fair;		/* dropped by the fairness rule */
};

/* The fairness table (FAIRNESS): slots per CPU, neighbours looked at. */
#define MAGNET_FAIR_SLOTS		64
#define MAGNET_FAIR_PROBES		8
/* Default threshold, percent of the ring; 0 switches the rule off. */
#define MAGNET_FAIR_FILL_DEFAULT	50
#define MAGNET_FAIR_FILL_MAX		99

/* Read condition of one open data file; see READ CONDITION above. */
struct magnet_read_attr {
	__u64 watermark_bytes;
	__u64 watermark_records;
	__u64 timeout_ns;
	__u64 flags;		/* none defined; must be 0 */
};

/* MAGNET_IOC_MMAP_ADVANCE; see MAPPED above. */
struct magnet_mmap_pos {
	__u64 release;		/* in: bytes given back from tail */
	__u64 tail;		/* in: the last call's; out: the new tail */
	__u64 commit;		/* out: records are whole below it */
	__u64 size;		/* out: the ring's size, the mapping's length */
	__u64 flags;		/* in: none defined; must be 0 */
};

/*
 * 0xB8 is free in Documentation/userspace-api/ioctl/ioctl-number.rst (6.1);
 * 0xB4, used up to format 1, is GPIO's. The structure has one layout on
 * every ABI, so 32-bit callers on a 64-bit kernel use the same numbers.
 */
#define MAGNET_IOC_MAGIC		0xb8
#define MAGNET_IOC_SET_READ_ATTR	_IOW(MAGNET_IOC_MAGIC, 1, struct magnet_read_attr)
#define MAGNET_IOC_GET_READ_ATTR	_IOR(MAGNET_IOC_MAGIC, 2, struct magnet_read_attr)
#define MAGNET_IOC_MMAP_ADVANCE		_IOWR(MAGNET_IOC_MAGIC, 3, struct magnet_mmap_pos)

#define MAGNET_GENL_NAME		"magnet"
#define MAGNET_GENL_VERSION		1
#define MAGNET_GENL_MCGRP_ALARM		"alarm"
#define MAGNET_FILTERS_MAX		64
/* Probe names: 1 to MAGNET_NAME_MAX bytes (the NUL not counted). */
#define MAGNET_NAME_MAX			527
#define MAGNET_ALARM_RATE		1000

/* Ring size per CPU: a power of two within these bounds (bytes). */
#define MAGNET_BUFFER_SIZE_MIN_KIB	64
#define MAGNET_BUFFER_SIZE_MAX_MIB	1024
#define MAGNET_BUFFER_SIZE_MIN		(MAGNET_BUFFER_SIZE_MIN_KIB * 1024UL)
#define MAGNET_BUFFER_SIZE_MAX		(MAGNET_BUFFER_SIZE_MAX_MIB * 1024UL * 1024UL)

/* What a full ring does: MAGNET_BUFFER_A_MODE, module parameter mode=. */
enum magnet_buffer_mode {
	MAGNET_BUFFER_DISCARD = 0,	/* drop the new record (default) */
	MAGNET_BUFFER_OVERWRITE = 1,	/* drop the oldest unread records */
};

enum magnet_cmd {
	MAGNET_CMD_UNSPEC,
	MAGNET_CMD_PROBE_ADD,
	MAGNET_CMD_PROBE_DEL,
	MAGNET_CMD_PROBE_GET,
	MAGNET_CMD_PROBE_SET,
	MAGNET_CMD_FILTER_ADD,
	MAGNET_CMD_FILTER_DEL,
	MAGNET_CMD_SAMPLE_SET,
	MAGNET_CMD_BUFFER_GET,
	MAGNET_CMD_BUFFER_SET,
	MAGNET_CMD_STATS_GET,
	MAGNET_CMD_ALARM,
	MAGNET_CMD_JOBS_GET,
	__MAGNET_CMD_MAX
};

#define MAGNET_CMD_MAX (__MAGNET_CMD_MAX - 1)

enum magnet_attr {
	MAGNET_A_UNSPEC,
	MAGNET_A_PROBE,
	MAGNET_A_FILTER,
	MAGNET_A_BUFFER,
	MAGNET_A_CPU_STATS,
	MAGNET_A_ALARM,
	MAGNET_A_GENERATION,
	MAGNET_A_JOB,
	__MAGNET_A_LAST
};

#define MAGNET_A_MAX (__MAGNET_A_LAST - 1)

enum magnet_probe_type {
	MAGNET_PROBE_KPROBE = 1,
	MAGNET_PROBE_KRETPROBE = 2,
	MAGNET_PROBE_CUSTOM = 3,	/* registered by a kernel module */
	MAGNET_PROBE_FENTRY = 4,
	MAGNET_PROBE_TRACEPOINT = 5,
};

enum magnet_probe_flag {
	MAGNET_PROBE_F_NOTIFY = 1U << 0,
	MAGNET_PROBE_F_DISABLED = 1U << 1,
	__MAGNET_PROBE_F_ALL = MAGNET_PROBE_F_NOTIFY | MAGNET_PROBE_F_DISABLED
};

enum magnet_probe_attr {
	MAGNET_PROBE_A_UNSPEC,
	MAGNET_PROBE_A_ID,
	MAGNET_PROBE_A_NAME,
	MAGNET_PROBE_A_TYPE,
	MAGNET_PROBE_A_SYMBOL,
	MAGNET_PROBE_A_OFFSET,
	MAGNET_PROBE_A_NARGS,
	MAGNET_PROBE_A_CAPTURE_LEN,
	MAGNET_PROBE_A_CAPTURE_ARG,
	MAGNET_PROBE_A_HANDLER,
	MAGNET_PROBE_A_FLAGS,
	MAGNET_PROBE_A_SAMPLE_EVERY,
	MAGNET_PROBE_A_SAMPLE_INTERVAL_NS,
	MAGNET_PROBE_A_FILTERS,
	MAGNET_PROBE_A_STATS,
	__MAGNET_PROBE_A_LAST
};

#define MAGNET_PROBE_A_MAX (__MAGNET_PROBE_A_LAST - 1)

enum magnet_filter_kind {
	MAGNET_FILTER_CPU = 1,
	MAGNET_FILTER_TGID = 2,
	MAGNET_FILTER_ABSTRACT_ID = 3,
	MAGNET_FILTER_CGROUP = 4,
	__MAGNET_FILTER_KIND_LAST
};

enum magnet_filter_action {
	MAGNET_FILTER_INCLUDE = 1,
	MAGNET_FILTER_EXCLUDE = 2,
};

enum magnet_filter_attr {
	MAGNET_FILTER_A_UNSPEC,
	MAGNET_FILTER_A_ID,
	MAGNET_FILTER_A_KIND,
	MAGNET_FILTER_A_ACTION,
	MAGNET_FILTER_A_VALUE,
	MAGNET_FILTER_A_CPUS,
	__MAGNET_FILTER_A_LAST
};

#define MAGNET_FILTER_A_MAX (__MAGNET_FILTER_A_LAST - 1)

enum magnet_buffer_attr {
	MAGNET_BUFFER_A_UNSPEC,
	MAGNET_BUFFER_A_SIZE,
	MAGNET_BUFFER_A_MODE,
	MAGNET_BUFFER_A_CPUS,
	MAGNET_BUFFER_A_FAIR_FILL,
	__MAGNET_BUFFER_A_LAST
};

#define MAGNET_BUFFER_A_MAX (__MAGNET_BUFFER_A_LAST - 1)

/* Per-probe counters: hits = filtered + sampled + recorded + lost. */
enum magnet_pstat_attr {
	MAGNET_PSTAT_A_UNSPEC,
	MAGNET_PSTAT_A_HITS,
	MAGNET_PSTAT_A_FILTERED,	/* dropped by a filter, before the ring */
	MAGNET_PSTAT_A_SAMPLED,		/* dropped by sampling, before the ring */
	MAGNET_PSTAT_A_RECORDED,
	MAGNET_PSTAT_A_LOST,		/* the ring had no room (see stats) */
	MAGNET_PSTAT_A_MISSED,		/* skipped: kprobes core, fentry recursion */
	MAGNET_PSTAT_A_ALARMS,
	MAGNET_PSTAT_A_ALARMS_DROPPED,
	MAGNET_PSTAT_A_PAD,
	__MAGNET_PSTAT_A_LAST
};

#define MAGNET_PSTAT_A_MAX (__MAGNET_PSTAT_A_LAST - 1)

enum magnet_cstat_attr {
	MAGNET_CSTAT_A_UNSPEC,
	MAGNET_CSTAT_A_CPU,
	MAGNET_CSTAT_A_WRITTEN,
	MAGNET_CSTAT_A_BYTES,
	MAGNET_CSTAT_A_LOST_FULL,
	MAGNET_CSTAT_A_LOST_TOO_BIG,
	MAGNET_CSTAT_A_LOST_NESTING,
	MAGNET_CSTAT_A_OVERWRITTEN,
	MAGNET_CSTAT_A_PAD,
	MAGNET_CSTAT_A_DISCARDED,	/* unread records dropped by a resize */
	MAGNET_CSTAT_A_LOST_FAIR,	/* dropped by the fairness rule */
	__MAGNET_CSTAT_A_LAST
};

#define MAGNET_CSTAT_A_MAX (__MAGNET_CSTAT_A_LAST - 1)

/* One job of one CPU's fairness table (MAGNET_CMD_JOBS_GET). */
enum magnet_job_attr {
	MAGNET_JOB_A_UNSPEC,
	MAGNET_JOB_A_CPU,		/* NLA_U32 */
	MAGNET_JOB_A_CGROUP,		/* NLA_U64, 0: the shared job */
	MAGNET_JOB_A_WRITTEN,		/* NLA_U64 */
	MAGNET_JOB_A_LOST_FAIR,		/* NLA_U64 */
	MAGNET_JOB_A_PENDING,		/* NLA_U64, lost_fair not yet in band */
	MAGNET_JOB_A_LOST_RING,		/* NLA_U64, full, too big, nesting */
	MAGNET_JOB_A_PAD,
	__MAGNET_JOB_A_LAST
};

#define MAGNET_JOB_A_MAX (__MAGNET_JOB_A_LAST - 1)

enum magnet_alarm_attr {
	MAGNET_ALARM_A_UNSPEC,
	MAGNET_ALARM_A_PROBE_ID,	/* NLA_U16 */
	MAGNET_ALARM_A_CPU,		/* NLA_U32 */
	MAGNET_ALARM_A_PID,		/* NLA_U32 */
	MAGNET_ALARM_A_TGID,		/* NLA_U32 */
	MAGNET_ALARM_A_TIMESTAMP,	/* NLA_U64, the record clock */
	MAGNET_ALARM_A_ABSTRACT_ID,	/* NLA_U64 */
	MAGNET_ALARM_A_PAD,
	__MAGNET_ALARM_A_LAST
};

#define MAGNET_ALARM_A_MAX (__MAGNET_ALARM_A_LAST - 1)

#endif /* _UAPI_LINUX_MAGNET_H */
