# Type stubs of the native module (crates/memdex-py/src/lib.rs). The public API is
# memdex/__init__.py; these are its building blocks.
from typing import List, Optional, Tuple

__version__: str
MAX_K: int
DEFAULT_K: int
FORMATS: List[str]

class NativeError(Exception):
    """A memdex failure: args are (code, message)."""

class Native:
    def __new__(
        cls,
        store: str,
        model: Optional[str] = None,
        device: str = "auto",
        compact_every: Optional[float] = 30.0,
        rank_device: str = "auto",
    ) -> "Native": ...
    def add(self, sessions_json: str, tenant: Optional[str] = None) -> str: ...
    def search(
        self,
        tenant: str,
        query: str,
        k: int,
        date: Optional[str],
        recent_turns: List[str],
        stages_json: str,
        context: bool,
        explain: bool = False,
    ) -> str: ...
    def delete(
        self, tenant: str, session_id: Optional[str] = None, item_id: Optional[int] = None
    ) -> str: ...
    def compact(self) -> str: ...
    def embed(self, texts: List[str], query: bool = False) -> Tuple[bytearray, int, int]: ...
    def tenants(self) -> List[Tuple[str, int]]: ...
    def sessions(self, tenant: str) -> str: ...
    def items(self, tenant: str, session_id: Optional[str] = None) -> str: ...
    def close(self) -> None: ...
    @property
    def model(self) -> str: ...
    @property
    def dim(self) -> int: ...
    @property
    def device(self) -> str: ...
    @property
    def store(self) -> str: ...

def read_sessions(
    path: Optional[str] = None, value_json: Optional[str] = None, format: Optional[str] = None
) -> str: ...
def build(
    store: str,
    sessions_json: str,
    format: str = "jsonl",
    model: Optional[str] = None,
    device: str = "auto",
    granularity: str = "round",
) -> str: ...
