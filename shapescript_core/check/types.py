"""Types of values: tensors with named, sized axes; scalars; models; stacks; tuples."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..dtypes import LANGUAGE_FLOATS, LANGUAGE_INTS
from .sizes import Size

FLOATS = LANGUAGE_FLOATS  # f16 bf16 f32 f64 (dtypes.py)
INTS = LANGUAGE_INTS
DTYPE_NAMES = FLOATS + INTS + ("bool",)


@dataclass(frozen=True)
class DType:
    name: str  # f16 bf16 f32 f64 i32 i64 bool Index
    index: Optional[Size] = None  # V of Index[V]

    @property
    def is_float(self) -> bool:
        return self.name in FLOATS

    @property
    def is_int(self) -> bool:
        return self.name in INTS or self.name == "Index"

    def render(self, name: Callable[[Size], str] = str) -> str:
        return f"Index[{name(self.index)}]" if self.name == "Index" else self.name


F32 = DType("f32")
I64 = DType("i64")
BOOL = DType("bool")


class Type:
    __slots__ = ()
    kind = "?"


class Unknown(Type):
    """The type of an expression after an error: raises nothing further."""

    kind = "unknown"

    def __repr__(self):
        return "Unknown"


UNKNOWN = Unknown()


@dataclass(frozen=True)
class Axis:
    name: Size  # canonical name (a dim's canonical form, a size variable, a computed size)
    size: Size  # canonical size in base symbols


@dataclass(frozen=True)
class TensorT(Type):
    axes: tuple
    dtype: DType = F32
    kind = "tensor"

    def names(self) -> list:
        return [a.name for a in self.axes]

    def index_of(self, name: Size) -> int:
        """The position of the first axis with that name, or -1 (a dict built once)."""
        try:
            index = self.__dict__["_index"]
        except KeyError:
            index = {}
            for i, a in enumerate(self.axes):
                index.setdefault(a.name, i)
            object.__setattr__(self, "_index", index)
        return index.get(name, -1)

    def with_axes(self, axes) -> "TensorT":
        return TensorT(tuple(axes), self.dtype)


@dataclass(frozen=True)
class ScalarT(Type):
    """A plain number: weakly typed ('float'), an integer, or a size used as a value."""

    num: str = "float"  # float int bool
    size: Optional[Size] = None  # when the scalar is a dim or size variable
    kind = "scalar"


@dataclass(frozen=True)
class ModelT(Type):
    name: str
    kind = "model"


@dataclass(frozen=True)
class StackT(Type):
    model: str
    count: Size
    kind = "stack"


@dataclass(frozen=True)
class TupleT(Type):
    items: tuple
    kind = "tuple"


@dataclass(frozen=True)
class DTypeValue(Type):
    """A dtype written as a value, as in `to(x, f16)`."""

    dtype: DType
    kind = "dtype"


@dataclass(frozen=True)
class StringT(Type):
    value: str
    kind = "string"


def is_unknown(t) -> bool:
    return t is UNKNOWN or isinstance(t, Unknown)


def render_nested(t, leaf: Callable) -> str:
    """A type as written, `leaf(x)` for each non-tuple part: tuples in tuples, at any
    depth, without recursion."""
    if not isinstance(t, TupleT):
        return leaf(t)
    parts = ["("]
    open_tuples = [iter(t.items)]  # innermost last
    first = [True]
    while open_tuples:
        x = next(open_tuples[-1], None)
        if x is None:
            open_tuples.pop()
            first.pop()
            parts.append(")")
            continue
        if not first[-1]:
            parts.append(", ")
        first[-1] = False
        if isinstance(x, TupleT):
            parts.append("(")
            open_tuples.append(iter(x.items))
            first.append(True)
        else:
            parts.append(leaf(x))
    return "".join(parts)
