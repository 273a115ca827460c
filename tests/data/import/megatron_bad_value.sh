torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py \
    --tensor-model-parallel-size x --micro-batch-size 1 --global-batch-size 64 --bf16
