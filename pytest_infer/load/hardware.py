"""What this host is: GPUs (name, count, memory, driver) through NVML, else the CPU.

NVML is optional (``pip install pytest-infer[gpu]``): without it, or without a
driver, the host reads as CPU-only, which the SLO suite states in its results.
"""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass, field
from typing import Any

from ..results.environment import cpuinfo_field
from .monitor import nvml_status


@dataclass(slots=True)
class Hardware:
    accelerator: str  # "gpu" or "cpu"
    gpus: list[dict[str, Any]] = field(
        default_factory=list
    )  # name, memory_gb, energy_counter (NVML's total energy counter readable)
    driver: str | None = None
    cuda: str | None = None  # the CUDA version the driver supports (NVML), e.g. "12.4"
    cpu: str = ""
    cpu_count: int = 0
    # "ok", or why NVML gave nothing (named in the SLO results and a profile mismatch)
    nvml: str = "not installed"

    @property
    def gpu_name(self) -> str | None:
        return self.gpus[0]["name"] if self.gpus else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cpu_name() -> str:
    return cpuinfo_field("model name") or platform.processor() or platform.machine()


def detect_hardware() -> Hardware:
    hw = Hardware(accelerator="cpu", cpu=_cpu_name(), cpu_count=os.cpu_count() or 0)
    nv, why = nvml_status()
    if nv is None:
        hw.nvml = why
        return hw
    hw.nvml = "ok"
    try:
        hw.driver = _text(nv.nvmlSystemGetDriverVersion())
        version = nv.nvmlSystemGetCudaDriverVersion()  # 12040 -> 12.4
        hw.cuda = f"{version // 1000}.{version % 1000 // 10}"
        for i in range(nv.nvmlDeviceGetCount()):
            handle = nv.nvmlDeviceGetHandleByIndex(i)
            memory = nv.nvmlDeviceGetMemoryInfo(handle).total
            hw.gpus.append(
                {
                    "name": _text(nv.nvmlDeviceGetName(handle)),
                    "memory_gb": round(memory / 2**30, 1),
                    "energy_counter": _has_energy_counter(nv, handle),
                }
            )
    except Exception as exc:  # noqa: BLE001  a broken NVML is reported, not fatal
        hw.nvml = f"error: {exc}"
    if hw.gpus:
        hw.accelerator = "gpu"
    return hw


def _has_energy_counter(nv: Any, handle: Any) -> bool:
    try:
        nv.nvmlDeviceGetTotalEnergyConsumption(handle)
    except Exception:  # noqa: BLE001  NVMLError_NotSupported before Volta
        return False
    return True


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
