// The `maxkernel` command line. Each group of subcommands lives in its own file and registers
// itself on the app; a subcommand's callback stores its exit code in the shared CommandResult.
// Exit codes: 0 success, 1 a run that produced no acceptable result (e.g. a failed check),
// 2 bad input or usage.
#pragma once

#include <CLI/CLI.hpp>

namespace mk::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;
// The environment cannot do the work (e.g. the compile cache is not writable or not private).
constexpr int kExitEnvironment = 3;

struct CommandResult {
  int exit_code = kExitOk;
};

// hlo_commands.cc: `hlo check`, `hlo fmt`.
void RegisterHloCommands(CLI::App& app, CommandResult& result);
// eval_command.cc: `eval`.
void RegisterEvalCommand(CLI::App& app, CommandResult& result);
// suite_commands.cc: `import`, `suite list|export`, `baseline`.
void RegisterSuiteCommands(CLI::App& app, CommandResult& result);
// engine_commands.cc: `compile`, `check` (the CPU engine and the tester).
void RegisterEngineCommands(CLI::App& app, CommandResult& result);
// debug_command.cc: `debug repro`, `debug explain` (the debugger agent's artifacts).
void RegisterDebugCommands(CLI::App& app, CommandResult& result);
// doctor_command.cc: `doctor` (machine, toolchain, data dir, measured peaks).
void RegisterDoctorCommand(CLI::App& app, CommandResult& result);

// optimize_command.cc: `optimize` (the auto driver of the agent pipeline).
void RegisterOptimizeCommand(CLI::App& app, CommandResult& result);
// runs_commands.cc: `runs list|show`, `artifacts get` (what the store remembers).
void RegisterRunsCommands(CLI::App& app, CommandResult& result);
// export_command.cc: `export RUN --format lib|jax-ffi`.
void RegisterExportCommand(CLI::App& app, CommandResult& result);
// serve_command.cc: `serve` (the HTTP API over the store; docs/SERVER.md).
void RegisterServeCommand(CLI::App& app, CommandResult& result);
// audit_command.cc: `audit verify|export`.
void RegisterAuditCommands(CLI::App& app, CommandResult& result);
// bench_command.cc: `bench --suite gemm|jaxbench` (ours vs oneDNN/OpenBLAS/XLA, interleaved).
void RegisterBenchCommand(CLI::App& app, CommandResult& result);

int Main(int argc, char** argv);

}  // namespace mk::cli
