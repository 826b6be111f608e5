/* measure.h: timing device work with CUDA events (bench and tune): a spin kernel keeps host enqueue time out, rotated random inputs keep L2 out. */
#ifndef SCANFORGE_TUNING_MEASURE_H
#define SCANFORGE_TUNING_MEASURE_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/cuda/cuda_driver.h"
#include "scanforge/scanforge.h"

/* ---- statistics ------------------------------------------------------------------------ */

typedef struct sf_timing {
  double median, min, p90; /* ms */
  int reps;
} sf_timing;

/* Sorts ms[0..n) (n >= 1) and summarises it: median (mean of the middle two for even n),
 * min, and p90 (the ceil(0.9 n)-th smallest). */
sf_timing sf_timing_of(float *ms, int n);

/* ---- the timer -------------------------------------------------------------------------- */

/* Each timed run is queued behind a kernel that spins this long on the GPU, so that the
 * two events around the run see the device's time, not the host's enqueue time. */
#define SF_SPIN_NS 100000ull

typedef struct sf_timer {
  const sf_cu *cu;
  CUstream stream;     /* non-blocking: runs to time go here */
  CUevent start, stop;
  CUmodule spin_module;
  CUfunction spin;     /* NULL when it could not be loaded (then the host's time shows) */
} sf_timer;

/* Opens the driver and makes the timer in the calling thread's current context (the
 * primary context of device 0 when none is current). */
sf_status sf_timer_open(sf_timer *t);
/* Frees what the timer holds; a zeroed timer is fine. */
void sf_timer_close(sf_timer *t);

/* Work to time: queues itself on `stream` and returns its status (not waiting). */
typedef sf_status (*sf_timed_fn)(void *user, CUstream stream);

/* Times one run of fn: the spin kernel, the start event, fn, the stop event; waits for
 * the stop event. *ms is the time between the events. */
sf_status sf_timer_time_one(sf_timer *t, sf_timed_fn fn, void *user, float *ms);

/* Device-to-device copy bandwidth in bytes read + written per second: the median of 10
 * timed copies of 1 GiB (halved until two buffers fit, down to 64 MiB) after 2 untimed. */
sf_status sf_timer_copy_bandwidth(sf_timer *t, double *bytes_per_s, size_t *bytes_used);

/* The time of a launch that does nothing, timed as sf_timer_time_one times any run: the
 * median of 20 launches (after 3 untimed) of the spin kernel of one thread told to spin 0
 * ns. What the smallest calls cannot go below on this GPU and driver. *us is negative when
 * the spin kernel did not load (nothing to launch, and no spin to hide the host's time). */
sf_status sf_timer_empty_launch(sf_timer *t, double *us);

/* ---- rotated inputs of a scan call ---------------------------------------------------------- */

/* The tensors of one forward or backward call, in a fixed order. */
enum {
  SF_MT_U, SF_MT_DELTA, SF_MT_Z, SF_MT_B, SF_MT_C, SF_MT_A, SF_MT_D, SF_MT_BIAS,
  SF_MT_OUT, SF_MT_LAST, SF_MT_SAVED,
  SF_MT_DOUT, SF_MT_DU, SF_MT_DDELTA, SF_MT_DZ, SF_MT_DA, SF_MT_DB, SF_MT_DC, SF_MT_DD, SF_MT_DBIAS,
  SF_MT_COUNT
};

typedef struct sf_measure_shape {
  int64_t batch, dim, seqlen;
  int dstate, groups;
  sf_dtype dtype;
  bool z, D, delta_bias, softplus, B_var, C_var;
  bool backward; /* the backward's tensors too (cotangent, gradients) */
  int64_t state_interval; /* steps between saved states (sf_scan_fwd_args'); 0: the default */
} sf_measure_shape;

/* `sets` copies of every tensor of a call, filled with random values of realistic size
 * (dt a few hundredths, A = -exp(U(0, 1))); outputs and gradients zeroed. */
typedef struct sf_measure_sets {
  sf_measure_shape shape;
  CUdeviceptr base[SF_MT_COUNT];
  size_t count[SF_MT_COUNT];  /* elements of one set (0: the tensor is absent) */
  int size[SF_MT_COUNT];      /* bytes per element */
  size_t stride[SF_MT_COUNT]; /* bytes from one set to the next, 256-aligned */
  size_t set_bytes;           /* bytes of one set, all tensors */
  int sets;
} sf_measure_sets;

/* The inputs (u, delta, z, B, C, A, D, delta_bias, and dout for a backward) and outputs
 * (out, last_state, saved states) that one call reads and writes at least, in bytes. */
double sf_measure_call_bytes(const sf_measure_shape *shape);

/* Allocates as many sets as make the working set reach `min_bytes` (at least 1, at most
 * max_sets), fills them and waits until the copies are done. */
sf_status sf_measure_sets_alloc(const sf_cu *cu, const sf_measure_shape *shape, double min_bytes, int max_sets,
                                sf_measure_sets *out);
void sf_measure_sets_free(const sf_cu *cu, sf_measure_sets *s);

/* The arguments of a call on set `set` (saved_states always given). */
sf_scan_fwd_args sf_measure_fwd_args(const sf_measure_sets *s, int set);
sf_scan_bwd_args sf_measure_bwd_args(const sf_measure_sets *s, int set);

#endif
