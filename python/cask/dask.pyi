# Type hints of cask.dask (the module itself: dask.py).
from typing import Any, Hashable, Mapping

def get(dsk: Mapping[Hashable, Any], keys: Any, **kwargs: Any) -> Any: ...
