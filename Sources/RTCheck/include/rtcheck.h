/*
 * rtcheck.h - public header of libRTCheck, an LD_PRELOAD real-time-safety
 * checker for JACK process callbacks.
 *
 * The library does its work by symbol interposition; nothing needs to be
 * called. Load it into the program under test:
 *
 *   LD_PRELOAD=/path/to/libRTCheck.so RTCHECK_REPORT=/tmp/rtcheck.txt tandem ...
 *
 * Environment:
 *   RTCHECK_REPORT       File to append the report line to (O_APPEND|O_CREAT).
 *                        Unset or empty: the line goes to stderr.
 *   RTCHECK_SKIP_CYCLES  Ignore events during the first N process-callback
 *                        invocations of the process (default 0).
 *
 * Report line (one per jack_client_close and one at process exit, only in
 * processes that registered a process callback; read the last line):
 *
 *   rtcheck cycles=N events=N malloc=N calloc=N realloc=N free=N memalign=N
 *   mutex=N rwlock=N condwait=N write=N swift_alloc=N swift_retain=N
 *   swift_release=N first=name,name,...|-
 *
 * The program is real-time safe under the checked rules when cycles > 0 and
 * events == 0.
 *
 * This library must only ever be preloaded. Do not link it into the program:
 * it replaces malloc, free, pthread_mutex_lock, write and others.
 */
#ifndef RTCHECK_H
#define RTCHECK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Returns 1. Lets a caller confirm that the library is linked or loaded. */
int rtcheck_is_loaded(void);

#ifdef __cplusplus
}
#endif

#endif /* RTCHECK_H */
