/*
 * bench-client: the fixed counterpart for Tandem's benchmark (scripts/bench.py).
 *
 *   bench-client gen  NAME CHANNELS RAWFILE           play an interleaved float32 file from memory on out_1..N, looping
 *   bench-client sink NAME CHANNELS SECONDS RAWFILE   record in_1..N into pre-faulted memory; write RAWFILE on SIGTERM
 *   bench-client mon  NAME                            print "XRUN t", "LOAD t percent", "PORT t name" lines
 *   bench-client thru NAME STAGES GAIN                the rack's floor: in_1 to out_1 multiplied by GAIN (a linear
 *                                                    factor) STAGES times, nothing else; its main thread sleeps
 *   bench-client floor NAME CHANNELS SECONDS SOURCE    the floor: connect in_1..N to SOURCE:out_1..N, copy each port
 *                                                    into a pre-faulted 4 s ring in memory (one memcpy per port and
 *                                                    cycle, nothing else), exit after SECONDS printing
 *                                                    "CYCLE p50 p99 max count" (its callback's cost in µs)
 *
 * Every mode prints READY once active and runs until SIGTERM/SIGINT. Times are CLOCK_MONOTONIC seconds. The process
 * callbacks only copy and count; all output happens on the main thread.
 *
 * gen and sink also print "SKIP t pos jump" when their own cycle's frame time was not one period after their previous
 * cycle's: pos is where in their data that cycle began, jump the difference in frames. JACK ran a cycle without them
 * there (or ran them late), so a loss at that place is the measuring client's, not the tool's.
 */
#include <jack/jack.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_signal(int s) { (void)s; stop = 1; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static jack_client_t *client;
static jack_port_t **ports;
static int channels;
static float *data;
static size_t frames, pos;

#define EVENTS 65536
static double event_time[EVENTS];
static atomic_int event_kind[EVENTS];   /* 1 xrun, 2 port registered, 3 own cycle irregular; stored last (0: not yet) */
static jack_port_id_t event_port[EVENTS];
static long event_pos[EVENTS];
static int event_jump[EVENTS];
static atomic_int event_count;

static jack_nframes_t next_frame_time;
static int have_frame_time;

/* Notes a cycle whose frame time is not one period after the previous one (the caller's data position). */
static void check_cycle(jack_nframes_t n, size_t at) {
    jack_nframes_t t = jack_last_frame_time(client);
    if (have_frame_time && t != next_frame_time) {
        int i = atomic_fetch_add(&event_count, 1);
        if (i < EVENTS) {
            event_time[i] = now(); event_pos[i] = (long)at;
            event_jump[i] = (int)(int32_t)(t - next_frame_time);
            atomic_store_explicit(&event_kind[i], 3, memory_order_release);
        }
    }
    next_frame_time = t + n;
    have_frame_time = 1;
}

static int gen_process(jack_nframes_t n, void *arg) {
    (void)arg;
    check_cycle(n, pos);
    float *out[channels];
    for (int c = 0; c < channels; c++) out[c] = jack_port_get_buffer(ports[c], n);
    for (jack_nframes_t i = 0; i < n; i++) {
        const float *frame = data + pos * channels;
        for (int c = 0; c < channels; c++) out[c][i] = frame[c];
        if (++pos == frames) pos = 0;
    }
    return 0;
}

static int sink_process(jack_nframes_t n, void *arg) {
    (void)arg;
    check_cycle(n, pos);
    for (int c = 0; c < channels; c++) {
        const float *in = jack_port_get_buffer(ports[c], n);
        for (jack_nframes_t i = 0; i < n && pos + i < frames; i++) data[(pos + i) * channels + c] = in[i];
    }
    pos = pos + n < frames ? pos + n : frames;
    return 0;
}

static size_t ring_frames;

/* The floor's own cycle cost, timed as Tandem times its callbacks (monotonic clock at entry and exit, every cycle):
 * 1 µs buckets up to 100 ms, touched before activation so the callback never faults one in. */
#define CYCLE_BUCKETS 100000
static unsigned cycle_hist[CYCLE_BUCKETS];
static long cycle_max_ns, cycle_count;

static long mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* "CYCLE p50 p99 max count" in µs (percentiles at bucket upper edges, as Tandem's; the maximum exact). */
static void print_cycles(void) {
    long seen = 0, p50 = -1, p99 = -1;
    for (long b = 0; b < CYCLE_BUCKETS && cycle_count > 0; b++) {
        seen += cycle_hist[b];
        if (p50 < 0 && seen * 2 >= cycle_count) p50 = b + 1;
        if (p99 < 0 && seen * 100 >= cycle_count * 99) p99 = b + 1;
    }
    printf("CYCLE %ld %ld %.1f %ld\n", p50, p99, cycle_max_ns / 1000.0, cycle_count);
}

static int floor_process(jack_nframes_t n, void *arg) {
    (void)arg;
    long began = mono_ns();
    size_t at = pos % ring_frames;
    size_t first = n < ring_frames - at ? n : ring_frames - at;
    for (int c = 0; c < channels; c++) {
        const float *in = jack_port_get_buffer(ports[c], n);
        float *ring = data + (size_t)c * ring_frames;
        memcpy(ring + at, in, first * sizeof(float));
        if (first < n) memcpy(ring, in + first, (n - first) * sizeof(float));
    }
    pos += n;
    long took = mono_ns() - began;
    long b = took / 1000;
    cycle_hist[b < CYCLE_BUCKETS ? b : CYCLE_BUCKETS - 1]++;
    if (took > cycle_max_ns) cycle_max_ns = took;
    cycle_count++;
    return 0;
}

static int stages;
static float gain;

static int thru_process(jack_nframes_t n, void *arg) {
    (void)arg;
    const float *in = jack_port_get_buffer(ports[0], n);
    float *out = jack_port_get_buffer(ports[1], n);
    for (jack_nframes_t i = 0; i < n; i++) out[i] = in[i] * gain;
    for (int k = 1; k < stages; k++)
        for (jack_nframes_t i = 0; i < n; i++) out[i] *= gain;
    return 0;
}

static int on_xrun(void *arg) {
    (void)arg;
    int i = atomic_fetch_add(&event_count, 1);
    if (i < EVENTS) { event_time[i] = now(); atomic_store_explicit(&event_kind[i], 1, memory_order_release); }
    return 0;
}

static void on_port(jack_port_id_t id, int registered, void *arg) {
    (void)arg;
    if (!registered) return;
    int i = atomic_fetch_add(&event_count, 1);
    if (i < EVENTS) {
        event_time[i] = now(); event_port[i] = id;
        atomic_store_explicit(&event_kind[i], 2, memory_order_release);
    }
}

static int register_ports(const char *prefix, unsigned long flags) {
    ports = calloc(channels, sizeof *ports);
    for (int c = 0; c < channels; c++) {
        char name[64];
        snprintf(name, sizeof name, "%s_%d", prefix, c + 1);
        ports[c] = jack_port_register(client, name, JACK_DEFAULT_AUDIO_TYPE, flags, 0);
        if (!ports[c]) { fprintf(stderr, "cannot register %s\n", name); return -1; }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: see the comment at the top of bench-client.c\n"); return 2; }
    const char *mode = argv[1];
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    jack_status_t status;
    client = jack_client_open(argv[2], JackNoStartServer | JackUseExactName, &status);
    if (!client) { fprintf(stderr, "cannot open client %s (status 0x%x)\n", argv[2], status); return 3; }
    const char *out_path = NULL;

    if (!strcmp(mode, "gen") && argc == 5) {
        channels = atoi(argv[3]);
        FILE *f = fopen(argv[4], "rb");
        if (!f) { perror(argv[4]); return 2; }
        fseek(f, 0, SEEK_END);
        long bytes = ftell(f);
        fseek(f, 0, SEEK_SET);
        frames = bytes / (sizeof(float) * channels);
        data = malloc(bytes);
        if (fread(data, 1, bytes, f) != (size_t)bytes) { perror("read"); return 2; }
        fclose(f);
        if (register_ports("out", JackPortIsOutput)) return 3;
        jack_set_process_callback(client, gen_process, NULL);
    } else if (!strcmp(mode, "sink") && argc == 6) {
        channels = atoi(argv[3]);
        frames = (size_t)(atof(argv[4]) * jack_get_sample_rate(client));
        data = calloc(frames * channels, sizeof(float));
        memset(data, 0, frames * channels * sizeof(float));   /* fault every page in now */
        out_path = argv[5];
        if (register_ports("in", JackPortIsInput)) return 3;
        jack_set_process_callback(client, sink_process, NULL);
    } else if (!strcmp(mode, "floor") && argc == 6) {
        channels = atoi(argv[3]);
        ring_frames = 4 * (size_t)jack_get_sample_rate(client);
        data = malloc(ring_frames * channels * sizeof(float));
        memset(data, 0, ring_frames * channels * sizeof(float));   /* fault every page in now */
        memset(cycle_hist, 0, sizeof cycle_hist);
        if (register_ports("in", JackPortIsInput)) return 3;
        jack_set_process_callback(client, floor_process, NULL);
    } else if (!strcmp(mode, "thru") && argc == 5) {
        stages = atoi(argv[3]);
        gain = (float)atof(argv[4]);
        ports = calloc(2, sizeof *ports);
        ports[0] = jack_port_register(client, "in_1", JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0);
        ports[1] = jack_port_register(client, "out_1", JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
        if (!ports[0] || !ports[1] || stages < 1) { fprintf(stderr, "cannot register thru ports\n"); return 3; }
        jack_set_process_callback(client, thru_process, NULL);
    } else if (!strcmp(mode, "mon") && argc == 3) {
        jack_set_xrun_callback(client, on_xrun, NULL);
        jack_set_port_registration_callback(client, on_port, NULL);
    } else {
        fprintf(stderr, "usage: see the comment at the top of bench-client.c\n");
        return 2;
    }
    if (jack_activate(client)) { fprintf(stderr, "cannot activate\n"); return 3; }
    printf("READY %.6f\n", now());
    fflush(stdout);
    double floor_end = 0;
    if (!strcmp(mode, "floor")) {
        for (int c = 0; c < channels; c++) {
            char from[320];
            snprintf(from, sizeof from, "%s:out_%d", argv[5], c + 1);
            if (jack_connect(client, from, jack_port_name(ports[c]))) { fprintf(stderr, "cannot connect %s\n", from); return 3; }
        }
        floor_end = now() + atof(argv[4]);
    }
    if (!strcmp(mode, "thru")) {
        while (!stop) pause();   /* like jalv's console: nothing on the main thread until a signal */
    }
    int printed = 0;
    double next_load = now();
    while (!stop && (floor_end == 0 || now() < floor_end)) {
        usleep(10000);
        int n = atomic_load(&event_count);
        for (; printed < n && printed < EVENTS; printed++) {
            int kind = atomic_load_explicit(&event_kind[printed], memory_order_acquire);
            if (kind == 0) break;           /* claimed but not yet filled in: next time round */
            if (kind == 1) printf("XRUN %.6f\n", event_time[printed]);
            else if (kind == 3)
                printf("SKIP %.6f %ld %d\n", event_time[printed], event_pos[printed], event_jump[printed]);
            else {
                jack_port_t *p = jack_port_by_id(client, event_port[printed]);
                printf("PORT %.6f %s\n", event_time[printed], p ? jack_port_name(p) : "?");
            }
        }
        if (!strcmp(mode, "mon") && now() >= next_load) {
            printf("LOAD %.6f %.3f\n", now(), jack_cpu_load(client));
            next_load += 0.1;
        }
        fflush(stdout);
    }
    jack_deactivate(client);
    jack_client_close(client);
    if (!strcmp(mode, "floor")) print_cycles();
    if (out_path) {
        FILE *f = fopen(out_path, "wb");
        if (!f || fwrite(data, sizeof(float) * channels, pos, f) != pos) { perror(out_path); return 4; }
        fclose(f);
    }
    return 0;
}
