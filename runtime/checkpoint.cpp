// Binary checkpoint format: "TSCKPT02", the header fields as int64, the tensor count, each tensor
// as (count, floats), then the FNV-1a checksum of everything before it. A refused file's message
// says what failed: the size its header and tensor sizes call for against the file's, or the
// stored and computed checksums.
#include "runtime/checkpoint.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "common/errors.hpp"
#include "runtime/rank_grid.hpp"

namespace trainsim::runtime {

namespace {

// Format 02 added the model chunks per stage (vpp) and the backend after the ZeRO stage; 01 files
// read as vpp 1 of the CPU backend.
constexpr char kMagic[8] = {'T', 'S', 'C', 'K', 'P', 'T', '0', '2'};
constexpr char kMagicV1[8] = {'T', 'S', 'C', 'K', 'P', 'T', '0', '1'};

uint64_t fnv1a(const char* bytes, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(bytes[i]);
    h *= 1099511628211ull;
  }
  return h;
}

void put(std::string& out, const void* data, size_t size) { out.append(static_cast<const char*>(data), size); }

std::vector<int64_t> header_fields(const CheckpointHeader& h) {
  return {h.world_size, h.dp, h.tp, h.pp, h.zero_stage, h.vpp, h.backend, h.layers, h.hidden, h.vocab, h.seq_len,
          static_cast<int64_t>(h.seed), h.iteration, h.optimizer_step};
}

std::string hex64(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}

// The fields and tensors of a checkpoint's bytes as its header and tensor sizes describe them,
// read without trusting the checksum: `needed_bytes` is the file size they call for (a lower bound
// when the file ends before the last size field), `problem` what does not add up.
struct Layout {
  CheckpointData data;
  uint64_t needed_bytes = 0;
  bool needed_exact = true;
  std::string problem;
};

Layout read_layout(const std::string& bytes, bool v1) {
  Layout out;
  const size_t body = bytes.size() - sizeof(uint64_t);  // where the checksum begins
  size_t at = sizeof kMagic;
  const auto take = [&](void* to, uint64_t size) {
    if (size > body - at) return false;
    bytes.copy(static_cast<char*>(to), size, at);
    at += size;
    return true;
  };
  std::vector<int64_t> fields(14);
  for (size_t i = 0; i < fields.size(); ++i) {
    if (v1 && (i == 5 || i == 6)) continue;  // no vpp or backend: one chunk per stage, CPU
    take(&fields[i], sizeof fields[i]);      // the minimum size holds every field
  }
  if (v1) fields[5] = 1, fields[6] = 0;
  CheckpointHeader& h = out.data.header;
  h.world_size = fields[0], h.dp = fields[1], h.tp = fields[2], h.pp = fields[3], h.zero_stage = fields[4], h.vpp = fields[5];
  h.backend = fields[6], h.layers = fields[7], h.hidden = fields[8], h.vocab = fields[9], h.seq_len = fields[10];
  h.seed = static_cast<uint64_t>(fields[11]), h.iteration = fields[12], h.optimizer_step = fields[13];
  int64_t count = 0;
  take(&count, sizeof count);
  if (count < 0 || count > 1000000) {
    out.problem = "implausible tensor count " + std::to_string(count) + " (a damaged header)";
    return out;
  }
  for (int64_t i = 0; i < count; ++i) {
    int64_t n = 0;
    if (!take(&n, sizeof n)) {  // the file ends before this tensor's size
      out.needed_bytes = at + sizeof n + sizeof(uint64_t), out.needed_exact = false;
      return out;
    }
    if (n < 0 || static_cast<uint64_t>(n) > (uint64_t{1} << 60)) {
      out.problem = "tensor " + std::to_string(i) + " of " + std::to_string(count) + " has an implausible size " + std::to_string(n);
      return out;
    }
    std::vector<float> t;
    if (static_cast<uint64_t>(n) * sizeof(float) > body - at) {  // the file ends inside this tensor
      out.needed_bytes = at + static_cast<uint64_t>(n) * sizeof(float) + sizeof(uint64_t), out.needed_exact = i + 1 == count;
      return out;
    }
    t.resize(static_cast<size_t>(n));
    take(t.data(), t.size() * sizeof(float));
    out.data.tensors.push_back(std::move(t));
  }
  out.needed_bytes = at + sizeof(uint64_t);
  return out;
}

}  // namespace

CheckpointHeader checkpoint_header(const ModelSpec& m, const ParallelPlan& p, int world_size, uint64_t seed, int64_t backend) {
  CheckpointHeader h;
  h.world_size = world_size;
  h.dp = p.dp, h.tp = p.tp, h.pp = p.pp, h.zero_stage = p.zero_stage;
  h.vpp = p.schedule == Schedule::kInterleaved ? p.vpp : 1;
  h.backend = backend;
  h.layers = m.layers, h.hidden = m.hidden, h.vocab = m.vocab, h.seq_len = m.seq_len;
  h.seed = seed;
  return h;
}

bool CheckpointHeader::operator==(const CheckpointHeader& o) const {
  std::vector<int64_t> a = header_fields(*this), b = header_fields(o);
  a.resize(a.size() - 2);
  b.resize(b.size() - 2);
  return a == b;
}

std::string checkpoint_path(const std::string& dir, int rank, int64_t iteration) {
  return dir + "/rank" + std::to_string(rank) + ".it" + std::to_string(iteration) + ".ckpt";
}

std::string latest_marker_path(const std::string& dir) { return dir + "/latest"; }

void write_checkpoint(const std::string& path, const CheckpointData& data) {
  std::string bytes;
  // One allocation of the file's size (appending tensor by tensor would regrow and copy it).
  size_t size = sizeof kMagic + header_fields(data.header).size() * sizeof(int64_t) + 2 * sizeof(int64_t) + sizeof(uint64_t);
  for (const auto& t : data.tensors) size += sizeof(int64_t) + t.size() * sizeof(float);
  bytes.reserve(size);
  put(bytes, kMagic, sizeof kMagic);
  for (int64_t field : header_fields(data.header)) put(bytes, &field, sizeof field);
  const int64_t count = static_cast<int64_t>(data.tensors.size());
  put(bytes, &count, sizeof count);
  for (const auto& t : data.tensors) {
    const int64_t n = static_cast<int64_t>(t.size());
    put(bytes, &n, sizeof n);
    put(bytes, t.data(), t.size() * sizeof(float));
  }
  const uint64_t sum = fnv1a(bytes.data(), bytes.size());
  put(bytes, &sum, sizeof sum);
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError("--checkpoint-dir: cannot write " + temporary, "check that the folder exists and is writable");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw InputError("--checkpoint-dir: writing " + temporary + " failed (disk full?)");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) throw InputError("--checkpoint-dir: cannot rename " + temporary + " to " + path);
}

CheckpointData read_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": no checkpoint here", "--resume needs the --checkpoint-dir of an earlier run of the same plan");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto corrupt = [&](const std::string& why) {
    return InputError(path + ": corrupt checkpoint: " + why, "resume from an intact checkpoint, or start again without --resume");
  };
  const std::string size = std::to_string(bytes.size());
  const bool v1 = bytes.compare(0, sizeof kMagicV1, kMagicV1, sizeof kMagicV1) == 0;
  const size_t minimum = sizeof kMagic + ((v1 ? 12 : 14) + 1) * sizeof(int64_t) + sizeof(uint64_t);  // magic, header, count, checksum
  if (bytes.size() >= sizeof kMagic && !v1 && bytes.compare(0, sizeof kMagic, kMagic, sizeof kMagic) != 0) {
    throw corrupt("not a trainsim checkpoint (bad magic)");
  }
  if (bytes.size() < minimum) throw corrupt("truncated: the file has " + size + " bytes, a checkpoint at least " + std::to_string(minimum));
  // A file cut short says so (its checksum is then just the last 8 bytes there); otherwise a bad
  // checksum comes first, with whatever else does not add up.
  const Layout layout = read_layout(bytes, v1);
  const std::string needed = std::to_string(layout.needed_bytes);
  if (layout.problem.empty() && layout.needed_bytes > bytes.size()) {
    throw corrupt("truncated: the file has " + size + " bytes, its header and tensor sizes call for " +
                  (layout.needed_exact ? "" : "at least ") + needed + " (or one of them is damaged)");
  }
  std::string also = layout.problem;
  if (also.empty() && layout.needed_bytes < bytes.size()) {
    also = "the file has " + size + " bytes, " + std::to_string(bytes.size() - layout.needed_bytes) +
           " more than its header and tensor sizes call for (" + needed + "; or one of them is damaged)";
  }
  const size_t body = bytes.size() - sizeof(uint64_t);
  uint64_t stored = 0;
  bytes.copy(reinterpret_cast<char*>(&stored), sizeof stored, body);
  const uint64_t computed = fnv1a(bytes.data(), body);
  if (computed != stored) {
    throw corrupt("checksum mismatch: stored " + hex64(stored) + ", computed " + hex64(computed) + " (FNV-1a of the first " +
                  std::to_string(body) + " bytes; file size " + size + " bytes)" + (also.empty() ? "" : "; also " + also));
  }
  if (!also.empty()) throw corrupt(also);
  return layout.data;
}

namespace {

// Raises the first rank's error (if any) on every rank.
void agree(MPI_Comm world, const std::optional<std::string>& error) {
  if (const std::optional<RankError> first = first_error(world, error)) {
    throw InputError("rank " + std::to_string(first->rank) + ": " + first->message);
  }
}

std::string with_hint(const InputError& e) { return std::string(e.what()) + (e.hint().empty() ? "" : "\nhint: " + e.hint()); }

}  // namespace

void save_checkpoint_set(MPI_Comm world, const std::string& dir, int64_t every, const CheckpointData& data) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  const int64_t iteration = data.header.iteration;
  std::optional<std::string> error;
  try {
    std::error_code ignored;
    std::filesystem::create_directories(dir, ignored);
    write_checkpoint(checkpoint_path(dir, rank, iteration), data);
  } catch (const InputError& e) {
    error = with_hint(e);
  }
  agree(world, error);
  if (rank == 0) {  // every rank has written: move the marker
    const std::string marker = latest_marker_path(dir);
    std::ofstream(marker + ".tmp") << iteration << "\n";
    std::rename((marker + ".tmp").c_str(), marker.c_str());
  }
  MPI_Barrier(world);
  // Two complete sets stay (this one and the one before) so that --resume-from-last-good has one
  // to go back to; the set before those goes.
  if (iteration - 2 * every >= 0) std::remove(checkpoint_path(dir, rank, iteration - 2 * every).c_str());
}

namespace {

int64_t read_latest_marker(MPI_Comm world, const std::string& dir) {
  std::optional<std::string> error;
  int64_t iteration = -1;
  std::ifstream marker(latest_marker_path(dir));
  if (!(marker >> iteration)) {
    error = with_hint(InputError("--resume: " + latest_marker_path(dir) + " is missing or unreadable",
                                 "--resume needs the --checkpoint-dir of an earlier run that saved at least once"));
  }
  agree(world, error);
  return iteration;
}

// This rank's file of the set of `iteration`, or why it is refused. A file of another run is no
// reason to try an older set (they are of the same run); a missing, damaged or misshapen one is.
struct RankLoad {
  CheckpointData data;
  std::optional<std::string> error;
  bool another_run = false;
};

RankLoad load_rank_file(const std::string& path, const CheckpointHeader& expected, const std::vector<size_t>& tensor_sizes) {
  RankLoad out;
  try {
    out.data = read_checkpoint(path);
    if (!(out.data.header == expected)) {
      out.another_run = true;
      throw InputError(path + ": the checkpoint is of another run (model, plan, backend, rank count or seed differ)",
                       "resume with the same model, plan, --backend, mpirun -np and --seed");
    }
    if (out.data.tensors.size() != tensor_sizes.size()) throw InputError(path + ": corrupt checkpoint: wrong number of tensors");
    for (size_t i = 0; i < tensor_sizes.size(); ++i) {
      if (out.data.tensors[i].size() != tensor_sizes[i]) {
        throw InputError(path + ": corrupt checkpoint: tensor " + std::to_string(i) + " has the wrong size");
      }
    }
  } catch (const InputError& e) {
    out.error = out.another_run ? with_hint(e) : std::string(e.what());  // the set's refusal gives its own hint
  }
  return out;
}

// The newest iteration below `below` of which this rank has a file in `dir` (-1: none).
int64_t newest_own_file_below(const std::string& dir, int rank, int64_t below) {
  const std::string prefix = "rank" + std::to_string(rank) + ".it", suffix = ".ckpt";
  int64_t newest = -1;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ignored)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 18) continue;
    const int64_t iteration = std::stoll(digits);
    if (iteration < below) newest = std::max(newest, iteration);
  }
  return newest;
}

}  // namespace

CheckpointData load_checkpoint_set(MPI_Comm world, const std::string& dir, const CheckpointHeader& expected,
                                   const std::vector<size_t>& tensor_sizes, const std::function<void(const std::string&)>& fall_back) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  int64_t iteration = read_latest_marker(world, dir);
  std::string refused;  // each set passed over, and why
  for (;;) {
    RankLoad mine = load_rank_file(checkpoint_path(dir, rank, iteration), expected, tensor_sizes);
    const std::optional<RankError> failed = first_error(world, mine.error);
    if (!failed) {
      if (!refused.empty()) {
        fall_back("resume: " + refused + "; resuming from the set of iteration " + std::to_string(iteration) +
                  ", the newest older set that every rank loads");
      }
      return std::move(mine.data);
    }
    int another_run = mine.another_run ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &another_run, 1, MPI_INT, MPI_MAX, world);
    const std::string why = "rank " + std::to_string(failed->rank) + ": " + failed->message;
    if (another_run) throw InputError(why);
    if (!fall_back) {
      throw InputError(why, "--resume-from-last-good resumes from the newest older checkpoint set that loads on every rank (a run "
                            "keeps the last two), or start again without --resume");
    }
    refused += (refused.empty() ? "" : "; ") + std::string("refused the set of iteration ") + std::to_string(iteration) + " (" + why + ")";
    // The newest iteration every rank may have: the smallest of the ranks' newest files below this
    // one (a rank without that file refuses it in the next round, which goes lower still).
    int64_t older = newest_own_file_below(dir, rank, iteration);
    MPI_Allreduce(MPI_IN_PLACE, &older, 1, MPI_INT64_T, MPI_MIN, world);
    if (older < 0) {
      throw InputError("--resume-from-last-good: no checkpoint set in " + dir + " loads on every rank: " + refused,
                       "start again without --resume");
    }
    iteration = older;
  }
}

}  // namespace trainsim::runtime
