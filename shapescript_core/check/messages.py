"""The language's diagnostics that are raised from more than one place, one constructor
per code (or per form of a code), so that every place words a mistake the same way."""
from __future__ import annotations

from ..diagnostics import Diagnostic, Edit, Fix, error
from ..files import shown


# ---------------------------------------------------------------- E0210 imports
def import_missing(imp) -> Diagnostic:
    return error("E0210", f"can't find `{imp.target}`", imp.span(imp.target_pos), "no such file next to this one")


def import_outside(imp, why: str) -> Diagnostic:
    """An import that is not a ShapeScript file inside the project (`why`: imports.py)."""
    return error("E0213", f"`{shown(imp.target)}` is not a ShapeScript file inside the project",
                 imp.span(imp.target_pos), why).help(
        "import a `.ss` file by its path from this file's folder, inside the project "
        "(the folder of the file checked, or the one holding shapescript.toml)")


def import_not_utf8(imp, where: str) -> Diagnostic:
    """The imported file exists but its bytes are not UTF-8 (`where`: the first bad byte)."""
    return error("E0210", f"can't read `{imp.target}`: it isn't UTF-8 ({where})", imp.span(imp.target_pos),
                 "this file can't be decoded").help("save the file as UTF-8")


def import_unreadable(imp, refusal) -> Diagnostic:
    """E0214: the imported path is no file that may be read (files.py says why)."""
    helps = {"special": "import a regular `.ss` file",
             "directory": "import a `.ss` file, not a folder",
             "too_large": "split the file, or raise `max_file_size` in shapescript.toml's [limits]",
             "outside": "move the file into the workspace, or open a folder that holds both",
             "bad_path": "write the path without control characters"}
    d = error("E0214", f"can't read `{shown(imp.target)}`: {refusal.reason}", imp.span(imp.target_pos),
              "this file is not read")
    return d.help(helps[refusal.kind]) if refusal.kind in helps else d


# ---------------------------------------------------------------- E0211 models
def model_contains_itself(item, field, hops: list, total: int) -> Diagnostic:
    """`hops`: [(model, field name), ...], the first hops of the cycle from this model's
    field back to the model; `total`: how many hops the cycle has."""
    model = hops[0][0]
    path = " → ".join(f"{m}.{f}" for m, f in hops)
    path += f" → {model}" if total <= len(hops) else f" → … → {model} ({total} models)"
    what = f"`{model}` itself" if total == 1 else f"a model that holds `{model}`"
    return error("E0211", f"`{model}` contains itself: {path}", item.span(field.type.pos),
                 f"this field holds {what}").help(
        "a model is a finite set of weights: give the inner part a model of its own, and repeat a "
        "block with a stack (`layers: [L] Block`) and `for`")


# ---------------------------------------------------------------- E0212 export targets
def unknown_target(span, name: str, near, known) -> Diagnostic:
    """A name in `@export(…)` that is no target; `near` the closest known one, or None."""
    d = error("E0212", f"`{name}` isn't an export target", span, "no such target")
    if near:
        return d.help(f"there is a target with a similar name: `{near}`").fix(
            Fix.unsafe(f"write `{near}`", Edit.replacement(span, near)))
    return d.help("the targets are " + ", ".join(f"`{t}`" for t in known))


# ---------------------------------------------------------------- E0201 names
def undefined(span, name: str, label: str) -> Diagnostic:
    return error("E0201", f"`{name}` isn't defined", span, label)


def similar(d: Diagnostic, what: str, name) -> Diagnostic:
    """The help line naming the closest known name, when there is one."""
    if name:
        d.help(f"there is {what} with a similar name: `{name}`")
    return d


# ---------------------------------------------------------------- E0203 duplicates
def defined_twice(span, name: str, first) -> Diagnostic:
    return error("E0203", f"`{name}` is defined twice", span, "defined again here").label(first, "first defined here")


# ---------------------------------------------------------------- E0205 callees and masks
def is_not(span, text: str, what: str, label: str) -> Diagnostic:
    """"`x` isn't a function" (or "a mask"): a name used as what it is not."""
    return error("E0205", f"`{text}` isn't {what}", span, label)


# ---------------------------------------------------------------- E0206 arguments
def arity_text(lo: int, hi, noun: str = "argument") -> str:
    if lo == hi:
        return f"{lo} {noun}" + ("s" if lo != 1 else "")
    if hi is None:
        return f"{lo} or more {noun}s"
    if hi == lo + 1:
        return f"{lo} or {hi} {noun}s"
    return f"{lo} to {hi} {noun}s"


def takes(span, fname: str, want: str, got: int, label: str = "") -> Diagnostic:
    """"`linear` takes 2 or 3 arguments, got 4" (`want` from arity_text)."""
    return error("E0206", f"`{fname}` takes {want}, got {got}", span, label)


def no_parameter(span, fname: str, name: str) -> Diagnostic:
    """A keyword the callee has no parameter for: builtins and functions alike."""
    return error("E0206", f"`{fname}` has no parameter `{name}`", span, "unknown keyword")


def given_twice(span, fname: str, name: str) -> Diagnostic:
    return error("E0206", f"`{fname}` gets `{name}` twice", span, "given again here")


def missing_argument(span, fname: str, name: str) -> Diagnostic:
    return error("E0206", f"`{fname}` needs `{name}=`", span, f"`{name}` is missing")


def needs_pattern(span, fname: str) -> Diagnostic:
    return error("E0206", f"`{fname}` needs an axis pattern", span, "write `L -> R` in the call")


# ---------------------------------------------------------------- E0208 dims
def dim_cycle(span, name: str, path: list) -> Diagnostic:
    return error("E0208", f"`{name}` is defined through itself: {' → '.join(path)}", span,
                 "this dim's value depends on itself")


def dim_not_positive(span, name: str, value, written: str | None = None) -> Diagnostic:
    """`written`: the dim's arithmetic, when its value is computed."""
    head = f"`{name} = {written}` is not positive: {value}" if written else f"`{name}` must be positive, found {value}"
    return error("E0208", head, span, "a size is a positive integer")


def dim_too_large(span, name: str, written: str) -> Diagnostic:
    """A dim's value (or a step of its arithmetic) past 2^63 − 1; `written` is abbreviated."""
    short = written if len(written) <= 40 else written[:30] + f"… ({len(written):,} characters)"
    return error("E0208", f"`{name} = {short}` is too large", span,
                 "a size is at most 2^63 − 1 (9223372036854775807)")


def dim_inexact(span, written: str, num: str, den: str) -> Diagnostic:
    return error("E0208", f"`{written}` doesn't divide: {num} / {den}", span, f"{num} is not a multiple of {den}")


# ---------------------------------------------------------------- E0301 kinds
def kind(span, want: str, found: str, label: str) -> Diagnostic:
    """"expected a tensor, found model `Block`"."""
    return error("E0301", f"expected {want}, found {found}", span, label)


def not_a_tensor(span, found: str, label: str = "not a tensor") -> Diagnostic:
    return kind(span, "a tensor", found, label)


# ---------------------------------------------------------------- E0302 float dtypes
def mixes(span, op: str, a: str, b: str, label: str) -> Diagnostic:
    return error("E0302", f"`{op}` mixes {a} and {b}", span, label)


# ---------------------------------------------------------------- E0304 dtypes of arguments
def must_be(span, what: str, want: str, found: str, label: str) -> Diagnostic:
    """"`ids` must be Index[V], found f32"."""
    return error("E0304", f"`{what}` must be {want}, found {found}", span, label)


# ---------------------------------------------------------------- E0401 shapes
def shape(span, want: str, found: str, label: str) -> Diagnostic:
    """"expected [b n D], found [b n F]" (or "expected a weight [O I], found …")."""
    return error("E0401", f"expected {want}, found {found}", span, label)


# ---------------------------------------------------------------- E0402 alignment
def cannot_combine(span, a: str, b: str, why: str, label: str) -> Diagnostic:
    return error("E0402", f"can't combine {a} with {b}: {why}", span, label)


NO_SUBSET = "neither has all the other's axes"


# ---------------------------------------------------------------- E0404 axis names
def not_an_axis(span, written: str, tensor: str) -> Diagnostic:
    """"`over=m`, but the tensor is [b n D]"."""
    return error("E0404", f"`over={written}`, but the tensor is {tensor}", span,
                 f"`{written}` is not an axis of the tensor")


def axis_names_only(span, what: str, found: str) -> Diagnostic:
    return error("E0404", f"`{what}` takes axis names, found `{found}`", span, "not an axis name")


def one_axis(span, fname: str) -> Diagnostic:
    return error("E0404", f"`{fname}` joins along one axis", span, "name one axis")


# ---------------------------------------------------------------- E0405 pattern sides
def loses_axis(span, fname: str, name: str, label: str | None = None) -> Diagnostic:
    return error("E0405", f"`{fname}` loses axis `{name}`", span,
                 f"`{name}` is not on the right side" if label is None else label)


def adds_axis(span, fname: str, name: str, label: str | None = None, why: str = "") -> Diagnostic:
    return error("E0405", f"`{fname}` adds axis `{name}`{why}", span,
                 f"`{name}` is not on the left side" if label is None else label)


def split_without_count(span) -> Diagnostic:
    return error("E0405", "`split` needs a group that starts with the number of parts, as in (3 H Dh)", span,
                 "no group starts with a number")


# ---------------------------------------------------------------- E0406 groups
def group_mismatch(span, group: str, size: str, axis: int, axis_size: str, label: str) -> Diagnostic:
    """"group (H Dh) is 768, but axis 3 is 512" (a number item is its own group)."""
    return error("E0406", f"{group} is {size}, but axis {axis} is {axis_size}", span, label)


def nested_group(span) -> Diagnostic:
    return error("E0406", "a group can't hold another group", span, "nested group")


def unsized_names(span, group: str, a: str, b: str) -> Diagnostic:
    return error("E0406", f"group {group} has two unsized names: `{a}` and `{b}`", span,
                 "give all but one of these names a size (declare a dim)")


def group_cannot_divide(span, group: str, axis: int, num, den, label: str) -> Diagnostic:
    return error("E0406", f"group {group} can't divide axis {axis}: {num} / {den}", span, label)


# ---------------------------------------------------------------- E0407 ranks
def pattern_rank(span, n: int, operand: str, m: int, label: str) -> Diagnostic:
    return error("E0407", f"the pattern has {n} axes, but `{operand}` has {m}", span, label)


def einsum_sides(span, inputs: int, sides: int) -> Diagnostic:
    return error("E0407", f"einsum has {inputs} inputs, but the pattern has {sides} sides", span, "one side per input")


def causal_rank(span, got: int) -> Diagnostic:
    return error("E0407", f"`causal` takes 2 axes, got {got}", span, "write causal[n m]")


# ---------------------------------------------------------------- E0409 returns
def returns(span, fn: str, found: str, want: str, label: str) -> Diagnostic:
    return error("E0409", f"`{fn}` returns {found}, but its signature says {want}", span, label)


def never_returns(span, fn: str, want: str) -> Diagnostic:
    return error("E0409", f"`{fn}` never returns, but its signature says {want}", span, "no `return` in this function")


# ---------------------------------------------------------------- E0410 einsum
def einsum_sizes(span, name: str, a: str, b: str, label: str) -> Diagnostic:
    return error("E0410", f"einsum matches `{name}` with sizes {a} and {b}", span, label)


def einsum_new_axis(span, name: str) -> Diagnostic:
    return error("E0410", f"einsum's output axis `{name}` is in no input", span, "no input has this axis")


# ---------------------------------------------------------------- E0411 destructuring
def destructure(span, what: str, names: int, label: str, gives: int | None = None) -> Diagnostic:
    """"`split` gives 3 tensors, but 2 names take them" (`gives`), or "a single value
    can't be destructured into 2 names"."""
    if gives is None:
        return error("E0411", f"{what} can't be destructured into {names} names", span, label)
    return error("E0411", f"{what} gives {gives} tensors, but {names} names take them", span, label)


# ---------------------------------------------------------------- E0412 masks
def mask_mismatch(span, mask: str, scores: str, label: str) -> Diagnostic:
    return error("E0412", f"the mask is {mask}, but the scores are {scores}", span, label)


# ---------------------------------------------------------------- E0413 compile-time conditions
CONDITION_NOT_STATIC = "this condition isn't known before the model runs"


def condition_not_static(span, label: str) -> Diagnostic:
    """`A if C else B` with C computed when the model runs (LANGUAGE.md §5, v0.2)."""
    return error("E0413", CONDITION_NOT_STATIC, span, label).help(
        "choose with literals, dims, loop indices and scalar parameters; pick between tensors "
        "that the model computes with `where(mask, a, b)`")
