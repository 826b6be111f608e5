// scan_kernels.cc: CPU and GPU kernels of MambaSelectiveScan(Grad), calling scanforge's sf_scan_fwd/sf_scan_bwd.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "scanforge/scanforge.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/platform/logging.h"
#include "tensorflow/core/util/determinism.h"
#include "tf_binding/cc/dtypes.h"
#include "tf_binding/cc/scan_shapes.h"
#include "xla/stream_executor/stream.h"
#include "xla/stream_executor/stream_executor.h"

namespace scanforge_tf {
namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;

// A library failure as a TensorFlow status; the library's message names the argument.
absl::Status FromSf(sf_status st, const char* call) {
  if (st == SF_OK) return absl::OkStatus();
  std::string message = absl::StrCat(call, ": ", sf_status_name(st), ": ", sf_last_error());
  switch (st) {
    case SF_EINVAL: return absl::InvalidArgumentError(message);
    case SF_ENOMEM:
    case SF_ERESOURCE: return absl::ResourceExhaustedError(message);
    case SF_EUNSUPPORTED: return absl::UnimplementedError(message);
    case SF_ENODEVICE: return absl::UnavailableError(message);
    default: return absl::InternalError(message);
  }
}

// One scanforge context for the process: it holds the kernel cache and loaded kernels,
// and is safe to use from TF's concurrent op threads. Never destroyed: its kernels may be
// in use until exit, and unloading them after the CUDA driver's teardown would fail.
absl::Status SharedContext(sf_context** out) {
  struct Shared {
    sf_context* ctx = nullptr;
    sf_status status = SF_OK;
    std::string error;
  };
  static const Shared* shared = [] {
    auto* s = new Shared;
    s->status = sf_context_create(nullptr, &s->ctx);
    if (s->status != SF_OK) s->error = sf_last_error();
    return s;
  }();
  if (shared->status != SF_OK)
    return absl::InternalError(absl::StrCat("sf_context_create: ", shared->error));
  *out = shared->ctx;
  return absl::OkStatus();
}

// Logs bad environment variables and each of the kernel cache's warnings (memory-only
// fallback, a skipped read-only layer, a damaged entry) once per process through TensorFlow's log: the library never
// prints, and unheard, a refused cache means every serving process recompiles its kernels.
// Called after every library call, since some warnings only arise as kernels load.
void ReportCacheWarnings(const sf_context* sf) {
  // Bad environment variables (sf_environment_warning), once, at the first call.
  static std::once_flag environment_once;
  std::call_once(environment_once, [] {
    if (const char* text = sf_environment_warning()) LOG(WARNING) << "scanforge: " << text;
  });
  static std::mutex mu;
  static std::atomic<size_t> reported{0};
  const size_t count = sf_context_warning_count(sf);
  if (count <= reported.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mu);
  // Counted again under the lock: a thread that read an older count must not log twice.
  const size_t now = sf_context_warning_count(sf);
  for (size_t i = reported.load(std::memory_order_relaxed); i < now; i++)
    LOG(WARNING) << "scanforge: " << sf_context_warning_at(sf, i);
  if (now > reported.load(std::memory_order_relaxed)) reported.store(now, std::memory_order_release);
}

PartialShape ShapeOf(const Tensor& t) {
  PartialShape p;
  p.rank = t.dims();
  for (int i = 0; i < t.dims(); i++) p.dims.push_back(t.dim_size(i));
  return p;
}

// Where the call runs: the host with TF's intra-op thread count, or the op's own CUDA
// stream with the stream's context made current (so multi-GPU ops use their device).
template <bool kGpu>
struct Placement {
  sf_launch launch = {};
  std::unique_ptr<stream_executor::ActivateContext> active;

  absl::Status Init(OpKernelContext* ctx) {
    if (!kGpu) {
      launch.on_host = true;
      launch.host_threads = ctx->device()->tensorflow_cpu_worker_threads()->num_threads;
      return absl::OkStatus();
    }
    stream_executor::Stream* stream = ctx->op_device_context() ? ctx->op_device_context()->stream() : nullptr;
    if (!stream) return absl::InternalError("MambaSelectiveScan: the GPU kernel has no stream");
    active = stream->parent()->Activate();
    launch.stream = stream->platform_specific_handle().stream;
    if (!launch.stream) return absl::InternalError("MambaSelectiveScan: the op's stream is not a CUDA stream");
    return absl::OkStatus();
  }
};

// The parts both ops share: attrs, the nine forward inputs and the forward's arguments.
class ScanKernelBase : public OpKernel {
 public:
  explicit ScanKernelBase(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("delta_softplus", &delta_softplus_));
    OP_REQUIRES_OK(c, c->GetAttr("has_D", &has_D_));
    OP_REQUIRES_OK(c, c->GetAttr("has_z", &has_z_));
    OP_REQUIRES_OK(c, c->GetAttr("has_delta_bias", &has_delta_bias_));
    OP_REQUIRES_OK(c, c->GetAttr("has_h0", &has_h0_));
  }

 protected:
  enum { kU, kDelta, kA, kB, kC, kD, kZ, kDeltaBias, kH0 };

  // Checks inputs 0..8 and fills the forward's sizes, flags and input pointers.
  absl::Status ReadForward(OpKernelContext* ctx, ScanDims* dims, sf_scan_fwd_args* args) const {
    ScanInputs in;
    PartialShape* shapes[] = {&in.u, &in.delta, &in.A, &in.B, &in.C, &in.D, &in.z, &in.delta_bias, &in.h0};
    for (int i = 0; i < 9; i++) *shapes[i] = ShapeOf(ctx->input(i));
    in.T = ToSfDtype(ctx->input_dtype(kU));
    in.TB = ToSfDtype(ctx->input_dtype(kB));
    in.TC = ToSfDtype(ctx->input_dtype(kC));
    in.has_D = has_D_;
    in.has_z = has_z_;
    in.has_delta_bias = has_delta_bias_;
    in.has_h0 = has_h0_;
    absl::Status st = CheckScanInputs(in, dims);
    if (!st.ok()) return st;

    auto ptr = [&](int i) -> void* { return const_cast<void*>(ctx->input(i).data()); };
    *args = sf_scan_fwd_args{};
    args->batch = dims->batch;
    args->dim = dims->dim;
    args->seqlen = dims->seqlen;
    args->dstate = static_cast<int>(dims->dstate);
    args->groups = dims->groups > 0 ? static_cast<int>(dims->groups) : 1;
    args->dtype = in.T;
    args->delta_softplus = delta_softplus_;
    args->u = ptr(kU);
    args->delta = ptr(kDelta);
    args->A = static_cast<const float*>(ptr(kA));
    args->B = ptr(kB);
    args->B_var = dims->B_var == 1;
    args->C = ptr(kC);
    args->C_var = dims->C_var == 1;
    args->D = has_D_ ? static_cast<const float*>(ptr(kD)) : nullptr;
    args->z = has_z_ ? ptr(kZ) : nullptr;
    args->delta_bias = has_delta_bias_ ? static_cast<const float*>(ptr(kDeltaBias)) : nullptr;
    args->h0 = has_h0_ ? static_cast<const float*>(ptr(kH0)) : nullptr;
    return absl::OkStatus();
  }

  bool delta_softplus_ = false, has_D_ = false, has_z_ = false, has_delta_bias_ = false, has_h0_ = false;
};

template <bool kGpu>
class ScanForwardOp : public ScanKernelBase {
 public:
  explicit ScanForwardOp(OpKernelConstruction* c) : ScanKernelBase(c) {
    OP_REQUIRES_OK(c, c->GetAttr("state_interval", &state_interval_));
    OP_REQUIRES_OK(c, c->GetAttr("deterministic", &deterministic_));
  }

  void Compute(OpKernelContext* ctx) override {
    ScanDims d;
    sf_scan_fwd_args args;
    OP_REQUIRES_OK(ctx, ReadForward(ctx, &d, &args));
    sf_context* sf;
    OP_REQUIRES_OK(ctx, SharedContext(&sf));
    Placement<kGpu> where;
    OP_REQUIRES_OK(ctx, where.Init(ctx));
    args.state_interval = state_interval_;
    if (state_interval_ < 0) args.state_interval = BlockInterval(args, where.launch);
    Tensor *out, *last_state, *saved_states;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(kU).shape(), &out));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({d.batch, d.dim, d.dstate}), &last_state));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({d.batch, d.dim, d.saved(args.state_interval), d.dstate}),
                                             &saved_states));
    args.out = out->data();
    args.last_state = static_cast<float*>(last_state->data());
    args.saved_states = static_cast<float*>(saved_states->data());
    const sf_status st = sf_scan_fwd(sf, &args, &where.launch);
    ReportCacheWarnings(sf);
    OP_REQUIRES_OK(ctx, FromSf(st, "sf_scan_fwd"));
  }

 private:
  // state_interval = -1: the interval at which the backward this call's gradient will run
  // finds every block's starting state (its variant's items); on the CPU, or when no
  // backward variant suits the call (its gradient would say why), the default.
  int64_t BlockInterval(const sf_scan_fwd_args& args, const sf_launch& launch) const {
    if (!kGpu) return 0;
    sf_scan_bwd_args bwd = {};
    bwd.fwd = args;
    bwd.deterministic = deterministic_ || tensorflow::OpDeterminismRequired();
    int64_t interval = 0;
    return sf_scan_bwd_block_states_interval(&bwd, &launch, &interval) == SF_OK ? interval : 0;
  }

  int64_t state_interval_ = 0;
  bool deterministic_ = false;
};

template <bool kGpu>
class ScanGradOp : public ScanKernelBase {
 public:
  explicit ScanGradOp(OpKernelConstruction* c) : ScanKernelBase(c) {
    OP_REQUIRES_OK(c, c->GetAttr("has_d_last_state", &has_d_last_state_));
    OP_REQUIRES_OK(c, c->GetAttr("deterministic", &deterministic_));
  }

  void Compute(OpKernelContext* ctx) override {
    enum { kSavedStates = 9, kDout, kDLastState };
    ScanDims d;
    sf_scan_bwd_args args = {};
    OP_REQUIRES_OK(ctx, ReadForward(ctx, &d, &args.fwd));
    OP_REQUIRES_OK(ctx, CheckScanGradInputs(d, ShapeOf(ctx->input(kSavedStates)), ShapeOf(ctx->input(kDout)),
                                            ShapeOf(ctx->input(kDLastState)), has_d_last_state_));
    args.fwd.saved_states = const_cast<float*>(static_cast<const float*>(ctx->input(kSavedStates).data()));
    OP_REQUIRES_OK(ctx, SavedInterval(d.seqlen, ctx->input(kSavedStates).dim_size(2), &args.fwd.state_interval));
    args.dout = ctx->input(kDout).data();
    args.d_last_state = has_d_last_state_ ? static_cast<const float*>(ctx->input(kDLastState).data()) : nullptr;

    const TensorShape activations = ctx->input(kU).shape();
    const TensorShape per_channel({d.dim}), empty({0});
    Tensor *du, *ddelta, *dA, *dB, *dC, *dD, *dz, *ddelta_bias, *dh0;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, activations, &du));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, activations, &ddelta));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({d.dim, d.dstate}), &dA));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(3, ctx->input(kB).shape(), &dB));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(4, ctx->input(kC).shape(), &dC));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(5, has_D_ ? per_channel : empty, &dD));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(6, has_z_ ? activations : empty, &dz));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(7, has_delta_bias_ ? per_channel : empty, &ddelta_bias));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(8, has_h0_ ? TensorShape({d.batch, d.dim, d.dstate}) : empty, &dh0));
    auto f32 = [](Tensor* t) { return static_cast<float*>(t->data()); };
    args.du = du->data();
    args.ddelta = ddelta->data();
    args.dA = f32(dA);
    args.dB = f32(dB);
    args.dC = f32(dC);
    args.dD = has_D_ ? f32(dD) : nullptr;
    args.dz = has_z_ ? dz->data() : nullptr;
    args.ddelta_bias = has_delta_bias_ ? f32(ddelta_bias) : nullptr;
    args.dh0 = has_h0_ ? f32(dh0) : nullptr;
    // TensorFlow's contract under op determinism: every op deterministic or raising.
    args.deterministic = deterministic_ || tensorflow::OpDeterminismRequired();
    sf_context* sf;
    OP_REQUIRES_OK(ctx, SharedContext(&sf));
    Placement<kGpu> where;
    OP_REQUIRES_OK(ctx, where.Init(ctx));
    const sf_status st = sf_scan_bwd(sf, &args, &where.launch);
    ReportCacheWarnings(sf);
    OP_REQUIRES_OK(ctx, FromSf(st, "sf_scan_bwd"));
  }

 private:
  bool has_d_last_state_ = false;
  bool deterministic_ = false;
};

// No type constraints: each kernel takes every T, TB and TC the op allows and hands the
// dtype to the library at run time.
REGISTER_KERNEL_BUILDER(Name("MambaSelectiveScan").Device(tensorflow::DEVICE_CPU), ScanForwardOp<false>);
REGISTER_KERNEL_BUILDER(Name("MambaSelectiveScan").Device(tensorflow::DEVICE_GPU), ScanForwardOp<true>);
REGISTER_KERNEL_BUILDER(Name("MambaSelectiveScanGrad").Device(tensorflow::DEVICE_CPU), ScanGradOp<false>);
REGISTER_KERNEL_BUILDER(Name("MambaSelectiveScanGrad").Device(tensorflow::DEVICE_GPU), ScanGradOp<true>);

}  // namespace
}  // namespace scanforge_tf
