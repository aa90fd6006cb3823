"""The error a wrong setting raises, in a module of its own that imports nothing of wenheng's, so
that every module can raise it (the settings, the config package, the executors) without an
import circle."""


class ConfigError(ValueError):
    """A configuration file or variable is wrong; the message names the file (or variable) and the
    field, one line per problem."""
