// Index arithmetic shared by the windowed ops (convolution, reduce-window, select-and-scatter):
// per-axis tables that map (output position, window position) to an input index, and row-major
// offset tables. Computing these once per op keeps the inner loops free of divisions and checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hlo/instruction.h"

namespace mk::interp::window {

// One spatial axis of a window op after resolving padding, dilation and stride.
struct Axis {
  int64_t out_size = 0;
  int64_t window_size = 0;
  // input_index[o * window_size + w]: the input index read by output position o at window
  // position w, or -1 where that position falls into padding or a base-dilation hole.
  std::vector<int64_t> input_index;
};

// Window parameters beyond this are rejected: they are far past any real shape, and keeping
// them bounded means the index arithmetic below cannot overflow int64.
inline constexpr int64_t kMaxWindowParam = int64_t{1} << 31;

// Resolves one axis. On bad parameters returns false and sets `error`.
inline bool ResolveAxis(const hlo::WindowDimension& wd, int64_t in_size, Axis& axis,
                        std::string& error) {
  auto in_range = [](int64_t v, int64_t lo) { return v >= lo && v <= kMaxWindowParam; };
  if (!in_range(wd.size, 1) || !in_range(wd.stride, 1) || !in_range(wd.lhs_dilation, 1) ||
      !in_range(wd.rhs_dilation, 1) || wd.pad_low < -kMaxWindowParam ||
      wd.pad_low > kMaxWindowParam || wd.pad_high < -kMaxWindowParam ||
      wd.pad_high > kMaxWindowParam) {
    error = "window size/stride/dilation must be in [1, 2^31] and |padding| <= 2^31";
    return false;
  }
  if (in_size < 0 || in_size > kMaxWindowParam) {
    error = "input dimension out of the supported range";
    return false;
  }
  // All terms are bounded by 2^31, so these products stay below 2^63.
  int64_t dilated_in = in_size == 0 ? 0 : (in_size - 1) * wd.lhs_dilation + 1;
  int64_t padded = dilated_in + wd.pad_low + wd.pad_high;
  int64_t dilated_window = (wd.size - 1) * wd.rhs_dilation + 1;
  axis.window_size = wd.size;
  axis.out_size = padded < dilated_window ? 0 : (padded - dilated_window) / wd.stride + 1;
  if (axis.out_size * wd.size > (int64_t{1} << 40)) {
    error = "window index table would be too large";
    return false;
  }
  axis.input_index.assign(static_cast<size_t>(axis.out_size * wd.size), -1);
  for (int64_t o = 0; o < axis.out_size; ++o) {
    for (int64_t w = 0; w < wd.size; ++w) {
      int64_t p = o * wd.stride + w * wd.rhs_dilation - wd.pad_low;
      if (p < 0 || p >= dilated_in || p % wd.lhs_dilation != 0) continue;
      axis.input_index[static_cast<size_t>(o * wd.size + w)] = p / wd.lhs_dilation;
    }
  }
  return true;
}

// Steps a row-major multi-index; returns false after the last one (the index wraps to zeros).
inline bool Advance(std::vector<int64_t>& index, const std::vector<int64_t>& sizes) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < sizes[d]) return true;
    index[d] = 0;
  }
  return false;
}

// Offsets (sum of index * stride) of every point of the row-major product of `sizes`.
// `reversed[d]` walks axis d backwards (convolution's window reversal); may be empty.
inline std::vector<int64_t> OffsetTable(const std::vector<int64_t>& sizes,
                                        const std::vector<int64_t>& strides,
                                        const std::vector<bool>& reversed = {}) {
  int64_t count = 1;
  for (int64_t s : sizes) count *= s;
  std::vector<int64_t> table;
  if (count <= 0) return table;
  table.reserve(static_cast<size_t>(count));
  std::vector<int64_t> index(sizes.size(), 0);
  do {
    int64_t offset = 0;
    for (size_t d = 0; d < sizes.size(); ++d) {
      int64_t i = (!reversed.empty() && reversed[d]) ? sizes[d] - 1 - index[d] : index[d];
      offset += i * strides[d];
    }
    table.push_back(offset);
  } while (Advance(index, sizes));
  return table;
}

}  // namespace mk::interp::window
