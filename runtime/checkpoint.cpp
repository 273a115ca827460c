// Binary checkpoint format: "TSCKPT02", the header fields as int64, the tensor count, each tensor
// as (count, floats), then the FNV-1a checksum of everything before it.
#include "runtime/checkpoint.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "common/errors.hpp"
#include "runtime/mpi_groups.hpp"

namespace trainsim::cpu {

namespace {

// Format 02 added the model chunks per stage (vpp) and the backend after the ZeRO stage; 01 files
// read as vpp 1 of the CPU backend.
constexpr char kMagic[8] = {'T', 'S', 'C', 'K', 'P', 'T', '0', '2'};
constexpr char kMagicV1[8] = {'T', 'S', 'C', 'K', 'P', 'T', '0', '1'};

uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void put(std::string& out, const void* data, size_t size) { out.append(static_cast<const char*>(data), size); }

std::vector<int64_t> header_fields(const CheckpointHeader& h) {
  return {h.world_size, h.dp, h.tp, h.pp, h.zero_stage, h.vpp, h.backend, h.layers, h.hidden, h.vocab, h.seq_len,
          static_cast<int64_t>(h.seed), h.iteration, h.optimizer_step};
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
  const uint64_t sum = fnv1a(bytes);
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
  if (bytes.size() < sizeof kMagic + 13 * sizeof(int64_t) + sizeof(uint64_t)) throw corrupt("too short");
  const bool v1 = bytes.compare(0, sizeof kMagicV1, kMagicV1, sizeof kMagicV1) == 0;
  if (!v1 && bytes.compare(0, sizeof kMagic, kMagic, sizeof kMagic) != 0) throw corrupt("not a trainsim checkpoint (bad magic)");
  uint64_t stored = 0;
  bytes.copy(reinterpret_cast<char*>(&stored), sizeof stored, bytes.size() - sizeof stored);
  if (fnv1a(bytes.substr(0, bytes.size() - sizeof stored)) != stored) throw corrupt("checksum mismatch");
  size_t at = sizeof kMagic;
  const auto take = [&](void* out, size_t size) {
    if (at + size > bytes.size() - sizeof stored) throw corrupt("truncated");
    bytes.copy(static_cast<char*>(out), size, at);
    at += size;
  };
  std::vector<int64_t> fields(14);
  for (size_t i = 0; i < fields.size(); ++i) {
    if (v1 && (i == 5 || i == 6)) continue;  // no vpp or backend: one chunk per stage, CPU
    take(&fields[i], sizeof fields[i]);
  }
  if (v1) fields[5] = 1, fields[6] = 0;
  CheckpointData data;
  CheckpointHeader& h = data.header;
  h.world_size = fields[0], h.dp = fields[1], h.tp = fields[2], h.pp = fields[3], h.zero_stage = fields[4], h.vpp = fields[5];
  h.backend = fields[6], h.layers = fields[7], h.hidden = fields[8], h.vocab = fields[9], h.seq_len = fields[10];
  h.seed = static_cast<uint64_t>(fields[11]), h.iteration = fields[12], h.optimizer_step = fields[13];
  int64_t count = 0;
  take(&count, sizeof count);
  if (count < 0 || count > 1000000) throw corrupt("implausible tensor count");
  for (int64_t i = 0; i < count; ++i) {
    int64_t n = 0;
    take(&n, sizeof n);
    if (n < 0) throw corrupt("negative tensor size");
    // Before allocating: a size the file cannot hold (found by fuzz/) would ask for up to 2^63 floats.
    if (static_cast<uint64_t>(n) > (bytes.size() - sizeof stored - at) / sizeof(float)) throw corrupt("truncated");
    std::vector<float> t(static_cast<size_t>(n));
    take(t.data(), t.size() * sizeof(float));
    data.tensors.push_back(std::move(t));
  }
  return data;
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
  if (rank == 0) {  // every rank has written: move the marker, drop the set before
    const std::string marker = latest_marker_path(dir);
    std::ofstream(marker + ".tmp") << iteration << "\n";
    std::rename((marker + ".tmp").c_str(), marker.c_str());
  }
  MPI_Barrier(world);
  if (iteration - every >= 0) std::remove(checkpoint_path(dir, rank, iteration - every).c_str());
}

CheckpointData load_checkpoint_set(MPI_Comm world, const std::string& dir, const CheckpointHeader& expected,
                                   const std::vector<size_t>& tensor_sizes) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  std::optional<std::string> error;
  CheckpointData data;
  try {
    int64_t iteration = -1;
    std::ifstream marker(latest_marker_path(dir));
    if (!(marker >> iteration)) {
      throw InputError("--resume: " + latest_marker_path(dir) + " is missing or unreadable",
                       "--resume needs the --checkpoint-dir of an earlier run that saved at least once");
    }
    const std::string path = checkpoint_path(dir, rank, iteration);
    data = read_checkpoint(path);
    if (!(data.header == expected)) {
      throw InputError(path + ": the checkpoint is of another run (model, plan, backend, rank count or seed differ)",
                       "resume with the same model, plan, --backend, mpirun -np and --seed");
    }
    if (data.tensors.size() != tensor_sizes.size()) throw InputError(path + ": corrupt checkpoint: wrong number of tensors");
    for (size_t i = 0; i < tensor_sizes.size(); ++i) {
      if (data.tensors[i].size() != tensor_sizes[i]) {
        throw InputError(path + ": corrupt checkpoint: tensor " + std::to_string(i) + " has the wrong size");
      }
    }
  } catch (const InputError& e) {
    error = with_hint(e);
  }
  agree(world, error);
  return data;
}

}  // namespace trainsim::cpu
