"""What a balance weighs of water in an open vessel: density, air buoyancy and evaporation.

Evidence tags as in the project's physics reference: [V] confirmed in the named source, [L]
recalled published value, [A] assumption, [C] computed here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "AIR_DENSITY_G_ML",
    "REFERENCE_DENSITY_G_ML",
    "Evaporation",
    "buoyancy_factor",
    "saturation_vapour_density",
    "water_density",
    "z_factor",
]

#: density of air (g/mL) at the conditions a balance is adjusted and read in: the conventional
#: 1.2 kg/m³ of OIML R 111 and ISO 8655-6's reference conditions [L]
AIR_DENSITY_G_ML = 1.2e-3
#: density of the reference weights a balance is adjusted with: 8000 kg/m³ (conventional mass,
#: OIML D 28) [L]
REFERENCE_DENSITY_G_ML = 8.0

# Tanaka et al. (2001), Metrologia 38, 301: density of air-free SMOW, 0-40 °C [L]; it gives
# 0.997047 g/mL at 25 °C and 0.998207 at 20 °C [C], the published table values 0.99705 and
# 0.99821 [L]. Dissolved air (-0.0025 kg/m³) and solutes at µM-mM are not modelled.
_A1, _A2, _A3, _A4, _A5 = -3.983035, 301.797, 522528.9, 69.34881, 999.974950


def water_density(celsius: float) -> float:
    """Density of water (g/mL) at ``celsius`` (Tanaka et al. 2001)."""
    t = celsius
    return _A5 * (1.0 - (t + _A1) ** 2 * (t + _A2) / (_A3 * (t + _A4))) / 1000.0


def buoyancy_factor(density_g_ml: float) -> float:
    """What a balance adjusted with reference weights reads per gram of a body of this density
    in air (its conventional mass per gram): (1 - ρa/ρ) / (1 - ρa/ρref) [L: OIML D 28]."""
    return (1.0 - AIR_DENSITY_G_ML / density_g_ml) / (
        1.0 - AIR_DENSITY_G_ML / REFERENCE_DENSITY_G_ML
    )


def z_factor(celsius: float) -> float:
    """ISO 8655-6's Z (µL/mg): the volume of water per milligram a balance reads,
    Z = (1/(ρw - ρa))·(1 - ρa/ρb) [L: ISO 8655-6 Annex A; 1.0040 at 25 °C and 1013 hPa].
    Gravimetric checks convert readings to volumes with it."""
    rho = water_density(celsius)
    return (1.0 / (rho - AIR_DENSITY_G_ML)) * (1.0 - AIR_DENSITY_G_ML / REFERENCE_DENSITY_G_ML)


#: water vapour's molar mass (kg/mol) and the gas constant (J/(mol K)) [L: CODATA]
_M_WATER = 0.018015
_R = 8.314462618


def saturation_vapour_density(celsius: float) -> float:
    """Water vapour density at saturation (g/m³): Buck's (1996) vapour pressure over water,
    6.1121·exp((18.678 - t/234.5)·t/(257.14 + t)) hPa [L], as an ideal gas; 23.0 g/m³ at
    25 °C [C] (tables: 23.05 [L])."""
    t = celsius
    pascal = 611.21 * math.exp((18.678 - t / 234.5) * (t / (257.14 + t)))
    return pascal * _M_WATER / (_R * (t + 273.15)) * 1000.0


@dataclass(frozen=True)
class Evaporation:
    """Evaporation from the liquid surface in an open cylindrical vessel into still air (the
    balance's closed draft shield), limited by diffusion of vapour: up the empty part of the
    vessel (a column of its cross-section) and out from its mouth (a disk of its radius,
    ``1 / (4 D a)``) in series [C: Fick's law; the disk term is Maxwell's for a disk in a
    plane].

    ``diffusivity_m2_s``: water vapour in air, 2.55e-5 m²/s at 25 °C, scaling as T^1.81
    [L: Massman 1998, 2.178e-5 m²/s at 0 °C and 1 atm]; ``humidity``: the air's relative
    humidity inside the draft shield, 50 % [A]. With a 20 mm vessel 40 mm deep this is about
    1-2 µg/s (0.1 mg/min) [C], of the order ISO 8655-6 warns of for small volumes.
    """

    radius_m: float
    depth_m: float
    humidity: float = 0.5
    diffusivity_0c_m2_s: float = 2.178e-5

    def diffusivity(self, celsius: float) -> float:
        return self.diffusivity_0c_m2_s * ((celsius + 273.15) / 273.15) ** 1.81

    def rate_g_s(self, celsius: float, liquid_height_m: float) -> float:
        """Grams of water leaving the vessel per second, at ``celsius`` with the liquid
        ``liquid_height_m`` above the vessel's floor."""
        d = self.diffusivity(celsius)
        area = math.pi * self.radius_m**2
        column = max(self.depth_m - liquid_height_m, 0.0) / (d * area)
        mouth = 1.0 / (4.0 * d * self.radius_m)
        deficit = saturation_vapour_density(celsius) * (1.0 - self.humidity)  # g/m³
        return deficit / (column + mouth)
