"""The slurm output family."""
