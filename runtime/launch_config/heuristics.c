/* heuristics.c: launch configurations by sequence length. */
#include "runtime/launch_config/heuristics.h"

#include <string.h>

#include "base/error.h"

/* The largest power of two up to `most` that divides `n`. */
static int power_of_two_dividing(int64_t n, int most) {
  int c = most;
  while (c > 1 && n % c != 0) c /= 2;
  return c;
}

/* Lanes over time for 1, 2 or 4 states over more than 512 steps and few channels: as many
 * threads a channel as fill the GPU once, 8 steps each (H200, docs/perf.md v35-v36). The
 * callers decide where it applies (d_state 2 with many channels or fewer than 128, and
 * d_state 4 outside 512-4095 channels, take split=state).
 * - From a thousand channels 128 threads at 8 blocks an SM ((1,1024,2048,2,z) bf16 19.7 us
 *   against 41.9 for v33's 32 threads of 4 channels, (2,1536,2048,1,z) bf16 33.1 against
 *   36.2 for 64 threads of 2 channels); 16-bit d_state 2 and 4 up to 4096 steps 16 steps at
 *   4 blocks ((2,1536,2048,4,z) bf16 50.0 against 60.2 with segments and 57.2 with 8 steps,
 *   (2,1536,2048,2,z) bf16 36.6 against 39.4; fp32 loses there, (1,2048,4096,2) 69.8 against
 *   50.8); fp32 d_state 4 64 threads of 2 channels (v33: (2,768,2048,4,z) 37.1 against 47.8).
 * - 256 channels (d_state 1: 512) to 1023: 256 threads at 4 blocks ((1,512,8192,2) bf16 31.9
 *   us against 56.8 for 128 threads of 16 steps, (1,512,8192,4) bf16 39.6 against 43.6).
 * - Fewer: 512 threads at 2 blocks ((1,256,16384,1,z) bf16 26.9 us against 42.6 for 256
 *   threads of 32 steps, (1,128,8192,2) bf16 15.6 against 20.4 for 2 lanes with segments). */
static void few_states_fill_once_over_time(sf_variant *v, int64_t rows, int64_t seqlen) {
  const bool fp32 = v->dtype == SF_FP32;
  v->items = 8, v->channels = 1;
  if (rows >= 1024) {
    v->threads = 128, v->min_blocks = 8;
    if (v->dstate > 1 && !fp32 && seqlen <= 4096) v->items = 16, v->min_blocks = 4;
    if (v->dstate == 4 && fp32) v->threads = 64, v->channels = 2;
  } else if (rows >= (v->dstate == 1 ? 512 : 256)) {
    v->threads = 256, v->min_blocks = 4;
  } else {
    v->threads = 512, v->min_blocks = 2;
  }
}

/* Measured on an H200 (docs/perf.md, forward v4-v6):
 * - with enough channels to fill the GPU and a small state, split=state wins: a
 *   channel's 4 lanes own 4 (N = 16) or 2 (N = 8) states each, run through time in blocks
 *   of 16 steps, 16 channels of one group per block (MambaVision, Mamba training rows);
 *   tiny calls use 8 lanes and 8 channels (one block's latency is all there is);
 * - otherwise lanes split time: short sequences put several channels in a block so that
 *   no warp idles, long ones give each thread 16 steps, and use 128 threads per channel
 *   when there are too few channels to fill the GPU. */
void sf_heuristic_configure(sf_variant *v, int64_t batch, int64_t dim, int groups, int64_t seqlen) {
  const int64_t rows = batch * dim, per_group = groups > 0 ? dim / groups : dim;
  const int N = v->dstate;
  v->states = 1;
  v->min_blocks = 0;
  v->split_states = false;
  if (N % 4 == 0 && N <= 16) {
    const bool tiny = rows < 4096 && seqlen <= 128 && N % 8 == 0;
    /* Tuned on both an H100 and an H200 (docs/bench/tune_report_h100_v9.txt,
     * tune_report_h200_v7.txt): at N = 16, tiny calls take 16 lanes of one state and
     * blocks of 32 steps ((4,16,64,16): 5.7-5.9 us against 6.8-6.9), and large ones 32
     * channels a block ((8,1536,2048,16,z): 278 us against 294-295). */
    /* 16-bit types at N = 8 (MambaVision): 8 lanes of one state, blocks of 32 steps and
     * 16 channels from 128 steps on, 16 steps and 32 channels below (the H100's tuning,
     * docs/bench/tune_report_h100_v10.txt: (64,160,196,8) bf16 33.9 us against 46.4 with
     * 4 lanes of 16 steps, (64,320,49,8) bf16 20.6 against 22.0). */
    const bool narrow16 = !tiny && N == 8 && v->dtype != SF_FP32;
    /* N = 4 over 1024 steps or more: blocks of 32 steps and 8 channels (H200, docs/perf.md
     * v31: (8,1536,2048,4,z) bf16 126 us against 182 for 16 steps and 16 channels, whose
     * blocks were few enough to take segments; fp32 165 against 183; with block states,
     * saving a state every 8 steps for the backward, 156 against 198) */
    const bool long4 = N == 4 && seqlen >= 1024;
    /* N = 4 with 512 to 4095 channels over more than 512 steps: lanes over time instead of
     * segments, from a thousand channels up to 4096 steps (at 8192 segments stay:
     * (1,1024,8192,4) fp32 96.6 us against 111.0; docs/perf.md v33, v35-v36) */
    if (N == 4 && seqlen > 512 && rows >= 512 && rows < 4096 && (rows < 1024 || seqlen <= 4096)) {
      few_states_fill_once_over_time(v, rows, seqlen);
      return;
    }
    const int lanes = tiny ? (N == 16 ? 16 : 8) : narrow16 ? 8 : 4;
    const int channels =
        power_of_two_dividing(per_group, tiny ? 8 : N == 16 ? 32 : narrow16 && seqlen < 128 ? 32 : long4 ? 8 : 16);
    if ((tiny || rows >= 4096) && lanes * channels >= 32) {
      v->split_states = true;
      v->threads = lanes;
      v->items = (tiny && N == 16) || (narrow16 && seqlen >= 128) || long4 ? 32 : 16;
      v->channels = channels;
      if (narrow16 && seqlen >= 128) v->min_blocks = 4;
      return;
    }
    /* Fewer channels over more than one state interval: segments of the sequence are
     * scanned in parallel (runtime/launch/segments.h), so lanes over states win again
     * (docs/perf.md, forward v8-v9; H200): under a thousand channels, 8 lanes and 8
     * channels ((1,64,65536,16) fp32 109 us against 457 us with 256 threads over time;
     * (1,768,1024,16) 29 us against 69); a thousand or more, 4 lanes and 16 channels
     * ((1,1536,16384,16,z) fp32 472 us against 633 us; (1,1536,2048,16,z) bf16 81 us
     * against 148). */
    if (N % 8 == 0 && seqlen > 512 && rows < 1024 && per_group % 8 == 0) {
      v->split_states = true;
      v->threads = 8, v->items = 16, v->channels = 8;
      return;
    }
    /* N = 4 below 512 channels: 4 lanes of one state, blocks of 16 steps, 16 channels, with
     * segments (H200, docs/perf.md v35: (1,64,65536,4) bf16 50.1 us against 131.1 for 256
     * threads over time, (1,256,16384,4,z) bf16 47.2 against 70.9) */
    if (N == 4 && seqlen > 512 && rows < 512 && per_group % 16 == 0) {
      v->split_states = true;
      v->threads = 4, v->items = 16, v->channels = 16;
      return;
    }
    if (seqlen > 512 && rows >= 1024 && per_group % 16 == 0) {
      v->split_states = true;
      /* 32 channels at N = 16 where they divide a group (both GPUs' tuning:
       * (1,1536,16384,16) 427-454 us against 456-472 with 16) */
      v->threads = 4, v->items = 16, v->channels = N == 16 ? power_of_two_dividing(per_group, 32) : 16;
      return;
    }
  }
  /* N = 2 with many channels over 1024 steps or more: 2 lanes of one state, blocks of 32
   * steps, 16 channels (H200, docs/perf.md v31: (8,1536,2048,2,z) bf16 121 us against 246
   * with lanes over time; at L = 49 lanes over time stay: (64,512,49,2) fp32 18 us against
   * 29-48). */
  if (N == 2 && rows >= 4096 && seqlen >= 1024 && per_group % 16 == 0) {
    v->split_states = true;
    v->threads = 2, v->items = 32, v->channels = 16;
    return;
  }
  /* N = 2 with fewer than 128 channels over more than 512 steps: the same launch, whose
   * segments fill the GPU ((1,64,65536,2) bf16 51.2 us against 90.1 for 256 threads over
   * time; H200, docs/perf.md v35) */
  if (N == 2 && rows < 128 && seqlen > 512 && per_group % 16 == 0) {
    v->split_states = true;
    v->threads = 2, v->items = 32, v->channels = 16;
    return;
  }
  /* Larger states with enough channels (docs/perf.md, forward v8): lanes still split
   * the states, 16 of them (8 at N = 32), each owning N / 16 states interleaved; blocks
   * of 32 steps at N = 32, 16 at 64, 8 at 128 (shared memory), 4 to 8 channels a block.
   * H200, bf16: (4,1024,2048,32) 179 us, (4,1024,2048,64) 316 us, (2,512,2048,128) 416 us. */
  if ((N == 32 || N == 64 || N == 128) && rows >= 1024 && seqlen >= 128) {
    /* At N = 128, both GPUs' tuning prefers fewer lanes and more channels: 8 lanes of 16
     * states and 16 channels ((2,512,2048,128) fp32 on the H100: 249 us against 335 with
     * 16 lanes and 4 channels; the H200 chose 4 lanes and 32 channels, 1.47x). */
    if (N == 128 && per_group % 16 == 0) {
      v->split_states = true;
      v->threads = 8, v->items = 8, v->channels = 16;
      return;
    }
    const int channels = power_of_two_dividing(per_group, N == 128 ? 4 : 8);
    const int lanes = N == 32 ? 8 : 16;
    if (lanes * channels >= 32) {
      v->split_states = true;
      v->threads = lanes;
      v->items = N == 32 ? 32 : N == 64 ? 16 : 8;
      v->channels = channels;
      return;
    }
  }
  /* 256 states with enough channels: lanes split the states too, 16 lanes of 16 states,
   * blocks of 4 steps, 8 channels, 4 blocks an SM (tuned on the H100: (1,512,2048,256) fp32
   * 385 us against 460 with lanes over time; the H200 chose 8 lanes, 308 against 465).
   * fp32 only: 16-bit state splits take blocks of 8 steps or more, and none was tuned. */
  if (N == 256 && v->dtype == SF_FP32 && rows >= 512 && seqlen >= 512 && per_group % 8 == 0) {
    v->split_states = true;
    v->threads = 16, v->items = 4, v->channels = 8, v->min_blocks = 4;
    return;
  }
  if (seqlen <= 32 && N <= 4) {
    /* tiny calls with a tiny state: every state at once, 4 steps a thread (both GPUs'
     * tuning: (1,4,16,4) 5.0-5.2 us against 6.3-6.5) */
    v->threads = 8, v->items = 4, v->channels = 4, v->states = N;
  } else if (seqlen <= 64) {
    v->threads = 8, v->items = 8, v->channels = 16;
    /* up to 4 states: 6 blocks an SM (76-79 registers; the branch-free softplus of
     * templates/softplus.tpl took N = 2 from 80 to 87 registers and 5 blocks: (64,512,49,2)
     * bf16 22.4 -> 24.1 us, docs/perf.md v36) */
    if (N <= 4) v->min_blocks = 6;
  } else if (seqlen <= 128) {
    v->threads = 16, v->items = 8, v->channels = 8;
  } else if (seqlen <= 256) {
    v->threads = 32, v->items = 8, v->channels = 4;
    if (N >= 64) v->threads = 64, v->items = 4, v->channels = 2, v->states = 2;
  } else if (N <= 2 && seqlen > 512) {
    /* one or two states over more than 512 steps (N = 2 from 128 to 4095 channels; the rest
     * took split=state above) */
    few_states_fill_once_over_time(v, rows, seqlen);
  } else if (seqlen <= 512 || rows >= 2048) {
    v->threads = 32, v->items = 16, v->channels = 4;
    /* 256 states: 128 threads over time a channel, 8 steps each, 4 blocks an SM
     * (1,512,2048,256 fp32: 466 us against 709 us with 32 threads of 16 steps) */
    if (N >= 256) v->threads = 128, v->items = 8, v->channels = 1, v->min_blocks = 4;
  } else if (seqlen >= 16384 && rows <= 256) {
    /* few channels over very long sequences: 256 threads a channel, 16 steps each (32 in
     * 16-bit types): (1,64,65536,16) 457 us fp32, 514 us bf16, against 692 and 958 us
     * with 128 threads of 16 steps */
    v->threads = 256, v->items = v->dtype == SF_FP32 ? 16 : 32, v->channels = 1;
  } else {
    v->threads = 128, v->items = 16, v->channels = 1;
    if (N >= 256) v->items = 8, v->min_blocks = 4;
  }
}

void sf_heuristic_configure_bwd(sf_variant *v, int64_t batch, int64_t dim, int groups, int64_t seqlen) {
  v->states = 4;
  v->min_blocks = 0;
  v->split_states = false;
  const int64_t per_group = groups > 0 ? dim / groups : dim;
  /* Measured on an H200 (docs/perf.md, backward v4): with many channels and a small
   * state, lanes split over states win: at N = 16, 2 lanes of 8 states, blocks of 8 steps,
   * 16 channels and a cap of 8 blocks per SM (1279 us for the Mamba-130M row in bf16,
   * 1556 us with 8 lanes of 2 states); at N = 8, 4 lanes of 2 states and 8 channels
   * (MambaVision-T stage 3: 79 us); at L = 49 the time split stays. */
  if (v->dstate % 4 == 0 && v->dstate <= 16 && batch * dim >= 4096 && seqlen >= 128) {
    /* At N = 4 one state a lane, 8 channels (H200, docs/perf.md v31: (8,1536,2048,4,z) bf16
     * 517 us against 667 with 2 lanes of 2 states and 16 channels, fp32 604 against 803,
     * (64,256,196,4) bf16 72.5 against 75.6; with block states 425, 474 and 57 against 624,
     * 722 and 60). At N = 16 with fewer than 8192 channels (batch 4 and under at Mamba's
     * widths) 4 lanes of 4 states and 16 channels, uncapped, whose blocks are few enough to
     * take segments (H200, docs/perf.md v32: (4,1536,2048,16,z) fp32 619 us against 715 for
     * 2 lanes capped at 8 blocks, bf16 522 against 540; with block states 504 against 629
     * and 438 against 480). */
    const bool small_batch16 = v->dstate == 16 && batch * dim < 8192;
    const int lanes = small_batch16 ? 4 : v->dstate >= 16 ? v->dstate / 8 : v->dstate == 4 ? 4 : v->dstate / 2;
    const int channels = small_batch16 ? 16 : 32 / lanes;
    if ((lanes & (lanes - 1)) == 0 && per_group % channels == 0) { /* lanes: a power of two */
      v->split_states = true;
      v->threads = lanes;
      /* 16-bit types at N = 8 under 1024 steps: blocks of 4 steps (both GPUs' tuning:
       * (64,160,196,8) bf16 93-98 us against 109-111 with 8); over 1024 steps or more 8
       * (H200, docs/perf.md v31: (8,1536,2048,8,z) bf16 592 us against 998 with 4; 498 against
       * 853 with block states) */
      v->items = v->dstate == 8 && v->dtype != SF_FP32 && seqlen < 1024 ? 4 : 8;
      v->channels = channels;
      v->states = 1; /* states interleaved per pass: fewer registers */
      v->min_blocks = v->dstate >= 16 && !small_batch16 ? 8 : 0;
      return;
    }
  }
  /* N = 2 with many channels over 1024 steps or more: 2 lanes of one state, blocks of 32
   * steps, 16 channels (H200, docs/perf.md v31-v32: (8,1536,2048,2,z) bf16 364 us with the
   * fast fetch, 282 with block states, against 706 for lanes over time and 440 and 348 for
   * blocks of 16 steps; with block states, blocks of 16 steps also make the forward save a
   * state mid-block: 156 us against 124). */
  if (v->dstate == 2 && batch * dim >= 4096 && seqlen >= 1024 && per_group % 16 == 0) {
    v->split_states = true;
    v->threads = 2, v->items = 32, v->channels = 16, v->states = 1;
    return;
  }
  /* N = 2 below 4096 channels over 1024 steps or more (H200, docs/perf.md v34; the general
   * rule below gave 64/8/4 at one block an SM): lanes over time, 64 threads of 8 steps, 2
   * channels, 2 states a pass, 4 blocks an SM, from a thousand channels up to 2048 steps
   * ((2,1536,2048,2,z) bf16 127 us against 189, (1,1536,2048,2,z) fp32 81 against 94);
   * fewer channels or longer sequences: 2 lanes of one state, blocks of 16 steps, 16
   * channels, with segments ((1,64,65536,2) fp32 124 against 788, (1,2048,4096,2) bf16 143
   * against 223). */
  if (v->dstate == 2 && batch * dim < 4096 && seqlen >= 1024 && per_group % 16 == 0) {
    if (batch * dim >= 1024 && seqlen <= 2048) {
      v->threads = 64, v->items = 8, v->channels = 2, v->states = 2, v->min_blocks = 4;
      return;
    }
    v->split_states = true;
    v->threads = 2, v->items = 16, v->channels = 16, v->states = 1;
    return;
  }
  /* N = 1 below 512 channels over 1024 steps or more: one lane, blocks of 8 steps, 32
   * channels, with segments (H200, docs/perf.md v35: (1,64,65536,1) fp32 136.7 us against 489.9
   * for lanes over time at 16 blocks in all, (1,256,16384,1,z) bf16 122.2 against 168.2) */
  if (v->dstate == 1 && batch * dim < 512 && seqlen >= 1024 && per_group % 32 == 0) {
    v->split_states = true;
    v->threads = 1, v->items = 8, v->channels = 32, v->states = 1;
    return;
  }
  /* Short sequences at N = 8 with many channels (MambaVision's L = 49): lanes over the
   * states as well, 4 lanes, blocks of 4 steps, 32 channels (both GPUs' tuning:
   * (64,320,49,8) 60-72 us against 78-96 with lanes over time). */
  if (v->dstate == 8 && batch * dim >= 4096 && seqlen < 128 && per_group % 16 == 0) {
    v->split_states = true;
    v->threads = 4, v->items = 4, v->channels = power_of_two_dividing(per_group, 32), v->states = 1;
    return;
  }
  /* Tiny calls at N = 16: 16 lanes of one state, blocks of 16 steps, 4 channels (both
   * GPUs' tuning: (4,16,64,16) 16.1-16.9 us against 27.9-28.7 with lanes over time). */
  if (v->dstate == 16 && batch * dim < 4096 && seqlen <= 128 && per_group % 4 == 0) {
    v->split_states = true;
    v->threads = 16, v->items = 16, v->channels = 4, v->states = 1;
    return;
  }
  /* Few channels over more than one state interval (docs/perf.md, backward v5, v7):
   * lanes split the states and segments run in parallel; 8 lanes and 8 channels a block
   * (313 us for 64 channels of 65536 steps against 4416 us with lanes over time; 38 us
   * for (1,256,1024,16) against 77 us). */
  if ((v->dstate == 4 || v->dstate == 8 || v->dstate == 16) && batch * dim < 4096 &&
      seqlen > 512 && per_group % 8 == 0) {
    v->split_states = true;
    v->threads = v->dstate < 8 ? v->dstate : 8;
    v->items = 8;
    v->channels = v->dstate < 8 ? 32 / v->dstate : 8;
    v->states = 1;
    /* N = 8, and N = 4 in 16-bit types, with a thousand channels or more: 4 lanes, blocks
     * of 16 steps (H200, docs/perf.md v32: (4,768,2048,8,z) bf16 202 us against 264 with 8
     * lanes of 8 steps, (1,1536,2048,8) fp32 129 against 144, (2,1536,2048,4,z) bf16 168
     * against 177 with 8 steps; (2,768,2048,4,z) fp32 124 against 121, so fp32 keeps 8) */
    if ((v->dstate == 8 || (v->dstate == 4 && v->dtype != SF_FP32)) && batch * dim >= 1024)
      v->threads = 4, v->items = 16, v->channels = 8;
    /* fp32 N = 4 there up to 4096 steps: 16 channels as well (H200, docs/perf.md v35:
     * (2,768,2048,4,z) 115.3 us against 121.8 for 8 steps and 8 channels, 101.7 against 105.7
     * with block states; at 8192 steps 8 channels stay, 233.8 against 239.7) */
    if (v->dstate == 4 && v->dtype == SF_FP32 && batch * dim >= 1024 && seqlen <= 4096 && per_group % 16 == 0)
      v->threads = 4, v->items = 16, v->channels = 16;
    /* At N = 16 with a thousand channels or more, or 16k steps or more: 4 lanes of 4
     * states and 16 channels (both GPUs' tuning: (1,1536,16384,16,z) 1294-1463 us against
     * 1465-1620, (1,64,65536,16) 260-296 us against 294-393; with fewer channels over
     * 1024 steps the 8 lanes stay: (1,256,1024,16), (1,768,1024,16) tuned to them) */
    if (v->dstate == 16 && (batch * dim >= 1024 || seqlen >= 16384) && per_group % 16 == 0)
      v->threads = 4, v->channels = 16;
    return;
  }
  /* Larger states over long sequences (docs/perf.md, backward v6): lanes split the
   * states, 8 (N = 32) or 16 of them a channel, 4 or 8 states each; 4 channels a block,
   * blocks of 8 steps, 4 at N = 128 (shared memory). H200, bf16: (2,512,2048,128) 1695 us.
   * At N = 64 both GPUs' tuning chose 4 channels over v6's 2 ((2,1024,4096,64) 1511-1633 us
   * against 2101-2222) and the state split from 256 steps on with a thousand channels
   * ((16,64,256,64) 86-88 us against 126 with lanes over time). 256 states: lanes over
   * time, 128 threads of 4 steps, 4 states a pass, 2 channels (1,512,2048,256 fp32: 1577 us).
   * At N = 128, since teams of lanes share each step's sums (backward v12), 32 lanes of
   * 4 states and a cap of 2 blocks an SM (the H100's tuning, fp32 and bf16: (2,512,2048,128)
   * 1101 and 1307 us against 1361 and 1584 with 16 lanes). */
  const int N = v->dstate;
  if ((N == 32 || N == 64 || N == 128) && (seqlen >= 1024 || (N == 64 && seqlen >= 256 && batch * dim >= 1024))) {
    const int lanes = N == 32 ? 8 : N == 64 ? 16 : 32, channels = 4;
    if (per_group % channels == 0) {
      v->split_states = true;
      v->threads = lanes;
      v->items = N == 128 ? 4 : 8;
      v->channels = channels;
      v->states = 1;
      if (N == 128) v->min_blocks = 2;
      return;
    }
  }
  if (N >= 256 && seqlen >= 512) {
    v->threads = 128, v->items = 4, v->channels = per_group % 2 == 0 ? 2 : 1, v->states = 4, v->min_blocks = 2;
    return;
  }
  const int interval = (int)sf_scan_state_interval(seqlen);
  /* the shortest interval with a tiny state: 16 threads of 4 steps (both GPUs' tuning:
   * (1,4,16,4) 11.5-11.7 us against 13.3-13.5 with 8 of 8) */
  int items = interval == 64 && N <= 4 ? 4 : 8;
  int threads = interval / items;
  /* Large states fill shared memory with per-channel sums: one channel per block. */
  int channels = v->dstate > 64 ? 1 : threads >= 64 ? 4 : 128 / threads;
  while (channels > 1 && per_group % channels != 0) channels /= 2;
  /* A block must fill whole warps: with few channels, give each more threads. */
  while (threads * channels < 32 && threads < interval) {
    threads *= 2;
    items = interval / threads;
  }
  v->threads = threads;
  v->items = items;
  v->channels = channels;
  /* One state over more than 512 steps (intervals of 512, so 64 threads of 8 steps): the
   * 64/8/4 kernel takes 195 registers, one block of 256 threads an SM; capped at 3 blocks it
   * spills 228 bytes and runs faster (H200, docs/perf.md v31: (8,1536,2048,1,z) bf16 317 us
   * against 513, (1,1536,2048,1) fp32 64 against 71). */
  if (N == 1 && seqlen > 512 && batch * dim >= 1024) v->min_blocks = 3;
}

/* The H100's tuning on the launches dynamic shared memory opened (docs/perf.md v20), at the
 * default interval: (2,512,2048,128,z) bf16 16/8/8 capped at 2 blocks an SM, 879.6 us
 * against 1270.3 for 32/4/4; (4,1024,2048,64,z) bf16 8/8/16, 1220.1 against 1560.9;
 * (1,512,2048,256) fp32 32/4/8 capped at 2, 899.4 against 1580.4 for split=time. */
void sf_heuristic_large_shared_bwd(sf_variant *v, int64_t batch, int64_t dim, int groups, int64_t seqlen,
                                   int shared_optin) {
  const int N = v->dstate;
  const int64_t per_group = groups > 0 ? dim / groups : dim;
  if (v->op != SF_OP_BWD || shared_optin < SF_LARGE_SHARED_MIN || seqlen < 1024 ||
      (N != 64 && N != 128 && N != 256))
    return;
  const int channels = N == 64 ? 16 : 8;
  if (per_group % channels != 0) return;
  (void)batch;
  v->split_states = true;
  v->threads = N / 8;
  v->items = N == 256 ? 4 : 8;
  v->channels = channels;
  v->states = 1;
  /* With the gate, N = 256's arrays leave room for one block an SM: a cap for two only spills
   * (H200, docs/perf.md v22: 8-13% slower on four shapes, fp32 and bf16). */
  v->min_blocks = N == 64 ? 0 : N == 256 && v->has_z ? 1 : 2;
}

/* The H100's tuning of the forward on the launches dynamic shared memory opened (docs/perf.md
 * v21): (2,512,2048,128,z) bf16 32/32/8 capped at 2 blocks an SM, 168.4 us against 220.2
 * for 8/8/16, fp32 157.8 against 214.3; (1,512,2048,256) fp32 32/8/8 263.3 us, 32/16/4
 * 274.6, against 339.8 for 16/4/8; (1,512,2048,256,z) bf16 32/16/4 271.9 us against 712.6
 * for split=time (no static layout fits a 16-bit N = 256 lane split). */
void sf_heuristic_large_shared_fwd(sf_variant *v, int64_t batch, int64_t dim, int groups, int64_t seqlen,
                                   int shared_optin) {
  const int N = v->dstate;
  const int64_t per_group = groups > 0 ? dim / groups : dim;
  /* However few the channels: split=time holds N states a thread and runs several times
   * slower, where this launch has segments of the sequence scanned in parallel when its
   * blocks are too few ((1,256,2048,256,z) bf16: 706 us on the H200 against 126-136 us for
   * 32 lanes of 16 steps on both GPUs, docs/perf.md v26; H200, docs/perf.md v30-v31:
   * (1,64,2048,256,z) bf16 670 -> 52 us, (1,256,2048,64,z) 119 -> 40 us, (1,32,4096,64,z)
   * 232 -> 20 us, (2,16,8192,256,z) 2801 -> 83 us, (1,48,8192,32) fp32 165 -> 28 us). */
  if (v->op != SF_OP_FWD || shared_optin < SF_LARGE_SHARED_MIN || seqlen < 1024 ||
      (N != 32 && N != 64 && N != 128 && N != 256))
    return;
  /* 4 states a lane up to 32 lanes (8 at N = 256), 128 (state, step) pairs a lane: long
   * blocks, few enough of them that the sequence needs no segments (docs/perf.md v22);
   * 1024 / N channels a block, or the most that divide a group (48 channels at N = 32: 16). */
  const int lanes = N / 4 < 32 ? N / 4 : 32;
  const int channels = power_of_two_dividing(per_group, 1024 / N);
  if (lanes * channels < 32) return; /* whole warps */
  (void)batch;
  v->split_states = true;
  v->threads = lanes;
  v->items = 128 / (N / lanes);
  v->channels = channels;
  v->states = 1;
  v->min_blocks = 2;
}

void sf_heuristic_choose(sf_variant *v, int64_t batch, int64_t dim, int groups, int64_t seqlen, int shared_optin) {
  if (v->op == SF_OP_BWD) {
    sf_heuristic_configure_bwd(v, batch, dim, groups, seqlen);
    sf_heuristic_large_shared_bwd(v, batch, dim, groups, seqlen, shared_optin);
  } else {
    sf_heuristic_configure(v, batch, dim, groups, seqlen);
    sf_heuristic_large_shared_fwd(v, batch, dim, groups, seqlen, shared_optin);
  }
}

/* Whether a split=state backward can run twice its lanes a channel, each lane keeping at
 * least SF_BWD_TWIN_MIN_STATES states (the condition both twins share). */
static bool lanes_can_double(const sf_variant *v) {
  return v->op == SF_OP_BWD && v->split_states && v->dstate % (2 * v->threads) == 0 &&
         v->dstate / (2 * v->threads) >= SF_BWD_TWIN_MIN_STATES;
}

bool sf_bwd_lanes_twin(const sf_variant *v, sf_variant *twin) {
  if (!lanes_can_double(v) || v->channels % 2 != 0) return false;
  *twin = *v;
  twin->threads *= 2;
  twin->channels /= 2;
  return true;
}

bool sf_capped_twin(const sf_variant *v, int blocks_per_sm, sf_variant *twin) {
  if (!v->split_states || blocks_per_sm > 32) return false;
  if (v->min_blocks >= blocks_per_sm) return false; /* already capped as hard or harder */
  *twin = *v;
  twin->min_blocks = blocks_per_sm;
  if (sf_variant_validate(twin) != SF_OK) {
    sf_clear_error();
    return false;
  }
  return true;
}

bool sf_bwd_spread_twin(const sf_variant *v, int blocks_per_sm, sf_variant *twin) {
  if (!lanes_can_double(v) || 2 * v->threads > SF_BWD_SPREAD_MAX_LANES || blocks_per_sm < 1 || blocks_per_sm > 32)
    return false;
  if (v->pairs && 2 * v->threads >= 32) return false; /* pairs=1 needs two channels in a warp */
  *twin = *v;
  twin->threads *= 2;
  twin->min_blocks = blocks_per_sm;
  if (sf_variant_validate(twin) != SF_OK) {
    sf_clear_error();
    return false;
  }
  return true;
}
