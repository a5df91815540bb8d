#ifndef TANDEM_LV2HOST_H
#define TANDEM_LV2HOST_H

/*
 * The parts of an LV2 host that must be C: the URID map (a callback table the plugin keeps), the log feature
 * (a variadic printf), and the worker (a lock-free request/response queue the plugin calls from its run()).
 * Everything else about hosting lives in Swift (the Plugins module).
 */

#include <stdint.h>
#include <lv2/core/lv2.h>
#include <lv2/atom/atom.h>
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

/*
 * Runs a plugin instance for `frames` frames on a scrubbed stack: the 1 KiB below this call, where the plugin's
 * run() frame will lie, is zeroed first. A plugin that reads a local it has not written (swh's chebstortion and
 * harmonicGen keep their polynomial in a local array that is computed only every fifth sample, across run() calls)
 * then reads 0 instead of whatever the host's last call left there: 1e15-1e28 out of a DC filter in Tandem, a small
 * value by luck in jalv. Realtime: safe (stack only; about 40 ns).
 */
void lv2host_run(void (*run)(void *handle, uint32_t frames), void *handle, uint32_t frames);

/*
 * Atom sequences of MIDI (and other) events, in buffers of `capacity` bytes (the LV2_Atom_Sequence header
 * included), as the host fills plugins' atom inputs and reads their atom outputs. Every function is
 * Realtime: safe (no allocation, no lock), and reads a sequence only within `capacity`, whatever its atom.size says.
 */
/* Makes `seq` an empty sequence (frame-stamped). */
void lv2host_seq_clear(void *seq, uint32_t sequence_urid);
/* Inserts an event at its frame (after the events of the same frame); -1 when it does not fit (nothing written). */
int lv2host_seq_insert(void *seq, uint32_t capacity, int64_t frame, uint32_t type, uint32_t size, const void *body);
/* The event at `*cursor` (0 for the first), advancing the cursor; 0 at the end or at a malformed event. */
int lv2host_seq_event(const void *seq, uint32_t capacity, uint32_t *cursor, int64_t *frame, uint32_t *type,
                      uint32_t *size, const uint8_t **body);
/* Inserts the MIDI events of `src` whose channel is in `channel_mask` (bit n: channel n + 1; system messages always
   pass) into `dst` at their frames. Returns the events copied; `*dropped` grows by those that did not fit. */
uint32_t lv2host_seq_copy_midi(void *dst, uint32_t dst_capacity, const void *src, uint32_t src_capacity,
                               uint32_t midi_urid, uint32_t channel_mask, uint32_t *dropped);
/* Inserts, at frame 0, sustain off, All Notes Off and All Sound Off for each channel in `channel_mask`. */
uint32_t lv2host_seq_notes_off(void *dst, uint32_t dst_capacity, uint32_t midi_urid, uint32_t channel_mask,
                               uint32_t *dropped);

/* time:Position as the host tells it to plugins (LV2 time extension). */
typedef struct {
    uint32_t object, long_, float_, int_;
    uint32_t position, frame, speed, bar, bar_beat, beat_unit, beats_per_bar, beats_per_minute;
} LV2HostTimeURIDs;
typedef struct {
    int64_t frame;
    float speed;          /* 1 rolling, 0 stopped */
    int64_t bar;          /* from 0 */
    float bar_beat;       /* beat within the bar, from 0, with its fraction */
    int32_t beat_unit;
    float beats_per_bar;
    float beats_per_minute;
    int32_t has_bbt;      /* 0: frame and speed only */
} LV2HostTimePosition;
/* Inserts a time:Position object at frame 0 (before the events already there). -1 when it does not fit. */
int lv2host_seq_time_position(void *seq, uint32_t capacity, const LV2HostTimeURIDs *urids,
                              const LV2HostTimePosition *position);

#ifdef __cplusplus
}
#endif
#endif
