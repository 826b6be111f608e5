// scan_shapes.cc: rank, size and dtype checks of the ops' inputs, with messages naming the argument.
#include "tf_binding/cc/scan_shapes.h"

#include <initializer_list>
#include <string>

#include "absl/strings/str_cat.h"

namespace scanforge_tf {
namespace {

// One size of the problem and the argument that fixed it first, for messages.
struct Size {
  const char* name;
  int64_t value = -1;
  const char* source = "";
};

std::string Format(const PartialShape& s) {
  if (s.rank < 0) return "<unknown>";
  std::string out = "[";
  for (size_t i = 0; i < s.dims.size(); i++) {
    if (i) out += ",";
    out += s.dims[i] < 0 ? std::string("?") : std::to_string(s.dims[i]);
  }
  return out + "]";
}

absl::Status Unify(Size* size, int64_t got, const char* arg, size_t axis) {
  if (got < 0) return absl::OkStatus();
  if (size->value < 0) {
    size->value = got;
    size->source = arg;
    return absl::OkStatus();
  }
  if (size->value != got)
    return absl::InvalidArgumentError(absl::StrCat(arg, ": axis ", axis, " (", size->name, ") is ", got,
                                                   ", but ", size->source, " has ", size->name, " = ",
                                                   size->value));
  return absl::OkStatus();
}

// Checks the rank (when known) and matches each axis to a size of the problem.
absl::Status Match(const PartialShape& s, const char* arg, const char* layout, std::initializer_list<Size*> axes) {
  if (s.rank < 0) return absl::OkStatus();
  if (s.rank != static_cast<int>(axes.size()))
    return absl::InvalidArgumentError(absl::StrCat(arg, ": expected rank ", axes.size(), " ", layout,
                                                   ", got rank ", s.rank, " (shape ", Format(s), ")"));
  size_t axis = 0;
  for (Size* size : axes) {
    absl::Status st = Unify(size, s.dims[axis], arg, axis);
    if (!st.ok()) return st;
    axis++;
  }
  return absl::OkStatus();
}

// An absent optional input must be an empty placeholder, so a flag cannot silently drop data.
absl::Status CheckAbsent(const PartialShape& s, const char* arg, const char* flag) {
  if (s.rank < 0) return absl::OkStatus();
  int64_t elements = 1;
  for (int64_t d : s.dims) {
    if (d == 0) return absl::OkStatus();
    if (d < 0) elements = -1;
    else if (elements > 0) elements *= d;
  }
  if (elements < 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(arg, ": ", flag, " is false, so ", arg,
                                                 " must be an empty tensor, got shape ", Format(s)));
}

// B or C: rank 2 is fixed (dim, N) float32; rank 3 (batch, N, L) or rank 4 (batch, groups, N, L)
// is variable, in T.
absl::Status MatchStateInput(const PartialShape& s, sf_dtype type, sf_dtype T, const char* arg, Size* batch,
                             Size* dim, Size* groups, Size* N, Size* L, int* var) {
  *var = -1;
  if (s.rank < 0) return absl::OkStatus();
  if (s.rank == 2) {
    *var = 0;
    if (type != SF_FP32)
      return absl::InvalidArgumentError(absl::StrCat(arg, ": a fixed ", arg, " (rank 2, (dim, N)) must be float32, got ",
                                                     sf_dtype_name(type)));
    return Match(s, arg, "(dim, N)", {dim, N});
  }
  if (s.rank == 3 || s.rank == 4) {
    *var = 1;
    if (type != T)
      return absl::InvalidArgumentError(absl::StrCat(arg, ": a variable ", arg, " (rank ", s.rank,
                                                     ") must have u's dtype ", sf_dtype_name(T), ", got ",
                                                     sf_dtype_name(type)));
    if (s.rank == 4) return Match(s, arg, "(batch, groups, N, L)", {batch, groups, N, L});
    // (batch, N, L) is one group, laid out as (batch, 1, N, L): no reshape per call.
    if (groups->value > 1)
      return absl::InvalidArgumentError(absl::StrCat(arg, ": a rank-3 (batch, N, L) ", arg, " is one group, but ",
                                                     groups->source, " has groups = ", groups->value));
    if (groups->value < 0) *groups = Size{"groups", 1, arg};
    return Match(s, arg, "(batch, N, L)", {batch, N, L});
  }
  return absl::InvalidArgumentError(absl::StrCat(
      arg, ": expected rank 2 (dim, N) for a fixed ", arg, ", rank 3 (batch, N, L) or rank 4 (batch, groups, N, L) for a variable one, got rank ",
      s.rank, " (shape ", Format(s), ")"));
}

}  // namespace

absl::Status CheckScanInputs(const ScanInputs& in, ScanDims* dims) {
  Size batch{"batch"}, dim{"dim"}, L{"L"}, N{"N"}, groups{"groups"};
  absl::Status st;
#define SF_CHECK(expr)        \
  do {                        \
    st = (expr);              \
    if (!st.ok()) return st;  \
  } while (0)
  SF_CHECK(Match(in.u, "u", "(batch, dim, L)", {&batch, &dim, &L}));
  SF_CHECK(Match(in.delta, "delta", "(batch, dim, L)", {&batch, &dim, &L}));
  SF_CHECK(Match(in.A, "A", "(dim, N)", {&dim, &N}));
  SF_CHECK(MatchStateInput(in.B, in.TB, in.T, "B", &batch, &dim, &groups, &N, &L, &dims->B_var));
  SF_CHECK(MatchStateInput(in.C, in.TC, in.T, "C", &batch, &dim, &groups, &N, &L, &dims->C_var));
  if (in.has_D) SF_CHECK(Match(in.D, "D", "(dim,)", {&dim}));
  else SF_CHECK(CheckAbsent(in.D, "D", "has_D"));
  if (in.has_z) SF_CHECK(Match(in.z, "z", "(batch, dim, L)", {&batch, &dim, &L}));
  else SF_CHECK(CheckAbsent(in.z, "z", "has_z"));
  if (in.has_delta_bias) SF_CHECK(Match(in.delta_bias, "delta_bias", "(dim,)", {&dim}));
  else SF_CHECK(CheckAbsent(in.delta_bias, "delta_bias", "has_delta_bias"));
  if (in.has_h0) SF_CHECK(Match(in.h0, "h0 (initial_state)", "(batch, dim, N)", {&batch, &dim, &N}));
  else SF_CHECK(CheckAbsent(in.h0, "h0 (initial_state)", "has_h0"));
#undef SF_CHECK
  if (N.value >= 0 && (N.value < 1 || N.value > 256))
    return absl::InvalidArgumentError(
        absl::StrCat(N.source, ": d_state N is ", N.value, "; scanforge supports 1..256"));
  if (groups.value == 0)
    return absl::InvalidArgumentError(absl::StrCat(groups.source, ": groups must be >= 1, got 0"));
  if (groups.value > 0 && dim.value >= 0 && dim.value % groups.value != 0)
    return absl::InvalidArgumentError(absl::StrCat(groups.source, ": groups (", groups.value,
                                                   ") must divide dim (", dim.value, ")"));
  dims->batch = batch.value;
  dims->dim = dim.value;
  dims->seqlen = L.value;
  dims->dstate = N.value;
  dims->groups = groups.value;
  return absl::OkStatus();
}

absl::Status SavedInterval(int64_t seqlen, int64_t nsaved, int64_t* interval) {
  *interval = 0;
  if (nsaved == sf_scan_saved_states(seqlen) || seqlen <= 0) return absl::OkStatus();
  for (int64_t k = 4; k < sf_scan_state_interval(seqlen); k *= 2)
    if (sf_scan_saved_count(seqlen, k) == nsaved) return *interval = k, absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "saved_states: dimension 2 (", nsaved, ") is not the count of states saved at any state interval for L = ",
      seqlen, " (", sf_scan_saved_states(seqlen), " at the default interval); pass the forward's saved_states"));
}

absl::Status CheckScanGradInputs(const ScanDims& dims, const PartialShape& saved_states,
                                 const PartialShape& dout, const PartialShape& d_last_state,
                                 bool has_d_last_state) {
  Size batch{"batch", dims.batch, "u"}, dim{"dim", dims.dim, "u"}, L{"L", dims.seqlen, "u"};
  Size N{"N", dims.dstate, "A"}, saved{"saved states", -1, "u's L"};
  absl::Status st = Match(dout, "dout", "(batch, dim, L)", {&batch, &dim, &L});
  if (st.ok()) st = Match(saved_states, "saved_states", "(batch, dim, saved states, N)", {&batch, &dim, &saved, &N});
  int64_t interval;
  if (st.ok() && saved.value >= 0 && dims.seqlen >= 0) st = SavedInterval(dims.seqlen, saved.value, &interval);
  if (!st.ok()) return st;
  if (has_d_last_state) return Match(d_last_state, "d_last_state", "(batch, dim, N)", {&batch, &dim, &N});
  return CheckAbsent(d_last_state, "d_last_state", "has_d_last_state");
}

}  // namespace scanforge_tf
