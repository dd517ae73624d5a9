#include "runtime/cpu_executor.h"

#include <cstring>

namespace mk::runtime {

using codegen::BufferSlot;

Result<CompiledLibrary> CpuExecutor::Build(const codegen::Implementation& impl) {
  if (impl.target != "cpu" || impl.sources.size() != 1) {
    return InvalidArgument("CpuExecutor builds single-source cpu implementations only");
  }
  return compiler_.Compile(impl.sources[0].text, impl.flags);
}

Result<Execution> CpuExecutor::Run(const CompiledLibrary& lib, const codegen::Implementation& impl,
                                   const std::vector<hlo::Literal>& args,
                                   const ExecuteOptions& options) {
  std::vector<size_t> sizes;
  std::vector<size_t> outputs;
  size_t num_params = 0;
  for (size_t i = 0; i < impl.buffers.size(); ++i) {
    const BufferSlot& b = impl.buffers[i];
    sizes.push_back(static_cast<size_t>(b.bytes));
    if (b.role == BufferSlot::Role::kOutput) outputs.push_back(i);
    else ++num_params;
  }
  if (args.size() != num_params) {
    return InvalidArgument("the kernel takes " + std::to_string(num_params) +
                           " input(s), got " + std::to_string(args.size()));
  }
  MK_ASSIGN_OR_RETURN(SharedRegion region, SharedRegion::Create(sizes));
  for (size_t i = 0; i < impl.buffers.size(); ++i) {
    const BufferSlot& b = impl.buffers[i];
    if (b.role != BufferSlot::Role::kParameter) continue;
    const hlo::Literal& arg = args[static_cast<size_t>(b.index)];
    if (!arg.shape().SameAs(b.shape)) {
      return InvalidArgument("input " + std::to_string(b.index) + " has shape " +
                             arg.shape().ToString(false) + ", the kernel expects " +
                             b.shape.ToString(false));
    }
    std::memcpy(region.buffer(i), arg.raw(), arg.raw_size());
  }
  RunRequest req;
  req.so_path = lib.so_path;
  req.output_buffers = outputs;
  req.poison_byte = options.poison_byte;
  req.poison_scratch = options.poison_scratch;
  req.warmup = options.warmup;
  req.min_iterations = options.min_iterations;
  req.min_seconds = options.min_seconds;
  req.timeout_s = options.timeout_s;
  req.memory_limit_bytes = options.memory_limit_bytes;
  Execution ex;
  MK_ASSIGN_OR_RETURN(ex.outcome, sandbox_.Run(req, region));
  if (ex.outcome.status == RunStatus::kLoadFailed && lib.cache_hit) {
    // A cached library that verified but does not load (e.g. built against a library that has
    // since changed) is not trusted again: drop it, rebuild once, and run the fresh one.
    compiler_.Evict(lib);
    MK_ASSIGN_OR_RETURN(CompiledLibrary rebuilt, Build(impl));
    req.so_path = rebuilt.so_path;
    MK_ASSIGN_OR_RETURN(ex.outcome, sandbox_.Run(req, region));
  }
  if (!ex.outcome.ok()) return ex;
  for (size_t o : outputs) {
    hlo::Literal lit(impl.buffers[o].shape);
    std::memcpy(lit.raw(), region.buffer(o), lit.raw_size());
    ex.outputs.push_back(std::move(lit));
  }
  return ex;
}

}  // namespace mk::runtime
