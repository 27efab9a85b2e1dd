"""The terminal progress display of the commands that audit PATHs: one row per phase, shown from
the command's first moment. Phases: ``starting Spark`` (elapsed time; the Spark engine only),
``auditing segments`` (bytes and segment tasks done), ``replaying partitions`` (partition
replicas done). Each row stops its clock when its phase ends; the display is cleared at the end.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from kafka_audit.audit.results import Progress as AuditProgress
from kafka_audit.report.safe_text import escape_text

STARTING_SPARK = "starting Spark"
AUDITING = "auditing segments"
REPLAYING = "replaying partitions"


class PhaseDisplay:
    """A Rich display of the audit's phases; use as a context manager, then call
    :meth:`starting_spark`, :meth:`spark_started` and :meth:`update` (an ``on_progress`` hook of
    either engine, :mod:`kafka_audit.engines.local` or :mod:`kafka_audit.engines.spark_job`)."""

    def __init__(self, console: Console) -> None:
        self._bars = Progress(
            TextColumn("[bold blue]{task.description:<21}"),
            BarColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            # Rich would route sys.stdout/sys.stderr through the display: PySpark's warnings while
            # the session starts belong in Spark's log (spark_session), not on the terminal.
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._spark: TaskID | None = None
        self._auditing: TaskID | None = None
        self._replaying: TaskID | None = None

    def __enter__(self) -> PhaseDisplay:
        self._bars.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._bars.stop()

    def starting_spark(self, master: str) -> None:
        """The Spark session is starting (its clock runs until :meth:`spark_started`)."""
        # The detail column is Rich markup: the URL is shown as text (SPEC section 1).
        self._spark = self._bars.add_task(STARTING_SPARK, total=None, detail=escape(escape_text(master)))

    def spark_started(self) -> None:
        if self._spark is not None:
            self._bars.update(self._spark, total=1, completed=1, detail="started")
            self._bars.stop_task(self._spark)

    def update(self, progress: AuditProgress) -> None:
        """Show ``progress``: segments while they are audited, then the partition replay."""
        bars = self._bars
        if self._auditing is None:
            self._auditing = bars.add_task(AUDITING, total=progress.bytes_total or None, detail="")
        bars.update(
            self._auditing,
            completed=progress.bytes_done,
            detail=f"{_mb(progress.bytes_done)}/{_mb(progress.bytes_total)} MB, "
            f"{progress.segments_done}/{progress.segments_total} segment tasks",
        )
        if progress.segments_done < progress.segments_total and not progress.partitions_done:
            return
        if self._replaying is None:
            bars.stop_task(self._auditing)
            self._replaying = bars.add_task(REPLAYING, total=progress.partitions_total or None, detail="")
        bars.update(
            self._replaying,
            completed=progress.partitions_done,
            detail=f"{progress.partitions_done}/{progress.partitions_total} partitions",
        )
        if progress.partitions_done >= progress.partitions_total:
            bars.stop_task(self._replaying)


def _mb(count: int) -> str:
    return f"{count / 1e6:,.1f}"
