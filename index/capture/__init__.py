"""The capture path: the one decision a capture is given (``decision``, its revisit ``profiles``),
the one function that records it (``record``), and what derives captures from WARC files (rebuild,
import, run records, sealing a file) or copies what was derived to another backend (``backendcopy``)."""
