#define _GNU_SOURCE
#include "lv2host.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- URID map ---------------------------------------------------------------------------------------------- */

struct LV2HostURIDs {
    pthread_mutex_t lock;
    char **uris;          /* uris[i] has URID i + 1 */
    uint32_t count, capacity;
    LV2_URID_Map map;
    LV2_URID_Unmap unmap;
};

static LV2_URID urid_map(LV2_URID_Map_Handle handle, const char *uri) {
    LV2HostURIDs *u = handle;
    if (!uri) return 0;
    pthread_mutex_lock(&u->lock);
    for (uint32_t i = 0; i < u->count; ++i) {
        if (strcmp(u->uris[i], uri) == 0) {
            pthread_mutex_unlock(&u->lock);
            return i + 1;
        }
    }
    if (u->count == u->capacity) {
        uint32_t capacity = u->capacity ? u->capacity * 2 : 256;
        char **grown = realloc(u->uris, capacity * sizeof(char *));
        if (!grown) {
            pthread_mutex_unlock(&u->lock);
            return 0;
        }
        u->uris = grown;
        u->capacity = capacity;
    }
    char *copy = strdup(uri);
    if (!copy) {
        pthread_mutex_unlock(&u->lock);
        return 0;
    }
    u->uris[u->count++] = copy;
    LV2_URID id = u->count;
    pthread_mutex_unlock(&u->lock);
    return id;
}

static const char *urid_unmap(LV2_URID_Unmap_Handle handle, LV2_URID urid) {
    LV2HostURIDs *u = handle;
    const char *uri = NULL;
    pthread_mutex_lock(&u->lock);
    if (urid >= 1 && urid <= u->count) uri = u->uris[urid - 1];
    pthread_mutex_unlock(&u->lock);
    return uri;
}

LV2HostURIDs *lv2host_urids_new(void) {
    LV2HostURIDs *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    pthread_mutex_init(&u->lock, NULL);
    u->map.handle = u;
    u->map.map = urid_map;
    u->unmap.handle = u;
    u->unmap.unmap = urid_unmap;
    return u;
}

void lv2host_urids_free(LV2HostURIDs *u) {
    if (!u) return;
    for (uint32_t i = 0; i < u->count; ++i) free(u->uris[i]);
    free(u->uris);
    pthread_mutex_destroy(&u->lock);
    free(u);
}

LV2_URID_Map *lv2host_urids_map(LV2HostURIDs *u) { return &u->map; }
LV2_URID_Unmap *lv2host_urids_unmap(LV2HostURIDs *u) { return &u->unmap; }
LV2_URID lv2host_urid(LV2HostURIDs *u, const char *uri) { return urid_map(u, uri); }

/* ---- Log ----------------------------------------------------------------------------------------------------- */

struct LV2HostLog {
    LV2_Log_Log feature;
    char *label;
    LV2_URID error, warning, note, trace;
    int trace_enabled;
    _Atomic uint64_t errors;
};

static int log_vprintf(LV2_Log_Handle handle, LV2_URID type, const char *fmt, va_list ap) {
    LV2HostLog *l = handle;
    const char *kind = "note";
    if (type == l->error) {
        kind = "error";
        atomic_fetch_add(&l->errors, 1);
    } else if (type == l->warning) {
        kind = "warning";
    } else if (type == l->trace) {
        if (!l->trace_enabled) return 0;
        kind = "trace";
    }
    int n = fprintf(stderr, "tandem: plugin %s: %s: ", l->label, kind);
    n += vfprintf(stderr, fmt, ap);
    size_t len = strlen(fmt);
    if (len == 0 || fmt[len - 1] != '\n') n += fprintf(stderr, "\n");
    return n;
}

static int log_printf(LV2_Log_Handle handle, LV2_URID type, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = log_vprintf(handle, type, fmt, ap);
    va_end(ap);
    return n;
}

LV2HostLog *lv2host_log_new(LV2HostURIDs *urids, const char *label) {
    LV2HostLog *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->label = strdup(label ? label : "?");
    l->error = lv2host_urid(urids, LV2_LOG__Error);
    l->warning = lv2host_urid(urids, LV2_LOG__Warning);
    l->note = lv2host_urid(urids, LV2_LOG__Note);
    l->trace = lv2host_urid(urids, LV2_LOG__Trace);
    l->trace_enabled = getenv("TANDEM_LV2_TRACE") != NULL;
    l->feature.handle = l;
    l->feature.printf = log_printf;
    l->feature.vprintf = log_vprintf;
    return l;
}

void lv2host_log_free(LV2HostLog *l) {
    if (!l) return;
    free(l->label);
    free(l);
}

LV2_Log_Log *lv2host_log_feature(LV2HostLog *l) { return &l->feature; }
uint64_t lv2host_log_errors(LV2HostLog *l) { return atomic_load(&l->errors); }

/* ---- Worker -------------------------------------------------------------------------------------------------- */

/* Single-producer/single-consumer byte ring of size-prefixed messages. Positions only grow; size is a power of two. */
typedef struct {
    uint8_t *data;
    uint32_t size;
    _Atomic uint32_t written, read;
} ByteRing;

static int ring_init(ByteRing *r, uint32_t bytes) {
    uint32_t size = 64;
    while (size < bytes) size <<= 1;
    r->data = calloc(size, 1);
    r->size = size;
    atomic_init(&r->written, 0);
    atomic_init(&r->read, 0);
    return r->data ? 0 : -1;
}

static void ring_copy_in(ByteRing *r, uint32_t at, const void *src, uint32_t len) {
    uint32_t start = at & (r->size - 1), first = r->size - start < len ? r->size - start : len;
    memcpy(r->data + start, src, first);
    memcpy(r->data, (const uint8_t *)src + first, len - first);
}

static void ring_copy_out(ByteRing *r, uint32_t at, void *dst, uint32_t len) {
    uint32_t start = at & (r->size - 1), first = r->size - start < len ? r->size - start : len;
    memcpy(dst, r->data + start, first);
    memcpy((uint8_t *)dst + first, r->data, len - first);
}

/* Producer. Returns 0, or -1 when there is no room (nothing written). */
static int ring_push(ByteRing *r, uint32_t len, const void *body) {
    uint32_t w = atomic_load_explicit(&r->written, memory_order_relaxed);
    uint32_t rd = atomic_load_explicit(&r->read, memory_order_acquire);
    if ((uint64_t)len + sizeof len > r->size - (w - rd)) return -1;
    ring_copy_in(r, w, &len, sizeof len);
    ring_copy_in(r, w + sizeof len, body, len);
    atomic_store_explicit(&r->written, w + (uint32_t)sizeof len + len, memory_order_release);
    return 0;
}

/* Consumer. Copies the next message into buf (of r->size bytes); returns its length, or -1 when empty. */
static int64_t ring_pop(ByteRing *r, void *buf) {
    uint32_t rd = atomic_load_explicit(&r->read, memory_order_relaxed);
    uint32_t w = atomic_load_explicit(&r->written, memory_order_acquire);
    if (w == rd) return -1;
    uint32_t len;
    ring_copy_out(r, rd, &len, sizeof len);
    ring_copy_out(r, rd + sizeof len, buf, len);
    atomic_store_explicit(&r->read, rd + (uint32_t)sizeof len + len, memory_order_release);
    return len;
}

struct LV2HostWorker {
    LV2_Worker_Schedule schedule;
    ByteRing requests, responses;
    uint8_t *work_buf;      /* worker thread's copy of a request */
    uint8_t *response_buf;  /* process thread's copy of a response */
    sem_t wake;
    pthread_t thread;
    int started;
    _Atomic int quit;
    LV2_Handle instance;
    const LV2_Worker_Interface *iface;
    _Atomic uint64_t dropped, handled;
};

static LV2_Worker_Status schedule_work(LV2_Worker_Schedule_Handle handle, uint32_t size, const void *data) {
    LV2HostWorker *w = handle;
    if (ring_push(&w->requests, size, data) != 0) {
        atomic_fetch_add_explicit(&w->dropped, 1, memory_order_relaxed);
        return LV2_WORKER_ERR_NO_SPACE;
    }
    sem_post(&w->wake);
    return LV2_WORKER_SUCCESS;
}

static LV2_Worker_Status respond(LV2_Worker_Respond_Handle handle, uint32_t size, const void *data) {
    LV2HostWorker *w = handle;
    if (ring_push(&w->responses, size, data) != 0) {
        atomic_fetch_add_explicit(&w->dropped, 1, memory_order_relaxed);
        return LV2_WORKER_ERR_NO_SPACE;
    }
    return LV2_WORKER_SUCCESS;
}

static void *worker_main(void *arg) {
    LV2HostWorker *w = arg;
    for (;;) {
        while (sem_wait(&w->wake) != 0) {}
        if (atomic_load(&w->quit)) break;
        int64_t len;
        while ((len = ring_pop(&w->requests, w->work_buf)) >= 0) {
            w->iface->work(w->instance, respond, w, (uint32_t)len, w->work_buf);
            atomic_fetch_add_explicit(&w->handled, 1, memory_order_relaxed);
        }
    }
    return NULL;
}

LV2HostWorker *lv2host_worker_new(uint32_t ring_bytes) {
    LV2HostWorker *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    if (ring_init(&w->requests, ring_bytes) || ring_init(&w->responses, ring_bytes)) {
        free(w->requests.data);
        free(w->responses.data);
        free(w);
        return NULL;
    }
    w->work_buf = calloc(w->requests.size, 1);
    w->response_buf = calloc(w->responses.size, 1);
    sem_init(&w->wake, 0, 0);
    w->schedule.handle = w;
    w->schedule.schedule_work = schedule_work;
    return w;
}

LV2_Worker_Schedule *lv2host_worker_schedule_feature(LV2HostWorker *w) { return &w->schedule; }

int lv2host_worker_start(LV2HostWorker *w, LV2_Handle instance, const LV2_Worker_Interface *iface) {
    if (w->started || !iface || !iface->work) return -1;
    w->instance = instance;
    w->iface = iface;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) return -1;
    pthread_setname_np(w->thread, "tandem-lv2-work");
    w->started = 1;
    sem_post(&w->wake);  /* requests made before the thread existed */
    return 0;
}

void lv2host_worker_deliver(LV2HostWorker *w) {
    if (!w->started) return;
    int64_t len;
    while ((len = ring_pop(&w->responses, w->response_buf)) >= 0) {
        if (w->iface->work_response) w->iface->work_response(w->instance, (uint32_t)len, w->response_buf);
    }
    if (w->iface->end_run) w->iface->end_run(w->instance);
}

uint64_t lv2host_worker_dropped(LV2HostWorker *w) { return atomic_load(&w->dropped); }
uint64_t lv2host_worker_handled(LV2HostWorker *w) { return atomic_load(&w->handled); }

void lv2host_worker_free(LV2HostWorker *w) {
    if (!w) return;
    if (w->started) {
        atomic_store(&w->quit, 1);
        sem_post(&w->wake);
        pthread_join(w->thread, NULL);
    }
    sem_destroy(&w->wake);
    free(w->requests.data);
    free(w->responses.data);
    free(w->work_buf);
    free(w->response_buf);
    free(w);
}

/* ---- Running an instance ---------------------------------------------------------------------------------------- */

/* Zeroes 1 KiB of stack and returns: the frame of the next function this one's caller calls lies in the same place.
   The empty asm keeps the stores, which the compiler would otherwise drop as dead. */
__attribute__((noinline)) static void lv2host_scrub_stack(void) {
    char pad[1024];
    memset(pad, 0, sizeof pad);
    __asm__ volatile("" : : "r"(pad) : "memory");
}

void lv2host_run(void (*run)(void *handle, uint32_t frames), void *handle, uint32_t frames) {
    lv2host_scrub_stack();
    run(handle, frames);
}

/* ---- Floating point mode ---------------------------------------------------------------------------------------- */

uint64_t lv2host_fp_enter(void) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned int old = __builtin_ia32_stmxcsr();
    __builtin_ia32_ldmxcsr(old | 0x8040u);  /* FTZ (bit 15) | DAZ (bit 6) */
    return old;
#elif defined(__aarch64__)
    uint64_t old;
    __asm__ volatile("mrs %0, fpcr" : "=r"(old));
    __asm__ volatile("msr fpcr, %0" : : "r"(old | (1ull << 24)));  /* FZ */
    return old;
#else
    return 0;
#endif
}

void lv2host_fp_leave(uint64_t mode) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_ldmxcsr((unsigned int)mode);
#elif defined(__aarch64__)
    __asm__ volatile("msr fpcr, %0" : : "r"(mode));
#else
    (void)mode;
#endif
}

/* ---- Atom sequences of MIDI events ------------------------------------------------------------------------------ */

#define SEQ_HEADER 16u /* LV2_Atom (size, type) + LV2_Atom_Sequence_Body (unit, pad) */

static uint32_t pad8(uint32_t n) { return (n + 7u) & ~7u; }

void lv2host_seq_clear(void *seq, uint32_t sequence_urid) {
    uint32_t *h = seq;
    h[0] = 8;             /* atom.size: the body header alone */
    h[1] = sequence_urid;
    h[2] = 0;             /* unit: frames */
    h[3] = 0;
}

/* The end of the valid events of `seq` (of `capacity` bytes): atom.size clamped to the buffer, so a plugin's nonsense
   size never makes the host read past it. */
static uint32_t seq_end(const void *seq, uint32_t capacity) {
    uint32_t size = ((const uint32_t *)seq)[0];
    if (capacity < SEQ_HEADER) return 0;
    if (size < 8u || size > capacity - 8u) return size < 8u ? SEQ_HEADER : capacity;
    return 8u + size;
}

int lv2host_seq_insert(void *seq, uint32_t capacity, int64_t frame, uint32_t type, uint32_t size, const void *body) {
    uint8_t *base = seq;
    uint32_t end = seq_end(seq, capacity);
    uint32_t need = (uint32_t)sizeof(LV2_Atom_Event) + pad8(size);
    if (size > capacity || end + need > capacity || end + need < end) return -1;
    /* The first event later than `frame`: the new one goes before it (events of one frame keep their order). */
    uint32_t at = SEQ_HEADER;
    while (at + sizeof(LV2_Atom_Event) <= end) {
        const LV2_Atom_Event *e = (const LV2_Atom_Event *)(base + at);
        if (e->time.frames > frame) break;
        uint32_t step = (uint32_t)sizeof(LV2_Atom_Event) + pad8(e->body.size);
        if (step > end - at) { at = end; break; }
        at += step;
    }
    if (at < end) memmove(base + at + need, base + at, end - at);
    LV2_Atom_Event *e = (LV2_Atom_Event *)(base + at);
    e->time.frames = frame;
    e->body.size = size;
    e->body.type = type;
    memcpy(e + 1, body, size);
    if (pad8(size) > size) memset((uint8_t *)(e + 1) + size, 0, pad8(size) - size);
    ((uint32_t *)seq)[0] = end + need - 8u;
    return 0;
}

int lv2host_seq_event(const void *seq, uint32_t capacity, uint32_t *cursor, int64_t *frame, uint32_t *type,
                      uint32_t *size, const uint8_t **body) {
    const uint8_t *base = seq;
    uint32_t end = seq_end(seq, capacity);
    if (*cursor < SEQ_HEADER) *cursor = SEQ_HEADER;
    if (*cursor + sizeof(LV2_Atom_Event) > end) return 0;
    const LV2_Atom_Event *e = (const LV2_Atom_Event *)(base + *cursor);
    uint32_t room = end - *cursor - (uint32_t)sizeof(LV2_Atom_Event);
    if (e->body.size > room) return 0;
    *frame = e->time.frames;
    *type = e->body.type;
    *size = e->body.size;
    *body = (const uint8_t *)(e + 1);
    *cursor += (uint32_t)sizeof(LV2_Atom_Event) + pad8(e->body.size);
    return 1;
}

uint32_t lv2host_seq_copy_midi(void *dst, uint32_t dst_capacity, const void *src, uint32_t src_capacity,
                               uint32_t midi_urid, uint32_t channel_mask, uint32_t *dropped) {
    uint32_t cursor = 0, type, size, copied = 0;
    int64_t frame;
    const uint8_t *body;
    while (lv2host_seq_event(src, src_capacity, &cursor, &frame, &type, &size, &body)) {
        if (type != midi_urid || size == 0) continue;
        uint8_t status = body[0];
        if (status < 0xF0 && status >= 0x80 && !(channel_mask & (1u << (status & 0x0F)))) continue;
        if (lv2host_seq_insert(dst, dst_capacity, frame, type, size, body) != 0) {
            ++*dropped;
            continue;
        }
        ++copied;
    }
    return copied;
}

uint32_t lv2host_seq_notes_off(void *dst, uint32_t dst_capacity, uint32_t midi_urid, uint32_t channel_mask,
                               uint32_t *dropped) {
    uint32_t sent = 0;
    for (uint32_t ch = 0; ch < 16; ++ch) {
        if (!(channel_mask & (1u << ch))) continue;
        /* Sustain pedal up, then All Notes Off (CC 123) and All Sound Off (CC 120). */
        const uint8_t msgs[3][3] = {{0xB0 | ch, 64, 0}, {0xB0 | ch, 123, 0}, {0xB0 | ch, 120, 0}};
        for (int m = 0; m < 3; ++m) {
            if (lv2host_seq_insert(dst, dst_capacity, 0, midi_urid, 3, msgs[m]) != 0) ++*dropped;
            else ++sent;
        }
    }
    return sent;
}

static uint8_t *put_property(uint8_t *at, uint32_t key, uint32_t type, uint32_t size, const void *value) {
    LV2_Atom_Property_Body *p = (LV2_Atom_Property_Body *)at;
    p->key = key;
    p->context = 0;
    p->value.size = size;
    p->value.type = type;
    memcpy(p + 1, value, size);
    if (pad8(size) > size) memset((uint8_t *)(p + 1) + size, 0, pad8(size) - size);
    return at + sizeof *p + pad8(size);
}

int lv2host_seq_time_position(void *seq, uint32_t capacity, const LV2HostTimeURIDs *u,
                              const LV2HostTimePosition *pos) {
    uint8_t body[256];
    LV2_Atom_Object_Body *o = (LV2_Atom_Object_Body *)body;
    o->id = 0;
    o->otype = u->position;
    uint8_t *at = body + sizeof *o;
    at = put_property(at, u->frame, u->long_, 8, &pos->frame);
    at = put_property(at, u->speed, u->float_, 4, &pos->speed);
    if (pos->has_bbt) {
        at = put_property(at, u->bar, u->long_, 8, &pos->bar);
        at = put_property(at, u->bar_beat, u->float_, 4, &pos->bar_beat);
        at = put_property(at, u->beat_unit, u->int_, 4, &pos->beat_unit);
        at = put_property(at, u->beats_per_bar, u->float_, 4, &pos->beats_per_bar);
        at = put_property(at, u->beats_per_minute, u->float_, 4, &pos->beats_per_minute);
    }
    return lv2host_seq_insert(seq, capacity, 0, u->object, (uint32_t)(at - body), body);
}
