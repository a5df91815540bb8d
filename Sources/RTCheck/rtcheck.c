/*
 * rtcheck.c - LD_PRELOAD interposer that checks that JACK process callbacks
 * are real-time safe.
 *
 * What it proves
 *   Every process callback registered with jack_set_process_callback() is
 *   replaced by a trampoline that marks the calling thread as "in a real-time
 *   cycle" for the duration of the callback. While that mark is set, calls to
 *   the functions below are counted:
 *
 *     allocation   malloc calloc realloc free posix_memalign aligned_alloc
 *                  memalign valloc pvalloc
 *     locking      pthread_mutex_lock pthread_mutex_trylock
 *                  pthread_rwlock_rdlock pthread_rwlock_wrlock
 *                  pthread_cond_wait pthread_cond_timedwait
 *     I/O          write
 *     Swift        swift_allocObject swift_slowAlloc swift_allocBox
 *                  swift_retain swift_release
 *                  swift_bridgeObjectRetain swift_bridgeObjectRelease
 *
 *   A run that reports cycles > 0 and events == 0 executed its process
 *   callbacks that many times without reaching any of these functions through
 *   a dynamic symbol (PLT/GOT) reference. Calls that do not go through the
 *   dynamic linker (static or hidden calls inside one shared object, direct
 *   system calls) are invisible to this check.
 *
 * Usage
 *   LD_PRELOAD=/path/to/libRTCheck.so RTCHECK_REPORT=/tmp/x tandem ...
 *
 *   RTCHECK_REPORT       File to append the report line to. Unset or empty:
 *                        the line goes to stderr.
 *   RTCHECK_SKIP_CYCLES  Do not count events during the first N callback
 *                        invocations of the process (default 0).
 *
 * Report
 *   One line, written after every jack_client_close() and at process exit,
 *   but only by processes that registered at least one process callback
 *   (so shells and helper tools that inherit LD_PRELOAD add no lines):
 *
 *   rtcheck cycles=N events=N malloc=N calloc=N realloc=N free=N memalign=N
 *   mutex=N rwlock=N condwait=N write=N swift_alloc=N swift_retain=N
 *   swift_release=N first=NAME,NAME,...
 *
 *   "events" is the sum of all categories; "first" lists the functions of the
 *   first FIRST_MAX counted events in order, or "-" when there were none.
 *   Counters are cumulative for the process; the last line is authoritative.
 *
 * Constraints kept by this file
 *   - While a thread is marked, wrappers only do a relaxed atomic increment
 *     and a pointer store before forwarding: no allocation, locking or I/O.
 *   - Every wrapper forwards to the next definition of its symbol
 *     (dlsym(RTLD_NEXT, ...)) whether or not the thread is marked.
 *   - dlsym itself may allocate before the real allocator is known; those
 *     allocations are served from a static bump buffer that free() ignores.
 *   - No JACK or Swift headers are needed; their types are declared here.
 */

#define _GNU_SOURCE

#include "include/rtcheck.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define RTCHECK_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------------ */
/* Event accounting                                                          */
/* ------------------------------------------------------------------------ */

enum rt_category {
    CAT_MALLOC,
    CAT_CALLOC,
    CAT_REALLOC,
    CAT_FREE,
    CAT_MEMALIGN,
    CAT_MUTEX,
    CAT_RWLOCK,
    CAT_CONDWAIT,
    CAT_WRITE,
    CAT_SWIFT_ALLOC,
    CAT_SWIFT_RETAIN,
    CAT_SWIFT_RELEASE,
    CAT_COUNT
};

/* Report keys, indexed by enum rt_category. */
static const char *const category_keys[CAT_COUNT] = {
    "malloc", "calloc", "realloc", "free", "memalign", "mutex",
    "rwlock", "condwait", "write", "swift_alloc", "swift_retain",
    "swift_release",
};

/* Number of leading events whose function name is kept for the report. */
#define FIRST_MAX 8

static atomic_ulong event_counts[CAT_COUNT];
static _Atomic(const char *) first_names[FIRST_MAX];
static atomic_uint first_count;

/* Total trampoline invocations in this process. */
static atomic_ulong cycle_count;

/* Successful wrapped registrations; gates the report. */
static atomic_uint registration_count;

/* RTCHECK_SKIP_CYCLES, read once in the constructor. */
static unsigned long skip_cycles;

/* RTCHECK_REPORT, copied in the constructor; empty means stderr. */
static char report_path[4096];

/*
 * Non-zero while the current thread runs a checked process callback.
 * initial-exec keeps the access a single %fs-relative load: no
 * __tls_get_addr call, which could allocate.
 */
static __thread int rt_checking __attribute__((tls_model("initial-exec")));

/*
 * Non-zero while the current thread is inside dlsym() for this library.
 * volatile: glibc declares dlsym as a leaf function, which would otherwise
 * let the compiler drop the increment/decrement around the call even though
 * dlsym does re-enter malloc/free here.
 */
static __thread volatile int in_resolve __attribute__((tls_model("initial-exec")));

/* Counts one event. Lock-free and allocation-free; safe on the RT thread. */
static void record_event(enum rt_category cat, const char *name)
{
    atomic_fetch_add_explicit(&event_counts[cat], 1, memory_order_relaxed);
    if (atomic_load_explicit(&first_count, memory_order_relaxed) < FIRST_MAX) {
        unsigned slot =
            atomic_fetch_add_explicit(&first_count, 1, memory_order_relaxed);
        if (slot < FIRST_MAX)
            atomic_store_explicit(&first_names[slot], name,
                                  memory_order_relaxed);
    }
}

/* Counts an event only when the calling thread is inside a checked cycle. */
#define RT_CHECK(cat, name)                                                  \
    do {                                                                     \
        if (__builtin_expect(rt_checking, 0))                                \
            record_event((cat), (name));                                     \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Resolution of the real functions                                          */
/* ------------------------------------------------------------------------ */

static void *lookup_next(const char *symbol)
{
    in_resolve++;
    atomic_signal_fence(memory_order_seq_cst);
    void *fn = dlsym(RTLD_NEXT, symbol);
    atomic_signal_fence(memory_order_seq_cst);
    in_resolve--;
    return fn;
}

/*
 * DEFINE_REAL(name, type, guarded) declares real_<name> and get_<name>().
 * get_<name>() returns the next definition of <name>, resolving it on first
 * use. With guarded != 0 it returns NULL instead of re-entering dlsym while
 * this thread is already resolving; allocator wrappers then fall back to the
 * bootstrap buffer. Unguarded getters are for functions dlsym does not call.
 */
#define DEFINE_REAL(name, type, guarded)                                     \
    static _Atomic(type) real_##name;                                        \
    static type get_##name(void)                                             \
    {                                                                        \
        type fn = atomic_load_explicit(&real_##name, memory_order_relaxed);  \
        if (__builtin_expect(fn == NULL, 0) && !((guarded) && in_resolve)) { \
            fn = (type)lookup_next(#name);                                   \
            if (fn != NULL)                                                  \
                atomic_store_explicit(&real_##name, fn,                      \
                                      memory_order_relaxed);                 \
        }                                                                    \
        return fn;                                                           \
    }

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*aligned_alloc_fn)(size_t, size_t);
typedef size_t (*malloc_usable_size_fn)(void *);
typedef int (*mutex_fn)(pthread_mutex_t *);
typedef int (*rwlock_fn)(pthread_rwlock_t *);
typedef int (*cond_wait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*cond_timedwait_fn)(pthread_cond_t *, pthread_mutex_t *,
                                 const struct timespec *);
typedef ssize_t (*write_fn)(int, const void *, size_t);

DEFINE_REAL(malloc, malloc_fn, 1)
DEFINE_REAL(calloc, calloc_fn, 1)
DEFINE_REAL(realloc, realloc_fn, 1)
DEFINE_REAL(free, free_fn, 1)
DEFINE_REAL(posix_memalign, posix_memalign_fn, 1)
DEFINE_REAL(aligned_alloc, aligned_alloc_fn, 1)
DEFINE_REAL(memalign, aligned_alloc_fn, 1)
DEFINE_REAL(valloc, malloc_fn, 1)
DEFINE_REAL(pvalloc, malloc_fn, 1)
DEFINE_REAL(malloc_usable_size, malloc_usable_size_fn, 1)
DEFINE_REAL(pthread_mutex_lock, mutex_fn, 0)
DEFINE_REAL(pthread_mutex_trylock, mutex_fn, 0)
DEFINE_REAL(pthread_rwlock_rdlock, rwlock_fn, 0)
DEFINE_REAL(pthread_rwlock_wrlock, rwlock_fn, 0)
DEFINE_REAL(pthread_cond_wait, cond_wait_fn, 0)
DEFINE_REAL(pthread_cond_timedwait, cond_timedwait_fn, 0)
DEFINE_REAL(write, write_fn, 0)

/* ------------------------------------------------------------------------ */
/* Bootstrap allocator                                                       */
/* ------------------------------------------------------------------------ */

/*
 * Serves allocations made before the real allocator is resolved (by dlsym,
 * or by the dynamic loader before this library's constructor). Memory is
 * never reused, so it is zero-filled as calloc requires. Each block is
 * preceded by its size for realloc and malloc_usable_size.
 */
#define BOOT_SIZE (256 * 1024)
#define BOOT_HEADER 16
#define BOOT_MAX_ALIGN 4096

static unsigned char boot_heap[BOOT_SIZE] __attribute__((aligned(BOOT_MAX_ALIGN)));
static atomic_size_t boot_top;

static int is_boot_ptr(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uintptr_t base = (uintptr_t)boot_heap;
    return a >= base && a < base + BOOT_SIZE;
}

/* Returns NULL (errno ENOMEM or EINVAL) when the request cannot be served. */
static void *boot_alloc(size_t size, size_t align)
{
    if (align < BOOT_HEADER)
        align = BOOT_HEADER;
    if ((align & (align - 1)) != 0 || align > BOOT_MAX_ALIGN) {
        errno = EINVAL;
        return NULL;
    }
    if (size > BOOT_SIZE) {
        errno = ENOMEM;
        return NULL;
    }
    uintptr_t base = (uintptr_t)boot_heap;
    size_t top = atomic_load_explicit(&boot_top, memory_order_relaxed);
    for (;;) {
        uintptr_t start = (base + top + BOOT_HEADER + align - 1) &
                          ~(uintptr_t)(align - 1);
        size_t end = (size_t)(start - base) + size;
        if (end > BOOT_SIZE) {
            errno = ENOMEM;
            return NULL;
        }
        if (atomic_compare_exchange_weak_explicit(&boot_top, &top, end,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed)) {
            ((size_t *)start)[-1] = size;
            return (void *)start;
        }
    }
}

static size_t boot_block_size(const void *p)
{
    return ((const size_t *)p)[-1];
}

/* Uncounted allocation: real malloc when known, else the bootstrap buffer. */
static void *alloc_uncounted(size_t size)
{
    malloc_fn fn = get_malloc();
    return fn != NULL ? fn(size) : boot_alloc(size, BOOT_HEADER);
}

/* ------------------------------------------------------------------------ */
/* Allocator wrappers                                                        */
/*                                                                           */
/* Counted when flagged, then forwarded. free(NULL) is a no-op and is not    */
/* counted. Pointers inside the bootstrap buffer are never passed on. While  */
/* a thread is resolving its first real allocator symbol, its allocations    */
/* come from the bootstrap buffer and its frees of heap memory (dlerror      */
/* buffers) are dropped rather than re-entering dlsym.                       */
/* ------------------------------------------------------------------------ */

RTCHECK_EXPORT void *malloc(size_t size)
{
    RT_CHECK(CAT_MALLOC, "malloc");
    malloc_fn fn = get_malloc();
    if (__builtin_expect(fn == NULL, 0))
        return boot_alloc(size, BOOT_HEADER);
    return fn(size);
}

RTCHECK_EXPORT void *calloc(size_t count, size_t size)
{
    RT_CHECK(CAT_CALLOC, "calloc");
    calloc_fn fn = get_calloc();
    if (__builtin_expect(fn == NULL, 0)) {
        size_t total;
        if (__builtin_mul_overflow(count, size, &total)) {
            errno = ENOMEM;
            return NULL;
        }
        return boot_alloc(total, BOOT_HEADER);
    }
    return fn(count, size);
}

RTCHECK_EXPORT void *realloc(void *ptr, size_t size)
{
    RT_CHECK(CAT_REALLOC, "realloc");
    if (ptr != NULL && is_boot_ptr(ptr)) {
        /* Move out of the bootstrap buffer; the old block is abandoned. */
        void *moved = alloc_uncounted(size);
        if (moved != NULL) {
            size_t old = boot_block_size(ptr);
            memcpy(moved, ptr, old < size ? old : size);
        }
        return moved;
    }
    realloc_fn fn = get_realloc();
    if (__builtin_expect(fn == NULL, 0)) {
        if (ptr == NULL)
            return boot_alloc(size, BOOT_HEADER);
        errno = ENOMEM;
        return NULL;
    }
    return fn(ptr, size);
}

RTCHECK_EXPORT void free(void *ptr)
{
    if (ptr == NULL)
        return;
    RT_CHECK(CAT_FREE, "free");
    if (is_boot_ptr(ptr))
        return;
    free_fn fn = get_free();
    if (fn != NULL)
        fn(ptr);
}

RTCHECK_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    RT_CHECK(CAT_MEMALIGN, "posix_memalign");
    posix_memalign_fn fn = get_posix_memalign();
    if (__builtin_expect(fn == NULL, 0)) {
        if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0)
            return EINVAL;
        void *p = boot_alloc(size, align);
        if (p == NULL)
            return ENOMEM;
        *out = p;
        return 0;
    }
    return fn(out, align, size);
}

RTCHECK_EXPORT void *aligned_alloc(size_t align, size_t size)
{
    RT_CHECK(CAT_MEMALIGN, "aligned_alloc");
    aligned_alloc_fn fn = get_aligned_alloc();
    if (__builtin_expect(fn == NULL, 0))
        return boot_alloc(size, align);
    return fn(align, size);
}

RTCHECK_EXPORT void *memalign(size_t align, size_t size)
{
    RT_CHECK(CAT_MEMALIGN, "memalign");
    aligned_alloc_fn fn = get_memalign();
    if (__builtin_expect(fn == NULL, 0))
        return boot_alloc(size, align);
    return fn(align, size);
}

RTCHECK_EXPORT void *valloc(size_t size)
{
    RT_CHECK(CAT_MEMALIGN, "valloc");
    malloc_fn fn = get_valloc();
    if (__builtin_expect(fn == NULL, 0))
        return boot_alloc(size, BOOT_MAX_ALIGN);
    return fn(size);
}

RTCHECK_EXPORT void *pvalloc(size_t size)
{
    RT_CHECK(CAT_MEMALIGN, "pvalloc");
    malloc_fn fn = get_pvalloc();
    if (__builtin_expect(fn == NULL, 0)) {
        size_t rounded = (size + BOOT_MAX_ALIGN - 1) & ~(size_t)(BOOT_MAX_ALIGN - 1);
        return boot_alloc(rounded, BOOT_MAX_ALIGN);
    }
    return fn(size);
}

/* Not counted (it neither allocates nor locks); answers for boot blocks. */
RTCHECK_EXPORT size_t malloc_usable_size(void *ptr)
{
    if (ptr != NULL && is_boot_ptr(ptr))
        return boot_block_size(ptr);
    malloc_usable_size_fn fn = get_malloc_usable_size();
    return fn != NULL ? fn(ptr) : 0;
}

/* ------------------------------------------------------------------------ */
/* Lock and condition-variable wrappers                                      */
/*                                                                           */
/* Counted when flagged, then forwarded. trylock is counted as "mutex"       */
/* too: it still touches a lock shared with non-RT threads.                  */
/* ------------------------------------------------------------------------ */

RTCHECK_EXPORT int pthread_mutex_lock(pthread_mutex_t *mutex)
{
    RT_CHECK(CAT_MUTEX, "pthread_mutex_lock");
    mutex_fn fn = get_pthread_mutex_lock();
    return fn != NULL ? fn(mutex) : ENOSYS;
}

RTCHECK_EXPORT int pthread_mutex_trylock(pthread_mutex_t *mutex)
{
    RT_CHECK(CAT_MUTEX, "pthread_mutex_trylock");
    mutex_fn fn = get_pthread_mutex_trylock();
    return fn != NULL ? fn(mutex) : ENOSYS;
}

RTCHECK_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *lock)
{
    RT_CHECK(CAT_RWLOCK, "pthread_rwlock_rdlock");
    rwlock_fn fn = get_pthread_rwlock_rdlock();
    return fn != NULL ? fn(lock) : ENOSYS;
}

RTCHECK_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *lock)
{
    RT_CHECK(CAT_RWLOCK, "pthread_rwlock_wrlock");
    rwlock_fn fn = get_pthread_rwlock_wrlock();
    return fn != NULL ? fn(lock) : ENOSYS;
}

RTCHECK_EXPORT int pthread_cond_wait(pthread_cond_t *cond,
                                     pthread_mutex_t *mutex)
{
    RT_CHECK(CAT_CONDWAIT, "pthread_cond_wait");
    cond_wait_fn fn = get_pthread_cond_wait();
    return fn != NULL ? fn(cond, mutex) : ENOSYS;
}

RTCHECK_EXPORT int pthread_cond_timedwait(pthread_cond_t *cond,
                                          pthread_mutex_t *mutex,
                                          const struct timespec *abstime)
{
    RT_CHECK(CAT_CONDWAIT, "pthread_cond_timedwait");
    cond_timedwait_fn fn = get_pthread_cond_timedwait();
    return fn != NULL ? fn(cond, mutex, abstime) : ENOSYS;
}

/* ------------------------------------------------------------------------ */
/* I/O wrapper                                                               */
/*                                                                           */
/* Only direct write() calls are seen; stdio writes inside libc use an       */
/* internal alias and are not.                                               */
/* ------------------------------------------------------------------------ */

RTCHECK_EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
    RT_CHECK(CAT_WRITE, "write");
    write_fn fn = get_write();
    if (__builtin_expect(fn == NULL, 0)) {
        errno = ENOSYS;
        return -1;
    }
    return fn(fd, buf, count);
}

/* ------------------------------------------------------------------------ */
/* Swift runtime wrappers                                                    */
/*                                                                           */
/* These are only reached by code linked against libswiftCore, so the next   */
/* definition exists; the NULL fallbacks keep a broken setup from crashing   */
/* here. swift_retain/release and the bridgeObject variants use the C        */
/* calling convention for external callers. swift_allocBox is swiftcc; for   */
/* its one pointer argument and two-pointer result, swiftcc and the C ABI    */
/* use the same registers on x86_64 (rdi -> rax:rdx) and arm64 (x0 -> x0:x1).*/
/* Null retain/release calls are no-ops in the runtime and are not counted.  */
/* ------------------------------------------------------------------------ */

typedef struct {
    void *object;
    void *buffer;
} rtcheck_box_pair;

typedef void *(*swift_allocObject_fn)(const void *, size_t, size_t);
typedef void *(*swift_slowAlloc_fn)(size_t, size_t);
typedef rtcheck_box_pair (*swift_allocBox_fn)(const void *);
typedef void *(*swift_retain_fn)(void *);
typedef void (*swift_release_fn)(void *);

DEFINE_REAL(swift_allocObject, swift_allocObject_fn, 0)
DEFINE_REAL(swift_slowAlloc, swift_slowAlloc_fn, 0)
DEFINE_REAL(swift_allocBox, swift_allocBox_fn, 0)
DEFINE_REAL(swift_retain, swift_retain_fn, 0)
DEFINE_REAL(swift_release, swift_release_fn, 0)
DEFINE_REAL(swift_bridgeObjectRetain, swift_retain_fn, 0)
DEFINE_REAL(swift_bridgeObjectRelease, swift_release_fn, 0)

RTCHECK_EXPORT void *swift_allocObject(const void *metadata, size_t size,
                                       size_t align_mask);
RTCHECK_EXPORT void *swift_slowAlloc(size_t size, size_t align_mask);
RTCHECK_EXPORT rtcheck_box_pair swift_allocBox(const void *type);
RTCHECK_EXPORT void *swift_retain(void *object);
RTCHECK_EXPORT void swift_release(void *object);
RTCHECK_EXPORT void *swift_bridgeObjectRetain(void *object);
RTCHECK_EXPORT void swift_bridgeObjectRelease(void *object);

void *swift_allocObject(const void *metadata, size_t size, size_t align_mask)
{
    RT_CHECK(CAT_SWIFT_ALLOC, "swift_allocObject");
    swift_allocObject_fn fn = get_swift_allocObject();
    return fn != NULL ? fn(metadata, size, align_mask) : NULL;
}

void *swift_slowAlloc(size_t size, size_t align_mask)
{
    RT_CHECK(CAT_SWIFT_ALLOC, "swift_slowAlloc");
    swift_slowAlloc_fn fn = get_swift_slowAlloc();
    return fn != NULL ? fn(size, align_mask) : NULL;
}

rtcheck_box_pair swift_allocBox(const void *type)
{
    RT_CHECK(CAT_SWIFT_ALLOC, "swift_allocBox");
    swift_allocBox_fn fn = get_swift_allocBox();
    if (fn != NULL)
        return fn(type);
    rtcheck_box_pair none = {NULL, NULL};
    return none;
}

void *swift_retain(void *object)
{
    if (object != NULL)
        RT_CHECK(CAT_SWIFT_RETAIN, "swift_retain");
    swift_retain_fn fn = get_swift_retain();
    return fn != NULL ? fn(object) : object;
}

void swift_release(void *object)
{
    if (object != NULL)
        RT_CHECK(CAT_SWIFT_RELEASE, "swift_release");
    swift_release_fn fn = get_swift_release();
    if (fn != NULL)
        fn(object);
}

void *swift_bridgeObjectRetain(void *object)
{
    if (object != NULL)
        RT_CHECK(CAT_SWIFT_RETAIN, "swift_bridgeObjectRetain");
    swift_retain_fn fn = get_swift_bridgeObjectRetain();
    return fn != NULL ? fn(object) : object;
}

void swift_bridgeObjectRelease(void *object)
{
    if (object != NULL)
        RT_CHECK(CAT_SWIFT_RELEASE, "swift_bridgeObjectRelease");
    swift_release_fn fn = get_swift_bridgeObjectRelease();
    if (fn != NULL)
        fn(object);
}

/* ------------------------------------------------------------------------ */
/* Report                                                                    */
/* ------------------------------------------------------------------------ */

static size_t put_str(char *buf, size_t pos, size_t cap, const char *s)
{
    while (*s != '\0' && pos + 1 < cap)
        buf[pos++] = *s++;
    return pos;
}

static size_t put_ulong(char *buf, size_t pos, size_t cap, unsigned long v)
{
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0 && pos + 1 < cap)
        buf[pos++] = digits[--n];
    return pos;
}

/* Writes all of buf with the real write(); gives up on a hard error. */
static void write_all(int fd, const char *buf, size_t len)
{
    write_fn fn = get_write();
    if (fn == NULL)
        return;
    while (len > 0) {
        ssize_t n = fn(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        buf += n;
        len -= (size_t)n;
    }
}

/*
 * Emits one report line to RTCHECK_REPORT (appended) or stderr. Runs on
 * control threads only (close, exit); the line is built on the stack and
 * written with a single write so concurrent appenders do not interleave.
 */
static void report(void)
{
    char line[1024];
    const size_t cap = sizeof line;
    size_t pos = 0;
    unsigned long counts[CAT_COUNT];
    unsigned long total = 0;

    for (int i = 0; i < CAT_COUNT; i++) {
        counts[i] = atomic_load_explicit(&event_counts[i], memory_order_relaxed);
        total += counts[i];
    }

    pos = put_str(line, pos, cap, "rtcheck cycles=");
    pos = put_ulong(line, pos, cap,
                    atomic_load_explicit(&cycle_count, memory_order_relaxed));
    pos = put_str(line, pos, cap, " events=");
    pos = put_ulong(line, pos, cap, total);
    for (int i = 0; i < CAT_COUNT; i++) {
        pos = put_str(line, pos, cap, " ");
        pos = put_str(line, pos, cap, category_keys[i]);
        pos = put_str(line, pos, cap, "=");
        pos = put_ulong(line, pos, cap, counts[i]);
    }
    pos = put_str(line, pos, cap, " first=");
    unsigned n = atomic_load_explicit(&first_count, memory_order_relaxed);
    if (n > FIRST_MAX)
        n = FIRST_MAX;
    int listed = 0;
    for (unsigned i = 0; i < n; i++) {
        const char *name =
            atomic_load_explicit(&first_names[i], memory_order_relaxed);
        if (name == NULL)
            continue;
        if (listed++)
            pos = put_str(line, pos, cap, ",");
        pos = put_str(line, pos, cap, name);
    }
    if (!listed)
        pos = put_str(line, pos, cap, "-");
    line[pos++] = '\n';

    int saved_errno = errno;
    int fd = STDERR_FILENO;
    if (report_path[0] != '\0') {
        fd = open(report_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            fd = STDERR_FILENO;
    }
    write_all(fd, line, pos);
    if (fd != STDERR_FILENO)
        close(fd);
    errno = saved_errno;
}

/* ------------------------------------------------------------------------ */
/* JACK wrappers                                                             */
/*                                                                           */
/* jack_set_process_callback() registers trampoline() with libjack instead   */
/* of the caller's callback, passing the table slot as its argument.         */
/* The table is only modified on control threads, under a spin lock, and     */
/* only for clients that are not active (libjack rejects callback changes    */
/* on active clients), so the RT thread reads slots without synchronisation  */
/* beyond what client activation already provides.                           */
/* ------------------------------------------------------------------------ */

typedef int (*JackProcessCallback)(uint32_t nframes, void *arg);
typedef int (*jack_set_process_callback_fn)(void *client,
                                            JackProcessCallback callback,
                                            void *arg);
typedef int (*jack_client_close_fn)(void *client);

DEFINE_REAL(jack_set_process_callback, jack_set_process_callback_fn, 0)
DEFINE_REAL(jack_client_close, jack_client_close_fn, 0)

RTCHECK_EXPORT int jack_set_process_callback(void *client,
                                             JackProcessCallback callback,
                                             void *arg);
RTCHECK_EXPORT int jack_client_close(void *client);

#define SLOT_MAX 16

struct callback_slot {
    int used;
    void *client;
    JackProcessCallback callback;
    void *arg;
};

static struct callback_slot slots[SLOT_MAX];
static atomic_flag slots_busy = ATOMIC_FLAG_INIT;

static void slots_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&slots_busy, memory_order_acquire))
        sched_yield();
}

static void slots_unlock(void)
{
    atomic_flag_clear_explicit(&slots_busy, memory_order_release);
}

/* Claims a free slot for (client, callback, arg); NULL when the table is full. */
static struct callback_slot *slot_claim(void *client, JackProcessCallback callback,
                                        void *arg)
{
    struct callback_slot *found = NULL;
    slots_lock();
    for (int i = 0; i < SLOT_MAX; i++) {
        if (!slots[i].used) {
            found = &slots[i];
            found->used = 1;
            found->client = client;
            found->callback = callback;
            found->arg = arg;
            break;
        }
    }
    slots_unlock();
    return found;
}

/* Frees every slot of client except keep (which may be NULL). */
static void slots_release_client(void *client, const struct callback_slot *keep)
{
    slots_lock();
    for (int i = 0; i < SLOT_MAX; i++) {
        if (slots[i].used && slots[i].client == client && &slots[i] != keep)
            slots[i].used = 0;
    }
    slots_unlock();
}

static void slot_release(struct callback_slot *slot)
{
    slots_lock();
    slot->used = 0;
    slots_unlock();
}

/*
 * The process callback libjack actually calls. Marks this thread for the
 * duration of the user's callback (unless still within RTCHECK_SKIP_CYCLES)
 * and counts the cycle. Contains no allocation, lock or I/O.
 */
static int trampoline(uint32_t nframes, void *arg)
{
    const struct callback_slot *slot = arg;
    unsigned long cycle =
        atomic_fetch_add_explicit(&cycle_count, 1, memory_order_relaxed) + 1;
    int saved = rt_checking;
    rt_checking = cycle > skip_cycles;
    int result = slot->callback(nframes, slot->arg);
    rt_checking = saved;
    return result;
}

int jack_set_process_callback(void *client, JackProcessCallback callback,
                              void *arg)
{
    jack_set_process_callback_fn real = get_jack_set_process_callback();
    if (real == NULL)
        return -1;

    if (callback == NULL) {
        int rc = real(client, callback, arg);
        if (rc == 0)
            slots_release_client(client, NULL);
        return rc;
    }

    struct callback_slot *slot = slot_claim(client, callback, arg);
    if (slot == NULL) {
        static const char msg[] =
            "rtcheck: callback table full; process callback not checked\n";
        write_all(STDERR_FILENO, msg, sizeof msg - 1);
        return real(client, callback, arg);
    }

    int rc = real(client, trampoline, slot);
    if (rc == 0) {
        slots_release_client(client, slot);
        atomic_fetch_add_explicit(&registration_count, 1, memory_order_relaxed);
    } else {
        slot_release(slot);
    }
    return rc;
}

/* Forwards the close, frees the client's slots, then writes the report. */
int jack_client_close(void *client)
{
    jack_client_close_fn real = get_jack_client_close();
    int rc = real != NULL ? real(client) : -1;
    slots_release_client(client, NULL);
    if (atomic_load_explicit(&registration_count, memory_order_relaxed) > 0)
        report();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Public API, constructor and destructor                                    */
/* ------------------------------------------------------------------------ */

RTCHECK_EXPORT int rtcheck_is_loaded(void)
{
    return 1;
}

/*
 * Resolves every forwarded symbol up front so that no dlsym call (which may
 * allocate and lock) happens later on a real-time thread, then reads the
 * environment. Symbols absent from the process (JACK or Swift in unrelated
 * programs) stay NULL and are retried lazily; the dlerror state left by
 * those failed lookups is cleared.
 */
__attribute__((constructor)) static void rtcheck_init(void)
{
    (void)get_malloc();
    (void)get_calloc();
    (void)get_realloc();
    (void)get_free();
    (void)get_posix_memalign();
    (void)get_aligned_alloc();
    (void)get_memalign();
    (void)get_valloc();
    (void)get_pvalloc();
    (void)get_malloc_usable_size();
    (void)get_pthread_mutex_lock();
    (void)get_pthread_mutex_trylock();
    (void)get_pthread_rwlock_rdlock();
    (void)get_pthread_rwlock_wrlock();
    (void)get_pthread_cond_wait();
    (void)get_pthread_cond_timedwait();
    (void)get_write();
    (void)get_swift_allocObject();
    (void)get_swift_slowAlloc();
    (void)get_swift_allocBox();
    (void)get_swift_retain();
    (void)get_swift_release();
    (void)get_swift_bridgeObjectRetain();
    (void)get_swift_bridgeObjectRelease();
    (void)get_jack_set_process_callback();
    (void)get_jack_client_close();
    (void)dlerror();

    const char *skip = getenv("RTCHECK_SKIP_CYCLES");
    if (skip != NULL && *skip != '\0') {
        char *end = NULL;
        unsigned long n = strtoul(skip, &end, 10);
        if (end != NULL && *end == '\0' && skip[0] != '-')
            skip_cycles = n;
    }

    const char *path = getenv("RTCHECK_REPORT");
    if (path != NULL && strlen(path) < sizeof report_path)
        memcpy(report_path, path, strlen(path) + 1);
}

/* Final report at exit, for processes that registered a process callback. */
__attribute__((destructor)) static void rtcheck_fini(void)
{
    if (atomic_load_explicit(&registration_count, memory_order_relaxed) > 0)
        report();
}
