torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 9223372036854775807 --micro-batch-size 1
