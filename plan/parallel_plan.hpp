// ParallelPlan: how one training iteration is laid out over GPUs (dp x tp x pp x cp, virtual
// pipeline stages, micro-batching, ZeRO stage, recomputation, sequence parallelism, schedule,
// precision). `validate_plan` reports every violated constraint at once, naming the values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/problem_list.hpp"
#include "model/model_spec.hpp"
#include "model/plan_knobs.hpp"  // Recompute, RecomputeModules, AttentionKernel, LossKernel

namespace trainsim {

// kZeroBubble1p / 2p: Zero Bubble pipelines (Qi et al. 2024) with the backward split into input
// and weight gradients, at most 1 x or 2 x pp micro-batches of activations pending. kZeroBubbleV:
// ZB-V (same paper, §6), two model chunks per rank placed in a V (below), 1F1B's memory.
enum class Schedule { kGpipe, k1F1B, kInterleaved, kZeroBubble1p, kZeroBubble2p, kZeroBubbleV };
inline bool is_zero_bubble(Schedule s) {
  return s == Schedule::kZeroBubble1p || s == Schedule::kZeroBubble2p || s == Schedule::kZeroBubbleV;
}

// Where each virtual pipeline stage (0 .. pp x chunks - 1, in the order a micro-batch's forward
// visits them) runs. Megatron's interleaving puts virtual stage vs on rank vs % pp as its chunk
// vs / pp; the V placement (ZB-V, torchtitan's ScheduleZBVZeroBubble) runs chunk 0 down the ranks
// and chunk 1 back up, so rank i holds virtual stages i and 2pp - 1 - i, and the first rank holds
// both the embedding and the LM head.
inline bool v_placement(Schedule s) { return s == Schedule::kZeroBubbleV; }
struct ChunkPlace {
  int64_t stage = 0;  // pipeline rank
  int64_t chunk = 0;  // model chunk on that rank
};
inline ChunkPlace place_of_virtual_stage(bool v_shape, int64_t pp, int64_t vs) {
  if (v_shape && vs >= pp) return {2 * pp - 1 - vs, 1};
  return {vs % pp, vs / pp};
}
inline int64_t virtual_stage_at(bool v_shape, int64_t pp, int64_t stage, int64_t chunk) {
  return v_shape && chunk == 1 ? 2 * pp - 1 - stage : chunk * pp + stage;
}
// Training precision of the linear layers' GEMMs (attention and every other op run in BF16 under
// the quantized ones): kFp8 per-tensor scaled FP8 (the Fp8Recipe says how); kMxfp8 Transformer
// Engine's MXFP8BlockScaling (E4M3 values, one E8M0 scale per 32 values; Blackwell's block-scaled
// tensor cores); kNvfp4 its NVFP4BlockScaling (E2M1 values, one E4M3 scale per 16 values and an
// FP32 scale per tensor). The quantization work of each: plan/fp8_lowering.cpp.
enum class Precision { kBf16, kFp16, kFp32, kFp8, kMxfp8, kNvfp4 };
// One byte per GEMM operand: FP8 primary weights and FP8 all-gathers apply.
inline bool fp8_family(Precision p) { return p == Precision::kFp8 || p == Precision::kMxfp8; }
// The linears' GEMMs run on quantized operands, everything else in BF16.
inline bool quantized_linears(Precision p) { return fp8_family(p) || p == Precision::kNvfp4; }
// How RMSNorm runs: one fused kernel (Megatron/TE, apex, torch.compile), or PyTorch's eager
// composite (several kernels around an fp32 up-cast), as an uncompiled torchtitan runs it.
enum class NormKernel { kFused, kEager };
// How context-parallel ranks share K and V (Megatron-Core's cp_comm_type): a ring of send/recvs
// overlapped with attention (p2p, Transformer Engine's default), an all-gather of K and V before
// attention and a reduce-scatter of their gradients (all_gather, as Llama 3 trained), or
// DeepSpeed-Ulysses' all-to-alls that trade the sequence split for a head split (a2a).
enum class CpComm { kP2p, kAllGather, kA2a };
// Which layers full recomputation covers (Megatron-Core's --recompute-method with
// --recompute-num-layers N, applied to each model chunk: plan/recompute_span.hpp). kUniform: every
// layer, in groups of N that keep only the group's input; kBlock: the first N layers of each chunk,
// the others keep every activation and are not recomputed; kEvery: every N-th layer of each chunk
// checkpointed whole, the others keeping every activation (torchtitan's layer-wise selective
// checkpointing, activation_checkpoint.selective_ac_option = "N", its default "2" until March 2026).
enum class RecomputeMethod { kUniform, kBlock, kEvery };
// How FP8 linears scale (precision fp8): Transformer Engine's delayed per-tensor scaling, as
// Megatron-Core and NeMo run it (casts and amax reductions priced op by op: plan/fp8_lowering.cpp),
// or torchao's dynamic row-wise scaling (Float8LinearConfig.from_recipe_name("rowwise"), as
// torchtitan's float8 rowwise recipe runs it), priced from torchao's measured speedup of a whole
// float8 linear over bf16 (plan/torchao_rowwise.hpp), or Transformer Engine's per-tensor current
// scaling (Float8CurrentScaling; Megatron-LM's --fp8-recipe tensorwise, Megatron-Bridge's fp8_cs):
// each tensor's scale from its own amax, taken just before the cast (plan/fp8_lowering.cpp), or
// Transformer Engine's blockwise scaling (Float8BlockScaling; Megatron-LM's --fp8-recipe blockwise,
// Megatron-Bridge's subchannel recipe, DeepSeek-V3's scheme): a scale per 1 x 128 tile of
// activations and gradients and per 128 x 128 block of weights.
enum class Fp8Recipe { kDelayed, kRowwise, kTensorwise, kBlockwise };
// How an MoE layer moves tokens to experts held apart from the dense TP split (Megatron-Core's
// --moe-token-dispatcher-type): kAllToAll sends each token's top-k copies to the ranks holding
// their experts and back; kAllGather (Megatron-Core's default) all-gathers every token of the
// expert TP x EP group on every rank, which keeps the copies for its local experts, and
// reduce-scatters the outputs back (in the router probabilities' fp32); kFlex (Megatron-Core's flex
// dispatcher with DeepEP or HybridEP) sends a token once to each other node holding one of its
// experts and forwards the copies over NVLink inside the node (the combine the reverse).
enum class MoeDispatcher { kAllToAll, kAllGather, kFlex };
// Whose modules issue a layer's ops from the host, which sets the host time per op
// (sim/step_cost.cpp price_ops): kPytorch, PyTorch modules and legacy Megatron kernels (the host
// time vTrain's Megatron-DeepSpeed runs were fitted to); kTransformerEngine, Transformer Engine
// modules under Megatron-Core (NeMo, Megatron-Bridge): an eager FP8 / MoE stack's host time per
// op, and a grouped linear's experts issued one GEMM each (TE's multi-stream cuBLAS path).
enum class HostStack { kPytorch, kTransformerEngine };
const char* to_string(HostStack stack);
// What CUDA graphs capture (Megatron-Core's --cuda-graph-impl / --cuda-graph-scope), as bit
// flags: a captured op costs the host nothing (one graph launch per captured run of ops).
// attn: a layer's attention block; mlp: its dense MLP; moe_router: the router; moe_preprocess:
// the token dispatcher's metadata (no op of its own in the lowering); moe: the whole MoE block
// (sync-free dispatch); layer: every op of a layer (Megatron-Core's local graphs, scope "full");
// full_iteration: everything, embedding, head and loss included.
enum CudaGraphScope : uint32_t {
  kGraphAttn = 1u << 0,
  kGraphMlp = 1u << 1,
  kGraphMoeRouter = 1u << 2,
  kGraphMoePreprocess = 1u << 3,
  kGraphMoe = 1u << 4,
  kGraphLayer = 1u << 5,
  kGraphFullIteration = 1u << 6,
};
using CudaGraphs = uint32_t;
// "attn,moe_router"; "" for none.
std::string cuda_graphs_text(CudaGraphs graphs);
// One scope's flag by name (attn, mlp, moe_router, moe_preprocess, moe, layer, full_iteration); 0 if none.
CudaGraphs cuda_graph_flag(const std::string& name);
const char* cuda_graph_names();
// How ZeRO-3 issues its data-parallel collectives. kPerLayer: one all-gather of a layer's weights
// (before its forward, and again before its backward without a pipeline) and one reduce-scatter
// of its gradients, as FSDP units wrapping each block do (PyTorch FSDP1/FSDP2, torchtitan, LLM
// Foundry). kDeepSpeed: as DeepSpeed's stage 3 does (deepspeed/runtime/zero/
// partitioned_param_coordinator.py, stage3.py): one all-gather per fetch of parameter modules,
// packed up to stage3_prefetch_bucket_size (5e7 elements), in the forward and again in the
// backward, and the gradients reduce-scattered in reduce_bucket_size buckets (5e8 elements) after
// every micro-batch's backward; each call pays the ring's latency (plan/zero3_collectives.hpp).
enum class Zero3Collectives { kPerLayer, kDeepSpeed };
// Whose ZeRO holds the gradients on their way to the reduction: kMegatron (Megatron-Core's and
// PyTorch FSDP's buffers, views into the gradient memory already counted) or kDeepSpeed, whose
// optimizer copies them into its own contiguous gradient buckets of reduce_bucket_size (5e8)
// 16-bit elements: one at ZeRO-3 (stage3.py), one at ZeRO-1/2 and a second with overlap_comm
// (stage_1_and_2.py setup_buckets; deepspeedai/DeepSpeed@edaa722): plan/rank_memory.cpp.
enum class ZeroEngine { kMegatron, kDeepSpeed };

struct ParallelPlan {
  int64_t dp = 1, tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1;
  // Transformer layers on the first / last pipeline stage, the rest split evenly over the middle
  // stages (Megatron-Core's --decoder-first/last-pipeline-num-layers); 0: not set.
  int64_t first_stage_layers = 0, last_stage_layers = 0;
  // Transformer layers of each virtual pipeline stage in model order (pp x vpp of them; Megatron-Core's
  // --pipeline-model-parallel-layout, its "t" count per stage: the embedding stays on the first
  // stage, the loss and any multi-token-prediction depths on the last); empty: derived as above.
  std::vector<int64_t> pipeline_layout;
  int64_t micro_batch = 1;   // sequences per micro-batch per DP rank
  int64_t global_batch = 1;  // sequences per iteration over all DP ranks
  int zero_stage = 0;        // 0: none, 1: optimizer states, 2: + gradients, 3: + weights (FSDP)
  // ZeRO's shard group: 0 shards over all dp x cp ranks; n < dp x cp shards over n of them and
  // replicates across the dp x cp / n groups, all-reducing the shards' gradients (HSDP: shard
  // inside a node, replicate across; Megatron-Core's --num-distributed-optimizer-instances).
  int64_t dp_shard = 0;
  Recompute recompute = Recompute::kNone;
  // With recompute full: which layers (uniform 1 recomputes every layer alone). recompute_layers
  // is the layers of each group (uniform, >= 1) or the layers recomputed per model chunk (block, >= 0).
  RecomputeMethod recompute_method = RecomputeMethod::kUniform;
  int64_t recompute_layers = 1;
  // With recompute selective: the modules it re-runs (Megatron-Core's --recompute-modules).
  RecomputeModules recompute_modules = kDefaultRecomputeModules;
  bool sequence_parallel = false;
  Schedule schedule = Schedule::k1F1B;
  Precision precision = Precision::kBf16;
  AttentionKernel attention = AttentionKernel::kFlash;
  LossKernel cross_entropy = LossKernel::kFused;  // how the last stage computes the loss
  NormKernel norm = NormKernel::kFused;            // RMSNorm's kernel (LayerNorm is fused either way)
  CpComm cp_comm = CpComm::kP2p;                   // with cp > 1
  // Data-parallel gradient reduction overlapped with the backward in buckets (PyTorch DDP, FSDP,
  // Megatron-core --overlap-grad-reduce); false: reduced after the whole backward (Megatron-LM 2021).
  bool dp_overlap = true;
  // Backward TP collectives overlapped with the gradient GEMMs (Megatron-LM's asynchronous
  // tensor-parallel all-reduce, default since 2022); false: all on the critical path.
  bool tp_overlap = true;
  // Every TP collective of a layer overlapped with a GEMM, forward and backward (Megatron-Core's
  // --tp-comm-overlap through Transformer Engine's userbuffers; torchtitan's async TP): needs SP.
  bool tp_comm_overlap = false;
  // FP8 primary weights (Megatron --fp8-param-gather, NeMo fp8_params): with precision fp8 the
  // weights are kept in FP8 (no per-iteration cast, no second FP8 copy) and the distributed
  // optimizer all-gathers them in FP8.
  bool fp8_params = false;
  // Data-parallel gradients accumulated and reduced in fp32 (Megatron-Core's DDP
  // grad_reduce_in_fp32, Megatron-LM's default); false: in the 16-bit training dtype (Megatron-LM
  // --grad-reduce-in-bf16; every Megatron-Bridge performance recipe): 2 bytes per gradient in the
  // buffer and on the wire.
  bool grad_reduce_in_fp32 = true;
  // The FP8 linears are torchao's Float8Linear (torchtitan's float8 converter) rather than
  // Transformer Engine's: each keeps its 16-bit input for the backward (torchao float8_linear.py,
  // matmul_with_hp_or_float8_args saves input_hp), not a quantized copy. The rowwise recipe is
  // torchao's either way.
  bool torchao_float8 = false;
  // Unfused attention's scale-mask-softmax as one fused kernel (Megatron's FusedScaleMaskSoftmax,
  // --masked-softmax-fusion on by default); false: PyTorch's masked_fill_ and softmax, two passes
  // more each way (Megatron --no-masked-softmax-fusion; GPT-NeoX's default,
  // scaled_upper_triang_masked_softmax_fusion False).
  bool softmax_fusion = true;
  // A biased GELU FFN adds fc1's bias inside the GELU kernel (Megatron's bias_gelu fusion);
  // false: a separate add first (Megatron --no-bias-gelu-fusion; GPT-NeoX's default).
  bool bias_gelu_fusion = true;
  // Megatron-Core builds the MoE experts' MLP from Transformer Engine's operation fuser
  // (use_transformer_engine_op_fuser; Megatron-Bridge's cutedsl_fused_grouped_mlp): the experts'
  // fc2 bias is scaled and added inside the fused op, not in TEGroupedMLP's per-expert Python loop.
  bool te_op_fuser = false;
  // LoRA fine-tuning (Megatron-Bridge's peft "lora"): adapters of this rank (A: in x r, B: r x out)
  // beside every layer's qkv, proj, fc1 and fc2 (its default target_modules); the base weights,
  // the embedding and the output layer frozen: no weight gradients, gradient buffers, optimizer
  // states or gradient reduction for them. 0: no LoRA, every weight trains.
  int64_t lora_rank = 0;
  // CPU activation offloading (Megatron-Core's --cpu-offloading-num-layers, through Transformer
  // Engine's get_cpu_offload_context): the saved activations of this many layers are copied to the
  // host after their forward and back before their backward, so the GPU holds (layers - N) layers'
  // worth. 0: none.
  int64_t cpu_offload_layers = 0;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  // with precision fp8
  // MoE routing: the busiest EP rank's token copies over the mean (1: balanced, as NVIDIA's
  // benchmarks force it), and the expert capacity factor (Megatron-Core's
  // --moe-expert-capacity-factor: copies beyond capacity x the mean are dropped; 0: dropless).
  double moe_imbalance = 1.0;
  double moe_capacity_factor = 0.0;
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  // The MoE token exchange hidden behind another micro-batch's compute (Megatron-Core's
  // --overlap-moe-expert-parallel-comm: the combined 1F1B schedule runs one micro-batch's forward
  // beside another's backward, layer by layer, each one's dispatch and combine under the other's
  // attention and expert GEMMs).
  bool ep_comm_overlap = false;
  // The host side: whose modules issue the ops, and what CUDA graphs capture (HostStack,
  // CudaGraphScope).
  HostStack host_stack = HostStack::kTransformerEngine;
  CudaGraphs cuda_graphs = 0;
  Zero3Collectives zero3_collectives = Zero3Collectives::kPerLayer;  // with zero_stage 3
  ZeroEngine zero_engine = ZeroEngine::kMegatron;  // with zero_stage >= 1
  // DeepSpeed's ZeRO buckets, in elements (zero_optimization.reduce_bucket_size and
  // stage3_prefetch_bucket_size; defaults 5e8 and 5e7, deepspeed/runtime/zero/config.py), and
  // contiguous_gradients (default on: the gradients are copied into reduce buckets allocated whole).
  // Read with zero_engine deepspeed (memory) and zero3_collectives deepspeed (call counts).
  double deepspeed_reduce_bucket = 5e8;
  double deepspeed_prefetch_bucket = 5e7;
  bool deepspeed_contiguous_gradients = true;
  // Copies the busiest expert-parallel rank processes over the mean.
  double moe_load() const { return moe_capacity_factor > 0 ? std::min(moe_imbalance, moe_capacity_factor) : moe_imbalance; }
  // Token copies the busiest rank's experts process over the balanced mean: moe_load() with EP;
  // without EP every rank runs every expert's slice, so only a capacity factor under 1 (copies
  // dropped even when balanced) changes it.
  double expert_rank_load() const {
    return ep > 1 ? moe_load() : std::min(1.0, moe_capacity_factor > 0 ? moe_capacity_factor : 1.0);
  }
  // Expert tensor parallelism (Megatron-Core's --expert-tensor-parallel-size): each expert split
  // over this many ranks. 0: the default, 1 with expert parallelism (the Megatron-Bridge and NeMo
  // MoE recipes set 1) and tp without it (the experts split over TP like a dense FFN).
  int64_t expert_tp = 0;
  int64_t expert_tp_size() const { return expert_tp > 0 ? expert_tp : (ep > 1 ? 1 : tp); }
  // The experts run as a TP-split dense FFN on the TP region's tokens (no expert parallelism,
  // expert TP = TP); otherwise a rank routes its own tokens to experts held apart from the dense
  // weights (the expert grid etp x ep x expert-dp over a stage's tp x cp x dp ranks).
  bool experts_like_dense() const { return ep == 1 && expert_tp_size() == tp; }

  int64_t gpus() const { return dp * tp * pp * cp; }
  // Ranks a ZeRO shard group holds (dp x cp unless dp_shard says fewer), and how many replicate it.
  int64_t shard_ranks() const { return dp_shard > 0 ? dp_shard : dp * cp; }
  int64_t shard_replicas() const { return dp * cp / shard_ranks(); }
  // Micro-batches per DP rank per iteration (gradient accumulation steps).
  int64_t micro_batches() const { return global_batch / (dp * micro_batch); }
};

// Bytes per value of the copy a quantized linear layer keeps of its input for the weight gradient
// (Transformer Engine's Linear and LayerNormLinear keep the quantized input, column-wise where the
// backward needs it): FP8 per-tensor 1, FP8 blockwise 1 + an fp32 scale per 128, MXFP8 1 + an
// E8M0 scale per 32, NVFP4 0.5 + an E4M3 scale per 16. 0 when the linears keep their 16-bit input:
// BF16/FP16/FP32 training, torchao's Float8Linear (torchao_float8, the rowwise recipe).
double quantized_input_bytes(const ParallelPlan& plan);

// Whether an MoE model's clamped GLU (ModelSpec::glu_clamp) runs as Megatron-Core's experts run
// it, an eager clamp and torch.cat before the compiled activation (plan/moe_lowering.cpp): Megatron's
// modules (HostStack::kTransformerEngine) without Transformer Engine's op fuser.
bool eager_glu_clamp(const ModelSpec& model, const ParallelPlan& plan);

// Whose rules a plan must follow: the frameworks trainsim predicts (Megatron-LM, DeepSpeed,
// torchtitan), or trainsim's own CPU runtime, whose kernels are its own: it runs context
// parallelism with its unfused ring attention, where Megatron-Core runs only a fused (flash) one.
enum class PlanRules { kFrameworks, kCpuRuntime };

// Every problem of `plan` for `model`; `where` prefixes each message (a file or "options").
ProblemList validate_plan(const ParallelPlan& plan, const ModelSpec& model, const std::string& where,
                          PlanRules rules = PlanRules::kFrameworks);

// Transformer layers held by pipeline stage `stage` (earlier stages take the remainder; with
// interleaving, the sum of its chunks).
int64_t layers_on_stage(const ModelSpec& model, const ParallelPlan& plan, int64_t stage);

// Transformer layers of each virtual stage (pp x vpp of them, placed by place_of_virtual_stage), in model order:
// explicit first/last-stage counts when the plan sets them (each stage's share split evenly over
// its vpp chunks); else, when pp x vpp does not divide the layers but layers + 2 does, the embedding
// and the loss count as a layer each (Megatron-Core's --account-for-embedding/loss-in-pipeline-split,
// Zero Bubble's layer padding), so the first and last virtual stage hold one layer fewer; else the
// earliest virtual stages take the remainder.
std::vector<int64_t> virtual_stage_layers(const ModelSpec& model, const ParallelPlan& plan);

// "7, 8 x 14, 7": the layers of each pipeline stage, run-length coded; "" when every stage holds as many.
std::string describe_stage_layers(const ModelSpec& model, const ParallelPlan& plan);

// Consecutive transformer layers [first, last).
struct LayerRange {
  int64_t first = 0, last = 0;
  int64_t size() const { return last - first; }
};
// The layers of model chunk `chunk` (0 .. vpp-1) on pipeline stage `stage`: virtual stage
// virtual_stage_at(stage, chunk) of pp x vpp, the earlier virtual stages taking the remainder (as Megatron-LM's
// interleaved schedule places them). With vpp 1 it is the stage's whole share.
LayerRange layers_of_chunk(const ModelSpec& model, const ParallelPlan& plan, int64_t stage, int64_t chunk);
// Of that chunk's layers, the MoE model's dense first ones (MoeSpec::dense_layers: the first of the model).
int64_t dense_layers_of_chunk(const ModelSpec& model, const ParallelPlan& plan, int64_t stage, int64_t chunk);
// Transformer layers virtual stage `vs` runs: its share, and on the last the multi-token-prediction
// depths' layers (ModelSpec::mtp_layers). `layers` is virtual_stage_layers(model, plan).
int64_t layers_run_by(const std::vector<int64_t>& layers, const ModelSpec& model, const ParallelPlan& plan, int64_t vs);

const char* to_string(Schedule schedule);
const char* to_string(Precision precision);
const char* to_string(NormKernel norm);
const char* to_string(CpComm cp_comm);
const char* to_string(Zero3Collectives z);
const char* to_string(ZeroEngine z);
const char* to_string(RecomputeMethod method);
const char* to_string(Fp8Recipe recipe);
const char* to_string(MoeDispatcher dispatcher);

}  // namespace trainsim
