// HLO instructions with typed attributes. One struct for every opcode: an attribute that an
// opcode does not use stays at its default and is not printed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hlo/literal.h"
#include "hlo/opcode.h"
#include "hlo/shape.h"
#include "support/status.h"

namespace mk::hlo {

class Computation;

struct DotDimensions {
  std::vector<int64_t> lhs_batch, lhs_contracting, rhs_batch, rhs_contracting;
  bool operator==(const DotDimensions&) const = default;
};

// One spatial dimension of `window={size=3x3 stride=2x2 pad=0_1x1_1 lhs_dilate=... ...}`.
struct WindowDimension {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t pad_low = 0;
  int64_t pad_high = 0;
  int64_t lhs_dilation = 1;  // base dilation
  int64_t rhs_dilation = 1;  // window dilation
  bool reversal = false;     // `rhs_reversal=0x1`
  bool operator==(const WindowDimension&) const = default;
};

// `dim_labels=b01f_01io->b01f`: which logical dimension each operand/result axis holds.
struct ConvDimensionNumbers {
  int64_t input_batch = 0, input_feature = 0;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 0, kernel_output_feature = 0;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0, output_feature = 0;
  std::vector<int64_t> output_spatial;
  bool operator==(const ConvDimensionNumbers&) const = default;
};

struct SliceDimension {  // `slice={[start:limit:stride], ...}`
  int64_t start = 0, limit = 0, stride = 1;
  bool operator==(const SliceDimension&) const = default;
};

struct PaddingDimension {  // `padding=lo_hi_interior x ...`; lo/hi may be negative
  int64_t low = 0, high = 0, interior = 0;
  bool operator==(const PaddingDimension&) const = default;
};

struct GatherDimensions {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map;
  std::vector<int64_t> operand_batching_dims, start_indices_batching_dims;
  int64_t index_vector_dim = 0;
  bool operator==(const GatherDimensions&) const = default;
};

struct ScatterDimensions {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  std::vector<int64_t> input_batching_dims, scatter_indices_batching_dims;
  int64_t index_vector_dim = 0;
  bool operator==(const ScatterDimensions&) const = default;
};

enum class ComparisonDirection { kEq, kNe, kLt, kLe, kGt, kGe };
std::string_view ComparisonDirectionName(ComparisonDirection d);  // "EQ", ...
std::optional<ComparisonDirection> ParseComparisonDirection(std::string_view s);

class Instruction {
 public:
  std::string name;
  Opcode opcode = Opcode::kParameter;
  Shape shape;
  std::vector<Instruction*> operands;  // owned by the same Computation
  SourceLoc loc;                       // where the parser found it (for error messages)

  // Called computations, in the order their attributes define:
  //   to_apply / calls: [c]; while: [condition, body]; select-and-scatter: [select, scatter];
  //   conditional: branch_computations (true_computation, false_computation for a pred branch).
  std::vector<Computation*> called;

  // --- attributes (used by the opcodes named) ---
  int64_t parameter_number = 0;                  // parameter
  std::optional<Literal> literal;                // constant; unset when printed as `{...}`
  std::vector<int64_t> dimensions;               // broadcast, transpose, reduce, reverse,
                                                 // concatenate, sort, map, reduce-precision-free
  std::optional<DotDimensions> dot_dims;         // dot
  std::vector<std::string> operand_precision;    // dot, convolution: `operand_precision={high,default}`
  std::optional<std::vector<WindowDimension>> window;  // convolution, reduce-window, s&s
  std::optional<ConvDimensionNumbers> conv_dims;       // convolution
  int64_t feature_group_count = 1;               // convolution
  int64_t batch_group_count = 1;                 // convolution
  std::vector<SliceDimension> slice;             // slice
  std::vector<PaddingDimension> padding;         // pad
  std::optional<ComparisonDirection> direction;  // compare
  std::string comparison_type;                   // compare: FLOAT, TOTALORDER, SIGNED, UNSIGNED
  int64_t iota_dimension = 0;                    // iota
  std::vector<int64_t> dynamic_slice_sizes;      // dynamic-slice
  std::optional<GatherDimensions> gather_dims;   // gather
  std::vector<int64_t> gather_slice_sizes;       // gather: slice_sizes
  std::optional<ScatterDimensions> scatter_dims; // scatter
  bool indices_are_sorted = false;               // gather, scatter
  bool unique_indices = false;                   // scatter
  bool is_stable = false;                        // sort
  int64_t tuple_index = 0;                       // get-tuple-element: index
  std::string custom_call_target;                // custom-call
  int64_t exponent_bits = 0, mantissa_bits = 0;  // reduce-precision
  std::string rng_algorithm;                     // rng-bit-generator: rng_default, rng_philox, ...
  std::string rng_distribution;                  // rng: rng_uniform / rng_normal
  bool has_largest = true;                       // topk: largest=true
  int64_t k = 0;                                 // topk

  // Attributes we keep but do not interpret, printed back verbatim as `key=value`
  // (e.g. `backend_config`-free extras such as `api_version=...`). Metadata-like attributes
  // (metadata, sharding, frontend_attributes, backend_config, ...) are dropped by the parser.
  std::map<std::string, std::string> extra_attributes;

  const Instruction* operand(size_t i) const { return operands[i]; }
  Instruction* mutable_operand(size_t i) { return operands[i]; }
  size_t operand_count() const { return operands.size(); }
  Computation* to_apply() const { return called.empty() ? nullptr : called[0]; }
};

}  // namespace mk::hlo
