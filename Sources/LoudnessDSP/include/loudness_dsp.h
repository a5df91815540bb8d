#ifndef TANDEM_LOUDNESS_DSP_H
#define TANDEM_LOUDNESS_DSP_H

/*
 * The per-sample work of an ITU-R BS.1770-4 loudness meter, in C so that it is fast in every build: the K-weighting
 * filter (a high shelf and a high pass, double precision) summed into energy, and the true-peak estimator (Annex 2's
 * 4x polyphase interpolator). Gating, blocks and readings live in Swift (the Loudness module). Neither function
 * allocates, locks or blocks; each state belongs to one thread.
 */

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most channels one programme (a channel group) may have: 5.1 is six; eight leave room for 7.1. */
#define LOUDNESS_MAX_CHANNELS 8

/* The K-weighting filters of one programme: two biquads per channel, direct form II transposed, and each channel's
   weight (BS.1770's G_i: 1.0 for L, R, C; 1.41 for the surrounds; 0 for LFE). */
typedef struct {
    int channels;
    double weight[LOUDNESS_MAX_CHANNELS];
    double shelf_b[3], shelf_a[3];
    double pass_b[3], pass_a[3];
    double z[LOUDNESS_MAX_CHANNELS][4];
} loudness_kweight;

/* Sets the filters for `rate` (BS.1770's analogue prototype through the bilinear transform, as libebur128 does, so
   any rate works) and clears the state. `channels` is 1...LOUDNESS_MAX_CHANNELS; weights are copied. */
void loudness_kweight_init(loudness_kweight *k, int channels, double rate, const double *weights);

/* Clears the filters' memory (a new programme). */
void loudness_kweight_reset(loudness_kweight *k);

/* Filters `frames` frames and returns the sum over them and over channels of weight * y^2. The programme's channel c
   is `samples[f * stride + offset + c]`. */
double loudness_kweight_run(loudness_kweight *k, const float *samples, size_t frames, size_t stride, size_t offset);

/* The true-peak estimator: the last 11 input samples of each channel. */
typedef struct {
    int channels;
    float history[LOUDNESS_MAX_CHANNELS][11];
} loudness_truepeak;

void loudness_truepeak_init(loudness_truepeak *t, int channels);

/* Runs the interpolator over `frames` frames (the same layout as loudness_kweight_run) and returns the largest
   absolute value among the four interpolated phases of every sample and channel (linear, not decibels). */
float loudness_truepeak_run(loudness_truepeak *t, const float *samples, size_t frames, size_t stride, size_t offset);

/* The largest absolute sample among `frames` frames (the sample peak). */
float loudness_sample_peak(const float *samples, size_t frames, size_t stride, size_t offset, int channels);

#ifdef __cplusplus
}
#endif

#endif
