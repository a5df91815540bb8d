#ifndef TANDEM_CSNDFILE_SHIM_H
#define TANDEM_CSNDFILE_SHIM_H
#include <sndfile.h>
#include <stdint.h>
#include <sys/types.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>

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
/* Opens an existing file for writing that bypasses the page cache (O_DIRECT: offsets, lengths and buffers aligned to
   the device's logical block), close-on-exec. -1 with errno set where the file system refuses it (EINVAL) or the
   platform has no O_DIRECT. glibc defines O_DIRECT only under _GNU_SOURCE, which a Swift module's headers do not see;
   its value differs between architectures. */
static inline int tandem_open_unbuffered(const char *path) {
#if defined(__linux__)
#  if defined(O_DIRECT)
    int direct = O_DIRECT;
#  elif defined(__x86_64__) || defined(__i386__)
    int direct = 040000;
#  elif defined(__aarch64__) || defined(__arm__)
    int direct = 0200000;
#  else
    int direct = 0;
#  endif
    if (direct == 0) { errno = EINVAL; return -1; }
    return open(path, O_WRONLY | O_CLOEXEC | direct);
#else
    (void)path;
    errno = EINVAL;
    return -1;
#endif
}

/* Rounds to the nearest integer, ties to even, as libsndfile's psf_lrintf does (SSE's cvtss2si on x86-64; out of
   range and NaN give INT32_MIN there). */
#if defined(__x86_64__)
typedef float tandem_v4sf __attribute__((__vector_size__(16)));
#endif
static inline int32_t tandem_lrintf(float x) {
#if defined(__x86_64__)
    tandem_v4sf v = { x, 0, 0, 0 };
    return __builtin_ia32_cvtss2si(v);
#else
    return x == x ? (int32_t)lrintf(x) : INT32_MIN;
#endif
}

/* Converts `count` float samples to little-endian integer PCM of `bytes` (2 or 3) bytes each into `dest`, as
   libsndfile does with clipping on (SFC_SET_CLIPPING): scaled by 2^31 in float, clipped to the 32-bit range, rounded
   to nearest, and the top `bytes` bytes kept. */
static inline void tandem_float_to_pcm_le(const float *src, unsigned char *dest, long count, int bytes) {
    for (long i = 0; i < count; i++) {
        float scaled = src[i] * (float)(8.0 * 0x10000000);
        int32_t v;
        if (scaled >= (1.0 * 0x7FFFFFFF)) {
            v = INT32_MAX;
        } else if (scaled <= (-8.0 * 0x10000000)) {
            v = INT32_MIN;
        } else {
            v = tandem_lrintf(scaled);
        }
        uint32_t u = (uint32_t)v;
        if (bytes == 3) {
            dest[0] = (unsigned char)(u >> 8);
            dest[1] = (unsigned char)(u >> 16);
            dest[2] = (unsigned char)(u >> 24);
        } else {
            dest[0] = (unsigned char)(u >> 16);
            dest[1] = (unsigned char)(u >> 24);
        }
        dest += bytes;
    }
}
#endif
