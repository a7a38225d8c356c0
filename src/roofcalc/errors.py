"""The one exception roofcalc raises for bad input."""


class RoofcalcError(ValueError):
    """Bad input: a config, a name or an option that roofcalc cannot use.

    The message is one line that says what was wrong and what to do; the CLI prints it
    as ``roofcalc: error: <message>`` and exits with status 2.
    """


class NoKVCache(RoofcalcError):
    """A traced model that keeps no KV cache (an encoder, RWKV): it has no decode step to trace."""

    def __init__(self, message: str, why: str = ""):
        super().__init__(message)
        self.why = why  # the reason in a few words, for a header that says what it ran instead


class UnsupportedModelType(RoofcalcError):
    """A ``model_type`` roofcalc has no hand model for (the traced backend may still read it)."""
