/* bigmem.h - the service's large per-connection arrays, on huge pages where the host allows. */
#ifndef SS_SERVICE_BIGMEM_H
#define SS_SERVICE_BIGMEM_H

#include <stddef.h>

/*
 * The connection array (about 1.2 kB a connection, 80 MB at the default
 * 65,536) and the flow table are indexed by connection, so at thousands
 * of connections every request touches its own 4 KiB pages of them: a
 * TLB miss each, and in a VM a two-level page walk.  On 2 MiB pages the
 * arrays of 16,384 connections take a dozen TLB entries.
 *
 * ss_bigmem_alloc() returns @size zeroed bytes, 64-byte aligned, or NULL.
 * From 2 MiB up they come from an anonymous mapping, 2 MiB aligned and
 * marked MADV_HUGEPAGE: the kernel's transparent huge pages in "madvise"
 * mode (Debian's default) back it with huge pages as it is touched; with
 * THP "never" it stays on small pages and works the same.  Those pages
 * are not touched here: memory is committed as connections use it.  Below
 * 2 MiB, the heap.  Free with ss_bigmem_free() and the same @size.
 */
void *ss_bigmem_alloc(size_t size);
void ss_bigmem_free(void *p, size_t size);

/* The host's shmem THP mode, read from its sysfs knob. */
#define SS_SHMEM_THP_PATH "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

/*
 * The applications' shared regions (memfd: per-connection rings, 128 kB a
 * connection by default) are shmem, which takes huge pages only when the
 * host's shmem THP mode allows: "always", "within_size", or "advise" for
 * regions marked MADV_HUGEPAGE (the service and the library both mark
 * them with --shm-huge on), not "never" (the kernel's default) or "deny".
 * With @adjust and the mode "never", writes "advise" there: it changes
 * nothing for any mapping that does not ask.  @path is the knob
 * (SS_SHMEM_THP_PATH; a file in tests).  Puts the mode found in @was
 * (NUL-terminated, "" when unreadable) and returns 1 when regions can now
 * have huge pages, 0 when not, or -errno when the knob could not be read
 * or written.
 */
int ss_bigmem_shmem_thp(const char *path, int adjust, char *was, size_t len);

#endif
