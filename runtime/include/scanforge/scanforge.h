/* scanforge.h: the public C API of scanforge, the selective-scan kernel compiler.
 *
 * Error model: every call returns an sf_status; on failure the calling thread's last
 * error message (sf_last_error) names what went wrong: which argument, what was expected,
 * what came, or the NVRTC log, the CUresult, the errno. The library never prints, exits
 * or aborts. */
#ifndef SCANFORGE_SCANFORGE_H
#define SCANFORGE_SCANFORGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is compiled with hidden symbols; what this header declares is its API, so
 * the shared library exports it. */
#pragma GCC visibility push(default)

/* One list generates the enum, the names and the fixed strings. */
#define SF_STATUS_LIST(X)                                                        \
  X(SF_OK, "success")                                                            \
  X(SF_EINVAL, "invalid argument")                                               \
  X(SF_ETEMPLATE, "template error")                                              \
  X(SF_ECOMPILE, "kernel compilation failed")                                    \
  X(SF_ECACHE, "kernel cache error")                                             \
  X(SF_ECUDA, "CUDA driver error")                                               \
  X(SF_ENODEVICE, "no CUDA device or driver")                                    \
  X(SF_ENOMEM, "out of memory")                                                  \
  X(SF_ERESOURCE, "out of GPU resources")                                        \
  X(SF_EIO, "input/output error")                                                \
  X(SF_EUNSUPPORTED, "not supported")                                            \
  X(SF_EINTERNAL, "internal error")

typedef enum sf_status {
#define SF_STATUS_ENUM(name, text) name,
  SF_STATUS_LIST(SF_STATUS_ENUM)
#undef SF_STATUS_ENUM
} sf_status;

/* "SF_EINVAL" for SF_EINVAL. */
const char *sf_status_name(sf_status status);
/* A fixed one-line description of the status. */
const char *sf_status_string(sf_status status);
/* The detailed message of the calling thread's last failed call ("" if none). Valid
 * until this thread's next scanforge call. */
const char *sf_last_error(void);

/* ---- CUDA devices (runtime/cuda/device.c) ----------------------------------------------
 * The CUDA driver is opened at run time: without one these return SF_ENODEVICE and the
 * message says why (libcuda.so.1 not found, cuInit's error, ...). */
typedef struct sf_device_info {
  int ordinal;                    /* the CUDA device ordinal */
  char name[256];                 /* "NVIDIA H100 80GB HBM3" */
  int cc_major, cc_minor;         /* compute capability */
  int sm_count;                   /* streaming multiprocessors */
  uint64_t total_memory;          /* bytes of device memory */
  int l2_bytes;                   /* L2 cache size */
  int max_shared_per_block;       /* shared memory per block without opting in, bytes */
  int max_shared_per_block_optin; /* shared memory per block a kernel can opt in to, bytes */
  int max_shared_per_sm;          /* bytes */
  int max_registers_per_block;    /* 32-bit registers */
  int max_threads_per_block;
  int clock_khz;                  /* SM clock */
  int memory_clock_khz;           /* peak memory clock */
  int memory_bus_width;           /* bits */
  int driver_version;             /* the driver's CUDA version: 13000 for 13.0 */
} sf_device_info;

/* The number of CUDA devices visible to this process. */
sf_status sf_device_count(int *count);
/* Fills `info` for device `ordinal`, or, with ordinal -1, for the device of the calling
 * thread's current CUDA context (SF_EINVAL when none is current). */
sf_status sf_device_get_info(int ordinal, sf_device_info *info);

/* ---- variants ---------------------------------------------------------------------
 * A variant names one generated kernel. It is written as a spec string, e.g.
 * "op=fwd,dstate=16,dtype=bf16,threads=32,items=8,z=1,D=1,delta_bias=1,softplus=1,B=var,C=var"
 * Omitted keys take defaults; sf_variant_format writes the canonical spec. */
typedef enum sf_op { SF_OP_FWD = 0, SF_OP_BWD = 1 } sf_op;
typedef enum sf_dtype { SF_FP32 = 0, SF_FP16 = 1, SF_BF16 = 2 } sf_dtype;

typedef struct sf_variant {
  sf_op op;
  bool split_states; /* forward: "split=state": a channel's lanes split its N states and
                        each runs through time alone (threads = lanes per channel, items =
                        steps per block); "split=time" (default): lanes split time */
  int dstate;        /* N, 1..256 */
  sf_dtype dtype;    /* activation type T */
  int threads;       /* threads that scan one channel: a power of two, 1..1024 */
  int items;         /* time steps per thread per chunk; chunk = threads * items */
  int channels;      /* channels per block, each scanned by its own `threads` threads */
  int states;        /* states a thread works on at once (1..16): independent chains for
                        the scheduler; the template uses the largest divisor of dstate
                        not above it */
  int min_blocks;    /* blocks the kernel must fit per SM (__launch_bounds__), which caps
                        its registers; 0 leaves the choice to the compiler */
  bool has_z, has_D, has_delta_bias, softplus;
  bool B_var, C_var; /* true: (batch, G, N, L) in T; false: (dim, N) fp32 */
  bool deterministic; /* backward: fixed-order reductions, bitwise reproducible */
  bool pairs;        /* split=state backward with variable B and C: neighbouring channels
                        add their dB and dC terms with a shuffle before the block's sums,
                        which then need half the shared memory (more blocks an SM) */
  bool words;        /* split=state: the staged rows of the call do not all start on a
                        16-byte boundary, so the kernels copy them in 4-byte pieces; the
                        runtime sets it from the call's tensors (docs/design-row-alignment.md) */
} sf_variant;

/* The default variant (every key at its default). */
sf_variant sf_variant_default(void);
/* Parses a spec string; keys not present keep their defaults. */
sf_status sf_variant_parse(const char *spec, sf_variant *out);
/* Sets the keys the spec names on top of *inout (the others keep their values); on
 * failure *inout is unchanged. */
sf_status sf_variant_apply(const char *spec, sf_variant *inout);
/* Checks every key and combination; names the key, the value and what is allowed. */
sf_status sf_variant_validate(const sf_variant *v);
/* Threads of one block of the variant's kernel (threads x channels). */
int sf_variant_block_threads(const sf_variant *v);
/* True when pairs=1 can apply to the variant's knobs: a split=state backward with variable
 * B and C, an even number of channels and fewer than 32 lanes (two channels a warp or more). */
bool sf_variant_can_pair(const sf_variant *v);
/* Writes the canonical spec (every key, fixed order); returns the length it needs,
 * like snprintf. */
int sf_variant_format(const sf_variant *v, char *buf, size_t cap);
const char *sf_dtype_name(sf_dtype dtype);
/* Bytes per element of the activation type. */
int sf_dtype_size(sf_dtype dtype);


/* ---- the selective scan ----------------------------------------------------------
 * docs/math.md defines the function. Shapes: u, delta, z, out (batch, dim, L) with L
 * contiguous and any element strides for the batch and dim axes (0 means contiguous);
 * A (dim, N) fp32; B and C variable (batch, G, N, L) in T with L contiguous, or fixed
 * (dim, N) fp32 contiguous; D, delta_bias (dim,) fp32; h0, last_state (batch, dim, N)
 * fp32 contiguous. Optional inputs are NULL when absent. */
typedef struct sf_scan_fwd_args {
  int64_t batch, dim, seqlen;
  int dstate;   /* N, 1..256 */
  int groups;   /* G >= 1, divides dim; used when B or C is variable */
  sf_dtype dtype;
  bool delta_softplus;

  const void *u;
  int64_t u_batch_stride, u_dim_stride;
  const void *delta;
  int64_t delta_batch_stride, delta_dim_stride;
  const float *A;
  const void *B;
  bool B_var;
  int64_t B_batch_stride, B_group_stride, B_state_stride; /* variable B only */
  const void *C;
  bool C_var;
  int64_t C_batch_stride, C_group_stride, C_state_stride; /* variable C only */
  const float *D;          /* optional */
  const float *delta_bias; /* optional */
  const void *z;           /* optional gate */
  int64_t z_batch_stride, z_dim_stride;
  const float *h0;         /* optional initial state */

  void *out;
  int64_t out_batch_stride, out_dim_stride;
  float *last_state;       /* optional */
  /* optional: what the backward pass needs, (batch, dim, sf_scan_saved_count(L,
   * state_interval), N): the state after every state_interval-th step and after the last. */
  float *saved_states;
  /* Steps between saved states: 0 means sf_scan_state_interval(L); else a power of two
   * from 4 to sf_scan_state_interval(L). Shorter intervals cost memory and let the
   * backward skip recomputing states (sf_scan_bwd_block_states_interval says which one). The
   * backward must be given the same value (its fwd.state_interval). */
  int64_t state_interval;
} sf_scan_fwd_args;

/* The default steps between saved states for a sequence of length L: the next power of
 * two >= L, clamped to 64..512 (the chunk length of the backward pass). */
int64_t sf_scan_state_interval(int64_t seqlen);
/* Saved states per (batch, channel) at the default interval: ceil(L / interval); 0 for
 * L = 0. Saved state k is the state after step t where (t + 1) % interval == 0 or
 * t == L - 1, k = t / interval. */
int64_t sf_scan_saved_states(int64_t seqlen);
/* The same for a given interval (0: the default): ceil(L / interval). */
int64_t sf_scan_saved_count(int64_t seqlen, int64_t state_interval);
/* The interval args->state_interval resolves to (the default when it is 0). */
int64_t sf_scan_args_interval(const sf_scan_fwd_args *args);

/* Checks every argument of a forward call; the message names the argument, what was
 * expected and what came ("u_dim_stride: expected 0 or >= seqlen (196), got 100 ...").
 * - batch, dim, seqlen >= 0; any of them 0 means nothing to do: no pointer is needed
 *   and a call touches nothing. dstate 1..256; groups >= 1, dividing dim when B or C
 *   is variable; dtype one of sf_dtype.
 * - u, delta, A, B, C, out non-NULL when there is work; D, delta_bias, z, h0,
 *   last_state, saved_states may be NULL.
 * - Strides are in elements and >= 0; 0 means contiguous (dim -> L, batch -> dim *
 *   dim_stride; variable B/C: state -> L, group -> N * state, batch -> G * group).
 *   Strides of an absent z or of a fixed B or C must be 0.
 * - Rows of L elements must not overlap: take the strided axes of extent > 1 in
 *   increasing order of stride; the first must be >= L, each next one >= the previous
 *   stride times the previous extent. So (batch, dim, L) and (dim, batch, L) layouts,
 *   padded or not, are both accepted.
 * - Every tensor's extent in bytes must fit in int64. */
sf_status sf_scan_fwd_validate(const sf_scan_fwd_args *args);

/* ---- contexts and calls ----------------------------------------------------------
 * A context holds the kernel cache and the kernels loaded so far; one context may be
 * used from many threads at once. Kernels load into the device's primary context (the
 * one TensorFlow uses) unless a context is current on the calling thread. */
typedef struct sf_context sf_context;

typedef struct sf_context_options {
  const char *cache_dir;   /* NULL: $SCANFORGE_CACHE_DIR, else $XDG_CACHE_HOME/scanforge,
                              else ~/.cache/scanforge */
  bool cache_memory_only;  /* keep compiled kernels in memory only */
  uint64_t cache_max_bytes;/* 0: $SCANFORGE_CACHE_MAX_BYTES, else 1 GiB */
} sf_context_options;

/* Creates a context (options may be NULL). Fails only when out of memory. */
sf_status sf_context_create(const sf_context_options *options, sf_context **out);
/* Frees the context and unloads its kernels. NULL is a no-op. */
void sf_context_destroy(sf_context *ctx);
/* Something the user should hear once (e.g. the cache went memory-only), or NULL: the
 * first of the warnings below. */
const char *sf_context_warning(const sf_context *ctx);
/* Every warning of the context's kernel cache so far, oldest first, each text once
 * (memory-only fallback, a skipped read-only layer, ...); more may come as kernels load.
 * A caller that shows warnings remembers how many it showed. Valid until the context is
 * destroyed; NULL past the count. */
size_t sf_context_warning_count(const sf_context *ctx);
const char *sf_context_warning_at(const sf_context *ctx, size_t index);

/* Where and how a call runs. */
typedef struct sf_launch {
  bool on_host;       /* true: host memory, the CPU implementation */
  void *stream;       /* device: the CUstream to launch on (NULL is the legacy default
                         stream, which synchronises with others: pass your own) */
  int host_threads;   /* host: worker threads, <= 0 for one per CPU */
  const char *spec;   /* optional: a variant spec whose threads, items and channels
                         replace the tuned choice (its flags must match the call) */
  bool untuned;       /* device: ignore the tuning database, the heuristics choose (as
                         $SCANFORGE_TUNING=off does for the whole process) */
  bool spec_planned;  /* device, with spec: the launch plan may still replace the spec by
                         its twins (docs/design-waves.md) as it does a tuned choice, so
                         that the tuner times what a call tuned to the spec runs */
} sf_launch;

/* Something the user should hear once about the tuning database (a corrupt file, entries
 * measured with other templates), or NULL. The database is the file named by
 * $SCANFORGE_TUNING_DB, else tuning.json beside the kernel cache (docs/tuning.md). */
const char *sf_tuning_warning(void);

/* Every scanforge environment variable set to a value it cannot use, one line each
 * (naming the variable, the value, what was expected and the default used instead), or
 * NULL. Each bad variable falls back to its default and is named once per process; the
 * text stays valid until exit. README.md lists the variables. */
const char *sf_environment_warning(void);

/* Where the kernel of the last call came from, for benchmarks. */
typedef enum sf_kernel_origin {
  SF_KERNEL_LOADED = 0,   /* already loaded in this process: no file, no compile */
  SF_KERNEL_FROM_MEMORY,  /* compiled earlier by this process, loaded now */
  SF_KERNEL_FROM_DISK,    /* read from the disk cache and loaded */
  SF_KERNEL_COMPILED      /* generated and compiled by NVRTC */
} sf_kernel_origin;

/* The forward selective scan: validates every argument (SF_EINVAL naming it), then on
 * the device picks the variant, loads it through the cache and launches it on
 * launch->stream without synchronising; on the host runs the CPU implementation. */
sf_status sf_scan_fwd(sf_context *ctx, const sf_scan_fwd_args *args, const sf_launch *launch);

/* The variant a device call with these arguments would run (after launch->spec), as a
 * canonical spec, before the launch plan: the twins it may take and `words` (rows off
 * 16-byte alignment) are in sf_scan_fwd_shape's variant, which is what runs. */
sf_status sf_scan_fwd_variant(const sf_scan_fwd_args *args, const sf_launch *launch, sf_variant *out);

/* How a device call spreads over the GPU, for benchmarks and kernel experiments: its main
 * kernel's blocks over all its launches (channels / channels a block x batch rows x
 * segments), how many of them one SM holds at once (the driver's occupancy for the
 * kernel's threads, registers and shared memory), the SMs, and the segments of the
 * sequence scanned in parallel (0: one block walks every step; then a carry pass and a
 * combine run first, docs/design-segments.md). blocks / (blocks_per_sm x sm_count) is the
 * number of waves. */
typedef struct sf_launch_shape {
  sf_variant variant;
  int64_t blocks;
  int blocks_per_sm;
  int sm_count;
  int64_t segments;
} sf_launch_shape;

/* The shape of the device forward call with these arguments (launch may be NULL; its
 * stream is not used; on_host is refused). Loads the variant's kernel in the calling
 * thread's CUDA context, as the call would; launches nothing. A call with nothing to do
 * (batch, dim or seqlen 0) has a zeroed shape. */
sf_status sf_scan_fwd_shape(sf_context *ctx, const sf_scan_fwd_args *args, const sf_launch *launch,
                            sf_launch_shape *out);

/* ---- the backward pass -----------------------------------------------------------
 * Gradients of docs/math.md's backward. The forward's arguments are given again (`fwd`: u,
 * delta, A, B, C, D, delta_bias, z, h0, sizes and flags; its out and last_state are not
 * read) together with the states that forward saved (fwd.saved_states, required).
 * Gradients of activations are in T with their own strides (0 means contiguous);
 * gradients of parameters are fp32 and contiguous: dA (dim, N); dB, dC variable
 * (batch, G, N, L) or fixed (dim, N); dD, ddelta_bias (dim,); dh0 (batch, dim, N).
 * Every gradient pointer may be NULL to skip it (dz, dD, ddelta_bias, dh0 must be NULL
 * when the input is absent). Gradients are written, not accumulated. */
typedef struct sf_scan_bwd_args {
  sf_scan_fwd_args fwd;
  const void *dout;
  int64_t dout_batch_stride, dout_dim_stride;
  const float *d_last_state; /* optional (batch, dim, N) */

  void *du;
  int64_t du_batch_stride, du_dim_stride;
  void *ddelta;
  int64_t ddelta_batch_stride, ddelta_dim_stride;
  void *dz;
  int64_t dz_batch_stride, dz_dim_stride;
  float *dA, *dB, *dC, *dD, *ddelta_bias, *dh0;
  bool deterministic; /* device: bitwise identical results from run to run */
} sf_scan_bwd_args;

/* Checks every argument of a backward call, naming the one that is wrong. */
sf_status sf_scan_bwd_validate(const sf_scan_bwd_args *args);

/* The variant a device backward call with these arguments would run, as a canonical spec:
 * the tuned or heuristic choice (from the tuning database's block-states entries when
 * args->fwd.state_interval is not 0: docs/design-block-states.md), then launch->spec
 * (launch knobs only; with split=time, threads x items must equal
 * sf_scan_state_interval(seqlen); with variable B or C, channels must divide
 * dim / groups). Reads only the sizes, the flags, which optional inputs are present and
 * `deterministic`; launch may be NULL. Without a spec, the launch plan may still take the
 * lanes twin or pairs=1 when the blocks fit the GPU in fewer waves with them
 * (docs/design-waves.md), which only the device knows: sf_scan_bwd_shape's variant is the
 * one that runs. */
sf_status sf_scan_bwd_variant(const sf_scan_bwd_args *args, const sf_launch *launch, sf_variant *out);

/* The state interval at which backward variant `bwd` finds every block's starting state
 * saved, so it recomputes none (docs/design-block-states.md): its items for split=state
 * (at least 4, at most sf_scan_state_interval(seqlen)); the default interval for
 * split=time. A training forward that passes it as state_interval saves
 * N x 4 / interval bytes per step and channel (8 at N = 16 and 8 items). */
int64_t sf_scan_bwd_block_interval(const sf_variant *bwd, int64_t seqlen);

/* The state interval a training forward passes (its state_interval, and the backward's
 * fwd.state_interval, the same) so that the device backward of these arguments starts
 * every block from a saved state: sf_scan_bwd_block_interval of the variant that backward
 * runs, which is chosen in the block-states mode (tuned for it where the database has
 * block-states entries, else the heuristics; then launch->spec). args->fwd.state_interval
 * is ignored. SF_EINVAL when no backward variant suits the call (the message says why). */
sf_status sf_scan_bwd_block_states_interval(const sf_scan_bwd_args *args, const sf_launch *launch,
                                            int64_t *interval);

/* The shape of the device backward call with these arguments (sf_scan_fwd_shape's); its
 * variant is the one the call runs, the launch plan's lanes twin or pairs=1 included. */
sf_status sf_scan_bwd_shape(sf_context *ctx, const sf_scan_bwd_args *args, const sf_launch *launch,
                            sf_launch_shape *out);

/* The backward selective scan, on the device (launch->stream) or the host. On the device
 * dA, dB, dC, dD and ddelta_bias are accumulated with atomics into buffers this call
 * first zeroes on the stream. */
sf_status sf_scan_bwd(sf_context *ctx, const sf_scan_bwd_args *args, const sf_launch *launch);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
