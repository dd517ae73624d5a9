#include "modes/search/model_store.h"

#include <fstream>
#include <sstream>

namespace mk::modes::search {

using nlohmann::json;

json Prior::ToJson() const {
  return {{"source", source},
          {"sha256", sha256.empty() ? json(nullptr) : json(sha256)},
          {"path", path.empty() ? json(nullptr) : json(path)},
          {"run_id", run_id ? json(*run_id) : json(nullptr)},
          {"note", note.empty() ? json(nullptr) : json(note)}};
}

namespace {

Status CheckColumns(const CostModel& m, size_t columns, const std::string& what) {
  if (m.columns() != columns) {
    return InvalidArgument(what + " was trained on " + std::to_string(m.columns()) +
                           " features; the search's feature map has " + std::to_string(columns));
  }
  return Status::Ok();
}

}  // namespace

Result<CostModel> LoadModelFile(const std::string& path, size_t columns) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("--model " + path + ": cannot read the file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  Result<CostModel> m = CostModel::Deserialize(bytes.str());
  if (!m.ok()) return InvalidArgument("--model " + path + ": " + m.status().message());
  MK_RETURN_IF_ERROR(CheckColumns(*m, columns, "--model " + path));
  return m;
}

Result<Prior> ChoosePrior(store::Store& db, store::ArtifactStore& artifacts,
                          const std::string& model_file, const std::string& target,
                          const std::string& cpu_model, size_t columns) {
  Prior p;
  if (!model_file.empty()) {
    MK_ASSIGN_OR_RETURN(CostModel m, LoadModelFile(model_file, columns));
    MK_ASSIGN_OR_RETURN(std::string bytes, m.Serialize());
    MK_ASSIGN_OR_RETURN(p.sha256, artifacts.Put(bytes, kModelMediaType));
    p.source = "file";
    p.path = model_file;
    p.model = std::move(m);
    return p;
  }
  MK_ASSIGN_OR_RETURN(std::vector<store::EventRecord> events, db.ListEvents(std::nullopt, 0));
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->kind != kModelEvent) continue;
    const json e = json::parse(it->payload_json, nullptr, false);
    if (!e.is_object() || e.value("target", "") != target || e.value("cpu_model", "") != cpu_model ||
        e.value("features", size_t{0}) != columns) {
      continue;
    }
    const std::string sha = e.value("sha256", "");
    // A model that cannot be read is passed over for an older one, and the result says so.
    Result<std::string> bytes = artifacts.Get(sha);
    Result<CostModel> m = bytes.ok() ? CostModel::Deserialize(*bytes) : Result<CostModel>(bytes.status());
    if (!m.ok() || m->columns() != columns) {
      if (p.note.empty()) p.note = "stored model " + sha + " unreadable: " + (m.ok() ? "wrong width" : m.status().message());
      continue;
    }
    p.source = "store";
    p.sha256 = sha;
    p.run_id = it->run_id;
    p.model = std::move(*m);
    return p;
  }
  return p;
}

Result<Prior> PriorOfArtifact(store::ArtifactStore& artifacts, const json& stored, size_t columns) {
  Prior p;
  if (!stored.is_object() || stored.value("source", "none") == "none") return p;
  p.source = stored.value("source", "none");
  p.sha256 = stored["sha256"].is_string() ? stored["sha256"].get<std::string>() : "";
  if (stored["path"].is_string()) p.path = stored["path"].get<std::string>();
  if (stored["run_id"].is_number_integer()) p.run_id = stored["run_id"].get<int64_t>();
  MK_ASSIGN_OR_RETURN(std::string bytes, artifacts.Get(p.sha256));
  MK_ASSIGN_OR_RETURN(CostModel m, CostModel::Deserialize(bytes));
  MK_RETURN_IF_ERROR(CheckColumns(m, columns, "the run's prior model " + p.sha256));
  p.model = std::move(m);
  return p;
}

Result<std::string> SaveRunModel(store::Store& db, store::ArtifactStore& artifacts, int64_t run_id,
                                 const std::string& target, const std::string& cpu_model,
                                 const CostModel& model, size_t rows) {
  MK_ASSIGN_OR_RETURN(std::string bytes, model.Serialize());
  MK_ASSIGN_OR_RETURN(std::string sha, artifacts.Put(bytes, kModelMediaType));
  MK_RETURN_IF_ERROR(db.AddEvent(run_id, kModelEvent,
                                 json{{"sha256", sha},
                                      {"target", target},
                                      {"cpu_model", cpu_model},
                                      {"features", model.columns()},
                                      {"rows", rows}}
                                     .dump())
                         .status());
  return sha;
}

}  // namespace mk::modes::search
