// scan_shapes.h: one check of the ops' input shapes and dtypes, shared by shape inference and the kernels.
#ifndef SCANFORGE_TF_SCAN_SHAPES_H
#define SCANFORGE_TF_SCAN_SHAPES_H

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "scanforge/scanforge.h"

namespace scanforge_tf {

// A shape as far as it is known: rank -1 when unknown, a dimension -1 when unknown.
// Graph construction knows part of a shape; a kernel knows all of it.
struct PartialShape {
  int rank = -1;
  std::vector<int64_t> dims;
};

// The forward's inputs as the op receives them. Absent optional inputs (has_* false)
// arrive as empty tensors.
struct ScanInputs {
  PartialShape u, delta, A, B, C, D, z, delta_bias, h0;
  sf_dtype T = SF_FP32, TB = SF_FP32, TC = SF_FP32;
  bool has_D = false, has_z = false, has_delta_bias = false, has_h0 = false;
};

// What the inputs say about the problem; -1 where shape inference cannot know it.
struct ScanDims {
  int64_t batch = -1, dim = -1, seqlen = -1, dstate = -1, groups = -1;
  int B_var = -1, C_var = -1;  // 1 variable, 0 fixed, -1 unknown (B's rank unknown)
  // Saved states at an interval (0: the default); -1 where L is unknown.
  int64_t saved(int64_t interval = 0) const { return seqlen < 0 ? -1 : sf_scan_saved_count(seqlen, interval); }
};

// Checks ranks, sizes and dtypes; every message names the argument. Unknown ranks and
// dimensions pass (the kernel checks again with everything known).
absl::Status CheckScanInputs(const ScanInputs& in, ScanDims* dims);

// The state interval the forward's saved states were taken at, from their count (their
// dimension 2): 0 for the default interval's count, else the power of two from 4 up whose
// count it is (counts of 1 mean no state before the last: the default). An error names
// saved_states when no interval gives that count.
absl::Status SavedInterval(int64_t seqlen, int64_t nsaved, int64_t* interval);

// The gradient op's extra inputs: the forward's saved states (any interval's count), dout
// and d_last_state.
absl::Status CheckScanGradInputs(const ScanDims& dims, const PartialShape& saved_states,
                                 const PartialShape& dout, const PartialShape& d_last_state,
                                 bool has_d_last_state);

}  // namespace scanforge_tf

#endif
