torchrun --nnodes 2 --nproc-per-node 9223372036854775807 pretrain_gpt.py \
    --tensor-model-parallel-size 2 --micro-batch-size 1
