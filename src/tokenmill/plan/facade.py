"""The build plan of a validated config, as the workflow holds it: three objects, each one responsibility,
built once: :attr:`Plan.units` (what is built: inputs, units, builds, blends, SFT sets; the config's checks),
:attr:`Plan.outputs` (where each job's outputs go, what the next job reads, the matrix's targets) and
:attr:`Plan.commands` (each job's command-line options and identities). A caller asks the one it needs
(``plan.commands.pack_options(unit)``, ``plan.outputs.all_targets()``): nothing here forwards a call.

Cost: that of :class:`~tokenmill.plan.units.Units` (one ``glob`` per pattern, one ``stat`` per input file, one
footer read per big Parquet file) and one ``stat`` per tokenizer file; the rest is O(units).
"""

from __future__ import annotations

from tokenmill.plan.commands import Commands
from tokenmill.plan.outputs import Outputs
from tokenmill.plan.units import Units

__all__ = ["Plan"]


class Plan:
    """Everything the workflow builds for a validated config (defaults filled in).

    Args:
        config: the workflow config after schema validation.
        spelled_paths: the tokenizer paths as the config file spells them, where ``config``'s local paths were
            made absolute (:func:`tokenmill.plan.units.with_local_paths_absolute`, on object storage).

    Raises:
        TokenmillError: a config that cannot be built, naming the key (an input matching no file,
            an input listed twice, an unknown tokenizer, clashing output names, bad blend weights...).
    """

    def __init__(self, config: dict, spelled_paths: dict[str, str] | None = None):
        self.units = Units(config, spelled_paths)
        self.outputs = Outputs(self.units)
        self.commands = Commands(self.units, self.outputs)
