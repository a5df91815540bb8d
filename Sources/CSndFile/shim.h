#ifndef TANDEM_CSNDFILE_SHIM_H
#define TANDEM_CSNDFILE_SHIM_H
#include <sndfile.h>
#include <sys/types.h>

#ifdef __linux__
/* glibc declares this only under _GNU_SOURCE, which a Swift module's headers do not see; the prototype is glibc's. */
extern int sync_file_range(int fd, __off64_t offset, __off64_t count, unsigned int flags);
#endif

/* Starts the kernel's writeback of a file's dirty pages in [offset, offset + bytes) and returns at once
   (SYNC_FILE_RANGE_WRITE): a later fsync then finds little left to write. 0 elsewhere than Linux. */
static inline int tandem_start_writeback(int fd, long long offset, long long bytes) {
#ifdef __linux__
    return sync_file_range(fd, (__off64_t)offset, (__off64_t)bytes, 2u /* SYNC_FILE_RANGE_WRITE */);
#else
    (void)fd; (void)offset; (void)bytes;
    return 0;
#endif
}
#endif
