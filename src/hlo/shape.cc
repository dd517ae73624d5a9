#include "hlo/shape.h"

namespace mk::hlo {

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape s;
  s.dtype_ = DType::kTuple;
  s.tuple_ = std::move(elements);
  return s;
}

int64_t Shape::num_elements() const {
  if (!is_array()) return 0;
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

int64_t Shape::byte_size() const { return num_elements() * DTypeByteSize(dtype_); }

void Shape::clear_layout() {
  layout_ = Layout{};
  has_layout_ = false;
  for (auto& t : tuple_) t.clear_layout();
}

bool Shape::SameAs(const Shape& o) const {
  if (dtype_ != o.dtype_) return false;
  if (is_tuple()) {
    if (tuple_.size() != o.tuple_.size()) return false;
    for (size_t i = 0; i < tuple_.size(); ++i) {
      if (!tuple_[i].SameAs(o.tuple_[i])) return false;
    }
    return true;
  }
  return dims_ == o.dims_;
}

bool Shape::operator==(const Shape& o) const {
  if (!SameAs(o) || has_layout_ != o.has_layout_ || !(layout_ == o.layout_)) return false;
  for (size_t i = 0; i < tuple_.size(); ++i) {
    if (!(tuple_[i] == o.tuple_[i])) return false;
  }
  return true;
}

std::string Shape::ToString(bool print_layout) const {
  if (is_tuple()) {
    std::string out = "(";
    for (size_t i = 0; i < tuple_.size(); ++i) {
      if (i) out += ", ";
      out += tuple_[i].ToString(print_layout);
    }
    return out + ")";
  }
  std::string out(DTypeName(dtype_));
  if (is_token()) return out + "[]";
  out += "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(dims_[i]);
  }
  out += "]";
  if (print_layout && has_layout_) {
    out += "{";
    for (size_t i = 0; i < layout_.minor_to_major.size(); ++i) {
      if (i) out += ",";
      out += std::to_string(layout_.minor_to_major[i]);
    }
    if (!layout_.decorations.empty()) out += ":" + layout_.decorations;
    out += "}";
  }
  return out;
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    strides[static_cast<size_t>(i)] =
        strides[static_cast<size_t>(i) + 1] * dims[static_cast<size_t>(i) + 1];
  }
  return strides;
}

}  // namespace mk::hlo
