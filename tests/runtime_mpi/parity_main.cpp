// Loss parity of the CPU runtime, run under mpirun: rank 0 first trains the model alone (a
// one-rank communicator), then all ranks train the same seed and data with the layout given on
// the command line; the loss curves must agree to a relative tolerance (fp32, different
// reduction orders). Usage: mpirun -np N runtime_parity --dp 2 --tp 1 --pp 1 [--cp C] [--ep E] [--sp] [--gpipe]
// [--zero Z] [--no-overlap] [--swiglu-gqa] [--bucket PARAMS] [--recompute full|selective]
// [--vpp V] (interleaved 1F1B with V model chunks per stage) [--llama] (RMSNorm, RoPE, untied LM
// head, no biases, SwiGLU, GQA) [--moe] (every FFN a mixture of 4 experts, top 2, 64 wide; with
// --llama also one shared expert) [--allgather] (the all-gather token dispatcher)
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "model/model_catalog.hpp"
#include "runtime/cpu/trainer.hpp"

using namespace trainsim;

namespace {

bool swiglu_gqa = false;  // the model's variant with a SwiGLU MLP and 2 kv heads for 4 query heads
bool llama = false;       // and with RMSNorm, RoPE, an untied LM head and no biases
bool moe = false;         // every FFN a mixture of experts

ModelSpec parity_model() {
  ModelSpec m = resolve_model("gpt-tiny");  // 2 layers, hidden 128, 4 heads, FFN 512, bytes
  m.layers = 4;                              // so PP=2 and PP=4 split evenly
  m.seq_len = 32;
  m.max_positions = 32;
  if (swiglu_gqa || llama) {
    m.ffn_kind = FfnKind::kSwiglu;
    m.ffn_hidden = 344;
    m.kv_heads = 2;
  }
  if (llama) {
    m.norm = NormKind::kRmsNorm;
    m.position = PositionKind::kRope;
    m.tied_embeddings = false;
    m.linear_bias = false;
  }
  if (moe) {
    m.name += "-moe";
    m.moe = MoeSpec{4, 2, 64, llama ? 1 : 0};  // experts, top_k, expert_ffn_hidden, shared_experts
  }
  return m;
}

int64_t bucket_params = 40'000'000;

std::vector<double> losses(const ParallelPlan& plan, MPI_Comm comm) {
  runtime::RunOptions o;
  o.bucket_params = bucket_params;
  o.steps = 6;
  o.seed = 42;
  o.data_path = TRAINSIM_DEFAULT_CORPUS;
  cpu::Trainer trainer(parity_model(), plan, o, comm);
  std::vector<double> out;
  for (const IterationRecord& r : trainer.run().iterations) out.push_back(r.loss);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ParallelPlan layout;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dp") layout.dp = std::stoll(argv[++i]);
    else if (a == "--tp") layout.tp = std::stoll(argv[++i]);
    else if (a == "--pp") layout.pp = std::stoll(argv[++i]);
    else if (a == "--cp") layout.cp = std::stoll(argv[++i]);
    else if (a == "--ep") layout.ep = std::stoll(argv[++i]);
    else if (a == "--moe") moe = true;
    else if (a == "--allgather") layout.moe_dispatcher = MoeDispatcher::kAllGather;  // the all-gather token dispatcher
    else if (a == "--sp") layout.sequence_parallel = true;
    else if (a == "--gpipe") layout.schedule = Schedule::kGpipe;
    else if (a == "--vpp") layout.vpp = std::stoll(argv[++i]), layout.schedule = Schedule::kInterleaved;
    else if (a == "--zero") layout.zero_stage = std::stoi(argv[++i]);
    else if (a == "--swiglu-gqa") swiglu_gqa = true;
    else if (a == "--llama") llama = true;
    else if (a == "--no-overlap") layout.dp_overlap = false;
    else if (a == "--bucket") bucket_params = std::stoll(argv[++i]);  // parameters per DP gradient bucket
    else if (a == "--recompute") layout.recompute = std::string(argv[++i]) == "full" ? Recompute::kFull : Recompute::kSelective;
  }
  layout.micro_batch = 2;
  layout.global_batch = 8;
  layout.precision = Precision::kFp32;
  layout.attention = AttentionKernel::kUnfused;
  ParallelPlan single = layout;
  single.dp = single.tp = single.pp = single.cp = single.ep = 1;
  single.sequence_parallel = false;
  single.zero_stage = 0;
  single.recompute = Recompute::kNone;
  single.schedule = Schedule::k1F1B;
  single.vpp = 1;

  MPI_Comm alone;
  MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &alone);
  std::vector<double> reference;
  int failed = 0;
  try {
    if (rank == 0) reference = losses(single, alone);
    const std::vector<double> parallel = losses(layout, MPI_COMM_WORLD);
    if (rank == 0) {
      std::printf("layout dp%lld tp%lld pp%lld cp%lld ep%lld vpp%lld zero%d recompute %s%s schedule %s%s on %d ranks vs 1 rank (6 steps, fp32):\n",
                  static_cast<long long>(layout.dp), static_cast<long long>(layout.tp), static_cast<long long>(layout.pp),
                  static_cast<long long>(layout.cp), static_cast<long long>(layout.ep),
                  static_cast<long long>(layout.vpp), layout.zero_stage, to_string(layout.recompute),
                  layout.sequence_parallel ? " sp" : "", to_string(layout.schedule), moe ? ", MoE" : "", size);
      double largest = 0;
      for (size_t i = 0; i < reference.size(); ++i) {
        const double rel = std::fabs(parallel[i] / reference[i] - 1.0);
        largest = std::max(largest, rel);
        std::printf("  step %zu: loss %.8f vs %.8f (difference %.2e, relative %.2e)\n", i, parallel[i], reference[i],
                    std::fabs(parallel[i] - reference[i]), rel);
        if (!(rel <= 1e-4)) failed = 1;
      }
      std::printf("  largest relative difference %.2e (tolerance 1e-4)\n", largest);
      if (reference.back() >= reference.front()) {
        std::printf("  the loss did not fall\n");
        failed = 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    failed = 1;
  }
  if (alone != MPI_COMM_NULL) MPI_Comm_free(&alone);
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return failed;
}
