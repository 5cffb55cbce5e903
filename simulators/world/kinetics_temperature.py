"""How an enzyme's constants depend on temperature: Arrhenius catalysis, a van 't Hoff Km and
first-order thermal inactivation with a large activation energy (unfolding).

The laws and the sources of their priors are in ``simulators/data/kinetics.toml``
(``[enzyme.<key>.temperature]``). At the reference temperature, :data:`REFERENCE_C`, the
constants are returned unchanged (the same floats): runs at room temperature do not depend on
this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "GAS_CONSTANT",
    "REFERENCE_C",
    "TemperaturePrior",
    "at_temperature",
    "kelvin",
]

#: molar gas constant, J mol⁻¹ K⁻¹ [V: CODATA 2018, exact]
GAS_CONSTANT = 8.314462618
#: the temperature (°C) the kinetic constants of ``kinetics.toml`` are defined at: the World's
#: room [A: 25 °C, the usual reference of tabulated constants]
REFERENCE_C = 25.0
#: temperature of the published Km ratio (°C) and of the heat-inactivation test (°C, s)
KM_RATIO_C = 37.0
HEAT_TEST_C = 56.0
HEAT_TEST_S = 600.0


def kelvin(celsius: float) -> float:
    return celsius + 273.15


def _pair(raw: Any, where: str, low: float, high: float) -> tuple[float, float]:
    a, b = (float(x) for x in raw)
    if not (low <= a <= b <= high):
        raise ValueError(f"{where}: needs {low:g} ≤ low ≤ high ≤ {high:g}, not {raw}")
    return a, b


@dataclass(frozen=True)
class TemperaturePrior:
    """Ranges of an enzyme's temperature constants (each drawn uniformly per seed)."""

    #: activation energy of kcat, kJ/mol
    kcat_ea_kj: tuple[float, float]
    #: Km(37 °C) / Km(25 °C)
    km_ratio_37: tuple[float, float]
    #: fraction of activity left after 10 minutes at 56 °C
    residual_56: tuple[float, float]
    #: activation energy of unfolding, kJ/mol
    unfolding_ea_kj: tuple[float, float]

    @classmethod
    def parse(cls, raw: dict[str, Any], where: str) -> TemperaturePrior:
        return cls(
            _pair(raw["kcat_activation_kJ_per_mol"], f"{where}.kcat_activation_kJ_per_mol", 0, 200),
            _pair(raw["km_ratio_37_25"], f"{where}.km_ratio_37_25", 1e-3, 1e3),
            _pair(raw["residual_56C_10min"], f"{where}.residual_56C_10min", 1e-9, 1.0 - 1e-9),
            _pair(
                raw["unfolding_activation_kJ_per_mol"],
                f"{where}.unfolding_activation_kJ_per_mol",
                1.0,
                2000.0,
            ),
        )

    def draw(self, rng: np.random.Generator) -> dict[str, float]:
        """Hidden truth: ``kcat_ea`` and ``unfolding_ea`` (J/mol), ``km_ratio_37`` and
        ``residual_56`` (dimensionless)."""
        return {
            "kcat_ea": 1e3 * float(rng.uniform(*self.kcat_ea_kj)),
            "km_ratio_37": float(rng.uniform(*self.km_ratio_37)),
            "residual_56": float(rng.uniform(*self.residual_56)),
            "unfolding_ea": 1e3 * float(rng.uniform(*self.unfolding_ea_kj)),
        }


def _boltzmann(ea: float, celsius: float, anchor_c: float) -> float:
    """exp(−Ea/R·(1/T − 1/T_anchor)): a rate at ``celsius`` over its value at ``anchor_c``."""
    return math.exp(-ea / GAS_CONSTANT * (1.0 / kelvin(celsius) - 1.0 / kelvin(anchor_c)))


def unfolding_at_heat_test(kd_ref: float, thermal: dict[str, float]) -> float:
    """k_u at 56 °C (s⁻¹): with k_slow = kd_ref − k_u(25 °C), kd(56 °C) = −ln(residual)/600 s."""
    target = -math.log(thermal["residual_56"]) / HEAT_TEST_S
    at_reference = _boltzmann(thermal["unfolding_ea"], REFERENCE_C, HEAT_TEST_C)
    return (target - kd_ref) / (1.0 - at_reference)


def at_temperature(
    work: dict[str, float], thermal: dict[str, float], celsius: float
) -> dict[str, float]:
    """The constants ``work`` (``km_molar``, ``kcat_per_s``, ``kd_per_s`` at
    :data:`REFERENCE_C`) at ``celsius`` under the drawn ``thermal`` truth; ``work`` itself at
    the reference temperature."""
    if celsius == REFERENCE_C:
        return work
    x = 1.0 / kelvin(celsius) - 1.0 / kelvin(REFERENCE_C)
    x37 = 1.0 / kelvin(KM_RATIO_C) - 1.0 / kelvin(REFERENCE_C)
    kd_ref = work["kd_per_s"]
    k_u56 = unfolding_at_heat_test(kd_ref, thermal)
    ea_u = thermal["unfolding_ea"]
    slow = max(kd_ref - k_u56 * _boltzmann(ea_u, REFERENCE_C, HEAT_TEST_C), 0.0)
    return {
        "km_molar": work["km_molar"] * thermal["km_ratio_37"] ** (x / x37),
        "kcat_per_s": work["kcat_per_s"] * _boltzmann(thermal["kcat_ea"], celsius, REFERENCE_C),
        "kd_per_s": slow + k_u56 * _boltzmann(ea_u, celsius, HEAT_TEST_C),
    }
