#ifndef TANDEM_LV2HOST_H
#define TANDEM_LV2HOST_H

/*
 * The parts of an LV2 host that must be C: the URID map (a callback table the plugin keeps), the log feature
 * (a variadic printf), and the worker (a lock-free request/response queue the plugin calls from its run()).
 * Everything else about hosting lives in Swift (the Plugins module).
 */

#include <stdint.h>
#include <lv2/core/lv2.h>
#include <lv2/log/log.h>
#include <lv2/urid/urid.h>
#include <lv2/worker/worker.h>

#ifdef __cplusplus
extern "C" {
#endif

/* URID map and unmap. Thread-safe (a mutex); plugins map URIs when instantiated, never in run(). */
typedef struct LV2HostURIDs LV2HostURIDs;
LV2HostURIDs *lv2host_urids_new(void);
void lv2host_urids_free(LV2HostURIDs *urids);
LV2_URID_Map *lv2host_urids_map(LV2HostURIDs *urids);
LV2_URID_Unmap *lv2host_urids_unmap(LV2HostURIDs *urids);
LV2_URID lv2host_urid(LV2HostURIDs *urids, const char *uri);

/* The log feature: messages go to stderr, prefixed with the plugin's name. Errors and warnings are counted. */
typedef struct LV2HostLog LV2HostLog;
LV2HostLog *lv2host_log_new(LV2HostURIDs *urids, const char *label);
void lv2host_log_free(LV2HostLog *log);
LV2_Log_Log *lv2host_log_feature(LV2HostLog *log);
uint64_t lv2host_log_errors(LV2HostLog *log);

/*
 * The worker extension for one plugin instance.
 *
 * The plugin calls schedule_work from one thread at a time: from run() on the process thread once the instance is
 * live, or from the control thread before that (state restore). Requests go through a single-producer ring to a
 * worker thread, which calls the plugin's work(); its responses go through a second ring back to the process thread,
 * where lv2host_worker_deliver hands them to work_response() and then calls end_run().
 */
typedef struct LV2HostWorker LV2HostWorker;
/* ring_bytes: size of each ring (a power of two is used). */
LV2HostWorker *lv2host_worker_new(uint32_t ring_bytes);
LV2_Worker_Schedule *lv2host_worker_schedule_feature(LV2HostWorker *worker);
/* Once the instance exists: its handle and its worker interface. Starts the worker thread. Returns 0 on success. */
int lv2host_worker_start(LV2HostWorker *worker, LV2_Handle instance, const LV2_Worker_Interface *iface);
/* Process thread, right after run(). Realtime: safe (no allocation, no lock). */
void lv2host_worker_deliver(LV2HostWorker *worker);
/* Requests and responses dropped because a ring was full. */
uint64_t lv2host_worker_dropped(LV2HostWorker *worker);
/* Requests the worker thread has handled. */
uint64_t lv2host_worker_handled(LV2HostWorker *worker);
/* Stops the thread (after the process thread no longer runs the instance) and frees. */
void lv2host_worker_free(LV2HostWorker *worker);

/*
 * Floating point mode for running plugins: flush-to-zero and denormals-are-zero on (x86 MXCSR FTZ|DAZ, AArch64
 * FPCR.FZ). lv2host_fp_enter returns the thread's mode before, lv2host_fp_leave puts it back. Realtime: safe.
 */
uint64_t lv2host_fp_enter(void);
void lv2host_fp_leave(uint64_t mode);

#ifdef __cplusplus
}
#endif
#endif
