// Shapes and constant values of HLO text.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "hlo/parse_internal.h"

namespace mk::hlo::parse {

bool AtShapeStart(Lexer& lx) {
  lx.SkipTrivia();
  if (lx.Peek() == '(') return true;
  size_t i = 0;
  while (IsAsciiAlpha(lx.Peek(i)) || IsAsciiDigit(lx.Peek(i))) ++i;
  if (i == 0 || lx.Peek(i) != '[') return false;
  auto dtype = ParseDType(lx.text().substr(lx.pos(), i));
  return dtype.has_value() && *dtype != DType::kTuple;
}

namespace {

// After `f32[2,3]`: a `{` opens a layout only when a digit, `:` or `}` follows; otherwise it
// is the `{` of a computation body after a signature's result shape.
bool AtLayoutStart(const Lexer& lx) {
  if (lx.Peek() != '{') return false;
  size_t i = 1;
  while (lx.Peek(i) == ' ' || lx.Peek(i) == '\t') ++i;
  char c = lx.Peek(i);
  return IsAsciiDigit(c) || c == ':' || c == '}';
}

Status ParseLayout(Lexer& lx, Shape& shape) {
  size_t start = lx.pos();
  lx.Advance();  // '{'
  Layout layout;
  lx.SkipTrivia();
  if (lx.Peek() != ':' && lx.Peek() != '}') {
    while (true) {
      MK_ASSIGN_OR_RETURN(int64_t d, lx.ReadInt("layout dimension"));
      layout.minor_to_major.push_back(d);
      if (layout.minor_to_major.size() > static_cast<size_t>(kMaxRank)) {
        return lx.ErrorAt(start, "layout has too many dimensions");
      }
      if (!lx.TryConsume(',')) break;
    }
  }
  if (lx.TryConsume(':')) {
    // Tiling / memory-space decorations such as `T(8,128)(2,1)S(1)`: kept verbatim.
    size_t deco_start = lx.pos();
    int depth = 0;
    while (!lx.AtEof() && !(depth == 0 && lx.Peek() == '}')) {
      char c = lx.Peek();
      if (c == '(') ++depth;
      if (c == ')' && --depth < 0) return lx.ErrorAt(lx.pos(), "unbalanced ')' in layout");
      if (c == '{' || c == '\n') return lx.ErrorAt(lx.pos(), "bad layout decoration");
      lx.Advance();
    }
    std::string_view deco = lx.text().substr(deco_start, lx.pos() - deco_start);
    while (!deco.empty() && IsAsciiSpace(deco.back())) deco.remove_suffix(1);
    while (!deco.empty() && IsAsciiSpace(deco.front())) deco.remove_prefix(1);
    layout.decorations = std::string(deco);
  }
  MK_RETURN_IF_ERROR(lx.Expect('}', "to close the layout"));
  int64_t rank = shape.rank();
  if (static_cast<int64_t>(layout.minor_to_major.size()) != rank) {
    return lx.ErrorAt(start, "layout has " + std::to_string(layout.minor_to_major.size()) +
                                 " dimensions but the shape has rank " + std::to_string(rank));
  }
  std::vector<bool> used(static_cast<size_t>(rank), false);
  for (int64_t d : layout.minor_to_major) {
    if (d < 0 || d >= rank || used[static_cast<size_t>(d)]) {
      return lx.ErrorAt(start, "layout is not a permutation of the shape's dimensions");
    }
    used[static_cast<size_t>(d)] = true;
  }
  shape.set_layout(std::move(layout));
  return Status::Ok();
}

}  // namespace

Result<Shape> ParseShape(Lexer& lx, int depth) {
  lx.SkipTrivia();
  size_t start = lx.pos();
  if (depth > kMaxNestingDepth) return lx.ErrorAt(start, "shape is nested too deeply");
  if (lx.TryConsume('(')) {
    std::vector<Shape> elements;
    if (!lx.TryConsume(')')) {
      while (true) {
        MK_ASSIGN_OR_RETURN(Shape element, ParseShape(lx, depth + 1));
        elements.push_back(std::move(element));
        if (lx.TryConsume(',')) continue;
        MK_RETURN_IF_ERROR(lx.Expect(')', "to close the tuple shape"));
        break;
      }
    }
    return Shape::Tuple(std::move(elements));
  }
  size_t n = 0;
  while (IsAsciiAlpha(lx.Peek(n)) || IsAsciiDigit(lx.Peek(n))) ++n;
  if (n == 0) return lx.Error("expected a shape, got " + lx.DescribeNext());
  std::string_view type_name = lx.text().substr(start, n);
  auto dtype = ParseDType(type_name);
  if (!dtype || *dtype == DType::kTuple) {
    return lx.ErrorAt(start, "unknown element type '" + std::string(type_name) + "'");
  }
  lx.Advance(n);
  MK_RETURN_IF_ERROR(lx.Expect('[', "after the element type"));
  std::vector<int64_t> dims;
  // Element count times the widest element size must fit in int64 so byte sizes never overflow.
  const int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 16;
  int64_t elements = 1;
  if (!lx.TryConsume(']')) {
    while (true) {
      lx.SkipTrivia();
      size_t dim_pos = lx.pos();
      lx.TryConsumeText("<=");  // a bounded dynamic dimension: kept as its bound
      if (lx.Peek() == '?') return lx.ErrorAt(dim_pos, "unbounded dynamic dimensions are not supported");
      MK_ASSIGN_OR_RETURN(int64_t d, lx.ReadInt("dimension size"));
      if (d < 0) return lx.ErrorAt(dim_pos, "negative dimension size " + std::to_string(d));
      if (d > 0 && elements > kMaxElements / d) {
        return lx.ErrorAt(dim_pos, "shape has too many elements (dimension " +
                                       std::to_string(d) + ")");
      }
      elements *= d;
      dims.push_back(d);
      if (dims.size() > static_cast<size_t>(kMaxRank)) {
        return lx.ErrorAt(dim_pos, "shape has more than " + std::to_string(kMaxRank) + " dimensions");
      }
      if (lx.TryConsume(',')) continue;
      MK_RETURN_IF_ERROR(lx.Expect(']', "to close the dimensions"));
      break;
    }
  }
  if (*dtype == DType::kToken && !dims.empty()) {
    return lx.ErrorAt(start, "token shapes have no dimensions");
  }
  Shape shape(*dtype, std::move(dims));
  if (AtLayoutStart(lx)) MK_RETURN_IF_ERROR(ParseLayout(lx, shape));
  return shape;
}

// ----------------------------------------------------------------------------------------------
// Constants

namespace {

struct ValueToken {
  std::string_view text;
  size_t pos = 0;
};

Result<ValueToken> ReadValueToken(Lexer& lx) {
  lx.SkipTrivia();
  size_t start = lx.pos();
  if (lx.Peek() == '-' || lx.Peek() == '+') lx.Advance();
  size_t body = lx.pos();
  if (IsAsciiAlpha(lx.Peek())) {
    while (IsAsciiAlpha(lx.Peek()) || IsAsciiDigit(lx.Peek()) || lx.Peek() == '_') lx.Advance();
    // `nan(0x7fc00001)`: a NaN payload, accepted and dropped.
    if (lx.text().substr(body, lx.pos() - body) == "nan" && lx.Peek() == '(') {
      size_t close = lx.text().find(')', lx.pos());
      if (close == std::string_view::npos || close - lx.pos() > 40) {
        return lx.ErrorAt(lx.pos(), "bad NaN payload");
      }
      lx.set_pos(close + 1);
    }
  } else {
    while (true) {
      char c = lx.Peek();
      char prev = lx.pos() > body ? lx.text()[lx.pos() - 1] : '\0';
      bool exponent_sign = (c == '-' || c == '+') && (prev == 'e' || prev == 'E');
      if (!(IsAsciiDigit(c) || c == '.' || ((c == 'e' || c == 'E') && lx.pos() > body) ||
            exponent_sign)) {
        break;
      }
      lx.Advance();
    }
  }
  if (lx.pos() == body) {
    lx.set_pos(start);
    return lx.Error("expected a constant value, got " + lx.DescribeNext());
  }
  return ValueToken{lx.text().substr(start, lx.pos() - start), start};
}

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

Result<double> FloatValue(const Lexer& lx, const ValueToken& tok, DType t) {
  std::string_view s = tok.text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  double v = 0;
  if (s == "inf") {
    v = std::numeric_limits<double>::infinity();
  } else if (s == "nan" || s.starts_with("nan(")) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (end != s.data() + s.size() || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
      return lx.ErrorAt(tok.pos, "bad " + std::string(DTypeName(t)) + " value " + Quote(tok.text));
    }
    if (ec == std::errc::result_out_of_range) {
      // Underflow rounds to zero; overflow is an error like any out-of-range value.
      bool has_exponent = s.find_first_of("eE") != std::string_view::npos;
      bool tiny = s.find("e-") != std::string_view::npos || s.find("E-") != std::string_view::npos ||
                  (!has_exponent && (s[0] == '0' || s[0] == '.'));
      if (!tiny) {
        return lx.ErrorAt(tok.pos, "value " + Quote(tok.text) + " is out of range for " +
                                       std::string(DTypeName(t)));
      }
      v = 0;
    }
  }
  return negative ? -v : v;
}

// Rounds a double to float with round-to-odd, so that a second rounding to bf16/f16 gives the
// correctly rounded result (a plain double->float->half chain can round twice the wrong way).
float RoundToOddFloat(double d) {
  float f = static_cast<float>(d);
  if (std::isfinite(f) && static_cast<double>(f) != d) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    if ((bits & 1u) == 0) f = std::nextafter(f, d > static_cast<double>(f) ? INFINITY : -INFINITY);
  }
  return f;
}

struct IntRange {
  int64_t min;
  uint64_t max;
};
IntRange RangeOf(DType t) {
  switch (t) {
    case DType::kPred: return {0, 1};
    case DType::kS4: return {-8, 7};
    case DType::kS8: return {INT8_MIN, INT8_MAX};
    case DType::kS16: return {INT16_MIN, INT16_MAX};
    case DType::kS32: return {INT32_MIN, INT32_MAX};
    case DType::kS64: return {INT64_MIN, INT64_MAX};
    case DType::kU4: return {0, 15};
    case DType::kU8: return {0, UINT8_MAX};
    case DType::kU16: return {0, UINT16_MAX};
    case DType::kU32: return {0, UINT32_MAX};
    default: return {0, UINT64_MAX};
  }
}

// Integers (and pred) as exact values: returns the bits as uint64 (two's complement for
// negative values), after checking the type's range.
Result<uint64_t> IntegerValue(const Lexer& lx, const ValueToken& tok, DType t) {
  std::string_view s = tok.text;
  if (t == DType::kPred) {
    if (s == "true" || s == "1") return uint64_t{1};
    if (s == "false" || s == "0") return uint64_t{0};
    return lx.ErrorAt(tok.pos, "expected true or false for pred, got " + Quote(s));
  }
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), magnitude);
  std::string type_name(DTypeName(t));
  if (s.empty() || !IsAsciiDigit(s[0]) || end != s.data() + s.size()) {
    return lx.ErrorAt(tok.pos, "expected an integer for " + type_name + ", got " + Quote(tok.text));
  }
  IntRange range = RangeOf(t);
  bool in_range = ec == std::errc();
  if (in_range && negative) {
    uint64_t min_magnitude = range.min == INT64_MIN ? (uint64_t{1} << 63)
                                                    : static_cast<uint64_t>(-range.min);
    in_range = magnitude <= min_magnitude;
  } else if (in_range) {
    in_range = magnitude <= range.max;
  }
  if (!in_range) {
    return lx.ErrorAt(tok.pos, "value " + Quote(tok.text) + " is out of range for " + type_name);
  }
  return negative ? ~magnitude + 1 : magnitude;
}

Status CheckValue(const Lexer& lx, const ValueToken& tok, DType t) {
  if (IsFloat(t) || IsComplex(t)) return FloatValue(lx, tok, t).status();
  return IntegerValue(lx, tok, t).status();
}

Status StoreValue(const Lexer& lx, const ValueToken& tok, Literal& lit, int64_t i) {
  DType t = lit.dtype();
  if (IsFloat(t)) {
    MK_ASSIGN_OR_RETURN(double v, FloatValue(lx, tok, t));
    bool out_of_range = false;
    switch (t) {
      case DType::kF64: lit.data<double>()[i] = v; break;
      case DType::kF32: {
        float f = static_cast<float>(v);
        out_of_range = std::isinf(f) && !std::isinf(v);
        lit.data<float>()[i] = f;
        break;
      }
      case DType::kBF16: {
        bf16_t h(RoundToOddFloat(v));
        out_of_range = std::isinf(static_cast<float>(h)) && !std::isinf(v);
        std::memcpy(lit.raw() + 2 * i, &h.bits, 2);
        break;
      }
      case DType::kF16: {
        f16_t h(RoundToOddFloat(v));
        out_of_range = std::isinf(static_cast<float>(h)) && !std::isinf(v);
        std::memcpy(lit.raw() + 2 * i, &h.bits, 2);
        break;
      }
      default: break;
    }
    if (out_of_range) {
      return lx.ErrorAt(tok.pos, "value " + Quote(tok.text) + " is out of range for " +
                                     std::string(DTypeName(t)));
    }
    return Status::Ok();
  }
  MK_ASSIGN_OR_RETURN(uint64_t bits, IntegerValue(lx, tok, t));
  if (t == DType::kU64) {
    lit.SetUInt64(i, bits);
  } else {
    lit.SetInt64(i, static_cast<int64_t>(bits));
  }
  return Status::Ok();
}

// Reads the nested braces of an array constant, checking that each level has as many
// entries as the shape's dimension, into a flat row-major token list.
Status ReadArrayTokens(Lexer& lx, const Shape& shape, int64_t dim, std::vector<ValueToken>& out) {
  DType t = shape.dtype();
  if (dim == shape.rank()) {
    if (IsComplex(t)) {  // `(re, im)`
      MK_RETURN_IF_ERROR(lx.Expect('(', "to open a complex value"));
      MK_ASSIGN_OR_RETURN(ValueToken re, ReadValueToken(lx));
      MK_RETURN_IF_ERROR(lx.Expect(',', "in a complex value"));
      MK_ASSIGN_OR_RETURN(ValueToken im, ReadValueToken(lx));
      MK_RETURN_IF_ERROR(lx.Expect(')', "to close a complex value"));
      out.push_back(re);
      out.push_back(im);
      return Status::Ok();
    }
    MK_ASSIGN_OR_RETURN(ValueToken tok, ReadValueToken(lx));
    out.push_back(tok);
    return Status::Ok();
  }
  lx.SkipTrivia();
  size_t open = lx.pos();
  MK_RETURN_IF_ERROR(lx.Expect('{', "to open dimension " + std::to_string(dim) + " of the constant"));
  int64_t count = 0;
  int64_t want = shape.dim(dim);
  if (!lx.TryConsume('}')) {
    while (true) {
      if (count >= want) {
        return lx.ErrorAt(open, "constant has more than " + std::to_string(want) +
                                    " elements in dimension " + std::to_string(dim) +
                                    " of shape " + shape.ToString(false));
      }
      MK_RETURN_IF_ERROR(ReadArrayTokens(lx, shape, dim + 1, out));
      ++count;
      if (lx.TryConsume(',')) continue;
      MK_RETURN_IF_ERROR(lx.Expect('}', "to close dimension " + std::to_string(dim) + " of the constant"));
      break;
    }
  }
  if (count != want) {
    return lx.ErrorAt(open, "constant has " + std::to_string(count) + " elements in dimension " +
                                std::to_string(dim) + " but shape " + shape.ToString(false) +
                                " needs " + std::to_string(want));
  }
  return Status::Ok();
}

// Parses the value for `shape`; returns an unset optional for elided or unstored values.
Result<std::optional<Literal>> ParseLiteral(Lexer& lx, const Shape& shape, int depth) {
  lx.SkipTrivia();
  if (depth > kMaxNestingDepth) return lx.Error("constant is nested too deeply");
  if (lx.TryConsumeText("{...}")) return std::optional<Literal>();
  if (shape.is_tuple()) {
    MK_RETURN_IF_ERROR(lx.Expect('(', "to open a tuple constant"));
    std::vector<Literal> elements;
    bool complete = true;
    const auto& shapes = shape.tuple_shapes();
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (i > 0) MK_RETURN_IF_ERROR(lx.Expect(',', "between tuple constant elements"));
      MK_ASSIGN_OR_RETURN(std::optional<Literal> element, ParseLiteral(lx, shapes[i], depth + 1));
      if (element) {
        elements.push_back(std::move(*element));
      } else {
        complete = false;
      }
    }
    MK_RETURN_IF_ERROR(lx.Expect(')', "to close the tuple constant (it has " +
                                          std::to_string(shapes.size()) + " elements)"));
    if (!complete) return std::optional<Literal>();
    return std::optional<Literal>(Literal::Tuple(std::move(elements)));
  }
  if (shape.is_token()) return lx.Error("token constants are not allowed");
  std::vector<ValueToken> tokens;
  // Sized once (no doubling): every value takes at least two characters of what is left ("1,"),
  // so a shape larger than the text cannot make this reserve more than the text allows.
  const uint64_t left = lx.text().size() - lx.pos();
  const uint64_t values = static_cast<uint64_t>(shape.num_elements()) * (IsComplex(shape.dtype()) ? 2 : 1);
  tokens.reserve(static_cast<size_t>(std::min(values, left / 2 + 1)));
  MK_RETURN_IF_ERROR(ReadArrayTokens(lx, shape, 0, tokens));
  DType t = shape.dtype();
  if (!IsEvaluable(t)) {
    for (const ValueToken& tok : tokens) MK_RETURN_IF_ERROR(CheckValue(lx, tok, t));
    return std::optional<Literal>();
  }
  Shape array_shape = shape;
  array_shape.clear_layout();  // a literal is dense row-major whatever the layout says
  Literal lit(array_shape);
  for (size_t i = 0; i < tokens.size(); ++i) {
    MK_RETURN_IF_ERROR(StoreValue(lx, tokens[i], lit, static_cast<int64_t>(i)));
  }
  return std::optional<Literal>(std::move(lit));
}

}  // namespace

Status ParseConstantValue(Lexer& lx, const Shape& shape, Instruction& inst) {
  MK_ASSIGN_OR_RETURN(std::optional<Literal> lit, ParseLiteral(lx, shape, 0));
  inst.literal = std::move(lit);
  return Status::Ok();
}

}  // namespace mk::hlo::parse
