"""The nccl output family."""
