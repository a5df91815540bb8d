/*
 * Test plugins for Tandem's host (built at test time by TestSupport's `TestPlugins`, never installed):
 *
 * - fixedblock: requires buf-size:fixedBlockLength and reads the nominal block length from the options; every
 *   run() whose n_samples differs from it is counted on the `mismatches` output. Copies its input to its output.
 * - crash: copies its input, until its `mode` control says otherwise: 1 segfaults in run(), 2 aborts, 3 hangs
 *   (spins forever in run()), 4 segfaults in the run() whose input holds a sample above 0.9 (one loud file in a
 *   batch of quiet ones fails alone). For crash isolation: a plugin that fails on command.
 * - heavy: copies its input after spinning `micros` microseconds in run(): a plugin of a known cost, for per-plugin
 *   timing.
 */
#include <lv2/core/lv2.h>
#include <lv2/options/options.h>
#include <lv2/buf-size/buf-size.h>
#include <lv2/urid/urid.h>
#include <lv2/atom/atom.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BASE "http://tandem.test/lv2/"

typedef struct {
    const float *in;
    float *out;
    float *mismatches, *block, *pow2;
    uint32_t nominal;
    int power_of_two;
    uint64_t count;
} FixedBlock;

static LV2_Handle fixed_instantiate(const LV2_Descriptor *d, double rate, const char *path,
                                    const LV2_Feature *const *features) {
    (void)d; (void)rate; (void)path;
    const LV2_Options_Option *options = NULL;
    LV2_URID_Map *map = NULL;
    int fixed = 0, pow2 = 0;
    for (int i = 0; features && features[i]; ++i) {
        if (!strcmp(features[i]->URI, LV2_OPTIONS__options)) options = features[i]->data;
        else if (!strcmp(features[i]->URI, LV2_URID__map)) map = features[i]->data;
        else if (!strcmp(features[i]->URI, LV2_BUF_SIZE__fixedBlockLength)) fixed = 1;
        else if (!strcmp(features[i]->URI, LV2_BUF_SIZE__powerOf2BlockLength)) pow2 = 1;
    }
    if (!fixed || !options || !map) return NULL;
    LV2_URID nominal = map->map(map->handle, LV2_BUF_SIZE__nominalBlockLength);
    LV2_URID atom_int = map->map(map->handle, LV2_ATOM__Int);
    FixedBlock *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    for (const LV2_Options_Option *o = options; o->key; ++o) {
        if (o->key == nominal && o->type == atom_int) p->nominal = (uint32_t)*(const int32_t *)o->value;
    }
    if (p->nominal == 0) {
        free(p);
        return NULL;
    }
    p->power_of_two = pow2;
    return p;
}

static void fixed_connect(LV2_Handle h, uint32_t port, void *data) {
    FixedBlock *p = h;
    switch (port) {
    case 0: p->in = data; break;
    case 1: p->out = data; break;
    case 2: p->mismatches = data; break;
    case 3: p->block = data; break;
    case 4: p->pow2 = data; break;
    }
}

static void fixed_run(LV2_Handle h, uint32_t n) {
    FixedBlock *p = h;
    if (n != p->nominal) p->count++;
    if (p->in && p->out) memmove(p->out, p->in, n * sizeof(float));
    if (p->mismatches) *p->mismatches = (float)p->count;
    if (p->block) *p->block = (float)p->nominal;
    if (p->pow2) *p->pow2 = (float)p->power_of_two;
}

typedef struct {
    const float *mode, *in;
    float *out;
} Crash;

static LV2_Handle crash_instantiate(const LV2_Descriptor *d, double rate, const char *path,
                                    const LV2_Feature *const *features) {
    (void)d; (void)rate; (void)path; (void)features;
    return calloc(1, sizeof(Crash));
}

static void crash_connect(LV2_Handle h, uint32_t port, void *data) {
    Crash *p = h;
    switch (port) {
    case 0: p->mode = data; break;
    case 1: p->in = data; break;
    case 2: p->out = data; break;
    }
}

static void crash_run(LV2_Handle h, uint32_t n) {
    Crash *p = h;
    int mode = p->mode ? (int)*p->mode : 0;
    if (mode == 1) {
        volatile int *nowhere = NULL;
        *nowhere = 1;
    } else if (mode == 2) {
        abort();
    } else if (mode == 3) {
        volatile int spin = 1;
        while (spin) {}
    } else if (mode == 4 && p->in) {
        for (uint32_t i = 0; i < n; ++i) {
            if (p->in[i] > 0.9f) {
                volatile int *nowhere = NULL;
                *nowhere = 1;
            }
        }
    }
    if (p->in && p->out) memmove(p->out, p->in, n * sizeof(float));
}

typedef struct {
    const float *micros, *in;
    float *out;
} Heavy;

static LV2_Handle heavy_instantiate(const LV2_Descriptor *d, double rate, const char *path,
                                    const LV2_Feature *const *features) {
    (void)d; (void)rate; (void)path; (void)features;
    return calloc(1, sizeof(Heavy));
}

static void heavy_connect(LV2_Handle h, uint32_t port, void *data) {
    Heavy *p = h;
    switch (port) {
    case 0: p->micros = data; break;
    case 1: p->in = data; break;
    case 2: p->out = data; break;
    }
}

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void heavy_run(LV2_Handle h, uint32_t n) {
    Heavy *p = h;
    long long until = now_ns() + (long long)((p->micros ? *p->micros : 0) * 1000.0f);
    while (now_ns() < until) {}
    if (p->in && p->out) memmove(p->out, p->in, n * sizeof(float));
}

static void cleanup(LV2_Handle h) { free(h); }

static const LV2_Descriptor descriptors[] = {
    {BASE "fixedblock", fixed_instantiate, fixed_connect, NULL, fixed_run, NULL, cleanup, NULL},
    {BASE "crash", crash_instantiate, crash_connect, NULL, crash_run, NULL, cleanup, NULL},
    {BASE "heavy", heavy_instantiate, heavy_connect, NULL, heavy_run, NULL, cleanup, NULL},
};

LV2_SYMBOL_EXPORT const LV2_Descriptor *lv2_descriptor(uint32_t index) {
    return index < sizeof descriptors / sizeof descriptors[0] ? &descriptors[index] : NULL;
}
