// The ABI between maxkernel and a generated kernel library. A library exports:
//   extern "C" int mk_abi_version(void);       // must return kKernelAbiVersion
//   extern "C" void mk_kernel(void** buffers);  // entry parameters, then outputs, then scratch
// Buffers are dense row-major arrays in the element types of the module's shapes.
#pragma once

namespace mk::runtime {

constexpr int kKernelAbiVersion = 1;
constexpr const char* kAbiVersionSymbol = "mk_abi_version";
constexpr const char* kKernelSymbol = "mk_kernel";

using KernelFn = void (*)(void** buffers);
using AbiVersionFn = int (*)();

}  // namespace mk::runtime
