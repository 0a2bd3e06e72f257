"""What `hooktui serve` logs never shows its token, nor a control character.

aiohttp's access log is off (server.py), but its server logger still reports a request it
cannot parse ("Error handling request") with a traceback whose message quotes the raw
request line: `GET /?token=... HTTP/1.1 junk` printed the token a second time, and any
byte a client sent (an escape sequence) reached the terminal. So every record goes
through this filter on the way to the console:

- a malformed request is one line: who sent it and the parser's reason, without the line;
- anything else has the token replaced by `<token>`, its traceback (if any) folded in,
  and control characters shown as escapes (visible_block).
"""

from __future__ import annotations

import logging
import traceback

from aiohttp.http_exceptions import HttpProcessingError

from ..visible import visible, visible_block

HIDDEN = "<token>"


class TokenFilter(logging.Filter):
    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError):
            sender = record.getMessage().rpartition(" from ")[2] or "a client"
            reason = str(error.message).splitlines()[0].rstrip(":") if error.message else type(error).__name__
            text = f"refused a malformed request from {sender} ({error.code}: {reason})"
            record.msg, record.args = visible(self._hidden(text)), ()
        else:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
            record.msg, record.args = visible_block(self._hidden(text)), ()
        record.exc_info = record.exc_text = None
        record.stack_info = None
        return True

    def _hidden(self, text: str) -> str:
        return text.replace(self.token, HIDDEN) if self.token else text
