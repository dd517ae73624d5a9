// Compiled with -ffp-contract=off (CMakeLists.txt): a fused multiply-add would round differently
// from NumPy and break the bit-for-bit agreement.
#include "task/inputs.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "support/npy.h"

namespace mk::task {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  uint64_t z = x;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t StreamKey(uint64_t seed, uint64_t param_index) {
  return SplitMix64(SplitMix64(seed) ^ ((param_index + 1) * 0xD1B54A32D192ED03ULL));
}

double UniformUnit(uint64_t key, uint64_t j) {
  return static_cast<double>(SplitMix64(key + j) >> 11) * 0x1.0p-53;
}

double NormalValue(uint64_t key, uint64_t i, double mean, double std) {
  // Irwin-Hall with 4 terms, scaled to unit variance: cheap, exactly reproducible in NumPy
  // (no transcendental functions whose last bit differs between libms).
  const double sum = ((UniformUnit(key, 4 * i) + UniformUnit(key, 4 * i + 1)) +
                      UniformUnit(key, 4 * i + 2)) +
                     UniformUnit(key, 4 * i + 3);
  const double z = (sum - 2.0) * 1.7320508075688772;
  return mean + std * z;
}

double UniformValue(uint64_t key, uint64_t i, double low, double high) {
  return low + (high - low) * UniformUnit(key, i);
}

int64_t RandintValue(uint64_t key, uint64_t i, int64_t low, int64_t high) {
  const double range = static_cast<double>(high) - static_cast<double>(low);
  return low + static_cast<int64_t>(std::floor(UniformUnit(key, i) * range));
}

Result<hlo::Literal> GenerateParameter(const hlo::Shape& shape, const InitSpec& init,
                                       uint64_t seed, uint64_t param_index) {
  if (!shape.is_array() || !hlo::IsEvaluable(shape.dtype())) {
    return Unimplemented("cannot generate values of type " + shape.ToString(false));
  }
  const bool is_float = hlo::IsFloat(shape.dtype());
  hlo::Literal lit(shape);
  const uint64_t key = StreamKey(seed, param_index);
  const int64_t n = lit.num_elements();
  switch (init.kind) {
    case InitSpec::Kind::kNormal:
    case InitSpec::Kind::kUniform:
      if (!is_float) return InvalidArgument("'" + std::string(InitKindName(init.kind)) +
                                            "' init needs a float parameter, got " +
                                            shape.ToString(false));
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t u = static_cast<uint64_t>(i);
        const double v = init.kind == InitSpec::Kind::kNormal
                             ? NormalValue(key, u, init.mean, init.std)
                             : UniformValue(key, u, init.low, init.high);
        // Round to f32 first (the spec), then SetDouble rounds f32 -> element type (RNE).
        lit.SetDouble(i, static_cast<double>(static_cast<float>(v)));
      }
      return lit;
    case InitSpec::Kind::kRandint:
      if (is_float) return InvalidArgument("'randint' init needs an integer or pred parameter, got " +
                                           shape.ToString(false));
      if (init.int_high <= init.int_low) return InvalidArgument("randint needs low < high");
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = RandintValue(key, static_cast<uint64_t>(i), init.int_low, init.int_high);
        if (shape.dtype() == hlo::DType::kPred) {
          lit.SetInt64(i, v != 0 ? 1 : 0);
        } else {
          lit.SetInt64(i, v);
        }
      }
      return lit;
    case InitSpec::Kind::kData:
      return InvalidArgument("'data' parameters are read from the task directory, not generated");
  }
  return Internal("unknown init kind");
}

namespace {

// Which .npy element type stores exactly the values of `t` (floats may come as any float width).
bool NpyTypeFits(npy::NpyType n, hlo::DType t) {
  using hlo::DType;
  using npy::NpyType;
  switch (t) {
    case DType::kPred: return n == NpyType::kB1;
    case DType::kS8: return n == NpyType::kI1;
    case DType::kS16: return n == NpyType::kI2;
    case DType::kS32: return n == NpyType::kI4;
    case DType::kS64: return n == NpyType::kI8;
    case DType::kU8: return n == NpyType::kU1;
    case DType::kU16: return n == NpyType::kU2;
    case DType::kU32: return n == NpyType::kU4;
    case DType::kU64: return n == NpyType::kU8;
    default: return hlo::IsFloat(t) && (n == NpyType::kF2 || n == NpyType::kF4 || n == NpyType::kF8);
  }
}

Result<hlo::Literal> ReadDataParameter(const Task& task, const TaskParameter& param) {
  // Resolved again here: the task may have changed on disk since it was loaded.
  MK_ASSIGN_OR_RETURN(const std::string path, ResolveDataFile(task, param));
  MK_ASSIGN_OR_RETURN(npy::NpyArray arr, npy::ReadNpyFile(path));
  const hlo::Shape& shape = param.shape;
  if (arr.shape != shape.dims()) {
    std::string got = "(";
    for (size_t i = 0; i < arr.shape.size(); ++i) got += (i ? "," : "") + std::to_string(arr.shape[i]);
    return InvalidArgument(path + ": parameter '" + param.name + "' needs shape " +
                           shape.ToString(false) + " but the file holds shape " + got + ")");
  }
  if (!NpyTypeFits(arr.type, shape.dtype())) {
    return InvalidArgument(path + ": parameter '" + param.name + "' is " +
                           std::string(hlo::DTypeName(shape.dtype())) + " but the file holds " +
                           std::string(npy::NpyTypeName(arr.type)));
  }
  hlo::Literal lit(shape);
  const int64_t n = lit.num_elements();
  if (!hlo::IsFloat(shape.dtype())) {
    // Same width and little-endian on every host we build for: copy the bytes.
    if (arr.data.size() != lit.raw_size()) return Internal("data size mismatch for " + path);
    if (!arr.data.empty()) std::memcpy(lit.raw(), arr.data.data(), arr.data.size());
    if (shape.dtype() == hlo::DType::kPred) {
      for (int64_t i = 0; i < n; ++i) lit.raw()[i] = lit.raw()[i] != 0 ? 1 : 0;
    }
    return lit;
  }
  const size_t width = static_cast<size_t>(npy::NpyTypeByteSize(arr.type));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = arr.data.data() + static_cast<size_t>(i) * width;
    double v = 0;
    if (arr.type == npy::NpyType::kF4) {
      float f;
      std::memcpy(&f, p, 4);
      v = f;
    } else if (arr.type == npy::NpyType::kF8) {
      std::memcpy(&v, p, 8);
    } else {
      uint16_t h;
      std::memcpy(&h, p, 2);
      v = F16ToFloat(h);
    }
    lit.SetDouble(i, v);
  }
  return lit;
}

}  // namespace

Status CheckBuffersFitInMemory(const Task& task) {
  // Byte sizes cannot overflow (shapes are bounded at 2^63 / 16 elements each), but their sum
  // can: add in long double.
  long double need = 0;
  for (const TaskParameter& p : task.parameters) need += static_cast<long double>(p.shape.byte_size());
  for (const TaskOutput& o : task.outputs) need += static_cast<long double>(o.shape.byte_size());
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return Status::Ok();  // unknown: let the allocation decide
  const long double have = static_cast<long double>(pages) * static_cast<long double>(page_size);
  if (need <= have) return Status::Ok();
  char text[64];
  std::snprintf(text, sizeof text, "%.3Lg", need);
  return InvalidArgument("the task's parameters and outputs need " + std::string(text) +
                             " bytes, more than this machine's " +
                             std::to_string(static_cast<unsigned long long>(have)) +
                             " bytes of memory",
                         SourceLoc{task.dir.empty() ? "" : task.dir + "/task.yaml", 0, 0});
}

Result<std::vector<hlo::Literal>> GenerateInputs(const Task& task, uint64_t seed) {
  MK_RETURN_IF_ERROR(CheckBuffersFitInMemory(task));
  std::vector<hlo::Literal> inputs;
  inputs.reserve(task.parameters.size());
  for (size_t p = 0; p < task.parameters.size(); ++p) {
    const TaskParameter& param = task.parameters[p];
    if (param.init.kind == InitSpec::Kind::kData) {
      MK_ASSIGN_OR_RETURN(hlo::Literal lit, ReadDataParameter(task, param));
      inputs.push_back(std::move(lit));
      continue;
    }
    auto lit = GenerateParameter(param.shape, param.init, seed, p);
    if (!lit.ok()) return lit.status().WithContext("parameter " + std::to_string(p) + " ('" + param.name + "')");
    inputs.push_back(std::move(lit).value());
  }
  return inputs;
}

}  // namespace mk::task
