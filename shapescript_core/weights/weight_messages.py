"""E3310-E3312 and the other weights problems: one constructor each."""
from __future__ import annotations

from ..diagnostics import Diagnostic, error, warning


def _shape(shape) -> str:
    return "[" + " ".join(str(s) for s in shape) + "]"


def e3310(path: str, span, source: str) -> Diagnostic:
    return (error("E3310", f"the weights have no `{path}`", span, f"`{path}` is declared here")
            .note(f"the weights are {source}")
            .help("save the weights under the param paths (field names joined by dots, with stack "
                  "indices), or try the export with --random-weights"))


def e3311(path: str, got: tuple, written: str, want: tuple, span) -> Diagnostic:
    """`written` is the field's type as the source writes it, `[V D]`."""
    return (error("E3311", f"`{path}` is {_shape(got)} in the weights, but the model says "
                           f"{written} = {_shape(want)}", span, f"declared {written} here")
            .help("give the dims the values the weights were trained with (--dim NAME=VALUE), "
                  "or declare the field in the layout the weights have"))


def e3312(dim: str, span) -> Diagnostic:
    return (error("E3312", f"`{dim}` has no value", span, "declared without a value")
            .help(f"pass a value with --dim {dim}=VALUE, or declare it as `dim {dim} = VALUE`"))


def wrong_dtype(path: str, got: str, want: str) -> str:
    return (f"`{path}` is {got} in the weights, but the model says {want}: convert the weights, "
            f"or declare the field as {got}")


def extra_key(key: str, model: str) -> str:
    return f"the weights' `{key}` is no param of `{model}`: it is left out"


def unreadable(tensor: str, file: str, why: str) -> str:
    return f"can't read `{tensor}` from {file}: {why}"


def outside_weights(file: str, folder: str, how: str) -> str:
    return (f"won't read `{file}`: {how} leads out of the weights directory `{folder}`; "
            "weights are read only from inside it")


def corrupt_file(file: str, why: str) -> str:
    return f"{file} is not a safetensors file that can be read: {why}"


def bad_init(path: str, text: str) -> str:
    return (f"`{path}`'s initializer `{text}` can't make random weights: "
            f"use ones, zeros or normal(STD)")


# ---- importing a checkpoint of another layout (E3314-E3316)
def e3314(headline: str, span, label: str, notes, help_text: str) -> Diagnostic:
    """The checkpoint and the source are not the same model: one diagnostic, whatever
    the number of tensors that differ."""
    d = error("E3314", headline, span, label)
    for n in notes:
        d = d.note(n)
    return d.help(help_text)


def _e3315(what: str, ours: int, theirs: int, where: str, span, label: str, note: str) -> Diagnostic:
    """A dim the source fixes that the checkpoint contradicts: the one wording of it."""
    return (error("E3315", f"{what} is {ours} in the source, but the checkpoint's {where} says {theirs}",
                  span, label)
            .note(note)
            .help("give the dims the checkpoint's values (--dim NAME=VALUE, or `dim NAME = VALUE`)"))


def e3315(axis: str, ours: int, theirs: int, tensor: str, shape, span, written: str) -> Diagnostic:
    """An axis of a param's tensor: `V`, or `H*Dh` (an axis of [H*Dh D])."""
    what = f"`{axis}`" if axis.isidentifier() else f"`{axis}` (an axis of {written})"
    return _e3315(what, ours, theirs, f"`{tensor}`", span, f"declared {written} here",
                  f"`{tensor}` is {_shape(shape)} in the checkpoint")


def e3315_blocks(count: str | None, ours: int, theirs: int, where: str, span, written: str | None) -> Diagnostic:
    """The number of blocks: a stack's count as written (`L` of `[L] Block`), or, for a
    source whose blocks are no single stack (`count` None), the number of them."""
    if count is None:
        what, label = "the number of blocks", "the exported function"
    else:
        what = f"`{count}`" if count.isidentifier() else f"`{count}` (the count of {written})"
        label = f"declared {written} here"
    return _e3315(what, ours, theirs, where, span, label,
                  f"the checkpoint has {theirs} block{'s' if theirs != 1 else ''}, the source {ours}")


def e3316(what: str, ours, theirs, where: str, span, folded_into: str | None = None) -> Diagnostic:
    """A warning: the export goes on with the source's value; or, `folded_into` (the
    params the import changed), with the checkpoint's, the difference folded into those
    params' weights."""
    if folded_into is None:
        then = "the export keeps the source's, and its outputs will differ from the original model's"
        fix = f"write the checkpoint's {what} in the source"
    else:
        then = (f"the export folds the difference into the weights of {folded_into}: its outputs are the "
                f"original model's, but those weights are not the checkpoint's")
        fix = f"write the checkpoint's {what} in the source, and its weights are exported unchanged"
    return (warning("E3316", f"the source's {what} is {ours}, but the checkpoint's {where} says {theirs}: {then}",
                    span, "the exported function")
            .help(fix))


def e3315_heads(what: str, ours: int, theirs: int, where: str, span) -> Diagnostic:
    return (error("E3315", f"the source has {ours} {what}, but the checkpoint's {where} says {theirs}",
                  span, "the exported function")
            .note("the tensors' shapes agree: only the split into heads differs, which would give other "
                  "outputs silently")
            .help("give the head dims the checkpoint's values (--dim NAME=VALUE)"))
