/* SPDX-License-Identifier: Apache-2.0 */
/* Rotary embedding frequencies shared by ROPE (k_rope.cu) and ATTN_PREP (k_fused.cu): the host
 * side validates a st_rope_args and precomputes YaRN's correction range; the device side gives
 * the cosine and sine of one rotary pair at one position (angles in double: float angles lose
 * about pos * 1e-7 rad at long positions). */
#ifndef STRATA_CUDA_ROPE_CUH
#define STRATA_CUDA_ROPE_CUH

#include "cuda/cuda_common.cuh"

struct st_rope_freq {
    int n_rot, neox;
    float freq_base, freq_scale, ext_factor, attn_factor, corr_lo, corr_hi;
};

/* Validates a's rotation parameters for head dim hd and fills f; ST_INVALID with a text naming
 * `op` otherwise. */
st_status st_rope_freq_of(const st_rope_args *a, int64_t hd, const char *op, st_rope_freq *f);

/* cos and sin (times YaRN's magnitude scale) of rotary pair i < n_rot/2 at position pos. */
__device__ __forceinline__ void st_rope_cs(const st_rope_freq &f, int32_t pos, int64_t i, float *c, float *s) {
    const double theta_extrap = (double)pos * pow((double)f.freq_base, -2.0 * (double)i / (double)f.n_rot);
    const double theta_interp = (double)f.freq_scale * theta_extrap;
    double theta = theta_interp, mscale = f.attn_factor;
    if (f.ext_factor != 0.0f) {
        const double y = ((double)i - f.corr_lo) / fmax(0.001, (double)f.corr_hi - f.corr_lo);
        const double mix = (1.0 - fmin(1.0, fmax(0.0, y))) * f.ext_factor;
        theta = theta_interp * (1.0 - mix) + theta_extrap * mix;
        mscale *= 1.0 + 0.1 * log(1.0 / (double)f.freq_scale);
    }
    double sd, cd;
    sincos(theta, &sd, &cd);
    *c = (float)(cd * mscale);
    *s = (float)(sd * mscale);
}

#endif
