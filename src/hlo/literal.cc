#include "hlo/literal.h"

#include <cmath>
#include <cstdio>

namespace mk::hlo {

Literal::Literal(const Shape& shape) : shape_(shape) {
  if (shape.is_tuple()) {
    for (const Shape& s : shape.tuple_shapes()) tuple_.emplace_back(s);
  } else if (shape.is_array()) {
    bytes_.assign(static_cast<size_t>(shape.byte_size()), 0);
  }
}

Literal Literal::Tuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  for (const auto& e : elements) shapes.push_back(e.shape());
  Literal lit;
  lit.shape_ = Shape::Tuple(std::move(shapes));
  lit.tuple_ = std::move(elements);
  return lit;
}

namespace {
template <typename T>
T Load(const std::vector<uint8_t>& b, int64_t i) {
  T v;
  std::memcpy(&v, b.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void Store(std::vector<uint8_t>& b, int64_t i, T v) {
  std::memcpy(b.data() + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
}
}  // namespace

double Literal::GetDouble(int64_t i) const {
  switch (dtype()) {
    case DType::kPred: return Load<uint8_t>(bytes_, i) ? 1.0 : 0.0;
    case DType::kF16: return static_cast<float>(Load<f16_t>(bytes_, i));
    case DType::kBF16: return static_cast<float>(Load<bf16_t>(bytes_, i));
    case DType::kF32: return Load<float>(bytes_, i);
    case DType::kF64: return Load<double>(bytes_, i);
    default:
      if (IsUnsignedInt(dtype())) return static_cast<double>(GetUInt64(i));
      return static_cast<double>(GetInt64(i));
  }
}

void Literal::SetDouble(int64_t i, double v) {
  switch (dtype()) {
    case DType::kPred: Store<uint8_t>(bytes_, i, v != 0.0 ? 1 : 0); return;
    case DType::kF16: Store(bytes_, i, f16_t(static_cast<float>(v))); return;
    case DType::kBF16: Store(bytes_, i, bf16_t(static_cast<float>(v))); return;
    case DType::kF32: Store(bytes_, i, static_cast<float>(v)); return;
    case DType::kF64: Store(bytes_, i, v); return;
    default:
      if (IsUnsignedInt(dtype())) {
        SetUInt64(i, v <= 0 ? 0 : static_cast<uint64_t>(v));
      } else {
        SetInt64(i, static_cast<int64_t>(v));
      }
  }
}

int64_t Literal::GetInt64(int64_t i) const {
  switch (dtype()) {
    case DType::kPred: return Load<uint8_t>(bytes_, i) ? 1 : 0;
    case DType::kS8: return Load<int8_t>(bytes_, i);
    case DType::kS16: return Load<int16_t>(bytes_, i);
    case DType::kS32: return Load<int32_t>(bytes_, i);
    case DType::kS64: return Load<int64_t>(bytes_, i);
    case DType::kU8: return Load<uint8_t>(bytes_, i);
    case DType::kU16: return Load<uint16_t>(bytes_, i);
    case DType::kU32: return Load<uint32_t>(bytes_, i);
    case DType::kU64: return static_cast<int64_t>(Load<uint64_t>(bytes_, i));
    default: return static_cast<int64_t>(GetDouble(i));
  }
}

void Literal::SetInt64(int64_t i, int64_t v) {
  switch (dtype()) {
    case DType::kPred: Store<uint8_t>(bytes_, i, v != 0 ? 1 : 0); return;
    case DType::kS8: Store(bytes_, i, static_cast<int8_t>(v)); return;
    case DType::kS16: Store(bytes_, i, static_cast<int16_t>(v)); return;
    case DType::kS32: Store(bytes_, i, static_cast<int32_t>(v)); return;
    case DType::kS64: Store(bytes_, i, v); return;
    case DType::kU8: Store(bytes_, i, static_cast<uint8_t>(v)); return;
    case DType::kU16: Store(bytes_, i, static_cast<uint16_t>(v)); return;
    case DType::kU32: Store(bytes_, i, static_cast<uint32_t>(v)); return;
    case DType::kU64: Store(bytes_, i, static_cast<uint64_t>(v)); return;
    default: SetDouble(i, static_cast<double>(v));
  }
}

uint64_t Literal::GetUInt64(int64_t i) const {
  if (dtype() == DType::kU64) return Load<uint64_t>(bytes_, i);
  return static_cast<uint64_t>(GetInt64(i));
}

void Literal::SetUInt64(int64_t i, uint64_t v) {
  if (dtype() == DType::kU64) {
    Store(bytes_, i, v);
    return;
  }
  SetInt64(i, static_cast<int64_t>(v));
}

bool Literal::operator==(const Literal& o) const {
  if (!shape_.SameAs(o.shape_)) return false;
  if (shape_.is_tuple()) {
    for (size_t i = 0; i < tuple_.size(); ++i) {
      if (!(tuple_[i] == o.tuple_[i])) return false;
    }
    return true;
  }
  return bytes_ == o.bytes_;
}

std::string FormatFloat(double v, DType t) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  // Shortest %g precision that reproduces the value in the literal's own type.
  int max_digits = t == DType::kF64 ? 17 : 9;
  char buf[64];
  for (int digits = 1; digits <= max_digits; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
    double back = std::strtod(buf, nullptr);
    bool same = t == DType::kF64 ? back == v : static_cast<float>(back) == static_cast<float>(v);
    if (same) break;
  }
  return buf;
}

namespace {
void AppendValues(const Literal& lit, int64_t dim, int64_t& index, std::string& out) {
  const Shape& s = lit.shape();
  if (dim == s.rank()) {
    DType t = lit.dtype();
    if (t == DType::kPred) {
      out += lit.GetInt64(index) ? "true" : "false";
    } else if (IsFloat(t)) {
      out += FormatFloat(lit.GetDouble(index), t);
    } else if (IsUnsignedInt(t)) {
      out += std::to_string(lit.GetUInt64(index));
    } else {
      out += std::to_string(lit.GetInt64(index));
    }
    ++index;
    return;
  }
  out += "{";
  for (int64_t i = 0; i < s.dim(dim); ++i) {
    if (i) out += ", ";
    AppendValues(lit, dim + 1, index, out);
  }
  out += "}";
}
}  // namespace

std::string Literal::ValuesToString() const {
  if (shape_.is_tuple()) {
    std::string out = "(";
    for (size_t i = 0; i < tuple_.size(); ++i) {
      if (i) out += ", ";
      out += tuple_[i].ValuesToString();
    }
    return out + ")";
  }
  if (!IsEvaluable(dtype())) return "{...}";
  std::string out;
  int64_t index = 0;
  AppendValues(*this, 0, index, out);
  return out;
}

}  // namespace mk::hlo
