"""The bridge's one error type: bad input that the command line reports and exits 2 on."""


class BridgeError(Exception):
    """A clear, one-line reason why a request cannot be served (bad file, missing function,
    lowering error, unsupported dtype, ...). The CLI prints it and exits with code 2."""
