"""_lib.py: loads the extension _cask on first use (and libcask with it: with CUDA's
libraries in a CUDA build, a tenth of a second that ``import cask`` does not pay) and
hands it the settings made with cask.config before."""
from . import _cask
from . import config as _config

_cask.configure(_config._c_fields())
