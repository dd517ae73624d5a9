// An HLO shape: an array (element type + dimensions [+ layout]) or a tuple of shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hlo/dtype.h"

namespace mk::hlo {

struct Layout {
  std::vector<int64_t> minor_to_major;  // e.g. {1,0} for row-major 2-D
  // Decorations after ':' (tiling "T(8,128)", memory space "S(1)", ...) kept verbatim so the
  // printer can reproduce them; nothing in maxkernel depends on them.
  std::string decorations;
  bool operator==(const Layout& o) const {
    return minor_to_major == o.minor_to_major && decorations == o.decorations;
  }
};

class Shape {
 public:
  Shape() = default;
  Shape(DType dtype, std::vector<int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {}
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Scalar(DType dtype) { return Shape(dtype, {}); }

  DType dtype() const { return dtype_; }
  void set_dtype(DType t) { dtype_ = t; }
  bool is_tuple() const { return dtype_ == DType::kTuple; }
  bool is_array() const { return !is_tuple() && dtype_ != DType::kToken; }
  bool is_token() const { return dtype_ == DType::kToken; }

  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& mutable_dims() { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t dim(int64_t i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t num_elements() const;  // product of dims (1 for a scalar); 0 for tuples
  int64_t byte_size() const;     // num_elements * element size (arrays only)

  const std::vector<Shape>& tuple_shapes() const { return tuple_; }
  std::vector<Shape>& mutable_tuple_shapes() { return tuple_; }
  const Shape& tuple_shape(int64_t i) const { return tuple_[static_cast<size_t>(i)]; }

  bool has_layout() const { return has_layout_; }
  const Layout& layout() const { return layout_; }
  void set_layout(Layout layout) {
    layout_ = std::move(layout);
    has_layout_ = true;
  }
  void clear_layout();

  // Equality of type and dimensions (layouts ignored, recursively for tuples).
  bool SameAs(const Shape& o) const;
  bool operator==(const Shape& o) const;  // exact, including layout

  // HLO text: "f32[2,3]{1,0}", "(f32[], s32[4])", "pred[]". Layout printed when present
  // and print_layout is true.
  std::string ToString(bool print_layout = true) const;

 private:
  DType dtype_ = DType::kF32;
  std::vector<int64_t> dims_;
  std::vector<Shape> tuple_;
  Layout layout_;
  bool has_layout_ = false;
};

// Row-major strides (in elements) of an array shape's dims, ignoring any layout.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims);

}  // namespace mk::hlo
