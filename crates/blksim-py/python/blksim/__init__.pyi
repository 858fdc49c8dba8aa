from typing import Any, Dict, List, Mapping, Optional, Tuple, Union
import os

__version__: str

class BlksimError(Exception): ...

class JobError(BlksimError):
    file: str
    line: int
    option: Optional[str]

class DeviceError(BlksimError):
    device: str

class SetError(BlksimError):
    key: str

class RunError(BlksimError): ...

def run(
    job: Union[str, os.PathLike[str]],
    device: Optional[str] = ...,
    set: Optional[Mapping[str, Any]] = ...,
    seed: Optional[int] = ...,
    options: Optional[Mapping[str, Any]] = ...,
    plus: bool = ...,
    max_events: Optional[int] = ...,
    keep_files: bool = ...,
    blktrace: Optional[str] = ...,
) -> Any: ...
def devices() -> Dict[str, str]: ...
def params() -> List[Dict[str, Any]]: ...
def sweep(
    path: Union[str, os.PathLike[str]],
    out: Optional[str] = ...,
    csv: Optional[str] = ...,
    shard: Optional[Tuple[int, int]] = ...,
    threads: Optional[int] = ...,
) -> Dict[str, Any]: ...
def sweep_ray(
    path: Union[str, os.PathLike[str]],
    address: str = ...,
    out: Optional[str] = ...,
    csv: Optional[str] = ...,
    shard: Optional[Tuple[int, int]] = ...,
    max_in_flight: Optional[int] = ...,
    retries: int = ...,
) -> Dict[str, Any]: ...
def rows(result: Mapping[str, Any]) -> List[Dict[str, Any]]: ...
def to_frame(result: Mapping[str, Any]) -> Any: ...
