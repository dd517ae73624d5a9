// Internal to the CPU emitter: loop nests shaped for the C++ compiler's vectorizer and for
// OpenMP. A value is computed by a nest whose innermost loop runs over the contiguous last
// dimension (so the loads and stores of a row are unit-stride and the compiler emits vector
// code), optionally tiled, and whose outer loops (collapsed) are shared among threads.
// The kernel's schedule chooses: threads, vectorize, unroll, tile_inner (loop_space.cc).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "codegen/cpu/emit_context.h"

namespace mk::codegen::cpu {

// The loop parameters of one kernel's schedule, resolved against the target.
struct LoopSchedule {
  int64_t threads = 1;     // threads to use (already resolved: >= 1)
  bool pin_threads = false;  // emit num_threads(threads) (the schedule named a count)
  bool vectorize = true;   // innermost loops carry `#pragma GCC ivdep`
  int64_t unroll = 1;      // `#pragma GCC unroll N` on innermost loops when > 1
  int64_t tile_inner = 0;  // split the innermost loop into tiles of this many elements (0: no)
};
LoopSchedule LoopScheduleOf(const FunctionEmitter& f);

// Below this many elements of work a loop nest stays on one thread.
constexpr int64_t kParallelWork = 16384;

// `#pragma omp parallel for ...` (with a newline) sharing `collapse` perfectly nested loops
// among the schedule's threads, or "" when `work` is too small or the schedule is serial.
std::string ParallelPragma(const LoopSchedule& s, int collapse, int64_t work);

// How many leading loops of `trips` to collapse into the parallel loop: the fewest whose
// iteration count gives every thread a few iterations (all of them if none does).
int CollapseCount(const std::vector<int64_t>& trips, int64_t threads);

// The `#pragma GCC ivdep` / `#pragma GCC unroll N` lines for an innermost loop.
std::string InnerLoopPragmas(const LoopSchedule& s);

// Emits a loop nest over `dims` (rank >= 1) with loop variables i0..i{rank-1}, executing the
// statement `body` (which may use them) once per index. The first `bound` variables are already
// bound by an enclosing (row) loop and get no loop; otherwise the outer loops (and the tiles of
// the innermost one) are parallel when `work` is large enough.
void EmitVectorLoopNest(std::ostream& out, const LoopSchedule& s, const std::vector<int64_t>& dims,
                        int64_t work, const std::string& body, int64_t bound = 0);

// Opens `for` loops i0.. over the result dims `dims` of a value computed one result element at a
// time (a reduce's kept dims), into f.loops(): in parallel when `work` is large enough, minus
// the row dims that a row-fused kernel's row loop binds. The caller writes the body (one
// statement or a block).
void OpenResultLoops(FunctionEmitter& f, const std::vector<int64_t>& dims, int64_t work);

}  // namespace mk::codegen::cpu
