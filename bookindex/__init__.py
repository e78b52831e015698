"""bookindex: question answering over long structured documents."""

__version__ = "0.1.0"
