// Runs and artifacts, read-only: what a viewer may see of the store.
#include <chrono>
#include <memory>
#include <thread>

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

// One server-sent event: the event's id, its kind as the event type, its JSON as the data.
std::string SseEvent(const store::EventRecord& e) {
  std::string kind = e.kind;
  for (char& c : kind) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  nlohmann::json data = {{"id", e.id},
                         {"run", e.run_id ? nlohmann::json(*e.run_id) : nullptr},
                         {"ts", e.ts},
                         {"kind", e.kind},
                         {"payload", nlohmann::json::parse(e.payload_json, nullptr, false)}};
  // dump() escapes every newline, so the data is one line.
  return "id: " + std::to_string(e.id) + "\nevent: " + kind + "\ndata: " +
         data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
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

  // The store's event log, live: every event after `after` (or the Last-Event-ID a reconnecting
  // browser sends; default 0, the whole log), then each new one as it is stored, polled every
  // 100 ms; `run=ID` keeps one run's. A comment line every 15 s keeps proxies from closing it.
  router.AddStream("/api/v1/events", "events.stream", Permission::kView,
                   [&ctx](const Call& call) -> EventStep {
    struct Cursor {
      int64_t after = 0;
      std::optional<int64_t> run;
      bool opened = false;
      std::chrono::steady_clock::time_point last_write = std::chrono::steady_clock::now();
    };
    auto cursor = std::make_shared<Cursor>();
    try {
      if (call.request.has_param("after")) {
        cursor->after = std::stoll(call.request.get_param_value("after"));
      } else if (call.request.has_header("Last-Event-ID")) {
        cursor->after = std::stoll(call.request.get_header_value("Last-Event-ID"));
      }
      if (call.request.has_param("run")) cursor->run = std::stoll(call.request.get_param_value("run"));
    } catch (const std::exception&) {
      cursor->after = 0;  // a malformed cursor restarts from the beginning, never fails the stream
    }
    return [&ctx, cursor](httplib::DataSink& sink, const std::atomic<bool>& stopping) {
      if (!cursor->opened) {  // at once, so a client knows the stream is open before any event
        cursor->opened = true;
        return sink.write(": open\n\n", 8);
      }
      auto events = ctx.store->EventsAfter(cursor->after, 100);
      if (!events.ok()) {
        const std::string error = "event: error\ndata: " +
                                  nlohmann::json{{"error", events.status().message()}}.dump() + "\n\n";
        sink.write(error.data(), error.size());
        return false;
      }
      const auto now = std::chrono::steady_clock::now();
      if (events->empty()) {
        if (now - cursor->last_write > std::chrono::seconds(15)) {
          cursor->last_write = now;
          return sink.write(": keep-alive\n\n", 14);
        }
        for (int i = 0; i < 10 && !stopping; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return true;
      }
      std::string text;
      for (const auto& e : *events) {
        cursor->after = e.id;
        if (cursor->run && e.run_id != cursor->run) continue;
        text += SseEvent(e);
      }
      if (text.empty()) return true;
      cursor->last_write = now;
      return sink.write(text.data(), text.size());
    };
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
