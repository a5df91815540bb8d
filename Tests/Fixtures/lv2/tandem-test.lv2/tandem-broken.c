// A plugin library the dynamic loader refuses: it needs a function no library defines (built with -shared, which
// leaves the symbol undefined; dlopen with RTLD_NOW fails naming it).
#include <lv2/core/lv2.h>
#include <stdlib.h>

extern void tandem_test_nowhere(void);

static LV2_Handle instantiate(const LV2_Descriptor *d, double rate, const char *path, const LV2_Feature *const *f) {
    (void)d; (void)rate; (void)path; (void)f;
    tandem_test_nowhere();
    return malloc(1);
}
static void connect(LV2_Handle h, uint32_t port, void *data) { (void)h; (void)port; (void)data; }
static void run(LV2_Handle h, uint32_t n) { (void)h; (void)n; }
static void cleanup(LV2_Handle h) { free(h); }

static const LV2_Descriptor descriptor = {
    "http://tandem.test/lv2/broken", instantiate, connect, NULL, run, NULL, cleanup, NULL,
};

LV2_SYMBOL_EXPORT const LV2_Descriptor *lv2_descriptor(uint32_t index) { return index == 0 ? &descriptor : NULL; }
