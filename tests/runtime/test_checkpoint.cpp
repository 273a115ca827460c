// Checkpoint files: the header round-trips (vpp and backend included), a format-01 file (before
// them) reads as one chunk per stage of the CPU backend, and runs that differ only in vpp or
// backend do not match.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "runtime/checkpoint.hpp"

using namespace trainsim::cpu;

namespace {

CheckpointHeader header() {
  CheckpointHeader h;
  h.world_size = 4, h.dp = 2, h.tp = 1, h.pp = 2, h.zero_stage = 1, h.vpp = 2, h.backend = 1;
  h.layers = 4, h.hidden = 128, h.vocab = 256, h.seq_len = 32;
  h.seed = 7, h.iteration = 3, h.optimizer_step = 4;
  return h;
}

std::string temporary_path(const char* name) { return std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/" + name; }

}  // namespace

TEST_CASE("a checkpoint's header and tensors round-trip, vpp included") {
  CheckpointData data;
  data.header = header();
  data.tensors = {{1.0f, 2.0f, 3.0f}, {}, {-4.5f}};
  const std::string path = temporary_path("trainsim_test_roundtrip.ckpt");
  write_checkpoint(path, data);
  const CheckpointData back = read_checkpoint(path);
  std::remove(path.c_str());
  CHECK(back.header == data.header);
  CHECK(back.header.vpp == 2);
  CHECK(back.header.backend == 1);
  CHECK(back.header.iteration == 3);
  CHECK(back.header.optimizer_step == 4);
  CHECK(back.tensors == data.tensors);
}

TEST_CASE("runs that differ only in model chunks per stage, or in backend, are different runs") {
  CheckpointHeader other = header();
  other.vpp = 1;
  CHECK_FALSE(other == header());
  other = header();
  other.backend = 0;
  CHECK_FALSE(other == header());
  other = header();
  other.iteration = 9;
  other.optimizer_step = 10;
  CHECK(other == header());  // where a run is, not which run
}

TEST_CASE("the header of a plan names its shape; vpp only with the interleaved schedule") {
  trainsim::ModelSpec m;
  m.layers = 8, m.hidden = 64, m.vocab = 256, m.seq_len = 32;
  trainsim::ParallelPlan p;
  p.pp = 2, p.vpp = 2, p.schedule = trainsim::Schedule::kInterleaved;
  const CheckpointHeader h = checkpoint_header(m, p, 2, 5, 1);
  CHECK(h.vpp == 2);
  CHECK(h.backend == 1);
  CHECK(h.layers == 8);
  CHECK(h.seed == 5);
  p.vpp = 1, p.schedule = trainsim::Schedule::k1F1B;
  CHECK(checkpoint_header(m, p, 2, 5, 0).vpp == 1);
}

TEST_CASE("a format-01 checkpoint (no vpp field) reads as one chunk per stage") {
  // Format 01: magic, 12 int64 header fields (no vpp), tensor count, tensors, FNV-1a of the rest.
  const int64_t fields[12] = {2, 2, 1, 1, 0, 2, 128, 256, 32, 7, 5, 6};
  std::string bytes("TSCKPT01", 8);
  bytes.append(reinterpret_cast<const char*>(fields), sizeof fields);
  const int64_t count = 1, n = 2;
  const float values[2] = {0.5f, -1.0f};
  bytes.append(reinterpret_cast<const char*>(&count), sizeof count);
  bytes.append(reinterpret_cast<const char*>(&n), sizeof n);
  bytes.append(reinterpret_cast<const char*>(values), sizeof values);
  uint64_t sum = 1469598103934665603ull;
  for (unsigned char c : bytes) sum = (sum ^ c) * 1099511628211ull;
  bytes.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  const std::string path = temporary_path("trainsim_test_v1.ckpt");
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const CheckpointData data = read_checkpoint(path);
  std::remove(path.c_str());
  CHECK(data.header.vpp == 1);
  CHECK(data.header.backend == 0);
  CHECK(data.header.dp == 2);
  CHECK(data.header.layers == 2);
  CHECK(data.header.seed == 7);
  CHECK(data.header.iteration == 5);
  CHECK(data.header.optimizer_step == 6);
  REQUIRE(data.tensors.size() == 1);
  CHECK(data.tensors[0] == std::vector<float>{0.5f, -1.0f});
}
