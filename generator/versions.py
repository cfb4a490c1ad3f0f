"""Version ranges of the schema format, under the name the generator's modules import.

The one parser lives in `kipwire.codec.versions`: the codec needs it at run time, and the codec
does not import the generator.
"""

from kipwire.codec.versions import ALL, NONE, OPEN, Versions

__all__ = ["ALL", "NONE", "OPEN", "Versions"]
