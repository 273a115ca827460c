// Checkpoint files: the header round-trips (vpp and backend included), a format-01 file (before
// them) reads as one chunk per stage of the CPU backend, runs that differ only in vpp or backend do
// not match, and a truncated or bit-flipped file is refused with its name and what failed.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "common/errors.hpp"
#include "runtime/checkpoint.hpp"

using namespace trainsim::runtime;

namespace {

CheckpointHeader header() {
  CheckpointHeader h;
  h.world_size = 4, h.dp = 2, h.tp = 1, h.pp = 2, h.zero_stage = 1, h.vpp = 2, h.backend = 1;
  h.layers = 4, h.hidden = 128, h.vocab = 256, h.seq_len = 32;
  h.seed = 7, h.iteration = 3, h.optimizer_step = 4;
  return h;
}

std::string temporary_path(const char* name) { return std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/" + name; }

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void put_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}

// A written checkpoint's path and bytes: header, 2 tensors (3 and 5 floats), checksum: 8 + 14 x 8 +
// 8 + (8 + 12) + (8 + 20) + 8 = 184 bytes.
struct Written {
  std::string path, bytes;
  uint64_t checksum = 0;
};

Written written(const char* name) {
  CheckpointData data;
  data.header = header();
  data.tensors = {{1.0f, 2.0f, 3.0f}, {0.5f, 0.25f, -1.0f, 4.0f, 8.0f}};
  Written w;
  w.path = temporary_path(name);
  write_checkpoint(w.path, data);
  w.bytes = file_bytes(w.path);
  std::memcpy(&w.checksum, w.bytes.data() + w.bytes.size() - sizeof w.checksum, sizeof w.checksum);
  return w;
}

// The message read_checkpoint refuses `bytes` with (written to `path`), or "" when it reads them.
std::string refusal(const std::string& path, const std::string& bytes) {
  put_file(path, bytes);
  try {
    read_checkpoint(path);
  } catch (const trainsim::InputError& e) {
    std::remove(path.c_str());
    return e.what();
  }
  std::remove(path.c_str());
  return "";
}

std::string flip_bit(std::string bytes, size_t at, int bit) {
  bytes[at] = static_cast<char>(bytes[at] ^ (1 << bit));
  return bytes;
}

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

TEST_CASE("the header of a plan names its shape, vpp only with the interleaved schedule") {
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

TEST_CASE("a truncated checkpoint is refused naming the file, the bytes it has and the bytes its sizes call for") {
  const Written w = written("trainsim_test_truncated.ckpt");
  REQUIRE(w.bytes.size() == 184);
  // Cut inside the last tensor: its size field is there, so the full length is known.
  std::string message = refusal(w.path, w.bytes.substr(0, 170));
  CHECK(message.find(w.path + ": corrupt checkpoint: truncated: the file has 170 bytes, its header and tensor sizes call for 184") !=
        std::string::npos);
  // Cut inside the first tensor: the second one's size is gone, so only a lower bound.
  message = refusal(w.path, w.bytes.substr(0, 150));
  CHECK(message.find("truncated: the file has 150 bytes, its header and tensor sizes call for at least 156") != std::string::npos);
  // Cut inside the header: a checkpoint's fixed part is not even there.
  message = refusal(w.path, w.bytes.substr(0, 60));
  CHECK(message.find("truncated: the file has 60 bytes, a checkpoint at least 136") != std::string::npos);
  CHECK(refusal(w.path, "").find("truncated: the file has 0 bytes") != std::string::npos);
}

TEST_CASE("a bit flipped in the header is refused with the stored and the computed checksum and the file size") {
  const Written w = written("trainsim_test_flip_header.ckpt");
  const std::string message = refusal(w.path, flip_bit(w.bytes, 8 + 8 * 8, 3));  // the hidden size
  CHECK(message.find(w.path + ": corrupt checkpoint: checksum mismatch: stored " + hex(w.checksum) + ", computed 0x") != std::string::npos);
  CHECK(message.find("(FNV-1a of the first 176 bytes; file size 184 bytes)") != std::string::npos);
  CHECK(message.find("computed " + hex(w.checksum)) == std::string::npos);
}

TEST_CASE("a bit flipped in a tensor is refused with the stored and the computed checksum") {
  const Written w = written("trainsim_test_flip_tensor.ckpt");
  const std::string message = refusal(w.path, flip_bit(w.bytes, 184 - 8 - 6, 0));  // inside the last float but one
  CHECK(message.find(w.path + ": corrupt checkpoint: checksum mismatch: stored " + hex(w.checksum)) != std::string::npos);
  CHECK(message.find("file size 184 bytes") != std::string::npos);
}

TEST_CASE("a bit flipped in the checksum itself is refused: the stored value differs, the computed one is the file's") {
  const Written w = written("trainsim_test_flip_checksum.ckpt");
  const std::string message = refusal(w.path, flip_bit(w.bytes, 184 - 1, 7));
  CHECK(message.find("checksum mismatch: stored " + hex(w.checksum ^ (uint64_t{1} << 63)) + ", computed " + hex(w.checksum)) !=
        std::string::npos);
}

TEST_CASE("a bit flipped in a tensor size is refused as a length that does not add up, with the checksum when the file is whole") {
  const Written w = written("trainsim_test_flip_size.ckpt");
  const size_t second_size = 8 + 14 * 8 + 8 + 8 + 12;  // the second tensor's float count (5)
  std::string message = refusal(w.path, flip_bit(w.bytes, second_size, 1));  // 5 -> 7 floats
  CHECK(message.find("truncated: the file has 184 bytes, its header and tensor sizes call for 192 (or one of them is damaged)") !=
        std::string::npos);
  message = refusal(w.path, flip_bit(w.bytes, second_size, 0));  // 5 -> 4 floats
  CHECK(message.find("checksum mismatch: stored " + hex(w.checksum)) != std::string::npos);
  CHECK(message.find("; also the file has 184 bytes, 4 more than its header and tensor sizes call for (180") != std::string::npos);
  message = refusal(w.path, flip_bit(w.bytes, second_size + 7, 6));  // an absurd float count
  CHECK(message.find("checksum mismatch: stored " + hex(w.checksum)) != std::string::npos);
  CHECK(message.find("; also tensor 1 of 2 has an implausible size") != std::string::npos);
}

TEST_CASE("an intact checkpoint still reads after all that") {
  const Written w = written("trainsim_test_intact.ckpt");
  CHECK(refusal(w.path, w.bytes).empty());
}
