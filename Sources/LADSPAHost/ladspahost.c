/* LADSPA and DSSI plugins behind an LV2-shaped instance (see ladspahost.h). */
#include "ladspahost.h"

#include <dlfcn.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dssi.h>
#include <lv2/core/lv2.h>
#include <lv2/atom/atom.h>

#define EVENT_CAPACITY 512
#define MAX_PLUGINS 4096

struct LADSPAHostLibrary {
    void *handle;
    LADSPA_Descriptor_Function ladspa;
    DSSI_Descriptor_Function dssi;
};

/* Laid out as lilv's struct LilvInstanceImpl for its first three fields. */
typedef struct {
    const LV2_Descriptor *lv2_descriptor;
    LV2_Handle lv2_handle;
    void *pimpl;

    const LADSPA_Descriptor *ladspa;
    const DSSI_Descriptor *dssi;   /* NULL for a LADSPA plugin */
    LADSPA_Handle handle;
    unsigned long port_count;      /* LADSPA ports; a DSSI synth's MIDI port is index port_count */
    unsigned long sample_rate;
    int takes_midi;
    uint32_t midi_urid;
    uint32_t atom_capacity;
    const LV2_Atom_Sequence *midi;
    LADSPA_Data **ports;           /* what each port was last connected to */
    int cc_port[128];              /* the control port a CC moves, or -1 */
    unsigned int bank[16];         /* bank select (CC 0 and 32) per channel */
    _Atomic uint64_t pending;      /* a program to select at the next run: 1 << 63 | bank << 32 | program */
    _Atomic uint64_t selected;     /* the last program selected, same form, 0 for none */
    _Atomic uint64_t dropped;
    snd_seq_event_t events[EVENT_CAPACITY];
} Instance;

#define PROGRAM_SET (UINT64_C(1) << 63)

LADSPAHostLibrary *ladspahost_open(const char *path, char *error, size_t error_size) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(error, error_size, "%s", why ? why : "the library cannot be loaded");
        return NULL;
    }
    LADSPAHostLibrary *lib = calloc(1, sizeof *lib);
    if (!lib) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    lib->handle = h;
    lib->dssi = (DSSI_Descriptor_Function)dlsym(h, "dssi_descriptor");
    lib->ladspa = (LADSPA_Descriptor_Function)dlsym(h, "ladspa_descriptor");
    if (!lib->dssi && !lib->ladspa) {
        snprintf(error, error_size, "it has neither ladspa_descriptor nor dssi_descriptor");
        free(lib);
        return NULL;   /* not closed: dlclose of a library with constructors is not always safe */
    }
    return lib;
}

int ladspahost_is_dssi(const LADSPAHostLibrary *lib) { return lib->dssi != NULL; }

static const DSSI_Descriptor *dssi_at(const LADSPAHostLibrary *lib, unsigned long index) {
    if (!lib->dssi || index >= MAX_PLUGINS) return NULL;
    const DSSI_Descriptor *d = lib->dssi(index);
    return d && d->LADSPA_Plugin ? d : NULL;
}

const LADSPA_Descriptor *ladspahost_descriptor(const LADSPAHostLibrary *lib, unsigned long index) {
    if (index >= MAX_PLUGINS) return NULL;
    if (lib->dssi) {
        const DSSI_Descriptor *d = dssi_at(lib, index);
        return d ? d->LADSPA_Plugin : NULL;
    }
    return lib->ladspa(index);
}

int ladspahost_takes_midi(const LADSPAHostLibrary *lib, unsigned long index) {
    const DSSI_Descriptor *d = dssi_at(lib, index);
    return d && (d->run_synth || d->run_multiple_synths);
}

int ladspahost_has_configure(const LADSPAHostLibrary *lib, unsigned long index) {
    const DSSI_Descriptor *d = dssi_at(lib, index);
    return d && d->configure;
}

/* The trampolines. */

static void w_connect(LV2_Handle h, uint32_t port, void *data) {
    Instance *in = h;
    if (port < in->port_count) {
        in->ports[port] = data;
        in->ladspa->connect_port(in->handle, port, data);
    } else if (port == in->port_count && in->takes_midi) {
        in->midi = data;
    }
}

static void w_activate(LV2_Handle h) {
    Instance *in = h;
    if (in->ladspa->activate) in->ladspa->activate(in->handle);
}

static void w_deactivate(LV2_Handle h) {
    Instance *in = h;
    if (in->ladspa->deactivate) in->ladspa->deactivate(in->handle);
}

static void w_cleanup(LV2_Handle h) { (void)h; }
static const void *w_extension_data(const char *uri) { (void)uri; return NULL; }

/* A CC's 0-127 spread over the port's range as its hints give it (DSSI leaves the mapping to the host). */
static LADSPA_Data cc_value(const Instance *in, unsigned long port, int value) {
    const LADSPA_PortRangeHint *r = &in->ladspa->PortRangeHints[port];
    LADSPA_PortRangeHintDescriptor d = r->HintDescriptor;
    float lo = LADSPA_IS_HINT_BOUNDED_BELOW(d) ? r->LowerBound : 0.0f;
    float hi = LADSPA_IS_HINT_BOUNDED_ABOVE(d) ? r->UpperBound : 1.0f;
    if (LADSPA_IS_HINT_SAMPLE_RATE(d)) {
        lo *= (float)in->sample_rate;
        hi *= (float)in->sample_rate;
    }
    float t = (float)value / 127.0f;
    if (LADSPA_IS_HINT_TOGGLED(d)) return value >= 64 ? 1.0f : 0.0f;
    float v = LADSPA_IS_HINT_LOGARITHMIC(d) && lo > 0 && hi > lo ? lo * powf(hi / lo, t) : lo + (hi - lo) * t;
    if (LADSPA_IS_HINT_INTEGER(d)) v = roundf(v);
    return v;
}

static void select_now(Instance *in, unsigned long bank, unsigned long program) {
    if (in->dssi && in->dssi->select_program) in->dssi->select_program(in->handle, bank, program);
    atomic_store(&in->selected, PROGRAM_SET | (uint64_t)(bank & 0x7fffffff) << 32 | (program & 0xffffffff));
}

static void drop(Instance *in) { atomic_fetch_add(&in->dropped, 1); }

/* Turns the MIDI port's atom sequence into sequencer events; returns their count. */
static unsigned long take_events(Instance *in, uint32_t frames) {
    unsigned long n = 0;
    const LV2_Atom_Sequence *seq = in->midi;
    if (!seq || seq->atom.size < sizeof(LV2_Atom_Sequence_Body)) return 0;
    uint32_t size = seq->atom.size;
    if (size > in->atom_capacity - sizeof(LV2_Atom)) size = in->atom_capacity - sizeof(LV2_Atom);
    const uint8_t *base = (const uint8_t *)&seq->body;
    uint32_t offset = sizeof(LV2_Atom_Sequence_Body);
    while (offset + sizeof(LV2_Atom_Event) <= size) {
        const LV2_Atom_Event *ev = (const LV2_Atom_Event *)(base + offset);
        uint32_t body = ev->body.size;
        if (body > size - offset - sizeof(LV2_Atom_Event)) break;
        offset += (uint32_t)((sizeof(LV2_Atom_Event) + body + 7) & ~(size_t)7);
        if (ev->body.type != in->midi_urid || body < 1) continue;
        const uint8_t *m = (const uint8_t *)(ev + 1);
        uint8_t status = m[0] & 0xf0, channel = m[0] & 0x0f;
        uint8_t a = body > 1 ? m[1] & 0x7f : 0, b = body > 2 ? m[2] & 0x7f : 0;
        int64_t at = ev->time.frames;
        if (at < 0) at = 0;
        if (at >= frames) at = frames ? frames - 1 : 0;
        if (status == 0xc0) {
            select_now(in, in->bank[channel], a);
            continue;
        }
        if (status == 0xb0 && (a == 0 || a == 32)) {
            in->bank[channel] = a == 0 ? (unsigned)b << 7 | (in->bank[channel] & 0x7f)
                                       : (in->bank[channel] & ~0x7fu) | b;
            continue;
        }
        if (status == 0xb0 && in->cc_port[a] >= 0) {
            unsigned long p = (unsigned long)in->cc_port[a];
            if (in->ports[p]) *in->ports[p] = cc_value(in, p, b);
            continue;
        }
        if (n == EVENT_CAPACITY) {
            drop(in);
            continue;
        }
        snd_seq_event_t *e = &in->events[n];
        memset(e, 0, sizeof *e);
        e->time.tick = (snd_seq_tick_time_t)at;
        switch (status) {
        case 0x80:
        case 0x90:
        case 0xa0:
            /* A note on of velocity 0 is a note off, as MIDI says. */
            e->type = status == 0xa0 ? SND_SEQ_EVENT_KEYPRESS
                    : status == 0x90 && b ? SND_SEQ_EVENT_NOTEON : SND_SEQ_EVENT_NOTEOFF;
            e->data.note.channel = channel;
            e->data.note.note = a;
            e->data.note.velocity = b;
            break;
        case 0xb0:
            e->type = SND_SEQ_EVENT_CONTROLLER;
            e->data.control.channel = channel;
            e->data.control.param = a;
            e->data.control.value = b;
            break;
        case 0xd0:
            e->type = SND_SEQ_EVENT_CHANPRESS;
            e->data.control.channel = channel;
            e->data.control.value = a;
            break;
        case 0xe0:
            e->type = SND_SEQ_EVENT_PITCHBEND;
            e->data.control.channel = channel;
            e->data.control.value = ((int)b << 7 | a) - 8192;
            break;
        default:
            continue;   /* system messages: nothing a DSSI synth takes */
        }
        n++;
    }
    return n;
}

static void w_run(LV2_Handle h, uint32_t frames) {
    Instance *in = h;
    if (!in->takes_midi) {
        in->ladspa->run(in->handle, frames);
        return;
    }
    uint64_t pending = atomic_exchange(&in->pending, 0);
    if (pending & PROGRAM_SET) select_now(in, (pending >> 32) & 0x7fffffff, pending & 0xffffffff);
    unsigned long n = take_events(in, frames);
    if (in->dssi->run_synth) {
        in->dssi->run_synth(in->handle, frames, in->events, n);
    } else {
        LADSPA_Handle handle = in->handle;
        snd_seq_event_t *events = in->events;
        in->dssi->run_multiple_synths(1, &handle, frames, &events, &n);
    }
}

static const LV2_Descriptor wrapper = {
    "urn:tandem:ladspa-wrapper", NULL, w_connect, w_activate, w_run, w_deactivate, w_cleanup, w_extension_data,
};

void *ladspahost_instantiate(const LADSPAHostLibrary *lib, unsigned long index, unsigned long sample_rate,
                             uint32_t midi_urid, uint32_t atom_capacity) {
    const LADSPA_Descriptor *d = ladspahost_descriptor(lib, index);
    if (!d || !d->instantiate || !d->connect_port) return NULL;
    const DSSI_Descriptor *dssi = dssi_at(lib, index);
    int takes_midi = dssi && (dssi->run_synth || dssi->run_multiple_synths);
    if (!takes_midi && !d->run) return NULL;
    Instance *in = calloc(1, sizeof *in);
    if (!in) return NULL;
    in->ports = calloc(d->PortCount ? d->PortCount : 1, sizeof *in->ports);
    if (!in->ports) {
        free(in);
        return NULL;
    }
    in->handle = d->instantiate(d, sample_rate);
    if (!in->handle) {
        free(in->ports);
        free(in);
        return NULL;
    }
    in->lv2_descriptor = &wrapper;
    in->lv2_handle = in;
    in->ladspa = d;
    in->dssi = dssi;
    in->port_count = d->PortCount;
    in->sample_rate = sample_rate;
    in->takes_midi = takes_midi;
    in->midi_urid = midi_urid;
    in->atom_capacity = atom_capacity < sizeof(LV2_Atom_Sequence) ? (uint32_t)sizeof(LV2_Atom_Sequence) : atom_capacity;
    for (int c = 0; c < 128; c++) in->cc_port[c] = -1;
    if (dssi && dssi->get_midi_controller_for_port) {
        for (unsigned long p = 0; p < d->PortCount; p++) {
            LADSPA_PortDescriptor pd = d->PortDescriptors[p];
            if (!LADSPA_IS_PORT_CONTROL(pd) || !LADSPA_IS_PORT_INPUT(pd)) continue;
            int c = dssi->get_midi_controller_for_port(in->handle, p);
            if (DSSI_CONTROLLER_IS_SET(c) && DSSI_IS_CC(c)) {
                int cc = DSSI_CC_NUMBER(c);
                if (cc > 0 && cc < 128 && cc != 32) in->cc_port[cc] = (int)p;
            }
        }
    }
    return in;
}

void ladspahost_connect(void *instance, uint32_t port, void *data) {
    Instance *in = instance;
    w_connect(in, port, data);
}

void ladspahost_free(void *instance) {
    Instance *in = instance;
    if (!in) return;
    if (in->ladspa->cleanup) in->ladspa->cleanup(in->handle);
    free(in->ports);
    free(in);
}

unsigned long ladspahost_program_count(void *instance) {
    Instance *in = instance;
    if (!in->dssi || !in->dssi->get_program) return 0;
    unsigned long n = 0;
    while (n < 65536 && in->dssi->get_program(in->handle, n)) n++;
    return n;
}

int ladspahost_program(void *instance, unsigned long i, unsigned long *bank, unsigned long *program, const char **name) {
    Instance *in = instance;
    if (!in->dssi || !in->dssi->get_program) return 0;
    const DSSI_Program_Descriptor *p = in->dssi->get_program(in->handle, i);
    if (!p) return 0;
    *bank = p->Bank;
    *program = p->Program;
    *name = p->Name ? p->Name : "";
    return 1;
}

void ladspahost_select_program(void *instance, unsigned long bank, unsigned long program, int now) {
    Instance *in = instance;
    if (now) {
        select_now(in, bank, program);
        return;
    }
    atomic_store(&in->pending, PROGRAM_SET | (uint64_t)(bank & 0x7fffffff) << 32 | (program & 0xffffffff));
}

int ladspahost_selected_program(void *instance, unsigned long *bank, unsigned long *program) {
    Instance *in = instance;
    uint64_t s = atomic_load(&in->selected);
    if (!(s & PROGRAM_SET)) return 0;
    *bank = (s >> 32) & 0x7fffffff;
    *program = s & 0xffffffff;
    return 1;
}

char *ladspahost_configure(void *instance, const char *key, const char *value) {
    Instance *in = instance;
    if (!in->dssi || !in->dssi->configure) return strdup("the plugin takes no configure keys");
    return in->dssi->configure(in->handle, key, value);
}

int ladspahost_midi_controller(void *instance, unsigned long port) {
    Instance *in = instance;
    for (int c = 0; c < 128; c++) {
        if (in->cc_port[c] == (int)port) return c;
    }
    return -1;
}

uint64_t ladspahost_events_dropped(void *instance) {
    Instance *in = instance;
    return atomic_load(&in->dropped);
}
