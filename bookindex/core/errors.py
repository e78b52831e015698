"""Typed errors. Interfaces turn `BookIndexError` into a one-line message and exit code 2."""

from __future__ import annotations


class BookIndexError(Exception):
    """Base class: an error the user can act on; its message says what to fix."""

    exit_code = 2


class ConfigError(BookIndexError):
    """An invalid configuration value, naming the key and the source that set it."""


class InputError(BookIndexError):
    """Bad input file or argument, naming the file and the problem."""


class IndexFormatError(BookIndexError):
    """An index on disk that this version cannot read (missing, corrupt or older format)."""


class LLMError(BookIndexError):
    """Base class of LLM failures."""


class LLMUnavailable(LLMError):
    """No LLM is configured (provider `none`) or it cannot be reached; callers take their no-LLM path."""


class LLMRequestError(LLMError):
    """The endpoint kept failing (timeouts, connection errors, 429/5xx) after all retries."""


class LLMOutputError(LLMError):
    """The model's output did not validate against the schema, even after one repair attempt."""

    def __init__(self, message: str, *, stage: str = "", model: str = "", raw: str = "") -> None:
        super().__init__(message)
        self.stage = stage
        self.model = model
        self.raw = raw
