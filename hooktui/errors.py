"""How a command ends badly: the error types cli.main turns into one line and an exit
status. Here, not in cli.py, so that the commands need not import the module that imports
them."""

from __future__ import annotations

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl+C


class UserError(Exception):
    """Bad input from the user (or a failure that is not the model's: a stdout that cannot
    be written): printed as one line, exit status `exit_status` (2 unless told). `details`:
    the traceback `--traceback` shows (when it is not this exception's cause's)."""

    def __init__(self, message: str, details: str | None = None, exit_status: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.details = details
        self.exit_status = exit_status


class Interrupted(Exception):
    """Ctrl+C (SIGINT) ended the command before its work was done: one line, exit 130,
    nothing saved."""


INTERRUPTED_MESSAGE = "hooktui: interrupted (Ctrl+C)"


class Terminated(KeyboardInterrupt):
    """A request to end (SIGTERM, SIGHUP) during `trace`, raised where the program is, as
    Ctrl+C's KeyboardInterrupt is: a run in progress ends as Ctrl+C ends it, a --save in
    progress removes its temporary file. One line, exit status 128 + N."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
