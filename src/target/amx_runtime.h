// C++ text for generated sources that use AMX tiles: the bf16 GEMM micro-kernel
// (codegen/cpu/gemm_amx.cc) and the machine probe's amx_bf16 kernel. One text, so both ask for
// the tile state and configure the tiles the same way.
#pragma once

namespace mk::target {

// Defines, inside whatever namespace the including source is in:
//   static bool mk_amx_permitted();   // the tile state granted to this process (asked once)
//   static void mk_amx_load_config(); // this thread's tiles: palette 1, tmm0-7 16 rows x 64 B
// Linux grants the tile data state (XFEATURE_XTILEDATA = 18) only on request (arch_prctl
// ARCH_REQ_XCOMP_PERM = 0x1023); a tile instruction without it is SIGILL. The grant is checked
// with ARCH_GET_XCOMP_PERM = 0x1022. MAXKERNEL_NO_AMX in the environment keeps tiles off.
// Needs <stdint.h>, <stdlib.h>, <immintrin.h>, <sys/syscall.h>, <unistd.h> included before it
// and a compiler targeting AMX (-mamx-tile -mamx-bf16, or -march=native on such a CPU).
const char* AmxTileRuntimeSource();

}  // namespace mk::target
