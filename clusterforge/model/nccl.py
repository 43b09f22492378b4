"""The NCCL environment variables a blueprint's `nccl:` settings may name (the project's copy of the list,
from NCCL's source): validation rejects other names, the nccl renderer checks what it writes against it."""

from functools import cache
from importlib.resources import files


@cache
def nccl_variables() -> frozenset[str]:
    text = files("clusterforge").joinpath("data/nccl_env_vars.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())
