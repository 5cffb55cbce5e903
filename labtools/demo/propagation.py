"""Random pipetting error through a serial dilution and the unknown's pipetting, propagated to
the estimate read off the standard curve (first order: a Jacobian by central differences).

Every aspiration–dispense is one random draw of the delivered volume (SD in µL). A row's
draws are shared by its standards: the stock draw scales every well of the row, each transfer
moves dye out of one well and into the next; the unknown's draws scale its wells alone. The
estimate responds to all of them through the fit, so the propagation is taken through the fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from labtools.demo.analysis import StandardCurve

#: step (µL) of the central differences: far below any SD, far above rounding
_STEP_UL = 1e-3


@dataclass(frozen=True)
class SerialDilution:
    """One row of standards: ``stock_ul`` of the stock into well 1 holding ``water_ul[0]``,
    then, for each well ``i``, ``transfer_ul[i]`` out of it (into well ``i + 1``, which holds
    ``water_ul[i + 1]``; out of the last, to the waste). Volumes in µL."""

    stock_ul: float
    water_ul: tuple[float, ...]
    transfer_ul: tuple[float, ...]

    @property
    def volumes(self) -> np.ndarray:
        """The row's draws (µL): the stock, the waters, the transfers."""
        return np.array([self.stock_ul, *self.water_ul, *self.transfer_ul])

    def amounts(self, volumes: np.ndarray) -> np.ndarray:
        """The dye left in each well (µL of stock) for these drawn :attr:`volumes`."""
        n = len(self.water_ul)
        stock, water, transfer = volumes[0], volumes[1 : n + 1], volumes[n + 1 :]
        left = np.empty(n)
        dye, held = stock, stock  # into the current well: dye (µL of stock), liquid (µL)
        for i in range(n):
            held += water[i]
            left[i] = dye * (held - transfer[i]) / held
            dye, held = dye * transfer[i] / held, transfer[i]
        return left


def relative_sd(
    rows: Sequence[SerialDilution],
    stock: float,
    unknown_ul: Sequence[float],
    unknown_amount: float,
    sd_ul: Sequence[float],
) -> float:
    """Relative SD of the amount read off the curve for the mean of the unknown's wells, from the
    random error of every draw. The curve is fitted to the rows' standards at their nominal
    amounts (``stock`` × :meth:`SerialDilution.amounts` at the nominal volumes, row by row);
    ``unknown_ul``: the unknown's draw into each of its wells (µL), ``unknown_amount`` its
    amount per well at that volume (in the units of ``stock`` × µL). ``sd_ul``: each draw's SD
    (µL): the rows' :attr:`SerialDilution.volumes` in order, then the unknown's. The draws are
    independent; wells that share a draw are correlated through it."""
    unknown = np.asarray(unknown_ul, dtype=float)
    sizes = [len(r.volumes) for r in rows]
    nominal = [stock * a for r in rows for a in r.amounts(r.volumes)]

    def estimate(volumes: np.ndarray) -> float:
        own = np.split(volumes[: -len(unknown)], np.cumsum(sizes)[:-1])
        standards = [stock * a for r, v in zip(rows, own, strict=True) for a in r.amounts(v)]
        drawn = volumes[-len(unknown) :]
        curve = StandardCurve.fit(nominal, standards)
        return curve.invert(list(unknown_amount * drawn / unknown))[0]

    volumes = np.concatenate([*(r.volumes for r in rows), unknown])
    steps = np.eye(len(volumes)) * _STEP_UL
    jacobian = np.array(
        [(estimate(volumes + h) - estimate(volumes - h)) / (2 * _STEP_UL) for h in steps]
    )
    return float(np.linalg.norm(jacobian * np.asarray(sd_ul, dtype=float))) / abs(unknown_amount)
