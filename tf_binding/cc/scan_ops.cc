// scan_ops.cc: registers MambaSelectiveScan and MambaSelectiveScanGrad with their shape functions.
//
// Optional inputs (D, z, delta_bias, h0, and the gradient's d_last_state) are always
// present as inputs; a bool attr has_<name> says whether they carry data, and an absent
// one is an empty tensor (shape [0]). Gradients of absent inputs come back empty too.
// B and C are fixed (dim, N) float32 at rank 2, variable in T at rank 3 (batch, N, L: one
// group) or rank 4 (batch, groups, N, L).
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tf_binding/cc/dtypes.h"
#include "tf_binding/cc/scan_shapes.h"

namespace scanforge_tf {
namespace {

using tensorflow::DataType;
using tensorflow::shape_inference::DimensionHandle;
using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

PartialShape FromHandle(InferenceContext* c, ShapeHandle s) {
  PartialShape p;
  if (!c->RankKnown(s)) return p;
  p.rank = c->Rank(s);
  for (int i = 0; i < p.rank; i++) {
    DimensionHandle d = c->Dim(s, i);
    p.dims.push_back(c->ValueKnown(d) ? c->Value(d) : -1);
  }
  return p;
}

DimensionHandle Dim(InferenceContext* c, int64_t value) {
  return value >= 0 ? c->MakeDim(value) : c->UnknownDim();
}

// Inputs 0..8 and the attrs are the same in both ops.
absl::Status CheckForwardInputs(InferenceContext* c, ScanDims* dims) {
  ScanInputs in;
  PartialShape* shapes[] = {&in.u, &in.delta, &in.A, &in.B, &in.C, &in.D, &in.z, &in.delta_bias, &in.h0};
  for (int i = 0; i < 9; i++) *shapes[i] = FromHandle(c, c->input(i));
  DataType T, TB, TC;
  absl::Status st = c->GetAttr("T", &T);
  if (st.ok()) st = c->GetAttr("TB", &TB);
  if (st.ok()) st = c->GetAttr("TC", &TC);
  if (st.ok()) st = c->GetAttr("has_D", &in.has_D);
  if (st.ok()) st = c->GetAttr("has_z", &in.has_z);
  if (st.ok()) st = c->GetAttr("has_delta_bias", &in.has_delta_bias);
  if (st.ok()) st = c->GetAttr("has_h0", &in.has_h0);
  if (!st.ok()) return st;
  in.T = ToSfDtype(T);
  in.TB = ToSfDtype(TB);
  in.TC = ToSfDtype(TC);
  return CheckScanInputs(in, dims);
}

absl::Status ForwardShape(InferenceContext* c) {
  ScanDims d;
  absl::Status st = CheckForwardInputs(c, &d);
  if (!st.ok()) return st;
  c->set_output(0, c->MakeShape({Dim(c, d.batch), Dim(c, d.dim), Dim(c, d.seqlen)}));
  c->set_output(1, c->MakeShape({Dim(c, d.batch), Dim(c, d.dim), Dim(c, d.dstate)}));
  int64_t interval = 0;  // -1: the backward's block interval, known when the op runs
  st = c->GetAttr("state_interval", &interval);
  if (!st.ok()) return st;
  const int64_t saved = interval < 0 ? -1 : d.saved(interval);
  c->set_output(2, c->MakeShape({Dim(c, d.batch), Dim(c, d.dim), Dim(c, saved), Dim(c, d.dstate)}));
  return absl::OkStatus();
}

absl::Status GradShape(InferenceContext* c) {
  ScanDims d;
  absl::Status st = CheckForwardInputs(c, &d);
  bool has_d_last_state = false, has_D, has_z, has_delta_bias, has_h0;
  if (st.ok()) st = c->GetAttr("has_d_last_state", &has_d_last_state);
  if (st.ok())
    st = CheckScanGradInputs(d, FromHandle(c, c->input(9)), FromHandle(c, c->input(10)),
                             FromHandle(c, c->input(11)), has_d_last_state);
  if (st.ok()) st = c->GetAttr("has_D", &has_D);
  if (st.ok()) st = c->GetAttr("has_z", &has_z);
  if (st.ok()) st = c->GetAttr("has_delta_bias", &has_delta_bias);
  if (st.ok()) st = c->GetAttr("has_h0", &has_h0);
  if (!st.ok()) return st;
  ShapeHandle activations = c->MakeShape({Dim(c, d.batch), Dim(c, d.dim), Dim(c, d.seqlen)});
  ShapeHandle per_channel = c->MakeShape({Dim(c, d.dim)});
  ShapeHandle empty = c->MakeShape({0});
  c->set_output(0, activations);                                       // du
  c->set_output(1, activations);                                       // ddelta
  c->set_output(2, c->MakeShape({Dim(c, d.dim), Dim(c, d.dstate)}));  // dA
  c->set_output(3, c->input(3));                                       // dB, B's shape
  c->set_output(4, c->input(4));                                       // dC, C's shape
  c->set_output(5, has_D ? per_channel : empty);
  c->set_output(6, has_z ? activations : empty);
  c->set_output(7, has_delta_bias ? per_channel : empty);
  c->set_output(8, has_h0 ? c->MakeShape({Dim(c, d.batch), Dim(c, d.dim), Dim(c, d.dstate)}) : empty);
  return absl::OkStatus();
}

}  // namespace
}  // namespace scanforge_tf

REGISTER_OP("MambaSelectiveScan")
    .Input("u: T")
    .Input("delta: T")
    .Input("a: float")
    .Input("b: TB")
    .Input("c: TC")
    .Input("d: float")
    .Input("z: T")
    .Input("delta_bias: float")
    .Input("h0: float")
    .Output("out: T")
    .Output("last_state: float")
    .Output("saved_states: float")
    .Attr("T: {float, half, bfloat16}")
    .Attr("TB: {float, half, bfloat16}")
    .Attr("TC: {float, half, bfloat16}")
    .Attr("delta_softplus: bool = false")
    .Attr("has_D: bool = false")
    .Attr("has_z: bool = false")
    .Attr("has_delta_bias: bool = false")
    .Attr("has_h0: bool = false")
    // Unused by the forward: carried to the gradient (MambaSelectiveScanGrad's).
    .Attr("deterministic: bool = false")
    // Steps between saved states: 0 the default (by L); -1 at the start of every block of
    // the backward this device will run (its items), so that the backward recomputes no
    // states (docs/design-block-states.md; more memory); else a power of two from 4 to the
    // default. The gradient reads the interval from saved_states' count.
    .Attr("state_interval: int >= -1 = 0")
    .SetShapeFn(scanforge_tf::ForwardShape);

REGISTER_OP("MambaSelectiveScanGrad")
    .Input("u: T")
    .Input("delta: T")
    .Input("a: float")
    .Input("b: TB")
    .Input("c: TC")
    .Input("d: float")
    .Input("z: T")
    .Input("delta_bias: float")
    .Input("h0: float")
    .Input("saved_states: float")
    .Input("dout: T")
    .Input("d_last_state: float")
    .Output("du: T")
    .Output("ddelta: T")
    .Output("da: float")
    .Output("db: float")
    .Output("dc: float")
    .Output("dd: float")
    .Output("dz: T")
    .Output("ddelta_bias: float")
    .Output("dh0: float")
    .Attr("T: {float, half, bfloat16}")
    .Attr("TB: {float, half, bfloat16}")
    .Attr("TC: {float, half, bfloat16}")
    .Attr("delta_softplus: bool = false")
    .Attr("has_D: bool = false")
    .Attr("has_z: bool = false")
    .Attr("has_delta_bias: bool = false")
    .Attr("has_h0: bool = false")
    .Attr("has_d_last_state: bool = false")
    // Fixed-order sums on the GPU, bitwise reproducible; also on whenever TensorFlow's
    // op determinism is (tf.config.experimental.enable_op_determinism).
    .Attr("deterministic: bool = false")
    .SetShapeFn(scanforge_tf::GradShape);
