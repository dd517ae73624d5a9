// Runs and artifacts, read-only: what a viewer may see of the store.
#include "server/api.h"

namespace mk::server {

namespace {

nlohmann::json RunJson(const store::RunRecord& run) {
  return {{"id", run.id},
          {"task", run.task_directory},
          {"mode", store::RunModeName(run.mode)},
          {"target", run.target},
          {"status", store::RunStatusName(run.status)},
          {"best_candidate_id", run.best_candidate_id ? nlohmann::json(*run.best_candidate_id) : nullptr},
          {"best_median_s", run.best_median_s ? nlohmann::json(*run.best_median_s) : nullptr},
          {"candidates", run.candidate_count},
          {"measurements", run.measurement_count},
          {"started_at", run.started_at},
          {"finished_at", run.finished_at ? nlohmann::json(*run.finished_at) : nullptr}};
}

}  // namespace

void RegisterRunRoutes(Router& router, ServerContext& ctx) {
  router.Add("GET", "/api/v1/runs", "runs.list", Permission::kView, [&ctx](const Call& call) {
    int64_t limit = 100;
    if (call.request.has_param("limit")) {
      try {
        limit = std::stoll(call.request.get_param_value("limit"));
      } catch (const std::exception&) {
        return Reply::Error(400, "limit is an integer");
      }
    }
    auto runs = ctx.store->ListRuns(std::max<int64_t>(1, std::min<int64_t>(limit, 1000)));
    if (!runs.ok()) return Reply::Error(500, runs.status().message());
    nlohmann::json list = nlohmann::json::array();
    for (const auto& run : *runs) list.push_back(RunJson(run));
    return Reply::Json(200, {{"runs", list}});
  });

  router.Add("GET", R"(/api/v1/runs/(\d{1,18}))", "runs.show", Permission::kView,
             [&ctx](const Call& call) {
               const int64_t id = std::stoll(call.request.matches[1]);
               auto run = ctx.store->GetRun(id);
               if (!run.ok()) {
                 return run.status().code() == ErrorCode::kNotFound
                            ? Reply::Error(404, "no run " + std::to_string(id))
                            : Reply::Error(500, run.status().message());
               }
               nlohmann::json body = RunJson(*run);
               auto candidates = ctx.store->ListCandidates(id);
               if (!candidates.ok()) return Reply::Error(500, candidates.status().message());
               nlohmann::json list = nlohmann::json::array();
               for (const auto& c : *candidates) {
                 list.push_back({{"id", c.id},
                                 {"seq", c.seq},
                                 {"status", store::CandidateStatusName(c.status)},
                                 {"schedule", nlohmann::json::parse(c.schedule_json, nullptr, false)},
                                 {"implementation_sha256", c.implementation_sha256}});
               }
               body["candidate_list"] = list;
               return Reply::Json(200, body);
             });

  // Only a 64-hex name reaches the store: "../" or any other path never names a file.
  router.Add("GET", R"(/api/v1/artifacts/([0-9a-f]{64}))", "artifacts.get", Permission::kView,
             [&ctx](const Call& call) {
               if (ctx.artifacts == nullptr) return Reply::Error(404, "this server keeps no artifacts");
               const std::string sha = call.request.matches[1];
               auto bytes = ctx.artifacts->Get(sha);
               if (!bytes.ok()) {
                 return bytes.status().code() == ErrorCode::kNotFound
                            ? Reply::Error(404, "no artifact " + sha)
                            : Reply::Error(500, bytes.status().message());
               }
               Reply reply;
               reply.body = std::move(*bytes);
               reply.content_type = "application/octet-stream";
               reply.headers.push_back({"Content-Disposition", "attachment; filename=\"" + sha + "\""});
               return reply;
             });
}

}  // namespace mk::server
