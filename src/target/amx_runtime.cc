#include "target/amx_runtime.h"

namespace mk::target {

const char* AmxTileRuntimeSource() {
  return R"(static bool mk_amx_permitted() {
  static const bool ok = [] {
    // MAXKERNEL_CPU_ISA below amx (isa_level.h) keeps tiles off in a library built for them.
    const char* isa = getenv("MAXKERNEL_CPU_ISA");
    if (isa != nullptr && *isa != '\0' && strcmp(isa, "amx") != 0) return false;
    if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18) != 0) return false;
    unsigned long granted = 0;
    return syscall(SYS_arch_prctl, 0x1022, &granted) == 0 && ((granted >> 18) & 1) != 0;
  }();
  return ok;
}
static void mk_amx_load_config() {
  struct alignas(64) {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
  } cfg = {};
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
}
)";
}

}  // namespace mk::target
