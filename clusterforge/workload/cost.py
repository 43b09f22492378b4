"""Energy and money: the GPU's share of its node's planned power, the site's PUE and the blueprint's prices."""

from __future__ import annotations

from ..model.workload import Prices

HOURS_PER_YEAR = 8760


def gpu_hour_cost(prices: Prices | None, gpu_w: float, pue: float) -> float | None:
    """Price of one GPU-hour: the all-in rate, or capex written off linearly plus facility electricity."""
    if prices is None:
        return None
    if prices.gpu_hour is not None:
        return prices.gpu_hour
    capex = (prices.capex_per_gpu or 0.0) / (prices.depreciation_years * HOURS_PER_YEAR)
    power = gpu_w / 1000 * pue * (prices.electricity_kwh or 0.0)
    return capex + power


def per_million_tokens(gpus: int, hour_cost: float | None, tokens_per_s: float) -> float | None:
    if hour_cost is None or tokens_per_s <= 0:
        return None
    return gpus * hour_cost / (tokens_per_s * 3600) * 1e6
