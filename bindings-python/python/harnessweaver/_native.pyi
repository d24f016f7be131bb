# Type stub of the native module (bindings-python/src/lib.rs). Hand-written;
# tests/python/test_api.py fails when it names something the module lacks or misses an export.
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union, final, overload

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

# cel-lite (bindings-python/src/cel_lite.rs); harnessweaver.cel_lite re-exports these.
CEL_NAMES: List[str]
CEL_MAX_LENGTH: int
CEL_MAX_DEPTH: int

class CelCompileError(HarnessweaverError):
    message: str
    line: int
    column: int

class CelUnevaluable(HarnessweaverError):
    reason: str

@final
class CelProgram:
    @property
    def source(self) -> str: ...
    @property
    def names(self) -> List[str]: ...
    @overload
    def evaluate(self, vars: Optional[Mapping[str, Any]] = None) -> Any: ...
    @overload
    def evaluate(self, vars: Optional[Mapping[str, Any]] = None, *, default: Any) -> Any: ...
    def approval_required(self, vars: Optional[Mapping[str, Any]] = None) -> Tuple[bool, Optional[str]]: ...

def cel_compile(text: str) -> CelProgram: ...
