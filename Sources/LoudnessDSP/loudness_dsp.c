#include "loudness_dsp.h"

#include <math.h>
#include <string.h>

void loudness_kweight_init(loudness_kweight *k, int channels, double rate, const double *weights) {
    memset(k, 0, sizeof *k);
    k->channels = channels < 1 ? 1 : (channels > LOUDNESS_MAX_CHANNELS ? LOUDNESS_MAX_CHANNELS : channels);
    for (int c = 0; c < k->channels; c++) k->weight[c] = weights[c];

    /* Stage 1, the head's high shelf (+4 dB above about 1.7 kHz). */
    double f0 = 1681.974450955533, gain = 3.999843853973347, q = 0.7071752369554196;
    double K = tan(M_PI * f0 / rate);
    double vh = pow(10.0, gain / 20.0);
    double vb = pow(vh, 0.4996667741545416);
    double a0 = 1.0 + K / q + K * K;
    k->shelf_b[0] = (vh + vb * K / q + K * K) / a0;
    k->shelf_b[1] = 2.0 * (K * K - vh) / a0;
    k->shelf_b[2] = (vh - vb * K / q + K * K) / a0;
    k->shelf_a[0] = 1.0;
    k->shelf_a[1] = 2.0 * (K * K - 1.0) / a0;
    k->shelf_a[2] = (1.0 - K / q + K * K) / a0;

    /* Stage 2, the RLB high pass (about 38 Hz). */
    f0 = 38.13547087602444;
    q = 0.5003270373238773;
    K = tan(M_PI * f0 / rate);
    k->pass_b[0] = 1.0;
    k->pass_b[1] = -2.0;
    k->pass_b[2] = 1.0;
    k->pass_a[0] = 1.0;
    k->pass_a[1] = 2.0 * (K * K - 1.0) / (1.0 + K / q + K * K);
    k->pass_a[2] = (1.0 - K / q + K * K) / (1.0 + K / q + K * K);
}

void loudness_kweight_reset(loudness_kweight *k) { memset(k->z, 0, sizeof k->z); }

double loudness_kweight_run(loudness_kweight *k, const float *samples, size_t frames, size_t stride, size_t offset) {
    const double sb0 = k->shelf_b[0], sb1 = k->shelf_b[1], sb2 = k->shelf_b[2];
    const double sa1 = k->shelf_a[1], sa2 = k->shelf_a[2];
    const double pa1 = k->pass_a[1], pa2 = k->pass_a[2];
    double total = 0.0;
    for (int c = 0; c < k->channels; c++) {
        double z0 = k->z[c][0], z1 = k->z[c][1], z2 = k->z[c][2], z3 = k->z[c][3];
        double sum = 0.0;
        const float *p = samples + offset + (size_t)c;
        for (size_t f = 0; f < frames; f++, p += stride) {
            double x = (double)*p;
            if (!isfinite(x)) x = 0.0;   /* a plugin's NaN must not poison the filters for good */
            double y = sb0 * x + z0;
            z0 = sb1 * x - sa1 * y + z1;
            z1 = sb2 * x - sa2 * y;
            double w = y + z2;              /* pass_b = 1, -2, 1 */
            z2 = -2.0 * y - pa1 * w + z3;
            z3 = y - pa2 * w;
            sum += w * w;
        }
        /* A filter state that decays into subnormal numbers costs time and means nothing. */
        if (fabs(z0) < 1e-30) z0 = 0;
        if (fabs(z1) < 1e-30) z1 = 0;
        if (fabs(z2) < 1e-30) z2 = 0;
        if (fabs(z3) < 1e-30) z3 = 0;
        k->z[c][0] = z0; k->z[c][1] = z1; k->z[c][2] = z2; k->z[c][3] = z3;
        total += k->weight[c] * sum;
    }
    return total;
}

/* ITU-R BS.1770-4 Annex 2: the order-48 interpolating filter as four phases of twelve taps, here by tap (the k-th
   tap of each phase side by side), so that one multiply-add per tap computes the four phases together. */
typedef float v4f __attribute__((vector_size(16)));
static const v4f taps[12] = {
    {  0.0017089843750f, -0.0291748046875f, -0.0189208984375f, -0.0083007812500f },
    {  0.0109863281250f,  0.0292968750000f,  0.0330810546875f,  0.0148925781250f },
    { -0.0196533203125f, -0.0517578125000f, -0.0582275390625f, -0.0266113281250f },
    {  0.0332031250000f,  0.0891113281250f,  0.1015625000000f,  0.0476074218750f },
    { -0.0594482421875f, -0.1665039062500f, -0.2003173828125f, -0.1022949218750f },
    {  0.1373291015625f,  0.4650878906250f,  0.7797851562500f,  0.9721679687500f },
    {  0.9721679687500f,  0.7797851562500f,  0.4650878906250f,  0.1373291015625f },
    { -0.1022949218750f, -0.2003173828125f, -0.1665039062500f, -0.0594482421875f },
    {  0.0476074218750f,  0.1015625000000f,  0.0891113281250f,  0.0332031250000f },
    { -0.0266113281250f, -0.0582275390625f, -0.0517578125000f, -0.0196533203125f },
    {  0.0148925781250f,  0.0330810546875f,  0.0292968750000f,  0.0109863281250f },
    { -0.0083007812500f, -0.0189208984375f, -0.0291748046875f,  0.0017089843750f },
};

void loudness_truepeak_init(loudness_truepeak *t, int channels) {
    memset(t, 0, sizeof *t);
    t->channels = channels < 1 ? 1 : (channels > LOUDNESS_MAX_CHANNELS ? LOUDNESS_MAX_CHANNELS : channels);
}

#define TP_CHUNK 256

float loudness_truepeak_run(loudness_truepeak *t, const float *samples, size_t frames, size_t stride, size_t offset) {
    float peak = 0.0f;
    float x[11 + TP_CHUNK];
    for (int c = 0; c < t->channels; c++) {
        v4f most = { 0, 0, 0, 0 };
        const float *p = samples + offset + (size_t)c;
        size_t done = 0;
        while (done < frames) {
            size_t n = frames - done < TP_CHUNK ? frames - done : TP_CHUNK;
            memcpy(x, t->history[c], sizeof t->history[c]);
            for (size_t i = 0; i < n; i++) {
                float v = p[(done + i) * stride];
                x[11 + i] = isfinite(v) ? v : 0.0f;
            }
            for (size_t i = 0; i < n; i++) {
                /* x[11 + i] is the newest sample; tap j meets the sample j before it. */
                const float *s = x + 11 + i;
                v4f acc = taps[0] * s[0];
                for (int j = 1; j < 12; j++) acc += taps[j] * s[-j];
                most = __builtin_elementwise_max(most, __builtin_elementwise_abs(acc));
            }
            memcpy(t->history[c], x + n, sizeof t->history[c]);
            done += n;
        }
        for (int l = 0; l < 4; l++) if (most[l] > peak) peak = most[l];
    }
    return peak;
}

float loudness_sample_peak(const float *samples, size_t frames, size_t stride, size_t offset, int channels) {
    float peak = 0.0f;
    for (size_t f = 0; f < frames; f++) {
        const float *p = samples + f * stride + offset;
        for (int c = 0; c < channels; c++) {
            float v = fabsf(p[c]);
            if (v > peak && isfinite(v)) peak = v;
        }
    }
    return peak;
}
