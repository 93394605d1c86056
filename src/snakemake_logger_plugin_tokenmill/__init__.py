"""Snakemake's output with a failed tokenmill job's own error last: ``snakemake --logger tokenmill`` (the
workflow's profile ``profiles/default/`` beside the Snakefile sets it, and Snakemake finds that by itself).

Snakemake reports a failed job with ~25 lines: the ``RuleException`` with the shell command, the job's
error block with the command again, "look above", then ``WorkflowError``. Where the job is tokenmill's and
its log ends in tokenmill's one-line error (:func:`tokenmill.plan.summary.failure_line`), this handler leaves
those out and ends the run with that line and its log instead::

    tokenmill: error: raw/bad.jsonl:6: invalid JSON (...)
      log: logs/pack/bad.log

Every other record passes to the stream handler Snakemake would use, with Snakemake's own filter and
formatter (set on this handler by Snakemake, since it declares neither). A failure that is not
tokenmill's (a missing input, Snakemake's own error) is shown as Snakemake shows it.

Cost: one read of the last 4 KiB of a failed job's log. Nothing of tokenmill is imported before a job fails:
Snakemake imports every installed logger plugin at each start, before it reads the Snakefile (which imports
tokenmill.plan itself), and a Snakemake that never reads one (``snakemake --version``, a fork server of the
tests) should not pay for tokenmill.plan (~0.3 s with numpy).
"""

from __future__ import annotations

import logging
import sys

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent

__all__ = ["LogHandler"]

# Snakemake's records around a failed job that say nothing the tokenmill line does not
_RULE_EXCEPTION = ("RuleException", "CalledProcessError")
_LOOK_ABOVE = "Exiting because a job execution failed"
_LAST_ERROR = "At least one job did not complete successfully"


class LogHandler(LogHandlerBase):
    """Snakemake's stream output, a failed tokenmill job's error block replaced by its one line, last."""

    def __post_init__(self) -> None:
        from snakemake.logging import ColorizingTextHandler

        stream = sys.stdout if self.common_settings.stdout else sys.stderr
        self._stream = ColorizingTextHandler(nocolor=self.common_settings.nocolor, stream=stream)
        self._held: list[logging.LogRecord] = []  # a RuleException, until its job's error says whose it is
        self._failures: list[tuple[str, str]] = []  # (tokenmill's line, log) of each failed job

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return False

    @property
    def has_formatter(self) -> bool:
        return False

    @property
    def needs_rulegraph(self) -> bool:
        return False

    def emit(self, record: logging.LogRecord) -> None:
        event = getattr(record, "event", None)
        text = record.msg if isinstance(record.msg, str) else ""
        if event == LogEvent.JOB_ERROR:
            from tokenmill.plan.summary import failure_line  # imported by the Snakefile by now; here, not at start

            failure = next(((line, log) for log in (getattr(record, "log", None) or [])
                            if (line := failure_line(log)) is not None), None)
            if failure is not None:
                self._held.clear()  # the RuleException of this very job
                self._failures.append(failure)
                return
        elif event in (None, LogEvent.ERROR) and record.levelno >= logging.ERROR and text.startswith(_RULE_EXCEPTION):
            self._held.append(record)
            return
        elif self._failures and text.startswith(_LOOK_ABOVE):
            return
        elif self._failures and _LAST_ERROR in text:
            self._release()
            self._stream.stream.write("".join(f"{line}\n  log: {log}\n" for line, log in self._failures))
            self._stream.flush()
            return
        self._release()
        self._pass(record)

    def _release(self) -> None:
        """Show what was held after all: a failure that was not tokenmill's."""
        held, self._held = self._held, []
        for record in held:
            self._pass(record)

    def _pass(self, record: logging.LogRecord) -> None:
        self._stream.setFormatter(self.formatter)
        self._stream.emit(record)
