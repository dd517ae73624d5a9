// Exchange of HLO literals with NumPy .npy files (the data format of `maxkernel eval`).
// Floating tensors of every width travel as float32 .npy: writing widens bf16/f16 exactly (and
// narrows f64 with round-to-nearest-even); reading a float16/32/64 .npy for a floating parameter
// rounds once, RNE, to the parameter's type. Integer and pred tensors keep their exact type.
#pragma once

#include <string>

#include "hlo/literal.h"
#include "support/npy.h"
#include "support/status.h"

namespace mk::hlo {

// The .npy type an array of `dtype` is written as (and, for non-floats, must be read from).
Result<npy::NpyType> NpyTypeFor(DType dtype);

// Converts an array literal to its .npy form (see above). Tuples and types without a .npy
// counterpart (f8, complex, 4-bit) are an Unimplemented error.
Result<npy::NpyArray> LiteralToNpy(const Literal& literal);

// Converts a .npy array into a literal of `expected` (an array shape, e.g. an entry
// parameter's). `what` names the value in errors, e.g. "parameter 1"; the dims must equal
// expected's exactly, and the type must be accepted as described above.
Result<Literal> NpyToLiteral(const npy::NpyArray& array, const Shape& expected,
                             const std::string& what);

// ReadNpyFile + NpyToLiteral; errors carry `path` as their position.
Result<Literal> ReadLiteralNpy(const std::string& path, const Shape& expected,
                               const std::string& what);
// LiteralToNpy + WriteNpyFile.
Status WriteLiteralNpy(const std::string& path, const Literal& literal);

// Rounds a double to the nearest bfloat16 / half with a single round-to-nearest-even step
// (going through float with plain rounding would round twice and can be off by one ulp).
uint16_t DoubleToBf16(double v);
uint16_t DoubleToF16(double v);

}  // namespace mk::hlo
