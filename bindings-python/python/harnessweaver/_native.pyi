# Type stub of the native module (bindings-python/src/lib.rs). Hand-written;
# tests/python/test_api.py fails when it names something the module lacks or misses an export.
import os
from typing import Any, Dict, List, Optional, Sequence, Union, final

MAX_DEPTH: int

class HarnessweaverError(Exception):
    code: str
    problems: List["Problem"]

class LoadError(HarnessweaverError): ...
class InvalidValueError(HarnessweaverError): ...
class InvalidArgumentError(HarnessweaverError): ...

@final
class Problem:
    code: str
    message: str
    file: Optional[str]
    line: Optional[int]
    column: Optional[int]
    path: str
    def to_dict(self) -> Dict[str, Any]: ...

@final
class Harness:
    def describe_tools(self) -> List[Dict[str, Any]]: ...

def load(path: Union[str, "os.PathLike[str]"]) -> Harness: ...
def definition_digest(name: str, description: str, input_schema: Any) -> str: ...
def canonical_json(value: Any) -> str: ...
def describe_manifest(manifest: Any, origin: Optional[str] = None) -> Dict[str, Any]: ...
def cli_run(args: Sequence[str]) -> int: ...
