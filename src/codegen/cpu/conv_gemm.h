// A convolution as an implicit GEMM through the blocked GEMM emitter (gemm_emitter.h): nothing is
// materialized; the packing gathers the im2col elements from the operands' value lambdas.
//
// Output b,f,spatial… (e.g. bf01_oi01->bf01): batch = (b, feature group), M = the group's output
// features, N = output positions; A = the kernel (lanes over output features), B = the input
// gathered (lanes over output positions). Output b,spatial…,f (one feature group): batch = 1,
// M = (b, output positions), N = output features; A = the input gathered, B = the kernel. Either
// way the output is row-major [batch][M][N], as the emitter writes it. K runs over the kernel's
// dims other than the output feature, in the kernel's dim order, so packing the kernel streams.
// Stride, low/high padding (negative too), window (rhs) and base (lhs) dilation, window
// reversal and feature groups are all index arithmetic in the gather; any other output layout,
// batch_group_count > 1, convolutions without spatial dims and non-float types keep the generic
// loop nest (materialize_conv.cc), ConvGemm::fallback saying why.
#pragma once

#include <string>
#include <vector>

#include "codegen/cpu/emit_context.h"
#include "codegen/cpu/gemm_emitter.h"
#include "codegen/cpu/gemm_params.h"

namespace mk::codegen::cpu {

// What one linearized GEMM dim (an entry of DotGeometry's batch/m/n/k dims) is in the conv.
enum class ConvAxis {
  kBatch,       // output batch (= input batch)
  kGroup,       // feature group
  kOutFeature,  // output feature within its group
  kInFeature,   // input feature within its group
  kPosition,    // output position along spatial dim `spatial`
  kWindow,      // window offset along spatial dim `spatial`
};

struct ConvAxisRef {
  ConvAxis axis;
  int64_t spatial = 0;
};

struct ConvGemm {
  DotGeometry g;  // the GEMM (sizes of each role's dims; lhs = A's, rhs = B's dtype)
  // The axis of every entry of g.batch_dims, m_dims, n_dims and k_dims.
  std::vector<ConvAxisRef> batch_axes, m_axes, n_axes, k_axes;
  bool features_are_m = true;  // output b,f,spatial…; false: b,spatial…,f
  // Why the generic loop nest lowers this convolution; empty when the GEMM path applies
  // (then g.blockable is set exactly when the types allow a blocked GEMM).
  std::string fallback;
};

// The GEMM view of `conv`. Malformed convolutions are an error; unsupported ones have
// `fallback` set.
Result<ConvGemm> AnalyzeConv(const hlo::Instruction& conv, const target::Target& target);

// The packing sources of A and B for `cg` (fallback empty) in `f`.
PackSource ConvSourceA(FunctionEmitter& f, const hlo::Instruction& conv, const ConvGemm& cg);
PackSource ConvSourceB(FunctionEmitter& f, const hlo::Instruction& conv, const ConvGemm& cg);

}  // namespace mk::codegen::cpu
